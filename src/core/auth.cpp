// SPDX-License-Identifier: GPL-2.0-or-later
// Request authentication with MUNGE: payload format, header format, signer,
// replay cache and verifier.  The scheme and the reasons behind every check
// are in doc/auth.md.

#include "core/auth.hpp"
#include "core/session.hpp"

#include <munge.h>
#include <sys/random.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "core/sha256.hpp"

namespace flexco::auth {

namespace {

// ---------------------------------------------------------------------------
// Errors

Error make_error(Errc code, std::string_view detail, int munge_error = 0) {
  Error error;
  error.code = code;
  error.status = http_status(code);
  error.munge_error = munge_error;
  error.message = errc_name(code);
  error.message += ": ";
  error.message += detail;
  return error;
}

// What a public function returns when an exception (std::bad_alloc) would
// otherwise escape.  The message fits in std::string's small buffer, so
// building it allocates nothing and cannot throw again.
Error out_of_memory() noexcept {
  Error error;
  error.code = Errc::kInternal;
  error.status = 500;
  error.message = "internal_error";
  return error;
}

// The message of an Error without its "<code>: " prefix.
std::string_view detail_of(const Error& error) {
  std::string_view detail = error.message;
  const std::size_t colon = detail.find(": ");
  if (colon != std::string_view::npos) detail.remove_prefix(colon + 2);
  return detail;
}

// Re-labels a field validation error with another code, keeping its detail.
Error relabel(const Error& error, Errc code) {
  return make_error(code, detail_of(error), error.munge_error);
}

// ---------------------------------------------------------------------------
// Character classes and fields

bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }
bool is_visible(char c) { return c >= 0x21 && c <= 0x7e; }
bool is_base64(char c) {
  return is_upper(c) || (c >= 'a' && c <= 'z') || is_digit(c) || c == '+' ||
         c == '/' || c == '=';
}
bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string size_text(std::size_t n) { return std::to_string(n); }

bool is_audience_char(char c) {
  return is_upper(c) || (c >= 'a' && c <= 'z') || is_digit(c) || c == '_' || c == '-';
}

Status check_audience(std::string_view audience) {
  if (audience.empty()) return make_error(Errc::kInvalidArgument, "audience is empty");
  if (audience.size() > kMaxAudienceLength) {
    return make_error(Errc::kInvalidArgument,
                      "audience is longer than " + size_text(kMaxAudienceLength) +
                          " characters");
  }
  if (!std::all_of(audience.begin(), audience.end(), is_audience_char)) {
    return make_error(Errc::kInvalidArgument,
                      "audience must be letters, digits, '_' and '-' only");
  }
  return {};
}

Status check_method(std::string_view method) {
  if (method.empty()) return make_error(Errc::kInvalidArgument, "method is empty");
  if (method.size() > kMaxMethodLength) {
    return make_error(Errc::kInvalidArgument,
                      "method is longer than " + size_text(kMaxMethodLength) +
                          " characters");
  }
  if (!std::all_of(method.begin(), method.end(), is_upper)) {
    return make_error(Errc::kInvalidArgument,
                      "method must be upper-case letters A-Z only");
  }
  return {};
}

Status check_path(std::string_view path) {
  if (path.empty()) return make_error(Errc::kInvalidArgument, "path is empty");
  if (path.size() > kMaxPathLength) {
    return make_error(Errc::kInvalidArgument,
                      "path is longer than " + size_text(kMaxPathLength) +
                          " characters (" + size_text(path.size()) + ")");
  }
  if (path.front() != '/') {
    return make_error(Errc::kInvalidArgument, "path must start with '/'");
  }
  const auto bad = std::find_if_not(path.begin(), path.end(), is_visible);
  if (bad != path.end()) {
    return make_error(Errc::kInvalidArgument,
                      "path character at offset " +
                          size_text(static_cast<std::size_t>(bad - path.begin())) +
                          " is not visible ASCII (0x21-0x7e)");
  }
  return {};
}

Status check_idempotency_key(std::string_view key) {
  if (key.empty()) return make_error(Errc::kInvalidArgument, "Idempotency-Key is empty");
  if (key.size() > kMaxIdempotencyKeyLength) {
    return make_error(Errc::kInvalidArgument,
                      "Idempotency-Key is longer than " + size_text(kMaxIdempotencyKeyLength) +
                          " characters (" + size_text(key.size()) + ")");
  }
  const auto bad = std::find_if_not(key.begin(), key.end(), is_visible);
  if (bad != key.end()) {
    return make_error(Errc::kInvalidArgument,
                      "Idempotency-Key character at offset " +
                          size_text(static_cast<std::size_t>(bad - key.begin())) +
                          " is not visible ASCII (0x21-0x7e)");
  }
  if (key == kNoIdempotencyKey) {
    return make_error(Errc::kInvalidArgument,
                      "Idempotency-Key '-' is reserved (it is how a payload says 'no key')");
  }
  return {};
}

Status check_hex(std::string_view what, std::string_view text, std::size_t length) {
  if (text.size() != length) {
    return make_error(Errc::kInvalidArgument,
                      std::string(what) + " must be " + size_text(length) +
                          " hex digits (got " + size_text(text.size()) + ")");
  }
  if (!std::all_of(text.begin(), text.end(), is_lower_hex)) {
    return make_error(Errc::kInvalidArgument,
                      std::string(what) + " must be lowercase hex digits 0-9a-f");
  }
  return {};
}

Status check_timestamp(std::int64_t timestamp) {
  if (timestamp < 0) {
    return make_error(Errc::kInvalidArgument, "timestamp is negative");
  }
  return {};
}

// Decimal, no sign, no leading zero (except "0" itself), fits int64.
std::optional<std::int64_t> parse_decimal(std::string_view text) {
  if (text.empty() || text.size() > kMaxTimestampDigits) return std::nullopt;
  if (text.size() > 1 && text.front() == '0') return std::nullopt;
  std::int64_t value = 0;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  for (char c : text) {
    if (!is_digit(c)) return std::nullopt;
    const int digit = c - '0';
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

// MUNGE's text credential: "MUNGE:" base64 ":".
Status check_credential(std::string_view credential) {
  constexpr std::string_view kPrefix = "MUNGE:";
  if (credential.size() < kPrefix.size() + 2 ||
      credential.substr(0, kPrefix.size()) != kPrefix ||
      credential.back() != ':') {
    return make_error(Errc::kMalformedCredential,
                      "credential is not of the form 'MUNGE:<base64>:'");
  }
  const std::string_view body =
      credential.substr(kPrefix.size(), credential.size() - kPrefix.size() - 1);
  const auto bad = std::find_if_not(body.begin(), body.end(), is_base64);
  if (bad != body.end()) {
    return make_error(Errc::kMalformedCredential,
                      "credential contains a character outside base64 at offset " +
                          size_text(kPrefix.size() +
                                    static_cast<std::size_t>(bad - body.begin())));
  }
  return {};
}

bool scheme_matches(std::string_view token) {
  if (token.size() != kScheme.size()) return false;
  for (std::size_t i = 0; i < token.size(); ++i) {
    char c = token[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != kScheme[i]) return false;
  }
  return true;
}

Status check_socket_path(const std::string& socket_path) {
  if (socket_path.empty()) return {};
  if (socket_path.find('\0') != std::string::npos) {
    return make_error(Errc::kInvalidArgument, "socket_path contains a NUL byte");
  }
  if (socket_path.front() != '/') {
    return make_error(Errc::kInvalidArgument,
                      "socket_path must be absolute: '" + socket_path + "'");
  }
  if (socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return make_error(Errc::kInvalidArgument,
                      "socket_path is longer than a Unix socket path may be (" +
                          size_text(socket_path.size()) + " >= " +
                          size_text(sizeof(sockaddr_un{}.sun_path)) + ")");
  }
  return {};
}

// ---------------------------------------------------------------------------
// libmunge

struct MungeCtxDeleter {
  void operator()(munge_ctx_t ctx) const noexcept { munge_ctx_destroy(ctx); }
};
using MungeCtx = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>, MungeCtxDeleter>;

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};
using MallocBuffer = std::unique_ptr<char, FreeDeleter>;

// munged's own words for the failure: the context's detailed message if it
// has one, else the generic text of the error number.
std::string munge_text(munge_ctx_t ctx, munge_err_t err) {
  const char* detail = ctx != nullptr ? munge_ctx_strerror(ctx) : nullptr;
  const char* text = (detail != nullptr && *detail != '\0') ? detail : munge_strerror(err);
  return text != nullptr ? std::string(text) : "munge error " + std::to_string(err);
}

// Failures that say munged could not be asked, not that it said no.
bool munge_unavailable(munge_err_t err) {
  return err == EMUNGE_SOCKET || err == EMUNGE_TIMEOUT ||
         err == EMUNGE_NO_MEMORY || err == EMUNGE_SNAFU;
}

Result<MungeCtx> make_ctx(const std::string& socket_path) {
  MungeCtx ctx(munge_ctx_create());
  if (!ctx) return make_error(Errc::kInternal, "munge_ctx_create failed (out of memory)");
  if (!socket_path.empty()) {
    const munge_err_t err =
        munge_ctx_set(ctx.get(), MUNGE_OPT_SOCKET, socket_path.c_str());
    if (err != EMUNGE_SUCCESS) {
      return make_error(Errc::kInternal,
                        "cannot set the munge socket: " + munge_text(ctx.get(), err),
                        err);
    }
  }
  return ctx;
}

// 128 bits from the kernel's CSPRNG, as lowercase hex.
Result<std::string> make_nonce() {
  std::uint8_t bytes[kNonceHexLength / 2];
  std::size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(Errc::kInternal,
                        "getrandom failed: errno " + std::to_string(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string nonce(kNonceHexLength, '0');
  for (std::size_t i = 0; i < sizeof(bytes); ++i) {
    nonce[2 * i] = kDigits[bytes[i] >> 4];
    nonce[2 * i + 1] = kDigits[bytes[i] & 0x0f];
  }
  return nonce;
}

std::int64_t system_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The replay cache key: uid (4 bytes, big-endian) then the nonce text, so
// that one user can never make another user's request look replayed.
std::string replay_key(uid_t uid, std::string_view nonce) {
  std::string key;
  key.reserve(4 + nonce.size());
  const auto u = static_cast<std::uint32_t>(uid);
  key.push_back(static_cast<char>(u >> 24));
  key.push_back(static_cast<char>(u >> 16));
  key.push_back(static_cast<char>(u >> 8));
  key.push_back(static_cast<char>(u));
  key.append(nonce);
  return key;
}

}  // namespace

// ---------------------------------------------------------------------------
// Errors

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::kMissingCredential: return "missing_credential";
    case Errc::kMalformedCredential: return "malformed_credential";
    case Errc::kMungeRejected: return "munge_rejected";
    case Errc::kMalformedPayload: return "malformed_payload";
    case Errc::kWrongAudience: return "wrong_audience";
    case Errc::kRequestMismatch: return "request_mismatch";
    case Errc::kExpired: return "expired";
    case Errc::kNotYetValid: return "not_yet_valid";
    case Errc::kReplayed: return "replayed";
    case Errc::kIdempotencyKeyMismatch: return "idempotency_key_mismatch";
    case Errc::kUnknownSession: return "unknown_session";
    case Errc::kSessionExpired: return "session_expired";
    case Errc::kBadMac: return "bad_mac";
    case Errc::kInvalidRequest: return "invalid_request";
    case Errc::kReplayCacheFull: return "replay_cache_full";
    case Errc::kMungeUnavailable: return "munge_unavailable";
    case Errc::kInvalidArgument: return "invalid_argument";
    case Errc::kSignFailed: return "sign_failed";
    case Errc::kInternal: return "internal_error";
  }
  return "internal_error";
}

int http_status(Errc code) noexcept {
  switch (code) {
    case Errc::kMissingCredential:
    case Errc::kMalformedCredential:
    case Errc::kMungeRejected:
    case Errc::kMalformedPayload:
    case Errc::kWrongAudience:
    case Errc::kRequestMismatch:
    case Errc::kExpired:
    case Errc::kNotYetValid:
    case Errc::kReplayed:
    case Errc::kIdempotencyKeyMismatch:
    case Errc::kUnknownSession:
    case Errc::kSessionExpired:
    case Errc::kBadMac:
      return 401;
    case Errc::kInvalidRequest:
      return 400;
    case Errc::kReplayCacheFull:
    case Errc::kMungeUnavailable:
      return 503;
    case Errc::kInvalidArgument:
    case Errc::kSignFailed:
    case Errc::kInternal:
      return 500;
  }
  return 500;
}

// ---------------------------------------------------------------------------
// Payload

Status validate_audience(std::string_view audience) noexcept try {
  return check_audience(audience);
} catch (...) {
  return out_of_memory();
}

Status validate_method(std::string_view method) noexcept try {
  return check_method(method);
} catch (...) {
  return out_of_memory();
}

Status validate_path(std::string_view path) noexcept try {
  return check_path(path);
} catch (...) {
  return out_of_memory();
}

Status validate_idempotency_key(std::string_view key) noexcept try {
  return check_idempotency_key(key);
} catch (...) {
  return out_of_memory();
}

Result<std::string> encode_payload(const Payload& payload) noexcept try {
  if (payload.version != 3 && payload.version != 2 && payload.version != 4) {
    return make_error(Errc::kInvalidArgument,
                      "version must be 4, 3 or 2 (got " + std::to_string(payload.version) + ")");
  }
  if ((payload.version == 4) != payload.session_offer.has_value()) {
    return make_error(Errc::kInvalidArgument,
                      "a session offer goes with version 4, and only with it");
  }
  if (payload.session_offer) {
    if (Status s = check_hex("session_offer", *payload.session_offer, kSessionOfferHexLength); !s)
      return s.error();
  }
  if (payload.idempotency_key) {
    if (payload.version == 2) {
      return make_error(Errc::kInvalidArgument,
                        "a flexco-auth-v2 payload cannot carry an Idempotency-Key");
    }
    if (Status s = check_idempotency_key(*payload.idempotency_key); !s) return s.error();
  }
  for (const Status& status :
       {check_audience(payload.audience), check_method(payload.method),
        check_path(payload.path), check_hex("body_sha256", payload.body_sha256, kDigestHexLength),
        check_timestamp(payload.timestamp),
        check_hex("nonce", payload.nonce, kNonceHexLength)}) {
    if (!status) return status.error();
  }
  std::string text;
  text.reserve(kMaxPayloadSize);
  for (std::string_view field :
       {payload.version == 4   ? kSessionOfferPayloadVersion
        : payload.version == 3 ? kPayloadVersion
                               : kLegacyPayloadVersion,
        std::string_view(payload.audience),
        std::string_view(payload.method),
        std::string_view(payload.path), std::string_view(payload.body_sha256)}) {
    text.append(field);
    text.push_back('\n');
  }
  text.append(std::to_string(payload.timestamp));
  text.push_back('\n');
  text.append(payload.nonce);
  text.push_back('\n');
  if (payload.version >= 3) {
    text.append(payload.idempotency_key ? std::string_view(*payload.idempotency_key)
                                        : kNoIdempotencyKey);
    text.push_back('\n');
  }
  if (payload.version == 4) {
    text.append(*payload.session_offer);
    text.push_back('\n');
  }
  return text;
} catch (...) {
  return out_of_memory();
}

Result<Payload> parse_payload(std::string_view text) noexcept try {
  const auto fail = [](std::string_view detail) {
    return make_error(Errc::kMalformedPayload, detail);
  };
  if (text.size() > kMaxPayloadSize) {
    return fail("payload is " + size_text(text.size()) + " bytes, more than " +
                size_text(kMaxPayloadSize));
  }
  if (text.empty() || text.back() != '\n') {
    return fail("payload does not end with a newline");
  }
  // The version first: it decides how the rest reads.
  const std::string_view version = text.substr(0, text.find('\n'));
  if (version == kRefusedPayloadVersion) {
    return fail("line 1 is '" + std::string(kRefusedPayloadVersion) +
                "', which names no audience and is no longer accepted; sign '" +
                std::string(kPayloadVersion) + "' (doc/auth.md)");
  }
  if (version != kPayloadVersion && version != kLegacyPayloadVersion &&
      version != kSessionOfferPayloadVersion) {
    return fail("line 1 is not '" + std::string(kPayloadVersion) + "' (nor '" +
                std::string(kSessionOfferPayloadVersion) + "' or '" +
                std::string(kLegacyPayloadVersion) + "')");
  }
  const bool v4 = version == kSessionOfferPayloadVersion;
  const bool v3 = version == kPayloadVersion || v4;
  const std::size_t expected = v4 ? kOfferPayloadFields : v3 ? kPayloadFields : kLegacyPayloadFields;
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  if (lines != expected) {
    return fail("payload has " + size_text(lines) + " lines, expected " +
                size_text(expected) + " (" + std::string(version) + ")");
  }

  std::string_view field[kOfferPayloadFields];
  std::size_t start = 0;
  for (std::size_t i = 0; i < expected; ++i) {
    std::string_view& f = field[i];
    const std::size_t end = text.find('\n', start);
    f = text.substr(start, end - start);
    start = end + 1;
  }

  const struct {
    std::size_t index;
    const char* name;
    Status status;
  } checks[] = {
      {1, "audience", check_audience(field[1])},
      {2, "method", check_method(field[2])},
      {3, "path", check_path(field[3])},
      {4, "body sha256", check_hex("body_sha256", field[4], kDigestHexLength)},
      {6, "nonce", check_hex("nonce", field[6], kNonceHexLength)},
  };
  for (const auto& c : checks) {
    if (!c.status) {
      return fail("line " + size_text(c.index + 1) + " (" + c.name + "): " +
                  std::string(detail_of(c.status.error())));
    }
  }
  const std::optional<std::int64_t> timestamp = parse_decimal(field[5]);
  if (!timestamp) {
    return fail("line 6 (timestamp): not a decimal number of seconds without "
                "sign or leading zeros within int64");
  }
  Payload payload;
  payload.version = v4 ? 4 : v3 ? 3 : 2;
  if (v4) {
    if (Status s = check_hex("session_offer", field[8], kSessionOfferHexLength); !s) {
      return fail("line 9 (session offer): " + std::string(detail_of(s.error())));
    }
    payload.session_offer = std::string(field[8]);
  }
  if (v3 && field[7] != kNoIdempotencyKey) {
    if (Status s = check_idempotency_key(field[7]); !s) {
      return fail("line 8 (Idempotency-Key): " + std::string(detail_of(s.error())));
    }
    payload.idempotency_key = std::string(field[7]);
  }
  payload.audience = std::string(field[1]);
  payload.method = std::string(field[2]);
  payload.path = std::string(field[3]);
  payload.body_sha256 = std::string(field[4]);
  payload.timestamp = *timestamp;
  payload.nonce = std::string(field[6]);
  return payload;
} catch (...) {
  return out_of_memory();
}

// ---------------------------------------------------------------------------
// Authorization header value

Result<std::string> format_authorization(std::string_view credential) noexcept try {
  if (Status s = check_credential(credential); !s) {
    return relabel(s.error(), Errc::kInvalidArgument);
  }
  if (kScheme.size() + 1 + credential.size() > kMaxHeaderValueLength) {
    return make_error(Errc::kInvalidArgument,
                      "header value would be longer than " +
                          size_text(kMaxHeaderValueLength) + " characters");
  }
  std::string value;
  value.reserve(kScheme.size() + 1 + credential.size());
  value.append(kScheme);
  value.push_back(' ');
  value.append(credential);
  return value;
} catch (...) {
  return out_of_memory();
}

Result<std::string_view> parse_authorization(std::string_view header_value) noexcept try {
  if (header_value.size() > kMaxHeaderValueLength) {
    return make_error(Errc::kMalformedCredential,
                      "header value is longer than " +
                          size_text(kMaxHeaderValueLength) + " characters (" +
                          size_text(header_value.size()) + ")");
  }
  std::string_view value = header_value;
  while (!value.empty() && is_ows(value.front())) value.remove_prefix(1);
  while (!value.empty() && is_ows(value.back())) value.remove_suffix(1);
  if (value.empty()) {
    return make_error(Errc::kMissingCredential, "no Authorization header value");
  }
  const std::size_t space = value.find(' ');
  if (space == std::string_view::npos || !scheme_matches(value.substr(0, space))) {
    return make_error(Errc::kMalformedCredential,
                      "expected 'MUNGE <credential>' (scheme MUNGE)");
  }
  std::string_view credential = value.substr(space);
  while (!credential.empty() && credential.front() == ' ') credential.remove_prefix(1);
  if (Status s = check_credential(credential); !s) return s.error();
  return credential;
} catch (...) {
  return out_of_memory();
}

// ---------------------------------------------------------------------------
// Signer

Result<Signer> Signer::create(SignerConfig config) noexcept try {
  if (Status s = check_socket_path(config.socket_path); !s) return s.error();
  if (config.munge_ttl < 0 || config.munge_ttl > kMaxWindowSeconds) {
    return make_error(Errc::kInvalidArgument,
                      "munge_ttl must be within [0, " +
                          std::to_string(kMaxWindowSeconds) + "] (got " +
                          std::to_string(config.munge_ttl) + ")");
  }
  return Signer(std::move(config));
} catch (...) {
  return out_of_memory();
}

Result<std::string> Signer::sign(std::string_view audience, std::string_view method,
                                 std::string_view path, std::string_view body,
                                 std::optional<std::string_view> idempotency_key) const noexcept {
  return sign_at(audience, method, path, body, system_now(), idempotency_key);
}

Result<std::string> Signer::sign_at(std::string_view audience, std::string_view method,
                                    std::string_view path, std::string_view body,
                                    std::int64_t timestamp,
                                    std::optional<std::string_view> idempotency_key) const noexcept try {
  // Validate before drawing randomness, so a bad call costs nothing.
  for (const Status& status : {check_audience(audience), check_method(method),
                               check_path(path), check_timestamp(timestamp)}) {
    if (!status) return status.error();
  }
  if (idempotency_key) {
    if (Status s = check_idempotency_key(*idempotency_key); !s) return s.error();
  }
  Result<std::string> nonce = make_nonce();
  if (!nonce) return nonce.error();
  Payload payload;
  payload.audience = std::string(audience);
  payload.method = std::string(method);
  payload.path = std::string(path);
  payload.body_sha256 = sha256_hex(body);
  payload.timestamp = timestamp;
  payload.nonce = std::move(nonce).value();
  if (idempotency_key) payload.idempotency_key = std::string(*idempotency_key);
  return sign_payload(payload);
} catch (...) {
  return out_of_memory();
}

Result<std::string> Signer::sign_offer(std::string_view audience, std::string_view method,
                                       std::string_view path, std::string_view body,
                                       std::optional<std::string_view> idempotency_key,
                                       std::string_view session_offer) const noexcept try {
  for (const Status& status : {check_audience(audience), check_method(method), check_path(path),
                               check_hex("session_offer", session_offer, kSessionOfferHexLength)}) {
    if (!status) return status.error();
  }
  if (idempotency_key) {
    if (Status s = check_idempotency_key(*idempotency_key); !s) return s.error();
  }
  Result<std::string> nonce = make_nonce();
  if (!nonce) return nonce.error();
  Payload payload;
  payload.version = 4;
  payload.audience = std::string(audience);
  payload.method = std::string(method);
  payload.path = std::string(path);
  payload.body_sha256 = sha256_hex(body);
  payload.timestamp = system_now();
  payload.nonce = std::move(nonce).value();
  if (idempotency_key) payload.idempotency_key = std::string(*idempotency_key);
  payload.session_offer = std::string(session_offer);
  return sign_payload(payload);
} catch (...) {
  return out_of_memory();
}

Result<std::string> Signer::sign_payload(const Payload& payload) const noexcept try {
  Result<std::string> text = encode_payload(payload);
  if (!text) return text.error();

  Result<MungeCtx> ctx = make_ctx(config_.socket_path);
  if (!ctx) return ctx.error();
  munge_ctx_t c = ctx.value().get();
  // No compression: the credential length then depends only on the payload
  // length, which keeps it under kMaxHeaderValueLength by construction.
  munge_err_t err = munge_ctx_set(c, MUNGE_OPT_ZIP_TYPE, MUNGE_ZIP_NONE);
  if (err == EMUNGE_SUCCESS && config_.munge_ttl > 0) {
    err = munge_ctx_set(c, MUNGE_OPT_TTL, config_.munge_ttl);
  }
  if (err != EMUNGE_SUCCESS) {
    return make_error(Errc::kInternal,
                      "cannot set munge options: " + munge_text(c, err), err);
  }

  char* raw = nullptr;
  err = munge_encode(&raw, c, text.value().data(),
                     static_cast<int>(text.value().size()));
  MallocBuffer credential(raw);
  if (err != EMUNGE_SUCCESS) {
    const Errc code = munge_unavailable(err) ? Errc::kMungeUnavailable : Errc::kSignFailed;
    return make_error(code, "munge_encode: " + munge_text(c, err), err);
  }
  if (!credential) {
    return make_error(Errc::kSignFailed, "munge_encode returned no credential");
  }
  return format_authorization(credential.get());
} catch (...) {
  return out_of_memory();
}

// ---------------------------------------------------------------------------
// Replay cache

namespace {

std::size_t share_of(std::size_t capacity, std::size_t per_uid) noexcept {
  if (per_uid == 0) per_uid = capacity / 4;
  return std::clamp<std::size_t>(per_uid, 1, capacity);
}

std::vector<uid_t> sorted(std::vector<uid_t> v) noexcept {
  std::sort(v.begin(), v.end());
  return v;
}

// The uid a replay_key() begins with.
uid_t key_uid(const std::string& key) noexcept {
  std::uint32_t uid = 0;
  for (std::size_t i = 0; i < 4 && i < key.size(); ++i) {
    uid = (uid << 8) | static_cast<unsigned char>(key[i]);
  }
  return static_cast<uid_t>(uid);
}

}  // namespace

ReplayCache::ReplayCache(std::size_t capacity, std::size_t per_uid,
                         std::vector<uid_t> exempt) noexcept
    : capacity_(capacity == 0 ? 1 : capacity),
      per_uid_(share_of(capacity == 0 ? 1 : capacity, per_uid)),
      exempt_(sorted(std::move(exempt))),
      reserved_(exempt_.empty() || capacity_ < 2 ? 0 : std::max<std::size_t>(capacity_ / 4, 1)) {}

void ReplayCache::evict_expired(std::int64_t now) {
  while (!by_expiry_.empty() && by_expiry_.begin()->first < now) {
    const std::string& key = by_expiry_.begin()->second;
    const uid_t uid = key_uid(key);
    auto count = count_of_.find(uid);
    if (count != count_of_.end() && --count->second == 0) count_of_.erase(count);
    if (!std::binary_search(exempt_.begin(), exempt_.end(), uid) && others_ > 0) --others_;
    expiry_of_.erase(key);
    by_expiry_.erase(by_expiry_.begin());
  }
}

ReplayCache::Outcome ReplayCache::check_and_insert(uid_t uid, std::string_view nonce,
                                                   std::int64_t expires,
                                                   std::int64_t now) noexcept {
  try {
    std::string key = replay_key(uid, nonce);
    const std::lock_guard<std::mutex> lock(mutex_);
    evict_expired(now);
    if (expiry_of_.count(key) != 0) return Outcome::kReplayed;
    if (expiry_of_.size() >= capacity_) return Outcome::kFull;
    const bool exempt = std::binary_search(exempt_.begin(), exempt_.end(), uid);
    // The exempt uids' part stays free for them.
    if (!exempt && others_ >= capacity_ - reserved_) return Outcome::kFull;
    auto count = count_of_.find(uid);
    if (count != count_of_.end() && count->second >= per_uid_ && !exempt) {
      return Outcome::kUserFull;
    }
    // Insert into all three indexes or none.
    if (count == count_of_.end()) count = count_of_.emplace(uid, 0).first;
    try {
      auto pos = by_expiry_.emplace(expires, key).first;
      try {
        expiry_of_.emplace(std::move(key), expires);
      } catch (...) {
        by_expiry_.erase(pos);
        throw;
      }
    } catch (...) {
      if (count->second == 0) count_of_.erase(count);
      throw;
    }
    ++count->second;
    if (!exempt) ++others_;
    return Outcome::kInserted;
  } catch (...) {
    // Out of memory: refusing is the safe answer (never admit unrecorded).
    return Outcome::kFull;
  }
}

std::size_t ReplayCache::size() const noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  return expiry_of_.size();
}

