// SPDX-License-Identifier: GPL-2.0-or-later
// Availability profile: the tree, the profile, the node/CPU pair and the
// common-start queries.  See profile.hpp for the contract and doc/profile.md
// for the design.

#include "core/profile.hpp"

#include <algorithm>
#include <new>
#include <string>

namespace flexco {

namespace {

constexpr Amount kInfAmount = std::numeric_limits<Amount>::max();
// Keeps sums over many profiles far from overflow: 1024 * 2^52 = 2^62.
constexpr std::size_t kMaxProfiles = 1024;

// t + d for t, d >= 0, saturating at kForever.
Time sat_add(Time t, Duration d) { return d >= kForever - t ? kForever : t + d; }

std::string fmt_time(Time t) {
  return t == kForever ? std::string("forever") : std::to_string(t);
}

std::string fmt_range(Time s, Time e) {
  return "[" + fmt_time(s) + ", " + fmt_time(e) + ")";
}

Error make_error(Errc code, const char* where, const std::string& what) {
  return Error{code, std::string(where) + ": " + what};
}

// Every time argument must be >= 0.
std::optional<Error> check_nonneg_time(const char* where, const char* name,
                                       Time t) {
  if (t < 0)
    return make_error(Errc::kInvalidArgument, where,
                      std::string(name) + " must be >= 0 (got " +
                          std::to_string(t) + ")");
  return std::nullopt;
}

// A time at which the step function is read: [origin, kForever).
std::optional<Error> check_point_time(const char* where, const char* name,
                                      Time t, Time origin) {
  if (auto e = check_nonneg_time(where, name, t)) return e;
  if (t < origin)
    return make_error(Errc::kOutOfRange, where,
                      std::string(name) + " " + std::to_string(t) +
                          " is before the profile origin " +
                          std::to_string(origin));
  if (t == kForever)
    return make_error(Errc::kOutOfRange, where,
                      std::string(name) + " must be before kForever");
  return std::nullopt;
}

std::optional<Error> check_duration(const char* where, Duration d,
                                    bool zero_ok) {
  if (d < 0 || (d == 0 && !zero_ok))
    return make_error(Errc::kInvalidArgument, where,
                      std::string("duration must be ") +
                          (zero_ok ? ">= 0" : "> 0") + " (got " +
                          std::to_string(d) + ")");
  return std::nullopt;
}

std::optional<Error> check_amount(const char* where, const char* name,
                                  Amount a, Amount lowest) {
  if (a < lowest || a > kMaxAmount)
    return make_error(Errc::kInvalidArgument, where,
                      std::string(name) + " must be in [" +
                          std::to_string(lowest) + ", 2^52] (got " +
                          std::to_string(a) + ")");
  return std::nullopt;
}

std::optional<Error> check_capacity_request(const char* where,
                                            const char* name, Capacity c) {
  if (auto e = check_amount(where, (std::string(name) + ".nodes").c_str(),
                            c.nodes, 0))
    return e;
  if (auto e =
          check_amount(where, (std::string(name) + ".cpus").c_str(), c.cpus, 0))
    return e;
  if (c.nodes == 0 && c.cpus == 0)
    return make_error(Errc::kInvalidArgument, where,
                      std::string(name) + " must ask for at least one node "
                                          "or one cpu (got 0 and 0)");
  return std::nullopt;
}

// Queries treat an empty window as the instant t: on integer time the step
// function is constant over [t, t + 1).
Duration query_duration(Duration d) { return d == 0 ? 1 : d; }

}  // namespace

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::kInvalidArgument:
      return "invalid-argument";
    case Errc::kOutOfRange:
      return "out-of-range";
    case Errc::kNotFound:
      return "not-found";
    case Errc::kNoFit:
      return "no-fit";
  }
  return "unknown";
}

// ===========================================================================
// detail::StepTree
//
// A treap keyed by time.  Invariant: the real free value of a node is its
// `val` plus the `lz` of every strict ancestor; `mn`/`mx` of a node are its
// subtree's extremes on the same footing as its `val`.  Mutations push the
// pending additions down along the path they touch; queries leave the tree
// alone and add the pending amounts up as they descend.

