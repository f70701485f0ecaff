// SPDX-License-Identifier: GPL-2.0-or-later
// Session authentication (doc/auth.md, "Sessions"): one MUNGE-verified
// request establishes a key, later requests carry an HMAC-SHA-256 under it
// instead of a MUNGE credential.
//
// Establishing.  The client signs a request as usual but with a
// flexco-auth-v4 payload (core/auth.hpp), whose extra line is an X25519
// public key A of a fresh key pair; MUNGE vouches for it with the rest of
// the request.  The server, having verified the request, draws its own key
// pair B and a session id and answers, besides the request's answer,
//
//     FlexCo-Session: <sid, 32 hex> <B, 64 hex> <lifetime s>
//
// Both derive  K = HMAC-SHA-256(X25519(own secret, other public),
//     "flexco-session-v1\n<audience>\n<sid>\n<A>\n<B>\n").
// Nothing secret crosses the wire; an observer learns A and B only.
//
// Using.  A later request of the client to that server carries
//
//     Authorization: FlexCo-Session <audience> <sid> <counter> <time> <mac>
//
// counter: decimal 1 .. 2^63-1, a new one per request (the client counts
// up); time: the client's UTC epoch seconds; mac: 64 lowercase hex digits,
// HMAC-SHA-256(K, mac text) over
//
//     flexco-session-v1\n<audience>\n<METHOD>\n<path?query>\n<sha256(body)>\n
//     <time>\n<sid>\n<counter>\n<Idempotency-Key or ->\n
//
// i.e. the fields a MUNGE payload binds, with (sid, counter) for the nonce.
// The server keeps per session the highest counter seen and a 64-bit window
// below it (as IPsec does): a counter at or below the window, or one seen in
// it, is replayed; no per-request entry is kept.  The uid and gid are the
// ones MUNGE vouched for when the session was made.
//
// Rules of the core library: no logging, no globals, no exceptions out of
// functions declared here; errors are core/auth.hpp's Error values.
// Threads: SessionTable and ClientSession are thread-safe (one internal
// mutex each, held for table look-ups only, never across I/O: there is
// none).

#ifndef FLEXCO_CORE_SESSION_HPP
#define FLEXCO_CORE_SESSION_HPP

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/auth.hpp"

namespace flexco::auth {

inline constexpr std::string_view kSessionScheme = "FlexCo-Session";  // Authorization scheme
inline constexpr std::string_view kSessionHeader = "FlexCo-Session";  // the answer's grant
inline constexpr std::string_view kSessionVersion = "flexco-session-v1";
inline constexpr std::size_t kSessionIdHexLength = 32;
inline constexpr std::size_t kMacHexLength = 64;
inline constexpr std::size_t kReplayWindow = 64;  // counters below the highest seen
inline constexpr std::uint64_t kMaxCounter = (std::uint64_t{1} << 63) - 1;
inline constexpr std::size_t kMaxSessionCapacity = std::size_t{1} << 20;
// Longest session Authorization value: scheme, audience, sid, counter,
// time, mac and their spaces.
inline constexpr std::size_t kMaxSessionHeaderLength =
    kSessionScheme.size() + 1 + kMaxAudienceLength + 1 + kSessionIdHexLength + 1 + 19 + 1 +
    kMaxTimestampDigits + 1 + kMacHexLength;

using SessionKey = std::array<std::uint8_t, 32>;

// Is this Authorization value of the session scheme (its first word,
// compared without case)?  Decides which verification applies.
bool is_session_authorization(std::string_view header_value) noexcept;

// The Authorization header of a session request.
struct SessionAuth {
  std::string audience;
  std::string sid;            // 32 lowercase hex digits
  std::uint64_t counter = 0;  // 1 .. kMaxCounter
  std::int64_t timestamp = 0;
  std::string mac;            // 64 lowercase hex digits
};
// Strict: the scheme (any case), then exactly five fields separated by
// single spaces, each in its format; surrounding blanks are ignored.
// Errors: kMissingCredential (blank), kMalformedCredential.
Result<SessionAuth> parse_session_authorization(std::string_view header_value) noexcept;
// kInvalidArgument if a field is out of its format.
Result<std::string> format_session_authorization(const SessionAuth& a) noexcept;

// The server's FlexCo-Session answer header.
struct SessionGrant {
  std::string sid;            // 32 lowercase hex digits
  std::string server_public;  // 64 lowercase hex digits
  std::int64_t lifetime = 0;  // 1 .. kMaxWindowSeconds
};
// Strict: "<sid> <public> <lifetime>", single spaces, surrounding blanks
// ignored.  Errors: kMalformedCredential.
Result<SessionGrant> parse_session_grant(std::string_view value) noexcept;
Result<std::string> format_session_grant(const SessionGrant& g) noexcept;

// The text the MAC covers (above); kInvalidArgument on a field out of its
// format.
Result<std::string> session_mac_text(std::string_view audience, std::string_view method,
                                     std::string_view path, std::string_view body_sha256,
                                     std::int64_t timestamp, std::string_view sid,
                                     std::uint64_t counter,
                                     std::optional<std::string_view> idempotency_key) noexcept;
// HMAC-SHA-256(key, text) in lowercase hex.
std::string session_mac(const SessionKey& key, std::string_view text) noexcept;

// One side's X25519 key pair.
struct KeyPair {
  SessionKey secret{};
  std::string public_hex;  // 64 lowercase hex digits
};
Result<KeyPair> make_key_pair() noexcept;  // kInternal: no randomness
// K from our secret and the other side's public key (hex); kInvalidArgument
// if that is not 64 lowercase hex digits or gives the all-zero secret.
Result<SessionKey> derive_session_key(const SessionKey& own_secret, std::string_view peer_public,
                                      std::string_view audience, std::string_view sid,
                                      std::string_view client_public,
                                      std::string_view server_public) noexcept;

// ---------------------------------------------------------------------------
// The server's sessions

struct SessionLimits {
  std::int64_t lifetime = 300;     // s, 1 .. kMaxWindowSeconds
  std::size_t capacity = 4096;     // 1 .. kMaxSessionCapacity
  std::size_t per_uid = 16;        // 1 .. capacity
};

class SessionTable {
 public:
  explicit SessionTable(SessionLimits limits) noexcept : limits_(limits) {}
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;

