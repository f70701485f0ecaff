// SPDX-License-Identifier: GPL-2.0-or-later
// engine_internal.hpp - what the parts of the engine share (engine.cpp,
// placement.cpp, commit.cpp, cluster_link.cpp, reaper.cpp, reschedule.cpp,
// api.cpp): the engine's private types and small helpers.  Not for use
// outside src/flexcod/engine*.  See engine.hpp.

#ifndef FLEXCO_FLEXCOD_ENGINE_INTERNAL_HPP
#define FLEXCO_FLEXCOD_ENGINE_INTERNAL_HPP

#include "flexcod/engine.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <future>
#include <iterator>
#include <utility>

#include "core/availability.hpp"
#include "core/sha256.hpp"
#include "core/wire_profile.hpp"
#include "flexcod/log.hpp"
#include "flexcod/planning.hpp"
#include "flexcod/states.hpp"
#include "flexcod/test_hold.hpp"

namespace flexcod {

namespace http = flexco::http;

// ---------------------------------------------------------------------------
// Types

struct Engine::Cluster {
  flexco::conf::ClusterConf conf;
  std::unique_ptr<http::PluginClient> client;
  std::mutex m;
  bool reachable = false;
  std::int64_t last_contact = 0;
  std::string last_error;
  std::int64_t nodes = -1;
  std::string cached_profile;  // publish mode
  std::int64_t cached_at = 0;
  // GET /v1/clusters/{name}/profile (the web view): the last answer, reused
  // for kViewProfileMaxAge s so that any number of open pages costs the
  // plugin one profile call per cluster per that time.  view_fetch_m is
  // held across the call (never with m), so viewers wait for one fetch.
  std::mutex view_fetch_m;
  std::string view_profile;  // under m
  std::int64_t view_profile_at = 0;
  std::int64_t event_seq = 0;
  // Reconciled with the database since this flexcod started; until then
  // the cluster is not planned on (its orphans are not known yet).
  std::atomic<bool> reconciled{false};
  // HPCM's M/M/c rates, learned from the cluster's job_ended_early events
  // (doc/coalloc.md, "Learning the rates"); under m.
  flexco::HpcmRateLearner hpcm;

  // The cluster's clock minus flexcod's (doc/flexcod.md, "Clocks"): the
  // median of the last kClockSamples samples of its answers' Date header
  // (http::ClientConfig::clock_sample), each within a second plus half
  // its round trip; under m.
  static constexpr std::size_t kClockSamples = 15;
  std::vector<double> clock_samples;  // a ring, oldest overwritten
  std::size_t clock_next = 0;
  void clock_sample(double offset, double round_trip) {
    if (round_trip > 2.0) return;  // too loose to tell anything
    std::lock_guard<std::mutex> lock(m);
    if (clock_samples.size() < kClockSamples) {
      clock_samples.push_back(offset);
    } else {
      clock_samples[clock_next] = offset;
    }
    clock_next = (clock_next + 1) % kClockSamples;
  }
  // Under m; nullopt before the first sample.
  std::optional<double> clock_offset_locked() const {
    if (clock_samples.empty()) return std::nullopt;
    std::vector<double> v = clock_samples;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }
  // Under m: the whole seconds flexcod adds to one of its times to get
  // the cluster's (doc/flexcod.md, "Clocks"): the estimate rounded, 0
  // while there is none or it is under a second (within its own error).
  std::int64_t clock_shift_locked() const {
    const auto off = clock_offset_locked();
    if (!off || std::fabs(*off) < 1.0) return 0;
    return static_cast<std::int64_t>(std::llround(*off));
  }
  std::int64_t clock_shift() {
    std::lock_guard<std::mutex> lock(m);
    return clock_shift_locked();
  }

  // Every call's outcome: answered (any HTTP answer) or not (no
  // connection, timeout, cut).  Feeds the circuit breaker below.
  void note(bool answered, const std::string& error) {
    const std::int64_t now = now_seconds();
    int opened_for = 0, after = 0;
    bool closed = false;
    {
      std::lock_guard<std::mutex> lock(m);
      if (answered) {
        reachable = true;
        last_contact = now;
        closed = open_until != 0;
        failures = 0;
        open_until = 0;
      } else {
        reachable = false;
        ++failures;
        // Opened, or opened again after its trial call failed; a failure
        // while open (another thread's call) does not extend it.
        if (failures >= breaker_failures && now >= open_until) {
          opened_for = breaker_backoff;
          open_until = now + opened_for;
          after = failures;
          ++opened;
        }
      }
      last_error = error;
      if (answered && error.empty()) audience_refused = false;
      if (answered) tls_refused = false;
    }
    if (opened_for > 0) {
      fc_error("cluster %s: circuit open for %d s after %d consecutive failed calls (%s): "
               "its co-allocations wait, the other clusters' proceed",
               conf.name.c_str(), opened_for, after, error.c_str());
    } else if (closed) {
      fc_info("cluster %s: answers again; circuit closed", conf.name.c_str());
    }
  }

