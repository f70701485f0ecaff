// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-sim: replays SWF traces through the core planners; see
// doc/flexco-sim.1 and doc/sim.md.

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "flexco_config.h"
#include "sim/config.hpp"
#include "sim/cores_whatif.hpp"

namespace {

const char* kUsage =
    "Usage: flexco-sim [-c FILE] [--jobs FILE] [--moves FILE] [Key=Value ...]\n"
    "       flexco-sim --cores-whatif Trace=FILE [Jobs=N] [Bat=H,...] [Stf=H,...]\n"
    "                  [Scheduler=conservative|easy] [ServiceLevel=rigid|flexible] ...\n"
    "Replays SWF traces on simulated clusters and a co-allocating metascheduler\n"
    "and prints the metrics as key=value lines.  See flexco-sim(1).\n";

int die(const std::string& msg, int code = 1) {
  std::fprintf(stderr, "flexco-sim: error: %s\n", msg.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace flexco::sim;
  SimConfig cfg;
  std::vector<std::string> words;
  std::string conf, jobs_path, moves_path;
  if (argc >= 2 && std::strcmp(argv[1], "--cores-whatif") == 0) {
    // The CORES probing experiment (doc/sim-report.md): its own words.
    WhatifConfig wc;
    std::vector<std::string> ww(argv + 2, argv + argc);
    if (auto st = apply_whatif_words(wc, ww); !st) return die(st.error().message, 2);
    if (auto st = run_whatif(wc); !st) return die(st.error().message);
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "-V" || a == "--version") {
      std::printf("%s %s\n", "flexco-sim", PACKAGE_VERSION);
      return 0;
    } else if (a == "-c" || a == "--config") {
      if (!need(conf)) return die("-c needs a file", 2);
    } else if (a == "--jobs") {
      if (!need(jobs_path)) return die("--jobs needs a file", 2);
    } else if (a == "--moves") {
      if (!need(moves_path)) return die("--moves needs a file", 2);
    } else if (a.find('=') != std::string::npos && a[0] != '-') {
      words.push_back(a);
    } else {
      std::fputs(kUsage, stderr);
      return die("unknown argument '" + a + "'", 2);
    }
  }
  if (!conf.empty())
    if (auto st = load_config_file(cfg, conf); !st) return die(st.error().message, 2);
  if (auto st = apply_words(cfg, words, "command line"); !st) return die(st.error().message, 2);

  auto prep = prepare(cfg);
  if (!prep) return die(prep.error().message, 2);
  Prepared& p = prep.value();
  Engine& e = *p.engine;
  for (const std::string& note : p.notes) std::fprintf(stderr, "flexco-sim: %s\n", note.c_str());

  std::ofstream jobs_out, moves_out;
  if (!jobs_path.empty()) {
    jobs_out.open(jobs_path);
    if (!jobs_out) return die(jobs_path + ": cannot write");
    jobs_out << "id,kind,submit,start,end,nodes,run,estimate,parts\n";
    e.on_finish = [&](const JobRecord& r) {
      jobs_out << r.id << ',' << (r.kind == JobKind::kLocal ? "local" : "meta") << ',' << r.submit
               << ',' << r.start << ',' << r.end << ',' << r.nodes << ',' << r.run << ','
               << r.estimate << ',';
      for (std::size_t i = 0; i < r.parts.size(); ++i)
        jobs_out << (i ? ";" : "") << cfg.clusters[r.parts[i].first].name << ':' << r.parts[i].second;
      jobs_out << '\n';
    };
  }
  if (!moves_path.empty()) {
    moves_out.open(moves_path);
    if (!moves_out) return die(moves_path + ": cannot write");
    moves_out << "id,at,kind,old_start,new_start,old_parts,new_parts,gain\n";
    e.on_move = [&](const MoveRecord& m) {
      moves_out << m.id << ',' << m.at << ',' << flexco::reschedule_kind_name(m.kind) << ','
                << m.old_start << ',' << m.new_start << ',' << m.old_parts << ',' << m.new_parts
                << ',' << m.gain << '\n';
    };
  }

  std::vector<JobSource*> sources;
  for (auto& s : p.sources) sources.push_back(s.get());
  auto t0 = std::chrono::steady_clock::now();
  auto st = e.run(sources);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st) return die(st.error().message);

