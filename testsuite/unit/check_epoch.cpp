// SPDX-License-Identifier: GPL-2.0-or-later
// check_epoch - the Flexco-Epoch header (core/epoch.hpp): its parser, table
// driven, and the plugins' highest-epoch-per-grid fence.

#include <check.h>

#include <string>

#include "check_main.hpp"
#include "core/epoch.hpp"

using flexco::epoch::Fence;
using flexco::epoch::Stamp;

namespace {

struct Case {
  const char* value;
  bool ok;
  const char* grid;
  long long epoch;
};

const Case kCases[] = {
    {"a1b2c3d4e5f60718:1", true, "a1b2c3d4e5f60718", 1},
    {"  grid_-X:42\t", true, "grid_-X", 42},
    {"g:9007199254740992", true, "g", 9007199254740992LL},  // 2^53
    {"g:9007199254740993", false, nullptr, 0},
    {"g:99999999999999999", false, nullptr, 0},  // 17 digits
    {"g:0", false, nullptr, 0},
    {"g:01", false, nullptr, 0},
    {"g:-1", false, nullptr, 0},
    {"g:+1", false, nullptr, 0},
    {"g:1 2", false, nullptr, 0},
    {"g:", false, nullptr, 0},
    {":1", false, nullptr, 0},
    {"g1", false, nullptr, 0},
    {"", false, nullptr, 0},
    {"g.h:1", false, nullptr, 0},
    {"g:1:2", false, nullptr, 0},
    {"g h:1", false, nullptr, 0},
    {"\xc3\xa9:1", false, nullptr, 0},
};

}  // namespace

START_TEST(parse_table) {
  for (const Case& c : kCases) {
    Stamp s;
    std::string why;
    const bool ok = flexco::epoch::parse(c.value, &s, &why);
    ck_assert_msg(ok == c.ok, "'%s': %s", c.value, why.c_str());
    if (ok) {
      ck_assert_str_eq(s.grid.c_str(), c.grid);
      ck_assert_int_eq(s.epoch, c.epoch);
      ck_assert_str_eq(flexco::epoch::format(s).c_str(), (std::string(c.grid) + ":" + std::to_string(c.epoch)).c_str());
    } else {
      ck_assert_msg(why.rfind("Flexco-Epoch: ", 0) == 0, "'%s': %s", c.value, why.c_str());
    }
  }
  // a grid of 64 characters is one, 65 none
  Stamp s;
  std::string why;
  ck_assert(flexco::epoch::parse(std::string(64, 'a') + ":1", &s, &why));
  ck_assert(!flexco::epoch::parse(std::string(65, 'a') + ":1", &s, &why));
}
END_TEST

START_TEST(fence_verdicts) {
  Fence f;
  std::int64_t hi = -1;
  ck_assert(f.check({"g", 5}, false, &hi) == Fence::Verdict::kAccepted && hi == 0);
  ck_assert_int_eq(f.highest("g"), 0);  // not raised
  ck_assert(f.check({"g", 5}, true, &hi) == Fence::Verdict::kRaised && hi == 5);
  ck_assert(f.check({"g", 5}, true, &hi) == Fence::Verdict::kAccepted && hi == 5);
  ck_assert(f.check({"g", 4}, true, &hi) == Fence::Verdict::kStale && hi == 5);
  ck_assert(f.check({"g", 4}, false, &hi) == Fence::Verdict::kStale);
  ck_assert(f.check({"g", 9}, false, &hi) == Fence::Verdict::kAccepted && f.highest("g") == 5);
  ck_assert(f.check({"g", 9}, true, &hi) == Fence::Verdict::kRaised && f.highest("g") == 9);
  ck_assert(f.check({"h", 1}, true, &hi) == Fence::Verdict::kRaised);  // grids apart
  for (std::size_t i = f.all().size(); i < flexco::epoch::kMaxGrids; ++i)
    ck_assert(f.check({"x" + std::to_string(i), 1}, true, &hi) == Fence::Verdict::kRaised);
  ck_assert(f.check({"one-more", 1}, true, &hi) == Fence::Verdict::kFull);
  ck_assert(f.check({"g", 9}, true, &hi) == Fence::Verdict::kAccepted);  // known ones still work
  // loading: invalid entries are left out, a lower value never lowers
  Fence l;
  l.set("a", 3);
  l.set("a", 2);
  l.set("bad grid", 4);
  l.set("b", 0);
  ck_assert_int_eq(l.highest("a"), 3);
  ck_assert_int_eq(l.all().size(), 1);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("epoch");
  TCase* tc = tcase_create("epoch");
  tcase_add_test(tc, parse_table);
  tcase_add_test(tc, fence_verdicts);
  suite_add_tcase(s, tc);
  return s;
}

int main() { return run_check_suite(make_suite()); }
