// SPDX-License-Identifier: GPL-2.0-or-later
// The flexco-sim engine: see sim_engine.hpp and doc/sim.md.

#include "sim/sim_engine.hpp"

#include "core/offer_probe.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

namespace flexco::sim {

namespace {

Error fail(const char* where, const std::string& what) {
  return Error{Errc::kInvalidArgument, std::string(where) + ": " + what};
}

Error wrap(const std::string& context, const Error& e) {
  return Error{e.code, context + ": " + e.message};
}

Error wrap_swf(const swf::Error& e) {
  return Error{Errc::kInvalidArgument, "trace: " + e.message};
}

// Run time of a metajob part: the single-site run plus, when split, the
// same share of overhead the planner added to its estimate.
Duration actual_run(const Job& j, const CoallocPlan& plan) {
  if (!plan.split()) return j.run;
  CoallocRequest r;
  r.runtime = j.run;
  r.overhead = j.overhead_pct / 100.0;
  return j.run + coalloc_overhead(r);
}

}  // namespace

const char* resched_name(Resched r) noexcept {
  switch (r) {
    case Resched::kRigid: return "rigid";
    case Resched::kShift: return "shift";
    case Resched::kShiftRemap: return "shift+remap";
  }
  return "?";
}

std::optional<Resched> parse_resched(const std::string& name) {
  if (name == "rigid") return Resched::kRigid;
  if (name == "shift") return Resched::kShift;
  if (name == "shift+remap" || name == "remap") return Resched::kShiftRemap;
  return std::nullopt;
}

double Metrics::utilization() const {
  if (last_end <= first_submit || first_submit == kNever || capacity <= 0) return 0;
  return all.work / (static_cast<double>(capacity) * static_cast<double>(last_end - first_submit));
}

double Saturation::growth(Amount capacity, Time horizon) const {
  if (capacity <= 0 || horizon < 2) return 0;
  return (backlog_end - backlog_mid) /
         (static_cast<double>(capacity) * static_cast<double>(horizon / 2));
}

bool Saturation::saturated(Amount capacity, Time horizon) const {
  return growth(capacity, horizon) > kSaturationGrowth;
}

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
  static const char* kWhere = "Engine::create";
  if (config.clusters.empty()) return fail(kWhere, "no clusters");
  auto e = std::make_unique<Engine>(Key{}, config);
  for (const ClusterSpec& c : config.clusters) {
    if (c.nodes < 1) return fail(kWhere, "cluster " + c.name + ": nodes must be >= 1");
    auto s = LocalScheduler::create(c.nodes, 0, config.backfill);
    if (!s) return wrap("cluster " + c.name, s.error());
    e->sched_.push_back(std::move(s).value());
    e->m_.capacity += c.nodes;
  }
  if (config.publish_interval < 0) return fail(kWhere, "publish interval must be >= 0");
  if (config.tau < 1) return fail(kWhere, "tau must be >= 1");
  if (config.horizon < 0) return fail(kWhere, "horizon must be >= 0");
  if (config.window < 1) return fail(kWhere, "window must be >= 1");
  e->m_.saturation.window = std::max<Duration>(1, std::min(config.window, config.horizon / 4));
  std::size_t k = config.clusters.size();
  e->early_.assign(k, false);
  e->waiting_.resize(k);
  e->arrivals_.assign(k, 0);
  e->run_sum_.assign(k, 0.0);
  if (config.publish_interval > 0) e->next_publish_ = 0;
  return e;
}

CoallocRequest meta_request(const Job& job, Time now) {
  CoallocRequest r;
  r.nodes = job.nodes;
  r.runtime = job.estimate;
  r.ready = now;
  r.overhead = job.overhead_pct / 100.0;
  return r;
}

ClusterView cluster_view(const ClusterSpec& cluster, const Profile* free, std::int64_t arrivals,
                         double run_sum, Time now) {
  ClusterView v;
  v.name = cluster.name;
  v.capacity = cluster.nodes;
  v.free = free;
  // HPCM's M/M/c inputs, as observed so far on the cluster's local load.
  if (arrivals > 0 && now > 0) {
    v.arrival_rate = static_cast<double>(arrivals) / static_cast<double>(now);
    v.service_rate = static_cast<double>(arrivals) / run_sum;
  }
  return v;
}

