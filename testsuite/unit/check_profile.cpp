// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests for src/core/profile.{hpp,cpp}: one case per operation and
// edge, golden scenarios from testsuite/unit/profile_cases/*.prof, and
// randomized cross-checks against a per-second reference model.

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/profile.hpp"

// Last: check.h defines macros (fail, ...) that clash with the C++ library.
#include <check.h>

using namespace flexco;

namespace {

// ---------------------------------------------------------------------------
// Helpers: every failure names the source line of the expression.

template <typename T>
T value_or_fail(Result<T> r, const char* expr, int line) {
  if (!r.ok())
    ck_abort_msg("line %d: %s failed: %s", line, expr, r.error().message.c_str());
  return std::move(r).value();
}
#define VAL(expr) value_or_fail((expr), #expr, __LINE__)

template <typename R>
std::string expect_error(const R& r, Errc code, const char* expr, int line) {
  if (r.ok()) ck_abort_msg("line %d: %s succeeded, expected %s", line, expr, errc_name(code));
  if (r.error().code != code)
    ck_abort_msg("line %d: %s gave %s (%s), expected %s", line, expr,
                 errc_name(r.error().code), r.error().message.c_str(), errc_name(code));
  return r.error().message;
}
#define ERR(expr, code) expect_error((expr), (code), #expr, __LINE__)

void status_ok(const Status& s, const char* expr, int line) {
  if (!s.ok()) ck_abort_msg("line %d: %s failed: %s", line, expr, s.error().message.c_str());
}
#define OK(expr) status_ok((expr), #expr, __LINE__)

#define EQ(a, b)                                                                  \
  do {                                                                            \
    std::int64_t a_ = (a), b_ = (b);                                              \
    if (a_ != b_)                                                                 \
      ck_abort_msg("line %d: %s == %" PRId64 ", expected %s == %" PRId64, __LINE__, \
                   #a, a_, #b, b_);                                               \
  } while (0)

#define STR_EQ(expr, want)                                                          \
  do {                                                                            \
    std::string got_ = (expr);                                                    \
    ck_assert_msg(got_ == (want), "line %d: %s is \"%s\", expected \"%s\"", __LINE__, \
                  #expr, got_.c_str(), std::string(want).c_str());               \
  } while (0)

#define HAS(msg, part)                                                              \
  ck_assert_msg(std::string(msg).find(part) != std::string::npos,                  \
                "message \"%s\" lacks \"%s\"", std::string(msg).c_str(), part)

Profile make_profile(Time origin, Amount capacity) {
  return VAL(Profile::create(origin, capacity));
}

// The profile used by several tables:
//   free [0,50):6 [50,100):1 [100,150):5 [150,200):10 [200,300):0
//        [300,400):10 [400,forever):7
Profile sample_profile() {
  Profile p = make_profile(0, 10);
  VAL(p.add_span(0, 100, 4));
  VAL(p.add_span(50, 100, 5));
  VAL(p.add_span(200, 100, 10));
  VAL(p.add_span(400, kForever, 3));
  return p;
}

std::string slots_str(const std::vector<Slot>& v) {
  std::string s;
  for (const Slot& x : v) {
    if (!s.empty()) s += ' ';
    s += std::to_string(x.start) + ":" + (x.end == kForever ? "forever" : std::to_string(x.end)) +
         ":" + std::to_string(x.free);
  }
  return s;
}

// ---------------------------------------------------------------------------
// Reference model: a per-second array over [base, base + kLen).  Every
// finite span boundary used with it stays below base + 1000, so the last
// cell stands for all of [base + kLen - 1, forever).

constexpr Time kLen = 1200;
constexpr Time kInf = kForever;

Time sat(Time t, Duration d) { return d >= kForever - t ? kForever : t + d; }

struct Ref {
  Time base;
  Time origin;
  Amount cap;
  std::vector<Amount> v;
  std::map<SpanId, Span> spans;

  Ref(Time b, Time o, Amount c) : base(b), origin(o), cap(c), v(kLen, c) {}
  Amount at(Time t) const { return v[std::min<Time>(t - base, kLen - 1)]; }
  void apply(Time s, Time e, Amount delta) {
    for (Time t = s; t < e && t - base < kLen; ++t) v[t - base] += delta;
  }
  Amount min_over(Time t, Duration d) const {
    Time e = sat(t, std::max<Duration>(d, 1));
    Amount m = at(t);
    for (Time x = t; x < e && x - base < kLen; ++x) m = std::min(m, at(x));
    return m;
  }
  bool is_point(Time t) const { return t == origin || (t > origin && t - base < kLen && at(t) != at(t - 1)); }
  std::size_t points() const {
    std::size_t n = 0;
    for (Time t = origin; t - base < kLen; ++t) n += is_point(t);
    return n;
  }
  std::vector<Slot> steps() const {
    std::vector<Slot> out;
    for (Time t = origin; t - base < kLen; ++t) {
      if (!is_point(t)) continue;
      if (!out.empty()) out.back().end = t;
      out.push_back(Slot{t, kForever, at(t)});
    }
    return out;
  }
};

// Earliest / next start over a per-second "good" array (index t - base;
// the last cell stands for the tail).  cand marks the change points.
Time ref_earliest(const std::vector<char>& good, Time base, Time lo, Duration d) {
  d = std::max<Duration>(d, 1);
  std::vector<Time> run(kLen);
  run[kLen - 1] = good[kLen - 1] ? kInf : 0;
  for (Time i = kLen - 2; i >= 0; --i)
    run[i] = good[i] ? (run[i + 1] == kInf ? kInf : run[i + 1] + 1) : 0;
  for (Time x = std::max(lo, base); x - base < kLen; ++x)
    if (run[x - base] >= d) return x;
  return kNever;
}

Time ref_next(const std::vector<char>& good, const std::vector<char>& cand, Time base,
              Time after, Duration d) {
  for (Time x = std::max(after + 1, base); x - base < kLen; ++x) {
    if (!cand[x - base]) continue;
    if (ref_earliest(good, base, x, d) == x) return x;
  }
  return kNever;
}

std::vector<char> ref_good(const Ref& r, Amount n) {
  std::vector<char> g(kLen);
  for (Time i = 0; i < kLen; ++i) g[i] = r.base + i >= r.origin && r.v[i] >= n;
  return g;
}

std::vector<char> ref_cand(const std::vector<const Ref*>& rs) {
  std::vector<char> c(kLen);
  for (Time i = 0; i < kLen; ++i)
    for (const Ref* r : rs) c[i] = c[i] || r->is_point(r->base + i);
  return c;
}

// ---------------------------------------------------------------------------
// Golden scenarios: see testsuite/unit/profile_cases/README.

std::vector<std::string> g_case_files;

std::string case_dir() {
  std::vector<std::string> tries;
  if (const char* s = std::getenv("FLEXCO_SRCDIR")) tries.push_back(std::string(s) + "/testsuite/unit/profile_cases");
  std::string here = __FILE__;
  auto slash = here.rfind('/');
  tries.push_back((slash == std::string::npos ? std::string(".") : here.substr(0, slash)) + "/profile_cases");
  tries.push_back("unit/profile_cases");
  tries.push_back("testsuite/unit/profile_cases");
  for (const std::string& d : tries) {
    if (DIR* h = opendir(d.c_str())) {
      closedir(h);
      return d;
    }
  }
  return std::string();
}

std::vector<std::string> list_cases(const std::string& dir) {
  std::vector<std::string> out;
  if (dir.empty()) return out;
  DIR* h = opendir(dir.c_str());
  if (!h) return out;
  while (struct dirent* e = readdir(h)) {
    std::string n = e->d_name;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".prof") == 0) out.push_back(dir + "/" + n);
  }
  closedir(h);
  std::sort(out.begin(), out.end());
  return out;
}

struct Golden {
  std::string file;
  int line = 0;
  std::map<std::string, Profile> profiles;
  std::string current;
  std::map<std::string, SpanId> ids;

  [[noreturn]] void die(const std::string& what) {
    ck_abort_msg("%s:%d: %s", file.c_str(), line, what.c_str());
  }
  Time num(const std::string& tok) {
    if (tok == "forever" || tok == "never") return kForever;
    char* end = nullptr;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0') die("bad number '" + tok + "'");
    return v;
  }
  std::string fmt(Time t) { return t == kForever ? "never" : std::to_string(t); }
  Profile& prof() {
    auto it = profiles.find(current);
    if (it == profiles.end()) die("no profile yet");
    return it->second;
  }
  SpanId id_of(const std::string& name) {
    if (!name.empty() && name[0] == '#') return static_cast<SpanId>(num(name.substr(1)));
    auto it = ids.find(name);
    if (it == ids.end()) die("unknown span name '" + name + "'");
    return it->second;
  }
  // "error CODE" expectations, or the printed result.
  template <typename R>
  std::string show(const R& r, const std::string& ok_text) {
    return r.ok() ? ok_text : std::string("error ") + errc_name(r.error().code);
  }

