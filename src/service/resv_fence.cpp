// SPDX-License-Identifier: GPL-2.0-or-later
// resv_fence.cpp - the reservation service's fencing of deposed flexcods
// (doc/reservations.md, "Epochs"): every request flexcod sends carries
// Flexco-Epoch (core/epoch.hpp), the epoch of the lease its sender holds
// on its grid's database.  The highest epoch seen per grid is kept with
// the state file; a mutation with a lower one is refused with 409
// stale_epoch, so a flexcod that lost its lease (another took over and
// has spoken to this cluster) changes nothing here.  A request without
// the header (a flexcod of an older release, a tool) is not fenced.

#include <cinttypes>
#include <string>

#include "core/capi_profile.h"
#include "core/epoch.hpp"
#include "service/resv_service.hpp"

namespace flexco::service {

int ResvService::fence(std::uint32_t uid, const char* header, bool mutating, char** json_out) {
  if (header == nullptr) return 0;
  epoch::Stamp st;
  std::string why;
  if (!epoch::parse(header, &st, &why)) {
    *json_out = flexco_error_json("bad_request", why.c_str());
    return 400;
  }
  std::lock_guard<std::mutex> g(mu_);
  // Only flexcod (DaemonUsers) speaks for a grid: anyone else's header
  // neither raises nor is refused (its mutations are refused anyway).
  if (!open_ || !is_daemon(uid)) return 0;
  std::int64_t highest = 0;
  switch (fence_.check(st, true, &highest)) {
    case epoch::Fence::Verdict::kAccepted:
      return 0;
    case epoch::Fence::Verdict::kRaised:
      // Saved before anything of the new epoch is done: after a restart
      // of slurmctld the deposed flexcod is still refused.  A save that
      // fails is retried by the next mutation (mutable_now), which is
      // refused until it succeeds.
      log(FLEXCO_RSVC_INFO, "reservations: flexcod grid %s is at epoch %" PRId64 " now",
          st.grid.c_str(), st.epoch);
      if (save() != 0) {
        *json_out = not_saved(false, "nothing is changed until it can");
        return 503;
      }
      return 0;
    case epoch::Fence::Verdict::kStale:
      if (!mutating) return 0;  // a read changes nothing
      stale_refused_++;
      log(FLEXCO_RSVC_INFO,
          "reservations: refused a request of flexcod grid %s at epoch %" PRId64
          ": epoch %" PRId64 " was seen (it lost its lease to another flexcod)",
          st.grid.c_str(), st.epoch, highest);
      {
        json_t* e = json_pack("{s:{s:s, s:s, s:I}}", "error", "code", "stale_epoch", "message",
                              ("epoch " + std::to_string(st.epoch) + " of flexcod grid " + st.grid +
                               " is older than epoch " + std::to_string(highest) +
                               " seen here: the sender lost its lease, nothing was done")
                                  .c_str(),
                              "epoch", static_cast<json_int_t>(highest));
        *json_out = e ? json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS) : nullptr;
        json_decref(e);
        if (*json_out == nullptr) *json_out = flexco_error_json("stale_epoch", "stale epoch");
      }
      return 409;
    case epoch::Fence::Verdict::kFull:
      *json_out = flexco_error_json("too_many_grids", "more than 64 flexcod grids use this cluster");
      return 409;
  }
  return 0;
}

json_t* ResvService::fence_json() const {
  json_t* grids = json_object();
  for (const auto& kv : fence_.all())
    json_object_set_new(grids, kv.first.c_str(), json_integer(static_cast<json_int_t>(kv.second)));
  return json_pack("{s:o, s:I}", "grids", grids, "refused_stale",
                   static_cast<json_int_t>(stale_refused_));
}

}  // namespace flexco::service