Result<CoallocPlan> plan_metajob(Policy policy, const CoallocRequest& request,
                                 std::vector<ClusterView> views, Time now, PlannerState& state) {
  if (policy == Policy::kCoarp || policy == Policy::kCores || policy == Policy::kCoresSeq) {
    for (ClusterView& v : views) {
      auto o = probe_offers_from_profile(*v.free, v.capacity, now, request, v.name);
      if (!o) return wrap("probe of cluster " + v.name, o.error());
      v.offers = std::move(o).value();
    }
  }
  CoallocOptions opts;
  opts.now = now;
  return plan_coalloc(policy, request, views, state, opts);
}

std::vector<ClusterView> Engine::views(const std::vector<const Profile*>& profiles) const {
  std::vector<ClusterView> v;
  for (std::size_t c = 0; c < cfg_.clusters.size(); ++c)
    v.push_back(cluster_view(cfg_.clusters[c], profiles[c], arrivals_[c], run_sum_[c], now_));
  return v;
}

void Engine::publish() {
  published_.clear();
  for (LocalScheduler& s : sched_) {
    (void)s.replan();
    published_.push_back(s.profile());
  }
  m_.messages += static_cast<std::int64_t>(sched_.size());
  ++m_.publications;
}

Status Engine::submit_local(const Job& j) {
  if (j.cluster < 0 || static_cast<std::size_t>(j.cluster) >= sched_.size())
    return fail("Engine::run", "local job " + std::to_string(j.id) + ": no cluster " +
                                   std::to_string(j.cluster));
  LocalScheduler& s = sched_[j.cluster];
  ++arrivals_[j.cluster];
  run_sum_[j.cluster] += static_cast<double>(j.run);
  if (j.nodes > s.capacity()) {
    ++m_.rejected;
    return {};
  }
  PendingJob p;
  p.id = j.id;
  p.nodes = j.nodes;
  p.estimate = j.estimate;
  p.submit = j.submit;
  if (auto st = s.submit(p); !st) return wrap("cluster " + cfg_.clusters[j.cluster].name, st.error());
  local_.emplace(j.id, LocalRec{j, kNever});
  backlog_ += static_cast<double>(j.nodes) * static_cast<double>(j.run);
  ++backlog_jobs_;
  return {};
}

Status Engine::book(MetaRec& m) {
  for (const PlanPart& p : m.plan.parts) {
    FixedSpan r;
    r.id = m.job.id;
    r.start = m.plan.start;
    r.end = m.plan.end();
    r.nodes = p.nodes;
    if (auto st = sched_[p.cluster].add_reservation(r); !st)
      return wrap("metajob " + std::to_string(m.job.id) + " on " + cfg_.clusters[p.cluster].name,
                  st.error());
    waiting_[p.cluster].insert({m.plan.start, m.job.id});
    m_.messages += 2;  // reserve, confirm
  }
  ++m.version;
  meta_starts_.push(Ev{m.plan.start, m.job.id, m.version});
  return {};
}

Status Engine::unbook(const MetaRec& m) {
  for (const PlanPart& p : m.plan.parts) {
    if (auto st = sched_[p.cluster].remove_reservation(m.job.id); !st)
      return wrap("metajob " + std::to_string(m.job.id), st.error());
    waiting_[p.cluster].erase({m.plan.start, m.job.id});
    m_.messages += 2;  // cancel, acknowledge
  }
  return {};
}

