// SPDX-License-Identifier: GPL-2.0-or-later
// epoch.cpp - see epoch.hpp.

#include "core/epoch.hpp"

namespace flexco::epoch {

bool valid_grid(std::string_view g) {
  if (g.empty() || g.size() > kMaxGridLength) return false;
  for (char c : g) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool parse(std::string_view v, Stamp* out, std::string* why) {
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!v.empty() && blank(v.front())) v.remove_prefix(1);
  while (!v.empty() && blank(v.back())) v.remove_suffix(1);
  if (v.size() > kMaxHeaderLength) {
    *why = "Flexco-Epoch: longer than " + std::to_string(kMaxHeaderLength) + " bytes";
    return false;
  }
  const std::size_t colon = v.find(':');
  if (colon == std::string_view::npos) {
    *why = "Flexco-Epoch: not <grid>:<epoch>";
    return false;
  }
  const std::string_view grid = v.substr(0, colon), num = v.substr(colon + 1);
  if (!valid_grid(grid)) {
    *why = "Flexco-Epoch: the grid is not 1-64 of A-Z a-z 0-9 _ -";
    return false;
  }
  if (num.empty() || num.size() > 16 || num[0] == '0') {
    *why = "Flexco-Epoch: the epoch is not an integer in 1..2^53";
    return false;
  }
  std::int64_t e = 0;
  for (char c : num) {
    if (c < '0' || c > '9') {
      *why = "Flexco-Epoch: the epoch is not an integer in 1..2^53";
      return false;
    }
    e = e * 10 + (c - '0');  // at most 16 digits: no overflow
  }
  if (e > kMaxEpoch) {
    *why = "Flexco-Epoch: the epoch is not an integer in 1..2^53";
    return false;
  }
  out->grid.assign(grid.data(), grid.size());
  out->epoch = e;
  return true;
}

std::string format(const Stamp& s) { return s.grid + ":" + std::to_string(s.epoch); }

Fence::Verdict Fence::check(const Stamp& s, bool raise, std::int64_t* highest) {
  auto it = seen_.find(s.grid);
  if (it == seen_.end()) {
    *highest = 0;
    if (!raise) return Verdict::kAccepted;
    if (seen_.size() >= kMaxGrids) return Verdict::kFull;
    seen_.emplace(s.grid, s.epoch);
    *highest = s.epoch;
    return Verdict::kRaised;
  }
  *highest = it->second;
  if (s.epoch < it->second) return Verdict::kStale;
  if (s.epoch == it->second || !raise) return Verdict::kAccepted;
  it->second = s.epoch;
  *highest = s.epoch;
  return Verdict::kRaised;
}

std::int64_t Fence::highest(const std::string& grid) const {
  auto it = seen_.find(grid);
  return it == seen_.end() ? 0 : it->second;
}

void Fence::set(const std::string& grid, std::int64_t epoch) {
  if (!valid_grid(grid) || epoch < 1 || epoch > kMaxEpoch) return;
  if (seen_.size() >= kMaxGrids && seen_.find(grid) == seen_.end()) return;
  std::int64_t& e = seen_[grid];
  if (epoch > e) e = epoch;
}

}  // namespace flexco::epoch
