// SPDX-License-Identifier: GPL-2.0-or-later
// resv_service.cpp - see resv_service.hpp.

#include "service/resv_service.hpp"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/capi_auth.h"
#include "core/capi_profile.h"
#include "service/host_log.hpp"

namespace flexco::service {

namespace {

constexpr const char* kPrefix = "flexco_";
constexpr int kMaxRecords = FLEXCO_RSVC_MAX_RECORDS;
constexpr std::size_t kMaxJobs = FLEXCO_RSVC_MAX_JOBS;
constexpr std::int64_t kKeepEnded = 24 * 3600;  // forget ended records after
constexpr std::size_t kIdemMax = 4096;          // remembered Idempotency-Keys
constexpr std::size_t kIdemPerUid = kIdemMax / 4;
constexpr std::int64_t kIdemKeep = 24 * 3600;

const char* opt(const std::optional<std::string>& s) { return s ? s->c_str() : nullptr; }
std::optional<std::string> opt_of(const char* s) {
  if (s == nullptr) return std::nullopt;
  return std::string(s);
}
std::string str(const char* s) { return s != nullptr ? s : ""; }

char* err(const char* code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
char* err(const char* code, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return flexco_error_json(code, msg);
}

std::string name_of(std::uint64_t id) { return kPrefix + std::to_string(id); }

// "/v1/reservations/<id>" id text: decimal, 1..2^53.
bool parse_id(const char* s, std::uint64_t* id) {
  std::uint64_t v = 0;
  if (s == nullptr || *s == '\0' || std::strlen(s) > 16) return false;
  for (; *s != '\0'; s++) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(*s - '0');
  }
  if (v == 0) return false;
  *id = v;
  return true;
}

char* dump(json_t* o) {
  if (o == nullptr) return nullptr;
  char* s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(o);
  return s;
}

const char* name_of_state(ResvState s) { return state_name(s); }

char* not_in_charge() {
  return flexco_error_json(
      "not_in_charge",
      "this slurmctld is not the controller in charge (a standby, or stopping or handing control to another controller); ask the controller in charge");
}

}  // namespace

ResvService::ResvService() : idem_(kIdemMax, kIdemPerUid, kIdemKeep) {}

// ---------------------------------------------------------------------------
// helpers (mu_ held)

void ResvService::log(int level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  host_vlog(host_.log, host_.arg, level, fmt, ap);
  va_end(ap);
}

std::int64_t ResvService::now() const { return host_.now(host_.arg); }

bool ResvService::in_charge() const { return open_ && host_.in_charge(host_.arg); }

bool ResvService::is_daemon(std::uint32_t uid) const {
  for (auto u : daemon_uids_)
    if (u == uid) return true;
  return false;
}

// DaemonUsers act for ordinary users only: never for SlurmUser nor a
// system account (uid below MinUserUid).  0, or 422 with the reason.
int ResvService::user_refused(std::uint32_t uid, const char* user, char** json_out) const {
  if (uid == 0 && !act_for_root_) {
    *json_out = err("user_not_allowed",
                    "user '%s' is root (uid 0); flexco does not act for root (ActForRoot=no)",
                    user);
    return 422;
  }
  if (uid != 0 && uid == slurm_user_id_) {
    *json_out = err("user_not_allowed",
                    "user '%s' (uid %u) is SlurmUser; flexco does not act for it", user, uid);
    return 422;
  }
  if (uid != 0 && uid < min_user_uid_) {
    *json_out = err("user_not_allowed",
                    "user '%s' (uid %u) is below MinUserUid=%u; flexco does not act for system users",
                    user, uid, min_user_uid_);
    return 422;
  }
  return 0;
}

ResvService::Record* ResvService::find(std::uint64_t id) {
  for (auto& r : rvs_)
    if (r.id == id) return &r;
  return nullptr;
}

void ResvService::set_state(Record& r, ResvState st, const char* reason) {
  if (!allowed(r.state, st)) {
    // never expected: the table is every change the service makes
    log(FLEXCO_RSVC_ERROR,
        "reservation %s%" PRIu64 ": %s to %s is not a transition of the state machine; the record stays %s",
        kPrefix, r.id, name_of_state(r.state), name_of_state(st), name_of_state(r.state));
    return;
  }
  r.state = st;
  r.changed = now();
  r.reason = opt_of(reason);
}

namespace {

// The core codec's view of a record (core/capi_decode.h), borrowing its
// strings; jobs has room for r.jobs.size().
template <typename R>
void view_of(const R& r, flexco_state_resv_t* v, flexco_state_job_t* jobs) {
  std::memset(v, 0, sizeof(*v));
  v->id = static_cast<std::int64_t>(r.id);
  v->user = const_cast<char*>(opt(r.user));  // NULL: written ""
  v->uid = r.uid;
  v->nodes = r.nodes;
  v->start = r.start;
  v->end = r.end;
  v->created = r.created;
  v->changed = r.changed;
  v->state = const_cast<char*>(state_name(r.state));
  v->partition = const_cast<char*>(opt(r.partition));
  v->node_list = const_cast<char*>(opt(r.node_list));
  v->reason = const_cast<char*>(opt(r.reason));
  v->owner = const_cast<char*>(opt(r.owner));
  v->confirm_by = r.confirm_by;
  for (std::size_t i = 0; i < r.jobs.size(); i++) {
    jobs[i].job_id = r.jobs[i].job_id;
    jobs[i].part_index = r.jobs[i].part_index;
    jobs[i].submitted = r.jobs[i].submitted;
    jobs[i].started = r.jobs[i].started;
    jobs[i].ended = r.jobs[i].ended;
    jobs[i].lease_end = r.jobs[i].lease_end;
    jobs[i].confirmed = r.jobs[i].confirmed;
    jobs[i].lapsed = r.jobs[i].lapsed;
    jobs[i].gated = r.jobs[i].gated;
  }
  v->jobs = r.jobs.empty() ? nullptr : jobs;
  v->job_cnt = r.jobs.size();
  if (r.sub.pending) {
    v->submit_key = const_cast<char*>(r.sub.key.c_str());
    v->submit_target = const_cast<char*>(r.sub.target.c_str());
    v->submit_digest = const_cast<char*>(r.sub.digest.c_str());
    v->submit_uid = r.sub.uid;
    v->submit_part = r.sub.part;
    v->submit_since = r.sub.since;
  }
}

}  // namespace

char* ResvService::record_text(const Record& r) const {
  std::vector<flexco_state_job_t> jobs(r.jobs.size() + 1);
  flexco_state_resv_t v;
  view_of(r, &v, jobs.data());
  return flexco_encode_resv_record(&v);
}

// ---------------------------------------------------------------------------
// idempotency

// An Idempotency-Key no signer may send (doc/auth.md): 400 on every
// mutation.  The verifier refuses such a header first; this keeps the
// cache's own bound.
int ResvService::idem_key_refused(const flexco_rsvc_idem_t* rq, char** json_out) const {
  if (rq == nullptr || rq->key == nullptr || flexco_idempotency_key_valid(rq->key)) return 0;
  *json_out = err("invalid_request",
                  "Idempotency-Key must be 1 to %d visible ASCII characters without spaces, and not '-'",
                  FLEXCO_AUTH_MAX_IDEMPOTENCY_KEY);
  return 400;
}

// Keep a mutation's final answer under its key (only final answers are
// kept, so that retries of a non-final one are carried out).
void ResvService::idem_keep(const flexco_rsvc_idem_t* rq, std::uint32_t uid, int status,
                            const char* response) {
  if (rq == nullptr || rq->key == nullptr) return;
  const bool bound = rq->method != nullptr && rq->target != nullptr && rq->digest != nullptr;
  (void)idem_.store(rq->key, uid, bound ? rq->method : "", bound ? rq->target : "",
                    bound ? rq->digest : "", status, str(response), now());
}

// The stored answer if (uid, key) was used for this very request, 422
// idempotency_key_reused if for another one.  False: carry it out.
bool ResvService::idem_answer(const flexco_rsvc_idem_t* rq, std::uint32_t uid, char** json_out,
                              int* status) {
  if (rq == nullptr || rq->key == nullptr) return false;
  const auto a = idem_.answer(rq->key, uid, str(rq->method), str(rq->target), str(rq->digest),
                              now());
  if (a.verdict == IdemCache::Verdict::kNew) return false;
  if (a.verdict == IdemCache::Verdict::kReused) {
    *json_out = err("idempotency_key_reused",
                    "Idempotency-Key '%s' was used within %d hours for another request (%s %.200s%s); nothing was done",
                    rq->key, static_cast<int>(kIdemKeep / 3600),
                    a.entry->bound ? a.entry->method.c_str() : "",
                    a.entry->bound ? a.entry->target.c_str() : "",
                    a.same_target ? " with another body" : "");
    *status = 422;
    return true;
  }
  // the stored answer only once the state it reports is on disk: after a
  // "done, but not saved" a crash would lose what the answer says
  if (save_failing_ && save() != 0) {
    *json_out = not_saved(true, "retry with the same Idempotency-Key");
    *status = 503;
    return true;
  }
  *json_out = strdup(a.entry->response.empty() ? "{}" : a.entry->response.c_str());
  *status = a.entry->status;
  return true;
}

// ---------------------------------------------------------------------------
// state file

// 503 state_not_saved: "[done, but ]the reservation state cannot be saved
// (why); then"
char* ResvService::not_saved(bool done, const char* then) const {
  return err("state_not_saved", "%sthe reservation state cannot be saved (%s); %s",
             done ? "done, but " : "", last_save_error_.c_str(), then);
}

int ResvService::write_state(char* why, std::size_t why_len) {
  flexco_resv_state_t st{};
  std::vector<flexco_state_resv_t> views(rvs_.size() + 1);
  std::vector<flexco_state_job_t> jobs((rvs_.size() + 1) * kMaxJobs);
  for (std::size_t i = 0; i < rvs_.size(); i++)
    view_of(rvs_[i], &views[i], &jobs[i * kMaxJobs]);
  st.next_id = static_cast<std::int64_t>(next_id_);
  st.resvs = views.data();
  st.resv_cnt = rvs_.size();
  const auto live = idem_.live(now());
  std::vector<flexco_state_key_t> keys(live.size() + 1);
  for (std::size_t i = 0; i < live.size(); i++) {
    const IdemEntry& e = *live[i];
    auto& k = keys[i];
    k.key = const_cast<char*>(e.key.c_str());
    k.uid = e.uid;
    k.status = e.status;
    k.response = const_cast<char*>(e.response.c_str());
    k.when = e.when;
    k.method = e.bound ? const_cast<char*>(e.method.c_str()) : nullptr;
    k.target = e.bound ? const_cast<char*>(e.target.c_str()) : nullptr;
    k.digest = e.bound ? const_cast<char*>(e.digest.c_str()) : nullptr;
  }
  st.keys = keys.data();
  st.key_cnt = live.size();
  std::vector<flexco_state_epoch_t> epochs;
  for (const auto& kv : fence_.all())
    epochs.push_back({const_cast<char*>(kv.first.c_str()), kv.second});
  st.epochs = epochs.data();
  st.epoch_cnt = epochs.size();
  // a record that cannot be written fails the save: left out, its
  // reservation would be an orphan at the next start
  char* text = flexco_encode_resv_state(&st, why, why_len);
  if (text == nullptr) {
    log(FLEXCO_RSVC_ERROR, "reservations: %s", why);
    return -1;
  }
  const int rc = host_.save(host_.arg, text, why, why_len);
  std::free(text);
  return rc;
}

int ResvService::save() {
  char why[256] = "";
  const int rc = write_state(why, sizeof(why));
  if (rc != 0) {
    save_errors_++;
    save_failing_ = true;
    last_save_error_ = why[0] != '\0' ? why : "unknown error";
    last_save_error_at_ = now();
    return -1;
  }
  saves_++;
  if (save_failing_) log(FLEXCO_RSVC_INFO, "reservations: the state is saved again");
  save_failing_ = false;
  return 0;
}

bool ResvService::subs_pending() const {
  for (const auto& r : rvs_)
    if (r.sub.pending) return true;
  return false;
}

// May a mutation go ahead?  Not unless this process is in charge with its
// state loaded, nor while a state recovered from an older or no copy was
// not yet compared with Slurm's reservations, nor while the state cannot
// be saved (a save is tried first): 503.
bool ResvService::mutable_now(char** json_out, int* status) {
  if (!in_charge()) {
    *json_out = not_in_charge();
    *status = 503;
    return false;
  }
  // no file at all while Slurm has flexco_* reservations is a lost state
  // too (the first pass adopts them): nothing may be made before that
  if (!reconciled_ && (loaded_from_ == FLEXCO_RSVC_LOADED_PREV ||
                       loaded_from_ == FLEXCO_RSVC_LOADED_LOST || subs_pending() ||
                       (loaded_from_ == FLEXCO_RSVC_LOADED_NONE && !slurm_ids().empty()))) {
    *json_out = flexco_error_json("recovering",
                                  "the reservation state is being recovered; retry in a few seconds");
    *status = 503;
    return false;
  }
  if (save_failing_ && save() != 0) {
    *json_out = not_saved(false, "nothing is changed until it can");
    *status = 503;
    return false;
  }
  return true;
}

// Save after a mutation.  If that fails the answer becomes 503: the change
// is made (and its answer kept under the Idempotency-Key) but not on
// disk, and a retry gets the answer once a save succeeds.
int ResvService::saved(int status, char** json_out) {
  if (save() == 0) return status;
  std::free(*json_out);
  *json_out = not_saved(true, "retry with the same Idempotency-Key");
  return 503;
}

void ResvService::forget_all() {
  rvs_.clear();
  idem_.clear();
  fence_.clear();
  next_id_ = 1;
}

// One copy of the state file, strictly: any malformed record rejects the
// whole copy (the previous copy is tried instead), and nothing is kept.
int ResvService::parse_state(const char* text, std::size_t len, char* why, std::size_t why_len) {
  flexco_resv_state_t st;
  if (flexco_decode_resv_state(text, len, kMaxRecords, kMaxJobs, &st, why, why_len) != 0)
    return -1;
  std::vector<Record> got;
  std::uint64_t next = static_cast<std::uint64_t>(st.next_id);
  for (std::size_t i = 0; i < st.resv_cnt; i++) {
    const flexco_state_resv_t& s = st.resvs[i];
    Record r;
    r.id = static_cast<std::uint64_t>(s.id);
    r.user = opt_of(s.user);
    r.uid = static_cast<std::uint32_t>(s.uid);
    r.nodes = static_cast<std::uint32_t>(s.nodes);
    r.start = s.start;
    r.end = s.end;
    if (s.state == nullptr || !state_from_name(s.state, &r.state)) {
      std::snprintf(why, why_len, "reservation %" PRId64 ": state '%s'", s.id,
                    s.state != nullptr ? s.state : "");
      flexco_resv_state_free(&st);
      return -1;
    }
    r.created = s.created;
    r.changed = s.changed;
    r.confirm_by = s.confirm_by;
    r.partition = opt_of(s.partition);
    r.node_list = opt_of(s.node_list);
    r.reason = opt_of(s.reason);
    r.owner = opt_of(s.owner);
    for (std::size_t j = 0; j < s.job_cnt; j++) {
      PartJob pj;
      pj.job_id = static_cast<std::uint32_t>(s.jobs[j].job_id);
      pj.part_index = s.jobs[j].part_index;
      pj.submitted = s.jobs[j].submitted;
      pj.started = s.jobs[j].started;
      pj.ended = s.jobs[j].ended;
      pj.lease_end = s.jobs[j].lease_end;
      pj.confirmed = s.jobs[j].confirmed;
      pj.lapsed = s.jobs[j].lapsed;
      pj.gated = s.jobs[j].gated;
      r.jobs.push_back(pj);
    }
    if (s.submit_key != nullptr) {
      r.sub.pending = true;
      r.sub.key = s.submit_key;
      r.sub.target = str(s.submit_target);
      r.sub.digest = str(s.submit_digest);
      r.sub.uid = static_cast<std::uint32_t>(s.submit_uid);
      r.sub.part = static_cast<int>(s.submit_part);
      r.sub.since = s.submit_since;
    }
    if (r.id >= next) next = r.id + 1;
    got.push_back(std::move(r));
  }
  rvs_ = std::move(got);
  next_id_ = next;
  fence_.clear();
  for (std::size_t i = 0; i < st.epoch_cnt; i++) fence_.set(st.epochs[i].grid, st.epochs[i].epoch);
  const std::int64_t t = now();
  for (std::size_t i = 0; i < st.key_cnt; i++) {
    const flexco_state_key_t& k = st.keys[i];
    // keys no signer can send any more (older versions took any length on
    // confirm, modify and delete) go
    if (k.key == nullptr || !flexco_idempotency_key_valid(k.key)) continue;
    IdemEntry e;
    e.key = k.key;
    e.uid = static_cast<std::uint32_t>(k.uid);
    e.status = k.status;
    e.response = str(k.response);
    e.when = k.when;
    if (k.method != nullptr && k.target != nullptr && k.digest != nullptr) {
      e.bound = true;
      e.method = k.method;
      e.target = k.target;
      e.digest = k.digest;
    }
    idem_.put(std::move(e), t);
  }
  flexco_resv_state_free(&st);
  return 0;
}

namespace {
int parse_cb(const char* text, std::size_t len, void* arg, char* why, std::size_t why_len) {
  try {
    return static_cast<ResvService*>(arg)->parse_state(text, len, why, why_len);
  } catch (...) {
    std::snprintf(why, why_len, "out of memory");
    return -1;
  }
}
}  // namespace

void ResvService::load() {
  rvs_.clear();
  idem_.clear();
  loaded_from_ = host_.load(host_.arg, FLEXCO_RSVC_MAX_STATE, parse_cb, this);
  reconciled_ = false;
  if (loaded_from_ == FLEXCO_RSVC_LOADED_PREV) {
    next_id_++;  // the lost save may have handed out one more id
  } else if (loaded_from_ == FLEXCO_RSVC_LOADED_LOST) {
    // ids above every one ever handed out: the counter started at 1 and
    // grew by far less than one a second
    forget_all();
    next_id_ = static_cast<std::uint64_t>(now());
  }
  static const char* const kSrc[] = {"none", "current", "previous", "lost"};
  if (loaded_from_ != FLEXCO_RSVC_LOADED_NONE)
    log(FLEXCO_RSVC_INFO, "reservations: %zu records from the %s copy of the state (next id %" PRIu64 ")",
        rvs_.size(), kSrc[loaded_from_ & 3], next_id_);
  if (loaded_from_ == FLEXCO_RSVC_LOADED_PREV || loaded_from_ == FLEXCO_RSVC_LOADED_LOST)
    log(FLEXCO_RSVC_ERROR,
        "reservations: the state is not the newest: Slurm's flexco_* reservations will be compared with it and adopted, never deleted; mutations wait for that (503)");
}

// ---------------------------------------------------------------------------
// Slurm, through the host

std::vector<std::uint64_t> ResvService::slurm_ids() {
  std::vector<std::uint64_t> ids;
  host_.slurm_ids(
      host_.arg,
      [](void* sink, std::uint64_t id) {
        try {
          static_cast<std::vector<std::uint64_t>*>(sink)->push_back(id);
        } catch (...) {
        }
      },
      &ids);
  return ids;
}

std::vector<ResvService::SlurmResv> ResvService::slurm_resvs() {
  std::vector<SlurmResv> out;
  host_.slurm_resvs(
      host_.arg,
      [](void* sink, const flexco_rsvc_slurm_resv_t* r) {
        try {
          SlurmResv s;
          s.id = r->id;
          s.users = opt_of(r->users);
          s.uid = r->uid;
          s.nodes = r->nodes;
          s.node_list = opt_of(r->node_list);
          s.partition = opt_of(r->partition);
          s.start = r->start;
          s.end = r->end;
          for (std::size_t i = 0; i < r->job_cnt && i < kMaxJobs; i++) {
            PartJob j;
            j.job_id = r->job_ids[i];
            j.submitted = r->job_submitted != nullptr ? r->job_submitted[i] : 0;
            s.jobs.push_back(j);
          }
          static_cast<std::vector<SlurmResv>*>(sink)->push_back(std::move(s));
        } catch (...) {
        }
      },
      &out);
  return out;
}

// Raise next_id above every flexco_<id> reservation in Slurm.
void ResvService::id_floor(const std::vector<std::uint64_t>& ids) {
  for (auto id : ids)
    if (id >= next_id_) next_id_ = id + 1;
}

int ResvService::slurm_delete(const Record& r) {
  std::vector<std::uint32_t> ids;
  for (const auto& j : r.jobs) ids.push_back(j.job_id);
  char why[256] = "";
  return host_.remove(host_.arg, r.id, ids.data(), ids.size(), false, why, sizeof(why));
}

// Add job to r's part jobs unless known or full; the added one or NULL.
ResvService::PartJob* ResvService::adopt_job(Record& r, const PartJob& job) {
  for (const auto& k : r.jobs)
    if (k.job_id == job.job_id) return nullptr;
  if (r.jobs.size() >= kMaxJobs) return nullptr;
  r.jobs.push_back(job);
  return &r.jobs.back();
}

void ResvService::merge_jobs(Record& r, const SlurmResv& s) {
  for (const auto& j : s.jobs) {
    if (adopt_job(r, j) == nullptr) continue;
    log(FLEXCO_RSVC_INFO, "reservations: JobId=%u in %s%" PRIu64 " adopted as a part job",
        j.job_id, kPrefix, r.id);
  }
}

// First pass of a term.  With the current copy of the state nothing is to
// do.  Otherwise (previous copy, no valid copy, or no file while Slurm has
// flexco_* reservations) every flexco_* reservation in Slurm is accounted
// for: one the state knows as live stays (a tentative or creating record of
// the previous copy becomes confirmed, as its confirmation may be what the
// lost save held), one it does not know is adopted as confirmed from
// Slurm's own record, and its jobs become its part jobs.  Nothing is
// deleted; ids continue above every one seen.
void ResvService::reconcile() {
  reconciled_ = true;
  if (loaded_from_ == FLEXCO_RSVC_LOADED_CURRENT) return;
  const auto sr = slurm_resvs();
  if (loaded_from_ == FLEXCO_RSVC_LOADED_NONE && !sr.empty()) {
    log(FLEXCO_RSVC_ERROR,
        "reservations: no state file, but Slurm has %zu flexco_* reservations: the state was lost",
        sr.size());
    loaded_from_ = FLEXCO_RSVC_LOADED_LOST;
    if (next_id_ < static_cast<std::uint64_t>(now())) next_id_ = static_cast<std::uint64_t>(now());
  }
  for (const auto& s : sr) {
    Record* r = find(s.id);
    if (s.id >= next_id_) next_id_ = s.id + 1;
    if (r != nullptr && live(r->state)) {
      if (r->state == ResvState::kCreating || r->state == ResvState::kTentative) {
        log(FLEXCO_RSVC_ERROR,
            "reservations: %s%" PRIu64 " was %s in the older state copy; kept as confirmed",
            kPrefix, r->id, name_of_state(r->state));
        set_state(*r, ResvState::kConfirmed,
                  "recovered from an older state copy: kept as confirmed");
      }
      merge_jobs(*r, s);
      continue;
    }
    if (r == nullptr && rvs_.size() >= static_cast<std::size_t>(kMaxRecords)) {
      unaccounted_++;
      log(FLEXCO_RSVC_ERROR,
          "reservations: %s%" PRIu64 " is unaccounted for (record limit %d reached); left to the admin, never deleted by the plugin",
          kPrefix, s.id, kMaxRecords);
      continue;
    }
    if (r == nullptr) {
      rvs_.emplace_back();
      r = &rvs_.back();
    }
    *r = Record();
    r->id = s.id;
    r->user = s.users;
    r->uid = s.uid;
    r->nodes = s.nodes;
    r->node_list = s.node_list;
    r->partition = s.partition;
    r->start = s.start;
    r->end = s.end;
    r->created = now();
    set_state(*r, ResvState::kConfirmed,
              "adopted from Slurm's reservation list: the state file was lost");
    adopted_++;
    log(FLEXCO_RSVC_ERROR,
        "reservations: %s%" PRIu64 " adopted from Slurm (users %s, %u nodes %s, %" PRId64 " to %" PRId64 ") as confirmed: the state file did not account for it",
        kPrefix, r->id, r->user ? r->user->c_str() : "?", r->nodes,
        r->node_list ? r->node_list->c_str() : "?", r->start, r->end);
    merge_jobs(*r, s);
  }
  static const char* const kSrc[] = {"none", "current", "previous", "lost"};
  log(FLEXCO_RSVC_INFO,
      "reservations: state recovered (%s copy): %zu flexco_* reservations in Slurm, %" PRIu64 " adopted, %" PRIu64 " unaccounted; next id %" PRIu64,
      kSrc[loaded_from_ & 3], sr.size(), adopted_, unaccounted_, next_id_);
}

// First pass of a term: a part-job submission saved ahead but never
// completed (the controller died between the save and the answer) is
// settled against Slurm.  A job Slurm has in the reservation that the
// record does not know is that submission's: it becomes the record's part
// job with the submission's part index, and the answer is kept under the
// request's Idempotency-Key, so flexcod's retry gets that job instead of a
// second one.  No such job: Slurm never got it; the submission is
// forgotten and a retry submits it.
void ResvService::adopt_submissions() {
  if (!subs_pending()) return;
  const auto sr = slurm_resvs();
  for (auto& r : rvs_) {
    if (!r.sub.pending) continue;
    const SlurmResv* s = nullptr;
    for (const auto& x : sr)
      if (x.id == r.id) s = &x;
    std::uint32_t got = 0;
    for (std::size_t j = 0; s != nullptr && j < s->jobs.size(); j++) {
      PartJob* added = adopt_job(r, s->jobs[j]);
      if (added == nullptr) continue;
      added->part_index = r.sub.part;
      r.changed = now();
      got = s->jobs[j].job_id;
      log(FLEXCO_RSVC_ERROR,
          "reservations: JobId=%u in %s%" PRIu64 " is the part job (part %d) of a submission that a restart interrupted: adopted",
          got, kPrefix, r.id, r.sub.part);
    }
    if (got != 0 && !r.sub.key.empty()) {
      char* resp = flexco_encode_part_job_submitted(got, static_cast<std::int64_t>(r.id), r.sub.part);
      if (resp != nullptr)
        (void)idem_.store(r.sub.key, r.sub.uid, "POST", r.sub.target, r.sub.digest, 201, resp,
                          now());
      std::free(resp);
    } else if (got == 0) {
      log(FLEXCO_RSVC_INFO,
          "reservations: a part-job submission into %s%" PRIu64 " was interrupted by a restart before Slurm had the job; forgotten",
          kPrefix, r.id);
    }
    r.sub = Submission();
  }
}

// ---------------------------------------------------------------------------
// lifecycle

void ResvService::open(const flexco_rsvc_conf_t& conf, const flexco_rsvc_host_t& host) {
  std::lock_guard<std::mutex> g(mu_);
  host_ = host;
  daemon_uids_.assign(conf.daemon_uids, conf.daemon_uids + conf.daemon_uid_cnt);
  act_for_root_ = conf.act_for_root;
  min_user_uid_ = conf.min_user_uid;
  slurm_user_id_ = conf.slurm_user_id;
  rvs_.reserve(kMaxRecords);
  ticks_ = 0;
  load();
  open_ = true;
}

void ResvService::close() {
  std::lock_guard<std::mutex> g(mu_);
  if (open_) (void)save();
  open_ = false;
  rvs_.clear();
  idem_.clear();
}

// ---------------------------------------------------------------------------
// requests

int ResvService::create(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* body,
                        std::size_t len, char** json_out) {
  flexco_resv_create_t req{};
  std::int64_t t = 0;
  int status;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!is_daemon(uid)) {
      *json_out = err("forbidden", "uid %u is not in DaemonUsers", uid);
      return 403;
    }
    if ((status = idem_key_refused(rq, json_out)) != 0) return status;
    if (!open_) {
      *json_out = not_in_charge();
      return 503;
    }
    if (idem_answer(rq, uid, json_out, &status)) return status;
    t = now();
  }
  // the body, strictly (core/capi_decode.h); the user and admission
  // outside the lock (NSS, a snapshot under slurmctld's read locks)
  if ((status = flexco_decode_resv_create(body, len, t, &req, json_out)) != 0) return status;
  struct Free {
    flexco_resv_create_t* r;
    ~Free() { flexco_resv_create_free(r); }
  } free_req{&req};
  const char* user = req.user;
  std::uint32_t ruid = 0;
  std::int64_t start = req.start;
  const std::int64_t dur = req.duration;
  const auto nodes = static_cast<std::uint32_t>(req.nodes);
  flexco_rsvc_host_t host;
  {
    std::lock_guard<std::mutex> g(mu_);
    host = host_;
  }
  if (!host.user_uid(host.arg, user, &ruid)) {
    *json_out = err("bad_request", "unknown user '%s'", user);
    return 400;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if ((status = user_refused(ruid, user, json_out)) != 0) return status;
  }
  if (start < t) start = t;
  bool low_fit = false;
  status = host.admit(host.arg, req.partition, start, dur, nodes, json_out, &low_fit);
  if (status != 200) {
    std::lock_guard<std::mutex> g(mu_);
    if (status == 409 && low_fit)
      refused_fit_++;
    else if (status == 409)
      refused_busy_++;
    return status;
  }

  std::lock_guard<std::mutex> g(mu_);
  if (idem_answer(rq, uid, json_out, &status)) return status;  // raced
  if (!mutable_now(json_out, &status)) return status;
  if (rvs_.size() >= static_cast<std::size_t>(kMaxRecords)) {
    *json_out = err("too_many", "%d reservation records kept; delete some", kMaxRecords);
    return 503;
  }
  // Write ahead: the id and a "creating" record reach the disk first.
  id_floor(slurm_ids());  // never an id Slurm already has
  rvs_.emplace_back();
  Record* r = &rvs_.back();
  r->id = next_id_++;
  r->user = opt_of(user);
  r->uid = ruid;
  r->nodes = nodes;
  r->partition = opt_of(req.partition);
  r->owner = opt_of(req.owner);
  r->start = start;
  r->end = start + dur;
  r->created = t;
  r->confirm_by = t + req.confirm_within;
  set_state(*r, ResvState::kCreating, nullptr);
  if (save() != 0) {
    rvs_.pop_back();
    *json_out = not_saved(false, "nothing was made");
    return 503;
  }

  char* node_list = nullptr;
  std::uint32_t got = 0;
  char why[256] = "";
  const int rc = host_.create(host_.arg, r->id, opt(r->user), r->nodes, opt(r->partition),
                              r->start, r->end, &node_list, &got, why, sizeof(why));
  if (rc == FLEXCO_RSVC_OK && got != r->nodes) {
    // Slurm gave fewer nodes than asked: undo, refuse
    (void)slurm_delete(*r);
    std::free(node_list);
    *json_out = err("not_available", "Slurm could only reserve %u of the %u nodes", got, r->nodes);
    status = 409;
    rvs_.pop_back();
  } else if (rc == FLEXCO_RSVC_BUSY) {
    // Enough nodes are free at every moment of the window, but not the
    // same ones throughout: Slurm reserves whole nodes for the whole
    // window.  A lack of capacity like the one above, so the same code.
    std::free(node_list);
    *json_out = err("not_available",
                    "Slurm has no %u nodes free together for the whole window: %s", r->nodes, why);
    status = 409;
    refused_busy_++;
    rvs_.pop_back();
  } else if (rc != FLEXCO_RSVC_OK) {
    std::free(node_list);
    *json_out = err("refused", "Slurm refused the reservation: %s", why);
    status = 409;
    rvs_.pop_back();
  } else {
    r->node_list = opt_of(node_list);
    std::free(node_list);
    set_state(*r, ResvState::kTentative, nullptr);
    *json_out = record_text(*r);
    status = 201;
    log(FLEXCO_RSVC_INFO,
        "reservation %s%" PRIu64 " for %s: %u nodes (%s) from %" PRId64 " to %" PRId64 ", tentative until %" PRId64,
        kPrefix, r->id, opt(r->user), r->nodes, r->node_list ? r->node_list->c_str() : "",
        r->start, r->end, r->confirm_by);
  }
  idem_keep(rq, uid, status, *json_out);
  return saved(status, json_out);
}

