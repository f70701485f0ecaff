// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests for src/core/local_sched.{hpp,cpp}: hand-computed scenarios
// from testsuite/unit/local_sched_cases/*.sched, input validation tables,
// the incremental scheduler's stories and rules, and fixed-seed randomized
// property tests against a per-second reference model.

#include <dirent.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/local_sched.hpp"

// Last: check.h defines macros (fail, ...) that clash with the C++ library.
#include <check.h>

using namespace flexco;

namespace {

// ---------------------------------------------------------------------------
// Helpers: every failure names the source line of the expression.

template <typename T>
T value_or_fail(Result<T> r, const char* expr, int line) {
  if (!r.ok()) ck_abort_msg("line %d: %s failed: %s", line, expr, r.error().message.c_str());
  return std::move(r).value();
}
#define VAL(expr) value_or_fail((expr), #expr, __LINE__)

template <typename R>
std::string expect_error(const R& r, Errc code, const char* expr, int line) {
  if (r.ok()) ck_abort_msg("line %d: %s succeeded, expected %s", line, expr, errc_name(code));
  if (r.error().code != code)
    ck_abort_msg("line %d: %s gave %s (%s), expected %s", line, expr, errc_name(r.error().code),
                 r.error().message.c_str(), errc_name(code));
  return r.error().message;
}
#define ERR(expr, code) expect_error((expr), (code), #expr, __LINE__)

void status_ok(const Status& s, const char* expr, int line) {
  if (!s.ok()) ck_abort_msg("line %d: %s failed: %s", line, expr, s.error().message.c_str());
}
#define OK(expr) status_ok((expr), #expr, __LINE__)

#define EQ(a, b)                                                                                \
  do {                                                                                          \
    std::int64_t a_ = (a), b_ = (b);                                                            \
    if (a_ != b_)                                                                               \
      ck_abort_msg("line %d: %s == %" PRId64 ", expected %s == %" PRId64, __LINE__, #a, a_, #b, \
                   b_);                                                                         \
  } while (0)

#define NEAR(a, b)                                                                          \
  do {                                                                                      \
    double a_ = (a), b_ = (b);                                                              \
    if (!(a_ == b_ || std::fabs(a_ - b_) <= 1e-12))                                         \
      ck_abort_msg("line %d: %s == %.17g, expected %s == %.17g", __LINE__, #a, a_, #b, b_); \
  } while (0)

#define HAS(msg, part)                                            \
  ck_assert_msg(std::string(msg).find(part) != std::string::npos, \
                "line %d: message \"%s\" lacks \"%s\"", __LINE__, std::string(msg).c_str(), part)

// ---------------------------------------------------------------------------
// Golden scenarios (local_sched_cases/*.sched; format in its README)

std::vector<std::string> g_case_files;

std::string case_dir() {
  std::vector<std::string> tries;
  if (const char* s = std::getenv("FLEXCO_SRCDIR"))
    tries.push_back(std::string(s) + "/testsuite/unit/local_sched_cases");
  std::string here = __FILE__;
  auto slash = here.rfind('/');
  tries.push_back((slash == std::string::npos ? std::string(".") : here.substr(0, slash)) +
                  "/local_sched_cases");
  tries.push_back("testsuite/unit/local_sched_cases");
  tries.push_back("local_sched_cases");
  for (const auto& t : tries) {
    if (DIR* d = opendir(t.c_str())) {
      closedir(d);
      return t;
    }
  }
  return tries.front();
}

std::vector<std::string> list_cases(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 6 && n.compare(n.size() - 6, 6, ".sched") == 0) out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Golden {
  std::string file;
  int line = 0;
  bool have_cluster = false;
  LocalPlanInput in;
  int checks = 0;

  // Fitness block being collected.
  bool in_fitness = false;
  FitnessOptions fit_opt;
  std::vector<Placeholder> slots;
  std::vector<std::vector<std::string>> slot_expect;
  std::vector<std::string> best_expect;

  [[noreturn]] void die(const std::string& what) const {
    ck_abort_msg("%s:%d: %s", file.c_str(), line, what.c_str());
    std::abort();
  }

  std::int64_t num(const std::string& t) const {
    if (t == "forever" || t == "never") return kForever;
    if (t == "-forever") return -kForever;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || errno != 0) die("not an integer: '" + t + "'");
    return v;
  }

  double real(const std::string& t) const {
    if (t == "inf") return std::numeric_limits<double>::infinity();
    auto slash = t.find('/');
    if (slash != std::string::npos) return real(t.substr(0, slash)) / real(t.substr(slash + 1));
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0') die("not a number: '" + t + "'");
    return v;
  }

  static std::pair<std::string, std::string> kv(const std::string& t, char sep = '=') {
    auto p = t.find(sep);
    if (p == std::string::npos) return {t, ""};
    return {t.substr(0, p), t.substr(p + 1)};
  }

  void need(const std::vector<std::string>& w, std::size_t lo, std::size_t hi) const {
    if (w.size() < lo || w.size() > hi) die("wrong number of words for '" + w[0] + "'");
  }

  void expect_time(const char* what, std::uint64_t id, Time got, Time want) {
    ++checks;
    if (got != want)
      die(std::string(what) + ": job " + std::to_string(id) + " starts at " +
          (got == kNever ? std::string("never") : std::to_string(got)) + ", expected " +
          (want == kNever ? std::string("never") : std::to_string(want)));
  }

  void expect_real(const std::string& what, double got, double want) {
    ++checks;
    bool same =
        (std::isinf(got) && std::isinf(want)) || got == want || std::fabs(got - want) <= 1e-12;
    if (!same) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s is %.17g, expected %.17g", what.c_str(), got, want);
      die(buf);
    }
  }

  void expect_int(const std::string& what, std::int64_t got, std::int64_t want) {
    ++checks;
    if (got != want)
      die(what + " is " + std::to_string(got) + ", expected " + std::to_string(want));
  }

  // "conservative ID=START ..." / "easy ID=START[:KIND] ..."
  void check_plan(const std::vector<std::string>& w, Backfill policy) {
    auto r = plan_local(in, policy);
    if (!r.ok()) die("plan failed: " + r.error().message);
    const LocalPlan& p = r.value();
    if (w.size() - 1 != p.jobs.size())
      die("expected " + std::to_string(w.size() - 1) + " jobs, the plan has " +
          std::to_string(p.jobs.size()));
    for (std::size_t i = 0; i < p.jobs.size(); ++i) {
      auto [id_s, rest] = kv(w[i + 1]);
      auto [start_s, kind_s] = kv(rest, ':');
      std::uint64_t id = static_cast<std::uint64_t>(num(id_s));
      Time start = num(start_s);
      const PlannedJob& j = p.jobs[i];
      expect_int("queue position " + std::to_string(i) + " id", static_cast<std::int64_t>(j.id),
                 static_cast<std::int64_t>(id));
      expect_time(backfill_name(policy), id, j.start, start);
      std::string kind = kind_s.empty() ? (start == kNever ? "never" : "reserved") : kind_s;
      ++checks;
      if (kind != placement_name(j.placement))
        die(std::string(backfill_name(policy)) + ": job " + std::to_string(id) + " is " +
            placement_name(j.placement) + ", expected " + kind);
      // Internal consistency of every plan.
      if (j.placement == Placement::kNever) {
        if (j.end != kNever || j.span != kNoSpan) die("a never job has an end or a span");
      } else {
        const PendingJob& q = in.queue[i];
        Time end = q.estimate >= kForever - j.start ? kForever : j.start + q.estimate;
        expect_int("end of job " + std::to_string(id), j.end, end);
        if ((j.placement == Placement::kReserved) != (j.span != kNoSpan))
          die("job " + std::to_string(id) + ": span does not match its placement");
        if (j.span != kNoSpan) {
          Span s = p.profile.span(j.span).value();
          expect_int("span start", s.start, j.start);
          expect_int("span end", s.end, j.end);
          expect_int("span nodes", s.amount, j.nodes);
        }
      }
    }
    if (policy == Backfill::kConservative && p.head != kNoHead) die("conservative plan has a head");
  }

  void check_head(const std::vector<std::string>& w) {
    need(w, 2, 2);
    LocalPlan p = plan_easy(in).value();
    ++checks;
    if (w[1] == "none") {
      if (p.head != kNoHead) die("easy head is job " + std::to_string(p.jobs[p.head].id));
      return;
    }
    if (p.head == kNoHead) die("easy plan has no head");
    expect_int("easy head", static_cast<std::int64_t>(p.jobs[p.head].id), num(w[1]));
  }

  void check_delay(std::vector<std::string> w) {
    Backfill policy = Backfill::kConservative;
    if (w.size() > 1 && w[1] == "easy") {
      policy = Backfill::kEasy;
      w.erase(w.begin() + 1);
    }
    if (w.size() < 5 || w[4] != "=>") die("delay START DURATION NODES => ...");
    Placeholder ph{num(w[1]), num(w[2]), num(w[3])};
    auto r = delay_caused_by(in, ph, policy);
    if (!r.ok()) die("delay_caused_by failed: " + r.error().message);
    const DelayReport& d = r.value();
    if (w.size() == 6 && w[5] == "collision") {
      ++checks;
      if (!d.collision) die("expected a collision");
      return;
    }
    ++checks;
    if (d.collision) die("unexpected collision");
    std::map<std::uint64_t, Duration> want;
    std::map<std::string, std::int64_t> agg;
    for (std::size_t i = 5; i < w.size(); ++i) {
      auto [k, v] = kv(w[i]);
      if (v.empty()) die("expected KEY=VALUE: '" + w[i] + "'");
      if (std::isdigit(static_cast<unsigned char>(k[0])))
        want[static_cast<std::uint64_t>(num(k))] = num(v);
      else
        agg[k] = num(v);
    }
    for (const JobDelay& j : d.jobs) {
      Duration expect = want.count(j.id) ? want[j.id] : 0;
      expect_int("delay of job " + std::to_string(j.id), j.delay, expect);
      Duration diff = j.start_with == kNever || j.start_without == kNever
                          ? j.delay
                          : j.start_with - j.start_without;
      expect_int("start difference of job " + std::to_string(j.id), diff, j.delay);
    }
    for (const auto& [k, v] : agg) {
      std::int64_t got = 0;
      if (k == "total")
        got = d.total_delay;
      else if (k == "max")
        got = d.max_delay;
      else if (k == "delayed")
        got = static_cast<std::int64_t>(d.delayed_jobs);
      else if (k == "advanced")
        got = static_cast<std::int64_t>(d.advanced_jobs);
      else if (k == "nodesec")
        got = d.node_seconds;
      else if (k == "head")
        got = d.head_delay;
      else
        die("unknown aggregate '" + k + "'");
      expect_int(k, got, v);
    }
  }

  void start_fitness(const std::vector<std::string>& w) {
    in_fitness = true;
    fit_opt = FitnessOptions{};
    slots.clear();
    slot_expect.clear();
    best_expect.clear();
    for (std::size_t i = 1; i < w.size(); ++i) {
      if (w[i] == "easy") {
        fit_opt.policy = Backfill::kEasy;
        continue;
      }
      auto [k, v] = kv(w[i]);
      if (k == "bound") {
        fit_opt.max_head_delay = num(v);
      } else if (k == "weights") {
        auto [a, b] = kv(v, ',');
        fit_opt.weight_cmax = real(a);
        fit_opt.weight_cavg = real(b);
      } else if (k == "zero") {
        fit_opt.time_zero = num(v);
      } else {
        die("unknown fitness option '" + w[i] + "'");
      }
    }
  }

