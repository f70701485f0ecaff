// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/flexcod/store, against real SQLite files in a mkdtemp
// folder and (test case "postgresql") a real PostgreSQL server that the
// test starts (pg_server.hpp), one fresh database per test:
// schema creation, the instance id kept across reopenings, WAL mode,
// co-allocations and parts written with one transition per state change,
// list filters, parts by state, moves, event sequence numbers, a pass's
// snapshot and the writes since it, and that a
// second connection (another process after a crash) sees every committed
// change; compare-and-set versions, the migration of an older schema, and
// PostgreSQL's lost connection told to the failure handler.

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "flexcod/db.hpp"
#include "flexcod/states.hpp"
#include "flexcod/store.hpp"
#include "pg_server.hpp"

#include <check.h>

using flexcod::CoRecord;
using flexcod::MoveRecord;
using flexcod::PartRecord;
using flexcod::RendezvousRecord;
using flexcod::Store;
using flexcod::SubmitKey;

namespace {

std::string g_dir;
PgServer* g_pg = nullptr;  // started by main()
bool g_use_pg = false;     // set by the postgresql test case's fixture

void use_pg() { g_use_pg = true; }

std::string fresh_path(const char* name) {
  const std::string p = g_dir + "/" + name;
  std::remove(p.c_str());
  std::remove((p + "-wal").c_str());
  std::remove((p + "-shm").c_str());
  return p;
}

// A new empty database named after `name` ("b.db": file b.db, or the
// PostgreSQL database t_b) in the backend of the running test case.
Store::Location fresh_loc(const char* name) {
  Store::Location loc;
  if (!g_use_pg) {
    loc.path = fresh_path(name);
    return loc;
  }
  std::string db = "t_";
  for (const char* c = name; *c && *c != '.'; ++c) db += static_cast<char>(std::tolower(*c));
  const std::string e = g_pg->create_database(db);
  ck_assert_msg(e.empty(), "create database %s: %s", db.c_str(), e.c_str());
  loc.type = "postgresql";
  loc.path = g_pg->conninfo(db);
  return loc;
}

// The schema a store made in the test's backend, in that backend's SQL
// (`sql`: SQLite's spelling, as store.cpp's kSchema).
std::string run_sql(const Store::Location& loc, std::string sql) {
  if (loc.type != "postgresql") {
    sqlite3* db = nullptr;
    if (sqlite3_open(loc.path.c_str(), &db) != SQLITE_OK) return "cannot open";
    char* msg = nullptr;
    std::string e;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) e = msg ? msg : "error";
    sqlite3_free(msg);
    sqlite3_close(db);
    return e;
  }
  auto replace = [&sql](const std::string& from, const std::string& to) {
    for (std::size_t at = sql.find(from); at != std::string::npos; at = sql.find(from, at + to.size()))
      sql.replace(at, from.size(), to);
  };
  replace(" INTEGER PRIMARY KEY AUTOINCREMENT", " BIGSERIAL PRIMARY KEY");
  replace(" INTEGER", " BIGINT");
  replace(" REAL", " DOUBLE PRECISION");
  return g_pg->exec(loc.path.substr(loc.path.rfind('=') + 1), sql);
}

CoRecord sample_co() {
  CoRecord c;
  c.uid = 1000;
  c.user = "alice";
  c.state = "planning";
  c.policy = "flexco";
  c.nodes = 10;
  c.duration = 600;
  c.overhead = 0.25;
  c.ready = 100;
  c.clusters = {"alpha", "beta"};
  c.max_parts = 4;
  c.request = "{\"nodes\":10}";
  return c;
}

PartRecord sample_part(std::int64_t co, int attempt, int idx, const char* cluster, const char* state) {
  PartRecord p;
  p.co_id = co;
  p.attempt = attempt;
  p.idx = idx;
  p.cluster = cluster;
  p.nodes = 5;
  p.state = state;
  p.resv_key = "k-" + std::to_string(idx);
  p.planned_start = 200;
  p.planned_end = 860;
  return p;
}

START_TEST(open_creates_and_keeps_instance) {
  const std::string path = fresh_path("a.db");
  std::string err, inst;
  {
    auto s = Store::open(path, &err);
    ck_assert_msg(s != nullptr, "%s", err.c_str());
    inst = s->instance();
    ck_assert_int_eq(inst.size(), 16);
  }
  auto s2 = Store::open(path, &err);
  ck_assert(s2 != nullptr);
  ck_assert(s2->instance() == inst);
  // WAL mode is persistent in the file.
  sqlite3* db = nullptr;
  ck_assert(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ck_assert(sqlite3_step(st) == SQLITE_ROW);
  ck_assert_str_eq(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}
END_TEST

// The database holds job scripts and environments: the file and SQLite's
// -wal and -shm beside it are readable by their owner only (issue 15, 1.9),
// whatever the umask, and a file left too open by an older flexcod is
// narrowed when it is opened.
mode_t mode_of(const std::string& path) {
  struct stat sb;
  return stat(path.c_str(), &sb) == 0 ? (sb.st_mode & 07777) : 07777;
}

START_TEST(database_files_are_private) {
  const mode_t old = umask(022);
  const std::string path = fresh_path("private.db");
  std::string err;
  {
    auto s = Store::open(path, &err);
    ck_assert_msg(s != nullptr, "%s", err.c_str());
    CoRecord c = sample_co();
    ck_assert_msg(s->insert_coalloc(&c, "submitted", &err), "%s", err.c_str());
    ck_assert_msg(mode_of(path) == 0600, "db mode %o", mode_of(path));
    ck_assert_msg(mode_of(path + "-wal") == 0600, "wal mode %o", mode_of(path + "-wal"));
    ck_assert_msg(mode_of(path + "-shm") == 0600, "shm mode %o", mode_of(path + "-shm"));
  }
  // An existing database that is world-readable is narrowed at open.
  const std::string loose = fresh_path("loose.db");
  { auto s = Store::open(loose, &err); ck_assert(s != nullptr); }
  ck_assert(chmod(loose.c_str(), 0644) == 0);
  {
    auto s = Store::open(loose, &err);
    ck_assert_msg(s != nullptr, "%s", err.c_str());
    ck_assert_msg(mode_of(loose) == 0600, "reopened db mode %o", mode_of(loose));
  }
  umask(old);
}
END_TEST

START_TEST(open_fails_with_reason) {
  std::string err;
  auto s = Store::open(g_dir + "/no/such/dir/x.db", &err);
  ck_assert(s == nullptr);
  ck_assert_msg(err.find("no/such/dir") != std::string::npos, "%s", err.c_str());
}
END_TEST

START_TEST(coalloc_round_trip_and_transitions) {
  std::string err;
  auto s = Store::open(fresh_loc("b.db"), &err);
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "submitted", &err));
  ck_assert_int_eq(c.id, 1);
  auto got = s->get_coalloc(1);
  ck_assert(got.has_value());
  ck_assert(got->user == "alice" && got->nodes == 10 && got->overhead == 0.25);
  ck_assert(got->clusters.size() == 2 && got->clusters[1] == "beta");
  ck_assert(got->request == "{\"nodes\":10}");

  // planning -> committing with two parts, one transaction.
  c.state = "committing";
  c.attempt = 1;
  std::vector<PartRecord> parts = {sample_part(1, 1, 0, "alpha", "reserving"),
                                   sample_part(1, 1, 1, "beta", "reserving")};
  ck_assert(s->write(c, parts, "attempt 1", &err));
  // One part changes, the other does not: one transition only.
  parts[0].state = "tentative";
  parts[0].reservation_id = 7;
  ck_assert(s->write(c, parts, "reserved", &err));
  parts[1].state = "released";
  ck_assert(s->update_part(parts[1], "refused", &err));
  auto tr = s->transitions(1);
  std::vector<std::string> tos;
  for (const auto& t : tr) tos.push_back(t.what + ":" + t.to);
  const std::vector<std::string> want = {
      "coallocation:planning", "coallocation:committing",
      "part 0 (attempt 1, alpha):reserving", "part 1 (attempt 1, beta):reserving",
      "part 0 (attempt 1, alpha):tentative", "part 1 (attempt 1, beta):released"};
  ck_assert_int_eq(tos.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ck_assert_msg(tos[i] == want[i], "%zu: %s != %s", i, tos[i].c_str(), want[i].c_str());
  }
  ck_assert(tr[1].from == "planning" && tr[1].reason == "attempt 1");
  auto ps = s->parts(1, true);
  ck_assert_int_eq(ps.size(), 2);
  ck_assert(ps[0].reservation_id == 7 && ps[0].resv_key == "k-0");
}
END_TEST

