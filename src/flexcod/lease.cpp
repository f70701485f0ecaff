// SPDX-License-Identifier: GPL-2.0-or-later
// lease.cpp - see lease.hpp.

#include "flexcod/lease.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "flexcod/log.hpp"
#include "flexcod/test_hold.hpp"

namespace flexcod {

Lease::Lease(Store& store, Config conf) : store_(store), conf_(std::move(conf)) {}

Lease::~Lease() { stop(false); }

std::int64_t Lease::mono_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Lease::start(std::function<void(std::int64_t)> acquired,
                  std::function<void(const std::string&)> lost) {
  acquired_ = std::move(acquired);
  lost_ = std::move(lost);
  thread_ = std::thread([this] { loop(); });
}

void Lease::stop(bool release) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopping_ && !thread_.joinable() && !starter_.joinable()) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (starter_.joinable()) starter_.join();
  std::int64_t epoch;
  {
    std::lock_guard<std::mutex> lock(m_);
    epoch = own_epoch_;
  }
  act_until_ms_ = 0;
  if (!release || epoch == 0) return;
  Store::LeaseStep s;
  s.holder = conf_.holder;
  s.epoch = epoch;
  s.release = true;
  Store::LeaseRow row;
  std::string why;
  if (store_.lease_step(s, &row, &why)) {
    fc_info("lease: given back (epoch %lld)", static_cast<long long>(epoch));
  } else {
    fc_error("lease: cannot give it back (%s); a standby takes over once it expires", why.c_str());
  }
}

void Lease::wait_started() {
  {
    std::lock_guard<std::mutex> lock(m_);
    no_take_ = true;
  }
  while (true) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!starting_) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kSliceMs));
  }
}

// Waits up to ms, in slices of kSliceMs, until stopping or a raise is
// asked; true when stopping.  (Slices rather than a condition variable:
// the lease's thread is the only one to wait, and a few wake-ups a second
// cost nothing next to the database's round trips.)
bool Lease::nap(std::int64_t ms) {
  const std::int64_t until = mono_ms() + ms;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (stopping_) return true;
      if (own_epoch_ != 0 && raise_to_.load() > own_epoch_) return false;
    }
    const std::int64_t left = until - mono_ms();
    if (left <= 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<std::int64_t>(left, kSliceMs)));
  }
}

bool Lease::acting() const {
  const std::int64_t until = act_until_ms_.load();
  return until != 0 && mono_ms() < until;
}

bool Lease::fence_header(std::string* value) const {
  std::int64_t epoch;
  {
    std::lock_guard<std::mutex> lock(m_);
    epoch = own_epoch_;
  }
  // flexcod-testhooks only: a deposed flexcod that does not notice it was
  // deposed (the worst case the plugins' fencing is there for).
  if (epoch == 0 || (!acting() && !test_ignore_lease())) return false;
  *value = conf_.grid + ":" + std::to_string(epoch);
  return true;
}

Lease::Status Lease::status() const {
  std::lock_guard<std::mutex> lock(m_);
  Status s;
  s.in_charge = own_epoch_ != 0 && acting();
  s.holder = row_.holder;
  s.address = row_.address;
  s.epoch = row_.epoch;
  s.takeovers = row_.takeovers;
  s.own_epoch = own_epoch_;
  s.acquired_at = acquired_at_;
  return s;
}

void Lease::saw_epoch(std::int64_t seen) const {
  std::int64_t want = seen + 1, cur = raise_to_.load();
  while (cur < want && !raise_to_.compare_exchange_weak(cur, want)) {
  }
}

void Lease::lose(const std::string& why) {
  act_until_ms_ = 0;
  if (lost_said_.exchange(true)) return;
  fc_error("lease: this flexcod stops acting: %s", why.c_str());
  if (lost_) lost_(why);
}

