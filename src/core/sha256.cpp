// SPDX-License-Identifier: GPL-2.0-or-later
// SHA-256 through GNU Nettle (see sha256.hpp).

#include "core/sha256.hpp"

namespace flexco {

void Sha256::reset() noexcept { sha256_init(&ctx_); }

void Sha256::update(const void* data, std::size_t size) noexcept {
  if (size == 0) return;
  sha256_update(&ctx_, size, static_cast<const std::uint8_t*>(data));
}

Sha256::Digest Sha256::finish() noexcept {
  Digest digest;
  sha256_digest(&ctx_, digest.size(), digest.data());  // also re-initialises ctx_
  return digest;
}

Sha256::Digest sha256(std::string_view data) noexcept {
  Sha256 hash;
  hash.update(data);
  return hash.finish();
}

std::string to_hex(const Sha256::Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(Sha256::kHexSize, '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = kDigits[digest[i] >> 4];
    out[2 * i + 1] = kDigits[digest[i] & 0x0f];
  }
  return out;
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

}  // namespace flexco
