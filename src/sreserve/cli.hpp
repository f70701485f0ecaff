// SPDX-License-Identifier: GPL-2.0-or-later
// cli.hpp - sreserve's command line: subcommands, options, exit codes.
//
// parse_args() only reads argv (and the clock for relative times): no
// network, no files, so wrong options are tested without any service.

#ifndef FLEXCO_SRESERVE_CLI_HPP
#define FLEXCO_SRESERVE_CLI_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sreserve {

// Exit codes (documented in sreserve(1), EXIT STATUS): 1 for every
// error, as Slurm's commands; the names say the cause, which the one
// "sreserve: error: ..." line tells.
enum Exit : int {
  kExitOk = 0,
  kExitError = 1,        // refused by flexcod or a cluster, not found, unplaceable
  kExitUsage = 1,        // bad option, value, time or format
  kExitNoDaemon = 1,     // flexcod unreachable
  kExitNoMunge = 1,      // munged unreachable: the request could not be signed
  kExitNoCluster = 1,    // a cluster's plugin unreachable (offers, profile)
  kExitConfig = 1,       // flexcod.conf missing or invalid
};

// The version of the --json and --yaml documents (meta.data_format;
// doc/sreserve-json.md), as Slurm's data_parser versions: --json=v1 asks
// for it by name.
inline constexpr const char* kDataFormat = "v1";

// A Slurm setting given plainly or per cluster (-p, -A, -q):
// "VALUE", "CLUSTER:VALUE[,CLUSTER:VALUE...]" or both in one list
// ("VALUE,CLUSTER:VALUE"); a cluster's own value wins over the plain one,
// which holds for every other cluster (sreserve(1), PER-CLUSTER VALUES).
struct ClusterValue {
  std::string all;                                        // "" = none
  std::vector<std::pair<std::string, std::string>> by;   // cluster, value
  bool given() const { return !all.empty() || !by.empty(); }
  // The value for `cluster`, else `dflt`.
  std::string get(const std::string& cluster, const std::string& dflt = "") const;
};

// Parses the value of -p, -A or -q (`opt` names it in the error).
bool parse_cluster_value(const std::string& text, const std::string& opt, ClusterValue* out,
                         std::string* error);

enum class Command { kNone, kOffers, kProfile, kSubmit, kList, kShow, kUpdate, kCancel, kUi };

const char* command_name(Command c);

struct Options {
  Command command = Command::kNone;
  // what to do instead of the command
  bool help = false, usage = false, version = false, helpformat = false;
  bool helpformat_long = false;  // --helpFormat: the -O names
  std::vector<std::string> argv;  // the command line after "sreserve" (meta.command)

  // common
  std::string url;           // --url
  std::string munge_socket;  // --munge-socket
  std::string conf;          // --conf (else FLEXCOD_CONF, else /etc/slurm/flexcod.conf)
  int verbose = 0;           // -v, repeatable
  bool json = false;         // --json[=v1]
  bool yaml = false;         // --yaml[=v1]
  bool noheader = false;     // -h
  std::string format;        // -o/--format (tables); "" = the command's default
  std::string format_long;   // -O/--Format (tables), when -o is not given
  std::vector<std::string> clusters;  // -M; empty = all configured
  bool clusters_given = false;        // -M/--clusters on the command line
  std::int64_t now = 0;      // reference time of relative times

  // offers, submit (ui: -t is the session's lifetime)
  std::int64_t nodes_min = 0, nodes_max = 0;  // -N N or MIN-MAX
  std::int64_t duration = 0;                  // -t, seconds
  std::int64_t begin = 0;                     // --begin, 0 = now
  std::int64_t deadline = 0;                  // --deadline, 0 = none
  bool deadline_none = false;                 // update --deadline none
  int max_parts = 0;                          // --max-parts, 0 = daemon's default
  int max_offers = 8;                         // offers --max-offers
  ClusterValue partition;                     // -p/--partition (offers, profile, submit)
  ClusterValue account, qos;                  // submit -A/--account, -q/--qos
  std::string policy;                         // --policy
  double overhead = -1;                       // --overhead, <0 = not given

  // profile
  std::int64_t horizon = 86400;  // --horizon
  std::string svg;               // --svg FILE
  bool steps = false;            // --steps: the step table instead of the chart
  int width = 0;                 // --width: chart columns, 0 = from the terminal

  // submit
  std::string script_path;       // SCRIPT ("" with --wrap)
  std::vector<std::string> script_args;
  std::string wrap;              // --wrap
  std::string job_name;          // -J
  std::string chdir;             // -D
  std::string export_spec = "ALL";  // --export
  std::string output, error;     // -o, -e (submit only)
  bool test_only = false;        // --test-only
  bool parsable = false;         // --parsable

  // list, show
  int iterate = 0;               // -i/--iterate SECONDS: repeat, as squeue -i
  std::string state;             // --state
  std::string user;              // --user (admins)

  // show, update, cancel
  std::vector<std::int64_t> ids;
  bool chart = false;            // show --chart: the Gantt in the terminal
};

struct ParseResult {
  bool ok = false;
  Options options;
  std::string error;  // one line, without the "sreserve: error: " prefix
};

ParseResult parse_args(int argc, char** argv, std::int64_t now);
ParseResult parse_args(const std::vector<std::string>& args, std::int64_t now);

// Fills in what the command line left unset from the environment, as
// squeue does with SQUEUE_FORMAT, SQUEUE_FORMAT2 and SLURM_CLUSTERS:
// SLURM_CLUSTERS stands for -M of offers, profile, submit and list (never
// of update, where -M changes the co-allocation); SRESERVE_FORMAT for -o
// of list, SRESERVE_FORMAT2 for its -O (SRESERVE_FORMAT wins when both
// are set; -o or -O on the command line wins over both).  `getenv_fn` is
// std::getenv in sreserve, a table in the tests.  False (and *error set)
// when a variable's value is invalid.
bool apply_environment(Options* o, const char* (*getenv_fn)(const char*), std::string* error);

// The #SBATCH directives of a submit script, read as sbatch reads them:
// "#SBATCH" lines before the first command line of the script (blank and
// other comment lines do not end them), each parsed with submit's options;
// a directive sets only what the command line left unset (sbatch's
// precedence: command line, then directives).  A line with an option
// submit does not take (-p, -A, --mail-type, ...) is skipped as a whole
// and named in *warnings.  Then the checks parse_args leaves to the
// script: -N and -t required.  False (and *error set) on an invalid value.
bool apply_script_directives(const std::string& script, Options* o,
                             std::vector<std::string>* warnings, std::string* error);

// Every option command `c` takes (Command::kNone: before any command, with
// no command following), as written: "--name" for a long option, "-X" for
// a short one.  For the test that holds sreserve(1) and --help to them.
std::vector<std::string> option_spellings(Command c);

// --help, --usage, --version texts.
std::string help_text(Command c);
std::string usage_text(Command c);
std::string version_text();

}  // namespace sreserve

#endif
