// SPDX-License-Identifier: GPL-2.0-or-later
// event_ring.hpp - the events the plugin keeps for GET /v1/events
// (doc/events.md): a bounded ring of numbered events, each its compact
// JSON text and a tag that says who may see it (the plugin's PrivateData
// ACL, opaque here and freed by the owner's function), the highest number
// handed out ("latest") and the highest one that may be gone ("lost_upto":
// evicted, or never stored).  A page is the JSON answer itself, so the
// HTTP service copies bytes under the ring's lock and never holds it while
// it builds anything else.  No Slurm headers, no I/O: the paging rules are
// core/capi_decode.h's, and the ring is tested with fake tags
// (testsuite/unit/check_event_ring).
//
// One writer (the plugin's events thread) appends; any thread reads.  The
// ring has its own lock; the writer may read an event's text without it
// (each()), since only the writer changes the ring.

#ifndef FLEXCO_SERVICE_EVENT_RING_HPP
#define FLEXCO_SERVICE_EVENT_RING_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace flexco::service {

struct RingPage {
  std::uint32_t count = 0;
  std::uint64_t next = 0, oldest = 0, latest = 0;
  bool lost = false;
};

struct RingStats {
  std::size_t capacity = 0, retained = 0;
  std::uint64_t oldest = 0, latest = 0, lost_upto = 0, evicted = 0;
};

class EventRing {
 public:
  using Tag = void*;
  using FreeTag = std::function<void(Tag)>;
  // May the caller see the event with this tag? (nullptr tag: anyone)
  using Visible = std::function<bool(const void* tag)>;

  explicit EventRing(std::size_t capacity, FreeTag free_tag = {});
  ~EventRing();
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;

  // Drop every event (the marks stay) and hold at most `capacity` (>= 1)
  // from now on.
  void reset(std::size_t capacity);
  void clear();

  // Event `seq` (above every retained one) with its text and tag (the
  // ring's from now on); the oldest goes when full, raising lost_upto.
  // latest rises to seq.
  void append(std::uint64_t seq, std::string json, Tag tag);
  // Number `seq` was handed out but its event cannot be kept (out of
  // memory): latest and lost_upto rise to it.
  void skip(std::uint64_t seq);

  void set_marks(std::uint64_t latest, std::uint64_t lost_upto);
  std::uint64_t latest() const;
  std::uint64_t lost_upto() const;

  // GET /v1/events?after=A&max=M: the answer
  //   {"events":[...],"next":N,"oldest":O,"latest":L,"lost":B}
  // with the first `max` (>= 1) events after `after` the caller may see.
  std::string page(std::uint64_t after, std::uint32_t max, const Visible& visible,
                   RingPage* out) const;

  // fn(seq, text, tag) for each retained event, oldest first, until it
  // returns false.  The writer only: the texts stay valid until it next
  // changes the ring.
  void each(const std::function<bool(std::uint64_t, const std::string&, const void*)>& fn) const;

  RingStats stats() const;

 private:
  struct Event {
    std::uint64_t seq = 0;
    std::string json;
    Tag tag = nullptr;
  };
  const Event& at(std::size_t i) const { return events_[(head_ + i) % events_.size()]; }
  void clear_locked();

  FreeTag free_tag_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;  // capacity slots
  std::size_t head_ = 0, count_ = 0;
  std::uint64_t latest_ = 0, lost_upto_ = 0, evicted_ = 0;
};

}  // namespace flexco::service

#endif