// Look up id: 403 / 400 / 404 answered here.
ResvService::Record* ResvService::lookup(std::uint32_t uid, const char* id_s, bool mutate,
                                         char** json_out, int* status) {
  std::uint64_t id = 0;
  if (mutate && !is_daemon(uid)) {
    *json_out = err("forbidden", "uid %u is not in DaemonUsers", uid);
    *status = 403;
    return nullptr;
  }
  if (!parse_id(id_s, &id)) {
    *json_out = err("bad_request", "reservation id must be a positive integer");
    *status = 400;
    return nullptr;
  }
  Record* r = find(id);
  if (r == nullptr || (!mutate && !is_daemon(uid) && r->uid != uid)) {
    *json_out = err("not_found", "no reservation %" PRIu64, id);
    *status = 404;
    return nullptr;
  }
  return r;
}

int ResvService::confirm(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* id,
                         char** json_out) {
  std::lock_guard<std::mutex> g(mu_);
  int status = 200;
  if (!is_daemon(uid)) {  // before anything else, a save retry too
    *json_out = err("forbidden", "uid %u is not in DaemonUsers", uid);
    return 403;
  }
  if ((status = idem_key_refused(rq, json_out)) != 0) return status;
  status = 200;
  if (idem_answer(rq, uid, json_out, &status)) return status;
  if (!mutable_now(json_out, &status)) return status;
  Record* r = lookup(uid, id, true, json_out, &status);
  if (r == nullptr) return status;
  if (r->state == ResvState::kTentative) {
    set_state(*r, ResvState::kConfirmed, nullptr);
    log(FLEXCO_RSVC_INFO, "reservation %s%" PRIu64 " confirmed", kPrefix, r->id);
  }
  if (r->state == ResvState::kConfirmed) {
    *json_out = record_text(*r);
  } else {
    *json_out = err("gone", "reservation %" PRIu64 " is %s", r->id, name_of_state(r->state));
    status = 409;
  }
  idem_keep(rq, uid, status, *json_out);
  return saved(status, json_out);
}

