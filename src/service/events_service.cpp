// SPDX-License-Identifier: GPL-2.0-or-later
// events_service.cpp - see events_service.hpp.

#include "service/events_service.hpp"

#include <pthread.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "service/host_log.hpp"
#include "service/statefile.h"

namespace flexco::service {

namespace {

constexpr const char* kAclKey = "_acl";  // who may see an event, until published
constexpr const char* kJobEndedEarly = "job_ended_early";

std::uint64_t usec_now() {
  using namespace std::chrono;
  return static_cast<std::uint64_t>(
      duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count());
}

// Planned end: start + limit + time spent suspended; 0 if no limit.
std::int64_t planned_end(std::int64_t start, std::uint32_t limit_min, std::int64_t sus) {
  if (start == 0 || limit_min == FLEXCO_ESVC_NO_LIMIT) return 0;
  return start + static_cast<std::int64_t>(limit_min) * 60 + sus;
}

// A finished job that ran on nodes and ended before its planned end.
bool ended_early(const flexco_esvc_job_t& j) {
  if (!j.finished || j.nodes == nullptr || j.nodes[0] == '\0' || j.start == 0 || j.end < j.start)
    return false;
  const std::int64_t planned = planned_end(j.start, j.time_limit, j.suspended);
  return planned != 0 && planned > j.end;
}

// Bounded copy, no allocation; true if src did not fit.
bool copy_str(char* dst, std::size_t cap, const char* src) {
  if (src == nullptr) src = "";
  const std::size_t n = strnlen(src, cap);
  if (n >= cap) {
    std::memcpy(dst, src, cap - 1);
    dst[cap - 1] = '\0';
    return true;
  }
  std::memcpy(dst, src, n + 1);
  return false;
}

void set_str(std::string* dst, bool* has, const char* src) {
  *has = src != nullptr;
  dst->assign(src != nullptr ? src : "");
}

// An event's ACL rides in the batch as its member kAclKey ({"job_uid":U,
// "account":A} for a job, {"users":[U,...],"users_not":B} for a
// reservation) and is taken out when the event is published: it is kept
// as the event's tag in the ring and never sent.
json_t* acl_json(const flexco_evstate_acl_t& acl) {
  json_t* o = json_object();
  if (acl.job) {
    json_object_set_new(o, "job_uid", json_integer(static_cast<json_int_t>(acl.job_uid)));
    if (acl.account != nullptr) json_object_set_new(o, "account", json_string(acl.account));
  }
  if (acl.resv) {
    json_t* users = json_array();
    for (std::size_t i = 0; i < acl.user_cnt; i++)
      json_array_append_new(users, json_integer(static_cast<json_int_t>(acl.users[i])));
    json_object_set_new(o, "users", users);
    json_object_set_new(o, "users_not", json_boolean(acl.users_not));
  }
  return o;
}

// A tag of the ring: a malloc'd acl with malloc'd members.
void free_tag(void* tag) {
  auto* acl = static_cast<flexco_evstate_acl_t*>(tag);
  if (acl == nullptr) return;
  std::free(acl->account);
  std::free(acl->users);
  std::free(acl);
}

// A malloc'd copy of acl, members included (NULL if out of memory).
flexco_evstate_acl_t* acl_dup(const flexco_evstate_acl_t& in) {
  auto* t = static_cast<flexco_evstate_acl_t*>(std::calloc(1, sizeof(flexco_evstate_acl_t)));
  if (t == nullptr) return nullptr;
  *t = in;
  t->account = in.account != nullptr ? strdup(in.account) : nullptr;
  t->users = nullptr;
  t->user_cnt = 0;
  if (in.user_cnt != 0 &&
      (t->users = static_cast<std::uint32_t*>(std::calloc(in.user_cnt, sizeof(std::uint32_t))))) {
    std::memcpy(t->users, in.users, sizeof(std::uint32_t) * in.user_cnt);
    t->user_cnt = in.user_cnt;
  }
  return t;
}

// The reverse of acl_json(); members of the wrong type are left out,
// which hides the event from everyone but privileged callers.  Borrowed
// pointers into o; users in *uids.
void acl_from_json(json_t* o, flexco_evstate_acl_t* acl, std::vector<std::uint32_t>* uids) {
  std::memset(acl, 0, sizeof(*acl));
  if (!json_is_object(o)) return;
  json_t* v;
  if ((v = json_object_get(o, "job_uid")) != nullptr) {
    acl->job = true;
    acl->job_uid = json_is_integer(v) ? static_cast<std::uint32_t>(json_integer_value(v))
                                      : UINT32_MAX;
    if (json_is_string(v = json_object_get(o, "account")))
      acl->account = const_cast<char*>(json_string_value(v));
  }
  json_t* users = json_object_get(o, "users");
  if (users != nullptr) {
    acl->resv = true;
    for (std::size_t i = 0; i < json_array_size(users); i++) {
      v = json_array_get(users, i);
      if (json_is_integer(v)) uids->push_back(static_cast<std::uint32_t>(json_integer_value(v)));
    }
    acl->users = uids->data();
    acl->user_cnt = uids->size();
    acl->users_not = !json_is_false(json_object_get(o, "users_not"));
  }
}

int put_cb(const char* buf, std::size_t len, void* arg) {
  try {
    static_cast<std::string*>(arg)->append(buf, len);
    return 0;
  } catch (...) {
    return -1;
  }
}

int parse_cb(const char* text, std::size_t len, void* arg, char* why, std::size_t why_len) {
  try {
    return static_cast<EventsService*>(arg)->parse_state(text, len, why, why_len);
  } catch (...) {
    std::snprintf(why, why_len, "out of memory");
    return -1;
  }
}

// flexco_seq_take()'s save of a new mark: 0 if it is on disk
int save_mark_cb(std::uint64_t mark, void* arg) {
  try {
    return static_cast<EventsService*>(arg)->save_state(mark, false);
  } catch (...) {
    return -1;
  }
}

// The sinks of the host's copies (called under slurmctld's locks: copy
// only, never throw).
void job_sink(void* sink, const flexco_esvc_job_t* j) {
  try {
    static_cast<EventsService*>(sink)->add_candidate(*j, false);
  } catch (...) {
    // out of memory: the next full scan finds the job again
  }
}

void resv_sink(void* sink, const flexco_evstate_resv_t* r) {
  try {
    static_cast<EventsService*>(sink)->add_resv(*r);
  } catch (...) {
    // out of memory: the reservation is missing from this copy
  }
}

void emit_cb(int what, const flexco_evstate_resv_t* r, void* arg) {
  try {
    static_cast<EventsService*>(arg)->emit_resv(what, *r);
  } catch (...) {
  }
}

// the retained events for the state file, borrowed from the ring
int event_to_state(std::uint64_t seq, const char* text, std::size_t len, const void* tag,
                   void* arg) {
  static const flexco_evstate_acl_t anyone{};
  auto* fill = static_cast<std::vector<flexco_evstate_event_t>*>(arg);
  if (fill->size() >= fill->capacity()) return 1;
  flexco_evstate_event_t e{};
  e.seq = seq;
  e.text = const_cast<char*>(text);
  e.len = len;
  e.acl = tag != nullptr ? *static_cast<const flexco_evstate_acl_t*>(tag) : anyone;
  fill->push_back(e);
  return 0;
}

}  // namespace

EventsService::EventsService()
    : hook_queue_(new HookRec[FLEXCO_ESVC_HOOK_QUEUE_LEN]),
      hook_work_(new HookRec[FLEXCO_ESVC_HOOK_QUEUE_LEN]) {}

EventsService::~EventsService() {
  close();
  flexco_ring_destroy(ring_);
  flexco_tracker_destroy(tracker_);
}

void EventsService::log(int level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  host_vlog(host_.log, host_.arg, level, fmt, ap);
  va_end(ap);
}

// ---------------------------------------------------------------------------
// the hook: slurmctld's job write lock is held, keep it tiny

void EventsService::job_end(const flexco_esvc_job_t& j) noexcept {
  std::lock_guard<std::mutex> lk(hook_mu_);
  hook_calls_++;
  if (hook_cnt_ >= FLEXCO_ESVC_HOOK_QUEUE_LEN) {
    hook_dropped_++;  // the poller still finds the job
    return;
  }
  HookRec& r = hook_queue_[hook_cnt_++];
  r.job = j;
  r.job.partition = r.job.nodes = r.job.account = nullptr;  // the copies below
  r.planned = planned_end(j.start, j.time_limit, j.suspended);
  r.truncated = copy_str(r.partition, sizeof(r.partition), j.partition);
  r.truncated |= copy_str(r.nodes, sizeof(r.nodes), j.nodes);
  // a cut name could match another account's coordinator
  if (copy_str(r.account, sizeof(r.account), j.account)) r.account[0] = '\0';
  // Before open() the records wait for the thread.
  if (thread_on_) hook_cv_.notify_one();
}

// ---------------------------------------------------------------------------
// jobs

bool EventsService::was_reported(std::uint32_t job_id, std::int64_t start) const {
  for (const auto& r : reported_)
    if (r.job_id == job_id && r.start == start) return true;
  return false;
}

void EventsService::add_reported(std::uint32_t job_id, std::int64_t start, std::int64_t end) {
  reported_.push_back({job_id, start, end});
  dirty_ = true;
}

// Forget jobs the poller can no longer see (they end before the floor).
void EventsService::prune_reported() {
  std::size_t k = 0;
  for (std::size_t i = 0; i < reported_.size(); i++)
    if (reported_[i].end + kFloorSlackSec >= job_floor_) reported_[k++] = reported_[i];
  reported_.resize(k);
}

EventsService::Cand EventsService::cand_of(const flexco_esvc_job_t& j, std::int64_t planned,
                                           bool from_hook) {
  Cand c;
  c.job = j;
  c.planned = planned;
  set_str(&c.partition, &c.has_partition, j.partition);
  set_str(&c.nodes, &c.has_nodes, j.nodes);
  set_str(&c.account, &c.has_account, j.account);
  c.job.partition = c.job.nodes = c.job.account = nullptr;
  c.from_hook = from_hook;
  return c;
}

json_t* EventsService::job_event(const Cand& c, std::int64_t t) {
  const flexco_esvc_job_t& j = c.job;
  flexco_evstate_acl_t acl{};
  acl.job = true;
  acl.job_uid = j.user_id;
  acl.account = c.has_account ? const_cast<char*>(c.account.c_str()) : nullptr;
  const std::uint32_t node_count =
      host_.node_count(host_.arg, c.has_nodes ? c.nodes.c_str() : nullptr, j.node_cnt);
  return json_pack(
      "{s:s, s:I, s:I, s:I, s:s?, s:s?, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:o}", "type",
      kJobEndedEarly, "time", static_cast<json_int_t>(t), "job_id",
      static_cast<json_int_t>(j.job_id), "user_id", static_cast<json_int_t>(j.user_id),
      "partition", c.has_partition ? c.partition.c_str() : nullptr, "nodes",
      c.has_nodes ? c.nodes.c_str() : nullptr, "node_count", static_cast<json_int_t>(node_count),
      "start", static_cast<json_int_t>(j.start), "planned_end", static_cast<json_int_t>(c.planned),
      "actual_end", static_cast<json_int_t>(j.end), "seconds_early",
      static_cast<json_int_t>(c.planned - j.end), "state", j.state != nullptr ? j.state : "UNKNOWN",
      "detected_by", c.from_hook ? "epilog" : "poll", kAclKey, acl_json(acl));
}

void EventsService::emit_job(const Cand& c, std::int64_t t) {
  if (was_reported(c.job.job_id, c.job.start)) return;
  add_reported(c.job.job_id, c.job.start, c.job.end);
  json_t* ev = job_event(c, t);
  if (ev != nullptr) json_array_append_new(batch_, ev);
}

// Called under the host's job lock: copy only.
void EventsService::add_candidate(const flexco_esvc_job_t& j, bool from_hook) {
  if (!from_hook && (j.end + kFloorSlackSec < job_floor_ || !ended_early(j))) return;
  cands_.push_back(cand_of(j, planned_end(j.start, j.time_limit, j.suspended), from_hook));
}

namespace {
// Releases the host's job lock however the scan leaves.
struct JobLock {
  explicit JobLock(const flexco_esvc_host_t& h) : h(h) { h.lock_jobs(h.arg); }
  ~JobLock() { h.unlock_jobs(h.arg); }
  const flexco_esvc_host_t& h;
};
}  // namespace

// Drain the hook queue and, if full, scan every job: both under the
// host's job lock, so that a job seen finished here had its hook record
// queued before (the hook runs under the job write lock).
void EventsService::scan_jobs(bool full) {
  std::uint32_t nhooks = 0;
  std::int64_t scan_time = 0;
  const std::uint64_t t0 = usec_now();
  cands_.clear();
  {
    JobLock lock(host_);
    scan_time = now();
    {
      std::lock_guard<std::mutex> lk(hook_mu_);
      nhooks = hook_cnt_;
      std::memcpy(hook_work_.get(), hook_queue_.get(), sizeof(HookRec) * nhooks);
      hook_cnt_ = 0;
    }
    for (std::uint32_t i = 0; i < nhooks; i++) {
      flexco_esvc_job_t j{};
      if (!host_.find_job(host_.arg, hook_work_[i].job.job_id, &j) || !j.finished)
        continue;  // gone already: use the hook's copy
      hook_work_[i].job.job_id = 0;  // handled
      if (ended_early(j)) {
        try {
          add_candidate(j, true);
        } catch (...) {
          // out of memory: the next full scan finds the job again
        }
      }
    }
    if (full) host_.each_job(host_.arg, job_sink, this);
  }
  const std::uint64_t held = usec_now() - t0;

  // No host lock from here on.
  const std::int64_t t = now();
  for (const auto& c : cands_) emit_job(c, t);
  cands_.clear();
  for (std::uint32_t i = 0; i < nhooks; i++) {
    const HookRec& r = hook_work_[i];
    if (r.job.job_id == 0 || r.truncated || r.planned == 0 || r.planned <= r.job.end)
      continue;  // truncated: the poller reports it
    flexco_esvc_job_t j = r.job;
    j.partition = r.partition[0] != '\0' ? r.partition : nullptr;
    j.nodes = r.nodes[0] != '\0' ? r.nodes : nullptr;
    j.account = r.account[0] != '\0' ? r.account : nullptr;
    emit_job(cand_of(j, r.planned, true), t);
  }
  if (full) {
    job_scan_time_ = scan_time;
    job_floor_ = scan_time;
    prune_reported();
  }

  std::lock_guard<std::mutex> lk(stats_mu_);
  job_scans_++;
  scan_usec_last_ = held;
  if (held > scan_usec_max_) scan_usec_max_ = held;
}

// ---------------------------------------------------------------------------
// reservations

void EventsService::emit_resv(int what, const flexco_evstate_resv_t& t) {
  flexco_evstate_acl_t acl{};
  acl.resv = true;
  acl.users = t.users;
  acl.user_cnt = t.user_cnt;
  acl.users_not = t.users_not;
  const char* type = what == FLEXCO_RESV_ACTIVATED ? "reservation_activated"
                     : what == FLEXCO_RESV_ENDED   ? "reservation_ended"
                                                   : "reservation_deleted";
  json_t* ev = json_pack("{s:s, s:I, s:s, s:I, s:I, s:s?, s:I, s:o}", "type", type, "time",
                         static_cast<json_int_t>(batch_now_), "reservation", t.name, "start",
                         static_cast<json_int_t>(t.start), "end", static_cast<json_int_t>(t.end),
                         "nodes", t.nodes, "node_count", static_cast<json_int_t>(t.node_cnt),
                         kAclKey, acl_json(acl));
  if (ev != nullptr) json_array_append_new(batch_, ev);
  dirty_ = true;
}

// Called under the host's node lock: copy only.
void EventsService::add_resv(const flexco_evstate_resv_t& r) {
  Resv c;
  c.name = r.name != nullptr ? r.name : "";
  set_str(&c.nodes, &c.has_nodes, r.nodes);
  if (r.user_cnt != 0 && r.users != nullptr) c.users.assign(r.users, r.users + r.user_cnt);
  c.view = r;
  resvs_.push_back(std::move(c));
}

// Compare a copy of resv_list with what was seen (service/resv_tracker.hpp
// has the rules), with no lock held.
void EventsService::refresh_resvs() {
  resvs_.clear();
  host_.copy_resvs(host_.arg, &resv_snap_time_, &seen_resv_update_, resv_sink, this);
  std::vector<flexco_evstate_resv_t> views;
  views.reserve(resvs_.size());
  for (auto& r : resvs_) {
    r.view.name = const_cast<char*>(r.name.c_str());
    r.view.nodes = r.has_nodes ? const_cast<char*>(r.nodes.c_str()) : nullptr;
    r.view.users = r.users.empty() ? nullptr : r.users.data();
    r.view.user_cnt = r.users.size();
    views.push_back(r.view);
  }
  batch_now_ = now();
  if (flexco_tracker_refresh(tracker_, views.data(), views.size(), batch_now_, resv_baseline_,
                             emit_cb, this))
    dirty_ = true;
  resvs_.clear();
  resv_baseline_ = false;

  std::lock_guard<std::mutex> lk(stats_mu_);
  resv_snaps_++;
}

// ---------------------------------------------------------------------------
// state file

// Write the whole state through the host (the plugin: service/statefile.h),
// encoded by the core (flexco_encode_events_state, the reverse of the
// loader's decoder).  The cycle's caller only.
int EventsService::save_state(std::uint64_t reserved, bool clean) {
  flexco_events_state_t st{};
  char err[256] = "";
  int rc = -1;

  st.clean = clean;
  st.saved_at = now();
  st.reserved = reserved;
  flexco_ring_marks(ring_, &st.latest, &st.lost_upto);
  st.job_floor = job_floor_;
  std::vector<flexco_evstate_job_t> jobs(reported_.size());
  for (std::size_t i = 0; i < reported_.size(); i++) {
    jobs[i].job_id = reported_[i].job_id;
    jobs[i].start = reported_[i].start;
    jobs[i].end = reported_[i].end;
  }
  st.jobs = jobs.data();
  st.job_cnt = jobs.size();
  // the retained events and who may see each, borrowed from the ring
  flexco_ring_stats_t rs;
  flexco_ring_stats(ring_, &rs);
  std::vector<flexco_evstate_event_t> fill;
  fill.reserve(rs.retained);
  flexco_ring_each(ring_, event_to_state, &fill);
  st.events = fill.data();
  st.event_cnt = fill.size();
  // the tracked reservations, borrowed (malloc'd array of views)
  st.resv_cnt = flexco_tracker_view(tracker_, &st.resvs);

  std::string text;
  if (flexco_encode_events_state(&st, put_cb, &text, err, sizeof(err)) != 0)
    log(FLEXCO_ESVC_ERROR, "events: %s", err);
  else
    rc = host_.save(host_.arg, text.data(), text.size(), err, sizeof(err)) == 0 ? 0 : -1;
  std::free(st.resvs);
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    if (rc != 0) {
      save_errors_++;
      last_save_error_ = err;
      has_save_error_ = true;
    } else {
      saves_++;
    }
  }
  if (rc == 0) {
    dirty_ = false;
    last_save_ = now();
  }
  return rc;
}

