// SPDX-License-Identifier: GPL-2.0-or-later
// Internal helpers shared by the co-allocation planners (planner_*.cpp,
// reschedule.cpp).  Not part of the interface: use core/coalloc.hpp.

#ifndef FLEXCO_CORE_COALLOC_DETAIL_HPP
#define FLEXCO_CORE_COALLOC_DETAIL_HPP

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/coalloc.hpp"

namespace flexco::coalloc_detail {

// "<where>: <what>".
Error make_error(Errc code, const char* where, const std::string& what);
// A time for messages: the number, or "forever" for kForever.
std::string time_str(Time t);

// Checks the request and the views (and the options when given); the
// message names `where`, the field and its value.
std::optional<Error> validate(const char* where, const CoallocRequest& request,
                              const std::vector<ClusterView>& clusters,
                              const CoallocOptions* options);
std::optional<Error> validate_plan(const char* where, const char* what,
                                   const CoallocPlan& plan,
                                   const CoallocRequest& request,
                                   std::size_t cluster_count);

// The allowed clusters, in index order.
std::vector<std::size_t> allowed_indices(const CoallocRequest& request,
                                         std::size_t cluster_count);
// The allowed clusters in rotation order starting at `first` (mod n).
std::vector<std::size_t> rotation(const std::vector<std::size_t>& allowed,
                                  std::size_t first, std::size_t cluster_count);
// The most parts a plan may have.
std::size_t part_limit(const CoallocRequest& request, std::size_t allowed);
// runtime + overhead, saturating at kForever.
Duration split_duration(const CoallocRequest& request);
// Minimum free nodes of cluster c over [s, s + d), clipped at 0.
Amount avail(const ClusterView& c, Time s, Duration d);

// The earliest single-cluster start >= from (duration request.runtime) and
// the cluster, taking the first of `order` on ties; kNever if none.
struct SingleFit {
  Time start = kNever;
  std::size_t cluster = 0;
};
SingleFit earliest_single(const CoallocRequest& request,
                          const std::vector<ClusterView>& clusters,
                          const std::vector<std::size_t>& order, Time from);

// The earliest s in [from, before) at which the `limit` largest minimum
// free counts (clipped at 0) of the `order` clusters over [s, s + d) add up
// to n; kNever if there is none.  After a failed start s, a cluster's best
// window minimum over the starts in (s, t] rises only at t =
// earliest_fit(s + 1, d, best + 1); merging these rises in time order
// until the `limit` largest bests reach n gives the next start worth
// testing, so runs of starts where some cluster gains a node but the sum
// stays short are skipped: O(C log P) per rise.
Time earliest_split(const std::vector<ClusterView>& clusters,
                    const std::vector<std::size_t>& order, Amount n,
                    Duration d, std::size_t limit, Time from, Time before);

// Distributes n nodes over clusters with the given availability: the
// first entry of `order` with availability takes as many as it can, the
// rest go to the others in decreasing availability (ties: `order`).  If
// that needs more than `limit` parts, decreasing availability from the
// start.  Empty if the limit cannot be met.
std::vector<PlanPart> distribute(const std::vector<std::size_t>& order,
                                 const std::vector<Amount>& avail_by_cluster,
                                 Amount n, std::size_t limit);

// kNoFit for a request that cannot end by its deadline; `best_end` is the
// earliest end found (kForever: none).
Error deadline_error(const char* where, const CoallocRequest& request,
                     Time best_end);

// FlexCo Algorithm 1 over the `order` clusters (the first is the next-fit
// cluster) from `from`, ignoring the deadline; nullopt if nothing ever fits.
std::optional<CoallocPlan> flexco_best(const CoallocRequest& request,
                                       const std::vector<ClusterView>& clusters,
                                       const std::vector<std::size_t>& order, Time from);

// The earliest start of any plan (one cluster, or a split of at most
// part_limit clusters with the overhead) on the allowed clusters' free
// profiles, from `from`; kNever if none.  A lower bound for the offer-based
// planners, so they need not look at earlier candidates.
Time earliest_any(const CoallocRequest& request, const std::vector<ClusterView>& clusters,
                  const std::vector<std::size_t>& allowed, Time from);
// True when some allowed cluster brings explicit offers.
bool any_offers(const std::vector<ClusterView>& clusters,
                const std::vector<std::size_t>& allowed);

// What a cluster can give a part over [s, s + d): with explicit offers the
// largest offer covering the window (its fit and p_res), else the
// profile's minimum free with fit 1 and the given p_res.
struct Usable {
  Amount nodes = 0;
  double fit = 1.0;
  double p_res = 1.0;
};
Usable usable(const ClusterView& c, Time s, Duration d, double derived_p_res);

// Candidate starts >= from of a cluster for duration d: its explicit
// offers' starts, or else the first k event starts (earliest_fit and
// next_fit for one node).  *truncated tells whether more event starts exist.
std::vector<Time> candidate_starts(const ClusterView& c, Time from, Duration d,
                                   std::size_t k, bool* truncated);

// Static p_res of the thesis (1 - e^(-bat/h)), bat = s - now clipped at 0.
double static_p_res(Time s, Time now, double h);

}  // namespace flexco::coalloc_detail

#endif  // FLEXCO_CORE_COALLOC_DETAIL_HPP
