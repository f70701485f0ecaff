// SPDX-License-Identifier: GPL-2.0-or-later
// COARP, after "Co-allocation in grid computing using resources offers and
// advance reservation planning" (doc/coalloc.md, "COARP"; the section and
// algorithm numbers below are the paper's):
//
//   * offer generation (§3.1, Algorithm 1): every provider (cluster) offers
//     the free slots S(i, c, s, n, D) of its reservation plan for the job:
//     start s, n free processors, duration D.  Here the offers are the
//     cluster's explicit ClusterView::offers: the answer of the production
//     probe (core/probe.cpp, POST /v1/probe; core/offer_probe.hpp builds
//     the query, flexcod sends it to each plugin, flexco-sim probes its
//     simulated clusters with it).  A cluster without offers (its probe
//     failed) offers the first options.max_offers event starts of its free
//     profile for a part, plus the earliest slot taking the whole job;
//   * composition (§3.2, Algorithm 2): OffersList = every slot of every
//     provider, sorted in ascending order of FinishTime = StartTime +
//     DurationTime (Algorithm 2, step 2); D = runtime + overhead for a
//     part, runtime for a slot holding the whole job (nodes >= P).  Ties,
//     which the paper leaves open: more nodes, then the lower cluster
//     index.  BestOffersList = the first slots of that order whose
//     processors cover the job's P (step 3).  The paper's jobs are
//     divisible and each slot is reserved at its own start (step 4); ours
//     is one parallel program whose parts share one start, so the
//     BestOffersList is reserved at the start S of its last slot, and a
//     provider that joined with an earlier slot gives what it offers over
//     [S, S + D): its largest offer covering that window, else (its slots
//     are event starts and rarely cover another cluster's start) the free
//     nodes of the availability its offers came from.  The nodes are
//     taken from the providers in the order they joined (if that takes
//     more than max_parts clusters: the largest first).  A whole-job slot
//     reached first ends the walk on its own;
//   * if the slots run out (the paper's global waiting queue) the walk is
//     repeated with four times as many derived slots per cluster, until no
//     cluster has more; then it goes on over the free profiles (below), as
//     the job would ask again later rather than be refused;
//   * with free profiles only (no cluster has offers: e.g. every probe
//     failed) the same walk runs without materialising the slots; the
//     earliest start of any plan (FlexCo's search) bounds it from below:
//     O(C K log(C K) + C log P).

#include <algorithm>
#include <tuple>

#include "core/coalloc.hpp"
#include "core/coalloc_detail.hpp"

