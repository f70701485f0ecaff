// SPDX-License-Identifier: GPL-2.0-or-later
// claims.cpp - the capacity claimed but perhaps not yet in a profile read
// (see claims.hpp).

#include "flexcod/claims.hpp"

#include <algorithm>
#include <limits>

namespace flexcod {

ClaimLedger::Id ClaimLedger::reading(std::int64_t since) {
  std::lock_guard<std::mutex> lock(m_);
  const Id id = next_++;
  reads_[id] = since;
  return id;
}

void ClaimLedger::read_done(Id id) {
  std::lock_guard<std::mutex> lock(m_);
  reads_.erase(id);
  prune_locked();
}

ClaimLedger::Id ClaimLedger::hold(const Entry& e) {
  std::lock_guard<std::mutex> lock(m_);
  const Id id = next_++;
  held_[id] = Held{e, false, 0};
  return id;
}

void ClaimLedger::answered(Id id, bool made, std::int64_t at) {
  std::lock_guard<std::mutex> lock(m_);
  auto it = held_.find(id);
  if (it == held_.end()) return;
  if (!made) {
    held_.erase(it);
    return;
  }
  it->second.done = true;
  it->second.at = at;
  prune_locked();
}

std::vector<ClaimLedger::Entry> ClaimLedger::unseen(const std::string& cluster,
                                                    std::int64_t since) const {
  std::lock_guard<std::mutex> lock(m_);
  std::vector<Entry> out;
  for (const auto& h : held_) {
    if (h.second.e.cluster != cluster) continue;
    if (!h.second.done || h.second.at >= since) out.push_back(h.second.e);
  }
  return out;
}

std::size_t ClaimLedger::size() const {
  std::lock_guard<std::mutex> lock(m_);
  return held_.size();
}

// A made reservation answered before the oldest read in use began is in
// every profile read from now on.
void ClaimLedger::prune_locked() {
  std::int64_t oldest = std::numeric_limits<std::int64_t>::max();
  for (const auto& r : reads_) oldest = std::min(oldest, r.second);
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->second.done && it->second.at < oldest) {
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace flexcod

// ---------------------------------------------------------------------------
// What planning subtracts (Engine::subtract_unseen)

#include "flexcod/engine_internal.hpp"

namespace flexcod {

void Engine::subtract_unseen(Gathered& g) {
  if (!g.reading.active()) return;
  for (std::size_t k = 0; k < g.idx.size(); ++k) {
    const std::string& name = clusters_[g.idx[k]]->conf.name;
    const std::vector<ClaimLedger::Entry> unseen = claims_.unseen(name, g.reading.since());
    if (unseen.empty()) continue;
    flexco::Profile& free = g.avail[k].nodes;
    bool changed = false;
    for (const auto& e : unseen) {
      const std::int64_t s = std::max<std::int64_t>(e.start, free.origin());
      if (e.end <= s || e.nodes < 1) continue;
      // Forced: a profile that already shows it goes below what is free
      // (the planners then wait for the end of the window, never overbook).
      if (free.add_span(s, e.end - s, e.nodes, flexco::Admission::kForce).ok()) changed = true;
    }
    if (!changed || k >= g.offers.size()) continue;
    std::vector<flexco::CoallocOffer> kept;
    for (auto o : g.offers[k]) {
      auto m = free.min_over(std::max(o.start, free.origin()), o.end - o.start);
      if (!m.ok() || m.value() < 1) continue;
      o.nodes = std::min<flexco::Amount>(o.nodes, m.value());
      kept.push_back(o);
    }
    g.offers[k] = std::move(kept);
  }
}

}  // namespace flexcod
