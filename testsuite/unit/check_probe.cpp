// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests for src/core/probe and capi_probe: synthetic snapshots with
// hand-computed offers (starts, fit, p_res), the distributions, caps, bad
// requests and the C API round trip.  Expected values are derived in the
// comments; T is the snapshot time.

#include <jansson.h>

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/capi_probe.h"
#include "core/probe.hpp"
#include "core/cluster_snapshot.h"

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

#define NEAR(a, b)                                                                             \
  do {                                                                                         \
    double a_ = (a), b_ = (b);                                                                 \
    if (!(std::fabs(a_ - b_) <= 1e-12))                                                        \
      ck_abort_msg("line %d: %s == %.17g, expected %.17g", __LINE__, #a, a_, b_);             \
  } while (0)

#define HAS(msg, part)                                                                      \
  ck_assert_msg(std::string(msg).find(part) != std::string::npos,                           \
                "line %d: message \"%s\" lacks \"%s\"", __LINE__, std::string(msg).c_str(), \
                std::string(part).c_str())

constexpr std::int64_t T = 1000000;
const char* const kNames[] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};

// A snapshot of one partition "batch" over n nodes (n <= 8), all available.
struct Snap {
  std::vector<flexco_snap_node_t> nodes;
  std::vector<flexco_snap_job_t> jobs;
  std::vector<flexco_snap_resv_t> resvs;
  std::vector<flexco_snap_part_t> parts;
  std::vector<std::uint32_t> idx;
  flexco_snapshot_t s{};

  explicit Snap(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i) nodes.push_back({kNames[i], 8, 1});
    parts.push_back({"batch", FLEXCO_SNAP_FOREVER, 1, 1, add_nodes(0, n), n});
  }
  std::uint32_t add_nodes(std::uint32_t first, std::uint32_t cnt) {
    auto off = static_cast<std::uint32_t>(idx.size());
    for (std::uint32_t i = 0; i < cnt; ++i) idx.push_back(first + i);
    return off;
  }
  flexco_snap_job_t job(std::uint32_t id, std::uint32_t kind, std::int64_t start,
                        std::int64_t end, std::int64_t limit, std::uint32_t nn,
                        std::uint32_t prio, std::uint32_t first) {
    flexco_snap_job_t j{};
    j.job_id = id;
    j.user_id = 1000;
    j.kind = kind;
    j.start = start;
    j.end = end;
    j.time_limit = limit;
    j.min_nodes = nn;
    j.priority = prio;
    j.partition = "batch";
    j.resv_name = nullptr;
    if (kind != FLEXCO_JOB_PENDING) {
      j.node_off = add_nodes(first, nn);
      j.node_cnt = nn;
    }
    return j;
  }
  void running(std::uint32_t id, std::uint32_t first, std::uint32_t nn, std::int64_t start,
               std::int64_t end) {
    jobs.push_back(job(id, FLEXCO_JOB_RUNNING, start, end, end - start, nn, 0, first));
  }
  void planned(std::uint32_t id, std::uint32_t nn, std::int64_t start, std::int64_t limit,
               std::uint32_t prio) {
    jobs.push_back(job(id, FLEXCO_JOB_PLANNED, start, start + limit, limit, nn, prio, 0));
  }
  void pending(std::uint32_t id, std::uint32_t nn, std::int64_t limit, std::uint32_t prio) {
    jobs.push_back(job(id, FLEXCO_JOB_PENDING, 0, 0, limit, nn, prio, 0));
  }
  void resv(const char* name, std::uint32_t first, std::uint32_t nn, std::int64_t start,
            std::int64_t end) {
    resvs.push_back({name, start, end, 0, "root", add_nodes(first, nn), nn});
  }
  const flexco_snapshot_t& get() {
    s.cluster = "alpha";
    s.when = T;
    s.bf_last_cycle = T - 30;
    s.bf_active = 0;
    s.nodes = nodes.data();
    s.node_count = static_cast<std::uint32_t>(nodes.size());
    s.jobs = jobs.data();
    s.job_count = static_cast<std::uint32_t>(jobs.size());
    s.resvs = resvs.data();
    s.resv_count = static_cast<std::uint32_t>(resvs.size());
    s.parts = parts.data();
    s.part_count = static_cast<std::uint32_t>(parts.size());
    s.node_idx = idx.data();
    s.node_idx_count = static_cast<std::uint32_t>(idx.size());
    return s;
  }
};

