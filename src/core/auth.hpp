// SPDX-License-Identifier: GPL-2.0-or-later
// Request authentication: MUNGE-signed HTTP calls (the scheme, its threat
// model and the error codes are in doc/auth.md; other components must follow
// it byte for byte).
//
// A client signs (audience, method, request-target, body, Idempotency-Key)
// into the header
//
//     Authorization: MUNGE <munge credential>
//
// whose MUNGE payload is the text
//
//     flexco-auth-v3\n<audience>\n<METHOD>\n<path?query>\n<sha256(body) hex>\n<unix time>\n<nonce hex>\n<key or ->\n
//
// (flexco-auth-v2, the same without the last line, is still accepted for
// requests that carry no Idempotency-Key; doc/auth.md, "Versioning")
//
// and a server verifies it: MUNGE proves who encoded it (uid, gid, encode
// time); the payload proves it was made for this very service (the audience:
// a cluster's ClusterName, or "flexcod") and this very request; the
// timestamp window and a bounded replay cache stop it from being used twice.
//
// Rules of the core library: no logging, no globals, no exceptions out of any
// function declared here (errors are values with an HTTP status and a
// message that starts with a stable code), every input validated and bounded.
//
// Blocking: Signer::sign* and Verifier::verify do blocking IPC with munged
// over its Unix socket.  Never call them while holding a lock that anything
// latency-sensitive waits for; in the slurmctld plugin, never with a
// slurmctld lock held (no MUNGE work inside slurmctld locks).
//
// Threads: Signer is immutable after create() and may be shared by threads.
// Verifier::verify may be called concurrently from several threads on one
// object: each call uses its own MUNGE context and the replay cache is
// protected by an internal std::mutex, held only for the cache look-up and
// insertion (never across the MUNGE IPC).

#ifndef FLEXCO_CORE_AUTH_HPP
#define FLEXCO_CORE_AUTH_HPP

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/result.hpp"

