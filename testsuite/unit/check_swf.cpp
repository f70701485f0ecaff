// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/core/swf.{hpp,cpp} (doc/swf.md): the golden cases in
// testsuite/unit/swf_cases (one loop iteration per NAME.expect, format in
// swf_cases/README), table tests of parse_job and the header, the reader's
// edges (options, I/O errors, sticky errors, lines across buffer refills),
// OrderedReader, and one full read of a real trace.
//
// Environment:
//   FLEXCO_SRCDIR  top source directory (default: found from __FILE__)
//   FLEXCO_TRACES  the traces (default: $FLEXCO_SRCDIR/contrib/sim/traces);
//                  the real-trace test fails, never skips, when it is missing.

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/swf.hpp"

// Last: check.h defines macros (fail, ...) that clash with the C++ library.
#include <check.h>

namespace swf = flexco::swf;

namespace {

// ---------------------------------------------------------------------------
// Helpers

// Check keeps a failure message's char pointers past the full expression, so
// strings are compared whole and formatted into the message at once.
#define EXPECT_STR_EQ(X, Y)                                                              \
  do {                                                                                   \
    const std::string got_ = (X);                                                        \
    const std::string want_ = (Y);                                                       \
    ck_assert_msg(got_ == want_, "line %d: %s:\n  got  '%s'\n  want '%s'", __LINE__, #X, \
                  got_.c_str(), want_.c_str());                                          \
  } while (0)

#define EXPECT_EQ(X, Y)                                                                   \
  do {                                                                                    \
    const std::int64_t got_ = static_cast<std::int64_t>(X);                               \
    const std::int64_t want_ = static_cast<std::int64_t>(Y);                              \
    ck_assert_msg(got_ == want_, "line %d: %s == %" PRId64 ", expected %" PRId64, __LINE__, \
                  #X, got_, want_);                                                       \
  } while (0)

template <typename T>
T value_or_fail(swf::Result<T> r, const char* expr, int line) {
  if (!r.ok()) ck_abort_msg("line %d: %s failed: %s", line, expr, r.error().message.c_str());
  return std::move(r).value();
}
#define VAL(expr) value_or_fail((expr), #expr, __LINE__)

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool is_dir(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string srcdir() {
  if (const char* s = std::getenv("FLEXCO_SRCDIR"); s != nullptr && *s != '\0') return s;
  return dir_of(__FILE__) + "/../..";  // testsuite/unit/check_swf.cpp
}

std::string case_dir() { return srcdir() + "/testsuite/unit/swf_cases"; }

std::string traces_dir() {
  if (const char* s = std::getenv("FLEXCO_TRACES"); s != nullptr && *s != '\0') return s;
  return srcdir() + "/contrib/sim/traces";
}

bool read_whole(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The 18 fields of a job as numbers, -1 for unknown (exact: all values are
// at most 2^53 - 1).
std::vector<double> fields_of(const swf::Job& j) {
  auto i = [](const std::optional<std::int64_t>& v) { return v ? static_cast<double>(*v) : -1.0; };
  auto d = [](const std::optional<double>& v) { return v ? *v : -1.0; };
  return {static_cast<double>(j.job_number),
          static_cast<double>(j.submit_time),
          i(j.wait_time),
          i(j.run_time),
          i(j.allocated_procs),
          d(j.average_cpu_time),
          d(j.used_memory),
          i(j.requested_procs),
          i(j.requested_time),
          i(j.requested_memory),
          j.status ? static_cast<double>(static_cast<int>(*j.status)) : -1.0,
          i(j.user_id),
          i(j.group_id),
          i(j.executable),
          i(j.queue),
          i(j.partition),
          i(j.preceding_job),
          i(j.think_time)};
}

// Everything one read produced, then one more next() to check stickiness.
struct Outcome {
  bool opened = false;
  swf::Error open_error;
  std::vector<swf::Job> jobs;
  std::optional<swf::Error> error;
  std::vector<swf::Error> diagnostics;
  std::int64_t dropped = 0;
  swf::Stats stats;
  swf::Header header;
};

void drain(swf::Reader& reader, Outcome& out) {
  for (int guard = 0; guard < 1000000; ++guard) {
    auto next = reader.next();
    if (!next.ok()) {
      out.error = next.error();
      auto again = reader.next();
      ck_assert_msg(!again.ok() && again.error().message == out.error->message,
                    "an error must be sticky: '%s'", out.error->message.c_str());
      break;
    }
    if (!next.value()) {
      auto again = reader.next();
      ck_assert_msg(again.ok() && !again.value(), "the end must be sticky");
      break;
    }
    out.jobs.push_back(*next.value());
  }
  out.diagnostics = reader.diagnostics();
  out.dropped = reader.dropped_diagnostics();
  out.stats = reader.stats();
  out.header = reader.header();
}

Outcome read_path(const std::string& path, const swf::Options& options) {
  Outcome out;
  auto reader = swf::Reader::open(path, options);
  if (!reader.ok()) {
    out.open_error = reader.error();
    return out;
  }
  out.opened = true;
  drain(reader.value(), out);
  return out;
}

Outcome read_text(const std::string& text, const swf::Options& options) {
  Outcome out;
  auto reader = swf::Reader::from_string(text, options);
  if (!reader.ok()) {
    out.open_error = reader.error();
    return out;
  }
  out.opened = true;
  drain(reader.value(), out);
  return out;
}

// ---------------------------------------------------------------------------
// Golden cases

std::vector<std::string> g_cases;  // NAME of every swf_cases/NAME.expect, sorted

std::vector<std::string> list_cases(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (ends_with(name, ".expect")) names.push_back(name.substr(0, name.size() - 7));
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

struct LineText {
  std::int64_t line = 0;
  std::string text;
};

struct Expect {
  swf::Options options;
  std::optional<std::int64_t> jobs;
  std::vector<LineText> errors;
  std::int64_t dropped = 0;
  std::optional<std::int64_t> strict_jobs;
  std::optional<LineText> strict_error;
  std::optional<LineText> strict_open_error;
  std::optional<LineText> io_error;
  bool has_header = false;
  std::vector<swf::HeaderField> header;
  std::map<std::string, std::string> typed;  // "max-nodes" -> "338" | "none"
  std::map<std::int64_t, std::vector<std::string>> job_fields;
  std::map<std::string, std::int64_t> stats;  // "lines", "comments", "blank"
};

std::int64_t to_int(const std::string& s, const std::string& where) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0) ck_abort_msg("%s: not an integer: '%s'", where.c_str(), s.c_str());
  return v;
}

// "LINE TEXT" -> {LINE, TEXT}
LineText line_text(const std::string& rest, const std::string& where) {
  const std::size_t sp = rest.find(' ');
  if (sp == std::string::npos) ck_abort_msg("%s: expected 'LINE TEXT'", where.c_str());
  return LineText{to_int(rest.substr(0, sp), where), rest.substr(sp + 1)};
}

Expect parse_expect(const std::string& path) {
  std::ifstream in(path);
  ck_assert_msg(in.good(), "cannot read %s", path.c_str());
  Expect ex;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = path + ":" + std::to_string(n);
    if (line.empty() || line[0] == '#') continue;
    const std::size_t sp = line.find(' ');
    const std::string word = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    std::istringstream args(rest);
    if (word == "option") {
      std::string name;
      std::string value;
      args >> name >> value;
      if (name == "max-line-length") {
        ex.options.max_line_length = static_cast<std::size_t>(to_int(value, where));
      } else if (name == "max-diagnostics") {
        ex.options.max_diagnostics = static_cast<std::size_t>(to_int(value, where));
      } else {
        ck_abort_msg("%s: unknown option '%s'", where.c_str(), name.c_str());
      }
    } else if (word == "jobs") {
      ex.jobs = to_int(rest, where);
    } else if (word == "error") {
      ex.errors.push_back(line_text(rest, where));
    } else if (word == "dropped") {
      ex.dropped = to_int(rest, where);
    } else if (word == "strict-jobs") {
      ex.strict_jobs = to_int(rest, where);
    } else if (word == "strict-error") {
      ex.strict_error = line_text(rest, where);
    } else if (word == "strict-open-error") {
      ex.strict_open_error = line_text(rest, where);
    } else if (word == "io-error") {
      ex.io_error = line_text(rest, where);
    } else if (word == "header") {
      // "LINE KEY: VALUE" or "LINE KEY:"
      const LineText lt = line_text(rest, where);
      const std::size_t colon = lt.text.find(':');
      if (colon == std::string::npos) ck_abort_msg("%s: expected 'KEY: VALUE'", where.c_str());
      std::string value = lt.text.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
      ex.has_header = true;
      ex.header.push_back(swf::HeaderField{lt.text.substr(0, colon), value, lt.line});
    } else if (word == "max-nodes" || word == "max-procs" || word == "unix-start-time" ||
               word == "time-zone-string") {
      ex.typed[word] = rest;
    } else if (word == "job") {
      std::vector<std::string> tokens;
      std::string t;
      while (args >> t) tokens.push_back(t);
      if (tokens.size() != 19) ck_abort_msg("%s: expected LINE and 18 fields", where.c_str());
      const std::int64_t at = to_int(tokens[0], where);
      tokens.erase(tokens.begin());
      ex.job_fields[at] = tokens;
    } else if (word == "lines" || word == "comments" || word == "blank") {
      ex.stats[word] = to_int(rest, where);
    } else {
      ck_abort_msg("%s: unknown directive '%s'", where.c_str(), word.c_str());
    }
  }
  if (!ex.jobs) ck_abort_msg("%s: no 'jobs' directive", path.c_str());
  if (!ex.errors.empty() && !ex.strict_error && !ex.strict_open_error && !ex.io_error) {
    ck_abort_msg("%s: lenient errors but no strict-error / strict-open-error", path.c_str());
  }
  return ex;
}

std::string typed_text(const std::optional<std::int64_t>& v) {
  return v ? std::to_string(*v) : "none";
}

void check_error(const char* name, const char* what, const swf::Error& got, swf::Errc code,
                 const LineText& want, const std::string& message) {
  ck_assert_msg(got.code == code, "case %s: %s: code %s, expected %s (%s)", name, what,
                swf::errc_name(got.code), swf::errc_name(code), got.message.c_str());
  ck_assert_msg(got.line == want.line, "case %s: %s: line %" PRId64 ", expected %" PRId64 " (%s)",
                name, what, got.line, want.line, got.message.c_str());
  ck_assert_msg(got.message == message, "case %s: %s:\n  got  '%s'\n  want '%s'", name, what,
                got.message.c_str(), message.c_str());
}

std::string format_message(const LineText& lt) { return "line " + std::to_string(lt.line) + ": " + lt.text; }

// The lenient outcome against the expectations (also used for the string source).
void check_lenient(const char* name, const char* source, const Expect& ex, const Outcome& out,
                   const std::string& path) {
  if (ex.io_error) {
    const std::string message = "line " + std::to_string(ex.io_error->line) + ": cannot read '" +
                                path + "': " + ex.io_error->text;
    const swf::Error& got = out.opened ? (out.error ? *out.error : swf::Error{}) : out.open_error;
    ck_assert_msg(!out.opened || out.error, "case %s (%s): expected an I/O error", name, source);
    check_error(name, source, got, swf::Errc::kIo, *ex.io_error, message);
  } else {
    ck_assert_msg(out.opened, "case %s (%s): open failed: %s", name, source, out.open_error.message.c_str());
    ck_assert_msg(!out.error, "case %s (%s): unexpected error: %s", name, source,
                  out.error ? out.error->message.c_str() : "");
  }
  ck_assert_msg(static_cast<std::int64_t>(out.jobs.size()) == *ex.jobs,
                "case %s (%s): %zu jobs, expected %" PRId64, name, source, out.jobs.size(), *ex.jobs);
  if (!out.opened) return;

  ck_assert_msg(out.diagnostics.size() == ex.errors.size(), "case %s (%s): %zu diagnostics, expected %zu%s%s",
                name, source, out.diagnostics.size(), ex.errors.size(),
                out.diagnostics.empty() ? "" : "; first: ",
                out.diagnostics.empty() ? "" : out.diagnostics.front().message.c_str());
  for (std::size_t i = 0; i < ex.errors.size(); ++i) {
    check_error(name, source, out.diagnostics[i], swf::Errc::kFormat, ex.errors[i],
                format_message(ex.errors[i]));
  }
  EXPECT_EQ(out.dropped, ex.dropped);
  EXPECT_EQ(out.stats.malformed_lines, static_cast<std::int64_t>(ex.errors.size()) + ex.dropped);
  EXPECT_EQ(out.stats.jobs, *ex.jobs);

  if (ex.has_header) {
    ck_assert_msg(out.header.fields.size() == ex.header.size(), "case %s: %zu header fields, expected %zu",
                  name, out.header.fields.size(), ex.header.size());
    for (std::size_t i = 0; i < ex.header.size(); ++i) {
      const swf::HeaderField& g = out.header.fields[i];
      const swf::HeaderField& w = ex.header[i];
      ck_assert_msg(g.key == w.key && g.value == w.value && g.line == w.line,
                    "case %s: header field %zu is %" PRId64 " '%s': '%s', expected %" PRId64 " '%s': '%s'",
                    name, i, g.line, g.key.c_str(), g.value.c_str(), w.line, w.key.c_str(), w.value.c_str());
    }
  }
  for (const auto& [key, want] : ex.typed) {
    std::string got;
    if (key == "max-nodes") got = typed_text(out.header.max_nodes());
    if (key == "max-procs") got = typed_text(out.header.max_procs());
    if (key == "unix-start-time") got = typed_text(out.header.unix_start_time());
    if (key == "time-zone-string") {
      const auto tz = out.header.time_zone_string();
      got = tz ? std::string(*tz) : "none";
    }
    ck_assert_msg(got == want, "case %s: %s is '%s', expected '%s'", name, key.c_str(), got.c_str(), want.c_str());
  }
  for (const auto& [at, tokens] : ex.job_fields) {
    const auto it = std::find_if(out.jobs.begin(), out.jobs.end(),
                                 [at = at](const swf::Job& j) { return j.line == at; });
    ck_assert_msg(it != out.jobs.end(), "case %s: no job from line %" PRId64, name, at);
    const std::vector<double> got = fields_of(*it);
    for (int f = 0; f < swf::kFieldCount; ++f) {
      const double want = std::strtod(tokens[f].c_str(), nullptr);
      ck_assert_msg(got[f] == want, "case %s: line %" PRId64 ": field %d (%s) is %.17g, expected %s", name,
                    at, f + 1, swf::field_name(f + 1), got[f], tokens[f].c_str());
    }
  }
  for (const auto& [key, want] : ex.stats) {
    const std::int64_t got = key == "lines"      ? out.stats.lines
                             : key == "comments" ? out.stats.comment_lines
                                                 : out.stats.blank_lines;
    ck_assert_msg(got == want, "case %s (%s): stats %s = %" PRId64 ", expected %" PRId64, name, source,
                  key.c_str(), got, want);
  }
}

START_TEST(test_corpus_found) {
  ck_assert_msg(is_dir(case_dir()), "no directory %s (set FLEXCO_SRCDIR to the source tree)",
                case_dir().c_str());
  ck_assert_msg(g_cases.size() >= 10, "only %zu cases in %s", g_cases.size(), case_dir().c_str());
}
END_TEST

START_TEST(test_case) {
  const std::string name = g_cases.at(static_cast<std::size_t>(_i));
  const std::string base = case_dir() + "/" + name;
  const Expect ex = parse_expect(base + ".expect");
  std::string path = base + ".swf";
  const bool plain = access(path.c_str(), R_OK) == 0;
  if (!plain) path = base + ".swf.gz";
  ck_assert_msg(access(path.c_str(), R_OK) == 0, "case %s: neither %s.swf nor .swf.gz", name.c_str(),
                base.c_str());

  // Lenient.
  swf::Options lenient = ex.options;
  lenient.mode = swf::Mode::kLenient;
  const Outcome soft = read_path(path, lenient);
  check_lenient(name.c_str(), "file", ex, soft, path);

  // Strict.
  swf::Options strict = ex.options;
  strict.mode = swf::Mode::kStrict;
  const Outcome hard = read_path(path, strict);
  if (ex.io_error) {
    check_lenient(name.c_str(), "file, strict", ex, hard, path);
  } else if (ex.strict_open_error) {
    ck_assert_msg(!hard.opened, "case %s: strict open() should fail", name.c_str());
    check_error(name.c_str(), "strict open", hard.open_error, swf::Errc::kFormat, *ex.strict_open_error,
                format_message(*ex.strict_open_error));
  } else {
    ck_assert_msg(hard.opened, "case %s: strict open failed: %s", name.c_str(), hard.open_error.message.c_str());
    const std::int64_t want_jobs = ex.strict_error ? ex.strict_jobs.value_or(-1) : *ex.jobs;
    ck_assert_msg(static_cast<std::int64_t>(hard.jobs.size()) == want_jobs,
                  "case %s: strict: %zu jobs, expected %" PRId64, name.c_str(), hard.jobs.size(), want_jobs);
    for (std::size_t i = 0; i < hard.jobs.size(); ++i) {
      ck_assert_msg(hard.jobs[i].line == soft.jobs[i].line, "case %s: strict job %zu differs", name.c_str(), i);
    }
    if (ex.strict_error) {
      ck_assert_msg(hard.error.has_value(), "case %s: strict: no error", name.c_str());
      check_error(name.c_str(), "strict", *hard.error, swf::Errc::kFormat, *ex.strict_error,
                  format_message(*ex.strict_error));
      EXPECT_EQ(hard.stats.malformed_lines, 1);
      EXPECT_EQ(hard.diagnostics.size(), 0);
    } else {
      ck_assert_msg(!hard.error, "case %s: strict: %s", name.c_str(), hard.error ? hard.error->message.c_str() : "");
    }
  }

  // The same bytes from memory.
  if (plain) {
    std::string text;
    ck_assert(read_whole(path, text));
    const Outcome mem = read_text(text, lenient);
    check_lenient(name.c_str(), "string", ex, mem, "");
  }
}
END_TEST

// ---------------------------------------------------------------------------
// parse_job, names, header

START_TEST(test_parse_job_table) {
  const std::string ok = "1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1";
  struct Row {
    std::string text;
    std::int64_t line;
    const char* error;  // nullptr: accepted
  };
  const Row rows[] = {
      {ok, 1, nullptr},
      {"  \t" + ok + " \t\r", 2, nullptr},
      {ok + "\r", 3, nullptr},
      {"", 4, "line 4: expected 18 fields, found 0"},
      {"   \r", 5, "line 5: expected 18 fields, found 0"},
      {"; 1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1", 6, "line 6: expected 18 fields, found 19"},
      {"1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1;", 7,
       "line 7: field 18 (think time): not an integer: '-1;'"},
      {"1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1", 1234567890123, nullptr},
      {"1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1x", 1234567890123,
       "line 1234567890123: field 18 (think time): not an integer: '-1x'"},
      {"1 0 1 1 1 -1.00 -1. 1 1 1 1 1 1 1 1 1 -1 -1", 8, nullptr},
      {"1 0 1 1 1 1 1 1 1 1 -1 1 1 1 1 1 -1 -1", 9, nullptr},
      {"1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1", 10, nullptr},
      {"1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 0", 11, nullptr},
      {"1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 " + std::string(60, '7'), 12,
       "line 12: field 18 (think time): out of range: '7777777777777777777777777777777777777777...' "
       "(at most 9007199254740991)"},
      {"00001 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1", 13, nullptr},
  };
  for (const Row& row : rows) {
    const auto r = swf::parse_job(row.text, row.line);
    if (row.error == nullptr) {
      ck_assert_msg(r.ok(), "'%s': %s", row.text.c_str(), r.ok() ? "" : r.error().message.c_str());
      EXPECT_EQ(r.value().line, row.line);
    } else {
      ck_assert_msg(!r.ok(), "'%s' accepted", row.text.c_str());
      EXPECT_STR_EQ(r.error().message, row.error);
      EXPECT_EQ(r.error().line, row.line);
      ck_assert(r.error().code == swf::Errc::kFormat);
    }
  }
}
END_TEST

START_TEST(test_parse_job_values) {
  const swf::Job j =
      VAL(swf::parse_job("7 100 20 300 16 250.5 -0 32 600 1024 5 11 12 13 0 2 6 45", 9));
  EXPECT_EQ(j.line, 9);
  EXPECT_EQ(j.job_number, 7);
  EXPECT_EQ(j.submit_time, 100);
  EXPECT_EQ(*j.wait_time, 20);
  EXPECT_EQ(*j.run_time, 300);
  EXPECT_EQ(*j.allocated_procs, 16);
  ck_assert(*j.average_cpu_time == 250.5);
  ck_assert(*j.used_memory == 0.0 && !std::signbit(*j.used_memory));
  EXPECT_EQ(*j.requested_procs, 32);
  EXPECT_EQ(*j.requested_time, 600);
  EXPECT_EQ(*j.requested_memory, 1024);
  ck_assert(*j.status == swf::JobStatus::kCancelled);
  EXPECT_EQ(*j.user_id, 11);
  EXPECT_EQ(*j.group_id, 12);
  EXPECT_EQ(*j.executable, 13);
  EXPECT_EQ(*j.queue, 0);
  EXPECT_EQ(*j.partition, 2);
  EXPECT_EQ(*j.preceding_job, 6);
  EXPECT_EQ(*j.think_time, 45);

  const swf::Job u = VAL(swf::parse_job("1 0 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1", 1));
  ck_assert(!u.wait_time && !u.run_time && !u.allocated_procs && !u.average_cpu_time &&
            !u.used_memory && !u.requested_procs && !u.requested_time && !u.requested_memory &&
            !u.status && !u.user_id && !u.group_id && !u.executable && !u.queue && !u.partition &&
            !u.preceding_job && !u.think_time);

  const swf::JobStatus statuses[] = {swf::JobStatus::kFailed, swf::JobStatus::kCompleted,
                                     swf::JobStatus::kPartial, swf::JobStatus::kLastPartialCompleted,
                                     swf::JobStatus::kLastPartialFailed, swf::JobStatus::kCancelled};
  for (int s = 0; s <= 5; ++s) {
    const std::string text = "1 0 1 1 1 1 1 1 1 1 " + std::to_string(s) + " 1 1 1 1 1 -1 -1";
    ck_assert(*VAL(swf::parse_job(text, 1)).status == statuses[s]);
  }
}
END_TEST

START_TEST(test_names) {
  EXPECT_STR_EQ(swf::field_name(1), "job number");
  EXPECT_STR_EQ(swf::field_name(4), "run time");
  EXPECT_STR_EQ(swf::field_name(18), "think time");
  EXPECT_STR_EQ(swf::field_name(0), "");
  EXPECT_STR_EQ(swf::field_name(19), "");
  EXPECT_STR_EQ(swf::errc_name(swf::Errc::kInvalidArgument), "invalid-argument");
  EXPECT_STR_EQ(swf::errc_name(swf::Errc::kIo), "io");
  EXPECT_STR_EQ(swf::errc_name(swf::Errc::kFormat), "format");
  EXPECT_STR_EQ(swf::errc_name(swf::Errc::kOrder), "order");
  EXPECT_STR_EQ(swf::errc_name(swf::Errc::kNoMemory), "no-memory");
}
END_TEST

START_TEST(test_header_accessors) {
  swf::Header h;
  ck_assert(!h.max_nodes() && !h.max_procs() && !h.unix_start_time() && !h.time_zone_string());
  ck_assert(h.find("MaxNodes") == nullptr);
  h.fields = {{"MaxNodes", "  42  nodes", 1},   {"MaxProcs", "#5", 2},
              {"UnixStartTime", "0", 3},        {"TimeZoneString", " ", 4},
              {"MaxNodes", "43", 5},            {"maxprocs", "7", 6}};
  EXPECT_EQ(*h.max_nodes(), 42);  // the first one counts
  ck_assert(!h.max_procs());      // "#5" is not an integer; keys are case-sensitive
  EXPECT_EQ(*h.unix_start_time(), 0);
  ck_assert(!h.time_zone_string());
  EXPECT_EQ(h.find("MaxNodes")->line, 1);
  EXPECT_EQ(h.find("maxprocs")->line, 6);
  h.fields[0].value = "0";
  ck_assert(!h.max_nodes());
  h.fields[3].value = "Asia/Tokyo  # JST";
  EXPECT_STR_EQ(std::string(*h.time_zone_string()), "Asia/Tokyo");
}
END_TEST

START_TEST(test_header_field_limit) {
  std::string text;
  for (std::size_t i = 0; i <= swf::kMaxHeaderFields; ++i) text += "; Key" + std::to_string(i) + ": v\n";
  text += "; MaxProcs: 5\n1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\n";
  const std::string message = "line 4097: header: more than 4096 'Key: value' lines; the rest are ignored";

  swf::Options options;
  options.mode = swf::Mode::kLenient;
  const Outcome soft = read_text(text, options);
  ck_assert(soft.opened);
  EXPECT_EQ(soft.header.fields.size(), swf::kMaxHeaderFields);
  EXPECT_EQ(soft.diagnostics.size(), 1);  // reported once
  EXPECT_STR_EQ(soft.diagnostics[0].message, message);
  ck_assert(!soft.header.max_procs());  // past the limit
  EXPECT_EQ(soft.jobs.size(), 1);

  const Outcome hard = read_text(text, swf::Options{});
  ck_assert(!hard.opened);
  EXPECT_STR_EQ(hard.open_error.message, message);
}
END_TEST

// ---------------------------------------------------------------------------
// Reader edges

START_TEST(test_open_errors) {
  auto missing = swf::Reader::open("/nonexistent/flexco/trace.swf");
  ck_assert(!missing.ok());
  ck_assert(missing.error().code == swf::Errc::kIo);
  EXPECT_EQ(missing.error().line, 0);
  EXPECT_STR_EQ(missing.error().message,
                "cannot open '/nonexistent/flexco/trace.swf': No such file or directory");

  char dir[] = "/tmp/flexco-swf-XXXXXX";
  ck_assert(mkdtemp(dir) != nullptr);
  auto directory = swf::Reader::open(dir);
  rmdir(dir);
  ck_assert(!directory.ok());
  ck_assert(directory.error().code == swf::Errc::kIo);
  EXPECT_STR_EQ(directory.error().message,
                std::string("line 1: cannot read '") + dir + "': Is a directory");
}
END_TEST

START_TEST(test_options) {
  struct Row {
    swf::Options options;
    const char* error;
  };
  const Row rows[] = {
      {{swf::Mode::kStrict, 100, swf::kMinLineLength}, nullptr},
      {{swf::Mode::kStrict, 100, swf::kMaxLineLength}, nullptr},
      {{swf::Mode::kLenient, swf::kMaxDiagnostics, 4096}, nullptr},
      {{swf::Mode::kLenient, 0, 4096}, nullptr},
      {{swf::Mode::kStrict, 100, swf::kMinLineLength - 1}, "max_line_length must be 128 to 1048576, not 127"},
      {{swf::Mode::kStrict, 100, swf::kMaxLineLength + 1}, "max_line_length must be 128 to 1048576, not 1048577"},
      {{swf::Mode::kStrict, swf::kMaxDiagnostics + 1, 4096}, "max_diagnostics must be at most 1048576, not 1048577"},
      {{static_cast<swf::Mode>(7), 100, 4096}, "mode is neither strict nor lenient"},
  };
  const std::string path = case_dir() + "/basic.swf";
  for (const Row& row : rows) {
    auto from_text = swf::Reader::from_string("", row.options);
    auto from_file = swf::Reader::open(path, row.options);
    if (row.error == nullptr) {
      ck_assert_msg(from_text.ok() && from_file.ok(), "options rejected: %s",
                    from_text.ok() ? from_file.error().message.c_str() : from_text.error().message.c_str());
    } else {
      ck_assert(!from_text.ok() && !from_file.ok());
      ck_assert(from_text.error().code == swf::Errc::kInvalidArgument);
      EXPECT_STR_EQ(from_text.error().message, row.error);
      EXPECT_STR_EQ(from_file.error().message, row.error);
    }
  }
}
END_TEST

START_TEST(test_move) {
  const std::string text =
      "; MaxProcs: 3\n1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\n2 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\n"
      "3 2 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\n";
  swf::Reader a = VAL(swf::Reader::from_string(text));
  EXPECT_EQ(VAL(a.next())->job_number, 1);
  swf::Reader b(std::move(a));
  EXPECT_EQ(VAL(b.next())->job_number, 2);
  swf::Reader c = VAL(swf::Reader::from_string(""));
  c = std::move(b);
  EXPECT_EQ(*c.header().max_procs(), 3);
  EXPECT_EQ(VAL(c.next())->job_number, 3);
  ck_assert(!VAL(c.next()));
  EXPECT_EQ(c.stats().jobs, 3);
}
END_TEST

// Many lines, so that lines straddle the reader's buffer refills; a line far
// longer than the buffer; the longest line the limit allows.
START_TEST(test_lines_across_refills) {
  std::string text = "; Version: 2.2\n";
  const int n = 20000;
  for (int i = 1; i <= n; ++i) {
    text += std::to_string(i) + " " + std::to_string(i * 3) + " 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\n";
    if (i == 7000) text += std::string(300000, '9') + "\n";                // line 7002
    if (i == 9000) text += "; " + std::string(swf::kMaxLineLength, 'c');  // line 9003, no '\n' yet
    if (i == 9000) text += "\n";
  }
  swf::Options options;
  options.mode = swf::Mode::kLenient;
  const Outcome out = read_text(text, options);
  ck_assert(out.opened && !out.error);
  EXPECT_EQ(out.jobs.size(), n);
  for (int i = 0; i < n; ++i) {
    ck_assert_msg(out.jobs[i].job_number == i + 1 && out.jobs[i].submit_time == 3 * (i + 1),
                  "job %d read as %" PRId64, i + 1, out.jobs[i].job_number);
  }
  EXPECT_EQ(out.jobs[6999].line, 7001);
  EXPECT_EQ(out.jobs[7000].line, 7003);
  EXPECT_EQ(out.jobs.back().line, n + 3);
  EXPECT_EQ(out.diagnostics.size(), 2);
  EXPECT_STR_EQ(out.diagnostics[0].message, "line 7002: longer than 4096 bytes");
  EXPECT_STR_EQ(out.diagnostics[1].message, "line 9003: longer than 4096 bytes");

  // At the largest limit, a job line padded to exactly the limit is read.
  options.max_line_length = swf::kMaxLineLength;
  std::string line = "1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1";
  line.resize(swf::kMaxLineLength, ' ');
  const Outcome big = read_text(line + "\n" + line + " \n" + line, options);
  ck_assert(big.opened && !big.error);
  EXPECT_EQ(big.jobs.size(), 2);
  EXPECT_EQ(big.diagnostics.size(), 1);
  EXPECT_STR_EQ(big.diagnostics[0].message, "line 2: longer than 1048576 bytes");
}
END_TEST

START_TEST(test_strict_error_is_sticky) {
  swf::Reader r = VAL(swf::Reader::from_string(
      "1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\nbad\n3 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\n"));
  EXPECT_EQ(VAL(r.next())->job_number, 1);
  for (int i = 0; i < 3; ++i) {
    auto e = r.next();
    ck_assert(!e.ok());
    EXPECT_STR_EQ(e.error().message, "line 2: expected 18 fields, found 1");
  }
  EXPECT_EQ(r.stats().jobs, 1);
  EXPECT_EQ(r.stats().lines, 2);
}
END_TEST

// ---------------------------------------------------------------------------
// OrderedReader

std::vector<std::int64_t> numbers_of(swf::OrderedReader& o, std::optional<swf::Error>* error) {
  std::vector<std::int64_t> numbers;
  for (int guard = 0; guard < 1000000; ++guard) {
    auto next = o.next();
    if (!next.ok()) {
      if (error != nullptr) *error = next.error();
      break;
    }
    if (!next.value()) break;
    numbers.push_back(next.value()->job_number);
  }
  return numbers;
}

swf::OrderedReader ordered(const std::string& path, std::size_t window, swf::LatePolicy late,
                           std::size_t max_reports = 100) {
  swf::Reader reader = VAL(swf::Reader::open(path));
  swf::OrderOptions options;
  options.window = window;
  options.late = late;
  options.max_reports = max_reports;
  return VAL(swf::OrderedReader::create(std::move(reader), options));
}

START_TEST(test_order_sorts) {
  const std::string path = case_dir() + "/unsorted.swf";
  const std::vector<std::int64_t> sorted = {1, 10, 3, 2, 6, 4, 5, 8, 7, 9, 11, 12};
  for (std::size_t window : {std::size_t{9}, std::size_t{10}, std::size_t{4096}}) {
    swf::OrderedReader o = ordered(path, window, swf::LatePolicy::kFail);
    std::optional<swf::Error> error;
    ck_assert(numbers_of(o, &error) == sorted);
    ck_assert_msg(!error, "window %zu: %s", window, error ? error->message.c_str() : "");
    EXPECT_EQ(o.stats().late_jobs, 0);
    EXPECT_EQ(o.reader().stats().jobs, 12);
    EXPECT_STR_EQ(o.reader().header().fields.at(0).key, "Version");
    ck_assert(o.late_reports().empty());
    ck_assert(!VAL(o.next()));  // the end is sticky
  }
}
END_TEST

START_TEST(test_order_fail) {
  swf::OrderedReader o = ordered(case_dir() + "/unsorted.swf", 8, swf::LatePolicy::kFail);
  std::optional<swf::Error> error;
  ck_assert(numbers_of(o, &error) == std::vector<std::int64_t>({1, 3}));
  ck_assert(error.has_value());
  ck_assert(error->code == swf::Errc::kOrder);
  EXPECT_EQ(error->line, 12);
  EXPECT_STR_EQ(error->message,
                "line 12: job 10 submitted at 1 comes after job 3 (line 5, submitted at 5) was "
                "yielded: 4 s out of order, beyond a reorder window of 8 jobs");
  auto again = o.next();
  ck_assert(!again.ok());
  EXPECT_STR_EQ(again.error().message, error->message);
  EXPECT_EQ(o.stats().late_jobs, 1);
  EXPECT_EQ(o.stats().max_lateness, 4);
  EXPECT_EQ(o.stats().first_late_line, 12);
}
END_TEST

START_TEST(test_order_emit_and_drop) {
  const std::string path = case_dir() + "/unsorted.swf";
  swf::OrderedReader emit = ordered(path, 2, swf::LatePolicy::kEmit);
  ck_assert(numbers_of(emit, nullptr) == std::vector<std::int64_t>({1, 3, 2, 4, 6, 5, 8, 7, 10, 9, 11, 12}));
  EXPECT_EQ(emit.stats().late_jobs, 2);
  EXPECT_EQ(emit.stats().max_lateness, 29);
  EXPECT_EQ(emit.stats().first_late_line, 8);
  EXPECT_EQ(emit.late_reports().size(), 2);
  EXPECT_STR_EQ(emit.late_reports()[0].message,
                "line 8: job 6 submitted at 12 comes after job 4 (line 6, submitted at 20) was "
                "yielded: 8 s out of order, beyond a reorder window of 2 jobs");
  EXPECT_STR_EQ(emit.late_reports()[1].message,
                "line 12: job 10 submitted at 1 comes after job 7 (line 9, submitted at 30) was "
                "yielded: 29 s out of order, beyond a reorder window of 2 jobs");

  swf::OrderedReader drop = ordered(path, 2, swf::LatePolicy::kDrop, 1);
  ck_assert(numbers_of(drop, nullptr) == std::vector<std::int64_t>({1, 3, 2, 4, 5, 8, 7, 9, 11, 12}));
  EXPECT_EQ(drop.stats().late_jobs, 2);
  EXPECT_EQ(drop.late_reports().size(), 1);  // max_reports
  EXPECT_EQ(drop.late_reports()[0].line, 8);

  // A window of 1 passes the file through, every backward step being late.
  swf::OrderedReader one = ordered(path, 1, swf::LatePolicy::kEmit);
  ck_assert(numbers_of(one, nullptr) == std::vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(one.stats().late_jobs, 4);  // jobs 3, 6, 8, 10
}
END_TEST

START_TEST(test_order_options_and_errors) {
  const std::string text = "1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\nbad\n";
  struct Row {
    swf::OrderOptions options;
    const char* error;
  };
  const Row rows[] = {
      {{0, swf::LatePolicy::kFail, 100}, "window must be 1 to 4194304, not 0"},
      {{swf::kMaxWindow + 1, swf::LatePolicy::kFail, 100}, "window must be 1 to 4194304, not 4194305"},
      {{16, swf::LatePolicy::kFail, swf::kMaxDiagnostics + 1}, "max_reports must be at most 1048576, not 1048577"},
      {{16, static_cast<swf::LatePolicy>(9), 100}, "late is not a LatePolicy"},
  };
  for (const Row& row : rows) {
    auto r = swf::OrderedReader::create(VAL(swf::Reader::from_string(text)), row.options);
    ck_assert(!r.ok());
    ck_assert(r.error().code == swf::Errc::kInvalidArgument);
    EXPECT_STR_EQ(r.error().message, row.error);
  }
  // The reader's strict error comes through, and stays.
  swf::OrderedReader o = VAL(swf::OrderedReader::create(VAL(swf::Reader::from_string(text)), {}));
  for (int i = 0; i < 2; ++i) {
    auto e = o.next();
    ck_assert(!e.ok());
    EXPECT_STR_EQ(e.error().message, "line 2: expected 18 fields, found 1");
  }
  EXPECT_EQ(o.reader().stats().malformed_lines, 1);
  swf::OrderedReader moved(std::move(o));
  ck_assert(!moved.next().ok());
}
END_TEST

// Random traces with bounded disorder: the smallest window that sorts one
// (1 + the most earlier jobs submitted strictly later than any one job)
// yields exactly std::stable_sort's order; one less fails.
START_TEST(test_order_random) {
  std::mt19937_64 rng(20240611 + static_cast<unsigned>(_i));
  const int n = 300;
  std::vector<std::int64_t> submit(n);
  for (int i = 0; i < n; ++i) submit[i] = i * 10 + static_cast<std::int64_t>(rng() % 4) * 10;
  const int swaps = 1 + static_cast<int>(rng() % 60);
  for (int k = 0; k < swaps; ++k) {
    const int a = static_cast<int>(rng() % n);
    const int b = std::min(n - 1, a + 1 + static_cast<int>(rng() % 12));
    std::swap(submit[a], submit[b]);
  }
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += std::to_string(i + 1) + " " + std::to_string(submit[i]) + " 1 1 1 1 1 1 1 1 1 1 1 1 1 1 -1 -1\n";
  }
  std::size_t need = 1;
  for (int i = 0; i < n; ++i) {
    std::size_t later = 0;
    for (int k = 0; k < i; ++k) later += submit[k] > submit[i] ? 1 : 0;
    need = std::max(need, later + 1);
  }
  std::vector<std::int64_t> want(n);
  for (int i = 0; i < n; ++i) want[i] = i + 1;
  std::stable_sort(want.begin(), want.end(),
                   [&](std::int64_t a, std::int64_t b) { return submit[a - 1] < submit[b - 1]; });

  swf::OrderOptions options;
  options.window = need;
  swf::OrderedReader o = VAL(swf::OrderedReader::create(VAL(swf::Reader::from_string(text)), options));
  std::optional<swf::Error> error;
  ck_assert(numbers_of(o, &error) == want);
  ck_assert_msg(!error, "window %zu: %s", need, error ? error->message.c_str() : "");
  if (need > 1) {
    options.window = need - 1;
    swf::OrderedReader p = VAL(swf::OrderedReader::create(VAL(swf::Reader::from_string(text)), options));
    numbers_of(p, &error);
    ck_assert_msg(error && error->code == swf::Errc::kOrder, "window %zu should be too small", need - 1);
  }
}
END_TEST

// ---------------------------------------------------------------------------
// A real trace

// Non-comment, non-blank lines, counted with zlib independently of the reader.
std::int64_t count_job_lines(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  ck_assert_msg(f != nullptr, "cannot open %s", path.c_str());
  std::vector<char> buf(1 << 16);
  std::int64_t jobs = 0;
  while (gzgets(f, buf.data(), static_cast<int>(buf.size())) != nullptr) {
    const std::size_t len = std::strlen(buf.data());
    ck_assert_msg(len + 1 < buf.size(), "a line longer than the test's buffer");
    std::size_t i = 0;
    while (i < len && std::strchr(" \t\r\n", buf[i]) != nullptr) ++i;
    if (i < len && buf[i] != ';') ++jobs;
  }
  int code = Z_OK;
  gzerror(f, &code);
  ck_assert_msg(code == Z_OK, "zlib error %d on %s", code, path.c_str());
  gzclose(f);
  return jobs;
}

START_TEST(test_real_trace) {
  const std::string path = traces_dir() + "/SDSC-Par-1996-3.1-cln.swf.gz";
  ck_assert_msg(access(path.c_str(), R_OK) == 0,
                "%s is missing: set FLEXCO_TRACES to the directory of the shared traces", path.c_str());
  const std::int64_t lines = count_job_lines(path);
  EXPECT_EQ(lines, 32135);  // also `zcat ... | grep -vc '^;'`

  swf::OrderOptions order;
  order.window = 1;  // the file is sorted by submit time (doc/swf.md)
  swf::OrderedReader o = VAL(swf::OrderedReader::create(VAL(swf::Reader::open(path)), order));
  const swf::Header& h = o.reader().header();
  EXPECT_EQ(*h.max_procs(), 400);
  EXPECT_EQ(*h.max_nodes(), 400);
  EXPECT_STR_EQ(h.find("MaxNodes")->value, "400 (48 interactive, 352 batch, 6 service, 10 I/O)");
  EXPECT_EQ(*h.unix_start_time(), 820090437);
  EXPECT_STR_EQ(std::string(*h.time_zone_string()), "US/Pacific");

  std::optional<swf::Job> first;
  std::optional<swf::Job> last;
  std::int64_t n = 0;
  for (;;) {
    auto next = o.next();
    ck_assert_msg(next.ok(), "%s", next.ok() ? "" : next.error().message.c_str());
    if (!next.value()) break;
    if (!first) first = next.value();
    last = std::move(next.value());
    ++n;
  }
  EXPECT_EQ(n, lines);
  EXPECT_EQ(o.reader().stats().jobs, lines);
  EXPECT_EQ(o.reader().stats().malformed_lines, 0);
  EXPECT_EQ(o.reader().stats().comment_lines, 64);
  EXPECT_EQ(o.stats().late_jobs, 0);

  // "    1        0 392395  19025   64  19025    -1   -1     -1    -1  1   4  -1  -1 23  2 -1 -1"
  EXPECT_EQ(first->line, 65);
  const std::vector<double> f = fields_of(*first);
  const std::vector<double> want_first = {1, 0, 392395, 19025, 64, 19025, -1, -1, -1,
                                          -1, 1, 4, -1, -1, 23, 2, -1, -1};
  ck_assert(f == want_first);
  // "38719 32014059     -1    583   16 216.90    -1   -1 ..."
  EXPECT_EQ(last->line, 32199);
  EXPECT_EQ(last->job_number, 38719);
  EXPECT_EQ(last->submit_time, 32014059);
  ck_assert(!last->wait_time && *last->run_time == 583 && *last->average_cpu_time == 216.90);
}
END_TEST

Suite* swf_suite() {
  Suite* s = suite_create("swf");

  TCase* golden = tcase_create("golden");
  tcase_add_test(golden, test_corpus_found);
  tcase_add_loop_test(golden, test_case, 0, static_cast<int>(g_cases.size()));
  suite_add_tcase(s, golden);

  TCase* parse = tcase_create("parse");
  tcase_add_test(parse, test_parse_job_table);
  tcase_add_test(parse, test_parse_job_values);
  tcase_add_test(parse, test_names);
  tcase_add_test(parse, test_header_accessors);
  tcase_add_test(parse, test_header_field_limit);
  suite_add_tcase(s, parse);

  TCase* reader = tcase_create("reader");
  tcase_set_timeout(reader, 30);
  tcase_add_test(reader, test_open_errors);
  tcase_add_test(reader, test_options);
  tcase_add_test(reader, test_move);
  tcase_add_test(reader, test_lines_across_refills);
  tcase_add_test(reader, test_strict_error_is_sticky);
  suite_add_tcase(s, reader);

  TCase* order = tcase_create("order");
  tcase_add_test(order, test_order_sorts);
  tcase_add_test(order, test_order_fail);
  tcase_add_test(order, test_order_emit_and_drop);
  tcase_add_test(order, test_order_options_and_errors);
  tcase_add_loop_test(order, test_order_random, 0, 8);
  suite_add_tcase(s, order);

  TCase* real = tcase_create("real");
  tcase_set_timeout(real, 120);
  tcase_add_test(real, test_real_trace);
  suite_add_tcase(s, real);
  return s;
}

}  // namespace

int main() {
  g_cases = list_cases(case_dir());
  SRunner* sr = srunner_create(swf_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
