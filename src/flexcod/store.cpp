// SPDX-License-Identifier: GPL-2.0-or-later
// store.cpp - see store.hpp.

#include "flexcod/store.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <utility>

#include "core/strings.hpp"
#include "flexcod/db.hpp"
#include "flexcod/states.hpp"

namespace flexcod {

namespace {

// n random bytes from getrandom as 2n lower-case hex digits appended to
// *out; false if the kernel gave fewer.
bool random_hex(std::size_t n, std::string* out) {
  unsigned char r[16];
  if (n > sizeof r || getrandom(r, n, 0) != static_cast<ssize_t>(n)) return false;
  static const char* hex = "0123456789abcdef";
  for (std::size_t i = 0; i < n; i++) {
    *out += hex[r[i] >> 4];
    *out += hex[r[i] & 15];
  }
  return true;
}

// The schema in SQLite's spelling; db::Conn::dialect() makes PostgreSQL's
// (db.hpp).  kSchemaVersion: what a database made by it, or migrated by
// Store::migrate(), holds as meta's 'schema'.
const char* const kSchemaVersion = "7";
const char* kSchema =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS coallocations("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, uid INTEGER NOT NULL, \"user\" TEXT NOT NULL,"
    " version INTEGER NOT NULL DEFAULT 1,"
    " state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', policy TEXT NOT NULL,"
    " nodes INTEGER NOT NULL, duration INTEGER NOT NULL, run_time INTEGER NOT NULL DEFAULT 0,"
    " overhead REAL NOT NULL DEFAULT 0, ready INTEGER NOT NULL, deadline INTEGER NOT NULL DEFAULT 0,"
    " clusters TEXT NOT NULL, max_parts INTEGER NOT NULL, request TEXT NOT NULL,"
    " submitted INTEGER NOT NULL, changed INTEGER NOT NULL,"
    " planned_start INTEGER NOT NULL DEFAULT 0, planned_end INTEGER NOT NULL DEFAULT 0,"
    " moves INTEGER NOT NULL DEFAULT 0, attempt INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS parts("
    " co_id INTEGER NOT NULL REFERENCES coallocations(id), attempt INTEGER NOT NULL,"
    " idx INTEGER NOT NULL, cluster TEXT NOT NULL, nodes INTEGER NOT NULL, state TEXT NOT NULL,"
    " version INTEGER NOT NULL DEFAULT 1,"
    " reason TEXT NOT NULL DEFAULT '', resv_key TEXT NOT NULL DEFAULT '',"
    " reservation_id INTEGER NOT NULL DEFAULT 0, reservation TEXT NOT NULL DEFAULT '',"
    " node_list TEXT NOT NULL DEFAULT '', job_key TEXT NOT NULL DEFAULT '',"
    " job_id INTEGER NOT NULL DEFAULT 0, job_state TEXT NOT NULL DEFAULT '',"
    " planned_start INTEGER NOT NULL DEFAULT 0, planned_end INTEGER NOT NULL DEFAULT 0,"
    " actual_start INTEGER NOT NULL DEFAULT 0, actual_end INTEGER NOT NULL DEFAULT 0,"
    " exit_code INTEGER NOT NULL DEFAULT -1, current INTEGER NOT NULL DEFAULT 1,"
    " slurm_partition TEXT NOT NULL DEFAULT '', slurm_account TEXT NOT NULL DEFAULT '',"
    " slurm_qos TEXT NOT NULL DEFAULT '',"
    " lease_end INTEGER NOT NULL DEFAULT 0, start_confirmed INTEGER NOT NULL DEFAULT 0,"
    " clock_shift INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(co_id, attempt, idx));"
    "CREATE INDEX IF NOT EXISTS parts_state ON parts(state);"
    "CREATE INDEX IF NOT EXISTS coallocations_state ON coallocations(state);"
    "CREATE TABLE IF NOT EXISTS transitions("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, co_id INTEGER NOT NULL, time INTEGER NOT NULL,"
    " what TEXT NOT NULL, from_state TEXT NOT NULL, to_state TEXT NOT NULL, reason TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS transitions_co ON transitions(co_id);"
    "CREATE TABLE IF NOT EXISTS moves("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, co_id INTEGER NOT NULL, time INTEGER NOT NULL,"
    " kind TEXT NOT NULL, from_start INTEGER, to_start INTEGER, from_end INTEGER, to_end INTEGER,"
    " from_parts TEXT, to_parts TEXT, reason TEXT);"
    "CREATE TABLE IF NOT EXISTS cluster_seq(name TEXT PRIMARY KEY, seq INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS submit_keys("
    " uid INTEGER NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL,"
    " co_id INTEGER NOT NULL, created INTEGER NOT NULL, PRIMARY KEY(uid, key));";

// A statement of the store's connection (db.hpp) with positional binds.
// A statement that cannot be prepared, or whose step fails, is reported
// to `fail` (Store's failure handler, store.hpp): a read that stops early
// would look like a shorter list, and a write that did not happen like one
// that did.
class Stmt {
 public:
  Stmt(const std::unique_ptr<db::Conn>& db, const Store::Failure& fail, const std::string& sql)
      : st_(db->prepare(sql, fail)) {}
  bool ok() const { return st_->ok(); }
  Stmt& bind(std::int64_t v) {
    st_->bind_i64(v);
    return *this;
  }
  Stmt& bind(int v) { return bind(static_cast<std::int64_t>(v)); }
  Stmt& bind(double v) {
    st_->bind_dbl(v);
    return *this;
  }
  Stmt& bind(const std::string& v) {
    st_->bind_text(v);
    return *this;
  }
  db::Step step() { return st_->step(); }
  std::int64_t i64(int col) { return st_->i64(col); }
  double dbl(int col) { return st_->dbl(col); }
  std::string str(int col) { return st_->str(col); }
  std::int64_t changes() { return st_->changes(); }
  std::string errmsg() const { return st_->errmsg(); }

 private:
  std::unique_ptr<db::Stmt> st_;
};

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ',';
    out += s;
  }
  return out;
}

// A stored list: "" is the empty list, not one empty item.
std::vector<std::string> split(const std::string& s) {
  if (s.empty()) return {};
  return flexco::split_commas(s);
}

const char* kCoCols =
    "id, uid, \"user\", state, reason, policy, nodes, duration, run_time, overhead, ready, deadline,"
    " clusters, max_parts, request, submitted, changed, planned_start, planned_end, moves, attempt,"
    " version";

CoRecord read_co(Stmt& s) {
  CoRecord c;
  int i = 0;
  c.id = s.i64(i++);
  c.uid = s.i64(i++);
  c.user = s.str(i++);
  c.state = s.str(i++);
  c.reason = s.str(i++);
  c.policy = s.str(i++);
  c.nodes = s.i64(i++);
  c.duration = s.i64(i++);
  c.run_time = s.i64(i++);
  c.overhead = s.dbl(i++);
  c.ready = s.i64(i++);
  c.deadline = s.i64(i++);
  c.clusters = split(s.str(i++));
  c.max_parts = static_cast<int>(s.i64(i++));
  c.request = s.str(i++);
  c.submitted = s.i64(i++);
  c.changed = s.i64(i++);
  c.planned_start = s.i64(i++);
  c.planned_end = s.i64(i++);
  c.moves = static_cast<int>(s.i64(i++));
  c.attempt = static_cast<int>(s.i64(i++));
  c.version = s.i64(i++);
  return c;
}

const char* kPartCols =
    "co_id, attempt, idx, version, cluster, nodes, state, reason, resv_key, reservation_id, reservation,"
    " node_list, job_key, job_id, job_state, planned_start, planned_end, actual_start, actual_end,"
    " exit_code, current, slurm_partition, slurm_account, slurm_qos, lease_end, start_confirmed, clock_shift";

PartRecord read_part(Stmt& s) {
  PartRecord p;
  int i = 0;
  p.co_id = s.i64(i++);
  p.attempt = static_cast<int>(s.i64(i++));
  p.idx = static_cast<int>(s.i64(i++));
  p.version = s.i64(i++);
  p.cluster = s.str(i++);
  p.nodes = s.i64(i++);
  p.state = s.str(i++);
  p.reason = s.str(i++);
  p.resv_key = s.str(i++);
  p.reservation_id = s.i64(i++);
  p.reservation = s.str(i++);
  p.node_list = s.str(i++);
  p.job_key = s.str(i++);
  p.job_id = s.i64(i++);
  p.job_state = s.str(i++);
  p.planned_start = s.i64(i++);
  p.planned_end = s.i64(i++);
  p.actual_start = s.i64(i++);
  p.actual_end = s.i64(i++);
  p.exit_code = static_cast<int>(s.i64(i++));
  p.current = s.i64(i++) != 0;
  p.partition = s.str(i++);
  p.account = s.str(i++);
  p.qos = s.str(i++);
  p.lease_end = s.i64(i++);
  p.start_confirmed = s.i64(i++) != 0;
  p.clock_shift = s.i64(i++);
  return p;
}

std::string in_list(const std::vector<std::string>& states) {
  std::string q = "(";
  for (std::size_t i = 0; i < states.size(); ++i) q += i ? ",?" : "?";
  return q + ")";
}

// A write transaction of the store's connection (db::Conn::begin: BEGIN
// IMMEDIATE in SQLite), rolled back unless commit() was called.  A BEGIN
// or COMMIT that fails is reported to `fail` as a Stmt's is.
//
// Fencing (doc/flexcod.md, "High availability"): once the store has a
// fence (Store::set_fence, the lease this flexcod holds), every write
// transaction first reads the lease row and keeps it from changing until
// it ends (PostgreSQL: FOR SHARE); a row that no longer names this holder
// at this epoch means another flexcod took over, and nothing is written:
// the transaction is not ok and the fence's `lost` is told.  So a write
// either commits before a takeover changes the row (and the new holder's
// recovery reads it) or is refused.
class Txn {
 public:
  Txn(const std::unique_ptr<db::Conn>& db, const Store::Failure& fail, const Store::Fence& fence)
      : db_(*db), fail_(fail) {
    std::string why;
    ok_ = db_.begin(&why);
    if (!ok_) {
      if (fail_) fail_(why);
      return;
    }
    if (fence.epoch <= 0) return;
    const std::string sql = std::string("SELECT epoch FROM lease WHERE id=1 AND holder=? AND epoch=?") +
                            db_.share_lock_sql();
    Stmt q(db, fail, sql);
    q.bind(fence.holder).bind(fence.epoch);
    if (q.step() == db::kRow) return;
    db_.rollback();
    ok_ = false;
    if (fence.lost) {
      fence.lost("the lease row no longer names this flexcod at epoch " +
                 std::to_string(fence.epoch) + ": another flexcod took over, nothing written");
    }
  }
  ~Txn() {
    if (ok_ && !done_) db_.rollback();
  }
  bool ok() const { return ok_; }
  bool commit(std::string* error) {
    std::string why;
    if (!db_.commit(&why)) {
      if (error) *error = why;
      if (fail_) fail_(why);
      return false;
    }
    done_ = true;
    return true;
  }