// A database of schema 1 (before issue 17: parts without partition,
// account and QOS) opens as schema 2: the columns are added, empty for the
// parts it held, and kept for new parts.
START_TEST(schema_1_is_migrated) {
  const std::string path = fresh_path("old.db");
  sqlite3* db = nullptr;
  ck_assert(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const char* old =
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO meta VALUES('instance', '0123456789abcdef'), ('schema', '1');"
      "CREATE TABLE coallocations("
      " id INTEGER PRIMARY KEY AUTOINCREMENT, uid INTEGER NOT NULL, user TEXT NOT NULL,"
      " state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', policy TEXT NOT NULL,"
      " nodes INTEGER NOT NULL, duration INTEGER NOT NULL, run_time INTEGER NOT NULL DEFAULT 0,"
      " overhead REAL NOT NULL DEFAULT 0, ready INTEGER NOT NULL, deadline INTEGER NOT NULL DEFAULT 0,"
      " clusters TEXT NOT NULL, max_parts INTEGER NOT NULL, request TEXT NOT NULL,"
      " submitted INTEGER NOT NULL, changed INTEGER NOT NULL,"
      " planned_start INTEGER NOT NULL DEFAULT 0, planned_end INTEGER NOT NULL DEFAULT 0,"
      " moves INTEGER NOT NULL DEFAULT 0, attempt INTEGER NOT NULL DEFAULT 0);"
      "CREATE TABLE parts("
      " co_id INTEGER NOT NULL REFERENCES coallocations(id), attempt INTEGER NOT NULL,"
      " idx INTEGER NOT NULL, cluster TEXT NOT NULL, nodes INTEGER NOT NULL, state TEXT NOT NULL,"
      " reason TEXT NOT NULL DEFAULT '', resv_key TEXT NOT NULL DEFAULT '',"
      " reservation_id INTEGER NOT NULL DEFAULT 0, reservation TEXT NOT NULL DEFAULT '',"
      " node_list TEXT NOT NULL DEFAULT '', job_key TEXT NOT NULL DEFAULT '',"
      " job_id INTEGER NOT NULL DEFAULT 0, job_state TEXT NOT NULL DEFAULT '',"
      " planned_start INTEGER NOT NULL DEFAULT 0, planned_end INTEGER NOT NULL DEFAULT 0,"
      " actual_start INTEGER NOT NULL DEFAULT 0, actual_end INTEGER NOT NULL DEFAULT 0,"
      " exit_code INTEGER NOT NULL DEFAULT -1, current INTEGER NOT NULL DEFAULT 1,"
      " PRIMARY KEY(co_id, attempt, idx));"
      "INSERT INTO coallocations(uid, user, state, policy, nodes, duration, ready, clusters,"
      " max_parts, request, submitted, changed, attempt)"
      " VALUES(1000, 'alice', 'scheduled', 'flexco', 5, 600, 100, 'alpha', 4, '{}', 1, 1, 1);"
      "INSERT INTO parts(co_id, attempt, idx, cluster, nodes, state, job_id)"
      " VALUES(1, 1, 0, 'alpha', 5, 'submitted', 42);";
  char* msg = nullptr;
  ck_assert_msg(sqlite3_exec(db, old, nullptr, nullptr, &msg) == SQLITE_OK, "%s", msg ? msg : "");
  sqlite3_close(db);

  std::string err;
  auto s = Store::open(path, &err);
  ck_assert_msg(s != nullptr, "%s", err.c_str());
  ck_assert_str_eq(s->instance().c_str(), "0123456789abcdef");
  auto ps = s->parts(1, true);
  ck_assert_int_eq(ps.size(), 1);
  ck_assert(ps[0].job_id == 42 && ps[0].partition.empty() && ps[0].account.empty() && ps[0].qos.empty());
  auto co = s->get_coalloc(1);
  ck_assert(co.has_value());
  PartRecord p = sample_part(1, 2, 0, "alpha", "reserving");
  p.partition = "gpu";
  p.account = "proj";
  p.qos = "long";
  co->attempt = 2;
  ck_assert(s->write(*co, {p}, "attempt 2", &err));
  s.reset();
  s = Store::open(path, &err);  // opened again: nothing more to migrate
  ck_assert_msg(s != nullptr, "%s", err.c_str());
  ps = s->parts(1, false);
  ck_assert_int_eq(ps.size(), 2);
  bool found = false;
  for (const auto& q : ps)
    if (q.attempt == 2) found = q.partition == "gpu" && q.account == "proj" && q.qos == "long";
  ck_assert(found);
  ck_assert(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema'", -1, &st, nullptr);
  ck_assert(sqlite3_step(st) == SQLITE_ROW);
  ck_assert_str_eq(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "7");
  sqlite3_finalize(st);
  sqlite3_close(db);
}
END_TEST

START_TEST(attempts_and_states) {
  std::string err;
  auto s = Store::open(fresh_loc("c.db"), &err);
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "x", &err));
  c.state = "committing";
  auto old = sample_part(c.id, 1, 0, "alpha", "released");
  old.current = false;
  ck_assert(s->write(c, {old, sample_part(c.id, 2, 0, "beta", "cancelling")}, "attempt 2", &err));
  ck_assert_int_eq(s->parts(c.id, true).size(), 1);
  ck_assert_int_eq(s->parts(c.id, false).size(), 2);
  auto canc = s->parts_in_states({"cancelling"});
  ck_assert_int_eq(canc.size(), 1);
  ck_assert(canc[0].cluster == "beta" && canc[0].attempt == 2);
  ck_assert_int_eq(s->in_states({"committing"}).size(), 1);
  ck_assert_int_eq(s->in_states({"planning", "scheduled"}).size(), 0);
}
END_TEST

