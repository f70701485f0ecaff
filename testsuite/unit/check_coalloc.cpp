// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests for src/core/coalloc (planner_*.cpp, reschedule.cpp): small
// hand-built grids whose answers are derived in the comments, tables where
// cases multiply, and the rescheduling pass on real profiles.  Every grid
// starts at origin 0; "busy [s, e) n" is a span of n nodes.

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/coalloc.hpp"
#include "core/offer_probe.hpp"

// Last: check.h defines macros that clash with the C++ library.
#include <check.h>

using namespace flexco;

namespace {

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

#define OK(r)                                                                     \
  ck_assert_msg((r).ok(), "line %d: %s failed: %s", __LINE__, #r,                 \
                (r).ok() ? "" : (r).error().message.c_str())

struct Busy {
  Time start;
  Duration d;  // kForever: never ends
  Amount n;
};

struct ClusterSpec {
  Amount capacity;
  std::vector<Busy> busy;
};

// Profiles and views over them; the views point into `profiles`, so a Grid
// is built once and not copied.
struct Grid {
  std::vector<Profile> profiles;
  std::vector<ClusterView> views;
  std::vector<std::vector<SpanId>> spans;  // per cluster, the busy spans

  explicit Grid(const std::vector<ClusterSpec>& specs) {
    profiles.reserve(specs.size());
    for (const ClusterSpec& s : specs) {
      profiles.push_back(Profile::create(0, s.capacity).value());
      spans.emplace_back();
      for (const Busy& b : s.busy)
        spans.back().push_back(
            profiles.back().add_span(b.start, b.d, b.n, Admission::kForce).value());
    }
    for (std::size_t i = 0; i < specs.size(); ++i) {
      ClusterView v;
      v.name = std::string(1, static_cast<char>('A' + i));
      v.capacity = specs[i].capacity;
      v.free = &profiles[i];
      views.push_back(v);
    }
  }
  Grid(const Grid&) = delete;
  Grid& operator=(const Grid&) = delete;
};

CoallocRequest req(Amount nodes, Duration runtime, double overhead = 0.0) {
  CoallocRequest r;
  r.nodes = nodes;
  r.runtime = runtime;
  r.overhead = overhead;
  return r;
}

// "A6 B3": the parts in order.
std::string parts_str(const CoallocPlan& p) {
  std::string s;
  for (const PlanPart& x : p.parts) {
    if (!s.empty()) s += ' ';
    s += static_cast<char>('A' + x.cluster);
    s += std::to_string(x.nodes);
  }
  return s;
}

#define PARTS(plan, expect)                                                            \
  ck_assert_msg(parts_str(plan) == (expect), "line %d: parts \"%s\", expected \"%s\"", \
                __LINE__, parts_str(plan).c_str(), expect)

// ---------------------------------------------------------------------------
// Names

START_TEST(policy_names) {
  for (Policy p : {Policy::kFlexCo, Policy::kCoarp, Policy::kHpcm, Policy::kCores,
                   Policy::kCoresSeq}) {
    auto back = parse_policy(policy_name(p));
    OK(back);
    ck_assert(back.value() == p);
  }
  auto bad = parse_policy("FlexCo");
  ck_assert(!bad.ok());
  EQ(static_cast<int>(bad.error().code), static_cast<int>(Errc::kInvalidArgument));
  HAS(bad.error().message, "parse_policy: unknown policy \"FlexCo\" (valid: flexco, coarp");
  HAS(bad.error().message, "cores, cores-seq)");
  ck_assert(parse_policy("cores-seq").value() == Policy::kCoresSeq);
  ck_assert(parse_reschedule_mode("shift").value() == RescheduleMode::kShift);
  ck_assert(parse_reschedule_mode("remap").value() == RescheduleMode::kShiftRemap);
  ck_assert(parse_reschedule_mode(reschedule_mode_name(RescheduleMode::kShiftRemap)).value() ==
            RescheduleMode::kShiftRemap);
  HAS(parse_reschedule_mode("Shift").error().message, "unknown mode \"Shift\"");
  ck_assert_str_eq(reschedule_kind_name(RescheduleKind::kRemap), "remap");
}
END_TEST

START_TEST(overhead_rounding) {
  EQ(coalloc_overhead(req(1, 100, 0.1)), 10);
  EQ(coalloc_overhead(req(1, 101, 0.1)), 11);  // 10.1 rounds up
  EQ(coalloc_overhead(req(1, 100, 0.0)), 0);
  EQ(coalloc_overhead(req(1, 3600, 0.25)), 900);
}
END_TEST

// ---------------------------------------------------------------------------
// FlexCo Algorithm 1

// Two idle clusters of 10: 8 nodes fit on one cluster at 0; the next-fit
// pointer moves A, B, A across requests; no overhead.
START_TEST(flexco_single_rotation) {
  Grid g({{10, {}}, {10, {}}});
  PlannerState st;
  const char* expect[] = {"A8", "B8", "A8"};
  for (const char* e : expect) {
    auto p = plan_flexco(req(8, 100, 0.1), g.views, st);
    OK(p);
    EQ(p.value().start, 0);
    EQ(p.value().duration, 100);
    EQ(p.value().end(), 100);
    ck_assert(!p.value().split());
    PARTS(p.value(), e);
  }
}
END_TEST

// A: 10 nodes, 4 busy [0, 1000) -> 6 free; B: 5 busy [0, 1000) -> 5 free;
// C: 8 busy forever -> 2 free.  9 nodes x 100 s, overhead 0.1 (110 s split).
// One cluster holds 9 only from 1000 (A or B), ending 1100; the split at 0
// ends at 110 and wins.  The next-fit cluster takes what it has, the rest
// goes most-available first.
struct SplitCase {
  std::size_t next_first;
  std::size_t max_parts;
  const char* parts;
  std::size_t next_after;
};
const SplitCase kSplitCases[] = {
    {0, 0, "A6 B3", 1},
    {1, 0, "B5 A4", 2},
    {2, 0, "C2 A6 B1", 0},
    {2, 2, "A6 B3", 0},  // C first needs 3 parts; most available first
    {5, 0, "C2 A6 B1", 0},  // the pointer is taken modulo the clusters
};

START_TEST(flexco_forced_split) {
  const SplitCase& c = kSplitCases[_i];
  Grid g({{10, {{0, 1000, 4}}}, {10, {{0, 1000, 5}}}, {10, {{0, kForever, 8}}}});
  PlannerState st;
  st.next_first = c.next_first;
  CoallocRequest r = req(9, 100, 0.1);
  r.max_parts = c.max_parts;
  auto p = plan_flexco(r, g.views, st);
  OK(p);
  EQ(p.value().start, 0);
  EQ(p.value().duration, 110);
  PARTS(p.value(), c.parts);
  EQ(st.next_first, c.next_after);
}
END_TEST

// A: 4 busy [0, 100) (6 free, 10 from 100), B: 5 busy forever (5 free).
// 9 nodes x 100 s: one cluster from 100, ends 200; the split at 0 ends at
// 100 + overhead.  The single cluster wins a tie (Algorithm 1, line 24).
struct OverheadCase {
  double overhead;
  const char* parts;
  Time start;
  Duration duration;
};
const OverheadCase kOverheadCases[] = {
    {0.0, "A6 B3", 0, 100},
    {0.99, "A6 B3", 0, 199},  // ends 199 < 200
    {1.0, "A9", 100, 100},    // 200 == 200: one cluster
    {2.0, "A9", 100, 100},
};

START_TEST(flexco_overhead_only_when_split) {
  const OverheadCase& c = kOverheadCases[_i];
  Grid g({{10, {{0, 100, 4}}}, {10, {{0, kForever, 5}}}});
  PlannerState st;
  auto p = plan_flexco(req(9, 100, c.overhead), g.views, st);
  OK(p);
  PARTS(p.value(), c.parts);
  EQ(p.value().start, c.start);
  EQ(p.value().duration, c.duration);
}
END_TEST

// The common start is a change point: A has 2 free until 50, then 10;
// B 5 free.  12 nodes never fit one cluster; at 0: 2 + 5 < 12; at 50:
// 10 + 5 >= 12.
START_TEST(flexco_split_at_change_point) {
  Grid g({{10, {{0, 50, 8}}}, {10, {{0, kForever, 5}}}});
  PlannerState st;
  auto p = plan_flexco(req(12, 100), g.views, st);
  OK(p);
  EQ(p.value().start, 50);
  PARTS(p.value(), "A10 B2");
}
END_TEST

// The summed free is 10 at every instant, but no cluster keeps nodes over
// a whole 30 s window before 20: A is full on [10, 20), B on [0, 10) and
// [20, 30).  Only A alone from 20 works (not 0, which the sum suggests).
START_TEST(flexco_sum_is_only_a_bound) {
  Grid g({{10, {{10, 10, 10}}}, {10, {{0, 10, 10}, {20, 10, 10}}}});
  PlannerState st;
  auto p = plan_flexco(req(10, 30), g.views, st);
  OK(p);
  EQ(p.value().start, 20);
  PARTS(p.value(), "A10");
}
END_TEST

START_TEST(flexco_deadline_and_never) {
  Grid g({{10, {{0, 100, 4}}}, {10, {{0, kForever, 5}}}});
  PlannerState st;
  st.next_first = 1;
  CoallocRequest r = req(9, 100, 2.0);  // the best plan: A9 over [100, 200)
  r.deadline = 150;
  auto p = plan_flexco(r, g.views, st);
  ck_assert(!p.ok());
  EQ(static_cast<int>(p.error().code), static_cast<int>(Errc::kNoFit));
  HAS(p.error().message,
      "plan_flexco: no plan for 9 nodes x 100 s from 0 ends by the deadline 150 (earliest end "
      "200)");
  EQ(st.next_first, 1);  // unchanged on error
  r.deadline = 200;
  OK(plan_flexco(r, g.views, st));
  auto q = plan_flexco(req(16, 10), g.views, st);  // 10 + 5 < 16
  ck_assert(!q.ok());
  EQ(static_cast<int>(q.error().code), static_cast<int>(Errc::kNoFit));
  HAS(q.error().message, "exists on the allowed clusters (none ever fits)");
}
END_TEST

// Allowed clusters and a one-part limit.
START_TEST(flexco_allowed_and_max_parts) {
  Grid g({{10, {}}, {10, {{0, 100, 5}}}, {4, {}}});
  PlannerState st;
  CoallocRequest r = req(8, 50);
  r.allowed = {false, true, true};  // B has 5 until 100, C 4: split at 0
  auto p = plan_flexco(r, g.views, st);
  OK(p);
  EQ(p.value().start, 0);
  PARTS(p.value(), "B5 C3");
  r.max_parts = 1;  // B alone from 100
  auto q = plan_flexco(r, g.views, st);
  OK(q);
  EQ(q.value().start, 100);
  PARTS(q.value(), "B8");
}
END_TEST

// ---------------------------------------------------------------------------
// COARP

// A: 3 free from 0 (7 busy forever); B: full [0, 10), then 6 free.  8 nodes
// x 100 s, overhead 0.1 (110 s).  Slots by finish: A@0 (3, 110), B@10
// (6, 120).  A joins first; at 10 A gives 3 and B 5, in that order
// although B has more.
START_TEST(coarp_composition_order) {
  Grid g({{10, {{0, kForever, 7}}}, {10, {{0, 10, 10}, {10, kForever, 4}}}});
  auto p = plan_coarp(req(8, 100, 0.1), g.views);
  OK(p);
  EQ(p.value().start, 10);
  EQ(p.value().duration, 110);
  PARTS(p.value(), "A3 B5");
}
END_TEST

// A: 6 free until 100; B: full until 50; C: 3 free forever.  Slots by
// finish: A@0 (6, 110), C@0 (3, 110), B whole @50 (150), ...  A and C
// compose at 0.  Without C, B's whole-job slot at 50 finishes first.
START_TEST(coarp_whole_slot_and_split) {
  {
    Grid g({{10, {{0, 100, 4}}}, {10, {{0, 50, 10}}}, {10, {{0, kForever, 7}}}});
    auto p = plan_coarp(req(8, 100, 0.1), g.views);
    OK(p);
    EQ(p.value().start, 0);
    PARTS(p.value(), "A6 C2");
  }
  {
    Grid g({{10, {{0, 100, 4}}}, {10, {{0, 50, 10}}}});
    auto p = plan_coarp(req(8, 100, 0.1), g.views);
    OK(p);
    EQ(p.value().start, 50);
    EQ(p.value().duration, 100);
    PARTS(p.value(), "B8");
  }
}
END_TEST

// Explicit offers instead of profiles: A offers 4 nodes over [0, 1000),
// B 6 nodes over [100, 400).  8 nodes x 200 s: the composition starts at
// 100 (B's offer) with A's 4 still covering [100, 300).
START_TEST(coarp_explicit_offers) {
  Grid g({{10, {}}, {10, {}}});
  g.views[0].offers = {{0, 1000, 4, 0.5, 0.7}};
  g.views[1].offers = {{100, 400, 6, 0.9, 0.8}};
  auto p = plan_coarp(req(8, 200), g.views);
  OK(p);
  EQ(p.value().start, 100);
  PARTS(p.value(), "A4 B4");
  NEAR(p.value().parts[0].p_res, 0.7);
  NEAR(p.value().parts[1].fit, 0.9);
}
END_TEST

// Both clusters have 1 node free until 100, then 10.  15 nodes x 10 s,
// overhead 0.5 (15 s split): nothing composes at 0; at 100 A (joined
// first, lower index) gives 10 and B 5.  max_offers does not limit the
// walk over profiles.
START_TEST(coarp_profiles_change_point) {
  Grid g({{10, {{0, 100, 9}}}, {10, {{0, 100, 9}}}});
  CoallocOptions o;
  o.max_offers = 1;
  auto p = plan_coarp(req(15, 10, 0.5), g.views, o);
  OK(p);
  EQ(p.value().start, 100);
  EQ(p.value().duration, 15);
  PARTS(p.value(), "A10 B5");
}
END_TEST

// The paper's Algorithm 2 on offers, by hand.  Three providers (10 nodes
// each); the job: P = 8 nodes x 100 s, overhead 0.1, so a part lasts
// D = 100 + ceil(0.1 * 100) = 110 s and a whole-job slot 100 s.
//   A: 3 free over [0, 50), 6 from 50.  Offers (Algorithm 1, event starts):
//      (s 0, n 3, [0, 110)), (s 50, n 6, [50, 160))
//   B: none free over [0, 20), 4 over [20, 300), 8 from 300.
//      Offers: (20, 4, [20, 130)), (300, 8, [300, 410))
//   C: none free over [0, 40), 5 from 40.  Offer: (40, 5, [40, 150)),
//      fit 0.8, p_res 0.9
// OffersList by FinishTime = StartTime + DurationTime (Algorithm 2, step 2):
//   A@0 0+110 = 110 (3), B@20 20+110 = 130 (4), C@40 40+110 = 150 (5),
//   A@50 50+110 = 160 (6), B@300 whole 300+100 = 400 (8), B@300 part 410.
// BestOffersList (step 3): A@0, B@20, C@40: 3 + 4 = 7 < 8, 3 + 4 + 5 = 12
// >= 8.  The paper reserves each at its own start; our parts share the
// start of the last, S = 40, over [40, 150): A gives 3 (no offer of A
// covers [40, 150): its availability, min(3, 6) = 3), B 4 (its offer ends
// at 130 < 150: min(4) over [40, 150) = 4), C 5; in joining order
// A3 + B4 + C1 = 8.  The plan starts at 40 and ends at 150, the finish
// time of the last slot; C's part carries C's offer's fit and p_res.
// (Taking only covering offers, A and B gave nothing at 40 or 50 and the
// walk reached B's whole-job slot: B8 at 300, ending at 400.)
START_TEST(coarp_paper_offers_by_hand) {
  Grid g({{10, {{0, 50, 7}, {50, kForever, 4}}},
          {10, {{0, 20, 10}, {20, 280, 6}, {300, kForever, 2}}},
          {10, {{0, 40, 10}, {40, kForever, 5}}}});
  g.views[0].offers = {{0, 110, 3, 1.0, 1.0}, {50, 160, 6, 1.0, 1.0}};
  g.views[1].offers = {{20, 130, 4, 1.0, 1.0}, {300, 410, 8, 1.0, 1.0}};
  g.views[2].offers = {{40, 150, 5, 0.8, 0.9}};
  auto p = plan_coarp(req(8, 100, 0.1), g.views);
  OK(p);
  EQ(p.value().start, 40);
  EQ(p.value().duration, 110);
  EQ(p.value().end(), 150);
  PARTS(p.value(), "A3 B4 C1");
  NEAR(p.value().parts[2].fit, 0.8);
  NEAR(p.value().parts[2].p_res, 0.9);
  NEAR(p.value().parts[0].fit, 1.0);
}
END_TEST

// The same providers, their offers now made by the production probe
// (core/probe.cpp via probe_offers_from_profile, as flexco-sim does): the
// query asks node counts 1..8 for D = 110 s from 0, event distribution.
// A: n <= 3 fit at 0 and at its change point 50, n = 4..6 only at 50,
// n = 7, 8 never: 3 + 6 = 9 offers, ordered by start, then nodes.  B and C
// give the slots of the hand example (B: n <= 4 at 20 and 300, n <= 8 at
// 300; C: n <= 5 at 40), so the plan is the same.
START_TEST(coarp_probe_offers_from_profiles) {
  Grid g({{10, {{0, 50, 7}, {50, kForever, 4}}},
          {10, {{0, 20, 10}, {20, 280, 6}, {300, kForever, 2}}},
          {10, {{0, 40, 10}, {40, kForever, 5}}}});
  CoallocRequest r = req(8, 100, 0.1);
  for (std::size_t c = 0; c < 3; ++c) {
    auto o = probe_offers_from_profile(g.profiles[c], 10, 0, r);
    OK(o);
    g.views[c].offers = o.value();
  }
  std::string a;
  for (const CoallocOffer& o : g.views[0].offers) {
    EQ(o.end - o.start, 110);
    a += std::to_string(o.start) + ":" + std::to_string(o.nodes) + " ";
  }
  ck_assert_str_eq(a.c_str(), "0:1 0:2 0:3 50:1 50:2 50:3 50:4 50:5 50:6 ");
  EQ(g.views[1].offers.size(), 12);
  EQ(g.views[2].offers.size(), 5);
  auto p = plan_coarp(r, g.views);
  OK(p);
  EQ(p.value().start, 40);
  EQ(p.value().duration, 110);
  PARTS(p.value(), "A3 B4 C1");
}
END_TEST

// The offers run out before anything composes (a probe answers at most
// kPlanProbeOffers slots, often all early and small).  A: 3 free over
// [0, 200), 10 from 200; B: 2 free over [0, 300), 10 from 300.  8 nodes x
// 100 s, overhead 0.1 (D = 110 s).  Offers: A (0, 3), B (0, 2), each
// [0, 110).  OffersList: A@0 110, B@0 110 (more nodes first); no whole-job
// slot.  At A@0: A alone gives 3 < 8; at B@0: A 3 + B 2 = 5 < 8.  No slot
// is left and none was cut off, so COARP refused the job (kNoFit) although
// A holds it alone from 200.  Now the walk goes on over the free profiles:
// the earliest single start is A at 200 (end 300); a split can start no
// earlier than 200 and would end at 200 + 110 = 310 > 300, so A8 at 200
// for 100 s.  With deadline 250 the error gives that earliest end, 300.
START_TEST(coarp_offers_run_out) {
  Grid g({{10, {{0, 200, 7}}}, {10, {{0, 300, 8}}}});
  g.views[0].offers = {{0, 110, 3, 1.0, 1.0}};
  g.views[1].offers = {{0, 110, 2, 1.0, 1.0}};
  CoallocRequest r = req(8, 100, 0.1);
  auto p = plan_coarp(r, g.views);
  OK(p);
  EQ(p.value().start, 200);
  EQ(p.value().duration, 100);
  PARTS(p.value(), "A8");
  r.deadline = 250;
  auto q = plan_coarp(r, g.views);
  ck_assert(!q.ok());
  EQ(static_cast<int>(q.error().code), static_cast<int>(Errc::kNoFit));
  HAS(q.error().message, "(earliest end 300)");
}
END_TEST

// ---------------------------------------------------------------------------
// HPCM

// Hand values (doc/coalloc.md):
//   c=1, lambda=0.5, mu=1, d=3: rho 0.5, C = 0.5, W = 2: 1 - 0.5 * 0.5^3
//   c=2, lambda=1, mu=1, d=1: a 1, rho 0.5, P0 = 1/3, C = 1/3, W = 1:
//     Pr{no wait} = 5/6, Pr{1 waiting} = 1/12: 11/12
//   c=2, same, d=0: W = -1, only the k = 0 term: 1 - 1/3 * 0.5 = 5/6
struct SiteCase {
  Amount c;
  double lambda;
  double mu;
  Duration d;
  double p;
};
const SiteCase kSiteCases[] = {
    {1, 0.5, 1.0, 3, 0.9375},
    {2, 1.0, 1.0, 1, 11.0 / 12.0},
    {2, 1.0, 1.0, 0, 5.0 / 6.0},
    {2, 0.002, 0.002, 500, 11.0 / 12.0},
    {4, 0.0, 1.0, 1, 1.0},         // no arrivals
    {2, 2.0, 1.0, 100, 0.0},       // rho = 1: unstable
    {2, 1.0, 1.0, kForever, 1.0},  // no deadline
};

START_TEST(hpcm_site_values) {
  const SiteCase& c = kSiteCases[_i];
  auto p = hpcm_site_probability(c.c, c.lambda, c.mu, c.d);
  OK(p);
  NEAR(p.value(), c.p);
}
END_TEST

START_TEST(hpcm_plan_probability_is_product) {
  Grid g({{1, {}}, {2, {}}});
  g.views[0].arrival_rate = 0.5;
  g.views[0].service_rate = 1.0;
  g.views[1].arrival_rate = 1.0;
  g.views[1].service_rate = 1.0;
  CoallocPlan plan;
  plan.parts = {{0, 1, 1, 1}, {1, 2, 1, 1}};
  auto p = hpcm_plan_probability(plan, g.views, 3);
  OK(p);
  // A: 0.9375 as above; B: d 3, W = 5: 1 - 1/3 * 0.5^6 = 1 - 1/192.
  NEAR(p.value(), 0.9375 * (1.0 - 1.0 / 192.0));
  plan.parts[1].cluster = 7;
  HAS(hpcm_plan_probability(plan, g.views, 3).error().message,
      "hpcm_plan_probability: part 1: cluster 7 out of range (2 clusters)");
  ck_assert(!hpcm_site_probability(0, 1, 1, 1).ok());
  ck_assert(!hpcm_site_probability(1, -1, 1, 1).ok());
  ck_assert(!hpcm_site_probability(1, 1, 1, -1).ok());
}
END_TEST

// Learning the rates (doc/coalloc.md, "Learning the rates"), then P(S, d)
// from the paper's formulas, by hand.  A cluster of c = 3 nodes; jobs
// ended by now = 900 (window 3600):
//   [0, 100) x 3 nodes, [200, 350) x 2, [500, 800) x 1: N = 3,
//   work = 300 + 300 + 300 = 900 node-s, t0 = max(900 - 3600, 0) = 0,
//   span = 900 s: lambda = 3/900 = 1/300, mu = 3/900 = 1/300 per node,
//   a = lambda/mu = 1, rho = a/c = 1/3.
// Left out: one ending after now (950), one with 0 nodes, one that ended
// before the window (end -3000 <= 900 - 3600).
// Theorem 1 with eq. (2)'s delta as the standard M/M/c P0 (the paper's
// typos corrected, doc/coalloc.md):
//   delta = [a^0/0! + a^1/1! + a^2/2! + a^3/3! * 1/(1 - rho)]^-1
//         = [1 + 1 + 1/2 + 1/6 * 3/2]^-1 = [11/4]^-1 = 4/11
//   Pr{psi = 0} = delta * sum_{n=0..3} (rho c)^n/n! = 4/11 * (1 + 1 + 1/2 + 1/6)
//               = 4/11 * 8/3 = 32/33
//   Pr{psi = k} = delta * rho^(k+3) * 3^3/3! = 4/11 * (1/3)^k * 1/27 * 27/6
//               = 2/33 * (1/3)^k;  Pr{psi = 1} = 2/99
// Deadline d = 200: WaitLength = c mu d - 1 = 3 * 200/300 - 1 = 1 (Algorithm 1
// step 3), so P = Pr{psi = 0} + Pr{psi = 1} = 96/99 + 2/99 = 98/99.
// (Closed form: C(3, 1) = 1 - 4/11 * 5/2 = 1/11; 1 - 1/11 * (1/3)^2 = 98/99.)
const std::vector<HpcmJob> kLearnJobs = {
    {0, 100, 3}, {200, 350, 2}, {500, 800, 1}, {800, 950, 1}, {10, 20, 0}, {-3100, -3000, 4}};

START_TEST(hpcm_learned_rates_by_hand) {
  auto r = hpcm_estimate_rates(kLearnJobs, 900);
  OK(r);
  EQ(r.value().jobs, 3);
  EQ(r.value().span, 900);
  NEAR(r.value().arrival_rate, 1.0 / 300.0);
  NEAR(r.value().service_rate, 1.0 / 300.0);
  auto p = hpcm_site_probability(3, r.value().arrival_rate, r.value().service_rate, 200);
  OK(p);
  NEAR(p.value(), 98.0 / 99.0);
  // The planner's score with these rates: one part on the cluster.
  Grid g(std::vector<ClusterSpec>{ClusterSpec{3, {}}});
  g.views[0].arrival_rate = r.value().arrival_rate;
  g.views[0].service_rate = r.value().service_rate;
  PlannerState st;
  CoallocRequest q = req(3, 100);
  q.deadline = 200;
  auto plan = plan_hpcm(q, g.views, st);
  OK(plan);
  PARTS(plan.value(), "A3");
  NEAR(plan.value().score, 98.0 / 99.0);
  // A window of 500 s keeps only the job that ended at 800: too few, not
  // learned (P = 1).
  auto few = hpcm_estimate_rates(kLearnJobs, 900, 500);
  OK(few);
  EQ(few.value().jobs, 1);
  NEAR(few.value().arrival_rate, 0.0);
  NEAR(few.value().service_rate, 0.0);
  EQ(few.value().span, 0);
  // A window of 850 s: the three jobs (ends 100, 350, 800 > 50), t0 =
  // 900 - 850 = 50 (the first started before it), span 850; work is whole
  // runs: lambda = 3/850, mu unchanged.
  auto cut = hpcm_estimate_rates(kLearnJobs, 900, 850);
  OK(cut);
  EQ(cut.value().jobs, 3);
  EQ(cut.value().span, 850);
  NEAR(cut.value().arrival_rate, 3.0 / 850.0);
  NEAR(cut.value().service_rate, 1.0 / 300.0);
  HAS(hpcm_estimate_rates(kLearnJobs, 900, 0).error().message,
      "hpcm_estimate_rates: window must be >= 1 s (got 0)");
}
END_TEST

// The learner keeps what the estimator needs, bounded, in any order.
START_TEST(hpcm_rate_learner) {
  HpcmRateLearner l;
  EQ(l.window(), kHpcmRateWindow);
  for (std::size_t i = kLearnJobs.size(); i-- > 0;)
    l.record(kLearnJobs[i].start, kLearnJobs[i].end, kLearnJobs[i].nodes);
  // The 0-node job is refused; the others are kept (the latest end, 950,
  // is within a window of them all).
  EQ(l.size(), 4);
  HpcmRates r = l.rates(900);
  EQ(r.jobs, 3);
  NEAR(r.arrival_rate, 1.0 / 300.0);
  NEAR(r.service_rate, 1.0 / 300.0);
  // A job ending at 5000 pushes out every end <= 5000 - 3600 = 1400.
  l.record(4900, 5000, 2);
  EQ(l.size(), 1);
  EQ(l.rates(5000).jobs, 1);
  NEAR(l.rates(5000).arrival_rate, 0.0);
  // One ending before the window of the latest is not kept.
  l.record(0, 1000, 1);
  EQ(l.size(), 1);
  // Bounded: never more than kHpcmMaxJobs.
  for (std::size_t i = 0; i < kHpcmMaxJobs + 10; ++i)
    l.record(5000, 5001 + static_cast<Time>(i % 100), 1);
  EQ(l.size(), kHpcmMaxJobs);
  HpcmRates b = l.rates(5200);
  EQ(b.jobs, kHpcmMaxJobs);
  ck_assert(b.arrival_rate > 0.0 && b.service_rate > 0.0);
}
END_TEST

// A (2 nodes, idle queue) is booked until 1000; B (2 nodes, lambda = mu =
// 0.002) is free.  2 nodes x 100 s.  Without a deadline every scheme has
// P = 1 on A... A's plans end at 1100, B's at 100 with P(B) = 1 (d
// forever): B wins by end.  With deadline 500 only B ends in time; its
// P(S, d) = 11/12 (d = 500, W = 1, as above).
START_TEST(hpcm_choice) {
  Grid g({{2, {{0, 1000, 2}}}, {2, {}}});
  g.views[1].arrival_rate = 0.002;
  g.views[1].service_rate = 0.002;
  PlannerState st;
  CoallocRequest r = req(2, 100);
  auto p = plan_hpcm(r, g.views, st);
  OK(p);
  PARTS(p.value(), "B2");
  EQ(p.value().start, 0);
  NEAR(p.value().score, 1.0);
  r.deadline = 500;
  auto q = plan_hpcm(r, g.views, st);
  OK(q);
  PARTS(q.value(), "B2");
  NEAR(q.value().score, 11.0 / 12.0);
  r.deadline = 50;
  auto e = plan_hpcm(r, g.views, st);
  ck_assert(!e.ok());
  HAS(e.error().message, "plan_hpcm: no plan for 2 nodes x 100 s from 0 ends by the deadline "
                         "50 (earliest end 100)");
}
END_TEST

// A loaded queue loses against an idle one even when it is free sooner:
// A (8 nodes, rho 0.9375) free now, B (8 nodes, idle queue) booked until
// 100.  Deadline 10000: A's P < 1, B's P = 1.
START_TEST(hpcm_probability_beats_end) {
  Grid g({{8, {}}, {8, {{0, 100, 8}}}});
  g.views[0].arrival_rate = 0.0075;
  g.views[0].service_rate = 0.001;
  PlannerState st;
  CoallocRequest r = req(8, 100);
  r.deadline = 10000;
  auto p = plan_hpcm(r, g.views, st);
  OK(p);
  PARTS(p.value(), "B8");
  EQ(p.value().start, 100);
  NEAR(p.value().score, 1.0);
  double pa = hpcm_site_probability(8, 0.0075, 0.001, 10000).value();
  ck_assert(pa < 1.0 && pa > 0.0);
}
END_TEST

// The schemes fill by capacity: RR from the pointer, CM largest first.
// 12 nodes on A 4, B 8, C 4, all idle, overhead 0: CM = B8 A4, RR from 0
// = A4 B8, RR from 1 = B8 C4; all P = 1, all start at 0 and end at 100,
// all two parts: RR wins the tie.  The pointer moves past RR's last
// cluster.
START_TEST(hpcm_round_robin_tie) {
  Grid g({{4, {}}, {8, {}}, {4, {}}});
  PlannerState st;
  auto p = plan_hpcm(req(12, 100), g.views, st);
  OK(p);
  PARTS(p.value(), "A4 B8");
  EQ(st.next_first, 2);
  // RR from C: C4 A4 B4, three parts; CM's B8 A4 (or a two-part random
  // order) has fewer at the same P and end and wins.
  auto q = plan_hpcm(req(12, 100), g.views, st);
  OK(q);
  EQ(q.value().parts.size(), 2);
  EQ(q.value().parts[0].nodes + q.value().parts[1].nodes, 12);
  ck_assert(q.value().parts[0].cluster == 1 || q.value().parts[1].cluster == 1);
  EQ(st.next_first, 2);  // RR's last cluster was B again
}
END_TEST

// Same seed, same answers; the RNG moves.
START_TEST(hpcm_deterministic) {
  Grid g({{4, {}}, {8, {}}, {4, {}}, {6, {}}});
  g.views[1].arrival_rate = 0.01;
  g.views[1].service_rate = 0.002;
  PlannerState a, b;
  for (int i = 0; i < 20; ++i) {
    auto p = plan_hpcm(req(9, 100, 0.1), g.views, a);
    auto q = plan_hpcm(req(9, 100, 0.1), g.views, b);
    OK(p);
    OK(q);
    ck_assert_str_eq(parts_str(p.value()).c_str(), parts_str(q.value()).c_str());
  }
  ck_assert(a.rng == b.rng);
  ck_assert(a.rng != PlannerState{}.rng);
}
END_TEST

// ---------------------------------------------------------------------------
// CORES

// Offers: A 5 nodes fit 0.9 p_res 0.6, B 5 nodes fit 0.8 p_res 0.95, both
// over [0, 1000).  8 nodes x 100 s: the split fills B first (0.8 + 0.95 >
// 0.9 + 0.6), A the rest; allocation order smallest p_res first: A, B.
// Objective: 1 * 100/100 - 0.85 - 0.6 * 0.95 = -0.42.
START_TEST(cores_order_and_objective) {
  Grid g({{10, {}}, {10, {}}});
  g.views[0].offers = {{0, 1000, 5, 0.9, 0.6}};
  g.views[1].offers = {{0, 1000, 5, 0.8, 0.95}};
  auto p = plan_cores(req(8, 100), g.views);
  OK(p);
  PARTS(p.value(), "A3 B5");
  NEAR(p.value().parts[0].p_res, 0.6);
  NEAR(p.value().parts[1].p_res, 0.95);
  NEAR(p.value().score, 1.0 - 0.85 - 0.57);
}
END_TEST

// Two candidates on B: start 0 (p_res 0.1) ending 3600, start 21600
// (p_res 0.85) ending 25200.  Normalised ends 1/7 and 1.
//   w_end 1:   J0 = 1/7 - 1 - 0.1 = -0.957, J1 = 1 - 1 - 0.85 = -0.85: 0
//   w_end 0.1: J0 = 0.0143 - 1.1 = -1.086, J1 = 0.1 - 1.85 = -1.75: 21600
struct CoresWeightCase {
  double w_end;
  Time start;
  double score;
};
const CoresWeightCase kCoresWeightCases[] = {
    {1.0, 0, 1.0 / 7.0 - 1.1},
    {0.1, 21600, 0.1 - 1.85},
};

START_TEST(cores_weights) {
  const CoresWeightCase& c = kCoresWeightCases[_i];
  Grid g({{10, {{0, kForever, 10}}}, {10, {}}});
  g.views[1].offers = {{0, 3600, 4, 1.0, 0.1}, {21600, 25200, 4, 1.0, 0.85}};
  CoallocOptions o;
  o.cores_w_end = c.w_end;
  auto p = plan_cores(req(4, 3600), g.views, o);
  OK(p);
  PARTS(p.value(), "B4");
  EQ(p.value().start, c.start);
  NEAR(p.value().score, c.score);
}
END_TEST

// Derived offers carry the static p_res: ready 21600, now 0, h 11386:
// 1 - e^(-21600/11386) = 0.84999...
START_TEST(cores_static_p_res) {
  Grid g(std::vector<ClusterSpec>{{10, {}}});
  CoallocRequest r = req(4, 100);
  r.ready = 21600;
  CoallocOptions o;
  o.now = 0;
  o.cores_w_pres = 0.0;  // only the end matters: the first start
  auto p = plan_cores(r, g.views, o);
  OK(p);
  EQ(p.value().start, 21600);
  NEAR(p.value().parts[0].p_res, 1.0 - std::exp(-21600.0 / 11386.0));
  ck_assert(std::fabs(p.value().parts[0].p_res - 0.85) < 1e-4);
}
END_TEST

// Splits on probe offers (issue 18): a probe's offers last exactly the
// asked duration from each cluster's own change points, so two clusters'
// offers rarely start at the same second.  A cluster whose offers do not
// cover [S, S + D) gives its intermediate slot (§9.5, step functions):
// the free nodes of its availability over the window, fit and p_res of
// its offer with the latest start <= S.  Two clusters of 10 nodes:
//   A: busy [0, 120) 4, busy from 120 6: 6 free until 120, then 4.
//      Offers (as a probe gives them, one per change point):
//      (0, [0, 100), 6, fit 0.8, p_res 0.95), (120, [120, 220), 4, 0.9, 0.95)
//   B: busy [0, 50) 10, busy from 50 3: 7 free from 50.
//      Offer (50, [50, 150), 7, fit 0.9, p_res 0.9)
// The job: 11 nodes x 100 s, no overhead (D = 100): no cluster holds it.
// Before, a cluster counted at S only with an offer covering [S, S + 100):
// at 0 only A, at 50 only B, at 120 only A: no split, kNoFit.
// Now, starts 0, 50, 120 (the offers' starts):
//   0:   B has no offer at or before 0: A alone, no split.
//   50:  B 7 (its offer); A's offer at 0 ends at 100 < 150: intermediate,
//        min free over [50, 150) = min(6, 4) = 4, fit 0.8, p_res 0.95.
//        Fill by fit + p_res: B 1.8 > A 1.75: B7 + A4 = 11.  Ends 150.
//   120: A 4 (its offer, fit 0.9); B's offer ends at 150 < 220:
//        intermediate from B@50: 7, fit 0.9, p_res 0.9.  A4 + B7.  Ends 220.
// Objective (w 1, 1, 1; latest end 220):
//   J50  = 150/220 - (0.9 + 0.8)/2 - 0.9*0.95 = 0.681818 - 0.85 - 0.855 = -1.023182
//   J120 = 220/220 - 0.9 - 0.855 = -0.755
// cores: start 50, parts smallest p_res first: B7 (0.9), A4 (0.95).
// cores-seq (fit >= 0.85): A's intermediate slot at 50 carries fit 0.8,
// refused, so B alone at 50; at 120 both pass: start 120, J = -0.755.
START_TEST(cores_split_on_probe_offers) {
  Grid g({{10, {{0, 120, 4}, {120, kForever, 6}}}, {10, {{0, 50, 10}, {50, kForever, 3}}}});
  g.views[0].offers = {{0, 100, 6, 0.8, 0.95}, {120, 220, 4, 0.9, 0.95}};
  g.views[1].offers = {{50, 150, 7, 0.9, 0.9}};
  auto p = plan_cores(req(11, 100), g.views);
  OK(p);
  EQ(p.value().start, 50);
  EQ(p.value().duration, 100);
  PARTS(p.value(), "B7 A4");
  NEAR(p.value().parts[1].fit, 0.8);
  NEAR(p.value().parts[1].p_res, 0.95);
  NEAR(p.value().score, 150.0 / 220.0 - 0.85 - 0.9 * 0.95);
  auto seq = plan_cores_seq(req(11, 100), g.views, CoallocOptions{});
  OK(seq);
  EQ(seq.value().start, 120);
  PARTS(seq.value(), "B7 A4");
  NEAR(seq.value().parts[0].fit, 0.9);
  NEAR(seq.value().score, 1.0 - 0.9 - 0.9 * 0.95);
  // The same clusters probed by the production probe (as flexco-sim
  // does): it samples the node counts 1, 2, 3, 4, 6 at every change point
  // (A at 0 and 120 (1..4), B at 50), fit 1 (empty queue), static p_res.
  // At 50 B's largest covering offer has 6 nodes, A's intermediate slot
  // 4: 10 < 11.  At 120 A's offer 4 + B's intermediate slot 7 = 11: the
  // plan starts at 120 (before the fix: no plan either).
  CoallocRequest r = req(11, 100);
  for (std::size_t c = 0; c < 2; ++c) {
    auto o = probe_offers_from_profile(g.profiles[c], 10, 0, r);
    OK(o);
    g.views[c].offers = o.value();
  }
  auto probed = plan_cores(r, g.views);
  OK(probed);
  EQ(probed.value().start, 120);
  PARTS(probed.value(), "B7 A4");
  EQ(probed.value().parts[0].nodes + probed.value().parts[1].nodes, 11);
}
END_TEST

// ---------------------------------------------------------------------------
// CORES as the thesis runs it (cores-seq, ch. 9.6.3 and 11.3)

// The GRS admission threshold.  A offers 4 nodes at [0, 1000) with fit
// 0.80, B 4 nodes at [500, 1500) with fit 0.90, both p_res 1.  4 nodes x
// 100 s; candidate ends 100 (A) and 600 (B), span 600:
//   cores:     J_A = 100/600 - 0.80 - 1 = -1.6333, J_B = 1 - 0.90 - 1 = -0.9: A at 0
//   cores-seq: A's fit 0.80 < 0.85 is refused: B at 500, score -0.9.
START_TEST(cores_seq_threshold_on_fit) {
  Grid g({{10, {}}, {10, {}}});
  g.views[0].offers = {{0, 1000, 4, 0.80, 1.0}};
  g.views[1].offers = {{500, 1500, 4, 0.90, 1.0}};
  auto plain = plan_cores(req(4, 100), g.views);
  OK(plain);
  PARTS(plain.value(), "A4");
  EQ(plain.value().start, 0);
  NEAR(plain.value().score, 100.0 / 600.0 - 1.8);
  PlannerState state;
  auto seq = plan_coalloc(Policy::kCoresSeq, req(4, 100), g.views, state);
  OK(seq);
  PARTS(seq.value(), "B4");
  EQ(seq.value().start, 500);
  NEAR(seq.value().score, 1.0 - 0.9 - 1.0);
  // Threshold 0 admits everything: plan_cores' answer.
  CoallocOptions o;
  o.cores_threshold = 0.0;
  auto all = plan_cores_seq(req(4, 100), g.views, o);
  OK(all);
  PARTS(all.value(), "A4");
  // Nothing passes 0.95: no plan (kNoFit).
  o.cores_threshold = 0.95;
  auto none = plan_cores_seq(req(4, 100), g.views, o);
  ck_assert(!none.ok());
  EQ(static_cast<int>(none.error().code), static_cast<int>(Errc::kNoFit));
  o.cores_threshold = 1.5;
  auto bad = plan_cores_seq(req(4, 100), g.views, o);
  ck_assert(!bad.ok());
  EQ(static_cast<int>(bad.error().code), static_cast<int>(Errc::kInvalidArgument));
  HAS(bad.error().message, "plan_cores_seq: options.cores_threshold must be in [0, 1]");
}
END_TEST

// Derived offers, threshold 0.85 on p_res, now 0, h 11386: the first start
// that passes is ceil(11386 ln(1/0.15)) = ceil(21600.61) = 21601, where
// p_res = 1 - e^(-21601/11386) = 0.8500052 (the thesis' "6 h book-ahead").
// plan_cores would start at 0 (p_res 0).
START_TEST(cores_seq_threshold_on_static_p_res) {
  Grid g(std::vector<ClusterSpec>{{10, {}}});
  CoallocOptions o;
  o.now = 0;
  o.cores_threshold_on = CoallocOptions::CoresProperty::kPRes;
  auto p = plan_cores_seq(req(4, 100), g.views, o);
  OK(p);
  EQ(p.value().start, 21601);
  NEAR(p.value().parts[0].p_res, 1.0 - std::exp(-21601.0 / 11386.0));
  ck_assert(p.value().parts[0].p_res >= 0.85);
  EQ(plan_cores(req(4, 100), g.views, o).value().start, 0);
}
END_TEST

// Example 11.1 (§11.3.1): n = 3, p_esr = (0.85, 0.90, 0.95), alpha 0.01,
// p(i, j) = (1 - (j - 1) 0.01) p_esr_i.  Case A: pen_i = p(i, 1); case B:
// pen_i = p(4 - i, 1).  Order (1, 2, 3) is smallest success first:
//   A: F = 0.85*0.85*(1 - 0.99*0.90) + 0.85*0.891*(0.85 + 0.90)*(1 - 0.98*0.95)
//        = 0.0787525 + 0.0914500125 = 0.1702025125          (thesis 0.170)
//   B: F = 0.85*0.95*0.109 + 0.75735*(0.95 + 0.90)*0.069
//        = 0.0880175 + 0.0966757275 = 0.1846932275          (thesis 0.185)
// Smallest fee first: A the same order (0.170); B order (3, 2, 1):
//   F = 0.95*0.85*0.109 + 0.95*0.891*(0.85 + 0.90)*(1 - 0.98*0.85)
//     = 0.0880175 + 0.2473750125 = 0.3353925125             (thesis 0.335)
// Random (mean over the 6 orders): A 0.2642095, B 0.2593912 (thesis 0.264,
// 0.259).  Success 0.85*0.891*0.931 = 0.70509285 for every order.
START_TEST(cores_example_11_1) {
  std::vector<CoresPartOdds> a = {{0.85, 0.01, 0.85}, {0.90, 0.01, 0.90}, {0.95, 0.01, 0.95}};
  std::vector<CoresPartOdds> b = {{0.85, 0.01, 0.95}, {0.90, 0.01, 0.90}, {0.95, 0.01, 0.85}};
  auto eq3 = [](double x, double thesis) { return std::fabs(std::round(x * 1000) / 1000 - thesis) < 1e-9; };
  const std::vector<std::size_t> sa = cores_order_smallest_success(a);
  const std::vector<std::size_t> sb = cores_order_smallest_success(b);
  ck_assert(sa == (std::vector<std::size_t>{0, 1, 2}));
  ck_assert(sb == (std::vector<std::size_t>{0, 1, 2}));
  ck_assert(cores_order_smallest_fee(a) == (std::vector<std::size_t>{0, 1, 2}));
  ck_assert(cores_order_smallest_fee(b) == (std::vector<std::size_t>{2, 1, 0}));
  auto ma = cores_order_metrics(a, sa);
  auto mb = cores_order_metrics(b, sb);
  auto fb = cores_order_metrics(b, cores_order_smallest_fee(b));
  auto ra = cores_random_order_metrics(a);
  auto rb = cores_random_order_metrics(b);
  OK(ma);
  OK(mb);
  OK(fb);
  OK(ra);
  OK(rb);
  ck_assert(std::fabs(ma.value().fee - 0.1702025125) < 1e-12);
  ck_assert(std::fabs(mb.value().fee - 0.1846932275) < 1e-12);
  ck_assert(std::fabs(fb.value().fee - 0.3353925125) < 1e-12);
  ck_assert(std::fabs(ma.value().success - 0.70509285) < 1e-12);
  ck_assert(std::fabs(fb.value().success - 0.70509285) < 1e-12);
  ck_assert(std::fabs(ra.value().success - 0.70509285) < 1e-12);
  ck_assert(eq3(ra.value().fee, 0.264));
  ck_assert(eq3(rb.value().fee, 0.259));
  ck_assert(eq3(ma.value().fee, 0.170));
  ck_assert(eq3(mb.value().fee, 0.185));
  ck_assert(eq3(fb.value().fee, 0.335));
  // Smallest success first has the lowest fee in both cases.
  ck_assert(ma.value().fee <= ra.value().fee && mb.value().fee < rb.value().fee &&
            mb.value().fee < fb.value().fee);
  auto bad = cores_order_metrics(a, {0, 0, 1});
  ck_assert(!bad.ok());
  HAS(bad.error().message, "cores_order_metrics: order is not a permutation of 0..2");
}
END_TEST

// Algorithm 2 with cores-seq's alternative search.  Five clusters, offers
// over [0, 1000) of 4 nodes each (fit, p_res; score fit + p_res):
//   A (1, 0.90) 1.90   B (1, 0.95) 1.95   C (1, 0.99) 1.99
//   D (0.86, 0.60) 1.46   E (0.50, 1.0) refused (fit < 0.85)
// 8 nodes x 100 s: the split fills C then B: plan C4 B4 at 0, sent
// smallest p_res first: B.  B and C deny every reserve.
//   1. reserve B4 denied; search 1 (FNRP, nothing held, B out): C4 A4;
//   2. reserve A4 (p_res 0.90 < 0.99) granted;
//   3. reserve C4 denied; search 2 (B, C out): A4 kept, D4 (E refused);
//   4. reserve D4 granted.  A4 D4: 4 reserves, 2 denials, 2 searches, no
//      cancel.
// Initial plan with A8 at 2000 also a candidate (below): ends 100 and 2100,
// J = 100/2100 - 1 - 0.9405 = -1.893 beats 1 - 1 - 0.99: still C4 B4.
// Without D, A also offers 8 nodes over [2000, 3000): at step 3 FNRP finds
// nothing, the refinement (only A eligible) plans A8 at 2000; A4 at 0 is
// not in it and is cancelled; reserve A8 granted: 4 reserves, 1 cancel.
// Without D and that offer nothing is left: A4 is cancelled, kNoFit.
struct AllocCase {
  bool with_d;
  bool late_a;
  const char* log;
  const char* parts;  // "" on failure
  Time start;
  std::size_t reserves, searches, cancels;
};
const AllocCase kAllocCases[] = {
    {true, false, "B4@0- A4@0+ C4@0- D4@0+", "A4 D4", 0, 4, 2, 0},
    {false, true, "B4@0- A4@0+ C4@0- cancel:A4@0 A8@2000+", "A8", 2000, 4, 2, 1},
    {false, false, "B4@0- A4@0+ C4@0- cancel:A4@0", "", 0, 3, 2, 1},
};

START_TEST(cores_algorithm_2) {
  const AllocCase& c = kAllocCases[_i];
  Grid g({{10, {}}, {10, {}}, {10, {}}, {10, {}}, {10, {}}});
  g.views[0].offers = {{0, 1000, 4, 1.0, 0.90}};
  if (c.late_a) g.views[0].offers.push_back({2000, 3000, 8, 1.0, 0.99});
  g.views[1].offers = {{0, 1000, 4, 1.0, 0.95}};
  g.views[2].offers = {{0, 1000, 4, 1.0, 0.99}};
  // "Without D": D's only offer is refused too (fit 0.50).
  g.views[3].offers = {{0, 1000, 4, c.with_d ? 0.86 : 0.50, 0.60}};
  g.views[4].offers = {{0, 1000, 4, 0.50, 1.0}};
  const CoallocRequest r = req(8, 100);
  const CoallocOptions o;
  auto first = plan_cores_seq(r, g.views, o);
  OK(first);
  PARTS(first.value(), "B4 C4");
  // Normalised end 100/100, or 100/2100 beside A8 at 2000 (ends 2100).
  NEAR(first.value().score, 100.0 / (c.late_a ? 2100.0 : 100.0) - 1.0 - 0.95 * 0.99);
  std::string log;
  auto tag = [](const CoallocPlan& p, const PlanPart& x) {
    return std::string(1, static_cast<char>('A' + x.cluster)) + std::to_string(x.nodes) + "@" +
           std::to_string(p.start);
  };
  std::vector<bool> excluded(g.views.size(), false);
  CoresAllocIo io;
  io.reserve = [&](const CoallocPlan& p, const PlanPart& x) {
    bool ok = x.cluster != 1 && x.cluster != 2;
    log += (log.empty() ? "" : " ") + tag(p, x) + (ok ? "+" : "-");
    return ok;
  };
  io.cancel = [&](const CoallocPlan& p, const PlanPart& x) { log += " cancel:" + tag(p, x); };
  io.alternative = [&](const CoallocPlan& p, const std::vector<bool>& held,
                       std::size_t failed) -> std::optional<CoallocPlan> {
    auto a = cores_alternative(r, g.views, o, p, held, failed, excluded);
    excluded[p.parts[failed].cluster] = true;
    ck_assert_msg(a.ok(), "cores_alternative: %s", a.ok() ? "" : a.error().message.c_str());
    return a.value();
  };
  CoresAllocStats st;
  auto got = cores_allocate(first.value(), io, &st);
  ck_assert_msg(log == c.log, "line %d: log \"%s\", expected \"%s\"", __LINE__, log.c_str(), c.log);
  EQ(st.reserves, c.reserves);
  EQ(st.denials, 2);
  EQ(st.searches, c.searches);
  EQ(st.cancels, c.cancels);
  if (*c.parts == '\0') {
    ck_assert(!got.ok());
    EQ(static_cast<int>(got.error().code), static_cast<int>(Errc::kNoFit));
    HAS(got.error().message,
        "cores_allocate: the part of 4 nodes on cluster 2 at 0 was denied and no alternative "
        "was found after 2 searches; 1 held parts cancelled");
    return;
  }
  OK(got);
  PARTS(got.value(), c.parts);
  EQ(got.value().start, c.start);
}
END_TEST

// The alternative is bounded: max_searches 0 fails at the first denial.
START_TEST(cores_allocate_bounds) {
  CoallocPlan p;
  p.duration = 10;
  p.parts = {PlanPart{0, 2, 1.0, 0.5}, PlanPart{1, 2, 1.0, 0.9}};
  CoresAllocIo io;
  int alternatives = 0;
  io.reserve = [](const CoallocPlan&, const PlanPart& x) { return x.cluster == 0; };
  io.cancel = [](const CoallocPlan&, const PlanPart&) {};
  io.alternative = [&](const CoallocPlan&, const std::vector<bool>&, std::size_t) {
    ++alternatives;
    return std::optional<CoallocPlan>();
  };
  CoresAllocStats st;
  auto got = cores_allocate(p, io, &st, 0);
  ck_assert(!got.ok());
  EQ(alternatives, 0);
  EQ(st.reserves, 2);
  EQ(st.cancels, 1);
  CoresAllocIo none;
  auto bad = cores_allocate(p, none);
  ck_assert(!bad.ok());
  HAS(bad.error().message, "cores_allocate: reserve, cancel and alternative are all needed");
}
END_TEST

// ---------------------------------------------------------------------------
// Rescheduling

// The current plan: A6 B3 at 1000 for 110 s (9 nodes x 100 s, overhead
// 0.1), ends 1110.  An early completion freed A at 400 (10 busy [0, 400)
// remain); B keeps 7 busy forever.  now = 300.
//   Shift: A6 B3 from 400, ends 510: gain 600.
//   Remap: A9 alone from 400 for 100 s, ends 500: gain 610.
struct ReschedCase {
  RescheduleMode mode;
  Duration margin;
  RescheduleKind kind;
  const char* parts;
  Time start;
  Duration duration;
  Duration gain;
};
const ReschedCase kReschedCases[] = {
    {RescheduleMode::kShift, 0, RescheduleKind::kShift, "A6 B3", 400, 110, 600},
    {RescheduleMode::kShift, 600, RescheduleKind::kShift, "A6 B3", 400, 110, 600},
    {RescheduleMode::kShift, 601, RescheduleKind::kNone, "A6 B3", 1000, 110, 0},
    {RescheduleMode::kShiftRemap, 0, RescheduleKind::kRemap, "A9", 400, 100, 610},
    {RescheduleMode::kShiftRemap, 610, RescheduleKind::kRemap, "A9", 400, 100, 610},
    {RescheduleMode::kShiftRemap, 611, RescheduleKind::kNone, "A6 B3", 1000, 110, 0},
};

START_TEST(reschedule_decision) {
  const ReschedCase& c = kReschedCases[_i];
  Grid g({{10, {{0, 400, 10}}}, {10, {{0, kForever, 7}}}});
  CoallocRequest r = req(9, 100, 0.1);
  CoallocPlan cur;
  cur.start = 1000;
  cur.duration = 110;
  cur.parts = {{0, 6, 1, 1}, {1, 3, 1, 1}};
  RescheduleOptions o;
  o.mode = c.mode;
  o.margin = c.margin;
  auto d = reschedule_coalloc(r, cur, g.views, 300, o);
  OK(d);
  ck_assert_int_eq(static_cast<int>(d.value().kind), static_cast<int>(c.kind));
  PARTS(d.value().plan, c.parts);
  EQ(d.value().plan.start, c.start);
  EQ(d.value().plan.duration, c.duration);
  EQ(d.value().gain, c.gain);
}
END_TEST

// Nothing better: the plan is already at its earliest; a plan that has
// started is an error.
START_TEST(reschedule_no_gain_and_errors) {
  Grid g({{10, {}}, {10, {}}});
  CoallocRequest r = req(9, 100, 0.1);
  CoallocPlan cur;
  cur.start = 300;
  cur.duration = 100;
  cur.parts = {{0, 9, 1, 1}};
  auto d = reschedule_coalloc(r, cur, g.views, 300);
  OK(d);
  ck_assert(d.value().kind == RescheduleKind::kNone);
  EQ(d.value().plan.start, 300);
  auto e = reschedule_coalloc(r, cur, g.views, 301);
  ck_assert(!e.ok());
  HAS(e.error().message, "reschedule_coalloc: current plan started at 300, before now 301");
  cur.parts = {{0, 5, 1, 1}, {0, 4, 1, 1}};
  HAS(reschedule_coalloc(r, cur, g.views, 0).error().message,
      "current plan: part 1: cluster 0 used twice");
  cur.parts = {{0, 5, 1, 1}};
  HAS(reschedule_coalloc(r, cur, g.views, 0).error().message,
      "current plan: parts hold 5 nodes, the request 9");
  cur.parts = {{0, 9, 1, 1}};
  RescheduleOptions o;
  o.margin = -1;
  HAS(reschedule_coalloc(r, cur, g.views, 0, o).error().message,
      "options.margin must be >= 0 (got -1)");
}
END_TEST

// The pass over two waiting metajobs after A's local job (10 nodes,
// planned [0, 1000)) ended at 400.  now = 400.
//   mj 7: 9 x 100 s, overhead 0.1, A6 B3 at 1000 (110 s);
//   mj 8: 10 x 100 s, overhead 0.1, A5 B5 at 1110 (110 s);
//   a started metajob (start 0) is left alone.
// In start order: mj 7 -> A9 at 400 (remap, ends 500 < Shift's 510);
// mj 8 then sees A 1 free until 500: Shift A5 B5 from 500 ends 610, Remap
// B10 at 400 ends 500: remap.
START_TEST(reschedule_pass_order) {
  Grid g({{10, {{0, 1000, 10}}}, {10, {}}});
  std::vector<Profile*> ps{&g.profiles[0], &g.profiles[1]};
  auto book = [&](Metajob& j) {
    for (const PlanPart& p : j.plan.parts)
      j.spans.push_back(ps[p.cluster]->add_span(j.plan.start, j.plan.duration, p.nodes).value());
  };
  std::vector<Metajob> jobs(3);
  jobs[0].id = 8;
  jobs[0].request = req(10, 100, 0.1);
  jobs[0].plan.start = 1110;
  jobs[0].plan.duration = 110;
  jobs[0].plan.parts = {{0, 5, 1, 1}, {1, 5, 1, 1}};
  jobs[1].id = 7;
  jobs[1].request = req(9, 100, 0.1);
  jobs[1].plan.start = 1000;
  jobs[1].plan.duration = 110;
  jobs[1].plan.parts = {{0, 6, 1, 1}, {1, 3, 1, 1}};
  jobs[2].id = 9;
  jobs[2].request = req(1, 1000);
  jobs[2].plan.start = 0;
  jobs[2].plan.duration = 1000;
  jobs[2].plan.parts = {{1, 1, 1, 1}};
  for (Metajob& j : jobs) book(j);
  OK(g.profiles[0].shrink_span(g.spans[0][0], 400, 10));

  auto ch = reschedule_pass(ps, jobs, 400);
  OK(ch);
  EQ(ch.value().size(), 2);
  EQ(ch.value()[0].index, 1);
  EQ(ch.value()[0].old_plan.start, 1000);
  ck_assert(ch.value()[0].decision.kind == RescheduleKind::kRemap);
  EQ(ch.value()[1].index, 0);
  PARTS(jobs[1].plan, "A9");
  EQ(jobs[1].plan.start, 400);
  EQ(jobs[1].plan.duration, 100);
  // mj 8 then sees A 1 free until 500 and B 9 free until 1000 (the started
  // metajob's node): one cluster only from 500 (A, ends 600); Shift A5 B5
  // from 500 ends 610; the split A1 B9 at 400 ends 510 and wins.
  ck_assert(ch.value()[1].decision.kind == RescheduleKind::kRemap);
  EQ(ch.value()[1].decision.gain, 1220 - 510);
  PARTS(jobs[0].plan, "A1 B9");
  EQ(jobs[0].plan.start, 400);
  EQ(jobs[0].plan.duration, 110);
  EQ(jobs[2].plan.start, 0);
  // The profiles hold exactly the new places.
  EQ(g.profiles[0].free_at(450).value(), 0);
  EQ(g.profiles[1].free_at(450).value(), 0);
  EQ(g.profiles[0].free_at(505).value(), 9);
  EQ(g.profiles[0].free_at(1110).value(), 10);
  EQ(g.profiles[1].free_at(1110).value(), 10);
  EQ(g.profiles[0].span(jobs[1].spans[0]).value().end, 500);
  EQ(g.profiles[1].span(jobs[0].spans[1]).value().amount, 9);
  // A second pass, a second before (both now wait), finds nothing better.
  auto again = reschedule_pass(ps, jobs, 399);
  OK(again);
  EQ(again.value().size(), 0);
  // A span the profile does not know is reported with the metajob.
  jobs[0].spans[0] = 9999;
  auto bad = reschedule_pass(ps, jobs, 399);
  ck_assert(!bad.ok());
  EQ(static_cast<int>(bad.error().code), static_cast<int>(Errc::kNotFound));
  HAS(bad.error().message, "reschedule_pass: metajob 8 (index 0): part 0: ");
  EQ(g.profiles[0].free_at(450).value(), 0);  // nothing lost
  EQ(g.profiles[1].free_at(450).value(), 0);
}
END_TEST

// ---------------------------------------------------------------------------
// Randomized properties against brute force (fixed seed)
//
// Small grids, every integer start tried: the earliest possible end is
// min over t of t + runtime where one allowed cluster holds every node
// over [t, t + runtime), and t + runtime + overhead where the max_parts
// largest free counts over [t, t + runtime + overhead) add up.  FlexCo
// must end exactly there (Algorithm 1 minimises completion); COARP too
// without a part limit; every plan must fit its profiles, use allowed
// distinct clusters, at most max_parts, and the right duration.

std::uint64_t g_rand = 0x9e3779b97f4a7c15ULL;
std::int64_t rnd(std::int64_t lo, std::int64_t hi) {  // [lo, hi]
  g_rand ^= g_rand << 13;
  g_rand ^= g_rand >> 7;
  g_rand ^= g_rand << 17;
  return lo + static_cast<std::int64_t>(g_rand % static_cast<std::uint64_t>(hi - lo + 1));
}

void check_feasible(const char* who, int round, const CoallocPlan& p, const CoallocRequest& r,
                    const std::vector<ClusterView>& v) {
  ck_assert_msg(p.start >= r.ready, "round %d %s: start %" PRId64 " before ready", round, who,
                p.start);
  std::size_t limit = r.max_parts == 0 ? v.size() : r.max_parts;
  ck_assert_msg(!p.parts.empty() && p.parts.size() <= limit, "round %d %s: %zu parts", round,
                who, p.parts.size());
  EQ(p.duration, p.parts.size() > 1 ? r.runtime + coalloc_overhead(r) : r.runtime);
  Amount total = 0;
  std::vector<bool> used(v.size(), false);
  for (const PlanPart& x : p.parts) {
    ck_assert(x.cluster < v.size() && !used[x.cluster]);
    used[x.cluster] = true;
    ck_assert(r.allowed.empty() || r.allowed[x.cluster]);
    ck_assert_msg(v[x.cluster].free->min_over(p.start, p.duration).value() >= x.nodes,
                  "round %d %s: part on %zu does not fit", round, who, x.cluster);
    total += x.nodes;
  }
  EQ(total, r.nodes);
}

START_TEST(random_against_brute_force) {
  int found = 0, split = 0;
  for (int round = 0; round < 2000; ++round) {
    std::size_t n = static_cast<std::size_t>(rnd(1, 4));
    std::vector<ClusterSpec> specs;
    Amount capsum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ClusterSpec c{rnd(1, 8), {}};
      capsum += c.capacity;
      int spans = static_cast<int>(rnd(0, 6));
      for (int k = 0; k < spans; ++k)
        c.busy.push_back({rnd(0, 99), rnd(0, 9) == 0 ? kForever : rnd(1, 50), rnd(1, c.capacity)});
      specs.push_back(c);
    }
    Grid g(specs);
    CoallocRequest r = req(rnd(1, capsum), rnd(1, 30));
    r.ready = rnd(0, 50);
    const double overheads[] = {0.0, 0.1, 0.5, 1.0};
    r.overhead = overheads[rnd(0, 3)];
    r.max_parts = static_cast<std::size_t>(rnd(0, static_cast<std::int64_t>(n)));
    if (rnd(0, 3) == 0) {
      r.allowed.assign(n, true);
      r.allowed[static_cast<std::size_t>(rnd(0, static_cast<std::int64_t>(n) - 1))] = false;
      if (n == 1) r.allowed[0] = true;
    }
    Duration dm = r.runtime + coalloc_overhead(r);
    std::size_t limit = r.max_parts == 0 ? n : r.max_parts;
    Time best = kForever;
    for (Time t = r.ready; t <= 300 && t < best; ++t) {
      std::vector<Amount> m;
      for (std::size_t i = 0; i < n; ++i) {
        if (!r.allowed.empty() && !r.allowed[i]) continue;
        if (g.profiles[i].min_over(t, r.runtime).value() >= r.nodes)
          best = std::min(best, t + r.runtime);
        m.push_back(std::max<Amount>(0, g.profiles[i].min_over(t, dm).value()));
      }
      std::sort(m.rbegin(), m.rend());
      Amount top = 0;
      for (std::size_t k = 0; k < m.size() && k < limit; ++k) top += m[k];
      if (limit >= 2 && top >= r.nodes) best = std::min(best, t + dm);
    }
    PlannerState st;
    auto f = plan_flexco(r, g.views, st);
    if (best == kForever) {
      ck_assert_msg(!f.ok(), "round %d: flexco found a plan where none exists", round);
      EQ(static_cast<int>(f.error().code), static_cast<int>(Errc::kNoFit));
      continue;
    }
    ++found;
    ck_assert_msg(f.ok(), "round %d: flexco: %s", round,
                  f.ok() ? "" : f.error().message.c_str());
    check_feasible("flexco", round, f.value(), r, g.views);
    ck_assert_msg(f.value().end() == best, "round %d: flexco ends %" PRId64 ", best %" PRId64,
                  round, f.value().end(), best);
    if (f.value().split()) ++split;
    for (Policy pol : {Policy::kCoarp, Policy::kHpcm, Policy::kCores}) {
      auto p = plan_coalloc(pol, r, g.views, st);
      if (pol == Policy::kHpcm && !p.ok()) continue;  // capacity-filled schemes may never fit
      ck_assert_msg(p.ok(), "round %d: %s: %s", round, policy_name(pol),
                    p.ok() ? "" : p.error().message.c_str());
      check_feasible(policy_name(pol), round, p.value(), r, g.views);
      ck_assert(p.value().end() >= best);
      if (pol == Policy::kCoarp && r.max_parts == 0)
        ck_assert_msg(p.value().end() == best, "round %d: coarp ends %" PRId64 ", best %" PRId64,
                      round, p.value().end(), best);
    }
    // Rescheduling a plan an hour late finds the best end again.
    CoallocPlan late = f.value();
    late.start += 3600;
    auto d = reschedule_coalloc(r, late, g.views, r.ready);
    OK(d);
    ck_assert(d.value().kind != RescheduleKind::kNone);
    EQ(d.value().plan.end(), best);
    check_feasible("reschedule", round, d.value().plan, r, g.views);
  }
  // The generator must exercise both outcomes.
  ck_assert_msg(found > 1000 && split > 150, "found %d, split %d", found, split);
}
END_TEST

