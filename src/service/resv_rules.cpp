// SPDX-License-Identifier: GPL-2.0-or-later
// resv_rules.cpp - see resv_rules.hpp.

#include "service/resv_rules.hpp"

#include <unordered_map>

namespace flexco::service {

namespace {

constexpr const char* kNames[kResvStates] = {"creating", "tentative", "confirmed",
                                             "ended",    "deleted",   "expired"};

// kAllowed[from][to]
constexpr bool kAllowed[kResvStates][kResvStates] = {
    //            creat  tent   conf   ended  del    exp
    /* creating */ {true, true, true, false, true, true},
    /* tentative*/ {false, false, true, true, true, true},
    /* confirmed*/ {false, false, false, true, true, false},
    /* ended    */ {false, false, false, false, false, false},
    /* deleted  */ {false, false, false, false, false, false},
    /* expired  */ {false, false, false, false, false, false},
};

int idx(ResvState s) { return static_cast<int>(s); }

}  // namespace

const char* state_name(ResvState s) {
  const int i = idx(s);
  return i >= 0 && i < kResvStates ? kNames[i] : "?";
}

bool state_from_name(std::string_view name, ResvState* out) {
  for (int i = 0; i < kResvStates; i++) {
    if (name == kNames[i]) {
      *out = static_cast<ResvState>(i);
      return true;
    }
  }
  return false;
}

bool live(ResvState s) {
  return s == ResvState::kCreating || s == ResvState::kTentative || s == ResvState::kConfirmed;
}

bool allowed(ResvState from, ResvState to) {
  const int f = idx(from), t = idx(to);
  return f >= 0 && f < kResvStates && t >= 0 && t < kResvStates && kAllowed[f][t];
}

TickPlan plan_tick(const std::vector<RecordView>& records,
                   const std::vector<std::uint64_t>& slurm_ids, bool unaccounted,
                   std::int64_t now) {
  TickPlan plan;
  std::unordered_map<std::uint64_t, bool> in_slurm;
  in_slurm.reserve(slurm_ids.size());
  for (std::uint64_t id : slurm_ids) in_slurm[id] = true;
  // which ids a record still holds after this pass
  std::unordered_map<std::uint64_t, bool> held;
  plan.records.reserve(records.size());
  for (const RecordView& r : records) {
    TickAction a = TickAction::kKeep;
    if (r.state == ResvState::kCreating) {
      a = TickAction::kExpireInterrupted;
    } else if (r.state == ResvState::kTentative && r.confirm_by <= now) {
      a = TickAction::kExpireUnconfirmed;
    } else if (live(r.state) && r.end <= now) {
      a = TickAction::kEnd;
    } else if (live(r.state) && in_slurm.find(r.id) == in_slurm.end()) {
      a = TickAction::kGone;
    }
    plan.records.push_back(a);
    // a record that stays live (kept, as the state it is in) claims its id
    if (a == TickAction::kKeep && live(r.state)) held[r.id] = true;
  }
  plan.delete_slurm.reserve(slurm_ids.size());
  for (std::uint64_t id : slurm_ids) {
    plan.delete_slurm.push_back(!unaccounted && held.find(id) == held.end());
  }
  return plan;
}

}  // namespace flexco::service
