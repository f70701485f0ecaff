// SPDX-License-Identifier: GPL-2.0-or-later
// What-if probes -> scored offers: the core half of POST /v1/probe.
//
// A moldable request (node counts, duration or an Amdahl speed-up model,
// earliest start, latest end) is answered with offers {start, end, nodes,
// fit, p_res, valid_until, verdict} for one partition of a snapshot:
//
//   1. the partition's published availability (share applied) is built over
//      a horizon reaching latest_end (default: 7 days, longer if the request
//      needs it);
//   2. candidate slots (start, nodes) are enumerated by the distribution
//      (thesis ch. 9.3): "event" (default) = the
//      profile's change points where the request fits (earliest_fit, then
//      next_fit); "even" = Def 31, K = max_offers starts per node count
//      evenly spaced over [earliest_start, maxT - dur(q)]; "corner" = Def 30,
//      the four corners (earliest/latest start x fewest/most nodes).  Only
//      slots whose nodes are free in the published availability for the
//      whole duration are kept;
//   3. the slots are ordered by start, then node count (ascending), and cut
//      to max_offers;
//   4. each kept slot gets the thesis' what-if fitness (eq. 9.6-9.8, via
//      whatif_fitness over the partition's running jobs, reservations and
//      pending queue), p_res by the static method (1 - e^(-bat/h), §9.4.1)
//      or the history method (eq. 9.1-9.4, from the partition's recorded
//      idle nodes; see idle_history.hpp) and valid_until = snapshot time +
//      valid_for.
//   5. on request ("will_run": true) the caller adds Slurm's own will_run
//      answer (the plugin asks slurmctld; this module only reports it).
//
// Details, the JSON schema and the decisions are in doc/probe.md.  No
// logging, no globals; only std::bad_alloc can escape.

#ifndef FLEXCO_CORE_PROBE_HPP
#define FLEXCO_CORE_PROBE_HPP

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/idle_history.hpp"
#include "core/local_sched.hpp"
#include "core/profile.hpp"
#include "core/cluster_snapshot.h"

namespace flexco {

// Caps (doc/probe.md).
inline constexpr int kProbeMaxOffers = 64;          // max_offers in [1, 64]
inline constexpr std::size_t kProbeMaxLevels = 64;  // node counts after expansion
// A {"min","max"} range wider than this is sampled geometrically.
inline constexpr std::size_t kProbeRangeLevels = 8;
inline constexpr Duration kProbeDefaultHorizon = Duration{7} * 86400;

enum class Distribution { kEvent, kEven, kCorner };
// "event", "even", "corner".
const char* distribution_name(Distribution d) noexcept;

enum class PResMethod { kStatic, kHistory };
// "static", "history".
const char* p_res_method_name(PResMethod m) noexcept;

// Amdahl (thesis eq. 4.1, 4.3): dur(n) = base_duration * S(base_nodes)/S(n),
// S(n) = 1 / (s + (1 - s)/n), rounded to the nearest second, at least 1.
struct AmdahlModel {
  double serial_fraction = 0.0;  // s in [0, 1]
  Amount base_nodes = 1;         // >= 1
  Duration base_duration = 1;    // >= 1
};

struct ProbeRequest {
  // Node counts to consider, ascending and distinct, each >= 1.
  std::vector<Amount> nodes;
  Duration duration = 0;              // > 0 unless amdahl is set
  std::optional<AmdahlModel> amdahl;  // set: the duration depends on nodes
  std::optional<Time> earliest_start;  // default: the snapshot time
  std::optional<Time> latest_end;      // offers end at or before it
  int max_offers = 8;
  Distribution distribution = Distribution::kEvent;
  PResMethod p_res_method = PResMethod::kStatic;
  std::string partition;  // empty: the default partition
  bool will_run = false;  // also ask Slurm's will_run (the caller does it)

