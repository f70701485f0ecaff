// SPDX-License-Identifier: GPL-2.0-or-later
// availability.cpp - a partition's free nodes and CPUs over time from a
// slurmctld snapshot.  The rules are in availability.hpp; the reasons, the
// wire schema and the complexity in doc/availability.md.
//
// Method: collect every busy interval (node, [s, e)) clipped to
// [when, horizon_end), sort them by node and start, merge each node's
// intervals into their union, turn each merged interval into two events
// (node leaves the free set at s, returns at e), sort the events by time and
// sweep once.  Overlaps on one node (a job inside a reservation, a planned
// job right after a running one, an unavailable node with a job) are merged
// before counting, so nothing is counted twice.

#include "core/availability.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace flexco {

namespace {

constexpr const char* kWhere = "build_availability";

AvailabilityError fail(AvailabilityErrc code, const std::string& what) {
  return AvailabilityError{code, std::string(kWhere) + ": " + what};
}

std::string num(std::int64_t v) { return std::to_string(v); }

// A node's busy interval, clipped to [when, horizon_end); node is the
// index among the partition's nodes.
struct Busy {
  std::uint32_t node;
  Time start;
  Time end;
};

// The free set changes by (nodes, cpus) at `time`.
struct Event {
  Time time;
  Amount nodes;
  Amount cpus;
};

class Builder {
 public:
  Builder(const flexco_snapshot_t& snap, const AvailabilityQuery& query)
      : snap_(snap), query_(query) {}

  AvailabilityResult run();

 private:
  // Checks that [off, off + cnt) lies in node_idx and every index names a
  // node; `what` names the owner for the message.
  bool range_ok(std::uint32_t off, std::uint32_t cnt, const std::string& what);
  // Records [s, e) as busy on each partition node of the range (already
  // checked by range_ok).
  void add_busy(std::uint32_t off, std::uint32_t cnt, Time s, Time e);
  const flexco_snap_part_t* find_partition();
  bool collect();
  std::vector<Step> sweep();
  Amount publish(Amount free, Amount total, Amount published) const;

  const flexco_snapshot_t& snap_;
  const AvailabilityQuery& query_;
  std::optional<AvailabilityError> error_;

