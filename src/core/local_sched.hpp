// SPDX-License-Identifier: GPL-2.0-or-later
// The local-schedule planner: FCFS with conservative backfilling (EASY as an
// option) over the availability profile, in a node-exclusive model.  One
// engine, three uses (doc/local_sched.md):
//
//   - the plugin plans a snapshot to answer what-if questions: where would
//     the pending jobs go if this reservation existed, how much later would
//     they start (delay_caused_by), and the thesis' what-if fitness of an
//     offer (whatif_fitness);
//   - the simulator runs a LocalScheduler as each simulated cluster's
//     scheduler (jobs arrive, start, end early; the queue is re-planned);
//   - the daemon's planners consume the plans.
//
// Times are UTC epoch seconds (int64), capacity is counted in whole nodes.
// The queue is given in priority order (highest first) and every tie is
// broken by that order, so a plan is a pure function of its input.
//
// Rules of the core library: no logging, no globals, one thread at a time
// per object (the free functions only read their arguments).  Errors are
// values (flexco::Error, shared with profile.hpp) whose message names the
// function, the offending entry and its values, e.g.
//   "plan_conservative: queue[3] (job 17): needs 200 nodes, more than the
//    cluster's 128"
// As in profile.hpp, the only exception that can leave these functions is
// std::bad_alloc; calling value() on an error Result is a programming error.

#ifndef FLEXCO_CORE_LOCAL_SCHED_HPP
#define FLEXCO_CORE_LOCAL_SCHED_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/profile.hpp"