  void end_fitness() {
    in_fitness = false;
    auto r = whatif_fitness(in, slots, fit_opt);
    if (!r.ok()) die("whatif_fitness failed: " + r.error().message);
    const FitnessReport& f = r.value();
    if (f.slots.size() != slots.size()) die("report has the wrong number of slots");
    for (std::size_t k = 0; k < slots.size(); ++k) {
      const auto& e = slot_expect[k];  // FIT VERDICT [cmax=X] [cavg=Y]
      const SlotFitness& s = f.slots[k];
      std::string who = "slot " + std::to_string(k);
      expect_real(who + " fit", s.fit, real(e[0]));
      ++checks;
      if (e[1] != fit_verdict_name(s.verdict))
        die(who + " is " + fit_verdict_name(s.verdict) + ", expected " + e[1]);
      for (std::size_t i = 2; i < e.size(); ++i) {
        auto [k2, v] = kv(e[i]);
        if (k2 == "cmax")
          expect_real(who + " cmax", s.cmax, real(v));
        else if (k2 == "cavg")
          expect_real(who + " cavg", s.cavg, real(v));
        else
          die("unknown slot expectation '" + e[i] + "'");
      }
      ++checks;
      if (!(s.fit >= 0.0 && s.fit <= 1.0)) die(who + " fit out of [0, 1]");
    }
    if (!best_expect.empty()) {
      expect_real("C*_max", f.cmax_best, real(best_expect[0]));
      expect_real("C*_avg", f.cavg_best, real(best_expect[1]));
      if (best_expect.size() > 2) {
        auto [k, v] = kv(best_expect[2]);
        if (k != "n") die("best CMAX CAVG [n=N]");
        expect_int("N", static_cast<std::int64_t>(f.jobs_counted), num(v));
      }
    }
  }

  void command(const std::vector<std::string>& w) {
    const std::string& c = w[0];
    if (in_fitness) {
      if (c == "slot") {
        if (w.size() < 7 || w[4] != "=>") die("slot START DURATION NODES => FIT VERDICT ...");
        slots.push_back(Placeholder{num(w[1]), num(w[2]), num(w[3])});
        slot_expect.emplace_back(w.begin() + 5, w.end());
      } else if (c == "best") {
        need(w, 3, 4);
        best_expect.assign(w.begin() + 1, w.end());
      } else if (c == "end") {
        end_fitness();
      } else {
        die("'" + c + "' inside a fitness block");
      }
      return;
    }
    if (c == "cluster") {
      need(w, 3, 3);
      in = LocalPlanInput{};
      in.capacity = num(w[1]);
      in.now = num(w[2]);
      have_cluster = true;
      return;
    }
    if (!have_cluster) die("'cluster' must come first");
    if (c == "run") {
      need(w, 5, 6);
      Time start = num(w[3]);
      in.running.push_back(RunningJob{static_cast<std::uint64_t>(num(w[1])), num(w[2]), start,
                                      num(w[4]), w.size() > 5 ? num(w[5]) : start});
    } else if (c == "resv") {
      need(w, 5, 5);
      in.reservations.push_back(
          FixedSpan{static_cast<std::uint64_t>(num(w[1])), num(w[2]), num(w[3]), num(w[4])});
    } else if (c == "job") {
      need(w, 4, 6);
      in.queue.push_back(PendingJob{static_cast<std::uint64_t>(num(w[1])), num(w[2]), num(w[3]),
                                    w.size() > 4 ? num(w[4]) : in.now,
                                    w.size() > 5 ? num(w[5]) : 0});
    } else if (c == "conservative") {
      check_plan(w, Backfill::kConservative);
    } else if (c == "easy") {
      check_plan(w, Backfill::kEasy);
    } else if (c == "easy-head") {
      check_head(w);
    } else if (c == "delay") {
      check_delay(w);
    } else if (c == "fitness") {
      start_fitness(w);
    } else {
      die("unknown command '" + c + "'");
    }
  }

  int run() {
    std::ifstream f(file);
    if (!f) die("cannot open");
    std::string text;
    while (std::getline(f, text)) {
      ++line;
      auto hash = text.find('#');
      if (hash != std::string::npos) text.erase(hash);
      std::istringstream ss(text);
      std::vector<std::string> w;
      for (std::string t; ss >> t;) w.push_back(t);
      if (!w.empty()) command(w);
    }
    if (in_fitness) die("fitness block without 'end'");
    return checks;
  }
};

START_TEST(test_cases) {
  ck_assert_msg(!g_case_files.empty(),
                "no local_sched_cases/*.sched found (set FLEXCO_SRCDIR to the source tree)");
  Golden g;
  g.file = g_case_files[static_cast<std::size_t>(_i)];
  int checks = g.run();
  ck_assert_msg(checks > 0, "%s checked nothing", g.file.c_str());
}
END_TEST

// ---------------------------------------------------------------------------
// Input validation: one table row per rule, each a change to a valid input.

LocalPlanInput valid_input() {
  LocalPlanInput in;
  in.capacity = 10;
  in.now = 100;
  in.running = {RunningJob{1, 4, 50, 200, 40}};
  in.reservations = {FixedSpan{7, 150, 250, 3}};
  in.queue = {PendingJob{2, 5, 60, 90, 0}, PendingJob{3, 2, 30, 100, 120}};
  return in;
}

struct BadInput {
  const char* what;
  std::function<void(LocalPlanInput&)> change;
  Errc code;
  const char* message;  // part of the expected message
};

const std::vector<BadInput>& bad_inputs() {
  static const std::vector<BadInput> rows = {
      {"negative capacity", [](LocalPlanInput& i) { i.capacity = -1; }, Errc::kInvalidArgument,
       "capacity must be in [0, 2^52] nodes (got -1)"},
      {"huge capacity", [](LocalPlanInput& i) { i.capacity = kMaxAmount + 1; },
       Errc::kInvalidArgument, "capacity must be in"},
      {"negative now", [](LocalPlanInput& i) { i.now = -5; }, Errc::kInvalidArgument,
       "now must be >= 0 (got -5)"},
      {"now forever", [](LocalPlanInput& i) { i.now = kForever; }, Errc::kOutOfRange,
       "now must be before kForever"},
      // Queued jobs.
      {"job larger than the cluster", [](LocalPlanInput& i) { i.queue[1].nodes = 11; },
       Errc::kOutOfRange,
       "queue[1] (job 3): needs 11 nodes, more than the cluster's 10 (it can never run: leave it "
       "out of the queue)"},
      {"job of 0 nodes", [](LocalPlanInput& i) { i.queue[0].nodes = 0; }, Errc::kInvalidArgument,
       "queue[0] (job 2): needs 0 nodes; must be >= 1"},
      {"zero estimate", [](LocalPlanInput& i) { i.queue[0].estimate = 0; }, Errc::kInvalidArgument,
       "queue[0] (job 2): estimate must be > 0 s (got 0)"},
      {"negative estimate", [](LocalPlanInput& i) { i.queue[1].estimate = -30; },
       Errc::kInvalidArgument, "queue[1] (job 3): estimate must be > 0 s (got -30)"},
      {"submitted in the future", [](LocalPlanInput& i) { i.queue[0].submit = 101; },
       Errc::kOutOfRange, "queue[0] (job 2): submitted at 101, after now (100)"},
      {"negative submit", [](LocalPlanInput& i) { i.queue[0].submit = -1; }, Errc::kInvalidArgument,
       "submit time must be >= 0"},
      {"negative begin", [](LocalPlanInput& i) { i.queue[1].begin = -1; }, Errc::kInvalidArgument,
       "queue[1] (job 3): begin time must be >= 0 (got -1)"},
      {"begin forever", [](LocalPlanInput& i) { i.queue[1].begin = kForever; }, Errc::kOutOfRange,
       "begin time must be before kForever"},
      {"job queued twice", [](LocalPlanInput& i) { i.queue[1].id = 2; }, Errc::kInvalidArgument,
       "job 2 appears twice: queue[0] and queue[1]"},
      {"job running and queued", [](LocalPlanInput& i) { i.queue[1].id = 1; },
       Errc::kInvalidArgument, "job 1 appears twice: running[0] and queue[1]"},
      // Running jobs.
      {"running job larger than the cluster", [](LocalPlanInput& i) { i.running[0].nodes = 11; },
       Errc::kOutOfRange, "running[0] (job 1): holds 11 nodes, more than the cluster's 10"},
      {"running job of 0 nodes", [](LocalPlanInput& i) { i.running[0].nodes = 0; },
       Errc::kInvalidArgument, "running[0] (job 1): holds 0 nodes; must be >= 1"},
      {"running job started in the future", [](LocalPlanInput& i) { i.running[0].start = 101; },
       Errc::kOutOfRange, "running[0] (job 1): started at 101, after now (100)"},
      {"running job ends before it starts",
       [](LocalPlanInput& i) { i.running[0].expected_end = 50; }, Errc::kInvalidArgument,
       "running[0] (job 1): expected end 50 must be after its start 50"},
      {"running job submitted after its start", [](LocalPlanInput& i) { i.running[0].submit = 60; },
       Errc::kInvalidArgument, "running[0] (job 1): submitted at 60, after its start 50"},
      {"negative start", [](LocalPlanInput& i) { i.running[0].start = -1; }, Errc::kInvalidArgument,
       "running[0] (job 1): start must be >= 0"},
      // Reservations.
      {"empty reservation", [](LocalPlanInput& i) { i.reservations[0].end = 150; },
       Errc::kInvalidArgument,
       "reservations[0] (reservation 7): end 150 must be after its start 150"},
      {"reservation larger than the cluster",
       [](LocalPlanInput& i) { i.reservations[0].nodes = 12; }, Errc::kOutOfRange,
       "reservations[0] (reservation 7): takes 12 nodes, more than the cluster's 10"},
      {"reservation twice",
       [](LocalPlanInput& i) {
         i.reservations.push_back(FixedSpan{7, 300, 400, 1});
       },
       Errc::kInvalidArgument, "reservation 7 appears twice: reservations[0] and reservations[1]"},
  };
  return rows;
}

START_TEST(test_invalid_input) {
  const BadInput& row = bad_inputs()[static_cast<std::size_t>(_i)];
  LocalPlanInput in = valid_input();
  row.change(in);
  // Every entry point validates the same way and names itself.
  struct Entry {
    const char* name;
    std::function<std::optional<Error>()> call;
  };
  auto err = [](const auto& r) -> std::optional<Error> {
    if (r.ok()) return std::nullopt;
    return r.error();
  };
  std::vector<Entry> entries = {
      {"plan_conservative", [&] { return err(plan_conservative(in)); }},
      {"plan_easy", [&] { return err(plan_easy(in)); }},
      {"build_base_profile", [&] { return err(build_base_profile(in)); }},
      {"delay_caused_by",
       [&] {
         return err(delay_caused_by(in, Placeholder{300, 10, 1}));
       }},
      {"whatif_fitness",
       [&] {
         return err(whatif_fitness(in, {Placeholder{300, 10, 1}}));
       }},
      {"placeholder_job_start",
       [&] { return err(placeholder_job_start(in, 10, 1, 0, Backfill::kConservative)); }},
  };
  for (const auto& e : entries) {
    auto got = e.call();
    ck_assert_msg(got.has_value(), "%s: %s accepted the input", row.what, e.name);
    ck_assert_msg(got->code == row.code, "%s: %s gave %s (%s), expected %s", row.what, e.name,
                  errc_name(got->code), got->message.c_str(), errc_name(row.code));
    ck_assert_msg(got->message.rfind(std::string(e.name) + ": ", 0) == 0,
                  "%s: message \"%s\" does not start with \"%s: \"", row.what, got->message.c_str(),
                  e.name);
    HAS(got->message, row.message);
  }
}
END_TEST

START_TEST(test_valid_input_accepted) {
  LocalPlanInput in = valid_input();
  LocalPlan p = VAL(plan_conservative(in));
  EQ(p.jobs.size(), 2);
  // Job 2 (5 nodes, 60 s): free [100,150) 6, [150,200) 3: after job 1, [200,250) 7: 200.
  EQ(p.jobs[0].start, 200);
  // Job 3 (2 nodes, 30 s, begin 120): [120,150) 6 free beside nothing else: 120.
  EQ(p.jobs[1].start, 120);
  // Capacity 0 with an empty queue is a valid (idle) cluster.
  LocalPlanInput none;
  none.now = 5;
  LocalPlan q = VAL(plan_conservative(none));
  EQ(q.jobs.size(), 0);
}
END_TEST