  Time when_ = 0;
  Time horizon_end_ = 0;
  bool up_ = true;
  std::vector<std::int64_t> local_;     // snapshot node -> partition node, -1
  std::vector<std::uint32_t> members_;  // partition node -> snapshot node
  Amount nodes_total_ = 0, nodes_available_ = 0, nodes_published_ = 0;
  Amount cpus_total_ = 0, cpus_available_ = 0, cpus_published_ = 0;
  std::vector<Busy> busy_;
};

bool Builder::range_ok(std::uint32_t off, std::uint32_t cnt,
                       const std::string& what) {
  if (cnt == 0) return true;
  if (snap_.node_idx == nullptr ||
      std::uint64_t{off} + cnt > snap_.node_idx_count) {
    error_ =
        fail(AvailabilityErrc::kInvalidSnapshot,
             what + ": node list [" + num(off) + ", " +
                 num(std::int64_t{off} + cnt) + ") lies outside node_idx (" +
                 num(snap_.node_idx_count) + " entries)");
    return false;
  }
  for (std::uint32_t k = off; k < off + cnt; ++k) {
    if (snap_.node_idx[k] >= snap_.node_count) {
      error_ = fail(AvailabilityErrc::kInvalidSnapshot,
                    what + ": node index " + num(snap_.node_idx[k]) +
                        " out of range (" + num(snap_.node_count) + " nodes)");
      return false;
    }
  }
  return true;
}

void Builder::add_busy(std::uint32_t off, std::uint32_t cnt, Time s, Time e) {
  s = std::max(s, when_);
  e = std::min(e, horizon_end_);
  if (s >= e) return;
  for (std::uint32_t k = off; k < off + cnt; ++k) {
    std::int64_t n = local_[snap_.node_idx[k]];
    if (n >= 0) busy_.push_back(Busy{static_cast<std::uint32_t>(n), s, e});
  }
}

const flexco_snap_part_t* Builder::find_partition() {
  if (snap_.part_count != 0 && snap_.parts == nullptr) {
    error_ = fail(AvailabilityErrc::kInvalidSnapshot,
                  "parts is NULL but part_count is " + num(snap_.part_count));
    return nullptr;
  }
  const flexco_snap_part_t* hit = nullptr;
  std::string known;
  for (std::uint32_t i = 0; i < snap_.part_count; ++i) {
    const flexco_snap_part_t& p = snap_.parts[i];
    if (p.name == nullptr) {
      error_ = fail(AvailabilityErrc::kInvalidSnapshot,
                    "partition #" + num(i) + " has no name");
      return nullptr;
    }
    if (hit == nullptr &&
        (query_.partition.empty() ? p.is_default != 0
                                  : query_.partition == p.name))
      hit = &p;
    if (i < 16) known += std::string(known.empty() ? "" : ", ") + p.name;
  }
  if (snap_.part_count > 16) known += ", ...";
  if (hit == nullptr) {
    std::string list = known.empty() ? std::string("none") : known;
    error_ =
        fail(AvailabilityErrc::kUnknownPartition,
             query_.partition.empty()
                 ? "no default partition; name one (partitions: " + list + ")"
                 : "no partition named '" + query_.partition +
                       "' (partitions: " + list + ")");
  }
  return hit;
}

bool Builder::collect() {
  // Unavailable nodes: busy over the whole horizon.
  for (std::size_t n = 0; n < members_.size(); ++n)
    if (snap_.nodes[members_[n]].available == 0)
      busy_.push_back(Busy{static_cast<std::uint32_t>(n), when_, horizon_end_});

  if (snap_.job_count != 0 && snap_.jobs == nullptr) {
    error_ = fail(AvailabilityErrc::kInvalidSnapshot,
                  "jobs is NULL but job_count is " + num(snap_.job_count));
    return false;
  }
  for (std::uint32_t i = 0; i < snap_.job_count; ++i) {
    const flexco_snap_job_t& j = snap_.jobs[i];
    switch (j.kind) {
      case FLEXCO_JOB_RUNNING:
        if (!range_ok(j.node_off, j.node_cnt, "job " + num(j.job_id)))
          return false;
        // Slurm keeps a running job's nodes out of a new reservation while
        // the job's end_time >= the reservation's start (reservation.c,
        // _pick_node_cnt), so the nodes are busy through the end second
        // itself: free from end + 1.  A job past its limit (end <= when)
        // still holds its nodes now; Slurm is about to end it, so it is
        // busy for the current second.
        add_busy(j.node_off, j.node_cnt, when_,
                 j.end == FLEXCO_SNAP_FOREVER ? j.end
                 : j.end >= when_             ? j.end + 1
                                              : when_ + 1);
        break;
      case FLEXCO_JOB_PLANNED:
        if (!range_ok(j.node_off, j.node_cnt, "job " + num(j.job_id)))
          return false;
        // A planned start already past is "now"; a plan wholly in the past
        // takes nothing (add_busy drops empty intervals).
        add_busy(j.node_off, j.node_cnt, j.start, j.end);
        break;
      case FLEXCO_JOB_PENDING:
        break;  // no plan: demand invisible until backfill plans it
      default:
        error_ =
            fail(AvailabilityErrc::kInvalidSnapshot,
                 "job " + num(j.job_id) + " has unknown kind " + num(j.kind));
        return false;
    }
  }

  if (snap_.resv_count != 0 && snap_.resvs == nullptr) {
    error_ = fail(AvailabilityErrc::kInvalidSnapshot,
                  "resvs is NULL but resv_count is " + num(snap_.resv_count));
    return false;
  }
  for (std::uint32_t i = 0; i < snap_.resv_count; ++i) {
    const flexco_snap_resv_t& r = snap_.resvs[i];
    std::string what =
        "reservation " +
        (r.name ? "'" + std::string(r.name) + "'" : "#" + num(i));
    if (!range_ok(r.node_off, r.node_cnt, what)) return false;
    add_busy(r.node_off, r.node_cnt, r.start, r.end);
  }
  return true;
}

Amount Builder::publish(Amount free, Amount total, Amount published) const {
  if (!up_) return 0;
  return std::max<Amount>(0, free - (total - published));
}

std::vector<Step> Builder::sweep() {
  std::sort(busy_.begin(), busy_.end(), [](const Busy& a, const Busy& b) {
    return a.node != b.node ? a.node < b.node : a.start < b.start;
  });
  std::vector<Event> events;
  events.reserve(2 * busy_.size());
  for (std::size_t i = 0; i < busy_.size();) {
    std::uint32_t node = busy_[i].node;
    Amount cpus = snap_.nodes[members_[node]].cpus;
    Time s = busy_[i].start, e = busy_[i].end;
    for (++i; i < busy_.size() && busy_[i].node == node; ++i) {
      if (busy_[i].start <= e) {  // overlapping or touching: same run
        e = std::max(e, busy_[i].end);
        continue;
      }
      events.push_back(Event{s, -1, -cpus});
      events.push_back(Event{e, +1, +cpus});
      s = busy_[i].start;
      e = busy_[i].end;
    }
    events.push_back(Event{s, -1, -cpus});
    if (e < horizon_end_) events.push_back(Event{e, +1, +cpus});
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.time < b.time; });

