// SPDX-License-Identifier: GPL-2.0-or-later
// resv_rules.hpp - the rules of the plugin's reservation records
// (doc/reservations.md): their states and the transitions allowed between
// them, and what one pass of the agent does with each record and with
// each of Slurm's flexco_* reservations (expire, end, notice a deletion
// outside FlexCo, delete an orphan).  No Slurm headers: resv_service
// gives it a view of its records and of Slurm's list and carries out the
// plan; testsuite/unit/check_resv_rules checks the plan on fake records,
// takeover and hand-back included, without slurmctld.

#ifndef FLEXCO_SERVICE_RESV_RULES_HPP
#define FLEXCO_SERVICE_RESV_RULES_HPP

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace flexco::service {

// In this order (the stats and the state file name them).
enum class ResvState { kCreating, kTentative, kConfirmed, kEnded, kDeleted, kExpired };
constexpr int kResvStates = 6;

const char* state_name(ResvState s);
bool state_from_name(std::string_view name, ResvState* out);
// Creating, tentative or confirmed: it holds (or is about to hold) a
// Slurm reservation.
bool live(ResvState s);
// May a record go from `from` to `to`?  A record is made in kCreating (the
// one self-transition); ended, deleted and expired are final (a record
// adopted again from Slurm is a new record, made in kCreating).
bool allowed(ResvState from, ResvState to);

// What an agent pass does with one record.
enum class TickAction {
  kKeep,
  kExpireInterrupted,  // a create a restart or takeover interrupted: delete
                       // its Slurm reservation if it exists, then expired
  kExpireUnconfirmed,  // tentative past its confirm deadline: delete, expired
  kEnd,                // live past its end: ended
  kGone,               // live, but Slurm has no such reservation: deleted
};

struct RecordView {
  std::uint64_t id = 0;
  ResvState state = ResvState::kCreating;
  std::int64_t confirm_by = 0, end = 0;
};

struct TickPlan {
  std::vector<TickAction> records;  // one per record, in order
  std::vector<bool> delete_slurm;   // one per Slurm id: an orphan to delete
};

// One pass at `now` over the records and Slurm's flexco_* ids.  Orphans
// (ids no live record knows) are deleted only while `unaccounted` is
// false: after a lost state every flexco_* reservation that could not be
// adopted is left to the admin.  Only the controller in charge, with its
// state loaded, may carry out a plan (resv_service checks).
TickPlan plan_tick(const std::vector<RecordView>& records,
                   const std::vector<std::uint64_t>& slurm_ids, bool unaccounted,
                   std::int64_t now);

}  // namespace flexco::service

#endif