// Append one stored event; tag (NULL: anyone may see it) is the ring's.
void EventsService::ring_append(std::uint64_t seq, const char* json, flexco_evstate_acl_t* tag) {
  // out of memory: the ring frees the tag and counts seq as lost
  (void) flexco_ring_append(ring_, seq, json, std::strlen(json), tag);
}

void EventsService::reset_tracking() {
  flexco_ring_clear(ring_);
  flexco_tracker_clear(tracker_);
  reported_.clear();
}

// One copy of the state file, decoded strictly by the core
// (flexco_decode_events_state: schema, bounds, order; nothing kept on
// error), then turned into the ring and the tracking state.
int EventsService::parse_state(const char* text, std::size_t len, char* why, std::size_t why_len) {
  static const flexco_evstate_limits_t lim = FLEXCO_EVSTATE_LIMITS_DEFAULT;
  flexco_events_state_t st;
  if (flexco_decode_events_state(text, len, &lim, &st, why, why_len) != 0) return -1;
  loaded_.reserved = st.reserved;
  loaded_.latest = st.latest;
  loaded_.clean = st.clean;
  // lost_upto raised below if the ring is smaller now
  flexco_ring_set_marks(ring_, st.latest, st.lost_upto);
  job_floor_ = st.job_floor;
  for (std::size_t i = 0; i < st.event_cnt; i++) {
    const flexco_evstate_acl_t& a = st.events[i].acl;
    // drops the oldest if the buffer is smaller now
    ring_append(st.events[i].seq, st.events[i].text, (a.job || a.resv) ? acl_dup(a) : nullptr);
  }
  for (std::size_t i = 0; i < st.job_cnt; i++)
    add_reported(st.jobs[i].job_id, st.jobs[i].start, st.jobs[i].end);
  // a state file older than "users": nobody but operators may see a
  // reservation until it is seen again
  for (std::size_t i = 0; i < st.resv_cnt; i++) flexco_tracker_put(tracker_, &st.resvs[i]);
  std::uint64_t latest = 0;
  flexco_ring_marks(ring_, &latest, &loaded_.lost_upto);
  flexco_events_state_free(&st);
  return 0;
}

