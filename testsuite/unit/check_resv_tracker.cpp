// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/resv_tracker, which reservation events the
// plugin publishes: nothing on the first look, a start and an end as the
// clock passes them (once each), a deletion before the end, a purge after
// it, a reservation moved into the future or a recurring one's next round,
// and the state a restart loads -- on made-up copies of resv_list, without
// slurmctld.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "service/capi_tracker.h"
#include "service/resv_tracker.hpp"

#include <check.h>

#include "check_main.hpp"

using flexco::service::ResvTracker;
using flexco::service::TrackedResv;
using C = ResvTracker::Change;

namespace {
TrackedResv resv(const std::string& name, std::int64_t start, std::int64_t end) {
  TrackedResv r;
  r.name = name;
  r.start = start;
  r.end = end;
  r.nodes = "n[1-2]";
  r.has_nodes = true;
  r.node_cnt = 2;
  r.users = {1000};
  return r;
}

struct Log {
  std::vector<std::pair<C, std::string>> got;
  ResvTracker::Emit emit() {
    return [this](C c, const TrackedResv& r) { got.emplace_back(c, r.name); };
  }
};
}  // namespace

START_TEST(baseline_reports_nothing) {
  ResvTracker t;
  Log log;
  // at 100: one running, one ended (not purged yet), one to come
  ck_assert(t.refresh({resv("run", 50, 200), resv("old", 10, 90), resv("next", 150, 300)}, 100,
                      true, log.emit()));
  ck_assert(log.got.empty());
  t.tick(100, log.emit());
  ck_assert(log.got.empty());  // run's start and old's end are not news
  // the clock passes next's start, then run's end
  t.tick(150, log.emit());
  t.tick(200, log.emit());
  ck_assert(log.got == (std::vector<std::pair<C, std::string>>{{C::kActivated, "next"},
                                                               {C::kEnded, "run"}}));
  // once each
  t.tick(250, log.emit());
  ck_assert_uint_eq(log.got.size(), 2);
}
END_TEST

START_TEST(new_deleted_purged) {
  ResvTracker t;
  Log log;
  t.refresh({}, 100, true, log.emit());
  // a new one after the baseline: its start is news
  t.refresh({resv("a", 100, 300), resv("b", 120, 140)}, 110, false, log.emit());
  ck_assert(log.got.empty());  // refresh reports vanishings only
  t.tick(110, log.emit());
  ck_assert(log.got == (std::vector<std::pair<C, std::string>>{{C::kActivated, "a"}}));
  log.got.clear();
  // a gone before its end: deleted; b gone after its end, never seen
  // active: activated, then ended
  ck_assert(t.refresh({}, 150, false, log.emit()));
  ck_assert(log.got == (std::vector<std::pair<C, std::string>>{
                           {C::kDeleted, "a"}, {C::kActivated, "b"}, {C::kEnded, "b"}}));
  ck_assert(t.tracked().empty());
  // one that ended and was reported, then purged: nothing more
  log.got.clear();
  t.refresh({resv("c", 160, 170)}, 160, false, log.emit());
  t.tick(170, log.emit());
  log.got.clear();
  t.refresh({}, 180, false, log.emit());
  ck_assert(log.got.empty());
}
END_TEST

START_TEST(moved_and_recurring) {
  ResvTracker t;
  Log log;
  t.refresh({resv("daily", 100, 200)}, 150, true, log.emit());
  t.tick(200, log.emit());
  ck_assert(log.got == (std::vector<std::pair<C, std::string>>{{C::kEnded, "daily"}}));
  log.got.clear();
  // the next round: start and end again
  ck_assert(t.refresh({resv("daily", 1000, 1100)}, 210, false, log.emit()));
  t.tick(1000, log.emit());
  t.tick(1100, log.emit());
  ck_assert(log.got == (std::vector<std::pair<C, std::string>>{{C::kActivated, "daily"},
                                                               {C::kEnded, "daily"}}));
  // an end moved later while it runs: it ends again at the new end only
  log.got.clear();
  t.refresh({resv("long", 2000, 2100)}, 2050, false, log.emit());
  t.tick(2050, log.emit());
  t.refresh({resv("long", 2000, 2500)}, 2060, false, log.emit());
  t.tick(2100, log.emit());
  t.tick(2500, log.emit());
  ck_assert(log.got == (std::vector<std::pair<C, std::string>>{{C::kActivated, "long"},
                                                               {C::kEnded, "long"}}));
  // nothing the file keeps changed: not dirty
  ck_assert(!t.refresh({resv("long", 2000, 2500)}, 2600, false, log.emit()));
}
END_TEST

START_TEST(state_across_restart) {
  ResvTracker before;
  Log log;
  before.refresh({resv("r", 100, 300)}, 50, true, log.emit());
  before.tick(100, log.emit());
  ck_assert_uint_eq(log.got.size(), 1);
  // saved and loaded into a new tracker (as the events state file does)
  ResvTracker after;
  for (const TrackedResv& r : before.tracked()) after.put(r);
  log.got.clear();
  after.refresh({resv("r", 100, 300)}, 120, false, log.emit());
  after.tick(120, log.emit());
  ck_assert(log.got.empty());  // its start was reported before the restart
  after.tick(300, log.emit());
  ck_assert(log.got == (std::vector<std::pair<C, std::string>>{{C::kEnded, "r"}}));
}
END_TEST

struct CLog {
  int n = 0;
  int last = -1;
  std::string name;
  std::uint32_t user = 0;
};
void c_emit(int what, const flexco_evstate_resv_t* r, void* arg) {
  auto* l = static_cast<CLog*>(arg);
  l->n++;
  l->last = what;
  l->name = r->name;
  l->user = r->user_cnt ? r->users[0] : 0;
}

START_TEST(c_interface) {
  flexco_tracker_t* t = flexco_tracker_create();
  ck_assert_ptr_nonnull(t);
  uint32_t users[] = {1234};
  flexco_evstate_resv_t cur{};
  cur.name = const_cast<char*>("flexco_5");
  cur.start = 100;
  cur.end = 200;
  cur.node_cnt = 1;
  cur.users = users;
  cur.user_cnt = 1;
  CLog log;
  ck_assert(flexco_tracker_refresh(t, &cur, 1, 50, false, c_emit, &log));
  ck_assert(flexco_tracker_tick(t, 100, c_emit, &log));
  ck_assert_int_eq(log.n, 1);
  ck_assert_int_eq(log.last, FLEXCO_RESV_ACTIVATED);
  ck_assert_str_eq(log.name.c_str(), "flexco_5");
  ck_assert_uint_eq(log.user, 1234);
  flexco_evstate_resv_t* v = nullptr;
  ck_assert_uint_eq(flexco_tracker_view(t, &v), 1);
  ck_assert(v[0].activated && !v[0].ended);
  ck_assert_ptr_null(v[0].nodes);
  free(v);
  ck_assert(flexco_tracker_refresh(t, nullptr, 0, 150, false, c_emit, &log));
  ck_assert_int_eq(log.last, FLEXCO_RESV_DELETED);
  flexco_tracker_clear(t);
  ck_assert_uint_eq(flexco_tracker_view(t, &v), 0);
  ck_assert_ptr_null(v);
  flexco_tracker_destroy(t);
}
END_TEST

int main() {
  Suite* s = suite_create("resv_tracker");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, baseline_reports_nothing);
  tcase_add_test(tc, new_deleted_purged);
  tcase_add_test(tc, moved_and_recurring);
  tcase_add_test(tc, state_across_restart);
  tcase_add_test(tc, c_interface);
  suite_add_tcase(s, tc);
  return run_check_suite(s);
}