START_TEST(test_placeholder_and_options_invalid) {
  LocalPlanInput in = valid_input();
  HAS(ERR(delay_caused_by(in, Placeholder{99, 10, 1}), Errc::kOutOfRange),
      "delay_caused_by: the placeholder: starts at 99, before now (100)");
  HAS(ERR(delay_caused_by(in, Placeholder{100, 0, 1}), Errc::kInvalidArgument),
      "the placeholder: duration must be > 0 s (got 0)");
  HAS(ERR(delay_caused_by(in, Placeholder{100, -3, 1}), Errc::kInvalidArgument),
      "duration must be > 0 s (got -3)");
  HAS(ERR(delay_caused_by(in, Placeholder{100, 10, 0}), Errc::kInvalidArgument),
      "the placeholder: takes 0 nodes; must be >= 1");
  HAS(ERR(delay_caused_by(in, Placeholder{100, 10, 11}), Errc::kOutOfRange),
      "the placeholder: takes 11 nodes, more than the cluster's 10");
  HAS(ERR(delay_caused_by(in, Placeholder{kForever, 10, 1}), Errc::kOutOfRange),
      "start must be before kForever");
  HAS(ERR(whatif_fitness(in, {Placeholder{200, 10, 1}, Placeholder{200, 10, 20}}),
          Errc::kOutOfRange),
      "whatif_fitness: slots[1]: takes 20 nodes, more than the cluster's 10");

  FitnessOptions o;
  o.weight_cmax = 0.5;
  HAS(ERR(whatif_fitness(in, {}, o), Errc::kInvalidArgument),
      "weights must be >= 0 and sum to 1 (got weight_cmax 0.500000, weight_cavg 0.900000)");
  o.weight_cmax = -0.1;
  o.weight_cavg = 1.1;
  ERR(whatif_fitness(in, {}, o), Errc::kInvalidArgument);
  o.weight_cmax = std::nan("");
  o.weight_cavg = 0.5;
  ERR(whatif_fitness(in, {}, o), Errc::kInvalidArgument);
  o = FitnessOptions{};
  o.max_head_delay = -1;
  HAS(ERR(whatif_fitness(in, {}, o), Errc::kInvalidArgument),
      "max_head_delay must be >= 0 (got -1)");
  o = FitnessOptions{};
  o.time_zero = 101;
  HAS(ERR(whatif_fitness(in, {}, o), Errc::kInvalidArgument),
      "time_zero must be in [0, now = 100] (got 101)");
  o.time_zero = -1;
  ERR(whatif_fitness(in, {}, o), Errc::kInvalidArgument);

  HAS(ERR(placeholder_job_start(in, 0, 1, 0, Backfill::kConservative), Errc::kInvalidArgument),
      "placeholder_job_start: duration must be > 0 s (got 0)");
  HAS(ERR(placeholder_job_start(in, 10, 11, 0, Backfill::kConservative), Errc::kOutOfRange),
      "the job: needs 11 nodes, more than the cluster's 10");
  ERR(placeholder_job_start(in, 10, 1, -1, Backfill::kConservative), Errc::kInvalidArgument);
}
END_TEST

// ---------------------------------------------------------------------------
// One-shot details

START_TEST(test_overdue_and_oversubscribed) {
  // Job 1 is past its expected end (90 < now 100): it holds its nodes until
  // 101.  Jobs 1 and 5 together hold 12 of 10 nodes (a snapshot of reality).
  LocalPlanInput in;
  in.capacity = 10;
  in.now = 100;
  in.running = {RunningJob{1, 6, 10, 90, 0}, RunningJob{5, 6, 50, 130, 50}};
  in.queue = {PendingJob{2, 4, 10, 100, 0}};
  Profile base = VAL(build_base_profile(in));
  EQ(VAL(base.free_at(100)), -2);
  EQ(VAL(base.free_at(101)), 4);
  LocalPlan p = VAL(plan_conservative(in));
  EQ(p.jobs[0].start, 101);
  // A reservation over [100,110) on 1 node collides (free is -2 at 100).
  DelayReport d = VAL(delay_caused_by(in, Placeholder{100, 10, 1}));
  ck_assert(d.collision);
  // Reservations that ended before now are ignored; one that started before
  // now counts from now.
  in.reservations = {FixedSpan{8, 0, 100, 10}, FixedSpan{9, 20, 105, 4}};
  p = VAL(plan_conservative(in));
  EQ(p.jobs[0].start, 105);
  // The fitness counts job 1 with completion 101 (response 101).
  FitnessReport f = VAL(whatif_fitness(in, {}));
  EQ(f.jobs_counted, 3);
  NEAR(f.cmax_ref, 130 - 100);  // job 5 ends last
  NEAR(f.cavg_ref, (101.0 + 80.0 + 15.0) / 3.0);
}
END_TEST

START_TEST(test_time_zero) {
  // reservation_delay.sched shifted by 1000 s: with time zero = now the
  // fitness does not change; with the literal epoch origin (0) the C_max
  // ratio is 1040/1050 instead of 40/50.
  LocalPlanInput in;
  in.capacity = 10;
  in.now = 1000;
  in.running = {RunningJob{1, 4, 1000, 1020, 1000}};
  in.queue = {PendingJob{2, 6, 30, 1000, 0}, PendingJob{3, 10, 10, 1000, 0},
              PendingJob{4, 4, 10, 1000, 0}};
  std::vector<Placeholder> slot = {Placeholder{1030, 10, 5}};
  FitnessReport f = VAL(whatif_fitness(in, slot));
  NEAR(f.slots[0].fit, 296.0 / 325.0);
  NEAR(f.cmax_ref, 40);
  FitnessOptions o;
  o.time_zero = 0;
  f = VAL(whatif_fitness(in, slot, o));
  NEAR(f.slots[0].fit, 0.1 * 1040.0 / 1050.0 + 0.9 * 30.0 / 32.5);
  NEAR(f.slots[0].cmax, 1050);
}
END_TEST

START_TEST(test_empty_fitness) {
  // Nothing runs and nothing waits: every placeable slot has fit 1.
  LocalPlanInput in;
  in.capacity = 4;
  in.now = 10;
  FitnessReport f = VAL(whatif_fitness(in, {Placeholder{10, 5, 4}, Placeholder{20, 5, 2}}));
  EQ(f.jobs_counted, 0);
  NEAR(f.slots[0].fit, 1.0);
  NEAR(f.slots[1].fit, 1.0);
  ck_assert(f.slots[0].verdict == FitVerdict::kPlaced);
  // No slots at all: only the reference.
  f = VAL(whatif_fitness(in, {}));
  EQ(f.slots.size(), 0);
}
END_TEST

START_TEST(test_fitness_easy) {
  // easy_vs_conservative.sched under EASY: P^ORG 2=10, 3=25 (est), 4=0.
  // Completions (submit 0): job 1 10, job 2 20, job 3 35, job 4 25.
  // C_max = 35, C_avg = 90/4.  The slot [0,25) x 2 gives 2=10, 3=25, 4=35:
  // job 4 completes 60: C_max = 60, C_avg = 125/4.
  // fit = 0.1 * 35/60 + 0.9 * 90/125.
  LocalPlanInput in;
  in.capacity = 10;
  in.now = 0;
  in.running = {RunningJob{1, 6, 0, 10, 0}};
  in.queue = {PendingJob{2, 8, 10, 0, 0}, PendingJob{3, 10, 10, 0, 0}, PendingJob{4, 2, 25, 0, 0}};
  FitnessOptions o;
  o.policy = Backfill::kEasy;
  FitnessReport f = VAL(whatif_fitness(in, {Placeholder{0, 25, 2}}, o));
  NEAR(f.cmax_ref, 35);
  NEAR(f.cavg_ref, 90.0 / 4);
  NEAR(f.slots[0].fit, 0.1 * 35 / 60 + 0.9 * 90 / 125);
  // The P^JOB slot: a 2-node, 25 s job queued last.  Conservative plan:
  // free [0,10) 4, [10,20) 2 (job 2), [20,30) 0 (job 3), [30,55) 8 (job 4):
  // the first 25 s with 2 free start at 30.
  EQ(VAL(placeholder_job_start(in, 25, 2, 0, Backfill::kConservative)), 30);
  // EASY commits job 1 (6 until 10), job 4 (2 until 25) and job 2's
  // reservation (8 over [10,20)): free [0,10) 2, [10,20) 0, so the job does
  // not start now; estimated after job 3 (25..35), it starts at 35.
  EQ(VAL(placeholder_job_start(in, 25, 2, 0, Backfill::kEasy)), 35);
  // A 1-node, 5 s job fits now beside everything EASY commits.
  EQ(VAL(placeholder_job_start(in, 5, 1, 0, Backfill::kEasy)), 0);
  // P^JOB's slot never delays anyone under conservative backfilling: fit 1.
  f = VAL(whatif_fitness(in, {Placeholder{30, 25, 2}}));
  NEAR(f.slots[0].fit, 1.0);
}
END_TEST

// ---------------------------------------------------------------------------
// The incremental scheduler

START_TEST(test_incremental_early_completion) {
  // early_completion.sched through LocalScheduler: job 1 ends at 40 instead
  // of 100, and compression moves every planned job exactly 30 s earlier.
  LocalScheduler s = VAL(LocalScheduler::create(10, 0));
  OK(s.add_running(RunningJob{1, 6, 0, 100, 0}));
  OK(s.add_running(RunningJob{7, 4, 0, 70, 0}));
  OK(s.submit(PendingJob{2, 8, 50, 0, 0}));
  OK(s.submit(PendingJob{3, 10, 20, 0, 0}));
  OK(s.submit(PendingJob{4, 2, 60, 0, 0}));
  EQ(s.next_decision_time(), 0);  // changed: schedule() is due
  EQ(VAL(s.schedule()).size(), 0);
  LocalPlan p = VAL(s.plan());
  EQ(p.jobs[0].start, 100);
  EQ(p.jobs[1].start, 150);
  EQ(p.jobs[2].start, 70);
  EQ(s.next_decision_time(), 70);
  // The span ids are the profile's.
  SpanId sp = VAL(s.job_span(2));
  EQ(VAL(s.profile().span(sp)).start, 100);

  OK(s.advance_to(40));
  OK(s.finish(1));
  EQ(s.next_decision_time(), 40);
  OK(s.replan());
  const SpanId planned4 = VAL(s.job_span(4));  // compressed to [40,100)
  std::vector<StartedJob> started = VAL(s.schedule());
  EQ(started.size(), 1);
  EQ(started[0].id, 4);  // 70 - 30
  EQ(started[0].start, 40);
  EQ(started[0].expected_end, 100);
  p = VAL(s.plan());
  EQ(p.jobs.size(), 2);
  EQ(p.jobs[0].id, 2);
  EQ(p.jobs[0].start, 70);   // 100 - 30
  EQ(p.jobs[1].start, 120);  // 150 - 30
  // The job that started keeps its planned span, now as a running job.
  EQ(VAL(s.job_span(4)), planned4);
  EQ(VAL(s.profile().span(planned4)).start, 40);
  EQ(s.running_count(), 2);
  EQ(s.queued_count(), 2);
  // The rest of the story: job 7 ends at 70, job 2 starts.
  EQ(s.next_decision_time(), 70);
  OK(s.advance_to(70));
  OK(s.finish(7));
  started = VAL(s.schedule());
  EQ(started.size(), 1);
  EQ(started[0].id, 2);
  // Job 4 ends early at 80: job 3 (waiting for the whole machine) stays at
  // 120 because job 2 holds 8 nodes until 120.
  OK(s.advance_to(80));
  OK(s.finish(4));
  EQ(VAL(s.schedule()).size(), 0);
  EQ(VAL(s.plan()).jobs[0].start, 120);
  // Job 2 ends at 90: job 3 starts at once.
  OK(s.advance_to(90));
  OK(s.finish(2));
  started = VAL(s.schedule());
  EQ(started.size(), 1);
  EQ(started[0].id, 3);
  EQ(started[0].start, 90);
  OK(s.advance_to(110));
  OK(s.finish(3));
  EQ(VAL(s.schedule()).size(), 0);
  EQ(s.running_count() + s.queued_count(), 0);
  EQ(s.profile().span_count(), 0);
  EQ(s.base_profile().span_count(), 0);
  EQ(s.next_decision_time(), kNever);
}
END_TEST

