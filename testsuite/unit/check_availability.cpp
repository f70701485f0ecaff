// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests for src/core/availability, wire_profile and capi_profile:
// golden scenarios from testsuite/unit/availability_cases/*.json (each run
// through the C API and the C++ API), cases for the wire format, the error
// document and invalid snapshots, and a randomized cross-check against a
// brute-force per-second count.

#include <dirent.h>
#include <jansson.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/availability.hpp"
#include "core/capi_profile.h"
#include "core/profile.hpp"
#include "core/cluster_snapshot.h"
#include "core/wire_profile.hpp"

// Last: check.h defines macros (fail, ...) that clash with the C++ library.
#include <check.h>

using namespace flexco;

namespace {

// ---------------------------------------------------------------------------
// Helpers: every failure names the source line (or the scenario).

#define EQ(a, b)                                                                                \
  do {                                                                                          \
    std::int64_t a_ = (a), b_ = (b);                                                            \
    if (a_ != b_)                                                                               \
      ck_abort_msg("line %d: %s == %" PRId64 ", expected %s == %" PRId64, __LINE__, #a, a_, #b, \
                   b_);                                                                         \
  } while (0)

#define STR_EQ(expr, want)                                                                   \
  do {                                                                                       \
    std::string got_ = (expr);                                                               \
    ck_assert_msg(got_ == (want), "line %d: %s is \"%s\", expected \"%s\"", __LINE__, #expr, \
                  got_.c_str(), std::string(want).c_str());                                  \
  } while (0)

#define HAS(msg, part)                                                                      \
  ck_assert_msg(std::string(msg).find(part) != std::string::npos,                           \
                "line %d: message \"%s\" lacks \"%s\"", __LINE__, std::string(msg).c_str(), \
                std::string(part).c_str())

struct JsonFree {
  void operator()(json_t* j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonFree>;

JsonPtr parse_or_fail(const std::string& text, const std::string& what) {
  json_error_t e;
  JsonPtr j(json_loads(text.c_str(), JSON_REJECT_DUPLICATES, &e));
  if (!j) ck_abort_msg("%s: invalid JSON (%s): %s", what.c_str(), e.text, text.c_str());
  return j;
}

std::string keys_of(json_t* obj) {
  std::string out;
  const char* key;
  json_t* v;
  json_object_foreach(obj, key, v) {
    (void)v;
    out += std::string(out.empty() ? "" : ",") + key;
  }
  return out;
}

// ---------------------------------------------------------------------------
// A flexco_snapshot_t that owns its storage.

struct SnapJob {
  std::uint32_t id = 0;
  std::uint32_t kind = FLEXCO_JOB_RUNNING;
  Time start = 0, end = 0;
  std::string partition = "p";
  std::string resv;
  std::vector<std::uint32_t> nodes;
};
struct SnapResv {
  std::string name;
  Time start = 0, end = 0;
  std::vector<std::uint32_t> nodes;
};
struct SnapPart {
  std::string name;
  bool is_default = false, up = true;
  std::vector<std::uint32_t> nodes;
};
struct SnapNode {
  std::string name;
  std::uint32_t cpus = 1;
  bool available = true;
};

class OwnedSnapshot {
 public:
  std::string cluster = "alpha";
  Time when = 1000, bf_last_cycle = 0;
  bool bf_active = false;
  std::vector<SnapNode> nodes;
  std::vector<SnapPart> parts;
  std::vector<SnapJob> jobs;
  std::vector<SnapResv> resvs;

  // Builds the C view; valid until this object changes or dies.
  const flexco_snapshot_t& c() {
    c_nodes_.clear();
    c_parts_.clear();
    c_jobs_.clear();
    c_resvs_.clear();
    idx_.clear();
    auto add = [&](const std::vector<std::uint32_t>& v, std::uint32_t& off, std::uint32_t& cnt) {
      off = static_cast<std::uint32_t>(idx_.size());
      cnt = static_cast<std::uint32_t>(v.size());
      idx_.insert(idx_.end(), v.begin(), v.end());
    };
    for (const SnapNode& n : nodes)
      c_nodes_.push_back(
          flexco_snap_node_t{n.name.c_str(), n.cpus, static_cast<std::uint8_t>(n.available)});
    for (const SnapPart& p : parts) {
      flexco_snap_part_t cp{};
      cp.name = p.name.c_str();
      cp.max_time = FLEXCO_SNAP_FOREVER;
      cp.is_default = p.is_default;
      cp.up = p.up;
      add(p.nodes, cp.node_off, cp.node_cnt);
      c_parts_.push_back(cp);
    }
    for (const SnapJob& j : jobs) {
      flexco_snap_job_t cj{};
      cj.job_id = j.id;
      cj.user_id = 1000;
      cj.kind = j.kind;
      cj.start = j.start;
      cj.end = j.end;
      cj.time_limit = FLEXCO_SNAP_FOREVER;
      cj.min_nodes = static_cast<std::uint32_t>(std::max<std::size_t>(j.nodes.size(), 1));
      cj.partition = j.partition.c_str();
      cj.resv_name = j.resv.empty() ? nullptr : j.resv.c_str();
      add(j.nodes, cj.node_off, cj.node_cnt);
      c_jobs_.push_back(cj);
    }
    for (const SnapResv& r : resvs) {
      flexco_snap_resv_t cr{};
      cr.name = r.name.c_str();
      cr.start = r.start;
      cr.end = r.end;
      cr.users = "root";
      add(r.nodes, cr.node_off, cr.node_cnt);
      c_resvs_.push_back(cr);
    }
    snap_ = flexco_snapshot_t{};
    snap_.cluster = cluster.c_str();
    snap_.when = when;
    snap_.bf_last_cycle = bf_last_cycle;
    snap_.bf_active = bf_active;
    snap_.nodes = c_nodes_.data();
    snap_.node_count = static_cast<std::uint32_t>(c_nodes_.size());
    snap_.jobs = c_jobs_.data();
    snap_.job_count = static_cast<std::uint32_t>(c_jobs_.size());
    snap_.resvs = c_resvs_.data();
    snap_.resv_count = static_cast<std::uint32_t>(c_resvs_.size());
    snap_.parts = c_parts_.data();
    snap_.part_count = static_cast<std::uint32_t>(c_parts_.size());
    snap_.node_idx = idx_.data();
    snap_.node_idx_count = static_cast<std::uint32_t>(idx_.size());
    return snap_;
  }

 private:
  std::vector<flexco_snap_node_t> c_nodes_;
  std::vector<flexco_snap_part_t> c_parts_;
  std::vector<flexco_snap_job_t> c_jobs_;
  std::vector<flexco_snap_resv_t> c_resvs_;
  std::vector<std::uint32_t> idx_;
  flexco_snapshot_t snap_{};
};

// The C API's answer, parsed.
struct CAnswer {
  int status = 0;
  std::string code, message, json;
};

CAnswer call_c(const flexco_snapshot_t* snap, const char* partition, std::int64_t horizon,
               int share) {
  CAnswer a;
  char code[64], err[512];
  char* json = reinterpret_cast<char*>(1);  // must be overwritten
  a.status = flexco_profile_json(snap, partition, horizon, share, &json, code, sizeof code, err,
                                 sizeof err);
  ck_assert_msg(json != nullptr && json != reinterpret_cast<char*>(1),
                "flexco_profile_json left json_out unset (status %d)", a.status);
  a.json = json;
  free(json);
  a.code = code;
  a.message = err;
  return a;
}

// Checks the {"error":{"code","message"}} shape and returns the error object.
void check_error_doc(const std::string& text, const std::string& code, const std::string& message,
                     const std::string& what) {
  JsonPtr root = parse_or_fail(text, what);
  ck_assert_msg(json_is_object(root.get()), "%s: error document not an object", what.c_str());
  ck_assert_msg(keys_of(root.get()) == "error", "%s: error document keys %s", what.c_str(),
                keys_of(root.get()).c_str());
  json_t* e = json_object_get(root.get(), "error");
  ck_assert_msg(json_is_object(e) && keys_of(e) == "code,message", "%s: error object keys %s",
                what.c_str(), e ? keys_of(e).c_str() : "(none)");
  ck_assert_msg(
      json_is_string(json_object_get(e, "code")) && json_is_string(json_object_get(e, "message")),
      "%s: code/message not strings", what.c_str());
  std::string c = json_string_value(json_object_get(e, "code"));
  std::string m = json_string_value(json_object_get(e, "message"));
  ck_assert_msg(c == code, "%s: code %s, expected %s", what.c_str(), c.c_str(), code.c_str());
  ck_assert_msg(m == message, "%s: message \"%s\", expected \"%s\"", what.c_str(), m.c_str(),
                message.c_str());
}

// Structural checks every Availability must pass, whatever the input.
void check_invariants(const Availability& a, const std::string& what) {
  const char* w = what.c_str();
  ck_assert_msg(!a.steps.empty(), "%s: no steps", w);
  ck_assert_msg(a.steps.front().start == a.when, "%s: first step starts at %" PRId64, w,
                a.steps.front().start);
  ck_assert_msg(a.steps.back().end == a.horizon_end, "%s: last step ends at %" PRId64, w,
                a.steps.back().end);
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    const Step& s = a.steps[i];
    ck_assert_msg(s.start < s.end, "%s: step %zu empty", w, i);
    if (i > 0) {
      ck_assert_msg(a.steps[i - 1].end == s.start, "%s: gap before step %zu", w, i);
      ck_assert_msg(
          a.steps[i - 1].free_nodes != s.free_nodes || a.steps[i - 1].free_cpus != s.free_cpus,
          "%s: steps %zu and %zu not merged", w, i - 1, i);
    }
    ck_assert_msg(s.free_nodes >= 0 && s.free_nodes <= a.nodes_published, "%s: step %zu nodes", w,
                  i);
    ck_assert_msg(s.free_cpus >= 0 && s.free_cpus <= a.cpus_published, "%s: step %zu cpus", w, i);
    // The profiles hold the same function.
    for (const auto& [prof, want] : {std::pair<const Profile*, Amount>{&a.nodes, s.free_nodes},
                                     std::pair<const Profile*, Amount>{&a.cpus, s.free_cpus}}) {
      auto slots = prof->free_slots(s.start, s.end, -kMaxAmount);
      ck_assert_msg(slots.ok(), "%s: free_slots failed", w);
      for (const Slot& sl : slots.value())
        ck_assert_msg(sl.free == want,
                      "%s: profile has %" PRId64 " over [%" PRId64 ", %" PRId64
                      "), step %zu says %" PRId64,
                      w, sl.free, sl.start, sl.end, i, want);
    }
  }
  EQ(a.nodes.origin(), a.when);
  EQ(a.nodes.capacity(), a.nodes_published);
  EQ(a.cpus.capacity(), a.cpus_published);
  // Closed beyond the horizon.
  EQ(a.nodes.free_at(a.horizon_end).value(), 0);
  EQ(a.cpus.free_at(a.horizon_end).value(), 0);
  EQ(a.nodes.earliest_fit(a.when, a.horizon_end - a.when + 1, 1).value(), kNever);
  ck_assert_msg(a.nodes_available <= a.nodes_total && a.nodes_published <= a.nodes_total &&
                    a.cpus_available <= a.cpus_total && a.cpus_published <= a.cpus_total,
                "%s: counts inconsistent", w);
}

// ---------------------------------------------------------------------------
// Golden scenarios: see testsuite/unit/availability_cases/README.

std::vector<std::string> g_case_files;

std::string case_dir() {
  std::vector<std::string> tries;
  if (const char* s = std::getenv("FLEXCO_SRCDIR"))
    tries.push_back(std::string(s) + "/testsuite/unit/availability_cases");
  std::string here = __FILE__;
  auto slash = here.rfind('/');
  tries.push_back((slash == std::string::npos ? std::string(".") : here.substr(0, slash)) +
                  "/availability_cases");
  tries.push_back("unit/availability_cases");
  tries.push_back("testsuite/unit/availability_cases");
  for (const std::string& d : tries) {
    if (DIR* h = opendir(d.c_str())) {
      closedir(h);
      return d;
    }
  }
  return std::string();
}

std::vector<std::string> list_cases(const std::string& dir) {
  std::vector<std::string> out;
  if (dir.empty()) return out;
  DIR* h = opendir(dir.c_str());
  if (!h) return out;
  while (struct dirent* e = readdir(h)) {
    std::string n = e->d_name;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) out.push_back(dir + "/" + n);
  }
  closedir(h);
  std::sort(out.begin(), out.end());
  return out;
}

class Golden {
 public:
  explicit Golden(std::string file) : file_(std::move(file)) {}

