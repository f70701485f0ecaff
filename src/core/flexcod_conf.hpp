// SPDX-License-Identifier: GPL-2.0-or-later
// flexcod.conf: the metascheduler daemon's configuration (flexcod.conf(5)).
//
// Slurm style: one or more Key=Value pairs per line, separated by blanks;
// '#' starts a comment; keys are matched without regard to case; a value
// may be double-quoted to hold blanks.  Unknown keys, a key given twice,
// and malformed values are errors that name the line:
//
//     ListenAddress=127.0.0.1
//     ListenPort=26990
//     StateFile=/var/lib/flexco/flexcod.db     (StorageType=sqlite, the default)
//     StorageType=postgresql                   (sqlite | postgresql)
//     StorageLoc="host=/run/postgresql dbname=flexcod"   (libpq conninfo)
//     StoragePassFile=/etc/flexco/pgpass       (libpq's passfile; optional)
//     LogFile=/var/log/flexco/flexcod.log     (absent: syslog; -D: stderr)
//     PidFile=/run/flexcod.pid
//     MungeSocket=/run/munge/munge.socket.2
//     AdminUsers=root,slurm
//     DefaultPolicy=flexco                    (flexco|coarp|hpcm|cores|cores-seq)
//     AvailabilityMode=probe                  (probe | publish)
//     PublishInterval=300
//     RescheduleMode=remap                    (off | shift | remap)
//     RescheduleMargin=60
//     RescheduleWait=60
//     MaxMoves=5
//     Cluster=alpha URL=http://127.0.0.1:26001 [Partition=batch]
//             [RendezvousURL=http://10.1.0.5:26990]   (part jobs' way to flexcod)
//     Cluster=beta  URL=https://beta-mgmt.example.org:26443
//     TLSCAFile=/etc/flexco/tls/ca.pem        (https URLs; absent: the system's CAs)
//     FlexcodURL=https://flexcod.example.org:26991   (sreserve's way to flexcod)
//
// RendezvousTimeout (s, default PartStartSkew): the start-up rendezvous's
// barrier (doc/one-program.md).
// Also accepted (tuning, all optional): ConnectTimeout (s, default 2),
// SessionLifetime (s a session granted to a client lasts, 300; 0: none
// granted; doc/auth.md "Sessions"),
// RequestTimeout (s, 10), ClusterTimeout (s, 2: a profile or probe while
// planning), BreakerFailures (3), BreakerBackoff (s, 30), ConfirmWithin (s, tentative reservation lifetime
// given to the plugin, 120), MaxReplans (3), MaxParts (default cap on the
// parts of one request, 8), PlanHorizon (s, 7 days), DebugLevel
// (quiet|fatal|error|info|verbose|debug|debug2..5, default info).
// The web view (doc/flexcod.md, "Web view"): UiDir (its static files,
// default $(datadir)/flexco/ui), UiTokenLifetime (s a session token lives,
// default 28800; 0: no tokens, the view is off), UiReadAll (yes: a token
// of any user reads every co-allocation; default no, as the API).
//
// The default path is configure's --with-flexcod-conf (/etc/slurm/flexcod.conf
// unless given; the Debian packages use /etc/flexco/flexcod.conf); the daemon
// and sreserve take another from the environment variable FLEXCOD_CONF or -f.

