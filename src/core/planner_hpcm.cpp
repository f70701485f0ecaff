// SPDX-License-Identifier: GPL-2.0-or-later
// HPCM, the hybrid-policy co-allocation model (Theorem 1, Algorithm 1 and
// section 4 of the paper), as read in doc/coalloc.md:
//
//   * a cluster is an M/M/c queue: c = its capacity in nodes, lambda its
//     job arrival rate, mu the service rate of one node (the paper's
//     Definition 1 calls them interval and time but uses them as rates);
//   * Theorem 1 in its standard M/M/c form: a part meets a deadline d
//     seconds away when at most W = floor(c mu d) - 1 jobs wait ahead of
//     it; with Erlang's C formula C(c, a), a = lambda/mu, rho = a/c:
//        P = Pr{no wait} + sum_{k=1..W} Pr{k waiting} = 1 - C rho^(max(W,0)+1)
//     (the paper's delta has a typo, n = 1 and /c for n = 0 and /c!; the
//     k = 0 term is kept even when W < 0, as eq. 4 does);
//   * P(S, d) of a scheme (Algorithm 1, PSA_NRR with one part per cluster)
//     is the product over the clusters it uses;
//   * three schemes fill the nodes cluster by cluster up to each cluster's
//     capacity (HPCM assigns to site queues, not to free slots): round
//     robin from the state's pointer (RR_P), a random order drawn with
//     probability proportional to speed x capacity (CR_P, state's RNG),
//     and largest capacity first (CM_P, fewest clusters);
//   * each scheme starts at the earliest common start of its parts; the
//     scheme with the highest P(S, d) that ends by the deadline wins, ties
//     by earlier end, fewer parts, then RR, CR, CM;
//   * lambda and mu learned from a cluster's finished jobs
//     (hpcm_estimate_rates, HpcmRateLearner; flexcod feeds them).
// Cost: O(sum of capacities) for the Erlang C values plus O(C log P) per
// scheme.

#include <algorithm>
#include <cmath>

#include "core/coalloc.hpp"
#include "core/coalloc_detail.hpp"

namespace flexco {

namespace cd = coalloc_detail;

namespace {

// C(c, a) via Erlang B's recursion; requires a < c.
double erlang_c(Amount c, double a) {
  double b = 1.0;
  for (Amount k = 1; k <= c; ++k) b = a * b / (static_cast<double>(k) + a * b);
  double rho = a / static_cast<double>(c);
  return b / (1.0 - rho * (1.0 - b));
}

double site_probability(Amount c, double lambda, double mu, Duration d) {
  if (lambda == 0.0) return 1.0;
  if (mu == 0.0 || c < 1) return 0.0;
  double a = lambda / mu;
  double rho = a / static_cast<double>(c);
  if (rho >= 1.0) return 0.0;
  double waiting;  // W + 1, at least 1
  if (d == kForever) return 1.0;
  waiting = std::max(0.0, std::floor(static_cast<double>(c) * mu * static_cast<double>(d)) - 1.0) + 1.0;
  double p = 1.0 - erlang_c(c, a) * std::pow(rho, waiting);
  return std::clamp(p, 0.0, 1.0);
}

std::uint64_t next_random(std::uint64_t& x) {  // xorshift64*
  if (x == 0) x = 0x2545f4914f6cdd1dULL;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 0x2545f4914f6cdd1dULL;
}

// Uniform in [0, 1).
double uniform(std::uint64_t& x) {
  return static_cast<double>(next_random(x) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace

Result<double> hpcm_site_probability(Amount c, double lambda, double mu, Duration d) {
  static const char* kWhere = "hpcm_site_probability";
  if (c < 1 || c > kMaxAmount)
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "c must be in [1, 2^52] (got " + std::to_string(c) + ")");
  if (!(lambda >= 0.0 && std::isfinite(lambda)) || !(mu >= 0.0 && std::isfinite(mu)))
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "lambda and mu must be finite and >= 0 (got " +
                              std::to_string(lambda) + ", " + std::to_string(mu) + ")");
  if (d < 0)
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "d must be >= 0 (got " + std::to_string(d) + ")");
  return site_probability(c, lambda, mu, d);
}

Result<double> hpcm_plan_probability(const CoallocPlan& plan,
                                     const std::vector<ClusterView>& clusters, Duration d) {
  static const char* kWhere = "hpcm_plan_probability";
  if (d < 0)
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "d must be >= 0 (got " + std::to_string(d) + ")");
  double p = 1.0;
  for (std::size_t i = 0; i < plan.parts.size(); ++i) {
    std::size_t c = plan.parts[i].cluster;
    if (c >= clusters.size())
      return cd::make_error(Errc::kInvalidArgument, kWhere,
                            "part " + std::to_string(i) + ": cluster " + std::to_string(c) +
                                " out of range (" + std::to_string(clusters.size()) +
                                " clusters)");
    auto q = hpcm_site_probability(std::max<Amount>(1, clusters[c].capacity),
                                   clusters[c].arrival_rate, clusters[c].service_rate, d);
    if (!q) return cd::make_error(q.error().code, kWhere,
                                  "part " + std::to_string(i) + ": " + q.error().message);
    p *= q.value();
  }
  return p;
}

