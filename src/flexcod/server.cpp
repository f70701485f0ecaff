// SPDX-License-Identifier: GPL-2.0-or-later
// server.cpp - see server.hpp.

#include "flexcod/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "core/auth.hpp"
#include "core/capi_auth.h"
#include "core/wire_profile.hpp"
#include "flexcod/log.hpp"

namespace flexcod {

namespace {

// the longest target a signed request can have (doc/auth.md)
constexpr std::size_t kMaxTarget = flexco::auth::kMaxPathLength;
constexpr std::size_t kMaxSubmitKey = 128;  // as the plugin's Idempotency-Key

bool parse_id(const std::string& s, std::int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  *out = std::strtoll(s.c_str(), nullptr, 10);
  return *out >= 1;
}

// The uid's name at flexcod's host, "" if it has none: part jobs run by
// name (issue 38 §2.3), and a uid's number sent as a name could be
// another user's at a cluster.
std::string user_name(uid_t uid) {
  passwd pw;
  passwd* res = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res != nullptr) return pw.pw_name;
  return "";
}

// Query string of a target as (name, value) pairs, percent-decoding values.
bool parse_query(const std::string& q, std::vector<std::pair<std::string, std::string>>* out) {
  std::size_t p = 0;
  while (p < q.size()) {
    std::size_t amp = q.find('&', p);
    if (amp == std::string::npos) amp = q.size();
    const std::string item = q.substr(p, amp - p);
    const std::size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    std::string raw = eq == std::string::npos ? "" : item.substr(eq + 1);
    std::string val;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size()) {
        const std::string h = raw.substr(i + 1, 2);
        char* end = nullptr;
        const long v = std::strtol(h.c_str(), &end, 16);
        if (end != h.c_str() + 2) return false;
        val += static_cast<char>(v);
        i += 2;
      } else if (raw[i] == '+') {
        val += ' ';
      } else {
        val += raw[i];
      }
    }
    out->emplace_back(std::move(name), std::move(val));
    p = amp + 1;
  }
  return true;
}

}  // namespace

struct Server::Request {
  ~Request() { flexco_http_body_free(bodyb); }
  std::string target;  // as received: path?query
  std::string body;    // once complete
  flexco_http_body_t* bodyb = nullptr;  // in MaxRequestMemory (the guard)
  bool headers_seen = false;
};

extern "C" MHD_Result flexcod_access(void* cls, MHD_Connection* c, const char* url, const char* method,
                                     const char* version, const char* upload, size_t* upload_size,
                                     void** con_cls) {
  (void)url;
  (void)version;
  return static_cast<Server*>(cls)->handle(c, method, upload, upload_size, con_cls);
}

extern "C" void* flexcod_uri_log(void* cls, const char* uri, MHD_Connection* c) {
  return Server::uri_log(cls, uri, c);
}

extern "C" void flexcod_completed(void* cls, MHD_Connection* c, void** con_cls,
                                  MHD_RequestTerminationCode toe) {
  Server::completed(cls, c, con_cls, toe);
}

Server::Server(Engine& engine, flexco::auth::Verifier verifier, std::vector<std::string> admin_users)
    : engine_(engine), verifier_(std::move(verifier)), admin_users_(std::move(admin_users)) {}

Server::~Server() { stop(); }

void* Server::uri_log(void* cls, const char* uri, MHD_Connection* c) {
  flexco_http_guard_requested(static_cast<Server*>(cls)->guard_, c);
  try {
    auto r = std::make_unique<Request>();
    r->target = uri != nullptr ? uri : "";
    return r.release();  // owned by MHD until completed()
  } catch (...) {
    return nullptr;
  }
}

void Server::completed(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode) {
  std::unique_ptr<Request> r(static_cast<Request*>(*con_cls));
  *con_cls = nullptr;
  // a next request on this connection starts its header clock now
  flexco_http_guard_phase(static_cast<Server*>(cls)->guard_, c, FLEXCO_HTTP_HEADERS);
}

namespace {
void guard_log(const char* line) { fc_debug("%s", line); }
}  // namespace