 private:
  db::Conn& db_;
  const Store::Failure& fail_;
  bool ok_ = false;
  bool done_ = false;
};

}  // namespace

std::int64_t now_seconds() { return static_cast<std::int64_t>(std::time(nullptr)); }

std::unique_ptr<Store> Store::open(const std::string& path, std::string* error) {
  Location loc;
  loc.path = path;
  return open(loc, error);
}

std::unique_ptr<Store> Store::open(const Location& loc, std::string* error) {
  const bool pg = loc.type == "postgresql";
  if (!pg && loc.type != "sqlite") {
    *error = "StorageType " + loc.type + ": not sqlite or postgresql";
    return nullptr;
  }
  const std::string shown = pg ? db::redact_conninfo(loc.path) : loc.path;
  auto conn = pg ? db::open_postgresql(loc.path, loc.passfile, error) : db::open_sqlite(loc.path, error);
  if (!conn) return nullptr;
  auto s = std::make_unique<Store>(Token{}, std::move(conn));
  // Two flexcods starting at once on one PostgreSQL database: one makes or
  // migrates the schema, the other waits and finds it made.
  if (!s->db_->lock_schema(true, error)) {
    *error = shown + ": " + *error;
    return nullptr;
  }
  struct Unlock {
    db::Conn* c;
    ~Unlock() {
      std::string ignored;
      c->lock_schema(false, &ignored);
    }
  } unlock{s->db_.get()};
  if (!s->exec(s->db_->dialect(kSchema).c_str(), error)) {
    *error = shown + ": " + *error;
    return nullptr;
  }
  {
    Stmt q(s->db_, s->fail_, "SELECT value FROM meta WHERE key='instance'");
    if (q.step() == db::kRow) s->instance_ = q.str(0);
  }
  // instance: made with the database; run: made at every open (store.hpp)
  const bool fresh = s->instance_.empty();
  if (!random_hex(4, &s->run_) || (fresh && !random_hex(8, &s->instance_))) {
    *error = "getrandom failed";
    return nullptr;
  }
  if (!s->migrate(error)) {
    *error = shown + ": " + *error;
    return nullptr;
  }
  if (fresh) {
    Stmt ins(s->db_, s->fail_, "INSERT INTO meta(key, value) VALUES('instance', ?), ('schema', ?)");
    ins.bind(s->instance_).bind(std::string(kSchemaVersion));
    if (ins.step() != db::kDone) {
      *error = shown + ": " + ins.errmsg();
      return nullptr;
    }
  }
  return s;
}

