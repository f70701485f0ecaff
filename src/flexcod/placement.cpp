// SPDX-License-Identifier: GPL-2.0-or-later
// placement.cpp - availability from the clusters and planning: gather
// offers or profiles, plan with the chosen policy, re-plan after refusals
// (place).
// See engine.hpp and doc/flexcod.md.

#include "flexcod/engine_internal.hpp"

#include <new>
#include <system_error>

#include "core/offer_probe.hpp"

namespace flexcod {

using namespace engine_detail;

namespace {

// A pass's wait for the profiles still out once the others have answered
// (at least; see pass_profiles).
constexpr std::int64_t kPassStragglerMs = 10;

// Engine::Spec's planning parameters (a template: Spec is private to Engine).
template <class Spec>
PlanAsk plan_ask(const Spec& spec) {
  PlanAsk a;
  a.nodes = spec.nodes;
  a.duration = spec.duration;
  a.ready = spec.ready;
  a.deadline = spec.deadline;
  a.overhead = spec.overhead;
  a.max_parts = spec.max_parts;
  return a;
}

}  // namespace

// ---------------------------------------------------------------------------
// Availability and planning

std::optional<flexco::Availability> Engine::read_profile(std::size_t ci,
                                                        const flexco::conf::FlexcodConf& conf,
                                                        std::string* why,
                                                        const std::string* partition) {
  Cluster& c = *clusters_[ci];
  // A submission's own partition (issue 17) is asked for; the configured
  // one may come from the published cache.
  const std::string& part = partition ? *partition : c.conf.partition;
  std::int64_t until = 0;
  if (c.is_open(now_seconds(), &until)) {
    *why = "circuit open until " + slurm_time(until) + " (no answer to its last calls)";
    return std::nullopt;
  }
  std::string text;
  if (conf.availability_mode == "publish" && part == c.conf.partition) {
    std::lock_guard<std::mutex> lock(c.m);
    if (!c.cached_profile.empty() &&
        now_seconds() - c.cached_at <= 2L * conf.publish_interval + 5) {
      text = c.cached_profile;
    }
  }
  if (text.empty()) {
    bump("messages.profile");
    const auto asked = std::chrono::steady_clock::now();
    auto r = c.client->profile(conf.plan_horizon, part, 1000L * conf.cluster_timeout);
    if (!r.ok()) {
      c.note_error(r.error());
      *why = r.error().message;
      return std::nullopt;
    }
    c.note(true, "");
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - asked).count();
    {
      std::lock_guard<std::mutex> lock(c.m);
      c.profile_read_ms = took;
    }
    text = http::json_text(r.value().get());
  }
  // Its times by flexcod's clock (doc/flexcod.md, "Clocks").
  auto a = flexco::availability_from_json(text, c.clock_shift());
  if (!a.ok()) {
    *why = "bad profile: " + a.error().message;
    return std::nullopt;
  }
  {
    std::lock_guard<std::mutex> lock(c.m);
    c.nodes = a.value().nodes_total;
  }
  return std::move(a).value();
}