namespace flexco {

// ---------------------------------------------------------------------------
// Input

enum class Backfill {
  kConservative,  // every queued job holds a reservation (default)
  kEasy,          // only the first job that cannot start now does
};

// "conservative", "easy".
const char* backfill_name(Backfill policy) noexcept;

// A job that holds nodes now.
struct RunningJob {
  std::uint64_t id = 0;
  Amount nodes = 0;       // in [1, capacity]
  Time start = 0;         // when it started, <= now
  Time expected_end = 0;  // start + the user's estimate (its time limit), > start;
                          // kForever for no limit.  An end <= now (a job
                          // overrunning its estimate) counts as now + 1.
  Time submit = 0;        // when it was submitted, <= start (only the
                          // fitness' average response time reads it)
};

// An existing reservation or any other fixed block of nodes.  Its nodes are
// taken over [start, end) whatever the queue does.
struct FixedSpan {
  std::uint64_t id = 0;
  Time start = 0;
  Time end = 0;      // > start; kForever for no end.  Only [now, end) matters.
  Amount nodes = 0;  // in [1, capacity]
};

// A job waiting in the queue.
struct PendingJob {
  std::uint64_t id = 0;
  Amount nodes = 0;       // in [1, capacity]: a larger job can never run, and is
                          // rejected (leave it out of the queue)
  Duration estimate = 0;  // the user's estimate, > 0; kForever for no limit
  Time submit = 0;        // <= now
  Time begin = 0;         // earliest begin (Slurm's BeginTime); 0 or any
                          // time <= now means none
};

struct LocalPlanInput {
  Amount capacity = 0;  // nodes of the cluster (partition), in [0, kMaxAmount]
  Time now = 0;         // in [0, kForever)
  std::vector<RunningJob> running;
  std::vector<FixedSpan> reservations;
  std::vector<PendingJob> queue;  // priority order, highest first
};

// Job ids are unique over running and queue together; reservation ids are
// unique among reservations.  Running jobs and reservations are recorded as
// they are, even when together they take more than the capacity (a snapshot
// of reality); no queued job is then planned where the nodes are missing.

// ---------------------------------------------------------------------------
// Plans

enum class Placement {
  kReserved,   // the plan holds the nodes over [start, end) in LocalPlan::profile
  kEstimated,  // EASY only: no reservation; start/end estimate where the job
               // would go if the queue were then planned conservatively (in
               // queue order, after the jobs EASY starts now and the head's
               // reservation).  An estimate, not a promise: EASY may start it
               // earlier by backfilling, and later jobs may delay it.
  kNever,      // can never start: start = end = kNever (capacity held
               // forever by running jobs, reservations or earlier jobs)
};

// "reserved", "estimated", "never".
const char* placement_name(Placement placement) noexcept;

struct PlannedJob {
  std::uint64_t id = 0;
  Amount nodes = 0;
  Time start = kNever;  // planned start; == now: starts now
  Time end = kNever;    // start + estimate (kForever if the estimate is)
  Placement placement = Placement::kNever;
  SpanId span = kNoSpan;  // its span in LocalPlan::profile when kReserved
};

inline constexpr std::size_t kNoHead = static_cast<std::size_t>(-1);

struct LocalPlan {
  Backfill policy = Backfill::kConservative;
  Time now = 0;
  Amount capacity = 0;
  std::vector<PlannedJob> jobs;  // one per queued job, in queue order
  // EASY: index in `jobs` of the head job (the first that cannot start now
  // and holds the reservation); kNoHead for conservative plans or when every
  // job starts now or never.
  std::size_t head = kNoHead;
  // Origin `now`: running jobs, reservations and every kReserved job.
  Profile profile;
};

// The profile of running jobs and reservations alone, origin now: the
// capacity a new reservation may take without colliding.  O(R + M) spans.
Result<Profile> build_base_profile(const LocalPlanInput& input);

// FCFS with conservative backfilling: each queued job, in queue order, gets
// the earliest start >= max(now, begin) where its nodes are free for its
// whole estimate, beside running jobs, reservations and every job planned
// before it.  So no job is ever delayed by a later one; a later job
// backfills into any hole that fits it.  O(Q * F) for Q queued jobs, F the
// cost of one Profile::earliest_fit (O(log P) per round, doc/profile.md).
Result<LocalPlan> plan_conservative(const LocalPlanInput& input);

// EASY backfilling: jobs start now in queue order while they fit; the first
// one that does not (the head) gets a reservation at its earliest fit; each
// later job starts now if it fits beside the head's reservation (so it
// never delays the head, but may delay other queued jobs), and otherwise
// gets no reservation (Placement::kEstimated).  A job that can never start
// is kNever and the next one is the head candidate.  O(Q * F).
Result<LocalPlan> plan_easy(const LocalPlanInput& input);

Result<LocalPlan> plan_local(const LocalPlanInput& input, Backfill policy);

// The start the P^JOB slot of the thesis (§9.4.2) gets: a temporary job of
// `nodes` nodes for `duration`, eligible from max(now, earliest), queued
// behind every job.  kNever if it can never start.
Result<Time> placeholder_job_start(const LocalPlanInput& input, Duration duration, Amount nodes,
                                   Time earliest, Backfill policy = Backfill::kConservative);

// ---------------------------------------------------------------------------
// What-if: delays caused by one more reservation

// A reservation that does not exist yet (the thesis' "placeholder").
struct Placeholder {
  Time start = 0;         // in [now, kForever)
  Duration duration = 0;  // > 0; kForever for no end
  Amount nodes = 0;       // in [1, capacity]
};

struct JobDelay {
  std::uint64_t id = 0;
  Amount nodes = 0;
  Time start_without = kNever;  // planned start without the placeholder
  Time start_with = kNever;     // ... and with it
  // start_with - start_without; negative when the job moves earlier (a
  // scheduling anomaly); kForever when it can no longer start at all,
  // -kForever when it now can; 0 when it can start in neither plan.
  Duration delay = 0;
};

struct DelayReport {
  // The placeholder does not fit beside running jobs and reservations: it
  // could not be made, and nothing below is computed.
  bool collision = false;
  std::vector<JobDelay> jobs;     // queue order
  Duration total_delay = 0;       // sum of the positive delays (saturates at kForever)
  Duration max_delay = 0;         // largest delay, 0 if none
  std::size_t delayed_jobs = 0;   // delay > 0
  std::size_t advanced_jobs = 0;  // delay < 0
  // sum of nodes * positive delay: delayed area.  Not part of the thesis'
  // formula (its C_avg counts jobs, not nodes); offered for admission
  // policies that weigh big jobs more.  Saturates at kForever.
  std::int64_t node_seconds = 0;
  Duration head_delay = 0;  // delay of queue[0], the top pending job
};

// Plans the queue without and with the placeholder (which must fit beside
// running jobs and reservations, else collision) under `policy`, and
// compares every job's start.  Under EASY the starts of kEstimated jobs are
// estimates (see Placement).  O(Q * F) twice.
Result<DelayReport> delay_caused_by(const LocalPlanInput& input, const Placeholder& extra,
                                    Backfill policy = Backfill::kConservative);

// ---------------------------------------------------------------------------
// What-if fitness of offers (thesis §9.4.2, eq. 9.6-9.8)
//
//   C_max(P) = max_i (stt(P, j_i) + j_i.wct)                         (9.6)
//   C_avg(P) = (1/N) sum_i (stt(P, j_i) + j_i.wct - j_i.sbt)         (9.7)
//   fit(b,d,np) = w_Cmax * C*_max / C_max(P^RSV/b)
//               + w_Cavg * C*_avg / C_avg(P^RSV/b)  in [0, 1]        (9.8)
//
// over the N = K + L running and waiting jobs, where P^RSV/b plans the
// waiting jobs with a placeholder reservation of np nodes over [b, b + d),
// and C*_max, C*_avg are the minima over all considered plans.  fit = 0
// when the placeholder conflicts with running jobs or existing
// reservations, or with the job at the head of the queue.  How we read the
// parts the thesis leaves open (time zero of C_max, jobs that never end,
// which plans are "considered") is in FitnessOptions, SlotFitness and
// doc/local_sched.md.

struct FitnessOptions {
  Backfill policy = Backfill::kConservative;  // how the queue is planned
  // w_Cmax, w_Cavg: each >= 0, summing to 1 (within 1e-9).  The defaults are
  // the thesis' experiment values (Table 9.3).
  double weight_cmax = 0.1;
  double weight_cavg = 0.9;
  // The head rule, as a policy bound: a slot that pushes the start of
  // queue[0] (the top pending job) back by more than this gets fit = 0.
  // 0 (default) is the thesis' rule: the head job must not move at all.
  // kForever turns the rule off.  >= 0.
  Duration max_head_delay = 0;
  // C_max is a point in time, so its ratio depends on where time 0 is.  In
  // the thesis' simulator time 0 was the start of the replayed trace; with
  // epoch seconds the ratio would be ~1 for every slot.  C_max is taken as
  // max completion - time_zero; the default (nullopt) is input.now.  Pass 0
  // for the literal formula.  In [0, now].  (C_avg is a difference of times
  // and does not depend on it.)
  std::optional<Time> time_zero;
  // When set, also the start of the P^JOB slot (a job queued behind every
  // job, as placeholder_job_start) in FitnessReport::job_start, from the
  // same P^ORG plan instead of planning the queue once more.
  struct JobReference {
    Duration duration = 0;  // > 0
    Amount nodes = 0;       // in [1, capacity]
    Time earliest = 0;      // >= 0
  };
  std::optional<JobReference> job_reference;
};

enum class FitVerdict {
  kPlaced,       // the placeholder was planned; fit from eq. 9.8
  kCollision,    // it does not fit beside running jobs and reservations: fit 0
  kHeadDelayed,  // it delays queue[0] by more than max_head_delay: fit 0
};

// "placed", "collision", "head-delayed".
const char* fit_verdict_name(FitVerdict verdict) noexcept;

struct SlotFitness {
  Placeholder slot;
  FitVerdict verdict = FitVerdict::kCollision;
  double fit = 0.0;  // in [0, 1]
  // C_max(P^RSV/b) - time_zero and C_avg(P^RSV/b), seconds; +inf when a
  // counted job can no longer complete (then fit's terms are 0); 0 on
  // collision (no plan).
  double cmax = 0.0;
  double cavg = 0.0;
  Duration head_delay = 0;  // as DelayReport::head_delay; 0 on collision
};

struct FitnessReport {
  // N: the running and queued jobs that complete in the reference plan.
  // Jobs that never complete there (estimate kForever, or never startable)
  // are left out: their completion is infinite in every plan and would make
  // both ratios 1 whatever the slot.
  std::size_t jobs_counted = 0;
  double cmax_ref = 0.0;           // C_max(P^ORG) - time_zero, the plan without any slot
  double cavg_ref = 0.0;           // C_avg(P^ORG)
  double cmax_best = 0.0;          // C*_max
  double cavg_best = 0.0;          // C*_avg
  std::vector<SlotFitness> slots;  // input order
  // FitnessOptions::job_reference's start (== placeholder_job_start with the
  // same policy); kNever if it can never start or none was asked for.
  Time job_start = kNever;
};

// The fitness of every slot, with C* the minimum over the considered plans:
// P^ORG and the P^RSV/b of every kPlaced slot.  P^ORG stands for the
// thesis' P^JOB: under conservative backfilling the temporary job is queued
// last and so moves no local job, giving them exactly P^ORG's starts (use
// placeholder_job_start to add the P^JOB slot itself).  Slots that collide
// or delay the head "cannot be placed" (thesis) and are not considered.
// With N = 0 every placed slot gets fit 1.  O((S + 1) * Q * F) for S slots.
Result<FitnessReport> whatif_fitness(const LocalPlanInput& input,
                                     const std::vector<Placeholder>& slots,
                                     const FitnessOptions& options = {});

// The part of whatif_fitness that depends on the input and the policy
// alone, made once and reused by any number of calls: the validated input,
// the base profile, the reference plan P^ORG and the jobs it counts.  It
// also remembers each slot's plan with the slot (its C_max, C_avg and head
// delay; at most kMemoSlots slots), so a slot asked for again with the same
// start, duration, nodes and time_zero costs a lookup instead of planning
// the queue once more.  The plugin keeps one per snapshot and partition
// (probe.hpp, flexco_plan_cache), so the probes that share a snapshot plan
// its queue once and each distinct slot once.  The answers are exactly
// whatif_fitness(input, ...)'s: check_local_sched compares them on random
// inputs.  Unlike the rest of this file, one reference may be used by
// several threads at once: nothing in it changes after create() but the
// memo, which a mutex guards.  Copies share the same reference.
class FitnessReference {
 public:
  static constexpr std::size_t kMemoSlots = 4096;
  struct Impl;

