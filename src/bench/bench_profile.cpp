// SPDX-License-Identifier: GPL-2.0-or-later
// flexco-bench-profile: latency of the availability profile's operations at
// 1k, 100k and 1M change points.  A program that prints figures, not a test.
//
//   flexco-bench-profile [--sparse] [POINTS...]   default: 1000 100000 1000000
//
// Every operation is timed one call at a time (steady_clock), and the table
// gives the median, the 99th percentile and the mean over all calls.  The
// workload is random but fixed (seeded), see doc/profile.md:
//   default   a 30-day horizon (a backfill plan), the cluster sized so that
//             jobs keep it about 60 % busy: more points = a bigger cluster;
//   --sparse  one point per 60 s of horizon on 1024 nodes (1M points = 694
//             days): a stress case where far answers need many rounds.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/profile.hpp"

using namespace flexco;

namespace {

using Clock = std::chrono::steady_clock;

constexpr Time kHorizon = 30 * 86400;  // default workload
constexpr double kLoad = 0.6;
constexpr Amount kSparseCapacity = 1024;
constexpr Time kSparseSecondsPerPoint = 60;

bool g_sparse = false;

// Jobs: 1..32 nodes for 1 min..2 h, so a mean of 16.5 x 3630 node-seconds.
Time horizon_for(std::size_t points) {
  return g_sparse ? static_cast<Time>(points) * kSparseSecondsPerPoint : kHorizon;
}
Amount capacity_for(std::size_t points) {
  if (g_sparse) return kSparseCapacity;
  double work = static_cast<double>(points) / 2 * 16.5 * 3630;
  return std::max<Amount>(64, static_cast<Amount>(work / (kHorizon * kLoad)));
}

struct Stats {
  double median_us = 0, p99_us = 0, mean_us = 0;
  std::size_t count = 0;
};

Stats summarize(std::vector<double>& ns) {
  Stats s;
  s.count = ns.size();
  if (ns.empty()) return s;
  std::sort(ns.begin(), ns.end());
  double sum = 0;
  for (double x : ns) sum += x;
  s.median_us = ns[ns.size() / 2] / 1000.0;
  s.p99_us = ns[std::min(ns.size() - 1, ns.size() * 99 / 100)] / 1000.0;
  s.mean_us = sum / static_cast<double>(ns.size()) / 1000.0;
  return s;
}

// Times one call; keeps the result alive so the call cannot be dropped.
template <typename F>
double time_ns(F&& f, std::uint64_t& sink) {
  auto t0 = Clock::now();
  auto r = f();
  auto t1 = Clock::now();
  sink += static_cast<std::uint64_t>(r);  // unsigned: wraps, never overflows
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
}

void row(std::size_t points, const char* op, Stats s) {
  std::printf("%9zu  %-28s %8zu  %9.2f  %9.2f  %9.2f\n", points, op, s.count, s.median_us, s.p99_us,
              s.mean_us);
}

struct Workload {
  std::mt19937_64 rng;
  Time horizon;
  explicit Workload(std::uint64_t seed, Time h) : rng(seed), horizon(h) {}
  std::int64_t in(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
  Time t() { return in(0, horizon - 1); }
  Duration job_length() { return in(60, 2 * 3600); }  // one minute to two hours
  Amount job_size() { return in(1, 32); }
};

// A profile with about `points` change points: jobs placed at random over
// the horizon; jobs that do not fit are skipped, as a scheduler would.
// Gives up after 20 attempts per point.
Profile build(std::size_t points, std::uint64_t seed, double* add_us) {
  Profile p = Profile::create(0, capacity_for(points)).value();
  Workload w(seed, horizon_for(points));
  std::size_t adds = 0;
  auto t0 = Clock::now();
  for (std::size_t tries = 0; p.point_count() < points && tries < 20 * points; ++tries) {
    auto id = p.add_span(w.t(), w.job_length(), w.job_size());
    adds += id.ok();
  }
  auto t1 = Clock::now();
  if (add_us)
    *add_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / static_cast<double>(adds);
  return p;
}

void bench_size(std::size_t points) {
  std::uint64_t sink = 0;
  double build_us = 0;
  Profile p = build(points, 42, &build_us);
  Profile q = build(points, 43, nullptr);
  Profile r = build(points, 44, nullptr);
  const Amount cap = p.capacity();
  Workload w(7, horizon_for(points));
  const std::size_t queries = points >= 1000000 ? 50000 : 200000;
  std::vector<double> ns;
  ns.reserve(queries);

  auto run = [&](const char* name, std::size_t n, auto&& op) {
    ns.clear();
    for (std::size_t i = 0; i < n; ++i) ns.push_back(op());
    row(p.point_count(), name, summarize(ns));
  };

  run("free_at", queries, [&] {
    Time t = w.t();
    return time_ns([&] { return p.free_at(t).value(); }, sink);
  });
  run("min_over (d <= 24 h)", queries, [&] {
    Time t = w.t();
    Duration d = w.in(60, 86400);
    return time_ns([&] { return p.min_over(t, d).value(); }, sink);
  });
  run("earliest_fit (n 1..C)", queries, [&] {
    Time t = w.t();
    Duration d = w.in(60, 86400);
    Amount n = w.in(1, cap);
    return time_ns([&] { return p.earliest_fit(t, d, n).value(); }, sink);
  });
  run("earliest_fit (n 0.9C..C)", queries, [&] {
    Time t = w.t();
    Duration d = w.in(60, 86400);
    Amount n = w.in(cap * 9 / 10, cap);
    return time_ns([&] { return p.earliest_fit(t, d, n).value(); }, sink);
  });
  run("next_fit (from a candidate)", queries, [&] {
    Duration d = w.in(60, 86400);
    Amount n = w.in(1, cap);
    Time s = p.earliest_fit(w.t(), d, n).value();
    if (s == kNever) s = 0;
    return time_ns([&] { return p.next_fit(s, d, n).value(); }, sink);
  });

  // add / remove: batches of 1000 spans added, then removed in random order,
  // so that a removal does not run on the add's warm cache path.
  std::vector<double> add_ns, rem_ns, shrink_ns;
  std::vector<SpanId> ids;
  for (std::size_t batch = 0; batch < queries / 1000; ++batch) {
    ids.clear();
    for (int i = 0; i < 1000; ++i) {
      Time t = w.t();
      Duration d = w.job_length();
      Amount a = w.in(1, 8);
      auto t0 = Clock::now();
      auto id = p.add_span(t, d, a, Admission::kForce);
      auto t1 = Clock::now();
      add_ns.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
      ids.push_back(id.value());
    }
    std::shuffle(ids.begin(), ids.end(), w.rng);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      SpanId id = ids[i];
      if (i % 2 == 0) {
        Span s = p.span(id).value();
        Time end = s.start + (s.end - s.start) / 2 + 1;
        auto t0 = Clock::now();
        Status st = p.shrink_span(id, end, s.amount);
        auto t1 = Clock::now();
        sink += st.ok();
        shrink_ns.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
      }
      auto t0 = Clock::now();
      Status st = p.remove_span(id);
      auto t1 = Clock::now();
      sink += st.ok();
      rem_ns.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
    }
  }
  row(p.point_count(), "add_span (forced)", summarize(add_ns));
  row(p.point_count(), "shrink_span (early end)", summarize(shrink_ns));
  row(p.point_count(), "remove_span", summarize(rem_ns));