  void run_line(const std::vector<std::string>& cmd, const std::string& expect) {
    const std::string& op = cmd[0];
    auto need = [&](std::size_t n) {
      if (cmd.size() < n + 1) die(op + " needs " + std::to_string(n) + " arguments");
    };
    std::string got;
    if (op == "profile") {
      need(3);
      auto p = Profile::create(num(cmd[2]), num(cmd[3]));
      got = show(p, "ok");
      if (p.ok()) {
        profiles.erase(cmd[1]);
        profiles.emplace(cmd[1], std::move(p).value());
        current = cmd[1];
      }
    } else if (op == "use") {
      need(1);
      current = cmd[1];
      prof();
      got = "ok";
    } else if (op == "add") {
      need(4);
      Admission adm = cmd.size() > 5 && cmd[5] == "force" ? Admission::kForce : Admission::kMustFit;
      auto r = prof().add_span(num(cmd[2]), num(cmd[3]), num(cmd[4]), adm);
      if (r.ok()) ids[cmd[1]] = r.value();
      got = show(r, "ok");
    } else if (op == "remove") {
      need(1);
      auto s = prof().remove_span(id_of(cmd[1]));
      got = s.ok() ? "ok" : std::string("error ") + errc_name(s.error().code);
    } else if (op == "shrink") {
      need(3);
      auto s = prof().shrink_span(id_of(cmd[1]), num(cmd[2]), num(cmd[3]));
      got = s.ok() ? "ok" : std::string("error ") + errc_name(s.error().code);
    } else if (op == "free_at") {
      need(1);
      auto r = prof().free_at(num(cmd[1]));
      got = show(r, r.ok() ? std::to_string(r.value()) : "");
    } else if (op == "min_over") {
      need(2);
      auto r = prof().min_over(num(cmd[1]), num(cmd[2]));
      got = show(r, r.ok() ? std::to_string(r.value()) : "");
    } else if (op == "earliest") {
      need(3);
      auto r = prof().earliest_fit(num(cmd[1]), num(cmd[2]), num(cmd[3]));
      got = show(r, r.ok() ? fmt(r.value()) : "");
    } else if (op == "next") {
      need(3);
      auto r = prof().next_fit(num(cmd[1]), num(cmd[2]), num(cmd[3]));
      got = show(r, r.ok() ? fmt(r.value()) : "");
    } else if (op == "candidates") {  // t d n limit
      need(4);
      Profile& p = prof();
      Time d = num(cmd[2]), n = num(cmd[3]);
      auto r = p.earliest_fit(num(cmd[1]), d, n);
      for (Time k = 0; r.ok() && r.value() != kNever && k < num(cmd[4]); ++k) {
        got += (got.empty() ? "" : " ") + std::to_string(r.value());
        r = p.next_fit(r.value(), d, n);
      }
      if (!r.ok()) got = std::string("error ") + errc_name(r.error().code);
      if (got.empty()) got = "none";
    } else if (op == "slots") {  // from until [min]
      need(2);
      Amount m = cmd.size() > 3 ? num(cmd[3]) : 1;
      auto r = prof().free_slots(num(cmd[1]), num(cmd[2]), m);
      got = show(r, r.ok() ? slots_str(r.value()) : "");
      if (got.empty()) got = "none";
    } else if (op == "points") {
      got = std::to_string(prof().point_count());
    } else if (op == "common_each" || op == "next_common_each") {  // t d P:n ...
      need(3);
      std::vector<Demand> parts;
      for (std::size_t i = 3; i < cmd.size(); ++i) {
        auto colon = cmd[i].find(':');
        if (colon == std::string::npos) die("expected PROFILE:N, got " + cmd[i]);
        auto it = profiles.find(cmd[i].substr(0, colon));
        if (it == profiles.end()) die("unknown profile in " + cmd[i]);
        parts.push_back(Demand{&it->second, num(cmd[i].substr(colon + 1))});
      }
      auto r = op == "common_each" ? earliest_common_start(parts, num(cmd[1]), num(cmd[2]))
                                   : next_common_start(parts, num(cmd[1]), num(cmd[2]));
      got = show(r, r.ok() ? fmt(r.value()) : "");
    } else if (op == "common_sum" || op == "next_common_sum") {  // t d n P ...
      need(4);
      std::vector<const Profile*> ps;
      for (std::size_t i = 4; i < cmd.size(); ++i) {
        auto it = profiles.find(cmd[i]);
        if (it == profiles.end()) die("unknown profile " + cmd[i]);
        ps.push_back(&it->second);
      }
      auto r = op == "common_sum"
                   ? earliest_common_start_sum(ps, num(cmd[1]), num(cmd[2]), num(cmd[3]))
                   : next_common_start_sum(ps, num(cmd[1]), num(cmd[2]), num(cmd[3]));
      got = show(r, r.ok() ? fmt(r.value()) : "");
    } else {
      die("unknown command '" + op + "'");
    }
    std::string want = expect.empty() ? "ok" : expect;
    if (got != want) die("'" + op + "': got '" + got + "', expected '" + want + "'");
  }

  int run() {
    std::ifstream in(file);
    if (!in) die("cannot open");
    std::string text;
    int checks = 0;
    while (std::getline(in, text)) {
      ++line;
      auto hash = text.find('#');
      // '#' starts a comment unless it is a literal span id like "#42".
      while (hash != std::string::npos && hash + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[hash + 1])))
        hash = text.find('#', hash + 1);
      if (hash != std::string::npos) text.erase(hash);
      std::string expect;
      auto arrow = text.find("=>");
      if (arrow != std::string::npos) {
        std::istringstream es(text.substr(arrow + 2));
        std::string tok;
        while (es >> tok) expect += (expect.empty() ? "" : " ") + tok;
        text.erase(arrow);
      }
      std::istringstream ss(text);
      std::vector<std::string> cmd;
      std::string tok;
      while (ss >> tok) cmd.push_back(tok);
      if (cmd.empty()) continue;
      run_line(cmd, expect);
      ++checks;
    }
    return checks;
  }
};

}  // namespace

// ===========================================================================
// Construction and results

START_TEST(test_create) {
  Profile p = make_profile(100, 8);
  EQ(p.origin(), 100);
  EQ(p.capacity(), 8);
  EQ(p.point_count(), 1);
  EQ(p.span_count(), 0);
  EQ(make_profile(0, 0).capacity(), 0);
  EQ(make_profile(kForever - 1, kMaxAmount).capacity(), kMaxAmount);
  HAS(ERR(Profile::create(-1, 8), Errc::kInvalidArgument), "origin must be >= 0 (got -1)");
  HAS(ERR(Profile::create(kForever, 8), Errc::kOutOfRange), "Profile::create");
  HAS(ERR(Profile::create(0, -1), Errc::kInvalidArgument), "capacity");
  ERR(Profile::create(0, kMaxAmount + 1), Errc::kInvalidArgument);
}
END_TEST

START_TEST(test_result_types) {
  ck_assert_str_eq(errc_name(Errc::kInvalidArgument), "invalid-argument");
  ck_assert_str_eq(errc_name(Errc::kOutOfRange), "out-of-range");
  ck_assert_str_eq(errc_name(Errc::kNotFound), "not-found");
  ck_assert_str_eq(errc_name(Errc::kNoFit), "no-fit");
  Result<Time> good = Time{5};
  Result<Time> bad = Error{Errc::kNotFound, "x"};
  ck_assert(good.ok() && static_cast<bool>(good) && good.value() == 5);
  ck_assert(!bad.ok() && bad.value_or(7) == 7 && bad.error().message == "x");
  Status s;
  ck_assert(s.ok());
  Status f = Error{Errc::kNoFit, "y"};
  ck_assert(!f.ok() && f.error().code == Errc::kNoFit);
}
END_TEST

// ===========================================================================
// Queries

START_TEST(test_free_at) {
  Profile p = sample_profile();
  const struct { Time t; Amount free; } table[] = {
      {0, 6},     {49, 6},  {50, 1},   {99, 1},          {100, 5},         {150, 10}, {199, 10},
      {200, 0},   {299, 0}, {300, 10}, {399, 10},        {400, 7},         {1000000, 7},
      {kForever - 1, 7},
  };
  for (const auto& row : table) EQ(VAL(p.free_at(row.t)), row.free);
  Profile late = make_profile(1000, 4);
  HAS(ERR(late.free_at(999), Errc::kOutOfRange), "before the profile origin 1000");
  HAS(ERR(late.free_at(-5), Errc::kInvalidArgument), "t must be >= 0 (got -5)");
  ERR(late.free_at(kForever), Errc::kOutOfRange);
  EQ(VAL(late.free_at(1000)), 4);
}
END_TEST

START_TEST(test_min_over) {
  Profile p = sample_profile();
  const struct { Time t; Duration d; Amount min; } table[] = {
      {0, 50, 6},          {0, 51, 1},           {49, 1, 6},   {49, 2, 1},  {100, 100, 5},
      {150, 50, 10},       {150, 51, 0},         {300, 100, 10}, {300, 101, 7},
      {0, 0, 6},           {50, 0, 1},  // d = 0: the instant t
      {0, kForever, 0},    {300, kForever, 7},   {400, kForever - 10, 7},  // saturates
      {kForever - 1, 1, 7}, {kForever - 1, kForever, 7},
  };
  for (const auto& row : table) EQ(VAL(p.min_over(row.t, row.d)), row.min);
  HAS(ERR(p.min_over(0, -1), Errc::kInvalidArgument), "duration must be >= 0 (got -1)");
  ERR(p.min_over(-1, 5), Errc::kInvalidArgument);
  ERR(make_profile(10, 1).min_over(9, 5), Errc::kOutOfRange);
}
END_TEST