Status Engine::submit_meta(const Job& j) {
  if (j.nodes > m_.capacity) {
    ++m_.rejected;
    return {};
  }
  MetaRec m;
  m.job = j;
  m.request = meta_request(j, now_);
  const std::int64_t k = static_cast<std::int64_t>(sched_.size());

  // The clusters' current plans, read in place (the planner only reads).
  auto fresh = [&]() {
    std::vector<const Profile*> p;
    for (LocalScheduler& s : sched_) {
      (void)s.replan();
      p.push_back(&s.profile());
    }
    m_.messages += 2 * k;  // ask, answer
    return p;
  };
  auto plan_with = [&](const std::vector<const Profile*>& profiles) {
    return plan_metajob(cfg_.planner, m.request, views(profiles), now_, planner_state_);
  };

  std::vector<const Profile*> avail;
  if (cfg_.publish_interval == 0) {
    avail = fresh();
  } else {
    for (const Profile& p : published_) avail.push_back(&p);
  }
  auto plan = plan_with(avail);
  if (plan && cfg_.planner == Policy::kCoresSeq) {
    // CORES Algorithm 2: the parts are reserved one at a time, smallest
    // p_res first; a part that no longer fits is denied and
    // cores_alternative searches on the clusters' current plans.
    const std::uint64_t id = j.id;
    std::vector<bool> excluded(sched_.size(), false);
    CoresAllocIo io;
    io.reserve = [&](const CoallocPlan& p, const PlanPart& x) {
      m_.messages += 1;  // reserve (as book(): reserve + confirm per part)
      LocalScheduler& s = sched_[x.cluster];
      (void)s.replan();
      auto min = s.profile().min_over(p.start, p.duration);
      if (!min || min.value() < x.nodes) {
        ++m_.violations;
        return false;
      }
      return static_cast<bool>(s.add_reservation(FixedSpan{id, p.start, p.end(), x.nodes}));
    };
    io.cancel = [&](const CoallocPlan&, const PlanPart& x) {
      m_.messages += 2;  // cancel, acknowledge
      (void)sched_[x.cluster].remove_reservation(id);
    };
    io.alternative = [&](const CoallocPlan& p, const std::vector<bool>& held,
                         std::size_t failed) -> std::optional<CoallocPlan> {
      auto a = cores_alternative(m.request, views(fresh()), CoallocOptions{}, p, held, failed,
                                 excluded);
      excluded[p.parts[failed].cluster] = true;
      if (!a) return std::nullopt;
      return std::move(a).value();
    };
    auto got = cores_allocate(plan.value(), io);
    if (got) {
      m.plan = std::move(got).value();
      backlog_ += static_cast<double>(j.nodes) * static_cast<double>(j.run);
      ++backlog_jobs_;
      auto it = meta_.emplace(j.id, std::move(m)).first;
      MetaRec& r = it->second;
      for (const PlanPart& x : r.plan.parts) {
        waiting_[x.cluster].insert({r.plan.start, r.job.id});
        m_.messages += 1;  // confirm (line 16)
      }
      ++r.version;
      meta_starts_.push(Ev{r.plan.start, r.job.id, r.version});
      return {};
    }
    // Every held part was cancelled: plan on the current state and book.
    plan = plan_with(fresh());
  } else if (plan && cfg_.publish_interval > 0) {
    // Stale information: the slot must still be free when reserved.
    bool ok = true;
    for (const PlanPart& p : plan.value().parts) {
      LocalScheduler& s = sched_[p.cluster];
      (void)s.replan();
      auto min = s.profile().min_over(plan.value().start, plan.value().duration);
      if (!min || min.value() < p.nodes) ok = false;
    }
    if (!ok) {
      ++m_.violations;
      avail = fresh();
      plan = plan_with(avail);
    }
  }
  if (!plan) {
    if (plan.error().code == Errc::kNoFit) {
      ++m_.rejected;
      return {};
    }
    return wrap("metajob " + std::to_string(j.id), plan.error());
  }
  m.plan = std::move(plan).value();
  backlog_ += static_cast<double>(j.nodes) * static_cast<double>(j.run);
  ++backlog_jobs_;
  auto it = meta_.emplace(j.id, std::move(m)).first;
  return book(it->second);
}