// ---------------------------------------------------------------------------
// Verifier

Result<Verifier> Verifier::create(VerifierConfig config) noexcept try {
  if (Status s = check_audience(config.audience); !s) return s.error();
  if (Status s = check_socket_path(config.socket_path); !s) return s.error();
  if (config.max_age < 1 || config.max_age > kMaxWindowSeconds) {
    return make_error(Errc::kInvalidArgument,
                      "max_age must be within [1, " + std::to_string(kMaxWindowSeconds) +
                          "] (got " + std::to_string(config.max_age) + ")");
  }
  if (config.max_skew < 0 || config.max_skew > kMaxWindowSeconds) {
    return make_error(Errc::kInvalidArgument,
                      "max_skew must be within [0, " + std::to_string(kMaxWindowSeconds) +
                          "] (got " + std::to_string(config.max_skew) + ")");
  }
  if (config.replay_capacity < 1 || config.replay_capacity > kMaxReplayCapacity) {
    return make_error(Errc::kInvalidArgument,
                      "replay_capacity must be within [1, " +
                          size_text(kMaxReplayCapacity) + "] (got " +
                          size_text(config.replay_capacity) + ")");
  }
  if (config.replay_per_uid > kMaxReplayCapacity) {
    return make_error(Errc::kInvalidArgument,
                      "replay_per_uid must be within [0, " +
                          size_text(kMaxReplayCapacity) + "] (got " +
                          size_text(config.replay_per_uid) + ")");
  }
  if (config.session_lifetime < 0 || config.session_lifetime > kMaxWindowSeconds ||
      config.session_capacity < 1 || config.session_capacity > kMaxSessionCapacity ||
      config.session_per_uid < 1 || config.session_per_uid > config.session_capacity) {
    return make_error(Errc::kInvalidArgument,
                      "session_lifetime must be within [0, " + std::to_string(kMaxWindowSeconds) +
                          "], session_capacity within [1, " + size_text(kMaxSessionCapacity) +
                          "], session_per_uid within [1, session_capacity]");
  }
  auto cache = std::make_unique<ReplayCache>(config.replay_capacity, config.replay_per_uid,
                                             config.replay_share_exempt);
  std::unique_ptr<SessionTable> sessions;
  if (config.session_lifetime > 0) {
    sessions = std::make_unique<SessionTable>(SessionLimits{
        config.session_lifetime, config.session_capacity, config.session_per_uid});
  }
  return Verifier(std::move(config), std::move(cache), std::move(sessions));
} catch (...) {
  return out_of_memory();
}

