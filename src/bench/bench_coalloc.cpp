// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-bench-coalloc: latency of the co-allocation planners and of the
// rescheduling decision for 3, 16 and 64 clusters whose free profiles have
// about 1k and 100k change points each.  A program that prints figures,
// not a test.
//
//   flexco-bench-coalloc [-n REQUESTS] [CLUSTERSxPOINTS ...]
//       default: -n 2000  3x1000 16x1000 64x1000 3x100000 16x100000
//
// Every call is timed alone (steady_clock); the table gives the median,
// the 99th percentile and the mean.  The workload is random but fixed
// (seeded): each cluster has 64..1024 nodes and planned jobs (1..capacity/8
// nodes, 1 min..4 h, admitted only where they fit) over one minute of
// horizon per change point asked for; requests want 1..1.5x the mean
// capacity (so many must split), 1 min..4 h, ready somewhere in the first
// half of the horizon, overhead 0.1.  CORES looks at 16 candidate starts.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/coalloc.hpp"

using namespace flexco;

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  double median_us = 0, p99_us = 0, mean_us = 0;
};

Stats summarize(std::vector<double>& ns) {
  Stats s;
  if (ns.empty()) return s;
  std::sort(ns.begin(), ns.end());
  double sum = 0;
  for (double x : ns) sum += x;
  s.median_us = ns[ns.size() / 2] / 1000.0;
  s.p99_us = ns[std::min(ns.size() - 1, ns.size() * 99 / 100)] / 1000.0;
  s.mean_us = sum / static_cast<double>(ns.size()) / 1000.0;
  return s;
}

// Jobs of 1..capacity/8 nodes for 1 min..4 h at random starts over a
// horizon of one minute per point asked for, admitted only where they fit
// (a plan never over-subscribes), until the profile has `points` points.
Profile make_cluster(std::mt19937_64& rng, Amount capacity, std::size_t points) {
  Profile p = Profile::create(0, capacity).value();
  std::uniform_int_distribution<Time> start(0, static_cast<Time>(points) * 60);
  std::uniform_int_distribution<Duration> dur(60, 4 * 3600);
  std::uniform_int_distribution<Amount> nodes(1, std::max<Amount>(1, capacity / 8));
  for (std::size_t tries = 0; p.point_count() < points && tries < 50 * points; ++tries)
    (void)p.add_span(start(rng), dur(rng), nodes(rng));
  return p;
}

void run(std::size_t clusters, std::size_t points, std::size_t requests) {
  std::mt19937_64 rng(0xc0a110cULL ^ (clusters * 1000003u) ^ points);
  std::vector<Profile> profiles;
  profiles.reserve(clusters);
  std::vector<ClusterView> views;
  std::uniform_int_distribution<Amount> cap(64, 1024);
  Amount total = 0;
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < clusters; ++i) {
    Amount c = cap(rng);
    total += c;
    profiles.push_back(make_cluster(rng, c, points));
  }
  double build_s = std::chrono::duration<double>(Clock::now() - t0).count();
  for (std::size_t i = 0; i < clusters; ++i) {
    ClusterView v;
    v.name = "c" + std::to_string(i);
    v.capacity = profiles[i].capacity();
    v.free = &profiles[i];
    v.arrival_rate = 0.0005;
    v.service_rate = 1.0 / 3600.0 / static_cast<double>(v.capacity) * 2.0;
    views.push_back(std::move(v));
  }
  Amount mean_cap = total / static_cast<Amount>(clusters);
  std::uniform_int_distribution<Amount> want(1, mean_cap * 3 / 2);
  std::uniform_int_distribution<Duration> runtime(60, 4 * 3600);
  std::uniform_int_distribution<Time> ready(0, static_cast<Time>(points) * 30);
  std::vector<CoallocRequest> reqs(requests);
  for (CoallocRequest& r : reqs) {
    r.nodes = want(rng);
    r.runtime = runtime(rng);
    r.ready = ready(rng);
    r.overhead = 0.1;
  }
  std::printf("%3zu clusters x %7zu points (built in %.1f s), %zu requests:\n", clusters,
              points, build_s, requests);
  std::fflush(stdout);
  std::vector<CoallocPlan> flexco_plans;
  for (Policy pol : {Policy::kFlexCo, Policy::kCoarp, Policy::kHpcm, Policy::kCores}) {
    PlannerState st;
    std::vector<double> ns;
    std::size_t split = 0, failed = 0;
    for (const CoallocRequest& r : reqs) {
      auto a = Clock::now();
      auto p = plan_coalloc(pol, r, views, st);
      ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - a).count());
      if (!p) {
        ++failed;
        continue;
      }
      if (p.value().split()) ++split;
      if (pol == Policy::kFlexCo) flexco_plans.push_back(p.value());
    }
    Stats s = summarize(ns);
    std::printf("  %-22s median %9.1f us  p99 %9.1f us  mean %9.1f us  (%zu split, %zu none)\n",
                policy_name(pol), s.median_us, s.p99_us, s.mean_us, split, failed);
  }
  // Rescheduling: each flexco plan, one hour later than it could start.
  std::vector<double> ns;
  std::size_t adopted = 0;
  std::size_t k = 0;
  for (const CoallocRequest& r : reqs) {
    if (k >= flexco_plans.size()) break;
    CoallocPlan cur = flexco_plans[k++];
    cur.start += 3600;
    auto a = Clock::now();
    auto d = reschedule_coalloc(r, cur, views, r.ready);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - a).count());
    if (d && d.value().kind != RescheduleKind::kNone) ++adopted;
  }
  Stats s = summarize(ns);
  std::printf("  %-22s median %9.1f us  p99 %9.1f us  mean %9.1f us  (%zu adopted)\n",
              "reschedule shift+remap", s.median_us, s.p99_us, s.mean_us, adopted);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t requests = 2000;
  std::vector<std::pair<std::size_t, std::size_t>> configs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      requests = std::strtoul(argv[++i], nullptr, 10);
      continue;
    }
    std::size_t c = 0, p = 0;
    if (std::sscanf(argv[i], "%zux%zu", &c, &p) != 2 || c == 0 || p == 0) {
      std::fprintf(stderr, "usage: %s [-n REQUESTS] [CLUSTERSxPOINTS ...]\n", argv[0]);
      return 2;
    }
    configs.emplace_back(c, p);
  }
  if (configs.empty())
    configs = {{3, 1000}, {16, 1000}, {64, 1000}, {3, 100000}, {16, 100000}};
  for (auto [c, p] : configs) run(c, p, requests);
  return 0;
}
