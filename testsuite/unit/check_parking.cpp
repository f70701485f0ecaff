// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/parking, the plugin's long polls and the
// requests it holds during a backfill cycle (BackfillDefer): parked until
// an event past the cursor, the deadline or a stop; MaxLongPollsPerUser
// and MaxLongPolls with the Retry-After they quote, DaemonUsers exempt; a
// poll parked again past events its caller may not see; deferral while
// backfill runs; a request that ends while parked; stop and reopen -- on a
// fake clock and fake connections, without slurmctld or libmicrohttpd.  One
// case runs the real waker thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

#include "service/parking.hpp"

#include <check.h>

#include "check_main.hpp"

using flexco::service::Parking;
using flexco::service::ParkingLimits;
using V = Parking::Verdict;

namespace {
constexpr std::uint64_t kSec = 1000000;

// A fake host: which handles are suspended, what was resumed, the clock,
// the newest event and backfill.
struct Fake {
  std::set<void*> suspended;
  std::vector<void*> resumed;
  std::uint64_t now = 1000 * kSec;
  std::uint64_t latest = 10;
  bool bf = false;
  Parking::Host host() {
    Parking::Host h;
    h.suspend = [this](void* x) { ck_assert(suspended.insert(x).second); };
    h.resume = [this](void* x) {
      ck_assert(suspended.erase(x) == 1);  // only what was suspended
      resumed.push_back(x);
    };
    h.latest = [this] { return latest; };
    h.backfill_active = [this] { return bf; };
    h.clock = [this] { return now; };
    return h;
  }
};

int handles[64];
void* H(int i) { return &handles[i]; }

// a look that wants to park past `after`
Parking::Look park_past(std::uint64_t after) {
  return [after](std::uint64_t* a) {
    *a = after;
    return true;
  };
}
const Parking::Look kAnswer = [](std::uint64_t*) { return false; };

ParkingLimits limits(std::uint32_t per_user, std::uint32_t total, std::uint64_t defer = 0) {
  ParkingLimits l;
  l.max_long_polls_per_user = per_user;
  l.max_long_polls = total;
  l.defer_usec = defer;
  return l;
}
}  // namespace

START_TEST(woken_by_event_or_deadline) {
  Fake f;
  Parking p(f.host());
  ck_assert(p.start(nullptr, limits(4, 16)));
  // the look decides: nothing to read parks, something to read answers
  ck_assert(p.poll(H(0), 1000, false, f.now + 30 * kSec, kAnswer).verdict == V::kAnswer);
  ck_assert(f.suspended.empty());
  ck_assert(p.poll(H(1), 1000, false, f.now + 30 * kSec, park_past(10)).verdict == V::kParked);
  ck_assert(p.poll(H(2), 1000, false, f.now + 5 * kSec, park_past(10)).verdict == V::kParked);
  ck_assert_uint_eq(f.suspended.size(), 2);
  // nothing new, before the deadlines: asleep until the first of them
  ck_assert_uint_eq(p.sweep(f.now), f.now + 5 * kSec);
  ck_assert(f.resumed.empty());
  // H(2)'s deadline
  f.now += 5 * kSec;
  p.sweep(f.now);
  ck_assert(f.resumed == std::vector<void*>{H(2)});
  // an event past H(1)'s cursor
  f.latest = 11;
  p.sweep(f.now);
  ck_assert(f.resumed == (std::vector<void*>{H(2), H(1)}));
  const auto s = p.stats();
  ck_assert_uint_eq(s.waiting, 0);
  ck_assert_uint_eq(s.total, 2);
  ck_assert_uint_eq(s.woken, 1);
  ck_assert_uint_eq(s.timed_out, 1);
  // a resumed request is off the lists: its end changes nothing
  p.forget(H(1));
  ck_assert_uint_eq(p.stats().waiting, 0);
}
END_TEST

