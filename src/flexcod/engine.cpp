// SPDX-License-Identifier: GPL-2.0-or-later
// engine.cpp - see engine.hpp and doc/flexcod.md.

#include "flexcod/engine.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <future>
#include <iterator>
#include <utility>

#include "core/availability.hpp"
#include "core/sha256.hpp"
#include "core/wire_profile.hpp"
#include "flexcod/log.hpp"
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
  std::int64_t event_seq = 0;
  // Reconciled with the database since this flexcod started; until then
  // the cluster is not planned on (its orphans are not known yet).
  std::atomic<bool> reconciled{false};

  void note(bool answered, const std::string& error) {
    std::lock_guard<std::mutex> lock(m);
    if (answered) {
      reachable = true;
      last_contact = now_seconds();
    } else {
      reachable = false;
    }
    last_error = error;
    if (answered && error.empty()) audience_refused = false;
  }

  // note() for a failed call; says loudly when the plugin refuses our
  // signature as meant for another cluster (defined below).
  void note_error(const http::Error& e);

  // The plugin answered wrong_audience and that was logged; cleared by the
  // next successful call, so that a recurrence is logged again.
  bool audience_refused = false;
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
  bool dry_run = false;
};

struct Engine::Gathered {
  std::vector<std::size_t> idx;  // cluster indices that answered
  std::vector<flexco::Availability> avail;
  std::vector<std::vector<flexco::CoallocOffer>> offers;
  std::vector<JsonPtr> raw_offers;
  std::vector<std::pair<std::string, std::string>> errors;  // cluster, why
};

namespace {

ApiError api_error(int status, const std::string& code, const std::string& message) {
  return ApiError{status, code, message};
}

JsonPtr obj() { return JsonPtr(json_object()); }

void set(json_t* o, const char* k, json_t* v) { json_object_set_new(o, k, v); }
void set_str(json_t* o, const char* k, const std::string& v) {
  set(o, k, json_stringn(v.data(), v.size()));
}
void set_int(json_t* o, const char* k, std::int64_t v) { set(o, k, json_integer(v)); }
void set_opt_int(json_t* o, const char* k, std::int64_t v, std::int64_t none = 0) {
  set(o, k, v == none ? json_null() : json_integer(v));
}
void set_opt_str(json_t* o, const char* k, const std::string& v) {
  set(o, k, v.empty() ? json_null() : json_stringn(v.data(), v.size()));
}

bool is_finished(const std::string& s) {
  return s == "completed" || s == "failed" || s == "cancelled";
}

// Part states in which something may exist on the cluster.
bool holds(const std::string& s) {
  return s == "reserving" || s == "tentative" || s == "confirming" || s == "confirmed" ||
         s == "submitting" || s == "submitted" || s == "running" || s == "cancelling";
}

std::int64_t round_up_minutes(std::int64_t s) { return std::max<std::int64_t>(60, (s + 59) / 60 * 60); }

// Each reservation is this much longer than its part job's time limit, so a
// part job that Slurm starts a little after the reservation's start (the
// scheduler's next pass) still fits before the reservation ends; Slurm never
// starts a job whose time limit would run past its reservation's end.
constexpr std::int64_t kStartSlack = 60;

// A time as Slurm's commands print it (local time, ISO 8601 without zone).
std::string slurm_time(std::int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  struct tm tm_buf;
  char buf[32];
  if (!localtime_r(&tt, &tm_buf) || !std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm_buf))
    return std::to_string(t);
  return buf;
}

std::string parts_text(const std::vector<PartRecord>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += ",";
    out += p.cluster + ":" + std::to_string(p.nodes);
  }
  return out;
}

// Outcome of a failed call: was the request possibly carried out?
bool maybe_done(const http::Error& e) {
  switch (e.code) {
    case http::Errc::kInvalidArgument:
    case http::Errc::kSignFailed:
    case http::Errc::kConnect:
      return false;  // never sent
    case http::Errc::kHttp:
      return e.http_status >= 500;  // 4xx: refused, nothing done
    default:
      return true;  // timeout, cut, cancelled mid-way, bad answer
  }
}

bool answered(const http::Error& e) {
  return e.code == http::Errc::kHttp || e.code == http::Errc::kBadResponse;
}

// What a part job's state means for its part.
enum class JobPhase { kPending, kRunning, kEnded };

JobPhase phase_of(const std::string& slurm_state) {
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
// taken when known (> 0, >= 0).  true if the part's state changed.
bool apply_job_phase(PartRecord& q, JobPhase phase, const std::string& job_state,
                     std::int64_t start, std::int64_t end, int exit_code) {
  if (!job_state.empty()) q.job_state = job_state;
  if (start > 0 && phase != JobPhase::kPending) q.actual_start = start;
  const std::string before = q.state;
  if (phase == JobPhase::kRunning) {
    if (q.state == "submitted" || q.state == "submitting") q.state = "running";
  } else if (phase == JobPhase::kEnded) {
    if (end > 0) q.actual_end = end;
    if (exit_code >= 0) q.exit_code = exit_code;
    if (q.state == "submitted" || q.state == "submitting" || q.state == "running") {
      q.state = q.job_state == "COMPLETED" ? "completed" : "failed";
    }
  }
  return q.state != before;
}

}  // namespace

// A wrong_audience answer means that the name flexcod signs for (Cluster= in
// flexcod.conf) is not the ClusterName of the cluster at URL= (doc/auth.md,
// "Audience"): no request to it can succeed until the configuration is
// fixed, so say exactly that, once, rather than "unreachable".
void Engine::Cluster::note_error(const http::Error& e) {
  note(answered(e), e.message);
  if (e.code != http::Errc::kHttp || e.api_code != "wrong_audience") return;
  {
    std::lock_guard<std::mutex> lock(m);
    if (audience_refused) return;
    audience_refused = true;
  }
  fc_error("cluster %s: the plugin at %s refuses our requests as signed for another cluster "
           "(%s); Cluster=%s in flexcod.conf must be that cluster's ClusterName "
           "(scontrol show config | grep ClusterName)",
           conf.name.c_str(), conf.url.c_str(), e.message.c_str(), conf.name.c_str());
}

// ---------------------------------------------------------------------------
// Construction, threads

Engine::Engine(const flexco::conf::FlexcodConf& conf, Store& store, flexco::auth::Signer signer)
    : conf_(conf), store_(store) {
  started_ = now_seconds();
  for (const auto& cc : conf.clusters) {
    auto c = std::make_unique<Cluster>();
    c->conf = cc;
    http::ClientConfig hc;
    hc.base_url = cc.url;
    hc.audience = cc.name;  // must be the cluster's ClusterName (doc/auth.md)
    hc.connect_timeout_ms = 1000L * conf.connect_timeout;
    hc.total_timeout_ms = 1000L * conf.request_timeout;
    auto client = http::Client::create(hc, signer);
    if (client.ok()) {
      c->client = std::make_unique<http::PluginClient>(std::move(client).value());
    } else {
      fc_error("cluster %s: %s", cc.name.c_str(), client.error().message.c_str());
    }
    c->event_seq = store_.event_seq(cc.name);
    clusters_.push_back(std::move(c));
  }
}

Engine::~Engine() { stop(); }

bool Engine::wait_stop(int ms) {
  std::unique_lock<std::mutex> lock(stop_mutex_);
  return stop_cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_.load(); });
}

void Engine::start() {
  recover_db();
  for (std::size_t i = 0; i < clusters_.size(); ++i) {
    if (!clusters_[i]->client) continue;
    threads_.emplace_back([this, i] { cluster_loop(i); });
    if (conf_.availability_mode == "publish") threads_.emplace_back([this, i] { publish_loop(i); });
  }
  threads_.emplace_back([this] { reap_loop(); });
  threads_.emplace_back([this] { resched_loop(); });
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void Engine::reload(const flexco::conf::FlexcodConf& conf) {
  std::lock_guard<std::mutex> lock(conf_mutex_);
  auto clusters = conf_.clusters;
  auto listen_address = conf_.listen_address;
  const int port = conf_.listen_port;
  conf_ = conf;
  if (conf.clusters.size() != clusters.size()) {
    fc_error("reconfigure: the cluster list changed; restart flexcod to apply it");
  }
  conf_.clusters = clusters;
  conf_.listen_address = listen_address;
  conf_.listen_port = port;
}

std::shared_ptr<std::mutex> Engine::co_mutex(std::int64_t id) {
  std::lock_guard<std::mutex> lock(locks_mutex_);
  auto& m = locks_[id];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

Engine::Cluster* Engine::cluster(const std::string& name) {
  for (auto& c : clusters_) {
    if (c->conf.name == name) return c.get();
  }
  return nullptr;
}

std::string Engine::owner_tag() const { return "flexcod-" + store_.instance(); }

std::string Engine::key(const CoRecord& co, int attempt, int idx, const char* what) const {
  return "flexcod-" + store_.instance() + "-" + store_.run() + "-" + std::to_string(co.id) + "-" +
         std::to_string(attempt) + "-" + std::to_string(idx) + "-" + what;
}

void Engine::bump(const std::string& what, std::int64_t n) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  counters_[what] += n;
}

void Engine::count_request(int status) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  requests_[status]++;
}

// ---------------------------------------------------------------------------
// Parsing a submission