  // Open: planning and rescheduling leave the cluster out until `until`.
  bool is_open(std::int64_t now, std::int64_t* until = nullptr) {
    std::lock_guard<std::mutex> lock(m);
    if (until) *until = open_until;
    return open_until > now;
  }

  // note() for a failed call; says loudly when the plugin refuses our
  // signature as meant for another cluster (defined below).
  void note_error(const http::Error& e);
  // Told the epoch a plugin said it has seen when it refused a request
  // as stale_epoch (Engine's constructor sets it: the lease's saw_epoch).
  std::function<void(std::int64_t)> on_stale;

  // The plugin answered wrong_audience and that was logged; cleared by the
  // next successful call, so that a recurrence is logged again.
  bool audience_refused = false;
  // Its TLS certificate failed verification and that was logged; cleared by
  // the next answer, as audience_refused.
  bool tls_refused = false;

  // Circuit breaker (doc/flexcod.md, "Many clusters"), under m: after
  // breaker_failures consecutive calls without an answer the cluster is
  // open until open_until; then one call is let through (half-open): an
  // answer closes it, a failure opens it again.
  int failures = 0;
  std::int64_t open_until = 0;  // 0: closed
  std::int64_t opened = 0;      // times opened
  int breaker_failures = 3;     // BreakerFailures
  int breaker_backoff = 30;     // BreakerBackoff (s)