void Engine::pass_profiles(PassProfiles& pp, const std::vector<std::size_t>& which) {
  std::vector<std::size_t> need;
  for (std::size_t ci : which) {
    if (pp.stale.count(ci) || (!pp.avail.count(ci) && !pp.failed.count(ci))) need.push_back(ci);
  }
  if (need.empty()) return;  // the common case in a pass: no copy of the configuration
  ++pp.epoch;
  auto conf = std::make_shared<flexco::conf::FlexcodConf>();
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    *conf = conf_;
  }
  using Clock = std::chrono::steady_clock;
  const std::int64_t start_ms = steady_ms();
  const std::int64_t cap_ms = start_ms + conf->pass_profile_wait;
  // Each read in its own thread, bounded by ClusterTimeout; one still in
  // flight from an earlier pass is not asked again but joined, and like a
  // cluster whose last call went unanswered it is not waited for.
  std::vector<std::shared_ptr<ProfileFetch>> f(need.size());
  std::vector<char> suspect(need.size(), 0);
  std::vector<std::int64_t> took(need.size(), 0);  // its last profile read, ms (-1: none)
  for (std::size_t i = 0; i < need.size(); ++i) {
    Cluster& c = *clusters_[need[i]];
    bool start = false;
    {
      std::lock_guard<std::mutex> lock(c.m);
      took[i] = c.profile_read_ms;
      std::lock_guard<std::mutex> fl(fetch_mutex_);
      if (c.pass_fetch && !c.pass_fetch->done) {
        f[i] = c.pass_fetch;
        suspect[i] = 1;
      } else {
        f[i] = std::make_shared<ProfileFetch>();
        c.pass_fetch = f[i];
        suspect[i] = c.failures > 0;
        start = !stopping_;
        if (start) ++fetches_running_;
      }
    }
    if (!start) continue;
    const std::size_t ci = need[i];
    try {
      std::thread([this, ci, fetch = f[i], conf]() {
        std::string why;
        auto a = read_profile(ci, *conf, &why);
        const std::int64_t at = steady_ms();
        if (a) {
          Cluster& c = *clusters_[ci];
          auto kept = std::make_shared<const flexco::Availability>(*a);
          std::lock_guard<std::mutex> lock(c.m);
          c.pass_profile = std::move(kept);
          c.pass_profile_at = at;
        }
        std::lock_guard<std::mutex> fl(fetch_mutex_);
        fetch->avail = std::move(a);
        fetch->why = why;
        fetch->done = true;
        fetch->done_at = at;
        --fetches_running_;
        fetch_cv_.notify_all();  // under the lock: stop() may destroy us next
      }).detach();
    } catch (const std::system_error& e) {
      std::lock_guard<std::mutex> fl(fetch_mutex_);
      f[i]->why = std::string("no thread for the profile read: ") + e.what();
      f[i]->done = true;
      f[i]->done_at = steady_ms();
      --fetches_running_;
    }
  }
  std::vector<std::pair<std::optional<flexco::Availability>, std::string>> got(need.size());
  std::vector<char> answered(need.size(), 0);  // its read returned in time
  std::int64_t waited = 0;
  bool early = false;  // stopped waiting before PassProfileWait: the others had answered
  {
    // Until every read (but the suspect ones) returned, at most
    // PassProfileWait.  Once most have returned (all but an eighth, at
    // least all but one), the ones still out are waited for only `after`
    // (kPassStragglerMs, or a tenth of the time the reads had taken at the
    // last answer) after the last answer -- and no less than their own
    // last read took, plus `after` (a cluster that is always slower than
    // the others is not left out every pass).  Then they are late.  A
    // cluster whose profile was never read yet is waited for as long as
    // PassProfileWait allows (the reads at start are slow and uneven).
    std::unique_lock<std::mutex> fl(fetch_mutex_);
    for (;;) {
      std::int64_t last = -1, own = 0;
      std::size_t asked = 0, out = 0;
      bool unknown = false;  // the profile of one still out was never read
      for (std::size_t i = 0; i < need.size(); ++i) {
        if (suspect[i]) continue;
        ++asked;
        if (f[i]->done) {
          last = std::max(last, f[i]->done_at);
        } else {
          ++out;
          own = std::max(own, took[i]);
          unknown |= took[i] < 0;
        }
      }
      if (out == 0) break;
      std::int64_t until = cap_ms;
      if (last >= 0 && !unknown && out <= std::max<std::size_t>(1, asked / 8)) {
        const std::int64_t after =
            std::max<std::int64_t>(kPassStragglerMs, (last - start_ms) / 10);
        const std::int64_t give_up = std::max(last + after, start_ms + own + after);
        if (give_up < cap_ms) until = give_up;
      }
      const std::int64_t now = steady_ms();
      if (now >= until) {
        early = until < cap_ms;
        break;
      }
      fetch_cv_.wait_until(fl, Clock::time_point(std::chrono::milliseconds(until)));
    }
    waited = steady_ms() - start_ms;
    for (std::size_t i = 0; i < need.size(); ++i) {
      if (f[i]->done) {
        answered[i] = 1;
        got[i] = {f[i]->avail, f[i]->why};
      } else {
        got[i].second = "no answer within " + std::to_string(waited) + " ms (PassProfileWait " +
                        std::to_string(conf->pass_profile_wait) + " ms" +
                        (early ? "; the other clusters had answered)" : ")");
      }
    }
  }
  const std::int64_t max_age_ms = 1000L * conf->cluster_timeout;
  std::string late;
  for (std::size_t i = 0; i < need.size(); ++i) {
    const std::size_t ci = need[i];
    Cluster& c = *clusters_[ci];
    // Not answered in time: its last answer, if read at most
    // ClusterTimeout ago (a late one of an earlier pass's read) -- unless
    // a move of this pass changed the cluster since.
    const bool moved_on = pp.stale.erase(ci) > 0;
    std::int64_t kept_at = 0;
    if (!answered[i] && !moved_on) {
      std::lock_guard<std::mutex> lock(c.m);
      if (c.pass_profile && steady_ms() - c.pass_profile_at <= max_age_ms) {
        got[i].first = *c.pass_profile;
        kept_at = c.pass_profile_at;
      }
    }
    // Its own queue first (PassProfiles::ended), whichever read it is.
    auto e = pp.ended.find(ci);
    if (got[i].first && e != pp.ended.end() && !local_queue_went_first(*got[i].first, e->second)) {
      got[i].first.reset();
      got[i].second = "its own queue has not had the nodes freed at " + slurm_time(e->second) +
                      " yet (no backfill cycle begun since has ended)";
      pp.queue_first.insert(ci);
    }
    if (got[i].first) {
      if (!answered[i])
        fc_verbose("rescheduling pass: no profile from %s within %lld ms (PassProfileWait %d ms%s); "
                   "planned on its profile read %lld ms before",
                   c.conf.name.c_str(), static_cast<long long>(waited), conf->pass_profile_wait,
                   early ? ", the other clusters had answered" : "",
                   static_cast<long long>(steady_ms() - kept_at));
      pp.avail.insert_or_assign(ci, std::move(*got[i].first));
      pp.failed.erase(ci);
    } else {
      pp.avail.erase(ci);
      pp.failed[ci] = got[i].second;
      if (pp.queue_first.count(ci)) {
        fc_verbose("rescheduling pass: %s left out: %s", c.conf.name.c_str(), got[i].second.c_str());
      } else if (!answered[i]) {
        late += (late.empty() ? "" : ", ") + c.conf.name;
      }
    }
  }
  if (!late.empty()) {
    fc_info("rescheduling pass: no profile from %s within PassProfileWait (%d ms; waited "
            "%lld ms%s); their co-allocations wait for the next pass, the others are planned",
            late.c_str(), conf->pass_profile_wait, static_cast<long long>(waited),
            early ? ", the other clusters had answered" : "");
  }
}

