// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests for src/core/strings: the one comma splitter that flexcod's
// store, sreserve's options and formats, and flexco-sim's options use.

#include <string>
#include <vector>

#include "core/strings.hpp"

// Last: check.h defines macros that clash with the C++ library.
#include <check.h>

using flexco::split_commas;

namespace {

using V = std::vector<std::string>;

#define SPLITS(text, ...)                                                              \
  do {                                                                                 \
    V got_ = split_commas(text), want_ = V{__VA_ARGS__};                               \
    std::string g_;                                                                    \
    for (const auto& x : got_) g_ += "[" + x + "]";                                    \
    ck_assert_msg(got_ == want_, "line %d: split_commas(\"%s\") gave %s", __LINE__, \
                  std::string(text).c_str(), g_.c_str());                              \
  } while (0)

START_TEST(items_as_written) {
  SPLITS("a", "a");
  SPLITS("a,b,c", "a", "b", "c");
  SPLITS(" a , b", " a ", " b");  // blanks are the caller's business
  SPLITS("alpha:p1,beta:p2", "alpha:p1", "beta:p2");
}
END_TEST

START_TEST(empty_items_kept) {
  SPLITS("", "");
  SPLITS(",", "", "");
  SPLITS("a,,b", "a", "", "b");
  SPLITS("a,", "a", "");
  SPLITS(",a", "", "a");
  SPLITS(",,,", "", "", "", "");
}
END_TEST

START_TEST(embedded_nul_and_long) {
  std::string with_nul("a\0b,c", 5);
  V got = split_commas(with_nul);
  ck_assert_uint_eq(got.size(), 2);
  ck_assert(got[0] == std::string("a\0b", 3));
  std::string many;
  for (int i = 0; i < 10000; i++) many += (i ? "," : "") + std::to_string(i);
  got = split_commas(many);
  ck_assert_uint_eq(got.size(), 10000);
  ck_assert(got.front() == "0" && got.back() == "9999");
}
END_TEST

Suite* strings_suite() {
  Suite* s = suite_create("strings");
  TCase* tc = tcase_create("split_commas");
  tcase_add_test(tc, items_as_written);
  tcase_add_test(tc, empty_items_kept);
  tcase_add_test(tc, embedded_nul_and_long);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(strings_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
