// SPDX-License-Identifier: GPL-2.0-or-later
// test_hold.cpp - see test_hold.hpp.  Compiled twice: without
// FLEXCO_TEST_HOOKS into the installed flexcod (an empty function), with it
// into flexcod-testhooks for the integration tests.

#include "flexcod/test_hold.hpp"

#ifdef FLEXCO_TEST_HOOKS
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "flexcod/log.hpp"
#endif

namespace flexcod {

#ifdef FLEXCO_TEST_HOOKS
void test_hold(const char* step) {
  const char* dir = std::getenv("FLEXCOD_TEST_HOLD_DIR");
  if (dir == nullptr || dir[0] == '\0') return;
  const std::string base = std::string(dir) + "/" + step;
  if (access((base + ".hold").c_str(), F_OK) != 0) return;
  if (FILE* f = std::fopen((base + ".reached").c_str(), "w")) std::fclose(f);
  fc_info("test hold at step %s", step);
  while (access((base + ".hold").c_str(), F_OK) == 0) usleep(50000);
}
bool test_ignore_lease() {
  const char* v = std::getenv("FLEXCOD_TEST_IGNORE_LEASE");
  return v != nullptr && std::string(v) == "1";
}
#else
void test_hold(const char*) {}
bool test_ignore_lease() { return false; }
#endif

}  // namespace flexcod
