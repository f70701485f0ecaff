// SPDX-License-Identifier: GPL-2.0-or-later
// Availability profile: free capacity over integer time as a step function.
//
// One balanced search tree (a treap in an index-based arena) keyed by change
// point; each point holds the free capacity from its time up to the next
// point, and every subtree caches its minimum and maximum free value plus a
// pending ("lazy") addition, so point queries, window minima, earliest fits
// and span updates all run in O(log P) for P change points.  The design,
// every edge case and measured figures are in doc/profile.md.
//
// Times are UTC epoch seconds (int64).  The profile covers [origin, kForever).
// The core library never logs, never exits and holds no global state.
// Const methods only read, so any number of threads may query one object
// at once; a mutation needs the object to itself.  Errors are returned as
// values with a precise message; the only exception that can escape is
// std::bad_alloc.

#ifndef FLEXCO_CORE_PROFILE_HPP
#define FLEXCO_CORE_PROFILE_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/result.hpp"

namespace flexco {

using Time = std::int64_t;      // UTC epoch seconds, >= 0
using Duration = std::int64_t;  // seconds, >= 0
using Amount = std::int64_t;    // units of capacity (nodes, CPUs, ...)
using SpanId = std::uint64_t;   // 0 is never a valid id

// End of time.  A span or window that reaches it never ends; t + d beyond
// INT64_MAX saturates to it.
inline constexpr Time kForever = std::numeric_limits<Time>::max();
// The answer of a fit query that can never be satisfied.  Equal to kForever
// (no start can be at or after the end of time), so it is never a valid start.
inline constexpr Time kNever = kForever;
// Largest capacity, span amount or request; free values stay within
// [-kMaxAmount, kMaxAmount] so that no arithmetic can overflow.
inline constexpr Amount kMaxAmount = Amount{1} << 52;
inline constexpr SpanId kNoSpan = 0;

// ---------------------------------------------------------------------------
// Results

enum class Errc {
  kInvalidArgument = 1,  // malformed input: negative time, d < 0, n <= 0, ...
  kOutOfRange,           // well formed, but outside the profile's domain
  kNotFound,             // unknown span id
  kNoFit,                // add_span would over-subscribe (use Admission::kForce)
};

// "invalid-argument", "out-of-range", "not-found", "no-fit".
const char* errc_name(Errc code) noexcept;

struct Error {
  Errc code;
  std::string message;  // "<Class::method>: <what is wrong> (<values>)"
};

// A value or an Error; success or an Error (see core/result.hpp).
template <typename T>
using Result = BasicResult<T, Error>;
using Status = BasicStatus<Error>;

// ---------------------------------------------------------------------------
// Plain data

struct Span {
  Time start;     // first second occupied
  Time end;       // first second free again; kForever = never ends
  Amount amount;  // units taken over [start, end)
};

// A rectangle of the step function: `free` units over [start, end).
struct Slot {
  Time start;
  Time end;
  Amount free;
};

// What add_span does when the span does not fit in the free capacity.
enum class Admission {
  kMustFit,  // reject with Errc::kNoFit (planning, reservations)
  kForce,    // record it anyway, free may go negative (a snapshot of reality:
             // running jobs, nodes over-subscribed by Slurm)
};

namespace detail {

// The search tree.  Internal: use Profile.
class StepTree {
 public:
  using Index = std::uint32_t;

  StepTree(Time origin, Amount value);
  // From points sorted by time, no two neighbours with the same value; O(P).
  explicit StepTree(const std::vector<std::pair<Time, Amount>>& points);

  std::size_t size() const noexcept { return nodes_.size() - 1 - spare_.size(); }

  // Preconditions (checked by Profile): origin <= t < kForever, s < e.
  Amount value_at(Time t) const;
  Amount min_in(Time s, Time e) const;  // min over [s, e)
  Amount max_in(Time s, Time e) const;  // max over [s, e)
  bool has_point(Time t) const;
  Time next_point(Time t) const;  // first point > t, kNever if none
  Time point_at(Time t) const;    // last point <= t (t >= origin)
  // First point > t whose free is >= n (at_least) or < n (!at_least).
  Time first_after(Time t, Amount n, bool at_least) const;
  // Last point < t whose free is < n; -1 if none.
  Time last_below(Time t, Amount n) const;

