// SPDX-License-Identifier: GPL-2.0-or-later
// commit.cpp - the all-or-nothing commit protocol (reserve,
// confirm, submit the part jobs, or roll back) and the release of parts.
// See engine.hpp and doc/flexcod.md.

#include "flexcod/engine_internal.hpp"

namespace flexcod {

using namespace engine_detail;

// ---------------------------------------------------------------------------
// Commit protocol

// The steps of a commit and of a move: one concurrent request per part.
// Each fills in the parts it succeeded on and returns one error (or none)
// per part; what a failure means is the caller's to decide.

std::vector<PartRecord> Engine::new_parts(const CoRecord& co, const Spec& spec,
                                          const flexco::CoallocPlan& plan, int attempt, std::int64_t start, std::int64_t length) {
  std::vector<PartRecord> parts;
  for (std::size_t i = 0; i < plan.parts.size(); ++i) {
    PartRecord p;
    p.co_id = co.id;
    p.attempt = attempt;
    p.idx = static_cast<int>(i);
    p.cluster = clusters_[plan.parts[i].cluster]->conf.name;
    p.nodes = plan.parts[i].nodes;
    // The submission's partition, account and QOS on this cluster
    // (flexcod.conf's Partition when it names no partition).
    p.partition = spec.partition.get(p.cluster, clusters_[plan.parts[i].cluster]->conf.partition);
    p.account = spec.account.get(p.cluster, "");
    p.qos = spec.qos.get(p.cluster, "");
    set_state(p, PartState::kReserving);
    p.resv_key = key(co, attempt, p.idx, "resv");
    p.planned_start = start;
    p.planned_end = start + length;
    // Its cluster is told times by its own clock (doc/flexcod.md, "Clocks").
    p.clock_shift = clusters_[plan.parts[i].cluster]->clock_shift();
    parts.push_back(std::move(p));
  }
  return parts;
}

http::ReservationRequest Engine::reserve_request(const CoRecord& co, const PartRecord& p,
                                                 std::int64_t confirm_within) {
  Cluster* c = cluster(p.cluster);
  http::ReservationRequest q;
  {
    // the part job runs under this name at that cluster (UserMapFile)
    std::lock_guard<std::mutex> lock(conf_mutex_);
    q.user = flexco::conf::name_at(conf_, co.user, p.cluster);
  }
  q.nodes = p.nodes;
  q.start = p.planned_start + p.clock_shift;  // by the cluster's clock
  q.duration = p.planned_end - p.planned_start;
  q.partition = p.partition.empty() ? c->conf.partition : p.partition;
  q.confirm_within = confirm_within;
  q.owner = owner_tag();
  return q;
}

void Engine::reserved(PartRecord& p, const http::Reservation& r, const char* note) {
  cluster(p.cluster)->note(true, "");
  set_state(p, PartState::kTentative);
  p.reservation_id = r.id;
  p.reservation = r.name;
  p.node_list = r.node_list;
  p.reason = "tentative reservation " + p.reservation + note;
}

std::vector<ClaimLedger::Id> Engine::hold_claims(const std::vector<PartRecord>& parts) {
  std::vector<ClaimLedger::Id> held;
  for (const auto& p : parts)
    held.push_back(claims_.hold({p.cluster, p.planned_start, p.planned_end, p.nodes}));
  return held;
}

// Whether a refused or failed create may have left a reservation (it is
// rolled back later): claimed until then.
static bool may_hold(const std::optional<http::Error>& e) {
  return !e || e->code == http::Errc::kCancelled || maybe_done(*e);
}

Engine::StepErrors Engine::reserve_parts_in_order(const CoRecord& co,
                                                  std::vector<PartRecord>& parts,
                                                  std::int64_t confirm_within,
                                                  std::unique_lock<std::mutex>* claim) {
  // cores-seq (CORES Algorithm 2, lines 1 and 15): one reserve at a time in
  // the plan's order (smallest p_res first), each answered before the next
  // cluster is asked.  The first refusal ends it: the parts not asked are
  // released without a request, the caller rolls back the ones made.
  StepErrors errors(parts.size());
  const std::vector<ClaimLedger::Id> held = hold_claims(parts);
  if (claim && claim->owns_lock()) claim->unlock();
  std::size_t refused = parts.size();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    PartRecord& p = parts[i];
    if (refused < parts.size()) {
      claims_.answered(held[i], false, steady_ms());
      set_state(p, PartState::kReleased);
      p.reason = "not asked: part " + std::to_string(parts[refused].idx) + " on " +
                 parts[refused].cluster + " was refused first (cores-seq)";
      continue;
    }
    fc_info("co-%ld: cores-seq: reserving part %d (%ld nodes on %s), %zu of %zu", (long)co.id,
            p.idx, (long)p.nodes, p.cluster.c_str(), i + 1, parts.size());
    bump("messages.reserve");
    auto r = cluster(p.cluster)->client->create_reservation(reserve_request(co, p, confirm_within),
                                                            p.resv_key);
    claims_.answered(held[i], r.ok() || may_hold(r.error()), steady_ms());
    if (!r.ok()) {
      errors[i] = r.error();
      refused = i;
      fc_info("co-%ld: cores-seq: part %d on %s refused: %s", (long)co.id, p.idx,
              p.cluster.c_str(), r.error().message.c_str());
      continue;
    }
    reserved(p, r.value(), "");
    fc_info("co-%ld: cores-seq: part %d on %s reserved (%s)", (long)co.id, p.idx,
            p.cluster.c_str(), p.reservation.c_str());
  }
  return errors;
}

