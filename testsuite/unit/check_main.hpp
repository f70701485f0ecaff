// SPDX-License-Identifier: GPL-2.0-or-later
// check_main.hpp - main() of a Check unit test: run the suite, TAP output.

#ifndef FLEXCO_TESTSUITE_CHECK_MAIN_HPP
#define FLEXCO_TESTSUITE_CHECK_MAIN_HPP

#include <check.h>

// The exit status of a unit test program that runs `suite` (0: all passed).
inline int run_check_suite(Suite* suite) {
  SRunner* sr = srunner_create(suite);
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}

#endif