  std::vector<Step> steps;
  Amount free_nodes = nodes_total_, free_cpus = cpus_total_;
  Time t = when_;
  std::size_t i = 0;
  for (;;) {
    for (; i < events.size() && events[i].time == t; ++i) {
      free_nodes += events[i].nodes;
      free_cpus += events[i].cpus;
    }
    Time next = i < events.size() ? events[i].time : horizon_end_;
    Amount pn = publish(free_nodes, nodes_total_, nodes_published_);
    Amount pc = publish(free_cpus, cpus_total_, cpus_published_);
    if (!steps.empty() && steps.back().free_nodes == pn &&
        steps.back().free_cpus == pc)
      steps.back().end = next;
    else
      steps.push_back(Step{t, next, pn, pc});
    if (next == horizon_end_) break;
    t = next;
  }
  return steps;
}

AvailabilityResult Builder::run() {
  if (query_.horizon < 1 || query_.horizon > kMaxHorizon)
    return fail(AvailabilityErrc::kBadParameter,
                "horizon must be 1 to " + num(kMaxHorizon) + " seconds (got " +
                    num(query_.horizon) + ")");
  if (query_.share_percent < 1 || query_.share_percent > 100)
    return fail(AvailabilityErrc::kBadParameter,
                "share must be 1 to 100 percent (got " +
                    num(query_.share_percent) + ")");

  when_ = snap_.when;
  if (when_ < 0 || when_ >= kForever - query_.horizon)
    return fail(AvailabilityErrc::kInvalidSnapshot,
                "snapshot time " + num(when_) + " out of range");
  horizon_end_ = when_ + query_.horizon;
  if (snap_.node_count != 0 && snap_.nodes == nullptr)
    return fail(AvailabilityErrc::kInvalidSnapshot,
                "nodes is NULL but node_count is " + num(snap_.node_count));
  if (snap_.node_idx_count != 0 && snap_.node_idx == nullptr)
    return fail(
        AvailabilityErrc::kInvalidSnapshot,
        "node_idx is NULL but node_idx_count is " + num(snap_.node_idx_count));

  const flexco_snap_part_t* part = find_partition();
  if (part == nullptr) return std::move(*error_);
  if (!range_ok(part->node_off, part->node_cnt,
                "partition '" + std::string(part->name) + "'"))
    return std::move(*error_);
  up_ = part->up != 0;

  local_.assign(snap_.node_count, -1);
  for (std::uint32_t k = part->node_off; k < part->node_off + part->node_cnt;
       ++k) {
    std::uint32_t n = snap_.node_idx[k];
    if (local_[n] >= 0) continue;  // listed twice: count once
    local_[n] = static_cast<std::int64_t>(members_.size());
    members_.push_back(n);
    const flexco_snap_node_t& node = snap_.nodes[n];
    nodes_total_ += 1;
    cpus_total_ += node.cpus;
    if (node.available != 0) {
      nodes_available_ += 1;
      cpus_available_ += node.cpus;
    }
    if (cpus_total_ > kMaxAmount)
      return fail(AvailabilityErrc::kInvalidSnapshot,
                  "partition '" + std::string(part->name) + "' has more than " +
                      num(kMaxAmount) + " CPUs");
  }
  nodes_published_ = nodes_total_ * query_.share_percent / 100;
  cpus_published_ = cpus_total_ * query_.share_percent / 100;

  if (!collect()) return std::move(*error_);
  std::vector<Step> steps = sweep();

  auto profiles = profiles_from_steps(steps, nodes_published_, cpus_published_);
  if (!profiles.ok())  // cannot happen: the steps are well formed
    return fail(AvailabilityErrc::kInvalidSnapshot, profiles.error().message);
  PublishedProfiles p = std::move(profiles).value();

  return Availability{snap_.cluster ? snap_.cluster : "",
                      part->name,
                      up_,
                      when_,
                      horizon_end_,
                      snap_.bf_last_cycle,
                      snap_.bf_active != 0,
                      query_.share_percent,
                      nodes_total_,
                      nodes_available_,
                      nodes_published_,
                      cpus_total_,
                      cpus_available_,
                      cpus_published_,
                      std::move(p.nodes),
                      std::move(p.cpus),
                      std::move(steps)};
}

