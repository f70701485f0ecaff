// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/event_ring, the events the plugin keeps for
// GET /v1/events: pages in order with the cursor, the oldest going when the
// ring is full (and counted as lost), events a caller may not see stepped
// over, numbers never stored, the marks across a reset, the walk the state
// file takes, and the C interface plugin/events.c calls, with fake tags
// whose frees are counted -- without slurmctld.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "service/capi_events.h"
#include "service/event_ring.hpp"

#include <check.h>

#include "check_main.hpp"

using flexco::service::EventRing;
using flexco::service::RingPage;

namespace {
// a tag: the uid that may see the event
struct Owner {
  std::uint32_t uid;
};
int freed = 0;
void free_owner(void* t) {
  freed++;
  delete static_cast<Owner*>(t);
}
EventRing::Visible as(std::uint32_t uid) {
  return [uid](const void* tag) {
    return tag == nullptr || static_cast<const Owner*>(tag)->uid == uid;
  };
}
std::string ev(std::uint64_t seq) { return "{\"seq\":" + std::to_string(seq) + "}"; }
// (a page is a temporary: compared here, while it lives)
void expect(const std::string& got, const char* want) { ck_assert_str_eq(got.c_str(), want); }
}  // namespace

START_TEST(pages_in_order) {
  EventRing r(8);
  for (std::uint64_t s = 1; s <= 5; s++) r.append(s, ev(s), nullptr);
  RingPage p;
  expect(r.page(0, 100, {}, &p),
                   "{\"events\":[{\"seq\":1},{\"seq\":2},{\"seq\":3},{\"seq\":4},{\"seq\":5}],"
                   "\"next\":5,\"oldest\":1,\"latest\":5,\"lost\":false}");
  ck_assert_uint_eq(p.count, 5);
  // max, and the cursor of the last one shown
  expect(r.page(1, 2, {}, &p),
                   "{\"events\":[{\"seq\":2},{\"seq\":3}],\"next\":3,\"oldest\":1,\"latest\":5,"
                   "\"lost\":false}");
  // nothing new: next stays at after
  expect(r.page(5, 10, {}, &p),
                   "{\"events\":[],\"next\":5,\"oldest\":1,\"latest\":5,\"lost\":false}");
  // a cursor above anything handed out is lost, and told to go on at latest
  r.page(9, 10, {}, &p);
  ck_assert(p.lost);
  ck_assert_uint_eq(p.next, 5);
  ck_assert_uint_eq(r.latest(), 5);
}
END_TEST

START_TEST(full_ring_drops_oldest) {
  freed = 0;
  {
    EventRing r(3, free_owner);
    for (std::uint64_t s = 1; s <= 5; s++) r.append(s, ev(s), new Owner{1000});
    ck_assert_int_eq(freed, 2);
    const auto st = r.stats();
    ck_assert_uint_eq(st.capacity, 3);
    ck_assert_uint_eq(st.retained, 3);
    ck_assert_uint_eq(st.oldest, 3);
    ck_assert_uint_eq(st.lost_upto, 2);
    ck_assert_uint_eq(st.evicted, 2);
    RingPage p;
    // a client at 1 may have missed 2: lost, and it gets 3..5
    r.page(1, 10, as(1000), &p);
    ck_assert(p.lost);
    ck_assert_uint_eq(p.count, 3);
    // one at 2 has missed nothing
    r.page(2, 10, as(1000), &p);
    ck_assert(!p.lost);
  }
  ck_assert_int_eq(freed, 5);  // the rest at destruction
}
END_TEST

START_TEST(hidden_events_stepped_over) {
  EventRing r(8, free_owner);
  r.append(1, ev(1), new Owner{1000});
  r.append(2, ev(2), new Owner{1001});
  r.append(3, ev(3), nullptr);  // anyone
  r.append(4, ev(4), new Owner{1001});
  RingPage p;
  expect(r.page(0, 10, as(1000), &p),
                   "{\"events\":[{\"seq\":1},{\"seq\":3}],\"next\":4,\"oldest\":1,\"latest\":4,"
                   "\"lost\":false}");
  // only hidden ones after 3: none shown, the cursor moves past them
  r.page(3, 10, as(1000), &p);
  ck_assert_uint_eq(p.count, 0);
  ck_assert_uint_eq(p.next, 4);
  // max counts what is shown; the hidden one in between is stepped over
  expect(r.page(1, 1, as(1000), &p),
         "{\"events\":[{\"seq\":3}],\"next\":3,\"oldest\":1,\"latest\":4,\"lost\":false}");
  expect(r.page(0, 2, as(1001), &p),
         "{\"events\":[{\"seq\":2},{\"seq\":3}],\"next\":3,\"oldest\":1,\"latest\":4,"
         "\"lost\":false}");
}
END_TEST

