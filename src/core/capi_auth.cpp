// SPDX-License-Identifier: GPL-2.0-or-later
// capi_auth.cpp - the C face of flexco::auth::Verifier (see capi_auth.h).

#include "core/capi_auth.h"

#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/auth.hpp"
#include "core/capi_util.hpp"

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
    size_t replay_capacity, size_t replay_per_uid, char* err, size_t errlen) {
  try {
    flexco::auth::VerifierConfig config;
    config.audience = audience ? audience : "";
    config.socket_path = socket_path ? socket_path : "";
    config.max_age = max_age;
    config.max_skew = max_skew;
    config.replay_capacity = replay_capacity;
    config.replay_per_uid = replay_per_uid;
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
                                      size_t errlen) {
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
