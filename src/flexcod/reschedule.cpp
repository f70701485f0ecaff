// SPDX-License-Identifier: GPL-2.0-or-later
// reschedule.cpp - rescheduling on early completion and
// make-before-break moves (also PATCH).
// See engine.hpp and doc/flexcod.md.

#include "flexcod/engine_internal.hpp"

#include <atomic>
#include <thread>

namespace flexcod {

using namespace engine_detail;

// ---------------------------------------------------------------------------
// Rescheduling on early completion

namespace {

// A co-allocation whose common start is this close is left alone: its part
// jobs may be started by the clusters' next scheduling pass at any moment.
constexpr std::int64_t kMoveLead = 10;

// A scheduled co-allocation without current parts in a pass's snapshot
// (try_move says "it has no parts").
const std::vector<PartRecord> kNoParts;

// A pass's parallel planning (resched_pass): at most this many threads,
// the pass's own included, on chunks of kVerdictChunk candidates, doubled
// up to kVerdictChunkMax while no move makes the verdicts stale.
constexpr std::size_t kPlanWorkers = 8;
constexpr std::size_t kVerdictChunk = 64;
constexpr std::size_t kVerdictChunkMax = 4096;

// a's free nodes with the given parts' reservations (all on this cluster)
// given back over their spans: the plugin counts our own reservations as
// busy, and a co-allocation being re-planned must not be in its own way.
// Clipped at the published capacity.
flexco::Result<flexco::Profile> without_own(const flexco::Availability& a,
                                            const std::vector<PartRecord>& own) {
  std::set<flexco::Time> cuts;
  for (const auto& st : a.steps) cuts.insert(st.start);
  cuts.insert(a.horizon_end);
  for (const auto& p : own) {
    for (std::int64_t t : {p.planned_start, p.planned_end}) {
      if (t > a.when && t < a.horizon_end) cuts.insert(t);
    }
  }
  std::vector<flexco::Step> steps;
  std::size_t k = 0;
  for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
    const flexco::Time s = *it, e = *std::next(it);
    while (k + 1 < a.steps.size() && a.steps[k].end <= s) ++k;
    flexco::Amount free = a.steps[k].free_nodes;
    for (const auto& p : own) {
      if (p.planned_start <= s && s < p.planned_end) free += p.nodes;
    }
    steps.push_back(flexco::Step{s, e, std::min<flexco::Amount>(free, a.nodes_published),
                                 std::min<flexco::Amount>(a.steps[k].free_cpus, a.cpus_published)});
  }
  auto pp = flexco::profiles_from_steps(steps, a.nodes_published, a.cpus_published);
  if (!pp.ok()) return pp.error();
  return std::move(pp.value().nodes);
}

std::string layout_json(const std::vector<std::pair<std::string, std::int64_t>>& parts) {
  JsonPtr a(json_array());
  for (const auto& p : parts) {
    json_array_append_new(a.get(), json_pack("{s:s,s:I}", "cluster", p.first.c_str(), "nodes",
                                             static_cast<json_int_t>(p.second)));
  }
  return http::json_text(a.get());
}

// Make-before-break: does every part of plan p fit beside what the
// profiles av still hold (the old reservations included) from its start?
bool fits_beside(const flexco::CoallocPlan& p,
                 const std::vector<const flexco::Availability*>& av, std::int64_t now) {
  const std::int64_t s = std::max<std::int64_t>(p.start, now);
  for (const auto& part : p.parts) {
    auto m = av[part.cluster]->nodes.min_over(s, round_up_minutes(p.duration));
    if (!m.ok() || m.value() < part.nodes) return false;
  }
  return true;
}

}  // namespace

Engine::Spec Engine::spec_from(const CoRecord& co) {
  Spec s;
  s.nodes = co.nodes;
  s.duration = co.duration;
  s.ready = co.ready;
  s.deadline = co.deadline;
  s.overhead = co.overhead;
  s.clusters = co.clusters;
  s.max_parts = co.max_parts;
  s.policy = "flexco";
  json_error_t e;
  JsonPtr j(json_loads(co.request.c_str(), 0, &e));
  if (!j) return s;
  std::string why;
  (void)get_s(j.get(), "script", &s.script, &why);
  (void)get_s(j.get(), "work_dir", &s.work_dir, &why);
  (void)get_s(j.get(), "std_out", &s.std_out, &why);
  (void)get_s(j.get(), "std_err", &s.std_err, &why);
  (void)get_s(j.get(), "name", &s.name, &why);
  (void)get_str_list(j.get(), "argv", &s.argv, &why);
  (void)get_per_cluster(j.get(), "partition", &s.partition, &why);
  (void)get_per_cluster(j.get(), "account", &s.account, &why);
  (void)get_per_cluster(j.get(), "qos", &s.qos, &why);
  if (const json_t* env = json_object_get(j.get(), "environment")) {
    const char* k;
    json_t* v;
    json_object_foreach(const_cast<json_t*>(env), k, v) {
      if (json_is_string(v)) s.env.emplace_back(k, json_string_value(v));
    }
  }
  if (const json_t* ps = json_object_get(j.get(), "parts")) {
    std::size_t i;
    json_t* p;
    json_array_foreach(ps, i, p) {
      s.fixed.emplace_back(json_integer_value(json_object_get(p, "nodes")),
                           json_string_value(json_object_get(p, "cluster")));
    }
  }
  return s;
}

