// SPDX-License-Identifier: GPL-2.0-or-later
// resv_service.hpp - the plugin's reservation records (doc/reservations.md):
// tentative and confirmed Slurm reservations made for flexcod, their part
// jobs, Idempotency-Keys, the write-ahead records of creations and
// submissions, the state file, recovery after a lost or older state, and
// the agent's pass.  Everything that needs Slurm goes through the host
// (service/capi_resv_service.h), which plugin/resv.c implements; no Slurm
// header here.  testsuite/unit/check_resv_service runs it on a fake host.
//
// Crash safety: the next id and a "creating" record are saved before the
// host creates the Slurm reservation; on restart a "creating" record
// becomes expired, and its reservation, if Slurm has it, is deleted.  A part-job submission is saved (as the
// record's "submitting" member) before the host submits the job; the first
// pass of a term adopts a job Slurm has for it, or forgets it.  With the
// current copy of the state, Slurm reservations named flexco_* that no
// record knows are deleted; with an older copy or none they are adopted
// and nothing is deleted, and ids stay above every flexco_<id> in Slurm.
// A failed save makes every mutation 503 until a save succeeds.

#ifndef FLEXCO_SERVICE_RESV_SERVICE_HPP
#define FLEXCO_SERVICE_RESV_SERVICE_HPP

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/epoch.hpp"
#include "service/capi_resv_service.h"
#include "service/idem_cache.hpp"
#include "service/resv_rules.hpp"

namespace flexco::service {

class ResvService {
 public:
  ResvService();

  void open(const flexco_rsvc_conf_t& conf, const flexco_rsvc_host_t& host);
  void close();

  int create(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* body,
             std::size_t len, char** json_out);
  int confirm(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* id,
              char** json_out);
  int modify(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* id,
             const char* body, std::size_t len, char** json_out);
  int remove(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* id,
             char** json_out);
  int get(std::uint32_t uid, const char* id, char** json_out);
  int list(std::uint32_t uid, char** json_out);
  int job_submit(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* id,
                 const char* body, std::size_t len, char** json_out);
  int job_get(std::uint32_t uid, const char* id, const char* job_id, char** json_out);
  int job_release(std::uint32_t uid, const char* id, const char* job_id, const char* body,
                  std::size_t len, char** json_out);

  // Flexco-Epoch (resv_fence.cpp): 0 when the request may go on, else
  // its status (409 stale_epoch, 400, 503) and *json_out.  `mutating`:
  // the request changes something (a read is never refused).
  int fence(std::uint32_t uid, const char* header, bool mutating, char** json_out);

  void tick();
  json_t* stats_json();

  // The parser statefile loading calls (public for the C callback).
  int parse_state(const char* text, std::size_t len, char* why, std::size_t why_len);

 private:
  struct PartJob {
    std::uint32_t job_id = 0;
    int part_index = 0;
    std::int64_t submitted = 0;
    bool started = false;  // part_job_started published
    bool ended = false;    // part_job_ended published
    // The start gate (doc/reservations.md): released with a lease that
    // ends at lease_end (this cluster's clock; 0: no lease), unless
    // confirmed before; lapsed: the lease ended unconfirmed and the job
    // was cancelled.
    std::int64_t lease_end = 0;
    bool confirmed = false;
    bool lapsed = false;
    // Submitted held, and not released through the API since: if it
    // runs, someone released it by hand (scontrol release) outside the
    // start gate, and the agent's pass cancels it.
    bool gated = false;
  };
  // A part-job submission under way, saved before Slurm gets the job.
  struct Submission {
    bool pending = false;
    std::string key, target, digest;  // "" when the request had no key
    std::uint32_t uid = 0;
    int part = 0;
    std::int64_t since = 0;
  };
  struct Record {
    std::uint64_t id = 0;
    std::optional<std::string> user;  // none: adopted without Users=
    std::uint32_t uid = 0;
    std::uint32_t nodes = 0;
    std::optional<std::string> partition, node_list, reason, owner;
    std::int64_t start = 0, end = 0, created = 0, confirm_by = 0, changed = 0;
    ResvState state = ResvState::kCreating;
    std::vector<PartJob> jobs;
    Submission sub;
  };
  struct SlurmResv {
    std::uint64_t id = 0;
    std::optional<std::string> users, node_list, partition;
    std::uint32_t uid = 0, nodes = 0;
    std::int64_t start = 0, end = 0;
    std::vector<PartJob> jobs;
  };

  // everything below with mu_ held
  void log(int level, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  std::int64_t now() const;
  bool in_charge() const;
  bool is_daemon(std::uint32_t uid) const;
  int user_refused(std::uint32_t uid, const char* user, char** json_out) const;
  Record* find(std::uint64_t id);
  void set_state(Record& r, ResvState st, const char* reason);
  char* record_text(const Record& r) const;
  int idem_key_refused(const flexco_rsvc_idem_t* rq, char** json_out) const;
  void idem_keep(const flexco_rsvc_idem_t* rq, std::uint32_t uid, int status,
                 const char* response);
  bool idem_answer(const flexco_rsvc_idem_t* rq, std::uint32_t uid, char** json_out,
                   int* status);
  char* not_saved(bool done, const char* then) const;
  int write_state(char* err, std::size_t err_len);
  int save();
  bool subs_pending() const;
  bool mutable_now(char** json_out, int* status);
  int saved(int status, char** json_out);
  void forget_all();
  void load();
  std::vector<std::uint64_t> slurm_ids();
  std::vector<SlurmResv> slurm_resvs();
  void id_floor(const std::vector<std::uint64_t>& ids);
  static PartJob* adopt_job(Record& r, const PartJob& job);
  void merge_jobs(Record& r, const SlurmResv& s);
  void reconcile();
  void adopt_submissions();
  Record* lookup(std::uint32_t uid, const char* id_s, bool mutate, char** json_out,
                 int* status);
  int slurm_delete(const Record& r);
  bool publish(const char* type, const Record& r, const PartJob& j);
  bool poll_jobs(Record& r);
  bool enforce_leases(Record& r, std::int64_t t);
  json_t* fence_json() const;

  std::mutex mu_;
  bool open_ = false;
  flexco_rsvc_host_t host_{};
  std::vector<std::uint32_t> daemon_uids_;
  bool act_for_root_ = false;
  std::uint32_t min_user_uid_ = 0, slurm_user_id_ = 0;

  std::vector<Record> rvs_;
  IdemCache idem_;
  std::uint64_t next_id_ = 1;
  std::uint64_t refused_busy_ = 0, refused_fit_ = 0;
  int loaded_from_ = FLEXCO_RSVC_LOADED_NONE;
  bool reconciled_ = false;   // the first pass compared the state with Slurm
  bool save_failing_ = false; // the last save failed
  std::uint64_t saves_ = 0, save_errors_ = 0, adopted_ = 0, unaccounted_ = 0;
  std::uint64_t ticks_ = 0;   // agent passes this term
  std::uint64_t leases_opened_ = 0, leases_confirmed_ = 0, leases_lapsed_ = 0;
  std::uint64_t ungated_cancels_ = 0;  // part jobs that started without the API's release
  // The highest Flexco-Epoch per flexcod grid (saved with the state) and
  // the mutations refused as older (resv_fence.cpp).
  epoch::Fence fence_;
  std::uint64_t stale_refused_ = 0;
  std::string last_save_error_;
  std::int64_t last_save_error_at_ = 0;
};

}  // namespace flexco::service

#endif
