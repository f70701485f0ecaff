// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/flexcod/ui: the name check of the web view's static
// files (a table of hostile paths, then a seeded fuzz run: whatever is
// accepted is one plain file name of the directory), reading them (no
// symbolic link, no directory, nothing too large) and the session token
// store (format, expiry, forgery, the per-user and total bounds).

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "flexcod/ui.hpp"

#include <check.h>

namespace ui = flexcod::ui;

namespace {

bool accepted(const std::string& rest, std::string* name = nullptr, const char** type = nullptr) {
  std::string n;
  const char* t = nullptr;
  const bool ok = ui::static_file(rest, &n, &t);
  if (name) *name = n;
  if (type) *type = t;
  return ok;
}

START_TEST(known_names) {
  std::string name;
  const char* type = nullptr;
  ck_assert(accepted("", &name, &type));
  ck_assert_str_eq(name.c_str(), "index.html");
  ck_assert_str_eq(type, "text/html; charset=utf-8");
  ck_assert(accepted("app.js", &name, &type));
  ck_assert_str_eq(type, "text/javascript; charset=utf-8");
  ck_assert(accepted("style.css", &name, &type));
  ck_assert_str_eq(type, "text/css; charset=utf-8");
  ck_assert(accepted("logo_2-x.svg", &name, &type));
  ck_assert_str_eq(type, "image/svg+xml");
  ck_assert(accepted("ui.png", &name, &type));
  ck_assert_str_eq(type, "image/png");
}
END_TEST

START_TEST(hostile_names) {
  const char* bad[] = {
      "..", "../", "../flexcod.conf", "..%2f..%2fetc%2fpasswd", "%2e%2e/", "%2e%2e%2fx.js",
      ".hidden.js", ".html", "a/b.js", "a\\b.js", "/etc/passwd", "//x.js", "x.js/", "x.js/..",
      "app.js.bak", "app.JS", "app", "app.", "app..js", "app.js%00.html",
      "app .js", "app.js ", "app.js?x", "index.html#x", "ä.js", "x.exe", "x.sh", "x.db", "flexcod.db",
      "x.html/", "~root.js", "$HOME.js",
  };
  for (const char* b : bad) ck_assert_msg(!accepted(b), "accepted \"%s\"", b);
  ck_assert(!accepted(std::string("app.js\0", 7)));
  ck_assert(!accepted(std::string("app\0.js", 7)));
  ck_assert(!accepted(std::string(65, 'a') + ".js"));
  ck_assert(accepted(std::string(64, 'a') + ".js"));
}
END_TEST

// Seeded fuzz run: random strings over an alphabet rich in path syntax.
// Whatever is accepted names one file of the directory itself: no '/',
// no '\\', no "..", no '%', no leading '.', a known extension.
START_TEST(fuzz_names) {
  const std::string alphabet = "./\\%2eEfF0aZ_-~:?#&;= \t\x01\xff" "jshtmlcsvgpnico";
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> len(0, 24);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::size_t accepted_n = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string s;
    const int n = len(rng);
    for (int k = 0; k < n; ++k) s += alphabet[pick(rng)];
    std::string name;
    if (!accepted(s, &name)) continue;
    ++accepted_n;
    ck_assert_msg(name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
                      name.find("..") == std::string::npos && name.find('%') == std::string::npos &&
                      name[0] != '.' && name.find('\0') == std::string::npos,
                  "accepted \"%s\"", s.c_str());
    const std::string ext = name.substr(name.find('.') + 1);
    ck_assert(ext == "html" || ext == "js" || ext == "css" || ext == "svg" || ext == "png" || ext == "ico");
  }
  ck_assert_msg(accepted_n > 0, "the fuzz run never reached an accepted name");
}
END_TEST