namespace detail {

StepTree::StepTree(Time origin, Amount value) {
  nodes_.resize(1);  // sentinel
  root_ = make_node(origin, value);
}

StepTree::StepTree(const std::vector<std::pair<Time, Amount>>& points) {
  nodes_.reserve(points.size() + 1);
  nodes_.resize(1);  // sentinel
  // Cartesian tree by priority over the sorted keys, with a stack holding
  // the right spine.
  std::vector<Index> spine;
  for (const auto& [t, v] : points) {
    Index x = make_node(t, v);
    Index below = kNil;
    while (!spine.empty() && nodes_[spine.back()].prio < nodes_[x].prio) {
      below = spine.back();
      spine.pop_back();
    }
    nodes_[x].left = below;
    if (!spine.empty()) nodes_[spine.back()].right = x;
    spine.push_back(x);
  }
  root_ = spine.empty() ? kNil : spine.front();
  pull_all(root_);
}

void StepTree::pull_all(Index x) {
  if (x == kNil) return;
  pull_all(nodes_[x].left);
  pull_all(nodes_[x].right);
  pull(x);
}

std::uint32_t StepTree::next_prio() {
  // splitmix64: a per-object generator, no global state.
  std::uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::uint32_t>((z ^ (z >> 31)) >> 32);
}

StepTree::Index StepTree::make_node(Time t, Amount v) {
  Index x;
  if (!spare_.empty()) {
    x = spare_.back();
    spare_.pop_back();
  } else {
    if (nodes_.size() >= std::numeric_limits<Index>::max()) throw std::bad_alloc();
    x = static_cast<Index>(nodes_.size());
    nodes_.push_back(Node{});
  }
  nodes_[x] = Node{t, v, v, v, 0, kNil, kNil, next_prio()};
  return x;
}

void StepTree::release(Index x) { spare_.push_back(x); }

void StepTree::apply(Index x, Amount delta) {
  if (x == kNil) return;
  Node& n = nodes_[x];
  n.val += delta;
  n.mn += delta;
  n.mx += delta;
  n.lz += delta;
}

void StepTree::push(Index x) {
  Node& n = nodes_[x];
  if (n.lz != 0) {
    apply(n.left, n.lz);
    apply(n.right, n.lz);
    n.lz = 0;
  }
}

void StepTree::pull(Index x) {
  Node& n = nodes_[x];
  n.mn = n.mx = n.val;
  if (n.left != kNil) {
    n.mn = std::min(n.mn, nodes_[n.left].mn);
    n.mx = std::max(n.mx, nodes_[n.left].mx);
  }
  if (n.right != kNil) {
    n.mn = std::min(n.mn, nodes_[n.right].mn);
    n.mx = std::max(n.mx, nodes_[n.right].mx);
  }
}

// lo gets the keys < key, hi the keys >= key.
void StepTree::split(Index x, Time key, Index& lo, Index& hi) {
  if (x == kNil) {
    lo = hi = kNil;
    return;
  }
  push(x);
  if (nodes_[x].time < key) {
    split(nodes_[x].right, key, nodes_[x].right, hi);
    lo = x;
  } else {
    split(nodes_[x].left, key, lo, nodes_[x].left);
    hi = x;
  }
  pull(x);
}

// Every key of a is below every key of b.
StepTree::Index StepTree::merge(Index a, Index b) {
  if (a == kNil) return b;
  if (b == kNil) return a;
  if (nodes_[a].prio > nodes_[b].prio) {
    push(a);
    nodes_[a].right = merge(nodes_[a].right, b);
    pull(a);
    return a;
  }
  push(b);
  nodes_[b].left = merge(a, nodes_[b].left);
  pull(b);
  return b;
}

StepTree::Index StepTree::pop_first(Index x) {
  push(x);
  if (nodes_[x].left == kNil) {
    Index rest = nodes_[x].right;
    release(x);
    return rest;
  }
  nodes_[x].left = pop_first(nodes_[x].left);
  pull(x);
  return x;
}

// The next three take the root of a tree with nothing pending above it.
Time StepTree::first_time(Index x) const {
  while (nodes_[x].left != kNil) x = nodes_[x].left;
  return nodes_[x].time;
}

Amount StepTree::first_value(Index x) const {
  Amount acc = 0;
  while (nodes_[x].left != kNil) {
    acc += nodes_[x].lz;
    x = nodes_[x].left;
  }
  return nodes_[x].val + acc;
}

Amount StepTree::last_value(Index x) const {
  Amount acc = 0;
  while (nodes_[x].right != kNil) {
    acc += nodes_[x].lz;
    x = nodes_[x].right;
  }
  return nodes_[x].val + acc;
}

void StepTree::add(Time s, Time e, Amount delta) {
  Index a, rest, b, c;
  split(root_, s, a, rest);
  if (e == kForever) {
    b = rest;
    c = kNil;
  } else {
    split(rest, e, b, c);
  }
  // Make sure points exist at s and e, carrying the value in force there.
  // s > origin whenever a is empty is impossible: the origin point is <= s.
  if (b == kNil || first_time(b) != s) b = merge(make_node(s, last_value(a)), b);
  if (e != kForever && (c == kNil || first_time(c) != e))
    c = merge(make_node(e, last_value(b)), c);

  apply(b, delta);

  // Drop a boundary point whose value now equals its predecessor's.
  if (a != kNil && last_value(a) == first_value(b)) b = pop_first(b);
  if (c != kNil) {
    Amount before = b != kNil ? last_value(b) : last_value(a);
    if (before == first_value(c)) c = pop_first(c);
  }
  root_ = merge(merge(a, b), c);
}

Amount StepTree::value_at(Time t) const {
  Amount acc = 0, res = 0;
  Index x = root_;
  while (x != kNil) {
    const Node& n = nodes_[x];
    if (n.time <= t) {
      res = n.val + acc;
      acc += n.lz;
      x = n.right;
    } else {
      acc += n.lz;
      x = n.left;
    }
  }
  return res;
}

bool StepTree::has_point(Time t) const {
  Index x = root_;
  while (x != kNil) {
    const Node& n = nodes_[x];
    if (n.time == t) return true;
    x = t < n.time ? n.left : n.right;
  }
  return false;
}

Time StepTree::next_point(Time t) const {
  Time best = kNever;
  Index x = root_;
  while (x != kNil) {
    const Node& n = nodes_[x];
    if (n.time > t) {
      best = n.time;
      x = n.left;
    } else {
      x = n.right;
    }
  }
  return best;
}

Time StepTree::point_at(Time t) const {
  Time best = -1;
  Index x = root_;
  while (x != kNil) {
    const Node& n = nodes_[x];
    if (n.time <= t) {
      best = n.time;
      x = n.right;
    } else {
      x = n.left;
    }
  }
  return best;
}

// Minimum (or maximum) over the points with keys in [lo, hi): walks the
// two root-to-leaf paths bounding the range and takes whole subtrees in
// between from their cached extremes.
Amount StepTree::extreme_keys(Index x, Time lo, Time hi, bool want_max) const {
  auto better = [want_max](Amount a, Amount b) { return want_max ? std::max(a, b) : std::min(a, b); };
  auto whole = [&](Index y, Amount acc) { return (want_max ? nodes_[y].mx : nodes_[y].mn) + acc; };
  Amount best = want_max ? -kInfAmount : kInfAmount;
  Amount acc = 0;
  // Down to the first node inside the range (the split node).
  while (x != kNil && (nodes_[x].time < lo || nodes_[x].time >= hi)) {
    const Node& n = nodes_[x];
    acc += n.lz;
    x = n.time < lo ? n.right : n.left;
  }
  if (x == kNil) return best;
  best = nodes_[x].val + acc;
  Amount below = acc + nodes_[x].lz;
  // Left side: every key is < hi; collect those >= lo.
  Amount acc_y = below;
  for (Index y = nodes_[x].left; y != kNil;) {
    const Node& n = nodes_[y];
    if (n.time >= lo) {
      best = better(best, n.val + acc_y);
      if (n.right != kNil) best = better(best, whole(n.right, acc_y + n.lz));
      y = n.left;
    } else {
      y = n.right;
    }
    acc_y += n.lz;
  }
  // Right side: every key is >= lo; collect those < hi.
  acc_y = below;
  for (Index y = nodes_[x].right; y != kNil;) {
    const Node& n = nodes_[y];
    if (n.time < hi) {
      best = better(best, n.val + acc_y);
      if (n.left != kNil) best = better(best, whole(n.left, acc_y + n.lz));
      y = n.right;
    } else {
      y = n.left;
    }
    acc_y += n.lz;
  }
  return best;
}

Amount StepTree::min_in(Time s, Time e) const {
  Amount m = value_at(s);
  if (e - s > 1) m = std::min(m, extreme_keys(root_, s + 1, e, false));
  return m;
}

Amount StepTree::max_in(Time s, Time e) const {
  Amount m = value_at(s);
  if (e - s > 1) m = std::max(m, extreme_keys(root_, s + 1, e, true));
  return m;
}

// First node with key > t whose value is >= n (at_least) or < n.  The
// subtree extremes prune every branch that cannot hold an answer, so this
// costs one path along t plus one successful descent.
StepTree::Index StepTree::find_after(Index x, Time t, Amount n, bool at_least,
                                     Amount acc) const {
  while (x != kNil) {
    const Node& nd = nodes_[x];
    if (at_least ? nd.mx + acc < n : nd.mn + acc >= n) return kNil;
    Amount below = acc + nd.lz;
    if (nd.time <= t) {
      x = nd.right;
      acc = below;
      continue;
    }
    Index r = find_after(nd.left, t, n, at_least, below);
    if (r != kNil) return r;
    Amount v = nd.val + acc;
    if (at_least ? v >= n : v < n) return x;
    x = nd.right;
    acc = below;
  }
  return kNil;
}

Time StepTree::first_after(Time t, Amount n, bool at_least) const {
  Index x = find_after(root_, t, n, at_least, 0);
  return x == kNil ? kNever : nodes_[x].time;
}

// Mirror image of find_after: last node with key < t whose value is < n.
StepTree::Index StepTree::find_below(Index x, Time t, Amount n, Amount acc) const {
  while (x != kNil) {
    const Node& nd = nodes_[x];
    if (nd.mn + acc >= n) return kNil;
    Amount below = acc + nd.lz;
    if (nd.time >= t) {
      x = nd.left;
      acc = below;
      continue;
    }
    Index r = find_below(nd.right, t, n, below);
    if (r != kNil) return r;
    if (nd.val + acc < n) return x;
    x = nd.left;
    acc = below;
  }
  return kNil;
}

Time StepTree::last_below(Time t, Amount n) const {
  Index x = find_below(root_, t, n, 0);
  return x == kNil ? -1 : nodes_[x].time;
}

StepTree::Cursor::Cursor(const StepTree& tree, Time t) : tree_(&tree) {
  Amount acc = 0;
  Index x = tree.root_;
  while (x != kNil) {
    const Node& n = tree.nodes_[x];
    if (n.time <= t) {
      cur_ = x;
      value_ = n.val + acc;
      acc += n.lz;
      x = n.right;
    } else {
      stack_.emplace_back(x, acc);
      acc += n.lz;
      x = n.left;
    }
  }
}

Time StepTree::Cursor::next_time() const {
  return stack_.empty() ? kNever : tree_->nodes_[stack_.back().first].time;
}

void StepTree::Cursor::advance() {
  auto [x, acc] = stack_.back();
  stack_.pop_back();
  const Node& n = tree_->nodes_[x];
  cur_ = x;
  value_ = n.val + acc;
  acc += n.lz;
  for (Index y = n.right; y != kNil; y = tree_->nodes_[y].left) {
    stack_.emplace_back(y, acc);
    acc += tree_->nodes_[y].lz;
  }
}

StepTree::BackCursor::BackCursor(const StepTree& tree, Time t) : tree_(&tree) {
  Amount acc = 0;
  Index x = tree.root_;
  while (x != kNil) {
    const Node& n = tree.nodes_[x];
    if (n.time <= t) {
      stack_.emplace_back(x, acc);
      acc += n.lz;
      x = n.right;
    } else {
      acc += n.lz;
      x = n.left;
    }
  }
}

Amount StepTree::BackCursor::value() const {
  return tree_->nodes_[stack_.back().first].val + stack_.back().second;
}

void StepTree::BackCursor::retreat() {
  auto [x, acc] = stack_.back();
  stack_.pop_back();
  const Node& n = tree_->nodes_[x];
  acc += n.lz;
  for (Index y = n.left; y != kNil; y = tree_->nodes_[y].right) {
    stack_.emplace_back(y, acc);
    acc += tree_->nodes_[y].lz;
  }
}

// The common-start code needs the tree and the unchecked search.
class ProfileAccess {
 public:
  static const StepTree& tree(const Profile& p) { return p.tree_; }
  static Time search(const Profile& p, Time lo, Duration d, Amount n) {
    return p.search(lo, d, n);
  }
};

}  // namespace detail

