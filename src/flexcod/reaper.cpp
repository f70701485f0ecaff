// SPDX-License-Identifier: GPL-2.0-or-later
// reaper.cpp - recovery of the database at start, the transitions
// a co-allocation's parts imply (finish_if_done), the part-start watchdog
// and the reaper of parts not released yet.
// See engine.hpp and doc/flexcod.md.

#include "flexcod/engine_internal.hpp"

namespace flexcod {

using namespace engine_detail;

// ---------------------------------------------------------------------------
// Recovery at start

void Engine::recover_db() {
  std::string err;
  // A commit that was interrupted is always rolled back.  (Its parts never
  // read "submitted" while it is "committing": commit_attempt writes the
  // submitted parts and "scheduled" in one transaction.)
  for (CoRecord co : store_.in_states({"planning", "committing"})) {
    auto parts = store_.parts(co.id, true);
    for (auto& p : parts) {
      if (holds(p.state)) {
        set_state(p, PartState::kCancelling);
        p.reason = "flexcod restarted during the commit";
      }
    }
    set_state(co, CoState::kFailed);
    co.reason = "flexcod restarted during the commit; rolled back";
    if (!store_.write(co, parts, co.reason, &err)) fc_error("recovery: %s", err.c_str());
    fc_info("co-%ld: %s", (long)co.id, co.reason.c_str());
  }
  // A move interrupted before its switch left a new set that is not the
  // current placement: release it, the old set (still current) stays.  One
  // interrupted after the switch left the old set "cancelling", which the
  // clusters' reconciliation releases.  Either way one complete set remains.
  for (auto& p : store_.parts_in_states({"reserving", "tentative", "confirming", "confirmed",
                                         "submitting", "submitted", "running"})) {
    if (p.current) continue;
    auto co = store_.get_coalloc(p.co_id);
    if (!co) continue;
    set_state(p, PartState::kCancelling);
    p.reason = "flexcod restarted during a move; the new set is released";
    if (!store_.update_part(p, p.reason, &err)) fc_error("recovery: %s", err.c_str());
    fc_info("co-%ld: part %d (attempt %d) on %s: %s", (long)p.co_id, p.idx, p.attempt,
            p.cluster.c_str(), p.reason.c_str());
  }
  // Part jobs stay held until the start gate opens them (gate.cpp), which
  // after a restart releases again what it may have released before.
}

// ---------------------------------------------------------------------------
// Co-allocation transitions from its parts, the watchdog, the reaper

// The nodes of parts whose job ended are free again: give their
// reservations back now rather than at their end.  A part whose cluster
// does not answer is given back by the reaper (retry_pending, with its
// backoff), or at the latest by the reconciliation after a restart (an
// ended part's reservation is an orphan then) or at its planned end.
void Engine::give_back_ended(const CoRecord& co, std::vector<PartRecord>& parts) {
  std::string err;
  for (auto& p : parts) {
    if (p.reservation_id == 0 || (p.state != "completed" && p.state != "failed")) continue;
    if (release_part(co, p)) {
      p.reason = "reservation " + p.reservation + " released after the part job ended";
      store_.update_part(p, p.reason, &err);
    } else {
      fc_error("co-%ld: part %d on %s: reservation %s not given back yet; will retry",
               (long)co.id, p.idx, p.cluster.c_str(), p.reservation.c_str());
      add_pending(Pending::kGiveBack, p);
    }
  }
}

void Engine::schedule_retry(ReapRetry& r) {
  r.attempts++;
  const std::int64_t wait = std::min<std::int64_t>(std::int64_t{2} << std::min(r.attempts - 1, 8), 300);
  r.failed_at = now_seconds();
  r.next = r.failed_at + wait;
}

bool Engine::due(const ReapRetry& r, const std::string& cluster_name) {
  if (now_seconds() >= r.next) return true;
  // ... or the cluster answered something since: try at once
  Cluster* c = cluster(cluster_name);
  if (c == nullptr) return false;
  std::lock_guard<std::mutex> g(c->m);
  return c->reachable && c->last_contact > r.failed_at;
}

void Engine::add_pending(Pending kind, const PartRecord& p) {
  std::lock_guard<std::mutex> g(pending_mutex_);
  ReapRetry& r = pending_[std::make_tuple(static_cast<int>(kind), p.co_id, p.attempt, p.idx)];
  if (r.attempts == 0) schedule_retry(r);  // the first try just failed (or, at recovery, none yet)
}

void Engine::retry_pending() {
  std::vector<std::tuple<int, std::int64_t, int, int>> keys;
  {
    std::lock_guard<std::mutex> g(pending_mutex_);
    for (const auto& kv : pending_) keys.push_back(kv.first);
  }
  std::set<std::string> failed_now;  // one timeout per dead cluster per pass
  for (const auto& k : keys) {
    if (stopping_) return;
    const auto kind = static_cast<Pending>(std::get<0>(k));
    const std::int64_t co_id = std::get<1>(k);
    auto m = co_mutex(co_id);
    std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
    if (!lock.owns_lock()) continue;  // a request or an event holds it: next pass
    // Re-read under the lock: is it still to be done?
    auto co = store_.get_coalloc(co_id);
    std::optional<PartRecord> part;
    for (const auto& q : store_.parts(co_id, false))
      if (q.attempt == std::get<2>(k) && q.idx == std::get<3>(k)) part = q;
    bool wanted = co && part;
    if (wanted && kind == Pending::kGiveBack)
      wanted = part->reservation_id != 0 && (part->state == "completed" || part->state == "failed");
    ReapRetry retry;
    {
      std::lock_guard<std::mutex> g(pending_mutex_);
      auto it = pending_.find(k);
      if (it == pending_.end()) continue;
      if (!wanted) {
        pending_.erase(it);
        continue;
      }
      retry = it->second;
    }
    if (failed_now.count(part->cluster) || !due(retry, part->cluster)) continue;
    (void)kind;  // kGiveBack only
    const bool done = release_part(*co, *part);
    std::string err;
    const char* what = "reservation";
    if (done) {
      part->reason = "reservation " + part->reservation + " released after the part job ended";
      part->reason += " by the reaper after " + std::to_string(retry.attempts + 1) + " tries";
      store_.update_part(*part, part->reason, &err);  // same state: no history line
      fc_info("co-%ld: part %d on %s: %s", (long)co_id, part->idx, part->cluster.c_str(),
              part->reason.c_str());
      std::lock_guard<std::mutex> g(pending_mutex_);
      pending_.erase(k);
    } else {
      failed_now.insert(part->cluster);
      schedule_retry(retry);
      bump("give_back_retries");
      fc_verbose("co-%ld: part %d on %s: %s %s: try %d at %s", (long)co_id, part->idx,
                 part->cluster.c_str(), what,
                 "not given back",
                 retry.attempts + 1, slurm_time(retry.next).c_str());
      std::lock_guard<std::mutex> g(pending_mutex_);
      auto it = pending_.find(k);
      if (it != pending_.end()) it->second = retry;
    }
  }
}

void Engine::finish_if_done(std::int64_t co_id, bool wait) {
  auto m = co_mutex(co_id);
  std::unique_lock<std::mutex> lock(*m, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    // Whoever holds the lock may not look at the parts again: the reaper
    // does, within 2 s, so no transition is dropped.
    std::lock_guard<std::mutex> g(recheck_mutex_);
    recheck_.insert(co_id);
    return;
  }
  auto co = store_.get_coalloc(co_id);
  if (!co) return;
  auto parts = store_.parts(co_id, true);
  std::string err;
  if (co->state == "cancelling") {
    bool pending = false;
    for (const auto& p : store_.parts(co_id, false)) pending |= p.state == "cancelling";
    if (!pending) {
      set_state(*co, CoState::kCancelled);
      co->reason = "cancelled; everything released";
      store_.update_coalloc(*co, co->reason, &err);
    }
    return;
  }
  if (co->state == "scheduled" || co->state == "running") {
    bool all_ended = !parts.empty();
    bool any_failed = false, any_running = false;
    for (const auto& p : parts) {
      all_ended &= p.state == "completed" || p.state == "failed";
      any_failed |= p.state == "failed";
      any_running |= p.state == "running" || p.state == "completed" || p.state == "failed";
    }
    if (any_failed && !all_ended) {
      // All or nothing also once scheduled: a part that failed (its job
      // cancelled, its reservation deleted behind flexcod's back) makes
      // the others useless.  Release them.
      set_state(*co, CoState::kFailed);
      co->reason = "a part failed; the other parts were released";
      for (const auto& p : parts) {
        if (p.state == "failed" && p.lease_end != 0 && !p.start_confirmed) {
          // its plugin cancelled it at the end of its start lease (gate.cpp)
          co->reason = "part " + std::to_string(p.idx) + " on " + p.cluster + " (job " +
                       std::to_string(p.job_id) + ") was cancelled by its cluster: its start "
                       "lease ended unconfirmed; the other parts were released";
          bump("gate_failures");
          break;
        }
      }
      fc_info("co-%ld: %s", (long)co_id, co->reason.c_str());
      fail_and_release(*co, parts);
      return;
    }
    if (all_ended) {
      test_hold("finishing");
      set_state(*co, any_failed ? CoState::kFailed : CoState::kCompleted);
      co->reason = any_failed ? "a part job failed" : "every part job completed";
      store_.update_coalloc(*co, co->reason, &err);
      give_back_ended(*co, parts);
    } else if (any_running && co->state == "scheduled") {
      set_state(*co, CoState::kRunning);
      co->reason = "part jobs started";
      store_.update_coalloc(*co, co->reason, &err);
    }
  }
}

void Engine::watch_part_starts() {
  int skew;
  std::string policy;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    skew = conf_.part_start_skew;
    policy = conf_.part_start_policy;
  }
  // The first late part of a running co-allocation (its index in parts)
  // and why it is late, or nullopt.
  struct Late {
    std::size_t i;
    std::string why;
  };
  auto late_part = [&](const std::vector<PartRecord>& parts, std::int64_t now) -> std::optional<Late> {
    std::int64_t first = 0;
    for (const auto& p : parts) {
      if (p.actual_start > 0) first = first == 0 ? p.actual_start : std::min(first, p.actual_start);
    }
    if (first == 0 || now < first + skew) return std::nullopt;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto& p = parts[i];
      if (p.actual_start == 0 && (p.state == "submitted" || p.state == "submitting")) {
        return Late{i, "part " + std::to_string(p.idx) + " on " + p.cluster + " (job " +
                           std::to_string(p.job_id) + ") did not start within " +
                           std::to_string(skew) + " s of the first part (started " +
                           slurm_time(first) + ")"};
      }
    }
    return std::nullopt;
  };
  const auto running = store_.in_states({"running"});
  for (auto it = late_asked_.begin(); it != late_asked_.end();) {  // ended since
    const bool live = std::any_of(running.begin(), running.end(),
                                  [&](const CoRecord& r) { return r.id == it->first; });
    it = live ? std::next(it) : late_asked_.erase(it);
  }
  for (const auto& candidate : running) {
    if (stopping_) return;
    if (late_warned_.count(candidate.id)) continue;
    const auto listed = store_.parts(candidate.id, true);
    const auto seen_late = late_part(listed, now_seconds());
    if (!seen_late) continue;
    // No start event is no start: the event may be held up on a link that
    // stalls.  Ask the late part's cluster (no lock held) before acting,
    // and act only on its answer (issue 38 §2.1).
    const PartRecord& lp = listed[seen_late->i];
    {
      auto a = late_asked_.find(candidate.id);
      if (a != late_asked_.end() && now_seconds() < a->second) continue;  // asked lately
    }
    Cluster* cl = cluster(lp.cluster);
    std::optional<http::PartJob> job;
    std::string unasked;
    if (cl == nullptr || !cl->client) {
      unasked = "no such cluster in flexcod.conf";
    } else if (lp.job_id == 0) {
      unasked = "its job id is not known yet";
    } else {
      bump("messages.get");
      auto j = cl->client->get_job(lp.reservation_id, lp.job_id);
      if (j.ok()) {
        job = j.value();
      } else if (j.error().code == http::Errc::kHttp && j.error().http_status == 404) {
        job = http::PartJob{};
        job->state = "UNKNOWN";  // gone: it cannot start any more
      } else {
        if (!answered(j.error())) cl->note_error(j.error());
        unasked = j.error().message;
      }
    }
    if (!job) {
      // It may have started: failing now would cancel the parts that run
      // and leave this one alone.  Wait until its cluster answers.
      late_asked_[candidate.id] = now_seconds() + 10;
      bump("late_parts_unasked");
      fc_error("co-%ld: %s, and %s cannot be asked whether it did (%s); waiting for its answer",
               (long)candidate.id, seen_late->why.c_str(), lp.cluster.c_str(), unasked.c_str());
      continue;
    }
    late_asked_.erase(candidate.id);
    auto m = co_mutex(candidate.id);
    std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
    if (!lock.owns_lock()) continue;  // a request or an event holds it: next round
    auto co = store_.get_coalloc(candidate.id);
    if (!co || co->state != "running") continue;
    auto parts = store_.parts(co->id, true);
    std::string err;
    const JobPhase ph = phase_of(job->state);
    if (ph != JobPhase::kPending) {
      // It started (its event is late or lost): what it says now is what
      // the event would have said.
      for (auto& q : parts) {
        if (q.attempt != lp.attempt || q.idx != lp.idx) continue;
        if (apply_job_phase(q, ph, job->state, job->start_time, job->end_time, job->exit_code)) {
          fc_info("co-%ld: part %d on %s: no start event within %d s, but its job is %s",
                  (long)co->id, q.idx, q.cluster.c_str(), skew, job->state.c_str());
          store_.update_part(q, "part job " + job->state + " (asked: its start event was late)",
                             &err);
        }
      }
      lock.unlock();
      finish_if_done(candidate.id, true);
      continue;
    }
    const auto late = late_part(parts, now_seconds());
    if (!late) continue;
    bump("late_parts");
    if (policy == "warn") {
      late_warned_.insert(co->id);
      co->reason = late->why + "; the other parts run alone (PartStartPolicy=warn)";
      fc_error("co-%ld: %s", (long)co->id, co->reason.c_str());
      store_.update_coalloc(*co, co->reason, &err);
      continue;
    }
    // All or nothing: the started parts are useless alone.
    set_state(*co, CoState::kFailed);
    co->reason = late->why + " (its cluster says it is " + job->state +
                 "); the started parts were cancelled and every reservation released "
                 "(PartStartPolicy=fail)";
    fc_error("co-%ld: %s", (long)co->id, co->reason.c_str());
    fail_and_release(*co, parts);
  }
}

