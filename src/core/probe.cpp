// SPDX-License-Identifier: GPL-2.0-or-later
// probe.cpp - what-if probes -> scored offers (see probe.hpp, doc/probe.md).

#include "core/probe.hpp"

#include <jansson.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <unordered_set>
#include <utility>

#include "core/availability.hpp"
#include "core/wire_profile.hpp"

namespace flexco {

namespace {

struct JsonFree {
  void operator()(json_t* j) const { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonFree>;

ProbeError bad(std::string msg) { return ProbeError{400, "bad_request", "probe: " + std::move(msg)}; }

// An integer member within [lo, hi]; error message names it.
std::optional<ProbeError> get_int(json_t* v, const char* name, std::int64_t lo, std::int64_t hi,
                                  std::int64_t* out) {
  if (!json_is_integer(v)) return bad(std::string(name) + ": must be an integer");
  std::int64_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return bad(std::string(name) + ": " + std::to_string(x) + " is out of range [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]");
  *out = x;
  return std::nullopt;
}

std::optional<ProbeError> check_keys(json_t* obj, const char* where,
                                     std::initializer_list<const char*> known) {
  const char* key;
  json_t* v;
  json_object_foreach(obj, key, v) {
    (void)v;
    bool ok = false;
    for (const char* k : known) ok = ok || std::strcmp(k, key) == 0;
    if (!ok) return bad(std::string(where) + "unknown field \"" + utf8_sanitize(key) + "\"");
  }
  return std::nullopt;
}

// Range [a, b] as node counts: all of them if there are at most
// kProbeRangeLevels, else kProbeRangeLevels levels geometric in node space
// (q_m = ceil(a * (b/a)^((m-1)/(M-1))), distinct), a and b included.
std::vector<Amount> expand_range(Amount a, Amount b) {
  std::vector<Amount> out;
  if (b - a + 1 <= static_cast<Amount>(kProbeRangeLevels)) {
    for (Amount n = a; n <= b; ++n) out.push_back(n);
    return out;
  }
  const std::size_t m = kProbeRangeLevels;
  for (std::size_t i = 0; i < m; ++i) {
    double q = static_cast<double>(a) *
               std::pow(static_cast<double>(b) / static_cast<double>(a),
                        static_cast<double>(i) / static_cast<double>(m - 1));
    Amount n = static_cast<Amount>(std::ceil(q - 1e-9));
    n = std::clamp(n, a, b);
    if (out.empty() || out.back() != n) out.push_back(n);
  }
  out.back() = b;
  return out;
}

bool in_list(const char* list, const std::string& name) {
  if (list == nullptr) return false;
  std::string_view s(list);
  while (!s.empty()) {
    std::size_t c = s.find(',');
    if (s.substr(0, c) == name) return true;
    if (c == std::string_view::npos) break;
    s.remove_prefix(c + 1);
  }
  return false;
}

Time sat_add(Time t, Duration d) { return t > kForever - d ? kForever : t + d; }

}  // namespace

const char* distribution_name(Distribution d) noexcept {
  switch (d) {
    case Distribution::kEvent: return "event";
    case Distribution::kEven: return "even";
    case Distribution::kCorner: return "corner";
  }
  return "?";
}

Duration ProbeRequest::duration_for(Amount n) const {
  if (!amdahl) return duration;
  const double s = amdahl->serial_fraction, p = 1.0 - s;
  auto inv_speedup = [&](double k) { return s + p / k; };  // 1 / S(k)
  double d = static_cast<double>(amdahl->base_duration) * inv_speedup(static_cast<double>(n)) /
             inv_speedup(static_cast<double>(amdahl->base_nodes));
  Duration r = static_cast<Duration>(std::llround(d));
  return r < 1 ? 1 : r;
}

const char* p_res_method_name(PResMethod m) noexcept {
  switch (m) {
    case PResMethod::kStatic: return "static";
    case PResMethod::kHistory: return "history";
  }
  return "?";
}

double p_res_static(Time start, Time now, double h) noexcept {
  double bat = start > now ? static_cast<double>(start - now) : 0.0;
  return 1.0 - std::exp(-bat / h);
}

std::variant<ProbeRequest, ProbeError> parse_probe_request(std::string_view body) {
  json_error_t jerr;
  JsonPtr root(json_loadb(body.data(), body.size(), JSON_REJECT_DUPLICATES, &jerr));
  if (!root) return bad(std::string("invalid JSON: ") + jerr.text);
  if (!json_is_object(root.get())) return bad("the body must be a JSON object");
  if (auto e = check_keys(root.get(), "",
                          {"nodes", "duration", "earliest_start", "latest_end", "max_offers",
                           "distribution", "p_res_method", "partition", "will_run"}))
    return *e;

  ProbeRequest r;
  const std::int64_t kMaxT = kForever / 2;

  // nodes
  json_t* nodes = json_object_get(root.get(), "nodes");
  if (nodes == nullptr) return bad("nodes: required");
  if (json_is_integer(nodes)) {
    std::int64_t n;
    if (auto e = get_int(nodes, "nodes", 1, kMaxAmount, &n)) return *e;
    r.nodes.push_back(n);
  } else if (json_is_object(nodes)) {
    if (auto e = check_keys(nodes, "nodes: ", {"min", "max"})) return *e;
    json_t* mn = json_object_get(nodes, "min");
    json_t* mx = json_object_get(nodes, "max");
    if (mn == nullptr || mx == nullptr) return bad("nodes: a range needs \"min\" and \"max\"");
    std::int64_t a, b;
    if (auto e = get_int(mn, "nodes.min", 1, kMaxAmount, &a)) return *e;
    if (auto e = get_int(mx, "nodes.max", 1, kMaxAmount, &b)) return *e;
    if (b < a)
      return bad("nodes: max " + std::to_string(b) + " is less than min " + std::to_string(a));
    r.nodes = expand_range(a, b);
  } else if (json_is_array(nodes)) {
    std::size_t n = json_array_size(nodes);
    if (n == 0) return bad("nodes: the list is empty");
    if (n > kProbeMaxLevels)
      return bad("nodes: more than " + std::to_string(kProbeMaxLevels) + " node counts");
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t x;
      std::string name = "nodes[" + std::to_string(i) + "]";
      if (auto e = get_int(json_array_get(nodes, i), name.c_str(), 1, kMaxAmount, &x)) return *e;
      r.nodes.push_back(x);
    }
    std::sort(r.nodes.begin(), r.nodes.end());
    r.nodes.erase(std::unique(r.nodes.begin(), r.nodes.end()), r.nodes.end());
  } else {
    return bad("nodes: must be an integer, {\"min\":a,\"max\":b} or a list of integers");
  }