Store::Store(Token, std::unique_ptr<db::Conn> db) : db_(std::move(db)) {}

Store::~Store() = default;

const char* Store::kind() const { return db_->kind(); }

std::string Store::schema_version() {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt q(db_, fail_, "SELECT value FROM meta WHERE key='schema'");
  return q.step() == db::kRow ? q.str(0) : std::string();
}

// The migrations, the same for both backends, each in one transaction
// with its schema mark, each made only where its column is missing (a
// database made by kSchema has them all):
//  - schema 2 (issue 17) added the parts' Slurm partition, account and
//    QOS, empty (the cluster's default, as those parts were made);
//  - schema 3 (issue 38 §2.2) the parts' start leases, none for the
//    parts there were;
//  - schema 4 (issue 39 §1) the rows' version (compare-and-set,
//    store.hpp), 1 for the rows there were;
//  - schema 5 the parts' clock shift (doc/flexcod.md, "Clocks"), 0 (no
//    translation) for the parts there were;
//  - schema 6 the start-up rendezvous' table (a part's token hash and its
//    registration), empty.  kSchema does not make it: this step does, for
//    a fresh database too, so that it marks an older one migrated;
//  - schema 7 the lease (flexcod/lease.hpp): one row, held by nobody
//    (made by this step likewise).
bool Store::migrate(std::string* error) {
  struct Step {
    const char* table;
    const char* column;
    const char* sql;
  };
  static const Step kSteps[] = {
      {"parts", "slurm_partition",
       "ALTER TABLE parts ADD COLUMN slurm_partition TEXT NOT NULL DEFAULT '';"
       "ALTER TABLE parts ADD COLUMN slurm_account TEXT NOT NULL DEFAULT '';"
       "ALTER TABLE parts ADD COLUMN slurm_qos TEXT NOT NULL DEFAULT '';"
       "UPDATE meta SET value='2' WHERE key='schema';"},
      {"parts", "lease_end",
       "ALTER TABLE parts ADD COLUMN lease_end INTEGER NOT NULL DEFAULT 0;"
       "ALTER TABLE parts ADD COLUMN start_confirmed INTEGER NOT NULL DEFAULT 0;"
       "UPDATE meta SET value='3' WHERE key='schema';"},
      {"coallocations", "version",
       "ALTER TABLE coallocations ADD COLUMN version INTEGER NOT NULL DEFAULT 1;"
       "ALTER TABLE parts ADD COLUMN version INTEGER NOT NULL DEFAULT 1;"
       "UPDATE meta SET value='4' WHERE key='schema';"},
      {"parts", "clock_shift",
       "ALTER TABLE parts ADD COLUMN clock_shift INTEGER NOT NULL DEFAULT 0;"
       "UPDATE meta SET value='5' WHERE key='schema';"},
      {"rendezvous", "token_hash",
       "CREATE TABLE rendezvous("
       " co_id INTEGER NOT NULL, attempt INTEGER NOT NULL, idx INTEGER NOT NULL,"
       " token_hash TEXT NOT NULL, registered INTEGER NOT NULL DEFAULT 0,"
       " contact TEXT NOT NULL DEFAULT '', nodes TEXT NOT NULL DEFAULT '',"
       " ranks INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(co_id, attempt, idx));"
       "CREATE UNIQUE INDEX rendezvous_token ON rendezvous(token_hash);"
       "UPDATE meta SET value='6' WHERE key='schema';"},
      {"lease", "holder",
       "CREATE TABLE lease(id INTEGER PRIMARY KEY, holder TEXT NOT NULL, address TEXT NOT NULL,"
       " epoch INTEGER NOT NULL, expires INTEGER NOT NULL, takeovers INTEGER NOT NULL);"
       "INSERT INTO lease(id, holder, address, epoch, expires, takeovers) VALUES(1, '', '', 0, 0, 0);"
       "UPDATE meta SET value='7' WHERE key='schema';"},
  };
  for (const Step& step : kSteps) {
    bool has = false;
    if (!db_->has_column(step.table, step.column, &has, error)) return false;
    if (has) continue;
    if (!db_->begin(error)) return false;
    if (!exec(db_->dialect(step.sql).c_str(), error) || !db_->commit(error)) {
      db_->rollback();
      return false;
    }
  }
  return true;
}

