// SPDX-License-Identifier: GPL-2.0-or-later
// The local-schedule planner: conservative and EASY backfilling over the
// availability profile, what-if delays and fitness, and the incremental
// scheduler.  See local_sched.hpp for the contract and doc/local_sched.md
// for the algorithms and decisions.

#include "core/local_sched.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

namespace flexco {

namespace {

// ===========================================================================
// Small helpers

// t + d for t, d >= 0, saturating at kForever.
Time sat_add(Time t, Duration d) { return d >= kForever - t ? kForever : t + d; }

// a + b for a, b >= 0, saturating at kForever.
std::int64_t sat_sum(std::int64_t a, std::int64_t b) {
  return b >= kForever - a ? kForever : a + b;
}

// a * b for a, b >= 0, saturating at kForever.
std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return kForever;
  return r;
}

std::string fmt_time(Time t) { return t == kForever ? std::string("forever") : std::to_string(t); }

Error make_error(Errc code, const char* where, const std::string& what) {
  return Error{code, std::string(where) + ": " + what};
}

// An error from a call that cannot fail on validated input: a bug here.
Error internal(const char* where, const Error& e) {
  return Error{e.code, std::string(where) + ": internal error: " + e.message};
}

std::string label(const char* list, std::size_t i, const char* kind, std::uint64_t id) {
  return std::string(list) + "[" + std::to_string(i) + "] (" + kind + " " + std::to_string(id) +
         ")";
}

// The first instant a queued job may start.
Time eligible(const PendingJob& j, Time now) { return std::max(now, j.begin); }

// The end a running job is planned with: an overdue job (expected end <= now)
// is taken to end within the next second.
Time effective_end(const RunningJob& r, Time now) { return std::max(r.expected_end, now + 1); }

// Profile::add_span's duration for [s, e).
Duration span_duration(Time s, Time e) { return e == kForever ? kForever : e - s; }

// with - without for two planned starts, kNever meaning "never".
Duration start_delay(Time without, Time with) {
  if (without == kNever && with == kNever) return 0;
  if (with == kNever) return kForever;
  if (without == kNever) return -kForever;
  return with - without;
}

// ===========================================================================
// Validation

std::optional<Error> check_capacity_now(const char* where, Amount capacity, Time now) {
  if (capacity < 0 || capacity > kMaxAmount)
    return make_error(Errc::kInvalidArgument, where,
                      "capacity must be in [0, 2^52] nodes (got " + std::to_string(capacity) + ")");
  if (now < 0)
    return make_error(Errc::kInvalidArgument, where,
                      "now must be >= 0 (got " + std::to_string(now) + ")");
  if (now >= kForever) return make_error(Errc::kOutOfRange, where, "now must be before kForever");
  return std::nullopt;
}

std::optional<Error> check_nodes(const char* where, const std::string& who, Amount nodes,
                                 Amount capacity, const char* verb) {
  if (nodes < 1)
    return make_error(Errc::kInvalidArgument, where,
                      who + ": " + verb + " " + std::to_string(nodes) + " nodes; must be >= 1");
  if (nodes > capacity)
    return make_error(Errc::kOutOfRange, where,
                      who + ": " + verb + " " + std::to_string(nodes) +
                          " nodes, more than the cluster's " + std::to_string(capacity));
  return std::nullopt;
}

// `who` names the job in a message: a callable returning it, called only
// on an error (the checks run once per queued job on every plan).
template <typename Who>
std::optional<Error> check_pending(const char* where, const Who& who, const PendingJob& j,
                                   Amount capacity, Time now) {
  if (j.nodes < 1)
    return make_error(Errc::kInvalidArgument, where,
                      who() + ": needs " + std::to_string(j.nodes) + " nodes; must be >= 1");
  if (j.nodes > capacity)
    return make_error(Errc::kOutOfRange, where,
                      who() + ": needs " + std::to_string(j.nodes) +
                          " nodes, more than the cluster's " + std::to_string(capacity) +
                          " (it can never run: leave it out of the queue)");
  if (j.estimate <= 0)
    return make_error(Errc::kInvalidArgument, where,
                      who() + ": estimate must be > 0 s (got " + std::to_string(j.estimate) + ")");
  if (j.submit < 0)
    return make_error(Errc::kInvalidArgument, where,
                      who() + ": submit time must be >= 0 (got " + std::to_string(j.submit) + ")");
  if (j.submit > now)
    return make_error(Errc::kOutOfRange, where,
                      who() + ": submitted at " + std::to_string(j.submit) + ", after now (" +
                          std::to_string(now) + ")");
  if (j.begin < 0)
    return make_error(Errc::kInvalidArgument, where,
                      who() + ": begin time must be >= 0 (got " + std::to_string(j.begin) + ")");
  if (j.begin >= kForever)
    return make_error(Errc::kOutOfRange, where, who() + ": begin time must be before kForever");
  return std::nullopt;
}

template <typename Who>
std::optional<Error> check_running(const char* where, const Who& who, const RunningJob& r,
                                   Amount capacity, Time now) {
  if (r.nodes < 1 || r.nodes > capacity)
    return check_nodes(where, who(), r.nodes, capacity, "holds");
  if (r.start < 0)
    return make_error(Errc::kInvalidArgument, where,
                      who() + ": start must be >= 0 (got " + std::to_string(r.start) + ")");
  if (r.start > now)
    return make_error(Errc::kOutOfRange, where,
                      who() + ": started at " + std::to_string(r.start) + ", after now (" +
                          std::to_string(now) + ")");
  if (r.expected_end <= r.start)
    return make_error(Errc::kInvalidArgument, where,
                      who() + ": expected end " + std::to_string(r.expected_end) +
                          " must be after its start " + std::to_string(r.start));
  if (r.submit < 0)
    return make_error(Errc::kInvalidArgument, where,
                      who() + ": submit time must be >= 0 (got " + std::to_string(r.submit) + ")");
  if (r.submit > r.start)
    return make_error(Errc::kInvalidArgument, where,
                      who() + ": submitted at " + std::to_string(r.submit) + ", after its start " +
                          std::to_string(r.start));
  return std::nullopt;
}

std::optional<Error> check_fixed(const char* where, const std::string& who, const FixedSpan& r,
                                 Amount capacity) {
  if (auto e = check_nodes(where, who, r.nodes, capacity, "takes")) return e;
  if (r.start < 0)
    return make_error(Errc::kInvalidArgument, where,
                      who + ": start must be >= 0 (got " + std::to_string(r.start) + ")");
  if (r.end <= r.start)
    return make_error(
        Errc::kInvalidArgument, where,
        who + ": end " + fmt_time(r.end) + " must be after its start " + std::to_string(r.start));
  return std::nullopt;
}

std::optional<Error> check_input(const char* where, const LocalPlanInput& in) {
  if (auto e = check_capacity_now(where, in.capacity, in.now)) return e;
  // Job ids are unique over running and queue: id -> position k, running[k]
  // for k < running.size(), else queue[k - running.size()].
  std::unordered_map<std::uint64_t, std::size_t> jobs;
  jobs.reserve(in.running.size() + in.queue.size());
  auto position = [&](std::size_t k) {
    return k < in.running.size() ? "running[" + std::to_string(k) + "]"
                                 : "queue[" + std::to_string(k - in.running.size()) + "]";
  };
  auto unique = [&](std::uint64_t id, std::size_t k) -> std::optional<Error> {
    auto [it, fresh] = jobs.emplace(id, k);
    if (!fresh)
      return make_error(Errc::kInvalidArgument, where,
                        "job " + std::to_string(id) + " appears twice: " + position(it->second) +
                            " and " + position(k));
    return std::nullopt;
  };
  for (std::size_t i = 0; i < in.running.size(); ++i) {
    const RunningJob& r = in.running[i];
    auto who = [&] { return label("running", i, "job", r.id); };
    if (auto e = check_running(where, who, r, in.capacity, in.now))
      return e;
    if (auto e = unique(r.id, i)) return e;
  }
  for (std::size_t i = 0; i < in.queue.size(); ++i) {
    const PendingJob& j = in.queue[i];
    auto who = [&] { return label("queue", i, "job", j.id); };
    if (auto e = check_pending(where, who, j, in.capacity, in.now))
      return e;
    if (auto e = unique(j.id, in.running.size() + i)) return e;
  }
  std::unordered_map<std::uint64_t, std::size_t> resv;
  resv.reserve(in.reservations.size());
  for (std::size_t i = 0; i < in.reservations.size(); ++i) {
    std::string who = label("reservations", i, "reservation", in.reservations[i].id);
    if (auto e = check_fixed(where, who, in.reservations[i], in.capacity)) return e;
    auto [it, fresh] = resv.emplace(in.reservations[i].id, i);
    if (!fresh)
      return make_error(Errc::kInvalidArgument, where,
                        "reservation " + std::to_string(in.reservations[i].id) +
                            " appears twice: reservations[" + std::to_string(it->second) +
                            "] and reservations[" + std::to_string(i) + "]");
  }
  return std::nullopt;
}

std::optional<Error> check_placeholder(const char* where, const std::string& who,
                                       const Placeholder& p, const LocalPlanInput& in) {
  if (p.start < in.now)
    return make_error(Errc::kOutOfRange, where,
                      who + ": starts at " + std::to_string(p.start) + ", before now (" +
                          std::to_string(in.now) + ")");
  if (p.start >= kForever)
    return make_error(Errc::kOutOfRange, where, who + ": start must be before kForever");
  if (p.duration <= 0)
    return make_error(Errc::kInvalidArgument, where,
                      who + ": duration must be > 0 s (got " + std::to_string(p.duration) + ")");
  return check_nodes(where, who, p.nodes, in.capacity, "takes");
}

// ===========================================================================
// Planning passes (on validated input)

// Running jobs and reservations, origin now.  Over-subscription is recorded
// as it is (Admission::kForce).
Result<Profile> make_base(const char* where, const LocalPlanInput& in) {
  auto made = Profile::create(in.now, in.capacity);
  if (!made) return internal(where, made.error());
  Profile p = std::move(made).value();
  for (const RunningJob& r : in.running) {
    Time end = effective_end(r, in.now);
    auto id = p.add_span(in.now, span_duration(in.now, end), r.nodes, Admission::kForce);
    if (!id) return make_error(id.error().code, where, "running jobs: " + id.error().message);
  }
  for (const FixedSpan& r : in.reservations) {
    if (r.end <= in.now) continue;  // already over
    Time s = std::max(r.start, in.now);
    auto id = p.add_span(s, span_duration(s, r.end), r.nodes, Admission::kForce);
    if (!id) return make_error(id.error().code, where, "reservations: " + id.error().message);
  }
  return p;
}

// ---------------------------------------------------------------------------
// FlatProfile: the what-if plans' profile.
//
// The same step function as a Profile (free units from each point on), kept
// as two sorted arrays instead of a treap.  A what-if plan starts from the
// base profile (running jobs and reservations) and adds the queue's jobs,
// one earliest-fit search and one span each; with at most a few thousand
// points, scanning contiguous memory forward costs less than descending the
// treap (a walk over scattered nodes per query, two splits and merges per
// span), and planning jobs mostly at the end of the plan makes the
// insertions cheap moves of a short tail.  Only for throw-away plans: no
// spans are recorded, nothing is checked (the passes only take windows a
// search or min_over of this profile found free), and points whose value
// equals the previous one are left in place (they change no answer: a
// search only stops at a point whose value differs from the previous one's
// side of n).  Answers equal Profile's: the randomized tests of
// check_local_sched compare the what-if plans with plan_local's, which
// runs on a Profile.
class FlatProfile {
 public:
  // Used for bases of at most kMaxBase points (else the treap's O(log P)
  // beats moving long tails).
  static constexpr std::size_t kMaxBase = 4096;

