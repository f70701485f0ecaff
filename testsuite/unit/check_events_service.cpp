// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/events_service through its C interface
// (service/capi_events_service.h), the plugin's ordered, numbered events:
// early job ends seen by the epilog hook, the poll or both, reported once
// per job run, also across a restart; runs that are not early; a re-used
// job id; the floor; the baseline of a first start; failing saves of the
// sequence mark (ENOSPC, EIO), crashes and takeovers; a controller not in
// charge; the queues' overflows; PrivateData; reservation events; the
// stats; and the events thread -- on a fake host (an in-memory Slurm, a
// fake clock, a fake state-file store with switchable failures), without
// slurmctld.

#include <jansson.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/capi_decode.h"
#include "service/capi_events_service.h"

#include <check.h>

#include "check_main.hpp"

namespace {

constexpr std::int64_t kT0 = 1796000000;
constexpr std::uint32_t kAlice = 1001, kBob = 1002;

// ---------------------------------------------------------------------------
// the fake host

struct SJob {
  std::uint32_t uid = kAlice;
  bool finished = true;
  std::int64_t start = 0, end = 0;
  std::uint32_t limit = 10;  // minutes
  std::string partition = "batch", nodes = "n[1-2]", account = "physics";
  const char* state = "COMPLETED";
};

struct SResv {
  std::string name;
  std::int64_t start = 0, end = 0;
  std::string nodes = "n[3-4]";
  std::vector<std::uint32_t> users;
  bool users_not = false;
};

// the state file's copies, shared by the two controllers of a takeover
struct Disk {
  std::optional<std::string> current, prev;
  int save_errno = 0;
  std::deque<int> save_script;
  int save_attempts = 0, saves_ok = 0;
};

struct Viewer {
  std::uint32_t uid;
  bool admin;
};

struct Fake {
  Fake(std::shared_ptr<Disk> d = std::make_shared<Disk>());
  flexco_esvc_host_t host{};
  std::shared_ptr<Disk> disk;
  std::int64_t now = kT0;
  bool in_charge = true;
  bool crashed = false;  // its saves never reach the disk
  std::map<std::uint32_t, SJob> jobs;
  std::vector<SResv> resvs;
  std::int64_t resv_update = kT0 - 1000;
  int locked = 0, lock_calls = 0;
  std::vector<std::string> logs;
};

Fake* F(void* a) { return static_cast<Fake*>(a); }

// a line the service logged contains text
bool logged(const Fake& f, const char* text) {
  for (const auto& l : f.logs)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

void h_log(void* a, int level, const char* msg) {
  F(a)->logs.push_back(std::to_string(level) + " " + msg);
}
std::int64_t h_now(void* a) { return F(a)->now; }
bool h_in_charge(void* a) { return F(a)->in_charge; }
void h_lock_jobs(void* a) {
  ck_assert_int_eq(F(a)->locked, 0);
  F(a)->locked++;
  F(a)->lock_calls++;
}
void h_unlock_jobs(void* a) {
  ck_assert_int_eq(F(a)->locked, 1);
  F(a)->locked--;
}
void job_view(std::uint32_t id, const SJob& j, flexco_esvc_job_t* out) {
  std::memset(out, 0, sizeof(*out));
  out->job_id = id;
  out->user_id = j.uid;
  out->node_cnt = 2;
  out->state = j.state;
  out->finished = j.finished;
  out->start = j.start;
  out->end = j.end;
  out->time_limit = j.limit;
  out->partition = j.partition.c_str();
  out->nodes = j.nodes.c_str();
  out->account = j.account.c_str();
}
bool h_find_job(void* a, std::uint32_t id, flexco_esvc_job_t* out) {
  Fake* f = F(a);
  ck_assert_int_eq(f->locked, 1);
  auto it = f->jobs.find(id);
  if (it == f->jobs.end()) return false;
  job_view(id, it->second, out);
  return true;
}
void h_each_job(void* a, flexco_esvc_job_cb cb, void* sink) {
  Fake* f = F(a);
  ck_assert_int_eq(f->locked, 1);
  for (const auto& [id, j] : f->jobs) {
    flexco_esvc_job_t v;
    job_view(id, j, &v);
    cb(sink, &v);
  }
}
std::int64_t h_resv_update(void* a) { return F(a)->resv_update; }
void h_copy_resvs(void* a, std::int64_t* when, std::int64_t* update, flexco_esvc_resv_cb cb,
                  void* sink) {
  Fake* f = F(a);
  *when = f->now;
  *update = f->resv_update;
  for (const auto& r : f->resvs) {
    flexco_evstate_resv_t v{};
    v.name = const_cast<char*>(r.name.c_str());
    v.start = r.start;
    v.end = r.end;
    v.nodes = const_cast<char*>(r.nodes.c_str());
    v.node_cnt = 2;
    v.users = r.users.empty() ? nullptr : const_cast<std::uint32_t*>(r.users.data());
    v.user_cnt = r.users.size();
    v.users_not = r.users_not;
    cb(sink, &v);
  }
}
std::uint32_t h_node_count(void*, const char* nodes, std::uint32_t fallback) {
  // "n[1-2]" style: two nodes; anything else the fallback
  return nodes != nullptr && std::strchr(nodes, '-') != nullptr ? 2 : fallback;
}
bool h_visible(void*, const void* viewer, const flexco_evstate_acl_t* acl) {
  const auto* v = static_cast<const Viewer*>(viewer);
  if (v->admin) return true;
  if (acl->job && acl->job_uid != v->uid) return false;
  if (acl->resv) {
    if (acl->users_not) return false;
    bool in = false;
    for (std::size_t i = 0; i < acl->user_cnt; i++) in = in || acl->users[i] == v->uid;
    if (!in) return false;
  }
  return true;
}
// plugin/statefile.c's order: the current copy, else the previous one
statefile_src_t h_load(void* a, std::size_t max, statefile_parse_t parse, void* parse_arg) {
  Disk* d = F(a)->disk.get();
  char why[256];
  if (!d->current && !d->prev) return STATEFILE_NONE;
  if (d->current && d->current->size() <= max &&
      parse(d->current->data(), d->current->size(), parse_arg, why, sizeof(why)) == 0)
    return STATEFILE_CURRENT;
  if (d->prev && d->prev->size() <= max &&
      parse(d->prev->data(), d->prev->size(), parse_arg, why, sizeof(why)) == 0)
    return STATEFILE_PREV;
  return STATEFILE_LOST;
}
int h_save(void* a, const char* text, std::size_t len, char* why, std::size_t why_len) {
  Fake* f = F(a);
  Disk* d = f->disk.get();
  if (f->crashed) {
    std::snprintf(why, why_len, "crashed");
    return -1;
  }
  d->save_attempts++;
  int e = d->save_errno;
  if (!d->save_script.empty()) {
    e = d->save_script.front();
    d->save_script.pop_front();
  }
  if (e != 0) {
    std::snprintf(why, why_len, "cannot write flexco_events.state.new.1.1: %s", std::strerror(e));
    return -1;
  }
  if (d->current) d->prev = d->current;
  d->current = std::string(text, len);
  d->saves_ok++;
  return 0;
}

Fake::Fake(std::shared_ptr<Disk> d) : disk(std::move(d)) {
  host.arg = this;
  host.log = h_log;
  host.now = h_now;
  host.in_charge = h_in_charge;
  host.lock_jobs = h_lock_jobs;
  host.unlock_jobs = h_unlock_jobs;
  host.find_job = h_find_job;
  host.each_job = h_each_job;
  host.resv_update = h_resv_update;
  host.copy_resvs = h_copy_resvs;
  host.node_count = h_node_count;
  host.visible = h_visible;
  host.load = h_load;
  host.save = h_save;
}

// ---------------------------------------------------------------------------
// the service

struct Svc {
  explicit Svc(Fake& f, std::uint32_t capacity = 4096, bool thread = false) : f(f) {
    s = flexco_esvc_create();
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(flexco_esvc_open(s, capacity, &f.host, thread), 0);
  }
  ~Svc() {
    if (s != nullptr) flexco_esvc_destroy(s);
  }
  // the process dies: nothing more reaches the disk
  void crash() {
    f.crashed = true;
    flexco_esvc_destroy(s);
    s = nullptr;
  }
  void cycle() { flexco_esvc_cycle(s); }
  // a clean stop and a start of the same process
  void restart() {
    flexco_esvc_close(s);
    ck_assert_int_eq(flexco_esvc_open(s, 4096, &f.host, false), 0);
  }
  // the epilog hook of job id as Slurm has it
  void hook(std::uint32_t id) {
    flexco_esvc_job_t v;
    job_view(id, f.jobs.at(id), &v);
    flexco_esvc_job_end(s, &v);
  }
  // every event the viewer may see (NULL: all), oldest first
  std::vector<json_t*> events(const Viewer* viewer = nullptr) {
    std::vector<json_t*> out;
    flexco_ring_page_t pg{};
    char* text = flexco_esvc_query(s, 0, 100000, viewer, &pg);
    ck_assert_ptr_nonnull(text);
    json_error_t err;
    json_t* doc = json_loads(text, 0, &err);
    std::free(text);
    ck_assert_ptr_nonnull(doc);
    json_t* arr = json_object_get(doc, "events");
    ck_assert_uint_eq(json_array_size(arr), pg.count);
    for (std::size_t i = 0; i < json_array_size(arr); i++) {
      json_t* e = json_array_get(arr, i);
      json_incref(e);
      out.push_back(e);
      pages.push_back(e);
    }
    json_decref(doc);
    return out;
  }
  // the events of a type (the job_ended_early ones of a job)
  std::vector<json_t*> of(const char* type, std::uint32_t job_id = 0) {
    std::vector<json_t*> out;
    for (json_t* e : events()) {
      if (std::strcmp(json_string_value(json_object_get(e, "type")), type) != 0) continue;
      if (job_id != 0 && json_integer_value(json_object_get(e, "job_id")) != job_id) continue;
      out.push_back(e);
    }
    return out;
  }
  std::int64_t stat(const char* name) {
    json_t* st = flexco_esvc_stats_json(s);
    ck_assert_ptr_nonnull(st);
    json_t* v = json_object_get(st, name);
    ck_assert_msg(v != nullptr, "no stats member %s", name);
    const std::int64_t n = json_integer_value(v);
    json_decref(st);
    return n;
  }
  std::uint64_t latest() { return flexco_esvc_latest(s); }
  Fake& f;
  flexco_esvc_t* s = nullptr;
  // the events handed out, kept until the end of the test
  struct Pages {
    ~Pages() {
      for (json_t* e : v) json_decref(e);
    }
    void push_back(json_t* e) { v.push_back(e); }
    std::vector<json_t*> v;
  } pages;
};

std::int64_t num(json_t* e, const char* k) { return json_integer_value(json_object_get(e, k)); }
std::string str(json_t* e, const char* k) {
  const char* s = json_string_value(json_object_get(e, k));
  return s != nullptr ? s : "";
}

void expect_str(json_t* e, const char* k, const char* want) {
  const std::string got = str(e, k);
  ck_assert_msg(got == want, "%s is \"%s\", not \"%s\"", k, got.c_str(), want);
}

// the decoded state on the disk (ck_assert if none or invalid)
struct Saved {
  explicit Saved(const Disk& d) {
    ck_assert(d.current.has_value());
    static const flexco_evstate_limits_t lim = FLEXCO_EVSTATE_LIMITS_DEFAULT;
    char why[256];
    ck_assert_msg(flexco_decode_events_state(d.current->data(), d.current->size(), &lim, &st, why,
                                             sizeof(why)) == 0,
                  "%s", why);
  }
  ~Saved() { flexco_events_state_free(&st); }
  flexco_events_state_t st{};
};

// a job that ran from start to end with a limit of limit minutes
void add_job(Fake& f, std::uint32_t id, std::int64_t start, std::int64_t end,
             std::uint32_t limit = 10, std::uint32_t uid = kAlice) {
  SJob j;
  j.start = start;
  j.end = end;
  j.limit = limit;
  j.uid = uid;
  f.jobs[id] = j;
}

// job id ends now, 100 s into its 10 minutes; the hook sees it; a cycle
void ends_early(Svc& s, std::uint32_t id) {
  add_job(s.f, id, s.f.now - 100, s.f.now);
  s.hook(id);
  s.cycle();
}

// ---------------------------------------------------------------------------
// jobs

START_TEST(early_end_reported_once) {
  Fake f;
  Svc s(f);
  s.cycle();  // the baseline: nothing
  ck_assert_uint_eq(s.latest(), 0);
  f.now += 5;
  // hook and poll: 7 ran 100 s of its 10 minutes
  add_job(f, 7, f.now - 100, f.now);
  s.hook(7);
  f.now += 1;
  s.cycle();
  auto e = s.of("job_ended_early", 7);
  ck_assert_uint_eq(e.size(), 1);
  expect_str(e[0], "detected_by", "epilog");
  ck_assert_int_eq(num(e[0], "seq"), 1);
  ck_assert_int_eq(num(e[0], "planned_end"), kT0 + 5 - 100 + 600);
  ck_assert_int_eq(num(e[0], "seconds_early"), 500);
  ck_assert_int_eq(num(e[0], "node_count"), 2);
  expect_str(e[0], "state", "COMPLETED");
  expect_str(e[0], "partition", "batch");
  expect_str(e[0], "nodes", "n[1-2]");
  ck_assert_int_eq(num(e[0], "user_id"), kAlice);
  ck_assert_int_eq(num(e[0], "actual_end"), kT0 + 5);
  ck_assert_int_eq(num(e[0], "time"), kT0 + 6);
  ck_assert_ptr_null(json_object_get(e[0], "_acl"));
  // the same job again through the poll (a full scan) and the hook
  f.now += 61;
  s.hook(7);
  s.cycle();
  ck_assert_uint_eq(s.of("job_ended_early", 7).size(), 1);

  // the poll alone: 8 ended early and its hook never ran
  add_job(f, 8, f.now - 50, f.now);
  f.now += 61;
  s.cycle();
  e = s.of("job_ended_early", 8);
  ck_assert_uint_eq(e.size(), 1);
  expect_str(e[0], "detected_by", "poll");
  // the hook alone: 9 is gone from Slurm when the cycle looks
  add_job(f, 9, f.now - 50, f.now);
  s.hook(9);
  f.jobs.erase(9);
  s.cycle();
  e = s.of("job_ended_early", 9);
  ck_assert_uint_eq(e.size(), 1);
  expect_str(e[0], "detected_by", "epilog");
  // 16 ends after the last full scan: the poll after a restart sees it
  f.now += 1;
  add_job(f, 16, f.now - 50, f.now);
  s.hook(16);
  s.cycle();
  ck_assert_uint_eq(s.of("job_ended_early", 16).size(), 1);
  const std::uint64_t latest = s.latest();
  ck_assert_uint_eq(latest, 4);

  // a restart: the reported set comes back from the disk
  s.restart();
  f.now += 5;
  const std::int64_t scans = s.stat("job_scans");
  s.cycle();  // the first cycle of a term is a full scan
  ck_assert_int_eq(s.stat("job_scans"), scans + 1);
  ck_assert_uint_eq(s.latest(), latest);
  ck_assert_uint_eq(s.of("job_ended_early", 16).size(), 1);
  // another process after a clean stop
  flexco_esvc_close(s.s);
  Fake g(f.disk);
  g.now = f.now + 5;
  g.jobs = f.jobs;
  Svc t(g);
  t.cycle();
  ck_assert_uint_eq(t.latest(), latest);
  ck_assert_uint_eq(t.events().size(), 4);
  // and a job run the set does not know is news, also then
  add_job(g, 17, g.now - 50, g.now);
  t.hook(17);
  t.cycle();
  ck_assert_uint_eq(t.of("job_ended_early", 17).size(), 1);
}
END_TEST

START_TEST(late_or_unlimited_not_reported) {
  Fake f;
  Svc s(f);
  s.cycle();
  f.now += 5;
  add_job(f, 10, f.now - 700, f.now);                         // past its 10 minutes
  add_job(f, 11, f.now - 100, f.now, FLEXCO_ESVC_NO_LIMIT);  // no limit
  add_job(f, 12, f.now - 600, f.now);                         // exactly on time
  f.jobs[13] = f.jobs[10];
  f.jobs[13].start = f.now - 100;
  f.jobs[13].nodes = "";  // never ran on nodes
  for (std::uint32_t id : {10u, 11u, 12u, 13u}) s.hook(id);
  s.cycle();
  f.now += 61;  // and a full scan
  s.cycle();
  ck_assert_uint_eq(s.latest(), 0);
  ck_assert_uint_eq(s.events().size(), 0);
  // the same for the hook's copy once the job is gone
  add_job(f, 14, f.now - 700, f.now);
  s.hook(14);
  f.jobs.erase(14);
  s.cycle();
  ck_assert_uint_eq(s.latest(), 0);
  // a job still running is no candidate of the poll
  add_job(f, 15, f.now - 100, f.now - 50);
  f.jobs[15].finished = false;
  f.now += 61;
  s.cycle();
  ck_assert_uint_eq(s.latest(), 0);
}
END_TEST

START_TEST(reused_job_id_reported_again) {
  Fake f;
  Svc s(f);
  s.cycle();
  f.now += 5;
  ends_early(s, 20);
  // slurmctld lost its last save and hands out 20 again
  f.now += 300;
  ends_early(s, 20);
  auto e = s.of("job_ended_early", 20);
  ck_assert_uint_eq(e.size(), 2);
  ck_assert_int_ne(num(e[0], "start"), num(e[1], "start"));
}
END_TEST

START_TEST(floor_prunes_old_entries) {
  Fake f;
  Svc s(f);
  s.cycle();
  f.now += 5;
  ends_early(s, 30);
  f.now += 2;
  s.cycle();  // saves (a second after the last)
  {
    Saved sv(*f.disk);
    ck_assert_uint_eq(sv.st.job_cnt, 1);
    ck_assert_uint_eq(sv.st.jobs[0].job_id, 30);
  }
  // Slurm purged the job; a full scan 61 s later moves the floor past
  // its end (plus the slack), which forgets it
  f.jobs.erase(30);
  f.now += 61;
  add_job(f, 31, f.now - 100, f.now);  // something to save
  s.cycle();
  f.now += 2;
  s.cycle();
  Saved sv(*f.disk);
  ck_assert_int_eq(sv.st.job_floor, f.now - 2);
  ck_assert_uint_eq(sv.st.job_cnt, 1);
  ck_assert_uint_eq(sv.st.jobs[0].job_id, 31);
  // a job ending before the floor (less its slack) is no longer the poll's
  add_job(f, 32, f.now - 200, f.now - 100);
  f.now += 61;
  s.cycle();
  ck_assert_uint_eq(s.of("job_ended_early", 32).size(), 0);
}
END_TEST

START_TEST(first_start_takes_a_baseline) {
  Fake f;
  add_job(f, 40, kT0 - 500, kT0 - 100);  // ended early before the start
  SResv r;
  r.name = "maint";
  r.start = kT0 - 100;
  r.end = kT0 + 100;
  f.resvs.push_back(r);
  Svc s(f);
  s.cycle();
  f.now += 61;
  s.cycle();
  ck_assert_uint_eq(s.latest(), 0);
  ck_assert_int_eq(s.stat("job_scans"), 2);
  // the reservation is tracked all the same: its end is news
  f.now = kT0 + 101;
  s.cycle();
  auto e = s.of("reservation_ended");
  ck_assert_uint_eq(e.size(), 1);
  ck_assert_uint_eq(s.of("reservation_activated").size(), 0);
}
END_TEST

START_TEST(failing_mark_saves_hold_events) {
  for (int err : {ENOSPC, EIO}) {
    auto disk = std::make_shared<Disk>();
    Fake f(disk);
    Svc s(f);
    s.cycle();
    disk->save_errno = err;
    f.now += 5;
    add_job(f, 50, f.now - 100, f.now);
    s.hook(50);
    ck_assert_int_eq(flexco_esvc_publish(s.s, "part_job_started", json_object(), nullptr, f.now,
                                         false),
                     0);
    s.cycle();
    // no number without the mark on disk: both wait
    ck_assert_uint_eq(s.latest(), 0);
    ck_assert_uint_eq(s.events().size(), 0);
    ck_assert_int_eq(s.stat("unnumbered"), 2);
    ck_assert_int_gt(s.stat("state_save_errors"), 0);
    json_t* st = flexco_esvc_stats_json(s.s);
    ck_assert(std::strstr(json_string_value(json_object_get(st, "state_last_save_error")),
                          std::strerror(err)) != nullptr);
    json_decref(st);
    f.now += 2;
    s.cycle();
    ck_assert_uint_eq(s.latest(), 0);
    // the disk is back: the held ones first, in order
    disk->save_errno = 0;
    f.now += 2;
    add_job(f, 51, f.now - 100, f.now);
    s.hook(51);
    s.cycle();
    auto ev = s.events();
    ck_assert_uint_eq(ev.size(), 3);
    expect_str(ev[0], "type", "part_job_started");
    ck_assert_int_eq(num(ev[0], "seq"), 1);
    ck_assert_int_eq(num(ev[1], "job_id"), 50);
    ck_assert_int_eq(num(ev[2], "job_id"), 51);
    ck_assert_int_eq(s.stat("unnumbered"), 0);
    ck_assert(logged(f, "numbering resumes at 1"));
  }
}
END_TEST

// Numbers across a block boundary, a save failing there and a crash: no
// number twice, none above the mark on disk.
START_TEST(no_number_twice_after_a_crash) {
  auto disk = std::make_shared<Disk>();
  std::map<std::int64_t, std::int64_t> seen;  // seq: the event's n
  int id = 0;
  std::int64_t now = kT0;
  for (int round = 0; round < 3; round++) {
    Fake f(disk);
    f.now = now;
    Svc s(f);
    s.cycle();
    for (int batch = 0; batch < 3; batch++) {
      if (batch == 1) disk->save_errno = round == 1 ? EIO : ENOSPC;
      for (int i = 0; i < 600; i++)
        ck_assert_int_eq(flexco_esvc_publish(s.s, "part_job_ended",
                                             json_pack("{s:i}", "n", id++), nullptr, f.now,
                                             false),
                         0);
      f.now += 2;
      s.cycle();
      if (batch == 1) {
        // the block of 1024 is exhausted: the mark's save fails, the
        // batch waits (the first round: 1200 > 1024)
        Saved sv(*disk);
        ck_assert_uint_le(s.latest(), sv.st.reserved);
      }
      disk->save_errno = 0;
    }
    for (json_t* e : s.events()) {
      const std::int64_t q = num(e, "seq");
      auto [it, fresh] = seen.emplace(q, num(e, "n"));
      ck_assert_msg(fresh || it->second == num(e, "n"), "seq %lld twice",
                    static_cast<long long>(q));
    }
    Saved sv(*disk);
    ck_assert_uint_le(s.latest(), sv.st.reserved);
    now = f.now + 10;
    s.crash();
  }
  ck_assert_uint_ge(seen.size(), 1800);
}
END_TEST

START_TEST(not_in_charge_does_nothing) {
  Fake f;
  f.in_charge = false;
  Svc s(f);
  add_job(f, 60, f.now - 100, f.now);
  s.hook(60);
  ck_assert_int_eq(
      flexco_esvc_publish(s.s, "part_job_started", json_object(), nullptr, f.now, false), 0);
  const int saves = f.disk->save_attempts;
  for (int i = 0; i < 3; i++) {
    f.now += 61;
    s.cycle();
  }
  ck_assert_uint_eq(s.latest(), 0);
  ck_assert_int_eq(s.stat("published"), 0);
  ck_assert_int_eq(f.disk->save_attempts, saves);
  ck_assert_int_eq(f.lock_calls, 0);
  // in charge again: what waited is published
  f.in_charge = true;
  s.cycle();
  ck_assert_uint_eq(s.latest(), 2);
}
END_TEST

START_TEST(takeover_continues_above) {
  auto disk = std::make_shared<Disk>();
  Fake a(disk);
  Svc sa(a);
  sa.cycle();
  for (int i = 0; i < 5; i++)
    flexco_esvc_publish(sa.s, "part_job_started", json_object(), nullptr, a.now, false);
  a.now += 2;
  sa.cycle();
  a.now += 2;
  sa.cycle();  // the ring on disk (a second after the mark's save)
  const std::uint64_t top = sa.latest();
  ck_assert_uint_eq(top, 5);
  // the other controller takes over while a still runs (it is no longer
  // in charge: its cycles do nothing)
  a.in_charge = false;
  Fake b(disk);
  b.now = a.now + 3;
  Svc sb(b);
  sb.cycle();
  flexco_esvc_publish(sb.s, "part_job_started", json_object(), nullptr, b.now, false);
  b.now += 2;
  sb.cycle();
  auto ev = sb.events();
  ck_assert_uint_eq(ev.size(), 6);  // a's events came with the state
  ck_assert_int_gt(num(ev[5], "seq"), static_cast<std::int64_t>(top));
  a.now += 5;
  sa.cycle();
  ck_assert_uint_eq(sa.latest(), top);
}
END_TEST

START_TEST(publish_queue_full_drops) {
  Fake f;
  Svc s(f);
  s.cycle();
  for (int i = 0; i < FLEXCO_ESVC_EXT_QUEUE_LEN; i++) {
    json_t* o = json_pack("{s:i}", "n", i);
    ck_assert_int_eq(flexco_esvc_publish(s.s, "part_job_started", o, nullptr, f.now, false), 0);
  }
  ck_assert_int_eq(s.stat("publish_dropped"), 0);
  ck_assert_int_eq(flexco_esvc_publish(s.s, "part_job_started", json_pack("{s:i}", "n", -1),
                                       nullptr, f.now, false),
                   -1);
  ck_assert_int_eq(s.stat("publish_dropped"), 1);
  s.cycle();
  // the test hook's refusal, and a malformed event (not counted)
  ck_assert_int_eq(flexco_esvc_publish(s.s, "part_job_started", json_pack("{s:i}", "n", -2),
                                       nullptr, f.now, true),
                   -1);
  ck_assert_int_eq(flexco_esvc_publish(s.s, "part_job_started", json_array(), nullptr, f.now,
                                       false),
                   -1);
  ck_assert_int_eq(s.stat("publish_dropped"), 2);
  s.cycle();
  auto ev = s.events();
  ck_assert_uint_eq(ev.size(), FLEXCO_ESVC_EXT_QUEUE_LEN);
  for (json_t* e : ev) ck_assert_int_ge(num(e, "n"), 0);
  ck_assert_int_eq(s.stat("published"), FLEXCO_ESVC_EXT_QUEUE_LEN);
  // closed: refused and counted
  flexco_esvc_close(s.s);
  ck_assert_int_eq(
      flexco_esvc_publish(s.s, "part_job_started", json_object(), nullptr, f.now, false), -1);
}
END_TEST

START_TEST(hook_overflow_forces_a_full_scan) {
  Fake f;
  Svc s(f);
  s.cycle();
  f.now += 5;
  const std::int64_t scans = s.stat("job_scans");
  // a hook with nothing early, then one more the queue has no room for
  for (std::uint32_t id = 100; id < 100 + FLEXCO_ESVC_HOOK_QUEUE_LEN; id++) {
    add_job(f, id, f.now - 700, f.now);
    s.hook(id);
  }
  add_job(f, 99, f.now - 100, f.now);
  s.hook(99);
  ck_assert_int_eq(s.stat("epilog_dropped"), 1);
  ck_assert_int_eq(s.stat("epilog_queued"), FLEXCO_ESVC_HOOK_QUEUE_LEN);
  f.now += 1;  // long before the periodic full scan
  s.cycle();
  ck_assert_int_eq(s.stat("job_scans"), scans + 1);
  ck_assert_int_eq(s.stat("epilog_queued"), 0);
  auto e = s.of("job_ended_early", 99);
  ck_assert_uint_eq(e.size(), 1);
  expect_str(e[0], "detected_by", "poll");
  // without an overflow the next cycle does not scan every job: a job the
  // hook missed waits for the periodic scan
  add_job(f, 98, f.now - 100, f.now);
  f.now += 1;
  s.cycle();
  ck_assert_uint_eq(s.of("job_ended_early", 98).size(), 0);
  f.now += 60;
  s.cycle();
  ck_assert_uint_eq(s.of("job_ended_early", 98).size(), 1);
}
END_TEST

START_TEST(privacy_of_events) {
  Fake f;
  SResv open_to_bob;
  open_to_bob.name = "bobs";
  open_to_bob.start = kT0 + 10;
  open_to_bob.end = kT0 + 1000;
  open_to_bob.users = {kBob};
  SResv users_not = open_to_bob;
  users_not.name = "not_bob";
  users_not.users_not = true;
  Svc s(f);
  s.cycle();
  f.resvs = {open_to_bob, users_not};
  f.resv_update = f.now + 1;
  f.now += 11;
  add_job(f, 70, f.now - 100, f.now, 10, kAlice);
  s.hook(70);
  flexco_evstate_acl_t acl{};
  acl.job = true;
  acl.job_uid = kBob;
  ck_assert_int_eq(
      flexco_esvc_publish(s.s, "part_job_started", json_object(), &acl, f.now, false), 0);
  s.cycle();
  ck_assert_uint_eq(s.events().size(), 4);  // 2 activated, 1 job, 1 published
  const Viewer alice{kAlice, false}, bob{kBob, false}, admin{kBob + 1, true},
      carol{kBob + 2, false};
  auto as = [&](const Viewer& v) {
    std::vector<std::string> seen;
    for (json_t* e : s.events(&v))
      seen.push_back(str(e, "type") + ":" +
                     (json_object_get(e, "reservation") ? str(e, "reservation")
                                                        : std::to_string(num(e, "job_id"))));
    return seen;
  };
  auto has = [](const std::vector<std::string>& v, const char* x) {
    for (const auto& s : v)
      if (s == x) return true;
    return false;
  };
  const auto a = as(alice), b = as(bob), ad = as(admin), c = as(carol);
  ck_assert(has(a, "job_ended_early:70"));
  ck_assert(!has(b, "job_ended_early:70"));
  ck_assert(!has(c, "job_ended_early:70"));
  ck_assert(has(ad, "job_ended_early:70"));
  ck_assert(has(b, "reservation_activated:bobs"));
  ck_assert(!has(a, "reservation_activated:bobs"));
  ck_assert(!has(b, "reservation_activated:not_bob"));
  ck_assert(has(ad, "reservation_activated:not_bob"));
  ck_assert(has(b, "part_job_started:0"));
  ck_assert(!has(a, "part_job_started:0"));
  ck_assert_uint_eq(ad.size(), 4);
  // the ACLs survive a restart
  s.restart();
  ck_assert(as(alice) == a);
  ck_assert(as(bob) == b);
  ck_assert(as(carol) == c);
}
END_TEST

START_TEST(reservation_events) {
  Fake f;
  Svc s(f);
  s.cycle();  // baseline: none
  SResv r1, r2;
  r1.name = "r1";
  r1.start = kT0 + 100;
  r1.end = kT0 + 200;
  r2.name = "r2";
  r2.start = kT0 + 100;
  r2.end = kT0 + 5000;
  f.resvs = {r1, r2};
  f.resv_update = kT0 + 1;
  f.now = kT0 + 2;
  s.cycle();
  ck_assert_uint_eq(s.latest(), 0);  // new, not started
  f.now = kT0 + 101;
  s.cycle();  // by the clock
  ck_assert_uint_eq(s.of("reservation_activated").size(), 2);
  f.now = kT0 + 201;
  s.cycle();
  auto e = s.of("reservation_ended");
  ck_assert_uint_eq(e.size(), 1);
  expect_str(e[0], "reservation", "r1");
  ck_assert_int_eq(num(e[0], "start"), kT0 + 100);
  ck_assert_int_eq(num(e[0], "end"), kT0 + 200);
  expect_str(e[0], "nodes", "n[3-4]");
  ck_assert_int_eq(num(e[0], "node_count"), 2);
  ck_assert_int_eq(num(e[0], "time"), kT0 + 201);
  ck_assert_ptr_null(json_object_get(e[0], "_acl"));
  // r2 deleted before its end
  f.resvs = {r1};
  f.resv_update = f.now + 1;
  f.now += 2;
  s.cycle();
  e = s.of("reservation_deleted");
  ck_assert_uint_eq(e.size(), 1);
  expect_str(e[0], "reservation", "r2");
  ck_assert_uint_eq(s.latest(), 4);
  ck_assert_int_ge(s.stat("resv_snapshots"), 4);
  // nothing twice after a restart
  s.restart();
  f.now += 40;
  s.cycle();
  ck_assert_uint_eq(s.latest(), 4);
}
END_TEST

START_TEST(stats_members) {
  Fake f;
  Svc s(f, 16);
  s.cycle();
  json_t* st = flexco_esvc_stats_json(s.s);
  ck_assert_ptr_nonnull(st);
  const std::set<std::string> want = {
      "capacity", "retained", "oldest", "latest", "lost_upto", "published", "evicted",
      "epilog_calls", "epilog_dropped", "epilog_queued", "publish_dropped", "job_scans",
      "scan_lock_usec_last", "scan_lock_usec_max", "resv_snapshots", "state_saves",
      "state_save_errors", "unnumbered", "unnumbered_dropped", "state_last_save_error"};
  std::set<std::string> got;
  const char* k;
  json_t* v;
  json_object_foreach(st, k, v) got.insert(k);
  ck_assert(got == want);
  ck_assert_int_eq(json_integer_value(json_object_get(st, "capacity")), 16);
  ck_assert(json_is_null(json_object_get(st, "state_last_save_error")));
  json_decref(st);
  // eviction and the counters
  for (int i = 0; i < 20; i++)
    flexco_esvc_publish(s.s, "part_job_started", json_object(), nullptr, f.now, false);
  add_job(f, 80, f.now - 100, f.now);
  s.hook(80);
  s.cycle();
  ck_assert_int_eq(s.stat("published"), 21);
  ck_assert_int_eq(s.stat("retained"), 16);
  ck_assert_int_eq(s.stat("evicted"), 5);
  ck_assert_int_eq(s.stat("lost_upto"), 5);
  ck_assert_int_eq(s.stat("oldest"), 6);
  ck_assert_int_eq(s.stat("epilog_calls"), 1);
  ck_assert_int_ge(s.stat("state_saves"), 1);
}
END_TEST

// the events thread: started, woken by the hook, stopped
std::mutex woke_mu;
std::condition_variable woke_cv;
int woke = 0;
void on_events() {
  std::lock_guard<std::mutex> lk(woke_mu);
  woke++;
  woke_cv.notify_all();
}

START_TEST(events_thread) {
  Fake f;
  f.now = std::time(nullptr);  // the host's clock is read by the thread
  // the fake host is touched by the thread only: the test waits
  add_job(f, 90, f.now - 100, f.now);
  flexco_esvc_t* s = flexco_esvc_create();
  flexco_esvc_set_listener(s, on_events);
  ck_assert_int_eq(flexco_esvc_open(s, 64, &f.host, true), 0);
  flexco_esvc_job_t v;
  job_view(90, f.jobs.at(90), &v);
  flexco_esvc_job_end(s, &v);
  {
    std::unique_lock<std::mutex> lk(woke_mu);
    ck_assert(woke_cv.wait_for(lk, std::chrono::seconds(30), [] { return woke > 0; }));
  }
  ck_assert_uint_eq(flexco_esvc_latest(s), 1);
  flexco_esvc_close(s);
  // stopped: a last save, and nothing is accepted any more
  ck_assert(f.disk->current.has_value());
  ck_assert_int_eq(flexco_esvc_publish(s, "part_job_started", json_object(), nullptr, 0, false),
                   -1);
  ck_assert(logged(f, "events: stopped at sequence number 1"));
  flexco_esvc_destroy(s);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("events_service");
  TCase* tc = tcase_create("service");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, early_end_reported_once);
  tcase_add_test(tc, late_or_unlimited_not_reported);
  tcase_add_test(tc, reused_job_id_reported_again);
  tcase_add_test(tc, floor_prunes_old_entries);
  tcase_add_test(tc, first_start_takes_a_baseline);
  tcase_add_test(tc, failing_mark_saves_hold_events);
  tcase_add_test(tc, no_number_twice_after_a_crash);
  tcase_add_test(tc, not_in_charge_does_nothing);
  tcase_add_test(tc, takeover_continues_above);
  tcase_add_test(tc, publish_queue_full_drops);
  tcase_add_test(tc, hook_overflow_forces_a_full_scan);
  tcase_add_test(tc, privacy_of_events);
  tcase_add_test(tc, reservation_events);
  tcase_add_test(tc, stats_members);
  tcase_add_test(tc, events_thread);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() { return run_check_suite(make_suite()); }
