// SPDX-License-Identifier: GPL-2.0-or-later
// db.hpp - the SQL connection under flexcod's Store: one interface, two
// implementations (db_sqlite.cpp over SQLite, db_pg.cpp over PostgreSQL's
// libpq).  Store (store.cpp) holds every query and rule (schema and
// migrations, compare-and-set versions, the state table's may_overwrite,
// transitions, per-user caps) once, in SQL both databases take; a backend
// only runs statements, transactions and the few questions whose SQL
// differs (does a column exist, how an id column is spelled).
// doc/decisions.md, "One Store over two SQL backends", says why.
//
// Statements use '?' placeholders and '' literals (the backend renumbers
// them as $1.. for PostgreSQL); identifiers that are keywords in either
// dialect ("user") are double-quoted.
//
// Not thread-safe: Store calls a connection under its own mutex.

#ifndef FLEXCO_FLEXCOD_DB_HPP
#define FLEXCO_FLEXCOD_DB_HPP

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace flexcod {
namespace db {

// What a statement that cannot run is told to (Store's failure handler).
using Failure = std::function<void(const std::string&)>;

enum Step { kRow, kDone, kError };

// One statement: binds (in order), then step() until kDone; the columns
// of the current row.  A statement that cannot be prepared or run reports
// to the connection's Failure with what failed and the database's message.
class Stmt {
 public:
  virtual ~Stmt() = default;
  virtual bool ok() const = 0;
  virtual void bind_i64(std::int64_t v) = 0;
  virtual void bind_dbl(double v) = 0;
  virtual void bind_text(const std::string& v) = 0;
  virtual Step step() = 0;
  virtual std::int64_t i64(int col) = 0;
  virtual double dbl(int col) = 0;
  virtual std::string str(int col) = 0;
  // Rows changed by the statement once it ran (UPDATE, DELETE, INSERT).
  virtual std::int64_t changes() = 0;
  virtual std::string errmsg() const = 0;
};

// A connection of one flexcod (SQLite: exclusive, open() takes the flock).
class Conn {
 public:
  virtual ~Conn() = default;
  // "sqlite" or "postgresql"
  virtual const char* kind() const = 0;
  virtual std::unique_ptr<Stmt> prepare(const std::string& sql, const Failure& fail) = 0;
  // Statements without parameters, ';'-separated; false and the message.
  virtual bool exec(const std::string& sql, std::string* error) = 0;
  // A write transaction: taken at begin (SQLite's BEGIN IMMEDIATE), so two
  // writers are ordered at their start; every row write of a transaction
  // commits or none does.
  virtual bool begin(std::string* error) = 0;
  virtual bool commit(std::string* error) = 0;
  virtual void rollback() = 0;
  // Whether `table` has a column `column` (migrations).
  virtual bool has_column(const std::string& table, const std::string& column, bool* has,
                          std::string* error) = 0;
  // The portable schema (store.cpp's kSchema: SQLite's spelling) in this
  // dialect: "INTEGER PRIMARY KEY AUTOINCREMENT" ids, 64-bit INTEGER, REAL.
  virtual std::string dialect(const std::string& schema) const = 0;
  // The database's last error message.
  virtual std::string errmsg() const = 0;
  // An SQL expression of the database's clock in milliseconds since the
  // epoch (the lease's time, flexcod/lease.hpp: one clock for every
  // instance).
  virtual const char* now_ms_sql() const = 0;
  // What ends a SELECT of a row that another transaction must not change
  // until this one ends: " FOR SHARE" (PostgreSQL; SQLite's write
  // transactions are exclusive already, "").
  virtual const char* share_lock_sql() const = 0;
  virtual const char* update_lock_sql() const = 0;
  // Schema creation and migration by one process at a time (PostgreSQL: a
  // session advisory lock, waited for; SQLite: the file's flock does it).
  virtual bool lock_schema(bool take, std::string* error) = 0;
};

// SQLite: the file at `path` (made owner-only; flock()ed so that one
// flexcod uses it).  nullptr and *error on failure.
std::unique_ptr<Conn> open_sqlite(const std::string& path, std::string* error);

// PostgreSQL: libpq's `conninfo` (with `passfile`, "" = libpq's default,
// when given).  Several flexcods may use one database: the lease row
// (flexcod/lease.hpp) says which one acts.  nullptr and *error on failure.
std::unique_ptr<Conn> open_postgresql(const std::string& conninfo, const std::string& passfile,
                                      std::string* error);

// The conninfo with any password's value replaced by "***", for logs.
std::string redact_conninfo(const std::string& conninfo);

// Whether a libpq conninfo (key=value words or a postgresql:// URI) sets
// a password.
bool conninfo_has_password(const std::string& conninfo);

}  // namespace db
}  // namespace flexcod

#endif
