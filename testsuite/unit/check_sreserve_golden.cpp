// SPDX-License-Identifier: GPL-2.0-or-later
// Golden-output tests of every sreserve subcommand: each case in
// testsuite/sreserve_golden/ (see its README) is a command line and the
// recorded answers of the plugins and flexcod; the formatting layer must
// print exactly the recorded stdout, stderr and exit code.  No daemon runs.
//
// SRESERVE_GOLDEN_UPDATE=1 rewrites the expected files from the current
// output (then review the diff before committing).

#include <dirent.h>
#include <jansson.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sreserve/cli.hpp"
#include "sreserve/views.hpp"

// Last: check.h defines macros that clash with the C++ library.
#include <check.h>

using namespace sreserve;

namespace {

std::vector<std::string> g_cases;
std::string g_dir;

std::string case_dir() {
  std::vector<std::string> tries;
  if (const char* s = std::getenv("FLEXCO_SRCDIR"))
    tries.push_back(std::string(s) + "/testsuite/sreserve_golden");
  std::string here = __FILE__;
  auto slash = here.rfind('/');
  tries.push_back((slash == std::string::npos ? std::string(".") : here.substr(0, slash)) +
                  "/../sreserve_golden");
  tries.push_back("sreserve_golden");
  tries.push_back("testsuite/sreserve_golden");
  for (const std::string& d : tries) {
    if (DIR* h = opendir(d.c_str())) {
      closedir(h);
      return d;
    }
  }
  return std::string();
}

bool slurp(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Compares, or rewrites in update mode; returns "" or a description.
std::string expect(const std::string& path, const std::string& got) {
  if (std::getenv("SRESERVE_GOLDEN_UPDATE")) {
    spit(path, got);
    return "";
  }
  std::string want;
  if (!slurp(path, &want)) return "missing " + path;
  if (want == got) return "";
  return path + " differs; got:\n" + got + "\nexpected:\n" + want;
}

START_TEST(golden) {
  const std::string base = g_dir + "/" + g_cases[static_cast<std::size_t>(_i)];
  std::string args_text;
  ck_assert_msg(slurp(base + ".args", &args_text), "cannot read %s.args", base.c_str());
  json_error_t jerr;
  json_t* ex = json_load_file((base + ".json").c_str(), 0, &jerr);
  ck_assert_msg(ex, "%s.json: %s (line %d)", base.c_str(), jerr.text, jerr.line);
  std::int64_t now = json_integer_value(json_object_get(ex, "now"));

  std::vector<std::string> args = {"sreserve"};
  std::istringstream words(args_text);
  for (std::string w; words >> w;) args.push_back(w);
  ParseResult pr = parse_args(args, now);
  Output out;
  if (!pr.ok) {
    out.err = "sreserve: error: " + pr.error + "\n";
    out.exit_code = kExitUsage;
  } else {
    out = render(pr.options, ex);
  }
  json_decref(ex);
  std::string diff = expect(base + ".out", out.out);
  if (diff.empty())
    diff = expect(base + ".err", out.err + "exit " + std::to_string(out.exit_code) + "\n");
  if (diff.empty() && pr.ok && !pr.options.svg.empty()) diff = expect(base + ".svg", out.svg);
  ck_assert_msg(diff.empty(), "%s", diff.c_str());
}
END_TEST

}  // namespace

int main() {
  setenv("TZ", "UTC", 1);
  tzset();
  g_dir = case_dir();
  if (DIR* d = opendir(g_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".args") g_cases.push_back(n.substr(0, n.size() - 5));
    }
    closedir(d);
  }
  std::sort(g_cases.begin(), g_cases.end());
  if (g_cases.empty()) {
    std::printf("1..1\nnot ok 1 - no sreserve_golden/*.args found (set FLEXCO_SRCDIR)\n");
    return EXIT_FAILURE;
  }
  Suite* s = suite_create("sreserve_golden");
  // One test case per golden case, so each TAP line names its case.
  for (std::size_t i = 0; i < g_cases.size(); ++i) {
    TCase* tc = tcase_create(g_cases[i].c_str());
    tcase_add_loop_test(tc, golden, static_cast<int>(i), static_cast<int>(i) + 1);
    suite_add_tcase(s, tc);
  }
  SRunner* sr = srunner_create(s);
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