  explicit FlatProfile(const Profile& p) : capacity_(p.capacity()) {
    auto rects = p.free_slots(p.origin(), kForever, -kMaxAmount);
    if (rects.ok()) {
      t_.reserve(rects.value().size() + 1024);
      v_.reserve(rects.value().size() + 1024);
      for (const Slot& r : rects.value()) {
        t_.push_back(r.start);
        v_.push_back(r.free);
      }
    }
    ok_ = rects.ok() && !t_.empty() && t_.front() == p.origin();
  }
  bool ok() const noexcept { return ok_; }

  Result<Amount> min_over(Time t, Duration d) const {
    const Time end = sat_add(t, d == 0 ? 1 : d);
    std::size_t i = at(t);
    Amount m = v_[i];
    for (++i; i < t_.size() && t_[i] < end; ++i) m = std::min(m, v_[i]);
    return m;
  }

  // Profile::earliest_fit for t in [origin, kForever), d >= 0 (0 means 1),
  // n >= 1.
  Result<Time> earliest_fit(Time t, Duration d, Amount n) const {
    if (n > capacity_) return kNever;
    if (d == 0) d = 1;
    std::size_t i = at(t);
    Time p = t;
    if (v_[i] < n) {
      i = recovery(i + 1, n);
      if (i == t_.size()) return kNever;
      p = t_[i];
    }
    for (;;) {
      // v_[i] >= n holds from p on; the first drop below n in [p, p + d)?
      const Time end = sat_add(p, d);
      std::size_t j = i + 1;
      while (j < t_.size() && t_[j] < end && v_[j] >= n) ++j;
      if (j == t_.size() || t_[j] >= end) return p;
      // Every start up to t_[j] holds the drop: the next candidate is
      // where the free count is back to n.
      i = recovery(j + 1, n);
      if (i == t_.size()) return kNever;
      p = t_[i];
    }
  }

  // Takes n over [s, s + d): s >= origin, d > 0.
  void take_unchecked(Time s, Duration d, Amount n) {
    const Time e = sat_add(s, d);
    std::size_t i = split(s);
    std::size_t j = e == kForever ? t_.size() : split(e);
    for (std::size_t k = i; k < j; ++k) v_[k] -= n;
  }

 private:
  // Index of the last point <= t (t >= origin).
  std::size_t at(Time t) const {
    return static_cast<std::size_t>(std::upper_bound(t_.begin(), t_.end(), t) - t_.begin()) - 1;
  }
  // First index >= k whose value is >= n, or size().
  std::size_t recovery(std::size_t k, Amount n) const {
    while (k < t_.size() && v_[k] < n) ++k;
    return k;
  }
  // Index of the point at t, made if missing (t > origin).
  std::size_t split(Time t) {
    std::size_t i = at(t);
    if (t_[i] == t) return i;
    t_.insert(t_.begin() + static_cast<std::ptrdiff_t>(i + 1), t);
    v_.insert(v_.begin() + static_cast<std::ptrdiff_t>(i + 1), v_[i]);
    return i + 1;
  }

