// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-bench-local-sched: how long the local-schedule planner takes on a
// big queue.  A program that prints figures, not a test.
//
//   flexco-bench-local-sched [--nodes N] [--queue N] [--slots N] [--sim N]
//                            [--repeat N] [--seed N]
//   defaults: 1000 nodes, 10000 queued jobs, 52 what-if slots, 10000 jobs
//   through the incremental scheduler, 5 repeats, seed 1
//
// The workload is random but fixed (seeded), see doc/local_sched.md:
//   - sizes: half the jobs take 1-8 nodes, the rest 9..nodes/4, uniform;
//   - estimates: log-uniform from 1 min to 24 h;
//   - a snapshot: the cluster 95 % busy with running jobs ending over the
//     next 24 h, then the queue;
//   - the simulation: jobs arrive about as fast as the cluster can run them
//     (offered load ~0.9) and run a uniform 10-100 % of their estimate.
// One-shot calls report the median and the fastest of --repeat runs.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/local_sched.hpp"

using namespace flexco;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  Amount nodes = 1000;
  std::size_t queue = 10000;
  std::size_t slots = 52;
  std::size_t sim = 10000;
  int repeat = 5;
  std::uint64_t seed = 1;
};

constexpr Time kNow = 1'700'000'000;  // 2023-11-14, any epoch time will do

Amount job_nodes(std::mt19937_64& rng, Amount capacity) {
  Amount small = std::min<Amount>(8, capacity);
  if (capacity <= 8 || rng() % 2 == 0) return std::uniform_int_distribution<Amount>(1, small)(rng);
  return std::uniform_int_distribution<Amount>(9, std::max<Amount>(9, capacity / 4))(rng);
}

Duration job_estimate(std::mt19937_64& rng) {
  double x = std::uniform_real_distribution<double>(std::log(60.0), std::log(86400.0))(rng);
  return static_cast<Duration>(std::exp(x));
}

LocalPlanInput snapshot(const Options& o) {
  std::mt19937_64 rng(o.seed);
  LocalPlanInput in;
  in.capacity = o.nodes;
  in.now = kNow;
  std::uint64_t id = 1;
  Amount busy = 0;
  while (busy < o.nodes * 95 / 100) {
    Amount n = std::min(job_nodes(rng, o.nodes), o.nodes - busy);
    Duration left = std::uniform_int_distribution<Duration>(60, 86400)(rng);
    Time start = kNow - std::uniform_int_distribution<Duration>(0, 3600)(rng);
    in.running.push_back(RunningJob{id++, n, start, kNow + left, start - 60});
    busy += n;
  }
  for (std::size_t k = 0; k < o.queue; ++k) {
    PendingJob j;
    j.id = id++;
    j.nodes = job_nodes(rng, o.nodes);
    j.estimate = job_estimate(rng);
    j.submit = kNow - static_cast<Time>(o.queue - k);
    in.queue.push_back(j);
  }
  return in;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Runs f `repeat` times; prints median and minimum.
template <typename F>
void time_it(const char* what, int repeat, F f) {
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = Clock::now();
    if (!f()) {
      std::fprintf(stderr, "flexco-bench-local-sched: %s failed\n", what);
      std::exit(EXIT_FAILURE);
    }
    ms.push_back(ms_since(t0));
  }
  std::sort(ms.begin(), ms.end());
  std::printf("  %-44s %10.2f ms  (min %.2f)\n", what, ms[ms.size() / 2], ms.front());
}

void one_shot(const Options& o) {
  LocalPlanInput in = snapshot(o);
  std::printf("snapshot: %" PRId64 " nodes, %zu running jobs (95 %% busy), %zu queued jobs\n",
              o.nodes, in.running.size(), in.queue.size());
  std::size_t points = 0;
  Time last = 0;
  time_it("plan_conservative", o.repeat, [&] {
    auto p = plan_conservative(in);
    if (!p) return false;
    points = p.value().profile.point_count();
    for (const PlannedJob& j : p.value().jobs) last = std::max(last, j.start);
    return true;
  });
  std::printf("  %-44s %10zu points, last start now + %.1f days\n", "  (resulting profile)", points,
              static_cast<double>(last - kNow) / 86400.0);
  time_it("plan_easy (with conservative estimates)", o.repeat, [&] { return plan_easy(in).ok(); });

  // A 64-node (at most the cluster), 2 h reservation at the event-based offer times of the base
  // profile (where it fits beside running jobs), padded with an even
  // distribution over the next 7 days (the thesis' 51 + 1 candidates).
  Profile base = build_base_profile(in).value();
  const Amount want = std::min<Amount>(64, o.nodes);
  std::vector<Placeholder> slots;
  for (Time s = base.earliest_fit(kNow, 7200, want).value(); s != kNever && slots.size() < o.slots;
       s = base.next_fit(s, 7200, want).value())
    slots.push_back(Placeholder{s, 7200, want});
  std::size_t events = slots.size();
  for (std::size_t k = 0; slots.size() < o.slots; ++k)
    slots.push_back(Placeholder{
        kNow + static_cast<Time>(k) * 7 * 86400 / static_cast<Time>(o.slots - events), 7200, want});
  time_it("delay_caused_by (1 slot, 2 plans)", o.repeat,
          [&] { return delay_caused_by(in, slots.front()).ok(); });
  char what[128];  // fits three 20-digit counts (GCC 16 checks)
  std::snprintf(what, sizeof what, "whatif_fitness (%zu slots: %zu event, %zu even)", slots.size(),
                events, slots.size() - events);
  double best = 0;
  time_it(what, std::max(1, o.repeat / 2), [&] {
    auto f = whatif_fitness(in, slots);
    if (!f) return false;
    best = 0;
    for (const SlotFitness& s : f.value().slots) best = std::max(best, s.fit);
    return true;
  });
  std::printf("  %-44s %10.4f\n", "  (best fit among the slots)", best);
}