Status Engine::start_jobs() {
  for (std::size_t c = 0; c < sched_.size(); ++c) {
    auto started = sched_[c].schedule();
    if (!started) return wrap("cluster " + cfg_.clusters[c].name, started.error());
    for (const StartedJob& s : started.value()) {
      LocalRec& r = local_.at(s.id);
      r.start = s.start;
      backlog_ -= static_cast<double>(r.job.nodes) * static_cast<double>(r.job.run);
      --backlog_jobs_;
      ends_.push(Ev{s.start + r.job.run, s.id, 0});
      ++m_.events;
    }
  }
  return {};
}

Status Engine::reschedule_after_early_end(std::size_t c) {
  LocalScheduler& s = sched_[c];
  if (auto st = s.replan(); !st) return st;
  auto idle = s.profile().free_at(now_);
  if (!idle || idle.value() <= 0) return {};
  // The waiting metajobs at the head of this cluster's queue.
  std::vector<std::uint64_t> ids;
  for (auto it = waiting_[c].begin(); it != waiting_[c].end() && ids.size() < cfg_.head; ++it)
    if (it->first > now_) ids.push_back(it->second);
  if (ids.empty()) return {};
  RescheduleOptions opt;
  opt.mode = cfg_.resched == Resched::kShift ? RescheduleMode::kShift : RescheduleMode::kShiftRemap;
  opt.margin = cfg_.margin;
  const std::size_t k = sched_.size();
  // Every cluster's current plan, read in place; re-planned where a move
  // changed it.
  std::vector<const Profile*> live(k);
  for (std::size_t q = 0; q < k; ++q) {
    if (auto st = sched_[q].replan(); !st) return st;
    live[q] = &sched_[q].profile();
  }
  std::vector<Profile> avail;
  for (std::uint64_t id : ids) {
    MetaRec& m = meta_.at(id);
    ++m_.resched_offers;
    m_.messages += 1 + 2 * static_cast<std::int64_t>(k);  // notification, ask, answers
    // Every cluster's availability as if this metajob held nothing: its
    // own reservation's nodes are added back over [start, end).
    avail.clear();
    avail.reserve(k);
    std::vector<const Profile*> free = live;
    for (const PlanPart& part : m.plan.parts) {
      std::size_t q = part.cluster;
      Amount own = part.nodes;
      auto mine = Profile::create(now_, own);
      if (!mine) return mine.error();
      if (m.plan.start > now_)
        if (auto sp = mine.value().add_span(now_, m.plan.start - now_, own); !sp) return sp.error();
      if (m.plan.end() < kForever)
        if (auto sp = mine.value().add_span(m.plan.end(), kForever, own); !sp) return sp.error();
      auto sum = Profile::sum({live[q], &mine.value()});
      if (!sum) return sum.error();
      avail.push_back(std::move(sum).value());
    }
    for (std::size_t i = 0; i < m.plan.parts.size(); ++i) free[m.plan.parts[i].cluster] = &avail[i];
    std::vector<ClusterView> v = views(free);
    auto d = reschedule_coalloc(m.request, m.plan, v, now_, opt);
    if (!d) return wrap("metajob " + std::to_string(id), d.error());
    const RescheduleDecision& dec = d.value();
    if (dec.kind == RescheduleKind::kNone) continue;
    MoveRecord mv;
    mv.id = id;
    mv.at = now_;
    mv.kind = dec.kind;
    mv.old_start = m.plan.start;
    mv.new_start = dec.plan.start;
    mv.old_parts = m.plan.parts.size();
    mv.new_parts = dec.plan.parts.size();
    mv.gain = dec.gain;
    std::set<std::size_t> touched;
    for (const PlanPart& p : m.plan.parts) touched.insert(p.cluster);
    if (auto st = unbook(m); !st) return st;
    m.plan = dec.plan;
    if (auto st = book(m); !st) return st;
    for (const PlanPart& p : dec.plan.parts) touched.insert(p.cluster);
    for (std::size_t q : touched)
      if (auto st = sched_[q].replan(); !st) return st;
    if (dec.kind == RescheduleKind::kShift) {
      ++m_.shifts;
    } else {
      ++m_.remaps;
      if (mv.old_parts > 1 && mv.new_parts == 1) ++m_.remaps_to_one;
    }
    if (on_move) on_move(mv);
  }
  return {};
}