Result<Identity> Verifier::verify(std::string_view method, std::string_view path,
                                  std::string_view body, std::string_view header_value,
                                  std::optional<std::string_view> idempotency_key) const noexcept {
  return verify(method, path, body, header_value, idempotency_key, system_now());
}

Result<Identity> Verifier::verify(std::string_view method, std::string_view path,
                                  std::string_view body, std::string_view header_value,
                                  std::int64_t now) const noexcept {
  return verify(method, path, body, header_value, std::nullopt, now);
}

Result<Identity> Verifier::verify(std::string_view method, std::string_view path,
                                  std::string_view body, std::string_view header_value,
                                  std::optional<std::string_view> idempotency_key,
                                  std::int64_t now) const noexcept try {
  if (!cache_) return make_error(Errc::kInternal, "verifier was moved from");
  if (now < 0 || now > kMaxTime) {
    return make_error(Errc::kInvalidArgument,
                      "now is outside [0, " + std::to_string(kMaxTime) + "]");
  }

  // 0. A session's request: no MUNGE (core/session.hpp).
  if (is_session_authorization(header_value)) {
    return verify_session(method, path, body, header_value, idempotency_key, now);
  }

  // 1. The header, before anything costs an IPC.
  Result<std::string_view> credential = parse_authorization(header_value);
  if (!credential) return credential.error();

  // 2. The request itself must be one a signer could have signed.
  if (Status s = check_method(method); !s) return relabel(s.error(), Errc::kInvalidRequest);
  if (Status s = check_path(path); !s) return relabel(s.error(), Errc::kInvalidRequest);
  if (idempotency_key) {
    if (Status s = check_idempotency_key(*idempotency_key); !s) {
      return relabel(s.error(), Errc::kInvalidRequest);
    }
  }

  // 3. MUNGE: who encoded it, when, and is the credential intact and fresh.
  Result<MungeCtx> ctx = make_ctx(config_.socket_path);
  if (!ctx) return ctx.error();
  munge_ctx_t c = ctx.value().get();
  const std::string cred(credential.value());  // NUL-terminated for libmunge
  void* raw = nullptr;
  int length = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  const munge_err_t err = munge_decode(cred.c_str(), c, &raw, &length, &uid, &gid);
  MallocBuffer data(static_cast<char*>(raw));
  if (err != EMUNGE_SUCCESS) {
    const std::string text = "munged: " + munge_text(c, err);
    switch (err) {
      case EMUNGE_CRED_EXPIRED:
        return make_error(Errc::kExpired, text + " (MUNGE TTL)", err);
      case EMUNGE_CRED_REWOUND:
        return make_error(Errc::kNotYetValid, text + " (encoded in the future)", err);
      case EMUNGE_CRED_REPLAYED:
        return make_error(Errc::kReplayed, text + " (already decoded by this munged)",
                          err);
      default:
        return make_error(munge_unavailable(err) ? Errc::kMungeUnavailable
                                                 : Errc::kMungeRejected,
                          text, err);
    }
  }
  time_t encode_time = 0;
  if (munge_ctx_get(c, MUNGE_OPT_ENCODE_TIME, &encode_time) != EMUNGE_SUCCESS) {
    return make_error(Errc::kInternal, "cannot read the credential's encode time");
  }

  // 4. The payload must be ours, be meant for us and name exactly this
  // request.
  if (length < 0 || (length > 0 && !data)) {
    return make_error(Errc::kMalformedPayload, "credential has no payload");
  }
  Result<Payload> parsed =
      parse_payload(std::string_view(data.get(), static_cast<std::size_t>(length)));
  if (!parsed) return parsed.error();
  const Payload& payload = parsed.value();
  if (payload.audience != config_.audience) {
    return make_error(Errc::kWrongAudience,
                      "signed for '" + payload.audience + "', this is '" +
                          config_.audience + "'");
  }
  if (payload.method != method) {
    return make_error(Errc::kRequestMismatch,
                      "method " + std::string(method) + " was signed as " + payload.method);
  }
  if (payload.path != path) {
    return make_error(Errc::kRequestMismatch,
                      "path (with query) differs from the signed one");
  }
  std::string digest = sha256_hex(body);
  if (payload.body_sha256 != digest) {
    return make_error(Errc::kRequestMismatch, "body digest differs from the signed one");
  }
  if (payload.version == 2 && idempotency_key) {
    return make_error(Errc::kIdempotencyKeyMismatch,
                      "the request has an Idempotency-Key, which a " +
                          std::string(kLegacyPayloadVersion) +
                          " payload cannot sign; sign " + std::string(kPayloadVersion));
  }
  if (payload.idempotency_key && !idempotency_key) {
    return make_error(Errc::kIdempotencyKeyMismatch,
                      "the request has no Idempotency-Key, but one was signed");
  }
  if (!payload.idempotency_key && idempotency_key) {
    return make_error(Errc::kIdempotencyKeyMismatch,
                      "the request has an Idempotency-Key, but none was signed");
  }
  if (payload.idempotency_key && *payload.idempotency_key != *idempotency_key) {
    return make_error(Errc::kIdempotencyKeyMismatch,
                      "the Idempotency-Key differs from the signed one");
  }

  // 5. Our own time window, whatever TTL the signer gave MUNGE.
  if (payload.timestamp < now - config_.max_age) {
    return make_error(Errc::kExpired,
                      "timestamp " + std::to_string(payload.timestamp) + " is " +
                          std::to_string(now - payload.timestamp) +
                          " s old, more than max_age " + std::to_string(config_.max_age));
  }
  if (payload.timestamp > now + config_.max_skew) {
    return make_error(Errc::kNotYetValid,
                      "timestamp " + std::to_string(payload.timestamp) + " is " +
                          std::to_string(payload.timestamp - now) +
                          " s in the future, more than max_skew " +
                          std::to_string(config_.max_skew));
  }

  // 6. Once per (uid, nonce) for as long as the timestamp is acceptable.
  switch (cache_->check_and_insert(uid, payload.nonce,
                                   payload.timestamp + config_.max_age, now)) {
    case ReplayCache::Outcome::kInserted:
      break;
    case ReplayCache::Outcome::kReplayed:
      return make_error(Errc::kReplayed, "nonce " + payload.nonce + " of uid " +
                                             std::to_string(uid) + " was seen before");
    case ReplayCache::Outcome::kFull:
      return make_error(Errc::kReplayCacheFull,
                        "replay cache holds " + size_text(cache_->capacity()) +
                            " unexpired nonces; retry later or raise replay_capacity");
    case ReplayCache::Outcome::kUserFull:
      return make_error(Errc::kReplayCacheFull,
                        "uid " + std::to_string(uid) + " already has " +
                            size_text(cache_->per_uid()) +
                            " unexpired nonces in the replay cache (replay_per_uid); "
                            "retry later");
  }

  Identity identity;
  identity.uid = uid;
  identity.gid = gid;
  identity.encode_time = static_cast<std::int64_t>(encode_time);
  identity.body_sha256 = std::move(digest);
  // 7. A session, if it offered one and we grant them; without one (none
  // granted here, or the table full) it stays a plain MUNGE request.
  if (payload.session_offer && sessions_) {
    auto g = open_session(uid, gid, *payload.session_offer, now);
    if (g.ok()) identity.session_grant = std::move(g).value();
  }
  return identity;
} catch (...) {
  return out_of_memory();
}