ProbeRequest parse_ok(const std::string& body) {
  auto r = parse_probe_request(body);
  if (auto* e = std::get_if<ProbeError>(&r))
    ck_abort_msg("parse of %s failed: %s", body.c_str(), e->message.c_str());
  return std::get<ProbeRequest>(r);
}

ProbeResult run(Snap& snap, const std::string& body, const ProbePolicy& policy = {}) {
  auto r = probe(snap.get(), parse_ok(body), 100, 60, policy);
  if (auto* e = std::get_if<ProbeError>(&r))
    ck_abort_msg("probe %s failed: %s", body.c_str(), e->message.c_str());
  return std::get<ProbeResult>(r);
}

double pres(std::int64_t bat) { return 1.0 - std::exp(-static_cast<double>(bat) / 11386.0); }

// Expected offers: (start - T, end - T, nodes).
struct Want {
  std::int64_t start, end, nodes;
};
void expect_offers(const ProbeResult& r, const std::vector<Want>& want, int line) {
  if (r.offers.size() != want.size())
    ck_abort_msg("line %d: %zu offers, expected %zu", line, r.offers.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Offer& o = r.offers[i];
    if (o.start != T + want[i].start || o.end != T + want[i].end || o.nodes != want[i].nodes)
      ck_abort_msg("line %d: offer %zu is (T%+" PRId64 ", T%+" PRId64 ", %" PRId64
                   "), expected (T%+" PRId64 ", T%+" PRId64 ", %" PRId64 ")",
                   line, i, o.start - T, o.end - T, o.nodes, want[i].start, want[i].end,
                   want[i].nodes);
    NEAR(o.p_res, pres(o.start - T));
    EQ(o.valid_until, T + 60);
  }
}

// ---------------------------------------------------------------------------

START_TEST(idle_cluster) {
  // 4 idle nodes, nothing queued: one change point (T), N = 0 jobs -> fit 1,
  // p_res = 1 - e^0 = 0.
  Snap s(4);
  auto r = run(s, R"({"nodes":2,"duration":100})");
  expect_offers(r, {{0, 100, 2}}, __LINE__);
  NEAR(r.offers[0].fit, 1.0);
  NEAR(r.offers[0].p_res, 0.0);
  ck_assert(r.offers[0].verdict == FitVerdict::kPlaced);
  ck_assert(r.partition == "batch" && r.cluster == "alpha");
  EQ(r.snapshot_time, T);
  EQ(r.bf_last_cycle, T - 30);
  EQ(r.horizon_end, T + 7 * 86400);
}
END_TEST

START_TEST(running_job_event_starts) {
  // Job 1 holds n0,n1 until T+300, and through that second (Slurm
  // refuses a reservation starting at a running job's end_time).
  // 4 nodes x 100 s: only from T+301.  2 nodes: at T (2 free) and at the
  // change point T+301 (4 free).
  Snap s(4);
  s.running(1, 0, 2, T - 50, T + 300);
  auto r4 = run(s, R"({"nodes":4,"duration":100})");
  expect_offers(r4, {{301, 401, 4}}, __LINE__);
  NEAR(r4.offers[0].fit, 1.0);  // nothing queued: every plan equal
  NEAR(r4.offers[0].p_res, 1.0 - std::exp(-301.0 / 11386.0));
  auto r2 = run(s, R"({"nodes":2,"duration":100})");
  expect_offers(r2, {{0, 100, 2}, {301, 401, 2}}, __LINE__);
}
END_TEST

