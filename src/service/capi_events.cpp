// SPDX-License-Identifier: GPL-2.0-or-later
// capi_events.cpp - see capi_events.h.

#include "service/capi_events.h"

#include "service/event_seq.hpp"

using flexco::service::SeqMarks;

extern "C" void flexco_seq_restore(flexco_seq_t* seq, int src, const flexco_seq_saved_t* saved,
                                   uint64_t floor, uint64_t* latest, uint64_t* lost_upto) {
  try {
    SeqMarks m;
    SeqMarks::Saved s;
    if (saved != nullptr) {
      s.reserved = saved->reserved;
      s.latest = saved->latest;
      s.lost_upto = saved->lost_upto;
      s.clean = saved->clean;
    }
    const SeqMarks::Source from = src == FLEXCO_SEQ_CURRENT    ? SeqMarks::Source::kCurrent
                                  : src == FLEXCO_SEQ_PREVIOUS ? SeqMarks::Source::kPrevious
                                  : src == FLEXCO_SEQ_LOST     ? SeqMarks::Source::kLost
                                                               : SeqMarks::Source::kNone;
    const SeqMarks::Restored r = m.restore(from, s, floor);
    seq->next = r.next;
    seq->reserved = r.reserved;
    *latest = r.latest;
    *lost_upto = r.lost_upto;
  } catch (...) {
  }
}

extern "C" uint64_t flexco_seq_take(flexco_seq_t* seq, size_t n,
                                    int (*save_mark)(uint64_t mark, void* arg), void* arg) {
  try {
    SeqMarks m(seq->next, seq->reserved);
    const std::uint64_t first =
        m.take(n, [&](std::uint64_t mark) { return save_mark(mark, arg) == 0; });
    seq->next = m.next();
    seq->reserved = m.reserved();
    return first;
  } catch (...) {
    return 0;
  }
}
