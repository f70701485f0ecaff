// SPDX-License-Identifier: GPL-2.0-or-later
// Rescheduling of waiting co-allocations after early completions: FlexCo's
// Shift and Shift+Remap operations (Netto & Buyya, section 3) and the
// metascheduler's side of Algorithm 2 (lines 9-15), as read in
// doc/coalloc.md:
//
//   * Shift keeps every part's cluster and node count and moves the common
//     start to the earliest time all parts fit again (earliest_common_start
//     over the parts' profiles);
//   * Remap plans the metajob again with Algorithm 1 ("in a similar way as
//     the initial scheduling"), so it may drop clusters, even end on one
//     cluster without the overhead; the current first cluster keeps the
//     next-fit priority and no rotation state moves;
//   * the earlier end of the two wins, Shift on a tie; it is adopted only
//     when it ends strictly earlier than the current plan and by at least
//     the margin (Algorithm 2, line 12, compares completion times);
//   * the pass visits the waiting metajobs in order of their current start
//     (line 2's sort), each seeing the previous ones' new places.

#include <algorithm>
#include <numeric>
#include <set>

#include "core/coalloc.hpp"
#include "core/coalloc_detail.hpp"

namespace flexco {

namespace cd = coalloc_detail;

const char* reschedule_mode_name(RescheduleMode mode) noexcept {
  switch (mode) {
    case RescheduleMode::kShift: return "shift";
    case RescheduleMode::kShiftRemap: return "shift+remap";
  }
  return "?";
}

Result<RescheduleMode> parse_reschedule_mode(const std::string& name) {
  if (name == "shift") return RescheduleMode::kShift;
  if (name == "shift+remap" || name == "remap") return RescheduleMode::kShiftRemap;
  return cd::make_error(Errc::kInvalidArgument, "parse_reschedule_mode",
                        "unknown mode \"" + name + "\" (valid: shift, shift+remap, remap)");
}

const char* reschedule_kind_name(RescheduleKind kind) noexcept {
  switch (kind) {
    case RescheduleKind::kNone: return "none";
    case RescheduleKind::kShift: return "shift";
    case RescheduleKind::kRemap: return "remap";
  }
  return "?";
}

namespace {

std::optional<Error> check_options(const char* where, Time now,
                                   const RescheduleOptions& options) {
  if (now < 0 || now >= kForever)
    return cd::make_error(Errc::kInvalidArgument, where,
                          "now must be in [0, forever) (got " + std::to_string(now) + ")");
  if (options.margin < 0)
    return cd::make_error(Errc::kInvalidArgument, where,
                          "options.margin must be >= 0 (got " +
                              std::to_string(options.margin) + ")");
  if (options.mode != RescheduleMode::kShift && options.mode != RescheduleMode::kShiftRemap)
    return cd::make_error(Errc::kInvalidArgument, where,
                          "options.mode has the unknown value " +
                              std::to_string(static_cast<int>(options.mode)));
  return std::nullopt;
}

RescheduleDecision decide(const CoallocRequest& request, const CoallocPlan& current,
                          const std::vector<ClusterView>& clusters, Time now,
                          const RescheduleOptions& options) {
  Time from = std::max(now, request.ready);
  Time cur_end = current.end();
  RescheduleDecision best;
  best.plan = current;
  Time best_end = cur_end;

  std::vector<Demand> demands;
  for (const PlanPart& p : current.parts) demands.push_back(Demand{clusters[p.cluster].free, p.nodes});
  auto s = earliest_common_start(demands, from, current.duration);
  if (s && s.value() != kNever) {
    CoallocPlan shifted = current;
    shifted.start = s.value();
    if (shifted.end() < best_end) {
      best_end = shifted.end();
      best.kind = RescheduleKind::kShift;
      best.plan = std::move(shifted);
    }
  }
  if (options.mode == RescheduleMode::kShiftRemap) {
    std::vector<std::size_t> order =
        cd::rotation(cd::allowed_indices(request, clusters.size()), current.parts[0].cluster,
                     clusters.size());
    auto remap = cd::flexco_best(request, clusters, order, from);
    if (remap && remap->end() < best_end) {
      best_end = remap->end();
      best.kind = RescheduleKind::kRemap;
      best.plan = std::move(*remap);
    }
  }
  Duration gain = best.kind == RescheduleKind::kNone ? 0 : cur_end - best_end;
  if (best.kind == RescheduleKind::kNone || gain < options.margin || gain <= 0) {
    RescheduleDecision none;
    none.plan = current;
    return none;
  }
  best.gain = gain;
  return best;
}

}  // namespace

Result<RescheduleDecision> reschedule_coalloc(const CoallocRequest& request,
                                              const CoallocPlan& current,
                                              const std::vector<ClusterView>& clusters,
                                              Time now, const RescheduleOptions& options) {
  static const char* kWhere = "reschedule_coalloc";
  if (auto e = cd::validate(kWhere, request, clusters, nullptr)) return *e;
  if (auto e = check_options(kWhere, now, options)) return *e;
  if (auto e = cd::validate_plan(kWhere, "current plan", current, request, clusters.size()))
    return *e;
  if (current.start < now)
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "current plan started at " + std::to_string(current.start) +
                              ", before now " + std::to_string(now));
  return decide(request, current, clusters, now, options);
}

