// SPDX-License-Identifier: GPL-2.0-or-later
// Co-allocation: policy names, input validation, the helpers the planners
// share and the dispatcher.  The planners are in planner_*.cpp, the
// rescheduling decision in reschedule.cpp; doc/coalloc.md explains them.

#include "core/coalloc.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/coalloc_detail.hpp"

namespace flexco {

namespace cd = coalloc_detail;

const char* policy_name(Policy policy) noexcept {
  switch (policy) {
    case Policy::kFlexCo: return "flexco";
    case Policy::kCoarp: return "coarp";
    case Policy::kHpcm: return "hpcm";
    case Policy::kCores: return "cores";
    case Policy::kCoresSeq: return "cores-seq";
  }
  return "?";
}

Result<Policy> parse_policy(const std::string& name) {
  for (Policy p : {Policy::kFlexCo, Policy::kCoarp, Policy::kHpcm, Policy::kCores,
                   Policy::kCoresSeq})
    if (name == policy_name(p)) return p;
  return cd::make_error(Errc::kInvalidArgument, "parse_policy",
                        "unknown policy \"" + name +
                            "\" (valid: flexco, coarp, hpcm, cores, cores-seq)");
}

Duration coalloc_overhead(const CoallocRequest& request) noexcept {
  if (!(request.overhead > 0.0) || request.runtime <= 0) return 0;
  double o = std::ceil(request.overhead * static_cast<double>(request.runtime));
  if (!(o < 9.0e18)) return kForever;
  return static_cast<Duration>(o);
}

Result<CoallocPlan> plan_coalloc(Policy policy, const CoallocRequest& request,
                                 const std::vector<ClusterView>& clusters,
                                 PlannerState& state, const CoallocOptions& options) {
  switch (policy) {
    case Policy::kFlexCo: return plan_flexco(request, clusters, state);
    case Policy::kCoarp: return plan_coarp(request, clusters, options);
    case Policy::kHpcm: return plan_hpcm(request, clusters, state, options);
    case Policy::kCores: return plan_cores(request, clusters, options);
    case Policy::kCoresSeq: return plan_cores_seq(request, clusters, options);
  }
  return cd::make_error(Errc::kInvalidArgument, "plan_coalloc",
                        "unknown policy value " +
                            std::to_string(static_cast<int>(policy)));
}

namespace coalloc_detail {

Error make_error(Errc code, const char* where, const std::string& what) {
  return Error{code, std::string(where) + ": " + what};
}

std::string time_str(Time t) {
  return t == kForever ? std::string("forever") : std::to_string(t);
}

namespace {

bool is_unit(double x) { return x >= 0.0 && x <= 1.0; }  // false for NaN

std::string num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

std::optional<Error> validate(const char* where, const CoallocRequest& r,
                              const std::vector<ClusterView>& clusters,
                              const CoallocOptions* options) {
  auto bad = [where](const std::string& what) {
    return std::optional<Error>(make_error(Errc::kInvalidArgument, where, what));
  };
  if (r.nodes < 1 || r.nodes > kMaxAmount)
    return bad("request.nodes must be in [1, 2^52] (got " + std::to_string(r.nodes) + ")");
  if (r.runtime < 1 || r.runtime > kMaxAmount)
    return bad("request.runtime must be in [1, 2^52] s (got " + std::to_string(r.runtime) +
               ")");
  if (r.ready < 0 || r.ready >= kForever)
    return bad("request.ready must be in [0, forever) (got " + std::to_string(r.ready) + ")");
  if (r.deadline <= r.ready)
    return bad("request.deadline must be after request.ready (deadline " +
               time_str(r.deadline) + ", ready " + std::to_string(r.ready) + ")");
  if (!(r.overhead >= 0.0 && r.overhead <= 10.0))
    return bad("request.overhead must be in [0, 10] (got " + num(r.overhead) + ")");
  if (clusters.empty()) return bad("no clusters given");
  if (clusters.size() > 1024)
    return bad("at most 1024 clusters (got " + std::to_string(clusters.size()) + ")");
  if (!r.allowed.empty() && r.allowed.size() != clusters.size())
    return bad("request.allowed has " + std::to_string(r.allowed.size()) +
               " entries for " + std::to_string(clusters.size()) + " clusters");
  if (!r.allowed.empty() &&
      std::find(r.allowed.begin(), r.allowed.end(), true) == r.allowed.end())
    return bad("request.allowed allows no cluster");
  std::set<const Profile*> seen;
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    const ClusterView& c = clusters[i];
    // Built only for a message: validation runs on every plan.
    struct Id {
      std::size_t i;
      const std::string& name;
      operator std::string() const { return "cluster " + std::to_string(i) + " (" + name + ")"; }
    } id{i, c.name};
    if (c.free == nullptr) return bad(std::string(id) + ": free profile is null");
    if (!seen.insert(c.free).second)
      return bad(std::string(id) + ": free profile is shared with another cluster");
    if (c.capacity < 0 || c.capacity > kMaxAmount)
      return bad(std::string(id) + ": capacity must be in [0, 2^52] (got " + std::to_string(c.capacity) +
                 ")");
    if (!(c.arrival_rate >= 0.0 && std::isfinite(c.arrival_rate)))
      return bad(std::string(id) + ": arrival_rate must be finite and >= 0 (got " + num(c.arrival_rate) +
                 ")");
    if (!(c.service_rate >= 0.0 && std::isfinite(c.service_rate)))
      return bad(std::string(id) + ": service_rate must be finite and >= 0 (got " + num(c.service_rate) +
                 ")");
    if (c.arrival_rate > 0.0 && c.service_rate == 0.0)
      return bad(std::string(id) + ": arrival_rate " + num(c.arrival_rate) + " needs service_rate > 0");
    if (!(c.speed > 0.0 && std::isfinite(c.speed)))
      return bad(std::string(id) + ": speed must be finite and > 0 (got " + num(c.speed) + ")");
    for (std::size_t k = 0; k < c.offers.size(); ++k) {
      const CoallocOffer& o = c.offers[k];
      auto oid = [&]() { return std::string(id) + ": offer " + std::to_string(k); };
      if (o.start < 0 || o.start >= o.end)
        return bad(oid() + ": needs 0 <= start < end (start " + std::to_string(o.start) +
                   ", end " + time_str(o.end) + ")");
      if (o.nodes < 1 || o.nodes > kMaxAmount)
        return bad(oid() + ": nodes must be in [1, 2^52] (got " + std::to_string(o.nodes) + ")");
      if (!is_unit(o.fit)) return bad(oid() + ": fit must be in [0, 1] (got " + num(o.fit) + ")");
      if (!is_unit(o.p_res))
        return bad(oid() + ": p_res must be in [0, 1] (got " + num(o.p_res) + ")");
    }
  }
  if (options != nullptr) {
    const CoallocOptions& o = *options;
    for (auto [name, w] : {std::pair<const char*, double>{"cores_w_end", o.cores_w_end},
                           {"cores_w_fit", o.cores_w_fit},
                           {"cores_w_pres", o.cores_w_pres}})
      if (!(w >= 0.0 && std::isfinite(w)))
        return bad(std::string("options.") + name + " must be finite and >= 0 (got " + num(w) +
                   ")");
    if (!(o.p_res_h > 0.0 && std::isfinite(o.p_res_h)))
      return bad("options.p_res_h must be finite and > 0 (got " + num(o.p_res_h) + ")");
    if (o.max_offers < 1 || o.max_offers > 100000)
      return bad("options.max_offers must be in [1, 100000] (got " +
                 std::to_string(o.max_offers) + ")");
    if (o.now < -1 || o.now >= kForever)
      return bad("options.now must be -1 or a time (got " + std::to_string(o.now) + ")");
  }
  return std::nullopt;
}

std::optional<Error> validate_plan(const char* where, const char* what,
                                   const CoallocPlan& plan, const CoallocRequest& request,
                                   std::size_t cluster_count) {
  auto bad = [&](const std::string& msg) {
    return std::optional<Error>(
        make_error(Errc::kInvalidArgument, where, std::string(what) + ": " + msg));
  };
  if (plan.parts.empty()) return bad("has no parts");
  if (plan.start < 0 || plan.start >= kForever)
    return bad("start must be in [0, forever) (got " + std::to_string(plan.start) + ")");
  if (plan.duration < 1)
    return bad("duration must be >= 1 (got " + std::to_string(plan.duration) + ")");
  std::vector<bool> used(cluster_count, false);
  Amount total = 0;
  for (std::size_t i = 0; i < plan.parts.size(); ++i) {
    const PlanPart& p = plan.parts[i];
    std::string id = "part " + std::to_string(i);
    if (p.cluster >= cluster_count)
      return bad(id + ": cluster " + std::to_string(p.cluster) + " out of range (" +
                 std::to_string(cluster_count) + " clusters)");
    if (used[p.cluster])
      return bad(id + ": cluster " + std::to_string(p.cluster) + " used twice");
    used[p.cluster] = true;
    if (p.nodes < 1 || p.nodes > kMaxAmount)
      return bad(id + ": nodes must be in [1, 2^52] (got " + std::to_string(p.nodes) + ")");
    total += p.nodes;
    if (total > kMaxAmount) return bad("nodes add up beyond 2^52");
  }
  if (total != request.nodes)
    return bad("parts hold " + std::to_string(total) + " nodes, the request " +
               std::to_string(request.nodes));
  return std::nullopt;
}

std::vector<std::size_t> allowed_indices(const CoallocRequest& request,
                                         std::size_t cluster_count) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < cluster_count; ++i)
    if (request.allowed.empty() || request.allowed[i]) out.push_back(i);
  return out;
}