  const Metrics& m = e.metrics();
  std::int64_t read = 0, modelled = 0, small = 0, too_large = 0, no_data = 0, loops = 0,
               partial = 0;
  for (auto& s : p.sources) {
    const Counts& c = s->stream().counts();
    read += c.read;
    modelled += c.modelled;
    small += c.small;
    too_large += c.too_large;
    no_data += c.no_data;
    partial += c.partial;
    loops += c.loops;
  }
  const EngineConfig& ec = cfg.engine;
  std::printf("reschedule=%s\nplanner=%s\nbackfill=%s\npublish_interval=%lld\nseed=%llu\n",
              resched_name(ec.resched), flexco::policy_name(ec.planner),
              flexco::backfill_name(ec.backfill), static_cast<long long>(ec.publish_interval),
              static_cast<unsigned long long>(cfg.seed));
  std::printf("estimate_factor=%g\nno_small_jobs=%s\n", cfg.local_rules.estimate_factor,
              cfg.local_rules.no_small ? "yes" : "no");
  std::printf("estimates=%s\ntrace_unit=%s\ntrace_size=%s\n",
              cfg.local_rules.exact_estimates ? "exact"
              : cfg.local_rules.model_always  ? "model"
                                              : "trace",
              cfg.local_rules.unit == SizeUnit::kNodes ? "nodes" : "procs",
              cfg.local_rules.size_field == SizeField::kRequested ? "requested" : "allocated");
  for (std::size_t i = 0; i < cfg.clusters.size(); ++i)
    std::printf("cluster_%s_nodes=%lld\n", cfg.clusters[i].name.c_str(),
                static_cast<long long>(p.cluster_nodes[i]));
  std::printf("horizon=%lld\nlocal_time_scale=%.6g\nmeta_time_scale=%.6g\noffered_load=%.4f\n"
              "target_load=%.4f\nmeta_share=%.4f\n",
              static_cast<long long>(p.horizon), p.local_time_scale, p.meta_time_scale,
              p.offered_load, cfg.target_load, p.meta_share);
  if (cfg.meta_share >= 0) std::printf("target_meta_share=%.4f\n", cfg.meta_share);
  std::printf("trace_jobs_read=%lld\nmodelled_estimates=%lld\nsmall_dropped=%lld\n"
              "too_large_dropped=%lld\nno_data_dropped=%lld\npartial_dropped=%lld\n"
              "malformed_skipped=%lld\nlocal_loops=%lld\n",
              (long long)read, (long long)modelled, (long long)small, (long long)too_large,
              (long long)no_data, (long long)partial, (long long)p.malformed, (long long)loops);
  auto kind = [&](const char* name, const KindMetrics& k) {
    std::printf("%s_jobs=%lld\n%s_response=%.2f\n%s_wait=%.2f\n%s_bsld=%.4f\n", name,
                (long long)k.jobs, name, k.mean_response(), name, k.mean_wait(), name,
                k.mean_bsld());
  };
  // The load the simulation really received: the work of the jobs it ran
  // (all of them were submitted before the horizon), beside the targets.
  const double cap_work = static_cast<double>(m.capacity) * static_cast<double>(p.horizon);
  std::printf("simulated_load=%.4f\nsimulated_meta_share=%.4f\n",
              cap_work > 0 ? m.all.work / cap_work : 0.0,
              m.all.work > 0 ? m.meta.work / m.all.work : 0.0);
  kind("all", m.all);
  kind("local", m.local);
  kind("meta", m.meta);
  std::printf("utilization=%.6f\nmakespan=%lld\n", m.utilization(),
              static_cast<long long>(m.last_end - (m.first_submit == flexco::kNever ? 0 : m.first_submit)));
  std::printf("meta_single=%lld\nmeta_split=%lld\noverhead_work=%.0f\nrejected=%lld\n"
              "early_ends=%lld\nresched_offers=%lld\nshifts=%lld\nremaps=%lld\n"
              "remaps_to_one=%lld\nmessages=%lld\nviolations=%lld\npublications=%lld\nevents=%lld\n",
              (long long)m.meta_single, (long long)m.meta_split, m.overhead_work,
              (long long)m.rejected, (long long)m.early_ends, (long long)m.resched_offers,
              (long long)m.shifts, (long long)m.remaps, (long long)m.remaps_to_one,
              (long long)m.messages, (long long)m.violations, (long long)m.publications,
              (long long)m.events);
  // Saturation: does the backlog of unstarted work grow over the second
  // half of the horizon (doc/sim.md)?
  const Saturation& sat = m.saturation;
  const double cap = static_cast<double>(m.capacity);
  std::printf("saturation_window=%lld\nwait_first_window=%.2f\nwait_last_window=%.2f\n"
              "backlog_mid_hours=%.2f\nbacklog_end_hours=%.2f\nqueued_mid=%lld\n"
              "queued_end=%lld\nbacklog_growth=%.4f\nsaturated=%s\n",
              static_cast<long long>(sat.window), sat.first.mean_wait(), sat.last.mean_wait(),
              cap > 0 ? sat.backlog_mid / cap / 3600 : 0.0,
              cap > 0 ? sat.backlog_end / cap / 3600 : 0.0, (long long)sat.queued_mid,
              (long long)sat.queued_end, sat.growth(m.capacity, p.horizon),
              sat.saturated(m.capacity, p.horizon) ? "yes" : "no");
  std::printf("wall_seconds=%.3f\nevents_per_second=%.0f\n", secs, secs > 0 ? m.events / secs : 0);
  std::fprintf(stderr, "flexco-sim: %lld events in %.2f s (%.0f events/s)\n", (long long)m.events,
               secs, secs > 0 ? m.events / secs : 0);
  return 0;
}
