// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/statefile, the writer and loader of every
// state file of the plugin, on a scratch directory: a save keeps the copy
// it replaces as .prev; a write that fails with ENOSPC or EIO, an fsync
// that fails, or a rename that fails leaves the current copy as it was and
// no temporary file behind; a load takes the newest valid copy and keeps
// a rejected one as .bad.*; leftovers of interrupted saves go; the state
// lock keeps out a second holder.  write(), fsync() and rename() are
// wrapped at link time (-Wl,--wrap) so that a test can make them fail.

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "service/statefile.h"

#include <check.h>

#include "check_main.hpp"

// Failures to inject: 0 none, else the errno the call fails with.
static int fail_write = 0, fail_fsync = 0, fail_rename = 0;

extern "C" {
ssize_t __real_write(int fd, const void* buf, size_t n);
int __real_fsync(int fd);
int __real_rename(const char* a, const char* b);

ssize_t __wrap_write(int fd, const void* buf, size_t n) {
  if (fail_write != 0) {
    errno = fail_write;
    return -1;
  }
  return __real_write(fd, buf, n);
}
int __wrap_fsync(int fd) {
  if (fail_fsync != 0) {
    errno = fail_fsync;
    return -1;
  }
  return __real_fsync(fd);
}
int __wrap_rename(const char* a, const char* b) {
  if (fail_rename != 0) {
    errno = fail_rename;
    return -1;
  }
  return __real_rename(a, b);
}
}

