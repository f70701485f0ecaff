// SPDX-License-Identifier: GPL-2.0-or-later
// CORES (Roeblitz's thesis, ch. 9 to 11), reduced to one
// parallel job whose parts share a start, as read in doc/coalloc.md:
//
//   * candidates (ch. 9): the clusters' explicit offers, or event starts
//     derived from the free profiles (first options.max_offers per cluster
//     for a part and for the whole job) with fit 1 and the static
//     p_res = 1 - e^(-(start - now)/h);
//   * with free profiles only, the candidate starts are the earliest start
//     of any plan (FlexCo's search; nothing starts earlier) and the event
//     starts after it, the first options.max_offers distinct ones in all;
//     with explicit offers, every offer start from `ready`;
//   * at every candidate start S: one candidate per cluster that holds the
//     whole job for `runtime`, and one split (duration runtime + overhead)
//     filling clusters by decreasing w_fit*fit + w_pres*p_res (ties: lower
//     index; if that needs more than max_parts, largest first), at least
//     two parts;
//   * objective (ch. 10's weighted sum, normalised as eq. 10.2), minimised:
//        w_end * (end - ready) / (latest candidate end - ready)
//      - w_fit * mean fit of the parts - w_pres * product of their p_res
//     ties: earlier end, fewer parts, lower first cluster;
//   * allocation order (ch. 11.3): the parts smallest p_res first (ties:
//     lower index), the order in which to send the reserve messages.
// Cost: O(C K log P) to find the starts, then O(C log P) for each of the
// K starts (with explicit offers: O(C K) starts x O(C K) offer scans).
//
// cores-seq (plan_cores_seq) is the same search with the thesis' GRS
// admission filter (§9.6.3): an offer is used only when its fit (or p_res)
// is at least options.cores_threshold (0.85).  Its plans are meant to be
// allocated by cores_allocate, Algorithm 2 of ch. 11.3 (below): reserve
// messages one at a time, smallest p_res first; on a denial the search of
// cores_alternative (FNRP at the same start, then the §10.6 refinement
// "exclude faulty resource"); the order metrics of §11.3.1 (eq. 11.2,
// 11.6 and their means over all orders) for Example 11.1.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "core/coalloc.hpp"
#include "core/coalloc_detail.hpp"

