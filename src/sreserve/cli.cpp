// SPDX-License-Identifier: GPL-2.0-or-later
// cli.cpp - sreserve's option parsing (getopt_long, as Slurm's commands).

#include "sreserve/cli.hpp"

#include <getopt.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "flexco_config.h"
#include "core/strings.hpp"
#include "sreserve/timefmt.hpp"

namespace sreserve {

namespace {

enum LongOnly {
  kOptUrl = 1000, kOptMunge, kOptConf, kOptJson, kOptHelp, kOptUsage, kOptVersion,
  kOptBegin, kOptDeadline, kOptMaxParts, kOptMaxOffers, kOptPartition, kOptPolicy,
  kOptOverhead, kOptHorizon, kOptSvg, kOptSteps, kOptWidth, kOptWrap, kOptExport,
  kOptTestOnly, kOptParsable, kOptState, kOptUser, kOptHelpFormat, kOptYaml, kOptHelpFormatLong,
  kOptChart,  // show --chart (gantt.hpp)
};

bool name_ok(const std::string& v) {
  if (v.empty() || v.size() > 64) return false;
  for (unsigned char c : v)
    if (c <= ' ' || c >= 0x7f || std::strchr(",:=#\"'\\", c)) return false;
  return true;
}

const struct {
  Command c;
  const char* name;
} kCommands[] = {{Command::kOffers, "offers"}, {Command::kProfile, "profile"},
                 {Command::kSubmit, "submit"}, {Command::kList, "list"},
                 {Command::kShow, "show"},     {Command::kUpdate, "update"},
                 {Command::kCancel, "cancel"}, {Command::kUi, "ui"}};

bool to_int64(const char* s, std::int64_t lo, std::int64_t hi, std::int64_t* out) {
  if (!s || !*s) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

struct Parser {
  Options o;
  std::string error;

  bool fail(std::string e) {
    if (error.empty()) error = std::move(e);
    return false;
  }

  bool time_opt(const char* name, const char* arg, std::int64_t* out) {
    Parsed p = parse_time(arg, o.now);
    if (!p.ok) return fail(std::string("--") + name + ": " + p.error);
    *out = p.value;
    return true;
  }

  bool duration_opt(const char* name, const char* arg, std::int64_t* out) {
    Parsed p = parse_duration(arg);
    if (!p.ok) return fail(std::string(name) + ": " + p.error);
    if (p.value == kUnlimited)
      return fail(std::string(name) + ": a co-allocation needs a finite time limit, not \"" +
                  arg + "\"");
    *out = p.value;
    return true;
  }

  bool cluster_value(const char* name, const char* arg, ClusterValue* out) {
    ClusterValue v;
    std::string e;
    if (!parse_cluster_value(arg, name, &v, &e)) return fail(e);
    *out = v;  // the last one given wins, as sbatch's
    return true;
  }

  bool nodes_opt(const char* arg) {
    std::string s = arg;
    std::size_t dash = s.find('-');
    std::int64_t a = 0, b = 0;
    bool okv = dash == std::string::npos
                   ? to_int64(s.c_str(), 1, 1000000, &a) && (b = a, true)
                   : to_int64(s.substr(0, dash).c_str(), 1, 1000000, &a) &&
                         to_int64(s.substr(dash + 1).c_str(), 1, 1000000, &b);
    if (!okv || b < a) return fail("-N: invalid node count \"" + s + "\" (N or MIN-MAX)");
    o.nodes_min = a;
    o.nodes_max = b;
    return true;
  }

  // One option of any command; false on error.
  bool option(int c, const char* arg) {
    std::int64_t v = 0;
    switch (c) {
      case kOptUrl: o.url = arg; return true;
      case kOptMunge: o.munge_socket = arg; return true;
      case kOptConf: o.conf = arg; return true;
      case kOptJson:
      case kOptYaml: {
        const char* name = c == kOptJson ? "--json" : "--yaml";
        if (arg && std::strcmp(arg, kDataFormat) != 0)
          return fail(std::string(name) + ": unknown data format \"" + arg + "\" (this sreserve writes " +
                      kDataFormat + ")");
        o.json = c == kOptJson;
        o.yaml = c == kOptYaml;
        return true;
      }
      case kOptHelpFormatLong: o.helpformat_long = true; return true;
      case kOptHelp: o.help = true; return true;
      case kOptUsage: o.usage = true; return true;
      case kOptVersion: case 'V': o.version = true; return true;
      case kOptHelpFormat: o.helpformat = true; return true;
      case 'v': ++o.verbose; return true;
      case 'h': o.noheader = true; return true;
      case 'M':
        o.clusters = split_list(arg);
        o.clusters_given = true;
        if (o.clusters.empty()) return fail("-M: empty cluster list");
        if (o.clusters.size() == 1 && o.clusters[0] == "all") o.clusters.clear();
        return true;
      case 'N': return nodes_opt(arg);
      case 't': return duration_opt("-t", arg, &o.duration);
      case kOptBegin: return time_opt("begin", arg, &o.begin);
      case kOptDeadline:
        if (std::strcmp(arg, "none") == 0 && o.command == Command::kUpdate) {
          o.deadline_none = true;
          return true;
        }
        return time_opt("deadline", arg, &o.deadline);
      case kOptMaxParts:
        if (!to_int64(arg, 1, 64, &v)) return fail("--max-parts: not an integer 1-64: \"" + std::string(arg) + "\"");
        o.max_parts = static_cast<int>(v);
        return true;
      case kOptMaxOffers:
        if (!to_int64(arg, 1, 64, &v)) return fail("--max-offers: not an integer 1-64: \"" + std::string(arg) + "\"");
        o.max_offers = static_cast<int>(v);
        return true;
      case 'p':
      case kOptPartition: return cluster_value(c == 'p' ? "-p" : "--partition", arg, &o.partition);
      case 'A': return cluster_value("-A", arg, &o.account);
      case 'q': return cluster_value("-q", arg, &o.qos);
      case kOptPolicy: {
        std::string p = arg;
        if (p != "flexco" && p != "coarp" && p != "hpcm" && p != "cores" && p != "cores-seq")
          return fail("--policy: \"" + p +
                      "\" is not one of flexco, coarp, hpcm, cores, cores-seq");
        o.policy = p;
        return true;
      }
      case kOptOverhead: {
        char* end = nullptr;
        errno = 0;
        double d = std::strtod(arg, &end);
        if (errno || !*arg || *end || !(d >= 0 && d <= 10))
          return fail("--overhead: not a number 0-10: \"" + std::string(arg) + "\"");
        o.overhead = d;
        return true;
      }
      case kOptHorizon:
        if (!duration_opt("--horizon", arg, &o.horizon)) return false;
        if (o.horizon > 31622400) return fail("--horizon: at most 366 days");
        return true;
      case kOptSvg: o.svg = arg; return true;
      case kOptSteps: o.steps = true; return true;
      case kOptChart: o.chart = true; return true;
      case kOptWidth:
        if (!to_int64(arg, 10, 1000, &v)) return fail("--width: not an integer 10-1000: \"" + std::string(arg) + "\"");
        o.width = static_cast<int>(v);
        return true;
      case kOptWrap: o.wrap = arg; return true;
      case 'J': o.job_name = arg; return true;
      case 'D': o.chdir = arg; return true;
      case kOptExport: o.export_spec = arg; return true;
      case 'o':
        if (o.command == Command::kSubmit) {
          o.output = arg;
        } else {
          o.format = arg;
          o.format_long.clear();  // the last of -o and -O wins, as in squeue
        }
        return true;
      case 'O':
        o.format_long = arg;
        o.format.clear();
        return true;
      case 'e': o.error = arg; return true;
      case kOptTestOnly: o.test_only = true; return true;
      case kOptParsable: o.parsable = true; return true;
      case kOptState: o.state = arg; return true;
      case kOptUser: o.user = arg; return true;
      case 'i':
        if (!to_int64(arg, 1, 86400, &v)) return fail("-i: not a number of seconds 1-86400: \"" + std::string(arg) + "\"");
        o.iterate = static_cast<int>(v);
        return true;
      default: return fail("internal: unhandled option");
    }
  }
};

// Options every command takes.
#define COMMON_LONG                                                     \
  {"url", required_argument, nullptr, kOptUrl},                         \
  {"munge-socket", required_argument, nullptr, kOptMunge},              \
  {"conf", required_argument, nullptr, kOptConf},                       \
  {"json", optional_argument, nullptr, kOptJson},                       \
  {"yaml", optional_argument, nullptr, kOptYaml},                       \
  {"help", no_argument, nullptr, kOptHelp},                             \
  {"usage", no_argument, nullptr, kOptUsage},                           \
  {"version", no_argument, nullptr, kOptVersion},                       \
  {"verbose", no_argument, nullptr, 'v'}

const struct option kOffersLong[] = {
    COMMON_LONG,
    {"nodes", required_argument, nullptr, 'N'},
    {"time", required_argument, nullptr, 't'},
    {"begin", required_argument, nullptr, kOptBegin},
    {"deadline", required_argument, nullptr, kOptDeadline},
    {"clusters", required_argument, nullptr, 'M'},
    {"max-parts", required_argument, nullptr, kOptMaxParts},
    {"max-offers", required_argument, nullptr, kOptMaxOffers},
    {"partition", required_argument, nullptr, kOptPartition},
    {"policy", required_argument, nullptr, kOptPolicy},
    {"overhead", required_argument, nullptr, kOptOverhead},
    {"format", required_argument, nullptr, 'o'},
    {"Format", required_argument, nullptr, 'O'},
    {"noheader", no_argument, nullptr, 'h'},
    {"helpformat", no_argument, nullptr, kOptHelpFormat},
    {"helpFormat", no_argument, nullptr, kOptHelpFormatLong},
    {nullptr, 0, nullptr, 0}};

const struct option kProfileLong[] = {
    COMMON_LONG,
    {"clusters", required_argument, nullptr, 'M'},
    {"horizon", required_argument, nullptr, kOptHorizon},
    {"partition", required_argument, nullptr, kOptPartition},
    {"svg", required_argument, nullptr, kOptSvg},
    {"steps", no_argument, nullptr, kOptSteps},
    {"width", required_argument, nullptr, kOptWidth},
    {"format", required_argument, nullptr, 'o'},
    {"Format", required_argument, nullptr, 'O'},
    {"noheader", no_argument, nullptr, 'h'},
    {"helpformat", no_argument, nullptr, kOptHelpFormat},
    {"helpFormat", no_argument, nullptr, kOptHelpFormatLong},
    {nullptr, 0, nullptr, 0}};

const struct option kSubmitLong[] = {
    COMMON_LONG,
    {"nodes", required_argument, nullptr, 'N'},
    {"time", required_argument, nullptr, 't'},
    {"begin", required_argument, nullptr, kOptBegin},
    {"deadline", required_argument, nullptr, kOptDeadline},
    {"clusters", required_argument, nullptr, 'M'},
    {"policy", required_argument, nullptr, kOptPolicy},
    {"max-parts", required_argument, nullptr, kOptMaxParts},
    {"overhead", required_argument, nullptr, kOptOverhead},
    {"partition", required_argument, nullptr, 'p'},
    {"account", required_argument, nullptr, 'A'},
    {"qos", required_argument, nullptr, 'q'},
    {"job-name", required_argument, nullptr, 'J'},
    {"chdir", required_argument, nullptr, 'D'},
    {"export", required_argument, nullptr, kOptExport},
    {"output", required_argument, nullptr, 'o'},
    {"error", required_argument, nullptr, 'e'},
    {"wrap", required_argument, nullptr, kOptWrap},
    {"test-only", no_argument, nullptr, kOptTestOnly},
    {"parsable", no_argument, nullptr, kOptParsable},
    {nullptr, 0, nullptr, 0}};

const struct option kListLong[] = {
    COMMON_LONG,
    {"clusters", required_argument, nullptr, 'M'},
    {"format", required_argument, nullptr, 'o'},
    {"Format", required_argument, nullptr, 'O'},
    {"noheader", no_argument, nullptr, 'h'},
    {"helpformat", no_argument, nullptr, kOptHelpFormat},
    {"helpFormat", no_argument, nullptr, kOptHelpFormatLong},
    {"state", required_argument, nullptr, kOptState},
    {"user", required_argument, nullptr, kOptUser},
    {"iterate", required_argument, nullptr, 'i'},
    {nullptr, 0, nullptr, 0}};

const struct option kShowLong[] = {
    COMMON_LONG,
    {"format", required_argument, nullptr, 'o'},
    {"Format", required_argument, nullptr, 'O'},
    {"noheader", no_argument, nullptr, 'h'},
    {"helpformat", no_argument, nullptr, kOptHelpFormat},
    {"helpFormat", no_argument, nullptr, kOptHelpFormatLong},
    {"iterate", required_argument, nullptr, 'i'},
    // the co-allocation over time (gantt.hpp)
    {"chart", no_argument, nullptr, kOptChart},
    {"svg", required_argument, nullptr, kOptSvg},
    {"width", required_argument, nullptr, kOptWidth},
    {nullptr, 0, nullptr, 0}};

const struct option kUpdateLong[] = {
    COMMON_LONG,
    {"deadline", required_argument, nullptr, kOptDeadline},
    {"clusters", required_argument, nullptr, 'M'},
    {nullptr, 0, nullptr, 0}};

const struct option kGlobalLong[] = {COMMON_LONG, {nullptr, 0, nullptr, 0}};

const struct option kUiLong[] = {
    COMMON_LONG,
    {"time", required_argument, nullptr, 't'},
    {nullptr, 0, nullptr, 0}};

const char* short_opts(Command c) {
  switch (c) {
    case Command::kOffers: return ":vhN:t:M:o:O:p:";
    case Command::kProfile: return ":vhM:o:O:p:";
    case Command::kSubmit: return "+:vVN:t:M:J:D:o:e:p:A:q:";  // stop at SCRIPT, as sbatch
    case Command::kList: return ":vho:O:i:M:";
    case Command::kShow: return ":vho:O:i:";
    case Command::kUpdate: return ":vM:";
    case Command::kCancel: return ":v";
    case Command::kUi: return ":vt:";
    default: return "+:vVh";  // before the command, -h is --help as in sbatch
  }
}

const struct option* long_opts(Command c) {
  switch (c) {
    case Command::kOffers: return kOffersLong;
    case Command::kProfile: return kProfileLong;
    case Command::kSubmit: return kSubmitLong;
    case Command::kList: return kListLong;
    case Command::kShow: return kShowLong;
    case Command::kUpdate: return kUpdateLong;
    case Command::kCancel: return kGlobalLong;
    case Command::kUi: return kUiLong;
    default: return kGlobalLong;
  }
}

// getopt_long over args[from..]; returns the index of the first operand
// (argv is permuted unless the short options start with '+').
bool run_getopt(Parser& p, std::vector<char*>& av, Command c, int* first_operand) {
  optind = 0;  // GNU: reinitialise
  opterr = 0;
  int argc = static_cast<int>(av.size()) - 1;
  int ch;
  while ((ch = getopt_long(argc, av.data(), short_opts(c), long_opts(c), nullptr)) != -1) {
    const char* shown = av[static_cast<std::size_t>(optind > 0 ? optind - 1 : 0)];
    if (ch == '?') {
      if (optopt) return p.fail(std::string("invalid option -- '") + static_cast<char>(optopt) + "'");
      return p.fail(std::string("unrecognized option '") + shown + "'");
    }
    if (ch == ':') return p.fail(std::string("option '") + shown + "' requires an argument");
    if (!p.option(ch, optarg)) return false;
  }
  *first_operand = optind;
  return true;
}

// Does `t`, an option before the command, take the next word as its
// value?  Any command's option may come first (squeue-like: "sreserve -h
// -o %i list" is "sreserve list -h -o %i"), so every command's table is
// asked; getopt_long's unambiguous abbreviations count too.
bool takes_next_value(const std::string& t) {
  if (t.rfind("--", 0) == 0) {
    if (t.size() == 2 || t.find('=') != std::string::npos) return false;
    std::string name = t.substr(2);
    for (const struct option* table : {kOffersLong, kProfileLong, kSubmitLong, kListLong, kShowLong, kUpdateLong})
      for (const struct option* e = table; e->name; ++e)
        if (std::strncmp(e->name, name.c_str(), name.size()) == 0 && e->has_arg == required_argument)
          return true;
    return false;
  }
  static const std::string kWithValue = "NtMoOiJDepAq";
  for (std::size_t k = 1; k < t.size(); ++k)
    if (kWithValue.find(t[k]) != std::string::npos) return k + 1 == t.size();
  return false;
}

bool parse_ids(Parser& p, const std::vector<std::string>& operands) {
  for (const auto& s : operands) {
    std::int64_t id = 0;
    std::string t = s;
    if (t.rfind("co-", 0) == 0) t = t.substr(3);  // the name form co-17
    if (!to_int64(t.c_str(), 1, INT64_MAX, &id))
      return p.fail("invalid co-allocation id \"" + s + "\"");
    p.o.ids.push_back(id);
  }
  return true;
}

}  // namespace

const char* command_name(Command c) {
  for (const auto& k : kCommands)
    if (k.c == c) return k.name;
  return "";
}

ParseResult parse_args(const std::vector<std::string>& args, std::int64_t now) {
  Parser p;
  p.o.now = now;
  ParseResult r;
  // Global options before the command: the common set only.
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  std::size_t i = 0;
  std::vector<std::string> globals = {args.empty() ? "sreserve" : args[0]};
  while (i < rest.size() && rest[i].size() > 1 && rest[i][0] == '-' && rest[i] != "--") {
    globals.push_back(rest[i]);
    bool needs_value = takes_next_value(rest[i]);
    ++i;
    if (needs_value && i < rest.size()) globals.push_back(rest[i++]);
  }
  if (i < rest.size()) {
    // A command follows: its options may come before it, as squeue's and
    // sbatch's do; they are parsed with the command's own table.
    for (const auto& k : kCommands)
      if (rest[i] == k.name) p.o.command = k.c;
    if (p.o.command == Command::kNone) {
      r.error = "invalid command \"" + rest[i] + "\" (one of offers, profile, submit, list, show, update, cancel, ui)";
      return r;
    }
  } else {
    std::vector<char*> av;
    for (auto& g : globals) av.push_back(g.data());
    av.push_back(nullptr);
    int first = 0;
    if (!run_getopt(p, av, Command::kNone, &first)) {
      r.error = p.error;
      return r;
    }
    if (p.o.noheader) {  // "sreserve -h": help
      p.o.noheader = false;
      p.o.help = true;
    }
  }
  if (i >= rest.size()) {
    if (p.o.help || p.o.usage || p.o.version) {
      r.ok = true;
      r.options = p.o;
      return r;
    }
    r.error = "no command given (one of offers, profile, submit, list, show, update, cancel, ui)";
    return r;
  }
  std::vector<std::string> sub = {std::string("sreserve ") + rest[i]};
  sub.insert(sub.end(), globals.begin() + 1, globals.end());
  sub.insert(sub.end(), rest.begin() + static_cast<long>(i) + 1, rest.end());
  std::vector<char*> av;
  for (auto& s : sub) av.push_back(s.data());
  av.push_back(nullptr);
  int first = 0;
  if (!run_getopt(p, av, p.o.command, &first)) {
    r.error = p.error;
    return r;
  }
  std::vector<std::string> operands;
  for (int k = first; k < static_cast<int>(av.size()) - 1; ++k) operands.emplace_back(av[static_cast<std::size_t>(k)]);
  Options& o = p.o;
  o.argv.assign(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (o.help || o.usage || o.version || o.helpformat || o.helpformat_long) {
    r.ok = true;
    r.options = o;
    return r;
  }
  switch (o.command) {
    case Command::kOffers:
      if (!operands.empty()) p.fail("offers takes no operand (\"" + operands[0] + "\")");
      else if (o.nodes_min == 0) p.fail("offers: -N/--nodes is required");
      else if (o.duration == 0) p.fail("offers: -t/--time is required");
      break;
    case Command::kProfile:
      if (!operands.empty()) p.fail("profile takes no operand (\"" + operands[0] + "\")");
      break;
    case Command::kSubmit:
      // With a script, -N and -t may come from its #SBATCH lines: checked
      // by apply_script_directives.
      if (o.nodes_min == 0 && operands.empty()) p.fail("submit: -N/--nodes is required");
      else if (o.nodes_min != o.nodes_max) p.fail("submit: -N takes one node count, not a range");
      else if (o.duration == 0 && operands.empty()) p.fail("submit: -t/--time is required");
      else if (!o.wrap.empty() && !operands.empty()) p.fail("submit: a script and --wrap together");
      else if (o.wrap.empty() && operands.empty() && !o.test_only) p.fail("submit: no batch script given (SCRIPT or --wrap)");
      else if (!operands.empty()) {
        o.script_path = operands[0];
        o.script_args.assign(operands.begin() + 1, operands.end());
      }
      break;
    case Command::kList:
      if (!operands.empty()) p.fail("list takes no operand (\"" + operands[0] + "\"); use show ID");
      break;
    case Command::kShow:
      if (operands.size() != 1) p.fail("show: give exactly one co-allocation id");
      else parse_ids(p, operands);
      break;
    case Command::kUpdate:
      if (operands.size() != 1) p.fail("update: give exactly one co-allocation id");
      else if (parse_ids(p, operands) && o.deadline == 0 && !o.deadline_none && o.clusters.empty())
        p.fail("update: nothing to change (--deadline or -M/--clusters)");
      break;
    case Command::kCancel:
      if (operands.empty()) p.fail("cancel: give one or more co-allocation ids");
      else parse_ids(p, operands);
      break;
    case Command::kUi:
      if (!operands.empty()) p.fail("ui takes no operand (\"" + operands[0] + "\")");
      break;
    default: break;
  }
  if (!p.error.empty()) {
    r.error = p.error;
    return r;
  }
  if (o.deadline && o.deadline <= (o.begin ? o.begin : o.now))
    return r.error = "--deadline is not after the earliest start", r;
  r.ok = true;
  r.options = o;
  return r;
}

bool apply_environment(Options* o, const char* (*getenv_fn)(const char*), std::string* error) {
  bool takes_clusters = o->command == Command::kOffers || o->command == Command::kProfile ||
                        o->command == Command::kSubmit || o->command == Command::kList;
  const char* v = getenv_fn("SLURM_CLUSTERS");
  if (takes_clusters && !o->clusters_given && v && *v) {
    o->clusters = split_list(v);
    if (o->clusters.empty()) {
      *error = "SLURM_CLUSTERS: empty cluster list";
      return false;
    }
    if (o->clusters.size() == 1 && o->clusters[0] == "all") o->clusters.clear();
  }
  if (o->command == Command::kList && o->format.empty() && o->format_long.empty()) {
    v = getenv_fn("SRESERVE_FORMAT");
    const char* v2 = getenv_fn("SRESERVE_FORMAT2");
    if (v && *v) o->format = v;
    else if (v2 && *v2) o->format_long = v2;
  }
  return true;
}

namespace {

// The words of one #SBATCH line after "#SBATCH": blanks separate, quotes
// group, a word starting with '#' ends the line (a comment).
std::vector<std::string> directive_words(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char ch : line) {
    if (quote) {
      if (ch == quote) quote = 0;
      else cur += ch;
      continue;
    }
    if (ch == '"' || ch == '\'') {
      quote = ch;
      in_word = true;
    } else if (ch == ' ' || ch == '\t' || ch == '\r') {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else if (ch == '#' && !in_word) {
      break;
    } else {
      cur += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

}  // namespace

bool apply_script_directives(const std::string& script, Options* o,
                             std::vector<std::string>* warnings, std::string* error) {
  Parser d;  // the directives' options, merged below
  d.o.command = Command::kSubmit;
  d.o.now = o->now;
  std::size_t pos = 0;
  int lineno = 0;
  while (pos < script.size()) {
    std::size_t nl = script.find('\n', pos);
    std::string line = script.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? script.size() : nl + 1;
    ++lineno;
    std::size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;  // blank
    if (line[b] != '#') break;             // the first command: no more directives
    if (line.compare(b, 7, "#SBATCH") != 0 || line.size() == b + 7 ||
        (line[b + 7] != ' ' && line[b + 7] != '\t'))
      continue;  // another comment (#!, "#SBATCHX", ...)
    std::vector<std::string> sub = {"#SBATCH"};
    for (auto& w : directive_words(line.substr(b + 8))) sub.push_back(w);
    std::vector<char*> av;
    for (auto& w : sub) av.push_back(w.data());
    av.push_back(nullptr);
    Parser line_parser;  // first alone: an unknown option skips the line
    line_parser.o = d.o;
    int first = 0;
    std::string where = "line " + std::to_string(lineno) + ": ";
    if (!run_getopt(line_parser, av, Command::kSubmit, &first)) {
      std::string e = line_parser.error;
      if (e.rfind("invalid option", 0) == 0 || e.rfind("unrecognized option", 0) == 0) {
        warnings->push_back("#SBATCH " + where + e + ": line ignored (flexcod takes no such option)");
        continue;
      }
      *error = "#SBATCH " + where + e;
      return false;
    }
    if (first < static_cast<int>(sub.size())) {
      warnings->push_back("#SBATCH " + where + "\"" + sub[static_cast<std::size_t>(first)] +
                          "\" is not an option: line ignored");
      continue;
    }
    d.o = line_parser.o;
  }
  const Options& s = d.o;
  if (o->nodes_min == 0) o->nodes_min = s.nodes_min, o->nodes_max = s.nodes_max;
  if (o->duration == 0) o->duration = s.duration;
  if (o->begin == 0) o->begin = s.begin;
  if (o->deadline == 0) o->deadline = s.deadline;
  if (!o->clusters_given && s.clusters_given) o->clusters = s.clusters, o->clusters_given = true;
  if (o->max_parts == 0) o->max_parts = s.max_parts;
  if (o->policy.empty()) o->policy = s.policy;
  if (o->overhead < 0) o->overhead = s.overhead;
  if (o->job_name.empty()) o->job_name = s.job_name;
  if (o->chdir.empty()) o->chdir = s.chdir;
  if (o->export_spec == "ALL") o->export_spec = s.export_spec;
  if (o->output.empty()) o->output = s.output;
  if (o->error.empty()) o->error = s.error;
  if (!o->partition.given()) o->partition = s.partition;
  if (!o->account.given()) o->account = s.account;
  if (!o->qos.given()) o->qos = s.qos;
  if (o->nodes_min == 0) *error = "submit: -N/--nodes is required (command line or #SBATCH)";
  else if (o->nodes_min != o->nodes_max) *error = "submit: -N takes one node count, not a range";
  else if (o->duration == 0) *error = "submit: -t/--time is required (command line or #SBATCH)";
  else if (o->deadline && o->deadline <= (o->begin ? o->begin : o->now))
    *error = "--deadline is not after the earliest start";
  return error->empty();
}

std::string ClusterValue::get(const std::string& cluster, const std::string& dflt) const {
  for (const auto& kv : by)
    if (kv.first == cluster) return kv.second;
  return all.empty() ? dflt : all;
}

bool parse_cluster_value(const std::string& text, const std::string& opt, ClusterValue* out,
                         std::string* error) {
  ClusterValue v;
  for (const std::string& item : flexco::split_commas(text)) {
    std::size_t colon = item.find(':');
    std::string cluster = colon == std::string::npos ? "" : item.substr(0, colon);
    std::string value = colon == std::string::npos ? item : item.substr(colon + 1);
    if (colon != std::string::npos && cluster.empty()) {
      *error = opt + ": \"" + item + "\" names no cluster (CLUSTER:VALUE)";
      return false;
    }
    if (!name_ok(value)) {
      *error = opt + ": \"" + value + "\" is not a valid name (1-64 characters, none of blank , : = # \" ' \\)";
      return false;
    }
    if (cluster.empty()) {
      if (!v.all.empty()) {
        *error = opt + ": one value for all clusters, not \"" + v.all + "\" and \"" + value +
                 "\" (per cluster: CLUSTER:VALUE)";
        return false;
      }
      v.all = value;
      continue;
    }
    for (const auto& kv : v.by) {
      if (kv.first == cluster) {
        *error = opt + ": cluster \"" + cluster + "\" given twice";
        return false;
      }
    }
    v.by.emplace_back(cluster, value);
  }
  *out = v;
  return true;
}

std::vector<std::string> option_spellings(Command c) {
  std::vector<std::string> out;
  for (const struct option* e = long_opts(c); e->name; ++e) out.push_back(std::string("--") + e->name);
  for (const char* p = short_opts(c); *p; ++p)
    if (*p != ':' && *p != '+') out.push_back(std::string("-") + *p);
  return out;
}

ParseResult parse_args(int argc, char** argv, std::int64_t now) {
  std::vector<std::string> args(argv, argv + argc);
  return parse_args(args, now);
}

std::string usage_text(Command c) {
  switch (c) {
    case Command::kOffers:
      return "Usage: sreserve offers -N NODES[-MAX] -t TIME [--begin=TIME] [--deadline=TIME]\n"
             "         [-M CLUSTERS] [-p PARTITION] [--max-parts=N] [--max-offers=N]\n"
             "         [--policy=NAME] [--overhead=F] [-o FORMAT | -O FIELDS] [-h] [--json|--yaml] [-v]\n";
    case Command::kProfile:
      return "Usage: sreserve profile [-M CLUSTERS] [--horizon=TIME] [-p PARTITION]\n"
             "         [--svg=FILE] [--width=COLUMNS] [--steps [-o FORMAT | -O FIELDS] [-h]]\n"
             "         [--json|--yaml] [-v]\n";
    case Command::kSubmit:
      return "Usage: sreserve submit -N NODES -t TIME [--begin=TIME] [--deadline=TIME]\n"
             "         [-M CLUSTERS] [--policy=NAME] [--max-parts=N] [--overhead=F]\n"
             "         [-p PARTITION] [-A ACCOUNT] [-q QOS]\n"
             "         [-J NAME] [-D DIR] [--export=ALL|NONE|VAR[=VAL],...] [-o FILE] [-e FILE]\n"
             "         [--test-only] [--parsable] [--json|--yaml] [-v] {SCRIPT [ARGS...] | --wrap=CMD}\n";
    case Command::kList:
      return "Usage: sreserve list [--state=STATE] [--user=USER] [-M CLUSTERS] [-i SECONDS]\n"
             "         [-o FORMAT | -O FIELDS] [-h] [--json|--yaml] [-v]\n";
    case Command::kShow:
      return "Usage: sreserve show ID [-i SECONDS] [-o FORMAT | -O FIELDS] [-h] [--json|--yaml] [-v]\n"
             "         [--chart] [--svg=FILE] [--width=COLUMNS]\n";
    case Command::kUpdate:
      return "Usage: sreserve update ID [--deadline=TIME|none] [-M CLUSTERS] [--json|--yaml] [-v]\n";
    case Command::kCancel:
      return "Usage: sreserve cancel ID [ID...] [--json|--yaml] [-v]\n";
    case Command::kUi:
      return "Usage: sreserve ui [-t TIME] [--json|--yaml] [-v]\n";
    default:
      return "Usage: sreserve [OPTIONS] COMMAND [OPTIONS]   (options before or after COMMAND)\n"
             "       COMMAND: offers profile submit list show update cancel ui\n"
             "       sreserve COMMAND --help | --usage;  sreserve --version\n";
  }
}

std::string help_text(Command c) {
  std::string common =
      "\nCommon options:\n"
      "      --url=URL             flexcod's address (else $FLEXCO_URL, else flexcod.conf)\n"
      "      --munge-socket=PATH   munged's socket (else $FLEXCO_MUNGE_SOCKET, else MungeSocket)\n"
      "      --conf=FILE           flexcod.conf (else $FLEXCOD_CONF, else " +
      std::string(FLEXCOD_CONF_DEFAULT) +
      ")\n"
      "      --json, --yaml        print the answer as JSON or YAML (doc/sreserve-json.md;\n"
      "                            --json=v1: this data format by its version)\n"
      "  -v, --verbose             say what is asked of whom, on stderr (repeat for more)\n"
      "      --help, --usage, --version\n"
      "\nTimes: now+1hour, now+30min, 16:00, tomorrow, teatime, 2026-11-23T16:00[:00] ...\n"
      "Durations (-t): MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS\n"
      "See sreserve(1).\n";
  switch (c) {
    case Command::kOffers:
      return usage_text(c) +
             "\nAsk every cluster's plugin for offers (POST /v1/probe) and flexcod which\n"
             "co-allocation it would choose (a dry run).\n\n"
             "  -N, --nodes=N[-MAX]       nodes of the whole job; the part sizes N/2 ... N/P\n"
             "                            (rounded up) are probed too; MIN-MAX: each count\n"
             "  -t, --time=TIME           run time\n"
             "      --begin=TIME          earliest start (default now)\n"
             "      --deadline=TIME       latest end\n"
             "  -M, --clusters=LIST       clusters to ask (default all of flexcod.conf)\n"
             "  -p, --partition=PARTITION partition: NAME, CLUSTER:NAME,... or both (default:\n"
             "                            flexcod.conf's Partition, else Slurm's default)\n"
             "      --max-parts=P         at most P parts (default: the number of clusters)\n"
             "      --max-offers=N        offers per cluster (1-64, default 8)\n"
             "      --policy=NAME, --overhead=F   passed to flexcod's dry run\n"
             "  -o, --format=FORMAT       table columns, %[.][size]X (see --helpformat)\n"
             "  -O, --Format=FIELDS       table columns, Field[:[.][size][suffix]],...\n"
             "  -h, --noheader            no header line and no choice section\n"
             "      --helpformat          the letters of -o;  --helpFormat  the fields of -O\n" +
             common;
    case Command::kProfile:
      return usage_text(c) +
             "\nFree nodes over time per cluster (GET /v1/profile), drawn as a chart.\n\n"
             "  -M, --clusters=LIST       clusters (default all)\n"
             "      --horizon=TIME        how far ahead (default 1-0, i.e. 24 hours)\n"
             "  -p, --partition=PARTITION partition: NAME, CLUSTER:NAME,... or both (default:\n"
             "                            flexcod.conf's Partition, else Slurm's default)\n"
             "      --svg=FILE            also write the chart as SVG to FILE\n"
             "      --width=COLUMNS       chart width (default: the terminal's)\n"
             "      --steps               a table of the steps instead of the chart\n"
             "  -o, --format=FORMAT       step table columns (implies --steps)\n"
             "  -O, --Format=FIELDS       step table columns by name (implies --steps)\n"
             "  -h, --noheader            no header line\n"
             "      --helpformat          the letters of -o;  --helpFormat  the fields of -O\n" +
             common;
    case Command::kSubmit:
      return usage_text(c) +
             "\nSubmit a co-allocation: one job run as parts on several clusters, all\n"
             "starting at the same time.  The script's #SBATCH lines are read as by\n"
             "sbatch; the command line wins over them.\n\n"
             "  -N, --nodes=N             total nodes\n"
             "  -t, --time=TIME           run time on one cluster (rounded up to minutes)\n"
             "      --begin=TIME          earliest start\n"
             "      --deadline=TIME       latest end\n"
             "  -M, --clusters=LIST       allowed clusters (default all)\n"
             "      --policy=NAME         flexco, coarp, hpcm or cores\n"
             "      --max-parts=N         at most N parts\n"
             "      --overhead=F          run time added when split (0.1 = 10 %)\n"
             "  -p, --partition=PARTITION partition of the parts: NAME (all clusters),\n"
             "                            CLUSTER:NAME,... or both (a cluster's own wins)\n"
             "  -A, --account=ACCOUNT     account of the part jobs (NAME, CLUSTER:NAME,...)\n"
             "  -q, --qos=QOS             QOS of the part jobs (NAME, CLUSTER:NAME,...)\n"
             "  -J, --job-name=NAME       name of the part jobs\n"
             "  -D, --chdir=DIR           working directory (default the current one)\n"
             "      --export=SPEC         ALL (default), NONE, or VAR[=VALUE],... (ALL,... adds)\n"
             "  -o, --output=FILE         part jobs' stdout;  -e, --error=FILE  stderr\n"
             "      --wrap=COMMAND        a script running COMMAND under /bin/sh\n"
             "      --test-only           plan only: show where and when, reserve nothing\n"
             "      --parsable            print only the id\n"
             "  -V                        --version, as sbatch -V\n" +
             common;
    case Command::kList:
      return usage_text(c) +
             "\nYour co-allocations (all for AdminUsers), newest first.\n\n"
             "      --state=STATE         only this state ('active': not yet finished)\n"
             "      --user=USER           only this user's (AdminUsers)\n"
             "  -M, --clusters=LIST       only those with a part on one of these clusters\n"
             "  -i, --iterate=SECONDS     print again every SECONDS, as squeue -i\n"
             "  -o, --format=FORMAT       columns, %[.][size]X (see --helpformat)\n"
             "  -O, --Format=FIELDS       columns, Field[:[.][size][suffix]],... (see --helpFormat)\n"
             "  -h, --noheader            no header line\n"
             "      --helpformat          the letters of -o;  --helpFormat  the fields of -O\n" +
             common;
    case Command::kShow:
      return usage_text(c) +
             "\nOne co-allocation: its parts, state history and moves.\n"
             "  -i, --iterate=SECONDS     print again every SECONDS (watch it get rescheduled)\n"
             "  -o, --format=FORMAT       columns of the parts table (see --helpformat)\n"
             "  -O, --Format=FIELDS       columns of the parts table by name (see --helpFormat)\n"
             "  -h, --noheader            no header lines\n"
             "      --helpformat          the letters of -o;  --helpFormat  the fields of -O\n"
             "      --chart               also draw it over time: per cluster the free nodes,\n"
             "                            the reserved windows, the moves and when it ran\n"
             "      --svg=FILE            write that chart as SVG to FILE\n"
             "      --width=COLUMNS       chart width (default: the terminal's)\n" +
             common;
    case Command::kUpdate:
      return usage_text(c) +
             "\nChange a co-allocation before it starts.\n"
             "      --deadline=TIME|none  new latest end, or none\n"
             "  -M, --clusters=LIST       allowed clusters\n" +
             common;
    case Command::kCancel:
      return usage_text(c) + "\nCancel co-allocations: part jobs and reservations go on every cluster.\n" +
             common;
    case Command::kUi:
      return usage_text(c) +
             "\nOpen flexcod's read-only web view: asks flexcod for a session token bound to\n"
             "you and prints the address to open in a browser (keep it to yourself: it\n"
             "shows what you may see until it expires; it can change nothing).\n"
             "  -t, --time=TIME           how long the token lives (default and most:\n"
             "                            flexcod's UiTokenLifetime, 8 hours unless set)\n" +
             common;
    default:
      return usage_text(c) +
             "\nFlexible co-allocation of one job across several Slurm clusters.\n\n"
             "  offers    what each cluster offers, and what flexcod would choose\n"
             "  profile   free nodes over time per cluster, as a chart\n"
             "  submit    submit a co-allocation (--test-only: a dry run)\n"
             "  list      your co-allocations\n"
             "  show      one co-allocation: parts, history, moves\n"
             "  update    change the deadline or the allowed clusters\n"
             "  cancel    cancel co-allocations\n"
             "  ui        the address of the read-only web view, with a session token\n"
             "\nAlone, -h is --help and -V --version; any command's options may also\n"
             "come before it (sreserve -h list = sreserve list --noheader).\n" +
             common;
  }
}

std::string version_text() { return std::string("flexco ") + PACKAGE_VERSION + "\n"; }

}  // namespace sreserve