START_TEST(test_incremental_shrink_cancel_reservation) {
  LocalScheduler s = VAL(LocalScheduler::create(10, 0));
  OK(s.add_running(RunningJob{1, 6, 0, 100, 0}));
  OK(s.submit(PendingJob{2, 8, 50, 0, 0}));   // 100
  OK(s.submit(PendingJob{3, 4, 30, 0, 0}));   // 0 (4 free)
  OK(s.submit(PendingJob{4, 10, 10, 0, 0}));  // 150
  std::vector<StartedJob> st = VAL(s.schedule());
  EQ(st.size(), 1);
  EQ(st[0].id, 3);
  LocalPlan p = VAL(s.plan());
  EQ(p.jobs[0].start, 100);
  EQ(p.jobs[1].start, 150);
  // Job 1's estimate shrinks to 60: job 2 moves to 60 - but job 3 holds 4
  // until 30 only, so 60; job 4 to 110.
  OK(s.shrink_running(1, 60, 6));
  p = VAL(s.plan());
  EQ(p.jobs[0].start, 60);
  EQ(p.jobs[1].start, 110);
  // Cancelling job 2 moves job 4 to 60.
  OK(s.cancel(2));
  p = VAL(s.plan());
  EQ(p.jobs.size(), 1);
  EQ(p.jobs[0].start, 60);
  // A reservation of 5 nodes over [60,80) collides with nothing running
  // (job 1 ends at 60) and pushes job 4 (the whole machine) to 80.
  OK(s.add_reservation(FixedSpan{9, 60, 80, 5}));
  EQ(VAL(s.plan()).jobs[0].start, 80);
  // Another one over [10,20) on 1 node collides with jobs 1 and 3 (10 nodes).
  HAS(ERR(s.add_reservation(FixedSpan{10, 10, 20, 1}), Errc::kNoFit),
      "reservation 10 collides with running jobs or reservations");
  EQ(s.reservation_count(), 1);
  EQ(VAL(s.plan()).jobs[0].start, 80);  // nothing changed
  // Removing the reservation brings job 4 back to 60.
  OK(s.remove_reservation(9));
  EQ(VAL(s.plan()).jobs[0].start, 60);
  // Shrinking nodes: job 1 keeps 2 of its 6 nodes; job 4 still needs all 10.
  OK(s.shrink_running(1, 60, 2));
  EQ(VAL(s.plan()).jobs[0].start, 60);
}
END_TEST

// A reservation booked into capacity the plan leaves free moves no queued
// job (the FlexCo paper's providers offer free time slots, and conservative
// backfilling keeps every promised start).  Rebuilding the plan in queue
// order instead undid the compression: job 4, compressed to start now,
// went to 60 behind job 3.
START_TEST(test_incremental_reservation_in_free_slot_moves_nothing) {
  LocalScheduler s = VAL(LocalScheduler::create(10, 0));
  OK(s.add_running(RunningJob{1, 6, 0, 100, 0}));
  OK(s.add_running(RunningJob{2, 4, 0, 50, 0}));
  OK(s.submit(PendingJob{3, 10, 10, 0, 0}));  // 100
  OK(s.submit(PendingJob{4, 4, 50, 0, 0}));   // 50, beside job 1
  EQ(VAL(s.schedule()).size(), 0);
  LocalPlan p = VAL(s.plan());
  EQ(p.jobs[0].start, 100);
  EQ(p.jobs[1].start, 50);
  // Job 1 ends at 5: in order of planned start job 4 moves to 5 (6 nodes
  // free beside job 2), then job 3 to 55.
  OK(s.advance_to(5));
  OK(s.finish(1));
  p = VAL(s.plan());
  EQ(p.jobs[0].start, 55);
  EQ(p.jobs[1].start, 5);
  // One node over [200,300) is free in that plan: booking it changes no start.
  OK(s.add_reservation(FixedSpan{9, 200, 300, 1}));
  p = VAL(s.plan());
  EQ(p.jobs[0].start, 55);
  EQ(p.jobs[1].start, 5);
  std::vector<StartedJob> st = VAL(s.schedule());
  EQ(st.size(), 1);
  EQ(st[0].id, 4);
  // One that collides with job 3's planned span still makes it move.
  OK(s.add_reservation(FixedSpan{10, 60, 70, 1}));
  EQ(VAL(s.plan()).jobs[0].start, 70);
}
END_TEST

START_TEST(test_incremental_rules) {
  LocalScheduler s = VAL(LocalScheduler::create(10, 100));
  HAS(ERR(LocalScheduler::create(-1, 0), Errc::kInvalidArgument), "LocalScheduler::create");
  ERR(LocalScheduler::create(10, -1), Errc::kInvalidArgument);
  OK(s.add_running(RunningJob{1, 4, 50, 200, 40}));
  HAS(ERR(s.add_running(RunningJob{1, 4, 50, 200, 40}), Errc::kInvalidArgument),
      "LocalScheduler::add_running: job 1 is already running");
  HAS(ERR(s.add_running(RunningJob{5, 4, 50, 100, 40}), Errc::kOutOfRange),
      "job 5: expected end 100 is not after now (100): it is over");
  HAS(ERR(s.add_running(RunningJob{5, 11, 50, 200, 40}), Errc::kOutOfRange),
      "job 5: holds 11 nodes, more than the cluster's 10");
  HAS(ERR(s.add_running(RunningJob{5, 1, 150, 200, 40}), Errc::kOutOfRange),
      "job 5: started at 150, after now (100)");
  OK(s.submit(PendingJob{2, 10, 10, 100, 0}));  // after job 1: 200
  HAS(ERR(s.submit(PendingJob{2, 1, 10, 100, 0}), Errc::kInvalidArgument),
      "LocalScheduler::submit: job 2 is already queued");
  HAS(ERR(s.submit(PendingJob{1, 1, 10, 100, 0}), Errc::kInvalidArgument), "already running");
  HAS(ERR(s.submit(PendingJob{3, 11, 10, 100, 0}), Errc::kOutOfRange),
      "job 3: needs 11 nodes, more than the cluster's 10 (it can never run");
  HAS(ERR(s.submit(PendingJob{3, 1, 0, 100, 0}), Errc::kInvalidArgument),
      "job 3: estimate must be > 0 s (got 0)");
  HAS(ERR(s.submit(PendingJob{3, 1, -1, 100, 0}), Errc::kInvalidArgument),
      "estimate must be > 0 s (got -1)");
  HAS(ERR(s.submit(PendingJob{3, 1, 5, 101, 0}), Errc::kOutOfRange),
      "job 3: submitted at 101, after now (100)");
  HAS(ERR(s.finish(99), Errc::kNotFound), "LocalScheduler::finish: no running job 99");
  HAS(ERR(s.cancel(99), Errc::kNotFound), "LocalScheduler::cancel: no queued job 99");
  HAS(ERR(s.shrink_running(99, 150, 1), Errc::kNotFound), "no running job 99");
  HAS(ERR(s.shrink_running(1, 100, 1), Errc::kInvalidArgument),
      "job 1: new end 100 must be in (now = 100, 200] (use finish() for a job that has ended)");
  HAS(ERR(s.shrink_running(1, 250, 1), Errc::kInvalidArgument), "must be in (now = 100, 200]");
  HAS(ERR(s.shrink_running(1, 150, 5), Errc::kInvalidArgument),
      "job 1: new node count must be in [1, 4] (got 5)");
  HAS(ERR(s.remove_reservation(4), Errc::kNotFound), "no reservation 4");
  HAS(ERR(s.add_reservation(FixedSpan{4, 10, 100, 1}), Errc::kOutOfRange),
      "reservation 4: ends at 100, not after now (100)");
  HAS(ERR(s.add_reservation(FixedSpan{4, 150, 150, 1}), Errc::kInvalidArgument),
      "reservation 4: end 150 must be after its start 150");
  HAS(ERR(s.job_span(42), Errc::kNotFound), "no running or queued job 42");
  OK(s.add_reservation(FixedSpan{4, 300, 400, 2}));
  HAS(ERR(s.add_reservation(FixedSpan{4, 500, 600, 2}), Errc::kInvalidArgument),
      "reservation 4 already exists");

  // Time only moves forward, and never past a decision.
  HAS(ERR(s.advance_to(99), Errc::kOutOfRange),
      "LocalScheduler::advance_to: t 99 is before now (100)");
  EQ(s.next_decision_time(), 100);  // changes since the last schedule()
  OK(s.advance_to(100));            // no-op
  EQ(VAL(s.schedule()).size(), 0);
  EQ(s.next_decision_time(), 200);  // job 2's planned start
  HAS(ERR(s.advance_to(201), Errc::kOutOfRange),
      "t 201 passes the planned start of job 2 at 200: call schedule() at that time first");
  // Job 1 must be reported as ended before time passes its expected end.
  OK(s.cancel(2));
  OK(s.replan());
  EQ(s.next_decision_time(), kNever);
  HAS(ERR(s.advance_to(201), Errc::kOutOfRange),
      "t 201 passes the expected end of running job 1 at 200: report its end with finish() first");
  OK(s.advance_to(200));
  OK(s.finish(1));
  // Reservations are dropped once over (memory bounded by live objects).
  OK(s.advance_to(400));
  EQ(s.reservation_count(), 0);
  EQ(s.profile().span_count(), 0);
  // A job due now that has not been started blocks time.
  OK(s.submit(PendingJob{6, 1, 10, 400, 0}));
  OK(s.replan());
  HAS(ERR(s.advance_to(401), Errc::kOutOfRange), "passes the planned start of job 6 at 400");
  EQ(VAL(s.schedule()).size(), 1);
  // A job with a begin time starts then, not before.
  OK(s.submit(PendingJob{7, 10, 10, 400, 450}));
  EQ(VAL(s.schedule()).size(), 0);
  EQ(s.next_decision_time(), 450);
}
END_TEST

START_TEST(test_incremental_forever) {
  // Job 1 has no time limit; job 2 can then never fit, until job 1 ends.
  LocalScheduler s = VAL(LocalScheduler::create(4, 0));
  OK(s.submit(PendingJob{1, 2, kForever, 0, 0}));
  OK(s.submit(PendingJob{2, 3, 10, 0, 0}));
  std::vector<StartedJob> st = VAL(s.schedule());
  EQ(st.size(), 1);
  EQ(st[0].expected_end, kForever);
  LocalPlan p = VAL(s.plan());
  ck_assert(p.jobs[0].placement == Placement::kNever);
  EQ(p.jobs[0].start, kNever);
  EQ(s.next_decision_time(), kNever);
  OK(s.advance_to(5));
  OK(s.finish(1));
  st = VAL(s.schedule());
  EQ(st.size(), 1);
  EQ(st[0].id, 2);
  EQ(st[0].start, 5);
  EQ(s.next_decision_time(), kNever);
}
END_TEST