void Engine::resched_loop() {
  // Triggers live in memory: after a restart, one pass once every cluster
  // is reconciled (or RescheduleWait has passed) makes up for any lost.
  bool first = true;
  const std::int64_t t0 = now_seconds();
  constexpr std::int64_t kRetryAfter = 10;
  std::int64_t retry_at = 0;
  int retries = 0;
  // Every pass, whatever set it off, plans on a cluster with an early end
  // still pending only once its profile shows the cluster's own queue went
  // first (PassProfiles::ended), but for the clusters in `exempt`, where
  // there is nothing to wait for.
  auto ended_of = [this](const std::set<std::size_t>& exempt) {
    std::map<std::size_t, std::int64_t> ended;
    std::lock_guard<std::mutex> lock(resched_mutex_);
    for (const auto& [ci, t] : resched_pending_) {
      if (!exempt.count(ci)) ended[ci] = t.event_time;
    }
    return ended;
  };
  while (!wait_stop(1000)) {
    if (first) {
      int wait;
      {
        std::lock_guard<std::mutex> lock(conf_mutex_);
        wait = conf_.reschedule_wait;
      }
      const bool all = std::all_of(clusters_.begin(), clusters_.end(), [](const auto& c) {
        return !c->client || c->reconciled.load();
      });
      if (all || now_seconds() - t0 >= wait) {
        first = false;
        if (!store_.in_states({"scheduled"}).empty() &&
            resched_pass("flexcod started", ended_of({}))) {
          retry_at = now_seconds() + kRetryAfter;
        }
      }
      continue;
    }
    // A move abandoned (a cluster refused: its nodes were not free yet, or
    // taken meanwhile) is tried again a little later, a few times.
    if (retry_at != 0 && now_seconds() >= retry_at) {
      retry_at = 0;
      if (resched_pass("retry after an abandoned move", ended_of({})) && ++retries < 3) {
        retry_at = now_seconds() + kRetryAfter;
      }
    }
    std::map<std::size_t, Trigger> pending;
    {
      std::lock_guard<std::mutex> lock(resched_mutex_);
      pending = resched_pending_;
    }
    if (pending.empty()) continue;
    std::string mode;
    int wait;
    long timeout_ms;
    {
      std::lock_guard<std::mutex> lock(conf_mutex_);
      mode = conf_.reschedule_mode;
      wait = conf_.reschedule_wait;
      timeout_ms = 1000L * conf_.cluster_timeout;
    }
    if (mode == "off") {
      std::lock_guard<std::mutex> lock(resched_mutex_);
      resched_pending_.clear();
      continue;
    }
    // The cluster's local jobs get the freed nodes first: wait for its next
    // backfill pass (a cycle begun after the event, and over), at most
    // `wait` s.  The pass checks the same on the profiles it plans on.
    std::vector<std::size_t> ready;
    std::set<std::size_t> exempt;  // ready with nothing to wait for
    std::string trigger;
    for (const auto& [ci, t] : pending) {
      Cluster& c = *clusters_[ci];
      bool go = now_seconds() - t.seen >= wait;
      if (go) exempt.insert(ci);
      const bool open = c.is_open(now_seconds());
      if (!go && !open) {
        bump("messages.profile");
        auto r = c.client->profile(60, c.conf.partition, timeout_ms);
        if (r.ok()) {
          c.note(true, "");
        } else {
          c.note_error(r.error());
        }
        if (r.ok()) {
          const json_t* bf = json_object_get(r.value().get(), "backfill");
          const json_t* lc = json_object_get(bf, "last_cycle");
          go = json_is_integer(lc) &&
               local_queue_went_first(json_integer_value(lc) - c.clock_shift(),
                                      !json_is_false(json_object_get(bf, "active")), t.event_time);
        }
      }
      if (!go && !open) {
        // Slurm's backfill runs no cycle while nothing is pending: then no
        // local job is waiting for the freed nodes, and there is nothing to
        // wait for.  A minimal probe says how many are pending.
        JsonPtr q(json_object());
        set(q.get(), "nodes", json_pack("{s:I,s:I}", "min", (json_int_t)1, "max", (json_int_t)1));
        set_int(q.get(), "duration", 60);
        set_int(q.get(), "max_offers", 1);
        if (!c.conf.partition.empty()) set_str(q.get(), "partition", c.conf.partition);
        bump("messages.probe");
        auto r = c.client->probe(q.get(), timeout_ms);
        if (!r.ok()) c.note_error(r.error());
        if (r.ok()) {
          const json_t* n = json_object_get(json_object_get(r.value().get(), "queue"), "considered");
          go = json_is_integer(n) && json_integer_value(n) == 0;
          if (go) exempt.insert(ci);
        }
      }
      if (!go) continue;
      ready.push_back(ci);
      trigger += (trigger.empty() ? "" : "; ") + t.what;
    }
    if (ready.empty()) continue;
    retries = 0;
    std::set<std::size_t> queue_first;
    retry_at = resched_pass(trigger, ended_of(exempt), &queue_first) ? now_seconds() + kRetryAfter : 0;
    {
      // Done with, unless the pass's own profile of the cluster showed its
      // queue had not gone first after all (a new cycle running): then
      // it is asked again.
      std::lock_guard<std::mutex> lock(resched_mutex_);
      for (std::size_t ci : ready) {
        auto it = resched_pending_.find(ci);
        if (it != resched_pending_.end() && it->second.event_time <= pending[ci].event_time &&
            !queue_first.count(ci)) {
          resched_pending_.erase(it);
        }
      }
    }
  }
}

