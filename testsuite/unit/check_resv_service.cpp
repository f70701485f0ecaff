// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/resv_service through its C interface
// (service/capi_resv_service.h), the plugin's reservation records: the
// state machine through create, confirm, modify and delete; DaemonUsers
// and privacy; Idempotency-Keys; deadlines, ends and deletions outside
// FlexCo; orphans with a current state, adoption with an older or lost
// one; takeover and hand-back; failing saves at every save point; crashes
// between the write-ahead save and Slurm; part-job events; ids; and the
// statistics -- on a fake host (an in-memory Slurm, a fake clock, a fake
// state-file store with switchable failures), without slurmctld.

#include <jansson.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/capi_profile.h"
#include "service/capi_resv_service.h"

#include <check.h>

#include "check_main.hpp"

namespace {

constexpr std::int64_t kT0 = 1796000000;
constexpr std::uint32_t kDaemon = 500, kAlice = 1001, kBob = 1002;
constexpr std::uint32_t kNoUid = UINT32_MAX;

// ---------------------------------------------------------------------------
// the fake host

struct SResv {
  std::optional<std::string> users;  // none: no Users=
  std::uint32_t uid = kNoUid;
  std::uint32_t nodes = 0;
  std::string node_list;
  std::optional<std::string> partition;
  std::int64_t start = 0, end = 0;
};

struct SJob {
  std::uint64_t resv = 0;
  std::uint32_t uid = 0;
  int phase = FLEXCO_RSVC_PJ_PENDING;
  bool ran = false;
  std::int64_t submitted = 0;
  bool held = false, admin_held = false;
  std::uint32_t nodes = 0, minutes = 0;
  std::optional<std::string> partition;
};

struct Published {
  std::string type;
  std::uint32_t job_id = 0, uid = 0;
  std::string fields;
};

struct UpdateCall {
  std::uint64_t id = 0;
  std::int64_t cur_start = 0, cur_end = 0;
  std::uint32_t cur_nodes = 0;
  std::int64_t start = 0, end = 0;
  std::uint32_t nodes = 0;
};

struct Fake {
  Fake();
  Fake(const Fake&) = delete;
  Fake& operator=(const Fake&) = delete;

  flexco_rsvc_host_t host{};
  // the clock and the controller
  std::int64_t now = kT0;
  bool in_charge = true;
  // Slurm
  std::map<std::uint64_t, SResv> resvs;
  std::map<std::uint32_t, SJob> jobs;
  std::uint32_t next_job = 7001;
  int create_rc = FLEXCO_RSVC_OK, update_rc = FLEXCO_RSVC_OK, remove_rc = FLEXCO_RSVC_OK,
      submit_rc = FLEXCO_RSVC_OK;
  std::uint32_t give_nodes = 0;  // not 0: Slurm reserves at most this many
  int creates = 0, updates = 0, removes = 0, submits = 0, releases = 0, job_cancels = 0;
  int cancel_rc = FLEXCO_RSVC_OK;
  std::vector<std::uint64_t> removed;
  std::vector<bool> removed_orphan;
  std::vector<std::uint32_t> cancelled;
  std::vector<UpdateCall> update_calls;
  // admission
  int admit_status = 200;
  bool admit_low_fit = false;
  int admits = 0;
  // events
  bool publish_ok = true;
  int publish_tries = 0;
  std::vector<Published> published;
  // the state file
  std::optional<std::string> current, prev;
  std::vector<std::string> saved_texts;  // every successful save, in order
  int save_errno = 0;                    // 0: saves succeed
  std::deque<int> save_script;           // the next saves' errno (0: ok) first
  int save_attempts = 0, saves_ok = 0, loads = 0;
  std::vector<std::string> log;

  // a reservation made by hand (scontrol create reservation=flexco_<id>)
  void hand_made(std::uint64_t id, const char* users, std::uint32_t uid, std::uint32_t nodes,
                 std::int64_t start, std::int64_t end) {
    SResv r;
    r.users = users != nullptr ? std::optional<std::string>(users) : std::nullopt;
    r.uid = uid;
    r.nodes = nodes;
    r.node_list = "h[1-" + std::to_string(nodes) + "]";
    r.start = start;
    r.end = end;
    resvs[id] = r;
  }
  void job_in(std::uint32_t job_id, std::uint64_t resv, std::uint32_t uid, int phase) {
    SJob j;
    j.resv = resv;
    j.uid = uid;
    j.phase = phase;
    j.ran = phase != FLEXCO_RSVC_PJ_PENDING;
    j.submitted = now - 30;
    jobs[job_id] = j;
  }
  bool was_removed(std::uint64_t id) const {
    for (auto x : removed)
      if (x == id) return true;
    return false;
  }
};

Fake* F(void* a) { return static_cast<Fake*>(a); }

bool passwd(const char* user, std::uint32_t* uid) {
  static const std::map<std::string, std::uint32_t> kPasswd = {
      {"root", 0}, {"daemon", 1}, {"flexco", kDaemon}, {"alice", kAlice},
      {"bob", kBob}, {"slurm", 64030}};
  if (user == nullptr) return false;
  auto it = kPasswd.find(user);
  if (it == kPasswd.end()) return false;
  *uid = it->second;
  return true;
}

const char* phase_name(int phase) {
  switch (phase) {
    case FLEXCO_RSVC_PJ_PENDING:
      return "PENDING";
    case FLEXCO_RSVC_PJ_RUNNING:
      return "RUNNING";
    default:
      return "COMPLETED";
  }
}

void h_log(void* a, int level, const char* msg) {
  F(a)->log.push_back(std::to_string(level) + " " + msg);
}
std::int64_t h_now(void* a) { return F(a)->now; }
bool h_in_charge(void* a) { return F(a)->in_charge; }
bool h_user_uid(void*, const char* user, std::uint32_t* uid) { return passwd(user, uid); }

int h_admit(void* a, const char*, std::int64_t, std::int64_t, std::uint32_t, char** json_out,
            bool* low_fit) {
  Fake* f = F(a);
  f->admits++;
  if (f->admit_status == 200) return 200;
  *json_out = flexco_error_json(f->admit_low_fit ? "low_fit" : "not_available",
                                "fake admission: refused");
  *low_fit = f->admit_low_fit;
  return f->admit_status;
}

int h_create(void* a, std::uint64_t id, const char* user, std::uint32_t nodes,
             const char* partition, std::int64_t start, std::int64_t end, char** node_list,
             std::uint32_t* got, char* why, std::size_t why_len) {
  Fake* f = F(a);
  f->creates++;
  if (f->create_rc != FLEXCO_RSVC_OK) {
    std::snprintf(why, why_len, "fake: %s",
                  f->create_rc == FLEXCO_RSVC_BUSY ? "Requested nodes are busy" : "refused");
    return f->create_rc;
  }
  if (f->resvs.count(id) != 0) {
    std::snprintf(why, why_len, "Duplicate reservation name");
    return FLEXCO_RSVC_REFUSED;
  }
  SResv r;
  if (user != nullptr) r.users = user;
  if (!passwd(user, &r.uid)) r.uid = kNoUid;
  r.nodes = f->give_nodes != 0 && f->give_nodes < nodes ? f->give_nodes : nodes;
  r.node_list = "c" + std::to_string(id) + "n[1-" + std::to_string(r.nodes) + "]";
  if (partition != nullptr) r.partition = partition;
  r.start = start;
  r.end = end;
  f->resvs[id] = r;
  *node_list = strdup(r.node_list.c_str());
  *got = r.nodes;
  return FLEXCO_RSVC_OK;
}

int h_update(void* a, std::uint64_t id, std::int64_t cur_start, std::int64_t cur_end,
             std::uint32_t cur_nodes, std::int64_t start, std::int64_t end, std::uint32_t nodes,
             char** node_list, std::uint32_t* got, char* why, std::size_t why_len) {
  Fake* f = F(a);
  f->updates++;
  f->update_calls.push_back(UpdateCall{id, cur_start, cur_end, cur_nodes, start, end, nodes});
  auto it = f->resvs.find(id);
  if (it == f->resvs.end()) {
    std::snprintf(why, why_len, "Invalid reservation name");
    return FLEXCO_RSVC_REFUSED;
  }
  if (f->update_rc != FLEXCO_RSVC_OK) {
    std::snprintf(why, why_len, "fake: refused");
    return f->update_rc;
  }
  SResv& r = it->second;
  r.start = start;
  r.end = end;
  // short once: the nodes it held are still there for a put-back
  r.nodes = f->give_nodes != 0 && f->give_nodes < nodes ? f->give_nodes : nodes;
  f->give_nodes = 0;
  r.node_list = "c" + std::to_string(id) + "n[1-" + std::to_string(r.nodes) + "]";
  *node_list = strdup(r.node_list.c_str());
  *got = r.nodes;
  return FLEXCO_RSVC_OK;
}

void cancel(Fake* f, std::uint32_t job_id) {
  auto it = f->jobs.find(job_id);
  if (it == f->jobs.end()) return;
  if (it->second.phase == FLEXCO_RSVC_PJ_PENDING || it->second.phase == FLEXCO_RSVC_PJ_RUNNING) {
    it->second.phase = FLEXCO_RSVC_PJ_FINISHED;
    f->cancelled.push_back(job_id);
  }
}

int h_remove(void* a, std::uint64_t id, const std::uint32_t* job_ids, std::size_t job_cnt,
             bool orphan, char* why, std::size_t why_len) {
  Fake* f = F(a);
  f->removes++;
  f->removed.push_back(id);
  f->removed_orphan.push_back(orphan);
  if (f->remove_rc != FLEXCO_RSVC_OK) {
    std::snprintf(why, why_len, "fake: refused");
    return f->remove_rc;
  }
  auto it = f->resvs.find(id);
  if (it == f->resvs.end()) {
    std::snprintf(why, why_len, "Invalid reservation name");
    return FLEXCO_RSVC_NO_SUCH;
  }
  if (orphan) {
    for (auto& j : f->jobs)
      if (j.second.resv == id) cancel(f, j.first);
  } else {
    for (std::size_t i = 0; i < job_cnt; i++) cancel(f, job_ids[i]);
  }
  f->resvs.erase(it);
  return FLEXCO_RSVC_OK;
}

void h_slurm_ids(void* a, flexco_rsvc_id_cb cb, void* sink) {
  for (const auto& r : F(a)->resvs) cb(sink, r.first);
}

void h_slurm_resvs(void* a, flexco_rsvc_resv_cb cb, void* sink) {
  Fake* f = F(a);
  for (const auto& e : f->resvs) {
    std::vector<std::uint32_t> ids;
    std::vector<std::int64_t> when;
    for (const auto& j : f->jobs)
      if (j.second.resv == e.first && (j.second.phase == FLEXCO_RSVC_PJ_PENDING ||
                                       j.second.phase == FLEXCO_RSVC_PJ_RUNNING)) {
        ids.push_back(j.first);
        when.push_back(j.second.submitted);
      }
    flexco_rsvc_slurm_resv_t v{};
    v.id = e.first;
    v.users = e.second.users ? e.second.users->c_str() : nullptr;
    v.uid = e.second.uid;
    v.nodes = e.second.nodes;
    v.node_list = e.second.node_list.c_str();
    v.partition = e.second.partition ? e.second.partition->c_str() : nullptr;
    v.start = e.second.start;
    v.end = e.second.end;
    v.job_ids = ids.data();
    v.job_submitted = when.data();
    v.job_cnt = ids.size();
    cb(sink, &v);
  }
}

int h_job_submit(void* a, const flexco_jobspec_t* spec, std::uint64_t resv_id, std::uint32_t uid,
                 std::uint32_t nodes, std::uint32_t minutes, const char* partition,
                 std::uint32_t* job_id, char* why, std::size_t why_len) {
  Fake* f = F(a);
  f->submits++;
  if (f->submit_rc != FLEXCO_RSVC_OK) {
    std::snprintf(why, why_len, "fake: Access/permission denied");
    return f->submit_rc;
  }
  if (f->resvs.count(resv_id) == 0) {
    std::snprintf(why, why_len, "Requested reservation is invalid");
    return FLEXCO_RSVC_REFUSED;
  }
  SJob j;
  j.resv = resv_id;
  j.uid = uid;
  j.submitted = f->now;
  j.held = spec->hold != 0;
  j.nodes = nodes;
  j.minutes = minutes;
  if (partition != nullptr) j.partition = partition;
  *job_id = f->next_job++;
  f->jobs[*job_id] = j;
  return FLEXCO_RSVC_OK;
}

json_t* h_job_state(void* a, std::uint32_t job_id) {
  Fake* f = F(a);
  auto it = f->jobs.find(job_id);
  if (it == f->jobs.end()) return nullptr;
  return json_pack("{s:I, s:s, s:s}", "job_id", static_cast<json_int_t>(job_id), "state",
                   phase_name(it->second.phase), "reservation",
                   ("flexco_" + std::to_string(it->second.resv)).c_str());
}

int h_job_phase(void* a, std::uint32_t job_id, bool* ran) {
  Fake* f = F(a);
  auto it = f->jobs.find(job_id);
  *ran = false;
  if (it == f->jobs.end()) return FLEXCO_RSVC_PJ_GONE;
  *ran = it->second.ran;
  return it->second.phase;
}

int h_job_release(void* a, std::uint32_t job_id, const char*, bool* released) {
  Fake* f = F(a);
  f->releases++;
  *released = false;
  auto it = f->jobs.find(job_id);
  if (it == f->jobs.end()) return FLEXCO_RSVC_RELEASE_GONE;
  if (it->second.admin_held) return FLEXCO_RSVC_RELEASE_ADMIN_HELD;
  if (it->second.held) {
    it->second.held = false;
    *released = true;
  }
  return FLEXCO_RSVC_RELEASE_OK;
}

int h_job_cancel(void* a, std::uint32_t job_id, const char*, char* why, std::size_t why_len) {
  Fake* f = F(a);
  f->job_cancels++;
  if (f->cancel_rc != FLEXCO_RSVC_OK) {
    std::snprintf(why, why_len, "fake: Job is busy");
    return f->cancel_rc;
  }
  cancel(f, job_id);
  return FLEXCO_RSVC_OK;
}

bool h_publish(void* a, const char* type, json_t* fields, std::uint32_t uid) {
  Fake* f = F(a);
  f->publish_tries++;
  if (!f->publish_ok) {
    json_decref(fields);
    return false;
  }
  Published p;
  p.type = type;
  p.uid = uid;
  p.job_id = static_cast<std::uint32_t>(json_integer_value(json_object_get(fields, "job_id")));
  char* s = json_dumps(fields, JSON_COMPACT | JSON_SORT_KEYS);
  p.fields = s != nullptr ? s : "";
  std::free(s);
  json_decref(fields);
  f->published.push_back(p);
  return true;
}

// plugin/statefile.c's order: the current copy, else the previous one
int h_load(void* a, std::size_t max, flexco_rsvc_parse_cb parse, void* parse_arg) {
  Fake* f = F(a);
  char why[256];
  f->loads++;
  if (!f->current && !f->prev) return FLEXCO_RSVC_LOADED_NONE;
  if (f->current && f->current->size() <= max &&
      parse(f->current->data(), f->current->size(), parse_arg, why, sizeof(why)) == 0)
    return FLEXCO_RSVC_LOADED_CURRENT;
  if (f->prev && f->prev->size() <= max &&
      parse(f->prev->data(), f->prev->size(), parse_arg, why, sizeof(why)) == 0)
    return FLEXCO_RSVC_LOADED_PREV;
  return FLEXCO_RSVC_LOADED_LOST;
}

int h_save(void* a, const char* text, char* why, std::size_t why_len) {
  Fake* f = F(a);
  f->save_attempts++;
  int e = f->save_errno;
  if (!f->save_script.empty()) {
    e = f->save_script.front();
    f->save_script.pop_front();
  }
  if (e != 0) {
    std::snprintf(why, why_len, "cannot write flexco_resv.json.new.1.1: %s", std::strerror(e));
    return -1;
  }
  if (f->current) f->prev = f->current;
  f->current = std::string(text);
  f->saved_texts.push_back(text);
  f->saves_ok++;
  return 0;
}

Fake::Fake() {
  host.arg = this;
  host.log = h_log;
  host.now = h_now;
  host.in_charge = h_in_charge;
  host.user_uid = h_user_uid;
  host.admit = h_admit;
  host.create = h_create;
  host.update = h_update;
  host.remove = h_remove;
  host.slurm_ids = h_slurm_ids;
  host.slurm_resvs = h_slurm_resvs;
  host.job_submit = h_job_submit;
  host.job_state = h_job_state;
  host.job_phase = h_job_phase;
  host.job_release = h_job_release;
  host.job_cancel = h_job_cancel;
  host.publish = h_publish;
  host.load = h_load;
  host.save = h_save;
}

// ---------------------------------------------------------------------------
// answers and the service

// A request's answer: its status and its JSON document.
struct Res {
  int status = 0;
  std::string text;
  std::shared_ptr<json_t> doc;