std::vector<std::size_t> rotation(const std::vector<std::size_t>& allowed, std::size_t first,
                                  std::size_t cluster_count) {
  first = cluster_count == 0 ? 0 : first % cluster_count;
  auto pivot = std::lower_bound(allowed.begin(), allowed.end(), first);
  std::vector<std::size_t> out(pivot, allowed.end());
  out.insert(out.end(), allowed.begin(), pivot);
  return out;
}

std::size_t part_limit(const CoallocRequest& request, std::size_t allowed) {
  return request.max_parts == 0 ? allowed : std::min(request.max_parts, allowed);
}

Duration split_duration(const CoallocRequest& request) {
  Duration o = coalloc_overhead(request);
  if (o >= kForever - request.runtime) return kForever;
  return request.runtime + o;
}

Amount avail(const ClusterView& c, Time s, Duration d) {
  auto m = c.free->min_over(s, d);
  if (!m) return 0;
  return std::max<Amount>(0, m.value());
}

SingleFit earliest_single(const CoallocRequest& request,
                          const std::vector<ClusterView>& clusters,
                          const std::vector<std::size_t>& order, Time from) {
  SingleFit best;
  for (std::size_t i : order) {
    auto s = clusters[i].free->earliest_fit(from, request.runtime, request.nodes);
    if (s && s.value() < best.start) best = SingleFit{s.value(), i};
  }
  return best;
}