  // A rescheduling pass's profile read (Engine::pass_profiles), under m:
  // at most one in flight per cluster, in its own thread bounded by
  // ClusterTimeout; a pass waits for it at most PassProfileWait, and
  // once the other clusters have answered only a little longer than this
  // one's last profile read took (profile_read_ms).  Its answer, however
  // late, feeds the breaker (note) and is kept with the time it was read
  // for the next pass (pass_profile_at, steady ms).
  std::shared_ptr<ProfileFetch> pass_fetch;
  std::shared_ptr<const flexco::Availability> pass_profile;
  std::int64_t pass_profile_at = 0;
  // How long its last profile read that answered took (ms, a request's or
  // a pass's, under m); -1: none yet.
  std::int64_t profile_read_ms = -1;
};

// One profile read for a pass: `done` (under Engine::fetch_mutex_) once
// read_profile returned; then `avail`, or `why` it failed.
struct Engine::ProfileFetch {
  bool done = false;
  std::int64_t done_at = 0;  // steady ms, once done
  std::optional<flexco::Availability> avail;
  std::string why;
};

// The pass's profiles (Engine::resched_pass): every cluster's read once,
// a cluster read again only after a move there changed it.
struct Engine::PassProfiles {
  std::map<std::size_t, flexco::Availability> avail;  // by cluster index
  std::map<std::size_t, std::string> failed;          // why, by cluster index
  std::set<std::size_t> stale;                        // changed by a move
  std::uint64_t epoch = 0;  // bumped whenever the profiles change (or will)
  // Clusters where a job ended early (by index: the event's time) whose
  // own queue must go first: a profile of one is planned on only if it
  // shows that (local_queue_went_first); else the cluster is left out of
  // the pass, as one that did not answer, and listed in queue_first.
  std::map<std::size_t, std::int64_t> ended;
  std::set<std::size_t> queue_first;
};

// One of a submission's Slurm settings per cluster (issue 17: partition,
// account, qos): `all` for every cluster, `by` for the clusters named,
// which win over `all`.  "" = not given (the cluster's default).
struct PerCluster {
  std::string all;
  std::map<std::string, std::string> by;
  const std::string& get(const std::string& cluster, const std::string& dflt) const {
    auto it = by.find(cluster);
    if (it != by.end()) return it->second;
    return all.empty() ? dflt : all;
  }
  bool given() const { return !all.empty() || !by.empty(); }
};

// A parsed submission.
struct Engine::Spec {
  std::int64_t nodes = 0;
  std::vector<std::pair<std::int64_t, std::string>> fixed;  // parts: nodes, cluster
  std::int64_t duration = 0;
  std::int64_t ready = 0;
  std::int64_t deadline = 0;
  double overhead = 0.0;
  std::vector<std::string> clusters;
  int max_parts = 0;
  std::string policy;
  std::string script;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::string work_dir, std_out, std_err, name;
  PerCluster partition, account, qos;  // per cluster (doc/flexcod.md)
  bool dry_run = false;
};

struct Engine::Gathered {
  std::vector<std::size_t> idx;  // cluster indices that answered
  std::vector<flexco::Availability> avail;
  std::vector<std::vector<flexco::CoallocOffer>> offers;
  std::vector<JsonPtr> raw_offers;
  std::vector<std::pair<std::string, std::string>> errors;  // cluster, why
  // From before the first read: the reservations claimed since are
  // subtracted when planning under the claim (subtract_unseen).
  ClaimLedger::Reading reading;
};

namespace engine_detail {

inline ApiError api_error(int status, const std::string& code, const std::string& message) {
  return ApiError{status, code, message};
}

inline JsonPtr obj() { return JsonPtr(json_object()); }

// Milliseconds on the steady clock (pass_profile_at and the pass's reads).
inline std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void set(json_t* o, const char* k, json_t* v) { json_object_set_new(o, k, v); }
inline void set_str(json_t* o, const char* k, const std::string& v) {
  set(o, k, json_stringn(v.data(), v.size()));
}
inline void set_int(json_t* o, const char* k, std::int64_t v) { set(o, k, json_integer(v)); }
inline void set_opt_int(json_t* o, const char* k, std::int64_t v, std::int64_t none = 0) {
  set(o, k, v == none ? json_null() : json_integer(v));
}
inline void set_opt_str(json_t* o, const char* k, const std::string& v) {
  set(o, k, v.empty() ? json_null() : json_stringn(v.data(), v.size()));
}

// HPCM's learned rates of a cluster (GET /v1/clusters, dry runs).
inline json_t* hpcm_json(const flexco::HpcmRates& r) {
  json_t* o = json_object();
  const bool learned = r.span > 0;
  set(o, "arrival_rate", learned ? json_real(r.arrival_rate) : json_null());
  set(o, "service_rate", learned ? json_real(r.service_rate) : json_null());
  set_int(o, "jobs", static_cast<std::int64_t>(r.jobs));
  set_opt_int(o, "span", r.span);
  set_int(o, "window", flexco::kHpcmRateWindow);
  return o;
}

inline bool is_finished(const std::string& s) {
  return s == "completed" || s == "failed" || s == "cancelled";
}

// Part states in which something may exist on the cluster.
inline bool holds(const std::string& s) {
  return s == "reserving" || s == "tentative" || s == "confirming" || s == "confirmed" ||
         s == "submitting" || s == "submitted" || s == "running" || s == "cancelling";
}

inline std::int64_t round_up_minutes(std::int64_t s) { return std::max<std::int64_t>(60, (s + 59) / 60 * 60); }

// kStartSlack: flexcod/planning.hpp.

// A time as Slurm's commands print it (local time, ISO 8601 without zone).
inline std::string slurm_time(std::int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  struct tm tm_buf;
  char buf[32];
  if (!localtime_r(&tt, &tm_buf) || !std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm_buf))
    return std::to_string(t);
  return buf;
}

inline std::string parts_text(const std::vector<PartRecord>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += ",";
    out += p.cluster + ":" + std::to_string(p.nodes);
  }
  return out;
}

// Outcome of a failed call: was the request possibly carried out?
inline bool maybe_done(const http::Error& e) {
  switch (e.code) {
    case http::Errc::kInvalidArgument:
    case http::Errc::kSignFailed:
    case http::Errc::kConnect:
    case http::Errc::kTls:  // TLS failed before anything was sent
      return false;  // never sent
    case http::Errc::kHttp:
      return e.http_status >= 500;  // 4xx: refused, nothing done
    default:
      return true;  // timeout, cut, cancelled mid-way, bad answer
  }
}

inline bool answered(const http::Error& e) {
  return e.code == http::Errc::kHttp || e.code == http::Errc::kBadResponse;
}

// What a part job's state means for its part.
enum class JobPhase { kPending, kRunning, kEnded };

inline JobPhase phase_of(const std::string& slurm_state) {
  if (slurm_state == "PENDING") return JobPhase::kPending;
  if (slurm_state == "RUNNING" || slurm_state == "COMPLETING" || slurm_state == "SUSPENDED" ||
      slurm_state == "CONFIGURING" || slurm_state == "RESIZING" || slurm_state == "SIGNALING" ||
      slurm_state == "STAGE_OUT") {
    return JobPhase::kRunning;
  }
  return JobPhase::kEnded;  // COMPLETED, CANCELLED, FAILED, ..., UNKNOWN once purged
}