namespace {

bool get_i64(const json_t* o, const char* k, std::int64_t* out, std::string* why) {
  const json_t* v = json_object_get(o, k);
  if (v == nullptr) return true;
  if (!json_is_integer(v)) {
    *why = std::string(k) + ": must be an integer";
    return false;
  }
  *out = json_integer_value(v);
  return true;
}

bool get_s(const json_t* o, const char* k, std::string* out, std::string* why) {
  const json_t* v = json_object_get(o, k);
  if (v == nullptr) return true;
  if (!json_is_string(v)) {
    *why = std::string(k) + ": must be a string";
    return false;
  }
  out->assign(json_string_value(v), json_string_length(v));
  return true;
}

bool get_str_list(const json_t* o, const char* k, std::vector<std::string>* out, std::string* why) {
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

}  // namespace

// ---------------------------------------------------------------------------
// Availability and planning

Engine::Gathered Engine::gather(const std::vector<std::size_t>& which, const Spec& spec) {
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  struct One {
    bool ok = false;
    std::string why;
    std::optional<flexco::Availability> avail;
    std::vector<flexco::CoallocOffer> offers;
    JsonPtr raw;
  };
  std::vector<std::future<One>> futs;
  for (std::size_t ci : which) {
    futs.push_back(std::async(std::launch::async, [this, ci, &spec, &conf]() {
      One one;
      Cluster& c = *clusters_[ci];
      std::string text;
      if (conf.availability_mode == "publish") {
        std::lock_guard<std::mutex> lock(c.m);
        if (!c.cached_profile.empty() &&
            now_seconds() - c.cached_at <= 2L * conf.publish_interval + 5) {
          text = c.cached_profile;
        }
      }
      if (text.empty()) {
        bump("messages.profile");
        auto r = c.client->profile(conf.plan_horizon, c.conf.partition);
        if (!r.ok()) {
          c.note_error(r.error());
          one.why = r.error().message;
          return one;
        }
        c.note(true, "");
        text = http::json_text(r.value().get());
      }
      auto a = flexco::availability_from_json(text);
      if (!a.ok()) {
        one.why = "bad profile: " + a.error().message;
        return one;
      }
      {
        std::lock_guard<std::mutex> lock(c.m);
        c.nodes = a.value().nodes_total;
      }
      one.avail = std::move(a).value();
      if (spec.policy == "cores") {
        bump("messages.probe");
        JsonPtr q(json_object());
        const std::int64_t maxn =
            std::max<std::int64_t>(1, std::min<std::int64_t>(spec.nodes, one.avail->nodes_published));
        set(q.get(), "nodes", json_pack("{s:I,s:I}", "min", static_cast<json_int_t>(1), "max",
                                        static_cast<json_int_t>(maxn)));
        // As long as the planner's request (with the start slack), with the
        // overhead since the offers may be composed into a split plan.
        const std::int64_t run = spec.duration + kStartSlack;
        const std::int64_t d = run + static_cast<std::int64_t>(std::ceil(spec.overhead * run));
        set_int(q.get(), "duration", d);
        set_int(q.get(), "earliest_start", std::max(spec.ready, now_seconds()));
        if (spec.deadline > 0) set_int(q.get(), "latest_end", spec.deadline);
        set_int(q.get(), "max_offers", 16);
        if (!c.conf.partition.empty()) set_str(q.get(), "partition", c.conf.partition);
        auto p = c.client->probe(q.get());
        if (p.ok()) {
          const json_t* offers = json_object_get(p.value().get(), "offers");
          std::size_t i;
          const json_t* o;
          json_array_foreach(offers, i, o) {
            flexco::CoallocOffer off;
            off.start = json_integer_value(json_object_get(o, "start"));
            off.end = json_integer_value(json_object_get(o, "end"));
            off.nodes = json_integer_value(json_object_get(o, "nodes"));
            off.fit = json_number_value(json_object_get(o, "fit"));
            off.p_res = json_number_value(json_object_get(o, "p_res"));
            if (off.start < off.end && off.nodes >= 1) one.offers.push_back(off);
          }
          one.raw = http::json_ref(json_object_get(p.value().get(), "offers"));
        } else {
          fc_verbose("cluster %s: probe failed, offers derived from its profile: %s",
                     c.conf.name.c_str(), p.error().message.c_str());
        }
      }
      one.ok = true;
      return one;
    }));
  }
  Gathered g;
  for (std::size_t i = 0; i < futs.size(); ++i) {
    One one = futs[i].get();
    if (one.ok) {
      g.idx.push_back(which[i]);
      g.avail.push_back(std::move(*one.avail));
      g.offers.push_back(std::move(one.offers));
      g.raw_offers.push_back(std::move(one.raw));
    } else {
      g.errors.emplace_back(clusters_[which[i]]->conf.name, one.why);
    }
  }
  return g;
}

bool Engine::plan(const Spec& spec, const std::vector<std::size_t>& which, Gathered& g,
                  flexco::CoallocPlan* out, std::string* why, bool dry_run) {
  (void)which;
  const std::int64_t now = now_seconds();
  if (!spec.fixed.empty()) {
    // Fixed parts, each pinned to its cluster: the earliest common start.
    std::vector<std::pair<std::size_t, std::int64_t>> need;  // index into g, nodes
    for (const auto& f : spec.fixed) {
      std::size_t gi = g.idx.size();
      for (std::size_t k = 0; k < g.idx.size(); ++k) {
        if (clusters_[g.idx[k]]->conf.name == f.second) gi = k;
      }
      if (gi == g.idx.size()) {
        *why = "cluster " + f.second + " is not reachable or not allowed";
        return false;
      }
      need.emplace_back(gi, f.first);
    }
    const std::int64_t d = spec.duration + kStartSlack + (need.size() > 1
                                                ? static_cast<std::int64_t>(std::ceil(spec.overhead * spec.duration))
                                                : 0);
    flexco::Time t = std::max(spec.ready, now);
    for (int iter = 0; iter < 10000; ++iter) {
      flexco::Time latest = t;
      for (const auto& n : need) {
        auto f = g.avail[n.first].nodes.earliest_fit(t, d, n.second);
        if (!f.ok() || f.value() == flexco::kNever) {
          *why = "part of " + std::to_string(n.second) + " nodes never fits on " +
                 clusters_[g.idx[n.first]]->conf.name + " within the plan horizon";
          return false;
        }
        latest = std::max(latest, f.value());
      }
      if (latest == t) {
        if (spec.deadline > 0 && t + d > spec.deadline) {
          *why = "the earliest common start " + std::to_string(t) + " ends after the deadline";
          return false;
        }
        out->start = t;
        out->duration = d;
        out->parts.clear();
        for (const auto& n : need) {
          flexco::PlanPart p;
          p.cluster = n.first;
          p.nodes = n.second;
          out->parts.push_back(p);
        }
        return true;
      }
      t = latest;
    }
    *why = "no common start found";
    return false;
  }
  std::vector<flexco::ClusterView> views;
  for (std::size_t k = 0; k < g.idx.size(); ++k) {
    flexco::ClusterView v;
    v.name = clusters_[g.idx[k]]->conf.name;
    v.capacity = g.avail[k].nodes_published;
    v.free = &g.avail[k].nodes;
    v.offers = g.offers[k];
    views.push_back(std::move(v));
  }
  flexco::CoallocRequest req;
  req.nodes = spec.nodes;
  req.runtime = spec.duration + kStartSlack;
  req.ready = std::max(spec.ready, now);
  req.deadline = spec.deadline > 0 ? spec.deadline : flexco::kForever;
  req.overhead = spec.overhead;
  req.max_parts = static_cast<std::size_t>(spec.max_parts);
  auto policy = flexco::parse_policy(spec.policy);
  if (!policy.ok()) {
    *why = policy.error().message;
    return false;
  }
  flexco::CoallocOptions opts;
  opts.now = now;
  std::lock_guard<std::mutex> lock(planner_mutex_);
  flexco::PlannerState scratch = planner_state_;  // a dry run plans on this copy
  auto r = flexco::plan_coalloc(policy.value(), req, views, dry_run ? scratch : planner_state_, opts);
  if (!r.ok()) {
    *why = r.error().message;
    return false;
  }
  *out = std::move(r).value();
  return true;
}

// Caps each refused window's free nodes on its cluster at one less than
// were asked for there (see Engine::Refusal), so that the re-plan does not
// choose it again.  The published steps are rebuilt with the windows'
// bounds as extra cuts; a cluster whose profile cannot be rebuilt keeps it.
void Engine::apply_refusals(Gathered& g, const std::vector<Refusal>& refusals) {
  for (std::size_t k = 0; k < g.idx.size(); ++k) {
    const std::string& name = clusters_[g.idx[k]]->conf.name;
    flexco::Availability& a = g.avail[k];
    std::vector<const Refusal*> mine;
    for (const auto& r : refusals) {
      if (r.cluster == name && r.end > a.when && r.start < a.horizon_end) mine.push_back(&r);
    }
    if (mine.empty() || a.steps.empty()) continue;
    std::set<flexco::Time> cuts;
    for (const auto& st : a.steps) cuts.insert(st.start);
    cuts.insert(a.horizon_end);
    for (const Refusal* r : mine) {
      for (std::int64_t t : {r->start, r->end}) {
        if (t > a.steps.front().start && t < a.horizon_end) cuts.insert(t);
      }
    }
    std::vector<flexco::Step> steps;
    std::size_t i = 0;
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
      const flexco::Time s = *it, e = *std::next(it);
      while (i + 1 < a.steps.size() && a.steps[i].end <= s) ++i;
      flexco::Amount free = a.steps[i].free_nodes;
      for (const Refusal* r : mine) {
        if (r->start <= s && s < r->end) free = std::min<flexco::Amount>(free, r->nodes - 1);
      }
      free = std::max<flexco::Amount>(0, std::min<flexco::Amount>(free, a.nodes_published));
      steps.push_back(flexco::Step{s, e, free, a.steps[i].free_cpus});
    }
    auto pp = flexco::profiles_from_steps(steps, a.nodes_published, a.cpus_published);
    if (!pp.ok()) {
      fc_verbose("%s: profile not narrowed after a refusal: %s", name.c_str(),
                 pp.error().message.c_str());
      continue;
    }
    a.steps = std::move(steps);
    a.nodes = std::move(pp.value().nodes);
  }
}

// ---------------------------------------------------------------------------
// Commit protocol

bool Engine::place(CoRecord& co, const Spec& spec, std::string* why) {
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  std::set<std::string> excluded;
  std::map<std::string, int> violations;
  std::vector<Refusal> refusals;
  std::string reasons;
  // A round refused only for want of free nodes (409 not_available) taught
  // the next plan to avoid that window (apply_refusals), so it earns one
  // more round, up to kRefusalRounds; a cluster is left out after
  // kMaxViolations such refusals.  Other failures count against
  // MaxReplans alone and leave their cluster out at once.
  constexpr int kRefusalRounds = 8, kMaxViolations = 4;
  int extra = 0;
  for (int round = 0; round <= conf.max_replans + extra; ++round) {
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < clusters_.size(); ++i) {
      const std::string& n = clusters_[i]->conf.name;
      if (!clusters_[i]->client) continue;
      if (std::find(spec.clusters.begin(), spec.clusters.end(), n) == spec.clusters.end()) continue;
      if (excluded.count(n)) continue;
      if (!clusters_[i]->reconciled) {
        if (round == 0) reasons += (reasons.empty() ? "" : "; ") + n + " not reconciled yet";
        continue;
      }
      which.push_back(i);
    }
    if (which.empty()) {
      *why = "no allowed cluster left" + (reasons.empty() ? std::string() : ": " + reasons);
      break;
    }
    // Released by commit_attempt once the tentative reservations are made
    // (or refused), else at the end of this round.
    std::unique_lock<std::mutex> claim(claim_mutex_);
    Gathered g = gather(which, spec);
    apply_refusals(g, refusals);
    for (const auto& e : g.errors) {
      reasons += (reasons.empty() ? "" : "; ") + e.first + " unreachable (" + e.second + ")";
      excluded.insert(e.first);
    }
    if (g.idx.empty()) {
      *why = "no cluster reachable: " + reasons;
      break;
    }
    flexco::CoallocPlan p;
    std::string pwhy;
    if (!plan(spec, which, g, &p, &pwhy)) {
      *why = "no placement: " + pwhy + (reasons.empty() ? std::string() : " (" + reasons + ")");
      break;
    }
    // Map the plan's cluster indices (into g) to ours.
    for (auto& part : p.parts) part.cluster = g.idx[part.cluster];
    if (round > 0) bump("replans");
    std::set<std::string> bad;
    std::string awhy;
    if (commit_attempt(co, spec, p, which, &bad, &awhy, &claim, &refusals)) return true;
    if (claim.owns_lock()) claim.unlock();
    bump("rollbacks");
    reasons += (reasons.empty() ? "" : "; ") + awhy;
    bool only_violations = !bad.empty();
    for (const auto& b : bad) {
      if (b.rfind("violation:", 0) == 0) {
        const std::string n = b.substr(10);
        if (++violations[n] >= kMaxViolations) excluded.insert(n);
      } else {
        excluded.insert(b);
        only_violations = false;
      }
    }
    if (only_violations && extra < kRefusalRounds) ++extra;
    *why = "every attempt failed: " + reasons;
    if (stopping_) break;
  }
  co.state = "failed";
  co.reason = *why;
  std::string err;
  if (!store_.update_coalloc(co, *why, &err)) fc_error("co-%ld: %s", (long)co.id, err.c_str());
  fc_info("co-%ld: cannot be placed: %s", (long)co.id, why->c_str());
  return false;
}

// The steps of a commit and of a move: one concurrent request per part.
// Each fills in the parts it succeeded on and returns one error (or none)
// per part; what a failure means is the caller's to decide.

std::vector<PartRecord> Engine::new_parts(const CoRecord& co, const flexco::CoallocPlan& plan,
                                          int attempt, std::int64_t start, std::int64_t length) {
  std::vector<PartRecord> parts;
  for (std::size_t i = 0; i < plan.parts.size(); ++i) {
    PartRecord p;
    p.co_id = co.id;
    p.attempt = attempt;
    p.idx = static_cast<int>(i);
    p.cluster = clusters_[plan.parts[i].cluster]->conf.name;
    p.nodes = plan.parts[i].nodes;
    p.state = "reserving";
    p.resv_key = key(co, attempt, p.idx, "resv");
    p.planned_start = start;
    p.planned_end = start + length;
    parts.push_back(std::move(p));
  }
  return parts;
}

Engine::StepErrors Engine::reserve_parts(const CoRecord& co, std::vector<PartRecord>& parts,
                                         std::int64_t confirm_within, const char* note) {
  // The first refusal cancels the requests still in flight.
  std::atomic<bool> abort{false};
  std::vector<std::future<http::Result<http::Reservation>>> fr;
  for (auto& p : parts) {
    Cluster* c = cluster(p.cluster);
    http::ReservationRequest q;
    q.user = co.user;
    q.nodes = p.nodes;
    q.start = p.planned_start;
    q.duration = p.planned_end - p.planned_start;
    q.partition = c->conf.partition;
    q.confirm_within = confirm_within;
    q.owner = owner_tag();
    bump("messages.reserve");
    fr.push_back(std::async(std::launch::async, [c, q, k = p.resv_key, &abort]() {
      auto r = c->client->create_reservation(q, k, &abort);
      if (!r.ok()) abort = true;
      return r;
    }));
  }
  StepErrors errors(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto r = fr[i].get();
    PartRecord& p = parts[i];
    if (!r.ok()) {
      errors[i] = r.error();
      continue;
    }
    cluster(p.cluster)->note(true, "");
    p.state = "tentative";
    p.reservation_id = r.value().id;
    p.reservation = r.value().name;
    p.node_list = r.value().node_list;
    p.reason = "tentative reservation " + p.reservation + note;
  }
  return errors;
}

Engine::StepErrors Engine::confirm_parts(const CoRecord& co, int attempt,
                                         std::vector<PartRecord>& parts, const char* note) {
  std::vector<std::future<http::Result<http::Reservation>>> fc;
  for (auto& p : parts) {
    Cluster* c = cluster(p.cluster);
    bump("messages.confirm");
    fc.push_back(std::async(std::launch::async,
                            [c, id = p.reservation_id, k = key(co, attempt, p.idx, "confirm")]() {
                              return c->client->confirm_reservation(id, k);
                            }));
  }
  StepErrors errors(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto r = fc[i].get();
    if (r.ok()) {
      parts[i].state = "confirmed";
      parts[i].reason = std::string("confirmed") + note;
    } else {
      errors[i] = r.error();
      parts[i].reason = r.error().message;
    }
  }
  return errors;
}