START_TEST(list_filters) {
  std::string err;
  auto s = Store::open(fresh_loc("d.db"), &err);
  const char* states[] = {"scheduled", "completed", "failed", "running"};
  for (int i = 0; i < 4; ++i) {
    CoRecord c = sample_co();
    c.uid = i % 2 ? 1000 : 2000;
    c.state = states[i];
    ck_assert(s->insert_coalloc(&c, "x", &err));
  }
  ck_assert_int_eq(s->list_coallocs(-1, "", 100).size(), 4);
  ck_assert_int_eq(s->list_coallocs(1000, "", 100).size(), 2);
  ck_assert_int_eq(s->list_coallocs(-1, "active", 100).size(), 2);
  ck_assert_int_eq(s->list_coallocs(-1, "failed", 100).size(), 1);
  ck_assert_int_eq(s->list_coallocs(-1, "", 3).size(), 3);
  ck_assert_int_eq(s->list_coallocs(-1, "", 100)[0].id, 4);  // newest first
  auto counts = s->count_by_state();
  ck_assert_int_eq(counts["scheduled"], 1);
  ck_assert_int_eq(counts.size(), 4);
}
END_TEST

START_TEST(moves_and_event_seq) {
  std::string err;
  auto s = Store::open(fresh_loc("e.db"), &err);
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "x", &err));
  flexcod::MoveRecord m;
  m.time = 5;
  m.kind = "shift";
  m.from_start = 100;
  m.to_start = 50;
  m.from_parts = "[{\"cluster\":\"alpha\",\"nodes\":5}]";
  m.to_parts = m.from_parts;
  m.reason = "early end on alpha";
  ck_assert(s->add_move(c.id, m, &err));
  auto ms = s->moves(c.id);
  ck_assert_int_eq(ms.size(), 1);
  ck_assert(ms[0].kind == "shift" && ms[0].to_start == 50 && ms[0].reason == m.reason);
  ck_assert_int_eq(s->event_seq("alpha"), 0);
  ck_assert(s->set_event_seq("alpha", 42, &err));
  ck_assert(s->set_event_seq("alpha", 43, &err));
  ck_assert_int_eq(s->event_seq("alpha"), 43);
  ck_assert_int_eq(s->event_seq("beta"), 0);
}
END_TEST

// A move's switch: the new parts current, the old ones not, the move row,
// all in one transaction; a failing switch writes no move.
START_TEST(switch_with_move_is_one_transaction) {
  std::string err;
  auto s = Store::open(fresh_loc("h.db"), &err);
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "x", &err));
  c.state = "scheduled";
  c.attempt = 1;
  ck_assert(s->write(c, {sample_part(c.id, 1, 0, "alpha", "submitted")}, "placed", &err));
  PartRecord fresh = sample_part(c.id, 2, 0, "beta", "submitted");
  fresh.current = false;
  std::vector<PartRecord> planned = {fresh};
  ck_assert(s->write(c, planned, "move planned", &err));
  fresh = planned[0];  // with the version written
  ck_assert_int_eq(s->parts(c.id, true).size(), 1);  // the old set is still current
  flexcod::MoveRecord m;
  m.time = 7;
  m.kind = "remap";
  m.from_start = 200;
  m.to_start = 100;
  m.from_parts = "[{\"cluster\":\"alpha\",\"nodes\":5}]";
  m.to_parts = "[{\"cluster\":\"beta\",\"nodes\":5}]";
  m.reason = "early end";
  PartRecord old = s->parts(c.id, false).at(0);  // as stored (its version)
  old.state = "cancelling";
  old.current = false;
  fresh.current = true;
  c.attempt = 2;
  c.moves = 1;
  ck_assert(s->write(c, {fresh, old}, "moved", &err, &m));
  auto cur = s->parts(c.id, true);
  ck_assert_int_eq(cur.size(), 1);
  ck_assert(cur[0].cluster == "beta" && cur[0].attempt == 2);
  ck_assert_int_eq(s->parts_in_states({"cancelling"}).size(), 1);
  ck_assert_int_eq(s->moves(c.id).size(), 1);
  ck_assert_int_eq(s->count_moves(), 1);
  ck_assert_int_eq(s->get_coalloc(c.id)->moves, 1);
  CoRecord gone = c;
  gone.id = 99;
  ck_assert(!s->write(gone, {}, "x", &err, &m));
  ck_assert_int_eq(s->count_moves(), 1);
  ck_assert_int_eq(s->moves(99).size(), 0);
  // Only the current placement counts: the co-allocation is on beta now.
  auto on_beta = s->with_part_on("beta", {"scheduled", "running"});
  ck_assert_int_eq(on_beta.size(), 1);
  ck_assert_int_eq(on_beta[0], c.id);
  ck_assert_int_eq(s->with_part_on("alpha", {"scheduled", "running"}).size(), 0);
  ck_assert_int_eq(s->with_part_on("beta", {"running"}).size(), 0);
}
END_TEST

START_TEST(committed_changes_survive_for_another_connection) {
  const std::string path = fresh_path("f.db");
  std::string err;
  // A child writes and dies without closing the store (a crash: _exit,
  // no destructor); the database it leaves opens, with its lock gone.
  const pid_t child = fork();
  ck_assert(child >= 0);
  if (child == 0) {
    auto s = Store::open(path, &err);
    CoRecord c = sample_co();
    bool ok = s && s->insert_coalloc(&c, "x", &err);
    c.state = "committing";
    ok = ok && s->write(c, {sample_part(c.id, 1, 0, "alpha", "reserving")}, "attempt 1", &err);
    _exit(ok && c.id == 1 ? 0 : 1);
  }
  int status = 0;
  ck_assert(waitpid(child, &status, 0) == child);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's writes failed");
  auto other = Store::open(path, &err);
  ck_assert_msg(other != nullptr, "%s", err.c_str());
  CoRecord c;
  c.id = 1;
  auto got = other->get_coalloc(c.id);
  ck_assert(got && got->state == "committing");
  auto ps = other->parts_in_states({"reserving"});
  ck_assert_int_eq(ps.size(), 1);
  ck_assert(ps[0].resv_key == "k-0");
}
END_TEST

// Idempotency-Keys of POST /v1/coallocations: one co-allocation per (uid,
// key), kept across a reopen, per uid.
START_TEST(submit_keys) {
  std::string err;
  const Store::Location path = fresh_loc("k.db");
  std::int64_t first = 0;
  {
    auto s = Store::open(path, &err);
    CoRecord c = sample_co();
    std::optional<SubmitKey> taken;
    ck_assert(s->insert_coalloc(&c, "submitted", &err, "key-1", "digest-a", &taken));
    ck_assert(!taken.has_value());
    first = c.id;
    CoRecord again = sample_co();
    ck_assert(s->insert_coalloc(&again, "submitted", &err, "key-1", "digest-b", &taken));
    ck_assert(taken.has_value() && taken->co_id == first && taken->digest == "digest-a");
    ck_assert_int_eq(s->list_coallocs(-1, "", 100).size(), 1);
    // Another user's same key is another key.
    CoRecord bob = sample_co();
    bob.uid = 1001;
    taken.reset();
    ck_assert(s->insert_coalloc(&bob, "submitted", &err, "key-1", "digest-a", &taken));
    ck_assert(!taken.has_value() && bob.id != first);
    ck_assert(!s->find_key(1000, "key-2").has_value());
  }
  auto s = Store::open(path, &err);
  ck_assert_msg(s != nullptr, "%s", err.c_str());  // not a crash if it cannot open
  auto k = s->find_key(1000, "key-1");
  ck_assert(k.has_value() && k->co_id == first && k->digest == "digest-a");
  ck_assert(k->created > 0 && k->created <= flexcod::now_seconds());
}
END_TEST

