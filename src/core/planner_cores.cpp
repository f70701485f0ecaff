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

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/coalloc.hpp"
#include "core/coalloc_detail.hpp"

namespace flexco {

namespace cd = coalloc_detail;

namespace {

struct Candidate {
  CoallocPlan plan;
  double fit = 0.0;   // mean
  double pres = 1.0;  // product
};

void gather(const CoallocRequest& r, const std::vector<ClusterView>& clusters,
            const std::vector<std::size_t>& allowed, const CoallocOptions& o, Time now,
            std::size_t k, std::vector<Candidate>* out, bool* truncated) {
  Duration dm = cd::split_duration(r);
  std::size_t limit = cd::part_limit(r, allowed.size());
  std::vector<Time> starts;
  *truncated = false;
  // Without explicit offers no candidate starts before `low`, and there is
  // one at `low`: the first k distinct starts from there suffice.
  Time low = r.ready;
  bool offers = cd::any_offers(clusters, allowed);
  if (!offers) {
    low = cd::earliest_any(r, clusters, allowed, r.ready);
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
  }
  for (Time s : starts) {
    double pres = cd::static_p_res(s, now, o.p_res_h);
    std::vector<std::pair<std::size_t, cd::Usable>> parts_avail;
    for (std::size_t c : allowed) {
      cd::Usable whole = cd::usable(clusters[c], s, r.runtime, pres);
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
        cd::Usable part = cd::usable(clusters[c], s, dm, pres);
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

}  // namespace

Result<CoallocPlan> plan_cores(const CoallocRequest& request,
                               const std::vector<ClusterView>& clusters,
                               const CoallocOptions& options) {
  static const char* kWhere = "plan_cores";
  if (auto e = cd::validate(kWhere, request, clusters, &options)) return *e;
  std::vector<std::size_t> allowed = cd::allowed_indices(request, clusters.size());
  Time now = options.now >= 0 ? options.now : request.ready;
  std::vector<Candidate> cands;
  for (std::size_t k = options.max_offers;; k *= 4) {
    bool truncated = false;
    cands.clear();
    gather(request, clusters, allowed, options, now, k, &cands, &truncated);
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

}  // namespace flexco