  json_t* j() const { return doc.get(); }
  json_t* m(const char* k) const { return json_object_get(j(), k); }
  const char* s(const char* k) const { return json_string_value(m(k)); }
  json_int_t n(const char* k) const { return json_integer_value(m(k)); }
  std::string code() const {
    const char* c = json_string_value(json_object_get(m("error"), "code"));
    return c != nullptr ? c : "";
  }
  std::string message() const {
    const char* c = json_string_value(json_object_get(m("error"), "message"));
    return c != nullptr ? c : "";
  }
  std::size_t job_cnt() const { return json_array_size(m("jobs")); }
  json_t* job(std::size_t i) const { return json_array_get(m("jobs"), i); }
  std::size_t list_cnt() const { return json_array_size(m("reservations")); }
};

Res answer(int status, char* out) {
  Res r;
  r.status = status;
  ck_assert_msg(out != nullptr, "status %d without a document", status);
  r.text = out;
  std::free(out);
  json_error_t e;
  json_t* d = json_loads(r.text.c_str(), 0, &e);
  ck_assert_msg(d != nullptr, "not JSON: %s", r.text.c_str());
  r.doc.reset(d, json_decref);
  return r;
}

// A 64-hex-digit digest of a body (the verifier's SHA-256 stands in).
std::string digest(const std::string& body) {
  std::string out;
  for (std::uint64_t seed = 1; seed <= 4; seed++) {
    std::uint64_t h = 1469598103934665603ULL ^ seed;
    for (unsigned char c : body) h = (h ^ c) * 1099511628211ULL;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    out += buf;
  }
  return out;
}

struct Rq {
  std::string key, method, target, dig;
  flexco_rsvc_idem_t c() const { return {key.c_str(), method.c_str(), target.c_str(), dig.c_str()}; }
};

std::string resv_path(std::uint64_t id) { return "/v1/reservations/" + std::to_string(id); }

const std::uint32_t kDaemonUids[] = {kDaemon};

flexco_rsvc_conf_t conf() {
  flexco_rsvc_conf_t c{};
  c.daemon_uids = kDaemonUids;
  c.daemon_uid_cnt = 1;
  c.act_for_root = false;
  c.min_user_uid = 1000;
  c.slurm_user_id = 64030;
  return c;
}

// One service instance on the fake host.  Destroying it without close()
// is a crash: no last save.
class Svc {
 public:
  explicit Svc(Fake& f, bool open_now = true) : f_(f), s_(flexco_rsvc_create()) {
    ck_assert_ptr_nonnull(s_);
    if (open_now) open();
  }
  ~Svc() { flexco_rsvc_destroy(s_); }
  Svc(const Svc&) = delete;
  Svc& operator=(const Svc&) = delete;

  void open() {
    const flexco_rsvc_conf_t c = conf();
    flexco_rsvc_open(s_, &c, &f_.host);
  }
  void close() { flexco_rsvc_close(s_); }
  void tick() { flexco_rsvc_tick(s_); }

  Res create(std::uint32_t uid, const std::string& body, const char* key = nullptr) {
    return create_rq(uid, body, key ? Rq{key, "POST", "/v1/reservations", digest(body)} : Rq{});
  }
  Res create_rq(std::uint32_t uid, const std::string& body, const Rq& rq) {
    char* out = nullptr;
    const flexco_rsvc_idem_t r = rq.c();
    const int st = flexco_rsvc_create_resv(s_, uid, rq.key.empty() ? nullptr : &r, body.data(),
                                           body.size(), &out);
    return answer(st, out);
  }
  Res confirm(std::uint32_t uid, std::uint64_t id, const char* key = nullptr) {
    return confirm_rq(uid, id,
                      key ? Rq{key, "POST", resv_path(id) + "/confirm", digest("")} : Rq{});
  }
  Res confirm_rq(std::uint32_t uid, std::uint64_t id, const Rq& rq) {
    char* out = nullptr;
    const flexco_rsvc_idem_t r = rq.c();
    const int st = flexco_rsvc_confirm(s_, uid, rq.key.empty() ? nullptr : &r,
                                       std::to_string(id).c_str(), &out);
    return answer(st, out);
  }
  Res modify(std::uint32_t uid, std::uint64_t id, const std::string& body,
             const char* key = nullptr) {
    char* out = nullptr;
    const Rq rq = key ? Rq{key, "PATCH", resv_path(id), digest(body)} : Rq{};
    const flexco_rsvc_idem_t r = rq.c();
    const int st = flexco_rsvc_modify(s_, uid, key ? &r : nullptr, std::to_string(id).c_str(),
                                      body.data(), body.size(), &out);
    return answer(st, out);
  }
  Res remove(std::uint32_t uid, std::uint64_t id, const char* key = nullptr) {
    char* out = nullptr;
    const Rq rq = key ? Rq{key, "DELETE", resv_path(id), digest("")} : Rq{};
    const flexco_rsvc_idem_t r = rq.c();
    const int st =
        flexco_rsvc_delete(s_, uid, key ? &r : nullptr, std::to_string(id).c_str(), &out);
    return answer(st, out);
  }
  Res get(std::uint32_t uid, std::uint64_t id) {
    char* out = nullptr;
    const int st = flexco_rsvc_get(s_, uid, std::to_string(id).c_str(), &out);
    return answer(st, out);
  }
  Res list(std::uint32_t uid) {
    char* out = nullptr;
    const int st = flexco_rsvc_list(s_, uid, &out);
    return answer(st, out);
  }
  Res submit(std::uint32_t uid, std::uint64_t id, const std::string& body,
             const char* key = nullptr) {
    char* out = nullptr;
    const Rq rq = key ? Rq{key, "POST", resv_path(id) + "/jobs", digest(body)} : Rq{};
    const flexco_rsvc_idem_t r = rq.c();
    const int st = flexco_rsvc_job_submit(s_, uid, key ? &r : nullptr,
                                          std::to_string(id).c_str(), body.data(), body.size(),
                                          &out);
    return answer(st, out);
  }
  Res job_get(std::uint32_t uid, std::uint64_t id, std::uint32_t job) {
    char* out = nullptr;
    const int st = flexco_rsvc_job_get(s_, uid, std::to_string(id).c_str(),
                                       std::to_string(job).c_str(), &out);
    return answer(st, out);
  }
  Res release(std::uint32_t uid, std::uint64_t id, std::uint32_t job,
              const std::string& body = "") {
    char* out = nullptr;
    const int st = flexco_rsvc_job_release(s_, uid, std::to_string(id).c_str(),
                                           std::to_string(job).c_str(),
                                           body.empty() ? nullptr : body.data(), body.size(), &out);
    return answer(st, out);
  }
  // Flexco-Epoch: 0 (goes on) or the refusal's status, *doc its document
  int fence(std::uint32_t uid, const char* header, bool mutating, Res* doc = nullptr) {
    char* out = nullptr;
    const int st = flexco_rsvc_fence(s_, uid, header, mutating, &out);
    if (st == 0) {
      ck_assert_ptr_null(out);
      return 0;
    }
    Res r = answer(st, out);
    if (doc != nullptr) *doc = r;
    return st;
  }
  std::shared_ptr<json_t> stats() {
    json_t* s = flexco_rsvc_stats_json(s_);
    ck_assert_ptr_nonnull(s);
    return std::shared_ptr<json_t>(s, json_decref);
  }

 private:
  Fake& f_;
  flexco_rsvc_t* s_;
};

json_t* at(const std::shared_ptr<json_t>& o, const char* a, const char* b = nullptr) {
  json_t* v = json_object_get(o.get(), a);
  return b != nullptr ? json_object_get(v, b) : v;
}
json_int_t by_state(const std::shared_ptr<json_t>& st, const char* state) {
  json_t* v = at(st, "by_state", state);
  ck_assert_msg(json_is_integer(v), "by_state.%s missing", state);
  return json_integer_value(v);
}

std::string resv_body(const char* user, int nodes, std::int64_t start, std::int64_t duration,
                      int confirm_within = 0, const char* owner = nullptr) {
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf),
                        "{\"user\":\"%s\",\"nodes\":%d,\"start\":%lld,\"duration\":%lld", user,
                        nodes, static_cast<long long>(start), static_cast<long long>(duration));
  if (confirm_within != 0)
    n += std::snprintf(buf + n, sizeof(buf) - n, ",\"confirm_within\":%d", confirm_within);
  if (owner != nullptr) n += std::snprintf(buf + n, sizeof(buf) - n, ",\"owner\":\"%s\"", owner);
  std::snprintf(buf + n, sizeof(buf) - n, "}");
  return buf;
}