Engine::StepErrors Engine::reserve_parts(const CoRecord& co, std::vector<PartRecord>& parts,
                                         std::int64_t confirm_within, const char* note,
                                         std::unique_lock<std::mutex>* claim) {
  // The first refusal cancels the requests still in flight.
  std::atomic<bool> abort{false};
  const std::vector<ClaimLedger::Id> held = hold_claims(parts);
  if (claim && claim->owns_lock()) claim->unlock();
  std::vector<std::future<http::Result<http::Reservation>>> fr;
  for (auto& p : parts) {
    Cluster* c = cluster(p.cluster);
    const http::ReservationRequest q = reserve_request(co, p, confirm_within);
    bump("messages.reserve");
    fr.push_back(std::async(std::launch::async, [c, q, k = p.resv_key, &abort]() {
      auto r = c->client->create_reservation(q, k, &abort);
      if (!r.ok()) abort = true;
      return r;
    }));
  }
  StepErrors errors(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto r = fr[i].get();
    PartRecord& p = parts[i];
    claims_.answered(held[i], r.ok() || may_hold(r.error()), steady_ms());
    if (!r.ok()) {
      errors[i] = r.error();
      continue;
    }
    reserved(p, r.value(), note);
  }
  return errors;
}

Engine::StepErrors Engine::confirm_parts(const CoRecord& co, int attempt,
                                         std::vector<PartRecord>& parts, const char* note) {
  std::vector<std::future<http::Result<http::Reservation>>> fc;
  for (auto& p : parts) {
    Cluster* c = cluster(p.cluster);
    bump("messages.confirm");
    fc.push_back(std::async(std::launch::async,
                            [c, id = p.reservation_id, k = key(co, attempt, p.idx, "confirm")]() {
                              return c->client->confirm_reservation(id, k);
                            }));
  }
  StepErrors errors(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto r = fc[i].get();
    if (r.ok()) {
      set_state(parts[i], PartState::kConfirmed);
      parts[i].reason = std::string("confirmed") + note;
    } else {
      errors[i] = r.error();
      parts[i].reason = r.error().message;
    }
  }
  return errors;
}