namespace {

// Sum of the `limit` largest entries.
Amount top_sum(const std::vector<Amount>& a, std::size_t limit, std::vector<Amount>& scratch) {
  Amount got = 0;
  if (limit < a.size()) {
    scratch = a;
    std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(limit - 1),
                     scratch.end(), std::greater<Amount>());
    for (std::size_t k = 0; k < limit; ++k) got += scratch[k];
  } else {
    for (Amount x : a) got += x;
  }
  return got;
}

}  // namespace

Time earliest_split(const std::vector<ClusterView>& clusters,
                    const std::vector<std::size_t>& order, Amount n, Duration d,
                    std::size_t limit, Time from, Time before) {
  if (order.empty() || limit == 0) return kNever;
  std::vector<const Profile*> profiles;
  Time origin = 0;
  for (std::size_t i : order) {
    profiles.push_back(clusters[i].free);
    origin = std::max(origin, clusters[i].free->origin());
  }
  std::vector<Amount> a(order.size()), level(order.size()), scratch;
  std::vector<Time> next(order.size());
  Time s = std::max(from, origin);
  while (s < before) {
    for (std::size_t k = 0; k < order.size(); ++k) a[k] = avail(clusters[order[k]], s, d);
    if (top_sum(a, limit, scratch) >= n) return s;
    // No later start does better before the `limit` largest of the best
    // minima each cluster can reach by then add up to n.  A cluster's best
    // minimum over the starts in (s, t] rises only at t = earliest_fit(s +
    // 1, d, level + 1), where it becomes the minimum at t.  Merge these
    // rises in time order until the levels suffice: the first start worth
    // testing.
    level = a;
    for (std::size_t k = 0; k < order.size(); ++k) {
      next[k] = kNever;
      if (level[k] < profiles[k]->capacity()) {
        auto e = profiles[k]->earliest_fit(s + 1, d, level[k] + 1);
        if (e) next[k] = e.value();
      }
    }
    Time t = kNever;
    for (;;) {
      std::size_t k = static_cast<std::size_t>(
          std::min_element(next.begin(), next.end()) - next.begin());
      t = next[k];
      if (t >= before) return kNever;
      level[k] = std::max(level[k] + 1, avail(clusters[order[k]], t, d));
      next[k] = kNever;
      if (level[k] < profiles[k]->capacity()) {
        auto e = profiles[k]->earliest_fit(t + 1, d, level[k] + 1);
        if (e) next[k] = e.value();
      }
      // Rises at the same t all count before the test.
      if (*std::min_element(next.begin(), next.end()) == t) continue;
      if (top_sum(level, limit, scratch) >= n) break;
    }
    s = t;
  }
  return kNever;
}