// ---------------------------------------------------------------------------
// Validation, through every policy

struct BadCase {
  const char* expect;
  void (*mutate)(CoallocRequest&, std::vector<ClusterView>&, CoallocOptions&);
};
const BadCase kBadCases[] = {
    {"request.nodes must be in [1, 2^52] (got 0)",
     [](CoallocRequest& r, std::vector<ClusterView>&, CoallocOptions&) { r.nodes = 0; }},
    {"request.runtime must be in [1, 2^52] s (got 0)",
     [](CoallocRequest& r, std::vector<ClusterView>&, CoallocOptions&) { r.runtime = 0; }},
    {"request.ready must be in [0, forever) (got -5)",
     [](CoallocRequest& r, std::vector<ClusterView>&, CoallocOptions&) { r.ready = -5; }},
    {"request.deadline must be after request.ready (deadline 10, ready 10)",
     [](CoallocRequest& r, std::vector<ClusterView>&, CoallocOptions&) {
       r.ready = 10;
       r.deadline = 10;
     }},
    {"request.overhead must be in [0, 10] (got -0.5)",
     [](CoallocRequest& r, std::vector<ClusterView>&, CoallocOptions&) { r.overhead = -0.5; }},
    {"request.overhead must be in [0, 10] (got nan)",
     [](CoallocRequest& r, std::vector<ClusterView>&, CoallocOptions&) { r.overhead = NAN; }},
    {"no clusters given",
     [](CoallocRequest&, std::vector<ClusterView>& v, CoallocOptions&) { v.clear(); }},
    {"request.allowed has 1 entries for 2 clusters",
     [](CoallocRequest& r, std::vector<ClusterView>&, CoallocOptions&) { r.allowed = {true}; }},
    {"request.allowed allows no cluster",
     [](CoallocRequest& r, std::vector<ClusterView>&, CoallocOptions&) {
       r.allowed = {false, false};
     }},
    {"cluster 1 (B): free profile is null",
     [](CoallocRequest&, std::vector<ClusterView>& v, CoallocOptions&) { v[1].free = nullptr; }},
    {"cluster 1 (B): free profile is shared with another cluster",
     [](CoallocRequest&, std::vector<ClusterView>& v, CoallocOptions&) { v[1].free = v[0].free; }},
    {"cluster 0 (A): capacity must be in [0, 2^52] (got -1)",
     [](CoallocRequest&, std::vector<ClusterView>& v, CoallocOptions&) { v[0].capacity = -1; }},
    {"cluster 0 (A): arrival_rate 0.5 needs service_rate > 0",
     [](CoallocRequest&, std::vector<ClusterView>& v, CoallocOptions&) {
       v[0].arrival_rate = 0.5;
     }},
    {"cluster 1 (B): speed must be finite and > 0 (got 0)",
     [](CoallocRequest&, std::vector<ClusterView>& v, CoallocOptions&) { v[1].speed = 0; }},
    {"cluster 0 (A): offer 0: needs 0 <= start < end (start 5, end 5)",
     [](CoallocRequest&, std::vector<ClusterView>& v, CoallocOptions&) {
       v[0].offers = {{5, 5, 1, 1, 1}};
     }},
    {"cluster 0 (A): offer 1: fit must be in [0, 1] (got 1.5)",
     [](CoallocRequest&, std::vector<ClusterView>& v, CoallocOptions&) {
       v[0].offers = {{0, 5, 1, 1, 1}, {0, 5, 1, 1.5, 1}};
     }},
};

