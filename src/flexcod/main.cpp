// SPDX-License-Identifier: GPL-2.0-or-later
// flexcod - the FlexCo metascheduler daemon (flexcod(8)).
//
// main() reads the configuration, daemonizes (unless -D), takes the pid
// file, opens the state database, starts the engine (recovery, cluster
// threads) and then the HTTP listener, and waits for signals: SIGHUP
// re-reads flexcod.conf and reopens the log, SIGTERM/SIGINT stop cleanly in
// reverse order.

#include <curl/curl.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/auth.hpp"
#include "core/capi_auth.h"
#include "core/flexcod_conf.hpp"
#include "flexco_config.h"
#include "flexcod/engine.hpp"
#include "flexcod/lease.hpp"
#include "flexcod/test_hold.hpp"
#include "flexcod/log.hpp"
#include "flexcod/db.hpp"
#include "flexcod/server.hpp"
#include "flexcod/store.hpp"

namespace {

struct Options {
  std::string conf_file;
  bool foreground = false;
  int verbose = 0;
  std::string log_file;
  std::string state_file;
  std::string pid_file;
  int port = 0;
  std::string listen;
  bool init_db = false;
};

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: flexcod [OPTIONS]\n"
               "  -D            run in the foreground, log to stderr\n"
               "  -f FILE       configuration file (default $FLEXCOD_CONF or %s)\n"
               "  -L FILE       log file (overrides LogFile)\n"
               "  -s FILE       state database (overrides StateFile)\n"
               "  -i FILE       pid file (overrides PidFile)\n"
               "  -p PORT       listen port (overrides ListenPort)\n"
               "  -a ADDRESS    listen address (overrides ListenAddress)\n"
               "  -v            more verbose (repeat for more)\n"
               "      --init-db create (or migrate) the state database's schema and exit\n"
               "  -V, --version print the version and exit\n"
               "  -h, --help    this help\n",
               flexco::conf::kDefaultPath);
}

// MetricsTokenFile's token ("" without one); false and why if the file is
// not fit (capi_auth.h: owner-only, 16..512 visible characters).
bool read_metrics_token(const flexco::conf::FlexcodConf& conf, std::string* token, std::string* why) {
  token->clear();
  if (conf.metrics_token_file.empty()) return true;
  char buf[FLEXCO_METRICS_TOKEN_MAX + 1];
  char err[512];
  if (flexco_token_file_read(conf.metrics_token_file.c_str(), buf, sizeof buf, err, sizeof err) != 0) {
    *why = std::string("MetricsTokenFile ") + err;
    return false;
  }
  *token = buf;
  std::memset(buf, 0, sizeof buf);
  return true;
}

flexco::conf::Result<flexco::conf::FlexcodConf> load(const Options& o, const std::string& path) {
  auto r = flexco::conf::read_file(path);
  if (!r.ok()) return r;
  auto c = std::move(r).value();
  if (!o.log_file.empty()) c.log_file = o.log_file;
  if (!o.state_file.empty()) c.state_file = o.state_file;
  if (!o.pid_file.empty()) c.pid_file = o.pid_file;
  if (o.port > 0) c.listen_port = o.port;
  if (!o.listen.empty()) c.listen_address = o.listen;
  c.debug_level = std::min(9, c.debug_level + o.verbose);
  // An https cluster with an unreadable CA file could never be reached:
  // refuse the configuration rather than run without that cluster.
  for (const auto& cl : c.clusters) {
    if (cl.url.compare(0, 8, "https://") == 0 && !c.tls_ca_file.empty() &&
        access(c.tls_ca_file.c_str(), R_OK) != 0) {
      return flexco::conf::Error{0, path + ": TLSCAFile " + c.tls_ca_file + " is not readable: " +
                                        std::strerror(errno) + " (cluster " + cl.name + " is https)"};
    }
  }
  return c;
}

// Where the state is (StorageType), and how it is named in messages.
flexcod::Store::Location storage(const flexco::conf::FlexcodConf& c) {
  flexcod::Store::Location loc;
  loc.type = c.storage_type;
  loc.path = c.storage_type == "postgresql" ? c.storage_loc : c.state_file;
  loc.passfile = c.storage_pass_file;
  return loc;
}

std::string storage_name(const flexco::conf::FlexcodConf& c) {
  return c.storage_type == "postgresql"
             ? "StorageLoc " + flexcod::db::redact_conninfo(c.storage_loc)
             : "StateFile " + c.state_file;
}

