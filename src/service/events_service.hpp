// SPDX-License-Identifier: GPL-2.0-or-later
// events_service.hpp - the plugin's ordered, numbered events
// (doc/events.md): early job ends and reservation changes, numbered with
// the rules of event_seq and kept in event_ring, with the queues that feed
// them, the events thread, the state file's contents and the stats.
// Everything that needs Slurm goes through the host
// (service/capi_events_service.h), which plugin/events.c implements; no
// Slurm header here.  testsuite/unit/check_events_service runs it on a
// fake host.
//
// Who does what:
//  - job_end() runs from the plugin's epilog hook, under slurmctld's job
//    write lock: it copies a few fields into a fixed, preallocated queue
//    under hook_mu_ and signals the thread.  No I/O, no allocation.
//  - The events thread wakes at once on a signal (at most every
//    kMinGapMsec) and otherwise every kTickMsec, and runs cycle(): under
//    the host's job lock it drains the hook queue, copies the jobs that
//    ended before their planned end (all of them at the first cycle, after
//    the hook queue overflowed and every kFullScanSec: a safety net), and
//    after the lock builds the events, once per job run; it copies the
//    reservations when they may have changed and compares; it numbers the
//    batch (a number only once the mark above it is on disk: else the
//    events wait, held), appends it to the ring and calls the listener;
//    and it saves the state at most every kSaveGapSec.
//  - Only the cycle's caller changes the ring and the tracking state;
//    other threads read the ring under its lock, the counters under
//    stats_mu_.

#ifndef FLEXCO_SERVICE_EVENTS_SERVICE_HPP
#define FLEXCO_SERVICE_EVENTS_SERVICE_HPP

#include <jansson.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "service/capi_events.h"
#include "service/capi_events_service.h"
#include "service/capi_tracker.h"

namespace flexco::service {

class EventsService {
 public:
  static constexpr long kTickMsec = 1000;         // poll period of the thread
  static constexpr long kMinGapMsec = 100;        // at most ten cycles a second
  static constexpr std::int64_t kFullScanSec = 60;  // scan every job this often
  static constexpr std::int64_t kResvSnapSec = 30;  // copy resv_list this often
  static constexpr std::int64_t kSaveGapSec = 1;    // at most a save a second
  static constexpr std::int64_t kFloorSlackSec = 10;  // jobs ending before the floor
  static constexpr std::size_t kHeldMax = 8192;  // events held without numbers

  EventsService();
  ~EventsService();
  EventsService(const EventsService&) = delete;
  EventsService& operator=(const EventsService&) = delete;

  int open(std::uint32_t capacity, const flexco_esvc_host_t& host, bool thread);
  void close();
  void cycle();
  void job_end(const flexco_esvc_job_t& job) noexcept;
  int publish(const char* type, json_t* fields, const flexco_evstate_acl_t* acl,
              std::int64_t now, bool refuse);
  std::uint64_t latest() const;
  void set_listener(void (*fn)());
  char* query(std::uint64_t after, std::uint32_t max, const void* viewer,
              flexco_ring_page_t* page);
  json_t* stats_json();

  // callbacks of C interfaces (public for them)
  int parse_state(const char* text, std::size_t len, char* why, std::size_t why_len);
  int save_state(std::uint64_t reserved, bool clean);
  void add_candidate(const flexco_esvc_job_t& j, bool from_hook);
  void add_resv(const flexco_evstate_resv_t& r);
  void emit_resv(int what, const flexco_evstate_resv_t& r);

 private:
  static constexpr std::size_t kPartLen = 64, kNodesLen = 256, kAcctLen = 64;