// Read the state file (the current copy, else the previous one).  None: a
// first start, numbering from 1, and what already exists (finished jobs,
// reservations) is the baseline, not news.  No valid copy, or only the
// previous one (numbers reserved by the lost save may have been handed
// out): number from (epoch seconds) x 10^6 -- above anything the lost
// counter can have reached -- telling every client that it may have missed
// events.
void EventsService::load_state() {
  const std::int64_t t = now();
  const std::uint64_t floor = static_cast<std::uint64_t>(t) * 1000000;
  loaded_ = flexco_seq_saved_t{};
  const statefile_src_t src = host_.load(host_.arg, SIZE_MAX, parse_cb, this);
  // the numbering rules: service/event_seq.hpp
  std::uint64_t latest = 0, lost = 0;
  flexco_ring_marks(ring_, &latest, &lost);
  flexco_seq_restore(&seq_,
                     src == STATEFILE_CURRENT ? FLEXCO_SEQ_CURRENT
                     : src == STATEFILE_PREV  ? FLEXCO_SEQ_PREVIOUS
                     : src == STATEFILE_LOST  ? FLEXCO_SEQ_LOST
                                                       : FLEXCO_SEQ_NONE,
                     &loaded_, floor, &latest, &lost);
  flexco_ring_set_marks(ring_, latest, lost);
  if (src == STATEFILE_NONE) {
    job_floor_ = t;
    resv_baseline_ = true;
    log(FLEXCO_ESVC_INFO, "events: numbering events from 1");
    return;
  }
  if (src == STATEFILE_LOST) {
    reset_tracking();
    job_floor_ = t;
    resv_baseline_ = true;
    log(FLEXCO_ESVC_ERROR, "events: starting over at sequence number %" PRIu64, seq_.next);
    return;
  }
  if (src == STATEFILE_PREV && loaded_.reserved < floor)
    log(FLEXCO_ESVC_ERROR, "events: numbering continues at %" PRIu64 " after the previous copy",
        seq_.next);
  resv_baseline_ = false;
  flexco_ring_stats_t rs;
  flexco_ring_stats(ring_, &rs);
  log(FLEXCO_ESVC_INFO,
      "events: restored %" PRIu64 " events from %s (latest %" PRIu64
      "); numbering continues at %" PRIu64,
      rs.retained, statefile_src_name(src), latest, seq_.next);
}

