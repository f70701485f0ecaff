// SPDX-License-Identifier: GPL-2.0-or-later
// server_rendezvous.cpp - the start-up rendezvous' requests
// (doc/openapi-flexcod.yaml, /v1/rendezvous): authenticated by the part
// job's capability token (Authorization: Bearer), never by MUNGE, since a
// part job at another site has no credential of flexcod's realm.  The
// token is checked by the engine on every call; it is never logged (the
// log names the co-allocation and part the path names).

#include "core/wire_profile.hpp"
#include "flexcod/log.hpp"
#include "flexcod/rendezvous.hpp"
#include "flexcod/server.hpp"

namespace flexcod {

MHD_Result Server::rendezvous(MHD_Connection* c, const std::string& method, const std::string& path,
                              const std::string& query, const std::string& body) {
  static const char* const kChallenge = "Bearer realm=\"flexcod-rendezvous\"";
  rendezvous::Target t;
  if (!rendezvous::parse_target(path, &t)) return error(c, 404, "not_found", "no such resource: " + path);
  const bool reg = t.part >= 0;
  if ((reg && method != "POST") || (!reg && method != "GET")) {
    return error(c, 405, "bad_request", method + " is not allowed on " + path);
  }
  int wait = 0;
  if (!rendezvous::parse_wait(query, &wait)) {
    return error(c, 400, "bad_request",
                 "the only query parameter is wait=S, S in 0.." + std::to_string(rendezvous::kMaxWait));
  }
  std::string token;
  const char* auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  switch (rendezvous::parse_bearer(auth, &token)) {
    case rendezvous::TokenForm::kMissing:
      fc_verbose("%s %s: no rendezvous token", method.c_str(), path.c_str());
      return error(c, 401, "missing_token",
                   "missing_token: send the part's FLEXCO_RENDEZVOUS_TOKEN as a Bearer token", kChallenge);
    case rendezvous::TokenForm::kMalformed:
      fc_verbose("%s %s: malformed rendezvous token", method.c_str(), path.c_str());
      return error(c, 401, "invalid_token", "invalid_token: a rendezvous token is 64 lowercase hex digits",
                   kChallenge);
    case rendezvous::TokenForm::kOk: break;
  }
  rendezvous::Registration r;
  if (reg) {
    std::string why;
    if (!rendezvous::parse_registration(body, &r, &why)) return error(c, 400, "bad_request", why);
  } else if (!body.empty()) {
    return error(c, 400, "bad_request", "GET takes no body");
  }
  ApiResult result = engine_.rendezvous(token, t.co, t.part, reg ? &r : nullptr, wait);
  if (!result.ok()) {
    const ApiError& e = result.error();
    fc_verbose("%s %s: %d %s: %s", method.c_str(), path.c_str(), e.status, e.code.c_str(), e.message.c_str());
    return error(c, e.status, e.code, e.message, e.status == 401 ? kChallenge : nullptr);
  }
  fc_debug("%s %s: %d", method.c_str(), path.c_str(), result.value().status);
  return respond(c, result.value().status, flexco::http::json_text(result.value().body.get()), nullptr,
                 false);
}

}  // namespace flexcod