START_TEST(unknown_coalloc_write_fails) {
  std::string err;
  auto s = Store::open(fresh_loc("g.db"), &err);
  CoRecord c = sample_co();
  c.id = 99;
  ck_assert(!s->write(c, {}, "x", &err));
  ck_assert_msg(err.find("99") != std::string::npos, "%s", err.c_str());
  ck_assert(!s->get_coalloc(99).has_value());
  ck_assert_int_eq(s->transitions(99).size(), 0);
}
END_TEST

// A write that cannot be made (another connection holds the database's
// write lock past the 5 s busy timeout: SQLITE_BUSY, as a backup tool or an
// admin's sqlite3 shell would) is told to the failure handler, which
// flexcod's main() makes a fail-stop; the part is unchanged.  Without a
// handler the call only returns false.
START_TEST(failed_write_reaches_the_handler) {
  std::string err;
  const std::string path = fresh_path("busy.db");
  auto s = Store::open(path, &err);
  ck_assert(s != nullptr);
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "submitted", &err));
  PartRecord p = sample_part(c.id, 1, 0, "alpha", "running");
  ck_assert(s->write(c, {p}, "placed", &err));
  std::vector<std::string> told;
  s->set_failure_handler([&told](const std::string& what) { told.push_back(what); });

  sqlite3* other = nullptr;
  ck_assert_int_eq(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  PartRecord ended = s->parts(c.id, true).at(0);  // as stored (its version)
  ended.state = "completed";
  ck_assert(!s->update_part(ended, "part_job_ended", &err));
  ck_assert_msg(told.size() == 1, "told %zu times", told.size());
  ck_assert_msg(told[0].find("locked") != std::string::npos, "%s", told[0].c_str());
  // reads still work in WAL mode while a writer holds the lock, and see
  // the part as it was
  ck_assert_str_eq(s->parts(c.id, true).at(0).state.c_str(), "running");
  ck_assert_int_eq(told.size(), 1);
  ck_assert_int_eq(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  ck_assert(s->update_part(ended, "part_job_ended", &err));
  ck_assert_int_eq(told.size(), 1);
  ck_assert_str_eq(s->parts(c.id, true).at(0).state.c_str(), "completed");
}
END_TEST

// One store per database file (issue 38 §2.5): a second open while the
// first is open is refused with the reason; once it is closed, it opens.
START_TEST(one_store_per_database) {
  std::string err;
  const Store::Location path = fresh_loc("one.db");
  {
    auto s = Store::open(path, &err);
    ck_assert(s != nullptr);
    auto again = Store::open(path, &err);
    ck_assert(again == nullptr);
    ck_assert_msg(err.find("in use by another flexcod") != std::string::npos, "%s", err.c_str());
    // the first one still writes
    CoRecord c = sample_co();
    ck_assert(s->insert_coalloc(&c, "submitted", &err));
  }
  auto s = Store::open(path, &err);
  ck_assert_msg(s != nullptr, "%s", err.c_str());
}
END_TEST

// A writer holding an older copy cannot write a state that does not follow
// the stored one (may_overwrite): a cancelled co-allocation is not brought
// back to life, a released part not made tentative again; a write that
// goes on by more than one change of the table (planning to scheduled) and
// one of the same state are written.
START_TEST(older_copy_cannot_overwrite) {
  std::string err;
  auto s = Store::open(fresh_loc("stale.db"), &err);
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "submitted", &err));
  CoRecord stale = c;  // planning
  CoRecord now = c;
  now.state = "cancelling";
  ck_assert(s->write(now, {}, "cancelled by alice", &err));
  now.state = "cancelled";
  ck_assert(s->write(now, {}, "everything released", &err));
  const auto before = flexcod::illegal_transitions();
  stale.state = "committing";
  PartRecord p = sample_part(c.id, 1, 0, "alpha", "reserving");
  ck_assert(!s->write(stale, {p}, "attempt 1", &err));
  ck_assert_msg(err.find("cancelled in the database") != std::string::npos, "%s", err.c_str());
  ck_assert_str_eq(s->get_coalloc(c.id)->state.c_str(), "cancelled");
  ck_assert_int_eq(s->parts(c.id, false).size(), 0);  // nothing of the write
  ck_assert_int_eq(flexcod::illegal_transitions(), before + 1);
  // the same final state again (a reason) is written
  ck_assert(s->write(now, {}, "said again", &err));

  CoRecord d = sample_co();
  ck_assert(s->insert_coalloc(&d, "submitted", &err));
  d.state = "scheduled";  // planning -> committing -> scheduled
  PartRecord q = sample_part(d.id, 1, 0, "alpha", "released");
  ck_assert(s->write(d, {q}, "placed", &err));
  PartRecord old_q = q;
  old_q.state = "tentative";
  ck_assert(!s->update_part(old_q, "late answer", &err));
  ck_assert_str_eq(s->parts(d.id, true).at(0).state.c_str(), "released");
  ck_assert(!s->write(d, {old_q}, "late answer", &err));
  ck_assert_int_eq(flexcod::illegal_transitions(), before + 3);
}
END_TEST

// MaxCoallocationsPerUser and MaxNodeHoursPerUser, counted in the insert's
// transaction over the user's co-allocations that have not ended; another
// user's and ended ones do not count; over a limit nothing is inserted.
START_TEST(user_caps) {
  std::string err, capped;
  auto s = Store::open(fresh_loc("caps.db"), &err);
  Store::UserCap cap;
  cap.max_live = 2;
  cap.max_node_seconds = 30 * 600;  // 10 nodes x 600 s each: 3 fit by hours
  std::vector<CoRecord> mine;
  for (int i = 0; i < 2; i++) {
    CoRecord c = sample_co();
    ck_assert(s->insert_coalloc(&c, "submitted", &err, "", "", nullptr, &cap, &capped));
    mine.push_back(c);
  }
  CoRecord third = sample_co();
  ck_assert(!s->insert_coalloc(&third, "submitted", &err, "", "", nullptr, &cap, &capped));
  ck_assert(err.empty());
  ck_assert_msg(capped.find("MaxCoallocationsPerUser=2") != std::string::npos, "%s", capped.c_str());
  ck_assert_int_eq(s->list_coallocs(1000, "", 10).size(), 2);
  CoRecord other = sample_co();
  other.uid = 1001;
  other.user = "bob";
  capped.clear();
  ck_assert(s->insert_coalloc(&other, "submitted", &err, "", "", nullptr, &cap, &capped));
  // one of alice's ends: she may submit again, by count
  mine[0].state = "failed";
  ck_assert(s->write(mine[0], {}, "not placed", &err));
  third = sample_co();
  ck_assert(s->insert_coalloc(&third, "submitted", &err, "", "", nullptr, &cap, &capped));
  // by node-hours: 2 live x 6000 node-seconds; one more of 10 x 900 s passes 18000
  cap.max_live = 0;
  CoRecord big = sample_co();
  big.duration = 900;
  ck_assert(!s->insert_coalloc(&big, "submitted", &err, "", "", nullptr, &cap, &capped));
  ck_assert_msg(capped.find("MaxNodeHoursPerUser=5") != std::string::npos, "%s", capped.c_str());
  big.duration = 600;
  ck_assert(s->insert_coalloc(&big, "submitted", &err, "", "", nullptr, &cap, &capped));
  // no cap: no limit
  CoRecord free_one = sample_co();
  ck_assert(s->insert_coalloc(&free_one, "submitted", &err));
}
END_TEST

