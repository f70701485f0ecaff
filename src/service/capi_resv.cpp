// SPDX-License-Identifier: GPL-2.0-or-later
// capi_resv.cpp - see capi_resv.h.

#include "service/capi_resv.h"

#include "service/resv_rules.hpp"

namespace svc = flexco::service;

namespace {
bool valid(int s) { return s >= 0 && s < FLEXCO_RESV_STATES; }
svc::ResvState st(int s) { return static_cast<svc::ResvState>(s); }
}  // namespace

static_assert(static_cast<int>(svc::ResvState::kExpired) == FLEXCO_RESV_EXPIRED &&
                  svc::kResvStates == FLEXCO_RESV_STATES,
              "capi_resv.h's states are resv_rules.hpp's");

static_assert(static_cast<int>(svc::TickAction::kGone) == FLEXCO_TICK_GONE &&
                  static_cast<int>(svc::TickAction::kExpireUnconfirmed) ==
                      FLEXCO_TICK_EXPIRE_UNCONFIRMED,
              "capi_resv.h's actions are resv_rules.hpp's");

extern "C" const char* flexco_resv_state_name(int s) {
  return valid(s) ? svc::state_name(st(s)) : "?";
}

extern "C" bool flexco_resv_live(int s) { return valid(s) && svc::live(st(s)); }

extern "C" bool flexco_resv_allowed(int from, int to) {
  return valid(from) && valid(to) && svc::allowed(st(from), st(to));
}

extern "C" bool flexco_resv_plan_tick(const flexco_resv_view_t* records, size_t n,
                                      const uint64_t* slurm_ids, size_t m, bool unaccounted,
                                      int64_t now, int* action, bool* delete_slurm) {
  try {
    std::vector<svc::RecordView> views(n);
    for (size_t i = 0; i < n; i++) {
      views[i].id = records[i].id;
      // (plugin/resv.c's states are always valid; an unknown one would be
      // kept as confirmed, whose Slurm reservation is never deleted)
      views[i].state = valid(records[i].state) ? st(records[i].state) : svc::ResvState::kConfirmed;
      views[i].confirm_by = records[i].confirm_by;
      views[i].end = records[i].end;
    }
    std::vector<std::uint64_t> ids(slurm_ids, slurm_ids + m);
    const svc::TickPlan plan = svc::plan_tick(views, ids, unaccounted, now);
    for (size_t i = 0; i < n; i++) action[i] = static_cast<int>(plan.records[i]);
    for (size_t j = 0; j < m; j++) delete_slurm[j] = plan.delete_slurm[j];
    return true;
  } catch (...) {
    return false;
  }
}