// ---------------------------------------------------------------------------
// publishing

// Number the batch's events and append them to the ring.  A number is
// handed out only once the mark above it is on disk: if that save fails,
// the events wait (held, in order) and nothing is numbered, so a crash
// can never make a restart hand the same number to another event.
void EventsService::publish_batch() {
  if (held_ != nullptr && json_array_size(held_) != 0) {  // the held ones go first
    json_array_extend(held_, batch_);
    json_array_clear(batch_);
    json_array_extend(batch_, held_);
    json_array_clear(held_);
  }
  const std::size_t n = json_array_size(batch_);
  if (n == 0) return;
  const std::uint64_t first = flexco_seq_take(&seq_, n, save_mark_cb, this);
  if (first == 0) {
    if (!reserve_failing_)
      log(FLEXCO_ESVC_ERROR,
          "events: cannot save the sequence mark (StateSaveLocation); %zu events wait unnumbered until it can be saved",
          n);
    reserve_failing_ = true;
    if (held_ == nullptr) held_ = json_array();
    std::uint64_t dropped = 0;
    while (json_array_size(batch_) > kHeldMax) {
      json_array_remove(batch_, 0);
      dropped++;
    }
    json_array_extend(held_, batch_);
    std::lock_guard<std::mutex> lk(stats_mu_);
    held_dropped_ += dropped;
    held_cnt_ = json_array_size(held_);
    return;
  }
  if (reserve_failing_)
    log(FLEXCO_ESVC_INFO, "events: sequence mark saved again; numbering resumes at %" PRIu64,
        first);
  reserve_failing_ = false;
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    held_cnt_ = 0;
  }

  // latest rises to first + n - 1 with the last of them
  for (std::size_t i = 0; i < n; i++) {
    json_t* ev = json_array_get(batch_, i);
    json_t* obj = json_object();
    json_object_set_new(obj, "seq", json_integer(static_cast<json_int_t>(first + i)));
    json_object_set(obj, "type", json_object_get(ev, "type"));
    json_object_set(obj, "time", json_object_get(ev, "time"));
    json_object_update(obj, ev);
    flexco_evstate_acl_t acl;
    std::vector<std::uint32_t> uids;
    flexco_evstate_acl_t* tag = nullptr;
    try {
      acl_from_json(json_object_get(obj, kAclKey), &acl, &uids);
      if (acl.job || acl.resv) tag = acl_dup(acl);
    } catch (...) {
      tag = nullptr;  // out of memory: hidden from all but privileged callers
    }
    json_object_del(obj, kAclKey);
    char* text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (text != nullptr) {
      ring_append(first + i, text, tag);
      std::free(text);
    } else {
      free_tag(tag);
      flexco_ring_skip(ring_, first + i);  // out of memory
    }
  }
  void (*fn)() = nullptr;
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    published_ += n;
    fn = listener_;
  }
  dirty_ = true;
  if (fn != nullptr) fn();
}