  const std::vector<const Profile*> three = {&p, &q, &r};
  const std::size_t co_queries = points >= 1000000 ? 10000 : points >= 100000 ? 20000 : 50000;
  run("common start, each (3 prof.)", co_queries, [&] {
    Time t = w.t();
    Duration d = w.in(60, 86400);
    std::vector<Demand> parts = {{&p, w.in(1, cap)}, {&q, w.in(1, cap)}, {&r, w.in(1, cap)}};
    return time_ns([&] { return earliest_common_start(parts, t, d).value(); }, sink);
  });
  run("common start, sum (3 prof.)", co_queries, [&] {
    Time t = w.t();
    Duration d = w.in(60, 86400);
    Amount n = w.in(1, 3 * cap);
    return time_ns([&] { return earliest_common_start_sum(three, t, d, n).value(); }, sink);
  });
  // Many summed queries over one snapshot: materialize the sum once.
  ns.clear();
  for (int i = 0; i < 5; ++i) {
    auto t0 = Clock::now();
    auto sum = Profile::sum(three);
    auto t1 = Clock::now();
    sink += sum.value().point_count();
    ns.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  row(p.point_count(), "Profile::sum (3 prof.) build", summarize(ns));
  const Profile summed = Profile::sum(three).value();
  run("  then earliest_fit on it", queries, [&] {
    Time t = w.t();
    Duration d = w.in(60, 86400);
    Amount n = w.in(1, 3 * cap);
    return time_ns([&] { return summed.earliest_fit(t, d, n).value(); }, sink);
  });
  std::printf("%9zu  %-28s %8s  %9.2f  (mean per add while building, fit check included)\n",
              p.point_count(), "build (add_span, must fit)", "", build_us);
  if (sink == 42) std::printf(" ");  // keeps the results observable
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--sparse") {
      g_sparse = true;
      continue;
    }
    char* end = nullptr;
    unsigned long long v = std::strtoull(argv[i], &end, 10);
    if (*argv[i] == '\0' || *end != '\0' || v < 1 || v > 50000000ULL) {
      std::fprintf(stderr, "usage: %s [--sparse] [POINTS...]  (each 1..50000000)\n", argv[0]);
      return 2;
    }
    sizes.push_back(static_cast<std::size_t>(v));
  }
  if (sizes.empty()) sizes = {1000, 100000, 1000000};

  if (g_sparse)
    std::printf("flexco profile benchmark, sparse workload: %" PRId64 " nodes, one change point per %" PRId64
                " s of horizon\n", kSparseCapacity, kSparseSecondsPerPoint);
  else
    std::printf("flexco profile benchmark: 30-day horizon, cluster of C nodes about %.0f%% busy with\n"
                "jobs of 1-32 nodes x 1 min-2 h (C grows with the number of points)\n", kLoad * 100);
  std::printf("compiler: g++ %s, ", __VERSION__);
#if defined(__OPTIMIZE__)
  std::printf("optimized build");
#else
  std::printf("UNOPTIMIZED build (figures are not representative; build with -O2)");
#endif
#if defined(__SANITIZE_ADDRESS__)
  std::printf(", AddressSanitizer ON (figures are not representative)");
#endif
  std::printf("\nlatency per call in microseconds (steady_clock around each call)\n\n");
  std::printf("%9s  %-28s %8s  %9s  %9s  %9s\n", "points", "operation", "calls", "median", "p99",
              "mean");
  for (std::size_t n : sizes) {
    auto t0 = Clock::now();
    std::printf("%9s  C = %" PRId64 " nodes, horizon %" PRId64 " s\n", "", capacity_for(n), horizon_for(n));
    bench_size(n);
    std::printf("%9s  (size done in %.1f s)\n\n", "",
                std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 0;
}
