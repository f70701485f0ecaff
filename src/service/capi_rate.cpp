// SPDX-License-Identifier: GPL-2.0-or-later
// capi_rate.cpp - see capi_rate.h.

#include "service/capi_rate.h"

#include <array>

#include "service/rate_limit.hpp"

using flexco::service::RateLimiter;

static_assert(FLEXCO_RATE_KINDS == RateLimiter::kKinds, "one count of kinds");

struct flexco_rate {
  explicit flexco_rate(const std::array<RateLimiter::Limit, RateLimiter::kKinds>& l) : rl(l) {}
  RateLimiter rl;
};

extern "C" flexco_rate_t* flexco_rate_create(const uint32_t count[FLEXCO_RATE_KINDS],
                                             const uint32_t secs[FLEXCO_RATE_KINDS]) {
  try {
    std::array<RateLimiter::Limit, RateLimiter::kKinds> l;
    for (std::size_t k = 0; k < l.size(); k++) l[k] = {count[k], secs[k]};
    return new flexco_rate(l);
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_rate_destroy(flexco_rate_t* r) { delete r; }

extern "C" uint32_t flexco_rate_take(flexco_rate_t* r, int kind, uint32_t uid, uint64_t now) {
  try {
    if (r == nullptr || kind < 0) return 0;
    return r->rl.take(static_cast<std::size_t>(kind), uid, now);
  } catch (...) {
    return 0;
  }
}

extern "C" void flexco_rate_refused(const flexco_rate_t* r, uint64_t out[FLEXCO_RATE_KINDS]) {
  for (std::size_t k = 0; k < FLEXCO_RATE_KINDS; k++) out[k] = 0;
  if (r == nullptr) return;
  try {
    const auto v = r->rl.refused();
    for (std::size_t k = 0; k < FLEXCO_RATE_KINDS; k++) out[k] = v[k];
  } catch (...) {
  }
}