namespace flexco {

namespace cd = coalloc_detail;

namespace {

// The admission filter of cores-seq; inactive for plain cores.
struct Admit {
  bool active = false;
  double threshold = 0.0;
  bool on_fit = true;
  bool passes(double fit, double p_res) const {
    return !active || (on_fit ? fit : p_res) >= threshold;
  }
};

// An intermediate slot (§9.5) of a cluster with offers for a part over
// [s, s + d) that none of its offers covers: a probe's offers last exactly
// the asked duration from the cluster's own change points, so they rarely
// cover another cluster's start.  Interpolated with step functions (aspect
// A2, "natural for scheduling"): the nodes are the free nodes of the
// availability the offers came from over the window (itself a step
// function), fit and p_res those of the sample before s, the offer with the
// latest start <= s (ties: more nodes, then higher fit).  No offer at or
// before s: nothing (the cluster offered nothing that early).  The filter
// applies to the interpolated properties.
cd::Usable intermediate(const ClusterView& c, Time s, Duration d, const Admit& a) {
  const CoallocOffer* before = nullptr;
  for (const CoallocOffer& o : c.offers) {
    if (o.start > s) continue;
    if (before == nullptr || o.start > before->start ||
        (o.start == before->start &&
         (o.nodes > before->nodes || (o.nodes == before->nodes && o.fit > before->fit))))
      before = &o;
  }
  if (before == nullptr || !a.passes(before->fit, before->p_res)) return cd::Usable{0, 1.0, 1.0};
  Amount n = cd::avail(c, s, d);
  if (n <= 0) return cd::Usable{0, 1.0, 1.0};
  return cd::Usable{n, before->fit, before->p_res};
}

// cd::usable restricted to offers that pass the filter; for a part
// (`part`), a cluster with offers none of which covers the window gives
// its intermediate slot.
cd::Usable admitted(const ClusterView& c, Time s, Duration d, double derived_p_res,
                    const Admit& a, bool part) {
  cd::Usable u;
  if (!a.active || c.offers.empty()) {
    u = cd::usable(c, s, d, derived_p_res);
    if (!a.passes(u.fit, u.p_res)) u.nodes = 0;
  } else {
    Time end = d >= kForever - s ? kForever : s + d;
    for (const CoallocOffer& o : c.offers) {
      if (o.start > s || o.end < end || !a.passes(o.fit, o.p_res)) continue;
      if (o.nodes > u.nodes || (o.nodes == u.nodes && o.fit > u.fit)) {
        u.nodes = o.nodes;
        u.fit = o.fit;
        u.p_res = o.p_res;
      }
    }
    if (u.nodes == 0) u = cd::Usable{0, 1.0, 1.0};
  }
  if (u.nodes == 0 && part && !c.offers.empty()) {
    // Covered by no offer (passing the filter, if any): interpolate.
    bool covered = false;
    Time end = d >= kForever - s ? kForever : s + d;
    for (const CoallocOffer& o : c.offers) covered = covered || (o.start <= s && o.end >= end);
    if (!covered) u = intermediate(c, s, d, a);
  }
  return u;
}

struct Candidate {
  CoallocPlan plan;
  double fit = 0.0;   // mean
  double pres = 1.0;  // product
};

void gather(const CoallocRequest& r, const std::vector<ClusterView>& clusters,
            const std::vector<std::size_t>& allowed, const CoallocOptions& o, Time now,
            std::size_t k, const Admit& admit, std::vector<Candidate>* out, bool* truncated) {
  Duration dm = cd::split_duration(r);
  std::size_t limit = cd::part_limit(r, allowed.size());
  std::vector<Time> starts;
  *truncated = false;
  // Without explicit offers no candidate starts before `low`, and there is
  // one at `low`: the first k distinct starts from there suffice.
  Time low = r.ready;
  bool offers = cd::any_offers(clusters, allowed);
  if (!offers) {
    Time from = r.ready;
    if (admit.active && !admit.on_fit && admit.threshold > 0.0) {
      // Derived offers pass a p_res threshold T only from
      // now + h ln(1/(1 - T)) on (T = 1: never).
      if (admit.threshold >= 1.0) return;
      double wait = std::ceil(o.p_res_h * std::log(1.0 / (1.0 - admit.threshold)));
      if (!(wait < 9.0e18)) return;
      Time t = now + static_cast<Time>(wait);
      if (t >= kForever) return;
      from = std::max(from, t);
    }
    low = cd::earliest_any(r, clusters, allowed, from);
    if (low == kNever) return;
    starts.push_back(low);
  }
  if (offers) {
    for (std::size_t c : allowed) {
      bool more = false;
      for (Duration d : {r.runtime, dm}) {
        auto s = cd::candidate_starts(clusters[c], low, d, k, &more);
        starts.insert(starts.end(), s.begin(), s.end());
        *truncated = *truncated || more;
      }
    }
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  } else {
    // Merge the clusters' event starts (for a whole job and for a part)
    // lazily until k distinct ones: O((k + C) log P).
    struct Stream {
      Time next;
      const Profile* p;
      Duration d;
    };
    auto later = [](const Stream& a, const Stream& b) { return a.next > b.next; };
    std::vector<Stream> heap;
    for (std::size_t c : allowed)
      for (Duration d : {r.runtime, dm}) {
        auto s = clusters[c].free->next_fit(low, d, 1);
        if (s && s.value() != kNever) heap.push_back(Stream{s.value(), clusters[c].free, d});
      }
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty() && starts.size() < k) {
      std::pop_heap(heap.begin(), heap.end(), later);
      Stream& x = heap.back();
      if (x.next != starts.back()) starts.push_back(x.next);
      auto n = x.p->next_fit(x.next, x.d, 1);
      if (n && n.value() != kNever) {
        x.next = n.value();
        std::push_heap(heap.begin(), heap.end(), later);
      } else {
        heap.pop_back();
      }
    }
    // With a filter, the first k starts may all be refused: ask for more.
    if (admit.active && !heap.empty()) *truncated = true;
  }
  for (Time s : starts) {
    double pres = cd::static_p_res(s, now, o.p_res_h);
    std::vector<std::pair<std::size_t, cd::Usable>> parts_avail;
    for (std::size_t c : allowed) {
      cd::Usable whole = admitted(clusters[c], s, r.runtime, pres, admit, false);
      if (whole.nodes >= r.nodes) {
        Candidate cand;
        cand.plan.start = s;
        cand.plan.duration = r.runtime;
        cand.plan.parts.push_back(PlanPart{c, r.nodes, whole.fit, whole.p_res});
        cand.fit = whole.fit;
        cand.pres = whole.p_res;
        out->push_back(std::move(cand));
      }
      if (limit >= 2) {
        cd::Usable part = admitted(clusters[c], s, dm, pres, admit, true);
        if (part.nodes > 0) parts_avail.emplace_back(c, part);
      }
    }
    if (parts_avail.size() < 2) continue;
    std::stable_sort(parts_avail.begin(), parts_avail.end(), [&](const auto& a, const auto& b) {
      return o.cores_w_fit * a.second.fit + o.cores_w_pres * a.second.p_res >
             o.cores_w_fit * b.second.fit + o.cores_w_pres * b.second.p_res;
    });
    Candidate cand;
    cand.plan.start = s;
    cand.plan.duration = dm;
    auto fill = [&]() {
      cand.plan.parts.clear();
      Amount left = r.nodes;
      for (const auto& [c, u] : parts_avail) {
        if (left == 0 || cand.plan.parts.size() == limit) break;
        Amount take = std::min(left, u.nodes);
        cand.plan.parts.push_back(PlanPart{c, take, u.fit, u.p_res});
        left -= take;
      }
      return left == 0;
    };
    if (!fill()) {
      // Too many parts in score order: largest first (ties: score order).
      std::stable_sort(parts_avail.begin(), parts_avail.end(),
                       [](const auto& a, const auto& b) { return a.second.nodes > b.second.nodes; });
      if (!fill()) continue;
    }
    if (cand.plan.parts.size() < 2) continue;
    double sum_fit = 0.0;
    for (const PlanPart& p : cand.plan.parts) {
      sum_fit += p.fit;
      cand.pres *= p.p_res;
    }
    cand.fit = sum_fit / static_cast<double>(cand.plan.parts.size());
    out->push_back(std::move(cand));
  }
}

std::optional<Error> make_admit(const char* where, const CoallocOptions& o, Admit* a) {
  if (!(o.cores_threshold >= 0.0 && o.cores_threshold <= 1.0))
    return cd::make_error(Errc::kInvalidArgument, where,
                          "options.cores_threshold must be in [0, 1] (got " +
                              std::to_string(o.cores_threshold) + ")");
  a->active = o.cores_threshold > 0.0;
  a->threshold = o.cores_threshold;
  a->on_fit = o.cores_threshold_on == CoallocOptions::CoresProperty::kFit;
  return std::nullopt;
}

Result<CoallocPlan> plan_impl(const char* kWhere, const CoallocRequest& request,
                              const std::vector<ClusterView>& clusters,
                              const CoallocOptions& options, const Admit& admit) {
  if (auto e = cd::validate(kWhere, request, clusters, &options)) return *e;
  std::vector<std::size_t> allowed = cd::allowed_indices(request, clusters.size());
  Time now = options.now >= 0 ? options.now : request.ready;
  std::vector<Candidate> cands;
  for (std::size_t k = options.max_offers;; k *= 4) {
    bool truncated = false;
    cands.clear();
    gather(request, clusters, allowed, options, now, k, admit, &cands, &truncated);
    if (!cands.empty() || !truncated) break;
  }
  Time earliest_end = kForever;
  Time latest_end = 0;
  for (const Candidate& c : cands) {
    earliest_end = std::min(earliest_end, c.plan.end());
    if (c.plan.end() <= request.deadline) latest_end = std::max(latest_end, c.plan.end());
  }
  if (cands.empty() || earliest_end > request.deadline)
    return cd::deadline_error(kWhere, request, earliest_end);
  double span = static_cast<double>(latest_end - request.ready);
  const Candidate* best = nullptr;
  double best_j = 0.0;
  for (Candidate& c : cands) {
    if (c.plan.end() > request.deadline) continue;
    double j = options.cores_w_end * static_cast<double>(c.plan.end() - request.ready) / span -
               options.cores_w_fit * c.fit - options.cores_w_pres * c.pres;
    c.plan.score = j;
    bool better =
        best == nullptr || j < best_j ||
        (j == best_j &&
         std::make_tuple(c.plan.end(), c.plan.parts.size(), c.plan.parts[0].cluster) <
             std::make_tuple(best->plan.end(), best->plan.parts.size(),
                             best->plan.parts[0].cluster));
    if (better) {
      best = &c;
      best_j = j;
    }
  }
  CoallocPlan plan = best->plan;
  std::stable_sort(plan.parts.begin(), plan.parts.end(), [](const PlanPart& a, const PlanPart& b) {
    return a.p_res < b.p_res || (a.p_res == b.p_res && a.cluster < b.cluster);
  });
  return plan;
}

// A part's p_res or cluster decides the allocation order (lines 1, 15).
bool sent_before(const PlanPart& a, const PlanPart& b) {
  return a.p_res < b.p_res || (a.p_res == b.p_res && a.cluster < b.cluster);
}

bool odds_ok(const CoresPartOdds& p) {
  return p.p_esr >= 0.0 && p.p_esr <= 1.0 && p.alpha >= 0.0 && p.alpha <= 1.0 &&
         p.penalty >= 0.0 && std::isfinite(p.penalty);
}

}  // namespace

