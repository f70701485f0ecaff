// SPDX-License-Identifier: GPL-2.0-or-later
// store.hpp - flexcod's state in SQLite (WAL, synchronous=FULL) or
// PostgreSQL (StorageType, flexcod.conf(5)): one Store over either
// backend of db.hpp, with one schema and one set of migrations.
//
// Tables: coallocations, parts (one row per part per placement attempt),
// transitions (every state change of a co-allocation or a part, with time
// and reason), moves, cluster_seq (last event processed per cluster) and
// meta (schema version, instance id).  Each mutating call is one
// transaction; a state change is committed here BEFORE the daemon acts on
// it, so after a crash the database always names every request that may be
// in flight (doc/flexcod.md, "Write before act").
//
// Compare-and-set: every co-allocation and part row carries a version,
// read into CoRecord::version and PartRecord::version.  A write (write,
// update_coalloc, update_part) of a row whose stored version is not the
// one its record was read with fails with an error that is_conflict()
// tells (nothing of it written, nothing told to the failure handler): the
// caller reads the row again and decides anew.  A write that succeeds
// sets the records' versions to the new ones, so a caller may go on
// writing what it wrote.  A new part is written with version 0.
//
// Thread-safe: one connection, every call under an internal mutex.

#ifndef FLEXCO_FLEXCOD_STORE_HPP
#define FLEXCO_FLEXCOD_STORE_HPP

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace flexcod {

struct CoRecord {
  std::int64_t id = 0;
  std::int64_t uid = 0;
  std::string user;
  std::string state;       // planning, committing, scheduled, running, completed, failed, cancelling, cancelled
  std::string reason;
  std::string policy;
  std::int64_t nodes = 0;
  std::int64_t duration = 0;
  std::int64_t run_time = 0;   // 0 until placed
  double overhead = 0.0;
  std::int64_t ready = 0;
  std::int64_t deadline = 0;   // 0 = none
  std::vector<std::string> clusters;  // allowed
  int max_parts = 0;
  std::string request;     // the submitted JSON (script, argv, environment, ...)
  std::int64_t submitted = 0;
  std::int64_t changed = 0;
  std::int64_t planned_start = 0;  // 0 = none
  std::int64_t planned_end = 0;
  int moves = 0;
  int attempt = 0;         // the current placement attempt (parts.attempt)
  std::int64_t version = 0;  // the row's, as read (compare-and-set); 0 = not stored
};

struct PartRecord {
  std::int64_t co_id = 0;
  int attempt = 0;
  int idx = 0;
  std::int64_t version = 0;  // the row's, as read (compare-and-set); 0 = a new part
  std::string cluster;
  std::int64_t nodes = 0;
  std::string state;  // planned, reserving, tentative, confirming, confirmed, submitting, submitted,
                      // running, completed, failed, cancelling, cancelled, released
  std::string reason;
  std::string resv_key;        // Idempotency-Key of the create request
  std::int64_t reservation_id = 0;  // 0 = unknown
  std::string reservation;     // flexco_<id>
  std::string node_list;
  std::string job_key;
  std::int64_t job_id = 0;
  std::string job_state;
  std::int64_t planned_start = 0;
  std::int64_t planned_end = 0;
  std::int64_t actual_start = 0;
  std::int64_t actual_end = 0;
  int exit_code = -1;
  bool current = true;  // belongs to the co-allocation's current placement
  // Where and how its job runs (issue 17; "" = the cluster's default):
  // the reservation's partition, the part job's account and QOS.
  std::string partition, account, qos;
  // The start gate (doc/flexcod.md, "The start gate"): the end of the
  // part job's start lease by flexcod's clock (0: the gate was never
  // opened), and whether its plugin confirmed the start.
  std::int64_t lease_end = 0;
  bool start_confirmed = false;
  // Its cluster's clock less flexcod's, in whole seconds, as estimated when
  // the part was planned (doc/flexcod.md, "Clocks"): its reservation's and
  // part job's start were sent as planned_start plus this, and the times
  // its cluster reports are kept less this.
  std::int64_t clock_shift = 0;
};

struct Transition {
  std::int64_t time = 0;
  std::string what;  // "coallocation" or "part N"
  std::string from;
  std::string to;
  std::string reason;
};

struct MoveRecord {
  std::int64_t time = 0;
  std::string kind;  // shift, remap
  std::int64_t from_start = 0, to_start = 0, from_end = 0, to_end = 0;
  std::string from_parts;  // JSON array [{"cluster","nodes"}]
  std::string to_parts;
  std::string reason;
};

// An Idempotency-Key of POST /v1/coallocations: the co-allocation its first
// request made and the digest of that request's body.  Kept kSubmitKeyKeep
// seconds.
struct SubmitKey {
  std::string digest;
  std::int64_t co_id = 0;
  std::int64_t created = 0;
};
constexpr std::int64_t kSubmitKeyKeep = 24 * 3600;

// A part's place at the start-up rendezvous (doc/one-program.md): the
// hash of its capability token and, once it registered, what it said.
struct RendezvousRecord {
  std::int64_t co_id = 0;
  int attempt = 0;
  int idx = 0;
  std::string token_hash;        // SHA-256 of the token, hex; the token is never stored
  std::int64_t registered = 0;   // when it first registered; 0 = not yet
  std::string contact, nodes;
  std::int64_t ranks = 0;
};

namespace db {
class Conn;
}

class Store {
 public:
  // Where the state is (flexcod.conf's StorageType, StateFile or
  // StorageLoc, StoragePassFile).
  struct Location {
    std::string type = "sqlite";  // sqlite | postgresql
    std::string path;             // sqlite: the file; postgresql: libpq's conninfo
    std::string passfile;         // postgresql: libpq's passfile ("" = its default)
  };
  // Opens (creating the schema if needed, migrating an older one) the
  // database; nullptr and *error if it cannot, or (SQLite) if another
  // flexcod uses it (flock on the file).  Several flexcods may open one
  // PostgreSQL database: the lease (flexcod/lease.hpp) says which acts.
  static std::unique_ptr<Store> open(const Location& where, std::string* error);
  // The SQLite database at `path`.
  static std::unique_ptr<Store> open(const std::string& path, std::string* error);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // What a read or write that fails (store.cpp's Stmt and Txn: a
  // statement that cannot be prepared, a step, BEGIN or COMMIT ending in
  // an error such as SQLITE_FULL, SQLITE_IOERR or SQLITE_BUSY past the
  // 5 s busy timeout) is told to, with what failed and SQLite's message.
  // flexcod's handler stops the daemon (main.cpp, doc/flexcod.md "When the
  // database fails"): a read that ends early looks like a shorter list and
  // a write that did not happen like one that did, so nothing may act on
  // either.  None set (the default): the call only returns false or what
  // it read.  Set it before other threads use the store.
  using Failure = std::function<void(const std::string&)>;
  void set_failure_handler(Failure f) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_ = std::move(f);
  }

  // "sqlite" or "postgresql"
  const char* kind() const;
  // meta's 'schema' ("6"), the same for both backends.
  std::string schema_version();

  // The error text of a compare-and-set conflict starts with kConflict.
  static constexpr const char* kConflict = "write conflict: ";
  static bool is_conflict(const std::string& error);
  // Told every conflict's text (flexcod logs it: many callers only go on
  // and read again at their next pass), and their count.  Set it before
  // other threads use the store; it must not call the store.
  void set_conflict_handler(Failure f) {
    std::lock_guard<std::mutex> lock(mutex_);
    conflict_ = std::move(f);
  }
  std::int64_t conflicts();

  // A random id made when the database was created: part of every
  // Idempotency-Key, so a fresh database never collides with old keys.
  const std::string& instance() const { return instance_; }
  // Random at every open of the database (8 hex digits): part of every new
  // Idempotency-Key, so that a database restored from a backup never sends
  // a key it already sent after that backup (doc/flexcod.md).
  const std::string& run() const { return run_; }

  // Inserts a co-allocation (id assigned) with its first transition.  With
  // a non-empty `key` (an Idempotency-Key of co->uid) the key is stored
  // with `digest` in the same transaction, unless a live one is there:
  // then nothing is inserted, *taken is set to it and true returned.
  //
  // With `cap` (MaxCoallocationsPerUser, MaxNodeHoursPerUser; 0 = none),
  // the user's live (not final) co-allocations are counted in the same
  // transaction, so two submissions at once cannot both pass: over a
  // limit nothing is inserted, *capped says which and false is returned
  // with *error empty.
  struct UserCap {
    std::int64_t max_live = 0;          // co-allocations
    std::int64_t max_node_seconds = 0;  // nodes x duration, summed
  };
  bool insert_coalloc(CoRecord* co, const std::string& reason, std::string* error,
                      const std::string& key = "", const std::string& digest = "",
                      std::optional<SubmitKey>* taken = nullptr, const UserCap* cap = nullptr,
                      std::string* capped = nullptr);
  // The live (younger than kSubmitKeyKeep) key `key` of `uid`, if any.
  std::optional<SubmitKey> find_key(std::int64_t uid, const std::string& key);
  // Writes every column of `co`; records a transition if the state changed.
  bool update_coalloc(CoRecord& co, const std::string& reason, std::string* error);
  // Writes `co` and inserts/overwrites `parts` in one transaction (with a
  // transition per changed state), and `move` when given.  Refused, with
  // nothing written, when a state may not be overwritten by the one given
  // (states.cpp's may_overwrite) or a version is not the stored one
  // (is_conflict).  On success the records' versions are the new ones.
  bool write(CoRecord& co, std::vector<PartRecord>& parts, const std::string& reason,
             std::string* error, const MoveRecord* move = nullptr);
  bool write(CoRecord& co, std::vector<PartRecord>&& parts, const std::string& reason,
             std::string* error, const MoveRecord* move = nullptr) {
    return write(co, parts, reason, error, move);
  }
  // Writes one part (transition if its state changed), as write() does.
  bool update_part(PartRecord& part, const std::string& reason, std::string* error);

  std::optional<CoRecord> get_coalloc(std::int64_t id);
  // Newest first; uid < 0 = all users; state "" = all, "active" = unfinished.
  std::vector<CoRecord> list_coallocs(std::int64_t uid, const std::string& state, int limit);
  // Co-allocations in any of `states`.
  std::vector<CoRecord> in_states(const std::vector<std::string>& states);
  // Parts of a co-allocation: all attempts, or the current placement only.
  std::vector<PartRecord> parts(std::int64_t co_id, bool current_only);
  // Parts in any of `states` (every co-allocation, every attempt).
  std::vector<PartRecord> parts_in_states(const std::vector<std::string>& states);
  // The co-allocations in any of `states` whose current placement has a
  // part on `cluster` (one query, not one per co-allocation).
  std::vector<std::int64_t> with_part_on(const std::string& cluster,
                                         const std::vector<std::string>& states);
  std::vector<Transition> transitions(std::int64_t co_id);
  bool add_move(std::int64_t co_id, const MoveRecord& m, std::string* error);
  std::vector<MoveRecord> moves(std::int64_t co_id);
  std::int64_t count_moves();  // every co-allocation's
  std::map<std::string, std::int64_t> count_by_state();

  // Deletes the co-allocations that ended (completed, failed, cancelled)
  // before `before` (their last change), with their parts, transitions,
  // moves and Idempotency-Keys, in one transaction; how many, or -1.
  // PurgeFinishedAfter (flexcod.conf(5)): the requests hold job scripts and
  // environments, which would otherwise be kept for ever.
  std::int64_t purge_finished(std::int64_t before, std::string* error);

  // The start-up rendezvous (rendezvous_engine.cpp).  A part's token
  // hash is written before its job is submitted; registering updates its
  // row (registered stays the first time).
  bool put_rendezvous_token(const RendezvousRecord& r, std::string* error);
  std::optional<RendezvousRecord> rendezvous_by_token(const std::string& token_hash);
  std::vector<RendezvousRecord> rendezvous_parts(std::int64_t co_id, int attempt);
  bool register_rendezvous(const RendezvousRecord& r, std::string* error);
  // Scheduled or running co-allocations with a part of their current
  // placement registered.
  std::vector<std::int64_t> rendezvous_open();

  std::int64_t event_seq(const std::string& cluster);
  bool set_event_seq(const std::string& cluster, std::int64_t seq, std::string* error);

  // A rescheduling pass's view of the database, read at once (two queries
  // under one hold of the mutex): the co-allocations in any of `states`
  // (by id) and the parts of their current placements (by co_id, in
  // attempt, idx order), with the write mark they were read at.
  struct Snapshot {
    std::vector<CoRecord> cos;
    std::map<std::int64_t, std::vector<PartRecord>> parts;
    std::uint64_t mark = 0;
  };
  Snapshot snapshot(const std::vector<std::string>& states);
  // Whether co-allocation `co_id` or one of its parts may have been
  // written since `mark` (a Snapshot's): true for certain if it was, and
  // also when the record of recent writes no longer reaches back that far.
  bool written_since(std::int64_t co_id, std::uint64_t mark);

 private:
  struct Token {};

 public:
  Store(Token, std::unique_ptr<db::Conn> db);

 private:
  bool exec(const char* sql, std::string* error);
  bool migrate(std::string* error);  // an older database to this schema
  bool put_co(const CoRecord& co, std::string* error);
  bool put_part(const PartRecord& p, std::string* error);
  bool add_transition(std::int64_t co_id, const std::string& what, const std::string& from,
                      const std::string& to, const std::string& reason, std::string* error);
  std::optional<CoRecord> get_co_locked(std::int64_t id);
  std::optional<SubmitKey> find_key_locked(std::int64_t uid, const std::string& key, std::int64_t now);
  bool insert_move(std::int64_t co_id, const MoveRecord& m, std::string* error);
  std::optional<PartRecord> get_part_locked(std::int64_t co, int attempt, int idx);
  void note_write_locked(std::int64_t co_id);
  std::string conflict_co(std::int64_t id);
  std::string conflict_part(const PartRecord& p);
  std::string note_conflict_locked(std::string what);

 public:
  // The lease row (flexcod/lease.hpp), as one step read or changed it.
  struct LeaseRow {
    std::string holder;   // "" = nobody
    std::string address;  // the holder's AdvertiseURL
    std::int64_t epoch = 0;
    std::int64_t expires_ms = 0;  // by the database's clock
    std::int64_t db_now_ms = 0;   // the database's clock at the step
    std::int64_t takeovers = 0;   // times taken from another holder
  };
  // One step of the lease, in one transaction by the database's clock:
  //  - `holder` holds it at `epoch`: renewed (expires = now + lease_ms),
  //    with its epoch raised to raise_to if that is higher;
  //  - else with `take` and the lease free or expired (or `force`: SQLite,
  //    whose flock already excludes every other flexcod): taken, its epoch
  //    one more (a takeover if another held it);
  //  - release: given back if held (expires at once), nothing else;
  //  - else only read.
  // *row is the row after the step.  false and *error if the database
  // failed (not told to the failure handler: the lease judges).
  struct LeaseStep {
    std::string holder, address;
    std::int64_t epoch = 0;
    std::int64_t lease_ms = 0;
    std::int64_t raise_to = 0;
    bool take = false, force = false, release = false;
  };
  bool lease_step(const LeaseStep& step, LeaseRow* row, std::string* error);
  // Fencing: from now on, every write transaction checks that the lease
  // row still names `holder` at `epoch` (and keeps it so until it ends);
  // when it does not, nothing is written and `lost` is told.
  struct Fence {
    std::string holder;
    std::int64_t epoch = 0;  // 0: no fence (before the lease is held)
    Failure lost;
  };
  void set_fence(const std::string& holder, std::int64_t epoch, Failure lost);

 private:
  Fence fence_;
  std::mutex mutex_;
  Failure fail_;
  Failure conflict_;
  std::int64_t conflicts_ = 0;
  // Writes to co-allocations and parts (written_since): their count, the
  // last one of each co-allocation written since floor_, at most
  // kWrittenKeep entries (then forgotten: floor_ moves up to writes_).
  static constexpr std::size_t kWrittenKeep = 65536;
  std::uint64_t writes_ = 0;
  std::uint64_t floor_ = 0;
  std::map<std::int64_t, std::uint64_t> written_;
  std::unique_ptr<db::Conn> db_;  // exclusive to this flexcod (db.hpp)
  std::string instance_;
  std::string run_;
};

std::int64_t now_seconds();

}  // namespace flexcod

#endif