bool Engine::resched_pass(const std::string& trigger,
                          const std::map<std::size_t, std::int64_t>& ended,
                          std::set<std::size_t>* queue_first) {
  std::string mode;
  std::int64_t margin;
  int max_moves;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    mode = conf_.reschedule_mode;
    margin = conf_.reschedule_margin;
    max_moves = conf_.max_moves;
  }
  if (mode == "off" || max_moves == 0) return false;
  // Every scheduled co-allocation and its current parts in one read (not
  // two queries per co-allocation); one written since is read again under
  // its lock.
  Store::Snapshot snap = store_.snapshot({"scheduled"});
  auto& cos = snap.cos;
  // FlexCo Algorithm 2: the waiting co-allocations in order of their start,
  // each seeing the earlier ones' new places (a fresh profile per move).
  std::stable_sort(cos.begin(), cos.end(), [](const CoRecord& a, const CoRecord& b) {
    return a.planned_start < b.planned_start;
  });
  bump("resched_passes");
  fc_verbose("rescheduling pass (%s): %zu scheduled co-allocations", trigger.c_str(), cos.size());
  const auto t0 = std::chrono::steady_clock::now();
  struct Timed {  // the pass's duration, however it ends
    Engine* e;
    std::chrono::steady_clock::time_point t0;
    ~Timed() {
      std::lock_guard<std::mutex> lock(e->stats_mutex_);
      e->resched_hist_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  } timed{this, t0};
  // Every cluster's profile once, read in parallel (each bounded by
  // ClusterTimeout; an open cluster is not asked): a co-allocation with a
  // part on a cluster that did not answer waits for the next pass.
  PassProfiles profiles;
  profiles.ended = ended;
  {
    std::vector<std::size_t> all;
    for (std::size_t i = 0; i < clusters_.size(); ++i) {
      if (clusters_[i]->client && clusters_[i]->reconciled) all.push_back(i);
    }
    if (!cos.empty()) pass_profiles(profiles, all);
  }
  // Whether a move is worth trying, decided in parallel on the pass's
  // profiles for a chunk of the candidates at a time: a pass usually moves
  // few or none, and at scale the planning is what costs.  A verdict holds
  // while the profiles are those it was made on (their epoch) and the
  // co-allocation was not written since the snapshot; a "try", and any
  // candidate whose verdict no longer holds, goes through try_move, in
  // order, one after another as before (each seeing the earlier moves).
  std::vector<signed char> verdict(cos.size(), -1);  // 0: no move (verdict_why), 1: try
  std::vector<std::string> verdict_why(cos.size());
  std::uint64_t verdict_epoch = 0;
  std::size_t verdict_end = 0;  // verdicts made for [.., verdict_end)
  std::size_t chunk = kVerdictChunk;
  const std::size_t workers =
      std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, kPlanWorkers);
  auto make_verdicts = [&](std::size_t from) {
    {
      std::vector<std::size_t> all;
      for (std::size_t i = 0; i < clusters_.size(); ++i) {
        if (clusters_[i]->client && clusters_[i]->reconciled) all.push_back(i);
      }
      std::unique_lock<std::mutex> claim(claim_mutex_);  // as try_move reads them
      pass_profiles(profiles, all);
    }
    verdict_epoch = profiles.epoch;
    const std::size_t to = std::min(cos.size(), from + chunk);
    std::atomic<std::size_t> next{from};
    auto work = [&]() {
      for (std::size_t i = next++; i < to; i = next++) {
        if (cos[i].moves >= max_moves) {
          verdict[i] = 0;
          continue;
        }
        auto it = snap.parts.find(cos[i].id);
        verdict[i] = static_cast<signed char>(
            pass_verdict(cos[i], it != snap.parts.end() ? it->second : kNoParts, mode, margin,
                         profiles, &verdict_why[i]));
      }
    };
    std::vector<std::future<void>> helpers;
    for (std::size_t w = 1; w < workers && w < to - from; ++w) {
      helpers.push_back(std::async(std::launch::async, work));
    }
    work();
    for (auto& h : helpers) h.get();
    verdict_end = to;
    chunk = std::min(2 * chunk, kVerdictChunkMax);
  };
  bool abandoned = false;
  std::int64_t tried = 0, moved = 0;
  for (std::size_t i = 0; i < cos.size(); ++i) {
    const CoRecord& candidate = cos[i];
    if (stopping_) return false;
    if (candidate.moves >= max_moves) continue;
    if (candidate.planned_start <= now_seconds() + kMoveLead) continue;
    if (i >= verdict_end || verdict_epoch != profiles.epoch) {
      if (i < verdict_end) chunk = kVerdictChunk;  // a move made them stale: smaller chunks
      make_verdicts(i);
    }
    auto m = co_mutex(candidate.id);
    std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
    if (!lock.owns_lock()) continue;
    std::optional<CoRecord> co;
    const std::vector<PartRecord>* known = nullptr;
    if (store_.written_since(candidate.id, snap.mark)) {
      co = store_.get_coalloc(candidate.id);
    } else if (verdict[i] == 0) {
      ++tried;
      fc_verbose("co-%ld: not moved: %s", (long)candidate.id, verdict_why[i].c_str());
      continue;
    } else {
      co = candidate;
      auto it = snap.parts.find(candidate.id);
      known = it != snap.parts.end() ? &it->second : &kNoParts;
    }
    if (!co || co->state != "scheduled") continue;
    std::string why;
    ++tried;
    if (!try_move(*co, mode, margin, trigger, false, &why, &profiles, known)) {
      fc_verbose("co-%ld: not moved: %s", (long)co->id, why.c_str());
      abandoned |= why.rfind("move abandoned", 0) == 0;
    } else {
      ++moved;
    }
  }
  const std::int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    pass_ms_last_ = ms;
    pass_ms_max_ = std::max(pass_ms_max_, ms);
    pass_tried_last_ = tried;
    ++pass_count_;
  }
  std::string failed;
  for (const auto& [ci, w] : profiles.failed)
    failed += (failed.empty() ? "" : ", ") + clusters_[ci]->conf.name;
  fc_verbose("rescheduling pass done in %ld ms: %ld co-allocations tried, %ld moved%s%s",
             (long)ms, (long)tried, (long)moved,
             failed.empty() ? "" : "; left waiting (cluster unanswered): ", failed.c_str());
  if (queue_first) *queue_first = profiles.queue_first;
  return abandoned;
}

