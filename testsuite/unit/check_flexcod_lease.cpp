// SPDX-License-Identifier: GPL-2.0-or-later
// check_flexcod_lease - flexcod's lease (src/flexcod/lease.hpp) over real
// stores: with SQLite it is taken at once and held; on a real PostgreSQL
// (pg_server.hpp) two flexcods, one in charge, the other taking over when
// the first gives it back or stops renewing; the Flexco-Epoch header is
// sent only while acting; a cluster's higher epoch is raised above.

#include <check.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "flexcod/lease.hpp"
#include "flexcod/store.hpp"
#include "pg_server.hpp"

using flexcod::Lease;
using flexcod::Store;

namespace {

std::string g_dir;
PgServer* g_pg = nullptr;

template <typename F>
bool await(F f, int ms = 15000) {
  for (int waited = 0; waited < ms; waited += 20) {
    if (f()) return true;
    usleep(20000);
  }
  return f();
}

Lease::Config config(const std::string& holder, const Store& s, bool exclusive) {
  Lease::Config c;
  c.holder = holder;
  c.address = "http://" + holder + ":26990";
  c.grid = s.instance();
  c.lease_seconds = 3;
  c.exclusive = exclusive;
  return c;
}

}  // namespace

START_TEST(sqlite_taken_at_once_and_held) {
  std::string err;
  auto s = Store::open(g_dir + "/l.db", &err);
  ck_assert_msg(s != nullptr, "%s", err.c_str());
  Lease l(*s, config("a", *s, true));
  std::atomic<std::int64_t> got{0};
  std::atomic<int> lost{0};
  std::string header;
  ck_assert(!l.fence_header(&header));  // not yet held: nothing but reads goes out
  l.start([&](std::int64_t e) { got = e; }, [&](const std::string&) { lost++; });
  ck_assert(await([&] { return got.load() == 1; }));
  ck_assert(l.acting() && l.status().in_charge && l.status().own_epoch == 1);
  ck_assert(l.fence_header(&header));
  const std::string want1 = s->instance() + ":1";
  ck_assert_str_eq(header.c_str(), want1.c_str());
  // held past its LeaseTime without renewals (the flock excludes others)
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  ck_assert(l.acting() && lost.load() == 0);
  // a cluster saw epoch 4 (a file restored from a backup): raised above it
  l.saw_epoch(4);
  ck_assert(await([&] { return l.status().own_epoch == 5; }));
  ck_assert(l.fence_header(&header) && header == s->instance() + ":5");
  l.wait_started();
  l.stop(true);
  ck_assert(!l.acting() && lost.load() == 0);
}
END_TEST

START_TEST(postgresql_one_in_charge_and_takeovers) {
  ck_assert_str_eq(g_pg->create_database("lease").c_str(), "");
  Store::Location loc;
  loc.type = "postgresql";
  loc.path = g_pg->conninfo("lease");
  std::string err;
  auto sa = Store::open(loc, &err);
  ck_assert_msg(sa != nullptr, "%s", err.c_str());
  auto sb = Store::open(loc, &err);
  ck_assert_msg(sb != nullptr, "%s", err.c_str());
  auto a = std::make_unique<Lease>(*sa, config("a", *sa, false));
  Lease b(*sb, config("b", *sb, false));
  std::atomic<std::int64_t> a_got{0}, b_got{0};
  std::atomic<int> a_lost{0}, b_lost{0};
  a->start([&](std::int64_t e) { a_got = e; }, [&](const std::string&) { a_lost++; });
  ck_assert(await([&] { return a_got.load() == 1; }));
  b.start([&](std::int64_t e) { b_got = e; }, [&](const std::string&) { b_lost++; });
  // b stays a standby while a renews (every second with LeaseTime=3)
  ck_assert(await([&] { return b.status().holder == "a"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));
  ck_assert(a->acting() && !b.acting() && b_got.load() == 0 && a_lost.load() == 0);
  const std::string addr = b.status().address;
  ck_assert_str_eq(addr.c_str(), "http://a:26990");
  std::string header;
  ck_assert(!b.fence_header(&header));
  // a clean stop gives the lease back: b takes it at its next look
  a->wait_started();
  a->stop(true);
  ck_assert(!a->acting() && !a->fence_header(&header));
  ck_assert(await([&] { return b_got.load() == 2; }, 3000));
  ck_assert(b.acting() && b.fence_header(&header) && header == sb->instance() + ":2");
  ck_assert_int_eq(b.status().takeovers, 0);  // given back, not taken over
  // a new a (as a restart) is a standby; b's renewals stop without the
  // lease given back (as if b froze or died): a takes over once the
  // database's clock says it expired, not before
  a = std::make_unique<Lease>(*sa, config("a2", *sa, false));
  a_got = 0;
  a->start([&](std::int64_t e) { a_got = e; }, [&](const std::string&) { a_lost++; });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ck_assert(a_got.load() == 0);
  b.stop(false);  // no renewal any more, nothing given back
  const auto stopped = std::chrono::steady_clock::now();
  ck_assert(await([&] { return a_got.load() == 3; }, 10000));
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  ck_assert_msg(after > 1.0 && after < 5.0, "taken over %.1f s after the last renewal could be", after);
  ck_assert(!b.acting());
  ck_assert_int_eq(a->status().takeovers, 1);
  const std::string holder = a->status().holder;
  ck_assert_str_eq(holder.c_str(), "a2");
  a->wait_started();
  a->stop(true);
  ck_assert_int_eq(b_lost.load(), 0);  // stopped, not lost: nothing told
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("flexcod_lease");
  TCase* tc = tcase_create("lease");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, sqlite_taken_at_once_and_held);
  tcase_add_test(tc, postgresql_one_in_charge_and_takeovers);
  suite_add_tcase(s, tc);
  return s;
}

int main() {
  char dir[] = "/tmp/check_flexcod_lease.XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    std::printf("Bail out! mkdtemp failed\n");
    return 1;
  }
  g_dir = dir;
  PgServer pg;
  const std::string why = pg.start();
  if (!why.empty()) {
    std::printf("Bail out! PostgreSQL: %s\n", why.c_str());
    return 1;
  }
  g_pg = &pg;
  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  pg.stop();
  std::string cmd = "rm -rf '" + g_dir + "'";
  if (std::system(cmd.c_str()) != 0) std::printf("# could not remove %s\n", g_dir.c_str());
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