START_TEST(test_incremental_easy) {
  // easy_vs_conservative.sched through an EASY LocalScheduler.
  LocalScheduler s = VAL(LocalScheduler::create(10, 0, Backfill::kEasy));
  ck_assert(s.policy() == Backfill::kEasy);
  OK(s.add_running(RunningJob{1, 6, 0, 10, 0}));
  OK(s.submit(PendingJob{2, 8, 10, 0, 0}));
  OK(s.submit(PendingJob{3, 10, 10, 0, 0}));
  OK(s.submit(PendingJob{4, 2, 25, 0, 0}));
  std::vector<StartedJob> st = VAL(s.schedule());
  EQ(st.size(), 1);
  EQ(st[0].id, 4);  // backfilled: does not delay the head (job 2)
  LocalPlan p = VAL(s.plan());
  EQ(p.jobs.size(), 2);
  EQ(p.head, 0);
  EQ(p.jobs[0].start, 10);
  ck_assert(p.jobs[0].placement == Placement::kReserved);
  EQ(p.jobs[1].start, 25);
  ck_assert(p.jobs[1].placement == Placement::kEstimated);
  EQ(s.next_decision_time(), 10);  // the head's start (= job 1's end)
  OK(s.advance_to(10));
  OK(s.finish(1));
  st = VAL(s.schedule());
  EQ(st.size(), 1);
  EQ(st[0].id, 2);
  // Job 3 is the head now, reserved at 25 (job 4's end).
  p = VAL(s.plan());
  EQ(p.head, 0);
  EQ(p.jobs[0].start, 25);
  EQ(s.next_decision_time(), 20);  // job 2's expected end comes first
  // Nothing fits at 10: jobs 2 and 4 hold all 10 nodes until 20.
  OK(s.submit(PendingJob{5, 1, 10, 10, 0}));
  EQ(VAL(s.schedule()).size(), 0);
  // At 20 job 2 ends: 8 nodes are free until the head's reservation at 25.
  // Job 5 (10 s) would delay the head; job 6 (5 s) fits and starts.
  OK(s.advance_to(20));
  OK(s.finish(2));
  OK(s.submit(PendingJob{6, 1, 5, 20, 0}));
  st = VAL(s.schedule());
  EQ(st.size(), 1);
  EQ(st[0].id, 6);
  p = VAL(s.plan());
  EQ(p.jobs.size(), 2);
  EQ(p.jobs[0].id, 3);
  EQ(p.jobs[0].start, 25);
  EQ(p.jobs[1].id, 5);
  EQ(p.jobs[1].start, 35);  // estimated after job 3
  ck_assert(p.jobs[1].placement == Placement::kEstimated);
}
END_TEST

// ---------------------------------------------------------------------------
// Randomized properties against a per-second reference model (fixed seeds)

Time sat(Time t, Duration d) { return d >= kForever - t ? kForever : t + d; }

std::int64_t uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// Node usage per second over [now, horizon); the last second stands for
// everything after it (only never-ending spans reach past the horizon).
struct Usage {
  Time now;
  Time horizon;
  Amount capacity;
  std::vector<Amount> used;

  Usage(Time n, Time h, Amount c) : now(n), horizon(h), capacity(c), used(h - n, 0) {}

  void add(Time s, Time e, Amount nodes) {
    s = std::max(s, now);
    Time stop = std::min(e, horizon);
    for (Time t = s; t < stop; ++t) used[t - now] += nodes;
    if (e > horizon) ck_assert_msg(e == kForever, "a finite span reaches past the horizon");
  }
  bool fits(Time s, Duration d, Amount nodes) const {
    if (s >= horizon) return used.back() + nodes <= capacity;
    Time stop = std::min(sat(s, d), horizon);
    for (Time t = s; t < stop; ++t)
      if (used[t - now] + nodes > capacity) return false;
    return true;
  }
  // Brute-force earliest fit from `from`; kNever if none before the horizon
  // (past it nothing changes any more).
  Time earliest(Time from, Duration d, Amount nodes) const {
    for (Time s = std::max(from, now); s < horizon; ++s)
      if (fits(s, d, nodes)) return s;
    return kNever;
  }
  Amount peak() const { return *std::max_element(used.begin(), used.end()); }
};

struct RandomCase {
  LocalPlanInput in;
  Time horizon = 0;
};

RandomCase random_case(std::mt19937_64& rng) {
  RandomCase rc;
  LocalPlanInput& in = rc.in;
  in.capacity = uniform(rng, 1, 12);
  in.now = uniform(rng, 0, 50);
  Time last = in.now;
  Amount held = 0;
  int nrun = static_cast<int>(uniform(rng, 0, 4));
  for (int k = 0; k < nrun; ++k) {
    Amount nodes = uniform(rng, 1, in.capacity);
    if (held + nodes > in.capacity) continue;
    held += nodes;
    Time start = std::max<Time>(0, in.now - uniform(rng, 0, 30));
    Time end;
    int kind = static_cast<int>(uniform(rng, 0, 9));
    if (kind == 0)
      end = kForever;
    else if (kind == 1 && start < in.now)
      end = uniform(rng, start + 1, in.now);  // overdue
    else
      end = in.now + uniform(rng, 1, 60);
    if (end != kForever) last = std::max(last, end);
    in.running.push_back(RunningJob{static_cast<std::uint64_t>(k + 1), nodes, start, end,
                                    std::max<Time>(0, start - uniform(rng, 0, 10))});
  }
  // Reservations that fit beside the running jobs and each other.
  Profile base = VAL(build_base_profile(in));
  int nres = static_cast<int>(uniform(rng, 0, 3));
  for (int k = 0; k < nres; ++k) {
    Time start = std::max<Time>(0, in.now + uniform(rng, -10, 80));
    Time end = uniform(rng, 0, 9) == 0 ? kForever : start + uniform(rng, 1, 30);
    Amount nodes = uniform(rng, 1, in.capacity);
    Time s = std::max(start, in.now);
    if (end <= in.now) continue;
    if (VAL(base.min_over(s, end == kForever ? kForever : end - s)) < nodes) continue;
    (void)VAL(base.add_span(s, end == kForever ? kForever : end - s, nodes));
    last = std::max(last, end != kForever ? end : start);  // past it nothing changes
    in.reservations.push_back(FixedSpan{static_cast<std::uint64_t>(k + 1), start, end, nodes});
  }
  int njobs = static_cast<int>(uniform(rng, 1, 12));
  Duration work = 0;
  for (int k = 0; k < njobs; ++k) {
    PendingJob j;
    j.id = static_cast<std::uint64_t>(100 + k);
    j.nodes = uniform(rng, 1, in.capacity);
    j.estimate = uniform(rng, 0, 14) == 0 ? kForever : uniform(rng, 1, 40);
    j.submit = uniform(rng, 0, in.now);
    int b = static_cast<int>(uniform(rng, 0, 9));
    j.begin = b < 2 ? in.now + uniform(rng, 1, 50) : b == 2 ? uniform(rng, 0, in.now) : 0;
    last = std::max(last, j.begin);
    if (j.estimate != kForever) work += j.estimate;
    in.queue.push_back(j);
  }
  rc.horizon = last + work + 2;
  return rc;
}

Usage base_usage(const RandomCase& rc) {
  const LocalPlanInput& in = rc.in;
  Usage u(in.now, rc.horizon, in.capacity);
  for (const RunningJob& r : in.running)
    u.add(in.now, std::max(r.expected_end, in.now + 1), r.nodes);
  for (const FixedSpan& r : in.reservations)
    if (r.end > in.now) u.add(r.start, r.end, r.nodes);
  return u;
}

START_TEST(test_random_conservative) {
  std::mt19937_64 rng(20261122);
  for (int iter = 0; iter < 600; ++iter) {
    RandomCase rc = random_case(rng);
    const LocalPlanInput& in = rc.in;
    LocalPlan plan = VAL(plan_conservative(in));
    EQ(plan.jobs.size(), in.queue.size());
    Usage u = base_usage(rc);
    ck_assert_msg(u.peak() <= in.capacity, "iter %d: the generator over-subscribed", iter);
    for (std::size_t i = 0; i < in.queue.size(); ++i) {
      const PendingJob& j = in.queue[i];
      const PlannedJob& p = plan.jobs[i];
      Time elig = std::max(in.now, j.begin);
      // Each job gets exactly the earliest start where it fits beside the
      // jobs before it: it never starts before its earliest time, never
      // over-subscribes, and no earlier start was possible.
      Time want = u.earliest(elig, j.estimate, j.nodes);
      ck_assert_msg(p.start == want, "iter %d job %zu: planned %" PRId64 ", reference %" PRId64,
                    iter, i, p.start, want);
      if (p.start == kNever) {
        ck_assert(p.placement == Placement::kNever);
        continue;
      }
      ck_assert(p.start >= elig);
      EQ(p.end, sat(p.start, j.estimate));
      u.add(p.start, p.end, j.nodes);
    }
    ck_assert_msg(u.peak() <= in.capacity, "iter %d: capacity exceeded", iter);
    // The plan's profile agrees with the reference at every second.
    for (Time t = in.now; t < rc.horizon; ++t)
      ck_assert_msg(VAL(plan.profile.free_at(t)) == in.capacity - u.used[t - in.now],
                    "iter %d: profile differs at %" PRId64, iter, t);
    // No job is delayed by a later-queued one: planning any prefix of the
    // queue gives its jobs the same starts.
    for (std::size_t k = 1; k < in.queue.size(); ++k) {
      LocalPlanInput prefix = in;
      prefix.queue.resize(k);
      LocalPlan pp = VAL(plan_conservative(prefix));
      for (std::size_t i = 0; i < k; ++i)
        ck_assert_msg(pp.jobs[i].start == plan.jobs[i].start,
                      "iter %d: job %zu moves when jobs after %zu are queued", iter, i, k);
    }
    // Delays of a random placeholder are consistent with both plans.
    Placeholder ph{in.now + uniform(rng, 0, 60), uniform(rng, 1, 40), uniform(rng, 1, in.capacity)};
    DelayReport d = VAL(delay_caused_by(in, ph));
    Usage b = base_usage(rc);
    ck_assert(d.collision == !b.fits(ph.start, ph.duration, ph.nodes));
    if (!d.collision) {
      EQ(d.jobs.size(), in.queue.size());
      // "With" is the plan with the placeholder as one more reservation.
      LocalPlanInput with = in;
      with.reservations.push_back(FixedSpan{999, ph.start, ph.start + ph.duration, ph.nodes});
      for (Backfill policy : {Backfill::kConservative, Backfill::kEasy}) {
        LocalPlan pw = VAL(plan_local(with, policy));
        LocalPlan po = VAL(plan_local(in, policy));
        DelayReport dp = VAL(delay_caused_by(in, ph, policy));
        for (std::size_t i = 0; i < in.queue.size(); ++i) {
          EQ(dp.jobs[i].start_without, po.jobs[i].start);
          EQ(dp.jobs[i].start_with, pw.jobs[i].start);
        }
      }
      FitnessReport f = VAL(whatif_fitness(in, {ph}));
      ck_assert(f.slots[0].fit >= 0.0 && f.slots[0].fit <= 1.0);
      if (d.delayed_jobs == 0 && d.advanced_jobs == 0) NEAR(f.slots[0].fit, 1.0);
      if (d.head_delay > 0) ck_assert(f.slots[0].verdict == FitVerdict::kHeadDelayed);
    }
  }
}
END_TEST

