// SPDX-License-Identifier: GPL-2.0-or-later
// api.cpp - the user API (submit, list, show, cancel, modify,
// clusters, stats) and its JSON.
// See engine.hpp and doc/flexcod.md.

#include "flexcod/engine_internal.hpp"

namespace flexcod {

using namespace engine_detail;

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
    set_opt_str(q, "partition", p.partition);
    set_opt_str(q, "account", p.account);
    set_opt_str(q, "qos", p.qos);
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

std::optional<CoRecord> Engine::visible(const Caller& who, std::int64_t id, bool for_read) {
  auto co = store_.get_coalloc(id);
  if (!co) return std::nullopt;
  if (!who.admin && !(for_read && who.read_all) && co->uid != who.uid) return std::nullopt;
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
      "dry_run", "partition", "account", "qos"};
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
      !get_str_list(body, "argv", &s.argv, &why) || !get_str_list(body, "clusters", &s.clusters, &why) ||
      !get_per_cluster(body, "partition", &s.partition, &why) ||
      !get_per_cluster(body, "account", &s.account, &why) ||
      !get_per_cluster(body, "qos", &s.qos, &why)) {
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
  if (s.policy != "flexco" && s.policy != "coarp" && s.policy != "hpcm" && s.policy != "cores" &&
      s.policy != "cores-seq") {
    return api_error(400, "bad_request", "policy: one of flexco, coarp, hpcm, cores, cores-seq");
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
  for (const auto* pc : {&s.partition, &s.account, &s.qos}) {
    const char* what = pc == &s.partition ? "partition" : pc == &s.account ? "account" : "qos";
    for (const auto& kv : pc->by) {
      if (cluster(kv.first) == nullptr)
        return api_error(400, "bad_request", std::string(what) + ": unknown cluster '" + kv.first + "'");
      if (std::find(s.clusters.begin(), s.clusters.end(), kv.first) == s.clusters.end())
        return api_error(400, "bad_request",
                         std::string(what) + ": cluster '" + kv.first + "' is not among the allowed clusters");
    }
  }
  if (!s.dry_run && (s.script.size() < 2 || s.script.compare(0, 2, "#!") != 0)) {
    return api_error(400, "bad_request", "script: required, must start with #!");
  }
  if (s.partition.given()) {
    // A partition the cluster does not have is refused here, before
    // anything is recorded or reserved.
    auto bad = check_partitions(s);
    if (bad) return *bad;
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
    // HPCM's P(S, d) of one part on each cluster answering, with the
    // rates it learned (doc/coalloc.md, "Learning the rates").
    const std::int64_t pnow = now_seconds();
    std::vector<double> site_p(g.idx.size(), 1.0);
    for (std::size_t k = 0; k < g.idx.size(); ++k)
      site_p[k] = hpcm_p(g.idx[k], g.avail[k].nodes_published, s.deadline, pnow);
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
      double pd = 1.0;
      for (const auto& part : p.parts) pd *= site_p[part.cluster];
      set(pl, "p_deadline", json_real(pd));
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
      set(c, "hpcm", hpcm_json(hpcm_rates(g.idx[k], pnow)));
      set(c, "p_deadline", json_real(site_p[k]));
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
      set(c, "hpcm", json_null());
      set(c, "p_deadline", json_null());
      set(c, "offers", json_array());
      json_array_append_new(cl, c);
    }
    set(j.get(), "clusters", cl);
    return Answer{200, std::move(j)};
  }

  CoRecord co;
  co.uid = who.uid;
  co.user = who.user;
  set_state(co, CoState::kPlanning);
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
  Store::UserCap cap;
  if (!who.admin) {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    cap.max_live = conf_.max_coallocations_per_user;
    cap.max_node_seconds = conf_.max_node_hours_per_user * 3600;
  }
  std::string capped;
  if (!store_.insert_coalloc(&co, "submitted by " + who.user, &err, keep_key ? idem_key : "", digest,
                             &taken, &cap, &capped)) {
    if (!capped.empty()) {
      bump("user_limited");
      fc_verbose("submit by %s refused: %s", who.user.c_str(), capped.c_str());
      return api_error(429, "user_limit", capped + "; submit again once some have ended");
    }
    fc_error("submit: %s", err.c_str());
    return api_error(500, "internal_error", "state database: " + err);
  }
  if (taken) return replay_submit(who, *taken, digest);
  fc_info("co-%ld: submitted by %s: %ld nodes for %ld s, policy %s", (long)co.id, who.user.c_str(),
          (long)co.nodes, (long)co.duration, co.policy.c_str());
  test_hold("inserted");
  auto m = co_mutex(co.id);
  std::lock_guard<std::mutex> lock(*m);
  // Read again under the lock: its owner may have cancelled it (DELETE)
  // since the insert, and placing this copy would bring it back to life
  // (the store refuses such a write too: may_overwrite).
  {
    auto now = store_.get_coalloc(co.id);
    if (!now || now->state != "planning") {
      fc_info("co-%ld: %s before it was placed; not placed", (long)co.id,
              now ? now->state.c_str() : "gone");
      return Answer{201, co_json(now ? *now : co, true)};
    }
  }
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
    commit_hist_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  auto fresh = store_.get_coalloc(co.id);
  return Answer{201, co_json(fresh ? *fresh : co, true)};
}