int ResvService::modify(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* id,
                        const char* body, std::size_t len, char** json_out) {
  std::lock_guard<std::mutex> g(mu_);
  int status = 200;
  if (!is_daemon(uid)) {  // before anything else, a save retry too
    *json_out = err("forbidden", "uid %u is not in DaemonUsers", uid);
    return 403;
  }
  if ((status = idem_key_refused(rq, json_out)) != 0) return status;
  status = 200;
  if (idem_answer(rq, uid, json_out, &status)) return status;
  if (!mutable_now(json_out, &status)) return status;
  Record* r = lookup(uid, id, true, json_out, &status);
  if (r == nullptr) return status;
  // the body, strictly (core/capi_decode.h); what it leaves out stays
  flexco_resv_modify_t want;
  want.start = r->start;
  want.nodes = r->nodes;
  want.duration = r->end - r->start;
  if ((status = flexco_decode_resv_modify(body, len, now(), &want, json_out)) != 0) return status;
  status = 200;
  const std::int64_t start = want.start, dur = want.duration;
  const auto nodes = static_cast<std::uint32_t>(want.nodes);
  if (!live(r->state)) {
    *json_out = err("gone", "reservation %" PRIu64 " is %s", r->id, name_of_state(r->state));
    status = 409;
  } else {
    char* node_list = nullptr;
    std::uint32_t got = 0;
    char why[256] = "";
    const int rc = host_.update(host_.arg, r->id, r->start, r->end, r->nodes, start, start + dur,
                                nodes, &node_list, &got, why, sizeof(why));
    if (rc == FLEXCO_RSVC_OK && got != nodes) {
      // Slurm silently gave another count: put it back, refuse
      char* nl2 = nullptr;
      std::uint32_t got2 = 0;
      char why2[256] = "";
      std::free(node_list);
      (void)host_.update(host_.arg, r->id, start, start + dur, got, r->start, r->end, r->nodes,
                         &nl2, &got2, why2, sizeof(why2));
      std::free(nl2);
      *json_out = err("not_available",
                      "Slurm could only give %u of the %u nodes; reservation unchanged", got, nodes);
      status = 409;
    } else if (rc == FLEXCO_RSVC_BUSY) {  // as in create
      std::free(node_list);
      *json_out = err("not_available",
                      "Slurm has no %u nodes free together for the whole new window: %s; reservation unchanged",
                      nodes, why);
      status = 409;
    } else if (rc != FLEXCO_RSVC_OK) {
      std::free(node_list);
      *json_out = err("refused", "Slurm refused the change: %s", why);
      status = 409;
    } else {
      r->start = start;
      r->end = start + dur;
      r->nodes = nodes;
      r->node_list = opt_of(node_list);
      std::free(node_list);
      r->changed = now();
      log(FLEXCO_RSVC_INFO,
          "reservation %s%" PRIu64 " now %u nodes (%s) from %" PRId64 " to %" PRId64, kPrefix, r->id,
          r->nodes, r->node_list ? r->node_list->c_str() : "", r->start, r->end);
      *json_out = record_text(*r);
    }
  }
  idem_keep(rq, uid, status, *json_out);
  return saved(status, json_out);
}