Engine::StepErrors Engine::submit_parts(const CoRecord& co, const Spec& spec,
                                        std::int64_t time_limit, std::vector<PartRecord>& parts,
                                        const char* note) {
  std::vector<std::pair<std::string, std::int64_t>> layout;
  for (const auto& p : parts) layout.emplace_back(p.cluster, p.nodes);
  std::vector<std::future<http::Result<std::int64_t>>> fj;
  for (auto& p : parts) {
    Cluster* c = cluster(p.cluster);
    http::PartJobRequest q;
    q.script = spec.script;
    q.argv = spec.argv;
    q.environment = spec.env;
    q.work_dir = spec.work_dir;
    q.std_out = spec.std_out;
    q.std_err = spec.std_err;
    q.name = spec.name.empty() ? "co-" + std::to_string(co.id) : spec.name;
    q.coallocation = "co-" + std::to_string(co.id);
    q.part_index = p.idx;
    q.parts = layout;
    q.start = p.planned_start;
    q.time_limit = time_limit;
    bump("messages.submit");
    fj.push_back(std::async(std::launch::async, [c, q, id = p.reservation_id, k = p.job_key]() {
      return c->client->submit_job(id, q, k);
    }));
  }
  StepErrors errors(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto r = fj[i].get();
    PartRecord& p = parts[i];
    if (r.ok()) {
      p.state = "submitted";
      p.job_id = r.value();
      p.job_state = "PENDING";
      p.reason = "part job " + std::to_string(p.job_id) + note;
    } else {
      errors[i] = r.error();
      p.reason = r.error().message;
    }
  }
  return errors;
}

bool Engine::commit_attempt(CoRecord& co, const Spec& spec, const flexco::CoallocPlan& plan,
                            const std::vector<std::size_t>& which,
                            std::set<std::string>* bad, std::string* why,
                            std::unique_lock<std::mutex>* claim,
                            std::vector<Refusal>* refusals) {
  (void)which;
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  const std::int64_t now = now_seconds();
  const std::int64_t start = std::max<std::int64_t>(plan.start, now);
  const std::int64_t length = round_up_minutes(plan.duration);
  co.attempt += 1;
  std::vector<PartRecord> parts = new_parts(co, plan, co.attempt, start, length);
  const std::string layout_text = parts_text(parts);
  // Earlier attempts are history now.
  std::vector<PartRecord> all = store_.parts(co.id, true);
  for (auto& old : all) {
    old.current = false;
    parts.push_back(old);
  }
  co.state = "committing";
  co.planned_start = start;
  co.planned_end = start + length;
  co.run_time = plan.duration - kStartSlack;
  co.reason = "attempt " + std::to_string(co.attempt) + ": " + layout_text + " at " +
              slurm_time(start);
  std::string err;
  if (!store_.write(co, parts, co.reason, &err)) {
    *why = "state database: " + err;
    return false;
  }
  parts.resize(plan.parts.size());
  fc_info("co-%ld: attempt %d: reserving %s from %ld for %ld s", (long)co.id, co.attempt,
          parts_text(parts).c_str(), (long)start, (long)length);

  test_hold("reserving");
  // 1. Tentative reservations, concurrently.  The first refusal cancels the
  // requests still in flight; their outcome is learned in release().
  const StepErrors refused = reserve_parts(co, parts, conf.confirm_within, "");
  // The plugins now count these nodes as taken: the next placement may plan.
  if (claim && claim->owns_lock()) claim->unlock();
  bool ok = true;
  std::string fail;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!refused[i]) continue;
    PartRecord& p = parts[i];
    const http::Error& e = *refused[i];
    ok = false;
    cluster(p.cluster)->note_error(e);
    p.state = maybe_done(e) ? "cancelling" : "released";
    p.reason = e.message;
    if (e.code == http::Errc::kCancelled) {
      p.reason = "cancelled in flight after another part failed";
      p.state = "cancelling";  // it may have been made: learn and undo
      continue;
    }
    if (e.api_code == "not_available") {
      bump("violations");
      bad->insert("violation:" + p.cluster);
      if (refusals) refusals->push_back(Refusal{p.cluster, p.planned_start, p.planned_end, p.nodes});
    } else {
      bad->insert(p.cluster);
    }
    fail += (fail.empty() ? "" : "; ") + p.cluster + " refused " + std::to_string(p.nodes) +
            " nodes: " + e.message;
  }
  if (!store_.write(co, parts, ok ? "reserved" : "a reservation failed", &err)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
    ok = false;
    fail += "; state database: " + err;
  }
  if (ok) test_hold("reserved");
  if (ok) {
    // 2. Confirm all.
    for (auto& p : parts) p.state = "confirming";
    if (!store_.write(co, parts, "confirming", &err)) {
      ok = false;
      fail = "state database: " + err;
    }
  }
  if (ok) {
    const StepErrors failed = confirm_parts(co, co.attempt, parts, "");
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (!failed[i]) continue;
      ok = false;
      cluster(parts[i].cluster)->note_error(*failed[i]);
      bad->insert(parts[i].cluster);
      fail += (fail.empty() ? "" : "; ") + parts[i].cluster + " did not confirm: " +
              failed[i]->message;
    }
    if (!store_.write(co, parts, ok ? "confirmed" : "a confirmation failed", &err)) {
      ok = false;
      fail += "; state database: " + err;
    }
  }
  if (ok) test_hold("confirmed");
  if (ok) {
    // 3. Part jobs, one per part, all with the same common start.
    for (auto& p : parts) {
      p.state = "submitting";
      p.job_key = key(co, co.attempt, p.idx, "job");
    }
    if (!store_.write(co, parts, "submitting part jobs", &err)) {
      ok = false;
      fail = "state database: " + err;
    }
  }
  if (ok) {
    const StepErrors failed =
        submit_parts(co, spec, round_up_minutes(plan.duration - kStartSlack), parts, "");
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (!failed[i]) continue;
      ok = false;
      // Slurm refusing the job (a bad script, a user unknown there) or the
      // cluster failing: either way this cluster is excluded from the
      // re-plan; another cluster may have the user.
      cluster(parts[i].cluster)->note_error(*failed[i]);
      bad->insert(parts[i].cluster);
      fail += (fail.empty() ? "" : "; ") + parts[i].cluster + " did not take the part job: " +
              failed[i]->message;
    }
    if (ok) test_hold("submitted");
    if (ok) {
      co.state = "scheduled";
      co.reason = "every part confirmed with its part job: " + parts_text(parts);
    }
    if (!store_.write(co, parts, ok ? co.reason : "a part job submission failed", &err)) {
      fc_error("co-%ld: %s", (long)co.id, err.c_str());
      if (ok) {
        ok = false;
        fail = "state database: " + err;
      }
    }
  }
  if (ok) {
    fc_info("co-%ld: scheduled at %s on %s", (long)co.id, slurm_time(start).c_str(),
          parts_text(parts).c_str());
    return true;
  }
  *why = "attempt " + std::to_string(co.attempt) + " (" + parts_text(parts) + "): " + fail;
  fc_info("co-%ld: %s; rolling back", (long)co.id, why->c_str());
  release(co, parts, "released", "rolled back: " + fail);
  return false;
}

bool Engine::release_part(const CoRecord& co, PartRecord& p) {
  Cluster* c = cluster(p.cluster);
  if (c == nullptr || !c->client) return false;
  if (p.reservation_id == 0) {
    if (p.resv_key.empty()) return true;
    // The create may or may not have happened: replaying it with the same
    // Idempotency-Key returns the first answer (or makes it now), so the
    // outcome is known either way.
    flexco::conf::FlexcodConf conf;
    {
      std::lock_guard<std::mutex> lock(conf_mutex_);
      conf = conf_;
    }
    http::ReservationRequest q;
    q.user = co.user;
    q.nodes = p.nodes;
    q.start = p.planned_start;
    q.duration = p.planned_end - p.planned_start;
    q.partition = c->conf.partition;
    q.confirm_within = conf.confirm_within;
    q.owner = owner_tag();
    bump("messages.reserve");
    auto r = c->client->create_reservation(q, p.resv_key);
    if (!r.ok()) {
      c->note_error(r.error());
      if (r.error().code == http::Errc::kHttp && r.error().http_status >= 400 &&
          r.error().http_status < 500) {
        return true;  // refused: nothing was made
      }
      return false;
    }
    p.reservation_id = r.value().id;
    p.reservation = r.value().name;
  }
  bump("messages.delete");
  auto d = c->client->delete_reservation(p.reservation_id, p.resv_key + "-del");
  if (!d.ok()) {
    c->note_error(d.error());
    if (d.error().code == http::Errc::kHttp && d.error().http_status == 404) return true;
    return false;
  }
  c->note(true, "");
  return true;
}

bool Engine::release(CoRecord& co, std::vector<PartRecord>& parts, const std::string& final_state,
                     const std::string& reason) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (holds(parts[i].state)) {
      parts[i].state = "cancelling";
      todo.push_back(i);
    }
  }
  std::string err;
  if (!todo.empty() && !store_.write(co, parts, reason, &err)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
  }
  std::vector<std::future<bool>> fs;
  for (std::size_t i : todo) {
    PartRecord* p = &parts[i];
    fs.push_back(std::async(std::launch::async, [this, &co, p]() { return release_part(co, *p); }));
  }
  bool all = true;
  for (std::size_t k = 0; k < todo.size(); ++k) {
    PartRecord& p = parts[todo[k]];
    if (fs[k].get()) {
      p.state = final_state;
      p.reason = reason;
    } else {
      all = false;
      p.reason = "release pending: cluster unreachable";
      fc_error("co-%ld: part %d on %s: cannot release yet; will retry", (long)co.id, p.idx,
               p.cluster.c_str());
    }
  }
  if (!todo.empty() && !store_.write(co, parts, reason, &err)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
  }
  return all;
}

// ---------------------------------------------------------------------------
// Recovery and background work

void Engine::recover_db() {
  std::string err;
  // A commit that was interrupted is always rolled back.  (Its parts never
  // read "submitted" while it is "committing": commit_attempt writes the
  // submitted parts and "scheduled" in one transaction.)
  for (CoRecord co : store_.in_states({"planning", "committing"})) {
    auto parts = store_.parts(co.id, true);
    for (auto& p : parts) {
      if (holds(p.state)) {
        p.state = "cancelling";
        p.reason = "flexcod restarted during the commit";
      }
    }
    co.state = "failed";
    co.reason = "flexcod restarted during the commit; rolled back";
    if (!store_.write(co, parts, co.reason, &err)) fc_error("recovery: %s", err.c_str());
    fc_info("co-%ld: %s", (long)co.id, co.reason.c_str());
  }
  // A move interrupted before its switch left a new set that is not the
  // current placement: release it, the old set (still current) stays.  One
  // interrupted after the switch left the old set "cancelling", which the
  // clusters' reconciliation releases.  Either way one complete set remains.
  for (auto& p : store_.parts_in_states({"reserving", "tentative", "confirming", "confirmed",
                                         "submitting", "submitted", "running"})) {
    if (p.current) continue;
    auto co = store_.get_coalloc(p.co_id);
    if (!co) continue;
    p.state = "cancelling";
    p.reason = "flexcod restarted during a move; the new set is released";
    if (!store_.update_part(p, p.reason, &err)) fc_error("recovery: %s", err.c_str());
    fc_info("co-%ld: part %d (attempt %d) on %s: %s", (long)p.co_id, p.idx, p.attempt,
            p.cluster.c_str(), p.reason.c_str());
  }
}

// Reconcile (at start, and again whenever the event stream says events
// were lost), then follow the events.
void Engine::cluster_loop(std::size_t ci) {
  Cluster& c = *clusters_[ci];
  while (!stopping_) {
    int backoff_ms = 1000;
    while (!stopping_) {
      if (reconcile_cluster(ci)) break;
      fc_error("cluster %s: %s (%s); retrying in %d s", c.conf.name.c_str(),
               c.audience_refused ? "refuses our requests" : "unreachable",
               c.last_error.c_str(), backoff_ms / 1000);
      if (wait_stop(backoff_ms)) return;
      backoff_ms = std::min(backoff_ms * 2, 60000);
    }
    if (stopping_ || !follow_events(ci)) return;
    // Events were lost: nothing is planned on the cluster until it is
    // reconciled again (as at start).
    c.reconciled = false;
  }
}

