// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/rate_limit, the plugin's per-uid rate limits
// (ProbeRateLimit, ProfileRateLimit, EventsRateLimit): bursts up to Count,
// refill at Count per Seconds, the Retry-After it quotes, uids apart, kinds
// apart, memory bounded under a flood of uids, and a clock that goes
// backwards -- on a fake clock, without slurmctld.

#include <array>
#include <cstdint>

#include "service/rate_limit.hpp"

#include <check.h>

#include "check_main.hpp"

using flexco::service::RateLimiter;

namespace {
constexpr std::uint64_t kSec = 1000000;
constexpr std::uint64_t kT0 = 5000 * kSec;
// probe: 3 in 10 s; profile: no limit; events: 60 in 60 s
const std::array<RateLimiter::Limit, RateLimiter::kKinds> kLimits = {
    RateLimiter::Limit{3, 10}, RateLimiter::Limit{0, 1}, RateLimiter::Limit{60, 60}};
}  // namespace

START_TEST(burst_then_refill) {
  RateLimiter rl(kLimits);
  // a new uid starts with a full bucket
  for (int i = 0; i < 3; i++) ck_assert_uint_eq(rl.take(0, 1000, kT0), 0);
  // empty: one token comes back in 10/3 s, quoted as 4 whole seconds
  ck_assert_uint_eq(rl.take(0, 1000, kT0), 4);
  ck_assert_uint_eq(rl.take(0, 1000, kT0 + 2 * kSec), 2);  // 1.33 s left
  ck_assert_uint_eq(rl.take(0, 1000, kT0 + 3 * kSec + 400000), 0);
  ck_assert_uint_eq(rl.take(0, 1000, kT0 + 3 * kSec + 400000), 4);
  ck_assert_uint_eq(rl.refused()[0], 3);
  // a long pause fills the bucket to Count, not beyond
  const std::uint64_t later = kT0 + 3600 * kSec;
  for (int i = 0; i < 3; i++) ck_assert_uint_eq(rl.take(0, 1000, later), 0);
  ck_assert_uint_gt(rl.take(0, 1000, later), 0);
}
END_TEST

START_TEST(kinds_and_uids_apart) {
  RateLimiter rl(kLimits);
  for (int i = 0; i < 3; i++) ck_assert_uint_eq(rl.take(0, 1000, kT0), 0);
  ck_assert_uint_gt(rl.take(0, 1000, kT0), 0);
  // another uid, and another kind of the same uid, have their own buckets
  ck_assert_uint_eq(rl.take(0, 1001, kT0), 0);
  ck_assert_uint_eq(rl.take(2, 1000, kT0), 0);
  // no limit, or a kind that does not exist: never refused
  for (int i = 0; i < 1000; i++) ck_assert_uint_eq(rl.take(1, 1000, kT0), 0);
  ck_assert_uint_eq(rl.take(7, 1000, kT0), 0);
  const auto r = rl.refused();
  ck_assert_uint_eq(r[0], 1);
  ck_assert_uint_eq(r[1], 0);
  ck_assert_uint_eq(r[2], 0);
}
END_TEST

START_TEST(flood_of_uids_is_bounded) {
  RateLimiter rl(kLimits);
  for (std::uint32_t uid = 0; uid < 200000; uid++) rl.take(0, uid, kT0 + uid);
  ck_assert_uint_le(rl.uids(), RateLimiter::kSlots);
  ck_assert_uint_ge(rl.uids(), RateLimiter::kSlots / 2);
  // the uid used last still has its own bucket (two tokens left)
  ck_assert_uint_eq(rl.take(0, 199999, kT0 + 199999), 0);
  ck_assert_uint_eq(rl.take(0, 199999, kT0 + 199999), 0);
  ck_assert_uint_gt(rl.take(0, 199999, kT0 + 199999), 0);
}
END_TEST

START_TEST(clock_backwards_refills_nothing) {
  RateLimiter rl(kLimits);
  for (int i = 0; i < 3; i++) ck_assert_uint_eq(rl.take(0, 7, kT0), 0);
  ck_assert_uint_gt(rl.take(0, 7, kT0 - 100 * kSec), 0);
  ck_assert_uint_gt(rl.take(0, 7, kT0 - 50 * kSec), 0);
}
END_TEST


int main() {
  Suite* s = suite_create("rate_limit");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, burst_then_refill);
  tcase_add_test(tc, kinds_and_uids_apart);
  tcase_add_test(tc, flood_of_uids_is_bounded);
  tcase_add_test(tc, clock_backwards_refills_nothing);
  suite_add_tcase(s, tc);
  return run_check_suite(s);
}