START_TEST(caps_and_retry_after) {
  Fake f;
  Parking p(f.host());
  ck_assert(p.start(nullptr, limits(2, 3)));
  const std::uint64_t t = f.now;
  ck_assert(p.poll(H(0), 1000, false, t + 30 * kSec, park_past(10)).verdict == V::kParked);
  ck_assert(p.poll(H(1), 1000, false, t + 20 * kSec, park_past(10)).verdict == V::kParked);
  // the uid's third: refused, the first of its two ends in 20 s
  f.now += 500000;
  auto o = p.poll(H(2), 1000, false, t + 60 * kSec, park_past(10));
  ck_assert(o.verdict == V::kRefusedUser);
  ck_assert_uint_eq(o.in_way, 2);
  ck_assert_uint_eq(o.retry_after, 20);  // 19.5 s, rounded up
  ck_assert(f.suspended.count(H(2)) == 0);
  // another uid takes the last of the three
  ck_assert(p.poll(H(3), 1001, false, t + 10 * kSec, park_past(10)).verdict == V::kParked);
  o = p.poll(H(4), 1002, false, t + 60 * kSec, park_past(10));
  ck_assert(o.verdict == V::kRefusedTotal);
  ck_assert_uint_eq(o.in_way, 3);
  ck_assert_uint_eq(o.retry_after, 10);
  // a DaemonUser is neither capped nor counted
  for (int i = 10; i < 20; i++) {
    ck_assert(p.poll(H(i), 0, true, t + 60 * kSec, park_past(10)).verdict == V::kParked);
  }
  ck_assert(p.poll(H(5), 1003, false, t + 60 * kSec, park_past(10)).verdict == V::kRefusedTotal);
  // a refused look that wanted to answer is answered, not refused
  ck_assert(p.poll(H(6), 1000, false, t + 60 * kSec, kAnswer).verdict == V::kAnswer);
  // one ends: room again
  p.forget(H(3));
  ck_assert(f.suspended.count(H(3)) == 1);  // forget() resumes nothing
  f.suspended.erase(H(3));
  ck_assert(p.poll(H(5), 1003, false, t + 60 * kSec, park_past(10)).verdict == V::kParked);
  const auto s = p.stats();
  ck_assert_uint_eq(s.refused, 3);
  ck_assert_uint_eq(s.waiting, 13);  // H(0), H(1), H(5) and ten DaemonUser polls
}
END_TEST

START_TEST(parked_again_past_hidden_events) {
  Fake f;
  Parking p(f.host());
  ck_assert(p.start(nullptr, limits(1, 1)));
  const std::uint64_t deadline = f.now + 30 * kSec;
  ck_assert(p.poll(H(0), 1000, false, deadline, park_past(10)).verdict == V::kParked);
  ck_assert(p.poll(H(1), 1000, false, deadline, park_past(10)).verdict == V::kRefusedUser);
  f.latest = 12;  // events 11, 12: the caller may see neither
  p.sweep(f.now);
  ck_assert(f.resumed == std::vector<void*>{H(0)});
  // again, past them, although its uid's cap is full: it is the same poll
  ck_assert(p.repoll(H(0), 1000, false, deadline, park_past(12)));
  ck_assert(f.suspended.count(H(0)) == 1);
  p.sweep(f.now);
  ck_assert_uint_eq(f.resumed.size(), 1);  // nothing past 12 yet
  // not counted as a new long poll
  ck_assert_uint_eq(p.stats().total, 1);
  // with its time up it is answered
  f.now = deadline;
  p.sweep(f.now);
  ck_assert_uint_eq(f.resumed.size(), 2);
  ck_assert(!p.repoll(H(0), 1000, false, deadline, park_past(12)));
  ck_assert(f.suspended.empty());
}
END_TEST

START_TEST(deferred_while_backfill_runs) {
  Fake f;
  Parking p(f.host());
  // off: BackfillDefer=0
  ck_assert(p.start(nullptr, limits(4, 16, 0)));
  f.bf = true;
  ck_assert(!p.defer(H(0)));
  p.stop();
  ck_assert(p.start(nullptr, limits(4, 16, 500000)));
  // backfill idle: served at once
  f.bf = false;
  ck_assert(!p.defer(H(0)));
  f.bf = true;
  ck_assert(p.defer(H(0)));
  ck_assert(p.defer(H(1)));
  // the waker looks at backfill every 20 ms while it holds something
  ck_assert_uint_eq(p.sweep(f.now), f.now + Parking::kDeferPollUsec);
  ck_assert(f.resumed.empty());
  // the cycle ends after 100 ms: both released
  f.now += 100000;
  f.bf = false;
  p.sweep(f.now);
  ck_assert_uint_eq(f.resumed.size(), 2);
  // one held past BackfillDefer while the cycle goes on
  f.bf = true;
  ck_assert(p.defer(H(2)));
  f.now += 500000;
  p.sweep(f.now);
  ck_assert_uint_eq(f.resumed.size(), 3);
  // one whose connection closed while held
  ck_assert(p.defer(H(3)));
  f.now += 1000;
  p.forget(H(3));
  const auto s = p.stats();
  ck_assert_uint_eq(s.deferred, 0);
  ck_assert_uint_eq(s.defer_total, 4);
  ck_assert_uint_eq(s.defer_released, 2);
  ck_assert_uint_eq(s.defer_timed_out, 1);
  ck_assert_uint_eq(s.defer_wait_usec, 100000 + 100000 + 500000 + 1000);
  ck_assert_uint_eq(s.defer_wait_max_usec, 500000);
}
END_TEST