START_TEST(test_earliest_fit) {
  Profile p = sample_profile();
  const struct { Time t; Duration d; Amount n; Time want; } table[] = {
      {0, 10, 6, 0},           {0, 50, 6, 0},          {0, 51, 6, 300},
      {0, 10, 7, 150},         {0, 60, 7, 300},        {0, 150, 7, 300},
      {0, 150, 8, kNever},     {0, 1, 1, 0},           {0, 101, 1, 0},
      {0, 200, 1, 0},          {0, 201, 1, 300},        {160, 10, 10, 160},     {160, 50, 10, 300},
      {199, 1, 10, 199},       {199, 2, 10, 300},      {450, 5, 7, 450},
      {0, kForever, 7, 300},   {0, kForever, 8, kNever},
      {0, kForever - 1, 7, 300},  // 300 + d saturates to forever
      {kForever - 1, 5, 7, kForever - 1},
      {kForever, 5, 1, kNever},   // no start at or after the end of time
  };
  for (const auto& row : table) {
    Time got = VAL(p.earliest_fit(row.t, row.d, row.n));
    ck_assert_msg(got == row.want, "earliest_fit(%" PRId64 ", %" PRId64 ", %" PRId64 ") = %" PRId64
                  ", expected %" PRId64, row.t, row.d, row.n, got, row.want);
  }
  HAS(ERR(p.earliest_fit(-1, 5, 1), Errc::kInvalidArgument), "t must be >= 0");
  HAS(ERR(p.earliest_fit(0, -5, 1), Errc::kInvalidArgument), "duration must be >= 0 (got -5)");
}
END_TEST

START_TEST(test_zero_duration) {
  // d = 0 asks about the instant t, which on integer time is [t, t + 1).
  Profile p = sample_profile();
  for (Time t : {Time{0}, Time{49}, Time{50}, Time{199}, Time{200}, Time{450}}) {
    EQ(VAL(p.min_over(t, 0)), VAL(p.min_over(t, 1)));
    for (Amount n = 1; n <= 10; ++n) {
      EQ(VAL(p.earliest_fit(t, 0, n)), VAL(p.earliest_fit(t, 1, n)));
      EQ(VAL(p.next_fit(t, 0, n)), VAL(p.next_fit(t, 1, n)));
    }
  }
  EQ(VAL(p.earliest_fit(0, 0, 10)), 150);
  EQ(VAL(p.earliest_fit(200, 0, 1)), 300);
  // Spans must take time.
  HAS(ERR(p.add_span(0, 0, 1), Errc::kInvalidArgument), "duration must be > 0 (got 0)");
}
END_TEST

START_TEST(test_request_above_capacity) {
  Profile p = make_profile(0, 10);
  EQ(VAL(p.earliest_fit(0, 1, 11)), kNever);
  EQ(VAL(p.earliest_fit(0, 1, kMaxAmount)), kNever);
  EQ(VAL(p.earliest_fit(0, 1, std::numeric_limits<Amount>::max())), kNever);
  EQ(VAL(p.next_fit(0, 1, 11)), kNever);
  EQ(VAL(p.earliest_fit(0, kForever, 10)), 0);
  Profile empty = make_profile(0, 0);
  EQ(VAL(empty.earliest_fit(0, 1, 1)), kNever);
  ERR(empty.add_span(0, 1, 1), Errc::kNoFit);
}
END_TEST

START_TEST(test_request_not_positive) {
  Profile p = make_profile(0, 10);
  for (Amount n : {Amount{0}, Amount{-1}, std::numeric_limits<Amount>::min()}) {
    HAS(ERR(p.earliest_fit(0, 1, n), Errc::kInvalidArgument), "n must be >= 1");
    ERR(p.next_fit(0, 1, n), Errc::kInvalidArgument);
    ERR(p.add_span(0, 1, n), Errc::kInvalidArgument);
  }
  HAS(ERR(p.add_span(0, 1, kMaxAmount + 1), Errc::kInvalidArgument), "amount must be in [1, 2^52]");
}
END_TEST

START_TEST(test_next_fit) {
  Profile p = sample_profile();
  const struct { Time t; Duration d; Amount n; std::vector<Time> want; } table[] = {
      {0, 10, 5, {0, 100, 150, 300, 400}},
      {0, 60, 5, {100, 300, 400}},
      {0, 10, 8, {150, 300}},
      {120, 10, 5, {120, 150, 300, 400}},  // earliest_fit starts mid-segment
      {0, kForever, 7, {300, 400}},
      {0, 10, 11, {}},
  };
  for (const auto& row : table) {
    std::vector<Time> got;
    for (Time s = VAL(p.earliest_fit(row.t, row.d, row.n)); s != kNever;
         s = VAL(p.next_fit(s, row.d, row.n)))
      got.push_back(s);
    ck_assert_msg(got == row.want, "candidates for d=%" PRId64 " n=%" PRId64 " differ", row.d, row.n);
  }
  EQ(VAL(p.next_fit(400, 10, 5)), kNever);
  EQ(VAL(p.next_fit(kForever, 10, 5)), kNever);
  EQ(VAL(p.next_fit(99, 10, 5)), 100);
  ERR(p.next_fit(-1, 10, 5), Errc::kInvalidArgument);
  // Change points themselves.
  std::vector<Time> points;
  for (Time t = p.next_change_point(-1); t != kNever; t = p.next_change_point(t)) points.push_back(t);
  ck_assert(points == (std::vector<Time>{0, 50, 100, 150, 200, 300, 400}));
  EQ(p.point_count(), 7);
}
END_TEST

START_TEST(test_free_slots) {
  Profile p = sample_profile();
  STR_EQ(slots_str(VAL(p.free_slots(0, kForever))),
                   "0:50:6 50:100:1 100:150:5 150:200:10 300:400:10 400:forever:7");
  STR_EQ(slots_str(VAL(p.free_slots(0, kForever, -kMaxAmount))),
                   "0:50:6 50:100:1 100:150:5 150:200:10 200:300:0 300:400:10 400:forever:7");
  STR_EQ(slots_str(VAL(p.free_slots(60, 160, 5))), "100:150:5 150:160:10");
  STR_EQ(slots_str(VAL(p.free_slots(420, 500))), "420:500:7");
  ck_assert(VAL(p.free_slots(10, 10)).empty());
  ck_assert(VAL(p.free_slots(200, 300)).empty());
  HAS(ERR(p.free_slots(10, 9), Errc::kInvalidArgument), "until 9 is before from 10");
  ERR(make_profile(5, 1).free_slots(4, 10), Errc::kOutOfRange);
}
END_TEST

// ===========================================================================
// Spans

START_TEST(test_add_span) {
  Profile p = make_profile(100, 10);
  SpanId a = VAL(p.add_span(100, 50, 4));
  SpanId b = VAL(p.add_span(120, 10, 6));
  ck_assert(a != kNoSpan && b != kNoSpan && a != b);
  EQ(p.span_count(), 2);
  Span s = VAL(p.span(a));
  EQ(s.start, 100);
  EQ(s.end, 150);
  EQ(s.amount, 4);
  EQ(VAL(p.free_at(125)), 0);  // exactly full is allowed
  std::string msg = ERR(p.add_span(125, 10, 1), Errc::kNoFit);
  HAS(msg, "Profile::add_span: span of 1 over [125, 135) does not fit: only 0 free");
  HAS(ERR(p.add_span(99, 10, 1), Errc::kOutOfRange), "start 99 is before the profile origin 100");
  HAS(ERR(p.add_span(-1, 10, 1), Errc::kInvalidArgument), "start must be >= 0");
  ERR(p.add_span(kForever, 10, 1), Errc::kOutOfRange);
  ERR(p.add_span(200, -3, 1), Errc::kInvalidArgument);
  ERR(p.add_span(200, 10, 11), Errc::kNoFit);
  EQ(p.span_count(), 2);  // failed adds leave no trace
  EQ(VAL(p.free_at(110)), 6);
  // Ids are never reused.
  OK(p.remove_span(b));
  SpanId c = VAL(p.add_span(120, 10, 6));
  ck_assert(c != a && c != b);
}
END_TEST

START_TEST(test_remove_span) {
  Profile p = make_profile(0, 100);
  std::vector<SpanId> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(VAL(p.add_span(i * 7, 30 + i, 1 + i % 3)));
  for (std::size_t i = 0; i < ids.size(); i += 2) OK(p.remove_span(ids[i]));
  for (std::size_t i = 1; i < ids.size(); i += 2) OK(p.remove_span(ids[i]));
  // Back to the empty profile: one point, full capacity everywhere.
  EQ(p.point_count(), 1);
  EQ(p.span_count(), 0);
  EQ(VAL(p.min_over(0, kForever)), 100);
  HAS(ERR(p.remove_span(ids[0]), Errc::kNotFound), "Profile::remove_span: no span with id 1");
  ERR(p.remove_span(kNoSpan), Errc::kNotFound);
  ERR(p.remove_span(12345), Errc::kNotFound);
  ERR(p.span(ids[0]), Errc::kNotFound);
}
END_TEST

