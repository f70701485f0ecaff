// SPDX-License-Identifier: GPL-2.0-or-later
// capi_parking.cpp - see capi_parking.h.

#include "service/capi_parking.h"

#include <cstring>

#include "service/parking.hpp"

using flexco::service::Parking;
using flexco::service::ParkingLimits;

struct flexco_parking {
  explicit flexco_parking(Parking::Host h) : park(std::move(h)) {}
  Parking park;
};

extern "C" flexco_parking_t* flexco_parking_create(const flexco_parking_host_t* host) {
  try {
    Parking::Host h;
    const flexco_parking_host_t c = *host;
    h.suspend = [c](void* x) { c.suspend(x); };
    h.resume = [c](void* x) { c.resume(x); };
    if (c.latest != nullptr) h.latest = [c] { return c.latest(); };
    if (c.backfill_active != nullptr) h.backfill_active = [c] { return c.backfill_active(); };
    return new flexco_parking(std::move(h));
  } catch (...) {
    return nullptr;
  }
}

extern "C" bool flexco_parking_open(flexco_parking_t* p, const flexco_parking_limits_t* l,
                                    const char* name) {
  try {
    if (p == nullptr) return false;
    ParkingLimits lim;
    lim.max_long_polls_per_user = l->max_long_polls_per_user;
    lim.max_long_polls = l->max_long_polls;
    lim.defer_usec = l->defer_usec;
    return p->park.start(name, lim);
  } catch (...) {
    return false;
  }
}

extern "C" void flexco_parking_stop(flexco_parking_t* p) {
  if (p == nullptr) return;
  try {
    p->park.stop();
  } catch (...) {
  }
}

extern "C" void flexco_parking_destroy(flexco_parking_t* p) {
  if (p == nullptr) return;
  flexco_parking_stop(p);
  delete p;
}

extern "C" int flexco_parking_poll(flexco_parking_t* p, void* handle, uint32_t uid, bool exempt,
                                   uint64_t deadline, bool again,
                                   int (*look)(void* arg, uint64_t* after), void* arg,
                                   uint32_t* in_way, uint32_t* retry_after) {
  if (in_way != nullptr) *in_way = 0;
  if (retry_after != nullptr) *retry_after = 0;
  try {
    if (p == nullptr) {
      // no parking: the look still decides nothing but runs, so that the
      // caller has its answer
      std::uint64_t after = 0;
      look(arg, &after);
      return FLEXCO_PARK_ANSWER;
    }
    const Parking::Look f = [look, arg](std::uint64_t* after) { return look(arg, after) != 0; };
    if (again) return p->park.repoll(handle, uid, exempt, deadline, f) ? FLEXCO_PARK_PARKED : FLEXCO_PARK_ANSWER;
    const Parking::Outcome o = p->park.poll(handle, uid, exempt, deadline, f);
    if (in_way != nullptr) *in_way = o.in_way;
    if (retry_after != nullptr) *retry_after = o.retry_after;
    switch (o.verdict) {
      case Parking::Verdict::kParked:
        return FLEXCO_PARK_PARKED;
      case Parking::Verdict::kRefusedUser:
        return FLEXCO_PARK_REFUSED_USER;
      case Parking::Verdict::kRefusedTotal:
        return FLEXCO_PARK_REFUSED_TOTAL;
      default:
        return FLEXCO_PARK_ANSWER;
    }
  } catch (...) {
    return FLEXCO_PARK_ANSWER;
  }
}

extern "C" bool flexco_parking_defer(flexco_parking_t* p, void* handle) {
  try {
    return p != nullptr && p->park.defer(handle);
  } catch (...) {
    return false;
  }
}

extern "C" void flexco_parking_forget(flexco_parking_t* p, void* handle) {
  try {
    if (p != nullptr) p->park.forget(handle);
  } catch (...) {
  }
}

extern "C" void flexco_parking_notify(flexco_parking_t* p) {
  try {
    if (p != nullptr) p->park.notify();
  } catch (...) {
  }
}

extern "C" void flexco_parking_stats(const flexco_parking_t* p, flexco_parking_stats_t* out) {
  std::memset(out, 0, sizeof(*out));
  if (p == nullptr) return;
  try {
    const auto s = p->park.stats();
    out->waiting = s.waiting;
    out->total = s.total;
    out->woken = s.woken;
    out->timed_out = s.timed_out;
    out->refused = s.refused;
    out->deferred = s.deferred;
    out->defer_total = s.defer_total;
    out->defer_released = s.defer_released;
    out->defer_timed_out = s.defer_timed_out;
    out->defer_wait_usec = s.defer_wait_usec;
    out->defer_wait_max_usec = s.defer_wait_max_usec;
  } catch (...) {
  }
}