// ===========================================================================
// Profile

Profile::Profile(Time origin, Amount capacity)
    : origin_(origin), capacity_(capacity), tree_(origin, capacity) {}

Result<Profile> Profile::create(Time origin, Amount capacity) {
  static const char* kWhere = "Profile::create";
  if (auto e = check_nonneg_time(kWhere, "origin", origin)) return *e;
  if (origin == kForever)
    return make_error(Errc::kOutOfRange, kWhere, "origin must be before kForever");
  if (auto e = check_amount(kWhere, "capacity", capacity, 0)) return *e;
  return Profile(origin, capacity);
}

Result<Profile> Profile::sum(const std::vector<const Profile*>& profiles) {
  static const char* kWhere = "Profile::sum";
  if (profiles.empty()) return make_error(Errc::kInvalidArgument, kWhere, "no profiles given");
  if (profiles.size() > kMaxProfiles)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "at most 1024 profiles (got " + std::to_string(profiles.size()) + ")");
  Time origin = 0;
  Amount capacity = 0;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i] == nullptr)
      return make_error(Errc::kInvalidArgument, kWhere, "profile " + std::to_string(i) + " is null");
    for (std::size_t j = 0; j < i; ++j)
      if (profiles[j] == profiles[i])
        return make_error(Errc::kInvalidArgument, kWhere,
                          "profile " + std::to_string(i) + " is listed twice (also at " +
                              std::to_string(j) + ")");
    origin = std::max(origin, profiles[i]->origin_);
    capacity += profiles[i]->capacity_;
  }
  if (capacity > kMaxAmount)
    return make_error(Errc::kOutOfRange, kWhere,
                      "summed capacity " + std::to_string(capacity) + " exceeds 2^52");
  // Walk the merged change points, keeping only real changes.
  std::vector<detail::StepTree::Cursor> cur;
  Amount free = 0;
  for (const Profile* p : profiles) {
    cur.emplace_back(p->tree_, origin);
    free += cur.back().value();
  }
  std::vector<std::pair<Time, Amount>> points;
  for (Time t = origin;;) {
    if (free < -kMaxAmount)
      return make_error(Errc::kOutOfRange, kWhere,
                        "summed free " + std::to_string(free) + " at " + std::to_string(t) +
                            " is below -2^52");
    if (points.empty() || points.back().second != free) points.emplace_back(t, free);
    Time nx = kNever;
    for (const auto& c : cur) nx = std::min(nx, c.next_time());
    if (nx == kNever) break;
    for (auto& c : cur) {
      if (c.next_time() == nx) {
        free -= c.value();
        c.advance();
        free += c.value();
      }
    }
    t = nx;
  }
  return Profile(origin, capacity, detail::StepTree(points));
}