const std::string kJob = "{\"script\":\"#!/bin/sh\\ntrue\\n\"}";
std::string job_body(int nodes, int time_limit, int part, bool hold = false) {
  return "{\"script\":\"#!/bin/sh\\nsrun hostname\\n\",\"nodes\":" + std::to_string(nodes) +
         ",\"time_limit\":" + std::to_string(time_limit) +
         ",\"part_index\":" + std::to_string(part) + (hold ? ",\"hold\":true" : "") + "}";
}

// The saved state's record of id (a new reference), or nullptr.
std::shared_ptr<json_t> saved_record(const std::string& text, std::uint64_t id) {
  json_error_t e;
  json_t* root = json_loads(text.c_str(), 0, &e);
  ck_assert_msg(root != nullptr, "state not JSON: %s", text.c_str());
  std::shared_ptr<json_t> keep(root, json_decref);
  std::size_t i;
  json_t* r;
  json_array_foreach(json_object_get(root, "reservations"), i, r) {
    if (json_integer_value(json_object_get(r, "id")) == static_cast<json_int_t>(id)) {
      json_incref(r);
      return std::shared_ptr<json_t>(r, json_decref);
    }
  }
  return nullptr;
}
std::string saved_state_of(const std::string& text, std::uint64_t id) {
  auto r = saved_record(text, id);
  if (!r) return "";
  const char* s = json_string_value(json_object_get(r.get(), "state"));
  return s != nullptr ? s : "";
}

// String comparisons that copy first: a Res or a stats document is often a
// temporary whose strings die with the full expression.
std::string ck_s(const char* s) { return s != nullptr ? s : "(null)"; }
#define CK_STR(a, b)                                                                  \
  do {                                                                                \
    const std::string ck_a_ = ck_s(a), ck_b_ = ck_s(b);                               \
    ck_assert_msg(ck_a_ == ck_b_, "%s is \"%s\", want \"%s\"", #a, ck_a_.c_str(), \
                  ck_b_.c_str());                                                     \
  } while (0)

// A fresh service, in charge, its first pass done (a first start).
#define STARTED(f, s) \
  Fake f;             \
  Svc s(f);           \
  s.tick()

}  // namespace

// ---------------------------------------------------------------------------
// 1. the happy path, DaemonUsers, privacy

START_TEST(happy_path) {
  STARTED(f, s);
  const int saves0 = f.save_attempts;
  Res c = s.create(kDaemon, resv_body("alice", 4, kT0 + 600, 3600, 300, "flexcod-a"));
  ck_assert_int_eq(c.status, 201);
  ck_assert_int_eq(c.n("id"), 1);
  CK_STR(c.s("name"), "flexco_1");
  CK_STR(c.s("state"), "tentative");
  CK_STR(c.s("user"), "alice");
  ck_assert_int_eq(c.n("uid"), kAlice);
  ck_assert_int_eq(c.n("nodes"), 4);
  ck_assert_int_eq(c.n("start"), kT0 + 600);
  ck_assert_int_eq(c.n("end"), kT0 + 4200);
  ck_assert_int_eq(c.n("confirm_by"), kT0 + 300);
  CK_STR(c.s("owner"), "flexcod-a");
  CK_STR(c.s("node_list"), "c1n[1-4]");
  ck_assert_int_eq(f.creates, 1);
  ck_assert_int_eq(f.admits, 1);
  // Slurm has it
  ck_assert(f.resvs.count(1) == 1);
  ck_assert_int_eq(f.resvs[1].nodes, 4);
  CK_STR(f.resvs[1].users->c_str(), "alice");
  ck_assert_int_eq(f.resvs[1].start, kT0 + 600);
  ck_assert_int_eq(f.resvs[1].end, kT0 + 4200);
  // written ahead as "creating", then saved as tentative
  ck_assert_int_eq(f.save_attempts, saves0 + 2);
  CK_STR(saved_state_of(f.saved_texts[f.saved_texts.size() - 2], 1).c_str(), "creating");
  CK_STR(saved_state_of(*f.current, 1).c_str(), "tentative");

  // everybody else: 403 on every mutation, nothing done, nothing saved
  int saves = f.save_attempts;
  for (std::uint32_t uid : {kAlice, kBob, 0u, 64030u}) {
    Res r = s.create(uid, resv_body("alice", 1, kT0, 600), "k-x");
    ck_assert_int_eq(r.status, 403);
    CK_STR(r.code().c_str(), "forbidden");
    ck_assert_int_eq(s.confirm(uid, 1, "k-x").status, 403);
    ck_assert_int_eq(s.modify(uid, 1, "{\"nodes\":1}", "k-x").status, 403);
    ck_assert_int_eq(s.remove(uid, 1, "k-x").status, 403);
    ck_assert_int_eq(s.submit(uid, 1, kJob, "k-x").status, 403);
    ck_assert_int_eq(s.release(uid, 1, 7001).status, 403);
  }
  ck_assert_int_eq(f.save_attempts, saves);
  ck_assert_int_eq(f.creates, 1);
  ck_assert_int_eq(f.admits, 1);
  ck_assert_int_eq(f.updates + f.removes + f.submits + f.releases, 0);
  CK_STR(s.get(kDaemon, 1).s("state"), "tentative");

  // privacy: the owner sees its own, another user nothing
  ck_assert_int_eq(s.get(kBob, 1).status, 404);
  CK_STR(s.get(kBob, 1).code().c_str(), "not_found");
  Res own = s.get(kAlice, 1);
  ck_assert_int_eq(own.status, 200);
  ck_assert_int_eq(own.n("id"), 1);
  ck_assert_int_eq(s.list(kAlice).list_cnt(), 1);
  ck_assert_int_eq(s.list(kBob).list_cnt(), 0);
  ck_assert_int_eq(s.list(kDaemon).list_cnt(), 1);
  ck_assert_int_eq(s.get(kDaemon, 2).status, 404);
  ck_assert_int_eq(s.get(kDaemon, 0).status, 400);

  // confirm
  saves = f.save_attempts;
  Res cf = s.confirm(kDaemon, 1);
  ck_assert_int_eq(cf.status, 200);
  CK_STR(cf.s("state"), "confirmed");
  ck_assert(json_is_null(cf.m("confirm_by")));
  ck_assert_int_eq(f.save_attempts, saves + 1);
  CK_STR(saved_state_of(*f.current, 1).c_str(), "confirmed");
  // confirming again is harmless
  ck_assert_int_eq(s.confirm(kDaemon, 1).status, 200);

  // modify: nodes and start; the duration stays
  Res md = s.modify(kDaemon, 1, "{\"nodes\":6,\"start\":" + std::to_string(kT0 + 1200) + "}");
  ck_assert_int_eq(md.status, 200);
  ck_assert_int_eq(md.n("nodes"), 6);
  ck_assert_int_eq(md.n("start"), kT0 + 1200);
  ck_assert_int_eq(md.n("end"), kT0 + 4800);
  CK_STR(md.s("node_list"), "c1n[1-6]");
  ck_assert_int_eq(f.updates, 1);
  ck_assert_int_eq(f.update_calls[0].cur_start, kT0 + 600);
  ck_assert_int_eq(f.update_calls[0].cur_end, kT0 + 4200);
  ck_assert_int_eq(f.update_calls[0].cur_nodes, 4);
  ck_assert_int_eq(f.resvs[1].nodes, 6);
  ck_assert_int_eq(f.resvs[1].start, kT0 + 1200);
  ck_assert_int_eq(f.resvs[1].end, kT0 + 4800);
  // a refused PATCH changes nothing (Slurm gives 5 of 8: put back)
  f.give_nodes = 5;
  Res short_md = s.modify(kDaemon, 1, "{\"nodes\":8}");
  ck_assert_int_eq(short_md.status, 409);
  CK_STR(short_md.code().c_str(), "not_available");
  ck_assert_int_eq(f.updates, 3);  // the change, then the put-back
  ck_assert_int_eq(f.update_calls[2].cur_nodes, 5);
  ck_assert_int_eq(f.update_calls[2].nodes, 6);
  ck_assert_int_eq(f.update_calls[2].start, kT0 + 1200);
  ck_assert_int_eq(f.update_calls[2].end, kT0 + 4800);
  ck_assert_int_eq(f.resvs[1].nodes, 6);
  ck_assert_int_eq(s.get(kDaemon, 1).n("nodes"), 6);
  // PATCH's window is checked
  ck_assert_int_eq(s.modify(kDaemon, 1, "{\"duration\":5}").status, 400);

  // a part job, held, into it
  Res j = s.submit(kDaemon, 1, job_body(2, 600, 1, true));
  ck_assert_int_eq(j.status, 201);
  ck_assert_int_eq(j.n("job_id"), 7001);
  ck_assert_int_eq(j.n("part_index"), 1);
  CK_STR(j.s("reservation"), "flexco_1");
  ck_assert_int_eq(j.n("reservation_id"), 1);
  CK_STR(j.s("state"), "PENDING");
  ck_assert_int_eq(f.submits, 1);
  ck_assert_int_eq(f.jobs[7001].resv, 1);
  ck_assert_int_eq(f.jobs[7001].uid, kAlice);
  ck_assert_int_eq(f.jobs[7001].nodes, 2);
  ck_assert_int_eq(f.jobs[7001].minutes, 10);
  ck_assert(f.jobs[7001].held);
  // more nodes than the reservation's: 400, nothing submitted
  ck_assert_int_eq(s.submit(kDaemon, 1, job_body(7, 600, 0)).status, 400);
  ck_assert_int_eq(f.submits, 1);
  // the job: its user sees it, another user does not
  Res jg = s.job_get(kAlice, 1, 7001);
  ck_assert_int_eq(jg.status, 200);
  CK_STR(jg.s("flexco_reservation"), "flexco_1");
  ck_assert_int_eq(jg.n("part_index"), 1);
  ck_assert_int_eq(s.job_get(kBob, 1, 7001).status, 404);
  ck_assert_int_eq(s.job_get(kDaemon, 1, 7002).status, 404);
  // released once, then harmlessly again
  Res rl = s.release(kDaemon, 1, 7001);
  ck_assert_int_eq(rl.status, 200);
  ck_assert(json_is_true(rl.m("released")));
  ck_assert(!f.jobs[7001].held);
  ck_assert(json_is_false(s.release(kDaemon, 1, 7001).m("released")));

  // delete: the part job is cancelled through remove, Slurm's copy goes
  saves = f.save_attempts;
  Res d = s.remove(kDaemon, 1);
  ck_assert_int_eq(d.status, 200);
  CK_STR(d.s("state"), "deleted");
  CK_STR(d.s("reason"), "deleted by request");
  ck_assert_int_eq(f.removes, 1);
  ck_assert_int_eq(f.removed[0], 1);
  ck_assert(!f.removed_orphan[0]);
  ck_assert(f.resvs.count(1) == 0);
  ck_assert_int_eq(f.cancelled.size(), 1);
  ck_assert_int_eq(f.cancelled[0], 7001);
  ck_assert_int_eq(f.jobs[7001].phase, FLEXCO_RSVC_PJ_FINISHED);
  ck_assert_int_eq(f.save_attempts, saves + 1);
  CK_STR(saved_state_of(*f.current, 1).c_str(), "deleted");
  // deleting again is harmless and asks Slurm nothing
  Res d2 = s.remove(kDaemon, 1);
  ck_assert_int_eq(d2.status, 200);
  CK_STR(d2.s("state"), "deleted");
  ck_assert_int_eq(f.removes, 1);
  // a deleted reservation cannot be confirmed, changed or get jobs
  CK_STR(s.confirm(kDaemon, 1).code().c_str(), "gone");
  ck_assert_int_eq(s.modify(kDaemon, 1, "{\"nodes\":1}").status, 409);
  ck_assert_int_eq(s.submit(kDaemon, 1, kJob).status, 409);
  ck_assert_int_eq(f.submits, 1);
}
END_TEST