namespace flexco {

namespace cd = coalloc_detail;

namespace {

struct Slot {
  Time finish;
  Amount nodes;
  std::size_t cluster;
  Time start;
  bool whole;  // takes the whole job alone (duration runtime)
};

// Takes n nodes from the offered parts (nodes = what each can give) in
// their order; if that needs more than `limit` parts, largest first (ties:
// the order).  Empty if n cannot be met.
std::vector<PlanPart> take_in_order(std::vector<PlanPart> offered, Amount n, std::size_t limit) {
  auto fill = [&]() {
    std::vector<PlanPart> parts;
    Amount left = n;
    for (const PlanPart& o : offered) {
      if (left == 0 || parts.size() == limit) break;
      PlanPart p = o;
      p.nodes = std::min(left, o.nodes);
      parts.push_back(p);
      left -= p.nodes;
    }
    if (left > 0) parts.clear();
    return parts;
  };
  std::vector<PlanPart> parts = fill();
  if (parts.empty()) {
    std::stable_sort(offered.begin(), offered.end(),
                     [](const PlanPart& a, const PlanPart& b) { return a.nodes > b.nodes; });
    parts = fill();
  }
  return parts;
}

// What a provider that joined the composition gives a part over
// [s, s + d): its largest offer covering the window (§3.2's slot), else the
// free nodes of its availability there (fit 1, p_res 1): a probe's slots
// start at the cluster's own change points, not at the start of another
// cluster's slot.
cd::Usable offered_at(const ClusterView& v, Time s, Duration d) {
  cd::Usable u = cd::usable(v, s, d, 1.0);
  if (u.nodes == 0 && !v.offers.empty()) u = cd::Usable{cd::avail(v, s, d), 1.0, 1.0};
  return u;
}

std::optional<CoallocPlan> compose(const CoallocRequest& r,
                                   const std::vector<ClusterView>& clusters,
                                   const std::vector<std::size_t>& allowed, std::size_t k,
                                   bool* truncated) {
  Duration dm = cd::split_duration(r);
  std::size_t limit = cd::part_limit(r, allowed.size());
  *truncated = false;
  std::vector<Slot> slots;
  auto finish = [](Time s, Duration d) { return d >= kForever - s ? kForever : s + d; };
  // Without explicit offers no plan starts before `low`: compositions are
  // only tried from there, and every cluster offers a slot at `low`.
  Time low = r.ready;
  bool offers = cd::any_offers(clusters, allowed);
  if (!offers) {
    low = cd::earliest_any(r, clusters, allowed, r.ready);
    if (low == kNever) return std::nullopt;
  }
  for (std::size_t c : allowed) {
    const ClusterView& v = clusters[c];
    bool more = false;
    std::vector<Time> starts = cd::candidate_starts(v, r.ready, dm, k, &more);
    if (!offers) starts.push_back(low);
    for (Time s : starts) {
      Amount n = std::min(cd::usable(v, s, dm, 1.0).nodes, r.nodes);
      if (n > 0) slots.push_back(Slot{finish(s, dm), n, c, s, false});
    }
    *truncated = *truncated || more;
    if (v.offers.empty()) {
      auto s = v.free->earliest_fit(r.ready, r.runtime, r.nodes);
      if (s && s.value() != kNever)
        slots.push_back(Slot{finish(s.value(), r.runtime), r.nodes, c, s.value(), true});
    } else {
      for (const CoallocOffer& o : v.offers)
        if (o.start >= r.ready && o.nodes >= r.nodes && o.end - o.start >= r.runtime)
          slots.push_back(Slot{finish(o.start, r.runtime), r.nodes, c, o.start, true});
    }
  }
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
    return std::tie(a.finish, b.nodes, a.cluster, a.start) <
           std::tie(b.finish, a.nodes, b.cluster, b.start);
  });
  std::vector<std::size_t> joined;
  for (const Slot& x : slots) {
    if (x.whole) {
      const cd::Usable u = cd::usable(clusters[x.cluster], x.start, r.runtime, 1.0);
      CoallocPlan plan;
      plan.start = x.start;
      plan.duration = r.runtime;
      plan.parts.push_back(PlanPart{x.cluster, r.nodes, u.fit, u.p_res});
      return plan;
    }
    if (std::find(joined.begin(), joined.end(), x.cluster) == joined.end())
      joined.push_back(x.cluster);
    if (limit < 2 || x.start < low) continue;
    std::vector<PlanPart> offered;
    for (std::size_t c : joined) {
      cd::Usable u = offered_at(clusters[c], x.start, dm);
      if (u.nodes > 0) offered.push_back(PlanPart{c, u.nodes, u.fit, u.p_res});
    }
    std::vector<PlanPart> parts = take_in_order(std::move(offered), r.nodes, limit);
    if (parts.size() >= 2) {
      CoallocPlan plan;
      plan.start = x.start;
      plan.duration = dm;
      plan.parts = std::move(parts);
      return plan;
    }
  }
  return std::nullopt;
}