Engine::StepErrors Engine::submit_parts(const CoRecord& co, const Spec& spec,
                                        std::int64_t time_limit, std::vector<PartRecord>& parts,
                                        const char* note) {
  std::vector<std::pair<std::string, std::int64_t>> layout;
  for (const auto& p : parts) layout.emplace_back(p.cluster, p.nodes);
  std::vector<std::future<http::Result<std::int64_t>>> fj;
  for (auto& p : parts) {
    Cluster* c = cluster(p.cluster);
    http::PartJobRequest q;
    q.script = spec.script;
    q.argv = spec.argv;
    q.environment = spec.env;
    q.work_dir = spec.work_dir;
    q.std_out = spec.std_out;
    q.std_err = spec.std_err;
    q.account = p.account;
    q.qos = p.qos;
    q.name = spec.name.empty() ? "co-" + std::to_string(co.id) : spec.name;
    q.coallocation = "co-" + std::to_string(co.id);
    q.part_index = p.idx;
    q.parts = layout;
    q.start = p.planned_start + p.clock_shift;  // FLEXCO_START, by the cluster's clock
    q.time_limit = time_limit;
    // Held until the start gate opens at the planned start (gate.cpp): a
    // part job must not start, and run alone, while a sibling's submission
    // hangs and may yet fail, nor after its co-allocation was cancelled,
    // failed or moved while its cluster could not be reached.
    q.hold = true;
    // The start-up rendezvous: the part's own token, its hash written
    // before the job that holds it is asked for (doc/one-program.md).
    std::string terr;
    if (issue_rendezvous_token(p, &q.rendezvous_token, &terr)) {
      q.rendezvous_url = rendezvous_url(p.cluster);
    } else {
      q.rendezvous_token.clear();
      fc_error("co-%ld: part %d: no rendezvous token: %s", (long)co.id, p.idx, terr.c_str());
    }
    bump("messages.submit");
    fj.push_back(std::async(std::launch::async, [c, q, id = p.reservation_id, k = p.job_key]() {
      return c->client->submit_job(id, q, k);
    }));
  }
  StepErrors errors(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto r = fj[i].get();
    PartRecord& p = parts[i];
    if (r.ok()) {
      set_state(p, PartState::kSubmitted);
      p.job_id = r.value();
      p.job_state = "PENDING";
      p.reason = "part job " + std::to_string(p.job_id) + " (held until the start gate opens)" + note;
    } else {
      errors[i] = r.error();
      p.reason = r.error().message;
    }
  }
  return errors;
}

