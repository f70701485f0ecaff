// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/event_seq, the events' sequence numbers,
// against a fake disk that holds the saved mark and fails saves with
// ENOSPC or EIO when told to: no number is ever handed out above the mark
// on disk, so after a crash at any moment, a takeover by the other
// controller (which loads the same file) or a restart from the previous
// copy, every number handed out afterwards is above every one handed out
// before.  Without slurmctld.

#include <cerrno>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "service/capi_events.h"
#include "service/event_seq.hpp"

#include <check.h>

#include "check_main.hpp"

using flexco::service::SeqMarks;

namespace {

// The state file: the last mark saved; fail: the errno of the next saves.
struct FakeDisk {
  bool has_file = false;
  std::uint64_t mark = 0;
  int fail = 0;
  int saves = 0, failures = 0;
  bool save(std::uint64_t m) {
    saves++;
    if (fail != 0) {
      failures++;
      return false;
    }
    mark = m;
    has_file = true;
    return true;
  }
  // What a new controller (or the restarted one) loads after a crash.
  SeqMarks::Source source() const {
    return has_file ? SeqMarks::Source::kCurrent : SeqMarks::Source::kNone;
  }
  SeqMarks::Saved saved() const {
    SeqMarks::Saved s;
    s.reserved = mark;
    s.clean = false;  // a crash
    return s;
  }
};

}  // namespace

START_TEST(fresh_start_numbers_from_one_after_saving_a_block) {
  FakeDisk disk;
  SeqMarks m;
  m.restore(SeqMarks::Source::kNone, {}, 0);
  std::uint64_t first = m.take(3, [&](std::uint64_t mark) { return disk.save(mark); });
  ck_assert_uint_eq(first, 1);
  ck_assert_uint_eq(disk.mark, 3 + SeqMarks::kBlock);
  ck_assert_uint_eq(disk.saves, 1);
  // inside the block: no save
  first = m.take(10, [&](std::uint64_t mark) { return disk.save(mark); });
  ck_assert_uint_eq(first, 4);
  ck_assert_uint_eq(disk.saves, 1);
  // past it: one more save
  m.take(SeqMarks::kBlock, [&](std::uint64_t mark) { return disk.save(mark); });
  ck_assert_uint_eq(disk.saves, 2);
  ck_assert_uint_eq(m.next(), 14 + SeqMarks::kBlock);
}
END_TEST

START_TEST(failed_save_hands_out_nothing) {
  for (int err : {ENOSPC, EIO}) {
    FakeDisk disk;
    disk.fail = err;
    SeqMarks m;
    m.restore(SeqMarks::Source::kNone, {}, 0);
    ck_assert_uint_eq(m.take(5, [&](std::uint64_t mark) { return disk.save(mark); }), 0);
    ck_assert_uint_eq(m.next(), 1);
    ck_assert_uint_eq(m.reserved(), 0);
    // the disk is back: the same events get 1..5
    disk.fail = 0;
    ck_assert_uint_eq(m.take(5, [&](std::uint64_t mark) { return disk.save(mark); }), 1);
  }
}
END_TEST

// Random batches, saves failing at random with ENOSPC or EIO, and a crash
// (or a takeover: the other controller loads the same file) at random:
// numbers strictly increase across all of it and never exceed the mark
// on disk when they are handed out.
START_TEST(never_reused_across_crashes_and_failing_saves) {
  std::mt19937 rng(4242 + static_cast<unsigned>(_i));
  FakeDisk disk;
  SeqMarks m;
  m.restore(SeqMarks::Source::kNone, {}, 0);
  std::uint64_t top = 0;  // the highest number handed out so far
  std::set<std::uint64_t> seen;
  int crashes = 0, held = 0;
  for (int step = 0; step < 20000; step++) {
    const unsigned r = rng() % 100;
    if (r < 2) {  // crash or takeover
      SeqMarks next;
      next.restore(disk.source(), disk.saved(), 1);
      m = next;
      crashes++;
      ck_assert_uint_gt(m.next(), top);
      continue;
    }
    disk.fail = (r < 30) ? ((r & 1) ? ENOSPC : EIO) : 0;
    const std::size_t n = 1 + rng() % 40;
    const std::uint64_t first = m.take(n, [&](std::uint64_t mark) { return disk.save(mark); });
    if (first == 0) {
      held++;
      continue;
    }
    ck_assert_uint_gt(first, top);
    for (std::size_t k = 0; k < n; k++) {
      ck_assert_msg(seen.insert(first + k).second, "number %llu handed out twice",
                    static_cast<unsigned long long>(first + k));
    }
    top = first + n - 1;
    ck_assert_msg(disk.has_file && top <= disk.mark, "number %llu above the mark on disk %llu",
                  static_cast<unsigned long long>(top), static_cast<unsigned long long>(disk.mark));
  }
  ck_assert_int_gt(crashes, 100);
  ck_assert_int_gt(held, 100);
  ck_assert_int_gt(disk.failures, 100);
}
END_TEST