START_TEST(planned_job_delayed) {
  // 4 nodes.  A (pending, no plan, prio 10): 2 nodes x 100.  B (planned by
  // backfill at T+300, stale; prio 5): 4 nodes x 100.  Availability: 4 free
  // on [T, T+300), 0 on [T+300, T+400), 4 after.  Request 2 x 150:
  // event offers at T and T+400.
  // P^ORG: A [0,100), B [100,200): C_max = 200, C_avg = (100+200)/2 = 150.
  // Slot [0,150): A [0,100), B [150,250): C_max 250, C_avg 175.
  // Slot [400,550): as P^ORG.  C* = 200 / 150.
  // fit(T) = 0.1*200/250 + 0.9*150/175; fit(T+400) = 1.
  Snap s(4);
  s.pending(11, 2, 100, 10);
  s.planned(12, 4, T + 300, 100, 5);
  auto r = run(s, R"({"nodes":2,"duration":150})");
  expect_offers(r, {{0, 150, 2}, {400, 550, 2}}, __LINE__);
  NEAR(r.offers[0].fit, 0.1 * 200.0 / 250.0 + 0.9 * 150.0 / 175.0);
  NEAR(r.offers[1].fit, 1.0);
  EQ(r.offers[0].head_delay, 0);
  EQ(static_cast<std::int64_t>(r.queue_considered), 2);
  // P^JOB: 2 x 150 queued behind A [0,100) and B [100,200) starts at T+200.
  EQ(r.job_nodes, 2);
  EQ(r.job_start, T + 200);
}
END_TEST

START_TEST(head_delayed) {
  // 4 idle nodes, A pending 4 nodes x 100.  Offer 2 x 50 at T pushes A to
  // T+50: with the thesis' rule (bound 0) fit 0 "head-delayed"; with a bound
  // of 100 s it is placed: C_max/C_avg 100 -> 150, fit = 100/150 = 2/3.
  Snap s(4);
  s.pending(21, 4, 100, 1);
  auto r = run(s, R"({"nodes":2,"duration":50})");
  expect_offers(r, {{0, 50, 2}}, __LINE__);
  ck_assert(r.offers[0].verdict == FitVerdict::kHeadDelayed);
  NEAR(r.offers[0].fit, 0.0);
  EQ(r.offers[0].head_delay, 50);
  ProbePolicy p;
  p.fitness.max_head_delay = 100;
  auto r2 = run(s, R"({"nodes":2,"duration":50})", p);
  ck_assert(r2.offers[0].verdict == FitVerdict::kPlaced);
  NEAR(r2.offers[0].fit, 2.0 / 3.0);
}
END_TEST

START_TEST(collision) {
  // Offers come from the free published profile, so the planner sees a
  // collision only when the snapshot counts nodes twice for it: job 31 runs
  // on n0,n1 without naming reservation "maint" on the same nodes.  The
  // availability (a union per node) shows 2 free; the planner 4 - 2 - 2 = 0.
  Snap s(4);
  s.running(31, 0, 2, T - 10, T + 1000);
  s.resv("maint", 0, 2, T - 10, T + 1000);
  auto r = run(s, R"({"nodes":2,"duration":100})");
  ck_assert(!r.offers.empty());
  EQ(r.offers[0].start, T);
  ck_assert(r.offers[0].verdict == FitVerdict::kCollision);
  NEAR(r.offers[0].fit, 0.0);
  // Naming the reservation removes the double count.
  s.jobs[0].resv_name = "maint";
  auto r2 = run(s, R"({"nodes":2,"duration":100})");
  ck_assert(r2.offers[0].verdict == FitVerdict::kPlaced);
}
END_TEST

START_TEST(node_range_and_list) {
  Snap s(4);
  auto r = run(s, R"({"nodes":{"min":1,"max":3},"duration":100})");
  expect_offers(r, {{0, 100, 1}, {0, 100, 2}, {0, 100, 3}}, __LINE__);
  auto l = run(s, R"({"nodes":[3,1,3],"duration":100})");
  expect_offers(l, {{0, 100, 1}, {0, 100, 3}}, __LINE__);
  // 5 nodes on a 4-node partition: no offer.
  auto none = run(s, R"({"nodes":5,"duration":100})");
  EQ(static_cast<std::int64_t>(none.offers.size()), 0);
  // A wide range: 8 levels ceil(100^(m/7)).
  auto q = parse_ok(R"({"nodes":{"min":1,"max":100},"duration":10})");
  std::vector<Amount> want{1, 2, 4, 8, 14, 27, 52, 100};
  ck_assert(q.nodes == want);
}
END_TEST

START_TEST(amdahl_duration) {
  // Digest §5.3 check: dur_ref 1800 s on 16, s = 0.01: dur(128) = 444.
  auto q = parse_ok(
      R"({"nodes":[16,128],"duration":{"speedup":"amdahl","serial_fraction":0.01,)"
      R"("base_nodes":16,"base_duration":1800}})");
  EQ(q.duration_for(16), 1800);
  EQ(q.duration_for(128), 444);
}
END_TEST