Result<Amount> Profile::free_at(Time t) const {
  if (auto e = check_point_time("Profile::free_at", "t", t, origin_)) return *e;
  return tree_.value_at(t);
}

Result<Amount> Profile::min_over(Time t, Duration d) const {
  static const char* kWhere = "Profile::min_over";
  if (auto e = check_point_time(kWhere, "t", t, origin_)) return *e;
  if (auto e = check_duration(kWhere, d, true)) return *e;
  return tree_.min_in(t, sat_add(t, query_duration(d)));
}

// Unchecked: d >= 1, n >= 1.
Time Profile::search(Time lo, Duration d, Amount n) const {
  if (n > capacity_) return kNever;  // free never exceeds capacity
  lo = std::max(lo, origin_);
  if (lo >= kForever) return kNever;
  Time p = lo;
  if (tree_.value_at(lo) < n) {
    p = tree_.first_after(lo, n, true);
    if (p == kNever) return kNever;
  }
  return scan_from(p, d, n);
}

// p is a start with n free at p.  Find the LAST drop below n inside the
// window [p, p + d); if there is none, p is the answer.  Otherwise every
// start up to that drop contains it, so continue with the first recovery
// after it.  Each round costs O(log P), and every two rounds move the
// candidate forward by at least d (the second window begins where the
// first one's last drop was passed, so its own last drop lies beyond the
// first window), so short gaps are skipped a window at a time.
Time Profile::scan_from(Time p, Duration d, Amount n) const {
  for (;;) {
    Time b = tree_.last_below(sat_add(p, d), n);
    if (b <= p) return p;
    p = tree_.first_after(b, n, true);
    if (p == kNever) return kNever;
  }
}

Result<Time> Profile::earliest_fit(Time t, Duration d, Amount n) const {
  static const char* kWhere = "Profile::earliest_fit";
  if (auto e = check_nonneg_time(kWhere, "t", t)) return *e;
  if (auto e = check_duration(kWhere, d, true)) return *e;
  if (n < 1)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "n must be >= 1 (got " + std::to_string(n) + ")");
  return search(t, query_duration(d), n);
}

Result<Time> Profile::next_fit(Time after, Duration d, Amount n) const {
  static const char* kWhere = "Profile::next_fit";
  if (auto e = check_nonneg_time(kWhere, "after", after)) return *e;
  if (auto e = check_duration(kWhere, d, true)) return *e;
  if (n < 1)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "n must be >= 1 (got " + std::to_string(n) + ")");
  if (n > capacity_) return kNever;
  Time p = tree_.first_after(after, n, true);
  if (p == kNever) return kNever;
  return scan_from(p, query_duration(d), n);
}

Time Profile::next_change_point(Time after) const { return tree_.next_point(after); }

Result<std::vector<Slot>> Profile::free_slots(Time from, Time until,
                                              Amount min_free) const {
  static const char* kWhere = "Profile::free_slots";
  if (auto e = check_point_time(kWhere, "from", from, origin_)) return *e;
  if (until < from)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "until " + std::to_string(until) + " is before from " +
                          std::to_string(from));
  std::vector<Slot> out;
  if (until == from) return out;
  detail::StepTree::Cursor c(tree_, from);
  Time s = from;
  for (;;) {
    Time nx = c.next_time();
    if (c.value() >= min_free) out.push_back(Slot{s, std::min(nx, until), c.value()});
    if (nx >= until) break;
    c.advance();
    s = nx;
  }
  return out;
}

Result<SpanId> Profile::add_span(Time start, Duration d, Amount amount,
                                 Admission admission) {
  static const char* kWhere = "Profile::add_span";
  if (auto e = check_point_time(kWhere, "start", start, origin_)) return *e;
  if (auto e = check_duration(kWhere, d, false)) return *e;
  if (auto e = check_amount(kWhere, "amount", amount, 1)) return *e;
  Time end = sat_add(start, d);
  Amount m = tree_.min_in(start, end);
  if (admission == Admission::kMustFit && m < amount)
    return make_error(Errc::kNoFit, kWhere,
                      "span of " + std::to_string(amount) + " over " +
                          fmt_range(start, end) + " does not fit: only " +
                          std::to_string(m) + " free");
  if (m - amount < -kMaxAmount)
    return make_error(Errc::kOutOfRange, kWhere,
                      "forced span over " + fmt_range(start, end) +
                          " would take free below -2^52");
  tree_.add(start, end, -amount);
  SpanId id = next_id_++;
  spans_.emplace(id, Span{start, end, amount});
  return id;
}

void Profile::take_unchecked(Time start, Duration d, Amount amount) {
  tree_.add(start, sat_add(start, d), -amount);
}

Status Profile::remove_span(SpanId id) {
  auto it = spans_.find(id);
  if (it == spans_.end())
    return make_error(Errc::kNotFound, "Profile::remove_span",
                      "no span with id " + std::to_string(id));
  const Span& s = it->second;
  tree_.add(s.start, s.end, s.amount);
  spans_.erase(it);
  return {};
}

Status Profile::shrink_span(SpanId id, Time new_end, Amount new_amount) {
  static const char* kWhere = "Profile::shrink_span";
  auto it = spans_.find(id);
  if (it == spans_.end())
    return make_error(Errc::kNotFound, kWhere, "no span with id " + std::to_string(id));
  Span& s = it->second;
  if (new_end <= s.start)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "new_end " + std::to_string(new_end) +
                          " must be after the span's start " +
                          std::to_string(s.start) + " (use remove_span)");
  if (new_end > s.end)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "new_end " + fmt_time(new_end) + " is after the span's end " +
                          fmt_time(s.end) + " (shrink cannot extend)");
  if (new_amount < 1 || new_amount > s.amount)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "new_amount must be in [1, " + std::to_string(s.amount) +
                          "] (got " + std::to_string(new_amount) + ")");
  if (new_amount < s.amount) tree_.add(s.start, new_end, s.amount - new_amount);
  if (new_end < s.end) tree_.add(new_end, s.end, s.amount);
  s.end = new_end;
  s.amount = new_amount;
  return {};
}