Result<std::vector<PassChange>> reschedule_pass(const std::vector<Profile*>& profiles,
                                                std::vector<Metajob>& jobs, Time now,
                                                const RescheduleOptions& options,
                                                const std::vector<std::string>& names) {
  static const char* kWhere = "reschedule_pass";
  auto bad = [](const std::string& what) {
    return cd::make_error(Errc::kInvalidArgument, kWhere, what);
  };
  if (auto e = check_options(kWhere, now, options)) return *e;
  if (profiles.empty()) return bad("no profiles given");
  if (!names.empty() && names.size() != profiles.size())
    return bad(std::to_string(names.size()) + " names for " + std::to_string(profiles.size()) +
               " profiles");
  std::vector<ClusterView> views(profiles.size());
  std::set<const Profile*> seen;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i] == nullptr) return bad("profile " + std::to_string(i) + " is null");
    if (!seen.insert(profiles[i]).second)
      return bad("profile " + std::to_string(i) + " is listed twice");
    views[i].name = names.empty() ? "cluster" + std::to_string(i) : names[i];
    views[i].capacity = profiles[i]->capacity();
    views[i].free = profiles[i];
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Metajob& j = jobs[i];
    std::string id = "metajob " + std::to_string(j.id) + " (index " + std::to_string(i) + ")";
    if (auto e = cd::validate(kWhere, j.request, views, nullptr))
      return bad(id + ": " + e->message.substr(std::string(kWhere).size() + 2));
    if (auto e = cd::validate_plan(kWhere, id.c_str(), j.plan, j.request, views.size()))
      return *e;
    if (j.spans.size() != j.plan.parts.size())
      return bad(id + ": " + std::to_string(j.spans.size()) + " spans for " +
                 std::to_string(j.plan.parts.size()) + " parts");
    if (j.plan.start > now) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return jobs[a].plan.start < jobs[b].plan.start;
  });

  // Books `plan` and returns the span ids, or the error after undoing.
  auto book = [&](const CoallocPlan& plan, Admission adm) -> Result<std::vector<SpanId>> {
    std::vector<SpanId> ids;
    for (const PlanPart& p : plan.parts) {
      auto id = profiles[p.cluster]->add_span(plan.start, plan.duration, p.nodes, adm);
      if (!id) {
        for (std::size_t k = 0; k < ids.size(); ++k)
          (void)profiles[plan.parts[k].cluster]->remove_span(ids[k]);
        return id.error();
      }
      ids.push_back(id.value());
    }
    return ids;
  };

  std::vector<PassChange> changes;
  for (std::size_t i : order) {
    Metajob& j = jobs[i];
    std::string id = "metajob " + std::to_string(j.id) + " (index " + std::to_string(i) + ")";
    for (std::size_t k = 0; k < j.spans.size(); ++k) {
      Status st = profiles[j.plan.parts[k].cluster]->remove_span(j.spans[k]);
      if (!st) {
        // Put the parts already removed back (they fitted a moment ago).
        for (std::size_t r = 0; r < k; ++r) {
          const PlanPart& p = j.plan.parts[r];
          auto again = profiles[p.cluster]->add_span(j.plan.start, j.plan.duration, p.nodes,
                                                     Admission::kForce);
          if (again) j.spans[r] = again.value();
        }
        return cd::make_error(st.error().code, kWhere,
                              id + ": part " + std::to_string(k) + ": " + st.error().message);
      }
    }
    RescheduleDecision d = decide(j.request, j.plan, views, now, options);
    auto ids = book(d.plan, Admission::kMustFit);
    if (!ids) {
      auto old = book(j.plan, Admission::kForce);
      if (old) j.spans = old.value();
      return cd::make_error(ids.error().code, kWhere,
                            id + ": booking the " + reschedule_kind_name(d.kind) +
                                " plan failed: " + ids.error().message);
    }
    j.spans = std::move(ids.value());
    if (d.kind != RescheduleKind::kNone) {
      PassChange c{i, j.plan, d};
      j.plan = d.plan;
      changes.push_back(std::move(c));
    }
  }
  return changes;
}

}  // namespace flexco