// The same walk over free profiles without materialising the slots.  All
// part slots last runtime + overhead, so finish order is start order: a
// cluster joins at its first event start, compositions are tried at the
// merged event starts from `low` on, and the whole-job slot (earliest
// single start s1) comes first as soon as s1 + runtime <= S + overhead'd
// duration (it has at least as many nodes as any part slot).
std::optional<CoallocPlan> compose_profiles(const CoallocRequest& r,
                                            const std::vector<ClusterView>& clusters,
                                            const std::vector<std::size_t>& allowed) {
  Duration dm = cd::split_duration(r);
  std::size_t limit = cd::part_limit(r, allowed.size());
  Time low = cd::earliest_any(r, clusters, allowed, r.ready);
  if (low == kNever) return std::nullopt;
  cd::SingleFit single = cd::earliest_single(r, clusters, allowed, r.ready);
  Time single_end = single.start == kNever ? kForever : single.start + r.runtime;
  auto whole = [&]() {
    CoallocPlan plan;
    plan.start = single.start;
    plan.duration = r.runtime;
    plan.parts.push_back(PlanPart{single.cluster, r.nodes, 1.0, 1.0});
    return plan;
  };
  // Join order: first slot's start, then more nodes, then index.
  struct First {
    Time start;
    Amount nodes;
    std::size_t cluster;
  };
  std::vector<First> firsts;
  for (std::size_t c : allowed) {
    auto s = clusters[c].free->earliest_fit(r.ready, dm, 1);
    if (!s || s.value() == kNever) continue;
    firsts.push_back(First{s.value(), std::min(cd::avail(clusters[c], s.value(), dm), r.nodes), c});
  }
  std::sort(firsts.begin(), firsts.end(), [](const First& a, const First& b) {
    return std::tie(a.start, b.nodes, a.cluster) < std::tie(b.start, a.nodes, b.cluster);
  });
  Time s = low;
  while (limit >= 2 && s != kNever && (dm >= kForever - s || s + dm < single_end)) {
    std::vector<PlanPart> offered;
    for (const First& f : firsts) {
      if (f.start > s) break;
      Amount a = cd::avail(clusters[f.cluster], s, dm);
      if (a > 0) offered.push_back(PlanPart{f.cluster, a, 1.0, 1.0});
    }
    std::vector<PlanPart> parts = take_in_order(std::move(offered), r.nodes, limit);
    if (parts.size() >= 2) {
      CoallocPlan plan;
      plan.start = s;
      plan.duration = dm;
      plan.parts = std::move(parts);
      return plan;
    }
    Time next = kNever;
    for (std::size_t c : allowed) {
      auto n = clusters[c].free->next_fit(s, dm, 1);
      if (n) next = std::min(next, n.value());
    }
    s = next;
  }
  if (single.start == kNever) return std::nullopt;
  return whole();
}

}  // namespace

Result<CoallocPlan> plan_coarp(const CoallocRequest& request,
                               const std::vector<ClusterView>& clusters,
                               const CoallocOptions& options) {
  static const char* kWhere = "plan_coarp";
  if (auto e = cd::validate(kWhere, request, clusters, &options)) return *e;
  std::vector<std::size_t> allowed = cd::allowed_indices(request, clusters.size());
  auto on_profiles = [&]() -> Result<CoallocPlan> {
    auto plan = compose_profiles(request, clusters, allowed);
    if (!plan) return cd::deadline_error(kWhere, request, kForever);
    if (plan->end() > request.deadline) return cd::deadline_error(kWhere, request, plan->end());
    return std::move(*plan);
  };
  if (!cd::any_offers(clusters, allowed)) return on_profiles();
  std::size_t k = options.max_offers;
  for (;;) {
    bool truncated = false;
    auto plan = compose(request, clusters, allowed, k, &truncated);
    if (plan) {
      if (plan->end() > request.deadline)
        return cd::deadline_error(kWhere, request, plan->end());
      return std::move(*plan);
    }
    if (!truncated) break;
    k *= 4;
  }
  // The offers ran out without a plan: the paper's job would wait in the
  // global queue and ask again.  A probe answers at most kPlanProbeOffers
  // slots, often all early and few nodes each, so a job that fits later
  // (even on one cluster) found nothing and was refused.  The walk goes on
  // over the availability the offers came from (the free profiles).
  return on_profiles();
}

}  // namespace flexco