// PurgeFinishedAfter: co-allocations that ended before the given time go,
// with every row that names them; live ones and younger ones stay.
START_TEST(purge_finished_keeps_live_and_young) {
  std::string err;
  auto s = Store::open(fresh_loc("purge.db"), &err);
  std::vector<std::int64_t> ids;
  for (const char* state : {"completed", "failed", "cancelled", "running", "scheduled"}) {
    CoRecord c = sample_co();
    ck_assert(s->insert_coalloc(&c, "submitted", &err, std::string("key-") + state, "d"));
    c.state = state;
    PartRecord p = sample_part(c.id, 1, 0, "alpha", state);
    MoveRecord m;
    m.time = 1;
    m.kind = "shift";
    ck_assert(s->write(c, {p}, "to " + std::string(state), &err, &m));
    ids.push_back(c.id);
  }
  const std::int64_t now = flexcod::now_seconds();
  // nothing ended an hour before now
  ck_assert_int_eq(s->purge_finished(now - 3600, &err), 0);
  ck_assert_int_eq(s->list_coallocs(-1, "", 100).size(), 5);
  // every final one ended before now + 10
  ck_assert_int_eq(s->purge_finished(now + 10, &err), 3);
  for (int i = 0; i < 5; i++) {
    const bool live = i >= 3;
    ck_assert_int_eq(s->get_coalloc(ids[i]).has_value(), live);
    ck_assert_int_eq(s->parts(ids[i], false).size(), live ? 1 : 0);
    ck_assert_int_eq(s->transitions(ids[i]).empty(), !live);
    ck_assert_int_eq(s->moves(ids[i]).size(), live ? 1 : 0);
  }
  ck_assert(!s->find_key(1000, "key-completed").has_value());
  ck_assert(s->find_key(1000, "key-running").has_value());
  ck_assert_int_eq(s->count_moves(), 2);
  ck_assert_int_eq(s->purge_finished(now + 10, &err), 0);
}
END_TEST

// A rescheduling pass's snapshot: the co-allocations in the states asked
// for with their current parts only, read at one write mark; written_since
// names exactly the co-allocations written after it (a part's own write
// too), and none when nothing was written.
START_TEST(snapshot_and_written_since) {
  std::string err;
  auto s = Store::open(fresh_loc("h.db"), &err);
  CoRecord a = sample_co(), b = sample_co(), c = sample_co();
  ck_assert(s->insert_coalloc(&a, "x", &err));
  ck_assert(s->insert_coalloc(&b, "x", &err));
  ck_assert(s->insert_coalloc(&c, "x", &err));
  a.state = b.state = "scheduled";
  c.state = "running";
  auto old = sample_part(a.id, 1, 0, "alpha", "released");
  old.current = false;
  ck_assert(s->write(a, {old, sample_part(a.id, 2, 0, "beta", "submitted"),
                         sample_part(a.id, 2, 1, "alpha", "submitted")}, "x", &err));
  ck_assert(s->write(b, {}, "x", &err));
  ck_assert(s->write(c, {sample_part(c.id, 1, 0, "alpha", "running")}, "x", &err));

  Store::Snapshot snap = s->snapshot({"scheduled"});
  ck_assert_int_eq(snap.cos.size(), 2);
  ck_assert(snap.cos[0].id == a.id && snap.cos[1].id == b.id);
  ck_assert_int_eq(snap.parts.size(), 1);  // b has none, c is not scheduled
  const auto& pa = snap.parts.at(a.id);
  ck_assert_int_eq(pa.size(), 2);
  ck_assert(pa[0].attempt == 2 && pa[0].idx == 0 && pa[0].cluster == "beta");
  ck_assert(pa[1].idx == 1 && pa[1].cluster == "alpha" && pa[1].state == "submitted");
  for (const CoRecord& co : {a, b, c}) ck_assert(!s->written_since(co.id, snap.mark));

  auto p = pa[1];
  p.state = "cancelling";
  ck_assert(s->update_part(p, "y", &err));
  ck_assert(s->written_since(a.id, snap.mark));
  ck_assert(!s->written_since(b.id, snap.mark));
  b.reason = "changed";
  ck_assert(s->update_coalloc(b, "y", &err));
  ck_assert(s->written_since(b.id, snap.mark));
  ck_assert(!s->written_since(c.id, snap.mark));

  Store::Snapshot again = s->snapshot({"scheduled"});
  ck_assert(again.mark > snap.mark);
  for (const CoRecord& co : {a, b, c}) ck_assert(!s->written_since(co.id, again.mark));
  ck_assert(again.parts.at(a.id)[1].state == "cancelling");
}
END_TEST

// Compare-and-set (issue 39 §1): two copies of one co-allocation read at
// the same version; the first write wins and moves the version on (in the
// writer's record too, so it may write again); the second is refused as
// a conflict with nothing written and nothing told to the failure handler
// (it is not a database failure); read again, it is written.  The same
// for parts, through write and update_part; a part that is not stored
// written with a version is a conflict too (it went, e.g. purged).
START_TEST(versions_compare_and_set) {
  std::string err;
  auto s = Store::open(fresh_loc("cas.db"), &err);
  ck_assert_msg(s != nullptr, "%s", err.c_str());
  int told = 0, conflicts = 0;
  s->set_failure_handler([&told](const std::string&) { ++told; });
  s->set_conflict_handler([&conflicts](const std::string& what) {
    ++conflicts;
    ck_assert(Store::is_conflict(what));
  });
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "submitted", &err));
  ck_assert_int_eq(c.version, 1);
  CoRecord a = *s->get_coalloc(c.id), b = *s->get_coalloc(c.id);
  ck_assert_int_eq(a.version, 1);
  a.reason = "first";
  ck_assert_msg(s->update_coalloc(a, "x", &err), "%s", err.c_str());
  ck_assert_int_eq(a.version, 2);
  a.reason = "first again";
  ck_assert_msg(s->update_coalloc(a, "x", &err), "%s", err.c_str());  // its own write: no conflict
  ck_assert_int_eq(a.version, 3);
  const std::size_t transitions = s->transitions(c.id).size();
  b.state = "committing";
  b.reason = "second";
  ck_assert(!s->write(b, {sample_part(c.id, 1, 0, "alpha", "reserving")}, "x", &err));
  ck_assert_msg(Store::is_conflict(err), "%s", err.c_str());
  ck_assert_int_eq(b.version, 1);
  auto now = s->get_coalloc(c.id);
  ck_assert_str_eq(now->reason.c_str(), "first again");
  ck_assert_str_eq(now->state.c_str(), "planning");
  ck_assert_int_eq(now->version, 3);
  ck_assert_int_eq(s->parts(c.id, false).size(), 0);
  ck_assert_int_eq(s->transitions(c.id).size(), transitions);
  // the caller reads again and writes
  b = *now;
  b.state = "committing";
  std::vector<PartRecord> parts = {sample_part(c.id, 1, 0, "alpha", "reserving")};
  ck_assert_msg(s->write(b, parts, "attempt 1", &err), "%s", err.c_str());
  ck_assert(b.version == 4 && parts[0].version == 1);

  PartRecord p1 = s->parts(c.id, true).at(0), p2 = p1;
  p1.state = "tentative";
  ck_assert_msg(s->update_part(p1, "reserved", &err), "%s", err.c_str());
  ck_assert_int_eq(p1.version, 2);
  p2.state = "tentative";  // a stale copy (the state allowed): a blind overwrite before
  p2.reservation_id = 99;
  ck_assert(!s->update_part(p2, "late", &err));
  ck_assert_msg(Store::is_conflict(err), "%s", err.c_str());
  ck_assert(!s->write(b, {p2}, "late", &err));
  ck_assert_msg(Store::is_conflict(err), "%s", err.c_str());
  ck_assert_int_eq(s->get_coalloc(c.id)->version, 4);  // nothing of that write
  auto stored = s->parts(c.id, true).at(0);
  ck_assert(stored.state == "tentative" && stored.reservation_id == 0 && stored.version == 2);
  // the part writer's record goes on from its own write
  p1.reservation_id = 7;
  ck_assert_msg(s->update_part(p1, "id", &err), "%s", err.c_str());
  // a part that is not stored, written as if read
  PartRecord ghost = sample_part(c.id, 1, 5, "beta", "reserving");
  ghost.version = 3;
  ck_assert(!s->update_part(ghost, "x", &err));
  ck_assert_msg(Store::is_conflict(err), "%s", err.c_str());
  ck_assert_int_eq(s->parts(c.id, false).size(), 1);
  ck_assert_int_eq(told, 0);
  ck_assert_int_eq(conflicts, 4);
  ck_assert_int_eq(s->conflicts(), 4);
}
END_TEST