START_TEST(even_distribution) {
  // est T+100, latest_end T+1100, 2 x 100, K = 5: last start T+1000,
  // t_k = 100 + floor(k * 900 / 4) = 100, 325, 550, 775, 1000.  Job 41 holds
  // all 4 nodes until T+400: 100 and 325 are not free and are dropped.
  Snap s(4);
  auto r = run(s,
               R"({"nodes":2,"duration":100,"earliest_start":1000100,"latest_end":1001100,)"
               R"("max_offers":5,"distribution":"even"})");
  expect_offers(r, {{100, 200, 2}, {325, 425, 2}, {550, 650, 2}, {775, 875, 2}, {1000, 1100, 2}},
                __LINE__);
  EQ(r.horizon_end, T + 1100);
  Snap b(4);
  b.running(41, 0, 4, T - 10, T + 400);
  auto r2 = run(b,
                R"({"nodes":2,"duration":100,"earliest_start":1000100,"latest_end":1001100,)"
                R"("max_offers":5,"distribution":"even"})");
  expect_offers(r2, {{550, 650, 2}, {775, 875, 2}, {1000, 1100, 2}}, __LINE__);
}
END_TEST

START_TEST(corner_distribution) {
  // nodes 1..4, Amdahl s = 0.5 from 1000 s on 1 node: dur(1) = 1000,
  // dur(4) = 1000 * 0.625 = 625.  latest_end T+5000.  Corners:
  // (T,1), (T,4), (T+5000-1000,1), (T+5000-625,4).
  Snap s(4);
  auto r = run(s,
               R"({"nodes":{"min":1,"max":4},"duration":{"speedup":"amdahl",)"
               R"("serial_fraction":0.5,"base_nodes":1,"base_duration":1000},)"
               R"("latest_end":1005000,"distribution":"corner"})");
  expect_offers(r, {{0, 1000, 1}, {0, 625, 4}, {4000, 5000, 1}, {4375, 5000, 4}}, __LINE__);
}
END_TEST

START_TEST(max_offers_and_latest_end) {
  // Four 1-node jobs end at T+100..T+400, so the 1-node change points are
  // T+101, T+201, T+301, T+401 (each node is free after its job's end
  // second).
  Snap s(4);
  for (std::uint32_t i = 0; i < 4; ++i) s.running(50 + i, i, 1, T - 10, T + 100 * (i + 1));
  auto all = run(s, R"({"nodes":1,"duration":50})");
  expect_offers(all, {{101, 151, 1}, {201, 251, 1}, {301, 351, 1}, {401, 451, 1}}, __LINE__);
  auto two = run(s, R"({"nodes":1,"duration":50,"max_offers":2})");
  expect_offers(two, {{101, 151, 1}, {201, 251, 1}}, __LINE__);
  // latest_end T+300: a start at T+301 would end at T+351.
  auto le = run(s, R"({"nodes":1,"duration":50,"latest_end":1000300})");
  expect_offers(le, {{101, 151, 1}, {201, 251, 1}}, __LINE__);
  // earliest_start T+250: 1 node is free from T+101, so the first offer is
  // T+250 itself, then the change points T+301 and T+401.
  auto es = run(s, R"({"nodes":1,"duration":50,"earliest_start":1000250})");
  expect_offers(es, {{250, 300, 1}, {301, 351, 1}, {401, 451, 1}}, __LINE__);
}
END_TEST

START_TEST(queue_cap) {
  Snap s(4);
  s.pending(61, 1, 100, 5);
  s.pending(62, 1, 100, 9);
  s.pending(63, 9, 100, 9);  // larger than the partition: left out
  s.pending(64, 1, 100, 0);  // held (priority 0): left out
  ProbePolicy p;
  p.max_queue = 1;
  auto r = run(s, R"({"nodes":1,"duration":10})", p);
  EQ(static_cast<std::int64_t>(r.queue_considered), 1);
  ck_assert(r.queue_truncated);
  auto r2 = run(s, R"({"nodes":1,"duration":10})");
  EQ(static_cast<std::int64_t>(r2.queue_considered), 2);
  ck_assert(!r2.queue_truncated);
}
END_TEST