// A password in StorageLoc is only kept in a flexcod.conf its owner alone
// may read; a StoragePassFile must be owner-only (libpq ignores one that
// is not, and the connection would fail for a reason far from here).
bool storage_secrets_ok(const flexco::conf::FlexcodConf& c, const std::string& conf_path,
                        std::string* why) {
  if (c.storage_type != "postgresql") return true;
  struct stat sb;
  if (flexcod::db::conninfo_has_password(c.storage_loc) && stat(conf_path.c_str(), &sb) == 0 &&
      (sb.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(sb.st_mode & 07777));
    *why = "StorageLoc holds a password, but " + conf_path + " (mode " + mode +
           ") may be read by others: make it owner-only (chmod 600) or move the password to "
           "StoragePassFile";
    return false;
  }
  if (!c.storage_pass_file.empty()) {
    if (stat(c.storage_pass_file.c_str(), &sb) != 0) {
      *why = "StoragePassFile " + c.storage_pass_file + ": " + std::strerror(errno);
      return false;
    }
    if ((sb.st_mode & 077) != 0) {
      *why = "StoragePassFile " + c.storage_pass_file +
             ": may be read by others: make it owner-only (chmod 600)";
      return false;
    }
  }
  return true;
}

// The pid file, locked for the daemon's lifetime.
// This flexcod in the lease row: who (host, pid, the store's random run
// id: unique per process) and where the others send writes
// (AdvertiseURL, else http://<host>:ListenPort).
flexcod::Lease::Config lease_config(const flexco::conf::FlexcodConf& conf, const flexcod::Store& store) {
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  flexcod::Lease::Config lc;
  lc.holder = std::string(host) + ":" + std::to_string(getpid()) + ":" + store.run();
  if (!conf.advertise_url.empty()) {
    lc.address = conf.advertise_url;
  } else {
    std::string h = conf.listen_address;
    if (h == "0.0.0.0" || h == "::") h = host;
    if (h.find(':') != std::string::npos) h = "[" + h + "]";
    lc.address = "http://" + h + ":" + std::to_string(conf.listen_port);
  }
  lc.grid = store.instance();
  lc.lease_seconds = conf.lease_time;
  lc.exclusive = std::string(store.kind()) == "sqlite";
  return lc;
}