START_TEST(test_shrink_span) {
  Profile p = make_profile(0, 10);
  SpanId a = VAL(p.add_span(10, 100, 6));
  // Early completion: the end moves earlier.
  OK(p.shrink_span(a, 60, 6));
  EQ(VAL(p.free_at(59)), 4);
  EQ(VAL(p.free_at(60)), 10);
  EQ(p.point_count(), 3);
  // The amount shrinks (part of the job released).
  OK(p.shrink_span(a, 60, 2));
  EQ(VAL(p.free_at(10)), 8);
  // Both at once, and a no-op.
  OK(p.shrink_span(a, 30, 1));
  OK(p.shrink_span(a, 30, 1));
  EQ(VAL(p.free_at(29)), 9);
  EQ(VAL(p.free_at(30)), 10);
  Span s = VAL(p.span(a));
  EQ(s.end, 30);
  EQ(s.amount, 1);
  HAS(ERR(p.shrink_span(a, 10, 1), Errc::kInvalidArgument), "use remove_span");
  HAS(ERR(p.shrink_span(a, 31, 1), Errc::kInvalidArgument), "shrink cannot extend");
  HAS(ERR(p.shrink_span(a, 20, 2), Errc::kInvalidArgument), "new_amount must be in [1, 1] (got 2)");
  ERR(p.shrink_span(a, 20, 0), Errc::kInvalidArgument);
  HAS(ERR(p.shrink_span(99, 20, 1), Errc::kNotFound), "Profile::shrink_span: no span with id 99");
  // A span to forever can end.
  SpanId f = VAL(p.add_span(100, kForever, 3));
  EQ(VAL(p.span(f)).end, kForever);
  OK(p.shrink_span(f, 200, 3));
  EQ(VAL(p.free_at(200)), 10);
  OK(p.remove_span(a));
  OK(p.remove_span(f));
  EQ(p.point_count(), 1);
}
END_TEST

START_TEST(test_overlap_and_force) {
  Profile p = make_profile(0, 4);
  VAL(p.add_span(0, 100, 3));
  VAL(p.add_span(50, 100, 1));  // overlapping, exactly full over [50, 100)
  EQ(VAL(p.free_at(75)), 0);
  ERR(p.add_span(60, 10, 1), Errc::kNoFit);
  // A snapshot of reality may over-subscribe.
  SpanId f = VAL(p.add_span(60, 10, 2, Admission::kForce));
  EQ(VAL(p.free_at(65)), -2);
  EQ(VAL(p.min_over(0, 200)), -2);
  EQ(VAL(p.earliest_fit(0, 10, 1)), 0);
  EQ(VAL(p.earliest_fit(40, 20, 1)), 100);
  STR_EQ(slots_str(VAL(p.free_slots(50, 80, -kMaxAmount))), "50:60:0 60:70:-2 70:80:0");
  OK(p.remove_span(f));
  EQ(VAL(p.free_at(65)), 0);
  // Forcing more than the capacity is recorded as asked.
  VAL(p.add_span(500, 10, 9, Admission::kForce));
  EQ(VAL(p.free_at(505)), -5);
  // But free never drops below -2^52.
  VAL(p.add_span(600, 10, kMaxAmount, Admission::kForce));
  EQ(VAL(p.free_at(600)), 4 - kMaxAmount);
  HAS(ERR(p.add_span(600, 10, 5, Admission::kForce), Errc::kOutOfRange), "below -2^52");
}
END_TEST

START_TEST(test_forever_and_overflow) {
  Profile p = make_profile(0, 10);
  SpanId a = VAL(p.add_span(100, kForever, 4));  // never ends
  EQ(VAL(p.span(a)).end, kForever);
  SpanId b = VAL(p.add_span(kForever - 10, 1000, 6));  // t + d overflows: saturates
  EQ(VAL(p.span(b)).end, kForever);
  EQ(VAL(p.free_at(kForever - 1)), 0);
  EQ(VAL(p.free_at(kForever - 11)), 6);
  EQ(p.point_count(), 3);
  EQ(VAL(p.earliest_fit(0, kForever, 6)), kNever);
  EQ(VAL(p.earliest_fit(0, 100, 7)), 0);
  EQ(VAL(p.earliest_fit(0, 101, 7)), kNever);
  EQ(VAL(p.earliest_fit(0, 101, 6)), 0);
  EQ(VAL(p.earliest_fit(200, kForever - 200, 1)), kNever);
  EQ(VAL(p.earliest_fit(kForever - 20, 10, 6)), kForever - 20);
  EQ(VAL(p.earliest_fit(kForever - 20, 11, 6)), kNever);
  EQ(VAL(p.min_over(kForever - 20, kForever)), 0);
  STR_EQ(slots_str(VAL(p.free_slots(kForever - 12, kForever, 0))),
                   ("9223372036854775795:9223372036854775797:6 9223372036854775797:forever:0"));
  OK(p.remove_span(b));
  OK(p.remove_span(a));
  EQ(p.point_count(), 1);
  // A span may start at the last second there is.
  VAL(p.add_span(kForever - 1, 1, 10));
  EQ(VAL(p.free_at(kForever - 1)), 0);
}
END_TEST

START_TEST(test_before_origin) {
  Profile p = make_profile(1000, 5);
  VAL(p.add_span(1000, 10, 5));
  // Searches start at the origin when asked earlier; reads and writes refuse.
  EQ(VAL(p.earliest_fit(0, 5, 5)), 1010);
  EQ(VAL(p.earliest_fit(0, 5, 1)), 1010);
  EQ(VAL(p.next_fit(0, 5, 5)), 1010);
  OK(p.shrink_span(1, 1005, 5));
  EQ(VAL(p.earliest_fit(0, 5, 5)), 1005);
  Profile q = make_profile(1000, 5);
  EQ(VAL(q.next_fit(999, 5, 5)), 1000);  // the origin is a change point
  EQ(VAL(q.next_fit(1000, 5, 5)), kNever);
  ERR(q.free_at(0), Errc::kOutOfRange);
  ERR(q.min_over(999, 2), Errc::kOutOfRange);
  ERR(q.add_span(999, 5, 1), Errc::kOutOfRange);
}
END_TEST

START_TEST(test_point_merging) {
  Profile p = make_profile(0, 10);
  // Adjacent spans of the same amount leave no point between them.
  SpanId a = VAL(p.add_span(10, 10, 3));
  SpanId b = VAL(p.add_span(20, 10, 3));
  EQ(p.point_count(), 3);  // 0, 10, 30
  STR_EQ(slots_str(VAL(p.free_slots(0, 50, 0))), "0:10:10 10:30:7 30:50:10");
  // A span starting at the origin changes the origin point's value.
  SpanId c = VAL(p.add_span(0, 10, 3));
  EQ(p.point_count(), 2);  // 0, 30
  OK(p.remove_span(b));
  EQ(p.point_count(), 2);  // 0, 20
  OK(p.remove_span(a));
  OK(p.remove_span(c));
  EQ(p.point_count(), 1);
  // Identical spans stacked up and torn down.
  std::vector<SpanId> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(VAL(p.add_span(5, 5, 2)));
  EQ(p.point_count(), 3);
  EQ(VAL(p.free_at(7)), 0);
  for (SpanId id : ids) OK(p.remove_span(id));
  EQ(p.point_count(), 1);
}
END_TEST

START_TEST(test_copy_is_independent) {
  Profile p = sample_profile();
  Profile what_if = p;
  VAL(what_if.add_span(150, 50, 10));
  EQ(VAL(what_if.earliest_fit(0, 10, 10)), 300);
  EQ(VAL(p.earliest_fit(0, 10, 10)), 150);
  EQ(what_if.span_count(), 5);
  EQ(p.span_count(), 4);
}
END_TEST

// ===========================================================================
// Common start

namespace {
// P1: free [0,100):2 then 10.  P2: [0,50):10 [50,200):0 then 10.  P3: 4.
struct Three {
  Profile p1 = make_profile(0, 10), p2 = make_profile(0, 10), p3 = make_profile(0, 4);
  Three() {
    VAL(p1.add_span(0, 100, 8));
    VAL(p2.add_span(50, 150, 10));
  }
};
}  // namespace

// take_unchecked changes the step function exactly as add_span does, and
// records no span; also for a span that never ends and one at the origin.
START_TEST(test_take_unchecked) {
  Profile a = sample_profile(), b = sample_profile();
  const std::size_t spans = a.span_count();
  struct W {
    Time s;
    Duration d;
    Amount n;
  };
  for (const W& w : {W{150, 50, 10}, W{0, 7, 1}, W{420, kForever, 2}, W{305, 3, 4}}) {
    ck_assert(VAL(a.min_over(w.s, w.d)) >= w.n);
    VAL(a.add_span(w.s, w.d, w.n));
    b.take_unchecked(w.s, w.d, w.n);
  }
  auto sa = VAL(a.free_slots(a.origin(), kForever, -kMaxAmount));
  auto sb = VAL(b.free_slots(b.origin(), kForever, -kMaxAmount));
  EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EQ(sa[i].start, sb[i].start);
    EQ(sa[i].end, sb[i].end);
    EQ(sa[i].free, sb[i].free);
  }
  EQ(a.point_count(), b.point_count());
  EQ(a.span_count(), spans + 4);
  EQ(b.span_count(), spans);
}
END_TEST