int ResvService::remove(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* id,
                        char** json_out) {
  std::lock_guard<std::mutex> g(mu_);
  int status = 200;
  if (!is_daemon(uid)) {  // before anything else, a save retry too
    *json_out = err("forbidden", "uid %u is not in DaemonUsers", uid);
    return 403;
  }
  if ((status = idem_key_refused(rq, json_out)) != 0) return status;
  status = 200;
  if (idem_answer(rq, uid, json_out, &status)) return status;
  if (!mutable_now(json_out, &status)) return status;
  Record* r = lookup(uid, id, true, json_out, &status);
  if (r == nullptr) return status;
  bool refused = false;
  if (live(r->state)) {
    std::vector<std::uint32_t> ids;
    for (const auto& j : r->jobs) ids.push_back(j.job_id);
    char why[256] = "";
    const int rc = host_.remove(host_.arg, r->id, ids.data(), ids.size(), false, why, sizeof(why));
    if (rc != FLEXCO_RSVC_OK && rc != FLEXCO_RSVC_NO_SUCH) {
      *json_out = err("refused", "Slurm refused to delete it: %s", why);
      status = 409;
      refused = true;
    } else {
      set_state(*r, ResvState::kDeleted, "deleted by request");
      log(FLEXCO_RSVC_INFO, "reservation %s%" PRIu64 " deleted", kPrefix, r->id);
    }
  }
  if (!refused) *json_out = record_text(*r);
  idem_keep(rq, uid, status, *json_out);
  return saved(status, json_out);
}