  // Adds delta to [s, e), creating and merging points as needed, so that
  // no point has the same free value as its predecessor.  s >= origin.
  void add(Time s, Time e, Amount delta);

  // In-order walk from the point holding t (the last point <= t).
  // Invalidated by any change to the tree.
  class Cursor {
   public:
    Cursor(const StepTree& tree, Time t);
    Time time() const { return tree_->nodes_[cur_].time; }
    Amount value() const { return value_; }
    Time next_time() const;  // kNever at the last point
    void advance();          // precondition: next_time() != kNever

   private:
    const StepTree* tree_;
    Index cur_ = 0;
    Amount value_ = 0;
    std::vector<std::pair<Index, Amount>> stack_;  // (node, pending add above it)
  };

  // The same walk backwards: starts at the point holding t, retreat()
  // moves to the previous point.
  class BackCursor {
   public:
    BackCursor(const StepTree& tree, Time t);
    Time time() const { return tree_->nodes_[stack_.back().first].time; }
    Amount value() const;
    void retreat();  // precondition: the current point is not the first

   private:
    const StepTree* tree_;
    std::vector<std::pair<Index, Amount>> stack_;  // top: the current point
  };

 private:
  struct Node {
    Time time;
    Amount val;  // free from `time` to the next point
    Amount mn;   // subtree minimum of free
    Amount mx;   // subtree maximum of free
    Amount lz;   // addition still owed to both children's subtrees
    Index left;
    Index right;
    std::uint32_t prio;
  };
  static constexpr Index kNil = 0;  // nodes_[0] is an unused sentinel

  Index make_node(Time t, Amount v);
  void release(Index x);
  std::uint32_t next_prio();
  void apply(Index x, Amount delta);
  void push(Index x);
  void pull(Index x);
  void split(Index x, Time key, Index& lo, Index& hi);
  Index merge(Index a, Index b);
  Index pop_first(Index x);
  void pull_all(Index x);
  Time first_time(Index x) const;
  Amount first_value(Index x) const;
  Amount last_value(Index x) const;
  Amount extreme_keys(Index x, Time lo, Time hi, bool want_max) const;
  Index find_after(Index x, Time t, Amount n, bool at_least, Amount acc) const;
  Index find_below(Index x, Time t, Amount n, Amount acc) const;

  std::vector<Node> nodes_;
  std::vector<Index> spare_;  // released slots of nodes_
  Index root_ = kNil;
  std::uint64_t rng_ = 0x9e3779b97f4a7c15ULL;
};

class ProfileAccess;

}  // namespace detail

// ---------------------------------------------------------------------------
// One dimension of capacity.  A copyable value type: copy it to ask what-if
// questions without touching the original.

class Profile {
 public:
  // origin in [0, kForever), capacity in [0, kMaxAmount].
  static Result<Profile> create(Time origin, Amount capacity);
  // A snapshot whose free capacity is the sum of the given profiles' (the
  // latest origin, the summed capacity, no spans of its own; spans may be
  // added to it).  O(P) for P points in all.  Build it once to ask many
  // summed questions: its queries are then those of a single profile.  The
  // profiles must be distinct, at most 1024, and the summed capacity and
  // free must stay within kMaxAmount.
  static Result<Profile> sum(const std::vector<const Profile*>& profiles);

  Time origin() const noexcept { return origin_; }
  Amount capacity() const noexcept { return capacity_; }
  std::size_t point_count() const noexcept { return tree_.size(); }
  std::size_t span_count() const noexcept { return spans_.size(); }

  // Free units at t; t in [origin, kForever).  May be negative after forced
  // spans.
  Result<Amount> free_at(Time t) const;
  // Minimum free over [t, t + d); d = 0 is the instant t (same as d = 1);
  // t + d saturates at kForever.
  Result<Amount> min_over(Time t, Duration d) const;

