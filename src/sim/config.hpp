// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-sim's configuration: `Key=Value` words, Slurm style, from a file
// (one or more per line, '#' comments) and then from the command line, the
// later word winning.  `ClusterName=... Nodes=... Trace=... Part=i/n` lines
// add clusters.  Every key is listed in doc/flexco-sim.1.

#ifndef FLEXCO_SIM_CONFIG_HPP
#define FLEXCO_SIM_CONFIG_HPP

#include <memory>
#include <string>
#include <vector>

#include "sim/sim_engine.hpp"
#include "sim/workload.hpp"

namespace flexco::sim {

struct LocalTrace {
  std::string path;
  int part = 0, parts = 1;  // Part=i/n: the i-th of n periods (0-based here)
};

struct ClusterConfig {
  std::string name;
  Amount nodes = 0;
  bool auto_nodes = false;         // Nodes=auto: from its first trace's header
  std::vector<LocalTrace> traces;  // local load, each Trace= one stream
};

struct SimConfig {
  std::vector<ClusterConfig> clusters;
  std::string trace_dir;        // relative trace paths are taken from here
  std::string base_dir;         // while reading a file: its directory (a
                                // relative TraceDir there is taken from it)
  std::string meta_trace;
  int meta_part = 0, meta_parts = 1;  // MetaPart=i/n (0-based here)
  std::uint64_t meta_max_jobs = 0;
  double target_load = 0.8;     // 0: no scaling (MetaTimeScale, LocalTimeScale)
  double meta_share = -1;       // < 0: local load as traced, metajobs fill up
  double meta_time_scale = 1.0;
  double local_time_scale = 1.0;
  std::string horizon = "local";  // "local", "meta" or seconds
  std::uint64_t seed = 1;
  JobRules local_rules;
  JobRules meta_rules;
  EngineConfig engine;
};

// Parses words into `config` ("Key=Value"); a ClusterName word starts a
// cluster and the Nodes/Trace/Part words after it on the same line belong
// to it; a cluster may have several Trace words, each Part applying to the
// Trace before it.  Errors name the source and the word.
Status apply_words(SimConfig& config, const std::vector<std::string>& words,
                   const std::string& where);
Status load_config_file(SimConfig& config, const std::string& path);

// A ready simulation: the engine, its sources, and what was derived.
struct Prepared {
  std::unique_ptr<Engine> engine;
  std::vector<std::unique_ptr<TraceSource>> sources;
  double meta_time_scale = 1.0;
  double local_time_scale = 1.0;
  Time horizon = 0;
  // What the jobs submitted within [0, horizon) carry, measured over the
  // streams as they will run (segments, loops, filters, run times cut at
  // their estimates): node-seconds over capacity x horizon, and the
  // metajobs' share of it.  prepare() scales the streams until these meet
  // TargetLoad and MetaShare, and fails if they cannot come within
  // kLoadTolerance of them.
  double offered_load = 0;
  double meta_share = 0;
  // Per trace read: lines skipped under TraceErrors=skip, cluster sizes
  // taken from a header (Nodes=auto); main prints them on stderr.
  std::vector<std::string> notes;
  std::vector<Amount> cluster_nodes;  // per cluster, Nodes=auto resolved
  std::int64_t malformed = 0;  // lines skipped over all traces (each once)
  std::int64_t partial = 0;    // partial-execution lines over all traces (each once)
};
inline constexpr double kLoadTolerance = 0.03;  // relative, for both
Result<Prepared> prepare(const SimConfig& config);

}  // namespace flexco::sim

#endif  // FLEXCO_SIM_CONFIG_HPP
