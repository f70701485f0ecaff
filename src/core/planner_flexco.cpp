// SPDX-License-Identifier: GPL-2.0-or-later
// FlexCo Algorithm 1 (Netto & Buyya): the initial scheduling of a
// co-allocation request.  Our reading (doc/coalloc.md):
//
//   * the candidate common starts cs are `ready` and the clusters' change
//     points, in increasing order (the paper walks the sorted time slots);
//   * at cs every cluster offers the most nodes free over the whole window,
//     [cs, cs + runtime) for a single site, [cs, cs + runtime + overhead)
//     for a part of a split;
//   * the walk stops at the first cs where one cluster alone fits; before
//     that, the first cs where the clusters together fit is remembered
//     (line 20's "bestT != null" must read "== null": otherwise nothing is
//     ever remembered);
//   * line 24: the single site wins unless the split ends strictly earlier
//     (single start + runtime <= split start + runtime + overhead);
//   * lines 24-29: a split takes as many nodes as possible from the next-fit
//     cluster, then from the others, most available first; the next-fit
//     pointer moves on by one cluster per request.
//
// Searching only for the split that beats the single site keeps the cost at
// O(C log P) per candidate start for C clusters and P change points.

#include <algorithm>

#include "core/coalloc.hpp"
#include "core/coalloc_detail.hpp"

namespace flexco {

namespace cd = coalloc_detail;

std::optional<CoallocPlan> cd::flexco_best(const CoallocRequest& request,
                                           const std::vector<ClusterView>& clusters,
                                           const std::vector<std::size_t>& order, Time from) {
  SingleFit single = earliest_single(request, clusters, order, from);
  std::size_t limit = part_limit(request, order.size());
  Duration dm = split_duration(request);
  // A split starting at s ends at s + dm; it must end strictly before the
  // single site's end.
  Time before = kForever;
  if (single.start != kNever) {
    Time single_end = single.start + request.runtime;  // both < 2^62
    before = dm >= single_end ? 0 : single_end - dm;
  }
  Time s = kNever;
  if (limit >= 2 && before > from)
    s = earliest_split(clusters, order, request.nodes, dm, limit, from, before);
  if (s != kNever) {
    std::vector<Amount> a(clusters.size(), 0);
    for (std::size_t c : order) a[c] = avail(clusters[c], s, dm);
    std::vector<PlanPart> parts = distribute(order, a, request.nodes, limit);
    if (!parts.empty()) {
      CoallocPlan plan;
      plan.start = s;
      plan.duration = parts.size() > 1 ? dm : request.runtime;
      plan.parts = std::move(parts);
      return plan;
    }
  }
  if (single.start == kNever) return std::nullopt;
  CoallocPlan plan;
  plan.start = single.start;
  plan.duration = request.runtime;
  plan.parts.push_back(PlanPart{single.cluster, request.nodes, 1.0, 1.0});
  return plan;
}

Result<CoallocPlan> plan_flexco(const CoallocRequest& request,
                                const std::vector<ClusterView>& clusters,
                                PlannerState& state) {
  static const char* kWhere = "plan_flexco";
  if (auto e = cd::validate(kWhere, request, clusters, nullptr)) return *e;
  std::vector<std::size_t> order =
      cd::rotation(cd::allowed_indices(request, clusters.size()), state.next_first,
                   clusters.size());
  auto plan = cd::flexco_best(request, clusters, order, request.ready);
  if (!plan) return cd::deadline_error(kWhere, request, kForever);
  if (plan->end() > request.deadline) return cd::deadline_error(kWhere, request, plan->end());
  state.next_first = (state.next_first % clusters.size() + 1) % clusters.size();
  return std::move(*plan);
}

}  // namespace flexco