  std::vector<Time> t_;    // ascending; t_[0] = origin
  std::vector<Amount> v_;  // free from t_[k] to t_[k + 1] (the last: forever)
  Amount capacity_;
  bool ok_ = false;
};

// Whether a planning pass records the spans it adds (their ids go into
// PlannedJob::span, for plans that are kept and edited, such as LocalPlan)
// or not (kNoSpan: the what-if plans, thrown away once measured).
enum class Spans { kTracked, kUntracked };

// Takes n over [start, start + d) in p, which the caller found free there.
Result<SpanId> take(Profile& p, Spans spans, Time start, Duration d, Amount n) {
  if (spans == Spans::kTracked) return p.add_span(start, d, n, Admission::kMustFit);
  p.take_unchecked(start, d, n);
  return kNoSpan;
}

Result<SpanId> take(FlatProfile& p, Spans spans, Time start, Duration d, Amount n) {
  if (spans == Spans::kTracked)
    return make_error(Errc::kInvalidArgument, "take", "a FlatProfile records no spans");
  p.take_unchecked(start, d, n);
  return kNoSpan;
}

// Plans one job at its earliest fit in p at or after `from` (taking the nodes
// there), or never.  `from` is eligible(j) or a proven lower bound of the
// earliest fit (see StartBound); kNever means "can never start".
template <typename P>
Status plan_one(const char* where, P& p, Spans spans, Time now, const PendingJob& j,
                PlannedJob& out, Placement as, Time from = 0) {
  out.id = j.id;
  out.nodes = j.nodes;
  from = std::max(from, eligible(j, now));
  Time start = kNever;
  if (from < kNever) {
    auto s = p.earliest_fit(from, j.estimate, j.nodes);
    if (!s) return internal(where, s.error());
    start = s.value();
  }
  if (start == kNever) {
    out.start = out.end = kNever;
    out.placement = Placement::kNever;
    out.span = kNoSpan;
    return {};
  }
  auto id = take(p, spans, start, j.estimate, j.nodes);
  if (!id) return internal(where, id.error());
  out.start = start;
  out.end = sat_add(start, j.estimate);
  out.placement = as;
  out.span = id.value();
  return {};
}

// A lower bound of a job's earliest fit during one conservative pass, from
// the jobs planned before it.  If an earlier job k has nodes_k <= nodes_i,
// estimate_k <= estimate_i and eligible_k <= eligible_i, then start_i >=
// start_k: the profile job i is planned in has pointwise no more free than
// the one job k was planned in (spans are only added), so a window of job i
// at some s in [eligible_i, start_k) would have held job k too, before its
// earliest fit.  (start_k = kNever gives kNever.)  The bound is the largest
// such start_k; the search then begins there instead of at eligible_i and
// skips the holes that earlier, smaller jobs already skipped.  Same result,
// fewer search rounds.
//
// A 2-D prefix-maximum Fenwick tree over (nodes, estimate) buckets; only
// jobs whose begin time is in the past take part (then eligible = now for
// all of them).  Distinct values get their own bucket up to kAxis per axis;
// beyond that, values share buckets, and a query counts only buckets whose
// values are all <= the job's (a smaller set: still a lower bound).
// BoundAxes holds the buckets of every queued job (computed once per
// queue); StartBound the maxima of one pass.
struct BoundAxes {
  static constexpr std::size_t kAxis = 64;
  std::size_t n_buckets = 0, d_buckets = 0;
  struct Job {
    std::uint32_t insert_n, insert_d;  // 1-based bucket holding the value
    std::uint32_t query_n, query_d;    // leading buckets with all values <= it
    bool takes_part;                   // begin <= now
  };
  std::vector<Job> jobs;  // queue order

  explicit BoundAxes(const LocalPlanInput& in) {
    std::vector<Amount> n;
    std::vector<Duration> d;
    n.reserve(in.queue.size());
    d.reserve(in.queue.size());
    for (const PendingJob& j : in.queue) {
      n.push_back(j.nodes);
      d.push_back(j.estimate);
    }
    std::vector<Amount> n_hi = axis(n);
    std::vector<Duration> d_hi = axis(d);
    n_buckets = n_hi.size();
    d_buckets = d_hi.size();
    jobs.reserve(in.queue.size());
    for (const PendingJob& j : in.queue)
      jobs.push_back(Job{insert_bucket(n_hi, j.nodes), insert_bucket(d_hi, j.estimate),
                         query_bucket(n_hi, j.nodes), query_bucket(d_hi, j.estimate),
                         j.begin <= in.now});
  }

 private:
  // The largest value of each bucket, ascending.
  template <typename T>
  static std::vector<T> axis(std::vector<T>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (v.size() <= kAxis) return v;
    std::vector<T> hi;
    for (std::size_t b = 1; b <= kAxis; ++b) hi.push_back(v[b * v.size() / kAxis - 1]);
    return hi;
  }
  template <typename T>
  static std::uint32_t insert_bucket(const std::vector<T>& hi, T x) {
    return static_cast<std::uint32_t>(std::lower_bound(hi.begin(), hi.end(), x) - hi.begin()) + 1;
  }
  template <typename T>
  static std::uint32_t query_bucket(const std::vector<T>& hi, T x) {
    return static_cast<std::uint32_t>(std::upper_bound(hi.begin(), hi.end(), x) - hi.begin());
  }
};

class StartBound {
 public:
  StartBound(const BoundAxes& ax, Time now)
      : ax_(ax), now_(now), tree_(ax.n_buckets * ax.d_buckets, kNone) {}

  // A lower bound of the earliest fit of queue[i] (now if nothing is known).
  Time bound(std::size_t i) const {
    const BoundAxes::Job& j = ax_.jobs[i];
    if (!j.takes_part) return now_;
    Time best = kNone;
    for (std::size_t a = j.query_n; a > 0; a -= a & (~a + 1))
      for (std::size_t b = j.query_d; b > 0; b -= b & (~b + 1))
        best = std::max(best, tree_[(a - 1) * ax_.d_buckets + (b - 1)]);
    return best == kNone ? now_ : best;
  }

  // queue[i] was planned at `start` (kNever: never).
  void record(std::size_t i, Time start) {
    const BoundAxes::Job& j = ax_.jobs[i];
    if (!j.takes_part) return;
    for (std::size_t a = j.insert_n; a <= ax_.n_buckets; a += a & (~a + 1))
      for (std::size_t b = j.insert_d; b <= ax_.d_buckets; b += b & (~b + 1)) {
        Time& t = tree_[(a - 1) * ax_.d_buckets + (b - 1)];
        t = std::max(t, start);
      }
  }

 private:
  static constexpr Time kNone = -1;
  const BoundAxes& ax_;
  Time now_;
  std::vector<Time> tree_;  // n buckets x d buckets, prefix maxima
};

// Conservative backfilling of the whole queue into p.
template <typename P>
Status conservative_pass(const char* where, P& p, Spans spans, const LocalPlanInput& in,
                         const BoundAxes& ax, std::vector<PlannedJob>& out) {
  out.assign(in.queue.size(), PlannedJob{});
  StartBound lb(ax, in.now);
  for (std::size_t i = 0; i < in.queue.size(); ++i) {
    if (auto st = plan_one(where, p, spans, in.now, in.queue[i], out[i], Placement::kReserved,
                           lb.bound(i));
        !st)
      return st;
    lb.record(i, out[i].start);
  }
  return {};
}

// Does j start now in p?  Then take its nodes from now.
Result<bool> start_now(const char* where, Profile& p, Spans spans, Time now, const PendingJob& j,
                       PlannedJob& out) {
  if (j.begin > now) return false;
  auto m = p.min_over(now, j.estimate);
  if (!m) return internal(where, m.error());
  if (m.value() < j.nodes) return false;
  auto id = take(p, spans, now, j.estimate, j.nodes);
  if (!id) return internal(where, id.error());
  out = PlannedJob{j.id, j.nodes, now, sat_add(now, j.estimate), Placement::kReserved, id.value()};
  return true;
}

// EASY into p: the jobs that start now and the head's reservation; the
// other jobs are marked kEstimated (start unknown yet).  Returns the head.
Result<std::size_t> easy_pass(const char* where, Profile& p, Spans spans, const LocalPlanInput& in,
                              std::vector<PlannedJob>& out) {
  out.assign(in.queue.size(), PlannedJob{});
  std::size_t head = kNoHead;
  for (std::size_t i = 0; i < in.queue.size(); ++i) {
    const PendingJob& j = in.queue[i];
    auto now = start_now(where, p, spans, in.now, j, out[i]);
    if (!now) return now.error();
    if (now.value()) continue;
    if (head == kNoHead) {
      if (auto st = plan_one(where, p, spans, in.now, j, out[i], Placement::kReserved); !st)
        return st.error();
      if (out[i].placement == Placement::kReserved) head = i;
      continue;
    }
    out[i] = PlannedJob{j.id, j.nodes, kNever, kNever, Placement::kEstimated, kNoSpan};
  }
  return head;
}

// The estimates of EASY's kEstimated jobs: conservative, in queue order, on
// a copy of the committed profile.
Status easy_estimates(const char* where, const Profile& committed, const LocalPlanInput& in,
                      std::vector<PlannedJob>& out) {
  Profile est = committed;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].placement != Placement::kEstimated) continue;
    // Spans of the copy, not of the plan's profile: none recorded.
    if (auto st = plan_one(where, est, Spans::kUntracked, in.now, in.queue[i], out[i],
                           Placement::kEstimated);
        !st)
      return st;
  }
  return {};
}

