// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests for sreserve's pure modules: Slurm-style time and duration
// parsing and printing, the -o/--format tables and the free-node charts.
// The time zone is pinned to UTC and "now" is 2026-11-23T10:30:00
// (1795429800), so every expected epoch below can be checked with
// `date -u -d @N`.

#include <cctype>
#include <cinttypes>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sreserve/chart.hpp"
#include "sreserve/cli.hpp"
#include "sreserve/table.hpp"
#include "sreserve/timefmt.hpp"
#include "sreserve/views.hpp"

// Last: check.h defines macros that clash with the C++ library.
#include <check.h>

using namespace sreserve;

namespace {

constexpr std::int64_t NOW = 1795429800;  // 2026-11-23T10:30:00Z, a Monday

#define STREQ(a, b)                                                                    \
  do {                                                                                 \
    std::string a_ = (a), b_ = (b);                                                    \
    ck_assert_msg(a_ == b_, "line %d: %s gives\n[%s]\nexpected\n[%s]", __LINE__, #a, \
                  a_.c_str(), b_.c_str());                                             \
  } while (0)

struct TimeCase {
  const char* text;
  std::int64_t expect;  // -2: must be rejected
};

const TimeCase kTimes[] = {
    {"now", NOW},
    {"NOW", NOW},
    {"now+60", NOW + 60},
    {"now+1hour", NOW + 3600},
    {"now+1hours", NOW + 3600},
    {"now + 2 hours", NOW + 7200},
    {"now+30min", NOW + 1800},
    {"now+30minutes", NOW + 1800},
    {"now+90s", NOW + 90},
    {"now+2days", NOW + 2 * 86400},
    {"now+1week", NOW + 7 * 86400},
    {"now-10minutes", NOW - 600},
    {"16:00", 1795449600},           // later today
    {"09:00", 1795510800},           // passed: tomorrow
    {"10:30", NOW + 86400},          // exactly now counts as passed
    {"16:30:00", 1795451400},
    {"4:00pm", 1795449600},
    {"4:00 PM", 1795449600},
    {"12:00am", 1795478400},         // midnight, next
    {"midnight", 1795478400},
    {"noon", 1795435200},
    {"fika", 1795446000},
    {"teatime", 1795449600},
    {"today", 1795392000},
    {"tomorrow", 1795478400},
    {"tomorrow 16:00", 1795536000},
    {"16:00 tomorrow", 1795536000},
    {"2026-11-23T16:00", 1795449600},
    {"2026-11-23T16:00:00", 1795449600},
    {"2026-01-20T12:34:00", 1768912440},  // in the past: as given
    {"2026-11-24", 1795478400},
    {"12/24", 1798070400},
    {"12/24/26", 1798070400},
    {"122426", 1798070400},
    {"12.24", 1798070400},
    {"01/20", 1800403200},           // passed this year: next year
    {"@1795429800", NOW},
    {"", -2},
    {"later", -2},
    {"now+1fortnight", -2},
    {"now*2", -2},
    {"25:00", -2},
    {"16:60", -2},
    {"13:00pm", -2},
    {"2026-02-30", -2},
    {"2026-13-01", -2},
    {"16:00 17:00", -2},
    {"today tomorrow", -2},
    {"12/24/2026/1", -2},
};

START_TEST(time_parsing) {
  for (const auto& c : kTimes) {
    Parsed p = parse_time(c.text, NOW);
    if (c.expect == -2) {
      ck_assert_msg(!p.ok, "\"%s\" accepted as %" PRId64, c.text, p.value);
      ck_assert_msg(!p.error.empty(), "\"%s\": no error text", c.text);
    } else {
      ck_assert_msg(p.ok, "\"%s\" rejected: %s", c.text, p.error.c_str());
      ck_assert_msg(p.value == c.expect, "\"%s\" gives %" PRId64 " (%s), expected %" PRId64 " (%s)",
                    c.text, p.value, format_time(p.value).c_str(), c.expect,
                    format_time(c.expect).c_str());
    }
  }
}
END_TEST

struct DurCase {
  const char* text;
  std::int64_t expect;  // -2: rejected
};

const DurCase kDurations[] = {
    {"60", 3600},           {"5", 300},          {"1:30", 90},          {"10:00", 600},
    {"1:00:00", 3600},      {"2:03:04", 7384},   {"1-0", 86400},        {"1-2", 93600},
    {"1-2:30", 95400},      {"1-2:30:15", 95415}, {"0-0:0:45", 45},     {"UNLIMITED", kUnlimited},
    {"infinite", kUnlimited}, {"0", kUnlimited}, {"", -2},              {"abc", -2},
    {"1:2:3:4", -2},        {"-5", -2},          {"1-", -2},            {"1.5", -2},
    {"1:", -2},
};

START_TEST(duration_parsing) {
  for (const auto& c : kDurations) {
    Parsed p = parse_duration(c.text);
    if (c.expect == -2) {
      ck_assert_msg(!p.ok, "\"%s\" accepted as %" PRId64, c.text, p.value);
    } else {
      ck_assert_msg(p.ok, "\"%s\" rejected: %s", c.text, p.error.c_str());
      ck_assert_msg(p.value == c.expect, "\"%s\" gives %" PRId64 ", expected %" PRId64, c.text,
                    p.value, c.expect);
    }
  }
  ck_assert_int_eq(round_up_minutes(61), 120);
  ck_assert_int_eq(round_up_minutes(120), 120);
  ck_assert_int_eq(round_up_minutes(kUnlimited), kUnlimited);
}
END_TEST

START_TEST(time_printing) {
  STREQ(format_time(NOW), "2026-11-23T10:30:00");
  STREQ(format_time(0), "N/A");
  STREQ(format_clock(NOW, false), "10:30");
  STREQ(format_clock(NOW, true), "11-23T10:30");
  STREQ(format_duration(0), "0:00");
  STREQ(format_duration(45), "0:45");
  STREQ(format_duration(600), "10:00");
  STREQ(format_duration(3600), "1:00:00");
  STREQ(format_duration(7384), "2:03:04");
  STREQ(format_duration(86400), "1-00:00:00");
  STREQ(format_duration(95415), "1-02:30:15");
  STREQ(format_duration(kUnlimited), "UNLIMITED");
  STREQ(format_duration(-5), "INVALID");
  // round trip: what we print, we read back
  for (std::int64_t t : {NOW, NOW + 1, NOW + 86399, std::int64_t{1768912440}}) {
    Parsed p = parse_time(format_time(t), NOW);
    ck_assert_msg(p.ok && p.value == t, "round trip of %s", format_time(t).c_str());
  }
  for (std::int64_t d : {std::int64_t{45}, std::int64_t{600}, std::int64_t{7384},
                         std::int64_t{95415}}) {
    Parsed p = parse_duration(format_duration(d));
    ck_assert_msg(p.ok && p.value == d, "round trip of %s", format_duration(d).c_str());
  }
}
END_TEST

const std::vector<FieldDef> kFields = {{'C', "Cluster", "CLUSTER", "cluster"},
                                       {'S', "StartTime", "START_TIME", "start"},
                                       {'D', "NumNodes", "NODES", "nodes"},
                                       {0, "Fit", "FIT", "fitness"}};

START_TEST(format_strings) {
  FormatSpec spec;
  std::string err;
  ck_assert(parse_format("%10C %.5D", kFields, &spec, &err));
  ck_assert_int_eq(spec.items.size(), 3);
  ck_assert(spec.items[0].is_field && spec.items[0].width == 10 && !spec.items[0].right);
  ck_assert(!spec.items[1].is_field && spec.items[1].text == " ");
  ck_assert(spec.items[2].right && spec.items[2].width == 5 && spec.items[2].field == "NumNodes");

  const std::vector<Row> rows = {
      {{"Cluster", "alpha"}, {"StartTime", "2026-11-23T10:30:00"}, {"NumNodes", "4"}, {"Fit", "0.50"}},
      {{"Cluster", "averyveryverylongname"}, {"NumNodes", "12"}}};
  STREQ(render_table(spec, kFields, rows, false),
        "CLUSTER    NODES\n"
        "alpha          4\n"
        "averyveryv    12\n");
  STREQ(render_table(spec, kFields, rows, true), "alpha          4\naveryveryv    12\n");

  ck_assert(parse_format("%C|%S|100%%", kFields, &spec, &err));
  STREQ(render_table(spec, kFields, rows, true),
        "alpha|2026-11-23T10:30:00|100%\naveryveryverylongname||100%\n");

  struct {
    const char* fmt;
    const char* part;
  } bad[] = {{"%Q", "invalid field \"%Q\""},
             {"%10", "invalid field \"%10\""},
             {"%.", "invalid field"},
             {"", "empty format"},
             {"%99999C", "too large"},
             {"%F", "invalid field \"%F\""}};  // Fit has no letter: -O only
  for (const auto& b : bad) {
    ck_assert_msg(!parse_format(b.fmt, kFields, &spec, &err), "\"%s\" accepted", b.fmt);
    ck_assert_msg(err.find(b.part) != std::string::npos, "\"%s\": error \"%s\" lacks \"%s\"", b.fmt,
                  err.c_str(), b.part);
  }
  STREQ(help_format(kFields).substr(0, 30), "%C  CLUSTER       cluster\n%S  ");
  ck_assert(help_format(kFields).find("FIT") == std::string::npos);  // --helpformat: letters only
  STREQ(help_format(kFields, true).substr(0, 37), "Cluster    CLUSTER       cluster\nStar");

  // -O/--Format, as squeue's: names case-insensitive, 20 columns unless a
  // size is given, "." right-justifies, the rest of the size is a suffix
  ck_assert(parse_format_long("cluster:10,NumNodes:.5|,FIT", kFields, &spec, &err));
  STREQ(render_table(spec, kFields, rows, false),
        "CLUSTER   NODES|FIT\n"
        "alpha         4|0.50\n"
        "averyveryv   12|\n");
  ck_assert(parse_format_long("Cluster,Fit", kFields, &spec, &err));
  STREQ(render_table(spec, kFields, rows, true),
        "alpha               0.50\n"
        "averyveryverylongnam\n");
  ck_assert(parse_format_long("Cluster:0 ,StartTime:0", kFields, &spec, &err));
  STREQ(render_table(spec, kFields, rows, true),
        "alpha 2026-11-23T10:30:00\naveryveryverylongname\n");
  struct {
    const char* fmt;
    const char* part;
  } bad_long[] = {{"Cluster,Bogus", "invalid field \"Bogus\""},
                  {"", "empty format"},
                  {",", "empty format"},
                  {"Cluster:99999", "too large"},
                  {"%C", "invalid field \"%C\""}};
  for (const auto& b : bad_long) {
    ck_assert_msg(!parse_format_long(b.fmt, kFields, &spec, &err), "\"%s\" accepted", b.fmt);
    ck_assert_msg(err.find(b.part) != std::string::npos, "\"%s\": error \"%s\" lacks \"%s\"", b.fmt,
                  err.c_str(), b.part);
  }
}
END_TEST

// SLURM_TIME_FORMAT: standard, relative, or a strftime format.
START_TEST(time_formats) {
  std::string err;
  ck_assert(set_time_format("relative", NOW, &err));
  STREQ(format_time(NOW + 3600), "11:30");                    // today
  STREQ(format_time(NOW - 86400), "Ystday 10:30");
  STREQ(format_time(NOW + 86400), "Tomorr 10:30");
  STREQ(format_time(NOW + 3 * 86400), "Thu 10:30");           // within the week
  STREQ(format_time(NOW + 10 * 86400), "3 Dec 10:30");
  STREQ(format_time(NOW - 30 * 86400), "24 Oct 10:30");
  STREQ(format_time(NOW + 400 * 86400), "28 Dec 2027");
  STREQ(format_time(0), "N/A");
  ck_assert(set_time_format("%d.%m. %H:%M", NOW, &err));
  STREQ(format_time(NOW), "23.11. 10:30");
  ck_assert(!set_time_format(std::string(300, 'x'), NOW, &err));  // more than strftime gives
  ck_assert_msg(err.find("SLURM_TIME_FORMAT: ") == 0, "%s", err.c_str());
  STREQ(format_time(NOW), "23.11. 10:30");  // unchanged
  ck_assert(set_time_format("standard", NOW, &err));
  STREQ(format_time(NOW), "2026-11-23T10:30:00");
  ck_assert(set_time_format("", NOW, &err));
  STREQ(format_time(NOW), "2026-11-23T10:30:00");
}
END_TEST

Series alpha() {
  Series s;
  s.name = "alpha";
  s.label = "partition batch";
  s.capacity = 4;
  // 4 free for 10 min, 1 free for 20 min, 3 free for 10 min, then 4
  s.steps = {{NOW, NOW + 600, 4}, {NOW + 600, NOW + 1800, 1}, {NOW + 1800, NOW + 2400, 3},
             {NOW + 2400, NOW + 3600, 4}};
  return s;
}

START_TEST(chart_min_free) {
  Series s = alpha();
  ck_assert_int_eq(min_free(s, NOW, NOW + 600), 4);
  ck_assert_int_eq(min_free(s, NOW, NOW + 601), 1);   // touches the dip
  ck_assert_int_eq(min_free(s, NOW + 1800, NOW + 2400), 3);
  ck_assert_int_eq(min_free(s, NOW + 3000, NOW + 4000), 0);  // past the horizon
  ck_assert_int_eq(min_free(s, NOW - 10, NOW + 10), 0);      // before the first step
  Series hole = s;
  hole.steps.erase(hole.steps.begin() + 1);
  ck_assert_int_eq(min_free(hole, NOW + 500, NOW + 2000), 0);
}
END_TEST

START_TEST(chart_terminal) {
  ChartOptions o;
  o.begin = NOW;
  o.end = NOW + 3600;
  o.width = 12;  // 5 minutes a column
  Series empty;
  empty.name = "beta";
  empty.capacity = 0;
  STREQ(render_chart({alpha(), empty}, o),
        "alpha  (partition batch)\n"
        "4 |##      ####\n"
        "3 |##    ######\n"
        "2 |##    ######\n"
        "1 |############\n"
        "0 ++---------+-\n"
        "   10:30\n"
        "beta\n"
        "  publishes no nodes\n"
        "time 2026-11-23T10:30:00 to 2026-11-23T11:30:00, one column = 5:00; '#': that many "
        "nodes free during the whole column\n");
  // a large cluster is scaled to max_rows; each row's threshold is shown
  Series big;
  big.name = "gamma";
  big.capacity = 100;
  big.steps = {{NOW, NOW + 1800, 100}, {NOW + 1800, NOW + 3600, 45}};
  o.max_rows = 4;
  o.width = 20;
  STREQ(render_chart({big}, o),
        "gamma\n"
        "100 |##########\n"
        " 75 |##########\n"
        " 50 |##########\n"
        " 25 |####################\n"
        "  0 ++---------+---------\n"
        "     10:30     11:00\n"
        "time 2026-11-23T10:30:00 to 2026-11-23T11:30:00, one column = 3:00; '#': that many "
        "nodes free during the whole column\n");
  // over more than a day the labels carry the date
  o.end = NOW + 3 * 86400;
  o.width = 30;
  std::string two = render_chart({big}, o);
  ck_assert_msg(two.find("11-23T10:30") != std::string::npos, "%s", two.c_str());
}
END_TEST

START_TEST(chart_svg) {
  ChartOptions o;
  o.begin = NOW;
  o.end = NOW + 3600;
  Series s = alpha();
  s.name = "a<b";
  std::string svg = render_svg({s}, o);
  ck_assert(svg.rfind("<?xml", 0) == 0);
  ck_assert(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  ck_assert(svg.find("a&lt;b") != std::string::npos);
  ck_assert(svg.find("a<b") == std::string::npos);
  // one bar per step with free nodes; the 1-node step spans 20 of 60 minutes
  std::size_t bars = 0, pos = 0;
  while ((pos = svg.find("<rect x=", pos)) != std::string::npos) ++bars, ++pos;
  ck_assert_int_eq(bars, 4);
  ck_assert(svg.find("<rect x=\"196.7\" y=\"156.5\" width=\"273.3\" height=\"27.5\"") !=
            std::string::npos);
  ck_assert(svg.find("2026-11-23T10:40:00 to 2026-11-23T11:00:00: 1 free") != std::string::npos);
  ck_assert(svg.size() > 10 && svg.substr(svg.size() - 7) == "</svg>\n");
}
END_TEST

// Command lines: what is accepted, and the one-line error of what is not.
struct ArgCase {
  std::vector<std::string> args;  // after "sreserve"
  const char* error;              // nullptr: accepted; else a part of the message
};

const ArgCase kArgs[] = {
    {{"offers", "-N", "4", "-t", "30"}, nullptr},
    {{"offers", "-N4", "-t30", "-M", "alpha,beta", "--begin=now+1hour"}, nullptr},
    {{"--url", "http://h:1", "list"}, nullptr},
    {{"list", "--json", "-v", "-h", "-o", "%i %T"}, nullptr},
    {{"show", "co-17"}, nullptr},
    {{"cancel", "1", "2", "--json"}, nullptr},
    {{"update", "5", "--deadline", "none"}, nullptr},
    {{"submit", "-N", "4", "-t", "1:00:00", "job.sh", "-x", "--y"}, nullptr},  // args of the script
    {{"submit", "-N", "4", "-t", "10", "--wrap", "hostname"}, nullptr},
    {{"submit", "-N", "4", "-t", "10", "--test-only"}, nullptr},
    {{"profile", "--horizon", "2-0", "--svg", "x.svg"}, nullptr},
    {{"--version"}, nullptr},
    {{"offers", "--help"}, nullptr},
    {{}, "no command given"},
    {{"frobnicate"}, "invalid command \"frobnicate\""},
    {{"offers", "-t", "30"}, "-N/--nodes is required"},
    {{"offers", "-N", "4"}, "-t/--time is required"},
    {{"offers", "-N", "0", "-t", "5"}, "-N: invalid node count \"0\""},
    {{"offers", "-N", "5-2", "-t", "5"}, "invalid node count"},
    {{"offers", "-N", "4", "-t", "soon"}, "-t: invalid time limit \"soon\""},
    {{"offers", "-N", "4", "-t", "UNLIMITED"}, "finite time limit"},
    {{"offers", "-N", "4", "-t", "5", "--begin", "later"}, "--begin: invalid time specification"},
    {{"offers", "-N", "4", "-t", "5", "--deadline", "now-1hour"}, "--deadline is not after"},
    {{"offers", "-N", "4", "-t", "5", "--bogus"}, "unrecognized option '--bogus'"},
    {{"offers", "-N", "4", "-t", "5", "-Z"}, "invalid option -- 'Z'"},
    {{"offers", "-N"}, "requires an argument"},
    {{"offers", "-N", "4", "-t", "5", "extra"}, "offers takes no operand"},
    {{"offers", "-N", "4", "-t", "5", "--max-offers", "99"}, "--max-offers: not an integer 1-64"},
    {{"submit", "-N", "4", "-t", "5"}, "no batch script given"},
    {{"submit", "-N", "2-4", "-t", "5", "x.sh"}, "one node count"},
    {{"submit", "-N", "4", "-t", "5", "--policy", "best", "x.sh"}, "--policy: \"best\" is not one of"},
    {{"submit", "-N", "4", "-t", "5", "--overhead", "-1", "x.sh"}, "--overhead: not a number 0-10"},
    {{"submit", "-N", "4", "-t", "5", "--max-parts", "0", "x.sh"}, "--max-parts"},
    {{"submit", "-N", "4", "-t", "5", "--wrap", "a", "x.sh"}, "a script and --wrap together"},
    {{"show"}, "exactly one co-allocation id"},
    {{"show", "abc"}, "invalid co-allocation id \"abc\""},
    {{"update", "5"}, "nothing to change"},
    {{"cancel"}, "one or more co-allocation ids"},
    {{"profile", "--horizon", "400-0"}, "at most 366 days"},
    {{"profile", "--width", "3"}, "--width"},
    {{"list", "17"}, "list takes no operand"},
    {{"ui"}, nullptr},
    {{"ui", "-t", "1:00:00", "--json"}, nullptr},
    {{"ui", "17"}, "ui takes no operand"},
    {{"ui", "-t", "soon"}, "-t: invalid time limit \"soon\""},
    {{"-M", "alpha", "offers", "-N", "2", "-t", "5"}, nullptr},  // options before the command too
    {{"-N", "2", "-t", "5", "offers"}, nullptr},
    {{"--state=active", "list", "-h"}, nullptr},
    {{"-N", "2", "list"}, "invalid option -- 'N'"},  // before or after: the command's own options
    {{"--clusters", "a", "show", "1"}, "unrecognized option '--clusters'"},
    {{"-M", "a,b", "list"}, nullptr},  // list -M, as squeue -M
    {{"list", "-O", "JobID,State", "--yaml"}, nullptr},
    {{"list", "--json=v1"}, nullptr},
    {{"list", "--json=v0.0.40"}, "--json: unknown data format \"v0.0.40\""},
    {{"show", "1", "--yaml=v2"}, "--yaml: unknown data format"},
    {{"offers", "-N", "2", "-t", "5", "--Format=Cluster,Fit", "--helpFormat"}, nullptr},
    {{"-M", "a", "frobnicate"}, "invalid command \"frobnicate\""},
};

START_TEST(command_lines) {
  for (const auto& c : kArgs) {
    std::vector<std::string> args = {"sreserve"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    ParseResult r = parse_args(args, NOW);
    if (!c.error) {
      ck_assert_msg(r.ok, "\"%s\" rejected: %s", shown.c_str(), r.error.c_str());
    } else {
      ck_assert_msg(!r.ok, "\"%s\" accepted", shown.c_str());
      ck_assert_msg(r.error.find(c.error) != std::string::npos, "\"%s\": error \"%s\" lacks \"%s\"",
                    shown.c_str(), r.error.c_str(), c.error);
    }
  }
  // values land where they belong
  ParseResult r = parse_args({"sreserve", "offers", "-N", "2-6", "-t", "1-0", "--begin", "16:00",
                              "-M", "all", "--max-parts", "3"},
                             NOW);
  ck_assert(r.ok);
  ck_assert_int_eq(r.options.nodes_min, 2);
  ck_assert_int_eq(r.options.nodes_max, 6);
  ck_assert_int_eq(r.options.duration, 86400);
  ck_assert_int_eq(r.options.begin, 1795449600);
  ck_assert(r.options.clusters.empty());  // "all"
  r = parse_args({"sreserve", "submit", "-N", "4", "-t", "5", "-o", "out.txt", "-J", "x", "job.sh", "a", "-N", "9"}, NOW);
  ck_assert(r.ok);
  ck_assert_str_eq(r.options.output.c_str(), "out.txt");  // -o is --output for submit
  ck_assert(r.options.format.empty());
  ck_assert_int_eq(r.options.nodes_max, 4);
  ck_assert_str_eq(r.options.script_path.c_str(), "job.sh");
  ck_assert_int_eq(r.options.script_args.size(), 3);
  r = parse_args({"sreserve", "show", "co-42"}, NOW);
  ck_assert(r.ok && r.options.ids.size() == 1 && r.options.ids[0] == 42);
}
END_TEST

// Options may come before or after the command, as squeue's: both orders
// give the same Options.
START_TEST(option_placement) {
  ParseResult a = parse_args({"sreserve", "-h", "-o", "%i %T", "list", "--state", "active"}, NOW);
  ParseResult b = parse_args({"sreserve", "list", "--state", "active", "-h", "-o", "%i %T"}, NOW);
  ck_assert_msg(a.ok, "%s", a.error.c_str());
  ck_assert(b.ok);
  ck_assert(a.options.command == Command::kList);
  ck_assert(a.options.noheader && !a.options.help);  // -h before a command is --noheader
  ck_assert_str_eq(a.options.format.c_str(), "%i %T");
  ck_assert_str_eq(a.options.state.c_str(), b.options.state.c_str());
  ck_assert_str_eq(a.options.format.c_str(), b.options.format.c_str());

  // -M, long options with a separate value, bundled short options
  a = parse_args({"sreserve", "-vM", "alpha,beta", "--time", "1:00:00", "--url=http://x:1", "offers",
                  "-N", "4"},
                 NOW);
  ck_assert_msg(a.ok, "%s", a.error.c_str());
  ck_assert_int_eq(a.options.verbose, 1);
  ck_assert_int_eq(a.options.clusters.size(), 2);
  ck_assert(a.options.clusters_given);
  ck_assert_int_eq(a.options.duration, 3600);
  ck_assert_str_eq(a.options.url.c_str(), "http://x:1");

  // submit: -o before the command is still --output; the script's own
  // arguments after SCRIPT stay the script's
  a = parse_args({"sreserve", "-o", "out.txt", "-N", "2", "submit", "-t", "5", "job.sh", "-M", "x"}, NOW);
  ck_assert_msg(a.ok, "%s", a.error.c_str());
  ck_assert_str_eq(a.options.output.c_str(), "out.txt");
  ck_assert(!a.options.clusters_given);
  ck_assert_int_eq(a.options.script_args.size(), 2);

  // alone, -h is still --help
  a = parse_args({"sreserve", "-h"}, NOW);
  ck_assert(a.ok && a.options.help);
}
END_TEST

const char* fake_env(const char* name) {
  std::string n = name;
  if (n == "SLURM_CLUSTERS") return "beta,gamma";
  if (n == "SRESERVE_FORMAT") return "%i|%T";
  return nullptr;
}

const char* fake_env_format2(const char* name) {
  return std::string(name) == "SRESERVE_FORMAT2" ? "JobID:5,State" : nullptr;
}

const char* fake_env_bad(const char* name) {
  return std::string(name) == "SLURM_CLUSTERS" ? "," : nullptr;
}

// SLURM_CLUSTERS stands for -M, SRESERVE_FORMAT for list's -o; the
// command line wins over both.
START_TEST(environment) {
  std::string err;
  ParseResult r = parse_args({"sreserve", "offers", "-N", "2", "-t", "5"}, NOW);
  ck_assert(r.ok && apply_environment(&r.options, fake_env, &err));
  ck_assert_int_eq(r.options.clusters.size(), 2);
  ck_assert_str_eq(r.options.clusters[1].c_str(), "gamma");
  ck_assert(r.options.format.empty());  // SRESERVE_FORMAT is list's

  r = parse_args({"sreserve", "offers", "-N", "2", "-t", "5", "-M", "alpha"}, NOW);
  ck_assert(r.ok && apply_environment(&r.options, fake_env, &err));
  ck_assert_int_eq(r.options.clusters.size(), 1);
  ck_assert_str_eq(r.options.clusters[0].c_str(), "alpha");

  r = parse_args({"sreserve", "offers", "-N", "2", "-t", "5", "-M", "all"}, NOW);
  ck_assert(r.ok && apply_environment(&r.options, fake_env, &err));
  ck_assert(r.options.clusters.empty());  // -M all over SLURM_CLUSTERS

  r = parse_args({"sreserve", "update", "5", "--deadline", "none"}, NOW);
  ck_assert(r.ok && apply_environment(&r.options, fake_env, &err));
  ck_assert(r.options.clusters.empty());  // update's -M changes the co-allocation: never from the environment

  r = parse_args({"sreserve", "list"}, NOW);
  ck_assert(r.ok && apply_environment(&r.options, fake_env, &err));
  ck_assert_str_eq(r.options.format.c_str(), "%i|%T");
  r = parse_args({"sreserve", "list", "-o", "%u"}, NOW);
  ck_assert(r.ok && apply_environment(&r.options, fake_env, &err));
  ck_assert_str_eq(r.options.format.c_str(), "%u");

  // SRESERVE_FORMAT2 as SQUEUE_FORMAT2: list's -O, under SRESERVE_FORMAT
  r = parse_args({"sreserve", "list"}, NOW);
  ck_assert(r.ok && apply_environment(&r.options, fake_env_format2, &err));
  ck_assert(r.options.format.empty());
  ck_assert_str_eq(r.options.format_long.c_str(), "JobID:5,State");
  r = parse_args({"sreserve", "list", "-o", "%i"}, NOW);
  ck_assert(r.ok && apply_environment(&r.options, fake_env_format2, &err));
  ck_assert(r.options.format_long.empty());
  ck_assert_str_eq(r.options.format.c_str(), "%i");
  r = parse_args({"sreserve", "list", "-O", "Name"}, NOW);  // -O over SRESERVE_FORMAT too
  ck_assert(r.ok && apply_environment(&r.options, fake_env, &err));
  ck_assert(r.options.format.empty());
  ck_assert_str_eq(r.options.format_long.c_str(), "Name");
  // and SLURM_CLUSTERS is list's -M as squeue's
  ck_assert_int_eq(r.options.clusters.size(), 2);
  // the last of -o and -O wins
  r = parse_args({"sreserve", "list", "-O", "Name", "-o", "%i"}, NOW);
  ck_assert(r.ok && r.options.format == "%i" && r.options.format_long.empty());

  r = parse_args({"sreserve", "profile"}, NOW);
  ck_assert(r.ok);
  ck_assert(!apply_environment(&r.options, fake_env_bad, &err));
  ck_assert_str_eq(err.c_str(), "SLURM_CLUSTERS: empty cluster list");
}
END_TEST

// #SBATCH lines of a submit script, with sbatch's precedence: the command
// line over the directives; directives end at the first command.
START_TEST(sbatch_directives) {
  const std::string script =
      "#!/bin/bash\n"
      "# a comment\n"
      "\n"
      "#SBATCH -N 6 --time=1:00:00   # six nodes for an hour\n"
      "#SBATCH --job-name=\"my job\" -o out.%j\n"
      "#SBATCH -p big -A proj --qos=low\n"
      "#SBATCH --mail-type=END\n"         // flexcod takes no mail: skipped
      "#SBATCH --error err.txt -M alpha,beta\n"
      "#SBATCHX -N 99\n"                  // not a directive
      "##SBATCH -N 98\n"                  // commented out, as sbatch
      "srun ./a.out\n"
      "#SBATCH -D /after/the/command\n";  // after the first command: not read
  ParseResult r = parse_args({"sreserve", "submit", "-t", "30", "-o", "mine.txt", "-p",
                              "alpha:small,beta:gpu", "job.sh"}, NOW);
  ck_assert_msg(r.ok, "%s", r.error.c_str());  // -N may come from the script
  std::vector<std::string> warnings;
  std::string err;
  ck_assert_msg(apply_script_directives(script, &r.options, &warnings, &err), "%s", err.c_str());
  const Options& o = r.options;
  ck_assert_int_eq(o.nodes_min, 6);
  ck_assert_int_eq(o.nodes_max, 6);
  ck_assert_int_eq(o.duration, 1800);                     // -t 30 on the command line wins
  STREQ(o.output, "mine.txt");                            // so does -o
  STREQ(o.job_name, "my job");
  STREQ(o.error, "err.txt");
  ck_assert_int_eq(o.clusters.size(), 2);
  ck_assert(o.chdir.empty());
  // -p on the command line wins as a whole; -A and -q come from the script
  STREQ(o.partition.all, "");
  ck_assert_int_eq(o.partition.by.size(), 2);
  STREQ(o.partition.get("alpha"), "small");
  STREQ(o.partition.get("beta"), "gpu");
  STREQ(o.partition.get("gamma", "dflt"), "dflt");
  STREQ(o.account.get("alpha"), "proj");
  STREQ(o.account.get("beta"), "proj");
  STREQ(o.qos.get("beta"), "low");
  ck_assert_int_eq(warnings.size(), 1);
  ck_assert_msg(warnings[0].find("line 7: unrecognized option '--mail-type=END'") != std::string::npos,
                "%s", warnings[0].c_str());

  // -N neither on the command line nor in the script
  r = parse_args({"sreserve", "submit", "-t", "30", "job.sh"}, NOW);
  ck_assert(r.ok);
  warnings.clear();
  ck_assert(!apply_script_directives("#!/bin/sh\n#SBATCH -J x\nhostname\n", &r.options, &warnings, &err));
  STREQ(err, "submit: -N/--nodes is required (command line or #SBATCH)");

  // an invalid value in a directive is an error, as in sbatch
  r = parse_args({"sreserve", "submit", "-t", "30", "job.sh"}, NOW);
  err.clear();
  ck_assert(!apply_script_directives("#!/bin/sh\n#SBATCH -N 2-x\n", &r.options, &warnings, &err));
  ck_assert_msg(err.find("#SBATCH line 2: -N: invalid node count") == 0, "%s", err.c_str());

  // without a script the command line must say it all
  r = parse_args({"sreserve", "submit", "-t", "30", "--wrap", "hostname"}, NOW);
  ck_assert(!r.ok);
}
END_TEST

// sreserve(1) as groff source with "\-" made "-", from FLEXCO_SRCDIR.
std::string manual_text() {
  const char* src = std::getenv("FLEXCO_SRCDIR");
  std::ifstream in(std::string(src ? src : "..") + "/doc/sreserve.1");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string raw = ss.str(), out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\\' && i + 1 < raw.size() && raw[i + 1] == '-') continue;
    out += raw[i];
  }
  return out;
}

// `word` ("--name" or "-X") written in bold in the manual, as an option.
bool manual_names(const std::string& man, const std::string& word) {
  for (std::size_t at = man.find("\\fB" + word); at != std::string::npos;
       at = man.find("\\fB" + word, at + 1)) {
    char next = man[at + 3 + word.size()];
    if (next == '\\' || next == '=' || next == ' ' || next == ',') return true;
  }
  return false;
}

const Command kAllCommands[] = {Command::kNone,   Command::kOffers, Command::kProfile,
                                Command::kSubmit, Command::kList,   Command::kShow,
                                Command::kUpdate, Command::kCancel, Command::kUi};

// Every option of every command's getopt tables is in sreserve(1) and in
// that command's --help, every bold option of sreserve(1) is in some
// table, and every format letter is in FORMAT FIELDS under its command.
START_TEST(manual_agrees) {
  std::string man = manual_text();
  ck_assert_msg(man.find(".SH \"OPTIONS\"") != std::string::npos, "doc/sreserve.1 not found (FLEXCO_SRCDIR)");
  std::vector<std::string> known;
  std::string missing;
  for (Command c : kAllCommands) {
    std::string help = help_text(c);
    for (const auto& o : option_spellings(c)) {
      known.push_back(o);
      if (!manual_names(man, o)) missing += o + " (" + command_name(c) + ") not in sreserve(1)\n";
      bool in_help = help.find(o + " ") != std::string::npos || help.find(o + "=") != std::string::npos ||
                     help.find(o + ",") != std::string::npos || help.find(o + "\n") != std::string::npos;
      if (!in_help) missing += o + " not in \"sreserve " + command_name(c) + " --help\"\n";
    }
  }
  // the other way: \fB-X or \fB--name in the manual is an option
  for (std::size_t at = man.find("\\fB-"); at != std::string::npos; at = man.find("\\fB-", at + 1)) {
    std::size_t end = at + 3;
    while (end < man.size() && (std::isalnum(static_cast<unsigned char>(man[end])) || man[end] == '-')) ++end;
    std::string w = man.substr(at + 3, end - at - 3);
    if (w.size() > 2 && w[1] != '-') w = w.substr(0, 2);  // "-Mx": -M
    bool found = false;
    for (const auto& k : known) found = found || k == w;
    if (!found) missing += "sreserve(1) names \"" + w + "\", which no command takes\n";
  }
  struct {
    const char* heading;
    const std::vector<FieldDef>& fields;
  } sections[] = {{"\\fBoffers\\fR (default", offer_fields()},
                  {"\\fBprofile --steps\\fR (default", step_fields()},
                  {"\\fBlist\\fR (default", coalloc_fields()},
                  {"\\fBshow\\fR parts (default", part_fields()}};
  // both ways: every field's -O name (and letter, if it has one) is
  // under its command, and every bold %X and Name there is a field
  for (const auto& sec : sections) {
    std::size_t b = man.find(sec.heading);
    ck_assert_msg(b != std::string::npos, "no \"%s\" in FORMAT FIELDS", sec.heading);
    std::size_t e = man.find("\n.", b);
    std::string para = man.substr(b, e - b);
    for (const auto& f : sec.fields) {
      if (f.letter && para.find(std::string("\\fB%") + f.letter + "\\fR") == std::string::npos)
        missing += std::string("format letter %") + f.letter + " not under \"" + sec.heading + "\"\n";
      if (para.find("\\fB" + f.name + "\\fR") == std::string::npos)
        missing += "format field " + f.name + " not under \"" + sec.heading + "\"\n";
    }
    for (std::size_t at = para.find("\\fB"); at != std::string::npos; at = para.find("\\fB", at + 1)) {
      std::size_t end = para.find("\\fR", at);
      std::string w = para.substr(at + 3, end - at - 3);
      bool found = false;
      if (w.size() == 2 && w[0] == '%') {
        for (const auto& f : sec.fields) found = found || f.letter == w[1];
      } else if (!w.empty() && std::isupper(static_cast<unsigned char>(w[0]))) {
        for (const auto& f : sec.fields) found = found || f.name == w;
      } else {
        continue;  // the command's name, other words
      }
      if (!found) missing += "\"" + w + "\" under \"" + sec.heading + "\" is no field of it\n";
    }
  }
  // contrib/sreserve.bash-completion offers every long option
  const char* src = std::getenv("FLEXCO_SRCDIR");
  std::ifstream in(std::string(src ? src : "..") + "/contrib/sreserve.bash-completion");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string completion = ss.str();
  ck_assert_msg(!completion.empty(), "contrib/sreserve.bash-completion not found");
  for (Command c : kAllCommands)
    for (const auto& o : option_spellings(c)) {
      bool found = false;
      for (std::size_t at = completion.find(o); at != std::string::npos && !found;
           at = completion.find(o, at + 1)) {
        char next = at + o.size() < completion.size() ? completion[at + o.size()] : ' ';
        found = !(std::isalnum(static_cast<unsigned char>(next)) || next == '-');
      }
      if (!found) missing += o + " (" + command_name(c) + ") not in contrib/sreserve.bash-completion\n";
    }
  // and, after -O, every field name of the command's table
  for (const auto& sec : sections) {
    std::string cmd = sec.heading + 3;  // "offers\fR (default": the command
    cmd = cmd.substr(0, cmd.find_first_of(" \\"));
    std::size_t at = completion.find("\t\t" + cmd + ") fields=\"");
    std::string line = at == std::string::npos ? "" : completion.substr(at, completion.find('\n', at) - at) + " ";
    if (line.empty()) missing += "no -O field list for " + cmd + " in contrib/sreserve.bash-completion\n";
    for (const auto& f : sec.fields)
      if (!line.empty() && line.find(" " + f.name + " ") == std::string::npos &&
          line.find("\"" + f.name + " ") == std::string::npos && line.find(" " + f.name + "\"") == std::string::npos)
        missing += "-O field " + f.name + " of " + cmd + " not in contrib/sreserve.bash-completion\n";
  }
  ck_assert_msg(missing.empty(), "%s", missing.c_str());
}
END_TEST

// -p, -A, -q: plain, per cluster, or both; errors name the option.
START_TEST(cluster_values) {
  ClusterValue v;
  std::string err;
  ck_assert(parse_cluster_value("batch", "-p", &v, &err));
  STREQ(v.all, "batch");
  ck_assert(v.by.empty());
  ck_assert(parse_cluster_value("batch,beta:gpu", "-p", &v, &err));
  STREQ(v.get("alpha"), "batch");
  STREQ(v.get("beta"), "gpu");
  ck_assert(parse_cluster_value("alpha:a1,beta:b1", "-A", &v, &err));
  STREQ(v.all, "");
  STREQ(v.get("alpha"), "a1");
  STREQ(v.get("gamma", "x"), "x");
  struct {
    const char* text;
    const char* error;
  } bad[] = {
      {"", "-p: \"\" is not a valid name (1-64 characters, none of blank , : = # \" ' \\)"},
      {"a,b", "-p: one value for all clusters, not \"a\" and \"b\" (per cluster: CLUSTER:VALUE)"},
      {"alpha:x,alpha:y", "-p: cluster \"alpha\" given twice"},
      {":x", "-p: \":x\" names no cluster (CLUSTER:VALUE)"},
      {"alpha:", "-p: \"\" is not a valid name (1-64 characters, none of blank , : = # \" ' \\)"},
      {"alpha:b:c", "-p: \"b:c\" is not a valid name (1-64 characters, none of blank , : = # \" ' \\)"},
      {"batch,", "-p: \"\" is not a valid name (1-64 characters, none of blank , : = # \" ' \\)"},
  };
  for (const auto& b : bad) {
    err.clear();
    ck_assert_msg(!parse_cluster_value(b.text, "-p", &v, &err), "%s accepted", b.text);
    ck_assert_msg(err == b.error, "%s: %s", b.text, err.c_str());
  }
  // on the command line: a usage error; only submit takes -A and -q
  ParseResult r = parse_args({"sreserve", "submit", "-N", "2", "-t", "5", "-p", "a,b", "--wrap", "x"}, NOW);
  ck_assert(!r.ok);
  STREQ(r.error, "-p: one value for all clusters, not \"a\" and \"b\" (per cluster: CLUSTER:VALUE)");
  r = parse_args({"sreserve", "submit", "-N", "2", "-t", "5", "--account=alpha:x", "--qos", "long",
                  "--partition", "beta:gpu", "--wrap", "x"}, NOW);
  ck_assert_msg(r.ok, "%s", r.error.c_str());
  STREQ(r.options.account.get("alpha"), "x");
  STREQ(r.options.qos.get("beta"), "long");
  STREQ(r.options.partition.get("beta"), "gpu");
  r = parse_args({"sreserve", "offers", "-N", "2", "-t", "5", "-p", "alpha:gpu"}, NOW);
  ck_assert_msg(r.ok, "%s", r.error.c_str());
  r = parse_args({"sreserve", "offers", "-N", "2", "-t", "5", "-A", "x"}, NOW);
  ck_assert(!r.ok);
}
END_TEST

Suite* sreserve_suite() {
  Suite* s = suite_create("sreserve");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, time_parsing);
  tcase_add_test(tc, duration_parsing);
  tcase_add_test(tc, time_printing);
  tcase_add_test(tc, time_formats);
  tcase_add_test(tc, format_strings);
  tcase_add_test(tc, chart_min_free);
  tcase_add_test(tc, chart_terminal);
  tcase_add_test(tc, chart_svg);
  tcase_add_test(tc, command_lines);
  tcase_add_test(tc, cluster_values);
  tcase_add_test(tc, option_placement);
  tcase_add_test(tc, environment);
  tcase_add_test(tc, sbatch_directives);
  tcase_add_test(tc, manual_agrees);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  setenv("TZ", "UTC", 1);
  tzset();
  SRunner* sr = srunner_create(sreserve_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