bool Engine::move_candidate(const CoRecord& co, const std::vector<PartRecord>& parts,
                            bool constraints, std::int64_t now, Spec* spec,
                            std::vector<char>* allowed_ci, std::vector<std::size_t>* which,
                            std::string* why) {
  if (co.planned_start <= now + kMoveLead) {
    *why = "it starts within " + std::to_string(kMoveLead) + " s";
    return false;
  }
  if (parts.empty()) {
    *why = "it has no parts";
    return false;
  }
  for (const auto& p : parts) {
    if (p.state != "submitted") {
      *why = "part " + std::to_string(p.idx) + " is " + p.state;
      return false;
    }
  }
  *spec = spec_from(co);
  // By cluster index (a pass asks this for every cluster of every
  // co-allocation: one name lookup per allowed cluster, not a scan each).
  allowed_ci->assign(clusters_.size(), 0);
  std::vector<char> holds_ci(clusters_.size(), 0);
  for (const auto& n : co.clusters) {
    auto it = cluster_index_.find(n);
    if (it != cluster_index_.end()) (*allowed_ci)[it->second] = 1;
  }
  for (const auto& p : parts) {
    auto it = cluster_index_.find(p.cluster);
    if (it != cluster_index_.end()) holds_ci[it->second] = 1;
  }
  which->clear();
  int bound;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    bound = conf_.max_clock_offset;
  }
  for (std::size_t i = 0; i < clusters_.size(); ++i) {
    if (!clusters_[i]->client || !clusters_[i]->reconciled) continue;
    double off = 0;
    if (clock_far(i, bound, &off)) continue;  // nothing moves onto it (doc/flexcod.md, "Clocks")
    if ((*allowed_ci)[i] || (!constraints && holds_ci[i])) which->push_back(i);
  }
  if (which->empty()) {
    *why = "no allowed cluster is reachable";
    return false;
  }
  return true;
}