// One lease step (take: as a standby); true when this flexcod holds the
// lease after it.  The acting time is counted from before the request was
// sent: the database's expiry is later than that by its own clock.
bool Lease::step(bool take, std::string* why, bool* db_error) {
  const std::int64_t lease_ms = 1000LL * conf_.lease_seconds;
  const std::int64_t margin_ms = lease_ms / 3;
  Store::LeaseStep s;
  s.holder = conf_.holder;
  s.address = conf_.address;
  s.lease_ms = lease_ms;
  s.take = take;
  s.force = take && conf_.exclusive;
  {
    std::lock_guard<std::mutex> lock(m_);
    s.epoch = own_epoch_;
  }
  if (s.epoch != 0 && raise_to_.load() > s.epoch) s.raise_to = raise_to_.load();
  const std::int64_t sent = mono_ms();
  Store::LeaseRow row;
  if (!store_.lease_step(s, &row, why)) {
    if (db_error) *db_error = true;
    return false;
  }
  const bool mine = row.holder == conf_.holder;
  std::int64_t was;
  {
    std::lock_guard<std::mutex> lock(m_);
    const Store::LeaseRow before = row_;
    row_ = row;
    was = own_epoch_;
    if (mine) own_epoch_ = row.epoch;
    if (mine && was == 0) {
      acquired_at_ = now_seconds();
      if (before.holder.empty() || before.holder == conf_.holder) {
        fc_info("lease: taken, this flexcod is in charge (epoch %lld)", static_cast<long long>(row.epoch));
      } else {
        fc_info("lease: taken over from %s (%s), this flexcod is in charge (epoch %lld, takeover %lld)",
                before.holder.c_str(), before.address.c_str(), static_cast<long long>(row.epoch),
                static_cast<long long>(row.takeovers));
      }
    }
  }
  if (!mine) {
    *why = row.holder.empty() ? "nobody holds the lease"
                              : "the lease is held by " + row.holder + " (" + row.address + ") at epoch " +
                                    std::to_string(row.epoch);
    return false;
  }
  // SQLite: the file's flock keeps every other flexcod out for as long as
  // this one runs, so the lease, once taken, is never renewed nor lost
  // (a failing database stops flexcod through the store's failure
  // handler, as it always did).
  act_until_ms_ = conf_.exclusive ? std::numeric_limits<std::int64_t>::max() : sent + lease_ms - margin_ms;
  if (mono_ms() >= act_until_ms_.load()) {
    *why = "the lease step took longer than LeaseTime allows";
    return false;
  }
  if (was != 0 && row.epoch != was) {
    fc_error("lease: epoch raised from %lld to %lld, above the one a cluster has seen (was the "
             "database restored from a backup?)",
             static_cast<long long>(was), static_cast<long long>(row.epoch));
    store_.set_fence(conf_.holder, row.epoch, [this](const std::string& w) {
      fc_error("state database: a write refused: %s", w.c_str());
      lose(w);
    });
  }
  if (was == 0) {
    store_.set_fence(conf_.holder, row.epoch, [this](const std::string& w) {
      fc_error("state database: a write refused: %s", w.c_str());
      lose(w);
    });
    std::lock_guard<std::mutex> lock(m_);
    if (no_take_) return true;  // stopping: nothing started (stop gives it back)
    starting_ = true;
    starter_ = std::thread([this, e = row.epoch] {
      if (acquired_) acquired_(e);
      std::lock_guard<std::mutex> l(m_);
      starting_ = false;
    });
  }
  return true;
}

void Lease::loop() {
  const std::int64_t lease_ms = 1000LL * conf_.lease_seconds;
  const std::int64_t renew_ms = lease_ms / 3;
  const std::int64_t poll_ms = std::min<std::int64_t>(1000, renew_ms);
  std::string last_holder;
  std::int64_t last_sent = 0;
  int failures = 0;  // the standby's lease steps the database failed, in a row
  while (true) {
    std::int64_t held;
    {
      std::lock_guard<std::mutex> lock(m_);
      held = own_epoch_;
    }
    bool no_take;
    {
      std::lock_guard<std::mutex> lock(m_);
      no_take = no_take_;
    }
    if (held == 0 && no_take) {
      // stopping: a standby takes nothing any more
    } else if (held == 0) {
      std::string why;
      bool db_error = false;
      if (!step(true, &why, &db_error)) {
        // A standby whose database stopped answering (libpq does not
        // reconnect: a restarted server leaves this connection dead for
        // good) stops as the one in charge would, to start again and
        // connect anew.
        failures = db_error ? failures + 1 : 0;
        if (failures >= 3) {
          lose("the database does not answer (" + why + ")");
          return;
        }
        std::lock_guard<std::mutex> lock(m_);
        if (!db_error && row_.holder != last_holder) {
          fc_info("lease: standby: %s", why.c_str());
          last_holder = row_.holder;
        }
      } else {
        last_sent = mono_ms();
      }
    } else if (conf_.exclusive) {
      // SQLite: held until this flexcod stops (above); only raised above
      // an epoch a cluster saw (a file restored from a backup)
      std::string why;
      if (raise_to_.load() > held && !step(false, &why)) {
        fc_error("lease: cannot raise the epoch: %s", why.c_str());
        raise_to_ = 0;  // until a cluster refuses again (no busy loop)
      }
    } else {
      const std::int64_t t = mono_ms();
      if (!acting()) {
        lose("the lease was not renewed in time (LeaseTime " + std::to_string(conf_.lease_seconds) +
             " s)");
        return;
      }
      std::int64_t own;
      {
        std::lock_guard<std::mutex> lock(m_);
        own = own_epoch_;
      }
      if (t - last_sent >= renew_ms || raise_to_.load() > own) {
        last_sent = t;
        std::string why;
        if (!step(false, &why)) {
          lose("renewing the lease failed: " + why);
          return;
        }
      }
    }
    std::int64_t wait = poll_ms;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (own_epoch_ != 0 && conf_.exclusive) {
        wait = 60000;
      } else if (own_epoch_ != 0) {
        const std::int64_t until_renew = last_sent + renew_ms - mono_ms();
        const std::int64_t until_end = act_until_ms_.load() - mono_ms();
        wait = std::max<std::int64_t>(1, std::min(until_renew, until_end));
      }
    }
    if (nap(wait)) return;
  }
}

}  // namespace flexcod