bool Engine::reconcile_cluster(std::size_t ci) {
  Cluster& c = *clusters_[ci];
  // Parts on this cluster that must be released.
  for (auto& p : store_.parts_in_states({"cancelling"})) {
    if (p.cluster != c.conf.name) continue;
    auto m = co_mutex(p.co_id);
    std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
    if (!lock.owns_lock()) continue;
    auto co = store_.get_coalloc(p.co_id);
    if (!co) continue;
    if (!release_part(*co, p)) return false;
    p.state = co->state == "cancelling" ? "cancelled" : "released";
    p.reason = "released at recovery";
    std::string err;
    store_.update_part(p, p.reason, &err);
    lock.unlock();
    finish_if_done(p.co_id);
  }
  // Orphans: live flexco reservations that no part of ours holds.  Nothing
  // new is planned on this cluster before this pass ends, so every
  // reservation of ours is in the database already -- except one whose
  // create is in flight in a commit or move that began before this pass
  // (a reconciliation after lost events): its part is "reserving" without
  // an id.  The list is read before the database, so a reservation in it
  // was either written with its id by then or its part is still such a
  // one; while there is one, unknown reservations are left alone (the
  // next reconciliation, or the reservation's own confirm deadline, takes
  // care of a real orphan).
  bump("messages.list");
  auto list = c.client->list_reservations();
  if (!list.ok()) {
    c.note_error(list.error());
    return false;
  }
  c.note(true, "");
  std::set<std::int64_t> known;
  bool in_flight = false;
  for (const auto& p : store_.parts_in_states({"reserving", "tentative", "confirming", "confirmed",
                                               "submitting", "submitted", "running", "cancelling"})) {
    if (p.cluster == c.conf.name && p.reservation_id != 0) known.insert(p.reservation_id);
    if (p.cluster == c.conf.name && p.reservation_id == 0 && p.state == "reserving") in_flight = true;
  }
  for (const auto& r : list.value()) {
    if (r.state != "tentative" && r.state != "confirmed" && r.state != "creating") continue;
    if (known.count(r.id)) continue;
    if (r.owner != owner_tag()) {
      // Another flexcod's (another database, a test instance), or made
      // without an owner (by hand, or by a flexcod before 0.2): not ours
      // to delete.  Told once per reconciliation; counted in /v1/stats.
      bump("foreign_reservations");
      fc_info("cluster %s: reservation %s belongs to %s, not to this flexcod (%s); left alone",
              c.conf.name.c_str(), r.name.c_str(),
              r.owner.empty() ? "no flexcod" : r.owner.c_str(), owner_tag().c_str());
      continue;
    }
    if (in_flight) {
      fc_info("cluster %s: reservation %s is not ours yet, but a create is in flight; "
              "not deleted now", c.conf.name.c_str(), r.name.c_str());
      continue;
    }
    bump("orphans");
    bump("messages.delete");
    auto d = c.client->delete_reservation(r.id, "flexcod-" + store_.instance() + "-" + store_.run() + "-orphan-" +
                                                    std::to_string(r.id));
    if (d.ok()) {
      fc_info("cluster %s: orphan reservation %s deleted", c.conf.name.c_str(), r.name.c_str());
    } else {
      fc_error("cluster %s: deleting orphan %s: %s", c.conf.name.c_str(), r.name.c_str(),
               d.error().message.c_str());
      return false;
    }
  }
  // Part jobs we think are waiting or running: their state now, applied
  // exactly as the part_job_started / part_job_ended events would have
  // been (apply_job_phase).  A part whose reservation the plugin no longer
  // has (404) cannot run any more: it ended, how is unknown.
  std::set<std::int64_t> touched;
  for (const auto& p : store_.parts_in_states({"submitting", "submitted", "running"})) {
    if (p.cluster != c.conf.name || p.job_id == 0) continue;
    bump("messages.get");
    auto j = c.client->get_job(p.reservation_id, p.job_id);
    http::PartJob job;
    if (j.ok()) {
      job = j.value();
    } else if (j.error().code == http::Errc::kHttp && j.error().http_status == 404) {
      job.state = "UNKNOWN";
    } else if (!answered(j.error())) {
      c.note_error(j.error());
      return false;  // unreachable: the whole pass is retried
    } else {
      fc_error("co-%ld: part %d on %s: part job %ld: %s", (long)p.co_id, p.idx,
               c.conf.name.c_str(), (long)p.job_id, j.error().message.c_str());
      continue;
    }
    auto m = co_mutex(p.co_id);
    std::lock_guard<std::mutex> lock(*m);
    for (auto& q : store_.parts(p.co_id, false)) {  // re-read under the lock
      if (q.attempt != p.attempt || q.idx != p.idx) continue;
      const JobPhase ph = phase_of(job.state);
      const std::string was = q.state;
      if (!apply_job_phase(q, ph, job.state, job.start_time, job.end_time, job.exit_code) &&
          q.job_state == p.job_state) {
        continue;
      }
      std::string err;
      store_.update_part(q, "part job " + job.state + " at reconciliation", &err);
      if (q.state != was) {
        fc_info("co-%ld: part %d on %s: %s -> %s (part job %ld %s, seen at reconciliation)",
                (long)q.co_id, q.idx, q.cluster.c_str(), was.c_str(), q.state.c_str(),
                (long)q.job_id, job.state.c_str());
      }
    }
    touched.insert(p.co_id);
  }
  // Then every live co-allocation with a part here takes the transition its
  // parts' states now imply (completed, failed with the siblings released,
  // running), as finish_if_done does after a live event.  This also covers
  // a part whose end was written just before a crash that came before its
  // co-allocation's transition.
  for (const auto& co : store_.in_states({"scheduled", "running"})) {
    for (const auto& p : store_.parts(co.id, true)) {
      if (p.cluster == c.conf.name) touched.insert(co.id);
    }
  }
  for (std::int64_t id : touched) finish_if_done(id, true);
  c.reconciled = true;
  fc_info("cluster %s: reconciled", c.conf.name.c_str());
  return true;
}

// The nodes of parts whose job ended are free again: give their
// reservations back now rather than at their end.  A failure here costs
// nothing lasting: the reservation ends by itself at planned_end.
void Engine::give_back_ended(const CoRecord& co, std::vector<PartRecord>& parts) {
  std::string err;
  for (auto& p : parts) {
    if (p.reservation_id == 0 || (p.state != "completed" && p.state != "failed")) continue;
    if (release_part(co, p)) {
      store_.update_part(p, "reservation " + p.reservation + " released after the part job ended",
                         &err);
    }
  }
}

void Engine::finish_if_done(std::int64_t co_id, bool wait) {
  auto m = co_mutex(co_id);
  std::unique_lock<std::mutex> lock(*m, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    // Whoever holds the lock may not look at the parts again: the reaper
    // does, within 2 s, so no transition is dropped.
    std::lock_guard<std::mutex> g(recheck_mutex_);
    recheck_.insert(co_id);
    return;
  }
  auto co = store_.get_coalloc(co_id);
  if (!co) return;
  auto parts = store_.parts(co_id, true);
  std::string err;
  if (co->state == "cancelling") {
    bool pending = false;
    for (const auto& p : store_.parts(co_id, false)) pending |= p.state == "cancelling";
    if (!pending) {
      co->state = "cancelled";
      co->reason = "cancelled; everything released";
      store_.update_coalloc(*co, co->reason, &err);
    }
    return;
  }
  if (co->state == "scheduled" || co->state == "running") {
    bool all_ended = !parts.empty();
    bool any_failed = false, any_running = false;
    for (const auto& p : parts) {
      all_ended &= p.state == "completed" || p.state == "failed";
      any_failed |= p.state == "failed";
      any_running |= p.state == "running" || p.state == "completed" || p.state == "failed";
    }
    if (any_failed && !all_ended) {
      // All or nothing also once scheduled: a part that failed (its job
      // cancelled, its reservation deleted behind flexcod's back) makes
      // the others useless.  Release them.
      co->state = "failed";
      co->reason = "a part failed; the other parts were released";
      store_.update_coalloc(*co, co->reason, &err);
      fc_info("co-%ld: %s", (long)co_id, co->reason.c_str());
      release(*co, parts, "cancelled", co->reason);
      give_back_ended(*co, parts);
      return;
    }
    if (all_ended) {
      test_hold("finishing");
      co->state = any_failed ? "failed" : "completed";
      co->reason = any_failed ? "a part job failed" : "every part job completed";
      store_.update_coalloc(*co, co->reason, &err);
      give_back_ended(*co, parts);
    } else if (any_running && co->state == "scheduled") {
      co->state = "running";
      co->reason = "part jobs started";
      store_.update_coalloc(*co, co->reason, &err);
    }
  }
}

void Engine::handle_event(std::size_t ci, const http::Event& e) {
  Cluster& c = *clusters_[ci];
  if (e.type == "job_ended_early") {
    bump("events.job_ended_early");
    // A rescheduling pass once the cluster's next backfill pass has run.
    const json_t* j = json_object_get(e.raw.get(), "job_id");
    std::lock_guard<std::mutex> lock(resched_mutex_);
    Trigger& t = resched_pending_[ci];
    t.event_time = std::max(t.event_time, e.time);
    if (t.seen == 0) t.seen = now_seconds();
    t.what = "job " + std::to_string(json_integer_value(j)) + " on " + c.conf.name + " ended early";
    return;
  }
  if (e.type != "part_job_started" && e.type != "part_job_ended") return;
  const std::int64_t job_id = json_integer_value(json_object_get(e.raw.get(), "job_id"));
  for (auto& p : store_.parts_in_states({"submitting", "submitted", "running"})) {
    if (p.cluster != c.conf.name || p.job_id != job_id) continue;
    {
      auto m = co_mutex(p.co_id);
      std::lock_guard<std::mutex> lock(*m);
      // Re-read under the lock.
      for (auto& q : store_.parts(p.co_id, false)) {
        if (q.attempt != p.attempt || q.idx != p.idx) continue;
        const json_t* r = e.raw.get();
        const json_t* st = json_object_get(r, "start_time");
        const json_t* state = json_object_get(r, "state");
        const json_t* et = json_object_get(r, "end_time");
        const json_t* ec = json_object_get(r, "exit_code");
        apply_job_phase(q, e.type == "part_job_started" ? JobPhase::kRunning : JobPhase::kEnded,
                        json_is_string(state) ? json_string_value(state) : "",
                        json_is_integer(st) ? json_integer_value(st) : 0,
                        json_is_integer(et) ? json_integer_value(et) : 0,
                        json_is_integer(ec) ? static_cast<int>(json_integer_value(ec)) : -1);
        std::string err;
        store_.update_part(q, e.type + " (job " + std::to_string(job_id) + ")", &err);
      }
    }
    finish_if_done(p.co_id);
  }
}

bool Engine::follow_events(std::size_t ci) {
  Cluster& c = *clusters_[ci];
  int backoff_ms = 1000;
  while (!stopping_) {
    bump("messages.events");
    auto r = c.client->events(c.event_seq, 10, 200, &stopping_);
    if (!r.ok()) {
      if (stopping_) return false;
      c.note_error(r.error());
      fc_debug("cluster %s: events: %s", c.conf.name.c_str(), r.error().message.c_str());
      if (wait_stop(backoff_ms)) return false;
      backoff_ms = std::min(backoff_ms * 2, 30000);
      continue;
    }
    backoff_ms = 1000;
    c.note(true, "");
    const auto& b = r.value();
    const std::int64_t after = c.event_seq;
    for (const auto& e : b.events) handle_event(ci, e);
    if (b.next != c.event_seq) {
      c.event_seq = b.next;
      std::string err;
      if (!store_.set_event_seq(c.conf.name, c.event_seq, &err)) fc_error("%s", err.c_str());
    }
    if (b.lost) {
      // What the missing events said is unknown: read the cluster's state
      // in full (the same reconciliation as at start).  The events that
      // did arrive were applied first; the cursor is past them, so a crash
      // now still reconciles at the restart.
      fc_error("cluster %s: events after %ld were lost (oldest retained %ld, latest %ld); "
               "full reconcile of the cluster",
               c.conf.name.c_str(), (long)after, (long)b.oldest, (long)b.latest);
      return true;
    }
  }
  return false;
}

void Engine::watch_part_starts() {
  int skew;
  std::string policy;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    skew = conf_.part_start_skew;
    policy = conf_.part_start_policy;
  }
  // The first late part of a running co-allocation, or "".
  auto late_part = [&](const std::vector<PartRecord>& parts, std::int64_t now) -> std::string {
    std::int64_t first = 0;
    for (const auto& p : parts) {
      if (p.actual_start > 0) first = first == 0 ? p.actual_start : std::min(first, p.actual_start);
    }
    if (first == 0 || now < first + skew) return "";
    for (const auto& p : parts) {
      if (p.actual_start == 0 && (p.state == "submitted" || p.state == "submitting")) {
        return "part " + std::to_string(p.idx) + " on " + p.cluster + " (job " +
               std::to_string(p.job_id) + ") did not start within " + std::to_string(skew) +
               " s of the first part (started " + slurm_time(first) + ")";
      }
    }
    return "";
  };
  for (const auto& candidate : store_.in_states({"running"})) {
    if (stopping_) return;
    if (late_warned_.count(candidate.id)) continue;
    if (late_part(store_.parts(candidate.id, true), now_seconds()).empty()) continue;
    auto m = co_mutex(candidate.id);
    std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
    if (!lock.owns_lock()) continue;  // a request or an event holds it: next round
    auto co = store_.get_coalloc(candidate.id);
    if (!co || co->state != "running") continue;
    auto parts = store_.parts(co->id, true);
    const std::string late = late_part(parts, now_seconds());
    if (late.empty()) continue;
    std::string err;
    bump("late_parts");
    if (policy == "warn") {
      late_warned_.insert(co->id);
      co->reason = late + "; the other parts run alone (PartStartPolicy=warn)";
      fc_error("co-%ld: %s", (long)co->id, co->reason.c_str());
      store_.update_coalloc(*co, co->reason, &err);
      continue;
    }
    // All or nothing: the started parts are useless alone.
    co->state = "failed";
    co->reason = late + "; the started parts were cancelled and every reservation released "
                        "(PartStartPolicy=fail)";
    fc_error("co-%ld: %s", (long)co->id, co->reason.c_str());
    store_.update_coalloc(*co, co->reason, &err);
    release(*co, parts, "cancelled", co->reason);
    give_back_ended(*co, parts);
  }
}