// Conservative pass into p = base + placeholder, reusing the reference plan
// `ref` (the same queue planned on the base alone) while it stays valid: as
// long as every earlier job kept its start, p has pointwise no more free
// than the reference had, so no earlier start can fit and job i keeps its
// reference start exactly when that window still fits (an O(log P) check
// instead of a search).  After the first job that moves, plain searches.
template <typename P>
Status conservative_pass_from(const char* where, P& p, Spans spans, const LocalPlanInput& in,
                              const BoundAxes& ax, const std::vector<PlannedJob>& ref,
                              std::vector<PlannedJob>& out) {
  out.assign(in.queue.size(), PlannedJob{});
  bool same = true;
  StartBound lb(ax, in.now);
  for (std::size_t i = 0; i < in.queue.size(); ++i) {
    const PendingJob& j = in.queue[i];
    if (same) {
      const PlannedJob& r = ref[i];
      if (r.placement == Placement::kNever) {
        out[i] = r;
        lb.record(i, kNever);
        continue;
      }
      auto m = p.min_over(r.start, j.estimate);
      if (!m) return internal(where, m.error());
      if (m.value() >= j.nodes) {
        auto id = take(p, spans, r.start, j.estimate, j.nodes);
        if (!id) return internal(where, id.error());
        out[i] = PlannedJob{j.id, j.nodes, r.start, r.end, Placement::kReserved, id.value()};
        lb.record(i, r.start);
        continue;
      }
      same = false;
    }
    if (auto st = plan_one(where, p, spans, in.now, j, out[i], Placement::kReserved, lb.bound(i));
        !st)
      return st;
    lb.record(i, out[i].start);
  }
  return {};
}

// Plans the queue into p (which holds the base and maybe a placeholder).
// `ref`, when given, is the conservative plan of the same queue on the base
// alone (see conservative_pass_from).  `ax`, when given, are the queue's
// BoundAxes (made here otherwise).
Status plan_into(const char* where, Profile& p, Spans spans, const LocalPlanInput& in,
                 Backfill policy, std::vector<PlannedJob>& out, std::size_t& head,
                 const std::vector<PlannedJob>* ref = nullptr, const BoundAxes* ax = nullptr) {
  head = kNoHead;
  if (policy == Backfill::kConservative) {
    std::optional<BoundAxes> own;
    if (ax == nullptr) ax = &own.emplace(in);
    return ref ? conservative_pass_from(where, p, spans, in, *ax, *ref, out)
               : conservative_pass(where, p, spans, in, *ax, out);
  }
  auto h = easy_pass(where, p, spans, in, out);
  if (!h) return h.error();
  head = h.value();
  return easy_estimates(where, p, in, out);
}

Result<LocalPlan> plan_checked(const char* where, const LocalPlanInput& in, Backfill policy) {
  if (auto e = check_input(where, in)) return *e;
  auto base = make_base(where, in);
  if (!base) return base.error();
  LocalPlan plan{policy, in.now, in.capacity, {}, kNoHead, std::move(base).value()};
  if (auto st = plan_into(where, plan.profile, Spans::kTracked, in, policy, plan.jobs, plan.head);
      !st)
    return st.error();
  return plan;
}

// ===========================================================================
// Fitness metrics (eq. 9.6, 9.7)

// The constant part of the metrics (running jobs) and the counted jobs.
struct Counted {
  std::size_t n = 0;                // N
  Time running_max = -1;            // max completion over counted running jobs
  long double running_sum = 0;      // their response times
  std::vector<std::size_t> queued;  // indices of counted queued jobs
};

struct Metrics {
  double cmax = 0.0;
  double cavg = 0.0;
};

Metrics metrics_of(const LocalPlanInput& in, const Counted& c, const std::vector<PlannedJob>& jobs,
                   Time time_zero) {
  if (c.n == 0) return {};
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Time cmax = c.running_max;
  long double sum = c.running_sum;
  for (std::size_t i : c.queued) {
    const PlannedJob& j = jobs[i];
    if (j.start == kNever || j.end == kForever) return {kInf, kInf};
    cmax = std::max(cmax, j.end);
    sum += static_cast<long double>(j.end - in.queue[i].submit);
  }
  return {static_cast<double>(cmax - time_zero),
          static_cast<double>(sum / static_cast<long double>(c.n))};
}

double ratio(double best, double value) { return std::isinf(value) ? 0.0 : best / value; }

}  // namespace

// ===========================================================================
// Names

const char* backfill_name(Backfill policy) noexcept {
  switch (policy) {
    case Backfill::kConservative:
      return "conservative";
    case Backfill::kEasy:
      return "easy";
  }
  return "unknown";
}

const char* placement_name(Placement placement) noexcept {
  switch (placement) {
    case Placement::kReserved:
      return "reserved";
    case Placement::kEstimated:
      return "estimated";
    case Placement::kNever:
      return "never";
  }
  return "unknown";
}

const char* fit_verdict_name(FitVerdict verdict) noexcept {
  switch (verdict) {
    case FitVerdict::kPlaced:
      return "placed";
    case FitVerdict::kCollision:
      return "collision";
    case FitVerdict::kHeadDelayed:
      return "head-delayed";
  }
  return "unknown";
}

// ===========================================================================
// One-shot plans

Result<Profile> build_base_profile(const LocalPlanInput& input) {
  static const char* kWhere = "build_base_profile";
  if (auto e = check_input(kWhere, input)) return *e;
  return make_base(kWhere, input);
}

Result<LocalPlan> plan_conservative(const LocalPlanInput& input) {
  return plan_checked("plan_conservative", input, Backfill::kConservative);
}

Result<LocalPlan> plan_easy(const LocalPlanInput& input) {
  return plan_checked("plan_easy", input, Backfill::kEasy);
}

Result<LocalPlan> plan_local(const LocalPlanInput& input, Backfill policy) {
  return plan_checked("plan_local", input, policy);
}

namespace {

// The P^JOB start on a finished plan: `profile` holds the base and what the
// plan commits (modified: EASY's estimates are added).  Arguments checked.
Result<Time> job_start_on(const char* where, Profile& profile, const std::vector<PlannedJob>& jobs,
                          const LocalPlanInput& input, Duration duration, Amount nodes,
                          Time earliest, Backfill policy) {
  Time from = std::max(input.now, earliest);
  if (policy == Backfill::kEasy) {
    // Behind every job: it starts now if it fits beside what EASY commits,
    // otherwise it is estimated after the other estimates.
    if (from == input.now) {
      auto m = profile.min_over(input.now, duration);
      if (!m) return internal(where, m.error());
      if (m.value() >= nodes) return input.now;
    }
    for (const PlannedJob& j : jobs) {
      if (j.placement != Placement::kEstimated) continue;
      auto id =
          profile.add_span(j.start, span_duration(j.start, j.end), j.nodes, Admission::kMustFit);
      if (!id) return internal(where, id.error());
    }
  }
  auto s = profile.earliest_fit(from, duration, nodes);
  if (!s) return internal(where, s.error());
  return s.value();
}

std::optional<Error> check_job_reference(const char* where, const LocalPlanInput& input,
                                         Duration duration, Amount nodes, Time earliest) {
  if (duration <= 0)
    return make_error(Errc::kInvalidArgument, where,
                      "duration must be > 0 s (got " + std::to_string(duration) + ")");
  if (earliest < 0)
    return make_error(Errc::kInvalidArgument, where,
                      "earliest must be >= 0 (got " + std::to_string(earliest) + ")");
  if (earliest >= kForever)
    return make_error(Errc::kOutOfRange, where, "earliest must be before kForever");
  return check_nodes(where, "the job", nodes, input.capacity, "needs");
}

}  // namespace