START_TEST(stop_resumes_all_and_closes) {
  Fake f;
  Parking p(f.host());
  // closed until started: nothing parks
  ck_assert(p.poll(H(0), 1000, false, f.now + kSec, park_past(10)).verdict == V::kAnswer);
  f.bf = true;
  ck_assert(!p.defer(H(0)));
  ck_assert(p.start(nullptr, limits(4, 16, 1000000)));
  ck_assert(p.poll(H(1), 1000, false, f.now + 30 * kSec, park_past(10)).verdict == V::kParked);
  ck_assert(p.defer(H(2)));
  p.stop();
  ck_assert(f.suspended.empty());
  ck_assert_uint_eq(f.resumed.size(), 2);
  ck_assert(!p.open());
  ck_assert(p.poll(H(3), 1000, false, f.now + kSec, park_past(10)).verdict == V::kAnswer);
  ck_assert(!p.defer(H(3)));
  ck_assert(!p.repoll(H(1), 1000, false, f.now + kSec, park_past(10)));
  // stopped resumed are not counted as released by a backfill's end
  ck_assert_uint_eq(p.stats().defer_released, 0);
  // opened again, with new limits
  ck_assert(p.start(nullptr, limits(1, 16)));
  ck_assert(p.poll(H(4), 1000, false, f.now + kSec, park_past(10)).verdict == V::kParked);
  ck_assert(p.poll(H(5), 1000, false, f.now + kSec, park_past(10)).verdict == V::kRefusedUser);
  p.stop();
  ck_assert(f.suspended.empty());
}
END_TEST

// The real waker thread on the real clock: an event resumes a parked poll
// at once, a deadline of 200 ms resumes another, stop() resumes the rest.
struct Shared {
  std::mutex m;
  std::condition_variable cv;
  std::set<void*> suspended;
  std::vector<void*> resumed;
  std::atomic<std::uint64_t> latest{10};
};

bool await(Shared& sh, std::size_t n, int ms) {
  std::unique_lock<std::mutex> lock(sh.m);
  return sh.cv.wait_for(lock, std::chrono::milliseconds(ms),
                        [&] { return sh.resumed.size() >= n; });
}

START_TEST(waker_thread) {
  Shared sh;
  Parking::Host h;
  h.suspend = [&sh](void* x) {
    std::lock_guard<std::mutex> lock(sh.m);
    sh.suspended.insert(x);
  };
  h.resume = [&sh](void* x) {
    std::lock_guard<std::mutex> lock(sh.m);
    sh.suspended.erase(x);
    sh.resumed.push_back(x);
    sh.cv.notify_all();
  };
  h.latest = [&sh] { return sh.latest.load(); };
  Parking p(h);
  ck_assert(p.start("check_waker", limits(8, 8)));
  const auto now = [] {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  };
  ck_assert(p.poll(H(0), 1000, false, now() + 600 * kSec, park_past(10)).verdict == V::kParked);
  ck_assert(p.poll(H(1), 1000, false, now() + 200000, park_past(10)).verdict == V::kParked);
  ck_assert(p.poll(H(2), 1000, false, now() + 600 * kSec, park_past(10)).verdict == V::kParked);
  // the deadline of 200 ms: H(1) first, alone
  ck_assert(await(sh, 1, 10000));
  {
    std::lock_guard<std::mutex> lock(sh.m);
    ck_assert(sh.resumed == std::vector<void*>{H(1)});
  }
  // an event and the notice: H(0) and H(2), long before their deadline
  sh.latest = 11;
  p.notify();
  ck_assert(await(sh, 3, 10000));
  ck_assert(p.poll(H(3), 1000, false, now() + 600 * kSec, park_past(11)).verdict == V::kParked);
  p.stop();
  std::lock_guard<std::mutex> lock(sh.m);
  ck_assert_uint_eq(sh.resumed.size(), 4);
  ck_assert(sh.suspended.empty());
}
END_TEST

int main() {
  Suite* s = suite_create("parking");
  TCase* tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, woken_by_event_or_deadline);
  tcase_add_test(tc, caps_and_retry_after);
  tcase_add_test(tc, parked_again_past_hidden_events);
  tcase_add_test(tc, deferred_while_backfill_runs);
  tcase_add_test(tc, stop_resumes_all_and_closes);
  tcase_add_test(tc, waker_thread);
  suite_add_tcase(s, tc);
  return run_check_suite(s);
}