// Refusals before anything is made: the user, the window, admission,
// Slurm.
START_TEST(refusals_make_nothing) {
  STARTED(f, s);
  const int saves = f.save_attempts;
  Res r = s.create(kDaemon, resv_body("root", 1, kT0, 600));
  ck_assert_int_eq(r.status, 422);
  CK_STR(r.code().c_str(), "user_not_allowed");
  ck_assert_int_eq(s.create(kDaemon, resv_body("slurm", 1, kT0, 600)).status, 422);
  ck_assert_int_eq(s.create(kDaemon, resv_body("daemon", 1, kT0, 600)).status, 422);
  ck_assert_int_eq(s.create(kDaemon, resv_body("zed", 1, kT0, 600)).status, 400);
  // the admission window, relative to the fake clock
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0 - 61, 600)).status, 400);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0 + 366 * 86400 + 1, 600)).status,
                   400);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0, 59)).status, 400);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 0, kT0, 600)).status, 400);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0, 600, 3601)).status, 400);
  ck_assert_int_eq(s.create(kDaemon, "{\"user\":\"alice\",\"nodes\":1,\"start\":1,\"x\":1}").status,
                   400);
  ck_assert_int_eq(f.admits, 0);
  // admission refuses: counted, nothing made
  f.admit_status = 409;
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0, 600)).status, 409);
  f.admit_low_fit = true;
  Res lf = s.create(kDaemon, resv_body("alice", 1, kT0, 600));
  ck_assert_int_eq(lf.status, 409);
  CK_STR(lf.code().c_str(), "low_fit");
  f.admit_status = 200;
  ck_assert_int_eq(f.creates, 0);
  ck_assert_int_eq(f.save_attempts, saves);
  // Slurm gives fewer nodes: undone, refused
  f.give_nodes = 2;
  Res fw = s.create(kDaemon, resv_body("alice", 3, kT0, 600));
  ck_assert_int_eq(fw.status, 409);
  CK_STR(fw.code().c_str(), "not_available");
  ck_assert(f.resvs.empty());
  ck_assert(f.was_removed(1));
  f.give_nodes = 0;
  f.create_rc = FLEXCO_RSVC_BUSY;
  CK_STR(s.create(kDaemon, resv_body("alice", 3, kT0, 600)).code().c_str(),
                   "not_available");
  f.create_rc = FLEXCO_RSVC_REFUSED;
  CK_STR(s.create(kDaemon, resv_body("alice", 3, kT0, 600)).code().c_str(), "refused");
  f.create_rc = FLEXCO_RSVC_OK;
  ck_assert_int_eq(s.list(kDaemon).list_cnt(), 0);
  auto st = s.stats();
  ck_assert_int_eq(json_integer_value(at(st, "refused", "not_available")), 2);
  ck_assert_int_eq(json_integer_value(at(st, "refused", "low_fit")), 1);
  // ids are not reused after a refusal: the next one is 4
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0 - 30, 600)).n("id"), 4);
  // a start up to 60 s back means now
  ck_assert_int_eq(s.get(kDaemon, 4).n("start"), kT0);
}
END_TEST

// ---------------------------------------------------------------------------
// 2. Idempotency-Keys

START_TEST(idempotency) {
  STARTED(f, s);
  const std::string body = resv_body("alice", 2, kT0 + 60, 600);
  Res a = s.create(kDaemon, body, "key-1");
  ck_assert_int_eq(a.status, 201);
  const int saves = f.save_attempts;
  // the same request: the stored answer, no second Slurm reservation
  Res b = s.create(kDaemon, body, "key-1");
  ck_assert_int_eq(b.status, 201);
  CK_STR(b.text.c_str(), a.text.c_str());
  ck_assert_int_eq(f.creates, 1);
  ck_assert_int_eq(f.admits, 1);
  ck_assert_int_eq(f.save_attempts, saves);
  // the same key for another body: 422, nothing done
  Res c = s.create(kDaemon, resv_body("alice", 3, kT0 + 60, 600), "key-1");
  ck_assert_int_eq(c.status, 422);
  CK_STR(c.code().c_str(), "idempotency_key_reused");
  ck_assert(c.message().find("with another body") != std::string::npos);
  // ... for another target: 422, the reservation stays tentative
  Res d = s.confirm(kDaemon, 1, "key-1");
  ck_assert_int_eq(d.status, 422);
  CK_STR(d.code().c_str(), "idempotency_key_reused");
  CK_STR(s.get(kDaemon, 1).s("state"), "tentative");
  // ... for a delete: 422, nothing deleted
  ck_assert_int_eq(s.remove(kDaemon, 1, "key-1").status, 422);
  ck_assert_int_eq(f.creates, 1);
  ck_assert_int_eq(f.removes, 0);
  ck_assert_int_eq(f.save_attempts, saves);
  ck_assert_int_eq(s.list(kDaemon).list_cnt(), 1);
  // keys are per uid: alice's "key-1" is not the daemon's (and she is
  // refused anyway)
  ck_assert_int_eq(s.create(kAlice, body, "key-1").status, 403);
  // a bad key: 400 on every mutation
  CK_STR(s.create(kDaemon, body, "-").code().c_str(), "invalid_request");
  ck_assert_int_eq(s.confirm(kDaemon, 1, "a b").status, 400);

  // a confirm replayed after the reservation was deleted: the stored answer
  Res cf = s.confirm(kDaemon, 1, "key-2");
  ck_assert_int_eq(cf.status, 200);
  ck_assert_int_eq(s.remove(kDaemon, 1, "key-3").status, 200);
  Res cf2 = s.confirm(kDaemon, 1, "key-2");
  ck_assert_int_eq(cf2.status, 200);
  CK_STR(cf2.s("state"), "confirmed");
  CK_STR(cf2.text.c_str(), cf.text.c_str());
  ck_assert_int_eq(f.removes, 1);
  ck_assert_int_eq(s.remove(kDaemon, 1, "key-3").status, 200);
  ck_assert_int_eq(f.removes, 1);

  // a 409 is not stored: the retry is carried out again and may succeed
  f.create_rc = FLEXCO_RSVC_BUSY;
  const std::string b2 = resv_body("bob", 1, kT0 + 60, 600);
  ck_assert_int_eq(s.create(kDaemon, b2, "key-4").status, 409);
  f.create_rc = FLEXCO_RSVC_OK;
  Res ok = s.create(kDaemon, b2, "key-4");
  ck_assert_int_eq(ok.status, 201);
  ck_assert_int_eq(f.creates, 3);
  ck_assert_int_eq(s.create(kDaemon, b2, "key-4").n("id"), ok.n("id"));
  ck_assert_int_eq(f.creates, 3);

  // a part-job submission replayed: the same job, one submission
  ck_assert_int_eq(s.confirm(kDaemon, ok.n("id")).status, 200);
  Res j1 = s.submit(kDaemon, ok.n("id"), kJob, "key-5");
  ck_assert_int_eq(j1.status, 201);
  Res j2 = s.submit(kDaemon, ok.n("id"), kJob, "key-5");
  ck_assert_int_eq(j2.status, 201);
  ck_assert_int_eq(j2.n("job_id"), j1.n("job_id"));
  ck_assert_int_eq(f.submits, 1);
  ck_assert_int_eq(s.submit(kDaemon, ok.n("id"), job_body(1, 60, 0), "key-5").status, 422);
  ck_assert_int_eq(f.submits, 1);
  ck_assert_int_eq(json_integer_value(at(s.stats(), "idempotency", "keys")), 5);
}
END_TEST

// ---------------------------------------------------------------------------
// 3. deadlines, ends, deletions outside FlexCo

START_TEST(deadlines) {
  STARTED(f, s);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0, 7200)).n("id"), 1);  // 120 s
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0 + 60, 600)).n("id"), 2);
  ck_assert_int_eq(s.create(kDaemon, resv_body("bob", 1, kT0, 7200)).n("id"), 3);
  ck_assert_int_eq(s.confirm(kDaemon, 2).status, 200);
  ck_assert_int_eq(s.confirm(kDaemon, 3).status, 200);
  ck_assert_int_eq(s.get(kDaemon, 1).n("confirm_by"), kT0 + 120);

  f.now = kT0 + 119;
  int saves = f.save_attempts;
  s.tick();
  ck_assert_int_eq(f.removes, 0);
  CK_STR(s.get(kDaemon, 1).s("state"), "tentative");
  ck_assert_int_eq(f.save_attempts, saves);  // nothing changed: no save

  // the confirm deadline passes: Slurm's copy deleted, the record expired
  f.now = kT0 + 120;
  s.tick();
  ck_assert(f.was_removed(1));
  ck_assert(f.resvs.count(1) == 0);
  Res e = s.get(kDaemon, 1);
  CK_STR(e.s("state"), "expired");
  CK_STR(e.s("reason"), "not confirmed in time");
  ck_assert_int_eq(f.save_attempts, saves + 1);
  CK_STR(saved_state_of(*f.current, 1).c_str(), "expired");
  CK_STR(s.confirm(kDaemon, 1).code().c_str(), "gone");
  ck_assert(!f.was_removed(2) && !f.was_removed(3));

  // flexco_3 is deleted behind the service's back; flexco_2 ends
  f.resvs.erase(3);
  f.now = kT0 + 660;
  s.tick();
  CK_STR(s.get(kDaemon, 2).s("state"), "ended");
  Res g = s.get(kDaemon, 3);
  CK_STR(g.s("state"), "deleted");
  CK_STR(g.s("reason"), "the Slurm reservation was deleted outside flexco");
  auto st = s.stats();
  ck_assert_int_eq(by_state(st, "expired"), 1);
  ck_assert_int_eq(by_state(st, "ended"), 1);
  ck_assert_int_eq(by_state(st, "deleted"), 1);
  ck_assert_int_eq(by_state(st, "tentative") + by_state(st, "confirmed"), 0);

  // a day later the records are forgotten
  f.now = kT0 + 660 + 86401;
  s.tick();
  ck_assert_int_eq(s.list(kDaemon).list_cnt(), 0);
  ck_assert_int_eq(s.get(kDaemon, 2).status, 404);
  ck_assert(saved_record(*f.current, 2) == nullptr);
}
END_TEST

// ---------------------------------------------------------------------------
// 4. orphans; adoption after an older or lost state

START_TEST(orphan_with_current_state) {
  Fake f;
  {
    Svc a(f);
    a.tick();
    ck_assert_int_eq(a.create(kDaemon, resv_body("alice", 2, kT0, 7200)).status, 201);
    ck_assert_int_eq(a.confirm(kDaemon, 1).status, 200);
    a.close();
  }
  f.hand_made(50, "bob", kBob, 1, kT0, kT0 + 7200);
  f.job_in(9001, 50, kBob, FLEXCO_RSVC_PJ_PENDING);
  Svc b(f);
  CK_STR(json_string_value(at(b.stats(), "state", "loaded_from")), "current");
  b.tick();
  ck_assert_int_eq(f.removes, 1);
  ck_assert_int_eq(f.removed[0], 50);
  ck_assert(f.removed_orphan[0]);
  ck_assert(f.resvs.count(50) == 0);
  ck_assert(f.resvs.count(1) == 1);
  ck_assert_int_eq(f.jobs[9001].phase, FLEXCO_RSVC_PJ_FINISHED);  // its jobs cancelled
  ck_assert_int_eq(b.get(kDaemon, 50).status, 404);
  CK_STR(b.get(kDaemon, 1).s("state"), "confirmed");
  ck_assert_int_eq(json_integer_value(at(b.stats(), "adopted")), 0);
}
END_TEST

// The mutations that wait for the recovery, all answered 503 recovering.
void all_recovering(Svc& s, Fake& f, std::uint64_t id) {
  const int saves = f.save_attempts, creates = f.creates, updates = f.updates,
            removes = f.removes, submits = f.submits;
  Res r = s.create(kDaemon, resv_body("alice", 1, f.now, 600), "rk-1");
  ck_assert_int_eq(r.status, 503);
  CK_STR(r.code().c_str(), "recovering");
  CK_STR(s.confirm(kDaemon, id, "rk-2").code().c_str(), "recovering");
  CK_STR(s.modify(kDaemon, id, "{\"nodes\":1}", "rk-3").code().c_str(), "recovering");
  CK_STR(s.remove(kDaemon, id, "rk-4").code().c_str(), "recovering");
  CK_STR(s.submit(kDaemon, id, kJob, "rk-5").code().c_str(), "recovering");
  ck_assert_int_eq(f.save_attempts, saves);
  ck_assert_int_eq(f.creates, creates);
  ck_assert_int_eq(f.updates, updates);
  ck_assert_int_eq(f.removes, removes);
  ck_assert_int_eq(f.submits, submits);
}