// The partitions a submission names, each asked of its cluster (a profile
// of it, in parallel, each bounded by ClusterTimeout): a 404
// unknown_partition answer refuses the submission (400 unknown_partition).
// A cluster that does not answer is left to the placement, as always.
std::optional<ApiError> Engine::check_partitions(const Spec& s) {
  flexco::conf::FlexcodConf conf;
  {
    std::lock_guard<std::mutex> lock(conf_mutex_);
    conf = conf_;
  }
  std::vector<std::pair<std::string, std::string>> ask;  // cluster, partition
  for (const auto& name : s.clusters) {
    Cluster* c = cluster(name);
    if (c == nullptr || !c->client) continue;
    const std::string& p = s.partition.get(name, c->conf.partition);
    if (!p.empty() && (s.partition.by.count(name) || !s.partition.all.empty())) ask.emplace_back(name, p);
  }
  std::vector<std::future<std::optional<std::string>>> futs;
  for (const auto& a : ask) {
    futs.push_back(std::async(std::launch::async, [this, a, &conf]() -> std::optional<std::string> {
      Cluster* c = cluster(a.first);
      bump("messages.profile");
      auto r = c->client->profile(3600, a.second, 1000L * conf.cluster_timeout);
      if (r.ok()) {
        c->note(true, "");
        return std::nullopt;
      }
      if (r.error().api_code == "unknown_partition") return r.error().message;
      c->note_error(r.error());
      return std::nullopt;
    }));
  }
  std::optional<ApiError> bad;
  for (std::size_t i = 0; i < futs.size(); ++i) {
    auto why = futs[i].get();
    if (why && !bad) {
      bad = api_error(400, "unknown_partition",
                      "partition: cluster " + ask[i].first + " has no partition '" + ask[i].second +
                          "' (" + *why + ")");
    }
  }
  return bad;
}