Result<CoallocPlan> plan_cores(const CoallocRequest& request,
                               const std::vector<ClusterView>& clusters,
                               const CoallocOptions& options) {
  return plan_impl("plan_cores", request, clusters, options, Admit{});
}

Result<CoallocPlan> plan_cores_seq(const CoallocRequest& request,
                                   const std::vector<ClusterView>& clusters,
                                   const CoallocOptions& options) {
  static const char* kWhere = "plan_cores_seq";
  Admit admit;
  if (auto e = make_admit(kWhere, options, &admit)) return *e;
  return plan_impl(kWhere, request, clusters, options, admit);
}

// ---------------------------------------------------------------------------
// Ch. 11.3.1: order metrics

double CoresPartOdds::at_step(std::size_t step) const noexcept {
  double p = (1.0 - static_cast<double>(step - 1) * alpha) * p_esr;
  return std::clamp(p, 0.0, 1.0);
}

Result<CoresOrderMetrics> cores_order_metrics(const std::vector<CoresPartOdds>& parts,
                                              const std::vector<std::size_t>& order) {
  static const char* kWhere = "cores_order_metrics";
  const std::size_t n = parts.size();
  if (n == 0) return cd::make_error(Errc::kInvalidArgument, kWhere, "no parts");
  if (order.size() != n)
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "order has " + std::to_string(order.size()) + " entries for " +
                              std::to_string(n) + " parts");
  std::vector<bool> seen(n, false);
  for (std::size_t i : order) {
    if (i >= n || seen[i])
      return cd::make_error(Errc::kInvalidArgument, kWhere,
                            "order is not a permutation of 0.." + std::to_string(n - 1));
    seen[i] = true;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!odds_ok(parts[i]))
      return cd::make_error(Errc::kInvalidArgument, kWhere,
                            "part " + std::to_string(i) +
                                ": p_esr and alpha must be in [0, 1], penalty finite and >= 0");
  CoresOrderMetrics m;
  double seq = 1.0;  // P_sq(k - 1)
  double pen = 0.0;  // fees of the parts granted before step k
  for (std::size_t k = 1; k <= n; ++k) {
    const CoresPartOdds& p = parts[order[k - 1]];
    double pk = p.at_step(k);
    if (k >= 2) m.fee += seq * pen * (1.0 - pk);  // eq. 11.6's term F_p(k)
    seq *= pk;
    pen += p.penalty;
  }
  m.success = seq;  // eq. 11.2 at j = n
  return m;
}

