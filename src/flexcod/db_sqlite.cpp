// SPDX-License-Identifier: GPL-2.0-or-later
// db_sqlite.cpp - db::Conn over SQLite (db.hpp): WAL, synchronous=FULL,
// foreign keys, a 5 s busy timeout, the file owner-only and flock()ed.

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "flexcod/db.hpp"

namespace flexcod {
namespace db {

namespace {

// The statement's first three words ("SELECT co_id, attempt,"), enough
// to tell which one failed without logging a whole query.
std::string first_words(const std::string& sql) {
  std::string out;
  int words = 0;
  for (char c : sql) {
    if (c == ' ') ++words;
    if (words >= 3) break;
    out += c;
  }
  return out;
}

// A statement that cannot be prepared, or whose step ends in anything but
// a row or done (SQLITE_FULL, SQLITE_BUSY past the busy timeout,
// SQLITE_IOERR, SQLITE_CORRUPT, ...), is reported to `fail`.
class SqliteStmt final : public Stmt {
 public:
  SqliteStmt(sqlite3* db, const Failure& fail, const std::string& sql)
      : db_(db), fail_(fail), sql_(sql) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr) != SQLITE_OK) {
      st_ = nullptr;
      report("prepare");
    }
  }
  ~SqliteStmt() override { sqlite3_finalize(st_); }
  bool ok() const override { return st_ != nullptr; }
  void bind_i64(std::int64_t v) override { sqlite3_bind_int64(st_, ++n_, v); }
  void bind_dbl(double v) override { sqlite3_bind_double(st_, ++n_, v); }
  void bind_text(const std::string& v) override {
    sqlite3_bind_text(st_, ++n_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  Step step() override {
    if (!st_) return kError;  // reported when prepared
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return kRow;
    if (rc == SQLITE_DONE) {
      changes_ = sqlite3_changes(db_);
      return kDone;
    }
    report("step");
    return kError;
  }
  std::int64_t i64(int col) override { return sqlite3_column_int64(st_, col); }
  double dbl(int col) override { return sqlite3_column_double(st_, col); }
  std::string str(int col) override {
    const unsigned char* t = sqlite3_column_text(st_, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<std::size_t>(sqlite3_column_bytes(st_, col)))
             : std::string();
  }
  std::int64_t changes() override { return changes_; }
  std::string errmsg() const override { return sqlite3_errmsg(db_); }

 private:
  void report(const char* what) {
    if (fail_) fail_(std::string(what) + " \"" + first_words(sql_) + "\": " + sqlite3_errmsg(db_));
  }

  sqlite3* db_;
  const Failure& fail_;
  std::string sql_;
  sqlite3_stmt* st_ = nullptr;
  int n_ = 0;
  std::int64_t changes_ = 0;
};

class SqliteConn final : public Conn {
 public:
  SqliteConn(sqlite3* db, int lock_fd) : db_(db), lock_fd_(lock_fd) {}
  ~SqliteConn() override {
    sqlite3_close(db_);
    ::close(lock_fd_);  // after SQLite's own descriptors: its locks are gone
  }
  const char* kind() const override { return "sqlite"; }
  std::unique_ptr<Stmt> prepare(const std::string& sql, const Failure& fail) override {
    return std::make_unique<SqliteStmt>(db_, fail, sql);
  }
  bool exec(const std::string& sql, std::string* error) override {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
      if (error) *error = msg ? msg : "sqlite error";
      sqlite3_free(msg);
      return false;
    }
    return true;
  }
  bool begin(std::string* error) override {
    if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK) return true;
    if (error) *error = std::string("begin: ") + sqlite3_errmsg(db_);
    return false;
  }
  bool commit(std::string* error) override {
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK) return true;
    if (error) *error = std::string("commit: ") + sqlite3_errmsg(db_);
    return false;
  }
  void rollback() override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }
  bool has_column(const std::string& table, const std::string& column, bool* has,
                  std::string* error) override {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT 1 FROM pragma_table_info(?) WHERE name=?", -1, &st,
                           nullptr) != SQLITE_OK) {
      *error = sqlite3_errmsg(db_);
      return false;
    }
    sqlite3_bind_text(st, 1, table.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, column.c_str(), -1, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      *error = sqlite3_errmsg(db_);
      return false;
    }
    *has = rc == SQLITE_ROW;
    return true;
  }
  std::string dialect(const std::string& schema) const override { return schema; }
  const char* now_ms_sql() const override {
    return "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
  }
  const char* share_lock_sql() const override { return ""; }
  const char* update_lock_sql() const override { return ""; }
  bool lock_schema(bool, std::string*) override { return true; }
  std::string errmsg() const override { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_;
  int lock_fd_;  // flock()ed: one flexcod per database
};

// The database holds job scripts and environments: owner only.  SQLite
// gives its -wal and -shm files the database file's permissions, so the
// file is created 0600 before SQLite opens it, and an existing one that is
// more open (an older flexcod, a restored backup) is narrowed.
bool make_private(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat sb;
  bool ok = fstat(fd, &sb) == 0;
  if (ok && (sb.st_mode & 077) != 0) ok = fchmod(fd, sb.st_mode & 0700) == 0;
  if (!ok) *error = path + ": cannot make it private: " + std::strerror(errno);
  ::close(fd);
  if (!ok) return false;
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string side = path + suffix;
    if (stat(side.c_str(), &sb) == 0 && (sb.st_mode & 077) != 0 &&
        chmod(side.c_str(), sb.st_mode & 0700) != 0) {
      *error = side + ": cannot make it private: " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<Conn> open_sqlite(const std::string& path, std::string* error) {
  if (!make_private(path, error)) return nullptr;
  // One flexcod per database (issue 38 §2.5): two would share the owner
  // tag, fail each other's commits and sweep each other's reservations as
  // orphans.  flock() on a descriptor of the database file itself, kept
  // for the store's life: independent of SQLite's POSIX locks on Linux, and
  // released by nothing but this store's end or the process's.
  const int lock_fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (lock_fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return nullptr;
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    *error = path + ": " +
             (e == EWOULDBLOCK ? std::string("in use by another flexcod (it holds the database's lock)")
                               : std::string("cannot lock it: ") + std::strerror(e));
    ::close(lock_fd);
    return nullptr;
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    *error = path + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    ::close(lock_fd);
    return nullptr;
  }
  auto c = std::make_unique<SqliteConn>(db, lock_fd);
  sqlite3_busy_timeout(db, 5000);
  if (!c->exec("PRAGMA journal_mode=WAL", error) || !c->exec("PRAGMA synchronous=FULL", error) ||
      !c->exec("PRAGMA foreign_keys=ON", error)) {
    *error = path + ": " + *error;
    return nullptr;
  }
  return c;
}

}  // namespace db
}  // namespace flexcod