Result<Span> Profile::span(SpanId id) const {
  auto it = spans_.find(id);
  if (it == spans_.end())
    return make_error(Errc::kNotFound, "Profile::span",
                      "no span with id " + std::to_string(id));
  return it->second;
}

// ===========================================================================
// Conjunctions of window conditions (node/CPU fits and common starts)

namespace {

using detail::ProfileAccess;
using detail::StepTree;

// "n units free over the window" on one profile, or on the sum of several.
struct Condition {
  std::vector<const Profile*> profiles;
  Amount n;
};

// Earliest s >= lo with the summed free >= n over [s, s + d).
//
// Call an instant good when the sum there is >= n.  Each round takes the
// first good instant g from the lower bound, then looks for the LAST bad
// instant b in [g, g + d), walking backwards from the window's end: none
// means g is the answer; otherwise no start up to b can fit, and the next
// round starts after b.  As for a single profile, every two rounds move
// the bound forward by at least d.
//
// Both walks step over the merged change points with one cursor per
// profile (O(k) per piece), and every kGallopEvery pieces try to leap
// instead: the profiles' own extremes over a stretch bound the sum, so
// summed minima >= n make the stretch good throughout and summed maxima
// < n bad throughout; the leap doubles while that holds.  Long stretches
// thus cost O(k log P log L); a sum hovering around n costs a plain sweep
// of the pieces between the last bad instants.
//
// Each round also prunes with a necessary condition: a start s can only
// fit if each profile i alone has n - (sum of the others' capacities)
// free over [s, s + d).  Where that is positive, the single-profile search
// skips every start that cannot work.
constexpr int kGallopEvery = 8;

Time sum_earliest(const std::vector<const Profile*>& ps, Time lo, Duration d,
                  Amount n) {
  Amount total = 0;
  std::vector<const StepTree*> trees;
  for (const Profile* p : ps) {
    total += p->capacity();
    lo = std::max(lo, p->origin());
    trees.push_back(&ProfileAccess::tree(*p));
  }
  if (total < n || lo >= kForever) return kNever;

  // Summed minima or maxima over [a, b), a < b.
  auto lower = [&](Time a, Time b) {
    Amount sum = 0;
    for (const StepTree* t : trees) sum += t->min_in(a, b);
    return sum;
  };
  auto upper = [&](Time a, Time b) {
    Amount sum = 0;
    for (const StepTree* t : trees) sum += t->max_in(a, b);
    return sum;
  };
  // First start >= from that passes the necessary per-profile test.
  auto necessary = [&](Time from) {
    Time t = from;
    for (bool moved = true; moved;) {
      moved = false;
      for (const Profile* p : ps) {
        Amount need = n - (total - p->capacity());
        if (need <= 0) continue;
        Time e = ProfileAccess::search(*p, t, d, need);
        if (e == kNever) return kNever;
        if (e != t) {
          t = e;
          moved = true;
        }
      }
    }
    return t;
  };

  std::vector<StepTree::Cursor> fwd;
  std::vector<StepTree::BackCursor> back;
  Amount sum = 0;
  auto seek_fwd = [&](Time x) {
    fwd.clear();
    sum = 0;
    for (const StepTree* t : trees) {
      fwd.emplace_back(*t, x);
      sum += fwd.back().value();
    }
  };
  auto seek_back = [&](Time x) {
    back.clear();
    sum = 0;
    for (const StepTree* t : trees) {
      back.emplace_back(*t, x);
      sum += back.back().value();
    }
  };

  // First good instant >= x, or kNever.
  auto first_good = [&](Time x) {
    seek_fwd(x);
    for (int credit = 0;;) {
      if (sum >= n) return x;
      Time nx = kNever;  // [x, nx) is bad
      for (const auto& c : fwd) nx = std::min(nx, c.next_time());
      if (nx == kNever) return kNever;
      if (++credit >= kGallopEvery) {
        credit = 0;
        Time y = nx;
        for (Duration step = nx - x;; step *= 2) {
          Time z = sat_add(y, step);
          if (upper(y, z) >= n) break;
          y = z;
          if (y == kForever) return kNever;
        }
        if (y > nx) {
          seek_fwd(y);
          x = y;
          continue;
        }
      }
      for (auto& c : fwd) {
        if (c.next_time() == nx) {
          sum -= c.value();
          c.advance();
          sum += c.value();
        }
      }
      x = nx;
    }
  };
  // Last bad instant in [g, q] (g good), or -1 if all of it is good.
  auto last_bad = [&](Time g, Time q) -> Time {
    seek_back(q);
    for (int credit = 0;;) {
      if (sum < n) return q;
      Time y = -1;  // [y, q] is good
      for (const auto& c : back) y = std::max(y, c.time());
      if (y <= g) return -1;
      if (++credit >= kGallopEvery) {
        credit = 0;
        Time z0 = y;
        for (Duration step = q - y + 1;; step *= 2) {
          Time z = std::max(g, y - std::min(step, y));
          if (lower(z, y) < n) break;
          y = z;
          if (y <= g) return -1;
        }
        if (y < z0) {
          q = y - 1;
          seek_back(q);
          continue;
        }
      }
      for (auto& c : back) {
        if (c.time() == y) {
          sum -= c.value();
          c.retreat();
          sum += c.value();
        }
      }
      q = y - 1;
    }
  };

  Time p = lo;
  for (;;) {
    p = necessary(p);
    if (p == kNever) return kNever;
    Time g = first_good(p);
    if (g == kNever) return kNever;
    Time e = sat_add(g, d);
    if (lower(g, e) >= n) return g;
    Time b = last_bad(g, e - 1);
    if (b < 0) return g;
    if (b >= kForever - 1) return kNever;
    p = b + 1;
  }
}

Time condition_earliest(const Condition& c, Time lo, Duration d) {
  if (c.profiles.size() == 1) return ProfileAccess::search(*c.profiles[0], lo, d, c.n);
  return sum_earliest(c.profiles, lo, d, c.n);
}

// Fixed point: every condition's earliest start from t moves t forward to
// a start that condition accepts; once none moves it, all accept t.  No
// condition can jump past the true answer, so this finds it.
Time all_earliest(const std::vector<Condition>& conds, Time lo, Duration d) {
  Time t = lo;
  for (;;) {
    bool moved = false;
    for (const Condition& c : conds) {
      Time e = condition_earliest(c, t, d);
      if (e == kNever) return kNever;
      if (e != t) {
        t = e;
        moved = true;
      }
    }
    if (!moved) return t;
  }
}

// Change points of a condition's step function: a profile's points, or
// the instants where the summed free changes (the latest origin included).
Time condition_origin(const Condition& c) {
  Time o = 0;
  for (const Profile* p : c.profiles) o = std::max(o, p->origin());
  return o;
}

Amount condition_value(const Condition& c, Time t) {
  Amount sum = 0;
  for (const Profile* p : c.profiles) sum += ProfileAccess::tree(*p).value_at(t);
  return sum;
}

bool condition_changes_at(const Condition& c, Time t) {
  if (c.profiles.size() == 1) return ProfileAccess::tree(*c.profiles[0]).has_point(t);
  Time o = condition_origin(c);
  if (t < o) return false;
  if (t == o) return true;
  return condition_value(c, t) != condition_value(c, t - 1);
}

Time condition_next_change(const Condition& c, Time t) {
  if (c.profiles.size() == 1) return ProfileAccess::tree(*c.profiles[0]).next_point(t);
  Time o = condition_origin(c);
  if (t < o) return o;
  for (;;) {
    Time nx = kNever;
    for (const Profile* p : c.profiles) nx = std::min(nx, ProfileAccess::tree(*p).next_point(t));
    if (nx == kNever || condition_value(c, nx) != condition_value(c, nx - 1)) return nx;
    t = nx;  // the changes cancel out: no change of the sum
  }
}

// The first change point > after (of any condition's function) where all
// conditions hold.  The earliest start from after + 1 is after + 1 itself
// or a change point; in the first case, if after + 1 is no change point,
// the answer is the earliest start from the next change point.
Time all_next(const std::vector<Condition>& conds, Time after, Duration d) {
  if (after >= kForever - 1) return kNever;
  Time y = after + 1;
  Time t = all_earliest(conds, y, d);
  if (t == kNever || t != y) return t;
  Time nxt = kNever;
  for (const Condition& c : conds) {
    if (condition_changes_at(c, t)) return t;
    nxt = std::min(nxt, condition_next_change(c, t));
  }
  if (nxt == kNever) return kNever;
  return all_earliest(conds, nxt, d);
}

// Checks shared by every common-start entry point.
std::optional<Error> check_query(const char* where, const char* tname, Time t,
                                 Duration d, std::size_t count) {
  if (auto e = check_nonneg_time(where, tname, t)) return e;
  if (auto e = check_duration(where, d, true)) return e;
  if (count == 0)
    return make_error(Errc::kInvalidArgument, where, "no profiles given");
  if (count > kMaxProfiles)
    return make_error(Errc::kInvalidArgument, where,
                      "at most 1024 profiles (got " + std::to_string(count) + ")");
  return std::nullopt;
}

std::optional<Error> check_entry(const char* where, std::size_t i, const void* p) {
  if (p == nullptr)
    return make_error(Errc::kInvalidArgument, where,
                      "profile " + std::to_string(i) + " is null");
  return std::nullopt;
}

// Demands on one profile are added: two parts on one cluster need both.
Amount add_capped(Amount a, Amount b) { return std::min(a + b, kMaxAmount + 1); }

Result<std::vector<Condition>> conditions_each(const char* where,
                                               const std::vector<Demand>& parts) {
  std::vector<Condition> conds;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (auto e = check_entry(where, i, parts[i].profile)) return *e;
    if (parts[i].amount < 1 || parts[i].amount > kMaxAmount)
      return make_error(Errc::kInvalidArgument, where,
                        "amount of part " + std::to_string(i) +
                            " must be in [1, 2^52] (got " +
                            std::to_string(parts[i].amount) + ")");
    auto same = std::find_if(conds.begin(), conds.end(), [&](const Condition& c) {
      return c.profiles[0] == parts[i].profile;
    });
    if (same != conds.end())
      same->n = add_capped(same->n, parts[i].amount);
    else
      conds.push_back(Condition{{parts[i].profile}, parts[i].amount});
  }
  return conds;
}

