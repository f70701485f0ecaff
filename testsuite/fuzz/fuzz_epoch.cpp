// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the Flexco-Epoch header parser (core/epoch.hpp),
// which the plugin runs on every reservation request from flexcod before
// anything else is done with it.  Checks: no crash, no sanitizer report;
// a value that parses formats into one that parses to the same stamp; the
// fence's verdicts keep their order (never lower the highest seen).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/epoch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  flexco::epoch::Stamp s;
  std::string why;
  if (!flexco::epoch::parse(in, &s, &why)) {
    if (why.empty()) abort();
    return 0;
  }
  if (s.epoch < 1 || s.epoch > flexco::epoch::kMaxEpoch || !flexco::epoch::valid_grid(s.grid)) abort();
  flexco::epoch::Stamp back;
  if (!flexco::epoch::parse(flexco::epoch::format(s), &back, &why) || back.grid != s.grid ||
      back.epoch != s.epoch)
    abort();
  flexco::epoch::Fence f;
  std::int64_t hi = 0;
  if (f.check(s, true, &hi) != flexco::epoch::Fence::Verdict::kRaised || hi != s.epoch) abort();
  if (s.epoch > 1 && f.check({s.grid, s.epoch - 1}, true, &hi) != flexco::epoch::Fence::Verdict::kStale)
    abort();
  if (f.highest(s.grid) != s.epoch) abort();
  return 0;
}