void Engine::reap_loop() {
  while (!wait_stop(2000)) {
    std::set<std::int64_t> again;
    {
      std::lock_guard<std::mutex> g(recheck_mutex_);
      again.swap(recheck_);
    }
    for (std::int64_t id : again) finish_if_done(id, true);
    watch_part_starts();
    // A part whose cluster does not answer is tried again with a backoff
    // (2 s doubling to 5 min), its reason saying so (shown by sreserve
    // show); a cluster that failed once is not tried again in the same
    // pass, so that one dead cluster costs one timeout per pass, not one
    // per part, and the other clusters' parts are released meanwhile.
    std::set<std::string> failed_now;
    std::set<std::tuple<std::int64_t, int, int>> seen;
    for (auto& p : store_.parts_in_states({"cancelling"})) {
      const auto rkey = std::make_tuple(p.co_id, p.attempt, p.idx);
      seen.insert(rkey);
      ReapRetry& retry = reap_retry_[rkey];
      if (failed_now.count(p.cluster)) continue;
      if (now_seconds() < retry.next) {
        // ... unless the cluster answered something since: try at once
        Cluster* c = cluster(p.cluster);
        bool back = false;
        if (c != nullptr) {
          std::lock_guard<std::mutex> g(c->m);
          back = c->reachable && c->last_contact > retry.failed_at;
        }
        if (!back) continue;
      }
      auto m = co_mutex(p.co_id);
      std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
      if (!lock.owns_lock()) continue;
      auto co = store_.get_coalloc(p.co_id);
      if (!co) continue;
      // Only what no request thread is handling: the lock says so.
      auto fresh = store_.parts(p.co_id, false);
      bool still = false;
      for (const auto& q : fresh) still |= q.attempt == p.attempt && q.idx == p.idx && q.state == "cancelling";
      if (!still) continue;
      if (release_part(*co, p)) {
        p.state = co->state == "cancelling" ? "cancelled" : "released";
        p.reason = "released by the reaper" +
                   (retry.attempts ? " after " + std::to_string(retry.attempts + 1) + " tries"
                                   : std::string());
        std::string err;
        store_.update_part(p, p.reason, &err);
        fc_info("co-%ld: part %d on %s released", (long)p.co_id, p.idx, p.cluster.c_str());
        reap_retry_.erase(rkey);
      } else {
        failed_now.insert(p.cluster);
        retry.attempts++;
        const std::int64_t wait = std::min<std::int64_t>(
            std::int64_t{2} << std::min(retry.attempts - 1, 8), 300);
        retry.failed_at = now_seconds();
        retry.next = retry.failed_at + wait;
        Cluster* c = cluster(p.cluster);
        std::string why;
        if (c != nullptr) {
          std::lock_guard<std::mutex> g(c->m);
          why = c->last_error;
        }
        p.reason = "cannot release on " + p.cluster + (why.empty() ? "" : " (" + why + ")") +
                   "; try " + std::to_string(retry.attempts + 1) + " at " +
                   slurm_time(retry.next);
        std::string err;
        store_.update_part(p, p.reason, &err);  // same state: no history line
        bump("release_retries");
        fc_verbose("co-%ld: part %d on %s: %s", (long)p.co_id, p.idx, p.cluster.c_str(),
                   p.reason.c_str());
      }
      lock.unlock();
      finish_if_done(p.co_id);
    }
    for (auto it = reap_retry_.begin(); it != reap_retry_.end();)
      it = seen.count(it->first) ? std::next(it) : reap_retry_.erase(it);
  }
}

void Engine::publish_loop(std::size_t ci) {
  Cluster& c = *clusters_[ci];
  while (!stopping_) {
    int interval;
    std::int64_t horizon;
    {
      std::lock_guard<std::mutex> lock(conf_mutex_);
      interval = conf_.publish_interval;
      horizon = conf_.plan_horizon;
    }
    bump("messages.profile");
    auto r = c.client->profile(horizon, c.conf.partition);
    if (r.ok()) {
      c.note(true, "");
      std::lock_guard<std::mutex> lock(c.m);
      c.cached_profile = http::json_text(r.value().get());
      c.cached_at = now_seconds();
    } else {
      c.note_error(r.error());
    }
    if (wait_stop(1000 * interval)) return;
  }
}

// ---------------------------------------------------------------------------
// Rescheduling on early completion

namespace {

// A co-allocation whose common start is this close is left alone: its part
// jobs may be started by the clusters' next scheduling pass at any moment.
constexpr std::int64_t kMoveLead = 10;

// a's free nodes with the given parts' reservations (all on this cluster)
// given back over their spans: the plugin counts our own reservations as
// busy, and a co-allocation being re-planned must not be in its own way.
// Clipped at the published capacity.
flexco::Result<flexco::Profile> without_own(const flexco::Availability& a,
                                            const std::vector<PartRecord>& own) {
  std::set<flexco::Time> cuts;
  for (const auto& st : a.steps) cuts.insert(st.start);
  cuts.insert(a.horizon_end);
  for (const auto& p : own) {
    for (std::int64_t t : {p.planned_start, p.planned_end}) {
      if (t > a.when && t < a.horizon_end) cuts.insert(t);
    }
  }
  std::vector<flexco::Step> steps;
  std::size_t k = 0;
  for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
    const flexco::Time s = *it, e = *std::next(it);
    while (k + 1 < a.steps.size() && a.steps[k].end <= s) ++k;
    flexco::Amount free = a.steps[k].free_nodes;
    for (const auto& p : own) {
      if (p.planned_start <= s && s < p.planned_end) free += p.nodes;
    }
    steps.push_back(flexco::Step{s, e, std::min<flexco::Amount>(free, a.nodes_published),
                                 std::min<flexco::Amount>(a.steps[k].free_cpus, a.cpus_published)});
  }
  auto pp = flexco::profiles_from_steps(steps, a.nodes_published, a.cpus_published);
  if (!pp.ok()) return pp.error();
  return std::move(pp.value().nodes);
}

std::string layout_json(const std::vector<std::pair<std::string, std::int64_t>>& parts) {
  JsonPtr a(json_array());
  for (const auto& p : parts) {
    json_array_append_new(a.get(), json_pack("{s:s,s:I}", "cluster", p.first.c_str(), "nodes",
                                             static_cast<json_int_t>(p.second)));
  }
  return http::json_text(a.get());
}

}  // namespace

Engine::Spec Engine::spec_from(const CoRecord& co) {
  Spec s;
  s.nodes = co.nodes;
  s.duration = co.duration;
  s.ready = co.ready;
  s.deadline = co.deadline;
  s.overhead = co.overhead;
  s.clusters = co.clusters;
  s.max_parts = co.max_parts;
  s.policy = "flexco";
  json_error_t e;
  JsonPtr j(json_loads(co.request.c_str(), 0, &e));
  if (!j) return s;
  std::string why;
  (void)get_s(j.get(), "script", &s.script, &why);
  (void)get_s(j.get(), "work_dir", &s.work_dir, &why);
  (void)get_s(j.get(), "std_out", &s.std_out, &why);
  (void)get_s(j.get(), "std_err", &s.std_err, &why);
  (void)get_s(j.get(), "name", &s.name, &why);
  (void)get_str_list(j.get(), "argv", &s.argv, &why);
  if (const json_t* env = json_object_get(j.get(), "environment")) {
    const char* k;
    json_t* v;
    json_object_foreach(const_cast<json_t*>(env), k, v) {
      if (json_is_string(v)) s.env.emplace_back(k, json_string_value(v));
    }
  }
  if (const json_t* ps = json_object_get(j.get(), "parts")) {
    std::size_t i;
    json_t* p;
    json_array_foreach(ps, i, p) {
      s.fixed.emplace_back(json_integer_value(json_object_get(p, "nodes")),
                           json_string_value(json_object_get(p, "cluster")));
    }
  }
  return s;
}

void Engine::resched_loop() {
  // Triggers live in memory: after a restart, one pass once every cluster
  // is reconciled (or RescheduleWait has passed) makes up for any lost.
  bool first = true;
  const std::int64_t t0 = now_seconds();
  constexpr std::int64_t kRetryAfter = 10;
  std::int64_t retry_at = 0;
  int retries = 0;
  while (!wait_stop(1000)) {
    if (first) {
      int wait;
      {
        std::lock_guard<std::mutex> lock(conf_mutex_);
        wait = conf_.reschedule_wait;
      }
      const bool all = std::all_of(clusters_.begin(), clusters_.end(), [](const auto& c) {
        return !c->client || c->reconciled.load();
      });
      if (all || now_seconds() - t0 >= wait) {
        first = false;
        if (!store_.in_states({"scheduled"}).empty() && resched_pass("flexcod started")) {
          retry_at = now_seconds() + kRetryAfter;
        }
      }
      continue;
    }
    // A move abandoned (a cluster refused: its nodes were not free yet, or
    // taken meanwhile) is tried again a little later, a few times.
    if (retry_at != 0 && now_seconds() >= retry_at) {
      retry_at = 0;
      if (resched_pass("retry after an abandoned move") && ++retries < 3) {
        retry_at = now_seconds() + kRetryAfter;
      }
    }
    std::map<std::size_t, Trigger> pending;
    {
      std::lock_guard<std::mutex> lock(resched_mutex_);
      pending = resched_pending_;
    }
    if (pending.empty()) continue;
    std::string mode;
    int wait;
    {
      std::lock_guard<std::mutex> lock(conf_mutex_);
      mode = conf_.reschedule_mode;
      wait = conf_.reschedule_wait;
    }
    if (mode == "off") {
      std::lock_guard<std::mutex> lock(resched_mutex_);
      resched_pending_.clear();
      continue;
    }
    // The cluster's local jobs get the freed nodes first: wait for its next
    // backfill pass (a cycle that ended after the event), at most `wait` s.
    std::vector<std::size_t> ready;
    std::string trigger;
    for (const auto& [ci, t] : pending) {
      Cluster& c = *clusters_[ci];
      bool go = now_seconds() - t.seen >= wait;
      if (!go) {
        bump("messages.profile");
        auto r = c.client->profile(60, c.conf.partition);
        if (r.ok()) {
          const json_t* lc = json_object_get(json_object_get(r.value().get(), "backfill"), "last_cycle");
          go = json_is_integer(lc) && json_integer_value(lc) > t.event_time;
        }
      }
      if (!go) {
        // Slurm's backfill runs no cycle while nothing is pending: then no
        // local job is waiting for the freed nodes, and there is nothing to
        // wait for.  A minimal probe says how many are pending.
        JsonPtr q(json_object());
        set(q.get(), "nodes", json_pack("{s:I,s:I}", "min", (json_int_t)1, "max", (json_int_t)1));
        set_int(q.get(), "duration", 60);
        set_int(q.get(), "max_offers", 1);
        if (!c.conf.partition.empty()) set_str(q.get(), "partition", c.conf.partition);
        bump("messages.probe");
        auto r = c.client->probe(q.get());
        if (r.ok()) {
          const json_t* n = json_object_get(json_object_get(r.value().get(), "queue"), "considered");
          go = json_is_integer(n) && json_integer_value(n) == 0;
        }
      }
      if (!go) continue;
      ready.push_back(ci);
      trigger += (trigger.empty() ? "" : "; ") + t.what;
    }
    if (ready.empty()) continue;
    {
      std::lock_guard<std::mutex> lock(resched_mutex_);
      for (std::size_t ci : ready) {
        auto it = resched_pending_.find(ci);
        if (it != resched_pending_.end() && it->second.event_time <= pending[ci].event_time) {
          resched_pending_.erase(it);
        }
      }
    }
    retries = 0;
    retry_at = resched_pass(trigger) ? now_seconds() + kRetryAfter : 0;
  }
}

