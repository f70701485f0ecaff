// SPDX-License-Identifier: GPL-2.0-or-later
// parking.cpp - see parking.hpp.

#include "service/parking.hpp"

#include <pthread.h>

#include <chrono>
#include <vector>

namespace flexco::service {

namespace {
constexpr std::uint64_t kIdleUsec = 60ULL * 1000000ULL;  // look at least this often
}

Parking::Parking(Host host, const ParkingLimits& limits) : limits_(limits), host_(std::move(host)) {}

Parking::~Parking() { stop(); }

std::uint64_t Parking::now() const {
  if (host_.clock) return host_.clock();
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

bool Parking::open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

void Parking::park_locked(Handle h, std::uint32_t uid, bool exempt, std::uint64_t after,
                          std::uint64_t deadline) {
  polls_[h] = Poll{uid, exempt, after, deadline};
  stats_.waiting = polls_.size();
  host_.suspend(h);
  cond_.notify_one();  // maybe the next deadline
}

Parking::Outcome Parking::poll(Handle h, std::uint32_t uid, bool exempt, std::uint64_t deadline,
                               const Look& look) {
  Outcome out;
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t after = 0;
  if (!look(&after) || !open_) return out;
  if (!exempt) {
    std::uint32_t mine = 0, users = 0;
    std::uint64_t mine_end = UINT64_MAX, users_end = UINT64_MAX;
    for (const auto& [other, p] : polls_) {
      if (p.exempt) continue;
      users++;
      if (p.deadline < users_end) users_end = p.deadline;
      if (p.uid != uid) continue;
      mine++;
      if (p.deadline < mine_end) mine_end = p.deadline;
    }
    const bool per_user = mine >= limits_.max_long_polls_per_user;
    if (per_user || users >= limits_.max_long_polls) {
      const std::uint64_t t = now(), end = per_user ? mine_end : users_end;
      const std::uint64_t secs = end > t ? (end - t + 999999) / 1000000 : 1;
      out.verdict = per_user ? Verdict::kRefusedUser : Verdict::kRefusedTotal;
      out.in_way = per_user ? mine : users;
      out.retry_after = secs < 1 ? 1 : static_cast<std::uint32_t>(secs);
      stats_.refused++;
      return out;
    }
  }
  stats_.total++;
  park_locked(h, uid, exempt, after, deadline);
  out.verdict = Verdict::kParked;
  return out;
}

bool Parking::repoll(Handle h, std::uint32_t uid, bool exempt, std::uint64_t deadline,
                     const Look& look) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t after = 0;
  if (!look(&after) || !open_ || now() >= deadline) return false;
  park_locked(h, uid, exempt, after, deadline);
  return true;
}

bool Parking::defer(Handle h) {
  if (!host_.backfill_active || !host_.backfill_active()) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!open_ || limits_.defer_usec == 0) return false;
  const std::uint64_t t = now();
  held_[h] = Held{t, t + limits_.defer_usec};
  stats_.deferred = held_.size();
  stats_.defer_total++;
  host_.suspend(h);
  cond_.notify_one();  // the waker looks at backfill from now on
  return true;
}

void Parking::unhold_locked(Handle h, std::uint64_t t) {
  auto it = held_.find(h);
  if (it == held_.end()) return;
  const std::uint64_t waited = t > it->second.since ? t - it->second.since : 0;
  held_.erase(it);
  stats_.deferred = held_.size();
  stats_.defer_wait_usec += waited;
  if (waited > stats_.defer_wait_max_usec) stats_.defer_wait_max_usec = waited;
}

void Parking::forget(Handle h) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (polls_.erase(h) != 0) stats_.waiting = polls_.size();
  unhold_locked(h, now());
}

void Parking::notify() {
  std::lock_guard<std::mutex> lock(mutex_);
  cond_.notify_one();
}

std::uint64_t Parking::sweep(std::uint64_t t) {
  std::lock_guard<std::mutex> lock(mutex_);
  return sweep_locked(t);
}

std::uint64_t Parking::sweep_locked(std::uint64_t t) {
  std::uint64_t next = t + kIdleUsec;
  std::vector<Handle> go;
  if (!polls_.empty()) {
    const std::uint64_t latest = host_.latest ? host_.latest() : 0;
    for (auto it = polls_.begin(); it != polls_.end();) {
      const Poll& p = it->second;
      if (stopping_ || latest > p.after) {
        stats_.woken++;
      } else if (t >= p.deadline) {
        stats_.timed_out++;
      } else {
        if (p.deadline < next) next = p.deadline;
        ++it;
        continue;
      }
      go.push_back(it->first);
      it = polls_.erase(it);
    }
    stats_.waiting = polls_.size();
  }
  if (!held_.empty()) {
    const bool bf = !stopping_ && host_.backfill_active && host_.backfill_active();
    std::vector<Handle> release;
    for (const auto& [h, d] : held_) {
      if (!bf) {
        if (!stopping_) stats_.defer_released++;
      } else if (t >= d.deadline) {
        stats_.defer_timed_out++;
      } else {
        if (d.deadline < next) next = d.deadline;
        continue;
      }
      release.push_back(h);
    }
    for (Handle h : release) {
      unhold_locked(h, t);
      go.push_back(h);
    }
    if (!held_.empty() && t + kDeferPollUsec < next) next = t + kDeferPollUsec;
  }
  // each is off every list now: the host may free it once resumed
  for (Handle h : go) host_.resume(h);
  return next;
}

void Parking::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    const std::uint64_t t = now();
    const std::uint64_t next = sweep_locked(t);
    if (stopping_) break;
    cond_.wait_for(lock, std::chrono::microseconds(next > t ? next - t : 0));
  }
}

bool Parking::start(const char* name, const ParkingLimits& limits) {
  std::lock_guard<std::mutex> lock(mutex_);
  limits_ = limits;
  if (open_) return true;
  stopping_ = false;
  if (name == nullptr) {
    open_ = true;
    return true;
  }
  try {
    waker_ = std::thread([this] { run(); });
  } catch (...) {
    return false;
  }
  pthread_setname_np(waker_.native_handle(), name);
  running_ = true;
  open_ = true;
  return true;
}

void Parking::stop() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = false;
    stopping_ = true;
    if (running_) {
      running_ = false;
      t = std::move(waker_);
    } else {
      // no waker: resume what is parked here and now
      sweep_locked(now());
    }
    cond_.notify_one();
  }
  if (t.joinable()) t.join();
}

ParkingLimits Parking::limits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limits_;
}

ParkingStats Parking::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace flexco::service
