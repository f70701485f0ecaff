// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-sim --cores-whatif: the CORES thesis' probing experiment (§9.6):
// one site replaying batch jobs, every tenth job turned into an advance
// reservation request, candidates from the production probe (core/probe.cpp:
// even distribution, what-if fitness, static p_res), filtered at the
// admission threshold by one property method, then reserved.  Prints the
// success rate and the batch jobs' makespan cost per property method.
// Set-up and assumptions: doc/sim-report.md, "CORES what-if experiment".

#ifndef FLEXCO_SIM_CORES_WHATIF_HPP
#define FLEXCO_SIM_CORES_WHATIF_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "core/local_sched.hpp"
#include "core/profile.hpp"

namespace flexco::sim {

struct WhatifConfig {
  std::string trace;                  // SWF file (gzip allowed)
  std::int64_t jobs = 2000;           // the first N usable jobs
  std::int64_t cpus_per_node = 8;     // jobs take whole nodes
  Amount nodes = 144;                 // the site (Blue Horizon: 144 x 8)
  std::vector<Duration> bat = {0, 2 * 3600, 4 * 3600, 6 * 3600, 12 * 3600, 24 * 3600};
  std::vector<Duration> stf = {0, 3600, 2 * 3600, 5 * 3600, 10 * 3600, 30 * 3600};
  int candidates = 51;                // even distribution slots per request
  double threshold = 0.85;            // GRS and LRS admission threshold
  std::uint64_t seed = 1;             // which job of each ten is a request
  // The site's local scheduler and the policy the what-if fitness plans
  // with: conservative backfilling (default) or EASY (the thesis').
  Backfill scheduler = Backfill::kConservative;
  // SWF queue numbers (field 15) whose jobs are left out before the first
  // `jobs` are taken (Blue Horizon: 0 is "interactive", which the thesis
  // removed); none by default.
  std::vector<std::int64_t> exclude_queues;
  // The requests' service level (§9.6.2): rigid (the job's processors) or
  // flexible (0.5x to 2x its processors, Amdahl's law with a sequential
  // fraction drawn per request from [0, 0.1]).
  bool flexible = false;
};

// Parses Key=Value words (Trace, Jobs, Nodes, CpusPerNode, Bat, Stf (hours,
// comma separated), Candidates, Threshold, Seed, Scheduler (conservative or
// easy), ExcludeQueues (queue numbers, comma separated), ServiceLevel (rigid
// or flexible)).  Errors name the
// word.
Status apply_whatif_words(WhatifConfig& config, const std::vector<std::string>& words);

// Runs the experiment and prints it on stdout (key=value lines).
Status run_whatif(const WhatifConfig& config);

}  // namespace flexco::sim

#endif  // FLEXCO_SIM_CORES_WHATIF_HPP
