// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the slurmctld plugin's request decoders
// (core/capi_decode.h), the code that reads every reservation, part-job and
// events request before the plugin touches Slurm.  The first byte picks the
// decoder, the rest is its input:
//   0 POST /v1/reservations body     1 PATCH /v1/reservations/{id} body
//   2 POST .../jobs body             3 GET /v1/events query (after\nwait\nmax,
//                                      a missing line is an absent parameter)
//   4 the router: METHOD\npath (which endpoint answers a request target)
//   5 GET /v1/profile query (partition\nhorizon, as for 3)
//   6 POST .../jobs/{job}/release body (the start gate)
// Checks: no crash, leak or sanitizer report; a refusal is a 400 with a
// JSON error document; an accepted request keeps every bound the decoder
// promises (the admission window, the job limits).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/capi_decode.h"

namespace {

constexpr int64_t kNow = 1800000000;

void refused(int rc, char* err) {
  if (rc != 400 || err == nullptr || std::strncmp(err, "{\"error\":", 9) != 0) abort();
  free(err);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 7;
  const char* in = reinterpret_cast<const char*>(data + 1);
  const size_t len = size - 1;
  char* err = nullptr;
  if (which == 6) {
    int64_t lease_end = -1;
    bool confirm = true;
    const int rc = flexco_decode_release(len ? in : nullptr, len, &lease_end, &confirm, &err);
    if (rc)
      refused(rc, err);
    else if (lease_end < 0 || (lease_end > 0 && confirm))
      abort();
    return 0;
  }
  if (which == 0) {
    flexco_resv_create_t r;
    int rc = flexco_decode_resv_create(in, len, kNow, &r, &err);
    if (rc) {
      refused(rc, err);
    } else {
      if (err || !r.user || r.nodes < 1 || r.nodes > FLEXCO_RESV_MAX_NODES ||
          r.start < kNow - FLEXCO_RESV_PAST_START || r.start > kNow + FLEXCO_RESV_MAX_DURATION ||
          r.duration < FLEXCO_RESV_MIN_DURATION || r.duration > FLEXCO_RESV_MAX_DURATION ||
          r.confirm_within < 1 || r.confirm_within > FLEXCO_RESV_MAX_CONFIRM ||
          (r.owner && !flexco_owner_ok(r.owner)))
        abort();
      flexco_resv_create_free(&r);
    }
  } else if (which == 1) {
    flexco_resv_modify_t m = {kNow + 60, 2, 600};
    int rc = flexco_decode_resv_modify(in, len, kNow, &m, &err);
    if (rc) {
      refused(rc, err);
      if (m.start != kNow + 60 || m.nodes != 2 || m.duration != 600) abort();
    } else if (m.nodes < 1 || m.duration < FLEXCO_RESV_MIN_DURATION) {
      abort();
    }
  } else if (which == 2) {
    flexco_jobspec_t s;
    int rc = flexco_decode_jobspec(in, len, &s, &err);
    if (rc) {
      refused(rc, err);
    } else {
      if (!s.script || std::strncmp(s.script, "#!", 2) || s.argc > FLEXCO_JOB_MAX_ARGS ||
          s.env_cnt > FLEXCO_JOB_MAX_ENV || s.part_index >= FLEXCO_JOB_MAX_PARTS ||
          (s.work_dir && s.work_dir[0] != '/'))
        abort();
      for (uint32_t i = 0; i < s.env_cnt; i++)
        if (!std::strncmp(s.env[i], "SLURM_", 6) || !std::strncmp(s.env[i], "FLEXCO_", 7)) abort();
      flexco_jobspec_free(&s);
    }
  } else if (which == 4) {
    std::string m(in, len);
    size_t nl = m.find('\n');
    std::string method = m.substr(0, nl), path = nl == std::string::npos ? "" : m.substr(nl + 1);
    flexco_route_t r;
    flexco_route(method.c_str(), path.c_str(), &r);
    if ((r.status != 0 && r.status != 404 && r.status != 405) ||
        (r.status == 0) == (r.kind == FLEXCO_RT_NONE) || (r.status && !r.message[0]) ||
        (r.status == 405) != (r.allow != nullptr) || std::strlen(r.id) >= sizeof r.id ||
        (r.kind == FLEXCO_RT_JOB_GET) != (r.job != nullptr) || r.ep < 0 || r.ep > FLEXCO_EP_OTHER)
      abort();
  } else {
    std::string q(in, len), part[3];
    bool present[3] = {false, false, false};
    size_t at = 0;
    for (int i = 0; i < 3 && at <= q.size(); i++) {
      size_t nl = q.find('\n', at);
      part[i] = q.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
      present[i] = true;
      if (nl == std::string::npos) break;
      at = nl + 1;
    }
    if (which == 5) {
      int64_t h = 0;
      int rc = flexco_decode_profile_query(present[0] ? part[0].c_str() : nullptr,
                                           present[1] ? part[1].c_str() : nullptr, &h, &err);
      if (rc)
        refused(rc, err);
      else if (h < 1 || h > FLEXCO_PROFILE_MAX_HORIZON)
        abort();
      return 0;
    }
    flexco_events_query_t e;
    int rc = flexco_decode_events_query(present[0] ? part[0].c_str() : nullptr,
                                        present[1] ? part[1].c_str() : nullptr,
                                        present[2] ? part[2].c_str() : nullptr, &e, &err);
    if (rc)
      refused(rc, err);
    else if (e.after > INT64_MAX || e.wait > FLEXCO_EVENTS_MAX_WAIT || e.max < 1 ||
             e.max > FLEXCO_EVENTS_MAX_MAX)
      abort();
  }
  return 0;
}
