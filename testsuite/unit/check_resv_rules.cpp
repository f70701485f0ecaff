// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/resv_rules, the plugin's reservation records:
// the transition table, and the agent's pass over fake records and a fake
// Slurm reservation list -- a takeover with the state loaded fresh, a
// takeover had it loaded a stale copy, a lost state with reservations it
// could not adopt -- without slurmctld.

#include <cstdint>
#include <set>
#include <vector>

#include "service/resv_rules.hpp"

#include <check.h>

#include "check_main.hpp"

namespace svc = flexco::service;
using svc::ResvState;
using svc::TickAction;

START_TEST(names_round_trip) {
  for (int i = 0; i < svc::kResvStates; i++) {
    ResvState s;
    ck_assert(svc::state_from_name(svc::state_name(static_cast<ResvState>(i)), &s));
    ck_assert_int_eq(static_cast<int>(s), i);
  }
  ResvState s;
  ck_assert(!svc::state_from_name("pending", &s));
}
END_TEST

START_TEST(transition_table) {
  using S = ResvState;
  const std::set<std::pair<S, S>> ok = {
      {S::kCreating, S::kCreating},   {S::kCreating, S::kTentative}, {S::kCreating, S::kConfirmed},
      {S::kCreating, S::kDeleted},    {S::kCreating, S::kExpired},   {S::kTentative, S::kConfirmed},
      {S::kTentative, S::kEnded},     {S::kTentative, S::kDeleted},  {S::kTentative, S::kExpired},
      {S::kConfirmed, S::kEnded},     {S::kConfirmed, S::kDeleted},
  };
  for (int f = 0; f < svc::kResvStates; f++) {
    for (int t = 0; t < svc::kResvStates; t++) {
      const bool want = ok.count({static_cast<S>(f), static_cast<S>(t)}) != 0;
      ck_assert_msg(svc::allowed(static_cast<S>(f), static_cast<S>(t)) == want,
                    "%s -> %s", svc::state_name(static_cast<S>(f)), svc::state_name(static_cast<S>(t)));
    }
  }
  // a confirmed reservation never goes back to tentative, nor expires
  ck_assert(!svc::allowed(S::kConfirmed, S::kTentative));
  ck_assert(!svc::allowed(S::kConfirmed, S::kExpired));
  ck_assert(svc::live(S::kCreating) && svc::live(S::kTentative) && svc::live(S::kConfirmed));
  ck_assert(!svc::live(S::kEnded) && !svc::live(S::kDeleted) && !svc::live(S::kExpired));
}
END_TEST

namespace {
constexpr std::int64_t kNow = 1796000000;

svc::RecordView rec(std::uint64_t id, ResvState s, std::int64_t confirm_by, std::int64_t end) {
  svc::RecordView r;
  r.id = id;
  r.state = s;
  r.confirm_by = confirm_by;
  r.end = end;
  return r;
}
}  // namespace

// The controller that took over loaded the shared state file: every
// reservation the other one made is known, nothing is deleted but what is
// due.
START_TEST(takeover_with_the_state_loaded_fresh) {
  const std::vector<svc::RecordView> recs = {
      rec(1, ResvState::kTentative, kNow + 600, kNow + 7200),   // still to be confirmed
      rec(2, ResvState::kConfirmed, 0, kNow + 7200),            // a running part job
      rec(3, ResvState::kConfirmed, 0, kNow + 9000),            // a pending part job
      rec(4, ResvState::kTentative, kNow - 1, kNow + 7200),     // its deadline passed
      rec(5, ResvState::kCreating, 0, kNow + 7200),             // create interrupted
      rec(6, ResvState::kConfirmed, 0, kNow - 5),               // ended
      rec(7, ResvState::kConfirmed, 0, kNow + 7200),            // deleted with scontrol
      rec(8, ResvState::kDeleted, 0, kNow + 7200),              // final
  };
  const std::vector<std::uint64_t> slurm = {1, 2, 3, 4, 5, 6, 8, 99};
  const svc::TickPlan p = svc::plan_tick(recs, slurm, false, kNow);
  const std::vector<TickAction> want = {
      TickAction::kKeep, TickAction::kKeep, TickAction::kKeep, TickAction::kExpireUnconfirmed,
      TickAction::kExpireInterrupted, TickAction::kEnd, TickAction::kGone, TickAction::kKeep};
  ck_assert(p.records == want);
  // deleted in Slurm: the expired ones, the ended one, the final record's
  // and the unknown orphan; never 1, 2 or 3
  const std::vector<bool> del = {false, false, false, true, true, true, true, true};
  ck_assert(p.delete_slurm == del);
}
END_TEST

// What a backup that had loaded the file once, at its start, would have
// known: none of the reservations made since.  The plan deletes what no
// live record knows -- which is why the plugin loads the state anew at
// every takeover (plugin/agent.c) and plans only while in charge with it.
START_TEST(stale_state_would_delete_what_it_does_not_know) {
  const std::vector<svc::RecordView> stale = {rec(1, ResvState::kConfirmed, 0, kNow + 7200)};
  const std::vector<std::uint64_t> slurm = {1, 2, 3};
  const svc::TickPlan p = svc::plan_tick(stale, slurm, false, kNow);
  ck_assert(p.delete_slurm == std::vector<bool>({false, true, true}));
  // with the fresh state the same list loses nothing
  const std::vector<svc::RecordView> fresh = {rec(1, ResvState::kConfirmed, 0, kNow + 7200),
                                              rec(2, ResvState::kTentative, kNow + 60, kNow + 7200),
                                              rec(3, ResvState::kConfirmed, 0, kNow + 7200)};
  const svc::TickPlan q = svc::plan_tick(fresh, slurm, false, kNow);
  ck_assert(q.delete_slurm == std::vector<bool>({false, false, false}));
  ck_assert(q.records == std::vector<TickAction>(3, TickAction::kKeep));
}
END_TEST

// After a lost state, reservations that could not be adopted are left to
// the admin: no orphan is deleted at all.
START_TEST(unaccounted_deletes_no_orphan) {
  const std::vector<svc::RecordView> recs = {rec(1, ResvState::kConfirmed, 0, kNow + 7200)};
  const svc::TickPlan p = svc::plan_tick(recs, {1, 2, 3}, true, kNow);
  ck_assert(p.delete_slurm == std::vector<bool>({false, false, false}));
}
END_TEST

// A deadline exactly now expires; an end exactly now ends.
START_TEST(boundaries) {
  const svc::TickPlan p = svc::plan_tick({rec(1, ResvState::kTentative, kNow, kNow + 10),
                                          rec(2, ResvState::kConfirmed, 0, kNow),
                                          rec(3, ResvState::kTentative, kNow + 1, kNow)},
                                         {1, 2, 3}, false, kNow);
  ck_assert(p.records == std::vector<TickAction>({TickAction::kExpireUnconfirmed,
                                                  TickAction::kEnd, TickAction::kEnd}));
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("resv_rules");
  TCase* tc = tcase_create("rules");
  tcase_add_test(tc, names_round_trip);
  tcase_add_test(tc, transition_table);
  tcase_add_test(tc, takeover_with_the_state_loaded_fresh);
  tcase_add_test(tc, stale_state_would_delete_what_it_does_not_know);
  tcase_add_test(tc, unaccounted_deletes_no_orphan);
  tcase_add_test(tc, boundaries);
  suite_add_tcase(s, tc);
  return s;
}

int main() { return run_check_suite(make_suite()); }