START_TEST(test_common_each) {
  Three g;
  const struct { std::vector<Demand> parts; Time t; Duration d; Time want; } table[] = {
      {{{&g.p1, 5}, {&g.p2, 5}}, 0, 10, 200},
      {{{&g.p1, 2}, {&g.p2, 5}}, 0, 10, 0},
      {{{&g.p1, 2}, {&g.p2, 5}}, 0, 60, 200},
      {{{&g.p1, 2}, {&g.p2, 5}, {&g.p3, 4}}, 0, 50, 0},
      {{{&g.p1, 2}, {&g.p2, 5}, {&g.p3, 5}}, 0, 10, kNever},
      {{{&g.p1, 1}, {&g.p1, 1}}, 0, 10, 0},    // same profile: amounts add up
      {{{&g.p1, 2}, {&g.p1, 1}}, 0, 10, 100},
      {{{&g.p2, 10}}, 0, 0, 0},
      {{{&g.p2, 10}}, 40, 20, 200},
      {{{&g.p1, 3}, {&g.p3, 1}}, 0, kForever, 100},
  };
  for (const auto& row : table) {
    Time got = VAL(earliest_common_start(row.parts, row.t, row.d));
    ck_assert_msg(got == row.want, "common start %" PRId64 ", expected %" PRId64, got, row.want);
  }
  // Enumeration over the union of change points: 0, 50, 100, 200.
  std::vector<Demand> parts = {{&g.p1, 1}, {&g.p2, 1}};
  std::vector<Time> got;
  for (Time s = VAL(earliest_common_start(parts, 0, 10)); s != kNever;
       s = VAL(next_common_start(parts, s, 10)))
    got.push_back(s);
  ck_assert(got == (std::vector<Time>{0, 200}));
  std::vector<Demand> only1 = {{&g.p1, 1}, {&g.p3, 1}};
  EQ(VAL(next_common_start(only1, 0, 10)), 100);
  EQ(VAL(next_common_start(only1, 100, 10)), kNever);
}
END_TEST

START_TEST(test_common_sum) {
  Three g;
  // Sum of p1 + p2: [0,50):12 [50,100):2 [100,200):10 [200,...):20.
  std::vector<const Profile*> two = {&g.p1, &g.p2};
  std::vector<const Profile*> three = {&g.p1, &g.p2, &g.p3};
  const struct { const std::vector<const Profile*>* ps; Time t; Duration d; Amount n; Time want; } table[] = {
      {&two, 0, 10, 12, 0},      {&two, 0, 60, 12, 200},   {&two, 0, 10, 10, 0},
      {&two, 0, 200, 10, 100},   {&two, 0, 10, 21, kNever}, {&two, 0, kForever, 20, 200},
      {&two, 60, 0, 3, 100},     {&three, 0, 10, 14, 0},   {&three, 0, 60, 14, 100},
      {&three, 0, kForever, 24, 200}, {&three, 0, 1, 25, kNever},
  };
  for (const auto& row : table) {
    Time got = VAL(earliest_common_start_sum(*row.ps, row.t, row.d, row.n));
    ck_assert_msg(got == row.want, "sum start(t=%" PRId64 ", d=%" PRId64 ", n=%" PRId64 ") = %" PRId64
                  ", expected %" PRId64, row.t, row.d, row.n, got, row.want);
  }
  EQ(VAL(next_common_start_sum(two, 0, 10, 10)), 100);
  EQ(VAL(next_common_start_sum(two, 100, 10, 10)), 200);
  EQ(VAL(next_common_start_sum(two, 200, 10, 10)), kNever);
  // Profiles with different origins: nothing before the latest origin.
  Profile late = make_profile(500, 10);
  std::vector<const Profile*> mixed = {&g.p3, &late};
  EQ(VAL(earliest_common_start_sum(mixed, 0, 10, 1)), 500);
  std::vector<Demand> mixed_each = {{&g.p3, 1}, {&late, 1}};
  EQ(VAL(earliest_common_start(mixed_each, 0, 10)), 500);
  EQ(VAL(next_common_start(mixed_each, 0, 10)), 500);
}
END_TEST

START_TEST(test_common_errors) {
  Three g;
  HAS(ERR(earliest_common_start(std::vector<Demand>{}, 0, 10), Errc::kInvalidArgument), "no profiles given");
  HAS(ERR(earliest_common_start(std::vector<Demand>{{nullptr, 1}}, 0, 10), Errc::kInvalidArgument),
      "profile 0 is null");
  HAS(ERR(earliest_common_start({{&g.p1, 1}, {&g.p2, 0}}, 0, 10), Errc::kInvalidArgument),
      "amount of part 1 must be in [1, 2^52] (got 0)");
  ERR(earliest_common_start({{&g.p1, 1}}, -1, 10), Errc::kInvalidArgument);
  ERR(earliest_common_start({{&g.p1, 1}}, 0, -1), Errc::kInvalidArgument);
  ERR(next_common_start({{&g.p1, 1}}, -1, 10), Errc::kInvalidArgument);
  HAS(ERR(earliest_common_start_sum({&g.p1, &g.p1}, 0, 10, 1), Errc::kInvalidArgument),
      "profile 1 is listed twice (also at 0)");
  ERR(earliest_common_start_sum(std::vector<const Profile*>{}, 0, 10, 1), Errc::kInvalidArgument);
  ERR(earliest_common_start_sum({&g.p1, nullptr}, 0, 10, 1), Errc::kInvalidArgument);
  ERR(earliest_common_start_sum({&g.p1}, 0, 10, 0), Errc::kInvalidArgument);
  std::vector<const Profile*> many(1025, &g.p1);
  HAS(ERR(earliest_common_start_sum(many, 0, 10, 1), Errc::kInvalidArgument), "at most 1024");
  EQ(VAL(earliest_common_start({{&g.p1, 1}}, kForever, 10)), kNever);
}
END_TEST

START_TEST(test_profile_sum) {
  Three g;
  Profile s = VAL(Profile::sum({&g.p1, &g.p2}));
  EQ(s.origin(), 0);
  EQ(s.capacity(), 20);
  EQ(s.span_count(), 0);
  STR_EQ(slots_str(VAL(s.free_slots(0, kForever, 0))), "0:50:12 50:100:2 100:200:10 200:forever:20");
  EQ(VAL(s.earliest_fit(0, 60, 12)), 200);
  EQ(VAL(s.earliest_fit(0, 200, 10)), 100);
  // A snapshot: spans may be added to it, the originals do not move.
  VAL(s.add_span(200, 10, 20));
  EQ(VAL(s.earliest_fit(200, 1, 1)), 210);
  EQ(VAL(g.p1.free_at(200)), 10);
  // Latest origin; changes that cancel out leave no point.
  Profile a = make_profile(10, 5), b = make_profile(20, 5);
  VAL(a.add_span(30, 10, 2));
  VAL(b.add_span(30, 10, 3));  // sum drops by 5 over [30, 40)
  VAL(a.add_span(50, 10, 1));
  VAL(b.add_span(60, 10, 1));  // -1 on [50, 60) and [60, 70): one piece
  Profile ab = VAL(Profile::sum({&a, &b}));
  EQ(ab.origin(), 20);
  STR_EQ(slots_str(VAL(ab.free_slots(20, 100, 0))), "20:30:10 30:40:5 40:50:10 50:70:9 70:100:10");
  // 60 is a point of both profiles but no change of the sum: no candidate.
  EQ(VAL(ab.next_fit(50, 5, 9)), 70);
  EQ(VAL(next_common_start_sum({&a, &b}, 50, 5, 9)), 70);
  EQ(VAL(next_common_start_sum({&a, &b}, 0, 5, 9)), 20);  // the latest origin
  EQ(VAL(next_common_start({{&a, 1}, {&b, 1}}, 50, 5)), 60);  // each form: 60 counts
  // Errors.
  HAS(ERR(Profile::sum({}), Errc::kInvalidArgument), "Profile::sum: no profiles given");
  ERR(Profile::sum({&a, nullptr}), Errc::kInvalidArgument);
  HAS(ERR(Profile::sum({&a, &b, &a}), Errc::kInvalidArgument), "profile 2 is listed twice (also at 0)");
  Profile big1 = make_profile(0, kMaxAmount), big2 = make_profile(0, 1);
  HAS(ERR(Profile::sum({&big1, &big2}), Errc::kOutOfRange), "exceeds 2^52");
  Profile neg1 = make_profile(0, 0), neg2 = make_profile(0, 0);
  VAL(neg1.add_span(0, 10, kMaxAmount, Admission::kForce));
  VAL(neg2.add_span(5, 10, 1, Admission::kForce));
  HAS(ERR(Profile::sum({&neg1, &neg2}), Errc::kOutOfRange), "below -2^52");
  // Node/CPU profiles sum both dimensions.
  NodeCpuProfile x = VAL(NodeCpuProfile::create(0, {2, 16})), y = VAL(NodeCpuProfile::create(0, {4, 8}));
  VAL(x.add_span(0, 10, {2, 4}));
  NodeCpuProfile xy = VAL(NodeCpuProfile::sum({&x, &y}));
  EQ(xy.capacity().nodes, 6);
  EQ(xy.capacity().cpus, 24);
  EQ(VAL(xy.free_at(5)).nodes, 4);
  EQ(VAL(xy.free_at(5)).cpus, 20);
  EQ(VAL(xy.earliest_fit(0, 5, {5, 1})), 10);
  ERR(NodeCpuProfile::sum({&x, nullptr}), Errc::kInvalidArgument);
  ERR(NodeCpuProfile::sum({&x, &x}), Errc::kInvalidArgument);
}
END_TEST

// ===========================================================================
// Nodes and CPUs