void Engine::finish_record(const JobRecord& r, Duration single_run) {
  KindMetrics& k = r.kind == JobKind::kLocal ? m_.local : m_.meta;
  double response = static_cast<double>(r.end - r.submit);
  double wait = static_cast<double>(r.start - r.submit);
  double bsld = std::max(1.0, response / static_cast<double>(std::max(single_run, cfg_.tau)));
  double work = static_cast<double>(r.nodes) * static_cast<double>(single_run);
  for (KindMetrics* x : {&k, &m_.all}) {
    ++x->jobs;
    x->response += response;
    x->wait += wait;
    x->bsld += bsld;
    x->work += work;
  }
  m_.last_end = std::max(m_.last_end, r.end);
  if (cfg_.horizon > 0) {
    Saturation& sat = m_.saturation;
    KindMetrics* w = r.submit < sat.window ? &sat.first
                     : r.submit >= cfg_.horizon - sat.window && r.submit < cfg_.horizon ? &sat.last
                                                                                       : nullptr;
    if (w) {
      ++w->jobs;
      w->response += response;
      w->wait += wait;
      w->bsld += bsld;
      w->work += work;
    }
  }
  if (on_finish) on_finish(r);
}

// The backlog as it stands before anything happens at t, recorded for
// every sample time (horizon / 2, horizon) not after t.
void Engine::sample_backlog(Time t) {
  if (cfg_.horizon <= 0) return;
  Saturation& sat = m_.saturation;
  while (samples_taken_ < 2 && t >= (samples_taken_ == 0 ? cfg_.horizon / 2 : cfg_.horizon)) {
    (samples_taken_ == 0 ? sat.backlog_mid : sat.backlog_end) = backlog_;
    (samples_taken_ == 0 ? sat.queued_mid : sat.queued_end) = backlog_jobs_;
    ++samples_taken_;
  }
}

Status Engine::step(Time t) {
  for (std::size_t c = 0; c < sched_.size(); ++c)
    if (auto st = sched_[c].advance_to(t); !st) return wrap("cluster " + cfg_.clusters[c].name, st.error());
  now_ = t;
  if (t == next_publish_) {
    publish();
    next_publish_ = t + cfg_.publish_interval;
  }
  // Ends.
  while (!ends_.empty() && ends_.top().t == t) {
    Ev e = ends_.top();
    ends_.pop();
    ++m_.events;
    if (auto it = local_.find(e.id); it != local_.end()) {
      const LocalRec& r = it->second;
      int c = r.job.cluster;
      if (auto st = sched_[c].finish(e.id); !st) return wrap("cluster " + cfg_.clusters[c].name, st.error());
      if (t < r.start + r.job.estimate) {
        early_[c] = true;
        ++m_.early_ends;
      }
      JobRecord rec{e.id, JobKind::kLocal, r.job.submit, r.start, t, r.job.nodes,
                    r.job.run, r.job.estimate, {{c, r.job.nodes}}};
      finish_record(rec, r.job.run);
      local_.erase(it);
      continue;
    }
    MetaRec& m = meta_.at(e.id);
    bool early = t < m.plan.end();
    JobRecord rec{e.id, JobKind::kMeta, m.job.submit, m.start, t, m.job.nodes,
                  m.job.run, m.job.estimate, {}};
    for (const PlanPart& p : m.plan.parts) {
      if (early) {
        if (auto st = sched_[p.cluster].remove_reservation(e.id); !st) return st;
        early_[p.cluster] = true;
      }
      rec.parts.push_back({static_cast<int>(p.cluster), p.nodes});
    }
    if (early) ++m_.early_ends;
    if (m.plan.split()) {
      ++m_.meta_split;
      m_.overhead_work += static_cast<double>(m.job.nodes) * static_cast<double>(t - m.start - m.job.run);
    } else {
      ++m_.meta_single;
    }
    finish_record(rec, m.job.run);
    meta_.erase(e.id);
  }
  // Metajobs whose common start has come.
  while (!meta_starts_.empty() && meta_starts_.top().t == t) {
    Ev e = meta_starts_.top();
    meta_starts_.pop();
    auto it = meta_.find(e.id);
    if (it == meta_.end() || it->second.version != e.version || it->second.started) continue;
    MetaRec& m = it->second;
    m.started = true;
    m.start = t;
    backlog_ -= static_cast<double>(m.job.nodes) * static_cast<double>(m.job.run);
    --backlog_jobs_;
    for (const PlanPart& p : m.plan.parts) waiting_[p.cluster].erase({m.plan.start, m.job.id});
    ends_.push(Ev{t + actual_run(m.job, m.plan), e.id, 0});
    ++m_.events;
  }
  return {};
}

