// COARP (offers composition; Algorithms 1 and 2 of the paper), as read in
// doc/coalloc.md:
//
//   * offer generation (Alg. 1): every cluster offers slots for the job:
//     its explicit offers, or the first options.max_offers event starts of
//     its free profile for a part (duration runtime + overhead) with the
//     nodes free over that window, plus the earliest slot taking the whole
//     job (duration runtime);
//   * composition (Alg. 2): all slots in ascending order of finish time
//     (start + duration; ties: more nodes, then lower cluster index); a
//     whole-job slot ends the walk on its cluster; otherwise each slot
//     adds its cluster to the composition, and the composition is taken at
//     the slot's start as soon as its clusters, in the order they joined,
//     can hold every node there for the whole (split) duration.  Our job
//     is one parallel program, so unlike the paper the parts share one
//     start; a cluster that joined with an earlier slot gives what it has
//     free at the later start;
//   * if the slots run out (the paper's global waiting queue) the walk is
//     repeated with four times as many slots per cluster, until no cluster
//     has more.

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

std::optional<CoallocPlan> compose(const CoallocRequest& r,
                                   const std::vector<ClusterView>& clusters,
                                   const std::vector<std::size_t>& allowed, std::size_t k,
                                   bool* truncated) {
  Duration dm = cd::split_duration(r);
  std::size_t limit = cd::part_limit(r, allowed.size());
  *truncated = false;
  std::vector<Slot> slots;
  auto finish = [](Time s, Duration d) { return d >= kForever - s ? kForever : s + d; };
  for (std::size_t c : allowed) {
    const ClusterView& v = clusters[c];
    bool more = false;
    for (Time s : cd::candidate_starts(v, r.ready, dm, k, &more)) {
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
    if (limit < 2) continue;
    std::vector<PlanPart> parts;
    Amount left = r.nodes;
    for (std::size_t c : joined) {
      if (left == 0 || parts.size() == limit) break;
      cd::Usable u = cd::usable(clusters[c], x.start, dm, 1.0);
      Amount take = std::min(left, u.nodes);
      if (take <= 0) continue;
      parts.push_back(PlanPart{c, take, u.fit, u.p_res});
      left -= take;
    }
    if (left == 0 && parts.size() >= 2) {
      CoallocPlan plan;
      plan.start = x.start;
      plan.duration = dm;
      plan.parts = std::move(parts);
      return plan;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<CoallocPlan> plan_coarp(const CoallocRequest& request,
                               const std::vector<ClusterView>& clusters,
                               const CoallocOptions& options) {
  static const char* kWhere = "plan_coarp";
  if (auto e = cd::validate(kWhere, request, clusters, &options)) return *e;
  std::vector<std::size_t> allowed = cd::allowed_indices(request, clusters.size());
  std::size_t k = options.max_offers;
  for (;;) {
    bool truncated = false;
    auto plan = compose(request, clusters, allowed, k, &truncated);
    if (plan) {
      if (plan->end() > request.deadline)
        return cd::deadline_error(kWhere, request, plan->end());
      return std::move(*plan);
    }
    if (!truncated) return cd::deadline_error(kWhere, request, kForever);
    k *= 4;
  }
}

}  // namespace flexco