bool Engine::own_given_back(const std::vector<PartRecord>& parts,
                            const std::vector<std::size_t>& idx,
                            const std::vector<const flexco::Availability*>& av,
                            std::vector<flexco::Availability>* copies,
                            std::vector<const flexco::Availability*>* adj_av, std::string* why) {
  copies->clear();
  copies->reserve(idx.size());  // adj_av points into it: no reallocation
  *adj_av = av;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    std::vector<PartRecord> own;
    for (const auto& p : parts) {
      if (p.cluster == clusters_[idx[k]]->conf.name) own.push_back(p);
    }
    if (own.empty()) continue;
    auto freed = without_own(*av[k], own);
    if (!freed.ok()) {
      *why = "profile of " + clusters_[idx[k]]->conf.name + ": " + freed.error().message;
      return false;
    }
    flexco::Availability a = *av[k];
    a.nodes = std::move(freed).value();
    copies->push_back(std::move(a));
    (*adj_av)[k] = &copies->back();
  }
  return true;
}

bool Engine::plan_reschedule(const CoRecord& co, const std::vector<PartRecord>& parts,
                             const Spec& spec, const std::vector<char>& allowed_ci,
                             const std::vector<std::size_t>& idx,
                             const std::vector<const flexco::Availability*>& av,
                             const std::string& mode, std::int64_t margin, std::int64_t now,
                             flexco::CoallocPlan* next, std::string* kind, std::string* why) {
  std::vector<flexco::Availability> freed_copies;
  std::vector<const flexco::Availability*> adj_av;
  if (!own_given_back(parts, idx, av, &freed_copies, &adj_av, why)) return false;
  // make-before-break: the new set is made while the old one still holds
  // its nodes, so every new part must fit beside it.
  auto coexists = [&](const flexco::CoallocPlan& p) { return fits_beside(p, av, now); };
  flexco::CoallocPlan current;
  current.start = co.planned_start;
  current.duration = co.run_time + kStartSlack;
  for (const auto& p : parts) {
    std::size_t k = 0;
    while (k < idx.size() && clusters_[idx[k]]->conf.name != p.cluster) ++k;
    if (k == idx.size()) {
      *why = "cluster " + p.cluster + " did not answer";
      return false;
    }
    flexco::PlanPart pp;
    pp.cluster = k;
    pp.nodes = p.nodes;
    current.parts.push_back(pp);
  }
  flexco::CoallocRequest req;
  req.nodes = co.nodes;
  req.runtime = co.duration + kStartSlack;
  req.ready = std::max(co.ready, now);
  req.deadline = co.deadline > 0 ? co.deadline : flexco::kForever;
  if (req.deadline <= req.ready) {
    *why = "its deadline has passed";
    return false;
  }
  req.overhead = co.overhead;
  req.max_parts = static_cast<std::size_t>(co.max_parts);
  for (std::size_t k = 0; k < idx.size(); ++k) req.allowed.push_back(allowed_ci[idx[k]] != 0);
  flexco::RescheduleOptions opts;
  // A request with fixed parts keeps its layout: Shift only.
  opts.mode = (mode == "shift" || !spec.fixed.empty()) ? flexco::RescheduleMode::kShift
                                                       : flexco::RescheduleMode::kShiftRemap;
  opts.margin = std::max<std::int64_t>(margin, 1);
  auto views_of = [&](const std::vector<const flexco::Availability*>& from) {
    std::vector<flexco::ClusterView> views(idx.size());
    for (std::size_t k = 0; k < idx.size(); ++k) {
      views[k].name = clusters_[idx[k]]->conf.name;
      views[k].capacity = from[k]->nodes_published;
      views[k].free = &from[k]->nodes;
    }
    return views;
  };
  auto d = flexco::reschedule_coalloc(req, current, views_of(adj_av), now, opts);
  if (d.ok() && d.value().kind != flexco::RescheduleKind::kNone && !coexists(d.value().plan)) {
    // The best overlaps its own reservations: planning beside them.
    d = flexco::reschedule_coalloc(req, current, views_of(av), now, opts);
  }
  if (!d.ok()) {
    *why = d.error().message;
    return false;
  }
  if (d.value().kind == flexco::RescheduleKind::kNone) {
    *why = "no placement ends " + std::to_string(opts.margin) + " s earlier or more";
    return false;
  }
  *next = d.value().plan;
  *kind = flexco::reschedule_kind_name(d.value().kind);
  return true;
}

