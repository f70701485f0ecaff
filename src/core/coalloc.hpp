// SPDX-License-Identifier: GPL-2.0-or-later
// Co-allocation planners and the rescheduling decision: where and when one
// parallel job runs across several clusters.  Written once, used by the
// daemon (flexcod) and the simulator (flexco-sim).
//
//   plan_coalloc(policy, request, clusters, state)  one new metajob
//   reschedule_coalloc(request, plan, clusters, now, options)
//                                                   Shift / Shift+Remap
//   reschedule_pass(profiles, jobs, now, options)   FlexCo Algorithm 2's
//                                                   pass over metajobs
//
// Policies (doc/coalloc.md gives each as implemented, how we read the
// papers where they are ambiguous, and the cost):
//   flexco  FlexCo Algorithm 1 (Netto & Buyya): earliest completion; one
//           cluster when that is at least as early, else a split taking as
//           many nodes as possible per cluster, the first cluster rotating
//           across requests (next fit); the overhead only when split.
//   coarp   COARP (offers composition): per-cluster offers, composed in
//           ascending order of finish time.
//   hpcm    HPCM: round robin, capability-random and cluster-minimised
//           schemes, the one with the highest deadline-guarantee
//           probability P(S,d) of an M/M/c model wins.
//   cores   CORES (Roeblitz, ch. 9 and 11): offers scored by end time,
//           fitness and reservation success probability; the parts are
//           returned in smallest-p_res-first allocation order.
//   cores-seq  CORES as the thesis runs it: the same candidates and
//           objective, but only candidates whose parts pass the GRS
//           admission threshold (fit or p_res >= 0.85, §9.6.3); meant to be
//           allocated with cores_allocate (Algorithm 2, sequential,
//           smallest p_res first, alternative search on a denial).
//
// Plans are pure functions of their inputs plus the small explicit
// PlannerState (rotation index, RNG, caches).  Nothing here logs, exits or
// keeps global state; errors are values (flexco::Error of core/profile.hpp)
// whose message names the function, the field and the values.

#ifndef FLEXCO_CORE_COALLOC_HPP
#define FLEXCO_CORE_COALLOC_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"

namespace flexco {

// ---------------------------------------------------------------------------
// Policies

enum class Policy { kFlexCo, kCoarp, kHpcm, kCores, kCoresSeq };

// "flexco", "coarp", "hpcm", "cores", "cores-seq".
const char* policy_name(Policy policy) noexcept;
// The inverse of policy_name (exact, lower case); an unknown name is
// Errc::kInvalidArgument listing the valid ones.
Result<Policy> parse_policy(const std::string& name);

// ---------------------------------------------------------------------------
// Inputs

// A probed or derived candidate slot on one cluster (thesis ch. 9; the
// plugin's POST /v1/probe answers with these).
struct CoallocOffer {
  Time start = 0;
  Time end = 0;        // start < end
  Amount nodes = 0;    // >= 1, free over all of [start, end)
  double fit = 1.0;    // [0, 1], provider preference (what-if fitness)
  double p_res = 1.0;  // [0, 1], reservation success probability
};

struct ClusterView {
  std::string name;             // for messages and plans
  Amount capacity = 0;          // nodes, >= 0
  // Free nodes over time from now.  For rescheduling: with the metajob's
  // own reservations already removed.  Required (non-null) by every policy.
  const Profile* free = nullptr;

  // HPCM's M/M/c model of the cluster (c = capacity).  Rates per second:
  // arrival_rate = lambda (jobs/s), service_rate = mu (jobs/s per node).
  // Both 0: the cluster is treated as idle (rho = 0, P = 1).
  double arrival_rate = 0.0;
  double service_rate = 0.0;
  // Relative node speed for HPCM's capability-random policy, > 0.
  double speed = 1.0;