// Move events_publish()'s queue into the batch.
void EventsService::drain_ext() {
  json_t* q[FLEXCO_ESVC_EXT_QUEUE_LEN];
  std::uint32_t n;
  {
    std::lock_guard<std::mutex> lk(hook_mu_);
    n = ext_cnt_;
    std::memcpy(q, ext_queue_, sizeof(json_t*) * n);
    ext_cnt_ = 0;
  }
  for (std::uint32_t i = 0; i < n; i++) json_array_append_new(batch_, q[i]);
}

void EventsService::cycle() {
  if (!open_) return;
  const std::int64_t t = now();
  const std::int64_t ru = host_.resv_update(host_.arg);
  if (!host_.in_charge(host_.arg)) return;  // standby, hand-back or shutdown
  json_decref(batch_);
  batch_ = json_array();
  drain_ext();

  bool hooks;
  std::uint64_t dropped;
  {
    std::lock_guard<std::mutex> lk(hook_mu_);
    hooks = hook_cnt_ > 0;
    dropped = hook_dropped_;
  }
  // The epilog hook sees every job that ends, so the whole job list is
  // walked only as a safety net: at the first cycle (jobs that ended
  // while slurmctld or the plugin was down), when the hook's queue
  // overflowed, and every kFullScanSec.  The lock hold of a cycle
  // otherwise grows with the jobs that ended, not with the queue.
  const bool scan = job_scan_time_ == 0 || dropped != seen_dropped_ ||
                    t - job_scan_time_ >= kFullScanSec;
  if (scan) seen_dropped_ = dropped;
  if (hooks || scan) scan_jobs(scan);

  if (ru != seen_resv_update_ || ru >= resv_snap_time_ || t - resv_snap_time_ >= kResvSnapSec)
    refresh_resvs();
  // starts and ends happen by the clock, with or without a list change
  batch_now_ = now();
  if (flexco_tracker_tick(tracker_, batch_now_, emit_cb, this)) dirty_ = true;

  publish_batch();
  json_decref(batch_);
  batch_ = nullptr;

  if (dirty_ && now() - last_save_ >= kSaveGapSec) (void) save_state(seq_.reserved, false);
}

