// SPDX-License-Identifier: GPL-2.0-or-later
// db_pg.cpp - db::Conn over PostgreSQL through libpq (db.hpp).
//
// One connection, statements run with PQexecParams (typed text
// parameters, text results).  A statement that fails for any reason (a
// constraint, a timeout, the server gone: libpq does not reconnect) is
// reported to the failure handler as SQLite's are, so flexcod stops and
// recovers from the database when started again.  Several flexcods may
// share the database; its lease row (flexcod/lease.hpp) says which one
// acts.  A session advisory lock is held only while the schema is made or
// migrated, so that two starting at once do not both make it.

#include <libpq-fe.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "flexcod/db.hpp"

namespace flexcod {
namespace db {

namespace {

// "flexcod" as a 64-bit advisory lock key: pg_advisory_lock(bigint)
constexpr long long kLockKey = 0x666c6578636f64LL;

constexpr unsigned kInt8Oid = 20, kTextOid = 25, kFloat8Oid = 701;

// The message of libpq (a result's, else the connection's), one line.
std::string pq_message(PGconn* c, const PGresult* r) {
  std::string m = r ? PQresultErrorMessage(r) : "";
  if (m.empty()) m = PQerrorMessage(c);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  for (char& ch : m)
    if (ch == '\n') ch = ' ';
  return m.empty() ? "unknown PostgreSQL error" : m;
}

// ? placeholders as $1, $2, ... (none stands inside a '' literal in our
// statements, but literals are skipped all the same).
std::string number_params(const std::string& sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  bool quoted = false;
  for (char c : sql) {
    if (c == '\'') quoted = !quoted;
    if (c == '?' && !quoted) {
      out += '$';
      out += std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

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

class PgStmt final : public Stmt {
 public:
  PgStmt(PGconn* c, const Failure& fail, const std::string& sql)
      : c_(c), fail_(fail), sql_(number_params(sql)), shown_(first_words(sql)) {}
  ~PgStmt() override { PQclear(res_); }
  bool ok() const override { return true; }
  void bind_i64(std::int64_t v) override { add(kInt8Oid, std::to_string(v)); }
  void bind_dbl(double v) override {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    add(kFloat8Oid, buf);
  }
  void bind_text(const std::string& v) override { add(kTextOid, v); }
  Step step() override {
    if (!ran_) {
      ran_ = true;
      std::vector<const char*> vals;
      for (const auto& v : values_) vals.push_back(v.c_str());
      res_ = PQexecParams(c_, sql_.c_str(), static_cast<int>(values_.size()), types_.data(),
                          vals.data(), nullptr, nullptr, 0);
      const ExecStatusType st = res_ ? PQresultStatus(res_) : PGRES_FATAL_ERROR;
      if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        failed_ = true;
        error_ = pq_message(c_, res_);
        if (fail_) fail_("step \"" + shown_ + "\": " + error_);
        return kError;
      }
      rows_ = PQntuples(res_);
      const char* n = PQcmdTuples(res_);
      changes_ = (n && *n) ? std::strtoll(n, nullptr, 10) : 0;
      row_ = -1;
    }
    if (failed_) return kError;
    if (++row_ < rows_) return kRow;
    return kDone;
  }
  std::int64_t i64(int col) override {
    const char* v = value(col);
    return v ? std::strtoll(v, nullptr, 10) : 0;
  }
  double dbl(int col) override {
    const char* v = value(col);
    return v ? std::strtod(v, nullptr) : 0.0;
  }
  std::string str(int col) override {
    const char* v = value(col);
    return v ? std::string(v, static_cast<std::size_t>(PQgetlength(res_, row_, col))) : std::string();
  }
  std::int64_t changes() override { return changes_; }
  std::string errmsg() const override { return error_.empty() ? pq_message(c_, nullptr) : error_; }

 private:
  void add(unsigned oid, std::string v) {
    types_.push_back(oid);
    values_.push_back(std::move(v));
  }
  const char* value(int col) const {
    if (!res_ || row_ < 0 || row_ >= rows_ || PQgetisnull(res_, row_, col)) return nullptr;
    return PQgetvalue(res_, row_, col);
  }

  PGconn* c_;
  const Failure& fail_;
  std::string sql_, shown_;
  std::vector<Oid> types_;
  std::vector<std::string> values_;
  PGresult* res_ = nullptr;
  bool ran_ = false, failed_ = false;
  int rows_ = 0, row_ = -1;
  std::int64_t changes_ = 0;
  std::string error_;
};

class PgConn final : public Conn {
 public:
  explicit PgConn(PGconn* c) : c_(c) {}
  ~PgConn() override {
    // The session's advisory lock would go with it, but only once its
    // server process has seen the close, which a flexcod started right
    // after may beat (seen: "in use by another flexcod" from a store
    // opened just after the last one closed).  Given back first, at once.
    if (c_ != nullptr && PQstatus(c_) == CONNECTION_OK &&
        PQtransactionStatus(c_) == PQTRANS_IDLE) {
      PQclear(PQexec(c_, "SELECT pg_advisory_unlock_all()"));
    }
    PQfinish(c_);
  }
  const char* kind() const override { return "postgresql"; }
  std::unique_ptr<Stmt> prepare(const std::string& sql, const Failure& fail) override {
    return std::make_unique<PgStmt>(c_, fail, sql);
  }
  bool exec(const std::string& sql, std::string* error) override {
    PGresult* r = PQexec(c_, sql.c_str());
    const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    const bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok && error) *error = pq_message(c_, r);
    PQclear(r);
    return ok;
  }
  bool begin(std::string* error) override {
    if (exec("BEGIN", error)) return true;
    if (error) *error = "begin: " + *error;
    return false;
  }
  bool commit(std::string* error) override {
    // COMMIT of a transaction that failed answers ROLLBACK, not an error:
    // ask what it was.
    PGresult* r = PQexec(c_, "COMMIT");
    const bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK &&
                    std::string(PQcmdStatus(r)) == "COMMIT";
    if (!ok && error) {
      *error = "commit: " + (r && PQresultStatus(r) == PGRES_COMMAND_OK
                                 ? std::string("the transaction was rolled back")
                                 : pq_message(c_, r));
    }
    PQclear(r);
    return ok;
  }
  void rollback() override { PQclear(PQexec(c_, "ROLLBACK")); }
  bool has_column(const std::string& table, const std::string& column, bool* has,
                  std::string* error) override {
    const char* vals[2] = {table.c_str(), column.c_str()};
    PGresult* r = PQexecParams(c_,
                               "SELECT 1 FROM information_schema.columns WHERE"
                               " table_schema = current_schema() AND table_name=$1 AND column_name=$2",
                               2, nullptr, vals, nullptr, nullptr, 0);
    const bool ok = r && PQresultStatus(r) == PGRES_TUPLES_OK;
    if (ok) *has = PQntuples(r) > 0;
    if (!ok) *error = pq_message(c_, r);
    PQclear(r);
    return ok;
  }
  // SQLite's spelling to PostgreSQL's: 64-bit integers everywhere (times,
  // ids, node-seconds), an identity for AUTOINCREMENT, REAL as double.
  std::string dialect(const std::string& schema) const override {
    std::string s = schema;
    auto replace = [&s](const std::string& from, const std::string& to) {
      for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    };
    replace(" INTEGER PRIMARY KEY AUTOINCREMENT", " BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY");
    replace(" INTEGER", " BIGINT");
    replace(" REAL", " DOUBLE PRECISION");
    return s;
  }
  std::string errmsg() const override { return pq_message(c_, nullptr); }
  const char* now_ms_sql() const override {
    return "CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)";
  }
  const char* share_lock_sql() const override { return " FOR SHARE"; }
  const char* update_lock_sql() const override { return " FOR UPDATE"; }
  bool lock_schema(bool take, std::string* error) override {
    const std::string sql = std::string(take ? "SELECT pg_advisory_lock(" : "SELECT pg_advisory_unlock(") +
                            std::to_string(kLockKey) + ")";
    if (exec(sql, error)) return true;
    if (error) *error = std::string("schema lock: ") + *error;
    return false;
  }

 private:
  PGconn* c_;
};

}  // namespace

std::string redact_conninfo(const std::string& conninfo) {
  std::string out = conninfo;
  // key=value form: password=..., password = '...'
  for (std::size_t at = out.find("password"); at != std::string::npos; at = out.find("password", at + 1)) {
    std::size_t v = at + 8;
    while (v < out.size() && out[v] == ' ') ++v;
    if (v >= out.size() || out[v] != '=') continue;
    ++v;
    while (v < out.size() && out[v] == ' ') ++v;
    std::size_t end = v;
    if (end < out.size() && out[end] == '\'') {
      for (++end; end < out.size() && out[end] != '\''; ++end)
        if (out[end] == '\\') ++end;
      if (end < out.size()) ++end;
    } else {
      while (end < out.size() && out[end] != ' ' && out[end] != '&') ++end;
    }
    out.replace(v, end - v, "***");
  }
  // URI form: postgresql://user:secret@host
  const std::size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const std::size_t auth_end = out.find_first_of("@/?", scheme + 3);
    if (auth_end != std::string::npos && out[auth_end] == '@') {
      const std::size_t colon = out.find(':', scheme + 3);
      if (colon != std::string::npos && colon < auth_end) out.replace(colon + 1, auth_end - colon - 1, "***");
    }
  }
  return out;
}

bool conninfo_has_password(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (!opts) {
    PQfreemem(err);
    return false;
  }
  bool has = false;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (std::string(o->keyword) == "password" && o->val && *o->val) has = true;
  }
  PQconninfoFree(opts);
  return has;
}

std::unique_ptr<Conn> open_postgresql(const std::string& conninfo, const std::string& passfile,
                                      std::string* error) {
  const std::string shown = redact_conninfo(conninfo);
  char* perr = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &perr);
  if (!opts) {
    *error = "StorageLoc " + shown + ": " + (perr ? perr : "not a libpq connection string");
    while (!error->empty() && error->back() == '\n') error->pop_back();
    PQfreemem(perr);
    return nullptr;
  }
  PQconninfoFree(opts);
  // Our defaults, then the conninfo (expanded from dbname: a later
  // keyword overrides an earlier one), then StoragePassFile.
  std::vector<const char*> keys = {"application_name", "connect_timeout", "dbname"};
  std::vector<const char*> vals = {"flexcod", "10", conninfo.c_str()};
  if (!passfile.empty()) {
    keys.push_back("passfile");
    vals.push_back(passfile.c_str());
  }
  keys.push_back(nullptr);
  vals.push_back(nullptr);
  PGconn* c = PQconnectdbParams(keys.data(), vals.data(), 1);
  if (c == nullptr || PQstatus(c) != CONNECTION_OK) {
    *error = shown + ": cannot connect: " + (c ? pq_message(c, nullptr) : "out of memory");
    PQfinish(c);
    return nullptr;
  }
  auto conn = std::make_unique<PgConn>(c);
  // A statement that waits this long (a lock held by an admin's session,
  // a server that stopped answering) fails, as SQLite's busy timeout does,
  // and flexcod stops rather than act on what it could not write.
  std::string why;
  if (!conn->exec("SET statement_timeout = '60s'; SET lock_timeout = '10s';"
                  " SET client_min_messages = warning",
                  &why)) {
    *error = shown + ": " + why;
    return nullptr;
  }
  return conn;
}

}  // namespace db
}  // namespace flexcod
