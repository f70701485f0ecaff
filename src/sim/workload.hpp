// SPDX-License-Identifier: GPL-2.0-or-later
// Workload streams for flexco-sim: SWF traces turned into the jobs a
// simulated cluster or the metascheduler receives, one at a time.
//
// A TraceStream reads a trace through swf::OrderedReader (so memory is
// bounded by the reorder window, never by the trace), keeps one segment of
// it (part i of n, by submit time), shifts that segment to start at time 0,
// scales its interarrival times, optionally replays it in a loop up to a
// horizon, and gives every job a run time, an estimate (the trace's, or the
// runtime-estimate model where the trace has none), a size and, for
// metajobs, a multi-site overhead.  Every random draw comes from the
// stream's own std::mt19937_64 seeded from (seed, stream index), so a run is
// a pure function of its configuration.  Why each choice: doc/sim.md.

#ifndef FLEXCO_SIM_WORKLOAD_HPP
#define FLEXCO_SIM_WORKLOAD_HPP

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "core/swf.hpp"

namespace flexco::sim {

enum class JobKind { kLocal, kMeta };

struct Job {
  std::uint64_t id = 0;
  JobKind kind = JobKind::kLocal;
  int cluster = -1;         // local jobs: the cluster it is submitted to
  Time submit = 0;          // seconds from the start of the simulation
  Duration run = 0;         // actual run time on one site, in [1, estimate]
  Duration estimate = 0;    // what the schedulers see, >= run
  Amount nodes = 0;         // processors (the unit every cluster counts)
  int overhead_pct = 0;     // metajobs: added to run and estimate when split
  std::int64_t line = 0;    // source line in the trace
};

// How a trace line becomes a job size (doc/sim.md, "Any trace").
enum class SizeField {
  kAllocated,  // field 5, or field 8 where 5 is unknown (the default)
  kRequested,  // field 8, or field 5 where 8 is unknown
};
enum class SizeUnit {
  kProcs,  // sizes and cluster Nodes= count processors (the default)
  kNodes,  // processors / processors per node, rounded up
};

// Filters and models applied to every job of a stream.
struct JobRules {
  SizeField size_field = SizeField::kAllocated;  // TraceSize
  SizeUnit unit = SizeUnit::kProcs;               // TraceUnit
  std::int64_t procs_per_node = 0;  // TraceProcsPerNode; 0: MaxProcs / MaxNodes
  bool keep_partial = false;        // TracePartial=keep: replay status 2-4 lines
  bool lenient = false;             // TraceErrors=skip: skip malformed lines
  bool exact_estimates = false;     // Estimates=exact: estimate = run time
  Amount max_nodes = 0;           // larger jobs are dropped (counted); 0: no limit
  double estimate_factor = 1.0;   // estimate *= factor (1.25 = +25 %), >= 1
  bool no_small = false;          // drop run <= small_run and nodes <= small_nodes
  Duration small_run = 3600;
  Amount small_nodes = 64;
  Duration model_max = 13 * 3600; // the model's maximum estimate
  bool model_always = false;      // use the model even where the trace has estimates
  bool overhead = false;          // draw a multi-site overhead (metajobs)
  double overhead_lambda = 20.0;  // Poisson mean, percent
  int overhead_cap = 25;          // percent
};

struct StreamSpec {
  std::string path;
  int part = 0;                   // keep segment `part` of `parts` (0-based)
  int parts = 1;
  double time_scale = 1.0;        // submit times (from the segment start) *= scale
  bool loop = false;              // replay the segment until the horizon
  Time horizon = kForever;        // no submission at or after it
  std::uint64_t max_jobs = 0;     // 0: no limit
  JobKind kind = JobKind::kLocal;
  int cluster = -1;
  std::uint64_t seed = 1;
  int index = 0;                  // stream index: job ids and RNG stream
  JobRules rules;
};

// What one pass over a trace learns (before any simulation): the submit
// span and the work of the jobs the rules keep.
struct TraceScan {
  std::int64_t first_submit = 0;
  std::int64_t last_submit = 0;
  std::int64_t jobs = 0;          // kept jobs
  std::int64_t dropped = 0;       // no size/run time, too large, small
  double work = 0.0;              // sum of nodes * run over kept jobs
  bool has_estimates = false;     // some kept job has field 9 > 0
  std::optional<std::int64_t> max_nodes, max_procs;  // the header's
  std::int64_t procs_per_node = 1;  // the divisor for TraceUnit=nodes
  Amount largest = 0;             // largest size (in the unit) of a job with data
  std::int64_t partial = 0;       // status 2-4 lines not replayed
  std::int64_t malformed = 0;     // TraceErrors=skip: lines skipped
  std::string first_malformed;    // ... the first one's message
  std::int64_t status[7] = {};    // lines by status: unknown, 0..5
};

struct Counts {
  std::int64_t read = 0;          // job lines read
  std::int64_t emitted = 0;
  std::int64_t no_data = 0;       // unknown or zero run time or size
  std::int64_t partial = 0;       // status 2-4 lines (TracePartial=drop)
  std::int64_t too_large = 0;
  std::int64_t small = 0;         // the no-small-jobs filter
  std::int64_t modelled = 0;      // estimate from the model
  std::int64_t overran = 0;       // run time > estimate in the trace (run cut)
  std::int64_t loops = 0;         // times the segment restarted
};

// The runtime-estimate model (after Tsafrir, Etsion and Feitelson 2005):
// estimates are a few round values, the maximum among the most popular;
// a job gets one drawn from those >= its run time.  Exposed for tests.
Duration model_estimate(Duration run, Duration max_estimate, std::mt19937_64& rng);
// Poisson(lambda) by inversion on our own uniform draw (portable), capped.
int draw_overhead(double lambda, int cap, std::mt19937_64& rng);

// Reads the whole trace once (streaming) with the rules' size filters.
// Errors name the file and the line.
swf::Result<TraceScan> scan_trace(const std::string& path, const JobRules& rules);
swf::Result<TraceScan> scan_trace_text(const std::string& text, const JobRules& rules);

class TraceStream {
 public:
  // Opens the trace and needs its scan (for the segment bounds).
  static swf::Result<TraceStream> open(const StreamSpec& spec, const TraceScan& scan);
  // The same over SWF text in memory (tests).
  static swf::Result<TraceStream> from_string(const StreamSpec& spec, const TraceScan& scan,
                                              std::string text);