bool Store::exec(const char* sql, std::string* error) {
  return db_->exec(sql, error);
}

bool Store::add_transition(std::int64_t co_id, const std::string& what, const std::string& from,
                           const std::string& to, const std::string& reason, std::string* error) {
  Stmt s(db_, fail_,
         "INSERT INTO transitions(co_id, time, what, from_state, to_state, reason)"
         " VALUES(?,?,?,?,?,?)");
  s.bind(co_id).bind(now_seconds()).bind(what).bind(from).bind(to).bind(reason);
  if (s.step() != db::kDone) {
    if (error) *error = "transition: " + s.errmsg();
    return false;
  }
  return true;
}

bool Store::put_co(const CoRecord& c, std::string* error) {
  Stmt s(db_, fail_,
         "UPDATE coallocations SET uid=?, \"user\"=?, state=?, reason=?, policy=?, nodes=?, duration=?,"
         " run_time=?, overhead=?, ready=?, deadline=?, clusters=?, max_parts=?, request=?,"
         " submitted=?, changed=?, planned_start=?, planned_end=?, moves=?, attempt=?,"
         " version=version+1 WHERE id=? AND version=?");
  s.bind(c.uid).bind(c.user).bind(c.state).bind(c.reason).bind(c.policy).bind(c.nodes)
      .bind(c.duration).bind(c.run_time).bind(c.overhead).bind(c.ready).bind(c.deadline)
      .bind(join(c.clusters)).bind(c.max_parts).bind(c.request).bind(c.submitted)
      .bind(now_seconds()).bind(c.planned_start).bind(c.planned_end).bind(c.moves)
      .bind(c.attempt).bind(c.id).bind(c.version);
  if (s.step() != db::kDone) {
    if (error) *error = "update coallocation: " + s.errmsg();
    return false;
  }
  if (s.changes() != 1) {
    if (error) *error = conflict_co(c.id);
    return false;
  }
  return true;
}