namespace flexco::auth {

// ---------------------------------------------------------------------------
// Wire constants (doc/auth.md, "Formats")

inline constexpr std::string_view kHeaderName = "Authorization";
inline constexpr std::string_view kScheme = "MUNGE";  // matched case-insensitively
inline constexpr std::string_view kPayloadVersion = "flexco-auth-v3";
// Version 3 with one more line: the client's half of a session key
// exchange (doc/auth.md, "Sessions"); otherwise read as version 3.
inline constexpr std::string_view kSessionOfferPayloadVersion = "flexco-auth-v4";
inline constexpr std::size_t kSessionOfferHexLength = 64;  // X25519 public key
// The previous version, without the Idempotency-Key line: accepted only for
// requests without an Idempotency-Key (doc/auth.md, "Versioning").
inline constexpr std::string_view kLegacyPayloadVersion = "flexco-auth-v2";
// The first version, which named no audience: refused (doc/auth.md,
// "Versioning").
inline constexpr std::string_view kRefusedPayloadVersion = "flexco-auth-v1";

// The audience of requests to flexcod (doc/auth.md, "Audience").  A
// cluster's plugin uses its Slurm ClusterName.
inline constexpr std::string_view kFlexcodAudience = "flexcod";

inline constexpr std::size_t kMaxAudienceLength = 64;  // [A-Za-z0-9_-]{1,64}

inline constexpr std::size_t kMaxMethodLength = 16;    // [A-Z]{1,16}
inline constexpr std::size_t kMaxPathLength = 2048;    // request-target, '/' + visible ASCII
inline constexpr std::size_t kDigestHexLength = 64;    // SHA-256, lowercase hex
inline constexpr std::size_t kMaxTimestampDigits = 19; // int64 seconds, no sign
inline constexpr std::size_t kNonceHexLength = 32;     // 128 random bits, lowercase hex
// Idempotency-Key: 1-128 bytes of visible ASCII 0x21-0x7e (no space), and
// not "-", which is how a payload says "no key".
inline constexpr std::size_t kMaxIdempotencyKeyLength = 128;
inline constexpr std::string_view kNoIdempotencyKey = "-";
inline constexpr std::string_view kIdempotencyKeyHeader = "Idempotency-Key";
inline constexpr std::size_t kPayloadFields = 8;       // v3 lines, each ending in '\n'
inline constexpr std::size_t kOfferPayloadFields = 9;  // v4 lines
inline constexpr std::size_t kLegacyPayloadFields = 7; // v2 lines

// Largest payload text a well-formed request can produce (2458 bytes: a
// v4 one).
inline constexpr std::size_t kMaxPayloadSize =
    kPayloadVersion.size() + kMaxAudienceLength + kMaxMethodLength + kMaxPathLength +
    kDigestHexLength + kMaxTimestampDigits + kNonceHexLength + kMaxIdempotencyKeyLength +
    kSessionOfferHexLength + kOfferPayloadFields;
static_assert(kPayloadVersion.size() == kLegacyPayloadVersion.size(),
              "a v2 payload is never longer than a v3 one");

// Longest accepted Authorization header value ("MUNGE " + credential).  A
// credential for a kMaxPayloadSize payload is about 3.4 KB with munged's
// default cipher and MAC (check_auth's longest_request_fits signs one), so
// this leaves room for stronger ones.
inline constexpr std::size_t kMaxHeaderValueLength = 4096;

// Upper bounds of the configuration values below.
inline constexpr std::int64_t kMaxWindowSeconds = 86400;
inline constexpr std::size_t kMaxReplayCapacity = std::size_t{1} << 22;
// Largest `now` accepted by verify (9999-12-31T23:59:59Z).
inline constexpr std::int64_t kMaxTime = 253402300799;

// ---------------------------------------------------------------------------
// Errors

enum class Errc {
  // Verification failures a client causes (HTTP 401, except as noted).
  kMissingCredential = 1,  // "missing_credential": no or empty header value
  kMalformedCredential,    // "malformed_credential": scheme, charset, length
  kMungeRejected,          // "munge_rejected": munged refused the credential
  kMalformedPayload,       // "malformed_payload": not a flexco-auth-v3/v2 payload
  kWrongAudience,          // "wrong_audience": signed for another service
  kRequestMismatch,        // "request_mismatch": signed for another request
  kExpired,                // "expired": timestamp (or MUNGE TTL) too old
  kNotYetValid,            // "not_yet_valid": timestamp in the future (or rewound)
  kReplayed,               // "replayed": nonce or credential seen before
  kIdempotencyKeyMismatch, // "idempotency_key_mismatch": Idempotency-Key header
                           // is not the signed one (or v2 with a key)
  // Session requests (core/session.hpp), 401 too:
  kUnknownSession,         // "unknown_session": no such session here (ended,
                           // evicted, or made with another server)
  kSessionExpired,         // "session_expired": its lifetime is over
  kBadMac,                 // "bad_mac": the MAC is not the session key's
  kInvalidRequest,         // "invalid_request" (400): method/path unsignable
  // The server cannot decide now; the client may retry (HTTP 503).
  kReplayCacheFull,        // "replay_cache_full"
  kMungeUnavailable,       // "munge_unavailable": munged unreachable or failing
  // Caller or local failures (HTTP 500 if they ever reach a response).
  kInvalidArgument,        // "invalid_argument": bad config or sign() input
  kSignFailed,             // "sign_failed": munged refused to encode
  kInternal,               // "internal_error": out of memory, no randomness
};

// The stable code: "missing_credential", "munge_rejected", ...
const char* errc_name(Errc code) noexcept;

// 400, 401, 500 or 503 as listed above.
int http_status(Errc code) noexcept;

struct Error {
  Errc code = Errc::kInternal;
  int status = 500;         // http_status(code)
  int munge_error = 0;      // the munge_err_t behind it, 0 if none
  std::string message;      // "<code>: <what exactly>"
};

// A value or an Error; success or an Error (see core/result.hpp).
template <typename T>
using Result = BasicResult<T, Error>;
using Status = BasicStatus<Error>;

// ---------------------------------------------------------------------------
// Payload

struct Payload {
  int version = 3;          // 3 (kPayloadVersion), 2 (kLegacyPayloadVersion) or
                            // 4 (kSessionOfferPayloadVersion: session_offer set)
  std::string audience;     // the service it is for: [A-Za-z0-9_-]{1,64}
  std::string method;       // "GET", "POST", ...: [A-Z]{1,16}
  std::string path;         // request-target as sent: "/v1/offers?x=1"
  std::string body_sha256;  // sha256_hex(body): 64 lowercase hex digits
  std::int64_t timestamp = 0;  // UTC epoch seconds when signed, >= 0
  std::string nonce;        // 32 lowercase hex digits
  // The request's Idempotency-Key (validate_idempotency_key); none is
  // written "-".  Version 3 only: a version 2 payload has none.
  std::optional<std::string> idempotency_key;
  // Version 4 only: the client's X25519 public key, 64 lowercase hex digits.
  std::optional<std::string> session_offer;
};

// Field checks shared by encode_payload, parse_payload, Signer and Verifier.
// Errors have code kInvalidArgument.
Status validate_audience(std::string_view audience) noexcept;
Status validate_method(std::string_view method) noexcept;
Status validate_path(std::string_view path) noexcept;
// 1..kMaxIdempotencyKeyLength bytes of 0x21-0x7e, not "-".
Status validate_idempotency_key(std::string_view key) noexcept;

// The payload text; kInvalidArgument if a field is out of its format.
Result<std::string> encode_payload(const Payload& payload) noexcept;

// Strict inverse of encode_payload: exact version line (flexco-auth-v3, or
// flexco-auth-v2 with one line less; flexco-auth-v1 is refused: it names
// no audience), exactly eight (v2: seven) '\n'-terminated fields, each
// within its length and charset, at most kMaxPayloadSize bytes, nothing
// after the last '\n'.  Errors have code kMalformedPayload and name the
// offending field.
Result<Payload> parse_payload(std::string_view text) noexcept;

// ---------------------------------------------------------------------------
// Authorization header value

// "MUNGE " + credential; kInvalidArgument if `credential` is not of MUNGE's
// text form "MUNGE:<base64>:" or the result would exceed
// kMaxHeaderValueLength.
Result<std::string> format_authorization(std::string_view credential) noexcept;

// The credential inside a header value (a view into `header_value`).
// Surrounding spaces and tabs are ignored; the scheme is matched without
// regard to case and followed by one or more spaces.  Errors:
// kMissingCredential (empty or blank) or kMalformedCredential.
Result<std::string_view> parse_authorization(std::string_view header_value) noexcept;

// ---------------------------------------------------------------------------
// Signer

struct SignerConfig {
  std::string socket_path;  // munged socket; "" = libmunge's default
  int munge_ttl = 0;        // credential TTL in s; 0 = munged's default (300)
};

class Signer {
 public:
  // kInvalidArgument if socket_path is relative, too long for a Unix socket
  // or contains NUL, or munge_ttl is outside [0, kMaxWindowSeconds].
  static Result<Signer> create(SignerConfig config) noexcept;

