// SPDX-License-Identifier: GPL-2.0-or-later
// check_flexcod_claims.cpp - flexcod's ledger of claimed capacity
// (src/flexcod/claims.hpp): what a placement's profile reads may not show.

#include <string>
#include <vector>

#include "flexcod/claims.hpp"
#include "check_main.hpp"

using flexcod::ClaimLedger;

namespace {
ClaimLedger::Entry entry(const std::string& cluster, std::int64_t nodes) {
  return ClaimLedger::Entry{cluster, 1000, 2000, nodes};
}
}  // namespace

START_TEST(in_flight_is_unseen_by_every_read) {
  ClaimLedger l;
  const auto r = l.reading(100);
  const auto h = l.hold(entry("alpha", 2));
  ck_assert_uint_eq(l.unseen("alpha", 100).size(), 1);
  ck_assert_uint_eq(l.unseen("alpha", 999999).size(), 1);  // even a read begun later
  ck_assert_uint_eq(l.unseen("beta", 100).size(), 0);
  l.answered(h, false, 150);  // refused: nothing to subtract
  ck_assert_uint_eq(l.unseen("alpha", 100).size(), 0);
  ck_assert_uint_eq(l.size(), 0);
  l.read_done(r);
}
END_TEST

START_TEST(made_is_unseen_by_reads_begun_before_its_answer) {
  ClaimLedger l;
  const auto old_read = l.reading(100);
  const auto h = l.hold(entry("alpha", 3));
  l.answered(h, true, 200);
  ck_assert_uint_eq(l.unseen("alpha", 100).size(), 1);  // read before: subtract
  ck_assert_uint_eq(l.unseen("alpha", 200).size(), 1);  // the same instant: subtract
  ck_assert_uint_eq(l.unseen("alpha", 201).size(), 0);  // read after: shows it
  ck_assert_int_eq(l.unseen("alpha", 100)[0].nodes, 3);
  // kept while the read that began before its answer is in use
  const auto new_read = l.reading(300);
  l.read_done(new_read);
  ck_assert_uint_eq(l.size(), 1);
  l.read_done(old_read);
  ck_assert_uint_eq(l.size(), 0);  // no read older than its answer: gone
}
END_TEST

START_TEST(pruned_when_no_read_is_older) {
  ClaimLedger l;
  const auto h1 = l.hold(entry("alpha", 1));
  const auto h2 = l.hold(entry("beta", 1));
  l.answered(h1, true, 50);  // no read in use: pruned at once
  ck_assert_uint_eq(l.size(), 1);
  const auto r = l.reading(60);
  l.answered(h2, true, 70);
  ck_assert_uint_eq(l.size(), 1);
  ck_assert_uint_eq(l.unseen("beta", 60).size(), 1);
  {
    ClaimLedger::Reading scoped(&l, 80);  // the RAII form
    ck_assert(scoped.active() && scoped.since() == 80);
  }
  ck_assert_uint_eq(l.size(), 1);
  l.read_done(r);
  ck_assert_uint_eq(l.size(), 0);
  l.answered(12345, true, 1);  // unknown id: ignored
}
END_TEST

int main() {
  Suite* s = suite_create("flexcod_claims");
  TCase* tc = tcase_create("ledger");
  tcase_add_test(tc, in_flight_is_unseen_by_every_read);
  tcase_add_test(tc, made_is_unseen_by_reads_begun_before_its_answer);
  tcase_add_test(tc, pruned_when_no_read_is_older);
  suite_add_tcase(s, tc);
  return run_check_suite(s);
}