  int run() {
    json_error_t e;
    JsonPtr root(json_load_file(file_.c_str(), JSON_REJECT_DUPLICATES, &e));
    if (!root) die(std::string("line ") + std::to_string(e.line) + ": " + e.text);
    load_snapshot(need(root.get(), "snapshot"));
    json_t* queries = need(root.get(), "queries");
    if (!json_is_array(queries) || json_array_size(queries) == 0) die("queries: not a list");
    for (std::size_t i = 0; i < json_array_size(queries); ++i) {
      where_ = "query " + std::to_string(i);
      run_query(json_array_get(queries, i));
    }
    return static_cast<int>(json_array_size(queries));
  }

 private:
  [[noreturn]] void die(const std::string& what) {
    ck_abort_msg("%s: %s: %s", file_.c_str(), where_.c_str(), what.c_str());
  }
  json_t* need(json_t* o, const char* key) {
    json_t* v = json_object_get(o, key);
    if (!v) die(std::string("missing \"") + key + "\"");
    return v;
  }
  std::int64_t integer(json_t* v, const char* what) {
    if (json_is_string(v) && std::string(json_string_value(v)) == "forever")
      return FLEXCO_SNAP_FOREVER;
    if (!json_is_integer(v)) die(std::string(what) + ": not an integer");
    return json_integer_value(v);
  }
  std::int64_t integer_or(json_t* o, const char* key, std::int64_t fallback) {
    json_t* v = json_object_get(o, key);
    return v ? integer(v, key) : fallback;
  }
  bool boolean_or(json_t* o, const char* key, bool fallback) {
    json_t* v = json_object_get(o, key);
    if (!v) return fallback;
    if (!json_is_boolean(v)) die(std::string(key) + ": not a boolean");
    return json_is_true(v);
  }
  std::string string_or(json_t* o, const char* key, const std::string& fallback) {
    json_t* v = json_object_get(o, key);
    if (!v) return fallback;
    if (!json_is_string(v)) die(std::string(key) + ": not a string");
    return json_string_value(v);
  }
  std::vector<std::uint32_t> node_list(json_t* o) {
    std::vector<std::uint32_t> out;
    json_t* arr = need(o, "nodes");
    std::size_t i;
    json_t* v;
    json_array_foreach(arr, i, v) {
      auto it = node_index_.find(json_is_string(v) ? json_string_value(v) : "");
      if (it == node_index_.end()) die("unknown node in a node list");
      out.push_back(it->second);
    }
    return out;
  }

