// SPDX-License-Identifier: GPL-2.0-or-later
// planning.hpp - flexcod's planning step as plain functions: what it asks
// the clusters before planning and how it turns their answers and a
// co-allocation's parameters into the core planner's input.  Engine::gather
// and Engine::plan (placement.cpp) use exactly these, so a test can drive
// the daemon's planning path from recorded answers without a grid
// (testsuite/unit/check_plan_equiv.cpp).

#ifndef FLEXCOD_PLANNING_HPP
#define FLEXCOD_PLANNING_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "core/availability.hpp"
#include "core/coalloc.hpp"

namespace flexcod {

// Each reservation is this much longer than its part job's time limit, so a
// part job that Slurm starts a little after the reservation's start (the
// scheduler's next pass) still fits before the reservation ends; Slurm never
// starts a job whose time limit would run past its reservation's end.
inline constexpr std::int64_t kStartSlack = 60;

// A co-allocation's planning parameters (POST /v1/coallocations).
struct PlanAsk {
  std::int64_t nodes = 0;
  std::int64_t duration = 0;  // the job's time limit, seconds
  std::int64_t ready = 0;     // earliest start (0: now)
  std::int64_t deadline = 0;  // 0: none
  double overhead = 0.0;
  int max_parts = 0;
};

// The planner's request at `now`: runtime = duration + kStartSlack, ready =
// max(ready, now).
flexco::CoallocRequest plan_request(const PlanAsk& ask, std::int64_t now);
flexco::CoallocOptions plan_options(std::int64_t now);
// True for the policies that plan on the clusters' probe offers (coarp,
// cores): gather probes every cluster before planning.
bool policy_probes(const std::string& policy);
// The body of the probe sent to a cluster whose profile publishes
// `published` nodes (core/offer_probe.hpp, plan_probe_query), in the
// cluster's clock: flexcod's times (now, ready, deadline) plus
// `clock_shift` (its clock less flexcod's).
std::string probe_body(const PlanAsk& ask, std::int64_t published, std::int64_t now,
                       const std::string& partition, std::int64_t clock_shift = 0);
// The planner's views of the clusters that answered: name, published nodes,
// free profile and offers (empty: none or the probe failed).  The views
// point into `avail`.
std::vector<flexco::ClusterView> plan_views(
    const std::vector<std::string>& names, const std::vector<flexco::Availability>& avail,
    const std::vector<std::vector<flexco::CoallocOffer>>& offers);

// Rescheduling after a job ended early (doc/flexcod.md, "Trigger"): has
// the cluster's own queue had the freed nodes, on a profile or probe whose
// backfill state is (bf_last_cycle, bf_active), for an end reported at
// `ended` (the event's time)?  Only once a backfill cycle that began after
// the end is over.  Slurm stamps bf_when_last_cycle (the profile's
// backfill.last_cycle) at the *start* of a cycle, which first wipes
// backfill's plan and then starts or plans the pending jobs one by one: a
// later stamp alone also holds while that cycle runs.  While a cycle is
// running (bf_active) the plan the profile shows may lack the pending jobs
// that take the gap, so that is never enough, whichever cycle it is.
bool local_queue_went_first(std::int64_t bf_last_cycle, bool bf_active, std::int64_t ended);
inline bool local_queue_went_first(const flexco::Availability& a, std::int64_t ended) {
  return local_queue_went_first(a.bf_last_cycle, a.bf_active, ended);
}

}  // namespace flexcod

#endif  // FLEXCOD_PLANNING_HPP
