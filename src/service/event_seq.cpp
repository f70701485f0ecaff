// SPDX-License-Identifier: GPL-2.0-or-later
// event_seq.cpp - see event_seq.hpp.

#include "service/event_seq.hpp"

namespace flexco::service {

SeqMarks::Restored SeqMarks::restore(Source src, const Saved& saved, std::uint64_t floor) {
  Restored r;
  switch (src) {
    case Source::kNone:  // a first start: from 1
      r = Restored{};
      break;
    case Source::kLost:  // no valid copy: above anything the lost counter reached
      r.next = floor;
      r.reserved = r.latest = r.lost_upto = floor - 1;
      break;
    case Source::kCurrent:
    case Source::kPrevious:
      r.reserved = saved.reserved;
      r.latest = saved.latest;
      r.lost_upto = saved.lost_upto;
      if (!saved.clean) {
        // numbers up to the mark may have been handed out after the
        // last save: they are gone
        r.latest = r.lost_upto = r.reserved;
      }
      if (src == Source::kPrevious && r.reserved < floor) {
        // the lost current copy may have reserved more
        r.reserved = r.latest = r.lost_upto = floor - 1;
      }
      r.next = r.reserved + 1;
      break;
  }
  next_ = r.next;
  reserved_ = r.reserved;
  return r;
}

std::uint64_t SeqMarks::take(std::size_t n,
                             const std::function<bool(std::uint64_t mark)>& save_mark) {
  if (n == 0) return 0;
  const std::uint64_t last = next_ + n - 1;
  if (last > reserved_) {
    const std::uint64_t want = last + kBlock;
    if (!save_mark(want)) return 0;  // wait: nothing handed out above the saved mark
    reserved_ = want;
  }
  const std::uint64_t first = next_;
  next_ += n;
  return first;
}

}  // namespace flexco::service
