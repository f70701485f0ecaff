// SPDX-License-Identifier: GPL-2.0-or-later
// SHA-256 for the request authentication of doc/auth.md: every signed HTTP
// call binds the digest of its body.  A thin C++ face on GNU Nettle's
// sha256 (libnettle, which libmicrohttpd's GnuTLS already brings into every
// process that serves FlexCo's HTTP), so the digest itself is maintained
// code, not ours.
//
// Incremental (update any number of times, then finish) or one-shot
// (sha256 / sha256_hex).  No allocation except the hex string, no global
// state; one thread at a time per Sha256 object.

#ifndef FLEXCO_CORE_SHA256_HPP
#define FLEXCO_CORE_SHA256_HPP

#include <nettle/sha2.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace flexco {

class Sha256 {
 public:
  static constexpr std::size_t kDigestSize = SHA256_DIGEST_SIZE;  // 32 bytes
  static constexpr std::size_t kHexSize = 2 * kDigestSize;        // characters
  static constexpr std::size_t kBlockSize = SHA256_BLOCK_SIZE;    // 64 bytes

  using Digest = std::array<std::uint8_t, kDigestSize>;

  Sha256() noexcept { reset(); }

  // Start over, as if freshly constructed.
  void reset() noexcept;

  // Append `size` bytes.  `data` may be null only when size == 0.
  void update(const void* data, std::size_t size) noexcept;
  void update(std::string_view data) noexcept { update(data.data(), data.size()); }

  // Pad, produce the digest and reset the object for the next message.
  Digest finish() noexcept;

 private:
  struct sha256_ctx ctx_;
};

// Digest of one whole message.
Sha256::Digest sha256(std::string_view data) noexcept;

// Lowercase hexadecimal, 64 characters.  Throws only std::bad_alloc.
std::string to_hex(const Sha256::Digest& digest);

// sha256 then to_hex: "e3b0c442...b855" for the empty message.
std::string sha256_hex(std::string_view data);

}  // namespace flexco

#endif  // FLEXCO_CORE_SHA256_HPP