  // Errors: those of whatif_fitness for the input.
  static Result<FitnessReference> create(LocalPlanInput input,
                                         Backfill policy = Backfill::kConservative);
  const LocalPlanInput& input() const noexcept;
  Backfill policy() const noexcept;
  std::size_t memo_size() const;  // slots remembered
  // Whether whatif_fitness(*this, slots, options) would plan nothing: each
  // slot is remembered or collides (cheap to tell), and no P^JOB start is
  // asked of an EASY reference.  False for options it would refuse.
  // O(S log P).
  bool remembers(const std::vector<Placeholder>& slots, const FitnessOptions& options) const;

 private:
  explicit FitnessReference(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
  friend Result<FitnessReport> whatif_fitness(const FitnessReference& reference,
                                              const std::vector<Placeholder>& slots,
                                              const FitnessOptions& options);
};

// whatif_fitness on a reference: options.policy must be the reference's
// (kInvalidArgument otherwise).  O(S * Q * F) for S slots not remembered.
Result<FitnessReport> whatif_fitness(const FitnessReference& reference,
                                     const std::vector<Placeholder>& slots,
                                     const FitnessOptions& options);

// ---------------------------------------------------------------------------
// Incremental scheduler (the simulator's cluster)
//
// Holds running jobs, reservations and the queue in one Profile and keeps
// the plan current as events arrive.  The loop of a discrete-event
// simulator:
//
//   for (;;) {
//     t = min(next trace event, sched.next_decision_time());
//     sched.advance_to(t);
//     for each job ending at t:     sched.finish(id);
//     for each job submitted at t:  sched.submit(job);
//     for (job : sched.schedule().value()) record its start (ends at
//       job.start + its real run time, which must not exceed its estimate);
//   }
//
// Conservative: a submitted job is planned at the tail of the queue (its
// earliest fit beside everything planned).  When capacity is released (a
// job ends before its estimate, is shrunk or cancelled, a reservation is
// removed) the plan is compressed as in the FlexCo paper (Algorithm 2,
// after Weil and Feitelson): every planned job, in order of its planned
// start (ties: queue order), is taken out and put back at its earliest fit,
// which is never later than before.  When capacity is taken from outside
// (add_running, or add_reservation over capacity the plan uses) the plan is
// rebuilt in queue order; a reservation in free capacity moves nothing.
// EASY: every schedule() runs the EASY pass afresh.
//
// Costs (Q queued, R running, M reservations, P <= 2(R + Q + M) + 1 points,
// F one earliest_fit): submit O(log Q) + F at the next re-plan; finish,
// shrink_running, cancel, remove_reservation O(log P) + a compression
// O(Q (log Q + F)); add_running, add_reservation O(log P) + a rebuild
// O(Q (log Q + F)) (add_reservation in free capacity: O(log P) alone);
// schedule() without changes O(k log Q) for k started jobs (conservative),
// O(Q log P + F) always (EASY).  Memory O(R + Q + M): ended jobs and
// elapsed reservations leave both profiles.

struct StartedJob {
  std::uint64_t id = 0;
  Amount nodes = 0;
  Time start = 0;
  Time expected_end = 0;  // start + estimate (kForever if the estimate is)
};

class LocalScheduler {
 public:
  // capacity in [0, kMaxAmount], now in [0, kForever).
  static Result<LocalScheduler> create(Amount capacity, Time now,
                                       Backfill policy = Backfill::kConservative);

