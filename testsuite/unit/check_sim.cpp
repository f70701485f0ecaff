// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the simulator (src/sim, doc/sim.md): hand-computed
// scenarios run through the whole engine (conservative backfilling with and
// without an early end, a metajob shifted by an exact amount after an early
// end, a metajob remapped onto one cluster without its overhead, a
// violation of stale published availability), the workload streams (segments,
// aligned submit times, estimates, filters, loops, malformed lines reported
// by line number on the sim's input path), the estimate and overhead models,
// and the configuration's error messages.

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim/config.hpp"
#include "sim/sim_engine.hpp"
#include "sim/workload.hpp"

// Last: check.h defines macros (fail, ...) that clash with the C++ library.
#include <check.h>

using namespace flexco;
using namespace flexco::sim;

namespace {

#define EXPECT_EQ(X, Y)                                                                     \
  do {                                                                                      \
    const std::int64_t got_ = static_cast<std::int64_t>(X);                                 \
    const std::int64_t want_ = static_cast<std::int64_t>(Y);                                \
    ck_assert_msg(got_ == want_, "line %d: %s == %" PRId64 ", expected %" PRId64, __LINE__, \
                  #X, got_, want_);                                                         \
  } while (0)

#define EXPECT_CONTAINS(S, SUB)                                                        \
  do {                                                                                 \
    const std::string s_ = (S);                                                        \
    const std::string sub_ = (SUB);                                                    \
    ck_assert_msg(s_.find(sub_) != std::string::npos, "line %d: '%s' lacks '%s'", __LINE__, \
                  s_.c_str(), sub_.c_str());                                           \
  } while (0)

Job local(std::uint64_t id, int cluster, Time submit, Amount nodes, Duration est, Duration run) {
  Job j;
  j.id = id;
  j.kind = JobKind::kLocal;
  j.cluster = cluster;
  j.submit = submit;
  j.nodes = nodes;
  j.estimate = est;
  j.run = run;
  return j;
}

Job meta(std::uint64_t id, Time submit, Amount nodes, Duration est, Duration run, int ovh) {
  Job j = local(id, -1, submit, nodes, est, run);
  j.kind = JobKind::kMeta;
  j.overhead_pct = ovh;
  return j;
}

struct Outcome {
  Metrics metrics;
  std::map<std::uint64_t, JobRecord> jobs;
  std::vector<MoveRecord> moves;
};

Outcome simulate(EngineConfig cfg, std::vector<Job> locals, std::vector<Job> metas) {
  auto e = Engine::create(cfg);
  ck_assert_msg(e.ok(), "Engine::create: %s", e.ok() ? "" : e.error().message.c_str());
  Outcome out;
  Engine& eng = *e.value();
  eng.on_finish = [&](const JobRecord& r) { out.jobs[r.id] = r; };
  eng.on_move = [&](const MoveRecord& m) { out.moves.push_back(m); };
  VectorSource ls(std::move(locals)), ms(std::move(metas));
  auto st = eng.run({&ls, &ms});
  ck_assert_msg(st.ok(), "run: %s", st.ok() ? "" : st.error().message.c_str());
  out.metrics = eng.metrics();
  return out;
}

EngineConfig clusters(std::vector<Amount> sizes, Resched r = Resched::kRigid) {
  EngineConfig c;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    c.clusters.push_back(ClusterSpec{std::string(1, static_cast<char>('A' + i)), sizes[i]});
  c.resched = r;
  return c;
}

// ---------------------------------------------------------------------------
// Conservative backfilling on one cluster of 10 nodes

struct BackfillCase {
  const char* name;
  Duration run1;                  // run time of job 1 (estimate 100)
  Time start[4];                  // expected starts of jobs 1..4
};

// J1 6 nodes est 100; J2 8 nodes est 50 waits for J1; J3 4 nodes est 90
// backfills at once beside J1 without delaying J2; J4 4 nodes est 200 would
// delay J2 anywhere before J2 ends.  When J1 ends early at 40, compression
// moves J2 to J3's end (92) and J4 to J2's end (142).
const BackfillCase kBackfill[] = {
    {"estimates exact", 100, {0, 100, 2, 150}},
    {"J1 ends at 40", 40, {0, 92, 2, 142}},
};

START_TEST(test_conservative_backfilling) {
  const BackfillCase& c = kBackfill[_i];
  auto out = simulate(clusters({10}),
                      {local(1, 0, 0, 6, 100, c.run1), local(2, 0, 1, 8, 50, 50),
                       local(3, 0, 2, 4, 90, 90), local(4, 0, 3, 4, 200, 200)},
                      {});
  for (int j = 0; j < 4; ++j) {
    ck_assert_msg(out.jobs.count(j + 1), "%s: job %d missing", c.name, j + 1);
    EXPECT_EQ(out.jobs[j + 1].start, c.start[j]);
    EXPECT_EQ(out.jobs[j + 1].end, c.start[j] + (j == 0 ? c.run1 : out.jobs[j + 1].run));
  }
  EXPECT_EQ(out.metrics.local.jobs, 4);
  EXPECT_EQ(out.metrics.meta.jobs, 0);
  EXPECT_EQ(out.metrics.early_ends, c.run1 < 100 ? 1 : 0);
  // Useful work over capacity * span, by hand.
  double work = 6.0 * c.run1 + 8 * 50 + 4 * 90 + 4 * 200;
  double span = static_cast<double>(c.start[3] + 200);
  ck_assert_double_eq_tol(out.metrics.utilization(), work / (10 * span), 1e-9);
}
END_TEST

// EASY against conservative, 10 nodes: J1 6 nodes [0, 100); J2 6 nodes
// (estimate 50) waits for J1 (the head, reserved at 100); J3 7 nodes
// (estimate 100) goes after J2 at 150.  J4 4 nodes (estimate 1000) fits
// now beside J1 and does not delay the head J2, so EASY starts it at 3,
// which pushes J3 back to J4's end at 1003; conservative protects J3's
// reservation and starts J4 only at J3's end, 250.
START_TEST(test_easy_vs_conservative) {
  for (Backfill b : {Backfill::kConservative, Backfill::kEasy}) {
    EngineConfig cfg = clusters({10});
    cfg.backfill = b;
    auto out = simulate(cfg,
                        {local(1, 0, 0, 6, 100, 100), local(2, 0, 1, 6, 50, 50),
                         local(3, 0, 2, 7, 100, 100), local(4, 0, 3, 4, 1000, 1000)},
                        {});
    bool easy = b == Backfill::kEasy;
    EXPECT_EQ(out.jobs.at(1).start, 0);
    EXPECT_EQ(out.jobs.at(2).start, 100);
    EXPECT_EQ(out.jobs.at(3).start, easy ? 1003 : 150);
    EXPECT_EQ(out.jobs.at(4).start, easy ? 3 : 250);
  }
}
END_TEST

// ---------------------------------------------------------------------------
// Shift: an early end lets a split metajob start exactly 40 s earlier.
//
// A and B have 10 nodes.  L1 holds all of A until 100 (it ends at 40), L2
// all of B until 60.  M (12 nodes, estimate 50, overhead 10 %) must split:
// the first common start is 100, duration 55.  When L1 ends at 40 the
// common start becomes 60 (B is busy until then): a shift by 40.

struct ShiftCase {
  Resched resched;
  Time start;
  std::size_t moves;
};
const ShiftCase kShift[] = {
    {Resched::kRigid, 100, 0},
    {Resched::kShift, 60, 1},
    {Resched::kShiftRemap, 60, 1},
};

START_TEST(test_shift_exact) {
  const ShiftCase& c = kShift[_i];
  auto out = simulate(clusters({10, 10}, c.resched),
                      {local(1, 0, 0, 10, 100, 40), local(2, 1, 0, 10, 60, 60)},
                      {meta(9, 1, 12, 50, 50, 10)});
  const JobRecord& m = out.jobs.at(9);
  EXPECT_EQ(m.start, c.start);
  EXPECT_EQ(m.end, c.start + 55);  // 50 + 10 % when split
  EXPECT_EQ(m.parts.size(), 2);
  EXPECT_EQ(out.moves.size(), c.moves);
  if (c.moves) {
    EXPECT_EQ(out.moves[0].at, 40);
    EXPECT_EQ(out.moves[0].old_start, 100);
    EXPECT_EQ(out.moves[0].new_start, 60);
    EXPECT_EQ(out.moves[0].gain, 40);
    EXPECT_EQ(out.metrics.shifts, 1);
  }
  EXPECT_EQ(out.metrics.meta_split, 1);
  EXPECT_EQ(out.metrics.meta.response, c.start + 55 - 1);
}
END_TEST

// ---------------------------------------------------------------------------
// Remap: an early end frees one cluster for the whole metajob.
//
// A: L0 4 nodes [0, 50), L1 6 nodes estimate 150 (ends at 10).
// B: L0' 4 nodes [0, 50), L2 6 nodes [0, 300).
// M (8 nodes, estimate 50, overhead 20 %) at 1: one cluster ends at 200
// (A at 150) or 350 (B); split 4 + 4 at 50 ends at 110.  So M is split at 50
// for 60 s.  L1's end at 10 leaves A with 10 nodes from 50: Shift cannot
// start earlier (B has 4 nodes only from 50), Shift+Remap moves M onto A
// alone at 50, without overhead: it ends at 100 instead of 110.

struct RemapCase {
  Resched resched;
  Time end;
  std::size_t parts;
};
const RemapCase kRemap[] = {
    {Resched::kRigid, 110, 2},
    {Resched::kShift, 110, 2},
    {Resched::kShiftRemap, 100, 1},
};

START_TEST(test_remap_to_one_cluster) {
  const RemapCase& c = kRemap[_i];
  auto out = simulate(clusters({10, 10}, c.resched),
                      {local(1, 0, 0, 4, 50, 50), local(2, 0, 0, 6, 150, 10),
                       local(3, 1, 0, 4, 50, 50), local(4, 1, 0, 6, 300, 300)},
                      {meta(9, 1, 8, 50, 50, 20)});
  const JobRecord& m = out.jobs.at(9);
  EXPECT_EQ(m.start, 50);
  EXPECT_EQ(m.end, c.end);
  EXPECT_EQ(m.parts.size(), c.parts);
  if (c.parts == 1) {
    EXPECT_EQ(m.parts[0].first, 0);  // A
    EXPECT_EQ(out.metrics.remaps, 1);
    EXPECT_EQ(out.metrics.remaps_to_one, 1);
    EXPECT_EQ(out.metrics.meta_single, 1);
    EXPECT_EQ(out.metrics.overhead_work, 0);
    EXPECT_EQ(out.moves.size(), 1);
    EXPECT_EQ(out.moves[0].gain, 10);
  } else {
    EXPECT_EQ(out.metrics.meta_split, 1);
    EXPECT_EQ(out.metrics.overhead_work, 8 * 10);
    EXPECT_EQ(out.moves.size(), 0);
  }
}
END_TEST

// ---------------------------------------------------------------------------
// Availability published every 100 s (de Assuncao) vs asked per metajob.
//
// One cluster of 10 nodes, published at 0 while empty.  L (10 nodes,
// estimate 100) starts at 5.  M (4 nodes, estimate 10) at 10: the stale
// view offers 10, the cluster refuses it (a violation), a fresh ask gives
// 105.  Messages: publications at 0 and 100 (1 each), the re-ask (2), the
// reservation (2).  Asking per job: the ask (2) and the reservation (2).

START_TEST(test_published_availability) {
  for (Duration interval : {Duration{0}, Duration{100}}) {
    EngineConfig cfg = clusters({10});
    cfg.publish_interval = interval;
    auto out = simulate(cfg, {local(1, 0, 5, 10, 100, 100)}, {meta(9, 10, 4, 10, 10, 0)});
    EXPECT_EQ(out.jobs.at(9).start, 105);
    EXPECT_EQ(out.metrics.violations, interval ? 1 : 0);
    EXPECT_EQ(out.metrics.publications, interval ? 2 : 0);
    EXPECT_EQ(out.metrics.messages, interval ? 6 : 4);
  }
}
END_TEST

// A metajob larger than the grid and a local job larger than its cluster
// are rejected, counted, and never block the rest.
START_TEST(test_rejections) {
  auto out = simulate(clusters({10, 10}), {local(1, 0, 0, 11, 10, 10), local(2, 1, 0, 5, 10, 10)},
                      {meta(9, 0, 21, 10, 10, 0), meta(10, 0, 20, 10, 10, 0)});
  EXPECT_EQ(out.metrics.rejected, 2);
  EXPECT_EQ(out.metrics.all.jobs, 2);
  EXPECT_EQ(out.jobs.at(10).start, 10);  // after job 2 on B
}
END_TEST

// ---------------------------------------------------------------------------
// Workload streams

const char* kTrace =
    "; Version: 2.2\n"
    "; MaxProcs: 64\n"
    // job submit wait run alloc cpu mem req_procs req_time ...
    "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
    "2 10 0 5000 128 -1 -1 128 6000 -1 1 1 1 -1 1 -1 -1 -1\n"  // larger than 64
    "3 20 0 -1 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"          // no run time
    "4 50 0 300 8 -1 -1 8 250 -1 1 1 1 -1 1 -1 -1 -1\n"         // overran its estimate
    "5 60 0 4000 2 -1 -1 2 5000 -1 1 1 1 -1 1 -1 -1 -1\n"
    "6 99 0 600 70 -1 -1 70 -1 -1 1 1 1 -1 1 -1 -1 -1\n";       // no estimate, > 64 nodes

TraceScan scan_text(const JobRules& rules) {
  // The scan of kTrace, by hand: submits 0..99.
  TraceScan s;
  s.first_submit = 0;
  s.last_submit = 99;
  (void)rules;
  return s;
}

std::vector<Job> drain(TraceStream& s) {
  std::vector<Job> out;
  for (;;) {
    auto n = s.next();
    ck_assert_msg(n.ok(), "next: %s", n.ok() ? "" : n.error().message.c_str());
    if (!n.value()) return out;
    out.push_back(*n.value());
  }
}

START_TEST(test_stream_filters_and_estimates) {
  StreamSpec sp;
  sp.rules.max_nodes = 100;
  auto s = TraceStream::from_string(sp, scan_text(sp.rules), kTrace);
  ck_assert(s.ok());
  auto jobs = drain(s.value());
  // 1, 4, 5, 6 kept; 2 too large, 3 without run time.
  EXPECT_EQ(jobs.size(), 4);
  EXPECT_EQ(jobs[0].estimate, 200);
  EXPECT_EQ(jobs[1].run, 250);  // cut at its estimate
  EXPECT_EQ(jobs[1].estimate, 250);
  EXPECT_EQ(jobs[1].line, 6);
  ck_assert(jobs[3].estimate >= jobs[3].run);  // from the model
  EXPECT_EQ(s.value().counts().too_large, 1);
  EXPECT_EQ(s.value().counts().no_data, 1);
  EXPECT_EQ(s.value().counts().overran, 1);
  EXPECT_EQ(s.value().counts().modelled, 1);
  std::set<std::uint64_t> ids;
  for (const Job& j : jobs) ids.insert(j.id);
  EXPECT_EQ(ids.size(), 4);

  // +25 % estimates, and no small jobs (run <= 1 h and <= 64 nodes): job 5
  // (4000 s) and job 6 (70 nodes) stay.
  sp.rules.estimate_factor = 1.25;
  sp.rules.no_small = true;
  auto s2 = TraceStream::from_string(sp, scan_text(sp.rules), kTrace);
  auto jobs2 = drain(s2.value());
  EXPECT_EQ(jobs2.size(), 2);
  EXPECT_EQ(jobs2[0].estimate, 6250);
  EXPECT_EQ(s2.value().counts().small, 2);
}
END_TEST

// Parts with aligned submit times, scaling, loops up to a horizon.
START_TEST(test_stream_segments) {
  struct Case {
    int part, parts;
    double scale;
    bool loop;
    Time horizon;
    std::vector<Time> submits;
  };
  const Case cases[] = {
      {0, 1, 1.0, false, kForever, {0, 50, 60, 99}},
      {0, 2, 1.0, false, kForever, {0}},   // [0, 50)
      {1, 2, 1.0, false, kForever, {0, 10, 49}},  // [50, 100) shifted to 0
      {1, 2, 2.0, false, kForever, {0, 20, 98}},
      {1, 2, 1.0, true, 120, {0, 10, 49, 50, 60, 99, 100, 110}},
  };
  for (const Case& c : cases) {
    StreamSpec sp;
    sp.part = c.part;
    sp.parts = c.parts;
    sp.time_scale = c.scale;
    sp.loop = c.loop;
    sp.horizon = c.horizon;
    sp.rules.max_nodes = 100;
    auto s = TraceStream::from_string(sp, scan_text(sp.rules), kTrace);
    ck_assert(s.ok());
    auto jobs = drain(s.value());
    ck_assert_msg(jobs.size() == c.submits.size(), "part %d/%d: %zu jobs, expected %zu", c.part,
                  c.parts, jobs.size(), c.submits.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].submit, c.submits[i]);
  }
}
END_TEST

// Malformed lines on the sim's input path stop the stream with the line.
START_TEST(test_stream_malformed) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n2 5 0 1x 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n",
       "line 2: field 4 (run time)"},
      {"; c\n; d\n1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1\n", "line 3:"},
      {"1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n\n3 -5 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n",
       "line 3: field 2 (submit time)"},
  };
  for (const Case& c : cases) {
    StreamSpec sp;
    TraceScan scan;
    scan.last_submit = 100;
    auto s = TraceStream::from_string(sp, scan, c.text);
    ck_assert(s.ok());
    std::string err;
    for (int i = 0; i < 10 && err.empty(); ++i) {
      auto n = s.value().next();
      if (!n.ok()) err = n.error().message;
      else if (!n.value()) break;
    }
    EXPECT_CONTAINS(err, c.message);
  }
}
END_TEST