START_TEST(p_res_static_values) {
  // Digest §5.4.1: h = 11386, 6 h book-ahead -> 0.84999.
  ck_assert(std::fabs(p_res_static(T + 21600, T, 11386.0) - 0.84999) < 1e-5);
  NEAR(p_res_static(T - 5, T, 11386.0), 0.0);
}
END_TEST

struct BadCase {
  const char* body;
  const char* code;
  const char* message_part;
};
const BadCase kBad[] = {
    {R"({"nodes":1,"duration":10,"foo":1})", "bad_request", "unknown field \"foo\""},
    {R"({"nodes":0,"duration":10})", "bad_request", "nodes: 0 is out of range"},
    {R"({"nodes":1})", "bad_request", "duration: required"},
    {R"({"duration":10})", "bad_request", "nodes: required"},
    {R"({"nodes":1,"duration":0})", "bad_request", "duration: 0 is out of range"},
    {R"({"nodes":1,"duration":10,"distribution":"weird"})", "bad_request",
     "distribution: \"weird\" is not one of"},
    {R"({"nodes":1,"duration":10,"will_run":"yes"})", "bad_request",
     "will_run: must be true or false"},
    {R"({"nodes":1,"duration":10,"p_res_method":"magic"})", "bad_request", "p_res_method"},
    {R"({"nodes":{"min":3,"max":2},"duration":10})", "bad_request", "max 2 is less than min 3"},
    {R"({"nodes":{"min":1,"max":2,"step":1},"duration":10})", "bad_request",
     "nodes: unknown field \"step\""},
    {R"({"nodes":[],"duration":10})", "bad_request", "nodes: the list is empty"},
    {R"({"nodes":[1,"2"],"duration":10})", "bad_request", "nodes[1]: must be an integer"},
    {R"({"nodes":1,"duration":10,"max_offers":65})", "bad_request", "max_offers: 65"},
    {R"({"nodes":1,"duration":10,"earliest_start":500,"latest_end":400})", "bad_request",
     "latest_end: must be after earliest_start"},
    {R"({"nodes":1,"duration":{"speedup":"downey"}})", "bad_request", "duration.speedup"},
    {R"({"nodes":1,"duration":10)", "bad_request", "invalid JSON"},
    {R"([1])", "bad_request", "must be a JSON object"},
    {R"({"nodes":1,"duration":10,"partition":7})", "bad_request", "partition: must be a string"},
};

START_TEST(bad_requests) {
  for (const BadCase& c : kBad) {
    auto r = parse_probe_request(c.body);
    auto* e = std::get_if<ProbeError>(&r);
    ck_assert_msg(e != nullptr, "%s: accepted", c.body);
    EQ(e->status, 400);
    ck_assert_msg(e->code == c.code, "%s: code %s", c.body, e->code.c_str());
    HAS(e->message, c.message_part);
  }
}
END_TEST

START_TEST(bad_probe_values) {
  Snap s(4);
  auto un = probe(s.get(), parse_ok(R"({"nodes":1,"duration":10,"partition":"gpu"})"), 100, 60);
  auto* e = std::get_if<ProbeError>(&un);
  ck_assert(e != nullptr);
  EQ(e->status, 404);
  ck_assert(e->code == "unknown_partition");
  // latest_end before the snapshot time.
  auto past = probe(s.get(), parse_ok(R"({"nodes":1,"duration":10,"latest_end":10})"), 100, 60);
  ck_assert(std::get_if<ProbeError>(&past) != nullptr);
  EQ(std::get<ProbeError>(past).status, 400);
  // Beyond 366 days.
  auto far = probe(s.get(), parse_ok(R"({"nodes":1,"duration":10,"latest_end":99000000})"), 100,
                   60);
  ck_assert(std::get_if<ProbeError>(&far) != nullptr);
  EQ(std::get<ProbeError>(far).status, 400);
}
END_TEST

START_TEST(published_share) {
  // 4 nodes, share 50 %: published 2, so 3 nodes never fit; 2 do at T.
  Snap s(4);
  auto r = probe(s.get(), parse_ok(R"({"nodes":[2,3],"duration":10})"), 50, 60);
  const auto& res = std::get<ProbeResult>(r);
  EQ(static_cast<std::int64_t>(res.offers.size()), 1);
  EQ(res.offers[0].nodes, 2);
}
END_TEST