ApiResult Engine::list(const Caller& who, const std::string& state, const std::string& user, int limit) {
  std::int64_t uid = (who.admin || who.read_all) ? -1 : who.uid;
  if (!user.empty()) {
    if (!who.admin && !who.read_all) return api_error(403, "forbidden", "user=: only AdminUsers may list other users");
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
  auto co = visible(who, id, true);
  if (!co) return api_error(404, "not_found", "no co-allocation " + std::to_string(id));
  return Answer{200, co_json(*co, true)};
}

ApiResult Engine::cancel(const Caller& who, std::int64_t id) {
  if (!visible(who, id)) return api_error(404, "not_found", "no co-allocation " + std::to_string(id));
  auto m = co_mutex(id);
  std::lock_guard<std::mutex> lock(*m);
  // Read (again, after a compare-and-set conflict: a writer without this
  // lock changed it since) and written cancelling.
  for (int tries = 0;; ++tries) {
    auto co = store_.get_coalloc(id);
    if (!co) return api_error(404, "not_found", "no co-allocation " + std::to_string(id));
    if (is_finished(co->state) || co->state == "cancelling") break;
    set_state(*co, CoState::kCancelling);
    co->reason = "cancelled by " + who.user;
    auto parts = store_.parts(id, true);
    // Written with the co-allocation, so that a crash before the release
    // leaves them to be released at the restart (not "cancelled" with its
    // reservations and part jobs still in Slurm).
    for (auto& p : parts)
      if (holds(p.state)) set_state(p, PartState::kCancelling);
    std::string err;
    if (!store_.write(*co, parts, co->reason, &err)) {
      if (Store::is_conflict(err) && tries < 3) continue;
      return api_error(500, "internal_error", err);
    }
    fc_info("co-%ld: cancelled by %s", (long)id, who.user.c_str());
    test_hold("cancelling");
    if (release(*co, parts, PartState::kCancelled, co->reason)) {
      set_state(*co, CoState::kCancelled);
      co->reason = "cancelled by " + who.user + "; everything released";
      store_.update_coalloc(*co, co->reason, &err);
    }
    break;
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
    if (Store::is_conflict(err)) {
      return api_error(409, "conflict", "it changed while this request was read: nothing changed; "
                                        "read it again and retry");
    }
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
    if (c->pass_profile) {
      set_int(o, "pass_profile_age_ms", steady_ms() - c->pass_profile_at);
    } else {
      set(o, "pass_profile_age_ms", json_null());
    }
    set(o, "hpcm", hpcm_json(c->hpcm.rates(now_seconds())));
    if (auto off = c->clock_offset_locked()) {
      set(o, "clock_offset", json_real(std::round(*off * 10) / 10));
    } else {
      set(o, "clock_offset", json_null());
    }
    json_t* b = json_object();
    const std::int64_t now = now_seconds();
    set_str(b, "state", c->open_until == 0 ? "closed" : c->open_until > now ? "open" : "half_open");
    set_int(b, "failures", c->failures);
    set_opt_int(b, "open_until", c->open_until);
    set_int(b, "opened", c->opened);
    set(o, "breaker", b);
    json_array_append_new(a, o);
  }
  set(j.get(), "clusters", a);
  return Answer{200, std::move(j)};
}

ApiResult Engine::cluster_profile(const std::string& name) {
  Cluster* c = cluster(name);
  if (c == nullptr) return api_error(404, "not_found", "no cluster " + name);
  if (!c->client) return api_error(503, "unavailable", "cluster " + name + " has no client");
  std::lock_guard<std::mutex> fetch(c->view_fetch_m);
  std::string text;
  {
    std::lock_guard<std::mutex> lock(c->m);
    if (!c->view_profile.empty() && now_seconds() - c->view_profile_at < kViewProfileMaxAge) {
      text = c->view_profile;
    }
  }
  if (text.empty()) {
    bump("messages.profile");
    auto r = c->client->profile(kViewProfileHorizon, c->conf.partition);
    if (!r.ok()) {
      c->note_error(r.error());
      return api_error(503, "unavailable", "cluster " + name + ": " + r.error().message);
    }
    c->note(true, "");
    text = http::json_text(r.value().get());
    std::lock_guard<std::mutex> lock(c->m);
    c->view_profile = text;
    c->view_profile_at = now_seconds();
  }
  json_error_t je;
  JsonPtr doc(json_loads(text.c_str(), 0, &je));
  if (!doc) return api_error(500, "internal_error", "cached profile is not JSON");
  return Answer{200, std::move(doc)};
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
                        "resched_passes", "late_parts", "late_parts_unasked", "give_back_retries",
                        "user_limited", "clock_refusals", "gate_opened", "gate_confirmed",
                        "gate_waits", "gate_failures"}) {
    auto it = counters_.find(k);
    set_int(o, k, it == counters_.end() ? 0 : it->second);
  }
  set_int(o, "illegal_transitions", illegal_transitions());
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
  json_t* pm = json_object();
  set_int(pm, "last", pass_ms_last_);
  set_int(pm, "max", pass_ms_max_);
  set_int(pm, "tried", pass_tried_last_);
  set_int(pm, "count", pass_count_);
  set(o, "resched_pass_ms", pm);
  {
    std::lock_guard<std::mutex> lock(locks_mutex_);
    set_int(o, "co_locks", static_cast<std::int64_t>(locks_.size()));
  }
  set(o, "lease", ha_json().release());
  return Answer{200, std::move(j)};
}

}  // namespace flexcod

namespace flexcod {

std::string Engine::metrics_text() {
  // The database and each cluster's state first, then stats_mutex_ once:
  // everything is copied, then written.
  static const char* const kStates[] = {"planning", "committing", "scheduled", "running", "completed",
                                        "failed", "cancelling", "cancelled"};
  std::map<std::string, std::int64_t> by_state;
  for (const char* st : kStates) by_state[st] = 0;
  for (const auto& kv : store_.count_by_state()) by_state[kv.first] = kv.second;
  const std::int64_t moves = store_.count_moves();
  struct Link {
    std::string name;
    bool reachable, reconciled;
    std::int64_t last_contact;
    std::optional<double> clock_offset;
  };
  std::vector<Link> links;
  for (auto& c : clusters_) {
    std::lock_guard<std::mutex> lock(c->m);
    links.push_back({c->conf.name, c->reachable, c->reconciled.load(), c->last_contact,
                     c->clock_offset_locked()});
  }
  std::map<std::string, std::int64_t> counters, failed;
  std::map<int, std::int64_t> requests;
  std::map<std::string, Histogram> per_cluster;
  Histogram commit, move, resched;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    counters = counters_;
    requests = requests_;
    per_cluster = cluster_hist_;
    failed = cluster_failed_;
    commit = commit_hist_;
    move = move_hist_;
    resched = resched_hist_;
  }
  auto counter = [&](const char* k) {
    auto it = counters.find(k);
    return it == counters.end() ? 0.0 : static_cast<double>(it->second);
  };

