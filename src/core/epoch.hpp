// SPDX-License-Identifier: GPL-2.0-or-later
// epoch.hpp - the Flexco-Epoch header: which flexcod grid a request to a
// plugin comes from and the epoch of the lease its sender holds
// (doc/flexcod.md, "High availability"; doc/reservations.md, "Epochs").
//
//     Flexco-Epoch: <grid>:<epoch>
//
// <grid> is the flexcod database's instance id ([A-Za-z0-9_-]{1,64}),
// <epoch> a decimal integer in 1 .. kMaxEpoch without a sign or leading
// zero.  A plugin keeps the highest epoch it has seen per grid and
// refuses a mutation that carries a lower one (409 stale_epoch), so a
// flexcod that lost its lease cannot change anything on the cluster once
// the one that took over has spoken to it.
//
// Rules of the core library: no logging, no globals, no exceptions.

#ifndef FLEXCO_CORE_EPOCH_HPP
#define FLEXCO_CORE_EPOCH_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace flexco::epoch {

inline constexpr std::string_view kHeaderName = "Flexco-Epoch";
inline constexpr std::size_t kMaxGridLength = 64;
inline constexpr std::int64_t kMaxEpoch = (std::int64_t{1} << 53);  // exact in JSON
inline constexpr std::size_t kMaxHeaderLength = kMaxGridLength + 1 + 16;
// Grids a plugin keeps: more are refused (a cluster serves a few grids).
inline constexpr std::size_t kMaxGrids = 64;

struct Stamp {
  std::string grid;
  std::int64_t epoch = 0;
};

// Parses a header value (surrounding blanks allowed); false and *why
// (one line) when it is not <grid>:<epoch> as above.
bool parse(std::string_view value, Stamp* out, std::string* why);

// The header value of a stamp.
std::string format(const Stamp& s);

// A plugin's highest epochs, by grid.
class Fence {
 public:
  enum class Verdict {
    kAccepted,  // the epoch is the highest seen, or equal to it
    kRaised,    // a new highest (to be saved before acting)
    kStale,     // lower than one seen: refuse a mutation
    kFull,      // a new grid beyond kMaxGrids: refuse
  };
  // What the stamp's epoch is to the highest seen (*highest: that one,
  // 0 for a grid not seen); records it when higher and `raise`.
  Verdict check(const Stamp& s, bool raise, std::int64_t* highest);
  std::int64_t highest(const std::string& grid) const;
  const std::map<std::string, std::int64_t>& all() const { return seen_; }
  // Loaded from a state file: the entries that are valid (grid and epoch
  // as parse() takes them), at most kMaxGrids.
  void set(const std::string& grid, std::int64_t epoch);
  void clear() { seen_.clear(); }

 private:
  std::map<std::string, std::int64_t> seen_;
};

bool valid_grid(std::string_view g);

}  // namespace flexco::epoch

#endif  // FLEXCO_CORE_EPOCH_HPP
