// SPDX-License-Identifier: GPL-2.0-or-later
// planning.cpp - flexcod's planning input (see planning.hpp).

#include "flexcod/planning.hpp"

#include <algorithm>

#include "core/offer_probe.hpp"

namespace flexcod {

flexco::CoallocRequest plan_request(const PlanAsk& ask, std::int64_t now) {
  flexco::CoallocRequest req;
  req.nodes = ask.nodes;
  req.runtime = ask.duration + kStartSlack;
  req.ready = std::max(ask.ready, now);
  req.deadline = ask.deadline > 0 ? ask.deadline : flexco::kForever;
  req.overhead = ask.overhead;
  req.max_parts = static_cast<std::size_t>(std::max(0, ask.max_parts));
  return req;
}

flexco::CoallocOptions plan_options(std::int64_t now) {
  flexco::CoallocOptions opts;
  opts.now = now;
  return opts;
}

bool policy_probes(const std::string& policy) { return policy == "coarp" || policy == "cores" || policy == "cores-seq"; }

std::string probe_body(const PlanAsk& ask, std::int64_t published, std::int64_t now,
                       const std::string& partition, std::int64_t clock_shift) {
  PlanAsk there = ask;
  if (there.ready > 0) there.ready += clock_shift;
  if (there.deadline > 0) there.deadline += clock_shift;
  const flexco::CoallocRequest req = plan_request(there, now + clock_shift);
  return flexco::plan_probe_query(req, published, req.ready, partition);
}

std::vector<flexco::ClusterView> plan_views(
    const std::vector<std::string>& names, const std::vector<flexco::Availability>& avail,
    const std::vector<std::vector<flexco::CoallocOffer>>& offers) {
  std::vector<flexco::ClusterView> views;
  for (std::size_t k = 0; k < avail.size(); ++k) {
    flexco::ClusterView v;
    v.name = k < names.size() ? names[k] : std::string();
    v.capacity = avail[k].nodes_published;
    v.free = &avail[k].nodes;
    if (k < offers.size()) v.offers = offers[k];
    views.push_back(std::move(v));
  }
  return views;
}

bool local_queue_went_first(std::int64_t bf_last_cycle, bool bf_active, std::int64_t ended) {
  return !bf_active && bf_last_cycle > ended;
}

}  // namespace flexcod
