// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the signed payload parser (doc/auth.md, "Payload").
// Its input is what munged hands back from any credential made with the
// site's key, so any local user can choose it.  Checks: no crash, and every
// payload that parses encodes back to exactly the same bytes (the format
// has one spelling), so signer and verifier can never disagree.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/auth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  auto p = flexco::auth::parse_payload(in);
  if (p.ok()) {
    auto text = flexco::auth::encode_payload(p.value());
    if (!text.ok() || text.value() != in) abort();
  }
  return 0;
}