std::optional<Error> check_distinct(const char* where,
                                    const std::vector<const void*>& ps) {
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (auto e = check_entry(where, i, ps[i])) return e;
    for (std::size_t j = 0; j < i; ++j)
      if (ps[j] == ps[i])
        return make_error(Errc::kInvalidArgument, where,
                          "profile " + std::to_string(i) +
                              " is listed twice (also at " + std::to_string(j) + ")");
  }
  return std::nullopt;
}

// Resolves one query over a checked list of conditions.
Time run_query(const std::vector<Condition>& conds, bool next, Time t, Duration d) {
  d = query_duration(d);
  if (next) return all_next(conds, t, d);
  if (t >= kForever) return kNever;
  return all_earliest(conds, t, d);
}

Result<Time> each_query(const char* where, const std::vector<Demand>& parts,
                        bool next, Time t, Duration d) {
  if (auto e = check_query(where, next ? "after" : "t", t, d, parts.size())) return *e;
  auto conds = conditions_each(where, parts);
  if (!conds) return conds.error();
  return run_query(conds.value(), next, t, d);
}

Result<Time> sum_query(const char* where, const std::vector<const Profile*>& ps,
                       bool next, Time t, Duration d, Amount n) {
  if (auto e = check_query(where, next ? "after" : "t", t, d, ps.size())) return *e;
  if (auto e = check_distinct(where, std::vector<const void*>(ps.begin(), ps.end())))
    return *e;
  if (auto e = check_amount(where, "n", n, 1)) return *e;
  return run_query({Condition{ps, n}}, next, t, d);
}

std::vector<Condition> node_cpu_conditions(const NodeCpuProfile& p, Capacity need) {
  std::vector<Condition> conds;
  if (need.nodes > 0) conds.push_back(Condition{{&p.nodes()}, need.nodes});
  if (need.cpus > 0) conds.push_back(Condition{{&p.cpus()}, need.cpus});
  return conds;
}

}  // namespace