  // one epilog record: plain data, so that the queue is never touched
  // before it is used; job's strings are those below (set when it is read)
  struct HookRec {
    flexco_esvc_job_t job;
    std::int64_t planned;
    bool truncated;  // partition or nodes did not fit
    char partition[kPartLen];
    char nodes[kNodesLen];
    char account[kAcctLen];  // "" if none or too long
  };
  // A job run already reported: the id alone is not enough, slurmctld
  // hands out an id again after an unclean restart lost its last save.
  struct Reported {
    std::uint32_t job_id;
    std::int64_t start, end;
  };
  // a job that ended early: its copy (job's strings unset: the own ones)
  struct Cand {
    flexco_esvc_job_t job{};
    std::int64_t planned = 0;
    std::string partition, nodes, account;
    bool has_partition = false, has_nodes = false, has_account = false;
    bool from_hook = false;
  };
  // a reservation copied from resv_list
  struct Resv {
    std::string name, nodes;
    bool has_nodes = false;
    flexco_evstate_resv_t view{};
    std::vector<std::uint32_t> users;
  };

  void log(int level, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  std::int64_t now() const { return host_.now(host_.arg); }
  void run();
  bool was_reported(std::uint32_t job_id, std::int64_t start) const;
  void add_reported(std::uint32_t job_id, std::int64_t start, std::int64_t end);
  void prune_reported();
  static Cand cand_of(const flexco_esvc_job_t& j, std::int64_t planned, bool from_hook);
  json_t* job_event(const Cand& c, std::int64_t now);
  void emit_job(const Cand& c, std::int64_t now);
  void scan_jobs(bool full);
  void refresh_resvs();
  void publish_batch();
  void drain_ext();
  void ring_append(std::uint64_t seq, const char* json, flexco_evstate_acl_t* tag);
  void reset_tracking();
  void load_state();

  flexco_esvc_host_t host_{};

  // the queues (hook_mu_): the epilog hook's and events_publish()'s
  std::mutex hook_mu_;
  std::condition_variable hook_cv_;
  std::unique_ptr<HookRec[]> hook_queue_, hook_work_;  // hook_work_: the cycle's
  std::uint32_t hook_cnt_ = 0;
  std::uint64_t hook_calls_ = 0, hook_dropped_ = 0;
  json_t* ext_queue_[FLEXCO_ESVC_EXT_QUEUE_LEN] = {};
  std::uint32_t ext_cnt_ = 0;
  std::uint64_t ext_dropped_ = 0;
  bool open_ = false, stop_ = false, thread_on_ = false;
  std::thread thread_;

  // the counters, the listener and the visibility check (stats_mu_)
  mutable std::mutex stats_mu_;
  void (*listener_)() = nullptr;
  std::uint64_t published_ = 0, saves_ = 0, save_errors_ = 0, job_scans_ = 0,
                resv_snaps_ = 0, scan_usec_max_ = 0, scan_usec_last_ = 0;
  std::uint64_t held_cnt_ = 0, held_dropped_ = 0;
  std::string last_save_error_;
  bool has_save_error_ = false;
  void* visible_arg_ = nullptr;
  bool (*visible_)(void*, const void*, const flexco_evstate_acl_t*) = nullptr;

  // the ring (its own lock) and the tracked reservations: made by the
  // first open() and kept, so that a late reader never finds them freed
  flexco_ring_t* ring_ = nullptr;
  flexco_tracker_t* tracker_ = nullptr;

  // the cycle's own state
  std::vector<Reported> reported_;
  std::vector<Cand> cands_;
  std::vector<Resv> resvs_;
  json_t* batch_ = nullptr;  // the cycle's events, in order
  std::int64_t batch_now_ = 0;
  bool resv_baseline_ = false;  // first look: record, no events
  std::int64_t job_floor_ = 0;  // jobs ending before: not ours
  std::int64_t job_scan_time_ = 0;
  std::uint64_t seen_dropped_ = 0;  // hook_dropped_ at the last full scan
  std::int64_t seen_resv_update_ = 0, resv_snap_time_ = 0;
  flexco_seq_t seq_{1, 0};
  flexco_seq_saved_t loaded_{};  // what parse_state() found
  json_t* held_ = nullptr;       // events waiting for numbers
  bool reserve_failing_ = false;
  bool dirty_ = false;
  std::int64_t last_save_ = 0;
};

}  // namespace flexco::service

#endif