START_TEST(test_random_easy) {
  std::mt19937_64 rng(4242);
  for (int iter = 0; iter < 600; ++iter) {
    RandomCase rc = random_case(rng);
    const LocalPlanInput& in = rc.in;
    LocalPlan plan = VAL(plan_easy(in));
    Usage u = base_usage(rc);
    bool passed_head = false;
    for (std::size_t i = 0; i < in.queue.size(); ++i) {
      const PendingJob& j = in.queue[i];
      const PlannedJob& p = plan.jobs[i];
      bool now_fits = j.begin <= in.now && u.fits(in.now, j.estimate, j.nodes);
      if (p.placement == Placement::kReserved && p.start == in.now) {
        ck_assert_msg(now_fits, "iter %d job %zu starts now but does not fit", iter, i);
        u.add(p.start, p.end, j.nodes);
        continue;
      }
      ck_assert_msg(!now_fits, "iter %d job %zu fits now but does not start", iter, i);
      if (i == plan.head) {
        EQ(p.start, u.earliest(std::max(in.now, j.begin), j.estimate, j.nodes));
        ck_assert(p.start > in.now);
        u.add(p.start, p.end, j.nodes);
        passed_head = true;
      } else if (!passed_head) {
        // Before the head every job starts now or never.
        ck_assert_msg(p.placement == Placement::kNever, "iter %d job %zu", iter, i);
        EQ(u.earliest(std::max(in.now, j.begin), j.estimate, j.nodes), kNever);
      } else {
        ck_assert(p.placement == Placement::kEstimated || p.placement == Placement::kNever);
        EQ(p.span, kNoSpan);
      }
    }
    ck_assert_msg(u.peak() <= in.capacity, "iter %d: committed jobs exceed capacity", iter);
    // The estimates: conservative, in queue order, after the committed jobs.
    for (std::size_t i = 0; i < in.queue.size(); ++i) {
      const PlannedJob& p = plan.jobs[i];
      if (p.placement == Placement::kReserved || i < plan.head || plan.head == kNoHead) continue;
      const PendingJob& j = in.queue[i];
      EQ(p.start, u.earliest(std::max(in.now, j.begin), j.estimate, j.nodes));
      if (p.start != kNever) u.add(p.start, p.end, j.nodes);
    }
    ck_assert(u.peak() <= in.capacity);
    // Backfilled jobs never delay the head: planning the queue up to the
    // head gives it the same start.
    if (plan.head != kNoHead) {
      LocalPlanInput prefix = in;
      prefix.queue.resize(plan.head + 1);
      LocalPlan pp = VAL(plan_easy(prefix));
      EQ(pp.head, plan.head);
      EQ(pp.jobs[plan.head].start, plan.jobs[plan.head].start);
    }
  }
}
END_TEST

// Eq. 9.6-9.8 recomputed here from plain plans, slot by slot.
START_TEST(test_random_fitness) {
  std::mt19937_64 rng(777);
  for (int iter = 0; iter < 300; ++iter) {
    RandomCase rc = random_case(rng);
    const LocalPlanInput& in = rc.in;
    Backfill policy = iter % 2 ? Backfill::kEasy : Backfill::kConservative;
    FitnessOptions opt;
    opt.policy = policy;
    opt.max_head_delay = iter % 3 == 0 ? kForever : uniform(rng, 0, 10);
    opt.weight_cmax = static_cast<double>(uniform(rng, 0, 10)) / 10.0;
    opt.weight_cavg = 1.0 - opt.weight_cmax;
    std::vector<Placeholder> slots;
    for (int k = 0; k < 4; ++k)
      slots.push_back(Placeholder{in.now + uniform(rng, 0, 60),
                                  uniform(rng, 0, 19) == 0 ? kForever : uniform(rng, 1, 40),
                                  uniform(rng, 1, in.capacity)});
    FitnessReport f = VAL(whatif_fitness(in, slots, opt));

    LocalPlan ref = VAL(plan_local(in, policy));
    std::vector<std::size_t> counted;
    std::size_t n = 0;
    Time run_max = -1;
    double run_sum = 0;
    for (const RunningJob& r : in.running) {
      Time end = std::max(r.expected_end, in.now + 1);
      if (end == kForever) continue;
      ++n;
      run_max = std::max(run_max, end);
      run_sum += static_cast<double>(end - r.submit);
    }
    for (std::size_t i = 0; i < ref.jobs.size(); ++i)
      if (ref.jobs[i].end != kForever) counted.push_back(i);
    n += counted.size();
    EQ(f.jobs_counted, n);
    auto metrics = [&](const LocalPlan& p) {
      Time mx = run_max;
      double sum = run_sum;
      for (std::size_t i : counted) {
        if (p.jobs[i].end == kForever) return std::pair<double, double>(INFINITY, INFINITY);
        mx = std::max(mx, p.jobs[i].end);
        sum += static_cast<double>(p.jobs[i].end - in.queue[i].submit);
      }
      return std::pair<double, double>(static_cast<double>(mx - in.now),
                                       sum / static_cast<double>(n));
    };
    if (n == 0) continue;
    auto [cmax_ref, cavg_ref] = metrics(ref);
    NEAR(f.cmax_ref, cmax_ref);
    NEAR(f.cavg_ref, cavg_ref);
    Usage base = base_usage(rc);
    double best_max = cmax_ref, best_avg = cavg_ref;
    std::vector<std::pair<double, double>> m(slots.size());
    std::vector<FitVerdict> verdict(slots.size(), FitVerdict::kCollision);
    for (std::size_t k = 0; k < slots.size(); ++k) {
      const Placeholder& ph = slots[k];
      if (!base.fits(ph.start, ph.duration, ph.nodes)) continue;
      LocalPlanInput with = in;
      with.reservations.push_back(FixedSpan{999, ph.start, sat(ph.start, ph.duration), ph.nodes});
      LocalPlan p = VAL(plan_local(with, policy));
      m[k] = metrics(p);
      Time a = ref.jobs.empty() ? 0 : ref.jobs[0].start, b = ref.jobs.empty() ? 0 : p.jobs[0].start;
      Duration head = a == b ? 0 : b == kNever ? kForever : a == kNever ? -kForever : b - a;
      EQ(f.slots[k].head_delay, head);
      verdict[k] = opt.max_head_delay == kForever || head <= opt.max_head_delay
                       ? FitVerdict::kPlaced
                       : FitVerdict::kHeadDelayed;
      if (verdict[k] == FitVerdict::kPlaced) {
        best_max = std::min(best_max, m[k].first);
        best_avg = std::min(best_avg, m[k].second);
      }
    }
    NEAR(f.cmax_best, best_max);
    NEAR(f.cavg_best, best_avg);
    for (std::size_t k = 0; k < slots.size(); ++k) {
      ck_assert_msg(f.slots[k].verdict == verdict[k], "iter %d slot %zu: %s, expected %s", iter, k,
                    fit_verdict_name(f.slots[k].verdict), fit_verdict_name(verdict[k]));
      double want = 0;
      if (verdict[k] == FitVerdict::kPlaced) {
        auto r = [](double best, double v) { return std::isinf(v) ? 0.0 : best / v; };
        want =
            opt.weight_cmax * r(best_max, m[k].first) + opt.weight_cavg * r(best_avg, m[k].second);
      }
      NEAR(f.slots[k].fit, want);
      ck_assert(f.slots[k].fit >= 0.0 && f.slots[k].fit <= 1.0);
    }
  }
}
END_TEST

// Big queues with more than 64 distinct sizes and estimates (so the
// planner's start bound shares buckets) against a plain earliest-fit plan
// on the per-second model: plans, what-if starts with a placeholder, the
// fitness' P^JOB start, all equal to the naive computation.
Time naive_earliest(const Usage& u, Time from, Duration d, Amount nodes) {
  Time s = std::max(from, u.now);
  while (s < u.horizon) {
    Time stop = std::min(sat(s, d), u.horizon);
    Time bad = -1;
    for (Time t = stop - 1; t >= s; --t)  // the last blocked second
      if (u.used[t - u.now] + nodes > u.capacity) {
        bad = t;
        break;
      }
    if (bad < 0) return s;
    s = bad + 1;
  }
  return kNever;
}

std::vector<Time> naive_plan(Usage u, const LocalPlanInput& in) {
  std::vector<Time> starts;
  for (const PendingJob& j : in.queue) {
    Time s = naive_earliest(u, std::max(in.now, j.begin), j.estimate, j.nodes);
    starts.push_back(s);
    if (s != kNever) u.add(s, sat(s, j.estimate), j.nodes);
  }
  return starts;
}

// Conservative what-if fitness plans on flat arrays (FlatProfile) when the
// base is small enough, while delay_caused_by plans on the treap (Profile):
// on bases of hundreds of points (many running jobs with distinct ends,
// reservations), every slot's metrics and head delay must be those of
// delay_caused_by's plan with the slot, and the reference metrics those of
// its plan without.
START_TEST(test_fitness_flat_vs_treap) {
  std::mt19937_64 rng(2718);
  for (int iter = 0; iter < 30; ++iter) {
    LocalPlanInput in;
    in.capacity = uniform(rng, 100, 400);
    in.now = 10000;
    Amount held = 0;
    for (std::uint64_t k = 1; held < in.capacity - 10; ++k) {
      Amount nodes = uniform(rng, 1, 3);
      held += nodes;
      Time end = uniform(rng, 0, 30) == 0 ? kForever : in.now + uniform(rng, 1, 20000);
      in.running.push_back(RunningJob{k, nodes, in.now - 100, end, in.now - 200});
    }
    for (std::uint64_t k = 1; k <= 20; ++k) {
      Time start = in.now + uniform(rng, 0, 20000);
      in.reservations.push_back(FixedSpan{k, start, start + uniform(rng, 60, 4000), 1});
    }
    std::size_t nq = static_cast<std::size_t>(uniform(rng, 50, 300));
    for (std::size_t k = 0; k < nq; ++k) {
      PendingJob j;
      j.id = 100000 + k;
      j.nodes = uniform(rng, 0, 4) == 0 ? uniform(rng, 1, in.capacity) : uniform(rng, 1, 16);
      j.estimate = uniform(rng, 0, 25) == 0 ? kForever : uniform(rng, 60, 20000);
      j.submit = in.now - uniform(rng, 0, 5000);
      j.begin = uniform(rng, 0, 9) == 0 ? in.now + uniform(rng, 1, 9000) : 0;
      in.queue.push_back(j);
    }
    std::vector<Placeholder> slots;
    for (int k = 0; k < 8; ++k)
      slots.push_back(Placeholder{in.now + uniform(rng, 0, 15000), uniform(rng, 60, 7200),
                                  uniform(rng, 1, 12)});
    FitnessOptions opt;
    opt.max_head_delay = kForever;
    FitnessReport f = VAL(whatif_fitness(in, slots, opt));

    double run_max = -1, run_sum = 0;
    std::size_t n = 0;
    for (const RunningJob& r : in.running) {
      if (r.expected_end == kForever) continue;
      ++n;
      run_max = std::max(run_max, static_cast<double>(r.expected_end));
      run_sum += static_cast<double>(r.expected_end - r.submit);
    }
    // The metrics of a plan given as every job's start, over the jobs that
    // complete without the slot.
    auto metrics = [&](const DelayReport& d, bool with) {
      double mx = run_max, sum = run_sum;
      std::size_t cnt = n;
      for (std::size_t i = 0; i < nq; ++i) {
        const JobDelay& jd = d.jobs[i];
        if (jd.start_without == kNever || in.queue[i].estimate == kForever) continue;
        ++cnt;
        Time st = with ? jd.start_with : jd.start_without;
        if (st == kNever) return std::pair<double, double>(INFINITY, INFINITY);
        Time end = st + in.queue[i].estimate;
        mx = std::max(mx, static_cast<double>(end));
        sum += static_cast<double>(end - in.queue[i].submit);
      }
      EQ(f.jobs_counted, cnt);
      return std::pair<double, double>(mx - static_cast<double>(in.now),
                                       sum / static_cast<double>(cnt));
    };
    bool ref_checked = false;
    int placed = 0;
    for (std::size_t k = 0; k < slots.size(); ++k) {
      DelayReport d = VAL(delay_caused_by(in, slots[k]));
      if (d.collision) {
        ck_assert_msg(f.slots[k].verdict == FitVerdict::kCollision, "iter %d slot %zu", iter, k);
        continue;
      }
      ++placed;
      if (!ref_checked) {
        auto [cmax, cavg] = metrics(d, false);
        NEAR(f.cmax_ref, cmax);
        NEAR(f.cavg_ref, cavg);
        ref_checked = true;
      }
      auto [cmax, cavg] = metrics(d, true);
      ck_assert_msg(f.slots[k].verdict == FitVerdict::kPlaced, "iter %d slot %zu", iter, k);
      NEAR(f.slots[k].cmax, cmax);
      NEAR(f.slots[k].cavg, cavg);
      EQ(f.slots[k].head_delay, d.head_delay);
    }
    ck_assert_msg(placed > 0, "iter %d: no slot placed", iter);
  }
}
END_TEST