bool Engine::commit_attempt(CoRecord& co, const Spec& spec, const flexco::CoallocPlan& plan,
                            const std::vector<std::size_t>& which,
                            std::set<std::string>* bad, std::string* why,
                            std::unique_lock<std::mutex>* claim,
                            std::vector<Refusal>* refusals) {
  (void)which;
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  const std::int64_t now = now_seconds();
  const std::int64_t start = std::max<std::int64_t>(plan.start, now);
  const std::int64_t length = round_up_minutes(plan.duration);
  co.attempt += 1;
  std::vector<PartRecord> parts = new_parts(co, spec, plan, co.attempt, start, length);
  const std::string layout_text = parts_text(parts);
  // Earlier attempts are history now.
  std::vector<PartRecord> all = store_.parts(co.id, true);
  for (auto& old : all) {
    old.current = false;
    parts.push_back(old);
  }
  set_state(co, CoState::kCommitting);
  co.planned_start = start;
  co.planned_end = start + length;
  co.run_time = plan.duration - kStartSlack;
  co.reason = "attempt " + std::to_string(co.attempt) + ": " + layout_text + " at " +
              slurm_time(start);
  std::string err;
  if (!store_.write(co, parts, co.reason, &err)) {
    *why = "state database: " + err;
    return false;
  }
  parts.resize(plan.parts.size());
  fc_info("co-%ld: attempt %d: reserving %s from %ld for %ld s", (long)co.id, co.attempt,
          parts_text(parts).c_str(), (long)start, (long)length);

  test_hold("reserving");
  // 1. Tentative reservations, concurrently.  The first refusal cancels the
  // requests still in flight; their outcome is learned in release().
  // cores-seq: one at a time in the plan's order (smallest p_res first),
  // stopping at the first refusal.  The claim is given up once the parts
  // are in claims_, before the first request: the next placement may plan
  // (it subtracts them) while these are answered.
  const StepErrors refused = spec.policy == "cores-seq"
                                 ? reserve_parts_in_order(co, parts, conf.confirm_within, claim)
                                 : reserve_parts(co, parts, conf.confirm_within, "", claim);
  bool ok = true;
  std::string fail;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!refused[i]) continue;
    PartRecord& p = parts[i];
    const http::Error& e = *refused[i];
    ok = false;
    cluster(p.cluster)->note_error(e);
    // Cancelled in flight: it may have been made, learn and undo.
    const bool in_flight = e.code == http::Errc::kCancelled;
    set_state(p, maybe_done(e) || in_flight ? PartState::kCancelling : PartState::kReleased);
    p.reason = e.message;
    if (in_flight) {
      p.reason = "cancelled in flight after another part failed";
      continue;
    }
    if (e.api_code == "not_available") {
      bump("violations");
      bad->insert("violation:" + p.cluster);
      if (refusals) refusals->push_back(Refusal{p.cluster, p.planned_start, p.planned_end, p.nodes});
    } else {
      bad->insert(p.cluster);
    }
    fail += (fail.empty() ? "" : "; ") + p.cluster + " refused " + std::to_string(p.nodes) +
            " nodes: " + e.message;
  }
  if (!store_.write(co, parts, ok ? "reserved" : "a reservation failed", &err)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
    ok = false;
    fail += "; state database: " + err;
  }
  if (ok) test_hold("reserved");
  if (ok) {
    // 2. Confirm all.
    for (auto& p : parts) set_state(p, PartState::kConfirming);
    if (!store_.write(co, parts, "confirming", &err)) {
      ok = false;
      fail = "state database: " + err;
    }
  }
  if (ok) {
    const StepErrors failed = confirm_parts(co, co.attempt, parts, "");
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (!failed[i]) continue;
      ok = false;
      cluster(parts[i].cluster)->note_error(*failed[i]);
      bad->insert(parts[i].cluster);
      fail += (fail.empty() ? "" : "; ") + parts[i].cluster + " did not confirm: " +
              failed[i]->message;
    }
    if (!store_.write(co, parts, ok ? "confirmed" : "a confirmation failed", &err)) {
      ok = false;
      fail += "; state database: " + err;
    }
  }
  if (ok) test_hold("confirmed");
  if (ok) {
    // 3. Part jobs, one per part, all with the same common start.
    for (auto& p : parts) {
      set_state(p, PartState::kSubmitting);
      p.job_key = key(co, co.attempt, p.idx, "job");
    }
    if (!store_.write(co, parts, "submitting part jobs", &err)) {
      ok = false;
      fail = "state database: " + err;
    }
  }
  if (ok) {
    const StepErrors failed =
        submit_parts(co, spec, round_up_minutes(plan.duration - kStartSlack), parts, "");
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (!failed[i]) continue;
      ok = false;
      // Slurm refusing the job (a bad script, a user unknown there) or the
      // cluster failing: either way this cluster is excluded from the
      // re-plan; another cluster may have the user.
      cluster(parts[i].cluster)->note_error(*failed[i]);
      bad->insert(parts[i].cluster);
      fail += (fail.empty() ? "" : "; ") + parts[i].cluster + " did not take the part job: " +
              failed[i]->message;
    }
    if (ok) test_hold("submitted");
    if (ok) {
      set_state(co, CoState::kScheduled);
      co.reason = "every part confirmed with its part job: " + parts_text(parts);
    }
    if (!store_.write(co, parts, ok ? co.reason : "a part job submission failed", &err)) {
      fc_error("co-%ld: %s", (long)co.id, err.c_str());
      if (ok) {
        ok = false;
        fail = "state database: " + err;
      }
    }
  }
  if (ok) {
    fc_info("co-%ld: scheduled at %s on %s", (long)co.id, slurm_time(start).c_str(),
          parts_text(parts).c_str());
    // Past the point of no return: the part jobs stay held until the
    // start gate opens them at the planned start (gate.cpp).
    return true;
  }
  *why = "attempt " + std::to_string(co.attempt) + " (" + parts_text(parts) + "): " + fail;
  fc_info("co-%ld: %s; rolling back", (long)co.id, why->c_str());
  release(co, parts, PartState::kReleased, "rolled back: " + fail);
  return false;
}