START_TEST(test_node_cpu) {
  NodeCpuProfile p = VAL(NodeCpuProfile::create(0, {4, 64}));
  EQ(p.capacity().nodes, 4);
  EQ(p.capacity().cpus, 64);
  SpanId a = VAL(p.add_span(0, 100, {2, 48}));
  EQ(p.nodes().span_count(), 1);
  EQ(p.cpus().span_count(), 1);
  Capacity f = VAL(p.free_at(50));
  EQ(f.nodes, 2);
  EQ(f.cpus, 16);
  EQ(VAL(p.earliest_fit(0, 10, {2, 16})), 0);
  EQ(VAL(p.earliest_fit(0, 10, {2, 17})), 100);  // CPUs short
  EQ(VAL(p.earliest_fit(0, 10, {3, 1})), 100);   // nodes short
  EQ(VAL(p.earliest_fit(0, 10, {0, 16})), 0);    // CPUs only
  EQ(VAL(p.earliest_fit(0, 10, {5, 1})), kNever);
  // A nodes-only span: one id, only the node profile moves.
  SpanId b = VAL(p.add_span(0, 50, {1, 0}));
  EQ(p.cpus().span_count(), 1);
  EQ(VAL(p.earliest_fit(0, 10, {2, 16})), 50);
  Capacity m = VAL(p.min_over(0, 200));
  EQ(m.nodes, 1);
  EQ(m.cpus, 16);
  // Candidates come from the change points of the asked dimensions.
  EQ(VAL(p.next_fit(0, 10, {1, 0})), 50);
  EQ(VAL(p.next_fit(0, 10, {0, 1})), 100);
  EQ(p.next_change_point(0), 50);
  EQ(VAL(p.free_slots(0, 200)).size(), 3);
  auto slots = VAL(p.free_slots(0, 200, {0, 0}));
  EQ(slots.size(), 3);
  EQ(slots[0].end, 50);
  EQ(slots[0].free.nodes, 1);
  EQ(slots[1].free.nodes, 2);
  EQ(slots[2].start, 100);
  EQ(slots[2].free.cpus, 64);
  EQ(VAL(p.free_slots(0, 200, {2, 17})).size(), 1);
  // Atomic add: the CPUs do not fit, so nothing changes.
  HAS(ERR(p.add_span(0, 10, {1, 17}), Errc::kNoFit), "17 cpus over [0, 10) do not fit: only 16 free");
  EQ(p.nodes().span_count(), 2);
  EQ(VAL(p.free_at(0)).nodes, 1);
  // Shrink: drop the CPUs of span a, end it early.
  OK(p.shrink_span(a, 80, {2, 0}));
  EQ(p.cpus().span_count(), 0);
  EQ(VAL(p.free_at(79)).cpus, 64);
  EQ(VAL(p.free_at(80)).nodes, 4);
  NodeCpuSpan s = VAL(p.span(a));
  EQ(s.end, 80);
  EQ(s.amount.cpus, 0);
  HAS(ERR(p.shrink_span(a, 70, {2, 1}), Errc::kInvalidArgument), "new_amount must be within");
  ERR(p.shrink_span(a, 70, {0, 0}), Errc::kInvalidArgument);
  ERR(p.shrink_span(a, 81, {1, 0}), Errc::kInvalidArgument);
  OK(p.remove_span(a));
  OK(p.remove_span(b));
  HAS(ERR(p.remove_span(b), Errc::kNotFound), "NodeCpuProfile::remove_span");
  ERR(p.span(b), Errc::kNotFound);
  EQ(p.nodes().point_count(), 1);
  EQ(p.cpus().point_count(), 1);
  // Errors.
  HAS(ERR(p.add_span(0, 10, {0, 0}), Errc::kInvalidArgument), "at least one node or one cpu");
  ERR(p.add_span(0, 10, {-1, 5}), Errc::kInvalidArgument);
  ERR(p.earliest_fit(0, 10, {0, 0}), Errc::kInvalidArgument);
  ERR(p.free_at(-1), Errc::kInvalidArgument);
  ERR(NodeCpuProfile::create(-1, {1, 1}), Errc::kInvalidArgument);
  ERR(NodeCpuProfile::create(0, {1, -1}), Errc::kInvalidArgument);
  // Forced spans over-subscribe both dimensions.
  VAL(p.add_span(0, 10, {5, 65}, Admission::kForce));
  EQ(VAL(p.free_at(0)).nodes, -1);
  EQ(VAL(p.free_at(0)).cpus, -1);
}
END_TEST

START_TEST(test_node_cpu_common) {
  NodeCpuProfile a = VAL(NodeCpuProfile::create(0, {4, 32}));
  NodeCpuProfile b = VAL(NodeCpuProfile::create(0, {8, 64}));
  VAL(a.add_span(0, 100, {2, 30}));  // a: [0,100) 2 nodes 2 cpus
  VAL(b.add_span(50, 100, {8, 8}));  // b: [50,150) 0 nodes 56 cpus
  EQ(VAL(earliest_common_start({{&a, {2, 2}}, {&b, {1, 1}}}, 0, 10)), 0);
  EQ(VAL(earliest_common_start({{&a, {2, 3}}, {&b, {1, 1}}}, 0, 10)), 150);
  EQ(VAL(earliest_common_start({{&a, {0, 3}}, {&b, {0, 56}}}, 0, 10)), 100);
  EQ(VAL(next_common_start({{&a, {0, 3}}, {&b, {0, 56}}}, 100, 10)), 150);
  std::vector<const NodeCpuProfile*> both = {&a, &b};
  EQ(VAL(earliest_common_start_sum(both, 0, 10, {10, 10})), 0);
  EQ(VAL(earliest_common_start_sum(both, 0, 60, {10, 10})), 150);
  EQ(VAL(earliest_common_start_sum(both, 0, 60, {2, 10})), 0);
  EQ(VAL(earliest_common_start_sum(both, 0, 10, {13, 1})), kNever);
  EQ(VAL(next_common_start_sum(both, 0, 10, {10, 0})), 150);
  ERR(earliest_common_start_sum(both, 0, 10, {0, 0}), Errc::kInvalidArgument);
  ERR(earliest_common_start({{&a, {0, 0}}}, 0, 10), Errc::kInvalidArgument);
  ERR(earliest_common_start(std::vector<NodeCpuDemand>{{nullptr, {1, 1}}}, 0, 10), Errc::kInvalidArgument);
  ERR(earliest_common_start_sum({&a, &a}, 0, 10, {1, 1}), Errc::kInvalidArgument);
}
END_TEST

// ===========================================================================
// Golden scenarios

START_TEST(test_golden) {
  ck_assert_msg(!g_case_files.empty(),
                "no profile_cases/*.prof found (set FLEXCO_SRCDIR to the source tree)");
  Golden g;
  g.file = g_case_files[static_cast<std::size_t>(_i)];
  int checks = g.run();
  ck_assert_msg(checks > 0, "%s holds no commands", g.file.c_str());
}
END_TEST

// ===========================================================================
// Randomized cross-checks against the reference model (fixed seeds)

namespace {

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(std::uint64_t seed) : gen(seed) {}
  std::int64_t in(std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(gen);
  }
  bool chance(int percent) { return in(0, 99) < percent; }
};

// A random duration for a span starting at s: mostly short, some forever,
// some saturating past INT64_MAX.
Duration random_span_duration(Rng& r, Time s) {
  int k = static_cast<int>(r.in(0, 99));
  if (k < 5) return kForever;
  if (k < 10) return kForever - r.in(0, std::min<Time>(s, 1000));  // s + d >= INT64_MAX
  return r.in(1, 400);
}

Duration random_query_duration(Rng& r, Time t) {
  int k = static_cast<int>(r.in(0, 99));
  if (k < 5) return 0;
  if (k < 10) return kForever;
  if (k < 15) return kForever - r.in(0, std::min<Time>(t, 1000));
  return r.in(1, 450);
}

void check_whole(const Profile& p, const Ref& ref, int step) {
  ck_assert_msg(p.point_count() == ref.points(), "step %d: %zu points, reference %zu", step,
                p.point_count(), ref.points());
  auto got = VAL(p.free_slots(p.origin(), kForever, -kMaxAmount));
  auto want = ref.steps();
  ck_assert_msg(slots_str(got) == slots_str(want), "step %d: steps differ:\n%s\n%s", step,
                slots_str(got).c_str(), slots_str(want).c_str());
  ck_assert(p.span_count() == ref.spans.size());
  for (const auto& [id, s] : ref.spans) {
    Span x = VAL(p.span(id));
    ck_assert(x.start == s.start && x.end == s.end && x.amount == s.amount);
  }
}