std::string Server::start(const std::string& address, int port, const flexco_http_limits_t& limits) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    return "ListenAddress " + address + " is not an IPv4 address";
  }
  MHD_OptionItem opts[8];
  guard_ = flexco_http_guard_create(&limits, guard_log);
  if (guard_ == nullptr || flexco_http_guard_options(guard_, opts, 8) == 0 ||
      !flexco_http_guard_start(guard_, "flexcod_reaper")) {
    flexco_http_guard_destroy(guard_);
    guard_ = nullptr;
    return "cannot start the connection reaper";
  }
  max_body_ = limits.max_request_size;
  // One thread per connection: a handler may wait for the clusters.  The
  // guard's options: MaxConnections, MaxConnectionsPerAddress,
  // ConnectionTimeout and the connection records.
  daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
      static_cast<uint16_t>(port), nullptr, nullptr, &flexcod_access, this,
      MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_URI_LOG_CALLBACK, &flexcod_uri_log, this,
      MHD_OPTION_NOTIFY_COMPLETED, &flexcod_completed, this, MHD_OPTION_ARRAY, opts,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(64 * 1024),
      MHD_OPTION_LISTENING_ADDRESS_REUSE, static_cast<unsigned int>(1), MHD_OPTION_END);
  if (daemon_ == nullptr) {
    const int err = errno;
    flexco_http_guard_stop(guard_);
    flexco_http_guard_destroy(guard_);
    guard_ = nullptr;
    return "cannot listen on " + address + ":" + std::to_string(port) + ": " + std::strerror(err);
  }
  return {};
}

void Server::stop() {
  flexco_http_guard_stop(guard_);  // no shutdown() while microhttpd stops
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
  flexco_http_guard_destroy(guard_);  // no connection left
  guard_ = nullptr;
}

void Server::set_admins(std::vector<std::string> admin_users) {
  std::lock_guard<std::mutex> lock(admins_mutex_);
  admin_users_ = std::move(admin_users);
}

bool Server::is_admin(uid_t uid) {
  const std::string name = user_name(uid);
  std::lock_guard<std::mutex> lock(admins_mutex_);
  for (const auto& a : admin_users_) {
    if (a == name) return true;
  }
  return false;
}

void Server::set_ui(const std::string& dir, int token_lifetime, bool read_all) {
  std::lock_guard<std::mutex> lock(ui_mutex_);
  ui_dir_ = dir;
  ui_token_lifetime_ = token_lifetime;
  ui_read_all_ = read_all;
}

namespace {
// The FlexCo-Session header the answer being made on this thread carries
// (doc/auth.md, "Sessions"): set by dispatch when the request was granted a
// session, taken by respond.  One thread serves one connection's request
// from its dispatch to its respond (MHD_USE_THREAD_PER_CONNECTION).
thread_local std::string t_session_grant;
}  // namespace

MHD_Result Server::respond(MHD_Connection* c, int status, const std::string& body,
                           const char* challenge, bool retry_after, const char* type) {
  MHD_Response* resp = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                       MHD_RESPMEM_MUST_COPY);
  if (resp == nullptr) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", type);
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  if (challenge != nullptr && *challenge != '\0') {
    MHD_add_response_header(resp, "WWW-Authenticate", challenge);
  }
  if (retry_after) MHD_add_response_header(resp, "Retry-After", "1");
  if (!t_session_grant.empty()) {
    MHD_add_response_header(resp, "FlexCo-Session", t_session_grant.c_str());
    t_session_grant.clear();
  }
  const MHD_Result rc = MHD_queue_response(c, static_cast<unsigned int>(status), resp);
  MHD_destroy_response(resp);
  engine_.count_request(status);
  return rc;
}

MHD_Result Server::error(MHD_Connection* c, int status, const std::string& code,
                         const std::string& msg) {
  return respond(c, status, flexco::error_json(code, msg), status == 401 ? "MUNGE" : nullptr,
                 status == 503);
}

MHD_Result Server::error(MHD_Connection* c, int status, const std::string& code,
                         const std::string& msg, const char* challenge) {
  return respond(c, status, flexco::error_json(code, msg), challenge, status == 503);
}