  // Earliest s >= max(t, origin) with n units free over [s, s + d), or
  // kNever (n > capacity, or no window ever).  d = 0 means d = 1.
  Result<Time> earliest_fit(Time t, Duration d, Amount n) const;
  // The next candidate start after `after`: the first change point > after
  // at which n units are free for d, or kNever.  With earliest_fit this
  // enumerates the event-based offer distribution:
  //   for (s = earliest_fit(t,d,n); s != kNever; s = next_fit(s,d,n)) ...
  Result<Time> next_fit(Time after, Duration d, Amount n) const;
  // First change point > after (kNever if none); the origin is a point.
  Time next_change_point(Time after) const;

  // The step function over [from, until) cut into constant rectangles,
  // clipped to the range, keeping those with free >= min_free (pass
  // -kMaxAmount for every rectangle).  from in [origin, kForever),
  // until >= from (may be kForever).
  Result<std::vector<Slot>> free_slots(Time from, Time until,
                                       Amount min_free = 1) const;

  // Takes `amount` units over [start, start + d).  start in
  // [origin, kForever), d > 0 (kForever or beyond: never ends), amount in
  // [1, kMaxAmount].  kMustFit rejects a span that does not fit (kNoFit).
  Result<SpanId> add_span(Time start, Duration d, Amount amount,
                          Admission admission = Admission::kMustFit);
  // For planners that throw the profile away: takes `amount` units over
  // [start, start + d) without recording a span (it has no id and cannot be
  // removed or shrunk) and without checking anything.  The caller has
  // proved what add_span would check: start in [origin, kForever), d > 0,
  // amount in [1, kMaxAmount], and `amount` units free over the window (an
  // earliest_fit or min_over of this profile said so).  Saves the span
  // table's insertion and the fit check of add_span on a hot path.
  void take_unchecked(Time start, Duration d, Amount amount);
  Status remove_span(SpanId id);
  // Early completion: the span becomes [start, new_end) x new_amount with
  // start < new_end <= end and 1 <= new_amount <= amount.
  Status shrink_span(SpanId id, Time new_end, Amount new_amount);
  Result<Span> span(SpanId id) const;

 private:
  Profile(Time origin, Amount capacity);
  Profile(Time origin, Amount capacity, detail::StepTree tree)
      : origin_(origin), capacity_(capacity), tree_(std::move(tree)) {}
  Time search(Time lo, Duration d, Amount n) const;
  Time scan_from(Time p, Duration d, Amount n) const;

  Time origin_;
  Amount capacity_;
  detail::StepTree tree_;
  std::unordered_map<SpanId, Span> spans_;
  SpanId next_id_ = 1;

  friend class detail::ProfileAccess;
  friend class NodeCpuProfile;
};

// ---------------------------------------------------------------------------
// Two dimensions kept in step: nodes and CPUs, counted independently (like
// flux-sched's planner_multi; which CPUs sit on which nodes is not modelled).
// A zero in a request or span dimension means "no demand on it".

struct Capacity {
  Amount nodes = 0;
  Amount cpus = 0;
};

struct NodeCpuSpan {
  Time start;
  Time end;
  Capacity amount;
};

struct NodeCpuSlot {
  Time start;
  Time end;
  Capacity free;
};

class NodeCpuProfile {
 public:
  // Both dimensions in [0, kMaxAmount].
  static Result<NodeCpuProfile> create(Time origin, Capacity capacity);
  // Both dimensions summed, as Profile::sum.
  static Result<NodeCpuProfile> sum(const std::vector<const NodeCpuProfile*>& profiles);

  Time origin() const noexcept { return nodes_.origin(); }
  Capacity capacity() const noexcept {
    return {nodes_.capacity(), cpus_.capacity()};
  }
  const Profile& nodes() const noexcept { return nodes_; }
  const Profile& cpus() const noexcept { return cpus_; }
  std::size_t span_count() const noexcept { return spans_.size(); }