// FitnessReference (the probes' cache, one per snapshot and partition):
// whatever slots and options are asked of one reference, in any order and
// with slots asked again (answered from its memo), each report must be
// exactly (==, not near) whatif_fitness(input, ...)'s, computed afresh.
void same_report(const FitnessReport& a, const FitnessReport& b, int iter, int round) {
  ck_assert_msg(a.jobs_counted == b.jobs_counted && a.cmax_ref == b.cmax_ref &&
                    a.cavg_ref == b.cavg_ref && a.cmax_best == b.cmax_best &&
                    a.cavg_best == b.cavg_best && a.job_start == b.job_start &&
                    a.slots.size() == b.slots.size(),
                "iter %d round %d: reports differ", iter, round);
  for (std::size_t k = 0; k < a.slots.size(); ++k) {
    const SlotFitness &x = a.slots[k], &y = b.slots[k];
    ck_assert_msg(x.slot.start == y.slot.start && x.slot.duration == y.slot.duration &&
                      x.slot.nodes == y.slot.nodes && x.verdict == y.verdict && x.fit == y.fit &&
                      x.cmax == y.cmax && x.cavg == y.cavg && x.head_delay == y.head_delay,
                  "iter %d round %d slot %zu: %s fit %.17g head %" PRId64 " vs %s fit %.17g head %" PRId64,
                  iter, round, k, fit_verdict_name(x.verdict), x.fit, x.head_delay,
                  fit_verdict_name(y.verdict), y.fit, y.head_delay);
  }
}

struct FitnessAsk {
  std::vector<Placeholder> slots;
  FitnessOptions opt;
};

// Slots drawn from a small pool (so later rounds ask some again) and random
// options of the given policy.
FitnessAsk random_ask(std::mt19937_64& rng, const LocalPlanInput& in,
                      const std::vector<Placeholder>& pool, Backfill policy) {
  FitnessAsk a;
  a.opt.policy = policy;
  a.opt.max_head_delay = uniform(rng, 0, 2) == 0 ? kForever : uniform(rng, 0, 30);
  a.opt.weight_cmax = static_cast<double>(uniform(rng, 0, 10)) / 10.0;
  a.opt.weight_cavg = 1.0 - a.opt.weight_cmax;
  if (uniform(rng, 0, 2) == 0) a.opt.time_zero = uniform(rng, 0, in.now);
  if (uniform(rng, 0, 1) == 0)
    a.opt.job_reference = FitnessOptions::JobReference{uniform(rng, 1, 60),
                                                        uniform(rng, 1, in.capacity),
                                                        uniform(rng, 0, in.now + 40)};
  int n = static_cast<int>(uniform(rng, 0, 6));
  for (int k = 0; k < n; ++k)
    a.slots.push_back(pool[static_cast<std::size_t>(uniform(rng, 0, pool.size() - 1))]);
  return a;
}

START_TEST(test_fitness_reference_same_answers) {
  std::mt19937_64 rng(4242);
  std::size_t hits = 0, remembered_rounds = 0;
  for (int iter = 0; iter < 400; ++iter) {
    RandomCase rc = random_case(rng);
    const LocalPlanInput& in = rc.in;
    Backfill policy = iter % 3 == 2 ? Backfill::kEasy : Backfill::kConservative;
    std::vector<Placeholder> pool;
    for (int k = 0; k < 8; ++k)
      pool.push_back(Placeholder{in.now + uniform(rng, 0, 60),
                                 uniform(rng, 0, 19) == 0 ? kForever : uniform(rng, 1, 40),
                                 uniform(rng, 1, in.capacity)});
    FitnessReference ref = VAL(FitnessReference::create(in, policy));
    EQ(ref.input().queue.size(), in.queue.size());
    ck_assert(ref.policy() == policy);
    for (int round = 0; round < 6; ++round) {
      FitnessAsk a = random_ask(rng, in, pool, policy);
      std::size_t before = ref.memo_size();
      const bool remembered = ref.remembers(a.slots, a.opt);
      FitnessReport fast = VAL(whatif_fitness(ref, a.slots, a.opt));
      FitnessReport slow = VAL(whatif_fitness(in, a.slots, a.opt));
      same_report(fast, slow, iter, round);
      if (ref.memo_size() == before && !a.slots.empty()) ++hits;
      // remembers(): nothing new planned when it said so, and everything
      // asked is remembered afterwards (EASY's P^JOB is planned each time)
      if (remembered) EQ(ref.memo_size(), before);
      const bool easy_job = policy == Backfill::kEasy && a.opt.job_reference.has_value();
      ck_assert(ref.remembers(a.slots, a.opt) == !easy_job);
      if (remembered) ++remembered_rounds;
    }
    ck_assert(ref.memo_size() <= pool.size() * 7);
    // The reference's policy is part of the question.
    FitnessOptions other;
    other.policy = policy == Backfill::kEasy ? Backfill::kConservative : Backfill::kEasy;
    ERR(whatif_fitness(ref, {}, other), Errc::kInvalidArgument);
  }
  ck_assert_msg(hits > 100, "only %zu rounds answered from the memo alone", hits);
  ck_assert_msg(remembered_rounds > 100, "remembers() true in only %zu rounds",
                remembered_rounds);
}
END_TEST

// Probes on one snapshot run on the plugin's compute threads at once: four
// threads asking one reference must each get the fresh answer.
START_TEST(test_fitness_reference_threads) {
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 20; ++iter) {
    RandomCase rc = random_case(rng);
    const LocalPlanInput& in = rc.in;
    std::vector<Placeholder> pool;
    for (int k = 0; k < 12; ++k)
      pool.push_back(Placeholder{in.now + uniform(rng, 0, 60), uniform(rng, 1, 40),
                                 uniform(rng, 1, in.capacity)});
    std::vector<FitnessAsk> asks;
    std::vector<FitnessReport> want;
    for (int k = 0; k < 64; ++k) {
      asks.push_back(random_ask(rng, in, pool, Backfill::kConservative));
      want.push_back(VAL(whatif_fitness(in, asks.back().slots, asks.back().opt)));
    }
    FitnessReference ref = VAL(FitnessReference::create(in));
    std::vector<std::vector<FitnessReport>> got(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (std::size_t k = 0; k < asks.size(); ++k) {
          auto r = whatif_fitness(ref, asks[(k + 16 * t) % asks.size()].slots,
                                  asks[(k + 16 * t) % asks.size()].opt);
          if (r.ok()) got[t].push_back(std::move(r).value());
        }
      });
    for (auto& th : threads) th.join();
    for (std::size_t t = 0; t < 4; ++t) {
      EQ(got[t].size(), asks.size());
      for (std::size_t k = 0; k < asks.size(); ++k)
        same_report(got[t][k], want[(k + 16 * t) % asks.size()], iter, static_cast<int>(k));
    }
  }
}
END_TEST

// Why the slot passes do not keep the jobs planned before the slot's start
// as they are: in queue order, a job the slot pushes back frees capacity
// that a later job takes, and a third job, planned wholly before the slot
// without it, moves.  4 nodes; k (2 nodes, 20 s) at 0, m (3 nodes, 5 s)
// behind it at 20, j (2 nodes, 5 s) beside k at 0.  A slot of 3 nodes over
// [10, 30) pushes k to 30, m starts at 0, and j, which ended at 5, before
// the slot, now starts at 5.
START_TEST(test_slot_moves_job_before_it) {
  LocalPlanInput in;
  in.capacity = 4;
  in.now = 0;
  in.queue = {PendingJob{1, 2, 20, 0, 0}, PendingJob{2, 3, 5, 0, 0}, PendingJob{3, 2, 5, 0, 0}};
  DelayReport d = VAL(delay_caused_by(in, Placeholder{10, 20, 3}));
  ck_assert(!d.collision);
  EQ(d.jobs[0].start_without, 0);
  EQ(d.jobs[0].start_with, 30);
  EQ(d.jobs[1].start_without, 20);
  EQ(d.jobs[1].start_with, 0);
  EQ(d.jobs[2].start_without, 0);
  EQ(d.jobs[2].start_with, 5);
  FitnessReference ref = VAL(FitnessReference::create(in));
  same_report(VAL(whatif_fitness(ref, {Placeholder{10, 20, 3}}, FitnessOptions{})),
              VAL(whatif_fitness(in, {Placeholder{10, 20, 3}}, FitnessOptions{})), 0, 0);
}
END_TEST

START_TEST(test_random_big_queue_naive) {
  std::mt19937_64 rng(31337);
  for (int iter = 0; iter < 40; ++iter) {
    RandomCase rc;
    LocalPlanInput& in = rc.in;
    in.capacity = uniform(rng, 60, 150);
    in.now = uniform(rng, 0, 100);
    Amount held = 0;
    for (int k = 0; k < 6; ++k) {
      Amount nodes = uniform(rng, 1, in.capacity / 4);
      if (held + nodes > in.capacity) break;
      held += nodes;
      in.running.push_back(RunningJob{static_cast<std::uint64_t>(k + 1), nodes, in.now,
                                      in.now + uniform(rng, 1, 200), in.now});
    }
    if (held < in.capacity)
      in.reservations.push_back(
          FixedSpan{1, in.now + uniform(rng, 0, 100), in.now + uniform(rng, 101, 300),
                    uniform(rng, 1, in.capacity - held)});
    std::size_t nq = static_cast<std::size_t>(uniform(rng, 100, 220));
    Duration work = 0;
    for (std::size_t k = 0; k < nq; ++k) {
      PendingJob j;
      j.id = 1000 + k;
      // mostly small (many equal values: the bound matters), some of every size
      j.nodes = uniform(rng, 0, 2) == 0 ? uniform(rng, 1, in.capacity) : uniform(rng, 1, 8);
      j.estimate = uniform(rng, 0, 2) == 0 ? uniform(rng, 1, 150) : uniform(rng, 1, 10) * 10;
      j.submit = in.now;
      j.begin = uniform(rng, 0, 9) == 0 ? in.now + uniform(rng, 1, 300) : 0;
      work += j.estimate;
      in.queue.push_back(j);
    }
    rc.horizon = in.now + 1000 + work + 2;
    Usage base = base_usage(rc);
    std::vector<Time> want = naive_plan(base, in);
    LocalPlan plan = VAL(plan_conservative(in));
    for (std::size_t i = 0; i < nq; ++i)
      ck_assert_msg(plan.jobs[i].start == want[i],
                    "iter %d job %zu: planned %" PRId64 ", naive %" PRId64, iter, i,
                    plan.jobs[i].start, want[i]);

    // A placeholder: delay_caused_by's "with" plan and the fitness slots
    // against the naive plan with it as one more reservation.
    for (int k = 0; k < 3; ++k) {
      Placeholder ph{in.now + uniform(rng, 0, 600), uniform(rng, 1, 200),
                     uniform(rng, 1, in.capacity / 3)};
      if (!base.fits(ph.start, ph.duration, ph.nodes)) continue;
      Usage with = base;
      with.add(ph.start, ph.start + ph.duration, ph.nodes);
      std::vector<Time> want_with = naive_plan(with, in);
      DelayReport d = VAL(delay_caused_by(in, ph));
      ck_assert(!d.collision);
      for (std::size_t i = 0; i < nq; ++i) {
        EQ(d.jobs[i].start_without, want[i]);
        ck_assert_msg(d.jobs[i].start_with == want_with[i],
                      "iter %d slot %d job %zu: with %" PRId64 ", naive %" PRId64, iter, k, i,
                      d.jobs[i].start_with, want_with[i]);
      }
      FitnessOptions opt;
      opt.max_head_delay = kForever;
      FitnessReport f = VAL(whatif_fitness(in, {ph}, opt));
      Time cmax = -1;
      for (const RunningJob& r : in.running) cmax = std::max(cmax, r.expected_end);
      bool never = false;
      for (std::size_t i = 0; i < nq; ++i) {
        if (want[i] == kNever) continue;  // not counted
        if (want_with[i] == kNever) never = true;
        else cmax = std::max(cmax, want_with[i] + in.queue[i].estimate);
      }
      if (never) ck_assert(std::isinf(f.slots[0].cmax));
      else NEAR(f.slots[0].cmax, static_cast<double>(cmax - in.now));
    }

    // The fitness' P^JOB start is placeholder_job_start's, under both
    // policies, and the naive one under conservative backfilling.
    for (Backfill policy : {Backfill::kConservative, Backfill::kEasy}) {
      FitnessOptions opt;
      opt.policy = policy;
      Duration jd = uniform(rng, 1, 300);
      Amount jn = uniform(rng, 1, in.capacity);
      Time je = in.now + uniform(rng, -50, 500);
      if (je < 0) je = 0;
      opt.job_reference = FitnessOptions::JobReference{jd, jn, je};
      FitnessReport f = VAL(whatif_fitness(in, {}, opt));
      Time js = VAL(placeholder_job_start(in, jd, jn, je, policy));
      EQ(f.job_start, js);
      if (policy == Backfill::kConservative) {
        Usage u = base;
        for (std::size_t i = 0; i < nq; ++i)
          if (want[i] != kNever) u.add(want[i], sat(want[i], in.queue[i].estimate), in.queue[i].nodes);
        EQ(js, naive_earliest(u, std::max(in.now, je), jd, jn));
      }
    }
  }
}
END_TEST