int ResvService::get(std::uint32_t uid, const char* id, char** json_out) {
  std::lock_guard<std::mutex> g(mu_);
  int status = 200;
  Record* r = lookup(uid, id, false, json_out, &status);
  if (r != nullptr) *json_out = record_text(*r);
  return status;
}

int ResvService::list(std::uint32_t uid, char** json_out) {
  std::lock_guard<std::mutex> g(mu_);
  const bool all = is_daemon(uid);
  std::vector<flexco_state_resv_t> views(rvs_.size() + 1);
  std::vector<flexco_state_job_t> jobs((rvs_.size() + 1) * kMaxJobs);
  std::size_t n = 0;
  for (const auto& r : rvs_)
    if (all || r.uid == uid) {
      view_of(r, &views[n], &jobs[n * kMaxJobs]);
      n++;
    }
  *json_out = flexco_encode_resv_list(views.data(), n);
  return *json_out != nullptr ? 200 : 500;
}

// POST /v1/reservations/{id}/jobs: a part job of the reservation's user in
// it.  The lock is held across the submission (then slurmctld's locks,
// taken by the host), so a retry with the same Idempotency-Key waits for
// the first one and replays its answer.
int ResvService::job_submit(std::uint32_t uid, const flexco_rsvc_idem_t* rq, const char* id,
                            const char* body, std::size_t len, char** json_out) {
  std::lock_guard<std::mutex> g(mu_);
  flexco_jobspec_t spec{};
  struct Free {
    flexco_jobspec_t* s;
    ~Free() { flexco_jobspec_free(s); }
  } free_spec{&spec};
  int status = 201;
  if (!is_daemon(uid)) {
    *json_out = err("forbidden", "uid %u is not in DaemonUsers", uid);
    return 403;
  }
  if ((status = idem_key_refused(rq, json_out)) != 0) return status;
  status = 201;
  if (idem_answer(rq, uid, json_out, &status)) return status;
  if (!mutable_now(json_out, &status)) return status;
  Record* r = lookup(uid, id, true, json_out, &status);
  if (r == nullptr) return status;
  if ((status = user_refused(r->uid, r->user ? r->user->c_str() : "?", json_out)) != 0)
    return status;
  if ((status = flexco_decode_jobspec(body, len, &spec, json_out)) != 0) return status;
  status = 201;
  const std::int64_t t = now();
  const std::int64_t nodes = spec.nodes != 0 ? spec.nodes : r->nodes;
  std::int64_t minutes = 0;
  if (nodes > r->nodes) {
    *json_out = err("bad_request", "'nodes' %" PRId64 " is more than the reservation's %u", nodes,
                    r->nodes);
    return 400;
  }
  const int part = spec.part_index >= 0 ? static_cast<int>(spec.part_index) : 0;
  if (!live(r->state) || r->state == ResvState::kCreating || r->end <= t) {
    *json_out = err("gone", "reservation %" PRIu64 " is %s", r->id,
                    r->end <= t ? "ended" : name_of_state(r->state));
    status = 409;
  } else {
    const std::int64_t from = r->start > t ? r->start : t;
    const std::int64_t room = r->end - from;
    if (spec.time_limit != 0) {
      minutes = (spec.time_limit + 59) / 60;
      if (minutes * 60 > room) {
        *json_out = err("bad_request",
                        "'time_limit' %" PRId64 " s (%" PRId64 " min) does not fit in the %" PRId64 " s left of the reservation",
                        spec.time_limit, minutes, room);
        return 400;
      }
    } else if ((minutes = room / 60) < 1) {
      *json_out = err("gone", "reservation %" PRIu64 " has less than a minute left", r->id);
      status = 409;
    }
    if (status == 201 && r->jobs.size() >= kMaxJobs) {
      *json_out = err("too_many", "%d jobs already submitted into reservation %" PRIu64,
                      static_cast<int>(kMaxJobs), r->id);
      status = 409;
    }
  }
  if (status == 201) {
    // Write ahead: the submission reaches the disk before Slurm has the
    // job, so a crash between the two leaves a job the next term adopts
    // and answers a retry with (adopt_submissions), never one the plugin
    // does not know.
    const bool keyed = rq != nullptr && rq->key != nullptr;
    r->sub.pending = true;
    r->sub.key = keyed ? rq->key : "";
    r->sub.target = keyed ? str(rq->target) : "";
    r->sub.digest = keyed ? str(rq->digest) : "";
    r->sub.uid = uid;
    r->sub.part = part;
    r->sub.since = t;
    if (save() != 0) {
      r->sub = Submission();
      *json_out = not_saved(false, "nothing was submitted");
      return 503;
    }
    std::uint32_t job_id = 0;
    char why[512] = "";
    const int rc = host_.job_submit(host_.arg, &spec, r->id, r->uid,
                                    static_cast<std::uint32_t>(nodes),
                                    static_cast<std::uint32_t>(minutes), opt(r->partition),
                                    &job_id, why, sizeof(why));
    r->sub = Submission();
    if (rc != FLEXCO_RSVC_OK) {
      *json_out = err("refused", "Slurm refused the job: %s", why);
      status = 409;
    } else {
      PartJob pj;
      pj.job_id = job_id;
      pj.part_index = part;
      pj.submitted = t;
      pj.gated = spec.hold != 0;
      r->jobs.push_back(pj);
      r->changed = now();
      log(FLEXCO_RSVC_INFO, "part job %u (part %d) of %s: %" PRId64 " nodes, %" PRId64 " min",
          job_id, part, name_of(r->id).c_str(), nodes, minutes);
      *json_out = flexco_encode_part_job_submitted(job_id, static_cast<std::int64_t>(r->id), part);
    }
  }
  idem_keep(rq, uid, status, *json_out);
  return saved(status, json_out);
}

