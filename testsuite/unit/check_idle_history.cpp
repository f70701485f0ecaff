// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests for src/core/idle_history: the thesis' history p_res (eq.
// 9.1-9.4) with hand-computed windows, the text form and its errors.

#include <cinttypes>
#include <cmath>
#include <limits>
#include <cstdint>
#include <optional>
#include <string>

#include "core/idle_history.hpp"

// Last: check.h defines macros that clash with the C++ library.
#include <check.h>

using namespace flexco;

namespace {

#define NEAR(a, b)                                                                 \
  do {                                                                             \
    double a_ = (a), b_ = (b);                                                     \
    if (!(std::fabs(a_ - b_) <= 1e-12))                                            \
      ck_abort_msg("line %d: %s == %.17g, expected %.17g", __LINE__, #a, a_, b_); \
  } while (0)

#define HAS(msg, part)                                                                      \
  ck_assert_msg(std::string(msg).find(part) != std::string::npos,                           \
                "line %d: message \"%s\" lacks \"%s\"", __LINE__, std::string(msg).c_str(), \
                std::string(part).c_str())

constexpr Time D = 86400;
constexpr Time Day0 = 20000 * D;  // a midnight

// A history of period 1000 s, interval 100 s (10 buckets) holding:
//   bucket 0: 10, 20 (mean 15)   bucket 3: 7   bucket 9: 1, 2, 3 (mean 2)
IdleHistory sample() {
  auto h = IdleHistory::create(1000, 100).value();
  const std::pair<Time, Amount> recs[] = {
      {50000, 10}, {51000, 20}, {50300, 7}, {50900, 1}, {51950, 2}, {52999, 3}};
  for (auto [t, n] : recs) ck_assert(h.record(t, n).ok());
  return h;
}

struct WindowCase {
  Time b;
  Duration d;
  std::optional<double> mean;
};
const WindowCase kWindows[] = {
    {50000, 0, 15.0},              // the instant at bucket 0
    {50000, 100, 15.0},            // exactly bucket 0
    {50000, 101, 15.0},            // bucket 0 and the empty bucket 1
    {50050, 300, 11.0},            // buckets 0..3: (15 + 7) / 2
    {50150, 100, std::nullopt},    // buckets 1..2: no record
    {50950, 100, 8.5},             // wraps: buckets 9 and 0: (2 + 15) / 2
    {50900, 1000, 8.0},            // a whole period: (15 + 7 + 2) / 3
    {12345, 5000, 8.0},            // longer than the period
    {50999, 1, 2.0},               // the last second of the day
    {60300, 99, 7.0},              // another day, same time of day
    {50950, 999, 8.0},             // wraps over everything but one second: all buckets
};

START_TEST(mean_windows) {
  IdleHistory h = sample();
  ck_assert_uint_eq(h.records(), 6);
  ck_assert_int_eq(h.first(), 50000);
  ck_assert_int_eq(h.last(), 52999);
  ck_assert_uint_eq(h.bucket_count(), 10);
  for (const auto& c : kWindows) {
    auto m = h.mean_idle(c.b, c.d);
    ck_assert_msg(m.has_value() == c.mean.has_value(), "b=%" PRId64 " d=%" PRId64, c.b, c.d);
    if (m) NEAR(*m, *c.mean);
  }
  ck_assert(!h.mean_idle(-1, 5).has_value());
  ck_assert(!h.mean_idle(5, -1).has_value());
}
END_TEST

START_TEST(p_res_formula) {
  // eq. 9.4: linear from 0 at H = np to 1 at H = 2 np.
  NEAR(p_res_history(4, 8.0), 1.0);
  NEAR(p_res_history(4, 100.0), 1.0);
  NEAR(p_res_history(4, 4.0), 0.0);
  NEAR(p_res_history(4, 5.0), 2.0 - 8.0 / 5.0);
  NEAR(p_res_history(3, 4.0), 0.5);
  NEAR(p_res_history(4, 3.99), 0.0);
  NEAR(p_res_history(1, 0.0), 0.0);
  // threshold 0.85 <=> H >= 2 np / 1.15 (digest: 1.74 np)
  ck_assert(p_res_history(100, 173.9) < 0.85);
  ck_assert(p_res_history(100, 174.0) > 0.85);
}
END_TEST

START_TEST(daily_default) {
  // Default shape: a day in 5-minute buckets; two days of records at 03:00
  // (idle 10 and 30) and one at 15:00 (idle 2).
  auto h = IdleHistory::create().value();
  ck_assert_uint_eq(h.bucket_count(), 288);
  ck_assert(h.record(Day0 + 3 * 3600, 10).ok());
  ck_assert(h.record(Day0 + D + 3 * 3600 + 60, 30).ok());
  ck_assert(h.record(Day0 + 15 * 3600, 2).ok());
  NEAR(*h.mean_idle(Day0 + 5 * D + 3 * 3600, 600), 20.0);
  NEAR(*h.mean_idle(Day0 + 3 * 3600, 12 * 3600 + 1), 11.0);
  ck_assert(!h.mean_idle(Day0 + 9 * 3600, 3600).has_value());
  NEAR(p_res_history(10, *h.mean_idle(Day0 + 3 * 3600, 300)), 1.0);
  NEAR(p_res_history(11, *h.mean_idle(Day0 + 3 * 3600, 300)), 2.0 - 22.0 / 20.0);
  NEAR(p_res_history(20, *h.mean_idle(Day0 + 3 * 3600, 300)), 0.0);
}
END_TEST

START_TEST(bad_arguments) {
  auto a = IdleHistory::create(0, 1);
  ck_assert(!a.ok());
  HAS(a.error().message, "period 0");
  auto b = IdleHistory::create(100, 101);
  ck_assert(!b.ok());
  HAS(b.error().message, "interval 101");
  auto c = IdleHistory::create(1000000, 1);
  ck_assert(!c.ok());
  HAS(c.error().message, "buckets");
  // Periods near the top of Time: refused by the bound on the period, never
  // by an overflowed bucket count (found by fuzz_history_state).
  for (Duration p : {kHistoryMaxPeriod + 1, Duration{9223372036854769008},
                     std::numeric_limits<Duration>::max()}) {
    auto big = IdleHistory::create(p, p / 2);
    ck_assert(!big.ok());
    HAS(big.error().message, "must be in [1, 31622400]");
  }
  auto year = IdleHistory::create(kHistoryMaxPeriod, kHistoryMaxPeriod);
  ck_assert(year.ok());
  ck_assert_uint_eq(year.value().bucket_count(), 1);
  ck_assert(year.value().record(kHistoryMaxPeriod * 3 + 5, 2).ok());
  NEAR(*year.value().mean_idle(kHistoryMaxPeriod - 1, kHistoryMaxPeriod - 1), 2.0);
  IdleHistory h = sample();
  auto e1 = h.record(-1, 3);
  ck_assert(!e1.ok());
  HAS(e1.error().message, "time -1");
  auto e2 = h.record(10, -3);
  ck_assert(!e2.ok());
  HAS(e2.error().message, "idle -3");
  ck_assert_uint_eq(h.records(), 6);  // nothing recorded by the failures
  auto hs = IdleHistories::create(1000, 100).value();
  ck_assert(!hs.record("", 1, 1).ok());
  ck_assert(!hs.record("a b", 1, 1).ok());
  for (int i = 0; i < 256; ++i) ck_assert(hs.record("p" + std::to_string(i), 1, 1).ok());
  auto full = hs.record("one-more", 1, 1);
  ck_assert(!full.ok());
  HAS(full.error().message, "more than 256 partitions");
  ck_assert(hs.record("p7", 2, 1).ok());  // known partitions still record
}
END_TEST

START_TEST(text_round_trip) {
  IdleHistory h = sample();
  std::string text = h.to_text();
  auto back = IdleHistory::from_text(text);
  ck_assert_msg(back.ok(), "%s", back.ok() ? "" : back.error().message.c_str());
  ck_assert(back.value().to_text() == text);
  for (const auto& c : kWindows) {
    auto m = back.value().mean_idle(c.b, c.d);
    ck_assert(m.has_value() == c.mean.has_value());
    if (m) NEAR(*m, *c.mean);
  }
  // An empty history.
  auto empty = IdleHistory::create(1000, 100).value();
  auto e = IdleHistory::from_text(empty.to_text());
  ck_assert(e.ok());
  ck_assert_uint_eq(e.value().records(), 0);
  ck_assert_int_eq(e.value().first(), -1);

  auto hs = IdleHistories::create(1000, 100).value();
  ck_assert(hs.record("batch", 50000, 4).ok());
  ck_assert(hs.record("gpu", 50100, 1).ok());
  auto hb = IdleHistories::from_text(hs.to_text(), 1000, 100);
  ck_assert(hb.ok());
  ck_assert_uint_eq(hb.value().size(), 2);
  NEAR(*hb.value().find("gpu")->mean_idle(50100, 1), 1.0);
  ck_assert(hb.value().find("none") == nullptr);
  // Saved with another shape: dropped, not an error.
  auto other = IdleHistories::from_text(hs.to_text(), 2000, 100);
  ck_assert(other.ok());
  ck_assert_uint_eq(other.value().size(), 0);
}
END_TEST

struct BadText {
  const char* text;
  const char* part;
};
const BadText kBadTexts[] = {
    {"", "line 1: missing history header"},
    {"histories 1000 100 0 -1 -1 0\nend\n", "line 1: malformed history header"},
    {"history 1000 100 1 5 5 1\n3 7\n", "line 2: malformed bucket line"},
    {"history 1000 100 1 5 5 1\n3 7 1\n", "line 3: missing \"end\""},
    {"history 1000 100 2 5 6 2\n3 7 1\n3 7 1\nend\n", "line 3: bucket 3 out of order"},
    {"history 1000 100 1 5 5 1\n10 7 1\nend\n", "line 2: bucket 10 out of order or out of range"},
    {"history 1000 100 2 5 6 1\n3 7 1\nend\n", "do not add up"},
    {"history 1000 100 1 5 5 1\n3 -7 1\nend\n", "negative sum"},
    {"history 1000 100 1 5 5 1\n3 nan 1\nend\n", "line 2: malformed bucket line"},
    {"history 1000 100 0 5 5 0\nend\n", "inconsistent"},
    {"history 1000 0 0 -1 -1 0\nend\n", "interval 0"},
    {"history 9223372036854769008 38640000 0 -1 -1 0\nend\n", "period 9223372036854769008"},
    {"history 1000 100 0 -1 -1 0\nend\nextra\n", "line 3: text after"},
};

START_TEST(bad_texts) {
  for (const auto& c : kBadTexts) {
    auto r = IdleHistory::from_text(c.text);
    ck_assert_msg(!r.ok(), "accepted: %s", c.text);
    HAS(r.error().message, c.part);
  }
  auto r1 = IdleHistories::from_text("flexco-idle-histories-v1 1000 100 1\npartition batch\n",
                                     1000, 100);
  ck_assert(!r1.ok());
  HAS(r1.error().message, "line 3");
  auto r2 = IdleHistories::from_text("nonsense\n", 1000, 100);
  ck_assert(!r2.ok());
  HAS(r2.error().message, "line 1: malformed header");
  auto r3 = IdleHistories::from_text(
      "flexco-idle-histories-v1 1000 100 2\npartition a\nhistory 1000 100 0 -1 -1 0\nend\n"
      "partition a\nhistory 1000 100 0 -1 -1 0\nend\n",
      1000, 100);
  ck_assert(!r3.ok());
  HAS(r3.error().message, "line 5: partition listed twice");
}
END_TEST

Suite* idle_history_suite() {
  Suite* s = suite_create("idle_history");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, mean_windows);
  tcase_add_test(tc, p_res_formula);
  tcase_add_test(tc, daily_default);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, text_round_trip);
  tcase_add_test(tc, bad_texts);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(idle_history_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