START_TEST(test_models) {
  std::mt19937_64 rng(7);
  std::map<int, int> hist;
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    int o = draw_overhead(20.0, 25, rng);
    ck_assert(o >= 0 && o <= 25);
    ++hist[o];
    sum += o;
  }
  // Poisson(20) capped at 25: mean 19.5 (sum of min(k, 25) P(k)).
  ck_assert_msg(sum / n > 19.2 && sum / n < 19.8, "mean overhead %g", sum / n);
  ck_assert(hist[25] > n / 20);  // P(k >= 25) ~ 0.16
  for (Duration run : {Duration{1}, Duration{59}, Duration{3601}, Duration{40000}, Duration{50000}}) {
    for (int i = 0; i < 200; ++i) {
      Duration e = model_estimate(run, 46800, rng);
      ck_assert(e >= run);
      ck_assert(e <= std::max<Duration>(run, 46800));
    }
  }
  EXPECT_EQ(model_estimate(50000, 46800, rng), 50000);
  // Same seed, same draws.
  std::mt19937_64 a(3), b(3);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(model_estimate(100, 46800, a), model_estimate(100, 46800, b));
}
END_TEST

// ---------------------------------------------------------------------------
// Configuration

START_TEST(test_config_errors) {
  struct Case {
    std::vector<std::string> words;
    const char* message;
  };
  const Case cases[] = {
      {{"Foo=1"}, "command line: unknown key 'Foo'"},
      {{"Nodes=4"}, "Nodes must follow ClusterName="},
      {{"ClusterName=a", "Nodes=0"}, "Nodes: not a positive integer or auto: '0'"},
      {{"ClusterName=a", "Trace=x", "Part=3/2"}, "Part: expected i/n"},
      {{"ClusterName=a", "Part=1/2"}, "Part must follow a Trace= of its cluster"},
      {{"Reschedule=sometimes"}, "Reschedule: expected rigid, shift or shift+remap"},
      {{"EstimateFactor=0.5"}, "EstimateFactor: not in [1, 100]"},
      {{"PublishInterval=5x"}, "PublishInterval: not a duration"},
      {{"Planner=best"}, "Planner: unknown planner"},
      {{"justaword"}, "expected Key=Value"},
  };
  for (const Case& c : cases) {
    SimConfig cfg;
    auto st = apply_words(cfg, c.words, "command line");
    ck_assert(!st.ok());
    EXPECT_CONTAINS(st.error().message, c.message);
  }
  SimConfig cfg;
  ck_assert(apply_words(cfg, {"PublishInterval=15min", "Reschedule=shift+remap", "Planner=coarp"},
                        "x")
                .ok());
  EXPECT_EQ(cfg.engine.publish_interval, 900);
  // Several traces per cluster, each with its own part.
  ck_assert(apply_words(cfg, {"ClusterName=a", "Nodes=8", "Trace=x.swf", "Part=2/3", "Trace=y.swf"},
                        "x")
                .ok());
  ck_assert(cfg.clusters.size() == 1 && cfg.clusters[0].traces.size() == 2);
  EXPECT_EQ(cfg.clusters[0].traces[0].part, 1);
  EXPECT_EQ(cfg.clusters[0].traces[0].parts, 3);
  EXPECT_EQ(cfg.clusters[0].traces[1].parts, 1);
  ck_assert(cfg.engine.resched == Resched::kShiftRemap);
  ck_assert(cfg.engine.planner == Policy::kCoarp);

  // A file's errors name its line.
  char path[] = "/tmp/check_sim_confXXXXXX";
  int fd = mkstemp(path);
  ck_assert(fd >= 0);
  {
    std::ofstream f(path);
    f << "# comment\nClusterName=a Nodes=4\n\nSeed=x\n";
  }
  SimConfig cf;
  auto st = load_config_file(cf, path);
  std::remove(path);
  ck_assert(!st.ok());
  EXPECT_CONTAINS(st.error().message, std::string(path) + ":4: Seed");
}
END_TEST

Suite* sim_suite() {
  Suite* s = suite_create("sim");
  TCase* engine = tcase_create("engine");
  tcase_add_loop_test(engine, test_conservative_backfilling, 0,
                      sizeof kBackfill / sizeof kBackfill[0]);
  tcase_add_test(engine, test_easy_vs_conservative);
  tcase_add_loop_test(engine, test_shift_exact, 0, sizeof kShift / sizeof kShift[0]);
  tcase_add_loop_test(engine, test_remap_to_one_cluster, 0, sizeof kRemap / sizeof kRemap[0]);
  tcase_add_test(engine, test_published_availability);
  tcase_add_test(engine, test_rejections);
  suite_add_tcase(s, engine);
  TCase* workload = tcase_create("workload");
  tcase_add_test(workload, test_stream_filters_and_estimates);
  tcase_add_test(workload, test_stream_segments);
  tcase_add_test(workload, test_stream_malformed);
  tcase_add_test(workload, test_models);
  suite_add_tcase(s, workload);
  TCase* config = tcase_create("config");
  tcase_add_test(config, test_config_errors);
  suite_add_tcase(s, config);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(sim_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