Result<Time> placeholder_job_start(const LocalPlanInput& input, Duration duration, Amount nodes,
                                   Time earliest, Backfill policy) {
  static const char* kWhere = "placeholder_job_start";
  if (duration <= 0)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "duration must be > 0 s (got " + std::to_string(duration) + ")");
  if (earliest < 0)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "earliest must be >= 0 (got " + std::to_string(earliest) + ")");
  if (earliest >= kForever)
    return make_error(Errc::kOutOfRange, kWhere, "earliest must be before kForever");
  auto plan = plan_checked(kWhere, input, policy);
  if (!plan) return plan.error();
  if (auto e = check_nodes(kWhere, "the job", nodes, input.capacity, "needs")) return *e;
  LocalPlan& p = plan.value();
  return job_start_on(kWhere, p.profile, p.jobs, input, duration, nodes, earliest, policy);
}

// ===========================================================================
// What-if delays

Result<DelayReport> delay_caused_by(const LocalPlanInput& input, const Placeholder& extra,
                                    Backfill policy) {
  static const char* kWhere = "delay_caused_by";
  if (auto e = check_input(kWhere, input)) return *e;
  if (auto e = check_placeholder(kWhere, "the placeholder", extra, input)) return *e;
  auto made = make_base(kWhere, input);
  if (!made) return made.error();
  const Profile& base = made.value();
  DelayReport report;
  auto free = base.min_over(extra.start, extra.duration);
  if (!free) return internal(kWhere, free.error());
  if (free.value() < extra.nodes) {
    report.collision = true;
    return report;
  }
  std::vector<PlannedJob> without, with;
  std::size_t head = kNoHead;
  std::optional<BoundAxes> axes;
  if (policy == Backfill::kConservative) axes.emplace(input);
  const BoundAxes* ax = axes ? &*axes : nullptr;
  {
    Profile p = base;
    if (auto st = plan_into(kWhere, p, Spans::kUntracked, input, policy, without, head, nullptr,
                            ax);
        !st)
      return st.error();
  }
  {
    Profile p = base;
    auto id = p.add_span(extra.start, extra.duration, extra.nodes, Admission::kMustFit);
    if (!id) return internal(kWhere, id.error());
    if (auto st =
            plan_into(kWhere, p, Spans::kUntracked, input, policy, with, head, &without, ax);
        !st)
      return st.error();
  }
  report.jobs.reserve(input.queue.size());
  for (std::size_t i = 0; i < input.queue.size(); ++i) {
    JobDelay d{input.queue[i].id, input.queue[i].nodes, without[i].start, with[i].start,
               start_delay(without[i].start, with[i].start)};
    if (d.delay > 0) {
      ++report.delayed_jobs;
      report.total_delay = sat_sum(report.total_delay, d.delay);
      report.max_delay = std::max(report.max_delay, d.delay);
      report.node_seconds = sat_sum(report.node_seconds, sat_mul(d.nodes, d.delay));
    } else if (d.delay < 0) {
      ++report.advanced_jobs;
    }
    report.jobs.push_back(d);
  }
  if (!report.jobs.empty()) report.head_delay = report.jobs.front().delay;
  return report;
}

// ===========================================================================
// What-if fitness (thesis §9.4.2)

// What whatif_fitness computes once per input and policy (FitnessReference).
struct FitnessReference::Impl {
  LocalPlanInput owned;               // create(): the input, kept here
  const LocalPlanInput* in = nullptr;  // &owned, or the caller's input
  Backfill policy = Backfill::kConservative;
  std::optional<Profile> base;  // running jobs and reservations
  // Conservative plans on a base of at most FlatProfile::kMaxBase points
  // run on FlatProfiles (same answers, faster there): the base and the
  // profile after P^ORG (for the P^JOB start).  Otherwise `done` is the
  // Profile after P^ORG.
  std::optional<FlatProfile> flat, flat_done;
  std::optional<Profile> done;
  std::optional<BoundAxes> axes;  // conservative only
  std::vector<PlannedJob> ref;    // P^ORG
  Counted counted;
  // The slots' metrics by (start, duration, nodes, time_zero); only for
  // references made by create().
  struct Memo {
    double cmax, cavg;
    Duration head_delay;
  };
  bool memo_on = false;
  mutable std::mutex mu;
  mutable std::map<std::tuple<Time, Duration, Amount, Time>, Memo> memo;  // mu
};

namespace {

std::optional<Error> check_fitness_options(const char* where, const LocalPlanInput& input,
                                           const std::vector<Placeholder>& slots,
                                           const FitnessOptions& options) {
  const double w_max = options.weight_cmax, w_avg = options.weight_cavg;
  if (!std::isfinite(w_max) || !std::isfinite(w_avg) || w_max < 0 || w_avg < 0 ||
      std::fabs(w_max + w_avg - 1.0) > 1e-9)
    return make_error(Errc::kInvalidArgument, where,
                      "weights must be >= 0 and sum to 1 (got weight_cmax " +
                          std::to_string(w_max) + ", weight_cavg " + std::to_string(w_avg) + ")");
  if (options.max_head_delay < 0)
    return make_error(
        Errc::kInvalidArgument, where,
        "max_head_delay must be >= 0 (got " + std::to_string(options.max_head_delay) + ")");
  const Time time_zero = options.time_zero.value_or(input.now);
  if (time_zero < 0 || time_zero > input.now)
    return make_error(Errc::kInvalidArgument, where,
                      "time_zero must be in [0, now = " + std::to_string(input.now) + "] (got " +
                          std::to_string(time_zero) + ")");
  for (std::size_t k = 0; k < slots.size(); ++k)
    if (auto e = check_placeholder(where, "slots[" + std::to_string(k) + "]", slots[k], input))
      return e;
  if (const auto& jr = options.job_reference)
    if (auto e = check_job_reference(where, input, jr->duration, jr->nodes, jr->earliest))
      return e;
  return std::nullopt;
}

// Fills r (r.in set, input checked): base, P^ORG, the counted jobs.
Status prepare_fitness(const char* where, FitnessReference::Impl& r) {
  const LocalPlanInput& input = *r.in;
  auto made = make_base(where, input);
  if (!made) return made.error();
  r.base.emplace(std::move(made).value());
  const Profile& base = *r.base;
  if (r.policy == Backfill::kConservative) r.axes.emplace(input);
  const BoundAxes* ax = r.axes ? &*r.axes : nullptr;
  if (r.policy == Backfill::kConservative && base.point_count() <= FlatProfile::kMaxBase) {
    r.flat.emplace(base);
    if (!r.flat->ok()) r.flat.reset();
  }
  if (r.flat) {
    r.flat_done.emplace(*r.flat);
    if (auto st = conservative_pass(where, *r.flat_done, Spans::kUntracked, input, *ax, r.ref); !st)
      return st;
  } else {
    r.done.emplace(base);
    std::size_t head = kNoHead;
    if (auto st =
            plan_into(where, *r.done, Spans::kUntracked, input, r.policy, r.ref, head, nullptr, ax);
        !st)
      return st;
  }
  Counted& counted = r.counted;
  for (const RunningJob& run : input.running) {
    Time end = effective_end(run, input.now);
    if (end == kForever) continue;
    ++counted.n;
    counted.running_max = std::max(counted.running_max, end);
    counted.running_sum += static_cast<long double>(end - run.submit);
  }
  for (std::size_t i = 0; i < r.ref.size(); ++i) {
    if (r.ref[i].start == kNever || r.ref[i].end == kForever) continue;
    ++counted.n;
    counted.queued.push_back(i);
  }
  return {};
}

// The fitness of `slots` on a prepared reference (options checked).
Result<FitnessReport> fitness_on(const char* where, const FitnessReference::Impl& r,
                                 const std::vector<Placeholder>& slots,
                                 const FitnessOptions& options) {
  const LocalPlanInput& input = *r.in;
  const Profile& base = *r.base;
  const std::vector<PlannedJob>& ref = r.ref;
  const Time time_zero = options.time_zero.value_or(input.now);
  const double w_max = options.weight_cmax, w_avg = options.weight_cavg;
  const BoundAxes* ax = r.axes ? &*r.axes : nullptr;

  Time job_start = kNever;
  if (const auto& jr = options.job_reference) {
    if (r.flat_done) {  // job_start_on for a conservative plan
      auto js =
          r.flat_done->earliest_fit(std::max(input.now, jr->earliest), jr->duration, jr->nodes);
      if (!js) return internal(where, js.error());
      job_start = js.value();
    } else {
      Profile p = *r.done;  // job_start_on adds EASY's estimates to it
      auto js = job_start_on(where, p, ref, input, jr->duration, jr->nodes, jr->earliest, r.policy);
      if (!js) return js.error();
      job_start = js.value();
    }
  }

  FitnessReport report;
  report.job_start = job_start;
  report.jobs_counted = r.counted.n;
  const Metrics m_ref = metrics_of(input, r.counted, ref, time_zero);
  report.cmax_ref = report.cmax_best = m_ref.cmax;
  report.cavg_ref = report.cavg_best = m_ref.cavg;

  // P^RSV/b for every slot.
  report.slots.reserve(slots.size());
  std::vector<PlannedJob> with;
  std::size_t head = kNoHead;
  for (const Placeholder& slot : slots) {
    SlotFitness f;
    f.slot = slot;
    auto free = base.min_over(slot.start, slot.duration);
    if (!free) return internal(where, free.error());
    if (free.value() < slot.nodes) {
      f.verdict = FitVerdict::kCollision;
      report.slots.push_back(f);
      continue;
    }
    const auto key = std::make_tuple(slot.start, slot.duration, slot.nodes, time_zero);
    bool known = false;
    if (r.memo_on) {
      std::lock_guard<std::mutex> hold(r.mu);
      if (auto it = r.memo.find(key); it != r.memo.end()) {
        f.cmax = it->second.cmax;
        f.cavg = it->second.cavg;
        f.head_delay = it->second.head_delay;
        known = true;
      }
    }
    if (!known) {
      if (r.flat) {
        FlatProfile p = *r.flat;
        p.take_unchecked(slot.start, slot.duration, slot.nodes);
        if (auto st = conservative_pass_from(where, p, Spans::kUntracked, input, *ax, ref, with);
            !st)
          return st.error();
      } else {
        Profile p = base;
        auto id = p.add_span(slot.start, slot.duration, slot.nodes, Admission::kMustFit);
        if (!id) return internal(where, id.error());
        if (auto st =
                plan_into(where, p, Spans::kUntracked, input, r.policy, with, head, &ref, ax);
            !st)
          return st.error();
      }
      if (!ref.empty()) f.head_delay = start_delay(ref.front().start, with.front().start);
      const Metrics m = metrics_of(input, r.counted, with, time_zero);
      f.cmax = m.cmax;
      f.cavg = m.cavg;
      if (r.memo_on) {
        std::lock_guard<std::mutex> hold(r.mu);
        if (r.memo.size() < FitnessReference::kMemoSlots)
          r.memo.emplace(key, FitnessReference::Impl::Memo{f.cmax, f.cavg, f.head_delay});
      }
    }
    bool head_ok = options.max_head_delay == kForever || f.head_delay <= options.max_head_delay;
    f.verdict = head_ok ? FitVerdict::kPlaced : FitVerdict::kHeadDelayed;
    if (head_ok) {
      report.cmax_best = std::min(report.cmax_best, f.cmax);
      report.cavg_best = std::min(report.cavg_best, f.cavg);
    }
    report.slots.push_back(f);
  }

  // Eq. 9.8 once C* is known.
  for (SlotFitness& f : report.slots) {
    if (f.verdict != FitVerdict::kPlaced) continue;
    if (r.counted.n == 0) {
      f.fit = 1.0;
      continue;
    }
    double fit = w_max * ratio(report.cmax_best, f.cmax) + w_avg * ratio(report.cavg_best, f.cavg);
    f.fit = std::clamp(fit, 0.0, 1.0);
  }
  return report;
}

}  // namespace