Status Engine::run(std::vector<JobSource*> sources) {
  std::vector<std::optional<Job>> head(sources.size());
  auto pull = [&](std::size_t i) -> Status {
    auto n = sources[i]->next();
    if (!n) return wrap_swf(n.error());
    if (n.value() && head[i] && n.value()->submit < head[i]->submit)
      return fail("Engine::run", "source " + std::to_string(i) + ": job " +
                                     std::to_string(n.value()->id) + " submitted out of order");
    head[i] = std::move(n).value();
    return {};
  };
  for (std::size_t i = 0; i < sources.size(); ++i)
    if (auto st = pull(i); !st) return st;

  for (;;) {
    while (!meta_starts_.empty()) {  // drop stale starts
      const Ev& e = meta_starts_.top();
      auto it = meta_.find(e.id);
      if (it != meta_.end() && it->second.version == e.version && !it->second.started) break;
      meta_starts_.pop();
    }
    Time t = kNever;
    for (const auto& h : head)
      if (h) t = std::min(t, h->submit);
    if (!ends_.empty()) t = std::min(t, ends_.top().t);
    if (!meta_starts_.empty()) t = std::min(t, meta_starts_.top().t);
    for (const LocalScheduler& s : sched_) t = std::min(t, s.next_decision_time());
    if (t == kNever) break;
    if (next_publish_ < t) t = next_publish_;
    if (t < now_) return fail("Engine::run", "time went back to " + std::to_string(t));
    sample_backlog(t);
    if (auto st = step(t); !st) return st;
    // Submissions: local jobs first, then metajobs, each in source order.
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t i = 0; i < sources.size(); ++i) {
        while (head[i] && head[i]->submit == t &&
               (head[i]->kind == JobKind::kLocal) == (pass == 0)) {
          Job j = *head[i];
          m_.first_submit = std::min(m_.first_submit, j.submit);
          ++m_.events;
          Status st = j.kind == JobKind::kLocal ? submit_local(j) : submit_meta(j);
          if (!st) return st;
          if (auto p = pull(i); !p) return p;
        }
      }
    }
    if (auto st = start_jobs(); !st) return st;
    if (cfg_.resched != Resched::kRigid) {
      bool any = false;
      for (std::size_t c = 0; c < sched_.size(); ++c) {
        if (!early_[c]) continue;
        std::int64_t before = m_.shifts + m_.remaps;
        if (auto st = reschedule_after_early_end(c); !st) return st;
        any = any || m_.shifts + m_.remaps != before;
      }
      // Algorithm 2, lines 16-21: the local jobs get another backfilling
      // pass around the moved metajobs.
      if (any)
        if (auto st = start_jobs(); !st) return st;
    }
    std::fill(early_.begin(), early_.end(), false);
  }
  sample_backlog(kForever);  // nothing left: an empty backlog
  if (!local_.empty() || !meta_.empty())
    return fail("Engine::run", std::to_string(local_.size()) + " local and " +
                                   std::to_string(meta_.size()) + " metajobs never finished");
  return {};
}

}  // namespace flexco::sim