std::size_t Verifier::replay_cache_size() const noexcept {
  return cache_ ? cache_->size() : 0;
}

Verifier::Verifier(VerifierConfig config, std::unique_ptr<ReplayCache> cache,
                   std::unique_ptr<SessionTable> sessions)
    : config_(std::move(config)), cache_(std::move(cache)), sessions_(std::move(sessions)) {}
Verifier::Verifier(Verifier&&) noexcept = default;
Verifier& Verifier::operator=(Verifier&&) noexcept = default;
Verifier::~Verifier() = default;

std::size_t Verifier::session_count() const noexcept {
  return sessions_ ? sessions_->size() : 0;
}

Result<std::string> Verifier::open_session(uid_t uid, gid_t gid, std::string_view client_public,
                                           std::int64_t now) const noexcept try {
  if (!sessions_) return make_error(Errc::kInvalidArgument, "sessions are off (session_lifetime 0)");
  auto g = sessions_->open(uid, gid, config_.audience, client_public, now);
  if (!g.ok()) return g.error();
  return format_session_grant(g.value());
} catch (...) {
  return out_of_memory();
}

Result<Identity> Verifier::verify_session(std::string_view method, std::string_view path,
                                          std::string_view body, std::string_view header_value,
                                          std::optional<std::string_view> idempotency_key,
                                          std::int64_t now) const {
  Result<SessionAuth> a = parse_session_authorization(header_value);
  if (!a) return a.error();
  if (Status s = check_method(method); !s) return relabel(s.error(), Errc::kInvalidRequest);
  if (Status s = check_path(path); !s) return relabel(s.error(), Errc::kInvalidRequest);
  if (idempotency_key) {
    if (Status s = check_idempotency_key(*idempotency_key); !s) {
      return relabel(s.error(), Errc::kInvalidRequest);
    }
  }
  if (a.value().audience != config_.audience) {
    return make_error(Errc::kWrongAudience, "session request for '" + a.value().audience +
                                                "', this is '" + config_.audience + "'");
  }
  if (!sessions_) {
    return make_error(Errc::kUnknownSession, "this server grants no sessions (SessionLifetime=0)");
  }
  return sessions_->check(a.value(), method, path, sha256_hex(body), idempotency_key,
                          config_.max_age, config_.max_skew, now);
}

// ---------------------------------------------------------------------------
// Authorization

bool allowed(uid_t uid, const std::vector<uid_t>& allowed_uids) noexcept {
  return std::find(allowed_uids.begin(), allowed_uids.end(), uid) != allowed_uids.end();
}

}  // namespace flexco::auth