  void load_snapshot(json_t* s) {
    where_ = "snapshot";
    snap_.cluster = string_or(s, "cluster", "alpha");
    snap_.when = integer(need(s, "when"), "when");
    snap_.bf_last_cycle = integer_or(s, "bf_last_cycle", 0);
    snap_.bf_active = boolean_or(s, "bf_active", false);
    std::size_t i;
    json_t* v;
    json_array_foreach(need(s, "nodes"), i, v) {
      SnapNode n;
      n.name = string_or(v, "name", "");
      n.cpus = static_cast<std::uint32_t>(integer(need(v, "cpus"), "cpus"));
      n.available = boolean_or(v, "available", true);
      node_index_[n.name] = static_cast<std::uint32_t>(snap_.nodes.size());
      snap_.nodes.push_back(n);
    }
    json_array_foreach(need(s, "partitions"), i, v) {
      SnapPart p;
      p.name = string_or(v, "name", "");
      p.is_default = boolean_or(v, "default", false);
      p.up = boolean_or(v, "up", true);
      p.nodes = node_list(v);
      snap_.parts.push_back(p);
    }
    if (json_t* jobs = json_object_get(s, "jobs")) {
      json_array_foreach(jobs, i, v) {
        SnapJob j;
        j.id = static_cast<std::uint32_t>(integer(need(v, "id"), "id"));
        json_t* kind = need(v, "kind");
        std::string k = json_is_string(kind) ? json_string_value(kind) : "";
        if (k == "running")
          j.kind = FLEXCO_JOB_RUNNING;
        else if (k == "planned")
          j.kind = FLEXCO_JOB_PLANNED;
        else if (k == "pending")
          j.kind = FLEXCO_JOB_PENDING;
        else
          j.kind = static_cast<std::uint32_t>(integer(kind, "kind"));
        j.start = integer(need(v, "start"), "start");
        j.end = integer(need(v, "end"), "end");
        j.partition = string_or(v, "partition", "p");
        j.resv = string_or(v, "resv", "");
        j.nodes = node_list(v);
        snap_.jobs.push_back(j);
      }
    }
    if (json_t* resvs = json_object_get(s, "reservations")) {
      json_array_foreach(resvs, i, v) {
        SnapResv r;
        r.name = string_or(v, "name", "");
        r.start = integer(need(v, "start"), "start");
        r.end = integer(need(v, "end"), "end");
        r.nodes = node_list(v);
        snap_.resvs.push_back(r);
      }
    }
  }

  void run_query(json_t* q) {
    std::string partition = string_or(q, "partition", "");
    std::int64_t horizon = integer(need(q, "horizon"), "horizon");
    int share = static_cast<int>(integer_or(q, "share", 100));
    json_t* expect = need(q, "expect");
    int status = static_cast<int>(integer(need(expect, "status"), "status"));

    const flexco_snapshot_t& snap = snap_.c();
    CAnswer a = call_c(&snap, partition.c_str(), horizon, share);
    if (a.status != status)
      die("status " + std::to_string(a.status) + ", expected " + std::to_string(status) + " (" +
          a.code + ": " + a.message + ")");

    AvailabilityQuery query{partition, horizon, share};
    AvailabilityResult built = build_availability(snap, query);
    if (status != 200) {
      std::string code = string_or(expect, "code", "");
      if (a.code != code) die("code " + a.code + ", expected " + code);
      std::string has = string_or(expect, "message_has", "");
      if (a.message.find(has) == std::string::npos)
        die("message \"" + a.message + "\" lacks \"" + has + "\"");
      check_error_doc(a.json, a.code, a.message, file_ + ": " + where_);
      if (built.ok()) die("build_availability succeeded");
      if (availability_http_status(built.error().code) != status ||
          built.error().message != a.message)
        die("C++ and C errors differ");
      return;
    }
    if (!a.code.empty() || !a.message.empty()) die("code/message set on success");
    if (!built.ok()) die("build_availability: " + built.error().message);
    const Availability& av = built.value();
    check_invariants(av, file_ + ": " + where_);
    STR_EQ(availability_to_json(av), a.json);

    JsonPtr doc = parse_or_fail(a.json, file_);
    json_t* d = doc.get();
    // Members every answer has, from the query and the snapshot.
    expect_equal(d, "cluster", JsonPtr(json_string(snap_.cluster.c_str())).get());
    expect_equal(d, "snapshot_time", JsonPtr(json_integer(snap_.when)).get());
    expect_equal(d, "share_percent", JsonPtr(json_integer(share)).get());
    if (integer(json_object_get(d, "horizon_end"), "horizon_end") != snap_.when + horizon)
      die("horizon_end is not snapshot_time + horizon");
    // Members the scenario gives.
    for (const char* key : {"partition", "partition_up", "horizon_end"})
      if (json_t* w = json_object_get(expect, key)) expect_equal(d, key, w);
    const char* const triple[] = {"total", "available", "published"};
    for (const char* dim : {"nodes", "cpus"}) {
      json_t* w = json_object_get(expect, dim);
      if (!w) continue;
      json_t* got = json_object_get(d, dim);
      for (std::size_t k = 0; k < 3; ++k) expect_equal(got, triple[k], json_array_get(w, k), dim);
    }
    if (json_t* w = json_object_get(expect, "backfill")) {
      json_t* got = json_object_get(d, "backfill");
      const char* const bf[] = {"last_cycle", "active", "plan_age"};
      for (std::size_t k = 0; k < 3; ++k)
        expect_equal(got, bf[k], json_array_get(w, k), "backfill");
    }
    std::string want_steps, got_steps;
    std::size_t i;
    json_t* v;
    json_array_foreach(need(expect, "steps"), i, v) {
      for (std::size_t k = 0; k < 4; ++k)
        want_steps += std::to_string(integer(json_array_get(v, k), "steps")) + (k < 3 ? ":" : " ");
    }
    json_array_foreach(json_object_get(d, "steps"), i, v) {
      const char* const names[] = {"start", "end", "free_nodes", "free_cpus"};
      for (std::size_t k = 0; k < 4; ++k)
        got_steps +=
            std::to_string(integer(json_object_get(v, names[k]), names[k])) + (k < 3 ? ":" : " ");
    }
    if (got_steps != want_steps)
      die("steps: got [" + got_steps + "], expected [" + want_steps + "]");

    // The wire format reads back to the same availability.
    auto back = availability_from_json(a.json);
    if (!back.ok()) die("availability_from_json: " + back.error().message);
    check_invariants(back.value(), file_ + ": " + where_ + " (read back)");
    if (availability_to_json(back.value()) != a.json) die("read back differs");
  }

  void expect_equal(json_t* obj, const char* key, json_t* want, const char* in = "") {
    json_t* got = json_object_get(obj, key);
    if (got && want && json_equal(got, want)) return;
    char* g = got ? json_dumps(got, JSON_ENCODE_ANY) : nullptr;
    char* w = want ? json_dumps(want, JSON_ENCODE_ANY) : nullptr;
    std::string msg = std::string(in) + (*in ? "." : "") + key + ": got " + (g ? g : "(none)") +
                      ", expected " + (w ? w : "(none)");
    free(g);
    free(w);
    die(msg);
  }

