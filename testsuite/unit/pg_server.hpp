// SPDX-License-Identifier: GPL-2.0-or-later
// pg_server.hpp - a real PostgreSQL server for a unit test: initdb in a
// scratch directory under /tmp (a short path, for the Unix socket) as an
// unprivileged user (nobody when the test runs as root), postgres started
// as the test's child with no TCP listener and its socket in that
// directory, stopped by its pid (SIGINT: a fast shutdown) at the end.
//
// The binaries: $FLEXCO_PG_BINDIR, else the newest /usr/lib/postgresql/N/bin
// (Debian's postgresql package, which contrib/install-deps installs), else
// the PATH.  A missing one is a failure, not a skip.

#ifndef FLEXCO_TESTSUITE_PG_SERVER_HPP
#define FLEXCO_TESTSUITE_PG_SERVER_HPP

#include <dirent.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

class PgServer {
 public:
  PgServer() = default;
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;
  ~PgServer() { stop(); }

  // "" or why the server could not be started.
  std::string start() {
    const std::string bin = bindir();
    if (bin.empty()) return "no PostgreSQL server binaries (initdb): apt-get install postgresql";
    char tmpl[] = "/tmp/fpg-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return "mkdtemp failed";
    dir_ = tmpl;
    owner_ = getpid();
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (uid == 0) {
      const struct passwd* pw = getpwnam("nobody");
      if (pw == nullptr) return "no user nobody to run PostgreSQL as";
      uid = pw->pw_uid;
      gid = pw->pw_gid;
      if (chown(dir_.c_str(), uid, gid) != 0) return "chown " + dir_ + " failed";
    }
    chmod(dir_.c_str(), 0755);
    uid_ = uid;
    gid_ = gid;
    const std::string data = dir_ + "/data";
    const int rc = run({bin + "/initdb", "-D", data, "-U", "flexco", "-A", "trust", "-E", "UTF8",
                        "--no-sync", "--no-instructions"});
    if (rc != 0) return "initdb failed (exit " + std::to_string(rc) + "), see " + dir_ + "/initdb.log";
    pid_ = spawn({bin + "/postgres", "-D", data, "-k", dir_, "-c", "listen_addresses=", "-c",
                  "fsync=off", "-c", "max_connections=40", "-c", "shared_buffers=16MB"});
    if (pid_ <= 0) return "cannot start postgres";
    // Ready once it answers (PQping), or failed once it exited.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    const std::string ci = conninfo("postgres");
    while (std::chrono::steady_clock::now() < until) {
      if (PQping(ci.c_str()) == PQPING_OK) return "";
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return "postgres exited at start, see " + dir_ + "/postgres.log";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "postgres did not answer within 60 s";
  }

  // Stops the server by its pid and removes its directory (in the process
  // that started it only: Check's forked test cases exit with a copy).
  void stop() {
    if (owner_ != getpid()) return;
    if (pid_ > 0) {
      kill(pid_, SIGINT);
      int st = 0;
      waitpid(pid_, &st, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) {
      const std::string cmd = "rm -rf '" + dir_ + "'";
      (void)!std::system(cmd.c_str());
      dir_.clear();
    }
  }

  pid_t pid() const { return pid_; }
  const std::string& socket_dir() const { return dir_; }

  // libpq's connection string for database `db` as the superuser flexco.
  std::string conninfo(const std::string& db) const {
    return "host=" + dir_ + " user=flexco dbname=" + db;
  }

  // Runs `sql` on database `db` (e.g. CREATE DATABASE on "postgres");
  // "" or the error.
  std::string exec(const std::string& db, const std::string& sql) const {
    PGconn* c = PQconnectdb(conninfo(db).c_str());
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);  // DROP ... IF EXISTS's notes
    std::string err;
    if (PQstatus(c) != CONNECTION_OK) {
      err = PQerrorMessage(c);
    } else {
      PGresult* r = PQexec(c, sql.c_str());
      const ExecStatusType st = PQresultStatus(r);
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) err = PQresultErrorMessage(r);
      PQclear(r);
    }
    PQfinish(c);
    return err;
  }

  // A new empty database; "" or the error.
  std::string create_database(const std::string& name) const {
    std::string e = exec("postgres", "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    if (e.empty()) e = exec("postgres", "CREATE DATABASE " + name);
    return e;
  }

 private:
  static std::string bindir() {
    if (const char* e = std::getenv("FLEXCO_PG_BINDIR"); e && *e) return e;
    std::string best;
    int best_v = -1;
    if (DIR* d = opendir("/usr/lib/postgresql")) {
      while (const struct dirent* de = readdir(d)) {
        const int v = std::atoi(de->d_name);
        const std::string b = std::string("/usr/lib/postgresql/") + de->d_name + "/bin";
        if (v > best_v && access((b + "/initdb").c_str(), X_OK) == 0) {
          best_v = v;
          best = b;
        }
      }
      closedir(d);
    }
    if (!best.empty()) return best;
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "";
    for (std::size_t at = 0; at <= p.size();) {
      const std::size_t colon = p.find(':', at);
      const std::string d = p.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
      if (!d.empty() && access((d + "/initdb").c_str(), X_OK) == 0) return d;
      if (colon == std::string::npos) break;
      at = colon + 1;
    }
    return "";
  }

  // The child: the unprivileged user, output to a log in the directory.
  pid_t spawn(const std::vector<std::string>& argv, const char* log = "postgres.log") const {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    const std::string out = dir_ + "/" + log;
    if (getuid() == 0 && (setgid(gid_) != 0 || setuid(uid_) != 0)) _exit(126);
    if (chdir(dir_.c_str()) != 0) _exit(126);  // the test's own may be closed to nobody
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    setenv("LC_ALL", "C", 1);
    unsetenv("PGDATA");
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }

  // Runs argv as the child above, waits; its exit status.
  int run(const std::vector<std::string>& argv) const {
    const pid_t pid = spawn(argv, "initdb.log");
    if (pid < 0) return -1;
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  std::string dir_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  pid_t pid_ = -1;
  pid_t owner_ = -1;
};

#endif