// A simulated cluster: jobs from a random trace, run through LocalScheduler.
struct SimJob {
  PendingJob job;
  Duration runtime;  // <= estimate
};

struct Sim {
  struct Live {
    PendingJob job;
    Time start;
  };

  std::mt19937_64 rng;
  Backfill policy;
  bool early;  // may jobs end before their estimate?
  Amount capacity = 0;
  std::vector<SimJob> trace;  // by submit time; job k + 1 is trace[k]
  std::vector<FixedSpan> reservations;

  // State of a run.
  std::vector<FixedSpan> accepted;         // reservations the scheduler took
  std::map<std::uint64_t, Live> running;   // by id
  std::vector<std::uint64_t> queue;        // queued ids, in queue order
  std::map<std::uint64_t, Time> promised;  // conservative: last planned start

  Sim(std::uint64_t seed, Backfill p, bool e) : rng(seed), policy(p), early(e) {
    capacity = uniform(rng, 1, 16);
    Time t = 0;
    int n = static_cast<int>(uniform(rng, 20, 80));
    for (int k = 0; k < n; ++k) {
      t += uniform(rng, 0, 3) == 0 ? 0 : uniform(rng, 0, 25);
      Duration est = uniform(rng, 1, 60);
      Duration run = early && uniform(rng, 0, 1) ? uniform(rng, 1, est) : est;
      Time begin = uniform(rng, 0, 9) == 0 ? t + uniform(rng, 1, 40) : 0;
      trace.push_back(SimJob{
          PendingJob{static_cast<std::uint64_t>(k + 1), uniform(rng, 1, capacity), est, t, begin},
          run});
    }
    int nres = static_cast<int>(uniform(rng, 0, 3));
    for (int k = 0; k < nres; ++k) {
      Time s = uniform(rng, 0, t + 100);
      reservations.push_back(FixedSpan{static_cast<std::uint64_t>(k + 1), s,
                                       s + uniform(rng, 1, 50), uniform(rng, 1, capacity)});
    }
  }

  LocalPlanInput snapshot(Time now) const {
    LocalPlanInput in;
    in.capacity = capacity;
    in.now = now;
    for (const auto& [id, l] : running)
      in.running.push_back(
          RunningJob{id, l.job.nodes, l.start, l.start + l.job.estimate, l.job.submit});
    for (const FixedSpan& r : accepted)
      if (r.end > now) in.reservations.push_back(r);
    for (std::uint64_t id : queue) in.queue.push_back(trace[id - 1].job);
    return in;
  }

  void run(int iter) {
    LocalScheduler s = VAL(LocalScheduler::create(capacity, 0, policy));
    for (const FixedSpan& r : reservations) {
      Status st = s.add_reservation(r);
      if (st.ok())
        accepted.push_back(r);
      else
        ck_assert_msg(st.error().code == Errc::kNoFit, "%s", st.error().message.c_str());
    }
    std::multimap<Time, std::uint64_t> ends;  // actual completions
    std::size_t next = 0, done = 0;
    int steps = 0;
    while (done < trace.size()) {
      ck_assert_msg(++steps < 100000, "iter %d: the simulation does not end", iter);
      Time t = s.next_decision_time();
      if (next < trace.size()) t = std::min(t, trace[next].job.submit);
      if (!ends.empty()) t = std::min(t, ends.begin()->first);
      ck_assert_msg(t != kNever, "iter %d: nothing left to happen", iter);
      OK(s.advance_to(t));
      while (!ends.empty() && ends.begin()->first == t) {
        std::uint64_t id = ends.begin()->second;
        ends.erase(ends.begin());
        OK(s.finish(id));
        running.erase(id);
        ++done;
      }
      while (next < trace.size() && trace[next].job.submit == t) {
        OK(s.submit(trace[next].job));
        queue.push_back(trace[next].job.id);
        ++next;
      }

      // EASY: what plan_easy says on the same snapshot is what schedule()
      // does.
      std::set<std::uint64_t> expect_now;
      if (policy == Backfill::kEasy) {
        LocalPlan snap = VAL(plan_easy(snapshot(t)));
        for (const PlannedJob& p : snap.jobs)
          if (p.placement == Placement::kReserved && p.start == t) expect_now.insert(p.id);
      }
      std::vector<StartedJob> started = VAL(s.schedule());
      std::set<std::uint64_t> got_now;
      for (const StartedJob& j : started) {
        EQ(j.start, t);
        got_now.insert(j.id);
        const SimJob& sj = trace[j.id - 1];
        EQ(j.expected_end, t + sj.job.estimate);
        if (promised.count(j.id))
          ck_assert_msg(t <= promised[j.id], "iter %d: job %" PRIu64 " started later than planned",
                        iter, j.id);
        running[j.id] = Live{sj.job, t};
        queue.erase(std::find(queue.begin(), queue.end(), j.id));
        ends.emplace(t + sj.runtime, j.id);
      }
      if (policy == Backfill::kEasy)
        ck_assert_msg(got_now == expect_now,
                      "iter %d at %" PRId64 ": schedule() and plan_easy differ", iter, t);

      LocalPlan plan = VAL(s.plan());
      EQ(plan.jobs.size(), queue.size());
      for (std::size_t i = 0; i < queue.size(); ++i) EQ(plan.jobs[i].id, queue[i]);
      if (policy == Backfill::kConservative) {
        for (const PlannedJob& p : plan.jobs) {
          ck_assert(p.placement == Placement::kReserved);
          ck_assert(p.start > t);
          // Compression never moves a promised start later.
          if (promised.count(p.id))
            ck_assert_msg(p.start <= promised[p.id],
                          "iter %d: job %" PRIu64 " moved from %" PRId64 " to %" PRId64, iter, p.id,
                          promised[p.id], p.start);
          promised[p.id] = p.start;
        }
        if (!early) {
          // Without early ends the incremental plan is the one-shot plan.
          LocalPlan ref = VAL(plan_conservative(snapshot(t)));
          EQ(ref.jobs.size(), plan.jobs.size());
          for (std::size_t i = 0; i < ref.jobs.size(); ++i) {
            EQ(ref.jobs[i].id, plan.jobs[i].id);
            EQ(ref.jobs[i].start, plan.jobs[i].start);
          }
        }
      }
      // Never over capacity from now on; memory bounded by live objects.
      ck_assert_msg(VAL(s.profile().min_over(t, kForever)) >= 0, "iter %d: over-subscribed", iter);
      std::size_t held = 0;
      for (const PlannedJob& p : plan.jobs) held += p.placement == Placement::kReserved;
      EQ(s.running_count(), running.size());
      EQ(s.profile().span_count(), s.running_count() + held + s.reservation_count());
      EQ(s.base_profile().span_count(), s.running_count() + s.reservation_count());
      ck_assert(s.profile().point_count() <= 2 * s.profile().span_count() + 1);
    }
    EQ(s.queued_count(), 0);
    EQ(s.running_count(), 0);
    for (int k = 0; k < 1000 && s.reservation_count() > 0; ++k) {
      Time t = s.next_decision_time();
      if (t == kNever) t = s.now() + 50;
      OK(s.advance_to(t));
      (void)VAL(s.schedule());
    }
    EQ(s.reservation_count(), 0);
    EQ(s.profile().span_count(), 0);
    EQ(s.profile().point_count(), 1);
  }
};

START_TEST(test_random_sim_conservative) {
  for (int iter = 0; iter < 60; ++iter) {
    Sim sim(1000 + static_cast<std::uint64_t>(iter), Backfill::kConservative, iter % 2 == 1);
    sim.run(iter);
  }
}
END_TEST

START_TEST(test_random_sim_easy) {
  for (int iter = 0; iter < 60; ++iter) {
    Sim sim(5000 + static_cast<std::uint64_t>(iter), Backfill::kEasy, iter % 2 == 1);
    sim.run(iter);
  }
}
END_TEST

Suite* local_sched_suite() {
  Suite* s = suite_create("local_sched");

  TCase* golden = tcase_create("golden");
  tcase_add_loop_test(golden, test_cases, 0, static_cast<int>(g_case_files.size()));
  suite_add_tcase(s, golden);

  TCase* input = tcase_create("input");
  tcase_add_loop_test(input, test_invalid_input, 0, static_cast<int>(bad_inputs().size()));
  tcase_add_test(input, test_valid_input_accepted);
  tcase_add_test(input, test_placeholder_and_options_invalid);
  suite_add_tcase(s, input);

  TCase* oneshot = tcase_create("oneshot");
  tcase_add_test(oneshot, test_overdue_and_oversubscribed);
  tcase_add_test(oneshot, test_time_zero);
  tcase_add_test(oneshot, test_empty_fitness);
  tcase_add_test(oneshot, test_fitness_easy);
  suite_add_tcase(s, oneshot);

  TCase* incr = tcase_create("incremental");
  tcase_add_test(incr, test_incremental_early_completion);
  tcase_add_test(incr, test_incremental_shrink_cancel_reservation);
  tcase_add_test(incr, test_incremental_reservation_in_free_slot_moves_nothing);
  tcase_add_test(incr, test_incremental_rules);
  tcase_add_test(incr, test_incremental_forever);
  tcase_add_test(incr, test_incremental_easy);
  suite_add_tcase(s, incr);

  TCase* random = tcase_create("random");
  tcase_set_timeout(random, 120);
  tcase_add_test(random, test_random_conservative);
  tcase_add_test(random, test_random_easy);
  tcase_add_test(random, test_random_fitness);
  tcase_add_test(random, test_fitness_flat_vs_treap);
  tcase_add_test(random, test_fitness_reference_same_answers);
  tcase_add_test(random, test_fitness_reference_threads);
  tcase_add_test(random, test_slot_moves_job_before_it);
  tcase_add_test(random, test_random_big_queue_naive);
  tcase_add_test(random, test_random_sim_conservative);
  tcase_add_test(random, test_random_sim_easy);
  suite_add_tcase(s, random);
  return s;
}

}  // namespace

int main() {
  g_case_files = list_cases(case_dir());
  SRunner* sr = srunner_create(local_sched_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  // No case file: the golden loop is empty, so fail here, loudly.
  if (g_case_files.empty()) {
    std::fprintf(stderr, "check_local_sched: no local_sched_cases/*.sched found under %s\n",
                 case_dir().c_str());
    return EXIT_FAILURE;
  }
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
