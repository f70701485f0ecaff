// SPDX-License-Identifier: GPL-2.0-or-later
// gate.cpp - the start gate (issue 38 §2.2; doc/flexcod.md, "The start
// gate").  Part jobs stay held from their submission until the
// co-allocation's planned start.  Then, with the co-allocation's lock held
// (so that no cancel, failure or move can come in between), flexcod asks
// every part's cluster for its job and releases none unless all answer;
// it writes each part's start lease, releases every part job under that
// lease, and once every release was answered confirms every part.  The
// plugin cancels a part job whose lease ends unconfirmed, waiting or
// running, so a part released while a sibling could not be reached runs
// alone at most the lease; flexcod fails the co-allocation once such a
// lease has surely ended.  See engine.hpp.

#include "flexcod/engine_internal.hpp"

namespace flexcod {

using namespace engine_detail;

namespace {

// After a lease's end by flexcod's clock, how long until its plugin has
// surely acted: its agent's pass (5 s) and the error of the clock offset
// estimate (about a second).
constexpr std::int64_t kLeaseGrace = 7;

bool gated(const PartRecord& p) {
  return p.job_id != 0 && (p.state == "submitted" || p.state == "running");
}

}  // namespace

std::int64_t Engine::lease_seconds() {
  int skew;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    skew = conf_.part_start_skew;
  }
  // a part released alone runs at most the lease plus kLeaseGrace: within
  // PartStartSkew when that allows a lease of 5 s or more
  return std::max<std::int64_t>(skew - kLeaseGrace, 5);
}

void Engine::gate_loop() {
  while (!wait_stop(500)) {
    const std::int64_t now = now_seconds();
    const auto live = store_.in_states({"scheduled", "running"});
    std::set<std::int64_t> ids;
    for (const auto& co : live) {
      if (stopping_) return;
      ids.insert(co.id);
      if (co.planned_start > now || gate_done_.count(co.id)) continue;
      auto next = gate_next_.find(co.id);
      if (next != gate_next_.end() && now < next->second) continue;
      run_gate(co.id);
    }
    // forget the co-allocations that are no longer scheduled or running
    for (auto it = gate_done_.begin(); it != gate_done_.end();)
      it = ids.count(*it) ? std::next(it) : gate_done_.erase(it);
    for (auto it = gate_next_.begin(); it != gate_next_.end();)
      it = ids.count(it->first) ? std::next(it) : gate_next_.erase(it);
    for (auto it = gate_waiting_.begin(); it != gate_waiting_.end();)
      it = ids.count(*it) ? std::next(it) : gate_waiting_.erase(it);
    for (auto it = gate_acked_.begin(); it != gate_acked_.end();)
      it = ids.count(std::get<0>(*it)) ? std::next(it) : gate_acked_.erase(it);
  }
}

std::int64_t Engine::cluster_time(const std::string& name, std::int64_t t) {
  Cluster* c = cluster(name);
  if (c == nullptr) return t;
  return t + c->clock_shift();
}

void Engine::fail_at_gate(CoRecord& co, std::vector<PartRecord>& parts, const std::string& why) {
  set_state(co, CoState::kFailed);
  co.reason = why + "; every part was cancelled and its reservation released";
  bump("gate_failures");
  fc_error("co-%ld: start gate: %s", (long)co.id, co.reason.c_str());
  fail_and_release(co, parts);
}

