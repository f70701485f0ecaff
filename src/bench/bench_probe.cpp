// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-bench-probe: how long probe() takes on a snapshot shaped like the
// one contrib/bench-probe builds on the local grid, without Slurm.  A
// program that prints figures, not a test.
//
//   flexco-bench-probe [--nodes N] [--queue N[,N...]] [--repeat N] [--seed N]
//                      [--shared N]
//   defaults: 16 nodes, queues 100,1000,10000, 200 repeats, seed 1, shared 0
//
// --shared N: the snapshot has a plan cache (flexco_plan_cache, as the
// plugin's snapshots do) and N probes share it before it is replaced by an
// empty one, as when the plugin retakes its shared snapshot; 0: no cache.
//
// The snapshot: every node runs one exclusive job (node i ends 1000 + 100 i
// minutes from now), then Q pending jobs of 1..nodes/2 nodes and 10..600
// minutes (uniform, seeded), priority falling with the job id, none planned
// by backfill.  The request is the benchmark's {"nodes":2,"duration":3600}.
// Prints the median and the fastest probe() time per queue size, and the
// time of build_availability alone (the part that walks every job).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "core/availability.hpp"
#include "core/capi_probe.h"
#include "core/probe.hpp"
#include "core/cluster_snapshot.h"

using namespace flexco;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kNow = 1'700'000'000;

struct Snap {
  std::vector<std::string> names;
  std::vector<flexco_snap_node_t> nodes;
  std::vector<flexco_snap_job_t> jobs;
  std::vector<uint32_t> idx;
  flexco_snap_part_t part{};
  flexco_snapshot_t s{};
};

void fill(Snap& m, std::uint32_t nodes, std::size_t queue, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  m.names.clear();
  for (std::uint32_t i = 0; i < nodes; ++i) m.names.push_back("n" + std::to_string(i + 1));
  m.nodes.clear();
  m.idx.clear();
  for (std::uint32_t i = 0; i < nodes; ++i) {
    m.nodes.push_back(flexco_snap_node_t{m.names[i].c_str(), 8, 1});
    m.idx.push_back(i);
  }
  m.part = flexco_snap_part_t{"debug", FLEXCO_SNAP_FOREVER, 1, 1, 0, nodes};
  m.jobs.clear();
  std::uint32_t id = 1;
  for (std::uint32_t i = 0; i < nodes; ++i) {
    flexco_snap_job_t j{};
    j.job_id = id++;
    j.kind = FLEXCO_JOB_RUNNING;
    j.time_limit = (1000 + 100 * std::int64_t{i}) * 60;
    j.start = kNow - 600;
    j.end = j.start + j.time_limit;
    j.min_nodes = 1;
    j.priority = 1;
    j.partition = "debug";
    j.node_off = static_cast<std::uint32_t>(m.idx.size());
    j.node_cnt = 1;
    m.idx.push_back(i);
    m.jobs.push_back(j);
  }
  std::uniform_int_distribution<std::uint32_t> n(1, std::max<std::uint32_t>(1, nodes / 2));
  std::uniform_int_distribution<std::int64_t> t(10, 600);
  for (std::size_t q = 0; q < queue; ++q) {
    flexco_snap_job_t j{};
    j.job_id = id++;
    j.kind = FLEXCO_JOB_PENDING;
    j.min_nodes = n(rng);
    j.time_limit = t(rng) * 60;
    j.priority = 4'000'000 - j.job_id;
    j.partition = "debug";
    m.jobs.push_back(j);
  }
  m.s = flexco_snapshot_t{};
  m.s.cluster = "bench";
  m.s.when = kNow;
  m.s.bf_last_cycle = kNow - 2;
  m.s.nodes = m.nodes.data();
  m.s.node_count = nodes;
  m.s.jobs = m.jobs.data();
  m.s.job_count = static_cast<std::uint32_t>(m.jobs.size());
  m.s.parts = &m.part;
  m.s.part_count = 1;
  m.s.node_idx = m.idx.data();
  m.s.node_idx_count = static_cast<std::uint32_t>(m.idx.size());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::uint32_t nodes = 16;
  std::vector<std::size_t> sizes{100, 1000, 10000};
  int repeat = 200;
  std::uint64_t seed = 1;
  int shared = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--nodes") {
      nodes = static_cast<std::uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    } else if (a == "--queue") {
      sizes.clear();
      for (char* p = argv[i + 1]; *p;) {
        sizes.push_back(std::strtoul(p, &p, 10));
        if (*p == ',') ++p;
      }
    } else if (a == "--repeat") {
      repeat = std::atoi(argv[i + 1]);
    } else if (a == "--shared") {
      shared = std::atoi(argv[i + 1]);
    } else if (a == "--seed") {
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--nodes N] [--queue N,...] [--repeat N] [--seed N] [--shared N]\n",
                   argv[0]);
      return 2;
    }
  }
  if (nodes < 2 || repeat < 1 || shared < 0) return 2;

  auto parsed = parse_probe_request(R"({"nodes":2,"duration":3600})");
  if (!std::holds_alternative<ProbeRequest>(parsed)) return 1;
  const ProbeRequest req = std::get<ProbeRequest>(parsed);
  std::printf("nodes %u, request {\"nodes\":2,\"duration\":3600}, %d repeats, %d per snapshot cache\n",
              nodes, repeat, shared);
  std::printf("%8s %14s %12s %16s %9s %7s %12s %12s\n", "pending", "probe p50 ms",
              "probe min ms", "availability ms", "offers", "queue", "offer[0] +s", "reference +s");
  for (std::size_t q : sizes) {
    Snap m;
    fill(m, nodes, q, seed);
    std::vector<double> tp, ta;
    std::size_t offers = 0, considered = 0;
    Time first = kNever, reference = kNever;
    for (int r = 0; r < repeat; ++r) {
      if (shared > 0 && r % shared == 0) {
        flexco_plan_cache_free(m.s.plan_cache);
        m.s.plan_cache = flexco_plan_cache_create();
      }
      auto t0 = Clock::now();
      auto res = probe(m.s, req, 100, 60, ProbePolicy{});
      auto t1 = Clock::now();
      if (!std::holds_alternative<ProbeResult>(res)) {
        std::fprintf(stderr, "probe failed: %s\n", std::get<ProbeError>(res).message.c_str());
        return 1;
      }
      offers = std::get<ProbeResult>(res).offers.size();
      considered = std::get<ProbeResult>(res).queue_considered;
      reference = std::get<ProbeResult>(res).job_start;
      if (offers) first = std::get<ProbeResult>(res).offers[0].start;
      AvailabilityQuery aq;
      aq.horizon = 30 * 86400;
      auto t2 = Clock::now();
      auto av = build_availability(m.s, aq);
      auto t3 = Clock::now();
      if (!av.ok()) return 1;
      tp.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      ta.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
    }
    flexco_plan_cache_free(m.s.plan_cache);
    m.s.plan_cache = nullptr;
    auto rel = [](Time t) { return t == kNever ? -1.0 : static_cast<double>(t - kNow); };
    std::printf("%8zu %14.3f %12.3f %16.3f %9zu %7zu %12.0f %12.0f\n", q, median(tp),
                *std::min_element(tp.begin(), tp.end()), median(ta), offers, considered,
                rel(first), rel(reference));
  }
  return 0;
}