Result<Time> earliest_common_start(const std::vector<Demand>& parts, Time t, Duration d) {
  return each_query("earliest_common_start", parts, false, t, d);
}

Result<Time> next_common_start(const std::vector<Demand>& parts, Time after, Duration d) {
  return each_query("next_common_start", parts, true, after, d);
}

Result<Time> earliest_common_start_sum(const std::vector<const Profile*>& profiles,
                                       Time t, Duration d, Amount n) {
  return sum_query("earliest_common_start_sum", profiles, false, t, d, n);
}

Result<Time> next_common_start_sum(const std::vector<const Profile*>& profiles,
                                   Time after, Duration d, Amount n) {
  return sum_query("next_common_start_sum", profiles, true, after, d, n);
}

namespace {

Result<Time> node_cpu_each_query(const char* where,
                                 const std::vector<NodeCpuDemand>& parts,
                                 bool next, Time t, Duration d) {
  if (auto e = check_query(where, next ? "after" : "t", t, d, parts.size())) return *e;
  std::vector<Demand> flat;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (auto e = check_entry(where, i, parts[i].profile)) return *e;
    std::string name = "amount of part " + std::to_string(i);
    if (auto e = check_capacity_request(where, name.c_str(), parts[i].amount)) return *e;
    if (parts[i].amount.nodes > 0)
      flat.push_back(Demand{&parts[i].profile->nodes(), parts[i].amount.nodes});
    if (parts[i].amount.cpus > 0)
      flat.push_back(Demand{&parts[i].profile->cpus(), parts[i].amount.cpus});
  }
  auto conds = conditions_each(where, flat);
  if (!conds) return conds.error();
  return run_query(conds.value(), next, t, d);
}

Result<Time> node_cpu_sum_query(const char* where,
                                const std::vector<const NodeCpuProfile*>& ps,
                                bool next, Time t, Duration d, Capacity n) {
  if (auto e = check_query(where, next ? "after" : "t", t, d, ps.size())) return *e;
  if (auto e = check_distinct(where, std::vector<const void*>(ps.begin(), ps.end())))
    return *e;
  if (auto e = check_capacity_request(where, "n", n)) return *e;
  std::vector<Condition> conds;
  if (n.nodes > 0) {
    conds.push_back(Condition{{}, n.nodes});
    for (const NodeCpuProfile* p : ps) conds.back().profiles.push_back(&p->nodes());
  }
  if (n.cpus > 0) {
    conds.push_back(Condition{{}, n.cpus});
    for (const NodeCpuProfile* p : ps) conds.back().profiles.push_back(&p->cpus());
  }
  return run_query(conds, next, t, d);
}

}  // namespace

Result<Time> earliest_common_start(const std::vector<NodeCpuDemand>& parts, Time t,
                                   Duration d) {
  return node_cpu_each_query("earliest_common_start", parts, false, t, d);
}

Result<Time> next_common_start(const std::vector<NodeCpuDemand>& parts, Time after,
                               Duration d) {
  return node_cpu_each_query("next_common_start", parts, true, after, d);
}

Result<Time> earliest_common_start_sum(const std::vector<const NodeCpuProfile*>& profiles,
                                       Time t, Duration d, Capacity n) {
  return node_cpu_sum_query("earliest_common_start_sum", profiles, false, t, d, n);
}

Result<Time> next_common_start_sum(const std::vector<const NodeCpuProfile*>& profiles,
                                   Time after, Duration d, Capacity n) {
  return node_cpu_sum_query("next_common_start_sum", profiles, true, after, d, n);
}

// ===========================================================================
// NodeCpuProfile

Result<NodeCpuProfile> NodeCpuProfile::create(Time origin, Capacity capacity) {
  static const char* kWhere = "NodeCpuProfile::create";
  if (auto e = check_nonneg_time(kWhere, "origin", origin)) return *e;
  if (origin == kForever)
    return make_error(Errc::kOutOfRange, kWhere, "origin must be before kForever");
  if (auto e = check_amount(kWhere, "capacity.nodes", capacity.nodes, 0)) return *e;
  if (auto e = check_amount(kWhere, "capacity.cpus", capacity.cpus, 0)) return *e;
  return NodeCpuProfile(Profile(origin, capacity.nodes), Profile(origin, capacity.cpus));
}

Result<NodeCpuProfile> NodeCpuProfile::sum(const std::vector<const NodeCpuProfile*>& profiles) {
  static const char* kWhere = "NodeCpuProfile::sum";
  std::vector<const Profile*> nodes, cpus;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i] == nullptr)
      return make_error(Errc::kInvalidArgument, kWhere, "profile " + std::to_string(i) + " is null");
    nodes.push_back(&profiles[i]->nodes_);
    cpus.push_back(&profiles[i]->cpus_);
  }
  auto n = Profile::sum(nodes);
  if (!n) return make_error(n.error().code, kWhere, "nodes: " + n.error().message);
  auto c = Profile::sum(cpus);
  if (!c) return make_error(c.error().code, kWhere, "cpus: " + c.error().message);
  return NodeCpuProfile(std::move(n).value(), std::move(c).value());
}

Result<Capacity> NodeCpuProfile::free_at(Time t) const {
  if (auto e = check_point_time("NodeCpuProfile::free_at", "t", t, origin())) return *e;
  return Capacity{ProfileAccess::tree(nodes_).value_at(t),
                  ProfileAccess::tree(cpus_).value_at(t)};
}

Result<Capacity> NodeCpuProfile::min_over(Time t, Duration d) const {
  static const char* kWhere = "NodeCpuProfile::min_over";
  if (auto e = check_point_time(kWhere, "t", t, origin())) return *e;
  if (auto e = check_duration(kWhere, d, true)) return *e;
  Time end = sat_add(t, query_duration(d));
  return Capacity{ProfileAccess::tree(nodes_).min_in(t, end),
                  ProfileAccess::tree(cpus_).min_in(t, end)};
}

Result<Time> NodeCpuProfile::earliest_fit(Time t, Duration d, Capacity need) const {
  static const char* kWhere = "NodeCpuProfile::earliest_fit";
  if (auto e = check_nonneg_time(kWhere, "t", t)) return *e;
  if (auto e = check_duration(kWhere, d, true)) return *e;
  if (auto e = check_capacity_request(kWhere, "need", need)) return *e;
  return run_query(node_cpu_conditions(*this, need), false, t, d);
}

