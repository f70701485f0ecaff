// SPDX-License-Identifier: GPL-2.0-or-later
// ha.cpp - the engine's side of high availability: whether this flexcod
// acts, and the lease in GET /v1/stats and /metrics (doc/flexcod.md,
// "High availability"; the lease itself is lease.cpp).

#include "flexcod/engine_internal.hpp"

namespace flexcod {

using namespace engine_detail;

bool Engine::in_charge() const {
  if (!running_.load()) return false;
  return lease_ == nullptr || lease_->acting();
}

std::string Engine::leader_address() const {
  if (lease_ == nullptr) return "";
  return lease_->status().address;
}

JsonPtr Engine::ha_json() const {
  JsonPtr j = obj();
  json_t* o = j.get();
  set(o, "in_charge", json_boolean(in_charge()));
  if (lease_ == nullptr) return j;
  const Lease::Status s = lease_->status();
  set_str(o, "instance", lease_->config().holder);
  set_str(o, "address", lease_->config().address);
  set_opt_str(o, "holder", s.holder);
  set_opt_str(o, "leader", s.address);
  set_int(o, "epoch", s.epoch);
  set_int(o, "takeovers", s.takeovers);
  set_int(o, "lease_time", lease_->config().lease_seconds);
  set_opt_int(o, "acquired", s.acquired_at);
  return j;
}

void Engine::ha_metrics(Exposition& x) const {
  x.family("flexcod_in_charge", "gauge",
           "1 if this flexcod holds the lease and acts, 0 if it is a standby (answers reads only).");
  x.sample("flexcod_in_charge", {}, in_charge() ? 1 : 0);
  if (lease_ == nullptr) return;
  const Lease::Status s = lease_->status();
  x.family("flexcod_lease_epoch", "gauge",
           "The lease's epoch as this flexcod last read it (one more at every takeover).");
  x.sample("flexcod_lease_epoch", {}, static_cast<double>(s.epoch));
  x.family("flexcod_lease_takeovers_total", "counter",
           "Times a flexcod took the lease over from another (the database's count).");
  x.sample("flexcod_lease_takeovers_total", {}, static_cast<double>(s.takeovers));
  x.family("flexcod_lease_holder_info", "gauge",
           "The flexcod in charge as the lease row names it (holder and address), 1.");
  if (!s.holder.empty()) {
    x.sample("flexcod_lease_holder_info", {{"holder", s.holder}, {"address", s.address}}, 1);
  }
}

}  // namespace flexcod