Engine::Gathered Engine::gather(const std::vector<std::size_t>& which, const Spec& spec) {
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  // From before the first request, or before the oldest published profile
  // it may use was received (less 5 s for its way here): see
  // subtract_unseen.
  std::int64_t age_s = 0;
  if (conf.availability_mode == "publish") {
    for (std::size_t ci : which) {
      std::lock_guard<std::mutex> lock(clusters_[ci]->m);
      if (!clusters_[ci]->cached_profile.empty())
        age_s = std::max<std::int64_t>(age_s, now_seconds() - clusters_[ci]->cached_at + 5);
    }
  }
  ClaimLedger::Reading reading(&claims_, steady_ms() - 1000L * age_s);
  struct One {
    bool ok = false;
    std::string why;
    std::optional<flexco::Availability> avail;
    std::vector<flexco::CoallocOffer> offers;
    JsonPtr raw;
  };
  std::vector<std::future<One>> futs;
  for (std::size_t ci : which) {
    futs.push_back(std::async(std::launch::async, [this, ci, &spec, &conf]() {
      One one;
      Cluster& c = *clusters_[ci];
      const std::string& part = spec.partition.get(c.conf.name, c.conf.partition);
      one.avail = read_profile(ci, conf, &one.why, &part);
      if (!one.avail) return one;
      if (policy_probes(spec.policy)) {
        bump("messages.probe");
        // The query core/offer_probe.hpp defines for the planners (flexco-sim
        // answers the same one itself): node counts up to the request,
        // the split duration of the planner's request, from its ready time.
        // Asked and answered by the cluster's clock (doc/flexcod.md, "Clocks").
        const std::int64_t shift = c.clock_shift();
        const std::string body =
            probe_body(plan_ask(spec), one.avail->nodes_published, now_seconds(), part, shift);
        JsonPtr q(json_loads(body.c_str(), 0, nullptr));
        if (!q) throw std::bad_alloc();  // our own JSON: only memory can fail
        auto p = c.client->probe(q.get(), 1000L * conf.cluster_timeout);
        std::string failed;
        if (p.ok()) {
          auto offers = flexco::offers_from_probe_answer(http::json_text(p.value().get()));
          if (offers.ok()) {
            one.offers = std::move(offers).value();
            for (auto& o : one.offers) {
              o.start -= shift;
              o.end -= shift;
            }
            one.raw = http::json_ref(json_object_get(p.value().get(), "offers"));
            // shown to the user beside the plan: by flexcod's clock too
            for (std::size_t k = 0; shift != 0 && k < json_array_size(one.raw.get()); ++k) {
              json_t* o = json_array_get(one.raw.get(), k);
              for (const char* f : {"start", "end"}) {
                json_t* v = json_object_get(o, f);
                if (json_is_integer(v)) json_integer_set(v, json_integer_value(v) - shift);
              }
            }
          } else {
            failed = offers.error().message;
          }
        } else {
          failed = p.error().message;
        }
        if (!failed.empty())
          fc_verbose("cluster %s: probe failed, offers derived from its profile: %s",
                     c.conf.name.c_str(), failed.c_str());
      }
      one.ok = true;
      return one;
    }));
  }
  Gathered g;
  g.reading = std::move(reading);
  for (std::size_t i = 0; i < futs.size(); ++i) {
    One one = futs[i].get();
    if (one.ok) {
      g.idx.push_back(which[i]);
      g.avail.push_back(std::move(*one.avail));
      g.offers.push_back(std::move(one.offers));
      g.raw_offers.push_back(std::move(one.raw));
    } else {
      g.errors.emplace_back(clusters_[which[i]]->conf.name, one.why);
    }
  }
  return g;
}