void EventsService::run() {
  using clock = std::chrono::steady_clock;
  pthread_setname_np(pthread_self(), "flexco_events");
  log(FLEXCO_ESVC_DEBUG, "events thread started");
  std::unique_lock<std::mutex> lk(hook_mu_);
  while (!stop_) {
    const auto min_until = clock::now() + std::chrono::milliseconds(kMinGapMsec);
    const auto tick_until = clock::now() + std::chrono::milliseconds(kTickMsec);
    while (!stop_ && hook_cv_.wait_until(lk, min_until) != std::cv_status::timeout) {
    }
    while (!stop_ && hook_cnt_ == 0 && ext_cnt_ == 0 &&
           hook_cv_.wait_until(lk, tick_until) != std::cv_status::timeout) {
    }
    if (stop_) break;
    lk.unlock();
    try {
      cycle();
    } catch (...) {
      log(FLEXCO_ESVC_ERROR, "events: out of memory in a cycle");
      json_decref(batch_);
      batch_ = nullptr;
    }
    lk.lock();
  }
  lk.unlock();
  log(FLEXCO_ESVC_DEBUG, "events thread exiting");
}

// ---------------------------------------------------------------------------
// the interface

int EventsService::open(std::uint32_t capacity, const flexco_esvc_host_t& host, bool thread) {
  {
    std::lock_guard<std::mutex> lk(hook_mu_);
    if (open_) return 0;
  }
  host_ = host;
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    visible_ = host.visible;
    visible_arg_ = host.arg;
  }
  if (ring_ == nullptr)
    ring_ = flexco_ring_create(capacity, free_tag);
  else
    flexco_ring_reset(ring_, capacity);
  if (tracker_ == nullptr)
    tracker_ = flexco_tracker_create();
  else
    flexco_tracker_clear(tracker_);
  if (ring_ == nullptr || tracker_ == nullptr) {
    log(FLEXCO_ESVC_ERROR, "events: out of memory");
    return -1;
  }
  load_state();
  dirty_ = false;
  last_save_ = 0;
  job_scan_time_ = 0;
  seen_resv_update_ = resv_snap_time_ = 0;

  std::lock_guard<std::mutex> lk(hook_mu_);
  stop_ = false;
  if (thread) {
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      log(FLEXCO_ESVC_ERROR, "cannot create events thread: %s", std::strerror(e.code().value()));
      return -1;
    }
    thread_on_ = true;
  }
  open_ = true;
  return 0;
}

