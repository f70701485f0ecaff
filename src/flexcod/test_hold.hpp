// SPDX-License-Identifier: GPL-2.0-or-later
// test_hold.hpp - the commit protocol's fault-injection points.
//
// Engine calls test_hold(step) at every step of a commit and a move, in a
// cancel and when a co-allocation finishes
// (doc/flexcod.md, "Testing the protocol").  The installed flexcod links
// test_hold.cpp compiled without FLEXCO_TEST_HOOKS, where it does nothing;
// only flexcod-testhooks, built by `make check` for the integration tests
// and never installed, links the version that reads FLEXCOD_TEST_HOLD_DIR.

#ifndef FLEXCOD_TEST_HOLD_HPP
#define FLEXCOD_TEST_HOLD_HPP

namespace flexcod {

// With FLEXCO_TEST_HOOKS and FLEXCOD_TEST_HOLD_DIR=<dir> in the environment:
// while <dir>/<step>.hold exists, create <dir>/<step>.reached and wait, so
// that a test can kill flexcod or stop a cluster at exactly that point.
// Otherwise: nothing.
void test_hold(const char* step);

// With FLEXCO_TEST_HOOKS and FLEXCOD_TEST_IGNORE_LEASE=1: this flexcod
// goes on acting after it lost its lease (its requests to the plugins
// still carry its epoch, and it does not stop), so that a test can show
// that the plugins and the database refuse what a deposed flexcod does.
// Otherwise: false.
bool test_ignore_lease();

}  // namespace flexcod

#endif  // FLEXCOD_TEST_HOLD_HPP
