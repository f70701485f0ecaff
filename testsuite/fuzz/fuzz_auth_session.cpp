// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the request-session parsers and checks (doc/auth.md,
// "Request sessions"; core/session.hpp).  The first byte picks:
//   0: the session Authorization header parser, which sees every
//      session request before any check;
//   1: the FlexCo-Session grant parser (the client reads it from any
//      server's answer);
//   2: a whole session request against a table holding one session: the
//      rest is "<header>\n<method>\n<target>\n<body>"; with the first
//      byte's high bit set, signed with that session's key.
// Checks: no crash, no sanitizer report; a header or grant that parses
// formats back to one that parses the same; a request is accepted only
// under the session's own MAC and never twice with one counter.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/session.hpp"
#include "core/sha256.hpp"

namespace auth = flexco::auth;

namespace {
constexpr std::int64_t kNow = 1700000000;

struct Fixture {
  auth::SessionTable table{auth::SessionLimits{300, 4, 2}};
  std::string sid;
  auth::SessionKey key{};
  Fixture() {
    auto client = auth::make_key_pair();
    if (!client.ok()) abort();
    auto g = table.open(1000, 1000, "alpha", client.value().public_hex, kNow);
    if (!g.ok()) abort();
    sid = g.value().sid;
    auto k = auth::derive_session_key(client.value().secret, g.value().server_public, "alpha", sid,
                                      client.value().public_hex, g.value().server_public);
    if (!k.ok()) abort();
    key = k.value();
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto a = auth::parse_session_authorization(in);
      if (!a.ok()) break;
      auto again = auth::format_session_authorization(a.value());
      if (!again.ok()) abort();
      auto back = auth::parse_session_authorization(again.value());
      if (!back.ok() || back.value().sid != a.value().sid ||
          back.value().counter != a.value().counter || back.value().mac != a.value().mac ||
          back.value().timestamp != a.value().timestamp || back.value().audience != a.value().audience)
        abort();
      break;
    }
    case 1: {
      auto g = auth::parse_session_grant(in);
      if (!g.ok()) break;
      auto again = auth::format_session_grant(g.value());
      if (!again.ok()) abort();
      auto back = auth::parse_session_grant(again.value());
      if (!back.ok() || back.value().sid != g.value().sid ||
          back.value().server_public != g.value().server_public ||
          back.value().lifetime != g.value().lifetime)
        abort();
      break;
    }
    default: {
      static Fixture f;  // one session; counters accumulate across inputs
      std::string_view parts[4];
      std::string_view rest = in;
      for (int i = 0; i < 3; ++i) {
        const std::size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) return 0;
        parts[i] = rest.substr(0, nl);
        rest.remove_prefix(nl + 1);
      }
      parts[3] = rest;
      auto a = auth::parse_session_authorization(parts[0]);
      if (!a.ok()) break;
      // the fuzzer's header names our session: then only our MAC passes
      a.value().sid = f.sid;
      const std::string digest = flexco::sha256_hex(parts[3]);
      auto text = auth::session_mac_text(a.value().audience, parts[1], parts[2], digest,
                                         a.value().timestamp, f.sid, a.value().counter,
                                         std::nullopt);
      // with the first byte's high bit: under the session's own MAC (the
      // checks after it are then reached)
      if ((data[0] & 0x80) != 0 && text.ok()) a.value().mac = auth::session_mac(f.key, text.value());
      const bool ours = text.ok() && auth::session_mac(f.key, text.value()) == a.value().mac;
      auto first = f.table.check(a.value(), parts[1], parts[2], digest, std::nullopt, 300, 60, kNow);
      if (first.ok() && !ours) abort();  // accepted without the key
      if (first.ok() && first.value().uid != 1000) abort();
      auto second = f.table.check(a.value(), parts[1], parts[2], digest, std::nullopt, 300, 60, kNow);
      if (second.ok()) abort();  // one counter twice
      break;
    }
  }
  return 0;
}