int Engine::pass_verdict(const CoRecord& co, const std::vector<PartRecord>& parts,
                         const std::string& mode, std::int64_t margin, const PassProfiles& pp,
                         std::string* why) {
  const std::int64_t now = now_seconds();
  Spec spec;
  std::vector<char> allowed_ci;
  std::vector<std::size_t> which;
  if (!move_candidate(co, parts, false, now, &spec, &allowed_ci, &which, why)) return 0;
  std::vector<std::size_t> idx;
  std::vector<const flexco::Availability*> av;
  for (std::size_t ci : which) {
    auto it = pp.avail.find(ci);
    if (it != pp.avail.end()) {
      idx.push_back(ci);
      av.push_back(&it->second);
    } else if (!pp.failed.count(ci) || pp.stale.count(ci)) {
      return 1;  // try_move would read it first
    }
  }
  flexco::CoallocPlan next;
  std::string kind;
  return plan_reschedule(co, parts, spec, allowed_ci, idx, av, mode, margin, now, &next, &kind,
                         why)
             ? 1
             : 0;
}

bool Engine::try_move(CoRecord& co, const std::string& mode, std::int64_t margin,
                      const std::string& trigger, bool constraints, std::string* why,
                      PassProfiles* pass, const std::vector<PartRecord>* known_parts) {
  const std::int64_t now = now_seconds();
  if (co.planned_start <= now + kMoveLead) {
    *why = "it starts within " + std::to_string(kMoveLead) + " s";
    return false;
  }
  auto parts = known_parts ? *known_parts : store_.parts(co.id, true);
  Spec spec;
  std::vector<char> allowed_ci;
  std::vector<std::size_t> which;
  if (!move_candidate(co, parts, constraints, now, &spec, &allowed_ci, &which, why)) return false;
  std::unique_lock<std::mutex> claim(claim_mutex_);  // see claim_mutex_
  // A pass reads each cluster's profile once (PassProfiles) and plans
  // every co-allocation on it; a PATCH reads the allowed clusters' now.
  // av[k]: the profile of cluster g.idx[k].
  Gathered g;
  std::vector<const flexco::Availability*> av;
  if (pass) {
    pass_profiles(*pass, which);
    for (std::size_t ci : which) {
      auto it = pass->avail.find(ci);
      if (it == pass->avail.end()) continue;
      g.idx.push_back(ci);
      av.push_back(&it->second);
    }
  } else {
    g = gather(which, spec);
    for (const auto& a : g.avail) av.push_back(&a);
  }

  flexco::CoallocPlan next;
  std::string kind;
  if (!constraints) {
    if (!plan_reschedule(co, parts, spec, allowed_ci, g.idx, av, mode, margin, now, &next, &kind,
                         why)) {
      return false;
    }
  } else {
    // The same profiles with this co-allocation's own reservations given
    // back (a copy only of the clusters that hold a part of it).
    std::vector<flexco::Availability> freed_copies;
    std::vector<const flexco::Availability*> adj_av;
    if (!own_given_back(parts, g.idx, av, &freed_copies, &adj_av, why)) return false;
    auto coexists = [&](const flexco::CoallocPlan& p) { return fits_beside(p, av, now); };
    Gathered adj;
    adj.idx = g.idx;
    for (std::size_t k = 0; k < g.idx.size(); ++k) {
      adj.avail.push_back(*adj_av[k]);
      adj.offers.emplace_back();
      adj.raw_offers.emplace_back();
    }
    std::string pwhy;
    if (!plan(spec, which, adj, &next, &pwhy)) {
      *why = pwhy;
      return false;
    }
    if (!coexists(next) && !plan(spec, which, g, &next, &pwhy)) {
      *why = pwhy;
      return false;
    }
    bool same = next.parts.size() == parts.size();
    for (const auto& part : next.parts) {
      same = same && std::any_of(parts.begin(), parts.end(), [&](const PartRecord& p) {
               return p.cluster == clusters_[g.idx[part.cluster]]->conf.name && p.nodes == part.nodes;
             });
    }
    kind = same ? "shift" : "remap";
  }
  for (auto& part : next.parts) part.cluster = g.idx[part.cluster];
  if (pass) {
    // The move changes the profiles of the clusters it leaves and enters
    // (whether it succeeds or is abandoned half-way): read them again
    // before the next co-allocation is planned.
    for (const auto& part : next.parts) pass->stale.insert(part.cluster);
    for (const auto& p : parts) {
      auto it = cluster_index_.find(p.cluster);
      if (it != cluster_index_.end()) pass->stale.insert(it->second);
    }
    ++pass->epoch;
  }
  return move(co, spec, parts, next, kind, trigger, why, &claim);
}