flexco::HpcmRates Engine::hpcm_rates(std::size_t ci, std::int64_t now) {
  Cluster& c = *clusters_[ci];
  std::lock_guard<std::mutex> lock(c.m);
  return c.hpcm.rates(now);
}

double Engine::hpcm_p(std::size_t ci, std::int64_t capacity, std::int64_t deadline,
                      std::int64_t now) {
  const flexco::HpcmRates r = hpcm_rates(ci, now);
  const flexco::Duration d =
      deadline > 0 ? std::max<std::int64_t>(0, deadline - now) : flexco::kForever;
  auto p = flexco::hpcm_site_probability(std::max<std::int64_t>(1, capacity), r.arrival_rate,
                                         r.service_rate, d);
  return p ? p.value() : 1.0;
}

bool Engine::plan(const Spec& spec, const std::vector<std::size_t>& which, Gathered& g,
                  flexco::CoallocPlan* out, std::string* why, bool dry_run) {
  (void)which;
  const std::int64_t now = now_seconds();
  if (!spec.fixed.empty()) {
    // Fixed parts, each pinned to its cluster: the earliest common start.
    std::vector<std::pair<std::size_t, std::int64_t>> need;  // index into g, nodes
    for (const auto& f : spec.fixed) {
      std::size_t gi = g.idx.size();
      for (std::size_t k = 0; k < g.idx.size(); ++k) {
        if (clusters_[g.idx[k]]->conf.name == f.second) gi = k;
      }
      if (gi == g.idx.size()) {
        *why = "cluster " + f.second + " is not reachable or not allowed";
        return false;
      }
      need.emplace_back(gi, f.first);
    }
    const std::int64_t d = spec.duration + kStartSlack + (need.size() > 1
                                                ? static_cast<std::int64_t>(std::ceil(spec.overhead * spec.duration))
                                                : 0);
    flexco::Time t = std::max(spec.ready, now);
    for (int iter = 0; iter < 10000; ++iter) {
      flexco::Time latest = t;
      for (const auto& n : need) {
        auto f = g.avail[n.first].nodes.earliest_fit(t, d, n.second);
        if (!f.ok() || f.value() == flexco::kNever) {
          *why = "part of " + std::to_string(n.second) + " nodes never fits on " +
                 clusters_[g.idx[n.first]]->conf.name + " within the plan horizon";
          return false;
        }
        latest = std::max(latest, f.value());
      }
      if (latest == t) {
        if (spec.deadline > 0 && t + d > spec.deadline) {
          *why = "the earliest common start " + std::to_string(t) + " ends after the deadline";
          return false;
        }
        out->start = t;
        out->duration = d;
        out->parts.clear();
        for (const auto& n : need) {
          flexco::PlanPart p;
          p.cluster = n.first;
          p.nodes = n.second;
          out->parts.push_back(p);
        }
        return true;
      }
      t = latest;
    }
    *why = "no common start found";
    return false;
  }
  std::vector<std::string> names;
  for (std::size_t k : g.idx) names.push_back(clusters_[k]->conf.name);
  std::vector<flexco::ClusterView> views = plan_views(names, g.avail, g.offers);
  for (std::size_t k = 0; k < g.idx.size() && k < views.size(); ++k) {
    // HPCM's model of the cluster, learned from its early-end events.
    const flexco::HpcmRates rates = hpcm_rates(g.idx[k], now);
    views[k].arrival_rate = rates.arrival_rate;
    views[k].service_rate = rates.service_rate;
  }
  const flexco::CoallocRequest req = plan_request(plan_ask(spec), now);
  auto policy = flexco::parse_policy(spec.policy);
  if (!policy.ok()) {
    *why = policy.error().message;
    return false;
  }
  const flexco::CoallocOptions opts = plan_options(now);
  std::lock_guard<std::mutex> lock(planner_mutex_);
  flexco::PlannerState scratch = planner_state_;  // a dry run plans on this copy
  auto r = flexco::plan_coalloc(policy.value(), req, views, dry_run ? scratch : planner_state_, opts);
  if (!r.ok()) {
    *why = r.error().message;
    return false;
  }
  *out = std::move(r).value();
  return true;
}