  // COARP and CORES: the cluster's offers.  Empty: derived from `free`
  // (event distribution, fit = 1, static p_res; doc/coalloc.md).
  std::vector<CoallocOffer> offers;
};

struct CoallocRequest {
  Amount nodes = 0;        // total nodes, >= 1
  Duration runtime = 0;    // requested wall time, >= 1
  Time ready = 0;          // earliest start, >= 0
  Time deadline = kForever;  // latest end; kForever = none
  // Multi-site overhead as a fraction of runtime, in [0, 10]; added to the
  // duration (rounded up to whole seconds) only when split over > 1 cluster.
  double overhead = 0.0;
  std::size_t max_parts = 0;  // 0 = no limit, else the most clusters used
  // Empty: every cluster allowed; else one entry per cluster.
  std::vector<bool> allowed;
};

// ceil(overhead * runtime), saturating; the duration of a split plan is
// runtime + coalloc_overhead(request).
Duration coalloc_overhead(const CoallocRequest& request) noexcept;

// ---------------------------------------------------------------------------
// Plans

struct PlanPart {
  std::size_t cluster = 0;  // index into the ClusterView vector
  Amount nodes = 0;         // >= 1
  double fit = 1.0;         // cores/coarp: the offer's; else 1
  double p_res = 1.0;       // cores/coarp: the offer's; else 1
};

struct CoallocPlan {
  Time start = 0;
  Duration duration = 0;  // runtime, + overhead if parts.size() > 1
  // At most one part per cluster, every part >= 1 node, nodes summing to
  // the request's.  Order: flexco: the next-fit cluster, then the others
  // by decreasing free nodes; coarp: as the clusters joined the
  // composition; hpcm: the scheme's fill order; cores: smallest p_res
  // first (the allocation order).
  std::vector<PlanPart> parts;
  // hpcm: P(S, d) of the chosen scheme; cores: the objective value (lower
  // is better); flexco/coarp: 0.
  double score = 0.0;