bool Engine::move(CoRecord& co, const Spec& spec, std::vector<PartRecord>& old_parts,
                  const flexco::CoallocPlan& plan, const std::string& kind,
                  const std::string& reason, std::string* why,
                  std::unique_lock<std::mutex>* claim) {
  const auto move_t0 = std::chrono::steady_clock::now();  // GET /metrics: until the switch
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  // Until the switch the stored record stays as it is (a PATCH's new
  // constraints are written with the switch, or never).
  auto stored_opt = store_.get_coalloc(co.id);
  if (!stored_opt) {
    *why = "gone from the database";
    return false;
  }
  CoRecord stored = *stored_opt;
  const std::int64_t now = now_seconds();
  const std::int64_t start = std::max<std::int64_t>(plan.start, now);
  const std::int64_t length = round_up_minutes(plan.duration);
  int attempt = co.attempt;
  for (const auto& p : store_.parts(co.id, false)) attempt = std::max(attempt, p.attempt);
  attempt += 1;
  std::vector<PartRecord> parts = new_parts(co, spec, plan, attempt, start, length);
  for (auto& p : parts) p.current = false;  // until the switch
  const std::string what = kind + " " + parts_text(old_parts) + " at " +
                           slurm_time(stored.planned_start) + " -> " + parts_text(parts) +
                           " at " + slurm_time(start);
  std::string err;
  // Write before act: the new set is in the database before any request.
  if (!store_.write(stored, parts, "move planned (" + what + "): " + reason, &err)) {
    *why = "state database: " + err;
    return false;
  }
  fc_info("co-%ld: moving (%s) after %s", (long)co.id, what.c_str(), reason.c_str());
  std::string fail;
  auto abandon = [&](const std::string& f) {
    *why = "move abandoned: " + f;
    fc_info("co-%ld: %s; the old set is kept", (long)co.id, why->c_str());
    bump("moves_abandoned");
    release(stored, parts, PartState::kReleased, *why);
    return false;
  };

  // A move never runs the job twice: the old set must not start before the
  // switch (when it starts, its part jobs run, and releasing it would kill
  // them).  Gathering offers and the three steps below take time, so this
  // is checked again before every step and last right before the switch,
  // with the co-allocation's lock held by the caller; the old set's
  // start must still be more than kMoveLead seconds away, and no old part
  // may have started according to the clusters' events.
  auto old_set_starts = [&]() -> std::string {
    if (stored.planned_start <= now_seconds() + kMoveLead)
      return "the current set starts at " + slurm_time(stored.planned_start) + ", within " +
             std::to_string(kMoveLead) + " s";
    for (const auto& p : store_.parts(co.id, true)) {
      if (p.actual_start > 0 || (!p.job_state.empty() && p.job_state != "PENDING"))
        return "part " + std::to_string(p.idx) + " on " + p.cluster + " has started (" +
               (p.job_state.empty() ? std::string("started") : p.job_state) + ")";
    }
    return "";
  };

  // 1. Tentative reservations.
  const StepErrors refused = reserve_parts(co, parts, conf.confirm_within, " (move)");
  if (claim && claim->owns_lock()) claim->unlock();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!refused[i]) continue;
    PartRecord& p = parts[i];
    const http::Error& e = *refused[i];
    const bool cancelled = e.code == http::Errc::kCancelled;
    set_state(p, maybe_done(e) || cancelled ? PartState::kCancelling : PartState::kReleased);
    p.reason = e.message;
    if (!cancelled)
      fail += (fail.empty() ? "" : "; ") + p.cluster + " refused " + std::to_string(p.nodes) +
              " nodes: " + e.message;
  }
  if (!store_.write(stored, parts, fail.empty() ? "move: reserved" : "move: a reservation failed", &err)) {
    fail += (fail.empty() ? "" : "; ") + std::string("state database: ") + err;
  }
  if (!fail.empty()) return abandon(fail);
  test_hold("move-reserved");
  if (auto started = old_set_starts(); !started.empty()) return abandon(started);

  // 2. Confirm all.
  for (auto& p : parts) set_state(p, PartState::kConfirming);
  if (!store_.write(stored, parts, "move: confirming", &err)) return abandon("state database: " + err);
  {
    const StepErrors failed = confirm_parts(co, attempt, parts, " (move)");
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (failed[i])
        fail += (fail.empty() ? "" : "; ") + parts[i].cluster + " did not confirm: " +
                failed[i]->message;
  }
  if (!store_.write(stored, parts, fail.empty() ? "move: confirmed" : "move: a confirmation failed", &err)) {
    fail += (fail.empty() ? "" : "; ") + std::string("state database: ") + err;
  }
  if (!fail.empty()) return abandon(fail);
  if (auto started = old_set_starts(); !started.empty()) return abandon(started);

  // 3. The part jobs again, into the new reservations.
  for (auto& p : parts) {
    set_state(p, PartState::kSubmitting);
    p.job_key = key(co, attempt, p.idx, "job");
  }
  if (!store_.write(stored, parts, "move: submitting part jobs", &err)) return abandon("state database: " + err);
  {
    const StepErrors failed =
        submit_parts(co, spec, round_up_minutes(plan.duration - kStartSlack), parts, " (move)");
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (failed[i])
        fail += (fail.empty() ? "" : "; ") + parts[i].cluster + " did not take the part job: " +
                failed[i]->message;
  }
  if (!fail.empty()) {
    store_.write(stored, parts, "move: a part job submission failed", &err);
    return abandon(fail);
  }
  test_hold("move-submitted");
  if (auto started = old_set_starts(); !started.empty()) return abandon(started);

  // 4. The switch, in one transaction: the new set becomes the current
  // placement, the old one is to be released, the move is recorded.
  MoveRecord mv;
  mv.time = now_seconds();
  mv.kind = kind;
  mv.from_start = stored.planned_start;
  mv.to_start = start;
  mv.from_end = stored.planned_end;
  mv.to_end = start + length;
  {
    std::vector<std::pair<std::string, std::int64_t>> from, to;
    for (const auto& p : old_parts) from.emplace_back(p.cluster, p.nodes);
    for (const auto& p : parts) to.emplace_back(p.cluster, p.nodes);
    mv.from_parts = layout_json(from);
    mv.to_parts = layout_json(to);
  }
  mv.reason = reason;
  CoRecord after = co;  // with a PATCH's changes
  after.version = stored.version;  // as the move's own writes left it (compare-and-set)
  after.attempt = attempt;
  after.planned_start = start;
  after.planned_end = start + length;
  after.run_time = plan.duration - kStartSlack;
  after.moves += 1;
  after.reason = "moved (" + kind + ") to " + parts_text(parts) + " at " + slurm_time(start);
  std::vector<PartRecord> all = parts;
  for (auto& p : all) p.current = true;
  std::vector<PartRecord> olds = old_parts;
  for (auto& p : olds) {
    p.current = false;
    set_state(p, PartState::kCancelling);
    p.reason = "replaced by a move";
    all.push_back(p);
  }
  if (!store_.write(after, all, after.reason, &err, &mv)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
    return abandon("state database: " + err);
  }
  co = after;
  bump("moves");
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    move_hist_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - move_t0).count());
  }
  fc_info("co-%ld: moved (%s): %s -> %s, start %ld -> %ld, end %ld -> %ld", (long)co.id,
          kind.c_str(), parts_text(old_parts).c_str(), parts_text(parts).c_str(),
          (long)mv.from_start, (long)mv.to_start, (long)mv.from_end, (long)mv.to_end);
  // The new set's part jobs were submitted held and stay held until the
  // start gate opens them at the new start; the old set's never opened.
  test_hold("move-switched");

  // 5. The old set goes: deleting a reservation cancels its part job.
  release(co, olds, PartState::kReleased, "replaced by a move");
  old_parts = olds;
  return true;
}

}  // namespace flexcod