START_TEST(p_res_history_values) {
  // 4 idle nodes; the history says 4 nodes were idle at this time of day
  // (two records a day apart), so H = 4 for a slot starting at T:
  //   1 node: 2*1 <= 4 -> 1;  3 nodes: 2 - 6/4 = 0.5;  4 nodes: 2 - 8/4 = 0.
  Snap s(4);
  auto hs = IdleHistories::create(86400, 300).value();
  ck_assert(hs.record("batch", T - 86400, 4).ok());
  ck_assert(hs.record("batch", T - 2 * 86400, 4).ok());
  auto r = probe(s.get(), parse_ok(R"({"nodes":[1,3,4],"duration":100,"p_res_method":"history"})"),
                 100, 60, ProbePolicy{}, &hs);
  const auto& res = std::get<ProbeResult>(r);
  ck_assert(res.p_res_method == PResMethod::kHistory);
  EQ(static_cast<std::int64_t>(res.history_records), 2);
  EQ(res.history_first, T - 2 * 86400);
  EQ(static_cast<std::int64_t>(res.offers.size()), 3);
  NEAR(res.offers[0].p_res, 1.0);
  NEAR(res.offers[1].p_res, 0.5);
  NEAR(res.offers[2].p_res, 0.0);
  for (const auto& o : res.offers) ck_assert(o.p_res_source == PResMethod::kHistory);

  // Records only half a day away from T's time of day: no bucket covers the
  // slot, so p_res falls back to static (0 for a slot starting now).
  auto other = IdleHistories::create(86400, 300).value();
  ck_assert(other.record("batch", T + 43200, 4).ok());
  auto r2 = probe(s.get(), parse_ok(R"({"nodes":1,"duration":100,"p_res_method":"history"})"),
                  100, 60, ProbePolicy{}, &other);
  const auto& res2 = std::get<ProbeResult>(r2);
  ck_assert(res2.offers[0].p_res_source == PResMethod::kStatic);
  NEAR(res2.offers[0].p_res, 0.0);
  // No histories at all: the same fallback, and the JSON says so.
  auto r3 = probe(s.get(), parse_ok(R"({"nodes":1,"duration":100,"p_res_method":"history"})"),
                  100, 60);
  const auto& res3 = std::get<ProbeResult>(r3);
  EQ(static_cast<std::int64_t>(res3.history_records), 0);
  std::string js = probe_result_to_json(res3);
  HAS(js, "\"p_res_method\":\"history\"");
  HAS(js, "\"p_res_source\":\"static\"");
  HAS(js, "\"history\":{\"records\":0,\"first\":null,\"last\":null}");
}
END_TEST

START_TEST(will_run_params_and_answer) {
  flexco_will_run_params_t wp{};
  std::string no = R"({"nodes":2,"duration":100})";
  EQ(flexco_probe_will_run_params(no.data(), no.size(), &wp), 0);
  std::string bad = R"({"nodes":2,"duration":100,"will_run":1})";
  EQ(flexco_probe_will_run_params(bad.data(), bad.size(), &wp), 0);
  std::string yes =
      R"({"nodes":[3,2],"duration":125,"will_run":true,"partition":"batch","earliest_start":7})";
  EQ(flexco_probe_will_run_params(yes.data(), yes.size(), &wp), 1);
  EQ(wp.nodes, 2);  // the smallest node count asked
  EQ(wp.duration, 125);
  EQ(wp.earliest_start, 7);
  ck_assert_str_eq(wp.partition, "batch");

  Snap s(4);
  std::string body = R"({"nodes":2,"duration":100,"will_run":true})";
  flexco_will_run_answer_t wa{};
  wa.ok = 1;
  wa.start = T + 50;
  wa.nodes = 2;
  wa.job_id = 42;
  wa.node_list = "n[0-1]";
  char* out = nullptr;
  char code[32], err[256];
  int st = flexco_probe_json_ex(&s.get(), body.data(), body.size(), 100, 60, nullptr, &wa, &out,
                                code, sizeof code, err, sizeof err);
  EQ(st, 200);
  HAS(out, "\"will_run\":{\"nodes\":2,\"start\":1000050,\"node_list\":\"n[0-1]\",\"job_id\":42}");
  std::free(out);
  flexco_will_run_answer_t wf{};
  wf.ok = 0;
  wf.nodes = 2;
  wf.error = "Requested node configuration is not available";
  st = flexco_probe_json_ex(&s.get(), body.data(), body.size(), 100, 60, nullptr, &wf, &out, code,
                            sizeof code, err, sizeof err);
  EQ(st, 200);
  HAS(out, "\"error\":\"Requested node configuration is not available\"");
  HAS(out, "\"start\":null");
  std::free(out);
  // Not asked: no "will_run" member.
  st = flexco_probe_json_ex(&s.get(), no.data(), no.size(), 100, 60, nullptr, nullptr, &out, code,
                            sizeof code, err, sizeof err);
  EQ(st, 200);
  ck_assert(std::string(out).find("will_run") == std::string::npos);
  std::free(out);
}
END_TEST