  // The Authorization header value for this request, timestamped now, with
  // a fresh random nonce.  `audience` names the service the request is for:
  // the ClusterName of the cluster whose plugin receives it, or
  // kFlexcodAudience.  One signer serves any number of audiences.  `path` is
  // the request-target exactly as it will be sent (path and query string,
  // no normalisation).
  // `idempotency_key` is the Idempotency-Key header the request will carry
  // (std::nullopt: none); it is signed too (flexco-auth-v3).
  Result<std::string> sign(std::string_view audience, std::string_view method,
                           std::string_view path, std::string_view body,
                           std::optional<std::string_view> idempotency_key =
                               std::nullopt) const noexcept;

  // Same, with the payload timestamp given (for clients with their own
  // clock source, and for tests).
  Result<std::string> sign_at(std::string_view audience, std::string_view method,
                              std::string_view path, std::string_view body,
                              std::int64_t timestamp,
                              std::optional<std::string_view> idempotency_key =
                                  std::nullopt) const noexcept;

  // Same, as a version 4 payload carrying `session_offer` (the client's
  // X25519 public key in hex, core/session.hpp's SessionOffer): the request
  // also asks the server for a session.
  Result<std::string> sign_offer(std::string_view audience, std::string_view method,
                                 std::string_view path, std::string_view body,
                                 std::optional<std::string_view> idempotency_key,
                                 std::string_view session_offer) const noexcept;

  // Low level: sign a complete payload as given (it is validated, nothing
  // is filled in).  Normal callers use sign(); this exists for tools and
  // tests that must produce exact payloads (old timestamps, reused nonces).
  Result<std::string> sign_payload(const Payload& payload) const noexcept;

