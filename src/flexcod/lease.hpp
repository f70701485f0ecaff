// SPDX-License-Identifier: GPL-2.0-or-later
// lease.hpp - which flexcod is in charge (doc/flexcod.md, "High
// availability").
//
// Several flexcods share one PostgreSQL database; one row of it, the
// lease, names the one in charge (holder, its advertised address, an
// epoch, an expiry by the database's clock).  The one in charge renews it
// every third of LeaseTime; another takes it once it has expired, with
// the epoch one more, and runs the recovery a restart runs.  Only the one
// in charge acts (plans, commits, moves, reaps, gates starts, follows the
// clusters' events).
//
// Why never two act at once:
//  - the row changes only in a transaction by the database's clock, so at
//    any moment at most one holder has an unexpired lease;
//  - the holder acts only until its monotonic clock says LeaseTime minus a
//    margin (a third of it) has passed since it sent its last successful
//    renewal, which the database granted later than that: it stops before
//    the database can let another take over;
//  - for a request already on its way when it stops (a process paused
//    mid-call), the epoch fences: every write transaction checks the row
//    still names this holder at this epoch (store.hpp, set_fence), and
//    every request to a plugin carries the epoch, which the plugin refuses
//    once it has seen a higher one (doc/reservations.md, "Epochs").
//
// With SQLite (one flexcod per file, flock) the lease is taken at once
// and held, without renewals, until flexcod stops.
//
// Thread-safe.

#ifndef FLEXCO_FLEXCOD_LEASE_HPP
#define FLEXCO_FLEXCOD_LEASE_HPP

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "flexcod/store.hpp"

namespace flexcod {

class Lease {
 public:
  struct Config {
    std::string holder;    // this process: host, pid and a random part
    std::string address;   // AdvertiseURL
    std::string grid;      // the database's instance id (Store::instance)
    int lease_seconds = 6;  // LeaseTime
    bool exclusive = false;  // SQLite: no other flexcod can be there
  };
  Lease(Store& store, Config conf);
  ~Lease();
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  // Starts the lease's thread.  Once this flexcod holds the lease (at
  // once with exclusive), the store's fence is set and `acquired` is
  // called with the epoch in a thread of its own (recovery may be long;
  // renewals go on meanwhile).  `lost` is called, from the lease's thread
  // or from a write the fence refused, as soon as this flexcod must stop
  // acting (a renewal failed, came late or found another holder), and
  // when a standby's database has not answered three looks in a row.
  void start(std::function<void(std::int64_t)> acquired,
             std::function<void(const std::string&)> lost);
  // Stops the thread; with `release`, gives the lease back (a clean
  // stop: a standby takes over at its next look, not after LeaseTime).
  void stop(bool release);
  // Takes the lease no more, and waits until `acquired`, if it was
  // called, has returned (before the engine it starts is stopped).
  void wait_started();

  // Held, and within the time by the monotonic clock that the last
  // renewal allows.
  bool acting() const;
  // The Flexco-Epoch header's value ("<grid>:<epoch>") of a request to a
  // plugin; false when this flexcod does not act (nothing is sent).
  bool fence_header(std::string* value) const;

  struct Status {
    bool in_charge = false;
    std::string holder, address;  // the holder's, as last read
    std::int64_t epoch = 0;
    std::int64_t takeovers = 0;
    std::int64_t own_epoch = 0;   // this flexcod's, while it holds it
    std::int64_t acquired_at = 0;  // when it took it (UTC s), 0 = never
  };
  Status status() const;
  // A plugin refused a request of this flexcod's epoch as stale, having
  // seen `seen`: the next renewal raises the epoch above it if this
  // flexcod still holds the lease (the clusters saw epochs a restored
  // database no longer has), or finds it lost.  Soon, not here.
  void saw_epoch(std::int64_t seen) const;
  const Config& config() const { return conf_; }

 private:
  void loop();
  bool step(bool take, std::string* why, bool* db_error = nullptr);
  void lose(const std::string& why);
  static std::int64_t mono_ms();
  bool nap(std::int64_t ms);
  static constexpr std::int64_t kSliceMs = 20;

  Store& store_;
  Config conf_;
  std::function<void(std::int64_t)> acquired_;
  std::function<void(const std::string&)> lost_;
  mutable std::mutex m_;
  bool stopping_ = false;
  bool no_take_ = false;   // wait_started was called
  bool starting_ = false;  // `acquired` runs
  Store::LeaseRow row_;          // under m_
  std::int64_t own_epoch_ = 0;   // under m_; 0: not held
  std::int64_t acquired_at_ = 0;
  std::atomic<std::int64_t> act_until_ms_{0};  // monotonic; 0: not acting
  std::atomic<bool> lost_said_{false};
  mutable std::atomic<std::int64_t> raise_to_{0};
  std::thread thread_;
  std::thread starter_;
};

}  // namespace flexcod

#endif
