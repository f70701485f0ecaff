// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/idem_cache, the plugin's Idempotency-Key cache:
// retries replayed and other requests under the same key refused, only
// final answers kept, one uid's share, the oldest going when every slot is
// live, and retries answered across a crash or a takeover (the entries
// saved and loaded into a new cache, as resv_service does with its state
// file) -- without slurmctld.

#include <cstdint>
#include <string>
#include <vector>

#include "service/idem_cache.hpp"

#include <check.h>

#include "check_main.hpp"

using flexco::service::IdemCache;
using flexco::service::IdemEntry;
using V = IdemCache::Verdict;

namespace {
constexpr std::int64_t kNow = 1796000000;
constexpr std::int64_t kDay = 86400;
const std::string kPost = "POST", kT = "/v1/reservations", kD = "d1";
}  // namespace

START_TEST(replay_and_reuse) {
  IdemCache c(16, 8, kDay);
  ck_assert(c.answer("k1", 0, kPost, kT, kD, kNow).verdict == V::kNew);
  ck_assert(c.store("k1", 0, kPost, kT, kD, 201, "{\"id\":5}", kNow));
  auto a = c.answer("k1", 0, kPost, kT, kD, kNow + 10);
  ck_assert(a.verdict == V::kReplay && a.entry->status == 201 && a.entry->response == "{\"id\":5}");
  a = c.answer("k1", 0, kPost, kT, "d2", kNow + 10);
  ck_assert(a.verdict == V::kReused && a.same_target);
  a = c.answer("k1", 0, "DELETE", "/v1/reservations/5", kD, kNow + 10);
  ck_assert(a.verdict == V::kReused && !a.same_target);
  // keys are per uid
  ck_assert(c.answer("k1", 1000, kPost, kT, kD, kNow).verdict == V::kNew);
  // kept for keep_seconds
  ck_assert(c.answer("k1", 0, kPost, kT, kD, kNow + kDay - 1).verdict == V::kReplay);
  ck_assert(c.answer("k1", 0, kPost, kT, kD, kNow + kDay).verdict == V::kNew);
  // an unbound entry (an old state file's) replays for any request
  IdemEntry old;
  old.key = "k2";
  old.status = 200;
  old.response = "{}";
  old.when = kNow;
  c.put(old, kNow);
  ck_assert(c.answer("k2", 0, "DELETE", "/x", "dd", kNow).verdict == V::kReplay);
}
END_TEST

START_TEST(only_final_answers) {
  IdemCache c(16, 8, kDay);
  for (int st : {200, 201, 400, 403, 404, 422}) {
    ck_assert_msg(c.store("f" + std::to_string(st), 0, kPost, kT, kD, st, "{}", kNow), "%d", st);
  }
  for (int st : {409, 500, 503, 100, 302}) {
    ck_assert_msg(!c.store("n" + std::to_string(st), 0, kPost, kT, kD, st, "{}", kNow), "%d", st);
    ck_assert(c.answer("n" + std::to_string(st), 0, kPost, kT, kD, kNow).verdict == V::kNew);
  }
  ck_assert(!c.store("", 0, kPost, kT, kD, 201, "{}", kNow));  // no key
  ck_assert_uint_eq(c.stats(kNow).keys, 6);
}
END_TEST

START_TEST(one_uid_share_and_full_cache) {
  IdemCache c(8, 4, kDay);
  // uid 7 at its share loses its own oldest, not uid 8's
  ck_assert(c.store("b0", 8, kPost, kT, kD, 201, "{}", kNow));
  for (int i = 0; i < 6; i++) {
    ck_assert(c.store("a" + std::to_string(i), 7, kPost, kT, kD, 201, "{}", kNow + i));
  }
  ck_assert(c.answer("a0", 7, kPost, kT, kD, kNow + 10).verdict == V::kNew);
  ck_assert(c.answer("a1", 7, kPost, kT, kD, kNow + 10).verdict == V::kNew);
  ck_assert(c.answer("a5", 7, kPost, kT, kD, kNow + 10).verdict == V::kReplay);
  ck_assert(c.answer("b0", 8, kPost, kT, kD, kNow + 10).verdict == V::kReplay);
  auto s = c.stats(kNow + 10);
  ck_assert_uint_eq(s.keys, 5);
  ck_assert_uint_eq(s.max_uid_keys, 4);
  ck_assert_uint_eq(s.evicted_share, 2);
  // two uids fill every slot: the oldest of all goes (b0, then uid 7's)
  for (int i = 0; i < 3; i++) c.store("c" + std::to_string(i), 9, kPost, kT, kD, 201, "{}", kNow + 20);
  ck_assert_uint_eq(c.stats(kNow + 20).keys, 8);
  ck_assert(c.store("d0", 10, kPost, kT, kD, 201, "{}", kNow + 30));
  ck_assert(c.answer("b0", 8, kPost, kT, kD, kNow + 30).verdict == V::kNew);
  ck_assert_uint_eq(c.stats(kNow + 30).evicted_full, 1);
}
END_TEST

// Saved with the reservations and loaded by the next controller in
// charge (or the restarted one): a retry after a crash gets its answer.
START_TEST(retries_across_a_crash) {
  IdemCache before(64, 16, kDay);
  before.store("sub-1", 0, kPost, "/v1/reservations/5/jobs", "dd", 201, "{\"job_id\":42}", kNow);
  before.store("old", 0, kPost, kT, kD, 201, "{}", kNow - kDay - 5);  // expired
  before.store("del-5", 0, "DELETE", "/v1/reservations/5", "e3", 200, "{}", kNow + 1);
  std::vector<IdemEntry> saved;
  for (const IdemEntry* e : before.live(kNow + 2)) saved.push_back(*e);
  ck_assert_uint_eq(saved.size(), 2);
  ck_assert(saved[0].key == "sub-1" && saved[1].key == "del-5");  // oldest first

  IdemCache after(64, 16, kDay);
  for (const IdemEntry& e : saved) after.put(e, kNow + 100);
  auto a = after.answer("sub-1", 0, kPost, "/v1/reservations/5/jobs", "dd", kNow + 100);
  ck_assert(a.verdict == V::kReplay && a.entry->response == "{\"job_id\":42}");
  // the time kept is the original one, not the load's
  ck_assert(after.answer("sub-1", 0, kPost, "/v1/reservations/5/jobs", "dd", kNow + kDay)
                .verdict == V::kNew);
  ck_assert(after.answer("old", 0, kPost, kT, kD, kNow + 100).verdict == V::kNew);
  ck_assert(after.answer("del-5", 0, "DELETE", "/v1/reservations/5", "other", kNow + 100)
                .verdict == V::kReused);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("idem_cache");
  TCase* tc = tcase_create("cache");
  tcase_add_test(tc, replay_and_reuse);
  tcase_add_test(tc, only_final_answers);
  tcase_add_test(tc, one_uid_share_and_full_cache);
  tcase_add_test(tc, retries_across_a_crash);
  suite_add_tcase(s, tc);
  return s;
}

int main() { return run_check_suite(make_suite()); }