struct JsonFree {
  void operator()(json_t* j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonFree>;

START_TEST(capi_round_trip) {
  Snap s(4);
  s.running(1, 0, 2, T - 50, T + 300);
  std::string body = R"({"nodes":4,"duration":100})";
  char* out = nullptr;
  char code[32], err[256];
  int st = flexco_probe_json(&s.get(), body.data(), body.size(), 100, 120, &out, code,
                             sizeof code, err, sizeof err);
  EQ(st, 200);
  ck_assert(out != nullptr);
  ck_assert_str_eq(code, "");
  json_error_t je;
  JsonPtr j(json_loads(out, 0, &je));
  ck_assert_msg(j != nullptr, "invalid JSON: %s", out);
  std::free(out);
  ck_assert_str_eq(json_string_value(json_object_get(j.get(), "partition")), "batch");
  ck_assert_str_eq(json_string_value(json_object_get(j.get(), "distribution")), "event");
  EQ(json_integer_value(json_object_get(j.get(), "snapshot_time")), T);
  json_t* bf = json_object_get(j.get(), "backfill");
  EQ(json_integer_value(json_object_get(bf, "last_cycle")), T - 30);
  EQ(json_integer_value(json_object_get(bf, "plan_age")), 30);
  ck_assert(json_is_false(json_object_get(bf, "active")));
  json_t* offers = json_object_get(j.get(), "offers");
  EQ(static_cast<std::int64_t>(json_array_size(offers)), 1);
  json_t* o = json_array_get(offers, 0);
  EQ(json_integer_value(json_object_get(o, "start")), T + 301);
  EQ(json_integer_value(json_object_get(o, "end")), T + 401);
  EQ(json_integer_value(json_object_get(o, "nodes")), 4);
  EQ(json_integer_value(json_object_get(o, "valid_until")), T + 120);
  NEAR(json_real_value(json_object_get(o, "fit")), 1.0);
  NEAR(json_real_value(json_object_get(o, "p_res")), pres(301));
  ck_assert_str_eq(json_string_value(json_object_get(o, "verdict")), "placed");
  json_t* ref = json_object_get(j.get(), "job_reference");
  EQ(json_integer_value(json_object_get(ref, "start")), T + 300);
  EQ(json_integer_value(json_object_get(json_object_get(j.get(), "queue"), "considered")), 0);

  // Errors: 400 and 404 with a JSON error document.
  std::string badb = R"({"nodes":1,"duration":10,"foo":1})";
  st = flexco_probe_json(&s.get(), badb.data(), badb.size(), 100, 120, &out, code, sizeof code,
                         err, sizeof err);
  EQ(st, 400);
  ck_assert_str_eq(code, "bad_request");
  HAS(err, "unknown field \"foo\"");
  JsonPtr ej(json_loads(out, 0, &je));
  std::free(out);
  ck_assert(ej != nullptr);
  ck_assert_str_eq(
      json_string_value(json_object_get(json_object_get(ej.get(), "error"), "code")),
      "bad_request");
  std::string nf = R"({"nodes":1,"duration":10,"partition":"gpu"})";
  st = flexco_probe_json(&s.get(), nf.data(), nf.size(), 100, 120, &out, code, sizeof code, err,
                         sizeof err);
  EQ(st, 404);
  ck_assert_str_eq(code, "unknown_partition");
  ck_assert(out != nullptr);
  std::free(out);
  st = flexco_probe_json(&s.get(), body.data(), body.size(), 0, 120, &out, code, sizeof code,
                         err, sizeof err);
  EQ(st, 400);
  std::free(out);
  st = flexco_probe_json(nullptr, body.data(), body.size(), 100, 120, &out, nullptr, 0, nullptr,
                         0);
  EQ(st, 500);
  ck_assert(out != nullptr);
  std::free(out);
}
END_TEST

// flexco_probe_json_cached answers only what the snapshot's plan cache
// holds (the plugin answers those in the request thread): 0 and nothing
// planned before a probe planned the partition and its slots, the very
// answer of flexco_probe_json_ex after, and 0 again for a slot not planned.
START_TEST(cached_only_answers) {
  Snap s(4);
  s.running(1, 0, 2, T - 50, T + 300);
  s.pending(2, 3, 200, 10);
  s.pending(3, 1, 100, 5);
  std::string body = R"({"nodes":[1,2],"duration":100})";
  std::string other = R"({"nodes":[1,2],"duration":150})";
  std::string bad = R"({"nodes":1,"duration":10,"foo":1})";
  char code[32], err[256];
  char* out = nullptr;
  auto cached = [&](const std::string& b) {
    return flexco_probe_json_cached(&s.get(), b.data(), b.size(), 100, 60, nullptr, nullptr,
                                    &out, code, sizeof code, err, sizeof err);
  };
  auto full = [&](const std::string& b, std::string& doc) {
    int st = flexco_probe_json_ex(&s.get(), b.data(), b.size(), 100, 60, nullptr, nullptr, &out,
                                  code, sizeof code, err, sizeof err);
    doc = out ? out : "";
    std::free(out);
    out = nullptr;
    return st;
  };
  // No plan cache, or nothing planned on it yet: never answered, not even
  // a bad request (left whole to the full path, parsed once there).
  EQ(cached(body), 0);
  ck_assert(out == nullptr);
  EQ(cached(bad), 0);
  ck_assert(out == nullptr);

  s.s.plan_cache = flexco_plan_cache_create();
  ck_assert(s.s.plan_cache != nullptr);
  EQ(cached(body), 0);
  ck_assert(out == nullptr);
  EQ(cached(bad), 0);
  ck_assert(out == nullptr);
  std::string first, again;
  EQ(full(body, first), 200);
  // Once something is planned, a request error costs no planning: answered.
  EQ(cached(bad), 400);
  ck_assert_str_eq(code, "bad_request");
  std::free(out);
  out = nullptr;
  EQ(cached(body), 200);  // the partition and these slots are planned now
  ck_assert(out != nullptr);
  ck_assert_str_eq(out, first.c_str());
  std::free(out);
  out = nullptr;
  EQ(full(body, again), 200);
  ck_assert_str_eq(again.c_str(), first.c_str());
  // Other slots of the same partition: their fitness is not planned yet.
  EQ(cached(other), 0);
  ck_assert(out == nullptr);
  EQ(full(other, first), 200);
  EQ(cached(other), 200);
  ck_assert_str_eq(out, first.c_str());
  std::free(out);
  flexco_plan_cache_free(s.s.plan_cache);
}
END_TEST

Suite* probe_suite() {
  Suite* s = suite_create("probe");
  TCase* tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, idle_cluster);
  tcase_add_test(tc, running_job_event_starts);
  tcase_add_test(tc, planned_job_delayed);
  tcase_add_test(tc, head_delayed);
  tcase_add_test(tc, collision);
  tcase_add_test(tc, node_range_and_list);
  tcase_add_test(tc, amdahl_duration);
  tcase_add_test(tc, even_distribution);
  tcase_add_test(tc, corner_distribution);
  tcase_add_test(tc, max_offers_and_latest_end);
  tcase_add_test(tc, queue_cap);
  tcase_add_test(tc, p_res_static_values);
  tcase_add_test(tc, p_res_history_values);
  tcase_add_test(tc, will_run_params_and_answer);
  tcase_add_test(tc, bad_requests);
  tcase_add_test(tc, bad_probe_values);
  tcase_add_test(tc, published_share);
  tcase_add_test(tc, capi_round_trip);
  tcase_add_test(tc, cached_only_answers);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(probe_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
