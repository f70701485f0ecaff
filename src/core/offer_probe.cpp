// SPDX-License-Identifier: GPL-2.0-or-later
// offer_probe.cpp - planner offers from the production probe (see
// offer_probe.hpp, doc/coalloc.md "COARP").

#include "core/offer_probe.hpp"

#include <jansson.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <variant>

#include "core/availability.hpp"
#include "core/coalloc_detail.hpp"
#include "core/cluster_snapshot.h"

namespace flexco {

namespace {

struct JsonFree {
  void operator()(json_t* j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonFree>;

Error invalid(const std::string& what) { return Error{Errc::kInvalidArgument, what}; }

}  // namespace

std::string plan_probe_query(const CoallocRequest& request, Amount published, Time earliest,
                             const std::string& partition) {
  JsonPtr q(json_object());
  const Amount maxn = std::max<Amount>(1, std::min(request.nodes, published));
  json_object_set_new(q.get(), "nodes",
                      json_pack("{s:I,s:I}", "min", static_cast<json_int_t>(1), "max",
                                static_cast<json_int_t>(maxn)));
  json_object_set_new(q.get(), "duration",
                      json_integer(coalloc_detail::split_duration(request)));
  json_object_set_new(q.get(), "earliest_start", json_integer(earliest));
  if (request.deadline != kForever)
    json_object_set_new(q.get(), "latest_end", json_integer(request.deadline));
  json_object_set_new(q.get(), "max_offers", json_integer(kPlanProbeOffers));
  if (!partition.empty()) json_object_set_new(q.get(), "partition", json_string(partition.c_str()));
  char* s = json_dumps(q.get(), JSON_COMPACT);
  if (s == nullptr) throw std::bad_alloc();
  std::string text(s);
  std::free(s);
  return text;
}

Result<std::vector<CoallocOffer>> offers_from_probe_answer(std::string_view json) {
  json_error_t jerr;
  JsonPtr root(json_loadb(json.data(), json.size(), 0, &jerr));
  if (!root || !json_is_object(root.get()))
    return invalid("offers_from_probe_answer: the answer is not a JSON object");
  json_t* offers = json_object_get(root.get(), "offers");
  if (!json_is_array(offers))
    return invalid("offers_from_probe_answer: the answer has no \"offers\" array");
  std::vector<CoallocOffer> out;
  std::size_t i;
  json_t* o;
  json_array_foreach(offers, i, o) {
    CoallocOffer off;
    off.start = json_integer_value(json_object_get(o, "start"));
    off.end = json_integer_value(json_object_get(o, "end"));
    off.nodes = json_integer_value(json_object_get(o, "nodes"));
    off.fit = json_number_value(json_object_get(o, "fit"));
    off.p_res = json_number_value(json_object_get(o, "p_res"));
    if (off.start < off.end && off.nodes >= 1) out.push_back(off);
  }
  return out;
}

std::vector<CoallocOffer> offers_from_probe_result(const ProbeResult& result) {
  std::vector<CoallocOffer> out;
  for (const Offer& o : result.offers) {
    if (!(o.start < o.end && o.nodes >= 1)) continue;
    out.push_back(CoallocOffer{o.start, o.end, o.nodes, o.fit, o.p_res});
  }
  return out;
}

Result<ProbeResult> probe_profile(const Profile& free, Amount capacity, Time now,
                                  std::string_view query, const std::string& cluster) {
  static const char* kWhere = "probe_profile";
  if (capacity <= 0)
    return invalid(std::string(kWhere) + ": capacity " + std::to_string(capacity) +
                   " leaves nothing to probe");
  if (capacity > (Amount{1} << 24))
    return invalid(std::string(kWhere) + ": capacity " + std::to_string(capacity) +
                   " is too large for a snapshot");
  if (now < free.origin()) now = free.origin();

  // Nodes 0..capacity-1, all in one default partition; node_idx[k] = k, so
  // the busy block of nodes [lo, hi) is node_off = lo, node_cnt = hi - lo.
  const std::uint32_t n = static_cast<std::uint32_t>(capacity);
  std::vector<std::string> names(n);
  std::vector<flexco_snap_node_t> nodes(n);
  std::vector<std::uint32_t> idx(n);
  for (std::uint32_t k = 0; k < n; ++k) {
    names[k] = "n" + std::to_string(k);
    nodes[k] = flexco_snap_node_t{names[k].c_str(), 1, 1};
    idx[k] = k;
  }
  // The busy blocks: node k is busy while used = capacity - free > k.  A
  // stack of open blocks [lo, hi) of levels, opened when used rises and
  // closed (from the top) when it falls: one block per rise.
  std::vector<flexco_snap_resv_t> resvs;
  struct Open {
    Amount lo, hi;
    Time start;
  };
  std::vector<Open> open;
  Amount cur = 0;
  auto close = [&](Amount lo, Amount hi, Time s, Time e) {
    if (s < e && lo < hi)
      resvs.push_back(flexco_snap_resv_t{nullptr, s, e, 0, nullptr,
                                         static_cast<std::uint32_t>(lo),
                                         static_cast<std::uint32_t>(hi - lo)});
  };
  auto level = [&](Amount used, Time t) {
    if (used > cur) {
      open.push_back(Open{cur, used, t});
    } else {
      while (cur > used) {
        Open& top = open.back();
        if (top.lo >= used) {
          close(top.lo, top.hi, top.start, t);
          cur = top.lo;
          open.pop_back();
        } else {
          close(used, top.hi, top.start, t);
          top.hi = used;
          cur = used;
        }
      }
    }
    cur = used;
  };
  // Beyond any probe horizon (kMaxHorizon past now).
  const Time last = now + kMaxHorizon + 86400;
  for (Time t = now; t != kNever && t < last; t = free.next_change_point(t)) {
    auto f = free.free_at(t);
    if (!f.ok()) return invalid(std::string(kWhere) + ": " + f.error().message);
    level(capacity - std::clamp<Amount>(f.value(), 0, capacity), t);
  }
  level(0, last);

  flexco_snap_part_t part{"sim", FLEXCO_SNAP_FOREVER, 1, 1, 0, n};
  flexco_snapshot_t snap{};
  snap.cluster = cluster.c_str();
  snap.when = now;
  snap.nodes = nodes.data();
  snap.node_count = n;
  snap.resvs = resvs.data();
  snap.resv_count = static_cast<std::uint32_t>(resvs.size());
  snap.parts = &part;
  snap.part_count = 1;
  snap.node_idx = idx.data();
  snap.node_idx_count = n;

  auto parsed = parse_probe_request(query);
  if (auto* e = std::get_if<ProbeError>(&parsed))
    return invalid(std::string(kWhere) + ": " + e->message);
  auto answer = probe(snap, std::get<ProbeRequest>(parsed), 100, 0);
  if (auto* e = std::get_if<ProbeError>(&answer))
    return invalid(std::string(kWhere) + ": " + e->message);
  return std::move(std::get<ProbeResult>(answer));
}

Result<std::vector<CoallocOffer>> probe_offers_from_profile(const Profile& free, Amount capacity,
                                                            Time now,
                                                            const CoallocRequest& request,
                                                            const std::string& cluster) {
  if (capacity <= 0) return std::vector<CoallocOffer>{};
  const std::string query =
      plan_probe_query(request, capacity, std::max(request.ready, std::max(now, free.origin())), "");
  auto r = probe_profile(free, capacity, now, query, cluster);
  if (!r) return r.error();
  return offers_from_probe_result(r.value());
}

}  // namespace flexco