#ifndef FLEXCO_CORE_FLEXCOD_CONF_HPP
#define FLEXCO_CORE_FLEXCOD_CONF_HPP

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace flexco::conf {

extern const char* const kDefaultPath;
extern const char* const kDefaultUiDir;  // configure's $(datadir)/flexco/ui
inline constexpr const char* kPathEnv = "FLEXCOD_CONF";

struct Error {
  int line = 0;         // 1-based line of the offending text, 0 if none
  std::string message;  // "<source>:<line>: <what>"
};

template <typename T>
using Result = BasicResult<T, Error>;

struct ClusterConf {
  std::string name;       // [A-Za-z0-9_-]{1,64}, unique
  std::string url;        // http(s)://host:port of its slurmctld/flexco plugin (or its TLS proxy)
  // The plugin at the cluster's other controllers (URL=a,b: b...), tried
  // in turn when the one asked does not answer or is not in charge.
  std::vector<std::string> other_urls;
  std::string partition;  // "" = the cluster's default partition
  // RendezvousURL: how this cluster's compute nodes reach flexcod's
  // rendezvous ("" = FlexcodURL, else http://ListenAddress:ListenPort).
  std::string rendezvous_url;
};

struct FlexcodConf {
  std::string listen_address = "127.0.0.1";
  int listen_port = 26990;
  std::string state_file = "/var/lib/flexco/flexcod.db";  // StorageType=sqlite's database
  std::string storage_type = "sqlite";  // sqlite | postgresql
  std::string storage_loc;        // postgresql: libpq's connection string
  std::string storage_pass_file;  // postgresql: libpq's passfile ("" = libpq's default)
  std::string log_file;   // "" = syslog (stderr with -D)
  std::string pid_file = "/run/flexcod.pid";
  std::string munge_socket;  // "" = libmunge's default
  std::string tls_ca_file;   // CA certificates for https URLs; "" = the system's
  std::string flexcod_url;   // where sreserve reaches flexcod (e.g. its TLS
                             // proxy); "" = http://ListenAddress:ListenPort
  // FlexcodURL=a,b,...: every flexcod of the grid (flexcod_url is the
  // first); sreserve asks the next when one does not answer or is not in
  // charge.  Empty when FlexcodURL is not given.
  std::vector<std::string> flexcod_urls;
  // High availability (doc/flexcod.md): where the other flexcods and
  // sreserve are told to send writes while this one is in charge ("" =
  // http://<host name>:ListenPort), and the lease's length.
  std::string advertise_url;
  int lease_time = 6;           // s, 3 .. 300 (LeaseTime)
  std::vector<std::string> admin_users = {"root"};
  std::string default_policy = "flexco";     // flexco | coarp | hpcm | cores
  std::string availability_mode = "probe";   // probe | publish
  int publish_interval = 300;   // s, 1 .. 86400
  std::string reschedule_mode = "remap";  // off | shift | remap (Shift+Remap)
  int reschedule_margin = 60;   // s, 0 .. 86400
  int reschedule_wait = 60;     // s, 0 .. 3600: longest wait for a backfill pass
  int max_moves = 5;            // 0 .. 1000
  int connect_timeout = 2;      // s, 1 .. 600
  int request_timeout = 10;     // s, 1 .. 3600
  int session_lifetime = 300;   // s, 0 .. 86400: sessions flexcod grants its clients
  int cluster_timeout = 2;      // s, 1 .. 600: a profile or probe while planning
  int pass_profile_wait = 250;  // ms, 0 .. 60000: a rescheduling pass's wait for profiles
  int breaker_failures = 3;     // 1 .. 1000: consecutive failures that open a cluster
  int breaker_backoff = 30;     // s, 1 .. 3600: how long an open cluster is left alone
  int confirm_within = 120;     // s, 1 .. 3600
  int max_replans = 3;          // 0 .. 100
  int max_parts = 8;            // 1 .. 64
  // Per user, over co-allocations that have not ended; 0 = no limit;
  // AdminUsers are not limited.
  int max_coallocations_per_user = 100;     // 0 .. 100000
  std::int64_t max_node_hours_per_user = 0;  // 0 .. 10^9
  int part_start_skew = 60;     // s, 5 .. 3600: a part may start this late
  int max_clock_offset = 10;    // s, 0 (no check) .. 3600: a cluster's clock this far off is not planned on
  std::string part_start_policy = "fail";  // fail | warn: a part later than that
  // s, 5 .. 3600; 0 = PartStartSkew: how long after the first part of a
  // co-allocation registered at the rendezvous the last one may
  int rendezvous_timeout = 0;
  bool public_stats = false;    // GET /v1/stats and /v1/clusters without a credential
  std::string metrics_token_file;  // "" none: GET /metrics's bearer token (doc/auth.md)
  std::string ui_dir = kDefaultUiDir;  // the web view's static files
  int ui_token_lifetime = 28800;  // s, 0 (no tokens) .. 604800
  bool ui_read_all = false;     // a UI token reads every co-allocation
  std::int64_t plan_horizon = 7 * 86400;  // s, 60 .. 31622400
  // s, 0 = never: final co-allocations older than this are deleted
  // (PurgeFinishedAfter=N[hours|days|months], slurmdbd.conf's form; a bare
  // N is months, a month is 30 days).
  std::int64_t purge_finished_after = 30 * 86400;
  // flexcod's HTTP server: the same limits as the plugin's (doc/flexcod.conf.5)
  int max_connections = 128;             // 1 .. 65536
  // 1 .. 65536; 0: as MaxConnections (a login node's users share its address)
  int max_connections_per_address = 0;
  int connection_timeout = 60;           // s, 1 .. 3600: idle keep-alive
  int header_timeout = 10;               // s, 1 .. 3600
  int body_timeout = 30;                 // s, 1 .. 3600
  long long max_request_size = 1 << 20;  // bytes, 1024 .. 64 MiB
  long long max_request_memory = 16 << 20;  // bytes of all bodies, >= MaxRequestSize
  int debug_level = 3;          // 0 quiet .. 3 info .. 9 debug5
  // UserMapFile (flexcod.conf(5)): "" none.  The name a user's part jobs
  // run under at a cluster, when it is not the user's name at flexcod's
  // host: user_map[local][cluster] (read by read_file() with the conf).
  std::string user_map_file;
  std::map<std::string, std::map<std::string, std::string>> user_map;
  std::vector<ClusterConf> clusters;  // in file order, at least one
};

// Parse the text of a flexcod.conf; `source` names it in messages.
Result<FlexcodConf> parse(std::string_view text, std::string_view source = "flexcod.conf");

// Parse the text of a UserMapFile for the clusters of `conf` (each line
// "LocalName Cluster=Name [Cluster=Name ...]", # comments; doc/flexcod.conf.5):
// every name a user name (letters, digits, . _ -, not starting with -, not
// all digits: a number would be taken for a uid), every cluster one of
// conf's, a local name and a cluster once each.
Result<std::map<std::string, std::map<std::string, std::string>>> parse_user_map(
    std::string_view text, const FlexcodConf& conf, std::string_view source);

// The name `user` runs under at `cluster`: its UserMapFile entry, or itself.
const std::string& name_at(const FlexcodConf& conf, const std::string& user,
                           const std::string& cluster);

// Read and parse the file at `path` (at most 1 MiB), and its UserMapFile.
Result<FlexcodConf> read_file(const std::string& path);

// The path to use: `cli` (from -f) if not empty, else `env` (the value of
// FLEXCOD_CONF, may be null) if not empty, else kDefaultPath.
std::string choose_path(const std::string& cli, const char* env);

// "info", "debug2", ... for a debug level, and back (-1 if unknown).
const char* debug_level_name(int level) noexcept;
int debug_level_from_name(std::string_view name) noexcept;

}  // namespace flexco::conf

#endif  // FLEXCO_CORE_FLEXCOD_CONF_HPP
