// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/flexcod/states: the table of allowed state changes of a
// co-allocation and of a part.  Every state is reachable from the initial
// one, no final state has a way out and every other state has one, the
// strings of the database and the API round-trip, a few changes are
// allowed or refused, and set_state refuses (and counts) an illegal change
// without touching the record.

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "flexcod/log.hpp"
#include "flexcod/states.hpp"

#include <check.h>

using flexcod::CoRecord;
using flexcod::CoState;
using flexcod::PartRecord;
using flexcod::PartState;

namespace {

template <typename S>
std::set<S> reachable(S initial, const std::vector<S>& all) {
  std::set<S> seen{initial};
  std::vector<S> todo{initial};
  while (!todo.empty()) {
    const S s = todo.back();
    todo.pop_back();
    for (S t : all) {
      if (flexcod::allowed(s, t) && seen.insert(t).second) todo.push_back(t);
    }
  }
  return seen;
}

START_TEST(co_every_state_reachable) {
  const auto& all = flexcod::all_co_states();
  ck_assert_uint_eq(all.size(), 8);
  const auto seen = reachable(flexcod::kCoInitial, all);
  for (CoState s : all) {
    ck_assert_msg(seen.count(s), "co-allocation state %s not reachable", flexcod::to_string(s));
  }
}
END_TEST

START_TEST(part_every_state_reachable) {
  const auto& all = flexcod::all_part_states();
  ck_assert_uint_eq(all.size(), 12);
  const auto seen = reachable(flexcod::kPartInitial, all);
  for (PartState s : all) {
    ck_assert_msg(seen.count(s), "part state %s not reachable", flexcod::to_string(s));
  }
}
END_TEST

START_TEST(final_states_have_no_way_out) {
  int finals = 0;
  for (CoState s : flexcod::all_co_states()) {
    bool out = false;
    for (CoState t : flexcod::all_co_states()) out |= flexcod::allowed(s, t);
    ck_assert_msg(out != flexcod::is_final(s), "co-allocation state %s: final %d, way out %d",
                  flexcod::to_string(s), flexcod::is_final(s), out);
    finals += flexcod::is_final(s);
  }
  ck_assert_int_eq(finals, 3);
  finals = 0;
  for (PartState s : flexcod::all_part_states()) {
    bool out = false;
    for (PartState t : flexcod::all_part_states()) out |= flexcod::allowed(s, t);
    ck_assert_msg(out != flexcod::is_final(s), "part state %s: final %d, way out %d",
                  flexcod::to_string(s), flexcod::is_final(s), out);
    finals += flexcod::is_final(s);
  }
  ck_assert_int_eq(finals, 4);
}
END_TEST

START_TEST(no_state_changes_to_itself_or_back_to_initial) {
  for (CoState s : flexcod::all_co_states()) {
    ck_assert(!flexcod::allowed(s, s));
    ck_assert(!flexcod::allowed(s, flexcod::kCoInitial));
  }
  for (PartState s : flexcod::all_part_states()) {
    ck_assert(!flexcod::allowed(s, s));
    ck_assert(!flexcod::allowed(s, flexcod::kPartInitial));
  }
}
END_TEST

START_TEST(strings_round_trip) {
  const std::vector<std::string> co = {"planning", "committing", "scheduled", "running",
                                       "completed", "failed", "cancelling", "cancelled"};
  std::set<std::string> names;
  for (CoState s : flexcod::all_co_states()) {
    const std::string n = flexcod::to_string(s);
    ck_assert(names.insert(n).second);
    auto back = flexcod::co_state_from_string(n);
    ck_assert(back.has_value() && *back == s);
  }
  ck_assert(names == std::set<std::string>(co.begin(), co.end()));
  const std::vector<std::string> part = {"reserving", "tentative", "confirming", "confirmed",
                                         "submitting", "submitted", "running", "completed",
                                         "failed", "cancelling", "cancelled", "released"};
  names.clear();
  for (PartState s : flexcod::all_part_states()) {
    const std::string n = flexcod::to_string(s);
    ck_assert(names.insert(n).second);
    auto back = flexcod::part_state_from_string(n);
    ck_assert(back.has_value() && *back == s);
  }
  ck_assert(names == std::set<std::string>(part.begin(), part.end()));
  ck_assert(!flexcod::co_state_from_string("").has_value());
  ck_assert(!flexcod::co_state_from_string("Scheduled").has_value());
  ck_assert(!flexcod::co_state_from_string("released").has_value());
  ck_assert(!flexcod::part_state_from_string("planned").has_value());
  ck_assert(!flexcod::part_state_from_string("scheduled").has_value());
}
END_TEST

START_TEST(specific_pairs) {
  using C = CoState;
  using P = PartState;
  ck_assert(flexcod::allowed(C::kPlanning, C::kCommitting));
  ck_assert(flexcod::allowed(C::kCommitting, C::kScheduled));
  ck_assert(flexcod::allowed(C::kScheduled, C::kRunning));
  ck_assert(flexcod::allowed(C::kScheduled, C::kCompleted));
  ck_assert(flexcod::allowed(C::kRunning, C::kFailed));
  ck_assert(flexcod::allowed(C::kCancelling, C::kCancelled));
  ck_assert(!flexcod::allowed(C::kPlanning, C::kScheduled));   // never without a commit
  ck_assert(!flexcod::allowed(C::kRunning, C::kScheduled));    // no way back
  ck_assert(!flexcod::allowed(C::kCancelling, C::kFailed));
  ck_assert(!flexcod::allowed(C::kCompleted, C::kCancelling));  // final
  ck_assert(!flexcod::allowed(C::kFailed, C::kCancelled));
  ck_assert(flexcod::allowed(P::kReserving, P::kTentative));
  ck_assert(flexcod::allowed(P::kReserving, P::kReleased));
  ck_assert(flexcod::allowed(P::kSubmitted, P::kRunning));
  ck_assert(flexcod::allowed(P::kSubmitted, P::kCancelling));
  ck_assert(flexcod::allowed(P::kCancelling, P::kCancelled));
  ck_assert(flexcod::allowed(P::kCancelling, P::kReleased));
  ck_assert(!flexcod::allowed(P::kTentative, P::kSubmitting));  // confirm first
  ck_assert(!flexcod::allowed(P::kTentative, P::kReleased));    // release passes cancelling
  ck_assert(!flexcod::allowed(P::kRunning, P::kSubmitted));
  ck_assert(!flexcod::allowed(P::kReleased, P::kCancelling));   // final
  ck_assert(!flexcod::allowed(P::kCompleted, P::kCancelling));
  ck_assert(!flexcod::allowed(P::kCancelling, P::kRunning));
}
END_TEST

START_TEST(set_state_checks_the_table) {
  const std::int64_t before = flexcod::illegal_transitions();
  CoRecord co;
  co.id = 7;
  ck_assert(!flexcod::set_state(co, CoState::kScheduled));  // new: initial state only
  ck_assert_str_eq(co.state.c_str(), "");
  ck_assert(flexcod::set_state(co, CoState::kPlanning));
  ck_assert(flexcod::set_state(co, CoState::kCommitting));
  ck_assert(flexcod::set_state(co, CoState::kCommitting));  // no change
  ck_assert(flexcod::set_state(co, CoState::kScheduled));
  ck_assert(!flexcod::set_state(co, CoState::kPlanning));
  ck_assert_str_eq(co.state.c_str(), "scheduled");
  ck_assert(flexcod::set_state(co, CoState::kCompleted));
  ck_assert(!flexcod::set_state(co, CoState::kCancelling));
  ck_assert_str_eq(co.state.c_str(), "completed");
  co.state = "bogus";
  ck_assert(!flexcod::set_state(co, CoState::kFailed));
  ck_assert_str_eq(co.state.c_str(), "bogus");
  PartRecord p;
  ck_assert(flexcod::set_state(p, PartState::kReserving));
  ck_assert(flexcod::set_state(p, PartState::kReleased));
  ck_assert(!flexcod::set_state(p, PartState::kCancelling));
  ck_assert_str_eq(p.state.c_str(), "released");
  ck_assert_int_eq(flexcod::illegal_transitions() - before, 5);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("flexcod_states");
  TCase* tc = tcase_create("table");
  tcase_add_test(tc, co_every_state_reachable);
  tcase_add_test(tc, part_every_state_reachable);
  tcase_add_test(tc, final_states_have_no_way_out);
  tcase_add_test(tc, no_state_changes_to_itself_or_back_to_initial);
  tcase_add_test(tc, strings_round_trip);
  tcase_add_test(tc, specific_pairs);
  tcase_add_test(tc, set_state_checks_the_table);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  flexcod::log_init(true, "", flexcod::kQuiet);  // the refused changes' error lines
  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_set_fork_status(sr, CK_NOFORK);  // illegal_transitions() counts in this process
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