  const SignerConfig& config() const noexcept { return config_; }

 private:
  explicit Signer(SignerConfig config) : config_(std::move(config)) {}
  SignerConfig config_;
};

// ---------------------------------------------------------------------------
// Replay cache

// Remembers (uid, nonce) pairs until they expire.  Memory is bounded by
// `capacity` entries: an entry is only ever evicted once it has expired,
// and when the cache is full of live entries new ones are refused (the
// request is refused too), never admitted unchecked.
//
// Thread-safe: every member function takes an internal std::mutex.
class ReplayCache {
 public:
  enum class Outcome {
    kInserted,  // not seen before; now recorded
    kReplayed,  // a live entry for (uid, nonce) exists
    kFull,      // `capacity` live entries (or no memory): not recorded
    kUserFull,  // this uid already has `per_uid` live entries: not recorded
  };

  // capacity >= 1 (0 is treated as 1).  per_uid: live entries one uid may
  // hold (issue 14 §1.5: one user must not lock every other user out);
  // 0 = the default, capacity / 4 and at least 1; more than capacity is
  // capacity.  exempt: uids the share does not apply to (the plugin's
  // DaemonUsers: flexcod signs every request it makes for all users, and
  // at 100 probes a second it would run into a quarter of the default
  // cache); their entries still count against `capacity`.  When there are
  // exempt uids, a quarter of the capacity (at least one entry) is kept
  // for them: all other uids together hold at most the rest, so users
  // flooding the cache with signed requests (four at their full share would
  // fill it) never lock the daemons out.
  explicit ReplayCache(std::size_t capacity, std::size_t per_uid = 0,
                       std::vector<uid_t> exempt = {}) noexcept;

  ReplayCache(const ReplayCache&) = delete;
  ReplayCache& operator=(const ReplayCache&) = delete;

  // First drops every entry with expires < now, then looks (uid, nonce) up
  // and records it until `expires` (inclusive) if it is new and there is
  // room.  A clock that goes backwards only delays evictions.
  Outcome check_and_insert(uid_t uid, std::string_view nonce,
                           std::int64_t expires, std::int64_t now) noexcept;

  std::size_t size() const noexcept;
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t per_uid() const noexcept { return per_uid_; }
  // Entries kept for the exempt uids (0 without exempt uids).
  std::size_t reserved() const noexcept { return reserved_; }

 private:
  void evict_expired(std::int64_t now);

  const std::size_t capacity_;
  const std::size_t per_uid_;
  const std::vector<uid_t> exempt_;  // sorted
  const std::size_t reserved_;       // kept for exempt_ (see the constructor)
  std::size_t others_ = 0;           // live entries of uids not in exempt_
  mutable std::mutex mutex_;
  std::unordered_map<uid_t, std::size_t> count_of_;  // uid -> live entries
  std::unordered_map<std::string, std::int64_t> expiry_of_;  // key -> expires
  std::set<std::pair<std::int64_t, std::string>> by_expiry_;
};

// ---------------------------------------------------------------------------
// Verifier

struct VerifierConfig {
  std::string audience;            // who we are: ClusterName, or "flexcod"; required
  std::string socket_path;         // munged socket; "" = libmunge's default
  std::int64_t max_age = 300;      // s a payload timestamp may lie in the past
  std::int64_t max_skew = 60;      // s it may lie in the future (clock skew)
  std::size_t replay_capacity = 65536;  // nonces remembered at most
  std::size_t replay_per_uid = 0;       // of which one uid; 0 = capacity / 4
  std::vector<uid_t> replay_share_exempt;  // uids not held to replay_per_uid
  // Sessions (core/session.hpp, doc/auth.md "Sessions"): the lifetime of
  // one granted to a MUNGE-verified request that offers one, in s; 0 =
  // none granted (session requests are then unknown_session).
  std::int64_t session_lifetime = 0;   // 0 .. kMaxWindowSeconds
  std::size_t session_capacity = 4096; // sessions held at most, 1 .. 1 << 20
  std::size_t session_per_uid = 16;    // of which one uid (its oldest goes)
};

// Who made the request, as established by MUNGE.
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::int64_t encode_time = 0;  // when munged encoded the credential
  std::string body_sha256;       // the verified body's digest (lowercase hex)
  // A MUNGE request that offered a session and was granted one: the value
  // of the FlexCo-Session answer header the server must send back
  // (core/session.hpp); "" otherwise.
  std::string session_grant;
  bool by_session = false;       // authenticated by a session's MAC, not MUNGE
};