bool Engine::resched_pass(const std::string& trigger) {
  std::string mode;
  std::int64_t margin;
  int max_moves;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    mode = conf_.reschedule_mode;
    margin = conf_.reschedule_margin;
    max_moves = conf_.max_moves;
  }
  if (mode == "off" || max_moves == 0) return false;
  auto cos = store_.in_states({"scheduled"});
  // FlexCo Algorithm 2: the waiting co-allocations in order of their start,
  // each seeing the earlier ones' new places (a fresh profile per move).
  std::stable_sort(cos.begin(), cos.end(), [](const CoRecord& a, const CoRecord& b) {
    return a.planned_start < b.planned_start;
  });
  bump("resched_passes");
  fc_verbose("rescheduling pass (%s): %zu scheduled co-allocations", trigger.c_str(), cos.size());
  bool abandoned = false;
  for (const auto& candidate : cos) {
    if (stopping_) return false;
    if (candidate.moves >= max_moves) continue;
    if (candidate.planned_start <= now_seconds() + kMoveLead) continue;
    auto m = co_mutex(candidate.id);
    std::unique_lock<std::mutex> lock(*m, std::try_to_lock);
    if (!lock.owns_lock()) continue;
    auto co = store_.get_coalloc(candidate.id);
    if (!co || co->state != "scheduled") continue;
    std::string why;
    if (!try_move(*co, mode, margin, trigger, false, &why)) {
      fc_verbose("co-%ld: not moved: %s", (long)co->id, why.c_str());
      abandoned |= why.rfind("move abandoned", 0) == 0;
    }
  }
  return abandoned;
}

bool Engine::try_move(CoRecord& co, const std::string& mode, std::int64_t margin,
                      const std::string& trigger, bool constraints, std::string* why) {
  const std::int64_t now = now_seconds();
  if (co.planned_start <= now + kMoveLead) {
    *why = "it starts within " + std::to_string(kMoveLead) + " s";
    return false;
  }
  auto parts = store_.parts(co.id, true);
  if (parts.empty()) {
    *why = "it has no parts";
    return false;
  }
  for (const auto& p : parts) {
    if (p.state != "submitted") {
      *why = "part " + std::to_string(p.idx) + " is " + p.state;
      return false;
    }
  }
  Spec spec = spec_from(co);
  auto allowed = [&](const std::string& n) {
    return std::find(co.clusters.begin(), co.clusters.end(), n) != co.clusters.end();
  };
  auto holds_part = [&](const std::string& n) {
    return std::any_of(parts.begin(), parts.end(), [&](const PartRecord& p) { return p.cluster == n; });
  };
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < clusters_.size(); ++i) {
    const std::string& n = clusters_[i]->conf.name;
    if (!clusters_[i]->client || !clusters_[i]->reconciled) continue;
    if (allowed(n) || (!constraints && holds_part(n))) which.push_back(i);
  }
  if (which.empty()) {
    *why = "no allowed cluster is reachable";
    return false;
  }
  std::unique_lock<std::mutex> claim(claim_mutex_);  // see claim_mutex_
  Gathered g = gather(which, spec);
  // The same profiles with this co-allocation's own reservations given back.
  Gathered adj;
  adj.idx = g.idx;
  for (std::size_t k = 0; k < g.idx.size(); ++k) {
    std::vector<PartRecord> own;
    for (const auto& p : parts) {
      if (p.cluster == clusters_[g.idx[k]]->conf.name) own.push_back(p);
    }
    flexco::Availability a = g.avail[k];
    auto freed = without_own(a, own);
    if (!freed.ok()) {
      *why = "profile of " + clusters_[g.idx[k]]->conf.name + ": " + freed.error().message;
      return false;
    }
    a.nodes = std::move(freed).value();
    adj.avail.push_back(std::move(a));
    adj.offers.emplace_back();
    adj.raw_offers.emplace_back();
  }
  auto gi = [&](const std::string& n) {
    for (std::size_t k = 0; k < g.idx.size(); ++k) {
      if (clusters_[g.idx[k]]->conf.name == n) return k;
    }
    return g.idx.size();
  };
  // make-before-break: the new set is made while the old one still holds
  // its nodes, so every new part must fit beside it.
  auto coexists = [&](const flexco::CoallocPlan& p) {
    const std::int64_t s = std::max<std::int64_t>(p.start, now);
    for (const auto& part : p.parts) {
      auto m = g.avail[part.cluster].nodes.min_over(s, round_up_minutes(p.duration));
      if (!m.ok() || m.value() < part.nodes) return false;
    }
    return true;
  };

  flexco::CoallocPlan next;
  std::string kind;
  if (!constraints) {
    flexco::CoallocPlan current;
    current.start = co.planned_start;
    current.duration = co.run_time + kStartSlack;
    for (const auto& p : parts) {
      const std::size_t k = gi(p.cluster);
      if (k == g.idx.size()) {
        *why = "cluster " + p.cluster + " did not answer";
        return false;
      }
      flexco::PlanPart pp;
      pp.cluster = k;
      pp.nodes = p.nodes;
      current.parts.push_back(pp);
    }
    flexco::CoallocRequest req;
    req.nodes = co.nodes;
    req.runtime = co.duration + kStartSlack;
    req.ready = std::max(co.ready, now);
    req.deadline = co.deadline > 0 ? co.deadline : flexco::kForever;
    if (req.deadline <= req.ready) {
      *why = "its deadline has passed";
      return false;
    }
    req.overhead = co.overhead;
    req.max_parts = static_cast<std::size_t>(co.max_parts);
    for (std::size_t k = 0; k < g.idx.size(); ++k) req.allowed.push_back(allowed(clusters_[g.idx[k]]->conf.name));
    flexco::RescheduleOptions opts;
    // A request with fixed parts keeps its layout: Shift only.
    opts.mode = (mode == "shift" || !spec.fixed.empty()) ? flexco::RescheduleMode::kShift
                                                         : flexco::RescheduleMode::kShiftRemap;
    opts.margin = std::max<std::int64_t>(margin, 1);
    auto views_of = [&](Gathered& from) {
      std::vector<flexco::ClusterView> views;
      for (std::size_t k = 0; k < from.idx.size(); ++k) {
        flexco::ClusterView v;
        v.name = clusters_[from.idx[k]]->conf.name;
        v.capacity = from.avail[k].nodes_published;
        v.free = &from.avail[k].nodes;
        views.push_back(std::move(v));
      }
      return views;
    };
    auto d = flexco::reschedule_coalloc(req, current, views_of(adj), now, opts);
    if (d.ok() && d.value().kind != flexco::RescheduleKind::kNone && !coexists(d.value().plan)) {
      fc_debug("co-%ld: the best %s overlaps its own reservations; planning beside them",
               (long)co.id, flexco::reschedule_kind_name(d.value().kind));
      d = flexco::reschedule_coalloc(req, current, views_of(g), now, opts);
    }
    if (!d.ok()) {
      *why = d.error().message;
      return false;
    }
    if (d.value().kind == flexco::RescheduleKind::kNone) {
      *why = "no placement ends " + std::to_string(opts.margin) + " s earlier or more";
      return false;
    }
    next = d.value().plan;
    kind = flexco::reschedule_kind_name(d.value().kind);
  } else {
    std::string pwhy;
    if (!plan(spec, which, adj, &next, &pwhy)) {
      *why = pwhy;
      return false;
    }
    if (!coexists(next) && !plan(spec, which, g, &next, &pwhy)) {
      *why = pwhy;
      return false;
    }
    bool same = next.parts.size() == parts.size();
    for (const auto& part : next.parts) {
      same = same && std::any_of(parts.begin(), parts.end(), [&](const PartRecord& p) {
               return p.cluster == clusters_[g.idx[part.cluster]]->conf.name && p.nodes == part.nodes;
             });
    }
    kind = same ? "shift" : "remap";
  }
  for (auto& part : next.parts) part.cluster = g.idx[part.cluster];
  return move(co, spec, parts, next, kind, trigger, why, &claim);
}

bool Engine::move(CoRecord& co, const Spec& spec, std::vector<PartRecord>& old_parts,
                  const flexco::CoallocPlan& plan, const std::string& kind,
                  const std::string& reason, std::string* why,
                  std::unique_lock<std::mutex>* claim) {
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  // Until the switch the stored record stays as it is (a PATCH's new
  // constraints are written with the switch, or never).
  auto stored_opt = store_.get_coalloc(co.id);
  if (!stored_opt) {
    *why = "gone from the database";
    return false;
  }
  CoRecord stored = *stored_opt;
  const std::int64_t now = now_seconds();
  const std::int64_t start = std::max<std::int64_t>(plan.start, now);
  const std::int64_t length = round_up_minutes(plan.duration);
  int attempt = co.attempt;
  for (const auto& p : store_.parts(co.id, false)) attempt = std::max(attempt, p.attempt);
  attempt += 1;
  std::vector<PartRecord> parts = new_parts(co, plan, attempt, start, length);
  for (auto& p : parts) p.current = false;  // until the switch
  const std::string what = kind + " " + parts_text(old_parts) + " at " +
                           slurm_time(stored.planned_start) + " -> " + parts_text(parts) +
                           " at " + slurm_time(start);
  std::string err;
  // Write before act: the new set is in the database before any request.
  if (!store_.write(stored, parts, "move planned (" + what + "): " + reason, &err)) {
    *why = "state database: " + err;
    return false;
  }
  fc_info("co-%ld: moving (%s) after %s", (long)co.id, what.c_str(), reason.c_str());
  std::string fail;
  auto abandon = [&](const std::string& f) {
    *why = "move abandoned: " + f;
    fc_info("co-%ld: %s; the old set is kept", (long)co.id, why->c_str());
    bump("moves_abandoned");
    release(stored, parts, "released", *why);
    return false;
  };

  // A move never runs the job twice: the old set must not start before the
  // switch (when it starts, its part jobs run, and releasing it would kill
  // them).  Gathering offers and the three steps below take time, so this
  // is checked again before every step and last right before the switch,
  // with the co-allocation's lock held by the caller; the old set's
  // start must still be more than kMoveLead seconds away, and no old part
  // may have started according to the clusters' events.
  auto old_set_starts = [&]() -> std::string {
    if (stored.planned_start <= now_seconds() + kMoveLead)
      return "the current set starts at " + slurm_time(stored.planned_start) + ", within " +
             std::to_string(kMoveLead) + " s";
    for (const auto& p : store_.parts(co.id, true)) {
      if (p.actual_start > 0 || (!p.job_state.empty() && p.job_state != "PENDING"))
        return "part " + std::to_string(p.idx) + " on " + p.cluster + " has started (" +
               (p.job_state.empty() ? std::string("started") : p.job_state) + ")";
    }
    return "";
  };

  // 1. Tentative reservations.
  const StepErrors refused = reserve_parts(co, parts, conf.confirm_within, " (move)");
  if (claim && claim->owns_lock()) claim->unlock();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!refused[i]) continue;
    PartRecord& p = parts[i];
    const http::Error& e = *refused[i];
    const bool cancelled = e.code == http::Errc::kCancelled;
    p.state = maybe_done(e) || cancelled ? "cancelling" : "released";
    p.reason = e.message;
    if (!cancelled)
      fail += (fail.empty() ? "" : "; ") + p.cluster + " refused " + std::to_string(p.nodes) +
              " nodes: " + e.message;
  }
  if (!store_.write(stored, parts, fail.empty() ? "move: reserved" : "move: a reservation failed", &err)) {
    fail += (fail.empty() ? "" : "; ") + std::string("state database: ") + err;
  }
  if (!fail.empty()) return abandon(fail);
  test_hold("move-reserved");
  if (auto started = old_set_starts(); !started.empty()) return abandon(started);

  // 2. Confirm all.
  for (auto& p : parts) p.state = "confirming";
  if (!store_.write(stored, parts, "move: confirming", &err)) return abandon("state database: " + err);
  {
    const StepErrors failed = confirm_parts(co, attempt, parts, " (move)");
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (failed[i])
        fail += (fail.empty() ? "" : "; ") + parts[i].cluster + " did not confirm: " +
                failed[i]->message;
  }
  if (!store_.write(stored, parts, fail.empty() ? "move: confirmed" : "move: a confirmation failed", &err)) {
    fail += (fail.empty() ? "" : "; ") + std::string("state database: ") + err;
  }
  if (!fail.empty()) return abandon(fail);
  if (auto started = old_set_starts(); !started.empty()) return abandon(started);

  // 3. The part jobs again, into the new reservations.
  for (auto& p : parts) {
    p.state = "submitting";
    p.job_key = key(co, attempt, p.idx, "job");
  }
  if (!store_.write(stored, parts, "move: submitting part jobs", &err)) return abandon("state database: " + err);
  {
    const StepErrors failed =
        submit_parts(co, spec, round_up_minutes(plan.duration - kStartSlack), parts, " (move)");
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (failed[i])
        fail += (fail.empty() ? "" : "; ") + parts[i].cluster + " did not take the part job: " +
                failed[i]->message;
  }
  if (!fail.empty()) {
    store_.write(stored, parts, "move: a part job submission failed", &err);
    return abandon(fail);
  }
  test_hold("move-submitted");
  if (auto started = old_set_starts(); !started.empty()) return abandon(started);

  // 4. The switch, in one transaction: the new set becomes the current
  // placement, the old one is to be released, the move is recorded.
  MoveRecord mv;
  mv.time = now_seconds();
  mv.kind = kind;
  mv.from_start = stored.planned_start;
  mv.to_start = start;
  mv.from_end = stored.planned_end;
  mv.to_end = start + length;
  {
    std::vector<std::pair<std::string, std::int64_t>> from, to;
    for (const auto& p : old_parts) from.emplace_back(p.cluster, p.nodes);
    for (const auto& p : parts) to.emplace_back(p.cluster, p.nodes);
    mv.from_parts = layout_json(from);
    mv.to_parts = layout_json(to);
  }
  mv.reason = reason;
  CoRecord after = co;  // with a PATCH's changes
  after.attempt = attempt;
  after.planned_start = start;
  after.planned_end = start + length;
  after.run_time = plan.duration - kStartSlack;
  after.moves += 1;
  after.reason = "moved (" + kind + ") to " + parts_text(parts) + " at " + slurm_time(start);
  std::vector<PartRecord> all = parts;
  for (auto& p : all) p.current = true;
  std::vector<PartRecord> olds = old_parts;
  for (auto& p : olds) {
    p.current = false;
    p.state = "cancelling";
    p.reason = "replaced by a move";
    all.push_back(p);
  }
  if (!store_.write(after, all, after.reason, &err, &mv)) {
    fc_error("co-%ld: %s", (long)co.id, err.c_str());
    return abandon("state database: " + err);
  }
  co = after;
  bump("moves");
  fc_info("co-%ld: moved (%s): %s -> %s, start %ld -> %ld, end %ld -> %ld", (long)co.id,
          kind.c_str(), parts_text(old_parts).c_str(), parts_text(parts).c_str(),
          (long)mv.from_start, (long)mv.to_start, (long)mv.from_end, (long)mv.to_end);
  test_hold("move-switched");

  // 5. The old set goes: deleting a reservation cancels its part job.
  release(co, olds, "released", "replaced by a move");
  old_parts = olds;
  return true;
}