START_TEST(restore_rules) {
  SeqMarks m;
  SeqMarks::Saved s;
  s.reserved = 5000;
  s.latest = 4100;
  s.lost_upto = 10;
  s.clean = true;  // a clean stop: exactly what was published
  auto r = m.restore(SeqMarks::Source::kCurrent, s, 1796000000000000ull);
  ck_assert_uint_eq(r.next, 5001);
  ck_assert_uint_eq(r.latest, 4100);
  ck_assert_uint_eq(r.lost_upto, 10);
  s.clean = false;  // a crash: up to the mark may be gone
  r = m.restore(SeqMarks::Source::kCurrent, s, 1796000000000000ull);
  ck_assert_uint_eq(r.next, 5001);
  ck_assert_uint_eq(r.latest, 5000);
  ck_assert_uint_eq(r.lost_upto, 5000);
  // the previous copy: the lost current one may have reserved more
  r = m.restore(SeqMarks::Source::kPrevious, s, 1796000000000000ull);
  ck_assert_uint_eq(r.next, 1796000000000000ull);
  ck_assert_uint_eq(r.lost_upto, 1796000000000000ull - 1);
  // no valid copy: the same floor
  r = m.restore(SeqMarks::Source::kLost, s, 1796000000000000ull);
  ck_assert_uint_eq(r.next, 1796000000000000ull);
  ck_assert_uint_eq(m.next(), 1796000000000000ull);
  r = m.restore(SeqMarks::Source::kNone, s, 1796000000000000ull);
  ck_assert_uint_eq(r.next, 1);
  ck_assert_uint_eq(r.latest, 0);
}
END_TEST

namespace {
int c_fails = 0;
std::vector<std::uint64_t> c_marks;
int c_save(std::uint64_t mark, void*) {
  if (c_fails > 0) {
    c_fails--;
    return -1;
  }
  c_marks.push_back(mark);
  return 0;
}
}  // namespace

START_TEST(c_interface) {
  flexco_seq_t seq = {1, 0};
  flexco_seq_saved_t saved = {700, 650, 0, false};
  std::uint64_t latest = 0, lost = 0;
  flexco_seq_restore(&seq, FLEXCO_SEQ_CURRENT, &saved, 99, &latest, &lost);
  ck_assert_uint_eq(seq.next, 701);
  ck_assert_uint_eq(seq.reserved, 700);
  ck_assert_uint_eq(latest, 700);
  ck_assert_uint_eq(lost, 700);
  c_fails = 1;
  ck_assert_uint_eq(flexco_seq_take(&seq, 2, c_save, nullptr), 0);
  ck_assert_uint_eq(seq.next, 701);
  ck_assert_uint_eq(flexco_seq_take(&seq, 2, c_save, nullptr), 701);
  ck_assert_uint_eq(c_marks.size(), 1);
  ck_assert_uint_eq(c_marks[0], 702 + SeqMarks::kBlock);
  ck_assert_uint_eq(seq.reserved, 702 + SeqMarks::kBlock);
  ck_assert_uint_eq(seq.next, 703);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("event_seq");
  TCase* tc = tcase_create("seq");
  tcase_add_test(tc, fresh_start_numbers_from_one_after_saving_a_block);
  tcase_add_test(tc, failed_save_hands_out_nothing);
  tcase_add_loop_test(tc, never_reused_across_crashes_and_failing_saves, 0, 4);
  tcase_add_test(tc, restore_rules);
  tcase_add_test(tc, c_interface);
  suite_add_tcase(s, tc);
  return s;
}

int main() { return run_check_suite(make_suite()); }