  Result<Capacity> free_at(Time t) const;
  // Minimum of each dimension over [t, t + d) (the two minima may be at
  // different times).
  Result<Capacity> min_over(Time t, Duration d) const;
  // As Profile, requiring both dimensions.  need: each in [0, kMaxAmount],
  // not both 0.
  Result<Time> earliest_fit(Time t, Duration d, Capacity need) const;
  // Candidates are the change points of the dimensions asked for.
  Result<Time> next_fit(Time after, Duration d, Capacity need) const;
  Time next_change_point(Time after) const;
  // Rectangles of constant (nodes, cpus) with nodes >= min_free.nodes and
  // cpus >= min_free.cpus.
  Result<std::vector<NodeCpuSlot>> free_slots(Time from, Time until,
                                              Capacity min_free = {1, 1}) const;

  // One id for both dimensions; amount: each >= 0, not both 0; kMustFit
  // requires both to fit.  Atomic: on error nothing changes.
  Result<SpanId> add_span(Time start, Duration d, Capacity amount,
                          Admission admission = Admission::kMustFit);
  Status remove_span(SpanId id);
  // start < new_end <= end; each new amount in [0, old], not both 0.
  Status shrink_span(SpanId id, Time new_end, Capacity new_amount);
  Result<NodeCpuSpan> span(SpanId id) const;

 private:
  struct Entry {
    Time start;
    Time end;
    Capacity amount;
    SpanId node_span;  // kNoSpan when amount.nodes == 0
    SpanId cpu_span;   // kNoSpan when amount.cpus == 0
  };
  NodeCpuProfile(Profile nodes, Profile cpus)
      : nodes_(std::move(nodes)), cpus_(std::move(cpus)) {}

  Profile nodes_;
  Profile cpus_;
  std::unordered_map<SpanId, Entry> spans_;
  SpanId next_id_ = 1;
};

// ---------------------------------------------------------------------------
// Common start over several profiles (co-allocation).  All return the
// earliest s >= t (and >= every involved origin) such that the condition
// holds over the whole [s, s + d), or kNever; d = 0 means d = 1.  The
// next_* forms return the first such s > after that is a change point of
// a tested function (a listed profile's free in the each form, the summed
// free in the sum form), to enumerate candidates like Profile::next_fit;
// a sum form thus agrees with Profile::sum(...).next_fit(...).

// (b) Each listed profile has its own amount free.  A profile listed twice
// must satisfy both entries separately (amounts are not added).
struct Demand {
  const Profile* profile;
  Amount amount;  // >= 1
};
Result<Time> earliest_common_start(const std::vector<Demand>& parts, Time t,
                                   Duration d);
Result<Time> next_common_start(const std::vector<Demand>& parts, Time after,
                               Duration d);

// (a) The sum of the profiles' free capacity is >= n at every instant.
Result<Time> earliest_common_start_sum(
    const std::vector<const Profile*>& profiles, Time t, Duration d, Amount n);
Result<Time> next_common_start_sum(const std::vector<const Profile*>& profiles,
                                   Time after, Duration d, Amount n);

// The same over node/CPU profiles: every dimension with a non-zero demand
// must hold (for the sum form: the summed nodes and the summed CPUs).
struct NodeCpuDemand {
  const NodeCpuProfile* profile;
  Capacity amount;
};
Result<Time> earliest_common_start(const std::vector<NodeCpuDemand>& parts,
                                   Time t, Duration d);
Result<Time> next_common_start(const std::vector<NodeCpuDemand>& parts,
                               Time after, Duration d);
Result<Time> earliest_common_start_sum(
    const std::vector<const NodeCpuProfile*>& profiles, Time t, Duration d,
    Capacity n);
Result<Time> next_common_start_sum(
    const std::vector<const NodeCpuProfile*>& profiles, Time after, Duration d,
    Capacity n);

}  // namespace flexco

#endif  // FLEXCO_CORE_PROFILE_HPP