Result<CoresOrderMetrics> cores_random_order_metrics(const std::vector<CoresPartOdds>& parts) {
  if (parts.empty() || parts.size() > 8)
    return cd::make_error(Errc::kInvalidArgument, "cores_random_order_metrics",
                          "needs 1 to 8 parts (got " + std::to_string(parts.size()) + ")");
  std::vector<std::size_t> order(parts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  CoresOrderMetrics sum;
  double count = 0.0;
  do {
    auto m = cores_order_metrics(parts, order);
    if (!m) return m.error();
    sum.success += m.value().success;
    sum.fee += m.value().fee;
    count += 1.0;
  } while (std::next_permutation(order.begin(), order.end()));
  sum.success /= count;  // eq. 11.3
  sum.fee /= count;      // eq. 11.7
  return sum;
}

namespace {
std::vector<std::size_t> sorted_by(const std::vector<CoresPartOdds>& parts,
                                   double (*key)(const CoresPartOdds&)) {
  std::vector<std::size_t> order(parts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return key(parts[a]) < key(parts[b]);
  });
  return order;
}
}  // namespace

std::vector<std::size_t> cores_order_smallest_success(const std::vector<CoresPartOdds>& parts) {
  return sorted_by(parts, [](const CoresPartOdds& p) { return p.at_step(1); });
}