START_TEST(adopt_with_previous_state) {
  Fake f;
  {
    Svc a(f);
    a.tick();
    ck_assert_int_eq(a.create(kDaemon, resv_body("alice", 2, kT0, 7200)).status, 201);
    ck_assert_int_eq(a.confirm(kDaemon, 1).status, 200);
    ck_assert_int_eq(a.create(kDaemon, resv_body("alice", 1, kT0, 7200)).status, 201);
  }  // a crash: the previous copy has flexco_2 as "creating"
  CK_STR(saved_state_of(*f.prev, 2).c_str(), "creating");
  f.current = std::string("{\"version\":1,");  // the newest copy torn
  f.hand_made(60, "bob", kBob, 3, kT0 - 100, kT0 + 7200);
  f.job_in(9001, 60, kBob, FLEXCO_RSVC_PJ_PENDING);
  f.job_in(9002, 60, kBob, FLEXCO_RSVC_PJ_RUNNING);
  f.job_in(9003, 60, kBob, FLEXCO_RSVC_PJ_FINISHED);
  f.now = kT0 + 5;
  Svc b(f);
  auto st = b.stats();
  CK_STR(json_string_value(at(st, "state", "loaded_from")), "previous");
  ck_assert(json_is_false(at(st, "state", "recovered")));
  all_recovering(b, f, 1);
  // reads are answered meanwhile
  CK_STR(b.get(kDaemon, 1).s("state"), "confirmed");

  b.tick();
  ck_assert_int_eq(f.removes, 0);  // nothing deleted
  ck_assert_int_eq(f.resvs.size(), 3);
  Res o = b.get(kDaemon, 60);
  ck_assert_int_eq(o.status, 200);
  CK_STR(o.s("state"), "confirmed");
  CK_STR(o.s("user"), "bob");
  ck_assert_int_eq(o.n("uid"), kBob);
  ck_assert_int_eq(o.n("nodes"), 3);
  ck_assert(std::string(o.s("reason")).find("adopted") != std::string::npos);
  ck_assert_int_eq(o.job_cnt(), 2);  // the unfinished ones
  for (std::size_t i = 0; i < 2; i++) {
    const json_int_t jid = json_integer_value(json_object_get(o.job(i), "job_id"));
    ck_assert(jid == 9001 || jid == 9002);
    ck_assert_int_eq(json_integer_value(json_object_get(o.job(i), "part_index")), 0);
  }
  ck_assert_int_eq(b.get(kBob, 60).status, 200);  // its user sees it
  ck_assert_int_eq(b.job_get(kDaemon, 60, 9002).status, 200);
  // "creating" in the older copy, in Slurm: kept as confirmed
  Res two = b.get(kDaemon, 2);
  CK_STR(two.s("state"), "confirmed");
  ck_assert(std::string(two.s("reason")).find("older state copy") != std::string::npos);
  st = b.stats();
  ck_assert_int_eq(json_integer_value(at(st, "adopted")), 1);
  ck_assert(json_is_true(at(st, "state", "recovered")));
  // mutations go ahead now; ids above every one seen
  ck_assert_int_eq(b.confirm(kDaemon, 2).status, 200);
  ck_assert_int_eq(b.create(kDaemon, resv_body("alice", 1, f.now, 600)).n("id"), 61);
  f.now += 10;
  b.tick();
  ck_assert_int_eq(f.removes, 0);
}
END_TEST

START_TEST(adopt_with_lost_state) {
  Fake f;
  f.current = std::string("garbage");
  f.prev = std::string("{\"version\":2}");
  f.hand_made(1, "alice", kAlice, 2, kT0, kT0 + 7200);
  f.hand_made(60, "bob", kBob, 1, kT0, kT0 + 7200);
  f.job_in(9001, 60, kBob, FLEXCO_RSVC_PJ_PENDING);
  f.now = kT0 + 1000;
  Svc s(f);
  CK_STR(json_string_value(at(s.stats(), "state", "loaded_from")), "lost");
  all_recovering(s, f, 1);
  ck_assert_int_eq(s.list(kDaemon).list_cnt(), 0);
  s.tick();
  ck_assert_int_eq(f.removes, 0);
  ck_assert_int_eq(s.list(kDaemon).list_cnt(), 2);
  CK_STR(s.get(kDaemon, 1).s("state"), "confirmed");
  CK_STR(s.get(kDaemon, 60).s("state"), "confirmed");
  ck_assert_int_eq(s.get(kDaemon, 60).job_cnt(), 1);
  ck_assert_int_eq(json_integer_value(at(s.stats(), "adopted")), 2);
  // ids start at the epoch seconds of the load: above any lost counter
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, f.now, 600)).n("id"), kT0 + 1000);
  // the adopted ones are ordinary reservations now
  ck_assert_int_eq(s.remove(kDaemon, 60).status, 200);
  ck_assert(f.resvs.count(60) == 0);
  ck_assert_int_eq(f.jobs[9001].phase, FLEXCO_RSVC_PJ_FINISHED);
}
END_TEST

// doc/reservations.md: "When the state came from .prev or from no valid
// copy at all (or there is no file but Slurm has flexco_* reservations),
// ... mutating requests get 503 recovering until then".
START_TEST(no_file_but_slurm_has_reservations) {
  Fake f;
  f.hand_made(7, "alice", kAlice, 1, kT0, kT0 + 7200);
  Svc s(f);
  Res r = s.create(kDaemon, resv_body("alice", 1, kT0, 600, 60));
  ck_assert_msg(r.status == 503 && r.code() == "recovering",
                "no state file while Slurm has flexco_7: a create before the first pass "
                "answered %d %s (want 503 recovering)",
                r.status, r.text.c_str());
  ck_assert_int_eq(f.creates, 0);
  s.tick();
  CK_STR(json_string_value(at(s.stats(), "state", "loaded_from")), "lost");
  CK_STR(s.get(kDaemon, 7).s("state"), "confirmed");
  ck_assert_int_eq(f.removes, 0);
}
END_TEST

// ---------------------------------------------------------------------------
// 5. takeover and hand-back

START_TEST(takeover) {
  Fake f;
  std::string first;
  {
    Svc a(f);
    a.tick();
    Res c = a.create(kDaemon, resv_body("alice", 2, kT0 + 60, 7200, 600), "tk-1");
    ck_assert_int_eq(c.status, 201);
    first = c.text;
    ck_assert_int_eq(a.create(kDaemon, resv_body("bob", 1, kT0, 7200)).status, 201);
    ck_assert_int_eq(a.confirm(kDaemon, 2).status, 200);
    ck_assert_int_eq(a.submit(kDaemon, 2, job_body(1, 600, 3), "tk-2").status, 201);
    int saves = f.save_attempts;
    a.close();
    ck_assert_int_eq(f.save_attempts, saves + 1);  // one last save
    // closed: refuses, forgets, saves nothing more
    CK_STR(a.create(kDaemon, resv_body("bob", 1, kT0, 600)).code().c_str(),
                     "not_in_charge");
    CK_STR(a.confirm(kDaemon, 1).code().c_str(), "not_in_charge");
    CK_STR(a.remove(kDaemon, 1).code().c_str(), "not_in_charge");
    CK_STR(a.submit(kDaemon, 2, kJob).code().c_str(), "not_in_charge");
    ck_assert_int_eq(a.get(kDaemon, 1).status, 404);
    ck_assert_int_eq(a.list(kDaemon).list_cnt(), 0);
    f.now = kT0 + 4000;  // past flexco_1's deadline
    a.tick();
    a.close();
    ck_assert_int_eq(f.save_attempts, saves + 1);
    ck_assert_int_eq(f.removes, 0);
    ck_assert_int_eq(f.creates, 2);
    ck_assert_int_eq(f.submits, 1);
    f.now = kT0 + 10;
  }
  // another controller takes over on the saved state
  Svc b(f);
  CK_STR(json_string_value(at(b.stats(), "state", "loaded_from")), "current");
  b.tick();
  ck_assert_int_eq(f.removes, 0);
  CK_STR(b.get(kDaemon, 1).s("state"), "tentative");
  Res two = b.get(kDaemon, 2);
  CK_STR(two.s("state"), "confirmed");
  ck_assert_int_eq(two.job_cnt(), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(two.job(0), "part_index")), 3);
  // the keys came along: a retry gets the first answer
  Res again = b.create(kDaemon, resv_body("alice", 2, kT0 + 60, 7200, 600), "tk-1");
  ck_assert_int_eq(again.status, 201);
  CK_STR(again.text.c_str(), first.c_str());
  ck_assert_int_eq(b.submit(kDaemon, 2, job_body(1, 600, 3), "tk-2").n("job_id"), 7001);
  ck_assert_int_eq(f.creates, 2);
  ck_assert_int_eq(f.submits, 1);
  // ids continue
  ck_assert_int_eq(b.create(kDaemon, resv_body("bob", 1, f.now, 600)).n("id"), 3);
  b.close();
  // and the first instance, reopened, knows all three
  Svc a2(f, false);
  a2.open();
  a2.tick();
  ck_assert_int_eq(a2.list(kDaemon).list_cnt(), 3);
  ck_assert_int_eq(f.removes, 0);
}
END_TEST

START_TEST(hand_back) {
  STARTED(f, s);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0, 7200)).status, 201);  // 120 s
  ck_assert_int_eq(s.create(kDaemon, resv_body("bob", 1, kT0, 600)).status, 201);
  ck_assert_int_eq(s.confirm(kDaemon, 2).status, 200);
  const std::string saved = *f.current;
  f.in_charge = false;
  const int saves = f.save_attempts, creates = f.creates;
  CK_STR(s.create(kDaemon, resv_body("bob", 1, kT0, 600)).code().c_str(),
                   "not_in_charge");
  ck_assert_int_eq(s.create(kDaemon, resv_body("bob", 1, kT0, 600)).status, 503);
  CK_STR(s.confirm(kDaemon, 1).code().c_str(), "not_in_charge");
  CK_STR(s.modify(kDaemon, 1, "{\"nodes\":2}").code().c_str(), "not_in_charge");
  CK_STR(s.remove(kDaemon, 2).code().c_str(), "not_in_charge");
  CK_STR(s.submit(kDaemon, 2, kJob).code().c_str(), "not_in_charge");
  // past every deadline and end, and flexco_2 gone behind its back: the
  // pass does nothing at all
  const json_int_t ticks = json_integer_value(at(s.stats(), "ticks"));
  f.now = kT0 + 3600;
  f.resvs.erase(2);
  f.hand_made(80, "bob", kBob, 1, kT0, kT0 + 7200);
  s.tick();
  s.tick();
  ck_assert_int_eq(f.removes, 0);
  ck_assert(f.resvs.count(1) == 1 && f.resvs.count(80) == 1);
  ck_assert_int_eq(f.save_attempts, saves);
  ck_assert_int_eq(f.creates, creates);
  ck_assert_int_eq(f.updates + f.submits, 0);
  ck_assert_int_eq(json_integer_value(at(s.stats(), "ticks")), ticks);
  CK_STR(s.get(kDaemon, 1).s("state"), "tentative");
  CK_STR(s.get(kDaemon, 2).s("state"), "confirmed");
  // the term ends: one last save of the same records
  s.close();
  ck_assert_int_eq(f.save_attempts, saves + 1);
  CK_STR(saved_state_of(*f.current, 1).c_str(), "tentative");
  CK_STR(saved_state_of(*f.current, 2).c_str(), "confirmed");
  CK_STR(saved_state_of(saved, 1).c_str(), "tentative");
  s.close();
  s.tick();
  ck_assert_int_eq(f.save_attempts, saves + 1);
}
END_TEST

// ---------------------------------------------------------------------------
// 6. failing saves at every save point

