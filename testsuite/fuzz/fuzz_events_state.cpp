// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the loader of the plugin's events state file
// (StateSaveLocation/flexco_events.state, flexco_decode_events_state), read
// at every slurmctld start to restore the event ring, its sequence numbers,
// who may see each event, and the job and reservation tracking.  A corrupt
// copy must be refused with a reason and nothing kept (the plugin then
// tries the previous copy, and failing that numbers on from above anything
// handed out); an accepted one must keep every bound the plugin relies on,
// and what the writer (flexco_encode_events_state) makes of it must load
// back to the same state and the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/capi_decode.h"

namespace {

const flexco_evstate_limits_t kLim = {16, 512, 16, 8, 8, 64};

int put(const char* buf, size_t len, void* arg) {
  static_cast<std::string*>(arg)->append(buf, len);
  return 0;
}

bool same_str(const char* a, const char* b) { return (!a && !b) || (a && b && !std::strcmp(a, b)); }

bool same_users(const uint32_t* a, size_t na, const uint32_t* b, size_t nb) {
  return na == nb && (!na || !std::memcmp(a, b, na * sizeof *a));
}

bool same(const flexco_events_state_t& a, const flexco_events_state_t& b) {
  if (a.clean != b.clean || a.saved_at != b.saved_at || a.reserved != b.reserved ||
      a.latest != b.latest || a.lost_upto != b.lost_upto || a.job_floor != b.job_floor ||
      a.job_cnt != b.job_cnt || a.resv_cnt != b.resv_cnt || a.event_cnt != b.event_cnt)
    return false;
  for (size_t i = 0; i < a.job_cnt; i++)
    if (a.jobs[i].job_id != b.jobs[i].job_id || a.jobs[i].start != b.jobs[i].start ||
        a.jobs[i].end != b.jobs[i].end)
      return false;
  for (size_t i = 0; i < a.resv_cnt; i++) {
    const flexco_evstate_resv_t &r = a.resvs[i], &s = b.resvs[i];
    if (!same_str(r.name, s.name) || r.start != s.start || r.end != s.end ||
        !same_str(r.nodes, s.nodes) || r.node_cnt != s.node_cnt ||
        !same_users(r.users, r.user_cnt, s.users, s.user_cnt) || r.users_not != s.users_not ||
        r.activated != s.activated || r.ended != s.ended)
      return false;
  }
  for (size_t i = 0; i < a.event_cnt; i++) {
    const flexco_evstate_event_t &e = a.events[i], &f = b.events[i];
    if (e.seq != f.seq || e.len != f.len || std::strcmp(e.text, f.text) || e.acl.job != f.acl.job ||
        e.acl.job_uid != f.acl.job_uid || !same_str(e.acl.account, f.acl.account) ||
        e.acl.resv != f.acl.resv || e.acl.users_not != f.acl.users_not ||
        !same_users(e.acl.users, e.acl.user_cnt, f.acl.users, f.acl.user_cnt))
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  flexco_events_state_t st;
  char why[256] = "";
  const int rc = flexco_decode_events_state(reinterpret_cast<const char*>(data), size, &kLim, &st,
                                            why, sizeof why);
  if (rc) {
    if (rc != -1 || !why[0] || st.events || st.jobs || st.resvs || st.event_cnt || st.job_cnt ||
        st.resv_cnt)
      abort();
    return 0;
  }
  if (st.lost_upto > st.latest || st.latest > st.reserved || st.reserved > INT64_MAX ||
      st.job_cnt > kLim.max_reported || st.resv_cnt > kLim.max_resvs ||
      st.event_cnt > kLim.max_events || st.job_floor < 0 || st.job_floor > FLEXCO_EVSTATE_MAX_TIME)
    abort();
  for (size_t i = 0; i < st.job_cnt; i++)
    if (st.jobs[i].job_id < 1 || st.jobs[i].start < 0 || st.jobs[i].end < 0) abort();
  for (size_t i = 0; i < st.resv_cnt; i++) {
    const flexco_evstate_resv_t& r = st.resvs[i];
    if (!r.name || !r.name[0] || std::strlen(r.name) > kLim.max_str || r.user_cnt > kLim.max_users ||
        (r.nodes && std::strlen(r.nodes) > kLim.max_str))
      abort();
    for (size_t k = 0; k < i; k++)
      if (!std::strcmp(st.resvs[k].name, r.name)) abort();
  }
  for (size_t i = 0; i < st.event_cnt; i++) {
    const flexco_evstate_event_t& e = st.events[i];
    if (e.seq < 1 || e.seq > st.latest || (i && e.seq <= st.events[i - 1].seq) || !e.text ||
        std::strlen(e.text) != e.len || e.len > kLim.max_event_len ||
        e.acl.user_cnt > kLim.max_users || (e.acl.account && !e.acl.job))
      abort();
  }
  // the writer's file loads back to the same state, and writes the same
  std::string once, twice;
  char why2[256] = "";
  if (flexco_encode_events_state(&st, put, &once, why2, sizeof why2)) abort();
  flexco_events_state_t back;
  if (flexco_decode_events_state(once.data(), once.size(), &kLim, &back, why2, sizeof why2) ||
      !back.has_access || !same(st, back))
    abort();
  if (flexco_encode_events_state(&back, put, &twice, why2, sizeof why2) || once != twice) abort();
  flexco_events_state_free(&back);
  flexco_events_state_free(&st);
  return 0;
}