void Engine::run_gate(std::int64_t co_id) {
  auto m = co_mutex(co_id);
  std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
  if (!lock.owns_lock()) return;  // a request or an event holds it: next pass
  auto co = store_.get_coalloc(co_id);
  if (!co || (co->state != "scheduled" && co->state != "running")) return;
  const std::int64_t now = now_seconds();
  if (co->planned_start > now) return;  // moved meanwhile
  auto parts = store_.parts(co_id, true);
  std::vector<std::size_t> g;
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (gated(parts[i])) g.push_back(i);
  auto acked = [&](const PartRecord& p) {
    return gate_acked_.count(std::make_tuple(p.co_id, p.attempt, p.idx)) != 0;
  };
  auto done = [&]() {
    for (std::size_t i : g)
      if (!parts[i].start_confirmed) return false;
    return true;
  };
  if (done()) {
    gate_done_.insert(co_id);
    return;
  }
  // A lease that ended unconfirmed: its plugin has cancelled that part job
  // by now, wherever the link is.
  for (std::size_t i : g) {
    const PartRecord& p = parts[i];
    if (p.lease_end != 0 && !p.start_confirmed && now >= p.lease_end + kLeaseGrace) {
      fail_at_gate(*co, parts,
                   "part " + std::to_string(p.idx) + " on " + p.cluster + " (job " +
                       std::to_string(p.job_id) + ") was not confirmed started before its start "
                       "lease ended (" + slurm_time(p.lease_end) + "), so its cluster cancelled it");
      return;
    }
  }

  // 1. Never opened: every part's cluster must answer before any part job
  // is released, or a part could start while a sibling cannot be told to.
  bool fresh = false;
  for (std::size_t i : g) fresh |= parts[i].lease_end == 0;
  if (fresh) {
    std::vector<std::future<std::string>> fs;
    for (std::size_t i : g) {
      Cluster* c = cluster(parts[i].cluster);
      const PartRecord* p = &parts[i];
      fs.push_back(std::async(std::launch::async, [this, c, p]() -> std::string {
        if (c == nullptr || !c->client) return "no such cluster in flexcod.conf";
        // a cluster the breaker keeps closed off costs no timeout here;
        // its own thread's half-open call finds it back (is_open takes m)
        if (c->is_open(now_seconds())) return "its circuit breaker is open";
        bump("messages.get");
        auto r = c->client->get_job(p->reservation_id, p->job_id);
        if (r.ok()) {
          c->note(true, "");
          return "";
        }
        if (answered(r.error())) return "";  // it answers: the release says the rest
        c->note_error(r.error());
        return r.error().message;
      }));
    }
    std::string unanswered;
    for (std::size_t k = 0; k < g.size(); ++k) {
      const std::string e = fs[k].get();
      if (!e.empty() && unanswered.empty()) unanswered = parts[g[k]].cluster + " (" + e + ")";
    }
    if (!unanswered.empty()) {
      gate_next_[co_id] = now + 2;
      bump("gate_waits");
      if (gate_waiting_.insert(co_id).second)
        fc_error("co-%ld: start gate: %s does not answer; no part job is released until every "
                 "part's cluster does", (long)co_id, unanswered.c_str());
      return;
    }
    const std::int64_t lease_end = now + lease_seconds();
    for (std::size_t i : g) {
      PartRecord& p = parts[i];
      if (p.lease_end != 0) continue;
      p.lease_end = lease_end;
      p.reason = "part job " + std::to_string(p.job_id) + " released under a start lease until " +
                 slurm_time(lease_end);
    }
    // the leases on disk before any release: after a crash, recovery knows
    // that a part may be released and until when
    std::string err;
    if (!store_.write(*co, parts, "start gate opened", &err)) {
      fc_error("co-%ld: %s", (long)co_id, err.c_str());
      return;
    }
    bump("gate_opened");
    if (gate_waiting_.erase(co_id))
      fc_info("co-%ld: start gate: every part's cluster answers again", (long)co_id);
    test_hold("gate-opening");
  }

  // 2. Release under the lease (again, after a restart: idempotent).
  struct Out {
    bool ok = false;
    bool admin_held = false;
    std::string fatal;  // the part can never start
  };
  // What a release or a confirmation came to (the breaker fed either way).
  auto outcome = [](Cluster* c, const http::Result<http::PartJob>& r) {
    Out o;
    if (r.ok()) {
      c->note(true, "");
      o.ok = true;
      return o;
    }
    c->note_error(r.error());
    const auto& e = r.error();
    if (e.code != http::Errc::kHttp) return o;  // no answer: sent again
    if (e.http_status == 409 && e.api_code == "held") {
      // an administrator holds it: the release was answered and the job
      // cannot start until the hold goes; then it starts late, which the
      // part-start watchdog judges (PartStartPolicy)
      o.ok = true;
      o.admin_held = true;
    } else if (e.http_status == 404 || e.api_code == "lease_lapsed" ||
               e.api_code == "lease_expired") {
      o.fatal = e.message;
    }
    return o;
  };
  std::vector<std::size_t> todo;
  for (std::size_t i : g)
    if (!parts[i].start_confirmed && !acked(parts[i])) todo.push_back(i);
  {
    std::vector<std::future<Out>> fs;
    for (std::size_t i : todo) {
      Cluster* c = cluster(parts[i].cluster);
      const PartRecord* p = &parts[i];
      const std::int64_t lease_end = cluster_time(p->cluster, p->lease_end);
      fs.push_back(std::async(std::launch::async, [this, c, p, lease_end, &outcome]() {
        if (c == nullptr || !c->client) return Out{};
        bump("messages.release");
        return outcome(c, c->client->open_gate(p->reservation_id, p->job_id, lease_end));
      }));
    }
    for (std::size_t k = 0; k < todo.size(); ++k) {
      const Out o = fs[k].get();
      PartRecord& p = parts[todo[k]];
      if (!o.fatal.empty()) {
        // wait for every answer first: the futures point into parts
        for (std::size_t j = k + 1; j < todo.size(); ++j) fs[j].get();
        fail_at_gate(*co, parts,
                     "part " + std::to_string(p.idx) + " on " + p.cluster + " (job " +
                         std::to_string(p.job_id) + ") cannot be released: " + o.fatal);
        return;
      }
      if (o.ok) {
        gate_acked_.insert(std::make_tuple(p.co_id, p.attempt, p.idx));
        if (o.admin_held)
          fc_error("co-%ld: start gate: part %d on %s: part job %ld is held by an administrator; "
                   "it starts when the hold goes", (long)co_id, p.idx, p.cluster.c_str(),
                   (long)p.job_id);
      } else {
        fc_error("co-%ld: start gate: part %d on %s: part job %ld not released yet; trying again",
                 (long)co_id, p.idx, p.cluster.c_str(), (long)p.job_id);
      }
    }
  }
  for (std::size_t i : g) {
    if (!parts[i].start_confirmed && !acked(parts[i])) {
      gate_next_[co_id] = now + 1;
      return;
    }
  }

  // 3. Every part released: confirm each, so that no lease applies any more.
  todo.clear();
  for (std::size_t i : g)
    if (!parts[i].start_confirmed) todo.push_back(i);
  std::vector<std::future<Out>> fs;
  for (std::size_t i : todo) {
    Cluster* c = cluster(parts[i].cluster);
    const PartRecord* p = &parts[i];
    fs.push_back(std::async(std::launch::async, [this, c, p, &outcome]() {
      if (c == nullptr || !c->client) return Out{};
      bump("messages.confirm_start");
      return outcome(c, c->client->confirm_start(p->reservation_id, p->job_id));
    }));
  }
  std::string fatal_why;
  for (std::size_t k = 0; k < todo.size(); ++k) {
    const Out o = fs[k].get();
    PartRecord& p = parts[todo[k]];
    if (!o.fatal.empty() && fatal_why.empty()) {
      fatal_why = "part " + std::to_string(p.idx) + " on " + p.cluster + " (job " +
                  std::to_string(p.job_id) + ") cannot be confirmed: " + o.fatal;
    }
    if (!o.ok) continue;
    p.start_confirmed = true;
    p.reason = "part job " + std::to_string(p.job_id) + " released and its start confirmed";
    std::string err;
    store_.update_part(p, p.reason, &err);  // same state: no history line
  }
  if (!fatal_why.empty()) {
    fail_at_gate(*co, parts, fatal_why);
    return;
  }
  if (done()) {
    gate_done_.insert(co_id);
    bump("gate_confirmed");
    test_hold("gate-confirmed");
    fc_info("co-%ld: start gate: every part job released and its start confirmed (%s)",
            (long)co_id, parts_text(parts).c_str());
  } else {
    gate_next_[co_id] = now + 1;
  }
}

}  // namespace flexcod