START_TEST(reading_files) {
  char tmpl[] = "/tmp/check_flexcod_ui.XXXXXX";
  ck_assert(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  { std::ofstream(dir + "/index.html") << "<html>hi</html>"; }
  ck_assert_int_eq(symlink("/etc/hostname", (dir + "/link.html").c_str()), 0);
  ck_assert_int_eq(mkdir((dir + "/sub.css").c_str(), 0755), 0);
  {
    std::ofstream big(dir + "/big.js");
    big << std::string(ui::kMaxStaticFile + 1, 'x');
  }
  std::string out;
  ck_assert(ui::read_static(dir, "index.html", &out));
  ck_assert_str_eq(out.c_str(), "<html>hi</html>");
  ck_assert(!ui::read_static(dir, "link.html", &out));   // a symbolic link
  ck_assert(!ui::read_static(dir, "sub.css", &out));     // a directory
  ck_assert(!ui::read_static(dir, "big.js", &out));      // too large
  ck_assert(!ui::read_static(dir, "missing.js", &out));  // none
  for (const char* f : {"/index.html", "/link.html", "/big.js"}) unlink((dir + f).c_str());
  rmdir((dir + "/sub.css").c_str());
  rmdir(dir.c_str());
}
END_TEST

START_TEST(tokens) {
  ui::TokenStore store;
  auto a = store.issue(1000, 60, 1000000);
  auto b = store.issue(1001, 60, 1000000);
  ck_assert(a && b);
  ck_assert_uint_eq(a->token.size(), 64);
  ck_assert(a->token != b->token);
  ck_assert_int_eq(a->expires, 1000060);
  uid_t uid = 0;
  ck_assert(store.check(a->token, 1000010, &uid) == ui::TokenStore::Verdict::kValid);
  ck_assert_int_eq(uid, 1000);
  ck_assert(store.check(b->token, 1000059, &uid) == ui::TokenStore::Verdict::kValid);
  ck_assert_int_eq(uid, 1001);
  // expired: at its expiry and after
  ck_assert(store.check(a->token, 1000060, &uid) == ui::TokenStore::Verdict::kUnknown);
  // forged: well formed, never issued; one digit changed
  ck_assert(store.check(std::string(64, 'a'), 1000010, &uid) == ui::TokenStore::Verdict::kUnknown);
  std::string c = a->token;
  c[10] = c[10] == '0' ? '1' : '0';
  ck_assert(store.check(c, 1000010, &uid) == ui::TokenStore::Verdict::kUnknown);
  // malformed
  ck_assert(store.check("", 1000010, &uid) == ui::TokenStore::Verdict::kMalformed);
  ck_assert(store.check(a->token.substr(1), 1000010, &uid) == ui::TokenStore::Verdict::kMalformed);
  std::string upper = a->token;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (upper != a->token) {
    ck_assert(store.check(upper, 1000010, &uid) == ui::TokenStore::Verdict::kMalformed);
  }
  // the store holds digests only: the token text is nowhere in it
  ck_assert_uint_eq(store.size(), 2);
}
END_TEST

START_TEST(token_bounds) {
  ui::TokenStore store;
  std::vector<std::string> mine;
  for (std::size_t i = 0; i < ui::kMaxTokensPerUid + 5; ++i) {
    auto t = store.issue(7, 3600, 1000 + static_cast<std::int64_t>(i));
    ck_assert(t);
    mine.push_back(t->token);
  }
  // one user's oldest tokens gave way; the newest still work
  ck_assert_uint_eq(store.size(), ui::kMaxTokensPerUid);
  uid_t uid = 0;
  ck_assert(store.check(mine.front(), 2000, &uid) == ui::TokenStore::Verdict::kUnknown);
  ck_assert(store.check(mine.back(), 2000, &uid) == ui::TokenStore::Verdict::kValid);
  // all users: at most kMaxTokens live ones
  for (uid_t u = 100; store.size() < ui::kMaxTokens; ++u) ck_assert(store.issue(u, 3600, 2000));
  ck_assert(!store.issue(99999, 3600, 2000));
  // once they expire there is room again
  ck_assert(store.issue(99999, 3600, 10000));
  ck_assert_uint_eq(store.size(), 1);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("flexcod_ui");
  TCase* tc = tcase_create("ui");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, known_names);
  tcase_add_test(tc, hostile_names);
  tcase_add_test(tc, fuzz_names);
  tcase_add_test(tc, reading_files);
  tcase_add_test(tc, tokens);
  tcase_add_test(tc, token_bounds);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
