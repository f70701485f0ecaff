// SPDX-License-Identifier: GPL-2.0-or-later
// rate_limit.cpp - see rate_limit.hpp.

#include "service/rate_limit.hpp"

#include <cmath>

namespace flexco::service {

RateLimiter::RateLimiter(const std::array<Limit, kKinds>& limits)
    : limits_(limits), slots_(kSlots) {}

std::uint32_t RateLimiter::take(std::size_t kind, std::uint32_t uid, std::uint64_t now) {
  if (kind >= kKinds || limits_[kind].count == 0) return 0;
  const double cap = limits_[kind].count;
  const double secs = limits_[kind].seconds > 0 ? limits_[kind].seconds : 1;
  const double per_usec = cap / (secs * 1e6);

  std::lock_guard<std::mutex> lock(mutex_);
  Slot* slot = nullptr;
  Slot* oldest = nullptr;
  for (std::size_t w = 0; w < kWays; w++) {
    Slot& s = slots_[(static_cast<std::uint32_t>(uid * 2654435761u) + w) & (kSlots - 1)];
    if (s.used && s.uid == uid) {
      slot = &s;
      break;
    }
    if (oldest == nullptr || !s.used || (oldest->used && s.last_use < oldest->last_use)) {
      oldest = &s;
    }
  }
  if (slot == nullptr) {
    slot = oldest;
    *slot = Slot{};
    slot->used = true;
    slot->uid = uid;
    slot->tokens.fill(-1.0);
  }
  slot->last_use = now;
  double& tokens = slot->tokens[kind];
  if (tokens < 0.0) {
    tokens = cap;
  } else {
    // a clock that went backwards refills nothing
    const std::uint64_t since = now > slot->refilled[kind] ? now - slot->refilled[kind] : 0;
    tokens += static_cast<double>(since) * per_usec;
    if (tokens > cap) tokens = cap;
  }
  if (now > slot->refilled[kind]) slot->refilled[kind] = now;
  if (tokens >= 1.0) {
    tokens -= 1.0;
    return 0;
  }
  refused_[kind]++;
  const double wait = std::ceil((1.0 - tokens) / per_usec / 1e6);
  return wait < 1.0 ? 1 : static_cast<std::uint32_t>(wait);
}

std::array<std::uint64_t, RateLimiter::kKinds> RateLimiter::refused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refused_;
}

std::size_t RateLimiter::uids() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t n = 0;
  for (const Slot& s : slots_) n += s.used ? 1 : 0;
  return n;
}

}  // namespace flexco::service
