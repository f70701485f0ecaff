// SPDX-License-Identifier: GPL-2.0-or-later
// The offers of the offer-based planners (COARP), from the production probe
// (core/probe.cpp).  COARP (Algorithms 1 and 2 of the paper) plans on the
// slots each resource provider offers for the job; here a provider is a
// cluster and its offer is the answer of the plugin's POST /v1/probe:
//
//   * plan_probe_query: the probe body for one planner request.  flexcod
//     sends it to every cluster's plugin; flexco-sim parses the same text
//     with parse_probe_request and answers it with probe() itself;
//   * offers_from_probe_answer / offers_from_probe_result: the answer as
//     ClusterView::offers (flexcod reads the plugin's JSON, flexco-sim the
//     ProbeResult; the JSON carries doubles with 17 digits, so both give
//     the same values);
//   * probe_offers_from_profile: flexco-sim's provider.  Its clusters are
//     LocalSchedulers whose plans are free-node profiles; the profile is
//     written as a snapshot (one partition, one CPU per node; the busy
//     nodes as reservations, node k busy while fewer than capacity - k are
//     free) and probed like a real cluster.  With no pending queue in that
//     snapshot the offers' fitness is the what-if fitness of an empty
//     queue; COARP does not read it.
//
// No logging, no globals; only std::bad_alloc escapes.

#ifndef FLEXCO_CORE_OFFER_PROBE_HPP
#define FLEXCO_CORE_OFFER_PROBE_HPP

#include <string>
#include <string_view>
#include <vector>

#include "core/coalloc.hpp"
#include "core/probe.hpp"
#include "core/profile.hpp"

namespace flexco {

// Offers asked per cluster and request.
inline constexpr int kPlanProbeOffers = 16;

// Compact JSON body of POST /v1/probe for a planner request: node counts
// 1..min(request.nodes, published) (the probe samples a wide range), the
// split duration (runtime + overhead: the offers may become parts),
// earliest_start = earliest, latest_end = the deadline if any,
// max_offers = kPlanProbeOffers, the partition if not empty.
std::string plan_probe_query(const CoallocRequest& request, Amount published, Time earliest,
                             const std::string& partition);

// The "offers" of a probe answer (JSON object) as planner offers; entries
// without start < end and nodes >= 1 are dropped.  Error: not a JSON object
// with an "offers" array (kInvalidArgument, "offers_from_probe_answer: ...").
Result<std::vector<CoallocOffer>> offers_from_probe_answer(std::string_view json);
std::vector<CoallocOffer> offers_from_probe_result(const ProbeResult& result);

// The answer a cluster with `capacity` nodes whose free nodes are `free`
// (from `now` on) gives to the probe body `query`: probe() on the snapshot
// described above.  Errors: the probe's (kInvalidArgument, its message).
Result<ProbeResult> probe_profile(const Profile& free, Amount capacity, Time now,
                                  std::string_view query, const std::string& cluster = "sim");
// Its offers for a planner request (query: plan_probe_query, earliest =
// max(request.ready, now)).
Result<std::vector<CoallocOffer>> probe_offers_from_profile(const Profile& free,
                                                            Amount capacity, Time now,
                                                            const CoallocRequest& request,
                                                            const std::string& cluster = "sim");

}  // namespace flexco

#endif  // FLEXCO_CORE_OFFER_PROBE_HPP