// GET /ui/ and /ui/<file>: the web view's static files, without a
// credential (they hold no data).  Anything ui::static_file() does not
// accept, or that is not a regular file in UiDir, is 404: no directory
// listing, no way out of the directory.
MHD_Result Server::serve_static(MHD_Connection* c, const std::string& method, const std::string& path) {
  if (method != "GET" && method != "HEAD") {
    return error(c, 405, "bad_request", method + " is not allowed on " + path);
  }
  std::string name;
  const char* type = nullptr;
  if (path.rfind("/ui/", 0) != 0 || !ui::static_file(std::string_view(path).substr(4), &name, &type)) {
    fc_verbose("%s %s: no such file of the web view", method.c_str(), path.c_str());
    return error(c, 404, "not_found", "no such resource");
  }
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(ui_mutex_);
    dir = ui_dir_;
  }
  std::string body;
  if (!ui::read_static(dir, name, &body)) {
    fc_verbose("%s %s: %s/%s is not a readable regular file", method.c_str(), path.c_str(), dir.c_str(),
               name.c_str());
    return error(c, 404, "not_found", "no such resource");
  }
  MHD_Response* resp = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                       MHD_RESPMEM_MUST_COPY);
  if (resp == nullptr) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", type);
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(resp, "X-Frame-Options", "DENY");
  MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(resp, "Content-Security-Policy",
                          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                          "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  const MHD_Result rc = MHD_queue_response(c, 200, resp);
  MHD_destroy_response(resp);
  engine_.count_request(200);
  return rc;
}

// POST /v1/ui/tokens (MUNGE-signed only): a web view session token for the
// caller (doc/auth.md, "Session tokens").
MHD_Result Server::issue_token(MHD_Connection* c, const Caller& who, const std::string& body) {
  int max_lifetime = 0;
  {
    std::lock_guard<std::mutex> lock(ui_mutex_);
    max_lifetime = ui_token_lifetime_;
  }
  if (max_lifetime <= 0) {
    return error(c, 403, "ui_disabled", "the web view is off here (UiTokenLifetime=0)");
  }
  std::int64_t lifetime = max_lifetime;
  if (!body.empty()) {
    json_error_t je;
    JsonPtr b(json_loadb(body.data(), body.size(), 0, &je));
    if (b == nullptr || !json_is_object(b.get())) {
      return error(c, 400, "bad_request", "the body must be a JSON object");
    }
    const char* k;
    json_t* v;
    json_object_foreach(b.get(), k, v) {
      if (std::string(k) != "lifetime") {
        return error(c, 400, "bad_request", std::string("unknown member '") + k + "'");
      }
      if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max_lifetime) {
        return error(c, 400, "bad_request", "lifetime: seconds in 1.." + std::to_string(max_lifetime) +
                                                " (UiTokenLifetime)");
      }
      lifetime = json_integer_value(v);
    }
  }
  const std::int64_t now = flexcod::now_seconds();
  auto t = tokens_.issue(static_cast<uid_t>(who.uid), lifetime, now);
  if (!t) {
    fc_error("web view token for %s: none issued (%zu tokens held, or no randomness)", who.user.c_str(),
             tokens_.size());
    return error(c, 503, "too_many_tokens", "no session token can be issued now; try again later");
  }
  fc_info("web view session token for %s (uid %ld), valid for %ld s", who.user.c_str(), (long)who.uid,
          (long)lifetime);
  JsonPtr j(json_object());
  json_object_set_new(j.get(), "token", json_string(t->token.c_str()));
  json_object_set_new(j.get(), "user", json_string(who.user.c_str()));
  json_object_set_new(j.get(), "uid", json_integer(who.uid));
  json_object_set_new(j.get(), "expires", json_integer(t->expires));
  json_object_set_new(j.get(), "lifetime", json_integer(lifetime));
  json_object_set_new(j.get(), "path", json_string(("/ui/#token=" + t->token).c_str()));
  return respond(c, 201, flexco::http::json_text(j.get()), nullptr, false);
}