namespace {

// The answer about a part job (GET .../jobs/{job}, POST .../release): its
// state as Slurm has it (UNKNOWN once slurmctld purged it) and what the
// reservation knows of it; released: whether a release moved it out
// (NULL: not a release).
char* job_answer(const flexco_rsvc_host_t& host, std::uint64_t jid, const std::string& name,
                 int part_index, std::int64_t submitted, const bool* released) {
  json_t* o = host.job_state(host.arg, static_cast<std::uint32_t>(jid));
  if (o == nullptr)  // purged from slurmctld
    o = json_pack("{s:I, s:s, s:n, s:n, s:n, s:n, s:n, s:n, s:n}", "job_id",
                  static_cast<json_int_t>(jid), "state", "UNKNOWN", "reason", "start_time",
                  "end_time", "nodes", "reservation", "exit_code", "signal");
  if (o == nullptr) return nullptr;
  json_object_set_new(o, "flexco_reservation", json_string(name.c_str()));
  json_object_set_new(o, "part_index", json_integer(part_index));
  json_object_set_new(o, "submitted", json_integer(submitted));
  if (released != nullptr) json_object_set_new(o, "released", json_boolean(*released));
  return dump(o);
}

}  // namespace

int ResvService::job_get(std::uint32_t uid, const char* id, const char* job_s, char** json_out) {
  std::uint64_t jid = 0;
  std::int64_t submitted = 0;
  int part_index = 0, status = 200;
  bool found = false;
  std::string name;
  flexco_rsvc_host_t host;
  {
    std::lock_guard<std::mutex> g(mu_);
    Record* r = lookup(uid, id, false, json_out, &status);
    if (r == nullptr) return status;
    if (!parse_id(job_s, &jid) || jid > UINT32_MAX) {
      *json_out = err("bad_request", "job id must be a positive integer");
      return 400;
    }
    for (const auto& j : r->jobs)
      if (j.job_id == jid) {
        found = true;
        part_index = j.part_index;
        submitted = j.submitted;
      }
    name = name_of(r->id);
    host = host_;
  }
  if (!found) {
    *json_out = err("not_found", "job %" PRIu64 " is not a job of %s", jid, name.c_str());
    return 404;
  }
  // the job's state outside the lock (the host takes the job read lock)
  *json_out = job_answer(host, jid, name, part_index, submitted, nullptr);
  return 200;
}

