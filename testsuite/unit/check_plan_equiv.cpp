// SPDX-License-Identifier: GPL-2.0-or-later
// The simulator and the daemon plan alike: one situation
// (testsuite/unit/plan_equiv/situation.json: three clusters' GET
// /v1/profile answers, hand-written in that wire format, and a sequence of
// co-allocation requests) is planned through flexco-sim's planning path
// and through flexcod's, for every planner, and the decisions must be
// identical (start, duration, parts with their nodes, fit and p_res, score)
// request after request, each path keeping its own planner state.
//
// Which real components, and what stands in for what:
//   * flexcod: its planning functions (src/flexcod/planning.hpp, which
//     Engine::gather and Engine::plan call): the request with the start
//     slack, the probe body it sends, the views of the clusters' profiles
//     as read from the wire (availability_from_json, as read_profile does)
//     and the offers as read from a probe answer's JSON
//     (offers_from_probe_answer, as gather does).  The plugin that answers
//     the probe is replaced by the same core function the plugin's probe
//     ends in (core/probe.cpp's probe(), via probe_profile on the
//     profile's snapshot; its answer serialised with probe_result_to_json
//     as the plugin sends it).  No HTTP, no slurmctld: a unit test that
//     runs in well under a second, chosen over a grid because the grid
//     would test the transport, not the planning (the integration tests
//     cover that), and could not replay one exact situation.
//   * flexco-sim: its planning functions (src/sim/sim_engine.hpp:
//     meta_request, cluster_view, plan_metajob, which Engine::submit_meta
//     calls), on real LocalSchedulers that hold the situation's busy
//     nodes as reservations (free after the profile's horizon is closed,
//     as the wire profile promises nothing there).  The metajob's estimate
//     is the time limit plus flexcod's start slack: the daemon reserves
//     that much, and the simulator is asked the same question.
//   * HPCM: no cluster has a local history here (flexcod learns no rates
//     yet), so both paths plan with rates 0 (P = 1).
//
// Also flexcod's rule for planning into nodes a job's early end freed
// (local_queue_goes_first), on the same profiles.

#include <jansson.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/coalloc.hpp"
#include "core/local_sched.hpp"
#include "core/offer_probe.hpp"
#include "core/probe.hpp"
#include "core/wire_profile.hpp"
#include "flexcod/planning.hpp"
#include "sim/sim_engine.hpp"

// Last: check.h defines macros that clash with the C++ library.
#include <check.h>

using namespace flexco;