bool Store::put_part(const PartRecord& p, std::string* error) {
  // Replaced as SQLite's INSERT OR REPLACE did, where the version read
  // still stands (a new part: none); its version one more.
  {
    Stmt d(db_, fail_, "DELETE FROM parts WHERE co_id=? AND attempt=? AND idx=? AND version=?");
    d.bind(p.co_id).bind(p.attempt).bind(p.idx).bind(p.version);
    if (d.step() != db::kDone) {
      if (error) *error = "write part: " + d.errmsg();
      return false;
    }
    if (d.changes() != (p.version == 0 ? 0 : 1)) {
      if (error) *error = conflict_part(p);
      return false;
    }
  }
  Stmt s(db_, fail_,
         "INSERT INTO parts(co_id, attempt, idx, cluster, nodes, state, reason, resv_key,"
         " reservation_id, reservation, node_list, job_key, job_id, job_state, planned_start,"
         " planned_end, actual_start, actual_end, exit_code, current, slurm_partition,"
         " slurm_account, slurm_qos, lease_end, start_confirmed, clock_shift)"
         " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(p.co_id).bind(p.attempt).bind(p.idx).bind(p.cluster).bind(p.nodes).bind(p.state)
      .bind(p.reason).bind(p.resv_key).bind(p.reservation_id).bind(p.reservation)
      .bind(p.node_list).bind(p.job_key).bind(p.job_id).bind(p.job_state).bind(p.planned_start)
      .bind(p.planned_end).bind(p.actual_start).bind(p.actual_end).bind(p.exit_code)
      .bind(p.current ? 1 : 0).bind(p.partition).bind(p.account).bind(p.qos)
      .bind(p.lease_end).bind(p.start_confirmed ? 1 : 0).bind(p.clock_shift);
  if (s.step() != db::kDone) {
    if (error) *error = "write part: " + s.errmsg();
    return false;
  }
  Stmt v(db_, fail_, "UPDATE parts SET version=? WHERE co_id=? AND attempt=? AND idx=?");
  v.bind(p.version + 1).bind(p.co_id).bind(p.attempt).bind(p.idx);
  if (v.step() != db::kDone) {
    if (error) *error = "write part: " + v.errmsg();
    return false;
  }
  return true;
}

std::optional<CoRecord> Store::get_co_locked(std::int64_t id) {
  Stmt s(db_, fail_, (std::string("SELECT ") + kCoCols + " FROM coallocations WHERE id=?").c_str());
  s.bind(id);
  if (s.step() != db::kRow) return std::nullopt;
  return read_co(s);
}

std::optional<PartRecord> Store::get_part_locked(std::int64_t co, int attempt, int idx) {
  Stmt s(db_, fail_, (std::string("SELECT ") + kPartCols +
               " FROM parts WHERE co_id=? AND attempt=? AND idx=?").c_str());
  s.bind(co).bind(attempt).bind(idx);
  if (s.step() != db::kRow) return std::nullopt;
  return read_part(s);
}

std::optional<SubmitKey> Store::find_key_locked(std::int64_t uid, const std::string& key,
                                                std::int64_t now) {
  Stmt s(db_, fail_, "SELECT digest, co_id, created FROM submit_keys WHERE uid=? AND key=? AND created>?");
  s.bind(uid).bind(key).bind(now - kSubmitKeyKeep);
  if (s.step() != db::kRow) return std::nullopt;
  SubmitKey k;
  k.digest = s.str(0);
  k.co_id = s.i64(1);
  k.created = s.i64(2);
  return k;
}

std::optional<SubmitKey> Store::find_key(std::int64_t uid, const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_key_locked(uid, key, now_seconds());
}

bool Store::insert_coalloc(CoRecord* c, const std::string& reason, std::string* error,
                           const std::string& key, const std::string& digest,
                           std::optional<SubmitKey>* taken, const UserCap* cap,
                           std::string* capped) {
  std::lock_guard<std::mutex> lock(mutex_);
  Txn t(db_, fail_, fence_);
  if (!t.ok()) {
    *error = std::string("begin: ") + db_->errmsg();
    return false;
  }
  const std::int64_t now = now_seconds();
  if (!key.empty()) {
    // Under the store's mutex and in the transaction: of two requests with
    // the same key, exactly one inserts; the other gets the first's record.
    if (auto k = find_key_locked(c->uid, key, now)) {
      *taken = std::move(k);
      return true;
    }
    Stmt del(db_, fail_, "DELETE FROM submit_keys WHERE created<=?");
    del.bind(now - kSubmitKeyKeep);
    if (del.step() != db::kDone) {
      *error = "submit_keys: " + del.errmsg();
      return false;
    }
  }
  if (cap != nullptr && (cap->max_live > 0 || cap->max_node_seconds > 0)) {
    Stmt q(db_, fail_,
           "SELECT COUNT(*), COALESCE(SUM(nodes * duration), 0) FROM coallocations"
           " WHERE uid=? AND state NOT IN ('completed','failed','cancelled')");
    q.bind(c->uid);
    if (q.step() != db::kRow) {
      *error = "user limits: " + q.errmsg();
      return false;
    }
    const std::int64_t live = q.i64(0), used = q.i64(1), asked = c->nodes * c->duration;
    std::string why;
    if (cap->max_live > 0 && live + 1 > cap->max_live) {
      why = c->user + " has " + std::to_string(live) +
            " co-allocations that have not ended, MaxCoallocationsPerUser=" +
            std::to_string(cap->max_live);
    } else if (cap->max_node_seconds > 0 && used + asked > cap->max_node_seconds) {
      why = c->user + " holds " + std::to_string(used / 3600) + " node-hours in co-allocations that " +
            "have not ended, and this one asks for " + std::to_string((asked + 3599) / 3600) +
            ": MaxNodeHoursPerUser=" + std::to_string(cap->max_node_seconds / 3600);
    }
    if (!why.empty()) {
      error->clear();
      if (capped) *capped = why;
      return false;
    }
  }
  Stmt s(db_, fail_,
         "INSERT INTO coallocations(uid, \"user\", state, reason, policy, nodes, duration, run_time,"
         " overhead, ready, deadline, clusters, max_parts, request, submitted, changed)"
         " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id");
  s.bind(c->uid).bind(c->user).bind(c->state).bind(c->reason).bind(c->policy).bind(c->nodes)
      .bind(c->duration).bind(c->run_time).bind(c->overhead).bind(c->ready).bind(c->deadline)
      .bind(join(c->clusters)).bind(c->max_parts).bind(c->request).bind(now).bind(now);
  if (s.step() != db::kRow) {
    *error = "insert coallocation: " + s.errmsg();
    return false;
  }
  c->id = s.i64(0);
  if (s.step() != db::kDone) {  // RETURNING's statement ends after its row
    *error = "insert coallocation: " + s.errmsg();
    return false;
  }
  c->version = 1;
  c->submitted = c->changed = now;
  if (!add_transition(c->id, "coallocation", "", c->state, reason, error)) return false;
  if (!key.empty()) {
    Stmt k(db_, fail_, "INSERT INTO submit_keys(uid, key, digest, co_id, created) VALUES(?,?,?,?,?)"
                       " ON CONFLICT(uid, key) DO UPDATE SET digest=excluded.digest,"
                       " co_id=excluded.co_id, created=excluded.created");
    k.bind(c->uid).bind(key).bind(digest).bind(c->id).bind(now);
    if (k.step() != db::kDone) {
      *error = "submit_keys: " + k.errmsg();
      return false;
    }
  }
  return t.commit(error);
}

bool Store::update_coalloc(CoRecord& c, const std::string& reason, std::string* error) {
  return write(c, {}, reason, error);
}

bool Store::is_conflict(const std::string& error) {
  return error.compare(0, std::strlen(kConflict), kConflict) == 0;
}

// A conflict's text, counted and told to the conflict handler (under the
// mutex, as every write).
std::string Store::conflict_co(std::int64_t id) {
  return note_conflict_locked(std::string(kConflict) + "co-" + std::to_string(id) +
                              " was written by another writer since it was read: not written");
}

std::string Store::conflict_part(const PartRecord& p) {
  return note_conflict_locked(std::string(kConflict) + "co-" + std::to_string(p.co_id) + " part " +
                              std::to_string(p.idx) + " (attempt " + std::to_string(p.attempt) +
                              ") was written by another writer since it was read: not written");
}

std::string Store::note_conflict_locked(std::string what) {
  ++conflicts_;
  if (conflict_) conflict_(what);
  return what;
}

std::int64_t Store::conflicts() {
  std::lock_guard<std::mutex> lock(mutex_);
  return conflicts_;
}

bool Store::write(CoRecord& c, std::vector<PartRecord>& parts, const std::string& reason,
                  std::string* error, const MoveRecord* move) {
  std::lock_guard<std::mutex> lock(mutex_);
  Txn t(db_, fail_, fence_);
  if (!t.ok()) {
    *error = std::string("begin: ") + db_->errmsg();
    return false;
  }
  auto old = get_co_locked(c.id);
  if (!old) {
    *error = "no co-allocation " + std::to_string(c.id);
    return false;
  }
  if (!may_overwrite(*old, c)) {
    *error = "co-" + std::to_string(c.id) + " is " + old->state + " in the database: not written " +
             c.state + " over it";
    return false;
  }
  for (const auto& p : parts) {
    auto before = get_part_locked(p.co_id, p.attempt, p.idx);
    if (before && !may_overwrite(*before, p)) {
      *error = "co-" + std::to_string(p.co_id) + " part " + std::to_string(p.idx) + " is " +
               before->state + " in the database: not written " + p.state + " over it";
      return false;
    }
  }
  // Compare-and-set (store.hpp): every row as the caller read it.
  if (old->version != c.version) {
    *error = conflict_co(c.id);
    return false;
  }
  for (const auto& p : parts) {
    auto before = get_part_locked(p.co_id, p.attempt, p.idx);
    if ((before ? before->version : 0) != p.version) {
      *error = conflict_part(p);
      return false;
    }
  }
  note_write_locked(c.id);
  for (const auto& p : parts) {
    if (p.co_id != c.id) note_write_locked(p.co_id);
  }
  if (!put_co(c, error)) return false;
  if (old->state != c.state &&
      !add_transition(c.id, "coallocation", old->state, c.state, reason, error)) {
    return false;
  }
  for (const auto& p : parts) {
    auto before = get_part_locked(p.co_id, p.attempt, p.idx);
    if (!put_part(p, error)) return false;
    if ((!before || before->state != p.state) &&
        !add_transition(p.co_id, "part " + std::to_string(p.idx) + " (attempt " +
                                     std::to_string(p.attempt) + ", " + p.cluster + ")",
                        before ? before->state : "", p.state,
                        p.reason.empty() ? reason : p.reason, error)) {
      return false;
    }
  }
  if (move != nullptr && !insert_move(c.id, *move, error)) return false;
  if (!t.commit(error)) return false;
  ++c.version;
  for (auto& p : parts) ++p.version;
  return true;
}

bool Store::update_part(PartRecord& p, const std::string& reason, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Txn t(db_, fail_, fence_);
  if (!t.ok()) {
    *error = std::string("begin: ") + db_->errmsg();
    return false;
  }
  auto before = get_part_locked(p.co_id, p.attempt, p.idx);
  if (before && !may_overwrite(*before, p)) {
    *error = "co-" + std::to_string(p.co_id) + " part " + std::to_string(p.idx) + " is " +
             before->state + " in the database: not written " + p.state + " over it";
    return false;
  }
  if ((before ? before->version : 0) != p.version) {
    *error = conflict_part(p);
    return false;
  }
  note_write_locked(p.co_id);
  if (!put_part(p, error)) return false;
  if ((!before || before->state != p.state) &&
      !add_transition(p.co_id, "part " + std::to_string(p.idx) + " (attempt " +
                                   std::to_string(p.attempt) + ", " + p.cluster + ")",
                      before ? before->state : "", p.state, reason, error)) {
    return false;
  }
  if (!t.commit(error)) return false;
  ++p.version;
  return true;
}

std::optional<CoRecord> Store::get_coalloc(std::int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return get_co_locked(id);
}

std::vector<CoRecord> Store::list_coallocs(std::int64_t uid, const std::string& state, int limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string sql = std::string("SELECT ") + kCoCols + " FROM coallocations WHERE 1=1";
  if (uid >= 0) sql += " AND uid=?";
  if (state == "active") {
    sql += " AND state NOT IN ('completed','failed','cancelled')";
  } else if (!state.empty()) {
    sql += " AND state=?";
  }
  sql += " ORDER BY id DESC LIMIT ?";
  Stmt s(db_, fail_, sql.c_str());
  if (uid >= 0) s.bind(uid);
  if (!state.empty() && state != "active") s.bind(state);
  s.bind(limit);
  std::vector<CoRecord> out;
  while (s.step() == db::kRow) out.push_back(read_co(s));
  return out;
}

std::vector<CoRecord> Store::in_states(const std::vector<std::string>& states) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_, (std::string("SELECT ") + kCoCols + " FROM coallocations WHERE state IN " +
               in_list(states) + " ORDER BY id").c_str());
  for (const auto& st : states) s.bind(st);
  std::vector<CoRecord> out;
  while (s.step() == db::kRow) out.push_back(read_co(s));
  return out;
}