START_TEST(invalid_inputs) {
  const BadCase& c = kBadCases[_i];
  Grid g({{10, {}}, {10, {}}});
  for (Policy pol : {Policy::kFlexCo, Policy::kCoarp, Policy::kHpcm, Policy::kCores}) {
    CoallocRequest r = req(4, 100);
    std::vector<ClusterView> v = g.views;
    CoallocOptions o;
    c.mutate(r, v, o);
    PlannerState st;
    st.next_first = 1;
    auto p = plan_coalloc(pol, r, v, st, o);
    ck_assert_msg(!p.ok(), "%s accepted: %s", policy_name(pol), c.expect);
    EQ(static_cast<int>(p.error().code), static_cast<int>(Errc::kInvalidArgument));
    HAS(p.error().message, c.expect);
    HAS(p.error().message, (std::string("plan_") + policy_name(pol) + ": ").c_str());
    EQ(st.next_first, 1);
  }
}
END_TEST

struct BadOptionCase {
  const char* expect;
  void (*mutate)(CoallocOptions&);
};
const BadOptionCase kBadOptionCases[] = {
    {"options.cores_w_fit must be finite and >= 0 (got -1)",
     [](CoallocOptions& o) { o.cores_w_fit = -1; }},
    {"options.p_res_h must be finite and > 0 (got 0)", [](CoallocOptions& o) { o.p_res_h = 0; }},
    {"options.max_offers must be in [1, 100000] (got 0)",
     [](CoallocOptions& o) { o.max_offers = 0; }},
    {"options.now must be -1 or a time (got -2)", [](CoallocOptions& o) { o.now = -2; }},
};