// Caps each refused window's free nodes on its cluster at one less than
// were asked for there (see Engine::Refusal), so that the re-plan does not
// choose it again.  The published steps are rebuilt with the windows'
// bounds as extra cuts; a cluster whose profile cannot be rebuilt keeps it.
void Engine::apply_refusals(Gathered& g, const std::vector<Refusal>& refusals) {
  for (std::size_t k = 0; k < g.idx.size(); ++k) {
    const std::string& name = clusters_[g.idx[k]]->conf.name;
    flexco::Availability& a = g.avail[k];
    std::vector<const Refusal*> mine;
    for (const auto& r : refusals) {
      if (r.cluster == name && r.end > a.when && r.start < a.horizon_end) mine.push_back(&r);
    }
    if (mine.empty() || a.steps.empty()) continue;
    std::set<flexco::Time> cuts;
    for (const auto& st : a.steps) cuts.insert(st.start);
    cuts.insert(a.horizon_end);
    for (const Refusal* r : mine) {
      for (std::int64_t t : {r->start, r->end}) {
        if (t > a.steps.front().start && t < a.horizon_end) cuts.insert(t);
      }
    }
    std::vector<flexco::Step> steps;
    std::size_t i = 0;
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
      const flexco::Time s = *it, e = *std::next(it);
      while (i + 1 < a.steps.size() && a.steps[i].end <= s) ++i;
      flexco::Amount free = a.steps[i].free_nodes;
      for (const Refusal* r : mine) {
        if (r->start <= s && s < r->end) free = std::min<flexco::Amount>(free, r->nodes - 1);
      }
      free = std::max<flexco::Amount>(0, std::min<flexco::Amount>(free, a.nodes_published));
      steps.push_back(flexco::Step{s, e, free, a.steps[i].free_cpus});
    }
    auto pp = flexco::profiles_from_steps(steps, a.nodes_published, a.cpus_published);
    if (!pp.ok()) {
      fc_verbose("%s: profile not narrowed after a refusal: %s", name.c_str(),
                 pp.error().message.c_str());
      continue;
    }
    a.steps = std::move(steps);
    a.nodes = std::move(pp.value().nodes);
  }
}

// ---------------------------------------------------------------------------
// Placement (the rounds of commit attempts)

bool Engine::clock_far(std::size_t i, int bound, double* offset) {
  if (bound <= 0) return false;
  std::optional<double> off;
  {
    std::lock_guard<std::mutex> lock(clusters_[i]->m);
    off = clusters_[i]->clock_offset_locked();
  }
  if (!off) return false;
  *offset = *off;
  return std::fabs(*off) > bound;
}