std::vector<PartRecord> Store::parts(std::int64_t co_id, bool current_only) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_, (std::string("SELECT ") + kPartCols + " FROM parts WHERE co_id=?" +
               (current_only ? " AND current=1" : "") + " ORDER BY attempt, idx").c_str());
  s.bind(co_id);
  std::vector<PartRecord> out;
  while (s.step() == db::kRow) out.push_back(read_part(s));
  return out;
}

void Store::note_write_locked(std::int64_t co_id) {
  // Noted before the write, whether it is committed or not (a write that
  // fails only makes a pass read that co-allocation again).
  ++writes_;
  if (written_.size() >= kWrittenKeep) {
    written_.clear();
    floor_ = writes_;
  }
  written_[co_id] = writes_;
}

bool Store::written_since(std::int64_t co_id, std::uint64_t mark) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (mark == writes_) return false;
  if (mark < floor_) return true;
  auto it = written_.find(co_id);
  return it != written_.end() && it->second > mark;
}

Store::Snapshot Store::snapshot(const std::vector<std::string>& states) {
  std::lock_guard<std::mutex> lock(mutex_);
  Snapshot snap;
  snap.mark = writes_;
  {
    Stmt s(db_, fail_, (std::string("SELECT ") + kCoCols + " FROM coallocations WHERE state IN " +
                 in_list(states) + " ORDER BY id").c_str());
    for (const auto& st : states) s.bind(st);
    while (s.step() == db::kRow) snap.cos.push_back(read_co(s));
  }
  std::string cols;
  for (const std::string& c : split(kPartCols)) cols += (cols.empty() ? "p." : ", p.") + c.substr(c.find_first_not_of(' '));
  Stmt s(db_, fail_, ("SELECT " + cols + " FROM parts p JOIN coallocations c ON c.id = p.co_id"
               " WHERE p.current=1 AND c.state IN " + in_list(states) +
               " ORDER BY p.co_id, p.attempt, p.idx").c_str());
  for (const auto& st : states) s.bind(st);
  while (s.step() == db::kRow) {
    PartRecord p = read_part(s);
    snap.parts[p.co_id].push_back(std::move(p));
  }
  return snap;
}

std::vector<PartRecord> Store::parts_in_states(const std::vector<std::string>& states) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_, (std::string("SELECT ") + kPartCols + " FROM parts WHERE state IN " +
               in_list(states) + " ORDER BY co_id, attempt, idx").c_str());
  for (const auto& st : states) s.bind(st);
  std::vector<PartRecord> out;
  while (s.step() == db::kRow) out.push_back(read_part(s));
  return out;
}

