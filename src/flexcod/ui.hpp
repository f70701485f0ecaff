// SPDX-License-Identifier: GPL-2.0-or-later
// ui.hpp - flexcod's read-only web view (doc/flexcod.md, "Web view"): the
// check of the static file names under /ui/ and the store of the view's
// session tokens (doc/auth.md, "Session tokens").
//
// A token is 256 random bits, handed out once (as 64 lowercase hex
// digits) to a MUNGE-authenticated user by POST /v1/ui/tokens; flexcod
// keeps only its SHA-256 digest, the uid and the expiry, in memory (a
// restart forgets every token).  A look-up compares the digest of what was
// presented with every stored digest in constant time and without stopping
// at a match, so its timing says nothing about the tokens held.  A token
// only ever authorises GET requests (the server refuses anything else).

#ifndef FLEXCO_FLEXCOD_UI_HPP
#define FLEXCO_FLEXCOD_UI_HPP

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flexcod::ui {

// The file under /ui/ a request names, or none (the answer is 404):
// `rest` is the request path after "/ui/" (no query).  "" is index.html;
// otherwise one name of 1..64 characters [A-Za-z0-9_-], a dot and one of
// the known extensions, so no '/', no "..", no '%'-escape, no hidden file
// can ever name something outside the directory.  `content_type` is set
// from the extension.
bool static_file(std::string_view rest, std::string* name, const char** content_type);

// The largest static file served (a larger one is answered 404 and logged).
inline constexpr std::size_t kMaxStaticFile = std::size_t{1} << 20;

// Reads dir/name (a name static_file() accepted): a regular file, not a
// symbolic link, at most kMaxStaticFile bytes.  False if not.
bool read_static(const std::string& dir, const std::string& name, std::string* out);

inline constexpr std::size_t kTokenHexLength = 64;   // 256 bits
inline constexpr std::size_t kMaxTokens = 4096;      // held at once, all users
inline constexpr std::size_t kMaxTokensPerUid = 32;  // one user's; the oldest goes

struct Issued {
  std::string token;        // 64 lowercase hex digits, shown once
  std::int64_t expires = 0;  // epoch seconds
};

class TokenStore {
 public:
  enum class Verdict { kValid, kMalformed, kUnknown };

  // A new token for `uid`, valid until now + lifetime; std::nullopt when
  // no randomness could be had or kMaxTokens live tokens are held.
  std::optional<Issued> issue(uid_t uid, std::int64_t lifetime, std::int64_t now);

  // The uid of a live token.  kMalformed: not 64 lowercase hex digits;
  // kUnknown: never issued, forged or expired.
  Verdict check(std::string_view token, std::int64_t now, uid_t* uid);

  std::size_t size();

 private:
  struct Entry {
    std::array<std::uint8_t, 32> digest;
    uid_t uid;
    std::int64_t expires;
    std::int64_t issued;
  };
  void purge(std::int64_t now);  // with mutex_ held
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace flexcod::ui

#endif