  Time now() const noexcept { return now_; }
  Amount capacity() const noexcept { return capacity_; }
  Backfill policy() const noexcept { return policy_; }
  std::size_t running_count() const noexcept { return running_.size(); }
  std::size_t queued_count() const noexcept { return queue_.size(); }
  std::size_t reservation_count() const noexcept { return reservations_.size(); }
  // Running jobs, reservations and the planned spans of queued jobs (as of
  // the last re-plan).
  const Profile& profile() const noexcept { return profile_; }
  // Running jobs and reservations alone: where a new reservation fits
  // without colliding (what add_reservation checks).
  const Profile& base_profile() const noexcept { return base_; }
  // The profile span of a running job or of a queued job holding one
  // (kNoSpan if it holds none); kNotFound for an unknown job.
  Result<SpanId> job_span(std::uint64_t id) const;

  // Moves the clock to t >= now and drops reservations that ended by t.
  // Re-plans first if anything changed.  Refuses (kOutOfRange) to pass a
  // decision time, so that no start is taken late: t must not exceed
  // next_decision_time(), and no running job may still be recorded past
  // its expected end (report it with finish() first).
  Status advance_to(Time t);

  // The next time schedule() may start a job without any other event: the
  // first planned start (EASY: the head's start, the first begin time of a
  // queued job, or the first end of a running job or reservation).  now()
  // if the plan changed since the last schedule(); kNever if nothing will
  // ever happen.
  Time next_decision_time() const noexcept;