// ---------------------------------------------------------------------------
// User API

JsonPtr Engine::co_json(const CoRecord& co, bool full) {
  JsonPtr j = obj();
  json_t* o = j.get();
  set_int(o, "id", co.id);
  set_str(o, "name", "co-" + std::to_string(co.id));
  set_str(o, "user", co.user);
  set_int(o, "uid", co.uid);
  set_str(o, "state", co.state);
  set_opt_str(o, "reason", co.reason);
  set_str(o, "policy", co.policy);
  set_int(o, "nodes", co.nodes);
  set_int(o, "duration", co.duration);
  set_opt_int(o, "run_time", co.run_time);
  set(o, "overhead", json_real(co.overhead));
  set_int(o, "ready", co.ready);
  set_opt_int(o, "deadline", co.deadline);
  json_t* cl = json_array();
  for (const auto& c : co.clusters) json_array_append_new(cl, json_string(c.c_str()));
  set(o, "clusters", cl);
  set_int(o, "max_parts", co.max_parts);
  set_int(o, "submitted", co.submitted);
  set_int(o, "changed", co.changed);
  set_opt_int(o, "planned_start", co.planned_start);
  set_opt_int(o, "planned_end", co.planned_end);
  set_int(o, "moves", co.moves);
  json_t* parts = json_array();
  std::int64_t first = 0, last = 0;
  bool all_started = true;
  auto ps = store_.parts(co.id, true);
  for (const auto& p : ps) {
    json_t* q = json_object();
    set_int(q, "index", p.idx);
    set_str(q, "cluster", p.cluster);
    set_int(q, "nodes", p.nodes);
    set_str(q, "state", p.state);
    set_opt_int(q, "reservation_id", p.reservation_id);
    set_opt_str(q, "reservation", p.reservation);
    set_opt_str(q, "node_list", p.node_list);
    set_opt_int(q, "job_id", p.job_id);
    set_opt_str(q, "job_state", p.job_state);
    set_int(q, "planned_start", p.planned_start);
    set_int(q, "planned_end", p.planned_end);
    set_opt_int(q, "actual_start", p.actual_start);
    set_opt_int(q, "actual_end", p.actual_end);
    set_opt_int(q, "exit_code", p.exit_code, -1);
    set_opt_str(q, "reason", p.reason);
    json_array_append_new(parts, q);
    if (p.actual_start > 0) {
      first = first == 0 ? p.actual_start : std::min(first, p.actual_start);
      last = std::max(last, p.actual_start);
    } else {
      all_started = false;
    }
  }
  set(o, "parts", parts);
  // Parts of earlier placements still being released (a cluster that does
  // not answer): the reaper's retries, visible to the user.
  json_t* releasing = json_array();
  for (const auto& p : store_.parts(co.id, false)) {
    if (p.current || p.state != "cancelling") continue;
    json_t* q = json_object();
    set_int(q, "index", p.idx);
    set_int(q, "attempt", p.attempt);
    set_str(q, "cluster", p.cluster);
    set_opt_str(q, "reservation", p.reservation);
    set_opt_int(q, "job_id", p.job_id);
    set_opt_str(q, "reason", p.reason);
    json_array_append_new(releasing, q);
  }
  set(o, "releasing", releasing);
  set_opt_int(o, "actual_start", first);
  set(o, "start_spread", (all_started && !ps.empty()) ? json_integer(last - first) : json_null());
  if (full) {
    json_t* h = json_array();
    for (const auto& t : store_.transitions(co.id)) {
      json_t* x = json_object();
      set_int(x, "time", t.time);
      set_str(x, "what", t.what);
      set_opt_str(x, "from", t.from);
      set_str(x, "to", t.to);
      set_str(x, "reason", t.reason);
      json_array_append_new(h, x);
    }
    set(o, "history", h);
    json_t* mv = json_array();
    for (const auto& m : store_.moves(co.id)) {
      json_t* x = json_object();
      set_int(x, "time", m.time);
      set_str(x, "kind", m.kind);
      set_int(x, "from_start", m.from_start);
      set_int(x, "to_start", m.to_start);
      set_int(x, "from_end", m.from_end);
      set_int(x, "to_end", m.to_end);
      json_error_t e;
      json_t* fp = json_loads(m.from_parts.c_str(), 0, &e);
      json_t* tp = json_loads(m.to_parts.c_str(), 0, &e);
      set(x, "from_parts", fp ? fp : json_array());
      set(x, "to_parts", tp ? tp : json_array());
      set_str(x, "reason", m.reason);
      json_array_append_new(mv, x);
    }
    set(o, "move_history", mv);
  }
  return j;
}

std::optional<CoRecord> Engine::visible(const Caller& who, std::int64_t id) {
  auto co = store_.get_coalloc(id);
  if (!co) return std::nullopt;
  if (!who.admin && co->uid != who.uid) return std::nullopt;
  return co;
}

ApiResult Engine::replay_submit(const Caller& who, const SubmitKey& k, const std::string& digest) {
  if (k.digest != digest) {
    return api_error(422, "key_reused",
                     "Idempotency-Key already used with a different request (co-" +
                         std::to_string(k.co_id) + ")");
  }
  auto co = store_.get_coalloc(k.co_id);
  if (!co || co->uid != who.uid) return api_error(500, "internal_error", "the key's co-allocation is gone");
  fc_verbose("co-%ld: submit by %s repeated under its Idempotency-Key", (long)co->id, who.user.c_str());
  return Answer{200, co_json(*co, true)};
}

ApiResult Engine::submit(const Caller& who, const json_t* body, const std::string& idem_key) {
  if (!json_is_object(body)) return api_error(400, "bad_request", "the body must be a JSON object");
  // The digest of the request under an Idempotency-Key: its canonical
  // form (sorted members, compact), so only a change of content counts.
  std::string digest;
  if (!idem_key.empty()) {
    char* canon = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
    if (canon == nullptr) return api_error(500, "internal_error", "out of memory");
    digest = flexco::sha256_hex(canon);
    std::free(canon);
    if (auto k = store_.find_key(who.uid, idem_key)) return replay_submit(who, *k, digest);
  }
  static const std::set<std::string> known = {
      "nodes", "parts", "duration", "ready", "deadline", "overhead", "clusters", "max_parts",
      "policy", "script", "argv", "environment", "work_dir", "std_out", "std_err", "name",
      "dry_run"};
  const char* k;
  json_t* v;
  json_object_foreach(const_cast<json_t*>(body), k, v) {
    if (!known.count(k)) return api_error(400, "bad_request", std::string("unknown member '") + k + "'");
  }
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  Spec s;
  std::string why;
  s.policy = conf.default_policy;
  s.max_parts = conf.max_parts;
  s.ready = now_seconds();
  if (!get_i64(body, "nodes", &s.nodes, &why) || !get_i64(body, "duration", &s.duration, &why) ||
      !get_i64(body, "ready", &s.ready, &why) || !get_i64(body, "deadline", &s.deadline, &why) ||
      !get_s(body, "policy", &s.policy, &why) || !get_s(body, "script", &s.script, &why) ||
      !get_s(body, "work_dir", &s.work_dir, &why) || !get_s(body, "std_out", &s.std_out, &why) ||
      !get_s(body, "std_err", &s.std_err, &why) || !get_s(body, "name", &s.name, &why) ||
      !get_str_list(body, "argv", &s.argv, &why) || !get_str_list(body, "clusters", &s.clusters, &why)) {
    return api_error(400, "bad_request", why);
  }
  std::int64_t mp = s.max_parts;
  if (!get_i64(body, "max_parts", &mp, &why)) return api_error(400, "bad_request", why);
  if (mp < 1 || mp > 64) return api_error(400, "bad_request", "max_parts: must be in 1..64");
  s.max_parts = static_cast<int>(mp);
  if (const json_t* o = json_object_get(body, "overhead")) {
    if (!json_is_number(o)) return api_error(400, "bad_request", "overhead: must be a number");
    s.overhead = json_number_value(o);
    if (!(s.overhead >= 0 && s.overhead <= 10)) return api_error(400, "bad_request", "overhead: must be in 0..10");
  }
  if (const json_t* d = json_object_get(body, "dry_run")) {
    if (!json_is_boolean(d)) return api_error(400, "bad_request", "dry_run: must be true or false");
    s.dry_run = json_is_true(d);
  }
  if (const json_t* e = json_object_get(body, "environment")) {
    if (!json_is_object(e)) return api_error(400, "bad_request", "environment: must be an object of strings");
    const char* ek;
    json_t* ev;
    json_object_foreach(const_cast<json_t*>(e), ek, ev) {
      if (!json_is_string(ev)) return api_error(400, "bad_request", std::string("environment.") + ek + ": must be a string");
      const std::string name(ek);
      if (name.rfind("FLEXCO_", 0) == 0 || name.rfind("SLURM_", 0) == 0) {
        return api_error(400, "bad_request", "environment: " + name + ": FLEXCO_* and SLURM_* are reserved");
      }
      s.env.emplace_back(name, json_string_value(ev));
    }
  }
  if (const json_t* ps = json_object_get(body, "parts")) {
    if (!json_is_array(ps) || json_array_size(ps) == 0 || json_array_size(ps) > 64) {
      return api_error(400, "bad_request", "parts: must be an array of 1..64 parts");
    }
    std::size_t i;
    json_t* p;
    std::set<std::string> seen;
    json_array_foreach(ps, i, p) {
      const json_t* n = json_object_get(p, "nodes");
      const json_t* c = json_object_get(p, "cluster");
      if (!json_is_object(p) || json_object_size(p) != 2 || !json_is_integer(n) ||
          json_integer_value(n) < 1 || !json_is_string(c)) {
        return api_error(400, "bad_request",
                         "parts[" + std::to_string(i) + "]: needs exactly nodes (>= 1) and cluster");
      }
      if (!seen.insert(json_string_value(c)).second) {
        return api_error(400, "bad_request", "parts: one part per cluster");
      }
      s.fixed.emplace_back(json_integer_value(n), json_string_value(c));
    }
    if (json_object_get(body, "nodes")) return api_error(400, "bad_request", "give nodes or parts, not both");
    s.nodes = 0;
    for (const auto& f : s.fixed) s.nodes += f.first;
  }
  if (s.nodes < 1) return api_error(400, "bad_request", "nodes: required, >= 1 (or parts)");
  if (s.duration < 60 || s.duration > 31622400) {
    return api_error(400, "bad_request", "duration: required, 60..31622400 seconds");
  }
  if (s.policy != "flexco" && s.policy != "coarp" && s.policy != "hpcm" && s.policy != "cores") {
    return api_error(400, "bad_request", "policy: one of flexco, coarp, hpcm, cores");
  }
  if (s.deadline != 0 && s.deadline <= s.ready) return api_error(400, "bad_request", "deadline: must be after ready");
  if (s.clusters.empty()) {
    for (const auto& c : conf.clusters) s.clusters.push_back(c.name);
  } else {
    for (const auto& c : s.clusters) {
      if (cluster(c) == nullptr) return api_error(400, "bad_request", "clusters: unknown cluster '" + c + "'");
    }
  }
  for (const auto& f : s.fixed) {
    if (std::find(s.clusters.begin(), s.clusters.end(), f.second) == s.clusters.end()) {
      return api_error(400, "bad_request", "parts: cluster '" + f.second + "' is not configured or not allowed");
    }
  }
  if (!s.dry_run && (s.script.size() < 2 || s.script.compare(0, 2, "#!") != 0)) {
    return api_error(400, "bad_request", "script: required, must start with #!");
  }

  if (s.dry_run) {
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < clusters_.size(); ++i) {
      if (clusters_[i]->client && clusters_[i]->reconciled &&
          std::find(s.clusters.begin(), s.clusters.end(), clusters_[i]->conf.name) != s.clusters.end()) {
        which.push_back(i);
      }
    }
    Gathered g = gather(which, s);
    flexco::CoallocPlan p;
    std::string pwhy;
    const bool ok = !g.idx.empty() && plan(s, which, g, &p, &pwhy, true);
    if (g.idx.empty()) pwhy = "no cluster reachable";
    JsonPtr j = obj();
    set(j.get(), "dry_run", json_true());
    set_str(j.get(), "policy", s.policy);
    if (ok) {
      json_t* pl = json_object();
      set_int(pl, "start", std::max<std::int64_t>(p.start, now_seconds()));
      set_int(pl, "end", std::max<std::int64_t>(p.start, now_seconds()) + p.duration - kStartSlack);
      set_int(pl, "run_time", p.duration - kStartSlack);
      set(pl, "split", json_boolean(p.parts.size() > 1));
      set_str(pl, "policy", s.policy);
      json_t* parts = json_array();
      for (const auto& part : p.parts) {
        json_array_append_new(parts, json_pack("{s:s,s:I}", "cluster",
                                               clusters_[g.idx[part.cluster]]->conf.name.c_str(),
                                               "nodes", static_cast<json_int_t>(part.nodes)));
      }
      set(pl, "parts", parts);
      set(j.get(), "plan", pl);
      set(j.get(), "reason", json_null());
    } else {
      set(j.get(), "plan", json_null());
      set_str(j.get(), "reason", pwhy);
    }
    json_t* cl = json_array();
    for (std::size_t k = 0; k < g.idx.size(); ++k) {
      json_t* c = json_object();
      set_str(c, "name", clusters_[g.idx[k]]->conf.name);
      set(c, "reachable", json_true());
      set(c, "error", json_null());
      set_int(c, "nodes", g.avail[k].nodes_published);
      json_t* offers = json_array();
      if (g.raw_offers[k]) {
        json_decref(offers);
        offers = json_incref(g.raw_offers[k].get());
      } else {
        for (const auto& st : g.avail[k].steps) {
          json_array_append_new(offers, json_pack("{s:I,s:I,s:I}", "start", (json_int_t)st.start, "end",
                                                  (json_int_t)st.end, "free_nodes", (json_int_t)st.free_nodes));
        }
      }
      set(c, "offers", offers);
      json_array_append_new(cl, c);
    }
    for (const auto& e : g.errors) {
      json_t* c = json_object();
      set_str(c, "name", e.first);
      set(c, "reachable", json_false());
      set_str(c, "error", e.second);
      set(c, "nodes", json_null());
      set(c, "offers", json_array());
      json_array_append_new(cl, c);
    }
    set(j.get(), "clusters", cl);
    return Answer{200, std::move(j)};
  }

  CoRecord co;
  co.uid = who.uid;
  co.user = who.user;
  co.state = "planning";
  co.policy = s.policy;
  co.nodes = s.nodes;
  co.duration = s.duration;
  co.overhead = s.overhead;
  co.ready = s.ready;
  co.deadline = s.deadline;
  co.clusters = s.clusters;
  co.max_parts = s.max_parts;
  co.request = http::json_text(body);
  std::string err;
  std::optional<SubmitKey> taken;
  const bool keep_key = !idem_key.empty() && !s.dry_run;
  if (!store_.insert_coalloc(&co, "submitted by " + who.user, &err, keep_key ? idem_key : "", digest,
                             &taken)) {
    fc_error("submit: %s", err.c_str());
    return api_error(500, "internal_error", "state database: " + err);
  }
  if (taken) return replay_submit(who, *taken, digest);
  fc_info("co-%ld: submitted by %s: %ld nodes for %ld s, policy %s", (long)co.id, who.user.c_str(),
          (long)co.nodes, (long)co.duration, co.policy.c_str());
  auto m = co_mutex(co.id);
  std::lock_guard<std::mutex> lock(*m);
  const auto t0 = std::chrono::steady_clock::now();
  if (!place(co, s, &why)) {
    return api_error(409, "unplaceable", "co-" + std::to_string(co.id) + ": " + why);
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> sl(stats_mutex_);
    commit_count_++;
    commit_ms_sum_ += ms;
    commit_ms_max_ = std::max<std::int64_t>(commit_ms_max_, ms);
  }
  auto fresh = store_.get_coalloc(co.id);
  return Answer{201, co_json(fresh ? *fresh : co, true)};
}