std::vector<std::size_t> cores_order_smallest_fee(const std::vector<CoresPartOdds>& parts) {
  return sorted_by(parts, [](const CoresPartOdds& p) { return p.penalty; });
}

// ---------------------------------------------------------------------------
// Algorithm 2

Result<CoallocPlan> cores_allocate(const CoallocPlan& candidate, const CoresAllocIo& io,
                                   CoresAllocStats* stats, std::size_t max_searches) {
  static const char* kWhere = "cores_allocate";
  if (!io.reserve || !io.cancel || !io.alternative)
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "reserve, cancel and alternative are all needed");
  if (candidate.parts.empty())
    return cd::make_error(Errc::kInvalidArgument, kWhere, "the candidate has no parts");
  CoresAllocStats local;
  CoresAllocStats& st = stats != nullptr ? *stats : local;
  st = CoresAllocStats{};
  CoallocPlan plan = candidate;
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  // granted[i]: the step at which plan.parts[i] was granted, 0 if not held.
  std::vector<std::size_t> granted(plan.parts.size(), 0);
  std::size_t steps = 0;
  auto held = [&]() {
    std::vector<bool> h(granted.size());
    for (std::size_t i = 0; i < granted.size(); ++i) h[i] = granted[i] != 0;
    return h;
  };
  auto cancel_all = [&]() {
    for (std::size_t i = 0; i < plan.parts.size(); ++i)
      if (granted[i] != 0) {
        io.cancel(plan, plan.parts[i]);
        ++st.cancels;
      }
  };
  for (;;) {
    // Lines 1 and 15: the remaining part with the smallest p_res.
    std::size_t i = kNone;
    for (std::size_t j = 0; j < plan.parts.size(); ++j)
      if (granted[j] == 0 && (i == kNone || sent_before(plan.parts[j], plan.parts[i]))) i = j;
    if (i == kNone) break;
    ++st.reserves;  // line 3
    if (io.reserve(plan, plan.parts[i])) {
      granted[i] = ++steps;  // line 5
      continue;
    }
    ++st.denials;
    std::optional<CoallocPlan> alt;
    if (st.searches < max_searches) {
      ++st.searches;  // line 7
      alt = io.alternative(plan, held(), i);
    }
    if (!alt || alt->parts.empty()) {  // lines 12-13
      std::size_t cancelled = st.cancels;
      cancel_all();
      cancelled = st.cancels - cancelled;
      return cd::make_error(
          Errc::kNoFit, kWhere,
          "the part of " + std::to_string(plan.parts[i].nodes) + " nodes on cluster " +
              std::to_string(plan.parts[i].cluster) + " at " + std::to_string(plan.start) +
              " was denied and no alternative was found after " + std::to_string(st.searches) +
              " searches; " + std::to_string(cancelled) + " held parts cancelled");
    }
    // Lines 9-10: keep the held parts the alternative keeps, cancel the rest.
    std::vector<std::size_t> next(alt->parts.size(), 0);
    const bool same_time = alt->start == plan.start && alt->duration == plan.duration;
    for (std::size_t j = 0; j < plan.parts.size(); ++j) {
      if (granted[j] == 0) continue;
      std::size_t keep = kNone;
      for (std::size_t k = 0; same_time && k < alt->parts.size() && keep == kNone; ++k)
        if (next[k] == 0 && alt->parts[k].cluster == plan.parts[j].cluster &&
            alt->parts[k].nodes == plan.parts[j].nodes)
          keep = k;
      if (keep != kNone) {
        next[keep] = granted[j];
      } else {
        io.cancel(plan, plan.parts[j]);
        ++st.cancels;
      }
    }
    plan = std::move(*alt);
    granted = std::move(next);
  }
  // Line 16 is the caller's; the parts in the order they were granted.
  std::vector<std::size_t> idx(plan.parts.size());
  for (std::size_t j = 0; j < idx.size(); ++j) idx[j] = j;
  std::sort(idx.begin(), idx.end(),
            [&](std::size_t a, std::size_t b) { return granted[a] < granted[b]; });
  std::vector<PlanPart> parts;
  for (std::size_t j : idx) parts.push_back(plan.parts[j]);
  plan.parts = std::move(parts);
  return plan;
}

