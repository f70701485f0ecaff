// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: POST /v1/probe's handler in the core (doc/probe.md):
// the body decoder, the availability profile built from a snapshot, the
// what-if planning and the JSON answer, as the plugin calls them
// (flexco_probe_json), on a small fixed cluster: 6 nodes, a running job,
// a planned and a pending one, a reservation, two partitions.  Also the
// will_run parameters decoder, and the answer from a snapshot's plan cache
// (flexco_probe_json_cached, which the plugin tries first in the request's
// thread).  Checks: no crash, no sanitizer report, every answer is either a
// JSON document or a 4xx/5xx error code, and the cached path answers
// nothing before a probe planned on that snapshot, and after it either
// nothing (an error planned nothing) or exactly what the full path answers
// (always, when that was 200).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/capi_probe.h"
#include "core/cluster_snapshot.h"

namespace {

const flexco_snapshot_t& cluster() {
  static flexco_snap_node_t nodes[] = {
      {"n1", 8, 1}, {"n2", 8, 1}, {"n3", 8, 1}, {"n4", 8, 1}, {"n5", 8, 0}, {"n6", 16, 1}};
  static uint32_t idx[] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 1, 2};
  static flexco_snap_job_t jobs[] = {
      {1, 1000, FLEXCO_JOB_RUNNING, 1000000, 1003600, 3600, 2, 100, "batch", nullptr, 6, 2},
      {2, 1001, FLEXCO_JOB_PLANNED, 1003600, 1010800, 7200, 2, 90, "batch", nullptr, 10, 2},
      {3, 1002, FLEXCO_JOB_PENDING, 0, 0, FLEXCO_SNAP_FOREVER, 3, 80, "batch", nullptr, 0, 0},
  };
  static flexco_snap_resv_t resvs[] = {{"maint", 1007200, 1014400, 1, "root", 8, 2}};
  static flexco_snap_part_t parts[] = {{"batch", FLEXCO_SNAP_FOREVER, 1, 1, 0, 4},
                                       {"big", 86400, 0, 1, 0, 6}};
  static flexco_snapshot_t s = {"fuzz", 1000000, 999990, 0, nodes, 6, jobs, 3, resvs, 1,
                                parts, 2, idx, 12};
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  char* json = nullptr;
  char code[64] = "", err[256] = "";
  const int status = flexco_probe_json(&cluster(), body.c_str(), body.size(), 100, 60, &json,
                                       code, sizeof code, err, sizeof err);
  if (status == 200) {
    if (json == nullptr || json[0] != '{') abort();
  } else if (status < 400 || status > 599 || code[0] == '\0') {
    abort();
  }
  free(json);
  flexco_will_run_params_t wr;
  (void) flexco_probe_will_run_params(body.c_str(), body.size(), &wr);

  // The same on a snapshot with a plan cache of its own: nothing planned
  // yet, so the cached path answers nothing; after the full path it
  // answers the same, or nothing if that path planned nothing.
  flexco_snapshot_t snap = cluster();
  snap.plan_cache = flexco_plan_cache_create();
  if (snap.plan_cache == nullptr) return 0;
  char* before = nullptr;
  const int st0 = flexco_probe_json_cached(&snap, body.c_str(), body.size(), 100, 60, nullptr,
                                           nullptr, &before, code, sizeof code, err, sizeof err);
  if ((st0 == 0) != (before == nullptr)) abort();
  char* full = nullptr;
  const int st1 = flexco_probe_json_ex(&snap, body.c_str(), body.size(), 100, 60, nullptr,
                                       nullptr, &full, code, sizeof code, err, sizeof err);
  if (st1 != status) abort();  // a plan cache never changes the answer
  if (st0 != 0 && (st0 != st1 || std::strcmp(before, full) != 0)) abort();
  char* after = nullptr;
  const int st2 = flexco_probe_json_cached(&snap, body.c_str(), body.size(), 100, 60, nullptr,
                                           nullptr, &after, code, sizeof code, err, sizeof err);
  // an answer (200) planned the partition and its slots, so it is cached;
  // an error planned nothing, and the snapshot may still have no plan
  if (st2 == 0 ? (st1 == 200 || after != nullptr)
               : (st2 != st1 || after == nullptr || full == nullptr ||
                  std::strcmp(after, full) != 0))
    abort();
  free(before);
  free(full);
  free(after);
  flexco_plan_cache_free(snap.plan_cache);
  return 0;
}