  // A job running since job.start (<= now, expected_end > now), e.g. when
  // the scheduler starts from a snapshot.  Recorded as it is (even beyond
  // the capacity); the plan is rebuilt.
  Status add_running(const RunningJob& job);
  // The running job has ended (now, at or before its expected end): its
  // nodes are free from now.  Compresses the plan if it ended early.
  Status finish(std::uint64_t id);
  // A running job's estimate or size shrinks: now < new_end <= its
  // expected end, 1 <= new_nodes <= its nodes.  Compresses the plan.
  Status shrink_running(std::uint64_t id, Time new_end, Amount new_nodes);

  // A reservation over [start, end), end > now; it must fit beside running
  // jobs and reservations (kNoFit otherwise).  Conservative: if it fits in
  // the capacity the current plan leaves free, no queued job moves;
  // otherwise queued jobs make way: the plan is rebuilt in queue order.
  Status add_reservation(const FixedSpan& reservation);
  Status remove_reservation(std::uint64_t id);

  // Appends a job to the queue (lowest priority): submit <= now, begin >= 0.
  Status submit(const PendingJob& job);
  // Removes a queued job.  Compresses the plan.
  Status cancel(std::uint64_t id);

  // Re-plans if needed and starts every queued job whose planned start is
  // now; they become running jobs (same span) and are returned in queue
  // order.
  Result<std::vector<StartedJob>> schedule();
  // Brings the plan up to date without starting anything.
  Status replan();
  // Re-plans, then the plan of the queue (queue order; EASY: estimates as
  // in plan_easy).  Copies the profile: O(P + Q F).
  Result<LocalPlan> plan();