void EventsService::close() {
  {
    std::lock_guard<std::mutex> lk(hook_mu_);
    if (!open_) return;
    stop_ = true;
    hook_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();

  // Jobs still in the hook queue are found again by the poller after the
  // restart: the saved floor lies before their end.  Events still held
  // (their numbers could not be reserved) are lost: the state is then not
  // clean, so the next start tells clients that events may be missing.
  const std::size_t held = held_ != nullptr ? json_array_size(held_) : 0;
  if (held != 0)
    log(FLEXCO_ESVC_ERROR,
        "events: %zu events never got a sequence number (the mark could not be saved) and are lost",
        held);
  if (save_state(seq_.reserved, held == 0) != 0)
    log(FLEXCO_ESVC_ERROR, "events: final state save failed");
  json_decref(held_);
  held_ = nullptr;
  reserve_failing_ = false;

  {
    std::lock_guard<std::mutex> lk(hook_mu_);
    open_ = false;
    thread_on_ = false;
    hook_cnt_ = 0;
    for (std::uint32_t i = 0; i < ext_cnt_; i++) json_decref(ext_queue_[i]);
    ext_cnt_ = 0;
  }
  reset_tracking();
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    listener_ = nullptr;
    last_save_error_.clear();
    has_save_error_ = false;
  }
  reported_.shrink_to_fit();
  log(FLEXCO_ESVC_INFO, "events: stopped at sequence number %" PRIu64, latest());
}