START_TEST(save_failures) {
  STARTED(f, s);
  // create's write-ahead save fails: nothing made
  f.save_errno = ENOSPC;
  int saves = f.save_attempts;
  Res r = s.create(kDaemon, resv_body("alice", 2, kT0, 7200), "sf-1");
  ck_assert_int_eq(r.status, 503);
  CK_STR(r.code().c_str(), "state_not_saved");
  ck_assert(r.message().find("nothing was made") != std::string::npos);
  ck_assert(r.message().find(std::strerror(ENOSPC)) != std::string::npos);
  ck_assert_int_eq(f.creates, 0);
  ck_assert(f.resvs.empty());
  ck_assert_int_eq(f.save_attempts, saves + 1);
  ck_assert_int_eq(s.list(kDaemon).list_cnt(), 0);
  auto st = s.stats();
  ck_assert(json_is_false(at(st, "state", "saving")));
  ck_assert_int_eq(json_integer_value(at(st, "state", "save_errors")), 1);
  // still failing: the next mutation retries the save first, and stops
  saves = f.save_attempts;
  r = s.create(kDaemon, resv_body("alice", 2, kT0, 7200), "sf-1");
  ck_assert_int_eq(r.status, 503);
  ck_assert(r.message().find("nothing is changed") != std::string::npos);
  ck_assert_int_eq(f.save_attempts, saves + 1);
  ck_assert_int_eq(f.creates, 0);
  // a forbidden request and reads try no save
  saves = f.save_attempts;
  ck_assert_int_eq(s.create(kAlice, resv_body("alice", 2, kT0, 7200)).status, 403);
  ck_assert_int_eq(s.confirm(kBob, 1).status, 403);
  ck_assert_int_eq(s.modify(kBob, 1, "{\"nodes\":1}").status, 403);
  ck_assert_int_eq(s.remove(kBob, 1).status, 403);
  ck_assert_int_eq(s.submit(kBob, 1, kJob).status, 403);
  ck_assert_int_eq(s.list(kDaemon).status, 200);
  ck_assert_int_eq(f.save_attempts, saves);
  // the disk recovers: the retry is carried out (the save retried first,
  // then written ahead, then after); id 1 went with the failed write-ahead
  f.save_errno = 0;
  saves = f.save_attempts;
  r = s.create(kDaemon, resv_body("alice", 2, kT0, 7200), "sf-1");
  ck_assert_int_eq(r.status, 201);
  ck_assert_int_eq(r.n("id"), 2);
  ck_assert_int_eq(f.save_attempts, saves + 3);
  ck_assert(json_is_true(at(s.stats(), "state", "saving")));

  // create's save after the change fails: 503 "done, but", the stored
  // answer for the retry once the disk is back
  f.save_script = {0, EIO};
  Res c2 = s.create(kDaemon, resv_body("bob", 1, kT0, 7200), "sf-2");
  ck_assert_int_eq(c2.status, 503);
  CK_STR(c2.code().c_str(), "state_not_saved");
  ck_assert(c2.message().find("done, but") != std::string::npos);
  ck_assert(c2.message().find(std::strerror(EIO)) != std::string::npos);
  ck_assert_int_eq(f.creates, 2);
  ck_assert(f.resvs.count(3) == 1);
  CK_STR(s.get(kDaemon, 3).s("state"), "tentative");
  st = s.stats();
  ck_assert(json_is_false(at(st, "state", "saving")));
  ck_assert(std::string(json_string_value(at(st, "state", "last_save_error"))).find(
                std::strerror(EIO)) != std::string::npos);
  // the retry replays the stored answer only after the save it retries
  // first has put the state on disk
  saves = f.save_attempts;
  Res c2r = s.create(kDaemon, resv_body("bob", 1, kT0, 7200), "sf-2");
  ck_assert_int_eq(c2r.status, 201);
  ck_assert_int_eq(c2r.n("id"), 3);
  CK_STR(c2r.s("state"), "tentative");
  ck_assert_int_eq(f.creates, 2);
  ck_assert_int_eq(f.save_attempts, saves + 1);
  ck_assert(json_is_true(at(s.stats(), "state", "saving")));
  CK_STR(saved_state_of(*f.current, 3).c_str(), "tentative");
  // nothing changed since: the pass has nothing to save
  saves = f.save_attempts;
  s.tick();
  ck_assert_int_eq(f.save_attempts, saves);

  // confirm's save fails: confirmed in memory, answered 503, replayed 200
  f.save_script = {ENOSPC};
  Res cf = s.confirm(kDaemon, 2, "sf-3");
  ck_assert_int_eq(cf.status, 503);
  ck_assert(cf.message().find("done, but") != std::string::npos);
  CK_STR(s.get(kDaemon, 2).s("state"), "confirmed");
  // while the save fails a mutation is refused (the save tried first)
  f.save_errno = EIO;
  saves = f.save_attempts;
  Res m = s.modify(kDaemon, 2, "{\"nodes\":3}", "sf-4");
  ck_assert_int_eq(m.status, 503);
  ck_assert(m.message().find("nothing is changed") != std::string::npos);
  ck_assert_int_eq(f.save_attempts, saves + 1);
  ck_assert_int_eq(f.updates, 0);
  ck_assert_int_eq(s.get(kDaemon, 2).n("nodes"), 2);
  f.save_errno = 0;
  Res cfr = s.confirm(kDaemon, 2, "sf-3");
  ck_assert_int_eq(cfr.status, 200);
  CK_STR(cfr.s("state"), "confirmed");

  // modify's save fails: changed in Slurm and memory, replayed 200
  f.save_script = {ENOSPC};  // the save after (the replay above saved)
  m = s.modify(kDaemon, 2, "{\"nodes\":3}", "sf-4");
  ck_assert_int_eq(m.status, 503);
  ck_assert(m.message().find("done, but") != std::string::npos);
  ck_assert_int_eq(f.updates, 1);
  ck_assert_int_eq(f.resvs[2].nodes, 3);
  f.save_script.clear();
  Res mr = s.modify(kDaemon, 2, "{\"nodes\":3}", "sf-4");
  ck_assert_int_eq(mr.status, 200);
  ck_assert_int_eq(mr.n("nodes"), 3);
  ck_assert_int_eq(f.updates, 1);

  // a part job whose write-ahead save fails: no job submitted
  f.save_script = {EIO};  // the write-ahead (the replay above saved)
  Res j = s.submit(kDaemon, 2, kJob, "sf-5");
  ck_assert_int_eq(j.status, 503);
  ck_assert(j.message().find("nothing was submitted") != std::string::npos);
  ck_assert_int_eq(f.submits, 0);
  ck_assert_int_eq(s.get(kDaemon, 2).job_cnt(), 0);
  // its save after the submission fails: the job is there, replayed
  f.save_script = {0, 0, ENOSPC};
  j = s.submit(kDaemon, 2, kJob, "sf-5");
  ck_assert_int_eq(j.status, 503);
  ck_assert(j.message().find("done, but") != std::string::npos);
  ck_assert_int_eq(f.submits, 1);
  ck_assert_int_eq(s.get(kDaemon, 2).job_cnt(), 1);
  f.save_script.clear();
  Res jr = s.submit(kDaemon, 2, kJob, "sf-5");
  ck_assert_int_eq(jr.status, 201);
  ck_assert_int_eq(jr.n("job_id"), 7001);
  ck_assert_int_eq(f.submits, 1);

  // delete's save fails: deleted, the part job cancelled, replayed 200
  f.save_script = {EIO};  // the save after (the replay above saved)
  Res d = s.remove(kDaemon, 2, "sf-6");
  ck_assert_int_eq(d.status, 503);
  ck_assert(d.message().find("done, but") != std::string::npos);
  ck_assert(f.resvs.count(2) == 0);
  ck_assert_int_eq(f.jobs[7001].phase, FLEXCO_RSVC_PJ_FINISHED);
  f.save_script.clear();
  Res dr = s.remove(kDaemon, 2, "sf-6");
  ck_assert_int_eq(dr.status, 200);
  CK_STR(dr.s("state"), "deleted");
  ck_assert_int_eq(f.removes, 1);

  // the pass's own save fails, and the next pass retries it
  f.save_errno = ENOSPC;
  f.now = kT0 + 200;  // flexco_3's deadline
  saves = f.save_attempts;
  s.tick();
  ck_assert_int_eq(f.save_attempts, saves + 1);
  CK_STR(s.get(kDaemon, 3).s("state"), "expired");
  CK_STR(saved_state_of(*f.current, 3).c_str(), "tentative");
  f.save_errno = 0;
  s.tick();
  ck_assert_int_eq(f.save_attempts, saves + 2);
  CK_STR(saved_state_of(*f.current, 3).c_str(), "expired");
  // close's save fails: counted
  f.save_errno = EIO;
  const json_int_t errors = json_integer_value(at(s.stats(), "state", "save_errors"));
  s.close();
  ck_assert_int_eq(f.save_attempts, saves + 3);
  ck_assert_int_eq(json_integer_value(at(s.stats(), "state", "save_errors")), errors + 1);
}
END_TEST

// doc/reservations.md: "every further mutation is answered 503
// state_not_saved ... until a save succeeds again; ... the same request
// retried under the same key gets the real answer once the state is on
// disk".
START_TEST(replay_waits_for_the_state_on_disk) {
  STARTED(f, s);
  f.save_script = {0, EIO};
  Res c = s.create(kDaemon, resv_body("bob", 1, kT0, 7200), "rw-1");
  ck_assert_int_eq(c.status, 503);
  ck_assert(c.message().find("done, but") != std::string::npos);
  // the disk still fails: the retry must not be told 201 for a
  // reservation whose record is not on disk
  f.save_errno = EIO;
  const int saves = f.save_attempts;
  Res early = s.create(kDaemon, resv_body("bob", 1, kT0, 7200), "rw-1");
  ck_assert_msg(early.status == 503 && early.code() == "state_not_saved",
                "retry while saves still fail answered %d %s (want 503 state_not_saved)",
                early.status, early.text.c_str());
  ck_assert_int_eq(f.save_attempts, saves + 1);
  // the disk is back: the retry saves and gets the real answer
  f.save_errno = 0;
  Res late = s.create(kDaemon, resv_body("bob", 1, kT0, 7200), "rw-1");
  ck_assert_int_eq(late.status, 201);
  CK_STR(saved_state_of(*f.current, 1).c_str(), "tentative");
  ck_assert_int_eq(f.creates, 1);
}
END_TEST

// ---------------------------------------------------------------------------
// 7. crashes between the write-ahead save and Slurm

namespace {
// The write-ahead text of the last submission (saved before Slurm got the
// job): the second-to-last save.
std::string write_ahead(const Fake& f) {
  ck_assert(f.saved_texts.size() >= 2);
  const std::string& t = f.saved_texts[f.saved_texts.size() - 2];
  ck_assert_msg(t.find("\"submitting\"") != std::string::npos, "no submission in %s", t.c_str());
  return t;
}
}  // namespace

START_TEST(crash_after_submission_written_ahead) {
  Fake f;
  const std::string body = job_body(1, 600, 2);
  std::string text;
  {
    Svc a(f);
    a.tick();
    ck_assert_int_eq(a.create(kDaemon, resv_body("alice", 2, kT0, 7200)).status, 201);
    ck_assert_int_eq(a.confirm(kDaemon, 1).status, 200);
    Res j = a.submit(kDaemon, 1, body, "cr-1");
    ck_assert_int_eq(j.status, 201);
    ck_assert_int_eq(j.n("job_id"), 7001);
    text = write_ahead(f);
  }  // crash: the save after the submission never happened
  f.current = text;
  ck_assert_int_eq(f.submits, 1);
  f.now = kT0 + 20;
  Svc b(f);
  // the submission is not settled yet
  Res early = b.submit(kDaemon, 1, body, "cr-1");
  ck_assert_int_eq(early.status, 503);
  CK_STR(early.code().c_str(), "recovering");
  b.tick();
  Res r = b.get(kDaemon, 1);
  ck_assert_int_eq(r.job_cnt(), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(r.job(0), "job_id")), 7001);
  ck_assert_int_eq(json_integer_value(json_object_get(r.job(0), "part_index")), 2);
  ck_assert(f.current->find("\"submitting\"") == std::string::npos);
  // the retry gets that job, no second submission
  Res again = b.submit(kDaemon, 1, body, "cr-1");
  ck_assert_int_eq(again.status, 201);
  ck_assert_int_eq(again.n("job_id"), 7001);
  ck_assert_int_eq(again.n("part_index"), 2);
  ck_assert_int_eq(f.submits, 1);
  // the key with another body is still refused
  ck_assert_int_eq(b.submit(kDaemon, 1, kJob, "cr-1").status, 422);
  ck_assert_int_eq(f.removes, 0);
}
END_TEST

START_TEST(crash_before_slurm_had_the_job) {
  Fake f;
  const std::string body = job_body(1, 600, 0);
  std::string text;
  {
    Svc a(f);
    a.tick();
    ck_assert_int_eq(a.create(kDaemon, resv_body("alice", 2, kT0, 7200)).status, 201);
    ck_assert_int_eq(a.confirm(kDaemon, 1).status, 200);
    ck_assert_int_eq(a.submit(kDaemon, 1, body, "cr-2").status, 201);
    text = write_ahead(f);
  }
  // crash before Slurm had it: Slurm has no such job
  f.current = text;
  f.jobs.clear();
  Svc b(f);
  b.tick();
  ck_assert_int_eq(b.get(kDaemon, 1).job_cnt(), 0);
  ck_assert(f.current->find("\"submitting\"") == std::string::npos);
  // forgotten: the retry submits it, once
  Res again = b.submit(kDaemon, 1, body, "cr-2");
  ck_assert_int_eq(again.status, 201);
  ck_assert_int_eq(again.n("job_id"), 7002);
  ck_assert_int_eq(f.submits, 2);
  ck_assert_int_eq(b.submit(kDaemon, 1, body, "cr-2").n("job_id"), 7002);
  ck_assert_int_eq(f.submits, 2);
  ck_assert_int_eq(b.get(kDaemon, 1).job_cnt(), 1);
}
END_TEST