  Exposition x;
  x.family("flexcod_coallocations", "gauge", "Co-allocations in the state database, by state.");
  for (const auto& kv : by_state) x.sample("flexcod_coallocations", {{"state", kv.first}}, kv.second);
  x.family("flexcod_commit_duration_seconds", "histogram",
           "Placing and committing a submitted co-allocation (201 answers).");
  x.histogram("flexcod_commit_duration_seconds", {}, commit);
  x.family("flexcod_move_duration_seconds", "histogram",
           "Moving a scheduled co-allocation (make-before-break), until the switch.");
  x.histogram("flexcod_move_duration_seconds", {}, move);
  x.family("flexcod_moves_total", "counter", "Moves of co-allocations, as recorded in the state database.");
  x.sample("flexcod_moves_total", {}, static_cast<double>(moves));
  x.family("flexcod_resched_passes_total", "counter", "Rescheduling passes.");
  x.sample("flexcod_resched_passes_total", {}, counter("resched_passes"));
  x.family("flexcod_resched_pass_duration_seconds", "histogram", "Rescheduling passes' durations.");
  x.histogram("flexcod_resched_pass_duration_seconds", {}, resched);
  x.family("flexcod_cluster_request_duration_seconds", "histogram",
           "Requests to each cluster's plugin that were sent (long polls apart), by cluster.");
  for (const auto& l : links) {
    auto it = per_cluster.find(l.name);
    x.histogram("flexcod_cluster_request_duration_seconds", {{"cluster", l.name}},
                it == per_cluster.end() ? Histogram({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})
                                        : it->second);
  }
  x.family("flexcod_cluster_request_failures_total", "counter",
           "Requests to a cluster's plugin that got no answer or a 5xx, by cluster.");
  for (const auto& l : links) {
    auto it = failed.find(l.name);
    x.sample("flexcod_cluster_request_failures_total", {{"cluster", l.name}},
             it == failed.end() ? 0.0 : static_cast<double>(it->second));
  }
  x.family("flexcod_cluster_reachable", "gauge",
           "1 if the cluster's plugin answered the last call, else 0 (the link is down).");
  for (const auto& l : links) x.sample("flexcod_cluster_reachable", {{"cluster", l.name}}, l.reachable ? 1 : 0);
  x.family("flexcod_cluster_reconciled", "gauge",
           "1 once the cluster was reconciled with the database since flexcod started; until then it is not planned on.");
  for (const auto& l : links) x.sample("flexcod_cluster_reconciled", {{"cluster", l.name}}, l.reconciled ? 1 : 0);
  x.family("flexcod_cluster_last_contact_seconds", "gauge",
           "When the cluster's plugin last answered, seconds since the epoch (0: never).");
  for (const auto& l : links) {
    x.sample("flexcod_cluster_last_contact_seconds", {{"cluster", l.name}}, static_cast<double>(l.last_contact));
  }
  x.family("flexcod_cluster_clock_offset_seconds", "gauge",
           "The cluster's clock minus flexcod's, from its answers' Date headers (no sample: none yet).");
  for (const auto& l : links) {
    if (l.clock_offset) x.sample("flexcod_cluster_clock_offset_seconds", {{"cluster", l.name}}, *l.clock_offset);
  }
  x.family("flexcod_errors_total", "counter",
           "Things that went wrong and were handled, by kind (as in GET /v1/stats).");
  for (const char* k : {"violations", "replans", "rollbacks", "orphans", "foreign_reservations",
                        "release_retries", "moves_abandoned", "late_parts", "late_parts_unasked",
                        "gate_waits", "gate_failures"}) {
    x.sample("flexcod_errors_total", {{"kind", k}}, counter(k));
  }
  x.sample("flexcod_errors_total", {{"kind", "illegal_transitions"}}, static_cast<double>(illegal_transitions()));
  x.family("flexcod_http_requests_total", "counter", "Requests answered by flexcod, by HTTP status.");
  for (const auto& kv : requests) {
    x.sample("flexcod_http_requests_total", {{"code", std::to_string(kv.first)}}, static_cast<double>(kv.second));
  }
  x.family("flexcod_start_time_seconds", "gauge", "When flexcod started, seconds since the epoch.");
  x.sample("flexcod_start_time_seconds", {}, static_cast<double>(started_));
  ha_metrics(x);
  return x.text();
}

}  // namespace flexcod