Result<Time> NodeCpuProfile::next_fit(Time after, Duration d, Capacity need) const {
  static const char* kWhere = "NodeCpuProfile::next_fit";
  if (auto e = check_nonneg_time(kWhere, "after", after)) return *e;
  if (auto e = check_duration(kWhere, d, true)) return *e;
  if (auto e = check_capacity_request(kWhere, "need", need)) return *e;
  return run_query(node_cpu_conditions(*this, need), true, after, d);
}

Time NodeCpuProfile::next_change_point(Time after) const {
  return std::min(nodes_.next_change_point(after), cpus_.next_change_point(after));
}

Result<std::vector<NodeCpuSlot>> NodeCpuProfile::free_slots(Time from, Time until,
                                                            Capacity min_free) const {
  static const char* kWhere = "NodeCpuProfile::free_slots";
  if (auto e = check_point_time(kWhere, "from", from, origin())) return *e;
  if (until < from)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "until " + std::to_string(until) + " is before from " +
                          std::to_string(from));
  std::vector<NodeCpuSlot> out;
  if (until == from) return out;
  StepTree::Cursor n(ProfileAccess::tree(nodes_), from);
  StepTree::Cursor c(ProfileAccess::tree(cpus_), from);
  Time s = from;
  for (;;) {
    Time nx = std::min(n.next_time(), c.next_time());
    if (n.value() >= min_free.nodes && c.value() >= min_free.cpus)
      out.push_back(NodeCpuSlot{s, std::min(nx, until), {n.value(), c.value()}});
    if (nx >= until) break;
    if (n.next_time() == nx) n.advance();
    if (c.next_time() == nx) c.advance();
    s = nx;
  }
  return out;
}

Result<SpanId> NodeCpuProfile::add_span(Time start, Duration d, Capacity amount,
                                        Admission admission) {
  static const char* kWhere = "NodeCpuProfile::add_span";
  if (auto e = check_point_time(kWhere, "start", start, origin())) return *e;
  if (auto e = check_duration(kWhere, d, false)) return *e;
  if (auto e = check_capacity_request(kWhere, "amount", amount)) return *e;
  Time end = sat_add(start, d);
  const Amount want[2] = {amount.nodes, amount.cpus};
  Profile* dims[2] = {&nodes_, &cpus_};
  static const char* kNames[2] = {"nodes", "cpus"};
  for (int i = 0; i < 2; ++i) {
    if (want[i] == 0) continue;
    Amount m = ProfileAccess::tree(*dims[i]).min_in(start, end);
    if (admission == Admission::kMustFit && m < want[i])
      return make_error(Errc::kNoFit, kWhere,
                        std::to_string(want[i]) + " " + kNames[i] + " over " +
                            fmt_range(start, end) + " do not fit: only " +
                            std::to_string(m) + " free");
  }
  SpanId inner[2] = {kNoSpan, kNoSpan};
  for (int i = 0; i < 2; ++i) {
    if (want[i] == 0) continue;
    auto id = dims[i]->add_span(start, d, want[i], admission);
    if (!id) {
      if (i == 1 && inner[0] != kNoSpan) (void)nodes_.remove_span(inner[0]);
      return make_error(id.error().code, kWhere,
                        std::string(kNames[i]) + ": " + id.error().message);
    }
    inner[i] = id.value();
  }
  SpanId id = next_id_++;
  spans_.emplace(id, Entry{start, end, amount, inner[0], inner[1]});
  return id;
}

Status NodeCpuProfile::remove_span(SpanId id) {
  auto it = spans_.find(id);
  if (it == spans_.end())
    return make_error(Errc::kNotFound, "NodeCpuProfile::remove_span",
                      "no span with id " + std::to_string(id));
  if (it->second.node_span != kNoSpan) (void)nodes_.remove_span(it->second.node_span);
  if (it->second.cpu_span != kNoSpan) (void)cpus_.remove_span(it->second.cpu_span);
  spans_.erase(it);
  return {};
}

Status NodeCpuProfile::shrink_span(SpanId id, Time new_end, Capacity new_amount) {
  static const char* kWhere = "NodeCpuProfile::shrink_span";
  auto it = spans_.find(id);
  if (it == spans_.end())
    return make_error(Errc::kNotFound, kWhere, "no span with id " + std::to_string(id));
  Entry& s = it->second;
  if (new_end <= s.start)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "new_end " + std::to_string(new_end) +
                          " must be after the span's start " +
                          std::to_string(s.start) + " (use remove_span)");
  if (new_end > s.end)
    return make_error(Errc::kInvalidArgument, kWhere,
                      "new_end " + fmt_time(new_end) + " is after the span's end " +
                          fmt_time(s.end) + " (shrink cannot extend)");
  if (new_amount.nodes < 0 || new_amount.nodes > s.amount.nodes ||
      new_amount.cpus < 0 || new_amount.cpus > s.amount.cpus ||
      (new_amount.nodes == 0 && new_amount.cpus == 0))
    return make_error(Errc::kInvalidArgument, kWhere,
                      "new_amount must be within [0, " + std::to_string(s.amount.nodes) +
                          "] nodes and [0, " + std::to_string(s.amount.cpus) +
                          "] cpus, not both 0 (got " + std::to_string(new_amount.nodes) +
                          ", " + std::to_string(new_amount.cpus) + ")");
  Profile* dims[2] = {&nodes_, &cpus_};
  SpanId* inner[2] = {&s.node_span, &s.cpu_span};
  const Amount want[2] = {new_amount.nodes, new_amount.cpus};
  for (int i = 0; i < 2; ++i) {
    if (*inner[i] == kNoSpan) continue;  // was 0, so stays 0
    if (want[i] == 0) {
      (void)dims[i]->remove_span(*inner[i]);
      *inner[i] = kNoSpan;
    } else {
      (void)dims[i]->shrink_span(*inner[i], new_end, want[i]);
    }
  }
  s.end = new_end;
  s.amount = new_amount;
  return {};
}

Result<NodeCpuSpan> NodeCpuProfile::span(SpanId id) const {
  auto it = spans_.find(id);
  if (it == spans_.end())
    return make_error(Errc::kNotFound, "NodeCpuProfile::span",
                      "no span with id " + std::to_string(id));
  return NodeCpuSpan{it->second.start, it->second.end, it->second.amount};
}

}  // namespace flexco