std::vector<std::int64_t> Store::with_part_on(const std::string& cluster,
                                             const std::vector<std::string>& states) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_, (std::string("SELECT DISTINCT p.co_id FROM parts p JOIN coallocations c"
                           " ON c.id = p.co_id WHERE p.current=1 AND p.cluster=? AND c.state IN ") +
               in_list(states) + " ORDER BY p.co_id").c_str());
  s.bind(cluster);
  for (const auto& st : states) s.bind(st);
  std::vector<std::int64_t> out;
  while (s.step() == db::kRow) out.push_back(s.i64(0));
  return out;
}

std::vector<Transition> Store::transitions(std::int64_t co_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_,
         "SELECT time, what, from_state, to_state, reason FROM transitions WHERE co_id=? ORDER BY id");
  s.bind(co_id);
  std::vector<Transition> out;
  while (s.step() == db::kRow) {
    out.push_back(Transition{s.i64(0), s.str(1), s.str(2), s.str(3), s.str(4)});
  }
  return out;
}

bool Store::add_move(std::int64_t co_id, const MoveRecord& m, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Txn t(db_, fail_, fence_);
  if (!t.ok()) {
    *error = "begin: not written";
    return false;
  }
  return insert_move(co_id, m, error) && t.commit(error);
}

bool Store::insert_move(std::int64_t co_id, const MoveRecord& m, std::string* error) {
  Stmt s(db_, fail_,
         "INSERT INTO moves(co_id, time, kind, from_start, to_start, from_end, to_end, from_parts,"
         " to_parts, reason) VALUES(?,?,?,?,?,?,?,?,?,?)");
  s.bind(co_id).bind(m.time).bind(m.kind).bind(m.from_start).bind(m.to_start).bind(m.from_end)
      .bind(m.to_end).bind(m.from_parts).bind(m.to_parts).bind(m.reason);
  if (s.step() != db::kDone) {
    *error = "insert move: " + s.errmsg();
    return false;
  }
  return true;
}

std::int64_t Store::count_moves() {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_, "SELECT COUNT(*) FROM moves");
  return s.step() == db::kRow ? s.i64(0) : 0;
}

std::vector<MoveRecord> Store::moves(std::int64_t co_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_,
         "SELECT time, kind, from_start, to_start, from_end, to_end, from_parts, to_parts, reason"
         " FROM moves WHERE co_id=? ORDER BY id");
  s.bind(co_id);
  std::vector<MoveRecord> out;
  while (s.step() == db::kRow) {
    MoveRecord m;
    m.time = s.i64(0);
    m.kind = s.str(1);
    m.from_start = s.i64(2);
    m.to_start = s.i64(3);
    m.from_end = s.i64(4);
    m.to_end = s.i64(5);
    m.from_parts = s.str(6);
    m.to_parts = s.str(7);
    m.reason = s.str(8);
    out.push_back(std::move(m));
  }
  return out;
}

std::map<std::string, std::int64_t> Store::count_by_state() {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_, "SELECT state, COUNT(*) FROM coallocations GROUP BY state");
  std::map<std::string, std::int64_t> out;
  while (s.step() == db::kRow) out[s.str(0)] = s.i64(1);
  return out;
}

std::int64_t Store::purge_finished(std::int64_t before, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Txn t(db_, fail_, fence_);
  if (!t.ok()) {
    *error = std::string("begin: ") + db_->errmsg();
    return -1;
  }
  static const char* const kFinished =
      "SELECT id FROM coallocations WHERE state IN ('completed','failed','cancelled') AND changed<?";
  static const char* const kTables[] = {"parts", "transitions", "moves", "submit_keys", "rendezvous"};
  for (const char* table : kTables) {
    const std::string sql = std::string("DELETE FROM ") + table + " WHERE co_id IN (" + kFinished + ")";
    Stmt d(db_, fail_, sql.c_str());
    d.bind(before);
    if (d.step() != db::kDone) {
      *error = std::string(table) + ": " + d.errmsg();
      return -1;
    }
  }
  Stmt d(db_, fail_,
         "DELETE FROM coallocations WHERE state IN ('completed','failed','cancelled') AND changed<?");
  d.bind(before);
  if (d.step() != db::kDone) {
    *error = "coallocations: " + d.errmsg();
    return -1;
  }
  const std::int64_t n = d.changes();
  if (!t.commit(error)) return -1;
  return n;
}

namespace {
const char* kRdvCols = "co_id, attempt, idx, token_hash, registered, contact, nodes, ranks";
RendezvousRecord read_rdv(Stmt& s) {
  RendezvousRecord r;
  r.co_id = s.i64(0);
  r.attempt = static_cast<int>(s.i64(1));
  r.idx = static_cast<int>(s.i64(2));
  r.token_hash = s.str(3);
  r.registered = s.i64(4);
  r.contact = s.str(5);
  r.nodes = s.str(6);
  r.ranks = s.i64(7);
  return r;
}
}  // namespace

bool Store::put_rendezvous_token(const RendezvousRecord& r, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Txn t(db_, fail_, fence_);
  if (!t.ok()) {
    if (error) *error = std::string("begin: ") + db_->errmsg();
    return false;
  }
  Stmt d(db_, fail_, "DELETE FROM rendezvous WHERE co_id=? AND attempt=? AND idx=?");
  d.bind(r.co_id).bind(r.attempt).bind(r.idx);
  Stmt s(db_, fail_,
         "INSERT INTO rendezvous(co_id, attempt, idx, token_hash) VALUES(?,?,?,?)");
  if (d.step() != db::kDone) {
    if (error) *error = "rendezvous: " + d.errmsg();
    return false;
  }
  s.bind(r.co_id).bind(r.attempt).bind(r.idx).bind(r.token_hash);
  if (s.step() != db::kDone) {
    if (error) *error = "rendezvous: " + s.errmsg();
    return false;
  }
  return t.commit(error);
}