  // duration
  json_t* dur = json_object_get(root.get(), "duration");
  if (dur == nullptr) return bad("duration: required");
  if (json_is_integer(dur)) {
    if (auto e = get_int(dur, "duration", 1, kMaxHorizon, &r.duration)) return *e;
  } else if (json_is_object(dur)) {
    if (auto e = check_keys(dur, "duration: ",
                            {"speedup", "serial_fraction", "base_nodes", "base_duration"}))
      return *e;
    json_t* sp = json_object_get(dur, "speedup");
    if (!json_is_string(sp) || std::strcmp(json_string_value(sp), "amdahl") != 0)
      return bad("duration.speedup: must be \"amdahl\"");
    AmdahlModel m;
    json_t* sf = json_object_get(dur, "serial_fraction");
    if (!json_is_number(sf)) return bad("duration.serial_fraction: required, a number");
    m.serial_fraction = json_number_value(sf);
    if (!(m.serial_fraction >= 0.0 && m.serial_fraction <= 1.0))
      return bad("duration.serial_fraction: must lie in [0, 1]");
    json_t* bn = json_object_get(dur, "base_nodes");
    json_t* bd = json_object_get(dur, "base_duration");
    if (bn == nullptr) return bad("duration.base_nodes: required");
    if (bd == nullptr) return bad("duration.base_duration: required");
    if (auto e = get_int(bn, "duration.base_nodes", 1, kMaxAmount, &m.base_nodes)) return *e;
    if (auto e = get_int(bd, "duration.base_duration", 1, kMaxHorizon, &m.base_duration))
      return *e;
    r.amdahl = m;
  } else {
    return bad("duration: must be an integer (seconds) or an amdahl speed-up model object");
  }