// A database of schema 2 (before the start leases, the row versions and
// the parts' clock shift) opens as schema 6 in either backend: the
// columns are added, version 1 and clock shift 0 for the rows it held,
// which are then written by compare-and-set like new ones.
START_TEST(schema_2_is_migrated) {
  const Store::Location loc = fresh_loc("v2.db");
  const std::string v2 =
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO meta VALUES('instance', 'fedcba9876543210'), ('schema', '2');"
      "CREATE TABLE coallocations("
      " id INTEGER PRIMARY KEY AUTOINCREMENT, uid INTEGER NOT NULL, \"user\" TEXT NOT NULL,"
      " state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', policy TEXT NOT NULL,"
      " nodes INTEGER NOT NULL, duration INTEGER NOT NULL, run_time INTEGER NOT NULL DEFAULT 0,"
      " overhead REAL NOT NULL DEFAULT 0, ready INTEGER NOT NULL, deadline INTEGER NOT NULL DEFAULT 0,"
      " clusters TEXT NOT NULL, max_parts INTEGER NOT NULL, request TEXT NOT NULL,"
      " submitted INTEGER NOT NULL, changed INTEGER NOT NULL,"
      " planned_start INTEGER NOT NULL DEFAULT 0, planned_end INTEGER NOT NULL DEFAULT 0,"
      " moves INTEGER NOT NULL DEFAULT 0, attempt INTEGER NOT NULL DEFAULT 0);"
      "CREATE TABLE parts("
      " co_id INTEGER NOT NULL REFERENCES coallocations(id), attempt INTEGER NOT NULL,"
      " idx INTEGER NOT NULL, cluster TEXT NOT NULL, nodes INTEGER NOT NULL, state TEXT NOT NULL,"
      " reason TEXT NOT NULL DEFAULT '', resv_key TEXT NOT NULL DEFAULT '',"
      " reservation_id INTEGER NOT NULL DEFAULT 0, reservation TEXT NOT NULL DEFAULT '',"
      " node_list TEXT NOT NULL DEFAULT '', job_key TEXT NOT NULL DEFAULT '',"
      " job_id INTEGER NOT NULL DEFAULT 0, job_state TEXT NOT NULL DEFAULT '',"
      " planned_start INTEGER NOT NULL DEFAULT 0, planned_end INTEGER NOT NULL DEFAULT 0,"
      " actual_start INTEGER NOT NULL DEFAULT 0, actual_end INTEGER NOT NULL DEFAULT 0,"
      " exit_code INTEGER NOT NULL DEFAULT -1, current INTEGER NOT NULL DEFAULT 1,"
      " slurm_partition TEXT NOT NULL DEFAULT '', slurm_account TEXT NOT NULL DEFAULT '',"
      " slurm_qos TEXT NOT NULL DEFAULT '',"
      " PRIMARY KEY(co_id, attempt, idx));"
      "INSERT INTO coallocations(uid, \"user\", state, policy, nodes, duration, ready, clusters,"
      " max_parts, request, submitted, changed, attempt)"
      " VALUES(1000, 'alice', 'running', 'flexco', 5, 600, 100, 'alpha', 4, '{}', 1, 1, 1);"
      "INSERT INTO parts(co_id, attempt, idx, cluster, nodes, state, job_id, slurm_qos)"
      " VALUES(1, 1, 0, 'alpha', 5, 'running', 42, 'long');";
  const std::string e = run_sql(loc, v2);
  ck_assert_msg(e.empty(), "%s", e.c_str());
  std::string err;
  auto s = Store::open(loc, &err);
  ck_assert_msg(s != nullptr, "%s", err.c_str());
  ck_assert_str_eq(s->instance().c_str(), "fedcba9876543210");
  ck_assert_str_eq(s->schema_version().c_str(), "7");
  auto co = s->get_coalloc(1);
  ck_assert(co.has_value() && co->version == 1 && co->state == "running");
  auto p = s->parts(1, true).at(0);
  ck_assert(p.version == 1 && p.job_id == 42 && p.qos == "long" && p.clock_shift == 0);
  p.clock_shift = -20;
  CoRecord stale = *co;
  co->state = "completed";
  p.state = "completed";
  std::vector<PartRecord> ps = {p};
  ck_assert_msg(s->write(*co, ps, "ended", &err), "%s", err.c_str());
  ck_assert(co->version == 2 && ps[0].version == 2);
  stale.state = "completed";  // allowed by the state table: only the version refuses it
  stale.reason = "stale";
  ck_assert(!s->update_coalloc(stale, "x", &err) && Store::is_conflict(err));
  s.reset();
  s = Store::open(loc, &err);  // again: nothing more to migrate
  ck_assert_msg(s != nullptr, "%s", err.c_str());
  ck_assert_str_eq(s->schema_version().c_str(), "7");
  ck_assert_int_eq(s->get_coalloc(1)->version, 2);
  ck_assert_int_eq(s->parts(1, true).at(0).clock_shift, -20);  // written and read back
  // the migrated database has the rendezvous' table
  RendezvousRecord r;
  r.co_id = 1;
  r.attempt = 1;
  r.token_hash = std::string(64, 'a');
  ck_assert_msg(s->put_rendezvous_token(r, &err), "%s", err.c_str());
  ck_assert(s->rendezvous_by_token(r.token_hash).has_value());
  // a database made new is schema 7 too
  auto fresh = Store::open(fresh_loc("v3.db"), &err);
  ck_assert_msg(fresh != nullptr, "%s", err.c_str());
  ck_assert_str_eq(fresh->schema_version().c_str(), "7");
  // and the lease's row, held by nobody
  Store::LeaseRow lr;
  Store::LeaseStep ls;
  ls.holder = "x";
  ls.lease_ms = 1000;
  ck_assert_msg(s->lease_step(ls, &lr, &err), "%s", err.c_str());
  ck_assert(lr.holder.empty() && lr.epoch == 0);
}
END_TEST