Result<HpcmRates> hpcm_estimate_rates(const std::vector<HpcmJob>& jobs, Time now,
                                      Duration window) {
  static const char* kWhere = "hpcm_estimate_rates";
  if (window < 1)
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "window must be >= 1 s (got " + std::to_string(window) + ")");
  HpcmRates r;
  Time first = kForever;
  double work = 0.0;
  for (const HpcmJob& j : jobs) {
    if (j.nodes < 1 || j.end < j.start || j.end > now || j.end <= now - window) continue;
    ++r.jobs;
    first = std::min(first, j.start);
    work += static_cast<double>(j.nodes) * static_cast<double>(std::max<Duration>(1, j.end - j.start));
  }
  if (r.jobs < kHpcmMinJobs) return r;
  const Time t0 = std::max(now - window, first);
  r.span = std::max<Duration>(1, now - t0);
  const double n = static_cast<double>(r.jobs);
  r.arrival_rate = n / static_cast<double>(r.span);
  r.service_rate = n / work;
  return r;
}

void HpcmRateLearner::record(Time start, Time end, Amount nodes) {
  if (nodes < 1 || end < start || window_ < 1) return;
  latest_end_ = std::max(latest_end_, end);
  if (end <= latest_end_ - window_) return;
  auto at = std::upper_bound(jobs_.begin(), jobs_.end(), end,
                             [](Time e, const HpcmJob& j) { return e < j.end; });
  jobs_.insert(at, HpcmJob{start, end, nodes});
  std::size_t drop = 0;
  while (drop < jobs_.size() && jobs_[drop].end <= latest_end_ - window_) ++drop;
  if (jobs_.size() - drop > kHpcmMaxJobs) drop = jobs_.size() - kHpcmMaxJobs;
  jobs_.erase(jobs_.begin(), jobs_.begin() + static_cast<std::ptrdiff_t>(drop));
}

HpcmRates HpcmRateLearner::rates(Time now) const {
  auto r = hpcm_estimate_rates(jobs_, now, window_);
  return r ? r.value() : HpcmRates{};
}

Result<CoallocPlan> plan_hpcm(const CoallocRequest& request,
                              const std::vector<ClusterView>& clusters, PlannerState& state,
                              const CoallocOptions& options) {
  static const char* kWhere = "plan_hpcm";
  if (auto e = cd::validate(kWhere, request, clusters, &options)) return *e;
  std::vector<std::size_t> allowed = cd::allowed_indices(request, clusters.size());
  std::size_t limit = cd::part_limit(request, allowed.size());
  Time now = options.now >= 0 ? options.now : request.ready;
  Duration d = request.deadline == kForever
                   ? kForever
                   : std::max<Duration>(0, request.deadline - now);
  PlannerState next = state;

  // The three orders.
  std::vector<std::size_t> rr = cd::rotation(allowed, state.next_first, clusters.size());
  std::vector<std::size_t> cr;
  {
    std::vector<std::size_t> pool;
    std::vector<double> w;
    std::vector<std::size_t> zero;
    for (std::size_t c : allowed) {
      double x = clusters[c].speed * static_cast<double>(clusters[c].capacity);
      if (x > 0.0) {
        pool.push_back(c);
        w.push_back(x);
      } else {
        zero.push_back(c);
      }
    }
    while (!pool.empty()) {
      double total = 0.0;
      for (double x : w) total += x;
      double u = uniform(next.rng) * total;
      std::size_t pick = 0;
      while (pick + 1 < pool.size() && u >= w[pick]) u -= w[pick++];
      cr.push_back(pool[pick]);
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(pick));
      w.erase(w.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    cr.insert(cr.end(), zero.begin(), zero.end());
  }
  std::vector<std::size_t> cm(allowed);
  std::stable_sort(cm.begin(), cm.end(), [&](std::size_t a, std::size_t b) {
    return clusters[a].capacity > clusters[b].capacity;
  });

  std::vector<double> site(clusters.size(), -1.0);
  auto prob = [&](std::size_t c) {
    if (site[c] < 0.0)
      site[c] = site_probability(clusters[c].capacity, clusters[c].arrival_rate,
                                 clusters[c].service_rate, d);
    return site[c];
  };

  std::optional<CoallocPlan> best;
  Time earliest_end = kForever;
  std::size_t rr_last = state.next_first;
  bool rr_used = false;
  for (int scheme = 0; scheme < 3; ++scheme) {
    const std::vector<std::size_t>& order = scheme == 0 ? rr : scheme == 1 ? cr : cm;
    std::vector<PlanPart> parts;
    Amount left = request.nodes;
    for (std::size_t c : order) {
      if (left == 0 || parts.size() == limit) break;
      Amount take = std::min(left, clusters[c].capacity);
      if (take <= 0) continue;
      parts.push_back(PlanPart{c, take, 1.0, 1.0});
      left -= take;
    }
    if (left > 0) continue;
    CoallocPlan plan;
    plan.duration = parts.size() > 1 ? cd::split_duration(request) : request.runtime;
    std::vector<Demand> demands;
    for (const PlanPart& p : parts) demands.push_back(Demand{clusters[p.cluster].free, p.nodes});
    auto s = earliest_common_start(demands, request.ready, plan.duration);
    if (!s || s.value() == kNever) continue;
    plan.start = s.value();
    plan.parts = std::move(parts);
    plan.score = 1.0;
    for (const PlanPart& p : plan.parts) plan.score *= prob(p.cluster);
    earliest_end = std::min(earliest_end, plan.end());
    if (plan.end() > request.deadline) continue;
    if (scheme == 0) {
      rr_used = true;
      rr_last = plan.parts.back().cluster;
    }
    bool better = !best || plan.score > best->score ||
                  (plan.score == best->score &&
                   (plan.end() < best->end() ||
                    (plan.end() == best->end() && plan.parts.size() < best->parts.size())));
    if (better) best = std::move(plan);
  }
  if (!best) return cd::deadline_error(kWhere, request, earliest_end);
  next.next_first = rr_used ? (rr_last + 1) % clusters.size()
                            : (state.next_first % clusters.size() + 1) % clusters.size();
  state = next;
  return std::move(*best);
}

}  // namespace flexco