bool Engine::release_part(const CoRecord& co, PartRecord& p) {
  Cluster* c = cluster(p.cluster);
  if (c == nullptr || !c->client) return false;
  if (p.reservation_id == 0) {
    if (p.resv_key.empty()) return true;
    // The create may or may not have happened: replaying it with the same
    // Idempotency-Key returns the first answer (or makes it now), so the
    // outcome is known either way.
    // The very request the create sent (reserve_request), or the replay
    // would not match its Idempotency-Key.
    std::int64_t confirm_within;
    {
      std::lock_guard<std::mutex> lock(conf_mutex_);
      confirm_within = conf_.confirm_within;
    }
    bump("messages.reserve");
    auto r = c->client->create_reservation(reserve_request(co, p, confirm_within), p.resv_key);
    if (!r.ok()) {
      c->note_error(r.error());
      if (r.error().code == http::Errc::kHttp && r.error().http_status >= 400 &&
          r.error().http_status < 500) {
        return true;  // refused: nothing was made
      }
      return false;
    }
    p.reservation_id = r.value().id;
    p.reservation = r.value().name;
  }
  bump("messages.delete");
  auto d = c->client->delete_reservation(p.reservation_id, p.resv_key + "-del");
  if (!d.ok()) {
    c->note_error(d.error());
    if (d.error().code == http::Errc::kHttp && d.error().http_status == 404) return true;
    return false;
  }
  c->note(true, "");
  return true;
}

void Engine::fail_and_release(CoRecord& co, std::vector<PartRecord>& parts) {
  bool any = false;
  for (const auto& p : parts) any |= holds(p.state);
  std::string err;
  if (!any && !store_.update_coalloc(co, co.reason, &err)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
  }
  // with parts to release, release() writes the co-allocation with them
  release(co, parts, PartState::kCancelled, co.reason, "failed-written");
  give_back_ended(co, parts);
}

bool Engine::release(CoRecord& co, std::vector<PartRecord>& parts, PartState final_state,
                     const std::string& reason, const char* written_step) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (holds(parts[i].state)) {
      set_state(parts[i], PartState::kCancelling);
      todo.push_back(i);
    }
  }
  std::string err;
  if (!todo.empty() && !store_.write(co, parts, reason, &err)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
  }
  if (written_step != nullptr) test_hold(written_step);
  std::vector<std::future<bool>> fs;
  for (std::size_t i : todo) {
    PartRecord* p = &parts[i];
    fs.push_back(std::async(std::launch::async, [this, &co, p]() { return release_part(co, *p); }));
  }
  bool all = true;
  for (std::size_t k = 0; k < todo.size(); ++k) {
    PartRecord& p = parts[todo[k]];
    if (fs[k].get()) {
      set_state(p, final_state);
      p.reason = reason;
    } else {
      all = false;
      p.reason = "release pending: cluster unreachable";
      fc_error("co-%ld: part %d on %s: cannot release yet; will retry", (long)co.id, p.idx,
               p.cluster.c_str());
    }
  }
  if (!todo.empty() && !store_.write(co, parts, reason, &err)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
  }
  return all;
}

}  // namespace flexcod