bool Engine::place(CoRecord& co, const Spec& spec, std::string* why) {
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  std::set<std::string> excluded;
  std::map<std::string, int> violations;
  std::vector<Refusal> refusals;
  std::string reasons;
  // A round refused only for want of free nodes (409 not_available) taught
  // the next plan to avoid that window (apply_refusals), so it earns one
  // more round, up to kRefusalRounds; a cluster is left out after
  // kMaxViolations such refusals.  Other failures count against
  // MaxReplans alone and leave their cluster out at once.
  constexpr int kRefusalRounds = 8, kMaxViolations = 4;
  int extra = 0;
  for (int round = 0; round <= conf.max_replans + extra; ++round) {
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < clusters_.size(); ++i) {
      const std::string& n = clusters_[i]->conf.name;
      if (!clusters_[i]->client) continue;
      if (std::find(spec.clusters.begin(), spec.clusters.end(), n) == spec.clusters.end()) continue;
      if (excluded.count(n)) continue;
      if (!clusters_[i]->reconciled) {
        if (round == 0) reasons += (reasons.empty() ? "" : "; ") + n + " not reconciled yet";
        continue;
      }
      // Parts start by their clusters' clocks: one that is far off would
      // start its part that much before or after the others (doc/flexcod.md,
      // "Clocks").
      double off = 0;
      if (clock_far(i, conf.max_clock_offset, &off)) {
        if (round == 0) {
          char what[160];
          std::snprintf(what, sizeof what, "%s's clock is %.0f s %s flexcod's (MaxClockOffset=%d)",
                        n.c_str(), std::fabs(off), off > 0 ? "ahead of" : "behind",
                        conf.max_clock_offset);
          reasons += (reasons.empty() ? "" : "; ") + std::string(what);
          bump("clock_refusals");
        }
        continue;
      }
      which.push_back(i);
    }
    if (which.empty()) {
      *why = "no allowed cluster left" + (reasons.empty() ? std::string() : ": " + reasons);
      break;
    }
    // Read without the claim; planned under it on what was read less what
    // was claimed since (subtract_unseen).  Released by commit_attempt once
    // the parts are in claims_, else at the end of this round.
    Gathered g = gather(which, spec);
    std::unique_lock<std::mutex> claim(claim_mutex_);
    apply_refusals(g, refusals);
    subtract_unseen(g);
    for (const auto& e : g.errors) {
      reasons += (reasons.empty() ? "" : "; ") + e.first + " unreachable (" + e.second + ")";
      excluded.insert(e.first);
    }
    if (g.idx.empty()) {
      *why = "no cluster reachable: " + reasons;
      break;
    }
    flexco::CoallocPlan p;
    std::string pwhy;
    if (!plan(spec, which, g, &p, &pwhy)) {
      *why = "no placement: " + pwhy + (reasons.empty() ? std::string() : " (" + reasons + ")");
      break;
    }
    // Map the plan's cluster indices (into g) to ours.
    for (auto& part : p.parts) part.cluster = g.idx[part.cluster];
    if (round > 0) bump("replans");
    std::set<std::string> bad;
    std::string awhy;
    if (commit_attempt(co, spec, p, which, &bad, &awhy, &claim, &refusals)) return true;
    if (claim.owns_lock()) claim.unlock();
    bump("rollbacks");
    reasons += (reasons.empty() ? "" : "; ") + awhy;
    bool only_violations = !bad.empty();
    for (const auto& b : bad) {
      if (b.rfind("violation:", 0) == 0) {
        const std::string n = b.substr(10);
        if (++violations[n] >= kMaxViolations) excluded.insert(n);
      } else {
        excluded.insert(b);
        only_violations = false;
      }
    }
    if (only_violations && extra < kRefusalRounds) ++extra;
    *why = "every attempt failed: " + reasons;
    if (stopping_) break;
  }
  set_state(co, CoState::kFailed);
  co.reason = *why;
  std::string err;
  if (!store_.update_coalloc(co, *why, &err)) fc_error("co-%ld: %s", (long)co.id, err.c_str());
  fc_info("co-%ld: cannot be placed: %s", (long)co.id, why->c_str());
  return false;
}

}  // namespace flexcod