  // Next job in submit order, nullopt at the end (horizon, max_jobs or the
  // end of the segment without loop).
  swf::Result<std::optional<Job>> next();
  const Counts& counts() const noexcept { return counts_; }
  // Length of the kept segment in trace seconds (one loop, unscaled).
  std::int64_t segment_length() const noexcept { return seg_to_ - seg_from_; }
  const swf::Reader* reader() const noexcept;

 private:
  TraceStream(const StreamSpec& spec, const TraceScan& scan);
  BasicStatus<swf::Error> reopen();
  std::optional<Job> convert(const swf::Job& j);

  StreamSpec spec_;
  std::string text_;  // from_string: replayed on loop
  bool in_memory_ = false;
  std::optional<swf::OrderedReader> reader_;
  std::int64_t seg_from_ = 0, seg_to_ = 0;  // trace submit times [from, to)
  std::int64_t offset_ = 0;                 // added per loop (segment length)
  std::int64_t ppn_ = 1;
  std::uint64_t seq_ = 0;
  bool done_ = false;
  std::int64_t emitted_at_loop_ = -1;  // emitted when the last pass began
  std::mt19937_64 rng_;
  Counts counts_;
};

}  // namespace flexco::sim

#endif  // FLEXCO_SIM_WORKLOAD_HPP
