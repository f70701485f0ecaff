// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the loader of the plugin's reservation state file
// (StateSaveLocation/flexco_resv.json, flexco_decode_resv_state), read at
// every slurmctld start.  A corrupt copy must be refused with a reason and
// nothing kept (the plugin then tries the previous copy and, failing that,
// adopts Slurm's reservations instead of deleting them); an accepted one
// must keep every bound the plugin relies on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/capi_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  flexco_resv_state_t st;
  char why[256] = "";
  const int rc = flexco_decode_resv_state(reinterpret_cast<const char*>(data), size, 16, 4, &st,
                                          why, sizeof why);
  if (rc) {
    if (rc != -1 || !why[0] || st.resvs || st.keys || st.resv_cnt || st.key_cnt) abort();
    return 0;
  }
  if (st.next_id < 1 || st.resv_cnt > 16) abort();
  for (size_t i = 0; i < st.resv_cnt; i++) {
    const flexco_state_resv_t& r = st.resvs[i];
    if (r.id < 1 || !r.user || !r.state || r.job_cnt > 4 || r.uid < 0 || r.uid > UINT32_MAX ||
        r.nodes < 0 || r.nodes > UINT32_MAX || (r.owner && !flexco_owner_ok(r.owner)))
      abort();
    for (size_t k = 0; k < i; k++)
      if (st.resvs[k].id == r.id) abort();
    for (size_t j = 0; j < r.job_cnt; j++)
      if (r.jobs[j].job_id < 1 || r.jobs[j].job_id > UINT32_MAX || r.jobs[j].lease_end < 0) abort();
  }
  for (size_t i = 0; i < st.key_cnt; i++) {
    const flexco_state_key_t& k = st.keys[i];
    if (!k.key || !k.response || (!k.method != !k.target) || (!k.method != !k.digest) ||
        (k.digest && std::strlen(k.digest) != 64))
      abort();
  }
  flexco_resv_state_free(&st);
  return 0;
}