namespace {

std::vector<std::string> logged;

void log_line(bool is_error, const char* msg) {
  logged.push_back(std::string(is_error ? "error: " : "info: ") + msg);
}

std::string scratch() {
  char tmpl[] = "/tmp/check_statefile.XXXXXX";
  const char* d = mkdtemp(tmpl);
  ck_assert_ptr_nonnull(d);
  return d;
}

std::string slurp(const std::string& p) {
  FILE* f = std::fopen(p.c_str(), "r");
  if (f == nullptr) return "<none>";
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

void put(const std::string& p, const std::string& text) {
  FILE* f = std::fopen(p.c_str(), "w");
  ck_assert_ptr_nonnull(f);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// Names in dir that start with prefix.
std::vector<std::string> names(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  ck_assert_ptr_nonnull(d);
  while (struct dirent* e = readdir(d))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) out.push_back(e->d_name);
  closedir(d);
  return out;
}

void wipe(const std::string& dir) {
  for (const auto& n : names(dir, "")) {
    if (n == "." || n == "..") continue;
    (void)unlink((dir + "/" + n).c_str());
  }
  (void)rmdir(dir.c_str());
}

// The parser: a copy is valid when it starts with "ok"; what it read.
std::string parsed;
int parse(const char* text, size_t len, void* arg, char* why, size_t why_len) {
  (void)arg;
  if (len < 2 || std::strncmp(text, "ok", 2) != 0) {
    std::snprintf(why, why_len, "not ok");
    return -1;
  }
  parsed.assign(text, len);
  return 0;
}

}  // namespace

START_TEST(save_keeps_the_previous_copy) {
  statefile_set_log(log_line);
  const std::string d = scratch(), p = d + "/s.json";
  char err[256] = "";
  ck_assert_int_eq(statefile_write("test", p.c_str(), "ok 1", err, sizeof(err)), 0);
  ck_assert_str_eq(slurp(p).c_str(), "ok 1");
  ck_assert_str_eq(slurp(p + ".prev").c_str(), "<none>");
  ck_assert_int_eq(statefile_write("test", p.c_str(), "ok 2", err, sizeof(err)), 0);
  ck_assert_str_eq(slurp(p).c_str(), "ok 2");
  ck_assert_str_eq(slurp(p + ".prev").c_str(), "ok 1");
  struct stat st;
  ck_assert_int_eq(stat(p.c_str(), &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);  // readable by its owner only
  ck_assert(names(d, "s.json.new").empty());
  wipe(d);
}
END_TEST

// Each failure point: the save fails with the reason, the current copy is
// the one before, no temporary file is left.
static void failing_save(int* which, int e, const char* want) {
  statefile_set_log(log_line);
  const std::string d = scratch(), p = d + "/s.json";
  char err[256] = "";
  ck_assert_int_eq(statefile_write("test", p.c_str(), "ok before", err, sizeof(err)), 0);
  logged.clear();
  *which = e;
  const int rc = statefile_write("test", p.c_str(), "ok after", err, sizeof(err));
  *which = 0;
  ck_assert_int_eq(rc, -1);
  ck_assert_msg(std::strstr(err, want) != nullptr, "err '%s' lacks '%s'", err, want);
  ck_assert_msg(std::strstr(err, std::strerror(e)) != nullptr, "err '%s'", err);
  ck_assert_str_eq(slurp(p).c_str(), "ok before");
  ck_assert(names(d, "s.json.new").empty());
  ck_assert(names(d, "s.json.prev.new").empty());
  // logged once as not saved (a failing rename also fails keeping .prev)
  ck_assert(!logged.empty());
  ck_assert(logged.back().rfind("error: test: state not saved: ", 0) == 0);
  // the disk recovers: the next save works
  ck_assert_int_eq(statefile_write("test", p.c_str(), "ok again", err, sizeof(err)), 0);
  ck_assert_str_eq(slurp(p).c_str(), "ok again");
  wipe(d);
}

START_TEST(enospc_on_write) { failing_save(&fail_write, ENOSPC, "cannot write"); }
END_TEST

START_TEST(eio_on_write) { failing_save(&fail_write, EIO, "cannot write"); }
END_TEST

START_TEST(eio_on_fsync) { failing_save(&fail_fsync, EIO, "fsync"); }
END_TEST

START_TEST(enospc_on_fsync) { failing_save(&fail_fsync, ENOSPC, "fsync"); }
END_TEST

START_TEST(eio_on_rename) { failing_save(&fail_rename, EIO, "cannot rename"); }
END_TEST

START_TEST(load_takes_the_newest_valid_copy) {
  statefile_set_log(log_line);
  const std::string d = scratch(), p = d + "/s.json";
  parsed.clear();
  ck_assert_int_eq(statefile_load("test", p.c_str(), 1024, parse, nullptr), STATEFILE_NONE);
  put(p, "ok cur");
  put(p + ".prev", "ok prev");
  ck_assert_int_eq(statefile_load("test", p.c_str(), 1024, parse, nullptr), STATEFILE_CURRENT);
  ck_assert_str_eq(parsed.c_str(), "ok cur");
  // a corrupt current copy: the previous one, the bad one kept aside
  put(p, "garbage");
  ck_assert_int_eq(statefile_load("test", p.c_str(), 1024, parse, nullptr), STATEFILE_PREV);
  ck_assert_str_eq(parsed.c_str(), "ok prev");
  ck_assert_uint_eq(names(d, "s.json.bad.").size(), 1);
  ck_assert_str_eq(slurp(p).c_str(), "<none>");
  // larger than the limit counts as invalid
  put(p + ".prev", "ok but far too long for the limit");
  ck_assert_int_eq(statefile_load("test", p.c_str(), 8, parse, nullptr), STATEFILE_LOST);
  wipe(d);
}
END_TEST

START_TEST(interrupted_saves_are_swept) {
  statefile_set_log(log_line);
  const std::string d = scratch(), p = d + "/s.json";
  put(p, "ok");
  put(p + ".new.123.1", "half");
  put(p + ".prev.new.123.2", "half");
  put(d + "/other.json.new.1.1", "not ours");
  ck_assert_int_eq(statefile_load("test", p.c_str(), 1024, parse, nullptr), STATEFILE_CURRENT);
  ck_assert(names(d, "s.json.new").empty());
  ck_assert(names(d, "s.json.prev.new").empty());
  ck_assert_uint_eq(names(d, "other.json.new").size(), 1);
  wipe(d);
}
END_TEST

START_TEST(state_lock_has_one_holder) {
  statefile_set_log(log_line);
  const std::string d = scratch(), p = d + "/flexco_state.lock";
  bool elsewhere = true;
  const int fd = statefile_lock_try(p.c_str(), &elsewhere);
  ck_assert_int_ge(fd, 0);
  ck_assert(!elsewhere);
  // a second open file description (another start, another controller)
  ck_assert_int_eq(statefile_lock_try(p.c_str(), &elsewhere), -1);
  ck_assert(elsewhere);
  statefile_unlock(fd);
  const int fd2 = statefile_lock_try(p.c_str(), &elsewhere);
  ck_assert_int_ge(fd2, 0);
  statefile_unlock(fd2);
  wipe(d);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("statefile");
  TCase* tc = tcase_create("statefile");
  tcase_add_test(tc, save_keeps_the_previous_copy);
  tcase_add_test(tc, enospc_on_write);
  tcase_add_test(tc, eio_on_write);
  tcase_add_test(tc, eio_on_fsync);
  tcase_add_test(tc, enospc_on_fsync);
  tcase_add_test(tc, eio_on_rename);
  tcase_add_test(tc, load_takes_the_newest_valid_copy);
  tcase_add_test(tc, interrupted_saves_are_swept);
  tcase_add_test(tc, state_lock_has_one_holder);
  suite_add_tcase(s, tc);
  return s;
}

int main() { return run_check_suite(make_suite()); }
