// SPDX-License-Identifier: GPL-2.0-or-later
// capi_tracker.cpp - see capi_tracker.h.

#include "service/capi_tracker.h"

#include <cstdlib>
#include <vector>

#include "service/resv_tracker.hpp"

using flexco::service::ResvTracker;
using flexco::service::TrackedResv;

struct flexco_tracker {
  ResvTracker tracker;
};

namespace {

TrackedResv from_c(const flexco_evstate_resv_t& r) {
  TrackedResv t;
  t.name = r.name != nullptr ? r.name : "";
  t.start = r.start;
  t.end = r.end;
  t.has_nodes = r.nodes != nullptr;
  if (t.has_nodes) t.nodes = r.nodes;
  t.node_cnt = r.node_cnt;
  if (r.users != nullptr) t.users.assign(r.users, r.users + r.user_cnt);
  t.users_not = r.users_not;
  t.activated = r.activated;
  t.ended = r.ended;
  return t;
}

flexco_evstate_resv_t view(const TrackedResv& t) {
  flexco_evstate_resv_t v{};
  v.name = const_cast<char*>(t.name.c_str());
  v.start = t.start;
  v.end = t.end;
  v.nodes = t.has_nodes ? const_cast<char*>(t.nodes.c_str()) : nullptr;
  v.node_cnt = t.node_cnt;
  v.users = t.users.empty() ? nullptr : const_cast<uint32_t*>(t.users.data());
  v.user_cnt = t.users.size();
  v.users_not = t.users_not;
  v.activated = t.activated;
  v.ended = t.ended;
  return v;
}

ResvTracker::Emit emitter(flexco_tracker_emit_t emit, void* arg) {
  return [emit, arg](ResvTracker::Change c, const TrackedResv& t) {
    const int what = c == ResvTracker::Change::kActivated ? FLEXCO_RESV_ACTIVATED
                     : c == ResvTracker::Change::kEnded   ? FLEXCO_RESV_ENDED
                                                          : FLEXCO_RESV_DELETED;
    const flexco_evstate_resv_t v = view(t);
    emit(what, &v, arg);
  };
}

}  // namespace

extern "C" flexco_tracker_t* flexco_tracker_create(void) {
  try {
    return new flexco_tracker;
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_tracker_destroy(flexco_tracker_t* t) { delete t; }

extern "C" void flexco_tracker_clear(flexco_tracker_t* t) {
  if (t != nullptr) t->tracker.clear();
}

extern "C" void flexco_tracker_put(flexco_tracker_t* t, const flexco_evstate_resv_t* r) {
  try {
    if (t != nullptr) t->tracker.put(from_c(*r));
  } catch (...) {
  }
}

extern "C" bool flexco_tracker_refresh(flexco_tracker_t* t, const flexco_evstate_resv_t* list,
                                       size_t n, int64_t now, bool baseline,
                                       flexco_tracker_emit_t emit, void* arg) {
  try {
    if (t == nullptr) return false;
    std::vector<TrackedResv> cur;
    cur.reserve(n);
    for (size_t i = 0; i < n; i++) cur.push_back(from_c(list[i]));
    return t->tracker.refresh(cur, now, baseline, emitter(emit, arg));
  } catch (...) {
    return false;  // out of memory: this copy is skipped, the next one compared
  }
}

extern "C" bool flexco_tracker_tick(flexco_tracker_t* t, int64_t now, flexco_tracker_emit_t emit,
                                    void* arg) {
  try {
    return t != nullptr && t->tracker.tick(now, emitter(emit, arg));
  } catch (...) {
    return false;
  }
}

extern "C" size_t flexco_tracker_view(const flexco_tracker_t* t, flexco_evstate_resv_t** out) {
  *out = nullptr;
  if (t == nullptr) return 0;
  const auto& all = t->tracker.tracked();
  if (all.empty()) return 0;
  auto* v = static_cast<flexco_evstate_resv_t*>(std::calloc(all.size(), sizeof(flexco_evstate_resv_t)));
  if (v == nullptr) return 0;
  for (size_t i = 0; i < all.size(); i++) v[i] = view(all[i]);
  *out = v;
  return all.size();
}