// The transition of part q that its job reaching `phase` implies: the one
// place where a live part_job_started / part_job_ended event and a job
// state read at reconciliation change a part.  Times and exit code are
// taken when known (> 0, >= 0), by the cluster's clock, and kept by
// flexcod's (less the part's clock_shift).  true if the part's state
// changed.
inline bool apply_job_phase(PartRecord& q, JobPhase phase, const std::string& job_state,
                     std::int64_t start, std::int64_t end, int exit_code) {
  if (start > 0) start -= q.clock_shift;
  if (end > 0) end -= q.clock_shift;
  if (!job_state.empty()) q.job_state = job_state;
  if (start > 0 && phase != JobPhase::kPending) q.actual_start = start;
  const std::string before = q.state;
  if (phase == JobPhase::kRunning) {
    if (q.state == "submitted" || q.state == "submitting") set_state(q, PartState::kRunning);
  } else if (phase == JobPhase::kEnded) {
    if (end > 0) q.actual_end = end;
    if (exit_code >= 0) q.exit_code = exit_code;
    if (q.state == "submitted" || q.state == "submitting" || q.state == "running") {
      set_state(q, q.job_state == "COMPLETED" ? PartState::kCompleted : PartState::kFailed);
    }
  }
  return q.state != before;
}

}  // namespace engine_detail

// ---------------------------------------------------------------------------
// Parsing a submission

namespace engine_detail {

inline bool get_i64(const json_t* o, const char* k, std::int64_t* out, std::string* why) {
  const json_t* v = json_object_get(o, k);
  if (v == nullptr) return true;
  if (!json_is_integer(v)) {
    *why = std::string(k) + ": must be an integer";
    return false;
  }
  *out = json_integer_value(v);
  return true;
}

inline bool get_s(const json_t* o, const char* k, std::string* out, std::string* why) {
  const json_t* v = json_object_get(o, k);
  if (v == nullptr) return true;
  if (!json_is_string(v)) {
    *why = std::string(k) + ": must be a string";
    return false;
  }
  out->assign(json_string_value(v), json_string_length(v));
  return true;
}

inline bool get_str_list(const json_t* o, const char* k, std::vector<std::string>* out, std::string* why) {
  const json_t* v = json_object_get(o, k);
  if (v == nullptr) return true;
  if (!json_is_array(v)) {
    *why = std::string(k) + ": must be an array of strings";
    return false;
  }
  std::size_t i;
  const json_t* e;
  json_array_foreach(v, i, e) {
    if (!json_is_string(e)) {
      *why = std::string(k) + "[" + std::to_string(i) + "]: must be a string";
      return false;
    }
    out->emplace_back(json_string_value(e), json_string_length(e));
  }
  return true;
}

// A Slurm partition, account or QOS name as a submission may give it:
// 1-64 bytes, printable, none of blank , : = # " ' \ (doc/flexcod.md).
inline bool slurm_name_ok(const std::string& v) {
  if (v.empty() || v.size() > 64) return false;
  for (unsigned char c : v)
    if (c <= ' ' || c >= 0x7f || std::strchr(",:=#\"'\\", c)) return false;
  return true;
}

// "partition", "account" or "qos" of a submission: a string (every
// cluster) or an object of cluster name to string, where "*" stands for
// every cluster not named.  Cluster names are checked by the caller.
inline bool get_per_cluster(const json_t* o, const char* k, PerCluster* out, std::string* why) {
  const json_t* v = json_object_get(o, k);
  if (v == nullptr) return true;
  auto value = [&](const json_t* e, const std::string& where, std::string* to) {
    if (!json_is_string(e)) {
      *why = where + ": must be a string";
      return false;
    }
    to->assign(json_string_value(e), json_string_length(e));
    if (!slurm_name_ok(*to)) {
      *why = where + ": not a valid name (1-64 printable characters, none of blank , : = # \" ' \\)";
      return false;
    }
    return true;
  };
  if (json_is_string(v)) return value(v, k, &out->all);
  if (!json_is_object(v) || json_object_size(v) == 0 || json_object_size(v) > 64) {
    *why = std::string(k) + ": must be a string or an object of 1-64 cluster: string";
    return false;
  }
  const char* ck;
  const json_t* cv;
  json_object_foreach(const_cast<json_t*>(v), ck, cv) {
    const std::string c(ck);
    if (!value(cv, std::string(k) + "." + c, c == "*" ? &out->all : &out->by[c])) return false;
  }
  return true;
}

}  // namespace engine_detail

}  // namespace flexcod

#endif
