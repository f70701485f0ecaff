// SPDX-License-Identifier: GPL-2.0-or-later
// session.cpp - session authentication (see session.hpp, doc/auth.md).

#include "core/session.hpp"

#include <nettle/curve25519.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <strings.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "core/sha256.hpp"

namespace flexco::auth {

namespace {

Error fail(Errc code, std::string_view detail) {
  Error e;
  e.code = code;
  e.status = http_status(code);
  e.message = std::string(errc_name(code)) + ": " + std::string(detail);
  return e;
}

Error oom() noexcept {
  Error e;
  e.code = Errc::kInternal;
  e.status = 500;
  try {
    e.message = "internal_error: out of memory";
  } catch (...) {
  }
  return e;
}

bool lower_hex(std::string_view s, std::size_t n) {
  if (s.size() != n) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool audience_ok(std::string_view a) { return validate_audience(a).ok(); }

// Decimal without sign or leading zeros, at most `digits` digits, <= max.
std::optional<std::uint64_t> decimal(std::string_view s, std::size_t digits, std::uint64_t max) {
  if (s.empty() || s.size() > digits || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (max - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::string to_hex(const std::uint8_t* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 0x0f];
  }
  return out;
}

// 64 lowercase hex digits to 32 bytes (checked by the caller).
SessionKey from_hex(std::string_view s) {
  SessionKey k{};
  auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i < k.size(); ++i)
    k[i] = static_cast<std::uint8_t>((nib(s[2 * i]) << 4) | nib(s[2 * i + 1]));
  return k;
}

bool random_bytes(std::uint8_t* p, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(p + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Exactly n fields separated by single spaces.
bool split(std::string_view s, std::size_t n, std::vector<std::string_view>* out) {
  out->clear();
  std::size_t start = 0;
  for (;;) {
    const std::size_t sp = s.find(' ', start);
    out->push_back(s.substr(start, sp == std::string_view::npos ? std::string_view::npos
                                                                : sp - start));
    if (out->back().empty() || out->size() > n) return false;
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  return out->size() == n;
}

}  // namespace

// ---------------------------------------------------------------------------
// Headers

bool is_session_authorization(std::string_view header_value) noexcept {
  const std::string_view v = trim(header_value);
  if (v.size() <= kSessionScheme.size() || v[kSessionScheme.size()] != ' ') return false;
  return strncasecmp(v.data(), kSessionScheme.data(), kSessionScheme.size()) == 0;
}

Result<SessionAuth> parse_session_authorization(std::string_view header_value) noexcept try {
  const std::string_view v = trim(header_value);
  if (v.empty()) return fail(Errc::kMissingCredential, "no Authorization header");
  if (v.size() > kMaxSessionHeaderLength)
    return fail(Errc::kMalformedCredential, "session header longer than " +
                                                std::to_string(kMaxSessionHeaderLength));
  if (!is_session_authorization(v))
    return fail(Errc::kMalformedCredential, "not of the FlexCo-Session scheme");
  std::vector<std::string_view> f;
  if (!split(v.substr(kSessionScheme.size() + 1), 5, &f))
    return fail(Errc::kMalformedCredential,
                "expected '<audience> <sid> <counter> <time> <mac>', single spaces");
  SessionAuth a;
  if (!audience_ok(f[0])) return fail(Errc::kMalformedCredential, "audience is not [A-Za-z0-9_-]{1,64}");
  if (!lower_hex(f[1], kSessionIdHexLength))
    return fail(Errc::kMalformedCredential, "session id is not 32 lowercase hex digits");
  const auto counter = decimal(f[2], 19, kMaxCounter);
  if (!counter || *counter == 0)
    return fail(Errc::kMalformedCredential, "counter is not a decimal in 1..2^63-1");
  const auto t = decimal(f[3], kMaxTimestampDigits, static_cast<std::uint64_t>(kMaxTime));
  if (!t) return fail(Errc::kMalformedCredential, "time is not decimal epoch seconds");
  if (!lower_hex(f[4], kMacHexLength))
    return fail(Errc::kMalformedCredential, "mac is not 64 lowercase hex digits");
  a.audience = std::string(f[0]);
  a.sid = std::string(f[1]);
  a.counter = *counter;
  a.timestamp = static_cast<std::int64_t>(*t);
  a.mac = std::string(f[4]);
  return a;
} catch (...) {
  return oom();
}

Result<std::string> format_session_authorization(const SessionAuth& a) noexcept try {
  if (!audience_ok(a.audience) || !lower_hex(a.sid, kSessionIdHexLength) || a.counter == 0 ||
      a.counter > kMaxCounter || a.timestamp < 0 || a.timestamp > kMaxTime ||
      !lower_hex(a.mac, kMacHexLength))
    return fail(Errc::kInvalidArgument, "session header field out of its format");
  return std::string(kSessionScheme) + " " + a.audience + " " + a.sid + " " +
         std::to_string(a.counter) + " " + std::to_string(a.timestamp) + " " + a.mac;
} catch (...) {
  return oom();
}

Result<SessionGrant> parse_session_grant(std::string_view value) noexcept try {
  const std::string_view v = trim(value);
  std::vector<std::string_view> f;
  if (v.size() > 128 || !split(v, 3, &f))
    return fail(Errc::kMalformedCredential, "grant is not '<sid> <public> <lifetime>'");
  const auto life = decimal(f[2], 5, static_cast<std::uint64_t>(kMaxWindowSeconds));
  if (!lower_hex(f[0], kSessionIdHexLength) || !lower_hex(f[1], kSessionOfferHexLength) ||
      !life || *life == 0)
    return fail(Errc::kMalformedCredential, "grant field out of its format");
  SessionGrant g;
  g.sid = std::string(f[0]);
  g.server_public = std::string(f[1]);
  g.lifetime = static_cast<std::int64_t>(*life);
  return g;
} catch (...) {
  return oom();
}

Result<std::string> format_session_grant(const SessionGrant& g) noexcept try {
  if (!lower_hex(g.sid, kSessionIdHexLength) || !lower_hex(g.server_public, kSessionOfferHexLength) ||
      g.lifetime < 1 || g.lifetime > kMaxWindowSeconds)
    return fail(Errc::kInvalidArgument, "grant field out of its format");
  return g.sid + " " + g.server_public + " " + std::to_string(g.lifetime);
} catch (...) {
  return oom();
}

// ---------------------------------------------------------------------------
// MAC and keys

Result<std::string> session_mac_text(std::string_view audience, std::string_view method,
                                     std::string_view path, std::string_view body_sha256,
                                     std::int64_t timestamp, std::string_view sid,
                                     std::uint64_t counter,
                                     std::optional<std::string_view> idempotency_key) noexcept try {
  if (!audience_ok(audience) || !validate_method(method).ok() || !validate_path(path).ok() ||
      !lower_hex(body_sha256, kDigestHexLength) || timestamp < 0 || timestamp > kMaxTime ||
      !lower_hex(sid, kSessionIdHexLength) || counter == 0 || counter > kMaxCounter ||
      (idempotency_key && !validate_idempotency_key(*idempotency_key).ok()))
    return fail(Errc::kInvalidArgument, "a MAC field is out of its format");
  std::string t;
  t.reserve(kMaxPayloadSize);
  for (std::string_view f : {kSessionVersion, audience, method, path, body_sha256}) {
    t.append(f);
    t.push_back('\n');
  }
  t.append(std::to_string(timestamp)).push_back('\n');
  t.append(sid).push_back('\n');
  t.append(std::to_string(counter)).push_back('\n');
  t.append(idempotency_key ? *idempotency_key : kNoIdempotencyKey).push_back('\n');
  return t;
} catch (...) {
  return oom();
}

std::string session_mac(const SessionKey& key, std::string_view text) noexcept try {
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, key.size(), key.data());
  hmac_sha256_update(&ctx, text.size(), reinterpret_cast<const std::uint8_t*>(text.data()));
  std::uint8_t d[SHA256_DIGEST_SIZE];
  hmac_sha256_digest(&ctx, sizeof d, d);
  return to_hex(d, sizeof d);
} catch (...) {
  return std::string();
}

Result<KeyPair> make_key_pair() noexcept try {
  KeyPair p;
  if (!random_bytes(p.secret.data(), p.secret.size()))
    return fail(Errc::kInternal, "getrandom failed: errno " + std::to_string(errno));
  // RFC 7748's clamping (Nettle does it too)
  p.secret[0] &= 248;
  p.secret[31] &= 127;
  p.secret[31] |= 64;
  std::uint8_t pub[CURVE25519_SIZE];
  curve25519_mul_g(pub, p.secret.data());
  p.public_hex = to_hex(pub, sizeof pub);
  return p;
} catch (...) {
  return oom();
}

Result<SessionKey> derive_session_key(const SessionKey& own_secret, std::string_view peer_public,
                                      std::string_view audience, std::string_view sid,
                                      std::string_view client_public,
                                      std::string_view server_public) noexcept try {
  if (!lower_hex(peer_public, kSessionOfferHexLength) || !lower_hex(sid, kSessionIdHexLength) ||
      !audience_ok(audience))
    return fail(Errc::kInvalidArgument, "public key, sid or audience out of its format");
  const SessionKey peer = from_hex(peer_public);
  SessionKey shared{};
  curve25519_mul(shared.data(), own_secret.data(), peer.data());
  const SessionKey zero{};
  if (memeql_sec(shared.data(), zero.data(), shared.size()))
    return fail(Errc::kInvalidArgument, "the peer's public key is of low order");
  std::string info;
  for (std::string_view f : {kSessionVersion, audience, sid, client_public, server_public}) {
    info.append(f);
    info.push_back('\n');
  }
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, shared.size(), shared.data());
  hmac_sha256_update(&ctx, info.size(), reinterpret_cast<const std::uint8_t*>(info.data()));
  SessionKey k{};
  hmac_sha256_digest(&ctx, k.size(), k.data());
  return k;
} catch (...) {
  return oom();
}

// ---------------------------------------------------------------------------
// SessionTable

void SessionTable::erase(std::unordered_map<std::string, Session>::iterator it) {
  auto u = per_uid_.find(it->second.uid);
  if (u != per_uid_.end() && --u->second == 0) per_uid_.erase(u);
  order_.erase(it->second.order);
  sessions_.erase(it);
}

void SessionTable::drop_expired(std::int64_t now) {
  // Every session lives limits_.lifetime: the oldest expire first.
  while (!order_.empty()) {
    auto it = sessions_.find(order_.front());
    if (it == sessions_.end()) {
      order_.pop_front();
      continue;
    }
    if (it->second.expires > now) break;
    erase(it);
  }
}

Result<SessionGrant> SessionTable::open(uid_t uid, gid_t gid, std::string_view audience,
                                        std::string_view client_public,
                                        std::int64_t now) noexcept try {
  if (!lower_hex(client_public, kSessionOfferHexLength))
    return fail(Errc::kInvalidArgument, "session offer is not 64 lowercase hex digits");
  Result<KeyPair> mine = make_key_pair();
  if (!mine.ok()) return mine.error();
  std::uint8_t raw[kSessionIdHexLength / 2];
  if (!random_bytes(raw, sizeof raw)) return fail(Errc::kInternal, "getrandom failed");
  SessionGrant g;
  g.sid = to_hex(raw, sizeof raw);
  g.server_public = mine.value().public_hex;
  g.lifetime = limits_.lifetime;
  Result<SessionKey> k = derive_session_key(mine.value().secret, client_public, audience, g.sid,
                                            client_public, g.server_public);
  if (!k.ok()) return k.error();
  const std::lock_guard<std::mutex> lock(mutex_);
  drop_expired(now);
  auto u = per_uid_.find(uid);
  if (u != per_uid_.end() && u->second >= limits_.per_uid) {
    for (auto o = order_.begin(); o != order_.end(); ++o) {
      auto it = sessions_.find(*o);
      if (it != sessions_.end() && it->second.uid == uid) {
        erase(it);
        break;
      }
    }
  }
  if (sessions_.size() >= limits_.capacity) {
    // order_ is by creation: a clock stepped back may leave expired ones
    // behind a live one; look at all before refusing.
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      auto next = std::next(it);
      if (it->second.expires <= now) erase(it);
      it = next;
    }
  }
  if (sessions_.size() >= limits_.capacity)
    return fail(Errc::kReplayCacheFull, "the session table holds " +
                                            std::to_string(limits_.capacity) + " live sessions");
  order_.push_back(g.sid);
  Session s;
  s.uid = uid;
  s.gid = gid;
  s.key = k.value();
  s.expires = now + limits_.lifetime;
  s.order = std::prev(order_.end());
  try {
    sessions_.emplace(g.sid, s);
  } catch (...) {
    order_.pop_back();
    throw;
  }
  ++per_uid_[uid];
  return g;
} catch (...) {
  return oom();
}

Result<Identity> SessionTable::check(const SessionAuth& a, std::string_view method,
                                     std::string_view path, std::string_view body_sha256,
                                     std::optional<std::string_view> idempotency_key,
                                     std::int64_t max_age, std::int64_t max_skew,
                                     std::int64_t now) noexcept try {
  Result<std::string> text = session_mac_text(a.audience, method, path, body_sha256, a.timestamp,
                                              a.sid, a.counter, idempotency_key);
  if (!text.ok()) return fail(Errc::kInvalidRequest, "request not signable");
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(a.sid);
  if (it == sessions_.end())
    return fail(Errc::kUnknownSession, "no session " + a.sid + " here (ended, or never made)");
  Session& s = it->second;
  if (now >= s.expires) {
    const std::int64_t ago = now - s.expires;
    erase(it);
    return fail(Errc::kSessionExpired, "session " + a.sid + " ended " + std::to_string(ago) +
                                           " s ago (its lifetime is " +
                                           std::to_string(limits_.lifetime) + " s)");
  }
  const std::string want = session_mac(s.key, text.value());
  if (want.size() != a.mac.size() ||
      !memeql_sec(want.data(), a.mac.data(), want.size()))
    return fail(Errc::kBadMac, "the MAC is not session " + a.sid + "'s for this request");
  if (a.timestamp < now - max_age)
    return fail(Errc::kExpired, "time " + std::to_string(a.timestamp) + " is " +
                                    std::to_string(now - a.timestamp) + " s old, more than " +
                                    std::to_string(max_age));
  if (a.timestamp > now + max_skew)
    return fail(Errc::kNotYetValid, "time " + std::to_string(a.timestamp) + " is " +
                                        std::to_string(a.timestamp - now) +
                                        " s in the future, more than " + std::to_string(max_skew));
  // The replay window: counters above the highest are new; within the 64
  // below it, new if their bit is clear; older ones are refused.
  if (a.counter > s.highest) {
    const std::uint64_t shift = a.counter - s.highest;
    s.window = shift >= kReplayWindow ? 0 : s.window << shift;
    s.window |= 1;
    s.highest = a.counter;
  } else {
    const std::uint64_t back = s.highest - a.counter;
    if (back >= kReplayWindow)
      return fail(Errc::kReplayed, "counter " + std::to_string(a.counter) + " of session " +
                                       a.sid + " is below its replay window (highest " +
                                       std::to_string(s.highest) + ")");
    if (s.window & (std::uint64_t{1} << back))
      return fail(Errc::kReplayed,
                  "counter " + std::to_string(a.counter) + " of session " + a.sid + " was seen");
    s.window |= std::uint64_t{1} << back;
  }
  Identity id;
  id.uid = s.uid;
  id.gid = s.gid;
  id.encode_time = a.timestamp;  // the request's own time (no MUNGE encode here)
  id.body_sha256 = std::string(body_sha256);
  id.by_session = true;
  return id;
} catch (...) {
  return oom();
}

std::size_t SessionTable::size() const noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.size();
}

// ---------------------------------------------------------------------------
// ClientSession

ClientSession::Plan ClientSession::next(std::string_view audience, std::string_view method,
                                        std::string_view path, std::string_view body,
                                        std::optional<std::string_view> idempotency_key,
                                        std::int64_t now, std::int64_t margin) noexcept {
  Plan p;
  try {
    const std::lock_guard<std::mutex> lock(mutex_);
    p.generation = generation_;
    if (have_ && now + margin < expires_ && counter_ < kMaxCounter) {
      const std::uint64_t c = ++counter_;
      auto text = session_mac_text(audience, method, path, sha256_hex(body), now, sid_, c,
                                   idempotency_key);
      if (text.ok()) {
        SessionAuth a;
        a.audience = std::string(audience);
        a.sid = sid_;
        a.counter = c;
        a.timestamp = now;
        a.mac = session_mac(key_, text.value());
        auto h = format_session_authorization(a);
        if (h.ok()) {
          p.header = std::move(h).value();
          return p;
        }
      }
      return p;  // MUNGE for this one
    }
    // An offer left unanswered for long is given up (its request failed).
    if (offer_out_ && now - offer_at_ > 60) offer_out_ = false;
    if (!offer_out_ && now >= no_offer_until_) {
      auto kp = make_key_pair();
      if (kp.ok()) {
        offer_ = std::move(kp).value();
        offer_out_ = true;
        offer_at_ = now;
        p.offer = offer_.public_hex;
      }
    }
  } catch (...) {
    p = Plan();
  }
  return p;
}

void ClientSession::answered(const Plan& plan, std::optional<std::string_view> grant,
                             std::string_view audience, std::int64_t now) noexcept {
  if (plan.offer.empty()) return;
  try {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!offer_out_ || offer_.public_hex != plan.offer) return;
    offer_out_ = false;
    if (!grant) return;
    auto g = parse_session_grant(*grant);
    if (!g.ok()) return;
    auto k = derive_session_key(offer_.secret, g.value().server_public, audience, g.value().sid,
                                offer_.public_hex, g.value().server_public);
    if (!k.ok()) return;
    have_ = true;
    sid_ = g.value().sid;
    key_ = k.value();
    expires_ = now + g.value().lifetime;
    counter_ = 0;
    ++generation_;
  } catch (...) {
  }
}

void ClientSession::drop(const Plan& plan) noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (plan.generation != generation_) return;  // a newer session: keep it
  have_ = false;
  ++generation_;
}

void ClientSession::offer_refused(std::int64_t now, std::int64_t seconds) noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  offer_out_ = false;
  no_offer_until_ = now + seconds;
}

bool ClientSession::active(std::int64_t now) const noexcept {
  const std::lock_guard<std::mutex> lock(mutex_);
  return have_ && now < expires_;
}

}  // namespace flexco::auth