void Engine::purge_finished() {
  const std::int64_t now = now_seconds();
  if (last_purge_ != 0 && now - last_purge_ < 3600) return;
  last_purge_ = now;
  std::int64_t after;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    after = conf_.purge_finished_after;
  }
  if (after <= 0) return;
  std::string err;
  const std::int64_t n = store_.purge_finished(now - after, &err);
  if (n < 0) {
    fc_error("purging co-allocations that ended before %s: %s", slurm_time(now - after).c_str(),
             err.c_str());
  } else if (n > 0) {
    fc_info("purged %ld co-allocations that ended before %s (PurgeFinishedAfter)", (long)n,
            slurm_time(now - after).c_str());
  }
}

void Engine::reap_loop() {
  while (!wait_stop(2000)) {
    std::set<std::int64_t> again;
    {
      std::lock_guard<std::mutex> g(recheck_mutex_);
      again.swap(recheck_);
    }
    for (std::int64_t id : again) finish_if_done(id, true);
    watch_part_starts();
    watch_rendezvous();
    purge_finished();
    retry_pending();
    // A part whose cluster does not answer is tried again with a backoff
    // (2 s doubling to 5 min), its reason saying so (shown by sreserve
    // show); a cluster that failed once is not tried again in the same
    // pass, so that one dead cluster costs one timeout per pass, not one
    // per part, and the other clusters' parts are released meanwhile.
    std::set<std::string> failed_now;
    std::set<std::tuple<std::int64_t, int, int>> seen;
    for (auto& p : store_.parts_in_states({"cancelling"})) {
      const auto rkey = std::make_tuple(p.co_id, p.attempt, p.idx);
      seen.insert(rkey);
      ReapRetry& retry = reap_retry_[rkey];
      if (failed_now.count(p.cluster)) continue;
      if (!due(retry, p.cluster)) continue;
      auto m = co_mutex(p.co_id);
      std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
      if (!lock.owns_lock()) continue;
      auto co = store_.get_coalloc(p.co_id);
      if (!co) continue;
      // Only what no request thread is handling: the lock says so.
      auto fresh = store_.parts(p.co_id, false);
      bool still = false;
      for (const auto& q : fresh) {
        if (q.attempt == p.attempt && q.idx == p.idx && q.state == "cancelling") {
          still = true;
          p = q;  // the record as it is now, not as listed
        }
      }
      if (!still) continue;
      if (release_part(*co, p)) {
        set_state(p, co->state == "cancelling" ? PartState::kCancelled : PartState::kReleased);
        p.reason = "released by the reaper" +
                   (retry.attempts ? " after " + std::to_string(retry.attempts + 1) + " tries"
                                   : std::string());
        std::string err;
        store_.update_part(p, p.reason, &err);
        fc_info("co-%ld: part %d on %s released", (long)p.co_id, p.idx, p.cluster.c_str());
        reap_retry_.erase(rkey);
      } else {
        failed_now.insert(p.cluster);
        schedule_retry(retry);
        Cluster* c = cluster(p.cluster);
        std::string why;
        if (c != nullptr) {
          std::lock_guard<std::mutex> g(c->m);
          why = c->last_error;
        }
        p.reason = "cannot release on " + p.cluster + (why.empty() ? "" : " (" + why + ")") +
                   "; try " + std::to_string(retry.attempts + 1) + " at " +
                   slurm_time(retry.next);
        std::string err;
        store_.update_part(p, p.reason, &err);  // same state: no history line
        bump("release_retries");
        fc_verbose("co-%ld: part %d on %s: %s", (long)p.co_id, p.idx, p.cluster.c_str(),
                   p.reason.c_str());
      }
      lock.unlock();
      finish_if_done(p.co_id);
    }
    for (auto it = reap_retry_.begin(); it != reap_retry_.end();)
      it = seen.count(it->first) ? std::next(it) : reap_retry_.erase(it);
  }
}

}  // namespace flexcod