std::vector<PlanPart> distribute(const std::vector<std::size_t>& order,
                                 const std::vector<Amount>& avail_by_cluster, Amount n,
                                 std::size_t limit) {
  // Position in `order` breaks ties.
  std::vector<std::size_t> by_avail(order);
  std::stable_sort(by_avail.begin(), by_avail.end(), [&](std::size_t x, std::size_t y) {
    return avail_by_cluster[x] > avail_by_cluster[y];
  });
  auto fill = [&](std::vector<std::size_t> seq) {
    std::vector<PlanPart> parts;
    Amount left = n;
    for (std::size_t c : seq) {
      if (left == 0) break;
      Amount take = std::min(left, avail_by_cluster[c]);
      if (take <= 0) continue;
      parts.push_back(PlanPart{c, take, 1.0, 1.0});
      left -= take;
    }
    if (left > 0) parts.clear();
    return parts;
  };
  auto first = std::find_if(order.begin(), order.end(),
                            [&](std::size_t c) { return avail_by_cluster[c] > 0; });
  if (first != order.end()) {
    std::vector<std::size_t> seq{*first};
    for (std::size_t c : by_avail)
      if (c != *first) seq.push_back(c);
    auto parts = fill(seq);
    if (!parts.empty() && parts.size() <= limit) return parts;
  }
  auto parts = fill(by_avail);
  if (parts.size() > limit) parts.clear();
  return parts;
}

Error deadline_error(const char* where, const CoallocRequest& r, Time best_end) {
  std::string what = "no plan for " + std::to_string(r.nodes) + " nodes x " +
                     std::to_string(r.runtime) + " s from " + std::to_string(r.ready);
  if (r.deadline != kForever) what += " ends by the deadline " + std::to_string(r.deadline);
  else what += " exists on the allowed clusters";
  what += best_end == kForever ? " (none ever fits)"
                               : " (earliest end " + std::to_string(best_end) + ")";
  return make_error(Errc::kNoFit, where, what);
}

Time earliest_any(const CoallocRequest& request, const std::vector<ClusterView>& clusters,
                  const std::vector<std::size_t>& allowed, Time from) {
  SingleFit single = earliest_single(request, clusters, allowed, from);
  std::size_t limit = part_limit(request, allowed.size());
  if (limit < 2) return single.start;
  Time split = earliest_split(clusters, allowed, request.nodes, split_duration(request), limit,
                              from, single.start);
  return std::min(single.start, split);
}

bool any_offers(const std::vector<ClusterView>& clusters,
                const std::vector<std::size_t>& allowed) {
  for (std::size_t c : allowed)
    if (!clusters[c].offers.empty()) return true;
  return false;
}

Usable usable(const ClusterView& c, Time s, Duration d, double derived_p_res) {
  Usable u;
  if (c.offers.empty()) {
    u.nodes = avail(c, s, d);
    u.p_res = derived_p_res;
    return u;
  }
  u.p_res = 0.0;
  Time end = d >= kForever - s ? kForever : s + d;
  for (const CoallocOffer& o : c.offers) {
    if (o.start > s || o.end < end) continue;
    if (o.nodes > u.nodes || (o.nodes == u.nodes && o.fit > u.fit)) {
      u.nodes = o.nodes;
      u.fit = o.fit;
      u.p_res = o.p_res;
    }
  }
  if (u.nodes == 0) u = Usable{0, 1.0, 1.0};
  return u;
}

std::vector<Time> candidate_starts(const ClusterView& c, Time from, Duration d, std::size_t k,
                                   bool* truncated) {
  std::vector<Time> out;
  *truncated = false;
  if (!c.offers.empty()) {
    for (const CoallocOffer& o : c.offers)
      if (o.start >= from) out.push_back(o.start);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  auto s = c.free->earliest_fit(from, d, 1);
  Time t = s ? s.value() : kNever;
  while (t != kNever && out.size() < k) {
    out.push_back(t);
    auto n = c.free->next_fit(t, d, 1);
    t = n ? n.value() : kNever;
  }
  *truncated = t != kNever;
  return out;
}

double static_p_res(Time s, Time now, double h) {
  double bat = s > now ? static_cast<double>(s - now) : 0.0;
  return 1.0 - std::exp(-bat / h);
}

}  // namespace coalloc_detail

}  // namespace flexco