Result<FitnessReport> whatif_fitness(const LocalPlanInput& input,
                                     const std::vector<Placeholder>& slots,
                                     const FitnessOptions& options) {
  static const char* kWhere = "whatif_fitness";
  if (auto e = check_input(kWhere, input)) return *e;
  if (auto e = check_fitness_options(kWhere, input, slots, options)) return *e;
  FitnessReference::Impl r;
  r.in = &input;
  r.policy = options.policy;
  if (auto st = prepare_fitness(kWhere, r); !st) return st.error();
  return fitness_on(kWhere, r, slots, options);
}

Result<FitnessReference> FitnessReference::create(LocalPlanInput input, Backfill policy) {
  static const char* kWhere = "whatif_fitness";
  if (auto e = check_input(kWhere, input)) return *e;
  auto r = std::make_shared<Impl>();
  r->owned = std::move(input);
  r->in = &r->owned;
  r->policy = policy;
  r->memo_on = true;
  if (auto st = prepare_fitness(kWhere, *r); !st) return st.error();
  return FitnessReference(std::move(r));
}

const LocalPlanInput& FitnessReference::input() const noexcept { return *impl_->in; }

Backfill FitnessReference::policy() const noexcept { return impl_->policy; }

std::size_t FitnessReference::memo_size() const {
  std::lock_guard<std::mutex> hold(impl_->mu);
  return impl_->memo.size();
}

bool FitnessReference::remembers(const std::vector<Placeholder>& slots,
                                 const FitnessOptions& options) const {
  const Impl& r = *impl_;
  if (!r.memo_on || options.policy != r.policy) return false;
  if (check_fitness_options("FitnessReference::remembers", *r.in, slots, options)) return false;
  if (options.job_reference && !r.flat_done) return false;  // EASY plans P^JOB
  const Time time_zero = options.time_zero.value_or(r.in->now);
  std::lock_guard<std::mutex> hold(r.mu);
  for (const Placeholder& slot : slots) {
    auto free = r.base->min_over(slot.start, slot.duration);
    if (!free) return false;
    if (free.value() < slot.nodes) continue;  // a collision: nothing to plan
    if (r.memo.find(std::make_tuple(slot.start, slot.duration, slot.nodes, time_zero)) ==
        r.memo.end())
      return false;
  }
  return true;
}

Result<FitnessReport> whatif_fitness(const FitnessReference& reference,
                                     const std::vector<Placeholder>& slots,
                                     const FitnessOptions& options) {
  static const char* kWhere = "whatif_fitness";
  const FitnessReference::Impl& r = *reference.impl_;
  if (options.policy != r.policy)
    return make_error(Errc::kInvalidArgument, kWhere,
                      std::string("options.policy is ") + backfill_name(options.policy) +
                          ", the reference was planned " + backfill_name(r.policy));
  if (auto e = check_fitness_options(kWhere, *r.in, slots, options)) return *e;
  return fitness_on(kWhere, r, slots, options);
}

// ===========================================================================
// LocalScheduler

Result<LocalScheduler> LocalScheduler::create(Amount capacity, Time now, Backfill policy) {
  static const char* kWhere = "LocalScheduler::create";
  if (auto e = check_capacity_now(kWhere, capacity, now)) return *e;
  auto p = Profile::create(now, capacity);
  if (!p) return internal(kWhere, p.error());
  return LocalScheduler(capacity, now, policy, std::move(p).value());
}

Result<SpanId> LocalScheduler::job_span(std::uint64_t id) const {
  if (auto it = running_.find(id); it != running_.end()) return it->second.span;
  if (auto it = queued_.find(id); it != queued_.end()) return queue_.at(it->second).span;
  return make_error(Errc::kNotFound, "LocalScheduler::job_span",
                    "no running or queued job " + std::to_string(id));
}

void LocalScheduler::mark(Dirty level) noexcept {
  if (static_cast<int>(level) > static_cast<int>(dirty_)) dirty_ = level;
}

Status LocalScheduler::check_new_job_id(const char* where, std::uint64_t id) const {
  if (running_.count(id))
    return make_error(Errc::kInvalidArgument, where,
                      "job " + std::to_string(id) + " is already running");
  if (queued_.count(id))
    return make_error(Errc::kInvalidArgument, where,
                      "job " + std::to_string(id) + " is already queued");
  return {};
}