// One random mutation applied to both; returns what it did for messages.
void random_mutation(Rng& r, Profile& p, Ref& ref) {
  int k = static_cast<int>(r.in(0, 99));
  if (k < 55 || ref.spans.empty()) {
    Time s = r.in(ref.origin - 5, ref.base + 600);
    if (s < 0) s = 0;
    Duration d = random_span_duration(r, s);
    Amount a = r.in(1, ref.cap + 2);
    Admission adm = r.chance(15) ? Admission::kForce : Admission::kMustFit;
    auto id = p.add_span(s, d, a, adm);
    if (s < ref.origin) {
      ERR(id, Errc::kOutOfRange);
      return;
    }
    Time e = sat(s, d);
    bool fits = ref.min_over(s, e - s) >= a;
    if (adm == Admission::kMustFit && !fits) {
      ERR(id, Errc::kNoFit);
      return;
    }
    SpanId got = VAL(std::move(id));
    ref.apply(s, e, -a);
    ref.spans[got] = Span{s, e, a};
  } else if (k < 80) {
    if (r.chance(10)) {
      ERR(p.remove_span(r.in(100000, 200000)), Errc::kNotFound);
      return;
    }
    auto it = std::next(ref.spans.begin(), r.in(0, static_cast<std::int64_t>(ref.spans.size()) - 1));
    OK(p.remove_span(it->first));
    ref.apply(it->second.start, it->second.end, it->second.amount);
    ref.spans.erase(it);
  } else {
    auto it = std::next(ref.spans.begin(), r.in(0, static_cast<std::int64_t>(ref.spans.size()) - 1));
    Span& s = it->second;
    Time last = s.end == kForever ? ref.base + 1000 : s.end;
    Time ne = (s.end == kForever && r.chance(30)) ? kForever : r.in(s.start + 1, std::max(last, s.start + 1));
    Amount na = r.in(1, s.amount);
    if (r.chance(10)) {
      ERR(p.shrink_span(it->first, s.start, na), Errc::kInvalidArgument);
      return;
    }
    OK(p.shrink_span(it->first, ne, na));
    ref.apply(s.start, s.end, s.amount);
    ref.apply(s.start, ne, -na);
    s.end = ne;
    s.amount = na;
  }
}

void random_query(Rng& r, const Profile& p, const Ref& ref, int step) {
  Time t = r.in(ref.base, ref.base + 1150);
  Duration d = random_query_duration(r, t);
  Amount n = r.in(1, ref.cap + 1);
  int k = static_cast<int>(r.in(0, 3));
  if (k == 0) {
    if (t < ref.origin) {
      ERR(p.free_at(t), Errc::kOutOfRange);
      ERR(p.min_over(t, d), Errc::kOutOfRange);
    } else {
      EQ(VAL(p.free_at(t)), ref.at(t));
      Amount got = VAL(p.min_over(t, d));
      ck_assert_msg(got == ref.min_over(t, d), "step %d: min_over(%" PRId64 ", %" PRId64 ")", step, t, d);
    }
  } else if (k == 1) {
    Time got = VAL(p.earliest_fit(t, d, n));
    Time want = ref_earliest(ref_good(ref, n), ref.base, std::max(t, ref.origin), d);
    ck_assert_msg(got == want, "step %d: earliest_fit(%" PRId64 ", %" PRId64 ", %" PRId64 ") = %" PRId64
                  ", reference %" PRId64, step, t, d, n, got, want);
  } else if (k == 2) {
    Time got = VAL(p.next_fit(t, d, n));
    Time want = ref_next(ref_good(ref, n), ref_cand({&ref}), ref.base, t, d);
    ck_assert_msg(got == want, "step %d: next_fit(%" PRId64 ", %" PRId64 ", %" PRId64 ") = %" PRId64
                  ", reference %" PRId64, step, t, d, n, got, want);
  } else {
    Time from = std::max(t, ref.origin);
    Time until = r.chance(20) ? kForever : from + r.in(0, 300);
    Amount m = r.in(-1, ref.cap);
    std::vector<Slot> want;
    for (const Slot& s : ref.steps()) {
      Slot c{std::max(s.start, from), std::min(s.end, until), s.free};
      if (c.start < c.end && c.free >= m) want.push_back(c);
    }
    ck_assert_msg(slots_str(VAL(p.free_slots(from, until, m))) == slots_str(want),
                  "step %d: free_slots differ", step);
  }
}

// Seeds and time bases of the randomized runs: even ones near 0, odd ones
// just below INT64_MAX so that every saturation path is taken.
Time random_base(int i) { return i % 2 ? kForever - 2000 : 0; }

}  // namespace

START_TEST(test_random_profile) {
  Rng r(20240601 + _i);
  Time base = random_base(_i);
  Time origin = base + r.in(0, 50);
  Amount cap = r.in(1, 20);
  Profile p = make_profile(origin, cap);
  Ref ref(base, origin, cap);
  for (int step = 0; step < 2500; ++step) {
    random_mutation(r, p, ref);
    for (int q = 0; q < 3; ++q) random_query(r, p, ref, step);
    if (step % 50 == 0) check_whole(p, ref, step);
  }
  check_whole(p, ref, -1);
  // Tear everything down: only the origin point remains.
  for (const auto& kv : ref.spans) OK(p.remove_span(kv.first));
  EQ(p.point_count(), 1);
}
END_TEST

START_TEST(test_random_common) {
  Rng r(777 + _i);
  Time base = random_base(_i);
  std::vector<Profile> ps;
  std::vector<Ref> refs;
  for (int i = 0; i < 3; ++i) {
    Time origin = base + r.in(0, 40);
    Amount cap = r.in(1, 12);
    ps.push_back(make_profile(origin, cap));
    refs.emplace_back(base, origin, cap);
  }
  for (int step = 0; step < 1500; ++step) {
    int w = static_cast<int>(r.in(0, 2));
    random_mutation(r, ps[w], refs[w]);
    Time t = r.in(base, base + 1150);
    Duration d = random_query_duration(r, t);
    bool next = r.chance(40);
    // Pick a non-empty subset, in random order.
    std::vector<int> idx = {0, 1, 2};
    std::shuffle(idx.begin(), idx.end(), r.gen);
    idx.resize(static_cast<std::size_t>(r.in(1, 3)));
    Time lo = t;
    std::vector<const Ref*> involved;
    for (int i : idx) {
      lo = std::max(lo, refs[i].origin);
      involved.push_back(&refs[i]);
    }
    // (a) summed capacity.
    Amount n = r.in(1, 30);
    std::vector<char> good(kLen);
    for (Time x = 0; x < kLen; ++x) {
      Amount sum = 0;
      for (int i : idx) sum += refs[i].v[x];
      good[x] = sum >= n;
      for (int i : idx) good[x] = good[x] && base + x >= refs[i].origin;
    }
    std::vector<const Profile*> sel;
    for (int i : idx) sel.push_back(&ps[i]);
    // Candidates of the sum form: where the summed free changes.
    Time max_origin = 0;
    for (int i : idx) max_origin = std::max(max_origin, refs[i].origin);
    std::vector<char> sum_cand(kLen);
    for (Time x = max_origin - base; x < kLen; ++x) {
      Amount now = 0, before = 0;
      for (int i : idx) {
        now += refs[i].v[x];
        before += x > 0 ? refs[i].v[x - 1] : 0;
      }
      sum_cand[x] = base + x == max_origin || now != before;
    }
    Time want = next ? ref_next(good, sum_cand, base, t, d) : ref_earliest(good, base, lo, d);
    Time got = VAL(next ? next_common_start_sum(sel, t, d, n) : earliest_common_start_sum(sel, t, d, n));
    ck_assert_msg(got == want, "step %d: %s sum(n=%" PRId64 ", t=%" PRId64 ", d=%" PRId64 ") = %" PRId64
                  ", reference %" PRId64, step, next ? "next" : "earliest", n, t, d, got, want);
    // The materialized sum answers the same.
    Profile summed = VAL(Profile::sum(sel));
    EQ(summed.point_count(), static_cast<std::int64_t>(std::count(sum_cand.begin(), sum_cand.end(), 1)));
    got = VAL(next ? summed.next_fit(t, d, n) : summed.earliest_fit(t, d, n));
    ck_assert_msg(got == want, "step %d: Profile::sum %s = %" PRId64 ", reference %" PRId64, step,
                  next ? "next_fit" : "earliest_fit", got, want);
    // (b) each its own amount.
    std::vector<Demand> parts;
    std::vector<char> good_each(kLen, 1);
    for (int i : idx) {
      Amount ni = r.in(1, refs[i].cap + (r.chance(10) ? 1 : 0));
      parts.push_back(Demand{&ps[i], ni});
      auto g = ref_good(refs[i], ni);
      for (Time x = 0; x < kLen; ++x) good_each[x] = good_each[x] && g[x];
    }
    want = next ? ref_next(good_each, ref_cand(involved), base, t, d) : ref_earliest(good_each, base, lo, d);
    got = VAL(next ? next_common_start(parts, t, d) : earliest_common_start(parts, t, d));
    ck_assert_msg(got == want, "step %d: %s each(t=%" PRId64 ", d=%" PRId64 ") = %" PRId64
                  ", reference %" PRId64, step, next ? "next" : "earliest", t, d, got, want);
  }
}
END_TEST