// POST .../jobs/{job}/release: release a part job submitted held.  The
// lock is held across the release, so a release cannot overtake the
// submission of the same job.  Releasing twice is harmless.
//
// The start gate (doc/reservations.md, "The start gate"): a body
// {"lease_end": T} releases the job under a start lease that ends at T by
// this cluster's clock, and {"confirm": true} confirms it (the lease no
// longer applies).  A lease that ends unconfirmed lapses in the agent's
// pass: the job is cancelled, pending or running, and its gate stays shut
// (409 lease_lapsed to every later release or confirm).  The lease is
// saved before the hold goes, so a takeover or restart keeps enforcing it.
// Without a body the job is released as before, without a lease.
int ResvService::job_release(std::uint32_t uid, const char* id, const char* job_s,
                             const char* body, std::size_t len, char** json_out) {
  std::lock_guard<std::mutex> g(mu_);
  std::uint64_t jid = 0;
  int status = 200;
  bool released = false;
  if (is_daemon(uid) && !in_charge()) {
    *json_out = not_in_charge();
    return 503;
  }
  // the body first: a malformed one changes nothing
  std::int64_t lease_end = 0;
  bool confirm = false;
  if (const int rc = flexco_decode_release(body, len, &lease_end, &confirm, json_out)) return rc;
  const bool gated = lease_end != 0 || confirm;
  Record* r = lookup(uid, id, true, json_out, &status);
  if (r == nullptr) return status;
  if (!parse_id(job_s, &jid) || jid > UINT32_MAX) {
    *json_out = err("bad_request", "job id must be a positive integer");
    return 400;
  }
  PartJob* pj = nullptr;
  for (auto& j : r->jobs)
    if (j.job_id == jid) pj = &j;
  const std::string name = name_of(r->id);
  if (pj == nullptr) {
    *json_out = err("not_found", "job %" PRIu64 " is not a job of %s", jid, name.c_str());
    return 404;
  }
  if (gated && pj->lapsed) {
    *json_out = err("lease_lapsed",
                    "the start lease of job %" PRIu64 " lapsed unconfirmed and the job was "
                    "cancelled; it cannot be released or confirmed any more", jid);
    return 409;
  }
  const std::int64_t t = now();
  const std::int64_t was_lease_end = pj->lease_end;
  const bool was_confirmed = pj->confirmed;
  const bool was_gated = pj->gated;
  // released through the API from now on: on disk before the hold goes,
  // or a restart would take the job's start for someone else's release
  if (!confirm) pj->gated = false;
  if (confirm) {
    if (!pj->confirmed) {
      pj->confirmed = true;
      leases_confirmed_++;
      log(FLEXCO_RSVC_INFO, "part job %" PRIu64 " in %s: start confirmed", jid, name.c_str());
    }
  } else if (gated && !pj->confirmed) {
    if (t >= lease_end) {
      *json_out = err("lease_expired",
                      "the start lease asked for job %" PRIu64 " ended at %" PRId64
                      ", before now (%" PRId64 "); nothing was released", jid, lease_end, t);
      return 409;
    }
    if (pj->lease_end == 0) leases_opened_++;
    pj->lease_end = lease_end;
  }
  if ((gated || pj->gated != was_gated) && save() != 0) {  // on disk before the hold goes
    if (pj->lease_end != was_lease_end && was_lease_end == 0) leases_opened_--;
    if (pj->confirmed != was_confirmed) leases_confirmed_--;
    pj->lease_end = was_lease_end;  // not kept: nothing was done
    pj->confirmed = was_confirmed;
    pj->gated = was_gated;
    *json_out = not_saved(false, "nothing is released or confirmed until it can");
    return 503;
  }
  if (!confirm) {
    const int rc = host_.job_release(host_.arg, static_cast<std::uint32_t>(jid), name.c_str(),
                                     &released);
    if (rc == FLEXCO_RSVC_RELEASE_ADMIN_HELD) {
      *json_out = err("held", "job %" PRIu64 " is held by an administrator; it stays held", jid);
      return 409;
    }
  }
  // RELEASE_OTHER: moved out of the reservation by hand; shown as it is,
  // like a job that ended or is gone
  *json_out = job_answer(host_, jid, name, pj->part_index, pj->submitted,
                         confirm ? nullptr : &released);
  if (*json_out != nullptr) {
    json_error_t jerr;
    json_t* o = json_loads(*json_out, 0, &jerr);
    if (o != nullptr) {
      json_object_set_new(o, "lease_end", json_integer(pj->lease_end));
      json_object_set_new(o, "confirmed", json_boolean(pj->confirmed));
      std::free(*json_out);
      *json_out = dump(o);
    }
  }
  return status;
}

// Start leases that ended unconfirmed: the job is cancelled whether it
// waits or runs (its co-allocation was not confirmed started everywhere,
// so flexcod fails it; a part left to run would run alone).  True if a
// flag changed.
bool ResvService::enforce_leases(Record& r, std::int64_t t) {
  bool changed = false;
  for (auto& j : r.jobs) {
    if (j.gated && !j.ended) {
      // Held for the start gate and never released through the API, yet
      // running: released by hand (scontrol release), it would run
      // without its siblings.  Cancelled like a lapsed lease.
      bool ran = false;
      if (host_.job_phase(host_.arg, j.job_id, &ran) == FLEXCO_RSVC_PJ_RUNNING) {
        char why[256] = "";
        if (host_.job_cancel(host_.arg, j.job_id, name_of(r.id).c_str(), why, sizeof(why)) !=
            FLEXCO_RSVC_OK) {
          log(FLEXCO_RSVC_ERROR, "part job %u in %s: started without FlexCo's release, but "
              "could not be cancelled: %s; next pass tries again", j.job_id,
              name_of(r.id).c_str(), why);
          continue;
        }
        j.gated = false;
        j.lapsed = true;  // never to be released or confirmed again
        ungated_cancels_++;
        changed = true;
        log(FLEXCO_RSVC_INFO, "part job %u in %s: started without FlexCo's release (released by "
            "hand?), before its co-allocation's start gate: the job was cancelled",
            j.job_id, name_of(r.id).c_str());
        continue;
      }
    }
    if (j.lease_end == 0 || j.confirmed || j.lapsed || j.ended || t < j.lease_end) continue;
    bool ran = false;
    const int phase = host_.job_phase(host_.arg, j.job_id, &ran);
    char why[256] = "";
    int rc = FLEXCO_RSVC_OK;
    if (phase == FLEXCO_RSVC_PJ_PENDING || phase == FLEXCO_RSVC_PJ_RUNNING)
      rc = host_.job_cancel(host_.arg, j.job_id, name_of(r.id).c_str(), why, sizeof(why));
    if (rc != FLEXCO_RSVC_OK) {
      log(FLEXCO_RSVC_ERROR, "part job %u in %s: start lease lapsed at %" PRId64
          " unconfirmed, but the job could not be cancelled: %s; next pass tries again",
          j.job_id, name_of(r.id).c_str(), j.lease_end, why);
      continue;
    }
    j.lapsed = true;
    leases_lapsed_++;
    changed = true;
    log(FLEXCO_RSVC_INFO, "part job %u in %s: start lease lapsed at %" PRId64
        " unconfirmed: %s", j.job_id, name_of(r.id).c_str(), j.lease_end,
        phase == FLEXCO_RSVC_PJ_RUNNING ? "the running job was cancelled"
        : phase == FLEXCO_RSVC_PJ_PENDING ? "the waiting job was cancelled"
                                          : "the job had ended");
  }
  return changed;
}