 private:
  enum class Dirty { kNone, kPlaceNew, kCompress, kRebuild };
  struct Running {
    Amount nodes;
    Time start;
    Time end;
    SpanId span;       // in profile_
    SpanId base_span;  // in base_
  };
  struct Reservation {
    Time start;
    Time end;
    Amount nodes;
    SpanId span;
    SpanId base_span;
  };
  struct Queued {
    PendingJob job;
    SpanId span;  // kNoSpan: not planned (new, or never startable)
    Time start;   // planned start when span != kNoSpan
  };

  LocalScheduler(Amount capacity, Time now, Backfill policy, Profile profile)
      : profile_(profile),
        base_(std::move(profile)),
        capacity_(capacity),
        now_(now),
        policy_(policy) {}

  void mark(Dirty level) noexcept;
  Status check_new_job_id(const char* where, std::uint64_t id) const;
  Status place(std::uint64_t seq, Queued& q);
  Status unplace(std::uint64_t seq, Queued& q);
  Status place_unplaced();
  Status replan_conservative();
  Status replan_easy();

  Profile profile_;  // everything, including the queue's planned spans
  Profile base_;     // running jobs and reservations only
  Amount capacity_;
  Time now_;
  Backfill policy_;
  Dirty dirty_ = Dirty::kNone;
  std::uint64_t next_seq_ = 1;  // queue order: seq of the next submission
  Time easy_next_ = kNever;     // EASY: next decision after the last pass

  std::map<std::uint64_t, Queued> queue_;                    // seq -> job
  std::unordered_map<std::uint64_t, std::uint64_t> queued_;  // id -> seq
  std::set<std::pair<Time, std::uint64_t>> starts_;          // (start, seq) of planned jobs
  std::set<std::uint64_t> unplaced_;                         // seqs without a span
  std::unordered_map<std::uint64_t, Running> running_;
  std::set<std::pair<Time, std::uint64_t>> running_ends_;  // (end, id)
  std::unordered_map<std::uint64_t, Reservation> reservations_;
  std::set<std::pair<Time, std::uint64_t>> reservation_ends_;  // (end, id)
};

}  // namespace flexco

#endif  // FLEXCO_CORE_LOCAL_SCHED_HPP