class SessionTable;  // core/session.hpp

class Verifier {
 public:
  // kInvalidArgument if audience is not [A-Za-z0-9_-]{1,64}; socket_path is
  // relative, too long or contains NUL;
  // max_age outside [1, kMaxWindowSeconds]; max_skew outside
  // [0, kMaxWindowSeconds]; replay_capacity outside [1, kMaxReplayCapacity];
  // replay_per_uid above kMaxReplayCapacity.
  static Result<Verifier> create(VerifierConfig config) noexcept;

  // Checks, in this order (doc/auth.md, "Verification"):
  //   header present (missing_credential) and well formed
  //   (malformed_credential); method and path signable (invalid_request);
  //   munged decodes it (munge_rejected, munge_unavailable; munged's own
  //   expired/rewound/replayed verdicts map to expired/not_yet_valid/
  //   replayed); the payload parses (malformed_payload), names our audience
  //   (wrong_audience) and this method, path and body digest
  //   (request_mismatch) and Idempotency-Key (idempotency_key_mismatch);
  //   now - max_age <= timestamp <= now + max_skew (expired,
  //   not_yet_valid); (uid, nonce) not seen before (replayed,
  //   replay_cache_full).
  // `header_value` is the Authorization field value; pass "" when the
  // request has none.  `idempotency_key` is the request's Idempotency-Key
  // header value, std::nullopt when it has none (one that no signer could
  // sign is invalid_request).  `now` is UTC epoch seconds in [0, kMaxTime]
  // (kInvalidArgument otherwise).  Blocks on munged; thread-safe.
  Result<Identity> verify(std::string_view method, std::string_view path,
                          std::string_view body, std::string_view header_value,
                          std::optional<std::string_view> idempotency_key,
                          std::int64_t now) const noexcept;

  // Same, for a request without an Idempotency-Key.
  Result<Identity> verify(std::string_view method, std::string_view path,
                          std::string_view body, std::string_view header_value,
                          std::int64_t now) const noexcept;

  // Same, with now = the system clock.
  Result<Identity> verify(std::string_view method, std::string_view path,
                          std::string_view body, std::string_view header_value,
                          std::optional<std::string_view> idempotency_key =
                              std::nullopt) const noexcept;

  std::size_t replay_cache_size() const noexcept;
  std::size_t session_count() const noexcept;
  const VerifierConfig& config() const noexcept { return config_; }

  // What a MUNGE-verified version 4 request gets: a session for uid/gid
  // keyed with client_public (the grant header value).  For tests and
  // tools; verify() calls it.  Errors: kInvalidArgument (bad offer,
  // sessions off), kReplayCacheFull (the table is full of live sessions).
  Result<std::string> open_session(uid_t uid, gid_t gid, std::string_view client_public,
                                   std::int64_t now) const noexcept;

  Verifier(Verifier&&) noexcept;
  Verifier& operator=(Verifier&&) noexcept;
  ~Verifier();

 private:
  Verifier(VerifierConfig config, std::unique_ptr<ReplayCache> cache,
           std::unique_ptr<SessionTable> sessions);
  Result<Identity> verify_session(std::string_view method, std::string_view path,
                                  std::string_view body, std::string_view header_value,
                                  std::optional<std::string_view> idempotency_key,
                                  std::int64_t now) const;

  VerifierConfig config_;
  std::unique_ptr<ReplayCache> cache_;  // never null unless moved from
  std::unique_ptr<SessionTable> sessions_;  // null when session_lifetime is 0
};

// ---------------------------------------------------------------------------
// Authorization (403 is the caller's answer when this is false)

// True if `uid` is one of `allowed_uids`.  An empty list allows nobody.
bool allowed(uid_t uid, const std::vector<uid_t>& allowed_uids) noexcept;

}  // namespace flexco::auth

#endif  // FLEXCO_CORE_AUTH_HPP