ApiResult Engine::list(const Caller& who, const std::string& state, const std::string& user, int limit) {
  std::int64_t uid = who.admin ? -1 : who.uid;
  if (!user.empty()) {
    if (!who.admin) return api_error(403, "forbidden", "user=: only AdminUsers may list other users");
    passwd pw;
    passwd* res = nullptr;
    char buf[4096];
    if (getpwnam_r(user.c_str(), &pw, buf, sizeof buf, &res) != 0 || res == nullptr) {
      return api_error(400, "bad_request", "user=: unknown user '" + user + "'");
    }
    uid = pw.pw_uid;
  }
  static const std::set<std::string> states = {"", "active", "planning", "committing", "scheduled",
                                               "running", "completed", "failed", "cancelling", "cancelled"};
  if (!states.count(state)) return api_error(400, "bad_request", "state=: unknown state '" + state + "'");
  JsonPtr j = obj();
  json_t* a = json_array();
  for (const auto& co : store_.list_coallocs(uid, state, limit)) json_array_append_new(a, co_json(co, false).release());
  set(j.get(), "coallocations", a);
  return Answer{200, std::move(j)};
}

ApiResult Engine::show(const Caller& who, std::int64_t id) {
  auto co = visible(who, id);
  if (!co) return api_error(404, "not_found", "no co-allocation " + std::to_string(id));
  return Answer{200, co_json(*co, true)};
}

ApiResult Engine::cancel(const Caller& who, std::int64_t id) {
  if (!visible(who, id)) return api_error(404, "not_found", "no co-allocation " + std::to_string(id));
  auto m = co_mutex(id);
  std::lock_guard<std::mutex> lock(*m);
  auto co = store_.get_coalloc(id);
  if (!co) return api_error(404, "not_found", "no co-allocation " + std::to_string(id));
  if (!is_finished(co->state) && co->state != "cancelling") {
    co->state = "cancelling";
    co->reason = "cancelled by " + who.user;
    auto parts = store_.parts(id, true);
    // Written with the co-allocation, so that a crash before the release
    // leaves them to be released at the restart (not "cancelled" with its
    // reservations and part jobs still in Slurm).
    for (auto& p : parts)
      if (holds(p.state)) p.state = "cancelling";
    std::string err;
    if (!store_.write(*co, parts, co->reason, &err)) return api_error(500, "internal_error", err);
    fc_info("co-%ld: cancelled by %s", (long)id, who.user.c_str());
    test_hold("cancelling");
    if (release(*co, parts, "cancelled", co->reason)) {
      co->state = "cancelled";
      co->reason = "cancelled by " + who.user + "; everything released";
      store_.update_coalloc(*co, co->reason, &err);
    }
  }
  auto fresh = store_.get_coalloc(id);
  return Answer{200, co_json(*fresh, true)};
}

ApiResult Engine::modify(const Caller& who, std::int64_t id, const json_t* body) {
  if (!visible(who, id)) return api_error(404, "not_found", "no co-allocation " + std::to_string(id));
  if (!json_is_object(body)) return api_error(400, "bad_request", "the body must be a JSON object");
  const char* k;
  json_t* v;
  json_object_foreach(const_cast<json_t*>(body), k, v) {
    if (std::string(k) != "deadline" && std::string(k) != "clusters") {
      return api_error(400, "bad_request", std::string("unknown member '") + k + "'");
    }
  }
  auto m = co_mutex(id);
  std::lock_guard<std::mutex> lock(*m);
  auto co = store_.get_coalloc(id);
  if (!co) return api_error(404, "not_found", "no co-allocation " + std::to_string(id));
  if (co->state != "scheduled") {
    return api_error(409, "too_late", "co-" + std::to_string(id) + " is " + co->state +
                                          "; only a scheduled co-allocation can be changed");
  }
  CoRecord next = *co;
  if (const json_t* d = json_object_get(body, "deadline")) {
    if (json_is_null(d)) {
      next.deadline = 0;
    } else if (json_is_integer(d) && json_integer_value(d) > 0) {
      next.deadline = json_integer_value(d);
    } else {
      return api_error(400, "bad_request", "deadline: an epoch time or null");
    }
  }
  if (json_object_get(body, "clusters")) {
    std::vector<std::string> cl;
    std::string why;
    if (!get_str_list(body, "clusters", &cl, &why) || cl.empty()) {
      return api_error(400, "bad_request", why.empty() ? "clusters: at least one" : why);
    }
    for (const auto& c : cl) {
      if (cluster(c) == nullptr) return api_error(400, "bad_request", "clusters: unknown cluster '" + c + "'");
    }
    next.clusters = cl;
  }
  // The current placement must satisfy the new constraints; if it does
  // not, the co-allocation moves (make-before-break) to one that does.
  std::string violated;
  for (const auto& p : store_.parts(id, true)) {
    if (std::find(next.clusters.begin(), next.clusters.end(), p.cluster) == next.clusters.end()) {
      violated = "part " + std::to_string(p.idx) + " is on " + p.cluster + ", which the new cluster list excludes";
    }
  }
  // The part jobs end by planned_start + run_time (planned_end adds the slack).
  if (violated.empty() && next.deadline > 0 && next.planned_start + next.run_time > next.deadline) {
    violated = "the placement ends at " + slurm_time(next.planned_start + next.run_time) +
               ", after the new deadline";
  }
  if (!violated.empty()) {
    std::string why;
    if (next.deadline > 0 && next.deadline <= std::max(next.ready, now_seconds())) {
      return api_error(409, "conflict", violated + "; the new deadline is not after the earliest start; nothing changed");
    }
    if (!try_move(next, "remap", 0, "modified by " + who.user + ": " + violated, true, &why)) {
      return api_error(409, "conflict", violated + "; no placement satisfies the change (" + why +
                                            "); nothing changed");
    }
    auto fresh = store_.get_coalloc(id);
    return Answer{200, co_json(*fresh, true)};
  }
  std::string err;
  if (!store_.update_coalloc(next, "modified by " + who.user, &err)) {
    return api_error(500, "internal_error", err);
  }
  auto fresh = store_.get_coalloc(id);
  return Answer{200, co_json(*fresh, true)};
}

ApiResult Engine::clusters() {
  JsonPtr j = obj();
  json_t* a = json_array();
  for (auto& c : clusters_) {
    json_t* o = json_object();
    std::lock_guard<std::mutex> lock(c->m);
    set_str(o, "name", c->conf.name);
    set_str(o, "url", c->conf.url);
    set_opt_str(o, "partition", c->conf.partition);
    set(o, "reachable", json_boolean(c->reachable));
    set_opt_int(o, "last_contact", c->last_contact);
    set_opt_str(o, "last_error", c->last_error);
    set_int(o, "event_seq", c->event_seq);
    set(o, "reconciled", json_boolean(c->reconciled.load()));
    set_opt_int(o, "nodes", c->nodes, -1);
    json_array_append_new(a, o);
  }
  set(j.get(), "clusters", a);
  return Answer{200, std::move(j)};
}

ApiResult Engine::stats() {
  JsonPtr j = obj();
  json_t* o = j.get();
  set_int(o, "started", started_);
  json_t* by = json_object();
  for (const auto& kv : store_.count_by_state()) set_int(by, kv.first.c_str(), kv.second);
  set(o, "coallocations", by);
  std::lock_guard<std::mutex> lock(stats_mutex_);
  json_t* msgs = json_object();
  for (const auto& kv : counters_) {
    if (kv.first.rfind("messages.", 0) == 0) set_int(msgs, kv.first.substr(9).c_str(), kv.second);
  }
  set(o, "messages", msgs);
  set_int(o, "moves", store_.count_moves());
  for (const char* k : {"violations", "replans", "rollbacks", "orphans", "foreign_reservations", "release_retries", "moves_abandoned",
                        "resched_passes", "late_parts"}) {
    auto it = counters_.find(k);
    set_int(o, k, it == counters_.end() ? 0 : it->second);
  }
  auto ev = counters_.find("events.job_ended_early");
  set_int(o, "early_ends_seen", ev == counters_.end() ? 0 : ev->second);
  json_t* req = json_object();
  for (const auto& kv : requests_) set_int(req, std::to_string(kv.first).c_str(), kv.second);
  set(o, "requests", req);
  json_t* cm = json_object();
  set_int(cm, "count", commit_count_);
  set_int(cm, "mean", commit_count_ ? commit_ms_sum_ / commit_count_ : 0);
  set_int(cm, "max", commit_ms_max_);
  set(o, "commit_ms", cm);
  return Answer{200, std::move(j)};
}

}  // namespace flexcod
