// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/prometheus: Prometheus' text format as
// flexcod's and the plugin's GET /metrics write it (the plugin through
// capi_metrics.h, which must write the same text as the C++ writer).  A histogram's buckets are cumulative, end with
// le="+Inf" equal to _count, and _sum adds the observations; an
// observation on a bound falls in that bound's bucket; HELP and TYPE come
// once before the samples; label values and HELP texts are escaped;
// numbers are integers where they are whole.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "service/capi_metrics.h"
#include "service/prometheus.hpp"

#include "check_main.hpp"

using flexco::service::Exposition;
using flexco::service::Histogram;

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
  ck_assert_str_eq(flexco::service::format_number(1234567890123.0).c_str(), "1234567890123");
  ck_assert_str_eq(flexco::service::format_number(-2).c_str(), "-2");
}
END_TEST

START_TEST(c_interface_same_text) {
  // the C writer and the C++ writer, fed alike, write the same bytes
  const double bounds[] = {0.1, 1, 10};
  const uint64_t counts[] = {2, 1, 0, 1};  // per bucket, the last above 10
  const char* const labels[] = {"cluster", "al\"pha\n", nullptr};
  flexco_metrics_t b = {nullptr, 0};
  flexco_metrics_family(&b, "t_seconds", "histogram", "a\ntest");
  flexco_metrics_histogram(&b, "t_seconds", labels, bounds, counts, 3, 20.65);
  flexco_metrics_family(&b, "g", "gauge", "gauge");
  flexco_metrics_sample(&b, "g", nullptr, 0.25);
  flexco_metrics_sample(&b, "g", labels, 9007199254740993.0);
  char* text = flexco_metrics_take(&b);

  Histogram h({0.1, 1, 10});
  h.counts = {2, 1, 0, 1};
  h.sum = 20.65;
  Exposition x;
  x.family("t_seconds", "histogram", "a\ntest");
  x.histogram("t_seconds", {{"cluster", "al\"pha\n"}}, h);
  x.family("g", "gauge", "gauge");
  x.sample("g", {}, 0.25);
  x.sample("g", {{"cluster", "al\"pha\n"}}, 9007199254740993.0);
  ck_assert_ptr_nonnull(text);
  ck_assert_str_eq(text, x.text().c_str());
  ck_assert(std::string(text).find("t_seconds_count{cluster=\"al\\\"pha\\n\"} 4\n") !=
            std::string::npos);
  std::free(text);
  // take() reset the writer: it starts again, empty
  ck_assert_ptr_null(b.impl);
  flexco_metrics_sample(&b, "h", nullptr, 1);
  text = flexco_metrics_take(&b);
  ck_assert_str_eq(text, "h 1\n");
  std::free(text);
}
END_TEST

START_TEST(c_interface_odd_input) {
  // an odd label list (a name without a value) stops at the last pair;
  // NULL names write nothing; a failed writer gives NULL and is reset
  const char* const odd[] = {"a", "1", "b", nullptr};
  flexco_metrics_t b = {nullptr, 0};
  flexco_metrics_sample(&b, "s", odd, -2);
  flexco_metrics_sample(&b, nullptr, odd, 1);
  flexco_metrics_family(&b, "s", nullptr, "x");
  char* text = flexco_metrics_take(&b);
  ck_assert_str_eq(text, "s{a=\"1\"} -2\n");
  std::free(text);
  b.failed = 1;
  flexco_metrics_sample(&b, "s", nullptr, 1);
  ck_assert_ptr_null(flexco_metrics_take(&b));
  ck_assert_int_eq(b.failed, 0);
  ck_assert_ptr_null(flexco_metrics_take(nullptr));
}
END_TEST

namespace {

Suite* make_suite() {
  Suite* s = suite_create("prometheus");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, histogram_cumulative);
  tcase_add_test(tc, histogram_empty_no_labels);
  tcase_add_test(tc, escaping_and_numbers);
  tcase_add_test(tc, c_interface_same_text);
  tcase_add_test(tc, c_interface_odd_input);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() { return run_check_suite(make_suite()) == 0 ? EXIT_SUCCESS : EXIT_FAILURE; }