std::optional<RendezvousRecord> Store::rendezvous_by_token(const std::string& token_hash) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_, std::string("SELECT ") + kRdvCols + " FROM rendezvous WHERE token_hash=?");
  s.bind(token_hash);
  if (s.step() != db::kRow) return std::nullopt;
  return read_rdv(s);
}

std::vector<RendezvousRecord> Store::rendezvous_parts(std::int64_t co_id, int attempt) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_,
         std::string("SELECT ") + kRdvCols + " FROM rendezvous WHERE co_id=? AND attempt=? ORDER BY idx");
  s.bind(co_id).bind(attempt);
  std::vector<RendezvousRecord> out;
  while (s.step() == db::kRow) out.push_back(read_rdv(s));
  return out;
}

bool Store::register_rendezvous(const RendezvousRecord& r, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_,
         "UPDATE rendezvous SET registered=?, contact=?, nodes=?, ranks=?"
         " WHERE co_id=? AND attempt=? AND idx=?");
  s.bind(r.registered).bind(r.contact).bind(r.nodes).bind(r.ranks).bind(r.co_id).bind(r.attempt)
      .bind(r.idx);
  if (s.step() != db::kDone || s.changes() != 1) {
    if (error) *error = "rendezvous: " + s.errmsg();
    return false;
  }
  return true;
}

std::vector<std::int64_t> Store::rendezvous_open() {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_,
         "SELECT DISTINCT r.co_id FROM rendezvous r JOIN coallocations c"
         " ON c.id=r.co_id AND c.attempt=r.attempt"
         " WHERE r.registered>0 AND c.state IN ('scheduled','running') ORDER BY r.co_id");
  std::vector<std::int64_t> out;
  while (s.step() == db::kRow) out.push_back(s.i64(0));
  return out;
}

std::int64_t Store::event_seq(const std::string& cluster) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stmt s(db_, fail_, "SELECT seq FROM cluster_seq WHERE name=?");
  s.bind(cluster);
  return s.step() == db::kRow ? s.i64(0) : 0;
}

bool Store::set_event_seq(const std::string& cluster, std::int64_t seq, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Txn t(db_, fail_, fence_);
  if (!t.ok()) {
    *error = "begin: not written";
    return false;
  }
  Stmt s(db_, fail_, "INSERT INTO cluster_seq(name, seq) VALUES(?, ?)"
                     " ON CONFLICT(name) DO UPDATE SET seq=excluded.seq");
  s.bind(cluster).bind(seq);
  if (s.step() != db::kDone) {
    *error = "cluster_seq: " + s.errmsg();
    return false;
  }
  return t.commit(error);
}

// ---------------------------------------------------------------------------
// The lease (flexcod/lease.hpp)

void Store::set_fence(const std::string& holder, std::int64_t epoch, Failure lost) {
  std::lock_guard<std::mutex> lock(mutex_);
  fence_.holder = holder;
  fence_.epoch = epoch;
  fence_.lost = std::move(lost);
}

bool Store::lease_step(const LeaseStep& step, LeaseRow* row, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Not the failure handler: a lease step that fails is the lease's to
  // judge (a standby tries again; the instance in charge stops acting).
  const Failure none;
  std::string why;
  if (!db_->begin(&why)) {
    *error = why;
    return false;
  }
  struct Rollback {
    db::Conn* c;
    bool armed = true;
    ~Rollback() {
      if (armed) c->rollback();
    }
  } rb{db_.get()};
  LeaseRow r;
  {
    Stmt q(db_, none,
           std::string("SELECT holder, address, epoch, expires, takeovers, ") + db_->now_ms_sql() +
               " FROM lease WHERE id=1" + db_->update_lock_sql());
    const db::Step st = q.step();
    if (st != db::kRow) {
      *error = st == db::kDone ? "the lease row is missing" : "lease: " + q.errmsg();
      return false;
    }
    r.holder = q.str(0);
    r.address = q.str(1);
    r.epoch = q.i64(2);
    r.expires_ms = q.i64(3);
    r.takeovers = q.i64(4);
    r.db_now_ms = q.i64(5);
  }
  const bool mine = !step.holder.empty() && r.holder == step.holder && r.epoch == step.epoch;
  const bool free = r.holder.empty() || r.expires_ms <= r.db_now_ms;
  std::string sql;
  if (step.release) {
    if (!mine) {
      *row = r;
      return true;  // not ours (any more): nothing to give back
    }
    sql = "UPDATE lease SET holder='', expires=0 WHERE id=1";
    r.holder.clear();
    r.expires_ms = 0;
  } else if (mine && step.raise_to <= r.epoch) {
    sql = "UPDATE lease SET expires=? WHERE id=1";
    r.expires_ms = r.db_now_ms + step.lease_ms;
  } else if (mine || (step.take && (free || step.force))) {
    // Taken (a takeover when someone held it), or ours raised above an
    // epoch the clusters have seen (a database restored from a backup).
    const bool takeover = !mine && !r.holder.empty();
    const std::int64_t next = std::max(r.epoch + 1, step.raise_to);
    sql = "UPDATE lease SET holder=?, address=?, epoch=?, takeovers=?, expires=? WHERE id=1";
    r.holder = step.holder;
    r.address = step.address;
    r.epoch = next;
    if (takeover) ++r.takeovers;
    r.expires_ms = r.db_now_ms + step.lease_ms;
  }
  if (!sql.empty()) {
    Stmt u(db_, none, sql);
    if (sql.find("holder=?") != std::string::npos) {
      u.bind(r.holder).bind(r.address).bind(r.epoch).bind(r.takeovers);
    }
    if (sql.find("expires=?") != std::string::npos) u.bind(r.expires_ms);
    if (u.step() != db::kDone) {
      *error = "lease: " + u.errmsg();
      return false;
    }
  }
  if (!db_->commit(&why)) {
    *error = why;
    return false;
  }
  rb.armed = false;
  *row = r;
  return true;
}

}  // namespace flexcod
