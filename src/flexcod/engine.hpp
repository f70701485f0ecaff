// SPDX-License-Identifier: GPL-2.0-or-later
// engine.hpp - flexcod's co-allocation engine: availability from the
// clusters, planning (core/coalloc.hpp), the all-or-nothing commit protocol,
// cancellation, recovery, the clusters' event streams and rescheduling on
// early completion (make-before-break moves).
//
// Every operation on one co-allocation holds that co-allocation's mutex;
// background work (recovery, the reaper of released parts, event followers)
// only touches co-allocations whose mutex it can take.  Every state change
// is written to the Store before the call to a cluster that it announces.

#ifndef FLEXCO_FLEXCOD_ENGINE_HPP
#define FLEXCO_FLEXCOD_ENGINE_HPP

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/availability.hpp"
#include "core/coalloc.hpp"
#include "core/flexcod_conf.hpp"
#include "core/http_client.hpp"
#include "flexcod/claims.hpp"
#include "flexcod/lease.hpp"
#include "flexcod/rendezvous.hpp"
#include "flexcod/states.hpp"
#include "flexcod/store.hpp"
#include "service/prometheus.hpp"

namespace flexcod {

using flexco::http::JsonPtr;
using flexco::service::Exposition;
using flexco::service::Histogram;

struct ApiError {
  int status = 500;
  std::string code;
  std::string message;
};

// A JSON answer with its HTTP status, or an ApiError.
struct Answer {
  int status = 200;
  JsonPtr body;
};
using ApiResult = flexco::BasicResult<Answer, ApiError>;

struct Caller {
  std::int64_t uid = -1;
  std::string user;
  bool admin = false;
  // A web view session token with UiReadAll=yes: reads every
  // co-allocation, as an admin does (the token never changes anything).
  bool read_all = false;
};

class Engine {
 public:
  // `lease` (none: this flexcod is alone and always in charge): the
  // requests to the plugins carry its epoch, and only with it held do
  // they go out (doc/flexcod.md, "High availability").
  Engine(const flexco::conf::FlexcodConf& conf, Store& store, flexco::auth::Signer signer,
         const Lease* lease = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Recovery of the database (synchronous, no network), then the background
  // threads: per-cluster reconciliation with backoff, event followers, the
  // reaper, and the publisher in AvailabilityMode=publish.
  void start();
  // Stops and joins every thread (in-flight requests finish first).
  void stop();
  // SIGHUP: settings other than the cluster list and the listener.
  void reload(const flexco::conf::FlexcodConf& conf);

  // `key`: the request's Idempotency-Key ("" = none), checked by the
  // server (1..kMaxSubmitKey printable characters).
  ApiResult submit(const Caller& who, const json_t* body, const std::string& key = "");
  ApiResult list(const Caller& who, const std::string& state, const std::string& user, int limit);
  ApiResult show(const Caller& who, std::int64_t id);
  ApiResult cancel(const Caller& who, std::int64_t id);
  ApiResult modify(const Caller& who, std::int64_t id, const json_t* body);
  ApiResult clusters();
  // The cluster's availability profile for the next day (its plugin's GET
  // /v1/profile), cached for kViewProfileMaxAge seconds: the web view's.
  ApiResult cluster_profile(const std::string& name);
  static constexpr std::int64_t kViewProfileMaxAge = 30;
  static constexpr std::int64_t kViewProfileHorizon = 86400;
  ApiResult stats();
  // GET /metrics: the counters of stats() and more, in Prometheus' text
  // format (doc/flexcod.md, "Metrics").
  std::string metrics_text();

  void count_request(int status);

  // The start-up rendezvous (rendezvous_engine.cpp; doc/one-program.md):
  // with the part's token, register `reg` for part `part` (reg given) or
  // read the layout (part -1), waiting up to `wait` seconds for every
  // part of co-allocation `co`.
  ApiResult rendezvous(const std::string& token, std::int64_t co, int part,
                       const rendezvous::Registration* reg, int wait);
  // High availability (ha.cpp): whether this flexcod acts (holds the
  // lease and its recovery ran: start() returned); a standby answers
  // reads only.  The lease as GET /v1/stats and /metrics show it.
  bool in_charge() const;
  // The address of the flexcod in charge, as its lease row says ("" =
  // none known).
  std::string leader_address() const;

 private:
  ApiResult replay_submit(const Caller& who, const SubmitKey& k, const std::string& digest);
  struct Cluster;
  struct Spec;
  struct Gathered;
  struct PassProfiles;
  struct ProfileFetch;

  // Locks of co-allocations.
  std::shared_ptr<std::mutex> co_mutex(std::int64_t id);

  // Planning.  read_profile: one cluster's availability (its cached
  // published profile, or GET /v1/profile bounded by ClusterTimeout);
  // nothing, with *why, when it did not answer or its circuit is open.
  std::optional<flexco::Availability> read_profile(std::size_t ci,
                                                   const flexco::conf::FlexcodConf& conf,
                                                   std::string* why,
                                                   const std::string* partition = nullptr);
  // The profiles of `which` that pp lacks or holds stale, read in parallel.
  void pass_profiles(PassProfiles& pp, const std::vector<std::size_t>& which);
  Gathered gather(const std::vector<std::size_t>& which, const Spec& spec);
  // dry_run: plan on a copy of the planners' state (the next-fit pointer,
  // HPCM's random state), so that asking changes nothing.
  bool plan(const Spec& spec, const std::vector<std::size_t>& which, Gathered& g,
            flexco::CoallocPlan* out, std::string* why, bool dry_run = false);
  // HPCM's M/M/c rates of cluster ci as learned so far (its early-end
  // events over the last flexco::kHpcmRateWindow seconds); 0: not learned.
  flexco::HpcmRates hpcm_rates(std::size_t ci, std::int64_t now);
  // HPCM's P(S, d) of one part on cluster ci with `capacity` nodes, for the
  // deadline `deadline` (0: none), as the planner computes it at `now`.
  double hpcm_p(std::size_t ci, std::int64_t capacity, std::int64_t deadline, std::int64_t now);

  // A window a cluster refused for want of free nodes (409 not_available):
  // its published profile counted enough nodes, but not the same ones free
  // throughout (Slurm reserves whole nodes for the whole window).  The
  // re-plan sees at most nodes - 1 free there on that cluster.
  struct Refusal {
    std::string cluster;
    std::int64_t start, end, nodes;
  };
  // Commit protocol, on a locked co-allocation; true when scheduled.
  bool place(CoRecord& co, const Spec& spec, std::string* why);
  // A submission's partitions, asked of their clusters: the refusal if
  // one has no such partition.
  std::optional<ApiError> check_partitions(const Spec& s);
  void apply_refusals(Gathered& g, const std::vector<Refusal>& refusals);
  // Takes from g's profiles (and caps its offers by) what placements and
  // moves reserved, or are reserving, since g's reads began (claims_);
  // called under the claim.
  void subtract_unseen(Gathered& g);
  bool commit_attempt(CoRecord& co, const Spec& spec, const flexco::CoallocPlan& plan,
                      const std::vector<std::size_t>& which, std::set<std::string>* bad_clusters,
                      std::string* why, std::unique_lock<std::mutex>* claim = nullptr,
                      std::vector<Refusal>* refusals = nullptr);
  // The concurrent steps shared by a commit and a move: one request per
  // part; the parts that succeed are filled in, the result holds each
  // part's error (or none).
  using StepErrors = std::vector<std::optional<flexco::http::Error>>;
  std::vector<PartRecord> new_parts(const CoRecord& co, const Spec& spec,
                                    const flexco::CoallocPlan& plan, int attempt, std::int64_t start, std::int64_t length);
  // Both enter the parts in claims_ before the first request and give up
  // *claim (if given) then, before any answer.
  StepErrors reserve_parts(const CoRecord& co, std::vector<PartRecord>& parts,
                           std::int64_t confirm_within, const char* note,
                           std::unique_lock<std::mutex>* claim = nullptr);
  // cores-seq's commit: one reserve at a time in the parts' order, none
  // after the first refusal (those parts are released unasked).
  StepErrors reserve_parts_in_order(const CoRecord& co, std::vector<PartRecord>& parts,
                                    std::int64_t confirm_within,
                                    std::unique_lock<std::mutex>* claim = nullptr);
  std::vector<ClaimLedger::Id> hold_claims(const std::vector<PartRecord>& parts);
  flexco::http::ReservationRequest reserve_request(const CoRecord& co, const PartRecord& p,
                                                   std::int64_t confirm_within);
  void reserved(PartRecord& p, const flexco::http::Reservation& r, const char* note);
  StepErrors confirm_parts(const CoRecord& co, int attempt, std::vector<PartRecord>& parts,
                           const char* note);
  StepErrors submit_parts(const CoRecord& co, const Spec& spec, std::int64_t time_limit,
                          std::vector<PartRecord>& parts, const char* note);
  // Releases every part given (reservation and part job); false if some
  // cluster could not be reached (those parts stay "cancelling").
  bool release(CoRecord& co, std::vector<PartRecord>& parts, PartState final_state,
               const std::string& reason, const char* written_step = nullptr);
  // The co-allocation, with its state and reason set, fails: it and its
  // parts to release (cancelling) are written in one transaction, then the
  // parts are released, so that a crash at any moment leaves either a
  // running co-allocation or a failed one whose parts recovery releases.
  void fail_and_release(CoRecord& co, std::vector<PartRecord>& parts);
  bool release_part(const CoRecord& co, PartRecord& p);
  // Part jobs are submitted held (no part can start while another part's
  // submission is unanswered, so a rolled-back or abandoned attempt never
  // ran anything); once every part has its job and the co-allocation is
  // written scheduled (or a move's switch is written), their holds are
  // released, concurrently.  A part whose cluster does not answer is left
  // to the reaper (retry_pending); false then.

  // The start gate (gate.cpp; doc/flexcod.md, "The start gate"): part
  // jobs stay held until the planned start, then are released under a
  // start lease once every part's cluster answers, and confirmed once
  // every release was answered.  gate_loop is its thread (every 500 ms).
  void gate_loop();
  void run_gate(std::int64_t co_id);
  void fail_at_gate(CoRecord& co, std::vector<PartRecord>& parts, const std::string& why);
  std::int64_t lease_seconds();
  // t (flexcod's clock) by cluster name's clock, as far as its offset is known
  std::int64_t cluster_time(const std::string& name, std::int64_t t);

  // Rescheduling (doc/flexcod.md, "Rescheduling"): after an early end and
  // the cluster's next backfill pass, every scheduled co-allocation is
  // offered Shift or Shift+Remap; PATCH moves through the same path.
  void resched_loop();
  // true if some move was abandoned (worth another pass soon).  ended:
  // PassProfiles::ended; *queue_first (if given): the clusters the pass
  // left out because their profile did not show their queue went first.
  bool resched_pass(const std::string& trigger,
                    const std::map<std::size_t, std::int64_t>& ended,
                    std::set<std::size_t>* queue_first = nullptr);
  // On a locked, scheduled co-allocation.  constraints=false: move only if
  // the end comes `margin` s earlier; true (PATCH): to any placement that
  // satisfies co's deadline and clusters.  true when moved (co updated).
  // `pass`: the rescheduling pass's profiles (read once per pass).
  // try_move's parts.  move_candidate: whether co may move at all, its
  // spec, allowed clusters (by index) and the clusters to read.
  // own_given_back: av with co's own reservations given back (copies of
  // the clusters that hold a part of it).  plan_reschedule: a pass's Shift
  // or Shift+Remap on the profiles av of clusters idx; pure (no request,
  // lock or database), so a pass runs it for many at once.  pass_verdict:
  // 0 (*why) if try_move would not move co on the pass's profiles as they
  // are, 1 if it might (or would read a profile first).
  bool move_candidate(const CoRecord& co, const std::vector<PartRecord>& parts, bool constraints,
                      std::int64_t now, Spec* spec, std::vector<char>* allowed_ci,
                      std::vector<std::size_t>* which, std::string* why);
  bool own_given_back(const std::vector<PartRecord>& parts, const std::vector<std::size_t>& idx,
                      const std::vector<const flexco::Availability*>& av,
                      std::vector<flexco::Availability>* copies,
                      std::vector<const flexco::Availability*>* adj_av, std::string* why);
  bool plan_reschedule(const CoRecord& co, const std::vector<PartRecord>& parts, const Spec& spec,
                       const std::vector<char>& allowed_ci, const std::vector<std::size_t>& idx,
                       const std::vector<const flexco::Availability*>& av, const std::string& mode,
                       std::int64_t margin, std::int64_t now, flexco::CoallocPlan* next,
                       std::string* kind, std::string* why);
  int pass_verdict(const CoRecord& co, const std::vector<PartRecord>& parts,
                   const std::string& mode, std::int64_t margin, const PassProfiles& pp,
                   std::string* why);
  bool try_move(CoRecord& co, const std::string& mode, std::int64_t margin,
                const std::string& trigger, bool constraints, std::string* why,
                PassProfiles* pass = nullptr,
                const std::vector<PartRecord>* known_parts = nullptr);
  // Make-before-break: the new set reserved, confirmed and given its part
  // jobs, then the switch (one transaction, with the move record), then
  // the old set released.  plan's clusters are our indices.
  bool move(CoRecord& co, const Spec& spec, std::vector<PartRecord>& old_parts,
            const flexco::CoallocPlan& plan, const std::string& kind, const std::string& reason,
            std::string* why, std::unique_lock<std::mutex>* claim = nullptr);
  Spec spec_from(const CoRecord& co);

  // The rendezvous (rendezvous_engine.cpp).  watch_rendezvous: from the
  // reaper's loop, fails a co-allocation whose barrier's deadline passed.
  int rendezvous_timeout();
  std::string rendezvous_url(const std::string& cluster);
  bool issue_rendezvous_token(const PartRecord& p, std::string* token, std::string* error);
  std::vector<rendezvous::PartView> rendezvous_view(const CoRecord& co, std::int64_t* deadline);
  void watch_rendezvous();
  static constexpr int kAbortTell = 3;  // s a failure waits for the waiters to be told
  std::mutex rdv_mutex_;
  std::condition_variable rdv_cv_;
  std::uint64_t rdv_gen_ = 0;                       // registrations so far (rdv_mutex_)
  std::map<std::int64_t, std::string> rdv_abort_;   // failing now: why (rdv_mutex_)
  std::map<std::int64_t, int> rdv_waiters_;         // calls waiting, by co-allocation

  // Background.
  void recover_db();
  void cluster_loop(std::size_t ci);
  bool reconcile_cluster(std::size_t ci);
  // Until stop (false) or until the plugin says events were lost (true:
  // the cluster must be reconciled again).
  bool follow_events(std::size_t ci);
  void handle_event(std::size_t ci, const flexco::http::Event& e);
  void reap_loop();
  // The part-start watchdog (PartStartSkew, PartStartPolicy), from the
  // reaper's loop: a running co-allocation with a part that has not
  // started PartStartSkew seconds after its first part did.
  void watch_part_starts();
  // Whether cluster i's clock is more than `bound` seconds off flexcod's
  // (MaxClockOffset; 0 = never), with its offset.
  bool clock_far(std::size_t i, int bound, double* offset);
  // PurgeFinishedAfter: at most once an hour (reaper only).
  void purge_finished();
  void publish_loop(std::size_t ci);
  bool wait_stop(int ms);

  JsonPtr co_json(const CoRecord& co, bool full);
  // for_read: GET, where Caller::read_all counts too.
  std::optional<CoRecord> visible(const Caller& who, std::int64_t id, bool for_read = false);
  Cluster* cluster(const std::string& name);
  // The tag on every reservation this flexcod makes ("flexcod-<instance>"):
  // its orphan sweep deletes only reservations with this owner.
  std::string owner_tag() const;
  std::string key(const CoRecord& co, int attempt, int idx, const char* what) const;
  void bump(const std::string& what, std::int64_t n = 1);
  // The co-allocation's transition that its current parts' states imply
  // (running, completed, failed with the other parts released, cancelled).
  // wait=false skips it when the co-allocation's mutex is taken.
  void finish_if_done(std::int64_t co_id, bool wait = false);
  void give_back_ended(const CoRecord& co, std::vector<PartRecord>& parts);
  // Requests to a cluster that could not be made now and are retried by
  // the reaper with its backoff: an ended part's reservation to give back.
  enum class Pending { kGiveBack };
  void add_pending(Pending kind, const PartRecord& p);
  void retry_pending();

  flexco::conf::FlexcodConf conf_;
  std::mutex conf_mutex_;
  Store& store_;
  std::vector<std::unique_ptr<Cluster>> clusters_;
  std::map<std::string, std::size_t> cluster_index_;  // name -> index in clusters_

  std::mutex locks_mutex_;
  std::map<std::int64_t, std::shared_ptr<std::mutex>> locks_;
  // co_mutex drops the locks nobody holds when locks_ reaches this size,
  // then sets it to twice what is left (at least kMinLockPrune).
  std::size_t locks_prune_at_ = 1024;

  std::mutex planner_mutex_;
  flexco::PlannerState planner_state_;

  // Claiming capacity: one placement or move at a time plans and enters
  // its parts in claims_, so that each plans on what the one before it
  // took.  Without it, concurrent submissions planned on the same free
  // nodes and all but one were refused.  A placement reads the profiles
  // and probes before taking it and sends its reservations after giving
  // it up (a slow cluster delays only the placements waiting for its
  // answers); it subtracts claims_ from what it read (subtract_unseen).  A
  // move still reads its profiles under it.  Taken after a co-allocation's
  // own lock, never before it.
  std::mutex claim_mutex_;
  ClaimLedger claims_;

  std::mutex stats_mutex_;
  std::map<std::string, std::int64_t> counters_;
  std::map<int, std::int64_t> requests_;
  std::int64_t commit_count_ = 0, commit_ms_sum_ = 0, commit_ms_max_ = 0;
  // GET /metrics (stats_mutex_): seconds of commits, moves, rescheduling
  // passes; every request to each cluster's plugin (long polls apart)
  Histogram commit_hist_{{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  Histogram move_hist_{{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  Histogram resched_hist_{{0.01, 0.1, 0.5, 1, 5, 10, 30, 60}};
  std::map<std::string, Histogram> cluster_hist_;
  std::map<std::string, std::int64_t> cluster_failed_;  // no answer, or 5xx
  void observe_cluster(const std::string& name, double seconds, bool answered, int status,
                       bool long_poll);
  std::int64_t pass_ms_last_ = 0, pass_ms_max_ = 0, pass_tried_last_ = 0, pass_count_ = 0;
  std::int64_t started_ = 0;
  // The reaper's retries of parts it could not release (reap_loop only):
  // (co, attempt, part) -> attempts so far and the time of the next one.
  struct ReapRetry {
    int attempts = 0;
    std::int64_t next = 0;
    std::int64_t failed_at = 0;
  };
  std::map<std::tuple<std::int64_t, int, int>, ReapRetry> reap_retry_;
  // The next try of a request that failed `attempts` times: 2 s doubling
  // to 5 min.  due(): its time has come, or the cluster answered
  // something since it failed.
  void schedule_retry(ReapRetry& r);
  bool due(const ReapRetry& r, const std::string& cluster);
  // add_pending / retry_pending: (kind, co, attempt, part) -> its retries.
  std::mutex pending_mutex_;
  std::map<std::tuple<int, std::int64_t, int, int>, ReapRetry> pending_;

  struct Trigger {
    std::int64_t event_time = 0;  // the latest early end's event time
    std::int64_t seen = 0;        // when the first one arrived here
    std::string what;             // for the move's reason
  };
  std::mutex resched_mutex_;
  std::map<std::size_t, Trigger> resched_pending_;  // by cluster index
  // The start gate's own (gate_loop only): co-allocations whose every part
  // is confirmed, when to try one again, the ones waiting for a cluster
  // (logged once), and the parts whose release under their lease was
  // answered in this run of flexcod.
  std::set<std::int64_t> gate_done_, gate_waiting_;
  std::map<std::int64_t, std::int64_t> gate_next_;
  std::set<std::tuple<std::int64_t, int, int>> gate_acked_;
  std::set<std::int64_t> late_warned_;  // PartStartPolicy=warn: said once (reaper only)
  // watch_part_starts: when a late part's cluster, which did not answer,
  // may be asked again (reaper only)
  std::map<std::int64_t, std::int64_t> late_asked_;
  std::int64_t last_purge_ = 0;         // when purge_finished() last ran (reaper only)
  // Co-allocations whose finish_if_done found the lock taken: the reaper
  // checks them again (an event's transition is never dropped).
  std::mutex recheck_mutex_;
  std::set<std::int64_t> recheck_;

  // High availability (ha.cpp)
  const Lease* lease_ = nullptr;
  std::atomic<bool> running_{false};  // start() returned
  JsonPtr ha_json() const;
  void ha_metrics(Exposition& x) const;

  std::atomic<bool> stopping_{false};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  // Profile reads of passes still running in their threads (pass_profiles;
  // stop() waits for them), and their completion, under fetch_mutex_.
  std::mutex fetch_mutex_;
  std::condition_variable fetch_cv_;
  int fetches_running_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace flexcod

#endif
