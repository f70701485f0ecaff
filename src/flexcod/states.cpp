// SPDX-License-Identifier: GPL-2.0-or-later
// states.cpp - see states.hpp.  The tables below are the only list of
// allowed state changes; doc/flexcod.md ("States") shows the same tables.

#include "flexcod/states.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

#include "flexcod/log.hpp"

namespace flexcod {

namespace {

struct CoName {
  CoState state;
  const char* name;
};
struct PartName {
  PartState state;
  const char* name;
};

// The strings of the database and of the JSON API.
const CoName kCoNames[] = {
    {CoState::kPlanning, "planning"},     {CoState::kCommitting, "committing"},
    {CoState::kScheduled, "scheduled"},   {CoState::kRunning, "running"},
    {CoState::kCompleted, "completed"},   {CoState::kFailed, "failed"},
    {CoState::kCancelling, "cancelling"}, {CoState::kCancelled, "cancelled"},
};
const PartName kPartNames[] = {
    {PartState::kReserving, "reserving"},   {PartState::kTentative, "tentative"},
    {PartState::kConfirming, "confirming"}, {PartState::kConfirmed, "confirmed"},
    {PartState::kSubmitting, "submitting"}, {PartState::kSubmitted, "submitted"},
    {PartState::kRunning, "running"},       {PartState::kCompleted, "completed"},
    {PartState::kFailed, "failed"},         {PartState::kCancelling, "cancelling"},
    {PartState::kCancelled, "cancelled"},   {PartState::kReleased, "released"},
};

// The allowed changes, from -> to; taken from every change the engine makes
// (the comments say where).
const std::pair<CoState, CoState> kCoTable[] = {
    // commit_attempt (a first attempt); place() finding no cluster or no
    // placement; recover_db (a commit interrupted by a restart); cancel
    {CoState::kPlanning, CoState::kCommitting},
    {CoState::kPlanning, CoState::kFailed},
    {CoState::kPlanning, CoState::kCancelling},
    // commit_attempt; place() after the last attempt failed; recover_db; cancel
    {CoState::kCommitting, CoState::kScheduled},
    {CoState::kCommitting, CoState::kFailed},
    {CoState::kCommitting, CoState::kCancelling},
    // finish_if_done: a part job started, every part job ended (both events
    // may be seen at once), a part failed; cancel
    {CoState::kScheduled, CoState::kRunning},
    {CoState::kScheduled, CoState::kCompleted},
    {CoState::kScheduled, CoState::kFailed},
    {CoState::kScheduled, CoState::kCancelling},
    // finish_if_done; watch_part_starts (PartStartPolicy=fail); cancel
    {CoState::kRunning, CoState::kCompleted},
    {CoState::kRunning, CoState::kFailed},
    {CoState::kRunning, CoState::kCancelling},
    // cancel once every part is released, or finish_if_done after the reaper
    {CoState::kCancelling, CoState::kCancelled},
};

const std::pair<PartState, PartState> kPartTable[] = {
    // reserve_parts; a refused create (cancelling when it may have been
    // made); release()
    {PartState::kReserving, PartState::kTentative},
    {PartState::kReserving, PartState::kReleased},
    {PartState::kReserving, PartState::kCancelling},
    // commit_attempt / move step 2; release()
    {PartState::kTentative, PartState::kConfirming},
    {PartState::kTentative, PartState::kCancelling},
    // confirm_parts; release()
    {PartState::kConfirming, PartState::kConfirmed},
    {PartState::kConfirming, PartState::kCancelling},
    // commit_attempt / move step 3; release()
    {PartState::kConfirmed, PartState::kSubmitting},
    {PartState::kConfirmed, PartState::kCancelling},
    // submit_parts; apply_job_phase (the job's start or end seen before the
    // submission's answer was written); release()
    {PartState::kSubmitting, PartState::kSubmitted},
    {PartState::kSubmitting, PartState::kRunning},
    {PartState::kSubmitting, PartState::kCompleted},
    {PartState::kSubmitting, PartState::kFailed},
    {PartState::kSubmitting, PartState::kCancelling},
    // apply_job_phase; release(), the switch of a move
    {PartState::kSubmitted, PartState::kRunning},
    {PartState::kSubmitted, PartState::kCompleted},
    {PartState::kSubmitted, PartState::kFailed},
    {PartState::kSubmitted, PartState::kCancelling},
    // apply_job_phase; release()
    {PartState::kRunning, PartState::kCompleted},
    {PartState::kRunning, PartState::kFailed},
    {PartState::kRunning, PartState::kCancelling},
    // release(), the reaper, reconcile_cluster: cancelled when the
    // co-allocation was cancelled or failed, else released
    {PartState::kCancelling, PartState::kCancelled},
    {PartState::kCancelling, PartState::kReleased},
};

std::atomic<std::int64_t> g_illegal{0};

}  // namespace

const char* to_string(CoState s) {
  for (const auto& n : kCoNames) {
    if (n.state == s) return n.name;
  }
  return "?";
}

const char* to_string(PartState s) {
  for (const auto& n : kPartNames) {
    if (n.state == s) return n.name;
  }
  return "?";
}

std::optional<CoState> co_state_from_string(const std::string& s) {
  for (const auto& n : kCoNames) {
    if (s == n.name) return n.state;
  }
  return std::nullopt;
}

std::optional<PartState> part_state_from_string(const std::string& s) {
  for (const auto& n : kPartNames) {
    if (s == n.name) return n.state;
  }
  return std::nullopt;
}

const std::vector<CoState>& all_co_states() {
  static const std::vector<CoState> all = [] {
    std::vector<CoState> v;
    for (const auto& n : kCoNames) v.push_back(n.state);
    return v;
  }();
  return all;
}

const std::vector<PartState>& all_part_states() {
  static const std::vector<PartState> all = [] {
    std::vector<PartState> v;
    for (const auto& n : kPartNames) v.push_back(n.state);
    return v;
  }();
  return all;
}

bool allowed(CoState from, CoState to) {
  return std::find(std::begin(kCoTable), std::end(kCoTable), std::make_pair(from, to)) !=
         std::end(kCoTable);
}

bool allowed(PartState from, PartState to) {
  return std::find(std::begin(kPartTable), std::end(kPartTable), std::make_pair(from, to)) !=
         std::end(kPartTable);
}

bool is_final(CoState s) {
  return s == CoState::kCompleted || s == CoState::kFailed || s == CoState::kCancelled;
}

bool is_final(PartState s) {
  return s == PartState::kCompleted || s == PartState::kFailed || s == PartState::kCancelled ||
         s == PartState::kReleased;
}

bool set_state(CoRecord& co, CoState to) {
  const char* next = to_string(to);
  if (co.state == next) return true;
  const auto from = co_state_from_string(co.state);
  if ((co.state.empty() && to == kCoInitial) || (from && allowed(*from, to))) {
    co.state = next;
    return true;
  }
  g_illegal++;
  fc_error("flexcod: co-allocation %ld: illegal state change %s -> %s", (long)co.id,
           co.state.empty() ? "(new)" : co.state.c_str(), next);
  return false;
}

bool set_state(PartRecord& p, PartState to) {
  const char* next = to_string(to);
  if (p.state == next) return true;
  const auto from = part_state_from_string(p.state);
  if ((p.state.empty() && to == kPartInitial) || (from && allowed(*from, to))) {
    p.state = next;
    return true;
  }
  g_illegal++;
  fc_error("flexcod: co-allocation %ld: part %d (attempt %d, %s): illegal state change %s -> %s",
           (long)p.co_id, p.idx, p.attempt, p.cluster.c_str(),
           p.state.empty() ? "(new)" : p.state.c_str(), next);
  return false;
}

namespace {

// Whether `to` follows `from` by one or more changes of `table`.
template <typename S, std::size_t N>
bool reachable(const std::pair<S, S> (&table)[N], S from, S to) {
  std::vector<S> todo = {from}, seen = {from};
  while (!todo.empty()) {
    const S at = todo.back();
    todo.pop_back();
    for (const auto& [a, b] : table) {
      if (a != at || std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
      if (b == to) return true;
      seen.push_back(b);
      todo.push_back(b);
    }
  }
  return false;
}

}  // namespace

bool may_overwrite(const CoRecord& stored, const CoRecord& next) {
  if (stored.state == next.state) return true;
  const auto from = co_state_from_string(stored.state);
  const auto to = co_state_from_string(next.state);
  if (from && to && reachable(kCoTable, *from, *to)) return true;
  g_illegal++;
  fc_error("flexcod: co-allocation %ld: the database has it %s; a write of %s from an older copy "
           "was refused", (long)next.id, stored.state.c_str(), next.state.c_str());
  return false;
}

bool may_overwrite(const PartRecord& stored, const PartRecord& next) {
  if (stored.state == next.state) return true;
  const auto from = part_state_from_string(stored.state);
  const auto to = part_state_from_string(next.state);
  if (from && to && reachable(kPartTable, *from, *to)) return true;
  g_illegal++;
  fc_error("flexcod: co-allocation %ld: part %d (attempt %d, %s): the database has it %s; a write "
           "of %s from an older copy was refused",
           (long)next.co_id, next.idx, next.attempt, next.cluster.c_str(), stored.state.c_str(),
           next.state.c_str());
  return false;
}

std::int64_t illegal_transitions() { return g_illegal.load(); }

}  // namespace flexcod