// Fail-stop on PostgreSQL: the server ends flexcod's session (an admin's
// pg_terminate_backend, a restart of the server, a lost link: libpq does
// not reconnect), and the next write and read are told to the failure
// handler, which flexcod's main() makes a fatal exit; nothing is written.
START_TEST(pg_lost_connection_reaches_the_handler) {
  std::string err;
  const Store::Location loc = fresh_loc("lost.db");
  auto s = Store::open(loc, &err);
  ck_assert_msg(s != nullptr, "%s", err.c_str());
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "submitted", &err));
  std::vector<PartRecord> ps = {sample_part(c.id, 1, 0, "alpha", "running")};
  ck_assert(s->write(c, ps, "placed", &err));
  std::vector<std::string> told;
  s->set_failure_handler([&told](const std::string& what) { told.push_back(what); });
  const std::string e = g_pg->exec("postgres",
                                   "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                   " WHERE datname='t_lost' AND application_name='flexcod'");
  ck_assert_msg(e.empty(), "%s", e.c_str());
  PartRecord ended = ps[0];
  ended.state = "completed";
  ck_assert(!s->update_part(ended, "part_job_ended", &err));
  ck_assert_msg(!told.empty(), "not told");
  ck_assert_msg(told[0].find("terminat") != std::string::npos ||
                    told[0].find("connection") != std::string::npos,
                "%s", told[0].c_str());
  const std::size_t n = told.size();
  ck_assert(!s->get_coalloc(c.id).has_value());  // a read fails too, and is told
  ck_assert_int_eq(told.size(), n + 1);
  // the part is as it was, seen by a new connection
  s.reset();
  auto again = Store::open(loc, &err);
  ck_assert_msg(again != nullptr, "%s", err.c_str());
  ck_assert_str_eq(again->parts(c.id, true).at(0).state.c_str(), "running");
}
END_TEST

// StorageLoc's errors name the database without its password, and one
// that cannot be reached is refused at open with libpq's reason.
START_TEST(pg_open_errors) {
  ck_assert(flexcod::db::conninfo_has_password("host=/x dbname=f password=s3cret"));
  ck_assert(flexcod::db::conninfo_has_password("postgresql://fc:s3cret@db.example/flexcod"));
  ck_assert(!flexcod::db::conninfo_has_password("host=/x dbname=f"));
  const std::string r = flexcod::db::redact_conninfo("host=/x password = 's3 cret' dbname=f");
  ck_assert_msg(r.find("s3") == std::string::npos && r.find("dbname=f") != std::string::npos,
                "%s", r.c_str());
  const std::string u = flexcod::db::redact_conninfo("postgresql://fc:s3cret@db.example/flexcod");
  ck_assert_msg(u == "postgresql://fc:***@db.example/flexcod", "%s", u.c_str());
  Store::Location loc;
  loc.type = "postgresql";
  loc.path = "host=" + g_dir + "/nowhere dbname=x password=s3cret";
  std::string err;
  ck_assert(Store::open(loc, &err) == nullptr);
  ck_assert_msg(err.find("cannot connect") != std::string::npos && err.find("s3cret") == std::string::npos,
                "%s", err.c_str());
  loc.path = "host=/x = bad";
  ck_assert(Store::open(loc, &err) == nullptr);
  ck_assert_msg(err.find("StorageLoc") != std::string::npos, "%s", err.c_str());
}
END_TEST

// The start-up rendezvous' rows: a token's hash found again, a
// registration written, the co-allocations whose barrier is open, a new
// token for a part replacing its old one, and the rows purged with their
// co-allocation.
START_TEST(rendezvous_rows) {
  std::string err;
  auto s = Store::open(fresh_loc("rdv.db"), &err);
  ck_assert_msg(s != nullptr, "%s", err.c_str());
  CoRecord c = sample_co();
  ck_assert(s->insert_coalloc(&c, "submitted", &err));
  c.state = "scheduled";
  c.attempt = 1;
  std::vector<PartRecord> ps = {sample_part(c.id, 1, 0, "alpha", "submitted"),
                                sample_part(c.id, 1, 1, "beta", "submitted")};
  ck_assert_msg(s->write(c, ps, "placed", &err), "%s", err.c_str());
  for (int i = 0; i < 2; ++i) {
    RendezvousRecord r;
    r.co_id = c.id;
    r.attempt = 1;
    r.idx = i;
    r.token_hash = std::string(64, static_cast<char>('a' + i));
    ck_assert_msg(s->put_rendezvous_token(r, &err), "%s", err.c_str());
  }
  ck_assert(!s->rendezvous_by_token(std::string(64, 'z')).has_value());
  auto one = s->rendezvous_by_token(std::string(64, 'b'));
  ck_assert(one.has_value() && one->co_id == c.id && one->idx == 1 && one->registered == 0);
  ck_assert(s->rendezvous_open().empty());  // nobody registered
  one->registered = 1000;
  one->contact = "tcp://h:1 \"quoted\"";
  one->nodes = "beta[1-2]";
  one->ranks = 7;
  ck_assert_msg(s->register_rendezvous(*one, &err), "%s", err.c_str());
  auto rows = s->rendezvous_parts(c.id, 1);
  ck_assert_int_eq(rows.size(), 2);
  ck_assert(rows[1].registered == 1000 && rows[1].contact == one->contact && rows[1].nodes == "beta[1-2]" &&
            rows[1].ranks == 7 && rows[0].registered == 0);
  ck_assert(s->rendezvous_open() == std::vector<std::int64_t>{c.id});
  // a part's new token replaces its old one (and its registration)
  RendezvousRecord again = rows[1];
  again.token_hash = std::string(64, 'c');
  ck_assert_msg(s->put_rendezvous_token(again, &err), "%s", err.c_str());
  ck_assert(!s->rendezvous_by_token(std::string(64, 'b')).has_value());
  ck_assert_int_eq(s->rendezvous_by_token(std::string(64, 'c'))->registered, 0);
  // another part with a token already used: refused by the unique index
  RendezvousRecord other = rows[0];
  other.token_hash = std::string(64, 'c');
  ck_assert(!s->put_rendezvous_token(other, &err));
  ck_assert(s->rendezvous_by_token(std::string(64, 'a')).has_value());
  // ended and purged: the rows go with it
  c.state = "completed";
  ck_assert_msg(s->update_coalloc(c, "done", &err), "%s", err.c_str());
  ck_assert_int_eq(s->purge_finished(flexcod::now_seconds() + 10, &err), 1);
  ck_assert(s->rendezvous_parts(c.id, 1).empty());
}
END_TEST

