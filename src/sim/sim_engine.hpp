// SPDX-License-Identifier: GPL-2.0-or-later
// The flexco-sim engine: K simulated clusters, each a core LocalScheduler
// (FCFS + conservative or EASY backfilling) fed with its local jobs, and a
// metascheduler that places metajobs with the core co-allocation planners
// (core/coalloc.hpp: plan_coalloc, reschedule_coalloc) as reservations in
// those schedulers.  Jobs run for their actual run time; the schedulers only
// see estimates, so jobs end early and the plans are compressed, and after
// such an early end the metascheduler may shift or remap the waiting
// metajobs (FlexCo Algorithm 2).  Design and the reasons behind it:
// doc/sim.md.

#ifndef FLEXCO_SIM_ENGINE_HPP
#define FLEXCO_SIM_ENGINE_HPP

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/coalloc.hpp"
#include "core/local_sched.hpp"
#include "core/profile.hpp"
#include "sim/workload.hpp"

namespace flexco::sim {

// How the metascheduler treats metajobs once they are placed.
enum class Resched {
  kRigid,       // advance reservations stay where they were made
  kShift,       // earlier common start, same clusters and sizes
  kShiftRemap,  // also any other distribution, possibly one cluster
};
const char* resched_name(Resched r) noexcept;  // "rigid", "shift", "shift+remap"
std::optional<Resched> parse_resched(const std::string& name);

struct ClusterSpec {
  std::string name;
  Amount nodes = 0;  // processors; every job size is counted in them
};

struct EngineConfig {
  std::vector<ClusterSpec> clusters;
  Backfill backfill = Backfill::kConservative;
  Policy planner = Policy::kFlexCo;   // initial placement of metajobs
  Resched resched = Resched::kRigid;
  // Availability the metascheduler plans with: 0 asks every cluster for
  // its profile per metajob; > 0 uses what the clusters published at the
  // last multiple of this interval (de Assuncao), re-asking only after a
  // violation.
  Duration publish_interval = 0;
  // Algorithm 2: after an early end on a cluster with idle nodes, at most
  // this many waiting metajobs with a part there (earliest start first) are
  // offered to the rescheduler.
  std::size_t head = 4;
  Duration margin = 0;       // RescheduleOptions::margin
  Duration tau = 600;        // bounded slowdown threshold (10 min)
  // End of the submission period [0, horizon) (0: unknown).  When set, the
  // engine measures whether the queues keep up (Saturation).
  Time horizon = 0;
  // Saturation: the first and last windows of the horizon whose jobs' mean
  // waits are compared (at most a quarter of the horizon).
  Duration window = 7 * 86400;
};

struct KindMetrics {
  std::int64_t jobs = 0;
  double response = 0;   // sums over finished jobs
  double wait = 0;
  double bsld = 0;
  double work = 0;       // nodes * single-site run time
  double mean_response() const { return jobs ? response / jobs : 0; }
  double mean_wait() const { return jobs ? wait / jobs : 0; }
  double mean_bsld() const { return jobs ? bsld / jobs : 0; }
};

// Does the grid keep up with its load?  A stable system's backlog (work
// submitted but not started) stays bounded; a saturated one grows for as
// long as jobs arrive, and so do the waits.  Measured only with
// EngineConfig::horizon.
struct Saturation {
  Duration window = 0;          // as used: min(EngineConfig::window, horizon / 4)
  double backlog_mid = 0;       // unstarted work (processors x run time) at horizon / 2
  double backlog_end = 0;       // ... and at the horizon (just before it)
  std::int64_t queued_mid = 0;  // unstarted jobs (local queued, metajobs waiting) then
  std::int64_t queued_end = 0;
  KindMetrics first, last;      // jobs submitted in [0, window) and [horizon - window, horizon)
  // (backlog_end - backlog_mid) / (capacity x horizon / 2): the share of
  // the grid's capacity by which arrivals outran service over the second
  // half of the horizon; about 0 when stable, offered load minus the
  // throughput the system sustains when saturated.
  double growth(Amount capacity, Time horizon) const;
  // The verdict: growth above kSaturationGrowth.
  bool saturated(Amount capacity, Time horizon) const;
};
// 5 % of the capacity over half the horizon: a 30-day run flags a backlog
// that grew by more than 18 hours of the whole grid's work in 15 days.
inline constexpr double kSaturationGrowth = 0.05;

struct Metrics {
  KindMetrics all, local, meta;
  double overhead_work = 0;         // extra node-seconds of split metajobs
  Time first_submit = kNever;
  Time last_end = 0;
  Amount capacity = 0;              // sum over clusters
  double utilization() const;       // useful work / (capacity * span)
  std::int64_t meta_single = 0;     // finished on one cluster
  std::int64_t meta_split = 0;      // finished split
  std::int64_t rejected = 0;        // jobs no cluster (or grid) can ever hold
  std::int64_t early_ends = 0;      // jobs that ended before their estimate
  std::int64_t resched_offers = 0;  // metajobs offered to the rescheduler
  std::int64_t shifts = 0;
  std::int64_t remaps = 0;
  std::int64_t remaps_to_one = 0;   // remaps that dropped the overhead
  std::int64_t messages = 0;        // metascheduler <-> cluster messages
  std::int64_t violations = 0;      // a part did not fit at reservation time
  std::int64_t publications = 0;
  std::int64_t events = 0;          // submissions + starts + ends
  Saturation saturation;
};

// The metascheduler's planning step, as plain functions (Engine uses them;
// testsuite/unit/check_plan_equiv.cpp feeds them and flexcod's the same
// recorded situation).
//
// The request of a metajob submitted at `now`: its estimate as runtime,
// ready at `now`, overhead_pct / 100.
CoallocRequest meta_request(const Job& job, Time now);
// A cluster as the planners see it: its free profile and, for HPCM, the
// M/M/c rates of the local jobs observed on it so far (`arrivals` jobs
// whose run times sum to `run_sum`, over [0, now)).
ClusterView cluster_view(const ClusterSpec& cluster, const Profile* free, std::int64_t arrivals,
                         double run_sum, Time now);
// Plans a metajob: for the policies that plan on offers (COARP, CORES)
// every cluster is first probed as flexcod probes a real one, with the
// production probe on its free profile (core/offer_probe.hpp,
// probe_offers_from_profile); then plan_coalloc with options.now = now.
Result<CoallocPlan> plan_metajob(Policy policy, const CoallocRequest& request,
                                 std::vector<ClusterView> views, Time now, PlannerState& state);

// A pull source of jobs in submit order.
class JobSource {
 public:
  virtual ~JobSource() = default;
  virtual swf::Result<std::optional<Job>> next() = 0;
};

class VectorSource : public JobSource {
 public:
  explicit VectorSource(std::vector<Job> jobs) : jobs_(std::move(jobs)) {}
  swf::Result<std::optional<Job>> next() override {
    if (i_ >= jobs_.size()) return std::optional<Job>();
    return std::optional<Job>(jobs_[i_++]);
  }