START_TEST(test_random_node_cpu) {
  Rng r(4242 + _i);
  Time base = random_base(_i);
  Time origin = base + r.in(0, 30);
  Capacity cap{r.in(1, 8), r.in(1, 40)};
  NodeCpuProfile p = VAL(NodeCpuProfile::create(origin, cap));
  Ref rn(base, origin, cap.nodes), rc(base, origin, cap.cpus);
  std::map<SpanId, NodeCpuSpan> live;
  for (int step = 0; step < 1500; ++step) {
    int k = static_cast<int>(r.in(0, 99));
    if (k < 55 || live.empty()) {
      Time s = r.in(origin, base + 600);
      Duration d = random_span_duration(r, s);
      Capacity a{r.in(0, cap.nodes + 1), r.in(0, cap.cpus + 2)};
      if (a.nodes == 0 && a.cpus == 0) a.nodes = 1;
      Admission adm = r.chance(10) ? Admission::kForce : Admission::kMustFit;
      Time e = sat(s, d);
      // A zero dimension asks nothing, even where free is negative.
      bool fits = (a.nodes == 0 || rn.min_over(s, e - s) >= a.nodes) &&
                  (a.cpus == 0 || rc.min_over(s, e - s) >= a.cpus);
      auto id = p.add_span(s, d, a, adm);
      if (adm == Admission::kMustFit && !fits) {
        ERR(id, Errc::kNoFit);
      } else {
        live[VAL(std::move(id))] = NodeCpuSpan{s, e, a};
        rn.apply(s, e, -a.nodes);
        rc.apply(s, e, -a.cpus);
      }
    } else if (k < 80) {
      auto it = std::next(live.begin(), r.in(0, static_cast<std::int64_t>(live.size()) - 1));
      OK(p.remove_span(it->first));
      rn.apply(it->second.start, it->second.end, it->second.amount.nodes);
      rc.apply(it->second.start, it->second.end, it->second.amount.cpus);
      live.erase(it);
    } else {
      auto it = std::next(live.begin(), r.in(0, static_cast<std::int64_t>(live.size()) - 1));
      NodeCpuSpan& s = it->second;
      Time last = s.end == kForever ? base + 1000 : s.end;
      Time ne = r.in(s.start + 1, std::max(last, s.start + 1));
      Capacity na{r.in(0, s.amount.nodes), r.in(0, s.amount.cpus)};
      if (na.nodes == 0 && na.cpus == 0) na = s.amount;
      OK(p.shrink_span(it->first, ne, na));
      rn.apply(s.start, s.end, s.amount.nodes);
      rc.apply(s.start, s.end, s.amount.cpus);
      rn.apply(s.start, ne, -na.nodes);
      rc.apply(s.start, ne, -na.cpus);
      s.end = ne;
      s.amount = na;
    }
    Time t = r.in(base, base + 1150);
    Duration d = random_query_duration(r, t);
    Capacity need{r.in(0, cap.nodes + 1), r.in(0, cap.cpus + 1)};
    if (need.nodes == 0 && need.cpus == 0) need.cpus = 1;
    std::vector<char> good(kLen);
    auto gn = ref_good(rn, need.nodes > 0 ? need.nodes : -kMaxAmount);
    auto gc = ref_good(rc, need.cpus > 0 ? need.cpus : -kMaxAmount);
    for (Time x = 0; x < kLen; ++x) good[x] = gn[x] && gc[x];
    std::vector<const Ref*> asked;
    if (need.nodes > 0) asked.push_back(&rn);
    if (need.cpus > 0) asked.push_back(&rc);
    if (r.chance(50)) {
      Time got = VAL(p.earliest_fit(t, d, need));
      Time want = ref_earliest(good, base, std::max(t, origin), d);
      ck_assert_msg(got == want, "step %d: earliest_fit = %" PRId64 ", reference %" PRId64, step, got, want);
    } else {
      Time got = VAL(p.next_fit(t, d, need));
      Time want = ref_next(good, ref_cand(asked), base, t, d);
      ck_assert_msg(got == want, "step %d: next_fit = %" PRId64 ", reference %" PRId64, step, got, want);
    }
    if (t >= origin) {
      Capacity f = VAL(p.free_at(t));
      ck_assert(f.nodes == rn.at(t) && f.cpus == rc.at(t));
      Capacity m = VAL(p.min_over(t, d));
      ck_assert(m.nodes == rn.min_over(t, d) && m.cpus == rc.min_over(t, d));
    }
    if (step % 100 == 0) {
      EQ(p.nodes().point_count(), rn.points());
      EQ(p.cpus().point_count(), rc.points());
      auto slots = VAL(p.free_slots(origin, kForever, {-kMaxAmount, -kMaxAmount}));
      for (const NodeCpuSlot& s : slots) {
        ck_assert(s.free.nodes == rn.at(s.start) && s.free.cpus == rc.at(s.start));
        ck_assert(s.start == origin || rn.is_point(s.start) || rc.is_point(s.start));
      }
    }
  }
}
END_TEST

// A larger profile (tens of thousands of points) against brute force on
// its own slots: checks the tree's shape-independent behaviour at scale.
START_TEST(test_many_points) {
  Rng r(99);
  Profile p = make_profile(0, 1000);
  std::vector<SpanId> ids;
  for (int i = 0; i < 20000; ++i) {
    auto id = p.add_span(r.in(0, 10000000), r.in(1, 5000), r.in(1, 50));
    if (id.ok()) ids.push_back(id.value());
  }
  ck_assert(p.point_count() > 20000);
  auto slots = VAL(p.free_slots(0, kForever, -kMaxAmount));
  EQ(slots.size(), p.point_count());
  for (int q = 0; q < 200; ++q) {
    Time t = r.in(0, 10000000);
    Duration d = r.in(1, 20000);
    Amount n = r.in(900, 1000);
    // Brute force over the slots.
    Time want = kNever;
    for (std::size_t i = 0; i < slots.size() && want == kNever; ++i) {
      Time s = std::max(slots[i].start, t);
      if (slots[i].end <= s || slots[i].free < n) continue;
      Time e = s;
      std::size_t j = i;
      while (j < slots.size() && slots[j].free >= n && e - s < d) e = slots[j++].end;
      if (e - s >= d) want = s;
    }
    EQ(VAL(p.earliest_fit(t, d, n)), want);
  }
  for (SpanId id : ids) OK(p.remove_span(id));
  EQ(p.point_count(), 1);
}
END_TEST

// Summed queries over larger profiles (thousands of pieces per window), so
// that the galloping walks of the sum form take their long leaps; checked
// against the materialized sum, itself checked above.
START_TEST(test_many_points_sum) {
  Rng r(1234 + _i);
  std::vector<Profile> ps;
  for (int i = 0; i < 3; ++i) {
    ps.push_back(make_profile(r.in(0, 100), 200));
    for (int k = 0; k < 6000; ++k) (void)ps.back().add_span(r.in(0, 2000000), r.in(1, 3000), r.in(1, 20));
  }
  std::vector<const Profile*> sel = {&ps[0], &ps[1], &ps[2]};
  Profile summed = VAL(Profile::sum(sel));
  for (int q = 0; q < 300; ++q) {
    Time t = r.in(0, 2000000);
    Duration d = r.chance(10) ? kForever : r.in(1, 100000);
    Amount n = r.chance(50) ? r.in(1, 600) : r.in(400, 560);
    bool next = r.chance(30);
    Time want = VAL(next ? summed.next_fit(t, d, n) : summed.earliest_fit(t, d, n));
    Time got = VAL(next ? next_common_start_sum(sel, t, d, n) : earliest_common_start_sum(sel, t, d, n));
    ck_assert_msg(got == want, "query %d: %s(t=%" PRId64 ", d=%" PRId64 ", n=%" PRId64 ") = %" PRId64
                  ", summed profile says %" PRId64, q, next ? "next" : "earliest", t, d, n, got, want);
  }
}
END_TEST

// ===========================================================================

static Suite* profile_suite() {
  Suite* s = suite_create("profile");
  TCase* tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_create);
  tcase_add_test(tc, test_result_types);
  tcase_add_test(tc, test_free_at);
  tcase_add_test(tc, test_min_over);
  tcase_add_test(tc, test_earliest_fit);
  tcase_add_test(tc, test_zero_duration);
  tcase_add_test(tc, test_request_above_capacity);
  tcase_add_test(tc, test_request_not_positive);
  tcase_add_test(tc, test_next_fit);
  tcase_add_test(tc, test_free_slots);
  tcase_add_test(tc, test_add_span);
  tcase_add_test(tc, test_remove_span);
  tcase_add_test(tc, test_shrink_span);
  tcase_add_test(tc, test_overlap_and_force);
  tcase_add_test(tc, test_forever_and_overflow);
  tcase_add_test(tc, test_before_origin);
  tcase_add_test(tc, test_point_merging);
  tcase_add_test(tc, test_copy_is_independent);
  tcase_add_test(tc, test_take_unchecked);
  tcase_add_test(tc, test_common_each);
  tcase_add_test(tc, test_common_sum);
  tcase_add_test(tc, test_common_errors);
  tcase_add_test(tc, test_profile_sum);
  tcase_add_test(tc, test_node_cpu);
  tcase_add_test(tc, test_node_cpu_common);
  suite_add_tcase(s, tc);

  TCase* golden = tcase_create("golden");
  // At least one iteration, so that a missing directory fails loudly.
  tcase_add_loop_test(golden, test_golden, 0, static_cast<int>(std::max<std::size_t>(g_case_files.size(), 1)));
  suite_add_tcase(s, golden);

  TCase* random = tcase_create("random");
  tcase_set_timeout(random, 600);
  tcase_add_loop_test(random, test_random_profile, 0, 6);
  tcase_add_loop_test(random, test_random_common, 0, 4);
  tcase_add_loop_test(random, test_random_node_cpu, 0, 4);
  tcase_add_test(random, test_many_points);
  tcase_add_loop_test(random, test_many_points_sum, 0, 3);
  suite_add_tcase(s, random);
  return s;
}

int main() {
  g_case_files = list_cases(case_dir());
  SRunner* sr = srunner_create(profile_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
