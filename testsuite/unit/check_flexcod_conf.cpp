// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/core/flexcod_conf (flexcod.conf(5)): the agreed example
// parses to the documented values, keys are case-insensitive, defaults hold,
// and every kind of bad input is refused with the right line number.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/flexcod_conf.hpp"

#include <check.h>

namespace conf = flexco::conf;

namespace {

const char* kExample =
    "# flexcod.conf example\n"
    "ListenAddress=127.0.0.1\n"
    "ListenPort=26990\n"
    "StateFile=/var/lib/flexco/flexcod.db\n"
    "LogFile=/var/log/flexco/flexcod.log\n"
    "PidFile=/run/flexcod.pid\n"
    "MungeSocket=/run/munge/munge.socket.2\n"
    "AdminUsers=root,slurm\n"
    "DefaultPolicy=flexco\n"
    "AvailabilityMode=probe\n"
    "PublishInterval=300\n"
    "RescheduleMode=Shift\n"
    "RescheduleMargin=60\n"
    "RescheduleWait=30\n"
    "MaxMoves=5\n"
    "Cluster=alpha URL=http://127.0.0.1:26001\n"
    "Cluster=beta  URL=http://127.0.0.1:26101   # second\n";

START_TEST(example_parses) {
  auto r = conf::parse(kExample, "ex");
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  const conf::FlexcodConf& c = r.value();
  ck_assert(c.listen_address == "127.0.0.1");
  ck_assert_int_eq(c.listen_port, 26990);
  ck_assert(c.state_file == "/var/lib/flexco/flexcod.db");
  ck_assert(c.log_file == "/var/log/flexco/flexcod.log");
  ck_assert(c.pid_file == "/run/flexcod.pid");
  ck_assert(c.munge_socket == "/run/munge/munge.socket.2");
  ck_assert_int_eq(c.admin_users.size(), 2);
  ck_assert(c.admin_users[0] == "root" && c.admin_users[1] == "slurm");
  ck_assert(c.default_policy == "flexco");
  ck_assert(c.availability_mode == "probe");
  ck_assert_int_eq(c.publish_interval, 300);
  ck_assert_int_eq(c.reschedule_margin, 60);
  ck_assert(c.reschedule_mode == "shift");
  ck_assert_int_eq(c.reschedule_wait, 30);
  ck_assert_int_eq(c.max_moves, 5);
  ck_assert_int_eq(c.clusters.size(), 2);
  ck_assert(c.clusters[0].name == "alpha" && c.clusters[0].url == "http://127.0.0.1:26001");
  ck_assert(c.clusters[1].name == "beta" && c.clusters[1].url == "http://127.0.0.1:26101");
  ck_assert(c.clusters[1].partition.empty());
}
END_TEST

START_TEST(defaults_and_case) {
  auto r = conf::parse("cluster=a url=http://h:1 PARTITION=batch\n"
                       "listenport=7\ndefaultpolicy=CORES\navailabilitymode=Publish\n"
                       "DEBUGLEVEL=debug2\nLogFile=\"/tmp/a b.log\"\n",
                       "t");
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  const conf::FlexcodConf& c = r.value();
  ck_assert_int_eq(c.listen_port, 7);
  ck_assert(c.default_policy == "cores");
  ck_assert(c.availability_mode == "publish");
  ck_assert_int_eq(c.debug_level, 6);
  ck_assert(c.log_file == "/tmp/a b.log");
  ck_assert(c.clusters[0].partition == "batch");
  // untouched defaults
  ck_assert(c.listen_address == "127.0.0.1");
  ck_assert(c.state_file == "/var/lib/flexco/flexcod.db");
  ck_assert_int_eq(c.admin_users.size(), 1);
  ck_assert_int_eq(c.max_moves, 5);
  ck_assert(c.reschedule_mode == "remap");
  ck_assert_int_eq(c.reschedule_wait, 60);
  ck_assert_int_eq(c.request_timeout, 10);
  ck_assert_int_eq(c.confirm_within, 120);
  ck_assert_int_eq(c.max_replans, 3);
  ck_assert_int_eq(c.part_start_skew, 60);
  // the HTTP server's limits, as the plugin's (src/service/http_guard)
  ck_assert_int_eq(c.max_connections, 128);
  ck_assert_int_eq(c.max_connections_per_address, 0);  // as MaxConnections
  ck_assert_int_eq(c.header_timeout, 10);
  ck_assert_int_eq(c.body_timeout, 30);
  ck_assert_int_eq(c.max_request_size, 1 << 20);
  ck_assert_int_eq(c.max_request_memory, 16 << 20);
  auto big = conf::parse("Cluster=a URL=http://h:1\nMaxRequestSize=33554432\n", "t");
  ck_assert(big.ok() && big.value().max_request_memory == 33554432);  // one largest body at least
  ck_assert(c.part_start_policy == "fail");
  auto w = conf::parse("Cluster=a URL=http://h:1\nPartStartSkew=3600\npartstartpolicy=WARN\n", "t");
  ck_assert(w.ok() && w.value().part_start_skew == 3600 && w.value().part_start_policy == "warn");
  ck_assert(!c.public_stats);
  auto ps = conf::parse("Cluster=a URL=http://h:1\nPublicStats=YES\n", "t");
  ck_assert(ps.ok() && ps.value().public_stats);
  ps = conf::parse("Cluster=a URL=http://h:1\npublicstats=no\n", "t");
  ck_assert(ps.ok() && !ps.value().public_stats);
  // https URLs (a TLS proxy in front of the plugin) and their CA file.
  ck_assert(c.tls_ca_file.empty());
  auto tls = conf::parse("Cluster=a URL=https://a-mgmt.example.org:26443\n"
                         "Cluster=b URL=http://h:1\ntlscafile=/etc/flexco/tls/ca.pem\n", "t");
  ck_assert_msg(tls.ok(), "%s", tls.ok() ? "" : tls.error().message.c_str());
  ck_assert(tls.value().clusters[0].url == "https://a-mgmt.example.org:26443");
  ck_assert(tls.value().clusters[1].url == "http://h:1");
  ck_assert(tls.value().tls_ca_file == "/etc/flexco/tls/ca.pem");
  ck_assert(tls.value().flexcod_url.empty());
  {
    // high availability: every flexcod for sreserve, this one's address, the lease
    auto ha = conf::parse("Cluster=a URL=http://h:1\nFlexcodURL=http://fc1:26990,https://fc2:26991\n"
                          "AdvertiseURL=http://fc1.example.org:26990\nLeaseTime=10\n", "t");
    ck_assert_msg(ha.ok(), "%s", ha.ok() ? "" : ha.error().message.c_str());
    ck_assert_str_eq(ha.value().flexcod_url.c_str(), "http://fc1:26990");
    ck_assert_int_eq(ha.value().flexcod_urls.size(), 2);
    ck_assert_str_eq(ha.value().flexcod_urls[1].c_str(), "https://fc2:26991");
    ck_assert_str_eq(ha.value().advertise_url.c_str(), "http://fc1.example.org:26990");
    ck_assert_int_eq(ha.value().lease_time, 10);
    auto dflt = conf::parse("Cluster=a URL=http://h:1\n", "t");
    ck_assert(dflt.ok() && dflt.value().lease_time == 6 && dflt.value().advertise_url.empty() &&
              dflt.value().flexcod_urls.empty());
  }
  auto fu = conf::parse("Cluster=a URL=http://h:1\nFlexcodURL=https://fc.example.org:26991\n", "t");
  ck_assert(fu.ok() && fu.value().flexcod_url == "https://fc.example.org:26991");
  ck_assert_int_eq(c.cluster_timeout, 2);
  ck_assert_int_eq(c.breaker_failures, 3);
  ck_assert_int_eq(c.breaker_backoff, 30);
  auto cb = conf::parse("Cluster=a URL=http://h:1\nclustertimeout=5\nBreakerFailures=1\n"
                        "BreakerBackoff=3600\n", "t");
  ck_assert(cb.ok() && cb.value().cluster_timeout == 5 && cb.value().breaker_failures == 1 &&
            cb.value().breaker_backoff == 3600);
  ck_assert_int_eq(c.pass_profile_wait, 250);
  auto pw = conf::parse("Cluster=a URL=http://h:1\nPassProfileWait=0\n", "t");
  ck_assert(pw.ok() && pw.value().pass_profile_wait == 0);
  ck_assert(!conf::parse("Cluster=a URL=http://h:1\nPassProfileWait=60001\n", "t").ok());
  ck_assert_int_eq(c.max_clock_offset, 10);
  auto mco = conf::parse("Cluster=a URL=http://h:1\nMaxClockOffset=0\n", "t");
  ck_assert(mco.ok() && mco.value().max_clock_offset == 0);
  ck_assert(!conf::parse("Cluster=a URL=http://h:1\nMaxClockOffset=3601\n", "t").ok());
  ck_assert_int_eq(c.max_coallocations_per_user, 100);
  ck_assert_int_eq(c.max_node_hours_per_user, 0);
  auto caps = conf::parse("Cluster=a URL=http://h:1\nMaxCoallocationsPerUser=0\nmaxnodehoursperuser=5000\n", "t");
  ck_assert(caps.ok() && caps.value().max_coallocations_per_user == 0 &&
            caps.value().max_node_hours_per_user == 5000);
  ck_assert(!conf::parse("Cluster=a URL=http://h:1\nMaxCoallocationsPerUser=100001\n", "t").ok());
  ck_assert(!conf::parse("Cluster=a URL=http://h:1\nMaxNodeHoursPerUser=-1\n", "t").ok());
  // PurgeFinishedAfter: slurmdbd.conf's form, a bare number is months
  ck_assert_int_eq(c.purge_finished_after, 30 * 86400);
  for (const auto& [text, secs] : std::vector<std::pair<const char*, long long>>{
           {"0", 0}, {"2", 60LL * 86400}, {"12hours", 12 * 3600}, {"7days", 7 * 86400},
           {"3Months", 90LL * 86400}, {"120months", 3600LL * 86400}}) {
    auto pf = conf::parse(std::string("Cluster=a URL=http://h:1\nPurgeFinishedAfter=") + text + "\n", "t");
    ck_assert_msg(pf.ok() && pf.value().purge_finished_after == secs, "%s", text);
  }
  // the state database: SQLite's StateFile by default, or PostgreSQL
  ck_assert(c.storage_type == "sqlite" && c.storage_loc.empty() && c.storage_pass_file.empty());
  auto pgc = conf::parse("Cluster=a URL=http://h:1\nStorageType=PostgreSQL\n"
                         "StorageLoc=\"host=/run/postgresql dbname=flexcod\"\n"
                         "StoragePassFile=/etc/flexco/pgpass\n", "t");
  ck_assert(pgc.ok() && pgc.value().storage_type == "postgresql" &&
            pgc.value().storage_loc == "host=/run/postgresql dbname=flexcod" &&
            pgc.value().storage_pass_file == "/etc/flexco/pgpass");
  // the web view: UiDir, UiTokenLifetime, UiReadAll
  ck_assert(c.ui_dir == conf::kDefaultUiDir && c.ui_dir.size() > 1 && c.ui_dir[0] == '/');
  ck_assert_int_eq(c.ui_token_lifetime, 28800);
  ck_assert(!c.ui_read_all);
  auto u = conf::parse("Cluster=a URL=http://h:1\nUiDir=/srv/ui\nuitokenlifetime=0\nUiReadAll=Yes\n", "t");
  ck_assert(u.ok() && u.value().ui_dir == "/srv/ui" && u.value().ui_token_lifetime == 0 &&
            u.value().ui_read_all);
}
END_TEST

// Bad inputs: the text, the line the error must name, a word the message has.
struct Bad {
  const char* text;
  int line;
  const char* word;
};

const Bad kBad[] = {
    {"Cluster=a URL=http://h:1\nStorageType=mysql\n", 2, "not sqlite or postgresql"},
    {"Cluster=a URL=http://h:1\nStorageType=postgresql\n", 0, "needs StorageLoc"},
    {"Cluster=a URL=http://h:1\nStorageType=postgresql\nStorageLoc=dbname=f\nStateFile=/x.db\n", 0,
     "StateFile is SQLite's"},
    {"Cluster=a URL=http://h:1\nStorageLoc=dbname=f\n", 0, "StorageLoc is for StorageType=postgresql"},
    {"Cluster=a URL=http://h:1\nStoragePassFile=/p\n", 0, "StoragePassFile is for"},
    {"Cluster=a URL=http://h:1\nStorageType=postgresql\nStoragePassFile=p\n", 3, "absolute path"},
    {"Cluster=a URL=http://h:1\nStorageLoc=\n", 2, "StorageLoc: empty"},
    {"Cluster=a URL=http://h:1,https://g:2\n", 1, "one scheme"},
    {"Cluster=a URL=http://h:1,\n", 1, "is not http"},
    {"Cluster=a URL=http://h:1,http://g:2/x\n", 1, "is not http"},
    {"Cluster=a URL=http://h:1\nColour=red\n", 2, "unknown key 'Colour'"},
    {"Cluster=a URL=http://h:1\n\n# c\nListenPort=0\n", 4, "ListenPort"},
    {"Cluster=a URL=http://h:1\nListenPort=65536\n", 2, "1..65535"},
    {"Cluster=a URL=http://h:1\nListenPort=12x\n", 2, "ListenPort"},
    {"Cluster=a URL=http://h:1\nListenPort=-1\n", 2, "ListenPort"},
    {"Cluster=a URL=http://h:1\nListenPort=1\nlistenport=2\n", 3, "given twice"},
    {"Cluster=a URL=http://h:1\nStateFile=relative.db\n", 2, "absolute path"},
    {"Cluster=a URL=http://h:1\nDefaultPolicy=fifo\n", 2, "DefaultPolicy"},
    {"Cluster=a URL=http://h:1\nAvailabilityMode=push\n", 2, "AvailabilityMode"},
    {"Cluster=a URL=http://h:1\nAdminUsers=root,,x\n", 2, "AdminUsers"},
    {"Cluster=a URL=http://h:1\nMaxMoves=1001\n", 2, "MaxMoves"},
    {"Cluster=a URL=http://h:1\nRescheduleMode=shift+remap\n", 2, "RescheduleMode"},
    {"Cluster=a URL=http://h:1\nPartStartSkew=4\n", 2, "5..3600"},
    {"Cluster=a URL=http://h:1\nMaxConnectionsPerAddress=0\n", 2, "MaxConnectionsPerAddress"},
    {"Cluster=a URL=http://h:1\nHeaderTimeout=0\n", 2, "HeaderTimeout"},
    {"Cluster=a URL=http://h:1\nMaxRequestSize=1023\n", 2, "MaxRequestSize"},
    {"Cluster=a URL=http://h:1\nMaxRequestSize=8192\nMaxRequestMemory=4096\n", 3,
     "MaxRequestMemory=4096 is less than MaxRequestSize=8192"},
    {"Cluster=a URL=http://h:1\nPartStartPolicy=replan\n", 2, "PartStartPolicy"},
    {"Cluster=a URL=http://h:1\nRescheduleWait=3601\n", 2, "RescheduleWait"},
    {"Cluster=a URL=http://h:1\nPublishInterval=0\n", 2, "PublishInterval"},
    {"Cluster=a URL=http://h:1\nPublicStats=1\n", 2, "PublicStats"},
    {"Cluster=a URL=http://h:1\nClusterTimeout=0\n", 2, "ClusterTimeout"},
    {"Cluster=a URL=http://h:1\nBreakerFailures=0\n", 2, "BreakerFailures"},
    {"Cluster=a URL=http://h:1\nBreakerBackoff=3601\n", 2, "BreakerBackoff"},
    {"Cluster=a URL=http://h:1\nDebugLevel=loud\n", 2, "DebugLevel"},
    {"Cluster=a URL=http://h:1\nUiDir=ui\n", 2, "UiDir: 'ui' is not an absolute path"},
    {"Cluster=a URL=http://h:1\nUiTokenLifetime=604801\n", 2, "0..604800"},
    {"Cluster=a URL=http://h:1\nUiTokenLifetime=-1\n", 2, "UiTokenLifetime"},
    {"Cluster=a URL=http://h:1\nUiReadAll=all\n", 2, "UiReadAll"},
    {"Cluster=a URL=http://h:1\nPurgeFinishedAfter=121months\n", 2, "PurgeFinishedAfter"},
    {"Cluster=a URL=http://h:1\nPurgeFinishedAfter=days\n", 2, "PurgeFinishedAfter"},
    {"Cluster=a URL=http://h:1\nPurgeFinishedAfter=3weeks\n", 2, "Nhours, Ndays or Nmonths"},
    {"Cluster=a URL=http://h:1\nListenPort\n", 2, "expected Key=Value"},
    {"Cluster=a URL=http://h:1\n=5\n", 2, "missing key"},
    {"Cluster=a URL=http://h:1\nLogFile=\"/x\n", 2, "unterminated"},
    {"Cluster=a\n", 1, "URL= is required"},
    {"Cluster=a URL=https://h:1/v1\n", 1, "not http://host:port or https://host:port"},
    {"Cluster=a URL=https://\n", 1, "not http://host:port or https://host:port"},
    {"Cluster=a URL=http://h:1\nTLSCAFile=ca.pem\n", 2, "TLSCAFile: 'ca.pem' is not an absolute path"},
    {"Cluster=a URL=http://h:1\nFlexcodURL=ftp://h:1\n", 2, "FlexcodURL: 'ftp://h:1' is not http"},
    {"Cluster=a URL=http://h:1\nFlexcodURL=http://a:1,ftp://h:1\n", 2, "FlexcodURL: 'ftp://h:1' is not http"},
    {"Cluster=a URL=http://h:1\nFlexcodURL=http://a:1,,http://b:1\n", 2, "FlexcodURL: '' is not http"},
    {"Cluster=a URL=http://h:1\nFlexcodURL=http://a:1,http://a:2,http://a:3,http://a:4,http://a:5,"
     "http://a:6,http://a:7,http://a:8,http://a:9\n", 2, "FlexcodURL: 1 to 8"},
    {"Cluster=a URL=http://h:1\nAdvertiseURL=fc1:26990\n", 2, "AdvertiseURL: 'fc1:26990' is not http"},
    {"Cluster=a URL=http://h:1\nLeaseTime=2\n", 2, "LeaseTime"},
    {"Cluster=a URL=http://h:1\nLeaseTime=301\n", 2, "LeaseTime"},
    {"Cluster=a URL=http://h:1/v1\n", 1, "not http://host:port"},
    {"Cluster=a URL=http://h:1 Colour=x\n", 1, "unknown key 'Colour' on a Cluster line"},
    {"Cluster=a URL=http://h:1 URL=http://h:2\n", 1, "given twice"},
    {"Cluster=a URL=http://h:1 RendezvousURL=tcp://h:2\n", 1, "RendezvousURL: 'tcp://h:2' is not http"},
    {"Cluster=a URL=http://h:1 RendezvousURL=http://h:2 RendezvousURL=http://h:3\n", 1, "given twice"},
    {"Cluster=a URL=http://h:1\nRendezvousURL=http://h:2\n", 2, "only allowed on a Cluster line"},
    {"Cluster=a URL=http://h:1\nRendezvousTimeout=4\n", 2, "RendezvousTimeout: '4' is not an integer in 5..3600"},
    {"Cluster=a URL=http://h:1\nCluster=A URL=http://h:2\n", 2, "defined twice"},
    {"Cluster=a/b URL=http://h:1\n", 1, "name"},
    {"Cluster=a URL=http://h:1\nCluster=FlexCoD URL=http://h:2\n", 2, "'flexcod' is reserved"},
    {"Cluster=a URL=http://h:1\nURL=http://h:2\n", 2, "only allowed on a Cluster line"},
    {"ListenPort=1 Cluster=a URL=http://h:1\n", 1, "must start its own line"},
    {"ListenPort=1\n", 0, "at least one cluster"},
    {"", 0, "at least one cluster"},
};

START_TEST(controller_urls) {
  // URL=a,b: the cluster's controllers, tried in turn (SlurmctldHost order)
  auto r = conf::parse("Cluster=alpha URL=http://ctl1:26001,http://ctl2:26001\n"
                       "Cluster=beta URL=http://b:26001\n", "f.conf");
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  const auto& cl = r.value().clusters;
  ck_assert_str_eq(cl[0].url.c_str(), "http://ctl1:26001");
  ck_assert_uint_eq(cl[0].other_urls.size(), 1);
  ck_assert_str_eq(cl[0].other_urls[0].c_str(), "http://ctl2:26001");
  ck_assert(cl[1].other_urls.empty());
}
END_TEST

START_TEST(rendezvous_settings) {
  // RendezvousURL on a Cluster line (how its compute nodes reach flexcod),
  // RendezvousTimeout (default 0: PartStartSkew's)
  auto r = conf::parse("Cluster=alpha URL=http://a:26001 rendezvousurl=http://10.1.0.5:26990\n"
                       "Cluster=beta URL=http://b:26001\nRendezvousTimeout=45\n", "f.conf");
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  ck_assert_str_eq(r.value().clusters[0].rendezvous_url.c_str(), "http://10.1.0.5:26990");
  ck_assert(r.value().clusters[1].rendezvous_url.empty());
  ck_assert_int_eq(r.value().rendezvous_timeout, 45);
  auto d = conf::parse("Cluster=alpha URL=http://a:26001\n", "f.conf");
  ck_assert(d.ok() && d.value().rendezvous_timeout == 0);
}
END_TEST

START_TEST(bad_inputs) {
  const Bad& b = kBad[_i];
  auto r = conf::parse(b.text, "f.conf");
  ck_assert_msg(!r.ok(), "case %d accepted", _i);
  ck_assert_msg(r.error().line == b.line, "case %d: line %d, want %d (%s)", _i, r.error().line,
                b.line, r.error().message.c_str());
  ck_assert_msg(r.error().message.find(b.word) != std::string::npos,
                "case %d: '%s' lacks '%s'", _i, r.error().message.c_str(), b.word);
  if (b.line > 0) {
    const std::string prefix = "f.conf:" + std::to_string(b.line) + ": ";
    ck_assert_msg(r.error().message.compare(0, prefix.size(), prefix) == 0,
                  "case %d: '%s' does not start with '%s'", _i, r.error().message.c_str(),
                  prefix.c_str());
  }
}
END_TEST

START_TEST(read_file_and_path_choice) {
  char dir[] = "/tmp/check_flexcod_conf.XXXXXX";
  ck_assert(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/flexcod.conf";
  {
    std::ofstream f(path);
    f << kExample;
  }
  auto r = conf::read_file(path);
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  ck_assert_int_eq(r.value().clusters.size(), 2);
  auto missing = conf::read_file(std::string(dir) + "/nope.conf");
  ck_assert(!missing.ok());
  ck_assert(missing.error().message.find("cannot open") != std::string::npos);
  std::remove(path.c_str());
  rmdir(dir);

  ck_assert(conf::choose_path("/a", "/b") == "/a");
  ck_assert(conf::choose_path("", "/b") == "/b");
  ck_assert(conf::choose_path("", "") == conf::kDefaultPath);
  // The path configure was given (--with-flexcod-conf; testsuite/Makefile.am
  // passes it), /etc/slurm/flexcod.conf by default.
  ck_assert(conf::choose_path("", nullptr) == std::string(CONFIGURED_FLEXCOD_CONF));
}
END_TEST

// UserMapFile (issue 38 §2.3): a user's name at a cluster, checked against
// the clusters of flexcod.conf; read with the conf, and an error in it is
// an error of the conf.
START_TEST(user_map) {
  auto c = conf::parse("Cluster=alpha URL=http://h:1\nCluster=beta URL=http://h:2\n", "t").value();
  auto m = conf::parse_user_map("# local  cluster=name\nalice beta=asmith  # at beta\n\n"
                                "bob alpha=bob2 beta=b.o_b-3\n", c, "map");
  ck_assert_msg(m.ok(), "%s", m.ok() ? "" : m.error().message.c_str());
  c.user_map = m.value();
  ck_assert_str_eq(conf::name_at(c, "alice", "beta").c_str(), "asmith");
  ck_assert_str_eq(conf::name_at(c, "alice", "alpha").c_str(), "alice");
  ck_assert_str_eq(conf::name_at(c, "bob", "alpha").c_str(), "bob2");
  ck_assert_str_eq(conf::name_at(c, "bob", "beta").c_str(), "b.o_b-3");
  ck_assert_str_eq(conf::name_at(c, "carol", "beta").c_str(), "carol");
  const Bad bad[] = {
      {"alice gamma=al\n", 1, "'gamma' is not a cluster"},
      {"alice beta=1234\n", 1, "'1234' is not a user name"},
      {"1234 beta=al\n", 1, "'1234' is not a user name"},
      {"alice beta\n", 1, "not Cluster=Name"},
      {"alice\n", 1, "names no Cluster=Name"},
      {"alice beta=a\nalice alpha=b\n", 2, "given twice"},
      {"alice beta=a beta=b\n", 1, "'beta' given twice"},
      {"alice beta=a/b\n", 1, "not a user name"},
      {"alice beta=-x\n", 1, "not a user name"},
  };
  for (const auto& b : bad) {
    auto r = conf::parse_user_map(b.text, c, "map");
    ck_assert_msg(!r.ok(), "accepted: %s", b.text);
    ck_assert_msg(r.error().line == b.line && r.error().message.find(b.word) != std::string::npos,
                  "%s: line %d: %s", b.text, r.error().line, r.error().message.c_str());
  }

  char dir[] = "/tmp/check_flexcod_usermap.XXXXXX";
  ck_assert(mkdtemp(dir) != nullptr);
  const std::string conf_path = std::string(dir) + "/flexcod.conf", map_path = std::string(dir) + "/map";
  {
    std::ofstream f(conf_path);
    f << "Cluster=alpha URL=http://h:1\nUserMapFile=" << map_path << "\n";
  }
  auto none = conf::read_file(conf_path);
  ck_assert(!none.ok() && none.error().message.find("UserMapFile") != std::string::npos);
  {
    std::ofstream f(map_path);
    f << "alice alpha=asmith\n";
  }
  auto r = conf::read_file(conf_path);
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  ck_assert_str_eq(conf::name_at(r.value(), "alice", "alpha").c_str(), "asmith");
  {
    std::ofstream f(map_path);
    f << "alice beta=asmith\n";
  }
  auto wrong = conf::read_file(conf_path);
  ck_assert(!wrong.ok() && wrong.error().message.find("'beta' is not a cluster") != std::string::npos);
  std::remove(map_path.c_str());
  std::remove(conf_path.c_str());
  rmdir(dir);
  ck_assert(!conf::parse("Cluster=alpha URL=http://h:1\nUserMapFile=map\n", "t").ok());
}
END_TEST

// The example shipped in contrib/ must parse (FLEXCO_SRCDIR from make check).
START_TEST(contrib_example_parses) {
  const char* src = std::getenv("FLEXCO_SRCDIR");
  const std::string path = std::string(src != nullptr ? src : ".") + "/contrib/flexcod.conf.example";
  auto r = conf::read_file(path);
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  ck_assert_int_eq(r.value().clusters.size(), 2);
  ck_assert(r.value().clusters[1].partition == "batch");
  ck_assert_int_eq(r.value().listen_port, 26990);
}
END_TEST

START_TEST(debug_levels) {
  for (int i = 0; i <= 9; ++i) {
    ck_assert_int_eq(conf::debug_level_from_name(conf::debug_level_name(i)), i);
  }
  ck_assert_int_eq(conf::debug_level_from_name("INFO"), 3);
  ck_assert_int_eq(conf::debug_level_from_name("debug6"), -1);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("flexcod_conf");
  TCase* tc = tcase_create("parse");
  tcase_add_test(tc, example_parses);
  tcase_add_test(tc, defaults_and_case);
  tcase_add_test(tc, controller_urls);
  tcase_add_test(tc, rendezvous_settings);
  tcase_add_loop_test(tc, bad_inputs, 0, static_cast<int>(sizeof(kBad) / sizeof(kBad[0])));
  tcase_add_test(tc, read_file_and_path_choice);
  tcase_add_test(tc, contrib_example_parses);
  tcase_add_test(tc, user_map);
  tcase_add_test(tc, debug_levels);
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