  Time end() const noexcept {
    return duration >= kForever - start ? kForever : start + duration;
  }
  bool split() const noexcept { return parts.size() > 1; }
};

// ---------------------------------------------------------------------------
// Planner state and options

struct CoallocOptions {
  // CORES objective (minimised): w_end * normalised end
  //   - w_fit * mean fit - w_pres * product of p_res.  Each >= 0.
  double cores_w_end = 1.0;
  double cores_w_fit = 1.0;
  double cores_w_pres = 1.0;
  // Static p_res = 1 - exp(-(start - now)/h) for derived offers (thesis
  // h = 11386 s).  > 0.
  double p_res_h = 11386.0;
  // Derived offers per cluster (COARP/CORES), >= 1.
  std::size_t max_offers = 16;
  // "now" for derived p_res and HPCM's relative deadline; -1: request.ready.
  Time now = -1;
  // cores-seq: the GRS admission filter of the thesis' experiments
  // (§9.6.3, "threshold for filtering reserve messages = 0.85"): a
  // cluster's offer is used for a part only when its property is at least
  // cores_threshold.  In [0, 1]; 0 admits everything.
  enum class CoresProperty { kFit, kPRes };
  double cores_threshold = 0.85;
  CoresProperty cores_threshold_on = CoresProperty::kFit;
};

// The small state a policy carries across requests.  One per planner
// instance; a default-constructed state is a valid start.
struct PlannerState {
  std::size_t next_first = 0;        // flexco next fit / hpcm round robin
  std::uint64_t rng = 0x2545f4914f6cdd1dULL;  // hpcm capability-random
                                               // (xorshift64*, never 0)
};

// ---------------------------------------------------------------------------
// Planning

// Plans one metajob with the given policy.  Errors:
//   kInvalidArgument  malformed request or cluster view (named field/value);
//   kNoFit            no plan ends by the deadline (or ever) on the allowed
//                     clusters; the message gives the earliest end found.
// On error the state is unchanged.
Result<CoallocPlan> plan_coalloc(Policy policy, const CoallocRequest& request,
                                 const std::vector<ClusterView>& clusters,
                                 PlannerState& state,
                                 const CoallocOptions& options = {});

// The individual planners (plan_coalloc dispatches to them).
Result<CoallocPlan> plan_flexco(const CoallocRequest& request,
                                const std::vector<ClusterView>& clusters,
                                PlannerState& state);
Result<CoallocPlan> plan_coarp(const CoallocRequest& request,
                               const std::vector<ClusterView>& clusters,
                               const CoallocOptions& options = {});
Result<CoallocPlan> plan_hpcm(const CoallocRequest& request,
                              const std::vector<ClusterView>& clusters,
                              PlannerState& state,
                              const CoallocOptions& options = {});
Result<CoallocPlan> plan_cores(const CoallocRequest& request,
                               const std::vector<ClusterView>& clusters,
                               const CoallocOptions& options = {});
// plan_cores with the admission threshold (options.cores_threshold on
// options.cores_threshold_on).  With derived offers (fit 1, static p_res)
// and the threshold on p_res, no start earlier than
// now + h ln(1/(1 - threshold)) passes (6 h for the thesis' h and 0.85).
Result<CoallocPlan> plan_cores_seq(const CoallocRequest& request,
                                   const std::vector<ClusterView>& clusters,
                                   const CoallocOptions& options = {});

// ---------------------------------------------------------------------------
// CORES allocation (thesis ch. 11.3)
//
// The metrics of §11.3.1 for one order psi of n parts, parts independent,
// p(i, j) the success probability of part i sent at step j (1-based):
//   P_sq(j)  = prod_{i<=j} p(psi^-1(i), i)                            (11.2)
//   F_E      = sum_{k=2..n} P_sq(k-1) * (sum_{j<k} pen_psi^-1(j))
//                           * (1 - p(psi^-1(k), k))                   (11.6)
// and their averages over all n! orders (11.3, 11.7), for Example 11.1's
// model p(i, j) = (1 - (j - 1) alpha_i) p_esr_i (clipped to [0, 1]).

struct CoresPartOdds {
  double p_esr = 1.0;    // estimated success rate at step 1, [0, 1]
  double alpha = 0.0;    // decay per later step, [0, 1]
  double penalty = 0.0;  // cancellation fee p^pen, >= 0
  double at_step(std::size_t step) const noexcept;  // p(i, step)
};

struct CoresOrderMetrics {
  double success = 0.0;  // P_sq(n)
  double fee = 0.0;      // F_E
};

// order: a permutation of 0..n-1, order[j] = the part sent at step j + 1.
Result<CoresOrderMetrics> cores_order_metrics(const std::vector<CoresPartOdds>& parts,
                                              const std::vector<std::size_t>& order);
// The mean over all n! orders (the "random" scheme); n in [1, 8].
Result<CoresOrderMetrics> cores_random_order_metrics(const std::vector<CoresPartOdds>& parts);
// Smallest success probability first (p(i, 1) ascending) and smallest
// cancellation fee first; ties: lower index.
std::vector<std::size_t> cores_order_smallest_success(const std::vector<CoresPartOdds>& parts);
std::vector<std::size_t> cores_order_smallest_fee(const std::vector<CoresPartOdds>& parts);

// Algorithm 2 (sequential allocation).  The caller supplies the messages:
//   reserve(plan, part)   send a reserve for one part of `plan`; true when
//                         granted;
//   cancel(plan, part)    cancel a part granted earlier;
//   alternative(plan, reserved, failed)
//                         a new candidate after plan.parts[failed] was
//                         denied (reserved[i]: plan.parts[i] is held), or
//                         nullopt when there is none.
// Lines 1/15: the next part sent is the not yet reserved part with the
// smallest p_res (ties: lower cluster).  Line 9: after an alternative, a
// held part is kept when the new plan has a part on the same cluster with
// the same nodes, start and duration; every other held part is cancelled.
// Line 14 (expired preliminary reservations) does not arise: the caller
// confirms (line 16) after success.  At most max_searches alternative
// searches.  On failure every held part is cancelled and the error is
// kNoFit naming the denied part.
struct CoresAllocStats {
  std::size_t reserves = 0;  // reserve messages sent
  std::size_t denials = 0;
  std::size_t searches = 0;  // alternative searches (line 7)
  std::size_t cancels = 0;   // cancel messages sent (lines 9 and 12)
};
struct CoresAllocIo {
  std::function<bool(const CoallocPlan&, const PlanPart&)> reserve;
  std::function<void(const CoallocPlan&, const PlanPart&)> cancel;
  std::function<std::optional<CoallocPlan>(const CoallocPlan&, const std::vector<bool>&,
                                           std::size_t)>
      alternative;
};
// Returns the plan that was reserved, its parts in the order they were
// granted.
Result<CoallocPlan> cores_allocate(const CoallocPlan& candidate, const CoresAllocIo& io,
                                   CoresAllocStats* stats = nullptr,
                                   std::size_t max_searches = 8);

// The alternative search of cores-seq (§11.3.2 and §10.6), for
// cores_allocate's `alternative`:
//   1. FNRP: same start and duration, the held parts kept, the nodes of
//      the denied part and of the parts not yet reserved spread again over
//      the admitted clusters that hold no kept part and are not in
//      `excluded` (fill order as plan_cores: decreasing
//      w_fit fit + w_pres p_res); a plan of two or more parts;
//   2. else the refinement "exclude faulty resource": plan_cores_seq again
//      with the `excluded` clusters not allowed.
// `excluded` (one flag per cluster, or empty) should hold every cluster that
// denied a part earlier in this allocation.  nullopt when neither finds a plan.
// The denied part's cluster (plan.parts[failed]) is excluded as well.
Result<std::optional<CoallocPlan>> cores_alternative(
    const CoallocRequest& request, const std::vector<ClusterView>& clusters,
    const CoallocOptions& options, const CoallocPlan& plan, const std::vector<bool>& reserved,
    std::size_t failed, const std::vector<bool>& excluded);

// HPCM Theorem 1 (standard M/M/c form): probability that a sub-task sent
// to a cluster with c nodes, arrival rate lambda and per-node service rate
// mu waits behind at most floor(c * mu * d) - 1 queued tasks, i.e. meets a
// deadline d seconds away.  rho = lambda/(c mu) >= 1 gives 0; lambda = 0
// gives 1.  c >= 1, rates >= 0, d >= 0.
Result<double> hpcm_site_probability(Amount c, double lambda, double mu,
                                     Duration d);
// HPCM Algorithm 1 (PSA_NRR): the product of the site probabilities of the
// clusters a plan uses, for a deadline d seconds away.
Result<double> hpcm_plan_probability(const CoallocPlan& plan,
                                     const std::vector<ClusterView>& clusters,
                                     Duration d);

// HPCM's M/M/c inputs learned from a cluster's finished jobs
// (doc/coalloc.md, "Learning the rates").  Over the jobs that ended in
// (now - window, now]: N jobs, t0 = max(now - window, their earliest
// start), span = now - t0 (at least 1 s), work = sum of nodes x run time
// (each run at least 1 s):
//   lambda = N / span            (jobs/s)
//   mu     = N / work            (jobs/s per node: one node does a mean
//                                 job's node-seconds in 1/mu seconds)
// so rho = lambda / (c mu) = work / (c span), the cluster's observed load.
// Fewer than kHpcmMinJobs jobs: both 0 (not learned; P = 1).
struct HpcmJob {
  Time start = 0;
  Time end = 0;
  Amount nodes = 0;
};
struct HpcmRates {
  double arrival_rate = 0.0;  // lambda, jobs/s; 0: not learned
  double service_rate = 0.0;  // mu, jobs/s per node; 0: not learned
  std::size_t jobs = 0;       // jobs ended in the window
  Duration span = 0;          // seconds the rates are taken over; 0: not learned
};
inline constexpr Duration kHpcmRateWindow = 3600;
inline constexpr std::size_t kHpcmMinJobs = 3;
inline constexpr std::size_t kHpcmMaxJobs = 4096;
// Jobs with nodes < 1, end < start or end > now are left out.  window >= 1.
Result<HpcmRates> hpcm_estimate_rates(const std::vector<HpcmJob>& jobs, Time now,
                                      Duration window = kHpcmRateWindow);

// One cluster's finished jobs for hpcm_estimate_rates, bounded: jobs that
// ended a window before the latest end recorded are dropped, and at most
// kHpcmMaxJobs are kept (the oldest ends go first).  Not thread-safe.
class HpcmRateLearner {
 public:
  explicit HpcmRateLearner(Duration window = kHpcmRateWindow) : window_(window) {}
  void record(Time start, Time end, Amount nodes);
  HpcmRates rates(Time now) const;
  std::size_t size() const noexcept { return jobs_.size(); }
  Duration window() const noexcept { return window_; }

