// SPDX-License-Identifier: GPL-2.0-or-later
// cluster_link.cpp - each cluster's thread: reconciliation with the
// database, the event stream, and the profile publisher.
// See engine.hpp and doc/flexcod.md.

#include "flexcod/engine_internal.hpp"

namespace flexcod {

using namespace engine_detail;

// ---------------------------------------------------------------------------
// Cluster links: reconciliation, events, publishing

// Reconcile (at start, and again whenever the event stream says events
// were lost), then follow the events.
void Engine::cluster_loop(std::size_t ci) {
  Cluster& c = *clusters_[ci];
  while (!stopping_) {
    int backoff_ms = 1000;
    while (!stopping_) {
      if (reconcile_cluster(ci)) break;
      fc_error("cluster %s: %s (%s); retrying in %d s", c.conf.name.c_str(),
               c.audience_refused ? "refuses our requests" : "unreachable",
               c.last_error.c_str(), backoff_ms / 1000);
      if (wait_stop(backoff_ms)) return;
      backoff_ms = std::min(backoff_ms * 2, 60000);
    }
    if (stopping_ || !follow_events(ci)) return;
    // Events were lost: nothing is planned on the cluster until it is
    // reconciled again (as at start).
    c.reconciled = false;
  }
}

bool Engine::reconcile_cluster(std::size_t ci) {
  Cluster& c = *clusters_[ci];
  // Parts on this cluster that must be released.
  for (const auto& listed : store_.parts_in_states({"cancelling"})) {
    if (listed.cluster != c.conf.name) continue;
    auto m = co_mutex(listed.co_id);
    std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
    if (!lock.owns_lock()) continue;
    auto co = store_.get_coalloc(listed.co_id);
    if (!co) continue;
    // Re-read under the lock: the list is older than the lock, and the
    // reaper (or an earlier release here, a request) may have released
    // the part since; releasing that stale copy would write it back over
    // the part's final state.
    std::optional<PartRecord> fresh;
    for (const auto& q : store_.parts(listed.co_id, false))
      if (q.attempt == listed.attempt && q.idx == listed.idx && q.state == "cancelling") fresh = q;
    if (!fresh) continue;
    PartRecord& p = *fresh;
    if (!release_part(*co, p)) return false;
    set_state(p, co->state == "cancelling" ? PartState::kCancelled : PartState::kReleased);
    p.reason = "released at recovery";
    std::string err;
    store_.update_part(p, p.reason, &err);
    lock.unlock();
    finish_if_done(p.co_id);
  }
  // Orphans: live flexco reservations that no part of ours holds.  Nothing
  // new is planned on this cluster before this pass ends, so every
  // reservation of ours is in the database already -- except one whose
  // create is in flight in a commit or move that began before this pass
  // (a reconciliation after lost events): its part is "reserving" without
  // an id.  The list is read before the database, so a reservation in it
  // was either written with its id by then or its part is still such a
  // one; while there is one, unknown reservations are left alone (the
  // next reconciliation, or the reservation's own confirm deadline, takes
  // care of a real orphan).
  bump("messages.list");
  auto list = c.client->list_reservations();
  if (!list.ok()) {
    c.note_error(list.error());
    return false;
  }
  c.note(true, "");
  std::set<std::int64_t> known;
  bool in_flight = false;
  for (const auto& p : store_.parts_in_states({"reserving", "tentative", "confirming", "confirmed",
                                               "submitting", "submitted", "running", "cancelling"})) {
    if (p.cluster == c.conf.name && p.reservation_id != 0) known.insert(p.reservation_id);
    if (p.cluster == c.conf.name && p.reservation_id == 0 && p.state == "reserving") in_flight = true;
  }
  for (const auto& r : list.value()) {
    if (r.state != "tentative" && r.state != "confirmed" && r.state != "creating") continue;
    if (known.count(r.id)) continue;
    if (r.owner != owner_tag()) {
      // Another flexcod's (another database, a test instance), or made
      // without an owner (by hand, or by a flexcod before 0.2): not ours
      // to delete.  Told once per reconciliation; counted in /v1/stats.
      bump("foreign_reservations");
      fc_info("cluster %s: reservation %s belongs to %s, not to this flexcod (%s); left alone",
              c.conf.name.c_str(), r.name.c_str(),
              r.owner.empty() ? "no flexcod" : r.owner.c_str(), owner_tag().c_str());
      continue;
    }
    if (in_flight) {
      fc_info("cluster %s: reservation %s is not ours yet, but a create is in flight; "
              "not deleted now", c.conf.name.c_str(), r.name.c_str());
      continue;
    }
    bump("orphans");
    bump("messages.delete");
    auto d = c.client->delete_reservation(r.id, "flexcod-" + store_.instance() + "-" + store_.run() + "-orphan-" +
                                                    std::to_string(r.id));
    if (d.ok()) {
      fc_info("cluster %s: orphan reservation %s deleted", c.conf.name.c_str(), r.name.c_str());
    } else {
      fc_error("cluster %s: deleting orphan %s: %s", c.conf.name.c_str(), r.name.c_str(),
               d.error().message.c_str());
      return false;
    }
  }
  // Part jobs we think are waiting or running: their state now, applied
  // exactly as the part_job_started / part_job_ended events would have
  // been (apply_job_phase).  A part whose reservation the plugin no longer
  // has (404) cannot run any more: it ended, how is unknown.
  std::set<std::int64_t> touched;
  for (const auto& p : store_.parts_in_states({"submitting", "submitted", "running"})) {
    if (p.cluster != c.conf.name || p.job_id == 0) continue;
    bump("messages.get");
    auto j = c.client->get_job(p.reservation_id, p.job_id);
    http::PartJob job;
    if (j.ok()) {
      job = j.value();
    } else if (j.error().code == http::Errc::kHttp && j.error().http_status == 404) {
      job.state = "UNKNOWN";
    } else if (!answered(j.error())) {
      c.note_error(j.error());
      return false;  // unreachable: the whole pass is retried
    } else {
      fc_error("co-%ld: part %d on %s: part job %ld: %s", (long)p.co_id, p.idx,
               c.conf.name.c_str(), (long)p.job_id, j.error().message.c_str());
      continue;
    }
    auto m = co_mutex(p.co_id);
    std::lock_guard<std::mutex> lock(*m);
    for (auto& q : store_.parts(p.co_id, false)) {  // re-read under the lock
      if (q.attempt != p.attempt || q.idx != p.idx) continue;
      const JobPhase ph = phase_of(job.state);
      const std::string was = q.state;
      if (!apply_job_phase(q, ph, job.state, job.start_time, job.end_time, job.exit_code) &&
          q.job_state == p.job_state) {
        continue;
      }
      std::string err;
      store_.update_part(q, "part job " + job.state + " at reconciliation", &err);
      if (q.state != was) {
        fc_info("co-%ld: part %d on %s: %s -> %s (part job %ld %s, seen at reconciliation)",
                (long)q.co_id, q.idx, q.cluster.c_str(), was.c_str(), q.state.c_str(),
                (long)q.job_id, job.state.c_str());
      }
    }
    touched.insert(p.co_id);
  }
  // Then every live co-allocation with a part here takes the transition its
  // parts' states now imply (completed, failed with the siblings released,
  // running), as finish_if_done does after a live event.  This also covers
  // a part whose end was written just before a crash that came before its
  // co-allocation's transition.
  for (std::int64_t id : store_.with_part_on(c.conf.name, {"scheduled", "running"})) touched.insert(id);
  for (std::int64_t id : touched) finish_if_done(id, true);
  c.reconciled = true;
  fc_info("cluster %s: reconciled", c.conf.name.c_str());
  return true;
}

void Engine::handle_event(std::size_t ci, const http::Event& e) {
  Cluster& c = *clusters_[ci];
  // Its times by flexcod's clock (doc/flexcod.md, "Clocks"); a part job's
  // by its part's own shift (apply_job_phase).
  const std::int64_t shift = c.clock_shift();
  if (e.type == "job_ended_early") {
    bump("events.job_ended_early");
    {
      // Every local job that ended early (any user's: flexcod is a
      // DaemonUser): HPCM's arrival and service rates of this cluster.
      const json_t* r = e.raw.get();
      const json_t* st = json_object_get(r, "start");
      const json_t* en = json_object_get(r, "actual_end");
      const json_t* nc = json_object_get(r, "node_count");
      if (json_is_integer(st) && json_is_integer(en) && json_is_integer(nc)) {
        std::lock_guard<std::mutex> lock(c.m);
        c.hpcm.record(json_integer_value(st) - shift, json_integer_value(en) - shift,
                      json_integer_value(nc));
      }
    }
    // A rescheduling pass once the cluster's next backfill pass has run.
    const json_t* j = json_object_get(e.raw.get(), "job_id");
    std::lock_guard<std::mutex> lock(resched_mutex_);
    Trigger& t = resched_pending_[ci];
    t.event_time = std::max(t.event_time, e.time - shift);
    if (t.seen == 0) t.seen = now_seconds();
    t.what = "job " + std::to_string(json_integer_value(j)) + " on " + c.conf.name + " ended early";
    return;
  }
  if (e.type != "part_job_started" && e.type != "part_job_ended") return;
  const std::int64_t job_id = json_integer_value(json_object_get(e.raw.get(), "job_id"));
  for (auto& p : store_.parts_in_states({"submitting", "submitted", "running"})) {
    if (p.cluster != c.conf.name || p.job_id != job_id) continue;
    {
      auto m = co_mutex(p.co_id);
      std::lock_guard<std::mutex> lock(*m);
      // Re-read under the lock.
      for (auto& q : store_.parts(p.co_id, false)) {
        if (q.attempt != p.attempt || q.idx != p.idx) continue;
        const json_t* r = e.raw.get();
        const json_t* st = json_object_get(r, "start_time");
        const json_t* state = json_object_get(r, "state");
        const json_t* et = json_object_get(r, "end_time");
        const json_t* ec = json_object_get(r, "exit_code");
        apply_job_phase(q, e.type == "part_job_started" ? JobPhase::kRunning : JobPhase::kEnded,
                        json_is_string(state) ? json_string_value(state) : "",
                        json_is_integer(st) ? json_integer_value(st) : 0,
                        json_is_integer(et) ? json_integer_value(et) : 0,
                        json_is_integer(ec) ? static_cast<int>(json_integer_value(ec)) : -1);
        std::string err;
        store_.update_part(q, e.type + " (job " + std::to_string(job_id) + ")", &err);
      }
    }
    finish_if_done(p.co_id);
  }
}

bool Engine::follow_events(std::size_t ci) {
  Cluster& c = *clusters_[ci];
  int backoff_ms = 1000;
  while (!stopping_) {
    bump("messages.events");
    auto r = c.client->events(c.event_seq, 10, 200, &stopping_);
    if (!r.ok()) {
      if (stopping_) return false;
      c.note_error(r.error());
      fc_debug("cluster %s: events: %s", c.conf.name.c_str(), r.error().message.c_str());
      if (wait_stop(backoff_ms)) return false;
      backoff_ms = std::min(backoff_ms * 2, 30000);
      continue;
    }
    backoff_ms = 1000;
    c.note(true, "");
    const auto& b = r.value();
    const std::int64_t after = c.event_seq;
    for (const auto& e : b.events) handle_event(ci, e);
    if (b.next != c.event_seq) {
      c.event_seq = b.next;
      std::string err;
      if (!store_.set_event_seq(c.conf.name, c.event_seq, &err)) fc_error("%s", err.c_str());
    }
    if (b.lost) {
      // What the missing events said is unknown: read the cluster's state
      // in full (the same reconciliation as at start).  The events that
      // did arrive were applied first; the cursor is past them, so a crash
      // now still reconciles at the restart.
      fc_error("cluster %s: events after %ld were lost (oldest retained %ld, latest %ld); "
               "full reconcile of the cluster",
               c.conf.name.c_str(), (long)after, (long)b.oldest, (long)b.latest);
      return true;
    }
  }
  return false;
}

void Engine::publish_loop(std::size_t ci) {
  Cluster& c = *clusters_[ci];
  while (!stopping_) {
    int interval;
    std::int64_t horizon;
    long timeout_ms;
    {
      std::lock_guard<std::mutex> lock(conf_mutex_);
      interval = conf_.publish_interval;
      horizon = conf_.plan_horizon;
      timeout_ms = 1000L * conf_.cluster_timeout;
    }
    bump("messages.profile");
    auto r = c.client->profile(horizon, c.conf.partition, timeout_ms);
    if (r.ok()) {
      c.note(true, "");
      std::lock_guard<std::mutex> lock(c.m);
      c.cached_profile = http::json_text(r.value().get());
      c.cached_at = now_seconds();
    } else {
      c.note_error(r.error());
    }
    if (wait_stop(1000 * interval)) return;
  }
}

}  // namespace flexcod
