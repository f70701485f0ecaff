// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the Authorization header parser (doc/auth.md,
// "HTTP header").  Whatever a client sends in the header reaches it before
// any authentication.  Checks: no crash, no sanitizer report, and a header
// that parses is one a signer could have written (format of the result).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/auth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  auto cred = flexco::auth::parse_authorization(in);
  if (cred.ok()) {
    // A parsed credential re-formats into a header that parses to it again.
    auto again = flexco::auth::format_authorization(cred.value());
    if (!again.ok()) abort();
    auto back = flexco::auth::parse_authorization(again.value());
    if (!back.ok() || back.value() != cred.value()) abort();
  }
  return 0;
}