MHD_Result Server::handle(MHD_Connection* c, const char* method, const char* upload,
                          size_t* upload_size, void** con_cls) {
  auto* r = static_cast<Request*>(*con_cls);
  if (r == nullptr) return MHD_NO;
  if (!r->headers_seen) {
    // First call: headers only; the body's clock starts.  MHD calls
    // again with the body, if any, then once with no data.
    r->headers_seen = true;
    if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_BODY)) return MHD_NO;
    r->bodyb = flexco_http_body_new(guard_);
    if (r->bodyb == nullptr) return MHD_NO;
    const char* cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    std::int64_t len = -1;
    if (cl != nullptr) {
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(cl, &end, 10);
      if (end != cl && *end == '\0' && errno == 0) {
        len = v > static_cast<unsigned long long>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(v);
      }
    }
    // the whole declared body from MaxRequestMemory, before a byte is read
    const int v = flexco_http_body_begin(r->bodyb, len);
    if (v == FLEXCO_BODY_FAILED) return MHD_NO;
    if (v != FLEXCO_BODY_OK) {
      if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_SERVING)) return MHD_NO;
      return v == FLEXCO_BODY_TOO_LARGE ? too_large(c) : no_memory(c);
    }
    return MHD_YES;
  }
  if (*upload_size != 0) {
    const std::size_t n = *upload_size;
    *upload_size = 0;
    if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_BODY)) return MHD_NO;  // 408 sent
    // over a limit the rest is discarded, answered at the end
    if (flexco_http_body_add(r->bodyb, upload, n) == FLEXCO_BODY_FAILED) return MHD_NO;
    return MHD_YES;
  }
  // the request is complete: no deadline while it is served
  if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_SERVING)) return MHD_NO;
  switch (flexco_http_body_verdict(r->bodyb)) {
    case FLEXCO_BODY_OK: break;
    case FLEXCO_BODY_TOO_LARGE: return too_large(c);
    case FLEXCO_BODY_NO_MEMORY: return no_memory(c);
    default: return MHD_NO;
  }
  r->body.assign(flexco_http_body_data(r->bodyb), flexco_http_body_size(r->bodyb));
  flexco_http_body_drop(r->bodyb);
  if (r->target.size() > kMaxTarget) return error(c, 414, "uri_too_long", "request target too long");
  return dispatch(c, method, *r);
}

MHD_Result Server::too_large(MHD_Connection* c) {
  return error(c, 413, "too_large",
               "request body larger than " + std::to_string(max_body_) + " bytes (MaxRequestSize)");
}

MHD_Result Server::no_memory(MHD_Connection* c) {
  return error(c, 503, "request_memory_full",
               "request bodies being received hold MaxRequestMemory bytes; retry later");
}