  // The duration for n nodes.
  Duration duration_for(Amount n) const;
};

struct ProbeError {
  int status;        // 400, 404, 500; 0 with ProbePolicy::cached_only
  std::string code;  // "bad_request", "not_implemented", "unknown_partition",
                     // "invalid_snapshot", "bad_parameter", "internal";
                     // "not_cached" (status 0)
  std::string message;
};

// Strict parse of a JSON body (doc/probe.md).  Unknown members, wrong
// types and out-of-range values are 400 errors naming the member.
std::variant<ProbeRequest, ProbeError> parse_probe_request(std::string_view body);

// Site policy for the scoring.
struct ProbePolicy {
  FitnessOptions fitness{};               // weights 0.1/0.9, head bound 0
  double p_res_h = 11386.0;               // static p_res constant h (s)
  std::size_t max_queue = 500;            // pending jobs given to the planner
  Duration default_horizon = kProbeDefaultHorizon;
  // Answer only what the snapshot's plan cache already holds: a probe that
  // would plan (the partition's queue, or a slot not remembered) returns
  // ProbeError{0, "not_cached"} instead, having planned nothing.  Every
  // other answer is the one a probe without it gives.  The plugin answers
  // such probes in the request's thread and hands the rest to its compute
  // threads (doc/probe.md, "Where a probe is computed").
  bool cached_only = false;
};

struct Offer {
  Time start = 0;
  Time end = 0;
  Amount nodes = 0;
  double fit = 0.0;
  double p_res = 0.0;
  Time valid_until = 0;
  FitVerdict verdict = FitVerdict::kPlaced;
  Duration head_delay = 0;
  // The method p_res came from: the requested one, or kStatic when the
  // history method has no record covering the slot's time of day.
  PResMethod p_res_source = PResMethod::kStatic;
};

// Slurm's own answer for the same request (job_allocate in will_run mode,
// i.e. `sbatch --test-only`), obtained by the plugin.
struct WillRunAnswer {
  bool ok = false;
  Time start = 0;             // when Slurm says the job would start
  std::string node_list;      // where
  std::uint32_t job_id = 0;   // the job id Slurm used up for the test
  Amount nodes = 0;           // node count asked
  std::string error;          // Slurm's error when !ok
};

struct ProbeResult {
  std::string cluster;
  std::string partition;
  Time snapshot_time = 0;
  Time bf_last_cycle = 0;
  bool bf_active = false;
  int share_percent = 100;
  Time horizon_end = 0;
  Distribution distribution = Distribution::kEvent;
  std::size_t queue_considered = 0;  // pending jobs given to the planner
  bool queue_truncated = false;      // more were pending than max_queue
  std::size_t candidates = 0;        // slots found before the max_offers cut
  // The thesis' P^JOB slot (§9.4.2): where a batch job of the smallest node
  // count (for its duration) would start if queued now behind every pending
  // job (placeholder_job_start, conservative); kNever if it never could.
  Amount job_nodes = 0;
  Time job_start = kNever;
  std::vector<Offer> offers;         // by start, then nodes
  PResMethod p_res_method = PResMethod::kStatic;  // as requested
  // The history used by the history method (records, first, last); 0/-1/-1
  // when there was none.
  std::uint64_t history_records = 0;
  Time history_first = -1;
  Time history_last = -1;
  std::optional<WillRunAnswer> will_run;  // set by the caller on request
};

// static p_res (thesis §9.4.1): 1 - exp(-max(0, start - now) / h).
double p_res_static(Time start, Time now, double h) noexcept;

// histories: idle-node histories by partition (nullptr or none for the
// probed partition: the history method falls back to static for every
// offer, and says so per offer).
std::variant<ProbeResult, ProbeError> probe(const flexco_snapshot_t& snap,
                                            const ProbeRequest& request, int share_percent,
                                            Duration valid_for, const ProbePolicy& policy = {},
                                            const IdleHistories* histories = nullptr);

// Compact JSON of a result (doc/probe.md).
std::string probe_result_to_json(const ProbeResult& r);

// A partition's local plan input on one snapshot and its reference plan
// (what probe() caches in flexco_plan_cache).
struct PartitionPlan {
  FitnessReference fitness;  // input(): running jobs, reservations, queue
  Amount capacity = 0;       // available nodes of the partition
  bool queue_truncated = false;
  std::size_t queue_considered = 0;
};

}  // namespace flexco

// A snapshot's cache of what-if reference plans (snapshot.h, plan_cache;
// made and freed with flexco_plan_cache_create/_free of capi_probe.h).
// probe() plans a partition's queue without any slot once per snapshot and
// keeps it here, with the slots it has planned since (FitnessReference), so
// that the probes sharing a snapshot plan the queue once and each distinct
// slot once; the answers are those of a probe without the cache.  Bounded:
// at most kPlanCacheEntries plans (one per partition, queue bound and
// backfill policy), each with at most FitnessReference::kMemoSlots slots;
// freed with the snapshot.  Any number of threads may probe one snapshot at
// once: the mutex guards the entries, each plan guards its own slots.
struct flexco_plan_cache {
  static constexpr std::size_t kPlanCacheEntries = 16;
  struct Entry {
    std::string partition;
    std::size_t max_queue = 0;
    flexco::Backfill policy = flexco::Backfill::kConservative;
    std::shared_ptr<const flexco::PartitionPlan> plan;
  };
  std::mutex mu;
  std::vector<Entry> entries;  // mu
};

#endif  // FLEXCO_CORE_PROBE_HPP