START_TEST(skipped_numbers_and_marks) {
  freed = 0;
  EventRing r(4, free_owner);
  r.set_marks(100, 90);  // as a state file left them
  r.append(101, ev(101), new Owner{1});
  r.skip(102);  // handed out, never stored
  ck_assert_uint_eq(r.latest(), 102);
  ck_assert_uint_eq(r.lost_upto(), 102);
  RingPage p;
  r.page(100, 10, {}, &p);
  ck_assert(p.lost);  // 102 cannot be delivered
  r.page(102, 10, {}, &p);
  ck_assert(!p.lost);
  // reset: events and their tags go, the marks stay; a new capacity
  r.reset(2);
  ck_assert_int_eq(freed, 1);
  const auto st = r.stats();
  ck_assert_uint_eq(st.retained, 0);
  ck_assert_uint_eq(st.capacity, 2);
  ck_assert_uint_eq(st.latest, 102);
  for (std::uint64_t s = 103; s <= 106; s++) r.append(s, ev(s), nullptr);
  ck_assert_uint_eq(r.stats().oldest, 105);
}
END_TEST

START_TEST(each_for_the_state_file) {
  EventRing r(3);
  for (std::uint64_t s = 1; s <= 4; s++) r.append(s, ev(s), nullptr);
  std::vector<std::uint64_t> seen;
  r.each([&](std::uint64_t seq, const std::string& text, const void*) {
    ck_assert_str_eq(text.c_str(), ev(seq).c_str());
    seen.push_back(seq);
    return true;
  });
  ck_assert(seen == (std::vector<std::uint64_t>{2, 3, 4}));
  seen.clear();
  r.each([&](std::uint64_t seq, const std::string&, const void*) {
    seen.push_back(seq);
    return false;  // stop at the first
  });
  ck_assert_uint_eq(seen.size(), 1);
}
END_TEST

// the C interface as plugin/events.c uses it
int c_freed = 0;
void c_free(void* t) {
  c_freed++;
  std::free(t);
}
bool c_visible(const void* tag, void* arg) {
  return tag == nullptr || *static_cast<const std::uint32_t*>(tag) == *static_cast<std::uint32_t*>(arg);
}
int c_count(uint64_t, const char* text, size_t len, const void*, void* arg) {
  ck_assert_uint_eq(std::strlen(text), len);
  ++*static_cast<int*>(arg);
  return 0;
}

START_TEST(c_interface) {
  flexco_ring_t* r = flexco_ring_create(2, c_free);
  ck_assert_ptr_nonnull(r);
  auto* mine = static_cast<std::uint32_t*>(std::malloc(sizeof(std::uint32_t)));
  auto* theirs = static_cast<std::uint32_t*>(std::malloc(sizeof(std::uint32_t)));
  *mine = 7;
  *theirs = 8;
  const char* e1 = "{\"seq\":1,\"type\":\"a\"}";
  ck_assert(flexco_ring_append(r, 1, e1, std::strlen(e1), mine));
  ck_assert(flexco_ring_append(r, 2, "{\"seq\":2}", 9, theirs));
  ck_assert(flexco_ring_append(r, 3, "{\"seq\":3}", 9, nullptr));  // drops 1
  ck_assert_int_eq(c_freed, 1);
  std::uint32_t me = 8;
  flexco_ring_page_t pg;
  char* json = flexco_ring_page(r, 0, 10, c_visible, &me, &pg);
  ck_assert_str_eq(json,
                   "{\"events\":[{\"seq\":2},{\"seq\":3}],\"next\":3,\"oldest\":2,\"latest\":3,"
                   "\"lost\":true}");
  ck_assert_uint_eq(pg.count, 2);
  ck_assert(pg.lost);
  std::free(json);
  me = 9;  // sees only the one without a tag
  json = flexco_ring_page(r, 1, 10, c_visible, &me, &pg);
  ck_assert_uint_eq(pg.count, 1);
  std::free(json);
  int n = 0;
  ck_assert_int_eq(flexco_ring_each(r, c_count, &n), 0);
  ck_assert_int_eq(n, 2);
  uint64_t latest, lost;
  flexco_ring_marks(r, &latest, &lost);
  ck_assert_uint_eq(latest, 3);
  ck_assert_uint_eq(lost, 1);
  flexco_ring_stats_t st;
  flexco_ring_stats(r, &st);
  ck_assert_uint_eq(st.evicted, 1);
  flexco_ring_clear(r);
  ck_assert_int_eq(c_freed, 2);
  flexco_ring_destroy(r);
  // no ring: an empty page
  json = flexco_ring_page(nullptr, 0, 10, nullptr, nullptr, &pg);
  ck_assert_str_eq(json, "{\"events\":[],\"next\":0,\"oldest\":0,\"latest\":0,\"lost\":false}");
  std::free(json);
}
END_TEST

int main() {
  Suite* s = suite_create("event_ring");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, pages_in_order);
  tcase_add_test(tc, full_ring_drops_oldest);
  tcase_add_test(tc, hidden_events_stepped_over);
  tcase_add_test(tc, skipped_numbers_and_marks);
  tcase_add_test(tc, each_for_the_state_file);
  tcase_add_test(tc, c_interface);
  suite_add_tcase(s, tc);
  return run_check_suite(s);
}