 private:
  Duration window_;
  Time latest_end_ = 0;
  std::vector<HpcmJob> jobs_;  // by end, ascending
};

// ---------------------------------------------------------------------------
// Rescheduling (FlexCo Algorithm 2 with Shift and Shift+Remap)

enum class RescheduleMode {
  kShift,       // same clusters and node counts, earlier common start
  kShiftRemap,  // any distribution, fewer clusters or one (no overhead)
};
// "shift", "shift+remap" (parse also accepts "remap" for the latter).
const char* reschedule_mode_name(RescheduleMode mode) noexcept;
Result<RescheduleMode> parse_reschedule_mode(const std::string& name);

struct RescheduleOptions {
  RescheduleMode mode = RescheduleMode::kShiftRemap;
  // Adopt only when the new end is at least this many seconds earlier
  // (and always strictly earlier).  >= 0.
  Duration margin = 0;
};

enum class RescheduleKind { kNone, kShift, kRemap };
const char* reschedule_kind_name(RescheduleKind kind) noexcept;  // none/shift/remap

struct RescheduleDecision {
  RescheduleKind kind = RescheduleKind::kNone;
  CoallocPlan plan;   // the plan to adopt; the current one when kNone
  Duration gain = 0;  // current end - new end (0 when kNone)
};

// The better plan for a metajob that has not started yet, or kNone.  The
// views must have this metajob's reservations removed; starts are searched
// from max(now, request.ready).  Shift keeps clusters and node counts;
// Shift+Remap also considers any new distribution (FlexCo's rule, the
// current first cluster preferred) and takes the earlier end of the two,
// Shift on a tie.  Errors: malformed input (kInvalidArgument).
Result<RescheduleDecision> reschedule_coalloc(
    const CoallocRequest& request, const CoallocPlan& current,
    const std::vector<ClusterView>& clusters, Time now,
    const RescheduleOptions& options = {});

// A metajob as the rescheduling pass sees it: its plan and, per part, the
// span holding that part's reservation in profiles[part.cluster].
struct Metajob {
  std::uint64_t id = 0;
  CoallocRequest request;
  CoallocPlan plan;
  std::vector<SpanId> spans;  // spans[i] belongs to plan.parts[i]
};

struct PassChange {
  std::size_t index;       // into the jobs vector
  CoallocPlan old_plan;
  RescheduleDecision decision;  // kind != kNone
};

// FlexCo Algorithm 2, lines 9-15: after an early completion, reschedules
// the waiting metajobs (plan.start > now) one at a time in order of their
// current start (then index): removes its spans, decides, and books the
// adopted (or the old) plan again, updating jobs[i].plan and .spans, so
// later metajobs see the earlier ones' new places.  Started metajobs are
// left alone.  `names` (optional, else "cluster<i>") label messages.
// Returns the changes in the order made.  A span that cannot be removed or
// booked again is an error (kNotFound / kNoFit) after which the profiles
// and jobs are consistent up to the metajob named in the message.
Result<std::vector<PassChange>> reschedule_pass(
    const std::vector<Profile*>& profiles, std::vector<Metajob>& jobs,
    Time now, const RescheduleOptions& options = {},
    const std::vector<std::string>& names = {});

}  // namespace flexco

#endif  // FLEXCO_CORE_COALLOC_HPP