// The lease (flexcod/lease.hpp) by the database's clock: one holder at a
// time, taken by another only once expired (epoch one more, a takeover
// counted), renewed only by its holder; a write of a holder whose lease
// was taken over is refused with nothing written and the fence's handler
// told.  PostgreSQL: two stores (two flexcods) on one database.  SQLite
// (one flexcod per file): taken at once by the next open.
START_TEST(lease_one_holder_and_fencing) {
  std::string err;
  const Store::Location loc = fresh_loc("lease.db");
  auto a = Store::open(loc, &err);
  ck_assert_msg(a != nullptr, "%s", err.c_str());
  Store::LeaseStep sa;
  sa.holder = "a";
  sa.address = "http://a:1";
  sa.lease_ms = 60000;
  sa.take = true;
  Store::LeaseRow row;
  ck_assert_msg(a->lease_step(sa, &row, &err), "%s", err.c_str());
  ck_assert(row.holder == "a" && row.epoch == 1 && row.takeovers == 0);
  ck_assert(row.expires_ms > row.db_now_ms + 59000);
  sa.epoch = 1;
  sa.take = false;
  ck_assert(a->lease_step(sa, &row, &err) && row.holder == "a" && row.epoch == 1);  // renewed
  std::vector<std::string> lost;
  a->set_fence("a", 1, [&lost](const std::string& w) { lost.push_back(w); });
  CoRecord c = sample_co();
  ck_assert_msg(a->insert_coalloc(&c, "submitted", &err), "%s", err.c_str());
  ck_assert(lost.empty());
  if (!g_use_pg) {
    // the next flexcod on the file takes it at once (flock excludes others)
    a.reset();
    auto again = Store::open(loc, &err);
    ck_assert_msg(again != nullptr, "%s", err.c_str());
    Store::LeaseStep sb;
    sb.holder = "b";
    sb.lease_ms = 60000;
    sb.take = true;
    ck_assert(again->lease_step(sb, &row, &err) && row.holder == "a");  // not expired: not taken
    sb.force = true;
    ck_assert(again->lease_step(sb, &row, &err) && row.holder == "b" && row.epoch == 2 && row.takeovers == 1);
    return;
  }
  auto b = Store::open(loc, &err);
  ck_assert_msg(b != nullptr, "%s", err.c_str());
  Store::LeaseStep sb;
  sb.holder = "b";
  sb.address = "http://b:1";
  sb.lease_ms = 60000;
  sb.take = true;
  ck_assert(b->lease_step(sb, &row, &err) && row.holder == "a" && row.address == "http://a:1");
  // a's lease made short: b takes it once the database's clock passes it
  sa.lease_ms = 300;
  ck_assert(a->lease_step(sa, &row, &err) && row.holder == "a");
  bool taken = false;
  for (int i = 0; i < 100 && !taken; ++i) {
    ck_assert_msg(b->lease_step(sb, &row, &err), "%s", err.c_str());
    taken = row.holder == "b";
    if (!taken) usleep(50000);
  }
  ck_assert(taken && row.epoch == 2 && row.takeovers == 1 && row.address == "http://b:1");
  // a can neither renew nor write any more
  ck_assert(a->lease_step(sa, &row, &err) && row.holder == "b");
  CoRecord d = sample_co();
  ck_assert(!a->insert_coalloc(&d, "submitted", &err));
  ck_assert_int_eq(lost.size(), 1);
  ck_assert_msg(lost[0].find("another flexcod took over") != std::string::npos, "%s", lost[0].c_str());
  auto got = a->get_coalloc(c.id);
  ck_assert(got.has_value());
  got->state = "committing";
  ck_assert(!a->update_coalloc(*got, "x", &err));
  ck_assert_int_eq(lost.size(), 2);
  ck_assert_int_eq(b->list_coallocs(-1, "", 100).size(), 1);  // only the first insert
  ck_assert_str_eq(b->get_coalloc(c.id)->state.c_str(), "planning");
  // b writes under its own fence
  b->set_fence("b", 2, [](const std::string&) { ck_abort_msg("b fenced"); });
  CoRecord e = sample_co();
  ck_assert_msg(b->insert_coalloc(&e, "submitted", &err), "%s", err.c_str());
  // raised above an epoch a cluster has seen (a restored database)
  sb.epoch = 2;
  sb.take = false;
  sb.raise_to = 7;
  ck_assert(b->lease_step(sb, &row, &err) && row.holder == "b" && row.epoch == 7);
  // given back: the next to ask takes it at once
  sb.epoch = 7;
  sb.raise_to = 0;
  sb.release = true;
  ck_assert(b->lease_step(sb, &row, &err) && row.holder.empty());
  sa.epoch = 0;
  sa.take = true;
  ck_assert(a->lease_step(sa, &row, &err) && row.holder == "a" && row.epoch == 8);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("flexcod_store");
  TCase* tc = tcase_create("sqlite");
  tcase_add_test(tc, open_creates_and_keeps_instance);
  tcase_add_test(tc, open_fails_with_reason);
  tcase_add_test(tc, schema_1_is_migrated);
  tcase_add_test(tc, database_files_are_private);
  tcase_add_test(tc, coalloc_round_trip_and_transitions);
  tcase_add_test(tc, attempts_and_states);
  tcase_add_test(tc, list_filters);
  tcase_add_test(tc, submit_keys);
  tcase_add_test(tc, moves_and_event_seq);
  tcase_add_test(tc, committed_changes_survive_for_another_connection);
  tcase_add_test(tc, switch_with_move_is_one_transaction);
  tcase_add_test(tc, unknown_coalloc_write_fails);
  tcase_add_test(tc, snapshot_and_written_since);
  tcase_add_test(tc, failed_write_reaches_the_handler);
  tcase_add_test(tc, purge_finished_keeps_live_and_young);
  tcase_add_test(tc, one_store_per_database);
  tcase_add_test(tc, lease_one_holder_and_fencing);
  tcase_add_test(tc, older_copy_cannot_overwrite);
  tcase_add_test(tc, user_caps);
  tcase_add_test(tc, versions_compare_and_set);
  tcase_add_test(tc, schema_2_is_migrated);
  tcase_add_test(tc, rendezvous_rows);
  tcase_set_timeout(tc, 30);
  suite_add_tcase(s, tc);
  // The same tests where the backend matters, on PostgreSQL (the SQLite
  // files' modes, WAL, busy lock and second connection stay above).
  TCase* pg = tcase_create("postgresql");
  tcase_add_checked_fixture(pg, use_pg, nullptr);
  tcase_add_test(pg, coalloc_round_trip_and_transitions);
  tcase_add_test(pg, attempts_and_states);
  tcase_add_test(pg, list_filters);
  tcase_add_test(pg, submit_keys);
  tcase_add_test(pg, moves_and_event_seq);
  tcase_add_test(pg, switch_with_move_is_one_transaction);
  tcase_add_test(pg, unknown_coalloc_write_fails);
  tcase_add_test(pg, snapshot_and_written_since);
  tcase_add_test(pg, purge_finished_keeps_live_and_young);
  tcase_add_test(pg, lease_one_holder_and_fencing);
  tcase_add_test(pg, older_copy_cannot_overwrite);
  tcase_add_test(pg, user_caps);
  tcase_add_test(pg, versions_compare_and_set);
  tcase_add_test(pg, schema_2_is_migrated);
  tcase_add_test(pg, rendezvous_rows);
  tcase_add_test(pg, pg_lost_connection_reaches_the_handler);
  tcase_add_test(pg, pg_open_errors);
  tcase_set_timeout(pg, 60);
  suite_add_tcase(s, pg);
  return s;
}

}  // namespace

int main() {
  char dir[] = "/tmp/check_flexcod_store.XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    std::printf("Bail out! mkdtemp failed\n");
    return 1;
  }
  g_dir = dir;
  // A real PostgreSQL for the "postgresql" test case; without one the
  // test fails (contrib/install-deps installs it), it does not skip.
  PgServer pg;
  const std::string why = pg.start();
  if (!why.empty()) {
    std::printf("Bail out! PostgreSQL: %s\n", why.c_str());
    return 1;
  }
  g_pg = &pg;
  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  pg.stop();
  std::string cmd = "rm -rf '" + g_dir + "'";
  if (std::system(cmd.c_str()) != 0) std::printf("# could not remove %s\n", g_dir.c_str());
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
