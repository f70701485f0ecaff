// SPDX-License-Identifier: GPL-2.0-or-later
// resv_tracker.cpp - see resv_tracker.hpp.

#include "service/resv_tracker.hpp"

#include <unordered_set>

namespace flexco::service {

TrackedResv* ResvTracker::find(const std::string& name) {
  for (TrackedResv& t : tracked_)
    if (t.name == name) return &t;
  return nullptr;
}

void ResvTracker::put(const TrackedResv& r) {
  if (TrackedResv* t = find(r.name)) {
    *t = r;
  } else {
    tracked_.push_back(r);
  }
}

bool ResvTracker::refresh(const std::vector<TrackedResv>& list, std::int64_t now, bool baseline,
                          const Emit& emit) {
  bool dirty = false;
  std::unordered_set<std::string> seen;
  for (const TrackedResv& cur : list) {
    TrackedResv* t = find(cur.name);
    if (t == nullptr) {
      tracked_.push_back(TrackedResv{});
      t = &tracked_.back();
      t->name = cur.name;
      dirty = true;
      if (baseline) {
        t->activated = cur.start <= now;
        t->ended = cur.end <= now;
      }
    } else {
      if (cur.start != t->start && cur.start > now) {
        // moved, or a recurring one's next round
        t->activated = false;
        t->ended = false;
      }
      if (cur.end != t->end && cur.end > now) t->ended = false;
      if (cur.start != t->start || cur.end != t->end) dirty = true;
    }
    t->start = cur.start;
    t->end = cur.end;
    t->nodes = cur.nodes;
    t->has_nodes = cur.has_nodes;
    t->node_cnt = cur.node_cnt;
    t->users = cur.users;
    t->users_not = cur.users_not;
    seen.insert(cur.name);
  }
  std::vector<TrackedResv> kept;
  kept.reserve(tracked_.size());
  for (TrackedResv& t : tracked_) {
    if (seen.count(t.name) != 0) {
      kept.push_back(std::move(t));
      continue;
    }
    // vanished: deleted before its end, or purged after it
    dirty = true;
    if (t.ended) continue;
    if (t.end <= now) {
      if (!t.activated) emit(Change::kActivated, t);
      emit(Change::kEnded, t);
    } else {
      emit(Change::kDeleted, t);
    }
  }
  tracked_ = std::move(kept);
  return dirty;
}

bool ResvTracker::tick(std::int64_t now, const Emit& emit) {
  bool dirty = false;
  for (TrackedResv& t : tracked_) {
    if (!t.activated && t.start <= now) {
      emit(Change::kActivated, t);
      t.activated = true;
      dirty = true;
    }
    if (!t.ended && t.end <= now) {
      emit(Change::kEnded, t);
      t.ended = true;
      dirty = true;
    }
  }
  return dirty;
}

}  // namespace flexco::service
