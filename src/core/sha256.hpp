// SHA-256 (FIPS 180-4), written for the request authentication of
// doc/auth.md: every signed HTTP call binds the digest of its body.
//
// Incremental (update any number of times, then finish) or one-shot
// (sha256 / sha256_hex).  No allocation except the hex string, no global
// state; one thread at a time per Sha256 object.

#ifndef FLEXCO_CORE_SHA256_HPP
#define FLEXCO_CORE_SHA256_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace flexco {

class Sha256 {
 public:
  static constexpr std::size_t kDigestSize = 32;  // bytes
  static constexpr std::size_t kHexSize = 64;     // characters
  static constexpr std::size_t kBlockSize = 64;   // bytes

  using Digest = std::array<std::uint8_t, kDigestSize>;

  Sha256() noexcept { reset(); }

  // Start over, as if freshly constructed.
  void reset() noexcept;

  // Append `size` bytes.  `data` may be null only when size == 0.  The
  // message may be at most 2^61 - 1 bytes long (the length field of
  // FIPS 180-4 counts bits in 64 bits); more is never fed by our callers and
  // would wrap the length silently.
  void update(const void* data, std::size_t size) noexcept;
  void update(std::string_view data) noexcept { update(data.data(), data.size()); }

  // Pad, produce the digest and reset the object for the next message.
  Digest finish() noexcept;

 private:
  void compress(const std::uint8_t* block) noexcept;

  std::array<std::uint32_t, 8> state_{};
  std::array<std::uint8_t, kBlockSize> buffer_{};
  std::size_t buffered_ = 0;     // bytes waiting in buffer_ (< kBlockSize)
  std::uint64_t length_ = 0;     // message bytes seen so far
};

// Digest of one whole message.
Sha256::Digest sha256(std::string_view data) noexcept;

// Lowercase hexadecimal, 64 characters.  Throws only std::bad_alloc.
std::string to_hex(const Sha256::Digest& digest);

// sha256 then to_hex: "e3b0c442...b855" for the empty message.
std::string sha256_hex(std::string_view data);

}  // namespace flexco

#endif  // FLEXCO_CORE_SHA256_HPP