  std::int64_t x;
  if (json_t* v = json_object_get(root.get(), "earliest_start")) {
    if (auto e = get_int(v, "earliest_start", 0, kMaxT, &x)) return *e;
    r.earliest_start = x;
  }
  if (json_t* v = json_object_get(root.get(), "latest_end")) {
    if (auto e = get_int(v, "latest_end", 1, kMaxT, &x)) return *e;
    r.latest_end = x;
    if (r.earliest_start && x <= *r.earliest_start)
      return bad("latest_end: must be after earliest_start");
  }
  if (json_t* v = json_object_get(root.get(), "max_offers")) {
    if (auto e = get_int(v, "max_offers", 1, kProbeMaxOffers, &x)) return *e;
    r.max_offers = static_cast<int>(x);
  }
  if (json_t* v = json_object_get(root.get(), "distribution")) {
    if (!json_is_string(v)) return bad("distribution: must be a string");
    std::string d = json_string_value(v);
    if (d == "event") r.distribution = Distribution::kEvent;
    else if (d == "even") r.distribution = Distribution::kEven;
    else if (d == "corner") r.distribution = Distribution::kCorner;
    else return bad("distribution: \"" + utf8_sanitize(d) + "\" is not one of event, even, corner");
  }
  if (json_t* v = json_object_get(root.get(), "p_res_method")) {
    if (!json_is_string(v)) return bad("p_res_method: must be a string");
    std::string m = json_string_value(v);
    if (m == "history") r.p_res_method = PResMethod::kHistory;
    else if (m != "static")
      return bad("p_res_method: \"" + utf8_sanitize(m) + "\" is not one of static, history");
  }
  if (json_t* v = json_object_get(root.get(), "will_run")) {
    if (!json_is_boolean(v)) return bad("will_run: must be true or false");
    r.will_run = json_is_true(v);
  }
  if (json_t* v = json_object_get(root.get(), "partition")) {
    if (!json_is_string(v)) return bad("partition: must be a string");
    r.partition = json_string_value(v);
  }
  return r;
}

namespace {

// The local plan input of a partition (running jobs, reservations, the
// first max_queue pending jobs by priority) and its reference plan.
std::variant<std::shared_ptr<const PartitionPlan>, ProbeError> make_partition_plan(
    const flexco_snapshot_t& snap, const std::string& partition, const ProbePolicy& policy) {
  const Time now = snap.when;
  const flexco_snap_part_t* part = nullptr;
  for (std::uint32_t i = 0; i < snap.part_count; ++i)
    if (part == nullptr && snap.parts[i].name != nullptr && partition == snap.parts[i].name)
      part = &snap.parts[i];
  if (part == nullptr)
    return ProbeError{500, "internal", "probe: the partition vanished from the snapshot"};
  std::vector<char> mine(snap.node_count, 0);  // available nodes of the partition
  Amount capacity = 0;
  for (std::uint32_t k = 0; k < part->node_cnt; ++k) {
    std::uint32_t idx = snap.node_idx[part->node_off + k];
    if (idx >= snap.node_count) continue;  // build_availability checked it
    if (!mine[idx] && snap.nodes[idx].available) {
      mine[idx] = 1;
      ++capacity;
    }
  }
  auto count_mine = [&](std::uint32_t off, std::uint32_t cnt) {
    Amount c = 0;
    for (std::uint32_t k = 0; k < cnt; ++k) {
      std::uint64_t at = static_cast<std::uint64_t>(off) + k;
      if (at < snap.node_idx_count && snap.node_idx[at] < snap.node_count &&
          mine[snap.node_idx[at]])
        ++c;
    }
    return c;
  };

  LocalPlanInput in;
  in.capacity = capacity;
  in.now = now;
  std::set<std::string> resv_names;
  for (std::uint32_t i = 0; i < snap.resv_count; ++i) {
    const auto& r = snap.resvs[i];
    if (r.name != nullptr) resv_names.insert(r.name);
    if (r.end <= now || r.end <= r.start) continue;
    Amount c = count_mine(r.node_off, r.node_cnt);
    if (c == 0) continue;
    in.reservations.push_back(FixedSpan{i + 1ULL, std::max(r.start, Time{0}), r.end, c});
  }
  // The queue as (priority, job id, snapshot index): small entries for
  // choosing the first max_queue of thousands; PendingJobs are made for
  // those only.
  struct Q {
    std::uint32_t prio, id, index;
  };
  std::vector<Q> queue;
  // The plugin's snapshot gives the jobs of a partition its one name
  // string: the last in_list answer is reused while the pointer is the same
  // (strings do not change during a probe).
  const char* last_part = nullptr;
  bool last_part_in = false;
  auto nodes_of = [](const flexco_snap_job_t& j) -> Amount {
    return j.min_nodes == 0 ? 1 : j.min_nodes;
  };
  for (std::uint32_t i = 0; i < snap.job_count; ++i) {
    const auto& j = snap.jobs[i];
    if (j.kind == FLEXCO_JOB_RUNNING) {
      // Inside a reservation of the snapshot: its nodes are counted there.
      if (j.resv_name != nullptr && resv_names.count(j.resv_name)) continue;
      Amount c = count_mine(j.node_off, j.node_cnt);
      if (c == 0) continue;
      RunningJob r;
      r.id = j.job_id;
      r.nodes = c;
      r.start = std::min(j.start, now);
      r.expected_end = j.end == FLEXCO_SNAP_FOREVER ? kForever : std::max(j.end, r.start + 1);
      r.submit = r.start;
      in.running.push_back(r);
    } else if (j.kind == FLEXCO_JOB_PLANNED || j.kind == FLEXCO_JOB_PENDING) {
      if (j.resv_name != nullptr) continue;  // runs inside its reservation
      if (j.priority == 0) continue;  // held: Slurm will not start it
      if (j.partition == nullptr || j.partition != last_part) {
        last_part = j.partition;
        last_part_in = in_list(j.partition, partition);
      }
      if (!last_part_in) continue;
      if (nodes_of(j) > capacity) continue;  // the planner rejects it: can never run
      if (j.time_limit <= 0) continue;
      queue.push_back(Q{j.priority, j.job_id, i});
    }
  }
  auto by_priority = [](const Q& a, const Q& b) {
    return a.prio != b.prio ? a.prio > b.prio : a.id < b.id;
  };
  bool truncated = queue.size() > policy.max_queue;
  if (truncated) {  // only the first max_queue need ordering
    std::nth_element(queue.begin(), queue.begin() + policy.max_queue, queue.end(), by_priority);
    queue.resize(policy.max_queue);
  }
  std::sort(queue.begin(), queue.end(), by_priority);
  in.queue.reserve(queue.size());
  for (const Q& e : queue) {
    const auto& j = snap.jobs[e.index];
    PendingJob p;
    p.id = j.job_id;
    p.nodes = nodes_of(j);
    p.estimate = j.time_limit == FLEXCO_SNAP_FOREVER ? kForever : j.time_limit;
    p.submit = now;  // the snapshot has no submit time
    in.queue.push_back(p);
  }

  const std::size_t considered = queue.size();
  auto ref = FitnessReference::create(std::move(in), policy.fitness.policy);
  if (!ref.ok()) return ProbeError{500, "internal", ref.error().message};
  return std::make_shared<const PartitionPlan>(
      PartitionPlan{std::move(ref).value(), capacity, truncated, considered});
}

// make_partition_plan, from the snapshot's cache when it has one.
std::variant<std::shared_ptr<const PartitionPlan>, ProbeError> partition_plan(
    const flexco_snapshot_t& snap, const std::string& partition, const ProbePolicy& policy) {
  flexco_plan_cache* cache = snap.plan_cache;
  auto same = [&](const flexco_plan_cache::Entry& e) {
    return e.partition == partition && e.max_queue == policy.max_queue &&
           e.policy == policy.fitness.policy;
  };
  if (cache != nullptr) {
    std::lock_guard<std::mutex> hold(cache->mu);
    for (const auto& e : cache->entries)
      if (same(e)) return e.plan;
  }
  if (policy.cached_only) return ProbeError{0, "not_cached", "the partition is not planned yet"};
  // Planned with no lock held: two probes that miss at once both plan, and
  // the first to finish is kept (the same plan).
  auto made = make_partition_plan(snap, partition, policy);
  auto* plan = std::get_if<std::shared_ptr<const PartitionPlan>>(&made);
  if (cache != nullptr && plan != nullptr) {
    std::lock_guard<std::mutex> hold(cache->mu);
    for (const auto& e : cache->entries)
      if (same(e)) return e.plan;
    if (cache->entries.size() < flexco_plan_cache::kPlanCacheEntries)
      cache->entries.push_back(
          flexco_plan_cache::Entry{partition, policy.max_queue, policy.fitness.policy, *plan});
  }
  return made;
}

}  // namespace

std::variant<ProbeResult, ProbeError> probe(const flexco_snapshot_t& snap,
                                            const ProbeRequest& req, int share_percent,
                                            Duration valid_for, const ProbePolicy& policy,
                                            const IdleHistories* histories) {
  const Time now = snap.when;
  if (req.nodes.empty()) return bad("nodes: required");
  if (valid_for < 0) return ProbeError{500, "internal", "probe: valid_for must be >= 0"};
  const Time est = std::max(now, req.earliest_start.value_or(now));

  Duration max_dur = 0;
  for (Amount n : req.nodes) max_dur = std::max(max_dur, req.duration_for(n));

  // Horizon: to latest_end, else the default (longer if est + dur needs it).
  Duration horizon;
  if (req.latest_end) {
    if (*req.latest_end <= est)
      return bad("latest_end: " + std::to_string(*req.latest_end) +
                 " is not after the earliest start " + std::to_string(est));
    horizon = *req.latest_end - now;
  } else {
    horizon = std::max(policy.default_horizon, est - now + max_dur);
  }
  if (horizon > kMaxHorizon)
    return bad("the probe window ends more than 366 days after the snapshot time");

  AvailabilityQuery q;
  q.partition = req.partition;
  q.horizon = horizon;
  q.share_percent = share_percent;
  auto built = build_availability(snap, q);
  if (!built.ok()) {
    const auto& e = built.error();
    return ProbeError{availability_http_status(e.code), availability_errc_name(e.code),
                      e.message};
  }
  const Availability& av = built.value();
  const Time max_t = av.horizon_end;  // every offer ends at or before it

  ProbeResult out;
  out.cluster = av.cluster;
  out.partition = av.partition;
  out.snapshot_time = now;
  out.bf_last_cycle = av.bf_last_cycle;
  out.bf_active = av.bf_active;
  out.share_percent = share_percent;
  out.horizon_end = av.horizon_end;
  out.distribution = req.distribution;

  // --- candidates
  const std::size_t cap = static_cast<std::size_t>(req.max_offers);
  std::set<std::pair<Time, Amount>> cand;  // (start, nodes), ordered
  auto fits = [&](Time s, Duration d, Amount n) -> bool {
    if (s < est || sat_add(s, d) > max_t) return false;
    auto m = av.nodes.min_over(s, d);
    return m.ok() && m.value() >= n;
  };
  for (Amount n : req.nodes) {
    const Duration d = req.duration_for(n);
    if (sat_add(est, d) > max_t) continue;
    const Time last = max_t - d;  // latest start of this level
    std::size_t found = 0;
    switch (req.distribution) {
      case Distribution::kEvent: {
        auto s = av.nodes.earliest_fit(est, d, n);
        while (s.ok() && s.value() != kNever && s.value() <= last && found < cap) {
          cand.insert({s.value(), n});
          ++found;
          s = av.nodes.next_fit(s.value(), d, n);
        }
        break;
      }
      case Distribution::kEven: {
        // Def 31 (ii) with max T = latest start: t_k = est + floor(k (last - est)/(K - 1)).
        const std::size_t k_n = cap;
        for (std::size_t k = 0; k < k_n; ++k) {
          Time t = k_n == 1 ? est
                            : est + static_cast<Time>(
                                        (static_cast<__int128>(k) * (last - est)) /
                                        static_cast<__int128>(k_n - 1));
          if (fits(t, d, n)) cand.insert({t, n});
        }
        break;
      }
      case Distribution::kCorner: {
        // Def 30: corners of [est, maxT] x [min Q, max Q].
        if (n != req.nodes.front() && n != req.nodes.back()) break;
        if (fits(est, d, n)) cand.insert({est, n});
        if (fits(last, d, n)) cand.insert({last, n});
        break;
      }
    }
  }
  out.candidates = cand.size();

  std::vector<Placeholder> slots;
  for (const auto& [s, n] : cand) {
    if (slots.size() >= cap) break;
    slots.push_back(Placeholder{s, req.duration_for(n), n});
  }

  // --- the local plan input of the partition and its reference plan
  auto planned = partition_plan(snap, av.partition, policy);
  if (auto* e = std::get_if<ProbeError>(&planned)) return *e;
  const PartitionPlan& pp = *std::get<std::shared_ptr<const PartitionPlan>>(planned);
  const LocalPlanInput& in = pp.fitness.input();
  const Amount capacity = pp.capacity;
  out.queue_truncated = pp.queue_truncated;
  out.queue_considered = pp.queue_considered;
  out.p_res_method = req.p_res_method;
  const IdleHistory* history = histories != nullptr ? histories->find(av.partition) : nullptr;
  if (req.p_res_method == PResMethod::kHistory && history != nullptr) {
    out.history_records = history->records();
    out.history_first = history->first();
    out.history_last = history->last();
  }
  // --- the P^JOB reference (thesis §9.4.2), conservative; planned with the
  // fitness' P^ORG when that is conservative too (same plan, one pass less)
  FitnessOptions fitness = policy.fitness;
  out.job_nodes = req.nodes.front();
  const bool fused = fitness.policy == Backfill::kConservative;
  if (out.job_nodes <= capacity) {
    const Duration jd = req.duration_for(out.job_nodes);
    if (fused) {
      fitness.job_reference = FitnessOptions::JobReference{jd, out.job_nodes, est};
    } else if (policy.cached_only) {
      return ProbeError{0, "not_cached", "P^JOB would be planned"};
    } else {
      auto js = placeholder_job_start(in, jd, out.job_nodes, est);
      if (!js.ok()) return ProbeError{500, "internal", js.error().message};
      out.job_start = js.value();
    }
  }

  // --- score
  std::vector<Placeholder> ok_slots;  // the planner needs nodes <= capacity
  for (const auto& s : slots)
    if (s.nodes <= capacity) ok_slots.push_back(s);
  if (policy.cached_only && !pp.fitness.remembers(ok_slots, fitness))
    return ProbeError{0, "not_cached", "a slot is not planned yet"};
  auto rep = whatif_fitness(pp.fitness, ok_slots, fitness);
  if (!rep.ok()) return ProbeError{500, "internal", rep.error().message};
  const auto& fr = rep.value();
  if (fitness.job_reference) out.job_start = fr.job_start;
  for (std::size_t i = 0; i < fr.slots.size(); ++i) {
    const SlotFitness& f = fr.slots[i];
    Offer o;
    o.start = f.slot.start;
    o.end = sat_add(f.slot.start, f.slot.duration);
    o.nodes = f.slot.nodes;
    o.fit = f.fit;
    o.verdict = f.verdict;
    o.head_delay = f.head_delay;
    o.p_res = p_res_static(o.start, now, policy.p_res_h);
    o.p_res_source = PResMethod::kStatic;
    if (req.p_res_method == PResMethod::kHistory && history != nullptr) {
      if (auto mean = history->mean_idle(o.start, o.end - o.start)) {
        o.p_res = p_res_history(o.nodes, *mean);
        o.p_res_source = PResMethod::kHistory;
      }
    }
    o.valid_until = sat_add(now, valid_for);
    out.offers.push_back(o);
  }
  return out;
}

std::string probe_result_to_json(const ProbeResult& r) {
  JsonPtr root(json_object());
  auto set = [](json_t* o, const char* k, json_t* v) { json_object_set_new(o, k, v); };
  set(root.get(), "cluster", json_string(utf8_sanitize(r.cluster).c_str()));
  set(root.get(), "partition", json_string(utf8_sanitize(r.partition).c_str()));
  set(root.get(), "snapshot_time", json_integer(r.snapshot_time));
  json_t* bf = json_object();
  set(bf, "last_cycle", r.bf_last_cycle > 0 ? json_integer(r.bf_last_cycle) : json_null());
  set(bf, "active", json_boolean(r.bf_active));
  set(bf, "plan_age",
      r.bf_last_cycle > 0 ? json_integer(r.snapshot_time - r.bf_last_cycle) : json_null());
  set(root.get(), "backfill", bf);
  set(root.get(), "share_percent", json_integer(r.share_percent));
  set(root.get(), "horizon_end", json_integer(r.horizon_end));
  set(root.get(), "distribution", json_string(distribution_name(r.distribution)));
  set(root.get(), "p_res_method", json_string(p_res_method_name(r.p_res_method)));
  if (r.p_res_method == PResMethod::kHistory) {
    json_t* h = json_object();
    set(h, "records", json_integer(static_cast<json_int_t>(r.history_records)));
    set(h, "first", r.history_first >= 0 ? json_integer(r.history_first) : json_null());
    set(h, "last", r.history_last >= 0 ? json_integer(r.history_last) : json_null());
    set(root.get(), "history", h);
  }
  json_t* qu = json_object();
  set(qu, "considered", json_integer(static_cast<json_int_t>(r.queue_considered)));
  set(qu, "truncated", json_boolean(r.queue_truncated));
  set(root.get(), "queue", qu);
  set(root.get(), "candidates", json_integer(static_cast<json_int_t>(r.candidates)));
  json_t* job = json_object();
  set(job, "nodes", json_integer(r.job_nodes));
  set(job, "start", r.job_start == kNever ? json_null() : json_integer(r.job_start));
  set(root.get(), "job_reference", job);
  json_t* offers = json_array();
  for (const Offer& o : r.offers) {
    json_t* j = json_object();
    set(j, "start", json_integer(o.start));
    set(j, "end", json_integer(o.end));
    set(j, "nodes", json_integer(o.nodes));
    set(j, "fit", json_real(o.fit));
    set(j, "p_res", json_real(o.p_res));
    if (r.p_res_method == PResMethod::kHistory)
      set(j, "p_res_source", json_string(p_res_method_name(o.p_res_source)));
    set(j, "valid_until", json_integer(o.valid_until));
    set(j, "verdict", json_string(fit_verdict_name(o.verdict)));
    set(j, "head_delay", json_integer(o.head_delay));
    json_array_append_new(offers, j);
  }
  set(root.get(), "offers", offers);
  if (r.will_run) {
    const WillRunAnswer& w = *r.will_run;
    json_t* wr = json_object();
    set(wr, "nodes", json_integer(w.nodes));
    if (w.ok) {
      set(wr, "start", json_integer(w.start));
      set(wr, "node_list", json_string(utf8_sanitize(w.node_list).c_str()));
    } else {
      set(wr, "start", json_null());
      set(wr, "error", json_string(utf8_sanitize(w.error).c_str()));
    }
    set(wr, "job_id", w.job_id ? json_integer(w.job_id) : json_null());
    set(root.get(), "will_run", wr);
  }
  char* s = json_dumps(root.get(), JSON_COMPACT | JSON_REAL_PRECISION(17));
  if (s == nullptr) throw std::bad_alloc();
  std::string text(s);
  std::free(s);
  return text;
}

}  // namespace flexco
