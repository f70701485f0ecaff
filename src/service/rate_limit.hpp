// SPDX-License-Identifier: GPL-2.0-or-later
// rate_limit.hpp - per-uid request rate limits of the plugin's HTTP service
// (flexco.conf ProbeRateLimit, ProfileRateLimit, EventsRateLimit; doc/admin.md):
// a token bucket per uid and kind of request, holding up to Count tokens and
// refilled with Count every Seconds.  No Slurm headers, no clock of its own:
// the caller says what time it is, so the rules are tested against a fake
// clock (testsuite/unit/check_rate_limit).
//
// Memory is bounded whatever the callers: the buckets live in a fixed
// table of kSlots, and a uid has kWays places it may use; a uid that finds
// none of them its own takes the one used longest ago (and starts with
// full buckets).  So a flood of new uids can at worst give a uid back its
// full bucket early; it can never take a slot from a uid that used its
// own more recently than all the others of its group.

#ifndef FLEXCO_SERVICE_RATE_LIMIT_HPP
#define FLEXCO_SERVICE_RATE_LIMIT_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace flexco::service {

class RateLimiter {
 public:
  static constexpr std::size_t kKinds = 3;   // probe, profile, events
  static constexpr std::size_t kSlots = 1024;  // a power of 2
  static constexpr std::size_t kWays = 8;

  // One kind's limit: `count` requests in `seconds` (count 0: no limit).
  struct Limit {
    std::uint32_t count = 0;
    std::uint32_t seconds = 1;
  };

  explicit RateLimiter(const std::array<Limit, kKinds>& limits);

  // Take one token of uid's bucket of `kind` at `now_usec` (monotonic).
  // 0 when the request may go on, else the whole seconds until a token is
  // there (at least 1).  A kind out of range or without a limit is never
  // refused.
  std::uint32_t take(std::size_t kind, std::uint32_t uid, std::uint64_t now_usec);

  const Limit& limit(std::size_t kind) const { return limits_.at(kind); }
  // Requests refused so far, per kind.
  std::array<std::uint64_t, kKinds> refused() const;
  // Distinct uids that hold a slot now.
  std::size_t uids() const;

 private:
  struct Slot {
    bool used = false;
    std::uint32_t uid = 0;
    std::uint64_t last_use = 0;
    std::array<std::uint64_t, kKinds> refilled{};
    std::array<double, kKinds> tokens{};  // < 0: not used yet (full)
  };

  const std::array<Limit, kKinds> limits_;
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  std::array<std::uint64_t, kKinds> refused_{};
};

}  // namespace flexco::service

#endif