namespace {

struct Situation {
  Time now = 0;
  std::vector<std::string> profiles;  // the wire JSON of each cluster
  std::vector<flexcod::PlanAsk> asks;
};

std::string fixture_path() {
  const char* src = std::getenv("FLEXCO_SRCDIR");
  if (src != nullptr) return std::string(src) + "/testsuite/unit/plan_equiv/situation.json";
  std::string here = __FILE__;
  return here.substr(0, here.rfind('/')) + "/plan_equiv/situation.json";
}

Situation load() {
  Situation s;
  json_error_t err;
  json_t* root = json_load_file(fixture_path().c_str(), 0, &err);
  ck_assert_msg(root != nullptr, "%s: %s", fixture_path().c_str(), err.text);
  s.now = json_integer_value(json_object_get(root, "now"));
  std::size_t i;
  json_t* v;
  json_array_foreach(json_object_get(root, "clusters"), i, v) {
    char* text = json_dumps(v, JSON_COMPACT);
    s.profiles.emplace_back(text);
    std::free(text);
  }
  json_array_foreach(json_object_get(root, "requests"), i, v) {
    flexcod::PlanAsk a;
    a.nodes = json_integer_value(json_object_get(v, "nodes"));
    a.duration = json_integer_value(json_object_get(v, "duration"));
    a.overhead = json_number_value(json_object_get(v, "overhead"));
    a.max_parts = static_cast<int>(json_integer_value(json_object_get(v, "max_parts")));
    a.deadline = json_integer_value(json_object_get(v, "deadline"));
    s.asks.push_back(a);
  }
  json_decref(root);
  ck_assert_uint_eq(s.profiles.size(), 3);
  ck_assert_uint_ge(s.asks.size(), 4);
  return s;
}

// "alpha@1700000600+1980: alpha 10 (fit 1, p_res 0.5) ..." or the error.
std::string describe(const Result<CoallocPlan>& r, const std::vector<ClusterView>& views) {
  if (!r) return "error " + std::to_string(static_cast<int>(r.error().code));
  const CoallocPlan& p = r.value();
  char buf[160];
  std::snprintf(buf, sizeof buf, "start %lld duration %lld score %.17g:", (long long)p.start,
                (long long)p.duration, p.score);
  std::string s = buf;
  for (const PlanPart& x : p.parts) {
    std::snprintf(buf, sizeof buf, " %s %lld (fit %.17g, p_res %.17g)",
                  views[x.cluster].name.c_str(), (long long)x.nodes, x.fit, x.p_res);
    s += buf;
  }
  return s;
}

void check_policy(Policy policy) {
  const Situation s = load();
  const std::string pname = policy_name(policy);

  // flexcod: the profiles as read from the wire.
  std::vector<Availability> avail;
  std::vector<std::string> names;
  for (const std::string& text : s.profiles) {
    auto a = availability_from_json(text);
    ck_assert_msg(a.ok(), "%s", a.ok() ? "" : a.error().message.c_str());
    names.push_back(a.value().cluster);
    avail.push_back(std::move(a).value());
  }
  // flexco-sim: LocalSchedulers holding the busy nodes.
  std::vector<LocalScheduler> sched;
  std::vector<sim::ClusterSpec> specs;
  for (const Availability& a : avail) {
    auto ls = LocalScheduler::create(a.nodes_published, s.now);
    ck_assert(ls.ok());
    std::uint64_t id = 1;
    for (const Step& st : a.steps) {
      if (a.nodes_published - st.free_nodes > 0)
        ck_assert(ls.value()
                      .add_reservation(FixedSpan{id++, st.start, st.end,
                                                 a.nodes_published - st.free_nodes})
                      .ok());
    }
    ck_assert(ls.value()
                  .add_reservation(FixedSpan{id++, a.horizon_end, kForever, a.nodes_published})
                  .ok());
    ck_assert(ls.value().replan().ok());
    sched.push_back(std::move(ls).value());
    specs.push_back(sim::ClusterSpec{a.cluster, a.nodes_published});
  }

  PlannerState daemon_state, sim_state;
  int ok = 0, split = 0;
  for (std::size_t k = 0; k < s.asks.size(); ++k) {
    const flexcod::PlanAsk& ask = s.asks[k];

    // --- flexcod
    const CoallocRequest dreq = flexcod::plan_request(ask, s.now);
    std::vector<std::vector<CoallocOffer>> offers(avail.size());
    if (flexcod::policy_probes(pname)) {
      for (std::size_t c = 0; c < avail.size(); ++c) {
        const std::string body = flexcod::probe_body(ask, avail[c].nodes_published, s.now, "");
        auto answer = probe_profile(avail[c].nodes, avail[c].nodes_published, s.now, body,
                                    names[c]);
        ck_assert_msg(answer.ok(), "%s", answer.ok() ? "" : answer.error().message.c_str());
        auto o = offers_from_probe_answer(probe_result_to_json(answer.value()));
        ck_assert(o.ok());
        ck_assert_msg(!o.value().empty(), "%s: cluster %s offered nothing for request %zu",
                      pname.c_str(), names[c].c_str(), k);
        offers[c] = std::move(o).value();
      }
    }
    const std::vector<ClusterView> dviews = flexcod::plan_views(names, avail, offers);
    auto dplan =
        plan_coalloc(policy, dreq, dviews, daemon_state, flexcod::plan_options(s.now));

    // --- flexco-sim
    sim::Job job;
    job.id = k + 1;
    job.kind = sim::JobKind::kMeta;
    job.submit = s.now;
    job.nodes = ask.nodes;
    job.estimate = ask.duration + flexcod::kStartSlack;
    job.run = job.estimate;
    job.overhead_pct = static_cast<int>(std::lround(ask.overhead * 100.0));
    CoallocRequest sreq = sim::meta_request(job, s.now);
    // The simulator's metajobs have no deadline or part cap of their own;
    // the daemon's come with the request.
    sreq.deadline = dreq.deadline;
    sreq.max_parts = dreq.max_parts;
    ck_assert_int_eq(sreq.nodes, dreq.nodes);
    ck_assert_int_eq(sreq.runtime, dreq.runtime);
    ck_assert_int_eq(sreq.ready, dreq.ready);
    ck_assert_msg(sreq.overhead == dreq.overhead, "overhead %.17g vs %.17g", sreq.overhead,
                  dreq.overhead);
    std::vector<ClusterView> sviews;
    for (std::size_t c = 0; c < sched.size(); ++c)
      sviews.push_back(sim::cluster_view(specs[c], &sched[c].profile(), 0, 0.0, s.now));
    auto splan = sim::plan_metajob(policy, sreq, sviews, s.now, sim_state);

    const std::string d = describe(dplan, dviews), m = describe(splan, sviews);
    ck_assert_msg(d == m, "%s, request %zu: flexcod plans %s; flexco-sim plans %s", pname.c_str(),
                  k, d.c_str(), m.c_str());
    if (dplan) {
      ++ok;
      if (dplan.value().split()) ++split;
    }
  }
  // The situation exercises both kinds of decision for every planner.
  ck_assert_msg(ok >= 3 && split >= 1 && ok - split >= 1,
                "%s: %d plans, %d split: the situation no longer tests much", pname.c_str(), ok,
                split);
}

START_TEST(same_decisions_flexco) { check_policy(Policy::kFlexCo); }
END_TEST
START_TEST(same_decisions_coarp) { check_policy(Policy::kCoarp); }
END_TEST
START_TEST(same_decisions_hpcm) { check_policy(Policy::kHpcm); }
END_TEST
START_TEST(same_decisions_cores) { check_policy(Policy::kCores); }
END_TEST

// Rescheduling after a job ended early (issue 36): flexcod plans into the
// freed nodes only on a profile showing that the cluster's own queue had
// them first -- a backfill cycle begun after the end, and over.  Slurm
// stamps backfill.last_cycle at a cycle's start, so a later stamp alone
// also holds while that cycle still starts or plans the pending jobs.
// alpha's profile from the situation, read from the wire as flexcod reads
// it (availability_from_json), with its backfill state changed.
START_TEST(local_queue_goes_first) {
  const Situation s = load();
  auto alpha = [&](Time last_cycle, bool active) {
    json_t* j = json_loads(s.profiles[0].c_str(), 0, nullptr);
    ck_assert_ptr_nonnull(j);
    json_t* bf = json_object_get(j, "backfill");
    json_object_set_new(bf, "last_cycle", last_cycle ? json_integer(last_cycle) : json_null());
    json_object_set_new(bf, "active", json_boolean(active));
    json_object_set_new(bf, "plan_age", last_cycle ? json_integer(s.now - last_cycle) : json_null());
    char* text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    auto a = availability_from_json(text);
    std::free(text);
    ck_assert_msg(a.ok(), "%s", a ? "" : a.error().message.c_str());
    return std::move(a).value();
  };
  const Time ended = s.now - 10;  // the job_ended_early event's time
  const struct {
    Time last_cycle;
    bool active, went_first;
    const char* what;
  } cases[] = {
      {0, false, false, "backfill never ran"},
      {ended - 5, false, false, "the last cycle began before the end"},
      {ended, false, false, "it began in the second of the end"},
      {ended - 5, true, false, "a cycle is running, the last one began before the end"},
      {ended + 3, true, false, "a cycle begun after the end is still running"},
      {ended + 3, false, true, "a cycle begun after the end is over"},
  };
  for (const auto& c : cases) {
    const Availability a = alpha(c.last_cycle, c.active);
    ck_assert_int_eq(a.bf_last_cycle, c.last_cycle);
    ck_assert_msg(flexcod::local_queue_went_first(a, ended) == c.went_first, "%s: expected %s",
                  c.what, c.went_first ? "its queue went first" : "to wait for its queue");
    ck_assert(flexcod::local_queue_went_first(c.last_cycle, c.active, ended) == c.went_first);
  }
}
END_TEST

}  // namespace

int main() {
  Suite* s = suite_create("plan_equiv");
  TCase* tc = tcase_create("sim_vs_daemon");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, same_decisions_flexco);
  tcase_add_test(tc, same_decisions_coarp);
  tcase_add_test(tc, same_decisions_hpcm);
  tcase_add_test(tc, same_decisions_cores);
  suite_add_tcase(s, tc);
  TCase* tr = tcase_create("reschedule");
  tcase_add_test(tr, local_queue_goes_first);
  suite_add_tcase(s, tr);
  SRunner* sr = srunner_create(s);
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
