// SPDX-License-Identifier: GPL-2.0-or-later
// Availability of one partition: free nodes and CPUs over [when, horizon_end)
// built from a slurmctld snapshot (core/cluster_snapshot.h).
//
// A node of the partition is busy at t if t lies in any of:
//   - a running job on it:        [when, end)   (end = start + limit);
//                                 [when, when + 1) if end <= when (past its
//                                 limit but still holding the node);
//                                 FLEXCO_SNAP_FOREVER = never ends;
//   - a backfill-planned job:     [max(start, when), end);
//   - a reservation on it:        [max(start, when), end);
//   - forever if the node is unavailable (down, drained, future).
// The busy set of a node is the union of those intervals, so a job running
// inside a reservation is not counted twice.  Pending jobs without a plan
// take nothing: their demand is invisible until backfill plans them, which
// is why the answer carries the backfill plan's freshness.  Jobs count on
// every node they hold, whatever partition they were submitted to (two
// partitions sharing nodes see each other's jobs).
//
// Node-exclusive model: a busy node offers none of its CPUs, a free node
// all of them; free CPUs(t) is the sum of `cpus` over the free nodes.
//
// Published share (de Assuncao et al.: a provider may publish less than it
// has): with share s %, published capacity P = floor(total * s / 100) and
// published free(t) = max(0, free(t) - (total - P)); the remaining
// total - P units are held back for local work.  Nodes and CPUs are held
// back independently by the same rule.  Rationale and examples are in
// doc/availability.md.
//
// The core library never logs and holds no global state.

#ifndef FLEXCO_CORE_AVAILABILITY_HPP
#define FLEXCO_CORE_AVAILABILITY_HPP

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/profile.hpp"
#include "core/cluster_snapshot.h"

namespace flexco {

// Longest horizon a query may ask for: 366 days.
inline constexpr Duration kMaxHorizon = Duration{366} * 86400;

struct AvailabilityQuery {
  std::string partition;    // empty = the default partition
  Duration horizon = 0;     // seconds, in [1, kMaxHorizon]
  int share_percent = 100;  // published share, in [1, 100]
};

// One rectangle of the published step function: free_nodes and free_cpus
// over [start, end).
struct Step {
  Time start;
  Time end;
  Amount free_nodes;
  Amount free_cpus;
};

struct Availability {
  std::string cluster;    // snapshot's cluster name ("" if unknown)
  std::string partition;  // the partition answered (the default's name if
                          // the query named none)
  bool partition_up;      // false: the partition schedules nothing, and
                          // every step publishes 0 free
  Time when;              // snapshot time
  Time horizon_end;       // when + horizon
  Time bf_last_cycle;     // start of the last backfill cycle (Slurm stamps it as it begins), 0 if none
  bool bf_active;         // a backfill cycle was running: plan partial
  int share_percent;

  Amount nodes_total;      // nodes of the partition
  Amount nodes_available;  // of which available (up, not drained)
  Amount nodes_published;  // floor(nodes_total * share / 100)
  Amount cpus_total;       // CPUs of the partition's nodes
  Amount cpus_available;   // CPUs of its available nodes
  Amount cpus_published;   // floor(cpus_total * share / 100)

  // Published free nodes and CPUs; capacity = *_published, origin = when.
  // Exact over [when, horizon_end); nothing is free from horizon_end on
  // (the answer promises nothing beyond its horizon), so a fit query
  // whose window crosses horizon_end returns kNever.
  Profile nodes;
  Profile cpus;

  // The same function, merged (no two neighbours equal in both values),
  // from `when` to horizon_end: steps.front().start == when,
  // steps.back().end == horizon_end, each end the next start.
  std::vector<Step> steps;
};

enum class AvailabilityErrc {
  kBadParameter = 1,  // "bad_parameter" (HTTP 400): horizon or share invalid
  kUnknownPartition,  // "unknown_partition" (404): no such partition, or no
                      // default partition when none was named
  kInvalidSnapshot,   // "invalid_snapshot" (500): inconsistent snapshot
};

// The stable code: "bad_parameter", "unknown_partition", "invalid_snapshot".
const char* availability_errc_name(AvailabilityErrc code) noexcept;
// 400, 404 or 500.
int availability_http_status(AvailabilityErrc code) noexcept;

struct AvailabilityError {
  AvailabilityErrc code;
  std::string message;  // "build_availability: <what is wrong> (<values>)"
};

// An Availability or an AvailabilityError (see core/result.hpp).
using AvailabilityResult = BasicResult<Availability, AvailabilityError>;

// Builds the availability of one partition.  Reads the snapshot only
// (never modifies or keeps it).  Checks, in this order: the query (400),
// the parts of the snapshot it reads (500), the partition (404).
// O(K log K) time and O(K + N) memory for K = partition nodes plus the
// (job, node) and (reservation, node) pairs on them, N = snapshot nodes.
// Only std::bad_alloc can escape.
AvailabilityResult build_availability(const flexco_snapshot_t& snap,
                                      const AvailabilityQuery& query);

// The published profiles of a step function, as build_availability makes
// them: origin steps.front().start, capacity nodes_capacity (cpus_capacity),
// free = the step's value over each step, and 0 from steps.back().end on.
// Used by build_availability and by readers of the wire format.  Requires
// contiguous steps (each end the next start, start < end, end < kForever,
// first start >= 0) and 0 <= free <= capacity <= kMaxAmount; otherwise
// Errc::kInvalidArgument.
struct PublishedProfiles {
  Profile nodes;
  Profile cpus;
};
Result<PublishedProfiles> profiles_from_steps(const std::vector<Step>& steps,
                                              Amount nodes_capacity,
                                              Amount cpus_capacity);

}  // namespace flexco

#endif  // FLEXCO_CORE_AVAILABILITY_HPP
