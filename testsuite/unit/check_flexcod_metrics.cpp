// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/flexcod/metrics: Prometheus' text format as flexcod's
// GET /metrics writes it.  A histogram's buckets are cumulative, end with
// le="+Inf" equal to _count, and _sum adds the observations; an
// observation on a bound falls in that bound's bucket; HELP and TYPE come
// once before the samples; label values and HELP texts are escaped;
// numbers are integers where they are whole.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "flexcod/metrics.hpp"

#include <check.h>

using flexcod::Exposition;
using flexcod::Histogram;

START_TEST(histogram_cumulative) {
  Histogram h({0.1, 1, 10});
  h.observe(0.05);
  h.observe(0.1);  // on a bound: in its bucket (le is "less or equal")
  h.observe(0.5);
  h.observe(20);
  Exposition x;
  x.family("t_seconds", "histogram", "a test");
  x.histogram("t_seconds", {{"cluster", "alpha"}}, h);
  ck_assert_str_eq(x.text().c_str(),
                   "# HELP t_seconds a test\n"
                   "# TYPE t_seconds histogram\n"
                   "t_seconds_bucket{cluster=\"alpha\",le=\"0.1\"} 2\n"
                   "t_seconds_bucket{cluster=\"alpha\",le=\"1\"} 3\n"
                   "t_seconds_bucket{cluster=\"alpha\",le=\"10\"} 3\n"
                   "t_seconds_bucket{cluster=\"alpha\",le=\"+Inf\"} 4\n"
                   "t_seconds_sum{cluster=\"alpha\"} 20.65\n"
                   "t_seconds_count{cluster=\"alpha\"} 4\n");
}
END_TEST

START_TEST(histogram_empty_no_labels) {
  Exposition x;
  x.histogram("e", {}, Histogram({1}));
  ck_assert_str_eq(x.text().c_str(),
                   "e_bucket{le=\"1\"} 0\ne_bucket{le=\"+Inf\"} 0\ne_sum 0\ne_count 0\n");
}
END_TEST

START_TEST(escaping_and_numbers) {
  Exposition x;
  x.family("g", "gauge", "back\\slash and\nnewline");
  x.sample("g", {{"name", "a\"b\\c\nd"}}, 3);
  x.sample("g", {}, 0.25);
  x.sample("g", {}, 1e300 * 1e300);
  ck_assert_str_eq(x.text().c_str(),
                   "# HELP g back\\\\slash and\\nnewline\n"
                   "# TYPE g gauge\n"
                   "g{name=\"a\\\"b\\\\c\\nd\"} 3\n"
                   "g 0.25\n"
                   "g +Inf\n");
  ck_assert_str_eq(flexcod::format_number(1234567890123.0).c_str(), "1234567890123");
  ck_assert_str_eq(flexcod::format_number(-2).c_str(), "-2");
}
END_TEST

namespace {

Suite* make_suite() {
  Suite* s = suite_create("flexcod_metrics");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, histogram_cumulative);
  tcase_add_test(tc, histogram_empty_no_labels);
  tcase_add_test(tc, escaping_and_numbers);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
