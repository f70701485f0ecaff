// SPDX-License-Identifier: GPL-2.0-or-later
// parking.hpp - requests the plugin's HTTP service holds without a thread
// (doc/events.md "Long polls", doc/admin.md "BackfillDefer"):
//
//   long polls  GET /v1/events?wait=N that found nothing to read: parked
//               until an event arrives past their cursor, their deadline
//               passes or the service stops; MaxLongPollsPerUser and
//               MaxLongPolls cap them (DaemonUsers exempt);
//   deferred    a complete probe or profile request that came while
//               slurmctld's backfill scheduler was in a cycle: held until
//               the cycle ends or BackfillDefer ms have passed.
//
// No Slurm headers, no libmicrohttpd.  The host suspends and resumes its
// connections (Host::suspend and Host::resume, both called with the
// parking's lock held, so that a resume never overtakes its suspend) and
// says what the newest event is and whether backfill runs.  A request is
// named by an opaque handle; it is off every list before resume() is
// called with it, so the host may free it as soon as it resumes.  sweep()
// is one pass of the waker thread, so the rules are tested against a fake
// clock and fake connections (testsuite/unit/check_parking).

#ifndef FLEXCO_SERVICE_PARKING_HPP
#define FLEXCO_SERVICE_PARKING_HPP

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace flexco::service {

struct ParkingLimits {
  std::uint32_t max_long_polls_per_user = 4;  // MaxLongPollsPerUser
  std::uint32_t max_long_polls = 256;         // MaxLongPolls
  std::uint64_t defer_usec = 0;               // BackfillDefer; 0: off
};

struct ParkingStats {
  // long polls
  std::uint64_t waiting = 0, total = 0, woken = 0, timed_out = 0, refused = 0;
  // deferred probes and profiles
  std::uint64_t deferred = 0, defer_total = 0, defer_released = 0, defer_timed_out = 0;
  std::uint64_t defer_wait_usec = 0, defer_wait_max_usec = 0;
};

class Parking {
 public:
  using Handle = void*;
  struct Host {
    std::function<void(Handle)> suspend;
    std::function<void(Handle)> resume;
    std::function<std::uint64_t()> latest;   // the newest event's number
    std::function<bool()> backfill_active;   // backfill is in a cycle
    std::function<std::uint64_t()> clock;    // monotonic usec; empty: steady_clock
  };

  // How often the waker looks at backfill while it holds a request.
  static constexpr std::uint64_t kDeferPollUsec = 20000;

  explicit Parking(Host host, const ParkingLimits& limits = {});
  ~Parking();
  Parking(const Parking&) = delete;
  Parking& operator=(const Parking&) = delete;

  // What a long poll's own look at the events decided (called with the
  // lock held, so that no event can slip in between look and park):
  // true to park past *after, false to answer now.
  using Look = std::function<bool(std::uint64_t* after)>;

  enum class Verdict { kAnswer, kParked, kRefusedUser, kRefusedTotal };
  struct Outcome {
    Verdict verdict = Verdict::kAnswer;
    std::uint32_t in_way = 0;       // polls counted against the cap
    std::uint32_t retry_after = 0;  // s until the first of them ends at the latest
  };

  // A new long poll of uid (exempt: a DaemonUser, not capped) with the
  // given deadline: look() first; if it wants to park and the service is
  // open, the caps are checked and the request parked (suspend() called).
  Outcome poll(Handle h, std::uint32_t uid, bool exempt, std::uint64_t deadline, const Look& look);
  // A long poll that was resumed and found only events it may not see:
  // parked again past them with its own deadline, uncapped, if look()
  // wants it, the service is open and time is left.  True if parked.
  bool repoll(Handle h, std::uint32_t uid, bool exempt, std::uint64_t deadline, const Look& look);

  // Hold a complete probe or profile while backfill is in a cycle.  True
  // if held (suspend() called); false: serve it now (deferral off,
  // backfill idle, service closed).
  bool defer(Handle h);

  // The request ended (its connection closed): off whichever list it is
  // on, if any, without resume().
  void forget(Handle h);

  // New events arrived: the waker looks at once.
  void notify();

  // One pass of the waker at `now`: resume every long poll with an event
  // past its cursor or past its deadline, every deferred request once
  // backfill is idle or its time is up; stopping: resume all.  Returns
  // when to look again.
  std::uint64_t sweep(std::uint64_t now);

  // Open the parking with these limits and start the waker thread (named
  // `name`); false if it cannot be made.  name nullptr: open, with no
  // thread (the caller runs sweep(); the unit tests).  stop() closes the
  // parking (nothing new parks), resumes everything and joins the waker;
  // it may be opened again (a restart of the service, new limits).
  bool start(const char* name, const ParkingLimits& limits);
  void stop();
  bool open() const;

  ParkingStats stats() const;
  ParkingLimits limits() const;

 private:
  struct Poll {
    std::uint32_t uid;
    bool exempt;
    std::uint64_t after, deadline;
  };
  struct Held {
    std::uint64_t since, deadline;
  };
  std::uint64_t now() const;
  void park_locked(Handle h, std::uint32_t uid, bool exempt, std::uint64_t after,
                   std::uint64_t deadline);
  void unhold_locked(Handle h, std::uint64_t now);
  std::uint64_t sweep_locked(std::uint64_t now);
  void run();

  ParkingLimits limits_;
  Host host_;
  mutable std::mutex mutex_;
  std::condition_variable cond_;
  std::unordered_map<Handle, Poll> polls_;
  std::unordered_map<Handle, Held> held_;
  ParkingStats stats_;
  bool open_ = false, stopping_ = false, running_ = false;
  std::thread waker_;
};

}  // namespace flexco::service

#endif