Result<std::optional<CoallocPlan>> cores_alternative(
    const CoallocRequest& request, const std::vector<ClusterView>& clusters,
    const CoallocOptions& options, const CoallocPlan& plan, const std::vector<bool>& reserved,
    std::size_t failed, const std::vector<bool>& excluded) {
  static const char* kWhere = "cores_alternative";
  if (auto e = cd::validate(kWhere, request, clusters, &options)) return *e;
  Admit admit;
  if (auto e = make_admit(kWhere, options, &admit)) return *e;
  const std::size_t n = clusters.size();
  if (reserved.size() != plan.parts.size() || failed >= plan.parts.size() ||
      (!excluded.empty() && excluded.size() != n))
    return cd::make_error(Errc::kInvalidArgument, kWhere,
                          "reserved needs one flag per part, failed a part index and "
                          "excluded one flag per cluster (or none)");
  for (const PlanPart& p : plan.parts)
    if (p.cluster >= n)
      return cd::make_error(Errc::kInvalidArgument, kWhere,
                            "a part names cluster " + std::to_string(p.cluster) + " of " +
                                std::to_string(n));
  std::vector<bool> out(n, false);  // not to be used
  for (std::size_t c = 0; c < n; ++c)
    out[c] = (!request.allowed.empty() && !request.allowed[c]) ||
             (!excluded.empty() && excluded[c]);
  out[plan.parts[failed].cluster] = true;
  const Time now = options.now >= 0 ? options.now : request.ready;

  // 1. FNRP: same start and (split) duration, held parts kept.
  if (plan.parts.size() >= 2) {
    CoallocPlan alt;
    alt.start = plan.start;
    alt.duration = plan.duration;
    alt.score = plan.score;
    Amount left = request.nodes;
    std::vector<bool> used(n, false);
    for (std::size_t i = 0; i < plan.parts.size(); ++i)
      if (reserved[i]) {
        alt.parts.push_back(plan.parts[i]);
        left -= plan.parts[i].nodes;
        used[plan.parts[i].cluster] = true;
      }
    const double pres = cd::static_p_res(plan.start, now, options.p_res_h);
    std::vector<std::pair<std::size_t, cd::Usable>> avail;
    for (std::size_t c = 0; c < n; ++c) {
      if (out[c] || used[c]) continue;
      cd::Usable u = admitted(clusters[c], plan.start, plan.duration, pres, admit, true);
      if (u.nodes > 0) avail.emplace_back(c, u);
    }
    std::stable_sort(avail.begin(), avail.end(), [&](const auto& a, const auto& b) {
      return options.cores_w_fit * a.second.fit + options.cores_w_pres * a.second.p_res >
             options.cores_w_fit * b.second.fit + options.cores_w_pres * b.second.p_res;
    });
    const std::size_t limit = cd::part_limit(request, n);
    for (const auto& [c, u] : avail) {
      if (left <= 0 || alt.parts.size() >= limit) break;
      Amount take = std::min(left, u.nodes);
      alt.parts.push_back(PlanPart{c, take, u.fit, u.p_res});
      left -= take;
    }
    if (left == 0 && alt.parts.size() >= 2 && plan.end() <= request.deadline)
      return std::optional<CoallocPlan>(std::move(alt));
  }

  // 2. Refinement (§10.6, eq. 10.3): the excluded clusters are not eligible.
  CoallocRequest r = request;
  r.allowed.assign(n, false);
  bool any = false;
  for (std::size_t c = 0; c < n; ++c) {
    r.allowed[c] = !out[c];
    any = any || r.allowed[c];
  }
  if (!any) return std::optional<CoallocPlan>();
  auto again = plan_cores_seq(r, clusters, options);
  if (again) return std::optional<CoallocPlan>(std::move(again).value());
  if (again.error().code == Errc::kNoFit) return std::optional<CoallocPlan>();
  return again.error();
}

}  // namespace flexco