 private:
  std::vector<Job> jobs_;
  std::size_t i_ = 0;
};

class TraceSource : public JobSource {
 public:
  explicit TraceSource(TraceStream s) : s_(std::move(s)) {}
  swf::Result<std::optional<Job>> next() override { return s_.next(); }
  const TraceStream& stream() const { return s_; }

 private:
  TraceStream s_;
};

// One finished job, for observers (tests, per-job output).
struct JobRecord {
  std::uint64_t id = 0;
  JobKind kind = JobKind::kLocal;
  Time submit = 0, start = 0, end = 0;
  Amount nodes = 0;
  Duration run = 0, estimate = 0;
  std::vector<std::pair<int, Amount>> parts;  // cluster, nodes (local: one)
};

// A reschedule that was adopted, for observers.
struct MoveRecord {
  std::uint64_t id = 0;
  Time at = 0;
  RescheduleKind kind = RescheduleKind::kNone;
  Time old_start = 0, new_start = 0;
  std::size_t old_parts = 0, new_parts = 0;
  Duration gain = 0;
};

class Engine {
  struct Key {};  // only create() constructs an Engine

 public:
  static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);
  Engine(Key, const EngineConfig& c) : cfg_(c) {}

  // Runs to the end of every source and every job.  Errors are the core's
  // (a scheduler refusing an operation) or the sources' (a trace error).
  Status run(std::vector<JobSource*> sources);

  const Metrics& metrics() const noexcept { return m_; }
  std::function<void(const JobRecord&)> on_finish;
  std::function<void(const MoveRecord&)> on_move;

 private:
  struct LocalRec {
    Job job;
    Time start = kNever;
  };
  struct MetaRec {
    Job job;
    CoallocRequest request;
    CoallocPlan plan;
    bool started = false;
    Time start = kNever;
    std::uint64_t version = 0;
  };
  struct Ev {
    Time t;
    std::uint64_t id;
    std::uint64_t version;
    bool operator>(const Ev& o) const {
      return t != o.t ? t > o.t : id != o.id ? id > o.id : version > o.version;
    }
  };
  using MinHeap = std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>>;

  Status step(Time t);
  Status submit_local(const Job& j);
  Status submit_meta(const Job& j);
  Status book(MetaRec& m);
  Status unbook(const MetaRec& m);
  Status start_jobs();
  Status reschedule_after_early_end(std::size_t cluster);
  void publish();
  std::vector<ClusterView> views(const std::vector<const Profile*>& profiles) const;
  void finish_record(const JobRecord& r, Duration single_run);

  EngineConfig cfg_;
  std::vector<LocalScheduler> sched_;
  std::unordered_map<std::uint64_t, LocalRec> local_;
  std::unordered_map<std::uint64_t, MetaRec> meta_;
  MinHeap ends_;        // actual ends of running jobs (local and meta)
  MinHeap meta_starts_; // planned starts of metajobs (version-checked)
  std::vector<Profile> published_;
  Time next_publish_ = kNever;
  PlannerState planner_state_;
  std::vector<bool> early_;
  std::vector<std::set<std::pair<Time, std::uint64_t>>> waiting_;  // per cluster: (start, metajob)
  std::vector<std::int64_t> arrivals_;  // local jobs submitted, per cluster
  std::vector<double> run_sum_;         // their run times, per cluster
  double backlog_ = 0;                  // work of submitted, unstarted jobs
  std::int64_t backlog_jobs_ = 0;
  int samples_taken_ = 0;               // of the backlog at horizon / 2, horizon
  void sample_backlog(Time t);
  Time now_ = 0;
  Metrics m_;
};

}  // namespace flexco::sim

#endif  // FLEXCO_SIM_ENGINE_HPP