Time LocalScheduler::next_decision_time() const noexcept {
  if (dirty_ != Dirty::kNone) return now_;
  Time t = starts_.empty() ? kNever : starts_.begin()->first;
  if (policy_ == Backfill::kEasy) {
    t = std::min(t, easy_next_);
    const std::pair<Time, std::uint64_t> after{now_, std::numeric_limits<std::uint64_t>::max()};
    if (auto it = running_ends_.upper_bound(after); it != running_ends_.end())
      t = std::min(t, it->first);
    if (auto it = reservation_ends_.upper_bound(after); it != reservation_ends_.end())
      t = std::min(t, it->first);
  }
  return t;
}

Status LocalScheduler::advance_to(Time t) {
  static const char* kWhere = "LocalScheduler::advance_to";
  if (t < now_)
    return make_error(Errc::kOutOfRange, kWhere,
                      "t " + std::to_string(t) + " is before now (" + std::to_string(now_) + ")");
  if (t >= kForever) return make_error(Errc::kOutOfRange, kWhere, "t must be before kForever");
  if (t == now_) return {};
  if (auto st = replan(); !st) return st;
  if (!starts_.empty() && starts_.begin()->first < t) {
    const Queued& q = queue_.at(starts_.begin()->second);
    return make_error(Errc::kOutOfRange, kWhere,
                      "t " + std::to_string(t) + " passes the planned start of job " +
                          std::to_string(q.job.id) + " at " + std::to_string(q.start) +
                          ": call schedule() at that time first");
  }
  if (Time next = next_decision_time(); next < t)
    return make_error(Errc::kOutOfRange, kWhere,
                      "t " + std::to_string(t) + " passes the next EASY decision at " +
                          std::to_string(next) + ": call schedule() at that time first");
  if (!running_ends_.empty() && running_ends_.begin()->first < t)
    return make_error(Errc::kOutOfRange, kWhere,
                      "t " + std::to_string(t) + " passes the expected end of running job " +
                          std::to_string(running_ends_.begin()->second) + " at " +
                          std::to_string(running_ends_.begin()->first) +
                          ": report its end with finish() first");
  now_ = t;
  while (!reservation_ends_.empty() && reservation_ends_.begin()->first <= now_) {
    std::uint64_t id = reservation_ends_.begin()->second;
    const Reservation& r = reservations_.at(id);
    if (auto st = profile_.remove_span(r.span); !st) return internal(kWhere, st.error());
    if (auto st = base_.remove_span(r.base_span); !st) return internal(kWhere, st.error());
    reservations_.erase(id);
    reservation_ends_.erase(reservation_ends_.begin());
  }
  return {};
}

Status LocalScheduler::add_running(const RunningJob& job) {
  static const char* kWhere = "LocalScheduler::add_running";
  std::string who = "job " + std::to_string(job.id);
  if (auto st = check_new_job_id(kWhere, job.id); !st) return st;
  if (auto e = check_running(kWhere, [&] { return who; }, job, capacity_, now_)) return *e;
  if (job.expected_end <= now_)
    return make_error(Errc::kOutOfRange, kWhere,
                      who + ": expected end " + std::to_string(job.expected_end) +
                          " is not after now (" + std::to_string(now_) + "): it is over");
  Time s = std::max(job.start, profile_.origin());
  Duration d = span_duration(s, job.expected_end);
  auto span = profile_.add_span(s, d, job.nodes, Admission::kForce);
  if (!span) return make_error(span.error().code, kWhere, span.error().message);
  auto base_span = base_.add_span(s, d, job.nodes, Admission::kForce);
  if (!base_span) {
    (void)profile_.remove_span(span.value());
    return make_error(base_span.error().code, kWhere, base_span.error().message);
  }
  running_.emplace(
      job.id, Running{job.nodes, job.start, job.expected_end, span.value(), base_span.value()});
  running_ends_.emplace(job.expected_end, job.id);
  mark(Dirty::kRebuild);
  return {};
}

Status LocalScheduler::finish(std::uint64_t id) {
  static const char* kWhere = "LocalScheduler::finish";
  auto it = running_.find(id);
  if (it == running_.end())
    return make_error(Errc::kNotFound, kWhere, "no running job " + std::to_string(id));
  const Running& r = it->second;
  if (auto st = profile_.remove_span(r.span); !st) return internal(kWhere, st.error());
  if (auto st = base_.remove_span(r.base_span); !st) return internal(kWhere, st.error());
  if (r.end > now_) mark(Dirty::kCompress);
  running_ends_.erase({r.end, id});
  running_.erase(it);
  return {};
}

Status LocalScheduler::shrink_running(std::uint64_t id, Time new_end, Amount new_nodes) {
  static const char* kWhere = "LocalScheduler::shrink_running";
  auto it = running_.find(id);
  if (it == running_.end())
    return make_error(Errc::kNotFound, kWhere, "no running job " + std::to_string(id));
  Running& r = it->second;
  if (new_end <= now_ || new_end > r.end)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "job " + std::to_string(id) + ": new end " + fmt_time(new_end) +
                          " must be in (now = " + std::to_string(now_) + ", " + fmt_time(r.end) +
                          "] (use finish() for a job that has ended)");
  if (new_nodes < 1 || new_nodes > r.nodes)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "job " + std::to_string(id) + ": new node count must be in [1, " +
                          std::to_string(r.nodes) + "] (got " + std::to_string(new_nodes) + ")");
  if (new_end == r.end && new_nodes == r.nodes) return {};
  if (auto st = profile_.shrink_span(r.span, new_end, new_nodes); !st)
    return internal(kWhere, st.error());
  if (auto st = base_.shrink_span(r.base_span, new_end, new_nodes); !st)
    return internal(kWhere, st.error());
  running_ends_.erase({r.end, id});
  running_ends_.emplace(new_end, id);
  r.end = new_end;
  r.nodes = new_nodes;
  mark(Dirty::kCompress);
  return {};
}

Status LocalScheduler::add_reservation(const FixedSpan& reservation) {
  static const char* kWhere = "LocalScheduler::add_reservation";
  const FixedSpan& r = reservation;
  std::string who = "reservation " + std::to_string(r.id);
  if (reservations_.count(r.id))
    return make_error(Errc::kInvalidArgument, kWhere, who + " already exists");
  if (auto e = check_fixed(kWhere, who, r, capacity_)) return *e;
  if (r.end <= now_)
    return make_error(Errc::kOutOfRange, kWhere,
                      who + ": ends at " + std::to_string(r.end) + ", not after now (" +
                          std::to_string(now_) + ")");
  Time s = std::max(r.start, now_);
  Duration d = span_duration(s, r.end);
  auto base_span = base_.add_span(s, d, r.nodes, Admission::kMustFit);
  if (!base_span) {
    if (base_span.error().code != Errc::kNoFit)
      return make_error(base_span.error().code, kWhere, base_span.error().message);
    return make_error(
        Errc::kNoFit, kWhere,
        who + " collides with running jobs or reservations: " + base_span.error().message);
  }
  // Conservative: a reservation in capacity the plan leaves free moves no
  // queued job, so the plan stays as it is (a rebuild in queue order would
  // undo compressions and could delay jobs); only one that takes planned
  // capacity makes the queue re-plan around it.  EASY decides afresh at
  // every schedule() anyway.
  bool free_in_plan = false;
  if (policy_ == Backfill::kConservative) {
    auto min = profile_.min_over(s, d);
    if (!min) {
      (void)base_.remove_span(base_span.value());
      return make_error(min.error().code, kWhere, min.error().message);
    }
    free_in_plan = min.value() >= r.nodes;
  }
  auto span =
      profile_.add_span(s, d, r.nodes, free_in_plan ? Admission::kMustFit : Admission::kForce);
  if (!span) {
    (void)base_.remove_span(base_span.value());
    return make_error(span.error().code, kWhere, span.error().message);
  }
  reservations_.emplace(r.id,
                        Reservation{r.start, r.end, r.nodes, span.value(), base_span.value()});
  reservation_ends_.emplace(r.end, r.id);
  if (!free_in_plan) mark(Dirty::kRebuild);
  return {};
}