// ---------------------------------------------------------------------------
// the agent's pass

// One part-job event: the job's state plus our record.  False if the
// events queue did not take it: the job's flag stays unset and the next
// pass tries again.
bool ResvService::publish(const char* type, const Record& r, const PartJob& j) {
  json_t* o = host_.job_state(host_.arg, j.job_id);
  if (o == nullptr)
    o = json_pack("{s:I, s:s}", "job_id", static_cast<json_int_t>(j.job_id), "state", "UNKNOWN");
  if (o == nullptr) return false;
  json_object_set_new(o, "reservation", json_string(name_of(r.id).c_str()));
  json_object_set_new(o, "reservation_id", json_integer(static_cast<json_int_t>(r.id)));
  json_object_set_new(o, "part_index", json_integer(j.part_index));
  return host_.publish(host_.arg, type, o, r.uid);
}

// part_job_started / part_job_ended for the jobs of r whose phase moved on
// since the last pass.  True if a flag changed.
bool ResvService::poll_jobs(Record& r) {
  bool changed = false;
  for (auto& j : r.jobs) {
    if (j.ended) continue;
    bool ran = false;
    const int phase = host_.job_phase(host_.arg, j.job_id, &ran);
    if (phase == FLEXCO_RSVC_PJ_PENDING) continue;
    if (!j.started && (phase == FLEXCO_RSVC_PJ_RUNNING || ran)) {
      if (!publish("part_job_started", r, j)) continue;  // queue full: next pass
      j.started = true;
      changed = true;
    }
    if ((phase == FLEXCO_RSVC_PJ_FINISHED || phase == FLEXCO_RSVC_PJ_GONE) &&
        publish("part_job_ended", r, j)) {
      j.ended = true;
      changed = true;
    }
  }
  return changed;
}

void ResvService::tick() {
  std::lock_guard<std::mutex> g(mu_);
  // the state is this term's and the controller still in charge: a
  // hand-back must not delete what the next controller will own
  if (!in_charge()) return;
  const std::int64_t t = now();
  bool dirty = false;
  ticks_++;
  if (!reconciled_) {
    adopt_submissions();
    reconcile();
    dirty = true;
  }
  auto ids = slurm_ids();
  id_floor(ids);
  // the plan: service/resv_rules.hpp
  std::vector<RecordView> views;
  views.reserve(rvs_.size());
  for (const auto& r : rvs_) views.push_back(RecordView{r.id, r.state, r.confirm_by, r.end});
  TickPlan plan = plan_tick(views, ids, unaccounted_ != 0, t);
  for (std::size_t i = 0; i < rvs_.size(); i++) {
    Record& r = rvs_[i];
    switch (plan.records[i]) {
      case TickAction::kExpireInterrupted: {
        // interrupted create: delete it if it exists
        bool there = false;
        for (auto id : ids)
          if (id == r.id) there = true;
        if (there) (void)slurm_delete(r);
        set_state(r, ResvState::kExpired, "create interrupted by a slurmctld restart");
        dirty = true;
        break;
      }
      case TickAction::kExpireUnconfirmed:
        (void)slurm_delete(r);
        set_state(r, ResvState::kExpired, "not confirmed in time");
        log(FLEXCO_RSVC_INFO, "reservation %s%" PRIu64 " expired unconfirmed", kPrefix, r.id);
        dirty = true;
        break;
      case TickAction::kEnd:
        set_state(r, ResvState::kEnded, nullptr);
        dirty = true;
        break;
      case TickAction::kGone:
        set_state(r, ResvState::kDeleted, "the Slurm reservation was deleted outside flexco");
        dirty = true;
        break;
      case TickAction::kKeep:
        break;
    }
  }
  // Slurm reservations named flexco_* that no live record knows: orphans,
  // deleted only while the state accounts for every flexco_* reservation.
  for (std::size_t j = 0; j < ids.size(); j++) {
    if (!plan.delete_slurm[j]) continue;
    const Record* r = find(ids[j]);
    log(FLEXCO_RSVC_INFO, "deleting orphan reservation %s%" PRIu64, kPrefix, ids[j]);
    std::vector<std::uint32_t> jobs;
    if (r != nullptr)
      for (const auto& pj : r->jobs) jobs.push_back(pj.job_id);
    char why[256] = "";
    (void)host_.remove(host_.arg, ids[j], jobs.data(), jobs.size(), r == nullptr, why,
                       sizeof(why));
  }
  for (auto& r : rvs_)
    if (enforce_leases(r, t)) dirty = true;
  for (auto& r : rvs_)
    if (poll_jobs(r)) dirty = true;
  // forget records that ended long ago
  for (std::size_t i = 0; i < rvs_.size();) {
    if (!live(rvs_[i].state) && t - rvs_[i].changed > kKeepEnded) {
      if (i + 1 != rvs_.size()) rvs_[i] = std::move(rvs_.back());
      rvs_.pop_back();
      dirty = true;
    } else {
      i++;
    }
  }
  if (dirty || save_failing_) (void)save();
}

json_t* ResvService::stats_json() {
  std::lock_guard<std::mutex> g(mu_);
  int counts[kResvStates] = {0};
  for (const auto& r : rvs_) counts[static_cast<int>(r.state)]++;
  json_t* by_state = json_object();
  for (int i = 0; i < kResvStates; i++)
    json_object_set_new(by_state, state_name(static_cast<ResvState>(i)), json_integer(counts[i]));
  json_t* root = json_pack("{s:o, s:{s:I, s:I}, s:I}", "by_state", by_state, "refused",
                           "not_available", static_cast<json_int_t>(refused_busy_), "low_fit",
                           static_cast<json_int_t>(refused_fit_), "next_id",
                           static_cast<json_int_t>(next_id_));
  if (root == nullptr) return nullptr;
  json_object_set_new(root, "adopted", json_integer(static_cast<json_int_t>(adopted_)));
  json_object_set_new(root, "ticks", json_integer(static_cast<json_int_t>(ticks_)));
  json_object_set_new(root, "start_leases",
                      json_pack("{s:I, s:I, s:I, s:I}", "opened",
                                static_cast<json_int_t>(leases_opened_), "confirmed",
                                static_cast<json_int_t>(leases_confirmed_), "lapsed",
                                static_cast<json_int_t>(leases_lapsed_), "ungated_cancels",
                                static_cast<json_int_t>(ungated_cancels_)));
  json_object_set_new(root, "unaccounted", json_integer(static_cast<json_int_t>(unaccounted_)));
  json_object_set_new(root, "epochs", fence_json());
  const auto is = idem_.stats(now());
  json_object_set_new(
      root, "idempotency",
      json_pack("{s:i, s:i, s:i, s:i, s:i, s:I, s:I}", "keys", static_cast<int>(is.keys),
                "capacity", static_cast<int>(idem_.capacity()), "per_uid",
                static_cast<int>(idem_.per_uid()), "max_uid_keys", static_cast<int>(is.max_uid_keys),
                "keep_seconds", static_cast<int>(idem_.keep_seconds()), "evicted_share",
                static_cast<json_int_t>(is.evicted_share), "evicted_full",
                static_cast<json_int_t>(is.evicted_full)));
  static const char* const kSrc[] = {"none", "current", "previous", "lost"};
  json_object_set_new(
      root, "state",
      json_pack("{s:s, s:b, s:b, s:I, s:I, s:o, s:o}", "loaded_from", kSrc[loaded_from_ & 3],
                "recovered", reconciled_, "saving", !save_failing_, "saves",
                static_cast<json_int_t>(saves_), "save_errors",
                static_cast<json_int_t>(save_errors_), "last_save_error",
                last_save_error_.empty() ? json_null() : json_string(last_save_error_.c_str()),
                "last_save_error_at",
                last_save_error_at_ != 0 ? json_integer(last_save_error_at_) : json_null()));
  return root;
}

}  // namespace flexco::service
