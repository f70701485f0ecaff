// SPDX-License-Identifier: GPL-2.0-or-later
// capi_auth.cpp - the C face of flexco::auth::Verifier (see capi_auth.h).

#include "core/capi_auth.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/auth.hpp"
#include "core/capi_util.hpp"
#include "core/sha256.hpp"

struct flexco_verifier {
  flexco::auth::Verifier verifier;
};

using flexco::capi::put;

static_assert(FLEXCO_AUTH_MAX_TARGET == flexco::auth::kMaxPathLength,
              "capi_auth.h's FLEXCO_AUTH_MAX_TARGET must be the payload's request-target limit");
static_assert(FLEXCO_AUTH_MAX_IDEMPOTENCY_KEY == flexco::auth::kMaxIdempotencyKeyLength,
              "capi_auth.h's FLEXCO_AUTH_MAX_IDEMPOTENCY_KEY must be the payload's key limit");
static_assert(FLEXCO_AUTH_DIGEST_SIZE == flexco::auth::kDigestHexLength + 1,
              "FLEXCO_AUTH_DIGEST_SIZE is a hex SHA-256 and its NUL");

extern "C" flexco_verifier_t* flexco_verifier_create(
    const char* audience, const char* socket_path, int64_t max_age, int64_t max_skew,
    size_t replay_capacity, size_t replay_per_uid, const uid_t* exempt, size_t n_exempt,
    int64_t session_lifetime, char* err, size_t errlen) {
  try {
    flexco::auth::VerifierConfig config;
    config.audience = audience ? audience : "";
    config.socket_path = socket_path ? socket_path : "";
    config.max_age = max_age;
    config.max_skew = max_skew;
    config.replay_capacity = replay_capacity;
    config.replay_per_uid = replay_per_uid;
    if (exempt != nullptr) config.replay_share_exempt.assign(exempt, exempt + n_exempt);
    config.session_lifetime = session_lifetime;
    auto made = flexco::auth::Verifier::create(std::move(config));
    if (!made.ok()) {
      put(err, errlen, made.error().message);
      return nullptr;
    }
    return new flexco_verifier{std::move(made).value()};
  } catch (const std::bad_alloc&) {
    put(err, errlen, "out of memory");
  } catch (...) {
    put(err, errlen, "internal error creating the verifier");
  }
  return nullptr;
}

extern "C" void flexco_verifier_destroy(flexco_verifier_t* v) { delete v; }

extern "C" int flexco_verifier_verify(flexco_verifier_t* v, const char* method,
                                      const char* path, const char* body,
                                      size_t body_len, const char* header,
                                      const char* idem_key, uid_t* uid,
                                      gid_t* gid, char* digest, char* code,
                                      size_t codelen, char* err,
                                      size_t errlen, char* grant, size_t grantlen) {
  try {
    if (v == nullptr || method == nullptr || path == nullptr ||
        (body == nullptr && body_len != 0)) {
      put(code, codelen, "internal");
      put(err, errlen, "flexco_verifier_verify: invalid arguments");
      return 500;
    }
    std::string_view b = body ? std::string_view(body, body_len)
                              : std::string_view();
    std::optional<std::string_view> key;
    if (idem_key != nullptr) key = std::string_view(idem_key);
    auto r = v->verifier.verify(method, path, b, header ? header : "", key);
    if (!r.ok()) {
      put(code, codelen, flexco::auth::errc_name(r.error().code));
      put(err, errlen, r.error().message);
      return r.error().status;
    }
    if (uid) *uid = r.value().uid;
    if (gid) *gid = r.value().gid;
    if (digest) put(digest, FLEXCO_AUTH_DIGEST_SIZE, r.value().body_sha256);
    if (grant) put(grant, grantlen, r.value().session_grant);
    put(code, codelen, "");
    put(err, errlen, "");
    return 200;
  } catch (const std::bad_alloc&) {
    put(code, codelen, "internal");
    put(err, errlen, "out of memory");
  } catch (...) {
    put(code, codelen, "internal");
    put(err, errlen, "internal error in verification");
  }
  return 500;
}

extern "C" int flexco_idempotency_key_valid(const char* key) {
  if (key == nullptr) return 0;
  return flexco::auth::validate_idempotency_key(key).ok() ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Metrics bearer tokens (capi_auth.h)

extern "C" int flexco_token_file_read(const char* path, char* out, size_t outlen, char* err,
                                      size_t errlen) {
  auto fail = [&](const std::string& why) {
    put(err, errlen, std::string(path ? path : "(null)") + ": " + why);
    return -1;
  };
  if (path == nullptr || path[0] != '/') return fail("not an absolute path");
  if (out == nullptr || outlen <= FLEXCO_METRICS_TOKEN_MAX) return fail("no room for the token");
  const int fd = ::open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return fail(std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  if (st.st_uid != ::geteuid()) {
    ::close(fd);
    return fail("owned by uid " + std::to_string(st.st_uid) + ", not by uid " +
                std::to_string(::geteuid()) + " that reads it");
  }
  if (st.st_mode & 077) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(std::string("mode ") + mode + ": group or others may access it (chmod 0600)");
  }
  char buf[FLEXCO_METRICS_TOKEN_MAX + 64];
  std::size_t n = 0;
  while (n < sizeof buf) {
    const ssize_t r = ::read(fd, buf + n, sizeof buf - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int e = errno;
      ::close(fd);
      return fail(std::strerror(e));
    }
    if (r == 0) break;
    n += static_cast<std::size_t>(r);
  }
  ::close(fd);
  std::string_view s(buf, n);
  const std::size_t eol = s.find('\n');
  if (eol != std::string_view::npos) s = s.substr(0, eol);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  if (s.size() < FLEXCO_METRICS_TOKEN_MIN || s.size() > FLEXCO_METRICS_TOKEN_MAX) {
    return fail("the token must be " + std::to_string(FLEXCO_METRICS_TOKEN_MIN) + " to " +
                std::to_string(FLEXCO_METRICS_TOKEN_MAX) + " characters on the first line");
  }
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return fail("the token must be visible ASCII");
  }
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  return 0;
}

extern "C" int flexco_is_bearer(const char* header) {
  return header != nullptr && strncasecmp(header, "Bearer ", 7) == 0;
}

extern "C" int flexco_bearer_matches(const char* header, const char* token) {
  if (!flexco_is_bearer(header) || token == nullptr || token[0] == '\0') return 0;
  const char* given = header + 7;
  while (*given == ' ') given++;
  // Compare digests: the time taken depends on neither token's content
  // nor on where they differ.
  const auto a = flexco::sha256(std::string_view(given, strnlen(given, 4096)));
  const auto b = flexco::sha256(std::string_view(token));
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0 ? 1 : 0;
}