Status LocalScheduler::remove_reservation(std::uint64_t id) {
  static const char* kWhere = "LocalScheduler::remove_reservation";
  auto it = reservations_.find(id);
  if (it == reservations_.end())
    return make_error(Errc::kNotFound, kWhere, "no reservation " + std::to_string(id));
  if (auto st = profile_.remove_span(it->second.span); !st) return internal(kWhere, st.error());
  if (auto st = base_.remove_span(it->second.base_span); !st) return internal(kWhere, st.error());
  reservation_ends_.erase({it->second.end, id});
  reservations_.erase(it);
  mark(Dirty::kCompress);
  return {};
}

Status LocalScheduler::submit(const PendingJob& job) {
  static const char* kWhere = "LocalScheduler::submit";
  if (auto st = check_new_job_id(kWhere, job.id); !st) return st;
  auto who = [&] { return "job " + std::to_string(job.id); };
  if (auto e = check_pending(kWhere, who, job, capacity_, now_)) return *e;
  std::uint64_t seq = next_seq_++;
  queue_.emplace(seq, Queued{job, kNoSpan, kNever});
  queued_.emplace(job.id, seq);
  if (policy_ == Backfill::kConservative) unplaced_.insert(seq);
  mark(Dirty::kPlaceNew);
  return {};
}

Status LocalScheduler::cancel(std::uint64_t id) {
  static const char* kWhere = "LocalScheduler::cancel";
  auto it = queued_.find(id);
  if (it == queued_.end())
    return make_error(Errc::kNotFound, kWhere, "no queued job " + std::to_string(id));
  std::uint64_t seq = it->second;
  Queued& q = queue_.at(seq);
  bool held = q.span != kNoSpan;
  if (auto st = unplace(seq, q); !st) return internal(kWhere, st.error());
  unplaced_.erase(seq);
  queue_.erase(seq);
  queued_.erase(it);
  if (held) mark(Dirty::kCompress);  // a job holding nothing frees nothing
  return {};
}

// Takes the job's nodes at its earliest fit; a job that can never start
// stays unplaced.
Status LocalScheduler::place(std::uint64_t seq, Queued& q) {
  auto s = profile_.earliest_fit(eligible(q.job, now_), q.job.estimate, q.job.nodes);
  if (!s) return s.error();
  if (s.value() == kNever) return {};
  auto id = profile_.add_span(s.value(), q.job.estimate, q.job.nodes, Admission::kMustFit);
  if (!id) return id.error();
  q.span = id.value();
  q.start = s.value();
  starts_.emplace(q.start, seq);
  unplaced_.erase(seq);
  return {};
}

Status LocalScheduler::unplace(std::uint64_t seq, Queued& q) {
  if (q.span == kNoSpan) return {};
  if (auto st = profile_.remove_span(q.span); !st) return st;
  starts_.erase({q.start, seq});
  q.span = kNoSpan;
  q.start = kNever;
  if (policy_ == Backfill::kConservative) unplaced_.insert(seq);
  return {};
}

Status LocalScheduler::place_unplaced() {
  std::vector<std::uint64_t> seqs(unplaced_.begin(), unplaced_.end());  // queue order
  for (std::uint64_t seq : seqs)
    if (auto st = place(seq, queue_.at(seq)); !st) return st;
  return {};
}

Status LocalScheduler::replan_conservative() {
  switch (dirty_) {
    case Dirty::kNone:
      return {};
    case Dirty::kPlaceNew:
      return place_unplaced();
    case Dirty::kCompress: {
      // In order of planned start (ties: queue order), each job moves to its
      // earliest fit; its old window is still free, so it never moves later.
      std::vector<std::pair<Time, std::uint64_t>> order(starts_.begin(), starts_.end());
      for (const auto& [start, seq] : order) {
        Queued& q = queue_.at(seq);
        if (auto st = unplace(seq, q); !st) return st;
        if (auto st = place(seq, q); !st) return st;
      }
      return place_unplaced();
    }
    case Dirty::kRebuild: {
      std::vector<std::pair<Time, std::uint64_t>> order(starts_.begin(), starts_.end());
      for (const auto& [start, seq] : order)
        if (auto st = unplace(seq, queue_.at(seq)); !st) return st;
      return place_unplaced();
    }
  }
  return {};
}

Status LocalScheduler::replan_easy() {
  std::vector<std::pair<Time, std::uint64_t>> held(starts_.begin(), starts_.end());
  for (const auto& [start, seq] : held)
    if (auto st = unplace(seq, queue_.at(seq)); !st) return st;
  bool have_head = false;
  easy_next_ = kNever;
  for (auto& [seq, q] : queue_) {
    const PendingJob& j = q.job;
    if (j.begin > now_) easy_next_ = std::min(easy_next_, j.begin);
    if (j.begin <= now_) {
      auto m = profile_.min_over(now_, j.estimate);
      if (!m) return m.error();
      if (m.value() >= j.nodes) {
        auto id = profile_.add_span(now_, j.estimate, j.nodes, Admission::kMustFit);
        if (!id) return id.error();
        q.span = id.value();
        q.start = now_;
        starts_.emplace(now_, seq);
        continue;
      }
    }
    if (!have_head) {
      if (auto st = place(seq, q); !st) return st;
      have_head = q.span != kNoSpan;
    }
  }
  return {};
}

Status LocalScheduler::replan() {
  if (policy_ == Backfill::kConservative) {
    if (auto st = replan_conservative(); !st) return internal("LocalScheduler::replan", st.error());
  } else if (dirty_ != Dirty::kNone) {
    if (auto st = replan_easy(); !st) return internal("LocalScheduler::replan", st.error());
  }
  dirty_ = Dirty::kNone;
  return {};
}

Result<std::vector<StartedJob>> LocalScheduler::schedule() {
  static const char* kWhere = "LocalScheduler::schedule";
  if (policy_ == Backfill::kEasy) mark(Dirty::kRebuild);  // EASY decides afresh
  if (auto st = replan(); !st) return st.error();
  std::vector<StartedJob> started;
  while (!starts_.empty() && starts_.begin()->first <= now_) {
    std::uint64_t seq = starts_.begin()->second;
    starts_.erase(starts_.begin());
    auto qit = queue_.find(seq);
    const PendingJob& j = qit->second.job;
    Time end = sat_add(now_, j.estimate);
    auto base_span = base_.add_span(now_, j.estimate, j.nodes, Admission::kForce);
    if (!base_span) return internal(kWhere, base_span.error());
    running_.emplace(j.id, Running{j.nodes, now_, end, qit->second.span, base_span.value()});
    running_ends_.emplace(end, j.id);
    started.push_back(StartedJob{j.id, j.nodes, now_, end});
    queued_.erase(j.id);
    queue_.erase(qit);
  }
  return started;
}

Result<LocalPlan> LocalScheduler::plan() {
  static const char* kWhere = "LocalScheduler::plan";
  if (auto st = replan(); !st) return st.error();
  LocalPlan out{policy_, now_, capacity_, {}, kNoHead, profile_};
  out.jobs.reserve(queue_.size());
  std::optional<Profile> est;  // EASY: the estimates' profile
  for (const auto& [seq, q] : queue_) {
    const PendingJob& j = q.job;
    PlannedJob p{j.id, j.nodes, kNever, kNever, Placement::kNever, kNoSpan};
    if (q.span != kNoSpan) {
      p = PlannedJob{j.id,  j.nodes, q.start, sat_add(q.start, j.estimate), Placement::kReserved,
                     q.span};
      if (policy_ == Backfill::kEasy && q.start > now_) out.head = out.jobs.size();
    } else if (policy_ == Backfill::kEasy) {
      if (!est) est.emplace(profile_);
      // A span of the copy: none recorded (p.span stays kNoSpan).
      if (auto st = plan_one(kWhere, *est, Spans::kUntracked, now_, j, p, Placement::kEstimated);
          !st)
        return st.error();
    }
    out.jobs.push_back(p);
  }
  return out;
}

}  // namespace flexco