int EventsService::publish(const char* type, json_t* fields, const flexco_evstate_acl_t* acl,
                           std::int64_t t, bool refuse) {
  if (type == nullptr || !json_is_object(fields)) {
    json_decref(fields);
    return -1;
  }
  if (acl != nullptr) json_object_set_new(fields, kAclKey, acl_json(*acl));
  json_object_set_new(fields, "type", json_string(type));
  json_object_set_new(fields, "time", json_integer(static_cast<json_int_t>(t)));

  std::unique_lock<std::mutex> lk(hook_mu_);
  if (!open_ || stop_ || refuse || ext_cnt_ == FLEXCO_ESVC_EXT_QUEUE_LEN) {
    ext_dropped_++;
    lk.unlock();
    json_decref(fields);
    return -1;
  }
  ext_queue_[ext_cnt_++] = fields;
  hook_cv_.notify_one();
  return 0;
}

std::uint64_t EventsService::latest() const {
  std::uint64_t latest = 0, lost = 0;
  flexco_ring_marks(ring_, &latest, &lost);
  return latest;
}

void EventsService::set_listener(void (*fn)()) {
  std::lock_guard<std::mutex> lk(stats_mu_);
  listener_ = fn;
}

namespace {
struct VisibleArg {
  bool (*fn)(void*, const void*, const flexco_evstate_acl_t*);
  void* arg;
  const void* viewer;
};

// flexco_ring_page()'s question: may the viewer see this event?
bool ring_visible(const void* tag, void* arg) {
  const auto* v = static_cast<const VisibleArg*>(arg);
  return tag == nullptr || v->viewer == nullptr || v->fn == nullptr ||
         v->fn(v->arg, v->viewer, static_cast<const flexco_evstate_acl_t*>(tag));
}
}  // namespace

char* EventsService::query(std::uint64_t after, std::uint32_t max, const void* viewer,
                           flexco_ring_page_t* page) {
  VisibleArg v{nullptr, nullptr, viewer};
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    v.fn = visible_;
    v.arg = visible_arg_;
  }
  // which events, and the cursor: service/event_ring.hpp
  return flexco_ring_page(ring_, after, max, ring_visible, &v, page);
}

json_t* EventsService::stats_json() {
  std::uint64_t calls, dropped, edropped;
  std::uint32_t queued;
  {
    std::lock_guard<std::mutex> lk(hook_mu_);
    calls = hook_calls_;
    dropped = hook_dropped_;
    edropped = ext_dropped_;
    queued = hook_cnt_;
  }
  flexco_ring_stats_t rs;
  flexco_ring_stats(ring_, &rs);
  std::lock_guard<std::mutex> lk(stats_mu_);
  json_t* o = json_pack(
      "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
      "capacity", static_cast<json_int_t>(rs.capacity), "retained",
      static_cast<json_int_t>(rs.retained), "oldest", static_cast<json_int_t>(rs.oldest), "latest",
      static_cast<json_int_t>(rs.latest), "lost_upto", static_cast<json_int_t>(rs.lost_upto),
      "published", static_cast<json_int_t>(published_), "evicted",
      static_cast<json_int_t>(rs.evicted), "epilog_calls", static_cast<json_int_t>(calls),
      "epilog_dropped", static_cast<json_int_t>(dropped), "epilog_queued",
      static_cast<json_int_t>(queued), "publish_dropped", static_cast<json_int_t>(edropped),
      "job_scans", static_cast<json_int_t>(job_scans_), "scan_lock_usec_last",
      static_cast<json_int_t>(scan_usec_last_), "scan_lock_usec_max",
      static_cast<json_int_t>(scan_usec_max_), "resv_snapshots",
      static_cast<json_int_t>(resv_snaps_), "state_saves", static_cast<json_int_t>(saves_),
      "state_save_errors", static_cast<json_int_t>(save_errors_));
  if (o == nullptr) return nullptr;
  json_object_set_new(o, "unnumbered", json_integer(static_cast<json_int_t>(held_cnt_)));
  json_object_set_new(o, "unnumbered_dropped",
                      json_integer(static_cast<json_int_t>(held_dropped_)));
  json_object_set_new(o, "state_last_save_error",
                      has_save_error_ ? json_string(last_save_error_.c_str()) : json_null());
  return o;
}

}  // namespace flexco::service
