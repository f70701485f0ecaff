// SPDX-License-Identifier: GPL-2.0-or-later
// states.hpp - the states of a co-allocation and of a part, and the one
// table of the changes allowed between them (doc/flexcod.md, "States").
//
// The records (store.hpp) and the API keep states as the strings below
// (to_string/from_string); every change of a record's state goes through
// set_state(), which refuses a change the table does not list: it logs it
// as an error, counts it (illegal_transitions(), in GET /v1/stats) and
// leaves the state as it was.

#ifndef FLEXCO_FLEXCOD_STATES_HPP
#define FLEXCO_FLEXCOD_STATES_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flexcod/store.hpp"

namespace flexcod {

enum class CoState {
  kPlanning,    // submitted, being planned (initial)
  kCommitting,  // an attempt's reservations and part jobs being made
  kScheduled,   // every part confirmed with its part job, none started
  kRunning,     // part jobs started
  kCompleted,   // every part job completed (final)
  kFailed,      // not placed, or a part failed; everything released (final)
  kCancelling,  // cancelled, parts being released
  kCancelled,   // cancelled, everything released (final)
};

enum class PartState {
  kReserving,   // tentative reservation requested (initial)
  kTentative,   // tentative reservation made
  kConfirming,  // confirmation requested
  kConfirmed,   // reservation confirmed
  kSubmitting,  // part job requested
  kSubmitted,   // part job pending in the reservation
  kRunning,     // part job running
  kCompleted,   // part job completed (final)
  kFailed,      // part job ended otherwise (final)
  kCancelling,  // reservation and part job being released
  kCancelled,   // released because its co-allocation was cancelled or failed (final)
  kReleased,    // released: rolled back, replaced by a move, or never made (final)
};

constexpr CoState kCoInitial = CoState::kPlanning;
constexpr PartState kPartInitial = PartState::kReserving;

const char* to_string(CoState s);
const char* to_string(PartState s);
// nullopt for a string that names no state.
std::optional<CoState> co_state_from_string(const std::string& s);
std::optional<PartState> part_state_from_string(const std::string& s);

// Every state, in declaration order.
const std::vector<CoState>& all_co_states();
const std::vector<PartState>& all_part_states();

// The table: is the change from -> to allowed?  (A state to itself is not
// a change and always allowed by set_state.)
bool allowed(CoState from, CoState to);
bool allowed(PartState from, PartState to);
bool is_final(CoState s);
bool is_final(PartState s);

// Changes the record's state to `to` when the table allows it, or when the
// record is new (state "") and `to` is the initial state; true then (and
// for no change).  Otherwise logs "flexcod: co-allocation N: illegal state
// change X -> Y", counts it and changes nothing: false.
bool set_state(CoRecord& co, CoState to);
bool set_state(PartRecord& p, PartState to);

// The store's check before it writes a record over the one it holds
// (store.cpp, Store::write and update_part): the stored state may become
// the written one only by one or more changes of the table (the table has
// no cycle), so a writer holding an older copy -- a submission that took
// its lock after the owner's DELETE, a pass that read before a cancel --
// can never bring a cancelled or failed co-allocation, or a released
// part, back to life.  Same state: true.  Otherwise logs "flexcod:
// co-allocation N: the database has it X; a write of Y from an older copy
// was refused", counts it as an illegal change and returns false.
bool may_overwrite(const CoRecord& stored, const CoRecord& next);
bool may_overwrite(const PartRecord& stored, const PartRecord& next);

// Illegal changes refused since the process started.
std::int64_t illegal_transitions();

}  // namespace flexcod

#endif