START_TEST(invalid_options) {
  const BadOptionCase& c = kBadOptionCases[_i];
  Grid g(std::vector<ClusterSpec>{{10, {}}});
  CoallocOptions o;
  c.mutate(o);
  for (Policy pol : {Policy::kCoarp, Policy::kHpcm, Policy::kCores}) {
    PlannerState st;
    auto p = plan_coalloc(pol, req(1, 1), g.views, st, o);
    ck_assert(!p.ok());
    HAS(p.error().message, c.expect);
  }
}
END_TEST

#define N(a) static_cast<int>(sizeof(a) / sizeof((a)[0]))

Suite* coalloc_suite() {
  Suite* s = suite_create("coalloc");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, policy_names);
  tcase_add_test(tc, overhead_rounding);
  tcase_add_test(tc, flexco_single_rotation);
  tcase_add_loop_test(tc, flexco_forced_split, 0, N(kSplitCases));
  tcase_add_loop_test(tc, flexco_overhead_only_when_split, 0, N(kOverheadCases));
  tcase_add_test(tc, flexco_split_at_change_point);
  tcase_add_test(tc, flexco_sum_is_only_a_bound);
  tcase_add_test(tc, flexco_deadline_and_never);
  tcase_add_test(tc, flexco_allowed_and_max_parts);
  tcase_add_test(tc, coarp_composition_order);
  tcase_add_test(tc, coarp_whole_slot_and_split);
  tcase_add_test(tc, coarp_explicit_offers);
  tcase_add_test(tc, coarp_profiles_change_point);
  tcase_add_test(tc, coarp_paper_offers_by_hand);
  tcase_add_test(tc, coarp_probe_offers_from_profiles);
  tcase_add_test(tc, coarp_offers_run_out);
  tcase_add_loop_test(tc, hpcm_site_values, 0, N(kSiteCases));
  tcase_add_test(tc, hpcm_plan_probability_is_product);
  tcase_add_test(tc, hpcm_choice);
  tcase_add_test(tc, hpcm_probability_beats_end);
  tcase_add_test(tc, hpcm_round_robin_tie);
  tcase_add_test(tc, hpcm_deterministic);
  tcase_add_test(tc, hpcm_learned_rates_by_hand);
  tcase_add_test(tc, hpcm_rate_learner);
  tcase_add_test(tc, cores_order_and_objective);
  tcase_add_loop_test(tc, cores_weights, 0, N(kCoresWeightCases));
  tcase_add_test(tc, cores_static_p_res);
  tcase_add_test(tc, cores_split_on_probe_offers);
  tcase_add_test(tc, cores_seq_threshold_on_fit);
  tcase_add_test(tc, cores_seq_threshold_on_static_p_res);
  tcase_add_test(tc, cores_example_11_1);
  tcase_add_loop_test(tc, cores_algorithm_2, 0, N(kAllocCases));
  tcase_add_test(tc, cores_allocate_bounds);
  tcase_add_loop_test(tc, reschedule_decision, 0, N(kReschedCases));
  tcase_add_test(tc, reschedule_no_gain_and_errors);
  tcase_add_test(tc, reschedule_pass_order);
  tcase_add_test(tc, random_against_brute_force);
  tcase_add_loop_test(tc, invalid_inputs, 0, N(kBadCases));
  tcase_add_loop_test(tc, invalid_options, 0, N(kBadOptionCases));
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(coalloc_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