Result<Profile> one_profile(const std::vector<Step>& steps, Amount capacity,
                            bool cpus) {
  auto made = Profile::create(steps.front().start, capacity);
  if (!made.ok()) return made.error();
  Profile prof = std::move(made).value();
  for (const Step& s : steps) {
    Amount free = cpus ? s.free_cpus : s.free_nodes;
    if (free < capacity) {
      auto id = prof.add_span(s.start, s.end - s.start, capacity - free,
                              Admission::kMustFit);
      if (!id.ok()) return id.error();
    }
  }
  if (capacity > 0) {
    auto id = prof.add_span(steps.back().end, kForever, capacity,
                            Admission::kMustFit);
    if (!id.ok()) return id.error();
  }
  return prof;
}

}  // namespace

const char* availability_errc_name(AvailabilityErrc code) noexcept {
  switch (code) {
    case AvailabilityErrc::kBadParameter:
      return "bad_parameter";
    case AvailabilityErrc::kUnknownPartition:
      return "unknown_partition";
    case AvailabilityErrc::kInvalidSnapshot:
      return "invalid_snapshot";
  }
  return "internal";
}

int availability_http_status(AvailabilityErrc code) noexcept {
  switch (code) {
    case AvailabilityErrc::kBadParameter:
      return 400;
    case AvailabilityErrc::kUnknownPartition:
      return 404;
    case AvailabilityErrc::kInvalidSnapshot:
      return 500;
  }
  return 500;
}

AvailabilityResult build_availability(const flexco_snapshot_t& snap,
                                      const AvailabilityQuery& query) {
  return Builder(snap, query).run();
}

Result<PublishedProfiles> profiles_from_steps(const std::vector<Step>& steps,
                                              Amount nodes_capacity,
                                              Amount cpus_capacity) {
  auto bad = [](const std::string& what) {
    return Error{Errc::kInvalidArgument, "profiles_from_steps: " + what};
  };
  if (steps.empty()) return bad("no steps");
  if (nodes_capacity < 0 || nodes_capacity > kMaxAmount || cpus_capacity < 0 ||
      cpus_capacity > kMaxAmount)
    return bad("capacity out of range (nodes " + num(nodes_capacity) +
               ", cpus " + num(cpus_capacity) + ")");
  if (steps.front().start < 0)
    return bad("first step starts before 0 (" + num(steps.front().start) + ")");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    std::string at = "step " + std::to_string(i);
    if (s.start >= s.end || s.end == kForever)
      return bad(at + ": empty or endless [" + num(s.start) + ", " +
                 num(s.end) + ")");
    if (i > 0 && steps[i - 1].end != s.start)
      return bad(at + ": starts at " + num(s.start) +
                 ", not where the previous one ends (" + num(steps[i - 1].end) +
                 ")");
    if (s.free_nodes < 0 || s.free_nodes > nodes_capacity)
      return bad(at + ": free_nodes " + num(s.free_nodes) + " outside [0, " +
                 num(nodes_capacity) + "]");
    if (s.free_cpus < 0 || s.free_cpus > cpus_capacity)
      return bad(at + ": free_cpus " + num(s.free_cpus) + " outside [0, " +
                 num(cpus_capacity) + "]");
  }
  auto nodes = one_profile(steps, nodes_capacity, false);
  if (!nodes.ok()) return nodes.error();
  auto cpus = one_profile(steps, cpus_capacity, true);
  if (!cpus.ok()) return cpus.error();
  return PublishedProfiles{std::move(nodes).value(), std::move(cpus).value()};
}

}  // namespace flexco