MHD_Result Server::dispatch(MHD_Connection* c, const std::string& method, Request& r) {
  const std::size_t qpos = r.target.find('?');
  const std::string path = r.target.substr(0, qpos);
  t_session_grant.clear();
  if (path == "/ui" || path.rfind("/ui/", 0) == 0) return serve_static(c, method, path);
  // High availability (doc/flexcod.md): a standby, or a flexcod still
  // recovering after it took over, answers reads; a change of a
  // co-allocation is for the one in charge, whose address the answer
  // gives (sreserve asks it, with the same Idempotency-Key).  Nothing was
  // done, so any client may send it again.  Said before authentication,
  // as the plugins say not_in_charge: it tells nothing about the request,
  // and the credential is left undecoded for the flexcod in charge (a
  // client sends the same one on, and munged decodes a credential once).
  // The rendezvous too, reads included: its barrier lives in the engine
  // of the one in charge.
  const bool rendezvous_call = path.rfind("/v1/rendezvous/", 0) == 0;
  if (((method != "GET" && method != "HEAD" && path.rfind("/v1/coallocations", 0) == 0) ||
       rendezvous_call) &&
      !engine_.in_charge()) {
    const std::string leader = engine_.leader_address();
    JsonPtr e(json_object());
    json_t* inner = json_object();
    json_object_set_new(inner, "code", json_string("not_in_charge"));
    const std::string msg = leader.empty()
                                ? "this flexcod is a standby and no flexcod is in charge now; retry soon"
                                : "this flexcod is a standby; the flexcod in charge is at " + leader;
    json_object_set_new(inner, "message", json_string(msg.c_str()));
    json_object_set_new(inner, "leader", leader.empty() ? json_null() : json_string(leader.c_str()));
    json_object_set_new(e.get(), "error", inner);
    fc_verbose("%s %s: 503 not_in_charge (in charge: %s)", method.c_str(), r.target.c_str(),
               leader.empty() ? "nobody" : leader.c_str());
    return respond(c, 503, flexco::http::json_text(e.get()), nullptr, true);
  }
  if (rendezvous_call) {
    return rendezvous(c, method, path, qpos == std::string::npos ? "" : r.target.substr(qpos + 1), r.body);
  }

  Caller who;
  const char* auth_header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  const std::string_view auth_sv = auth_header != nullptr ? auth_header : "";
  const bool metrics = path == "/metrics" && method == "GET";
  if (metrics && flexco_is_bearer(auth_header)) {
    // MetricsTokenFile's token: for GET /metrics only (doc/auth.md).
    std::string token;
    {
      std::lock_guard<std::mutex> lock(admins_mutex_);
      token = metrics_token_;
    }
    if (token.empty()) return error(c, 401, "invalid_token", "no MetricsTokenFile is set: use MUNGE");
    if (!flexco_bearer_matches(auth_header, token.c_str())) {
      fc_verbose("%s %s: wrong metrics token", method.c_str(), r.target.c_str());
      return error(c, 401, "invalid_token", "the bearer token is not MetricsTokenFile's");
    }
    who.user = "(metrics token)";
  } else if (public_stats_ && method == "GET" &&
             (path == "/v1/stats" || path == "/v1/clusters" || path == "/metrics")) {
    // PublicStats=yes: answered without a credential (who stays uid -1).
    who.user = "(public)";
  } else if (auth_sv.size() >= 7 && strncasecmp(auth_sv.data(), "Bearer ", 7) == 0) {
    // A web view session token (doc/auth.md, "Session tokens"): reads only.
    std::string_view tok = auth_sv.substr(7);
    while (!tok.empty() && (tok.front() == ' ' || tok.front() == '\t')) tok.remove_prefix(1);
    while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\t')) tok.remove_suffix(1);
    {
      std::lock_guard<std::mutex> lock(ui_mutex_);
      if (ui_token_lifetime_ <= 0) {
        return error(c, 403, "ui_disabled", "the web view is off here (UiTokenLifetime=0)");
      }
    }
    uid_t uid = 0;
    const auto verdict = tokens_.check(tok, flexcod::now_seconds(), &uid);
    if (verdict != ui::TokenStore::Verdict::kValid) {
      const bool malformed = verdict == ui::TokenStore::Verdict::kMalformed;
      fc_verbose("%s %s: %s session token", method.c_str(), path.c_str(),
                 malformed ? "malformed" : "unknown or expired");
      return error(c, 401, "invalid_token",
                   malformed ? "invalid_token: a session token is 64 lowercase hex digits"
                             : "invalid_token: unknown or expired session token (run sreserve ui again)",
                   "Bearer realm=\"flexcod\"");
    }
    who.uid = uid;
    who.user = user_name(uid);
    if (method != "GET") {
      fc_verbose("%s %s by %s: refused, a session token only reads", method.c_str(), path.c_str(),
                 who.user.c_str());
      return error(c, 403, "read_only", "a web view session token only reads (GET); use sreserve");
    }
    who.admin = is_admin(uid);
    std::lock_guard<std::mutex> lock(ui_mutex_);
    who.read_all = ui_read_all_;
  } else {
    const char* auth = auth_header;
    // The Idempotency-Key, if any, must be the signed one (flexco-auth-v3).
    const char* idem = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
    std::optional<std::string_view> idem_key;
    if (idem != nullptr) idem_key = std::string_view(idem);
    auto id = verifier_.verify(method, r.target, r.body, auth != nullptr ? auth : "", idem_key);
    if (!id.ok()) {
      const auto& e = id.error();
      fc_verbose("%s %s: %s", method.c_str(), r.target.c_str(), e.message.c_str());
      return error(c, e.status, flexco::auth::errc_name(e.code), e.message);
    }
    who.uid = id.value().uid;
    who.user = user_name(id.value().uid);
    who.admin = is_admin(id.value().uid);
    t_session_grant = id.value().session_grant;
  }
  if (who.user.empty()) {
    // Part jobs run by name, and a number is no name (issue 38 §2.3).
    fc_verbose("%s %s: uid %ld has no name here: refused", method.c_str(), r.target.c_str(),
               (long)who.uid);
    return error(c, 403, "unknown_user",
                 "uid " + std::to_string(who.uid) +
                     " has no user name at flexcod's host, and flexcod runs part jobs by name "
                     "(doc/admin.md, \"Users across sites\")");
  }

  std::vector<std::pair<std::string, std::string>> query;
  if (qpos != std::string::npos && !parse_query(r.target.substr(qpos + 1), &query)) {
    return error(c, 400, "bad_request", "malformed query string");
  }
  auto no_query = [&]() { return query.empty(); };
  JsonPtr body;
  auto need_body = [&]() -> bool {
    json_error_t je;
    body.reset(json_loadb(r.body.data(), r.body.size(), 0, &je));
    return body != nullptr;
  };
  ApiResult result = ApiError{404, "not_found", "no such resource: " + path};
  const std::string base = "/v1/coallocations";
  if (path == base) {
    if (method == "POST") {
      if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
      const char* key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
      if (key != nullptr) {
        const std::size_t n = std::strlen(key);
        if (n == 0 || n > kMaxSubmitKey) {
          return error(c, 400, "bad_request", "Idempotency-Key: 1.." + std::to_string(kMaxSubmitKey) +
                                                  " characters");
        }
        for (std::size_t i = 0; i < n; ++i) {
          if (key[i] < 0x21 || key[i] > 0x7e) {
            return error(c, 400, "bad_request", "Idempotency-Key: printable ASCII without spaces only");
          }
        }
      }
      if (!need_body()) return error(c, 400, "bad_request", "the body is not valid JSON");
      result = engine_.submit(who, body.get(), key != nullptr ? key : "");
    } else if (method == "GET") {
      std::string state, user;
      int limit = 1000;
      for (const auto& kv : query) {
        if (kv.first == "state") {
          state = kv.second;
        } else if (kv.first == "user") {
          user = kv.second;
        } else if (kv.first == "limit") {
          std::int64_t l = 0;
          if (!parse_id(kv.second, &l) || l > 10000) return error(c, 400, "bad_request", "limit: 1..10000");
          limit = static_cast<int>(l);
        } else {
          return error(c, 400, "bad_request", "unknown query parameter '" + kv.first + "'");
        }
      }
      result = engine_.list(who, state, user, limit);
    } else {
      result = ApiError{405, "bad_request", method + " is not allowed on " + path};
    }
  } else if (path.rfind(base + "/", 0) == 0) {
    std::int64_t co = 0;
    if (!parse_id(path.substr(base.size() + 1), &co)) {
      return error(c, 400, "bad_request", "the id must be a positive integer");
    }
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    if (method == "GET") {
      result = engine_.show(who, co);
    } else if (method == "DELETE") {
      result = engine_.cancel(who, co);
    } else if (method == "PATCH") {
      if (!need_body()) return error(c, 400, "bad_request", "the body is not valid JSON");
      result = engine_.modify(who, co, body.get());
    } else {
      result = ApiError{405, "bad_request", method + " is not allowed on " + path};
    }
  } else if (path == "/v1/ui/tokens") {
    if (method != "POST") return error(c, 405, "bad_request", method + " is not allowed on " + path);
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    if (who.uid < 0) return error(c, 401, "missing_credential", "missing_credential: sign the request");
    return issue_token(c, who, r.body);
  } else if (path.rfind("/v1/clusters/", 0) == 0 && path.size() > 21 &&
             path.compare(path.size() - 8, 8, "/profile") == 0) {
    // GET /v1/clusters/{name}/profile: the web view's free-node chart.
    const std::string name = path.substr(13, path.size() - 13 - 8);
    if (method != "GET") return error(c, 405, "bad_request", method + " is not allowed on " + path);
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    bool good = !name.empty() && name.size() <= 64;
    for (char ch : name) {
      good = good && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                      ch == '_' || ch == '-');
    }
    result = good ? engine_.cluster_profile(name)
                  : ApiResult{ApiError{404, "not_found", "no such resource: " + path}};
  } else if (path == "/v1/clusters" && method == "GET") {
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    result = engine_.clusters();
  } else if (path == "/v1/stats" && method == "GET") {
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    result = engine_.stats();
  } else if (metrics) {
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    fc_debug("%s %s by %s: 200", method.c_str(), r.target.c_str(), who.user.c_str());
    return respond(c, 200, engine_.metrics_text(), nullptr, false,
                   "text/plain; version=0.0.4; charset=utf-8");
  } else if (path == "/metrics") {
    result = ApiError{405, "bad_request", method + " is not allowed on " + path};
  }
  if (!result.ok()) {
    const ApiError& e = result.error();
    fc_verbose("%s %s by %s: %d %s: %s", method.c_str(), r.target.c_str(), who.user.c_str(), e.status,
               e.code.c_str(), e.message.c_str());
    return error(c, e.status, e.code, e.message);
  }
  fc_debug("%s %s by %s: %d", method.c_str(), r.target.c_str(), who.user.c_str(), result.value().status);
  return respond(c, result.value().status, flexco::http::json_text(result.value().body.get()), nullptr,
                 false);
}

}  // namespace flexcod