  // A new session for uid/gid (MUNGE vouched for them) keyed with the
  // client's public key: the grant.  Expired sessions are dropped first; a
  // uid at per_uid loses its oldest; a table full of live sessions grants
  // nothing (kReplayCacheFull, 503 if it were answered: the caller serves
  // the request and grants no session).
  Result<SessionGrant> open(uid_t uid, gid_t gid, std::string_view audience,
                            std::string_view client_public, std::int64_t now) noexcept;

  // The checks of a session request after its header parsed (see
  // Verifier::verify): the session exists (unknown_session) and lives
  // (session_expired), the MAC is its key's (bad_mac), the time is within
  // [now - max_age, now + max_skew] (expired, not_yet_valid), the counter
  // is new (replayed).  The counter is recorded only when all pass.
  Result<Identity> check(const SessionAuth& a, std::string_view method, std::string_view path,
                         std::string_view body_sha256,
                         std::optional<std::string_view> idempotency_key, std::int64_t max_age,
                         std::int64_t max_skew, std::int64_t now) noexcept;

  std::size_t size() const noexcept;
  const SessionLimits& limits() const noexcept { return limits_; }

 private:
  struct Session {
    uid_t uid = 0;
    gid_t gid = 0;
    SessionKey key{};
    std::int64_t expires = 0;  // usable while now < expires
    std::uint64_t highest = 0; // highest counter accepted (0: none)
    std::uint64_t window = 0;  // bit i: counter highest - i accepted
    std::list<std::string>::iterator order;  // in order_ (oldest first)
  };
  void drop_expired(std::int64_t now);
  void erase(std::unordered_map<std::string, Session>::iterator it);

  const SessionLimits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Session> sessions_;  // by sid
  std::list<std::string> order_;                       // sids, oldest first
  std::unordered_map<uid_t, std::size_t> per_uid_;
};

// ---------------------------------------------------------------------------
// The client's session with one server (core/http_client.cpp)

class ClientSession {
 public:
  // How to authenticate the next request: `header` (a session's
  // Authorization value) or, when empty, MUNGE; then `offer` holds the
  // public key to offer in its payload if a session should be asked for
  // (at most one offer is out at a time).
  struct Plan {
    std::string header;
    std::string offer;   // public key hex; "" = no offer
    std::uint64_t generation = 0;
  };
  // `margin`: a session within this many seconds of its end is not used.
  Plan next(std::string_view audience, std::string_view method, std::string_view path,
            std::string_view body, std::optional<std::string_view> idempotency_key,
            std::int64_t now, std::int64_t margin = 5) noexcept;
  // The answer to a request planned with an offer: its FlexCo-Session
  // header value, or nullopt when it had none (the offer is then dropped).
  void answered(const Plan& plan, std::optional<std::string_view> grant,
                std::string_view audience, std::int64_t now) noexcept;
  // The server refused a session request (401): forget the session.
  void drop(const Plan& plan) noexcept;
  // The server refused the offer's payload (401 malformed_payload: it
  // predates flexco-auth-v4): no offers for the next `seconds`.
  void offer_refused(std::int64_t now, std::int64_t seconds = 600) noexcept;
  bool active(std::int64_t now) const noexcept;

 private:
  mutable std::mutex mutex_;
  bool have_ = false;
  std::string sid_;
  SessionKey key_{};
  std::int64_t expires_ = 0;
  std::uint64_t counter_ = 0;
  std::uint64_t generation_ = 0;  // bumped with every new session or drop
  bool offer_out_ = false;
  std::int64_t offer_at_ = 0;
  std::int64_t no_offer_until_ = 0;
  KeyPair offer_;
};

}  // namespace flexco::auth

#endif  // FLEXCO_CORE_SESSION_HPP