void simulate(const Options& o, Backfill policy) {
  std::mt19937_64 rng(o.seed + 7);
  struct Job {
    PendingJob job;
    Duration runtime;
  };
  // Offered load ~0.9: mean arrival gap = mean area / (0.9 * capacity).
  std::vector<Job> trace;
  double area = 0;
  std::vector<std::pair<Amount, Duration>> shapes;
  for (std::size_t k = 0; k < o.sim; ++k) {
    Amount n = job_nodes(rng, o.nodes);
    Duration est = job_estimate(rng);
    Duration run = std::max<Duration>(
        1, static_cast<Duration>(est * std::uniform_real_distribution<double>(0.1, 1.0)(rng)));
    shapes.emplace_back(n, est);
    area += static_cast<double>(n) * static_cast<double>(run);
    trace.push_back(Job{PendingJob{k + 1, n, est, 0, 0}, run});
  }
  double gap = area / static_cast<double>(o.sim) / (0.9 * static_cast<double>(o.nodes));
  std::exponential_distribution<double> arrivals(1.0 / gap);
  double t = static_cast<double>(kNow);
  for (Job& j : trace) {
    t += arrivals(rng);
    j.job.submit = static_cast<Time>(t);
  }

  LocalScheduler s = LocalScheduler::create(o.nodes, kNow, policy).value();
  std::multimap<Time, std::uint64_t> ends;
  std::size_t next = 0, done = 0, events = 0, max_queue = 0;
  long double wait = 0;
  auto t0 = Clock::now();
  while (done < trace.size()) {
    Time now = s.next_decision_time();
    if (next < trace.size()) now = std::min(now, trace[next].job.submit);
    if (!ends.empty()) now = std::min(now, ends.begin()->first);
    if (!s.advance_to(now).ok()) std::exit(EXIT_FAILURE);
    while (!ends.empty() && ends.begin()->first == now) {
      if (!s.finish(ends.begin()->second).ok()) std::exit(EXIT_FAILURE);
      ends.erase(ends.begin());
      ++done;
    }
    while (next < trace.size() && trace[next].job.submit == now)
      if (!s.submit(trace[next++].job).ok()) std::exit(EXIT_FAILURE);
    auto started = s.schedule();
    if (!started) {
      std::fprintf(stderr, "flexco-bench-local-sched: %s\n", started.error().message.c_str());
      std::exit(EXIT_FAILURE);
    }
    for (const StartedJob& j : started.value()) {
      const Job& tj = trace[j.id - 1];
      ends.emplace(now + tj.runtime, j.id);
      wait += static_cast<long double>(now - tj.job.submit);
    }
    max_queue = std::max(max_queue, s.queued_count());
    ++events;
  }
  double total = ms_since(t0);
  std::printf(
      "  %-14s %zu jobs, %zu events: %9.1f ms  (%.1f us/event), longest queue %zu, "
      "mean wait %.0f s\n",
      backfill_name(policy), o.sim, events, total, 1000.0 * total / events, max_queue,
      static_cast<double>(wait / o.sim));
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return false;
    char* end = nullptr;
    long long v = std::strtoll(argv[++i], &end, 10);
    if (*end != '\0' || v < 1) return false;
    if (a == "--nodes")
      o.nodes = v;
    else if (a == "--queue")
      o.queue = static_cast<std::size_t>(v);
    else if (a == "--slots")
      o.slots = static_cast<std::size_t>(v);
    else if (a == "--sim")
      o.sim = static_cast<std::size_t>(v);
    else if (a == "--repeat")
      o.repeat = static_cast<int>(v);
    else if (a == "--seed")
      o.seed = static_cast<std::uint64_t>(v);
    else
      return false;
  }
  return o.nodes <= kMaxAmount;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: flexco-bench-local-sched [--nodes N] [--queue N] [--slots N] [--sim N] "
                 "[--repeat N] [--seed N]\n");
    return 2;
  }
  one_shot(o);
  std::printf("incremental scheduler (simulated cluster of %" PRId64 " nodes, load ~0.9):\n",
              o.nodes);
  simulate(o, Backfill::kConservative);
  simulate(o, Backfill::kEasy);
  return 0;
}