int take_pid_file(const std::string& path, std::string* why) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = path + ": " + std::strerror(errno);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *why = path + ": locked: another flexcod is running";
    close(fd);
    return -1;
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) {
    *why = path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int opt;
  // Long forms as Slurm's daemons take them (slurmctld --version, --help).
  static const struct option kLong[] = {{"version", no_argument, nullptr, 'V'},
                                        {"init-db", no_argument, nullptr, 'I'},
                                        {"help", no_argument, nullptr, 'h'},
                                        {"usage", no_argument, nullptr, 'h'},
                                        {nullptr, 0, nullptr, 0}};
  while ((opt = getopt_long(argc, argv, "Df:L:s:i:p:a:vVh", kLong, nullptr)) != -1) {
    switch (opt) {
      case 'D': o.foreground = true; break;
      case 'f': o.conf_file = optarg; break;
      case 'L': o.log_file = optarg; break;
      case 's': o.state_file = optarg; break;
      case 'i': o.pid_file = optarg; break;
      case 'p': o.port = std::atoi(optarg); if (o.port < 1 || o.port > 65535) { std::fprintf(stderr, "flexcod: -p %s: not a port\n", optarg); return 1; } break;
      case 'a': o.listen = optarg; break;
      case 'v': o.verbose++; break;
      case 'V': std::printf("flexcod %s\n", PACKAGE_VERSION); return 0;
      case 'I': o.init_db = true; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 1;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "flexcod: unexpected argument '%s'\n", argv[optind]);
    return 1;
  }
  const std::string path = flexco::conf::choose_path(o.conf_file, std::getenv(flexco::conf::kPathEnv));
  auto loaded = load(o, path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "flexcod: fatal: %s\n", loaded.error().message.c_str());
    return 1;
  }
  flexco::conf::FlexcodConf conf = loaded.value();
  {
    std::string why;
    if (!storage_secrets_ok(conf, path, &why)) {
      std::fprintf(stderr, "flexcod: fatal: %s\n", why.c_str());
      return 1;
    }
  }
  if (o.init_db) {
    // The schema made (or migrated) as the first start would, by an admin
    // before flexcod runs (doc/admin.md, "PostgreSQL"); the advisory lock
    // or flock keeps it off a database a running flexcod uses.
    std::string why;
    auto store = flexcod::Store::open(storage(conf), &why);
    if (!store) {
      std::fprintf(stderr, "flexcod: fatal: %s: %s\n", conf.storage_type == "postgresql" ? "StorageLoc" : "StateFile",
                   why.c_str());
      return 1;
    }
    std::printf("flexcod: %s: schema %s ready (%s, instance %s)\n", storage_name(conf).c_str(),
                store->schema_version().c_str(), store->kind(), store->instance().c_str());
    return 0;
  }

  // Daemonize before any thread exists; the parent waits until the child
  // listens (or failed), so that "flexcod && next" sees a ready daemon.
  int ready[2] = {-1, -1};
  if (!o.foreground) {
    if (pipe(ready) != 0) {
      std::perror("flexcod: pipe");
      return 1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("flexcod: fork");
      return 1;
    }
    if (pid > 0) {
      close(ready[1]);
      char c = 1;
      const ssize_t n = read(ready[0], &c, 1);
      return (n == 1 && c == 0) ? 0 : 1;
    }
    close(ready[0]);
    setsid();
    if (fork() > 0) _exit(0);
    umask(022);
    if (chdir("/") != 0) _exit(1);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
      if (conf.log_file.empty()) dup2(null, STDERR_FILENO);
      if (null > 2) close(null);
    }
  }
  auto fail = [&](const std::string& why) {
    fc_fatal("%s", why.c_str());
    if (ready[1] >= 0) {
      char c = 1;
      (void)!write(ready[1], &c, 1);
    }
    return 1;
  };
  const std::string log_why = flexcod::log_init(o.foreground, conf.log_file, conf.debug_level);
  if (!log_why.empty()) return fail("LogFile " + log_why);
  if (!o.foreground) {
    // Let go of the caller's stderr (a pipe would stay open for our whole
    // life): stray writes go to the log file, or nowhere with syslog.
    const int err_fd = conf.log_file.empty() ? open("/dev/null", O_WRONLY)
                                             : open(conf.log_file.c_str(), O_WRONLY | O_APPEND);
    if (err_fd >= 0) {
      dup2(err_fd, STDERR_FILENO);
      if (err_fd != STDERR_FILENO) close(err_fd);
    }
  }

  std::string why;
  const int pid_fd = take_pid_file(conf.pid_file, &why);
  if (pid_fd < 0) return fail(why);

  // Signals: handled by sigwait in this thread only.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return fail("curl_global_init failed");

  auto store = flexcod::Store::open(storage(conf), &why);
  if (!store) {
    return fail((conf.storage_type == "postgresql" ? "StorageLoc " : "StateFile ") + why);
  }
  // Fail-stop (doc/flexcod.md, "When the database fails"): whatever was
  // not written is acted on by nobody, and the restart (systemd's
  // Restart=on-failure) recovers from what the database holds, by the path
  // every crash takes.  _Exit: no destructor may run while other threads
  // still act.
  store->set_failure_handler([name = storage_name(conf)](const std::string& what) {
    fc_error("fatal: %s: %s; flexcod stops, and recovers from the database when it "
             "is started again", name.c_str(), what.c_str());
    std::_Exit(EXIT_FAILURE);
  });

  // Compare-and-set conflicts (doc/flexcod.md, "Compare-and-set"): the
  // write is refused and its caller, or its next pass, reads again.
  store->set_conflict_handler([](const std::string& what) {
    fc_info("%s; read again", what.c_str());
  });

  flexco::auth::SignerConfig sc;
  sc.socket_path = conf.munge_socket;
  auto signer = flexco::auth::Signer::create(sc);
  if (!signer.ok()) return fail("MungeSocket: " + signer.error().message);
  flexco::auth::VerifierConfig vc;
  vc.audience = std::string(flexco::auth::kFlexcodAudience);  // doc/auth.md, "Audience"
  vc.socket_path = conf.munge_socket;
  vc.session_lifetime = conf.session_lifetime;  // read at start only
  auto verifier = flexco::auth::Verifier::create(vc);
  if (!verifier.ok()) return fail("MungeSocket: " + verifier.error().message);

  fc_info("flexcod version %s started: %zu clusters, state %s, policy %s, availability %s",
          PACKAGE_VERSION, conf.clusters.size(), storage_name(conf).c_str(), conf.default_policy.c_str(),
          conf.availability_mode.c_str());
  // High availability (doc/flexcod.md): the lease says which flexcod on
  // the database acts; this one answers reads until it holds it.
  auto lease = std::make_unique<flexcod::Lease>(*store, lease_config(conf, *store));
  auto engine = std::make_unique<flexcod::Engine>(conf, *store, signer.value(), lease.get());
  auto server = std::make_unique<flexcod::Server>(*engine, std::move(verifier).value(), conf.admin_users);
  server->set_public_stats(conf.public_stats);
  {
    std::string token;
    if (!read_metrics_token(conf, &token, &why)) return fail(why);
    server->set_metrics_token(token);
  }
  server->set_ui(conf.ui_dir, conf.ui_token_lifetime, conf.ui_read_all);
  if (conf.ui_token_lifetime > 0 && access((conf.ui_dir + "/index.html").c_str(), R_OK) != 0) {
    fc_error("UiDir %s has no readable index.html: the web view (/ui/) answers 404", conf.ui_dir.c_str());
  }
  flexco_http_limits_t limits{};
  limits.max_connections = static_cast<std::uint32_t>(conf.max_connections);
  limits.max_connections_per_address = static_cast<std::uint32_t>(
      conf.max_connections_per_address > 0 ? conf.max_connections_per_address : conf.max_connections);
  limits.connection_timeout = static_cast<std::uint32_t>(conf.connection_timeout);
  limits.header_timeout = static_cast<std::uint32_t>(conf.header_timeout);
  limits.body_timeout = static_cast<std::uint32_t>(conf.body_timeout);
  limits.max_request_size = static_cast<std::uint32_t>(conf.max_request_size);
  limits.max_request_memory = static_cast<std::uint64_t>(conf.max_request_memory);
  why = server->start(conf.listen_address, conf.listen_port, limits);
  if (!why.empty()) return fail(why);
  fc_info("listening on %s:%d", conf.listen_address.c_str(), conf.listen_port);
  lease->start(
      [&engine](std::int64_t epoch) {
        // recovery, as at a restart, then the background threads
        engine->start();
        fc_info("in charge (epoch %lld): recovered, acting", static_cast<long long>(epoch));
      },
      [](const std::string& why) {
        if (flexcod::test_ignore_lease()) {
          fc_error("lease lost (%s); FLEXCOD_TEST_IGNORE_LEASE: going on as if not", why.c_str());
          return;
        }
        // Stop acting at once: whatever this process would do next may
        // already be another flexcod's to do.  The restart (systemd's
        // Restart=on-failure) begins as a standby.  _Exit: no destructor
        // may run while other threads still act.
        fc_error("fatal: lease lost (%s); flexcod stops acting and exits, and starts again as a "
                 "standby", why.c_str());
        std::_Exit(EXIT_FAILURE);
      });
  if (ready[1] >= 0) {
    char c = 0;
    (void)!write(ready[1], &c, 1);
    close(ready[1]);
    ready[1] = -1;
  }

  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGHUP) {
      fc_info("Reconfigure signal (SIGHUP) received");
      flexcod::log_reopen();
      auto again = load(o, path);
      if (!again.ok()) {
        fc_error("reconfigure: %s; keeping the running configuration", again.error().message.c_str());
        continue;
      }
      std::string token, terr;
      if (!read_metrics_token(again.value(), &token, &terr)) {
        fc_error("reconfigure: %s; keeping the running configuration", terr.c_str());
        continue;
      }
      if (storage_name(again.value()) != storage_name(conf) ||
          again.value().storage_pass_file != conf.storage_pass_file) {
        fc_error("reconfigure: the state database (StorageType, StateFile, StorageLoc, "
                 "StoragePassFile) changes when flexcod is started again; %s is kept until then",
                 storage_name(conf).c_str());
      }
      {
        // the database is the one flexcod opened; the rest is reloaded
        auto& next = again.value();
        next.storage_type = conf.storage_type;
        next.state_file = conf.state_file;
        next.storage_loc = conf.storage_loc;
        next.storage_pass_file = conf.storage_pass_file;
      }
      conf = again.value();
      server->set_metrics_token(token);
      flexcod::log_set_level(conf.debug_level);
      engine->reload(conf);
      server->set_admins(conf.admin_users);
      server->set_public_stats(conf.public_stats);
      server->set_ui(conf.ui_dir, conf.ui_token_lifetime, conf.ui_read_all);
      continue;
    }
    fc_info("Terminate signal (%s) received", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    break;
  }
  server->stop();
  // Recovery, if it is still running, first; the lease is renewed until
  // the engine has stopped, then given back, so a standby takes over at
  // once.
  lease->wait_started();
  engine->stop();
  lease->stop(true);
  engine.reset();
  lease.reset();
  store.reset();
  unlink(conf.pid_file.c_str());
  close(pid_fd);
  curl_global_cleanup();
  fc_info("flexcod stopped");
  return 0;
}