  std::string file_;
  std::string where_ = "file";
  OwnedSnapshot snap_;
  std::map<std::string, std::uint32_t> node_index_;
};

START_TEST(test_golden) {
  ck_assert_msg(!g_case_files.empty(),
                "no availability_cases/*.json found (set FLEXCO_SRCDIR to the source tree)");
  Golden g(g_case_files[static_cast<std::size_t>(_i)]);
  ck_assert_msg(g.run() > 0, "no queries");
}
END_TEST

// ===========================================================================
// A snapshot used by several cases: 3 nodes, a running job, a reservation.

OwnedSnapshot small_cluster() {
  OwnedSnapshot s;
  s.cluster = "alpha";
  s.when = 1700000000;
  s.bf_last_cycle = 1699999940;
  s.nodes = {{"n1", 8, true}, {"n2", 8, true}, {"n3", 16, false}};
  s.parts = {{"batch", true, true, {0, 1, 2}}, {"gpu", false, true, {2}}};
  SnapJob j;
  j.id = 7;
  j.start = s.when - 100;
  j.end = s.when + 600;
  j.partition = "batch";
  j.nodes = {0};
  s.jobs = {j};
  s.resvs = {{"flexco-1", s.when + 300, s.when + 900, {1}}};
  return s;
}

START_TEST(test_capi_round_trip) {
  OwnedSnapshot s = small_cluster();
  CAnswer a = call_c(&s.c(), nullptr, 3600, 100);
  EQ(a.status, 200);
  STR_EQ(a.code, "");
  STR_EQ(a.message, "");
  JsonPtr doc = parse_or_fail(a.json, "round trip");
  json_t* d = doc.get();
  STR_EQ(keys_of(d),
         "cluster,partition,partition_up,snapshot_time,horizon_end,share_percent,backfill,nodes,"
         "cpus,steps");
  STR_EQ(json_string_value(json_object_get(d, "cluster")), "alpha");
  STR_EQ(json_string_value(json_object_get(d, "partition")), "batch");
  ck_assert(json_is_true(json_object_get(d, "partition_up")));
  EQ(json_integer_value(json_object_get(d, "snapshot_time")), 1700000000);
  EQ(json_integer_value(json_object_get(d, "horizon_end")), 1700003600);
  EQ(json_integer_value(json_object_get(d, "share_percent")), 100);
  json_t* bf = json_object_get(d, "backfill");
  STR_EQ(keys_of(bf), "last_cycle,active,plan_age");
  EQ(json_integer_value(json_object_get(bf, "last_cycle")), 1699999940);
  ck_assert(json_is_false(json_object_get(bf, "active")));
  EQ(json_integer_value(json_object_get(bf, "plan_age")), 60);
  for (const char* dim : {"nodes", "cpus"}) {
    json_t* o = json_object_get(d, dim);
    STR_EQ(keys_of(o), "total,available,published");
    json_t* v;
    const char* key;
    json_object_foreach(o, key, v) ck_assert_msg(json_is_integer(v), "%s.%s", dim, key);
  }
  EQ(json_integer_value(json_object_get(json_object_get(d, "nodes"), "total")), 3);
  EQ(json_integer_value(json_object_get(json_object_get(d, "nodes"), "available")), 2);
  EQ(json_integer_value(json_object_get(json_object_get(d, "nodes"), "published")), 3);
  EQ(json_integer_value(json_object_get(json_object_get(d, "cpus"), "total")), 32);
  EQ(json_integer_value(json_object_get(json_object_get(d, "cpus"), "available")), 16);
  EQ(json_integer_value(json_object_get(json_object_get(d, "cpus"), "published")), 32);
  // n3 down; n1 runs until +600 (busy through that second); n2 reserved
  // [+300, +900).
  json_t* steps = json_object_get(d, "steps");
  ck_assert(json_is_array(steps));
  const std::int64_t want[][4] = {
      {0, 300, 1, 8}, {300, 601, 0, 0}, {601, 900, 1, 8}, {900, 3600, 2, 16}};
  EQ(json_array_size(steps), 4);
  for (std::size_t i = 0; i < 4; ++i) {
    json_t* st = json_array_get(steps, i);
    STR_EQ(keys_of(st), "start,end,free_nodes,free_cpus");
    EQ(json_integer_value(json_object_get(st, "start")), 1700000000 + want[i][0]);
    EQ(json_integer_value(json_object_get(st, "end")), 1700000000 + want[i][1]);
    EQ(json_integer_value(json_object_get(st, "free_nodes")), want[i][2]);
    EQ(json_integer_value(json_object_get(st, "free_cpus")), want[i][3]);
  }

  // The C++ reader gives back what build_availability made.
  AvailabilityResult built = build_availability(s.c(), {"", 3600, 100});
  ck_assert(built.ok());
  const Availability& x = built.value();
  auto back = availability_from_json(a.json);
  ck_assert_msg(back.ok(), "%s", back.ok() ? "" : back.error().message.c_str());
  const Availability& y = back.value();
  STR_EQ(y.cluster, x.cluster);
  STR_EQ(y.partition, x.partition);
  ck_assert(y.partition_up == x.partition_up && y.bf_active == x.bf_active);
  EQ(y.when, x.when);
  EQ(y.horizon_end, x.horizon_end);
  EQ(y.bf_last_cycle, x.bf_last_cycle);
  EQ(y.share_percent, x.share_percent);
  EQ(y.nodes_total, x.nodes_total);
  EQ(y.nodes_available, x.nodes_available);
  EQ(y.nodes_published, x.nodes_published);
  EQ(y.cpus_total, x.cpus_total);
  EQ(y.cpus_available, x.cpus_available);
  EQ(y.cpus_published, x.cpus_published);
  EQ(y.steps.size(), x.steps.size());
  for (Time t = x.when; t < x.horizon_end + 10; t += 50) {
    EQ(y.nodes.free_at(t).value(), x.nodes.free_at(t).value());
    EQ(y.cpus.free_at(t).value(), x.cpus.free_at(t).value());
  }
  check_invariants(y, "read back");

  // Read by a clock 20 s behind the cluster's: every time 20 s earlier,
  // the same function of the reader's time.
  auto sh = availability_from_json(a.json, 20);
  ck_assert_msg(sh.ok(), "%s", sh.ok() ? "" : sh.error().message.c_str());
  const Availability& z = sh.value();
  EQ(z.when, x.when - 20);
  EQ(z.horizon_end, x.horizon_end - 20);
  EQ(z.bf_last_cycle, x.bf_last_cycle == 0 ? 0 : x.bf_last_cycle - 20);
  EQ(z.steps.size(), x.steps.size());
  for (std::size_t i = 0; i < z.steps.size(); ++i) {
    EQ(z.steps[i].start, x.steps[i].start - 20);
    EQ(z.steps[i].end, x.steps[i].end - 20);
  }
  for (Time t = x.when; t < x.horizon_end + 10; t += 50) {
    EQ(z.nodes.free_at(t - 20).value(), x.nodes.free_at(t).value());
    EQ(z.cpus.free_at(t - 20).value(), x.cpus.free_at(t).value());
  }
  check_invariants(z, "read back shifted");
  // and by one ahead of it (a negative shift)
  auto ahead = availability_from_json(a.json, -7);
  ck_assert(ahead.ok() && ahead.value().when == x.when + 7);
  // a shift that leaves the range of times is refused, not wrapped
  auto bad = availability_from_json(a.json, x.when + 1);
  ck_assert(!bad.ok());
  HAS(bad.error().message, "clock shift");
}
END_TEST

START_TEST(test_profile_use) {
  // The profiles answer planning questions directly.
  OwnedSnapshot s = small_cluster();
  AvailabilityResult built = build_availability(s.c(), {"batch", 3600, 100});
  ck_assert(built.ok());
  const Availability& a = built.value();
  EQ(a.nodes.earliest_fit(a.when, 100, 1).value(), a.when);
  EQ(a.nodes.earliest_fit(a.when, 100, 2).value(), a.when + 900);
  EQ(a.cpus.earliest_fit(a.when, 400, 8).value(), a.when + 601);
  EQ(a.nodes.earliest_fit(a.when, 100, 3).value(), kNever);  // n3 is down
  // Windows that cross the horizon cannot fit: nothing is promised there.
  EQ(a.nodes.earliest_fit(a.when, 3000, 2).value(), kNever);
  EQ(a.nodes.earliest_fit(a.when, 2700, 2).value(), a.when + 900);
  EQ(a.nodes.next_change_point(a.when + 900), a.horizon_end);
}
END_TEST

START_TEST(test_capi_arguments) {
  OwnedSnapshot s = small_cluster();
  char code[64], err[256];
  char* json = nullptr;

  // NULL snapshot: 500 with an error document.
  int st =
      flexco_profile_json(nullptr, "batch", 60, 100, &json, code, sizeof code, err, sizeof err);
  EQ(st, 500);
  STR_EQ(code, "internal");
  ck_assert(json != nullptr);
  check_error_doc(json, "internal", err, "NULL snap");
  free(json);

  // NULL json_out: still an answer, no crash.
  st = flexco_profile_json(&s.c(), "batch", 60, 100, nullptr, code, sizeof code, err, sizeof err);
  EQ(st, 500);
  HAS(err, "json_out");

  // code/err may be NULL with length 0; "" is the default partition.
  json = nullptr;
  st = flexco_profile_json(&s.c(), "", 60, 100, &json, nullptr, 0, nullptr, 0);
  EQ(st, 200);
  ck_assert(json != nullptr);
  HAS(json, "\"partition\":\"batch\"");
  free(json);

  // Truncation keeps the buffers NUL-terminated.
  char c4[4], e8[8];
  json = nullptr;
  st = flexco_profile_json(&s.c(), "nope", 60, 100, &json, c4, sizeof c4, e8, sizeof e8);
  EQ(st, 404);
  STR_EQ(c4, "unk");
  STR_EQ(e8, "build_a");
  check_error_doc(json, "unknown_partition",
                  "build_availability: no partition named 'nope' (partitions: batch, gpu)",
                  "trunc");
  free(json);

  // A partition name that is not UTF-8 still yields valid JSON.
  json = nullptr;
  st = flexco_profile_json(&s.c(), "b\xff\"x", 60, 100, &json, code, sizeof code, err, sizeof err);
  EQ(st, 404);
  check_error_doc(
      json, "unknown_partition",
      "build_availability: no partition named 'b\xEF\xBF\xBD\"x' (partitions: batch, gpu)", "utf8");
  free(json);
}
END_TEST

START_TEST(test_error_json) {
  char* j = flexco_error_json("bad_parameter", "horizon: \"x\"\n\\ too big");
  ck_assert(j != nullptr);
  STR_EQ(
      j,
      "{\"error\":{\"code\":\"bad_parameter\",\"message\":\"horizon: \\\"x\\\"\\n\\\\ too big\"}}");
  check_error_doc(j, "bad_parameter", "horizon: \"x\"\n\\ too big", "escapes");
  free(j);

  j = flexco_error_json(nullptr, nullptr);
  ck_assert(j != nullptr);
  check_error_doc(j, "", "", "NULLs");
  free(j);

  j = flexco_error_json("x", "caf\xc3\xa9 \xc0\xaf end");  // é kept, overlong '/' replaced
  check_error_doc(j, "x", "caf\xc3\xa9 \xEF\xBF\xBD\xEF\xBF\xBD end", "utf8");
  free(j);

  STR_EQ(error_json("not_found", "no such endpoint"),
         "{\"error\":{\"code\":\"not_found\",\"message\":\"no such endpoint\"}}");
  auto e = error_from_json(error_json("c", "m"));
  ck_assert(e.ok());
  STR_EQ(e.value().code, "c");
  STR_EQ(e.value().message, "m");

  const struct {
    const char* doc;
    const char* has;
  } bad[] = {
      {"", "error_from_json: document:"},
      {"[]", "error_from_json: document: not a JSON object"},
      {"{}", "error_from_json: error: missing"},
      {"{\"error\":1}", "error_from_json: error: not an object"},
      {"{\"error\":{\"code\":\"c\"}}", "error_from_json: error.message: missing"},
      {"{\"error\":{\"code\":1,\"message\":\"m\"}}", "error_from_json: error.code: not a string"},
      {"{\"error\":{\"code\":\"a\",\"code\":\"b\",\"message\":\"m\"}}", "duplicate"},
  };
  for (const auto& b : bad) {
    auto r = error_from_json(b.doc);
    ck_assert_msg(!r.ok(), "accepted %s", b.doc);
    EQ(static_cast<int>(r.error().code), static_cast<int>(Errc::kInvalidArgument));
    HAS(r.error().message, b.has);
  }
}
END_TEST

START_TEST(test_utf8_sanitize) {
  const std::string R = "\xEF\xBF\xBD";
  const struct {
    std::string in, out;
  } cases[] = {
      {"", ""},
      {"plain ascii", "plain ascii"},
      {std::string("nul\0in", 6), std::string("nul\0in", 6)},
      {"\xc3\xa9", "\xc3\xa9"},                  // U+00E9
      {"\xe2\x82\xac", "\xe2\x82\xac"},          // U+20AC
      {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},  // U+1F600
      {"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},  // U+10FFFF
      {"\x80", R},                               // lone continuation
      {"\xc3", R},                               // truncated
      {"\xc3(", R + "("},                        // bad continuation
      {"\xc0\xaf", R + R},                       // overlong
      {"\xe0\x80\xaf", R + R + R},               // overlong, 3 bytes
      {"\xed\xa0\x80", R + R + R},               // surrogate U+D800
      {"\xf4\x90\x80\x80", R + R + R + R},       // above U+10FFFF
      {"\xff", R},
      {"a\xe2\x82", "a" + R + R},
  };
  for (const auto& c : cases) {
    std::string got = utf8_sanitize(c.in);
    ck_assert_msg(got == c.out, "utf8_sanitize of %zu bytes gave %zu bytes", c.in.size(),
                  got.size());
  }
}
END_TEST

// ===========================================================================
// Invalid snapshots: 500 invalid_snapshot with a precise message; parts of
// the snapshot that are not read (a pending job's node list) do not matter.

START_TEST(test_invalid_snapshot) {
  OwnedSnapshot base = small_cluster();
  const flexco_snapshot_t& good = base.c();
  std::vector<std::uint32_t> idx(good.node_idx, good.node_idx + good.node_idx_count);
  std::vector<flexco_snap_job_t> jobs(good.jobs, good.jobs + good.job_count);
  std::vector<flexco_snap_resv_t> resvs(good.resvs, good.resvs + good.resv_count);
  std::vector<flexco_snap_part_t> parts(good.parts, good.parts + good.part_count);

  struct Case {
    const char* name;
    void (*mutate)(flexco_snapshot_t&, std::vector<std::uint32_t>&, std::vector<flexco_snap_job_t>&,
                   std::vector<flexco_snap_resv_t>&, std::vector<flexco_snap_part_t>&);
    int status;
    const char* has;
  };
  const Case cases[] = {
      {"partition node index out of range", [](auto&, auto& i, auto&, auto&, auto&) { i[0] = 3; },
       500, "partition 'batch': node index 3 out of range (3 nodes)"},
      {"partition range past node_idx",
       [](auto&, auto&, auto&, auto&, auto& p) { p[0].node_cnt = 100; }, 500,
       "partition 'batch': node list [0, 100) lies outside node_idx (6 entries)"},
      {"job range past node_idx", [](auto&, auto&, auto& j, auto&, auto&) { j[0].node_off = 6; },
       500, "job 7: node list [6, 7) lies outside node_idx (6 entries)"},
      {"job node index out of range",
       [](auto&, auto& i, auto& j, auto&, auto&) { i[j[0].node_off] = 42; }, 500,
       "job 7: node index 42 out of range"},
      {"reservation node index out of range",
       [](auto&, auto& i, auto&, auto& r, auto&) { i[r[0].node_off] = 9; }, 500,
       "reservation 'flexco-1': node index 9 out of range"},
      {"reservation without a name",
       [](auto&, auto&, auto&, auto& r, auto&) {
         r[0].name = nullptr;
         r[0].node_off = 77;
       },
       500, "reservation #0: node list"},
      {"unknown job kind", [](auto&, auto&, auto& j, auto&, auto&) { j[0].kind = 9; }, 500,
       "job 7 has unknown kind 9"},
      {"negative snapshot time", [](auto& s, auto&, auto&, auto&, auto&) { s.when = -1; }, 500,
       "snapshot time -1 out of range"},
      {"snapshot time at the end of time",
       [](auto& s, auto&, auto&, auto&, auto&) { s.when = FLEXCO_SNAP_FOREVER - 10; }, 500,
       "out of range"},
      {"nodes NULL", [](auto& s, auto&, auto&, auto&, auto&) { s.nodes = nullptr; }, 500,
       "nodes is NULL but node_count is 3"},
      {"node_idx NULL", [](auto& s, auto&, auto&, auto&, auto&) { s.node_idx = nullptr; }, 500,
       "node_idx is NULL but node_idx_count is 6"},
      {"parts NULL", [](auto& s, auto&, auto&, auto&, auto&) { s.parts = nullptr; }, 500,
       "parts is NULL but part_count is 2"},
      {"jobs NULL", [](auto& s, auto&, auto&, auto&, auto&) { s.jobs = nullptr; }, 500,
       "jobs is NULL but job_count is 1"},
      {"resvs NULL", [](auto& s, auto&, auto&, auto&, auto&) { s.resvs = nullptr; }, 500,
       "resvs is NULL but resv_count is 1"},
      {"partition without a name", [](auto&, auto&, auto&, auto&, auto& p) { p[1].name = nullptr; },
       500, "partition #1 has no name"},
      {"pending job with a garbage node list is not read",
       [](auto&, auto&, auto& j, auto&, auto&) {
         j[0].kind = FLEXCO_JOB_PENDING;
         j[0].node_off = 1000000;
         j[0].node_cnt = 7;
       },
       200, ""},
      {"no nodes, no partitions at all",
       [](auto& s, auto&, auto&, auto&, auto&) { s = flexco_snapshot_t{}; }, 404,
       "no default partition; name one (partitions: none)"},
  };
  for (const Case& c : cases) {
    flexco_snapshot_t snap = good;
    std::vector<std::uint32_t> i2 = idx;
    std::vector<flexco_snap_job_t> j2 = jobs;
    std::vector<flexco_snap_resv_t> r2 = resvs;
    std::vector<flexco_snap_part_t> p2 = parts;
    snap.node_idx = i2.data();
    snap.jobs = j2.data();
    snap.resvs = r2.data();
    snap.parts = p2.data();
    c.mutate(snap, i2, j2, r2, p2);
    CAnswer a = call_c(&snap, "", 3600, 100);
    ck_assert_msg(a.status == c.status, "%s: status %d (%s), expected %d", c.name, a.status,
                  a.message.c_str(), c.status);
    if (c.status == 200) continue;
    ck_assert_msg(a.message.find(c.has) != std::string::npos, "%s: message \"%s\" lacks \"%s\"",
                  c.name, a.message.c_str(), c.has);
    ck_assert_msg(a.message.rfind("build_availability: ", 0) == 0, "%s: message prefix", c.name);
    check_error_doc(a.json, a.code, a.message, c.name);
    if (c.status == 500) STR_EQ(a.code, "invalid_snapshot");
  }
}
END_TEST

START_TEST(test_duplicate_partition_nodes) {
  // A node listed twice in a partition counts once.
  OwnedSnapshot s;
  s.nodes = {{"n1", 4, true}, {"n2", 2, true}};
  s.parts = {{"p", true, true, {0, 1, 0, 1, 1}}};
  SnapJob j;
  j.id = 1;
  j.start = 0;
  j.end = s.when + 10;
  j.nodes = {1, 1};
  s.jobs = {j};
  AvailabilityResult r = build_availability(s.c(), {"p", 20, 100});
  ck_assert(r.ok());
  EQ(r.value().nodes_total, 2);
  EQ(r.value().cpus_total, 6);
  EQ(r.value().steps.size(), 2);
  EQ(r.value().steps[0].free_nodes, 1);
  EQ(r.value().steps[0].free_cpus, 4);
  EQ(r.value().steps[1].free_nodes, 2);
  EQ(r.value().steps[1].free_cpus, 6);
  check_invariants(r.value(), "duplicates");
}
END_TEST

START_TEST(test_cpu_overflow) {
  // More CPUs than a profile can hold is an invalid snapshot, not a wrap:
  // 2^20 + 2 nodes of 2^32 - 1 CPUs exceed kMaxAmount = 2^52.
  const std::uint32_t n = (1u << 20) + 2;
  std::vector<flexco_snap_node_t> nodes(n, flexco_snap_node_t{"x", 0xffffffffu, 1});
  std::vector<std::uint32_t> idx(n);
  for (std::uint32_t i = 0; i < n; ++i) idx[i] = i;
  flexco_snap_part_t part{};
  part.name = "p";
  part.is_default = 1;
  part.up = 1;
  part.node_cnt = n;
  flexco_snapshot_t snap{};
  snap.when = 1000;
  snap.nodes = nodes.data();
  snap.node_count = n;
  snap.parts = &part;
  snap.part_count = 1;
  snap.node_idx = idx.data();
  snap.node_idx_count = n;
  CAnswer a = call_c(&snap, "p", 60, 100);
  EQ(a.status, 500);
  STR_EQ(a.code, "invalid_snapshot");
  HAS(a.message, "partition 'p' has more than 4503599627370496 CPUs");
  // 2^20 nodes stay just below the limit.
  snap.node_count = part.node_cnt = snap.node_idx_count = 1u << 20;
  a = call_c(&snap, "p", 60, 100);
  EQ(a.status, 200);
}
END_TEST

// ===========================================================================
// The wire reader rejects what the writer can never produce.

START_TEST(test_from_json_rejects) {
  OwnedSnapshot s = small_cluster();
  AvailabilityResult built = build_availability(s.c(), {"batch", 3600, 100});
  ck_assert(built.ok());
  ck_assert(built.value().steps.size() == 4);
  const std::string good = availability_to_json(built.value());
  ck_assert(availability_from_json(good).ok());

  struct Case {
    const char* name;
    void (*mutate)(json_t*);
    const char* has;
  };
  const Case cases[] = {
      {"cluster missing", [](json_t* d) { json_object_del(d, "cluster"); },
       "availability_from_json: cluster: missing"},
      {"partition not a string",
       [](json_t* d) { json_object_set_new(d, "partition", json_integer(3)); },
       "partition: not a string"},
      {"snapshot_time a real",
       [](json_t* d) { json_object_set_new(d, "snapshot_time", json_real(1.5)); },
       "snapshot_time: not an integer"},
      {"negative time",
       [](json_t* d) { json_object_set_new(d, "snapshot_time", json_integer(-1)); },
       "snapshot_time: -1 outside [0, "},
      {"share 0", [](json_t* d) { json_object_set_new(d, "share_percent", json_integer(0)); },
       "share_percent: 0 outside [1, 100]"},
      {"backfill not an object", [](json_t* d) { json_object_set_new(d, "backfill", json_true()); },
       "backfill: not an object"},
      {"backfill.active missing",
       [](json_t* d) { json_object_del(json_object_get(d, "backfill"), "active"); },
       "backfill.active: missing"},
      {"partition_up not a boolean",
       [](json_t* d) { json_object_set_new(d, "partition_up", json_integer(1)); },
       "partition_up: not a boolean"},
      {"published above total",
       [](json_t* d) {
         json_object_set_new(json_object_get(d, "nodes"), "published", json_integer(4));
       },
       "nodes.published: exceeds total"},
      {"available above total",
       [](json_t* d) {
         json_object_set_new(json_object_get(d, "cpus"), "available", json_integer(33));
       },
       "cpus.available: exceeds total"},
      {"horizon before snapshot",
       [](json_t* d) { json_object_set_new(d, "horizon_end", json_integer(1700000000)); },
       "horizon_end: not after snapshot_time"},
      {"steps empty", [](json_t* d) { json_array_clear(json_object_get(d, "steps")); },
       "steps: empty"},
      {"steps not an array", [](json_t* d) { json_object_set_new(d, "steps", json_object()); },
       "steps: not an array"},
      {"step not an object",
       [](json_t* d) { json_array_set_new(json_object_get(d, "steps"), 0, json_integer(0)); },
       "steps[0]: not an object"},
      {"gap between steps",
       [](json_t* d) {
         json_t* st = json_array_get(json_object_get(d, "steps"), 1);
         json_object_set_new(st, "start",
                             json_integer(json_integer_value(json_object_get(st, "start")) + 1));
       },
       "steps[1].start: "},
      {"free above published",
       [](json_t* d) {
         json_object_set_new(json_array_get(json_object_get(d, "steps"), 0), "free_cpus",
                             json_integer(33));
       },
       "steps[0].free_cpus: 33 outside [0, 32]"},
      {"last step short of the horizon",
       [](json_t* d) { json_object_set_new(d, "horizon_end", json_integer(1700009999)); },
       "steps: last end 1700003600 is not horizon_end 1700009999"},
  };
  for (const Case& c : cases) {
    JsonPtr doc = parse_or_fail(good, c.name);
    c.mutate(doc.get());
    char* text = json_dumps(doc.get(), JSON_COMPACT);
    auto r = availability_from_json(text);
    free(text);
    ck_assert_msg(!r.ok(), "%s: accepted", c.name);
    ck_assert_msg(r.error().message.find(c.has) != std::string::npos, "%s: \"%s\" lacks \"%s\"",
                  c.name, r.error().message.c_str(), c.has);
  }
  auto r = availability_from_json("{\"cluster\": ");
  ck_assert(!r.ok());
  HAS(r.error().message, "availability_from_json: document: ");
  HAS(r.error().message, "(line 1, column");

  // Unknown members are ignored.
  JsonPtr doc = parse_or_fail(good, "extra");
  json_object_set_new(doc.get(), "future_member", json_string("x"));
  char* text = json_dumps(doc.get(), JSON_COMPACT);
  ck_assert(availability_from_json(text).ok());
  free(text);
}
END_TEST

START_TEST(test_profiles_from_steps) {
  EQ(profiles_from_steps({{0, 10, 1, 1}}, 1, 1).ok(), 1);
  const struct {
    std::vector<Step> steps;
    Amount n, c;
    const char* has;
  } bad[] = {
      {{}, 1, 1, "no steps"},
      {{{0, 10, 1, 1}}, -1, 1, "capacity out of range"},
      {{{0, 10, 1, 1}}, 1, kMaxAmount + 1, "capacity out of range"},
      {{{-5, 10, 1, 1}}, 1, 1, "first step starts before 0"},
      {{{0, 0, 1, 1}}, 1, 1, "step 0: empty or endless [0, 0)"},
      {{{0, kForever, 1, 1}}, 1, 1, "step 0: empty or endless"},
      {{{0, 10, 1, 1}, {11, 20, 1, 1}},
       1,
       1,
       "step 1: starts at 11, not where the previous one ends (10)"},
      {{{0, 10, 2, 1}}, 1, 1, "step 0: free_nodes 2 outside [0, 1]"},
      {{{0, 10, 1, -1}}, 1, 1, "step 0: free_cpus -1 outside [0, 1]"},
  };
  for (const auto& b : bad) {
    auto r = profiles_from_steps(b.steps, b.n, b.c);
    ck_assert_msg(!r.ok(), "accepted (%s)", b.has);
    HAS(r.error().message, std::string("profiles_from_steps: ") + b.has);
  }
}
END_TEST

START_TEST(test_errc_names) {
  STR_EQ(availability_errc_name(AvailabilityErrc::kBadParameter), "bad_parameter");
  STR_EQ(availability_errc_name(AvailabilityErrc::kUnknownPartition), "unknown_partition");
  STR_EQ(availability_errc_name(AvailabilityErrc::kInvalidSnapshot), "invalid_snapshot");
  EQ(availability_http_status(AvailabilityErrc::kBadParameter), 400);
  EQ(availability_http_status(AvailabilityErrc::kUnknownPartition), 404);
  EQ(availability_http_status(AvailabilityErrc::kInvalidSnapshot), 500);
}
END_TEST

// ===========================================================================
// Randomized cross-check against a brute-force count, second by second.

struct Rng {
  std::mt19937_64 g;
  explicit Rng(std::uint64_t seed) : g(seed) {}
  // Uniform enough for tests, and the same on every standard library.
  std::int64_t in(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return in(1, 100) <= percent; }
};

std::vector<std::uint32_t> random_nodes(Rng& r, std::uint32_t n, int max) {
  std::vector<std::uint32_t> out;
  for (std::int64_t k = r.in(0, max); k > 0; --k)
    out.push_back(static_cast<std::uint32_t>(r.in(0, n - 1)));
  return out;
}

OwnedSnapshot random_snapshot(Rng& r) {
  OwnedSnapshot s;
  s.cluster = "rand";
  s.when = r.in(0, 2000000000);
  s.bf_last_cycle = r.chance(20) ? 0 : s.when - r.in(-5, 100);
  s.bf_active = r.chance(30);
  auto n = static_cast<std::uint32_t>(r.in(1, 8));
  for (std::uint32_t i = 0; i < n; ++i)
    s.nodes.push_back(
        {"n" + std::to_string(i), static_cast<std::uint32_t>(r.in(0, 16)), r.chance(80)});
  for (std::int64_t p = r.in(1, 3); p > 0; --p) {
    SnapPart part{"p" + std::to_string(p), r.chance(50), r.chance(90), random_nodes(r, n, 10)};
    s.parts.push_back(part);
  }
  auto rel = [&](std::int64_t lo, std::int64_t hi) { return s.when + r.in(lo, hi); };
  for (std::int64_t k = r.in(0, 12); k > 0; --k) {
    SnapJob j;
    j.id = static_cast<std::uint32_t>(k);
    std::int64_t kind = r.in(1, 10);
    j.kind = kind <= 5 ? FLEXCO_JOB_RUNNING : kind <= 8 ? FLEXCO_JOB_PLANNED : FLEXCO_JOB_PENDING;
    j.start = rel(-80, 150);
    j.end = r.chance(10) ? FLEXCO_SNAP_FOREVER : rel(-80, 200);
    j.nodes = random_nodes(r, n, 3);
    s.jobs.push_back(j);
  }
  for (std::int64_t k = r.in(0, 4); k > 0; --k) {
    SnapResv v{"r" + std::to_string(k), rel(-80, 150),
               r.chance(10) ? FLEXCO_SNAP_FOREVER : rel(-80, 200), random_nodes(r, n, 3)};
    s.resvs.push_back(v);
  }
  return s;
}

// Published (nodes, cpus) free at each second of [when, when + horizon).
std::vector<std::pair<Amount, Amount>> brute_force(const OwnedSnapshot& s, const SnapPart& part,
                                                   Duration horizon, int share) {
  std::vector<std::uint32_t> members;
  for (std::uint32_t n : part.nodes)
    if (std::find(members.begin(), members.end(), n) == members.end()) members.push_back(n);
  Amount total = static_cast<Amount>(members.size()), cpus_total = 0;
  for (std::uint32_t n : members) cpus_total += s.nodes[n].cpus;
  Amount pub_n = total * share / 100, pub_c = cpus_total * share / 100;
  auto on = [](const std::vector<std::uint32_t>& v, std::uint32_t n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  std::vector<std::pair<Amount, Amount>> out;
  for (Time t = s.when; t < s.when + horizon; ++t) {
    Amount fn = 0, fc = 0;
    for (std::uint32_t n : members) {
      bool busy = !s.nodes[n].available;
      for (const SnapJob& j : s.jobs) {
        if (!on(j.nodes, n)) continue;
        if (j.kind == FLEXCO_JOB_RUNNING) {
          // busy through its end second (Slurm's reservation rule)
          Time end = j.end == FLEXCO_SNAP_FOREVER ? j.end
                     : j.end >= s.when         ? j.end + 1
                                               : s.when + 1;
          busy |= t < end;
        } else if (j.kind == FLEXCO_JOB_PLANNED) {
          busy |= j.start <= t && t < j.end;
        }
      }
      for (const SnapResv& v : s.resvs)
        if (on(v.nodes, n)) busy |= v.start <= t && t < v.end;
      if (!busy) {
        fn += 1;
        fc += s.nodes[n].cpus;
      }
    }
    if (!part.up)
      out.emplace_back(0, 0);
    else
      out.emplace_back(std::max<Amount>(0, fn - (total - pub_n)),
                       std::max<Amount>(0, fc - (cpus_total - pub_c)));
  }
  return out;
}

START_TEST(test_random) {
  Rng r(0x5eed0000u + static_cast<std::uint64_t>(_i));
  for (int iter = 0; iter < 150; ++iter) {
    OwnedSnapshot s = random_snapshot(r);
    Duration horizon = r.in(1, 250);
    int share = r.chance(50) ? 100 : static_cast<int>(r.in(1, 100));
    std::size_t pi =
        static_cast<std::size_t>(r.in(0, static_cast<std::int64_t>(s.parts.size()) - 1));
    bool by_default = r.chance(30);
    std::string name = by_default ? "" : s.parts[pi].name;
    const SnapPart* part = nullptr;
    for (const SnapPart& p : s.parts) {
      if (by_default ? p.is_default : p.name == name) {
        part = &p;
        break;
      }
    }
    std::string what = "seed " + std::to_string(_i) + " iteration " + std::to_string(iter);
    AvailabilityResult res = build_availability(s.c(), {name, horizon, share});
    if (part == nullptr) {
      ck_assert_msg(!res.ok() && res.error().code == AvailabilityErrc::kUnknownPartition,
                    "%s: expected 404", what.c_str());
      continue;
    }
    ck_assert_msg(res.ok(), "%s: %s", what.c_str(), res.ok() ? "" : res.error().message.c_str());
    const Availability& a = res.value();
    check_invariants(a, what);
    auto want = brute_force(s, *part, horizon, share);
    std::size_t si = 0;
    for (Time t = s.when; t < s.when + horizon; ++t) {
      while (a.steps[si].end <= t) ++si;
      const auto& w = want[static_cast<std::size_t>(t - s.when)];
      ck_assert_msg(a.steps[si].free_nodes == w.first && a.steps[si].free_cpus == w.second,
                    "%s: at when+%" PRId64 ": (%" PRId64 ", %" PRId64 "), brute force (%" PRId64
                    ", %" PRId64 ")",
                    what.c_str(), t - s.when, a.steps[si].free_nodes, a.steps[si].free_cpus,
                    w.first, w.second);
      EQ(a.nodes.free_at(t).value(), w.first);
      EQ(a.cpus.free_at(t).value(), w.second);
    }
    // Through the C API and back.
    CAnswer c = call_c(&s.c(), name.c_str(), horizon, share);
    EQ(c.status, 200);
    STR_EQ(c.json, availability_to_json(a));
    auto back = availability_from_json(c.json);
    ck_assert_msg(back.ok(), "%s: read back: %s", what.c_str(),
                  back.ok() ? "" : back.error().message.c_str());
    STR_EQ(availability_to_json(back.value()), c.json);
  }
}
END_TEST

START_TEST(test_large) {
  // A big cluster: invariants hold and the step count stays linear.
  Rng r(42);
  OwnedSnapshot s;
  const std::uint32_t n = 4000;
  SnapPart all{"all", true, true, {}};
  for (std::uint32_t i = 0; i < n; ++i) {
    s.nodes.push_back(
        {"n" + std::to_string(i), static_cast<std::uint32_t>(r.in(1, 128)), r.chance(97)});
    all.nodes.push_back(i);
  }
  s.parts = {all};
  for (std::uint32_t k = 0; k < 20000; ++k) {
    SnapJob j;
    j.id = k;
    j.kind = k % 3 == 0 ? FLEXCO_JOB_RUNNING : FLEXCO_JOB_PLANNED;
    j.start = s.when + r.in(-3600, 86400);
    j.end = j.start + r.in(60, 86400);
    for (std::int64_t c = r.in(1, 8); c > 0; --c)
      j.nodes.push_back(static_cast<std::uint32_t>(r.in(0, n - 1)));
    s.jobs.push_back(j);
  }
  for (std::uint32_t k = 0; k < 200; ++k) {
    SnapResv v{"r" + std::to_string(k), s.when + r.in(0, 86400), 0, {}};
    v.end = v.start + r.in(600, 7200);
    for (std::int64_t c = r.in(1, 32); c > 0; --c)
      v.nodes.push_back(static_cast<std::uint32_t>(r.in(0, n - 1)));
    s.resvs.push_back(v);
  }
  AvailabilityResult res = build_availability(s.c(), {"", 7 * 86400, 80});
  ck_assert(res.ok());
  check_invariants(res.value(), "large");
  ck_assert(res.value().steps.size() <= 2 * (20000 * 8 + 200 * 32) + 1);
  CAnswer c = call_c(&s.c(), "all", 7 * 86400, 80);
  EQ(c.status, 200);
  ck_assert(availability_from_json(c.json).ok());
}
END_TEST

// ===========================================================================

Suite* availability_suite() {
  Suite* s = suite_create("availability");
  TCase* tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_capi_round_trip);
  tcase_add_test(tc, test_profile_use);
  tcase_add_test(tc, test_capi_arguments);
  tcase_add_test(tc, test_error_json);
  tcase_add_test(tc, test_utf8_sanitize);
  tcase_add_test(tc, test_invalid_snapshot);
  tcase_add_test(tc, test_duplicate_partition_nodes);
  tcase_add_test(tc, test_cpu_overflow);
  tcase_add_test(tc, test_from_json_rejects);
  tcase_add_test(tc, test_profiles_from_steps);
  tcase_add_test(tc, test_errc_names);
  suite_add_tcase(s, tc);

  TCase* golden = tcase_create("golden");
  // At least one iteration, so that a missing directory fails loudly.
  tcase_add_loop_test(golden, test_golden, 0,
                      static_cast<int>(std::max<std::size_t>(g_case_files.size(), 1)));
  suite_add_tcase(s, golden);

  TCase* random = tcase_create("random");
  tcase_set_timeout(random, 600);
  tcase_add_loop_test(random, test_random, 0, 4);
  tcase_add_test(random, test_large);
  suite_add_tcase(s, random);
  return s;
}

}  // namespace

int main() {
  g_case_files = list_cases(case_dir());
  SRunner* sr = srunner_create(availability_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