START_TEST(crash_during_create) {
  Fake f;
  std::string text;
  {
    Svc a(f);
    a.tick();
    ck_assert_int_eq(a.create(kDaemon, resv_body("alice", 2, kT0, 7200), "cc-1").status, 201);
    text = f.saved_texts[f.saved_texts.size() - 2];
    CK_STR(saved_state_of(text, 1).c_str(), "creating");
  }  // crash after Slurm made flexco_1, before the record said so
  f.current = text;
  ck_assert(f.resvs.count(1) == 1);
  Svc b(f);
  b.tick();
  ck_assert(f.was_removed(1));
  ck_assert(f.resvs.count(1) == 0);
  Res r = b.get(kDaemon, 1);
  CK_STR(r.s("state"), "expired");
  CK_STR(r.s("reason"), "create interrupted by a slurmctld restart");
  CK_STR(saved_state_of(*f.current, 1).c_str(), "expired");
  // the retry makes a new one, under a new id
  Res again = b.create(kDaemon, resv_body("alice", 2, kT0, 7200), "cc-1");
  ck_assert_int_eq(again.status, 201);
  ck_assert_int_eq(again.n("id"), 2);
}
END_TEST

// ---------------------------------------------------------------------------
// 8. part-job events

START_TEST(part_job_events) {
  STARTED(f, s);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 4, kT0, 7200)).status, 201);
  ck_assert_int_eq(s.confirm(kDaemon, 1).status, 200);
  ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, 0)).n("job_id"), 7001);
  ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, 1)).n("job_id"), 7002);
  ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, 2)).n("job_id"), 7003);
  ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, 3)).n("job_id"), 7004);
  s.tick();
  ck_assert_int_eq(f.publish_tries, 0);  // all pending

  // 7001 runs: started once
  f.jobs[7001].phase = FLEXCO_RSVC_PJ_RUNNING;
  f.jobs[7001].ran = true;
  s.tick();
  ck_assert_int_eq(f.published.size(), 1);
  CK_STR(f.published[0].type.c_str(), "part_job_started");
  ck_assert_int_eq(f.published[0].job_id, 7001);
  ck_assert_int_eq(f.published[0].uid, kAlice);
  ck_assert(f.published[0].fields.find("\"reservation\":\"flexco_1\"") != std::string::npos);
  ck_assert(f.published[0].fields.find("\"reservation_id\":1") != std::string::npos);
  ck_assert(f.published[0].fields.find("\"state\":\"RUNNING\"") != std::string::npos);
  ck_assert(json_is_true(json_object_get(s.get(kDaemon, 1).job(0), "started")));
  s.tick();
  ck_assert_int_eq(f.published.size(), 1);
  // it ends: ended once
  f.jobs[7001].phase = FLEXCO_RSVC_PJ_FINISHED;
  s.tick();
  ck_assert_int_eq(f.published.size(), 2);
  CK_STR(f.published[1].type.c_str(), "part_job_ended");
  ck_assert_int_eq(f.published[1].job_id, 7001);
  ck_assert(f.published[1].fields.find("\"part_index\":0") != std::string::npos);
  s.tick();
  ck_assert_int_eq(f.published.size(), 2);

  // 7002 started and ended within one period: both, in order; 7003
  // cancelled while pending: ended only; 7004 forgotten by Slurm: ended
  f.jobs[7002].phase = FLEXCO_RSVC_PJ_FINISHED;
  f.jobs[7002].ran = true;
  f.jobs[7003].phase = FLEXCO_RSVC_PJ_FINISHED;
  f.jobs.erase(7004);
  s.tick();
  ck_assert_int_eq(f.published.size(), 6);
  CK_STR(f.published[2].type.c_str(), "part_job_started");
  ck_assert_int_eq(f.published[2].job_id, 7002);
  CK_STR(f.published[3].type.c_str(), "part_job_ended");
  ck_assert_int_eq(f.published[3].job_id, 7002);
  CK_STR(f.published[4].type.c_str(), "part_job_ended");
  ck_assert_int_eq(f.published[4].job_id, 7003);
  CK_STR(f.published[5].type.c_str(), "part_job_ended");
  ck_assert_int_eq(f.published[5].job_id, 7004);
  ck_assert(f.published[5].fields.find("\"state\":\"UNKNOWN\"") != std::string::npos);

  // the queue is full: not marked published, the next pass publishes
  ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, 4)).n("job_id"), 7005);
  f.jobs[7005].phase = FLEXCO_RSVC_PJ_RUNNING;
  f.jobs[7005].ran = true;
  f.publish_ok = false;
  const int tries = f.publish_tries;
  s.tick();
  ck_assert_int_eq(f.publish_tries, tries + 1);
  ck_assert_int_eq(f.published.size(), 6);
  ck_assert(json_is_false(json_object_get(s.get(kDaemon, 1).job(4), "started")));
  s.tick();
  ck_assert_int_eq(f.publish_tries, tries + 2);
  ck_assert(json_is_false(json_object_get(s.get(kDaemon, 1).job(4), "started")));
  f.publish_ok = true;
  s.tick();
  ck_assert_int_eq(f.published.size(), 7);
  CK_STR(f.published[6].type.c_str(), "part_job_started");
  ck_assert_int_eq(f.published[6].job_id, 7005);
  ck_assert(json_is_true(json_object_get(s.get(kDaemon, 1).job(4), "started")));
  // its end, dropped once, then published
  f.jobs[7005].phase = FLEXCO_RSVC_PJ_FINISHED;
  f.publish_ok = false;
  s.tick();
  ck_assert(json_is_false(json_object_get(s.get(kDaemon, 1).job(4), "ended")));
  f.publish_ok = true;
  s.tick();
  ck_assert_int_eq(f.published.size(), 8);
  CK_STR(f.published[7].type.c_str(), "part_job_ended");
  ck_assert(json_is_true(json_object_get(s.get(kDaemon, 1).job(4), "ended")));

  // the flags are saved: a restart repeats nothing
  s.close();
  Svc b(f);
  b.tick();
  b.tick();
  ck_assert_int_eq(f.published.size(), 8);
}
END_TEST

// The start gate (doc/reservations.md): a release with a lease, its
// confirmation, and a lease that lapses unconfirmed, across a restart.
START_TEST(start_gate) {
  STARTED(f, s);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 4, kT0 + 60, 7200)).status, 201);
  ck_assert_int_eq(s.confirm(kDaemon, 1).status, 200);
  for (int part = 0; part < 4; part++)
    ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, part, true)).status, 201);
  ck_assert(f.jobs[7001].held && f.jobs[7004].held);

  // bodies that are not a lease or a confirmation change nothing
  for (const char* bad : {"{", "[]", "{\"lease_end\":0}", "{\"lease_end\":\"x\"}",
                          "{\"confirm\":false}", "{\"lease_end\":5,\"confirm\":true}",
                          "{\"other\":1}"}) {
    Res r = s.release(kDaemon, 1, 7001, bad);
    ck_assert_msg(r.status == 400, "%s: %d", bad, r.status);
  }
  ck_assert(f.jobs[7001].held);
  // a lease that has ended already releases nothing
  Res late = s.release(kDaemon, 1, 7001, "{\"lease_end\":" + std::to_string(kT0) + "}");
  ck_assert_int_eq(late.status, 409);
  CK_STR(late.code().c_str(), "lease_expired");
  ck_assert(f.jobs[7001].held);
  // only DaemonUsers
  ck_assert_int_eq(s.release(kAlice, 1, 7001, "{\"confirm\":true}").status, 403);

  // 7001..7003 released under a lease ending at kT0+30; the lease is on
  // disk before the hold goes
  const std::string lease = "{\"lease_end\":" + std::to_string(kT0 + 30) + "}";
  for (std::uint32_t j : {7001u, 7002u, 7003u}) {
    Res r = s.release(kDaemon, 1, j, lease);
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_is_true(r.m("released")));
    ck_assert_int_eq(r.n("lease_end"), kT0 + 30);
    ck_assert(!f.jobs[j].held);
  }
  {
    auto rec = saved_record(f.saved_texts.back(), 1);
    json_t* j0 = json_array_get(json_object_get(rec.get(), "jobs"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(j0, "lease_end")), kT0 + 30);
  }
  // a failed save releases nothing
  f.save_errno = ENOSPC;
  Res ns = s.release(kDaemon, 1, 7004, lease);
  ck_assert_int_eq(ns.status, 503);
  ck_assert(f.jobs[7004].held);
  f.save_errno = 0;
  // 7001 starts and is confirmed; 7002 starts, 7003 waits, neither is
  // confirmed; 7004 was never released
  f.jobs[7001].phase = f.jobs[7002].phase = FLEXCO_RSVC_PJ_RUNNING;
  f.jobs[7001].ran = f.jobs[7002].ran = true;
  Res c = s.release(kDaemon, 1, 7001, "{\"confirm\":true}");
  ck_assert_int_eq(c.status, 200);
  ck_assert(json_is_true(c.m("confirmed")));
  f.now = kT0 + 29;
  s.tick();
  ck_assert_int_eq(f.job_cancels, 0);
  // a restart keeps the leases (a takeover: the next controller enforces)
  s.close();
  Svc b(f);
  b.tick();
  f.now = kT0 + 30;
  b.tick();
  ck_assert_int_eq(f.jobs[7001].phase, FLEXCO_RSVC_PJ_RUNNING);   // confirmed: runs on
  ck_assert_int_eq(f.jobs[7002].phase, FLEXCO_RSVC_PJ_FINISHED);  // ran unconfirmed
  ck_assert_int_eq(f.jobs[7003].phase, FLEXCO_RSVC_PJ_FINISHED);  // waited unconfirmed
  ck_assert_int_eq(f.jobs[7004].phase, FLEXCO_RSVC_PJ_PENDING);   // held, no lease
  ck_assert(f.jobs[7004].held);
  ck_assert_int_eq(f.job_cancels, 2);
  ck_assert(json_is_true(json_object_get(b.get(kDaemon, 1).job(1), "lapsed")));
  ck_assert(json_is_false(json_object_get(b.get(kDaemon, 1).job(0), "lapsed")));
  // the gate of a lapsed job stays shut
  for (const std::string& body : {lease, std::string("{\"confirm\":true}")}) {
    Res r = b.release(kDaemon, 1, 7003, body);
    ck_assert_int_eq(r.status, 409);
    CK_STR(r.code().c_str(), "lease_lapsed");
  }
  auto st = b.stats();
  ck_assert_int_eq(json_integer_value(at(st, "start_leases", "lapsed")), 2);
  b.tick();
  ck_assert_int_eq(f.job_cancels, 2);  // once each
}
END_TEST

// A cancel that Slurm refuses is tried again at the next pass.
START_TEST(start_gate_cancel_retried) {
  STARTED(f, s);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 4, kT0 + 60, 7200)).status, 201);
  ck_assert_int_eq(s.confirm(kDaemon, 1).status, 200);
  ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, 0, true)).status, 201);
  ck_assert_int_eq(
      s.release(kDaemon, 1, 7001, "{\"lease_end\":" + std::to_string(kT0 + 10) + "}").status,
      200);
  f.jobs[7001].phase = FLEXCO_RSVC_PJ_RUNNING;
  f.now = kT0 + 11;
  f.cancel_rc = FLEXCO_RSVC_REFUSED;
  s.tick();
  ck_assert_int_eq(f.jobs[7001].phase, FLEXCO_RSVC_PJ_RUNNING);
  ck_assert(json_is_false(json_object_get(s.get(kDaemon, 1).job(0), "lapsed")));
  f.cancel_rc = FLEXCO_RSVC_OK;
  s.tick();
  ck_assert_int_eq(f.jobs[7001].phase, FLEXCO_RSVC_PJ_FINISHED);
  ck_assert(json_is_true(json_object_get(s.get(kDaemon, 1).job(0), "lapsed")));
}
END_TEST

