// SPDX-License-Identifier: GPL-2.0-or-later
// resv_tracker.hpp - which reservation events the plugin publishes
// (doc/events.md): it compares each copy of slurmctld's reservation list
// with what it saw before and watches the clock, and says when a
// reservation was activated (its start passed), ended (its end passed) or
// deleted (gone before its end).  No Slurm headers, no clock of its own:
// the plugin copies resv_list under slurmctld's node read lock and hands
// the copy over with the time; the rules are tested on made-up lists
// (testsuite/unit/check_resv_tracker).
//
// The rules:
//  - the first look after a start without state (the baseline) records
//    what exists, activated and ended as the clock says, and reports
//    nothing: they are not news;
//  - a reservation seen for the first time later is new: its start and
//    end are reported when the clock passes them;
//  - one whose start moved into the future (moved, or a recurring one's
//    next round) is activated and ended again; one whose end moved into
//    the future is ended again;
//  - one gone from the list before its end was deleted; gone after its
//    end (purged), it ended, and was activated first if that was missed.
// Each start and end is reported once, also across restarts: the state
// file keeps activated and ended.

#ifndef FLEXCO_SERVICE_RESV_TRACKER_HPP
#define FLEXCO_SERVICE_RESV_TRACKER_HPP

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flexco::service {

struct TrackedResv {
  std::string name;
  std::int64_t start = 0, end = 0;
  std::string nodes;
  bool has_nodes = false;
  std::uint32_t node_cnt = 0;
  std::vector<std::uint32_t> users;  // Users= as uids
  bool users_not = false;            // Users=-name: the list excludes
  bool activated = false, ended = false;
};

class ResvTracker {
 public:
  enum class Change { kActivated, kEnded, kDeleted };
  using Emit = std::function<void(Change, const TrackedResv&)>;

  // Compare with a copy of the list (activated and ended of `now` are
  // ignored); baseline: the first look, which reports nothing.  True if
  // anything the state file keeps changed.
  bool refresh(const std::vector<TrackedResv>& now_list, std::int64_t now, bool baseline,
               const Emit& emit);
  // Starts and ends that the clock passed.  True if anything changed.
  bool tick(std::int64_t now, const Emit& emit);

  // Loading and saving.
  void put(const TrackedResv& r);
  const std::vector<TrackedResv>& tracked() const { return tracked_; }
  void clear() { tracked_.clear(); }

 private:
  TrackedResv* find(const std::string& name);
  std::vector<TrackedResv> tracked_;
};

}  // namespace flexco::service

#endif
