// SPDX-License-Identifier: GPL-2.0-or-later
// event_seq.hpp - the sequence numbers of the plugin's events (doc/events.md):
// a number is handed out only once a mark above it is on disk, so that a
// crash, a failed save or a takeover by the other controller never makes
// anyone hand the same number to another event.  No Slurm headers, no I/O:
// the caller saves the mark (StateSaveLocation/flexco_events.state) and
// says whether that worked; the rules are tested against a fake disk that
// fails with ENOSPC or EIO (testsuite/unit/check_event_seq).
//
// Numbers are reserved in blocks (kBlock) so that not every event costs a
// save.  After a restart numbering continues above the saved mark; from
// the previous copy of the file, or with no valid copy, it continues above
// `floor` (epoch seconds x 10^6), above anything a lost counter can have
// reached, and the numbers in between count as lost (a client that asks
// for them is told so).

#ifndef FLEXCO_SERVICE_EVENT_SEQ_HPP
#define FLEXCO_SERVICE_EVENT_SEQ_HPP

#include <cstddef>
#include <cstdint>
#include <functional>

namespace flexco::service {

class SeqMarks {
 public:
  static constexpr std::uint64_t kBlock = 1024;

  // next: the next number to hand out; reserved: the mark on disk.
  explicit SeqMarks(std::uint64_t next = 1, std::uint64_t reserved = 0)
      : next_(next), reserved_(reserved) {}

  // Where the state came from (as service/statefile.h says).
  enum class Source { kNone, kCurrent, kPrevious, kLost };

  // What a load found: the saved mark, the highest number published, the
  // highest one that cannot be delivered, and whether the file was written
  // by a clean stop (then no number above `latest` was handed out).
  struct Saved {
    std::uint64_t reserved = 0, latest = 0, lost_upto = 0;
    bool clean = false;
  };

  // The numbering after a load; `latest` and `lost_upto` for the ring.
  struct Restored {
    std::uint64_t next = 1, reserved = 0, latest = 0, lost_upto = 0;
  };
  Restored restore(Source src, const Saved& saved, std::uint64_t floor);

  // Numbers for n events: the first one, or 0 if they must wait because
  // save_mark(mark) failed (nothing was handed out then).  save_mark is
  // called only when the reserved block does not cover them.
  std::uint64_t take(std::size_t n, const std::function<bool(std::uint64_t mark)>& save_mark);

  std::uint64_t next() const { return next_; }
  std::uint64_t reserved() const { return reserved_; }

 private:
  std::uint64_t next_, reserved_;
};

}  // namespace flexco::service

#endif