// A part job submitted held that runs although the API never released it
// (someone's `scontrol release`) is cancelled at the next pass, across a
// restart too; one released through the API runs on, and so does one
// submitted without a hold.
START_TEST(start_gate_hand_release) {
  STARTED(f, s);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 4, kT0 + 60, 7200)).status, 201);
  ck_assert_int_eq(s.confirm(kDaemon, 1).status, 200);
  for (int part = 0; part < 2; part++)
    ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, part, true)).status, 201);
  ck_assert_int_eq(s.submit(kDaemon, 1, job_body(1, 600, 2, false)).status, 201);
  // 7002 through the API, with a lease, then confirmed
  ck_assert_int_eq(
      s.release(kDaemon, 1, 7002, "{\"lease_end\":" + std::to_string(kT0 + 30) + "}").status, 200);
  ck_assert_int_eq(s.release(kDaemon, 1, 7002, "{\"confirm\":true}").status, 200);
  {
    auto rec = saved_record(f.saved_texts.back(), 1);
    json_t* jobs = json_object_get(rec.get(), "jobs");
    ck_assert(json_is_true(json_object_get(json_array_get(jobs, 0), "gated")));
    ck_assert(json_is_false(json_object_get(json_array_get(jobs, 1), "gated")));
    ck_assert(json_is_false(json_object_get(json_array_get(jobs, 2), "gated")));
  }
  // a restart keeps the flag
  s.close();
  Svc b(f);
  b.tick();
  ck_assert_int_eq(f.job_cancels, 0);
  // all three run; 7001's hold went by hand
  f.jobs[7001].held = false;
  for (std::uint32_t j : {7001u, 7002u, 7003u}) {
    f.jobs[j].phase = FLEXCO_RSVC_PJ_RUNNING;
    f.jobs[j].ran = true;
  }
  b.tick();
  ck_assert_int_eq(f.job_cancels, 1);
  ck_assert_int_eq(f.jobs[7001].phase, FLEXCO_RSVC_PJ_FINISHED);
  ck_assert_int_eq(f.jobs[7002].phase, FLEXCO_RSVC_PJ_RUNNING);
  ck_assert_int_eq(f.jobs[7003].phase, FLEXCO_RSVC_PJ_RUNNING);
  ck_assert_int_eq(json_integer_value(at(b.stats(), "start_leases", "ungated_cancels")), 1);
  // its gate stays shut, and it is cancelled once
  Res r = b.release(kDaemon, 1, 7001, "{\"lease_end\":" + std::to_string(kT0 + 60) + "}");
  ck_assert_int_eq(r.status, 409);
  CK_STR(r.code().c_str(), "lease_lapsed");
  b.tick();
  ck_assert_int_eq(f.job_cancels, 1);
}
END_TEST

// ---------------------------------------------------------------------------
// 9. ids

START_TEST(id_sequence) {
  Fake f;
  {
    Svc a(f);
    a.tick();
    ck_assert_int_eq(a.create(kDaemon, resv_body("alice", 1, kT0, 7200)).n("id"), 1);
    a.close();
  }
  // made by hand meanwhile: never an id Slurm already has
  f.hand_made(41, "bob", kBob, 1, kT0, kT0 + 7200);
  {
    Svc b(f);
    ck_assert_int_eq(b.create(kDaemon, resv_body("alice", 1, kT0, 7200)).n("id"), 42);
    b.tick();  // flexco_41 is an orphan: deleted
    ck_assert(f.was_removed(41));
    ck_assert_int_eq(b.create(kDaemon, resv_body("alice", 1, kT0, 7200)).n("id"), 43);
    ck_assert_int_eq(json_integer_value(at(b.stats(), "next_id")), 44);
    // a hand-made one above the counter, between two creates
    f.hand_made(50, nullptr, kNoUid, 1, kT0, kT0 + 7200);
    ck_assert_int_eq(b.create(kDaemon, resv_body("alice", 1, kT0, 7200)).n("id"), 51);
    ck_assert_int_eq(b.create(kDaemon, resv_body("alice", 1, kT0, 7200)).n("id"), 52);
  }  // crash: the current copy has next_id 53, the previous one 53 too
  // the newest copy is torn: the previous one (flexco_52 "creating",
  // next_id 53) is loaded, and the next id is one higher still
  CK_STR(saved_state_of(*f.prev, 52).c_str(), "creating");
  f.current = std::string("{");
  f.resvs.erase(50);
  Svc c(f);
  c.tick();
  ck_assert_int_eq(f.removes, 1);  // flexco_41 only, before
  ck_assert_int_eq(json_integer_value(at(c.stats(), "next_id")), 54);
  ck_assert_int_eq(c.create(kDaemon, resv_body("alice", 1, kT0, 7200)).n("id"), 54);
}
END_TEST

// ---------------------------------------------------------------------------
// 10. an adopted reservation without Users=

START_TEST(adopted_without_users_survives_a_restart) {
  Fake f;
  f.current = std::string("not json");
  f.prev = std::string("not json either");
  f.hand_made(9, nullptr, kNoUid, 2, kT0, kT0 + 7200);
  {
    Svc a(f);
    a.tick();
    Res r = a.get(kDaemon, 9);
    ck_assert_int_eq(r.status, 200);
    CK_STR(r.s("state"), "confirmed");
    CK_STR(r.s("user"), "");
    ck_assert_int_eq(r.n("uid"), kNoUid);
    a.close();
  }
  ck_assert(saved_record(*f.current, 9) != nullptr);
  Svc b(f);
  CK_STR(json_string_value(at(b.stats(), "state", "loaded_from")), "current");
  b.tick();
  ck_assert_int_eq(f.removes, 0);  // not an orphan
  ck_assert(f.resvs.count(9) == 1);
  CK_STR(b.get(kDaemon, 9).s("state"), "confirmed");
  ck_assert_int_eq(json_integer_value(at(b.stats(), "adopted")), 0);
  // and it can still be deleted by request
  ck_assert_int_eq(b.remove(kDaemon, 9).status, 200);
  ck_assert(f.resvs.count(9) == 0);
}
END_TEST

// ---------------------------------------------------------------------------
// 11. statistics

START_TEST(stats) {
  STARTED(f, s);
  auto st = s.stats();
  CK_STR(json_string_value(at(st, "state", "loaded_from")), "none");
  ck_assert(json_is_true(at(st, "state", "recovered")));
  ck_assert(json_is_true(at(st, "state", "saving")));
  ck_assert_int_eq(json_integer_value(at(st, "state", "save_errors")), 0);
  ck_assert(json_is_null(at(st, "state", "last_save_error")));
  ck_assert_int_eq(json_integer_value(at(st, "ticks")), 1);
  ck_assert_int_eq(json_integer_value(at(st, "idempotency", "capacity")), 4096);
  ck_assert_int_eq(json_integer_value(at(st, "idempotency", "per_uid")), 1024);

  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0, 7200)).status, 201);
  ck_assert_int_eq(s.create(kDaemon, resv_body("alice", 1, kT0, 7200)).status, 201);
  ck_assert_int_eq(s.create(kDaemon, resv_body("bob", 1, kT0, 7200)).status, 201);
  ck_assert_int_eq(s.confirm(kDaemon, 3).status, 200);
  ck_assert_int_eq(s.remove(kDaemon, 2).status, 200);
  st = s.stats();
  ck_assert_int_eq(by_state(st, "creating"), 0);
  ck_assert_int_eq(by_state(st, "tentative"), 1);
  ck_assert_int_eq(by_state(st, "confirmed"), 1);
  ck_assert_int_eq(by_state(st, "deleted"), 1);
  ck_assert_int_eq(by_state(st, "ended"), 0);
  ck_assert_int_eq(by_state(st, "expired"), 0);
  ck_assert_int_eq(json_integer_value(at(st, "next_id")), 4);
  const json_int_t saves = json_integer_value(at(st, "state", "saves"));
  ck_assert_int_eq(saves, f.saves_ok);

  f.now = kT0 + 30;
  f.save_errno = ENOSPC;
  ck_assert_int_eq(s.confirm(kDaemon, 1).status, 503);
  f.save_errno = EIO;
  ck_assert_int_eq(s.confirm(kDaemon, 1).status, 503);
  st = s.stats();
  ck_assert(json_is_false(at(st, "state", "saving")));
  ck_assert_int_eq(json_integer_value(at(st, "state", "save_errors")), 2);
  ck_assert(std::string(json_string_value(at(st, "state", "last_save_error"))).find(
                std::strerror(EIO)) != std::string::npos);
  ck_assert_int_eq(json_integer_value(at(st, "state", "last_save_error_at")), kT0 + 30);
  ck_assert_int_eq(json_integer_value(at(st, "state", "saves")), saves);
  ck_assert_int_eq(by_state(st, "confirmed"), 2);

  f.save_errno = 0;
  s.tick();
  st = s.stats();
  ck_assert(json_is_true(at(st, "state", "saving")));
  ck_assert_int_eq(json_integer_value(at(st, "state", "save_errors")), 2);
  ck_assert_int_eq(json_integer_value(at(st, "state", "saves")), saves + 1);
  ck_assert_int_eq(json_integer_value(at(st, "ticks")), 2);
}
END_TEST

// Fencing of deposed flexcods (doc/reservations.md, "Epochs"): the
// highest Flexco-Epoch of each grid is kept, saved before anything of it
// is done, and survives a restart or a takeover by another controller; a
// mutation with a lower one is refused (409 stale_epoch), a read is not;
// only DaemonUsers raise it; no header is not fenced; a malformed one is
// 400.  A state file without epochs (older plugins') loads with none.
START_TEST(epoch_fencing) {
  Fake f;
  {
    Svc a(f);
    a.tick();
    ck_assert_int_eq(a.create(kDaemon, resv_body("alice", 1, kT0 + 60, 600)).status, 201);
    // an older plugin's state file: no "epochs" member
    ck_assert(f.current && f.current->find("epochs") == std::string::npos);
    ck_assert_int_eq(a.fence(kDaemon, nullptr, true), 0);
    ck_assert_int_eq(a.fence(kDaemon, "g1:3", false), 0);  // a read raises it
    ck_assert(f.current->find("\"epochs\":{\"g1\":3}") != std::string::npos);
    Res r;
    ck_assert_int_eq(a.fence(kDaemon, "g1:2", true, &r), 409);
    CK_STR(r.code().c_str(), "stale_epoch");
    ck_assert_int_eq(json_integer_value(json_object_get(r.m("error"), "epoch")), 3);
    ck_assert_int_eq(a.fence(kDaemon, "g1:2", false), 0);  // reads are answered
    ck_assert_int_eq(a.fence(kDaemon, "g1:3", true), 0);
    ck_assert_int_eq(a.fence(kDaemon, "g2:1", true), 0);  // another grid, its own
    ck_assert_int_eq(a.fence(kAlice, "g1:99", true), 0);  // not flexcod: ignored
    ck_assert_int_eq(a.fence(kDaemon, "g1:1", true), 409);
    ck_assert_int_eq(a.fence(kDaemon, "g1:x", true, &r), 400);
    CK_STR(r.code().c_str(), "bad_request");
    ck_assert_int_eq(a.fence(kDaemon, "g1:03", true), 400);
    auto st = a.stats();
    ck_assert_int_eq(json_integer_value(at(st, "epochs", "refused_stale")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(at(st, "epochs", "grids"), "g1")), 3);
    a.close();
  }
  // another controller on the saved state (or slurmctld restarted)
  {
    Svc b(f);
    b.tick();
    ck_assert_int_eq(b.fence(kDaemon, "g1:2", true), 409);
    ck_assert_int_eq(b.fence(kDaemon, "g2:1", true), 0);
    // a raise that cannot be saved refuses the request: nothing of the
    // new epoch is done before it is on disk
    f.save_errno = ENOSPC;
    Res r;
    ck_assert_int_eq(b.fence(kDaemon, "g1:4", true, &r), 503);
    CK_STR(r.code().c_str(), "state_not_saved");
    f.save_errno = 0;
    ck_assert_int_eq(b.fence(kDaemon, "g1:4", true), 0);
    ck_assert_int_eq(b.fence(kDaemon, "g1:3", true), 409);
    b.close();
  }
  // a state file with a malformed epoch is no valid copy
  std::string bad = *f.current;
  const std::size_t at4 = bad.find("\"g1\":4");
  ck_assert(at4 != std::string::npos);
  bad.replace(at4, 6, "\"g1\":0");
  f.prev = f.current;
  f.current = bad;
  Svc c(f);
  CK_STR(json_string_value(at(c.stats(), "state", "loaded_from")), "previous");
  ck_assert_int_eq(c.fence(kDaemon, "g1:3", true), 409);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("resv_service");
  TCase* tc = tcase_create("service");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, happy_path);
  tcase_add_test(tc, refusals_make_nothing);
  tcase_add_test(tc, idempotency);
  tcase_add_test(tc, deadlines);
  tcase_add_test(tc, orphan_with_current_state);
  tcase_add_test(tc, adopt_with_previous_state);
  tcase_add_test(tc, adopt_with_lost_state);
  tcase_add_test(tc, no_file_but_slurm_has_reservations);
  tcase_add_test(tc, takeover);
  tcase_add_test(tc, hand_back);
  tcase_add_test(tc, save_failures);
  tcase_add_test(tc, replay_waits_for_the_state_on_disk);
  tcase_add_test(tc, crash_after_submission_written_ahead);
  tcase_add_test(tc, crash_before_slurm_had_the_job);
  tcase_add_test(tc, crash_during_create);
  tcase_add_test(tc, part_job_events);
  tcase_add_test(tc, start_gate);
  tcase_add_test(tc, start_gate_cancel_retried);
  tcase_add_test(tc, start_gate_hand_release);
  tcase_add_test(tc, id_sequence);
  tcase_add_test(tc, adopted_without_users_survives_a_restart);
  tcase_add_test(tc, stats);
  tcase_add_test(tc, epoch_fencing);
  suite_add_tcase(s, tc);
  return s;
}

int main() { return run_check_suite(make_suite()); }
