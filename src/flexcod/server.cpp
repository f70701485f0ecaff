// SPDX-License-Identifier: GPL-2.0-or-later
// server.cpp - see server.hpp.

#include "flexcod/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>

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

constexpr std::size_t kMaxBody = std::size_t{1} << 20;
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

std::string user_name(uid_t uid) {
  passwd pw;
  passwd* res = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res != nullptr) return pw.pw_name;
  return std::to_string(uid);
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
  std::string target;  // as received: path?query
  std::string body;
  bool headers_seen = false;
  bool too_large = false;
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

void* Server::uri_log(void*, const char* uri, MHD_Connection*) {
  try {
    auto r = std::make_unique<Request>();
    r->target = uri != nullptr ? uri : "";
    return r.release();  // owned by MHD until completed()
  } catch (...) {
    return nullptr;
  }
}

void Server::completed(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
  std::unique_ptr<Request> r(static_cast<Request*>(*con_cls));
  *con_cls = nullptr;
}

std::string Server::start(const std::string& address, int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    return "ListenAddress " + address + " is not an IPv4 address";
  }
  daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
      static_cast<uint16_t>(port), nullptr, nullptr, &flexcod_access, this,
      MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_URI_LOG_CALLBACK, &flexcod_uri_log, this,
      MHD_OPTION_NOTIFY_COMPLETED, &flexcod_completed, this, MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned int>(128), MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned int>(120),
      MHD_OPTION_LISTENING_ADDRESS_REUSE, static_cast<unsigned int>(1), MHD_OPTION_END);
  if (daemon_ == nullptr) {
    return "cannot listen on " + address + ":" + std::to_string(port) + ": " + std::strerror(errno);
  }
  return {};
}

void Server::stop() {
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
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

MHD_Result Server::respond(MHD_Connection* c, int status, const std::string& body,
                           bool auth_challenge, bool retry_after, const char* type) {
  MHD_Response* resp = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                       MHD_RESPMEM_MUST_COPY);
  if (resp == nullptr) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", type);
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  if (auth_challenge) MHD_add_response_header(resp, "WWW-Authenticate", "MUNGE");
  if (retry_after) MHD_add_response_header(resp, "Retry-After", "1");
  const MHD_Result rc = MHD_queue_response(c, static_cast<unsigned int>(status), resp);
  MHD_destroy_response(resp);
  engine_.count_request(status);
  return rc;
}

MHD_Result Server::error(MHD_Connection* c, int status, const std::string& code,
                         const std::string& msg) {
  return respond(c, status, flexco::error_json(code, msg), status == 401, status == 503);
}

MHD_Result Server::handle(MHD_Connection* c, const char* method, const char* upload,
                          size_t* upload_size, void** con_cls) {
  auto* r = static_cast<Request*>(*con_cls);
  if (r == nullptr) return MHD_NO;
  if (!r->headers_seen) {
    // First call: headers only.  MHD calls again with the body, if any,
    // then once with no data.
    r->headers_seen = true;
    const char* cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl != nullptr && std::strtoull(cl, nullptr, 10) > kMaxBody) r->too_large = true;
    return MHD_YES;
  }
  if (*upload_size != 0) {
    if (r->body.size() + *upload_size > kMaxBody) {
      r->too_large = true;
    } else if (!r->too_large) {
      r->body.append(upload, *upload_size);
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->too_large) return error(c, 413, "too_large", "the body is larger than 1 MiB");
  if (r->target.size() > kMaxTarget) return error(c, 414, "uri_too_long", "request target too long");
  return dispatch(c, method, *r);
}

MHD_Result Server::dispatch(MHD_Connection* c, const std::string& method, Request& r) {
  const std::size_t qpos = r.target.find('?');
  const std::string path = r.target.substr(0, qpos);
  Caller who;
  const char* auth_header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
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
  } else {
    const char* auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
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
  } else if (path == "/v1/clusters" && method == "GET") {
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    result = engine_.clusters();
  } else if (path == "/v1/stats" && method == "GET") {
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    result = engine_.stats();
  } else if (metrics) {
    if (!no_query()) return error(c, 400, "bad_request", "no query parameters are accepted here");
    fc_debug("%s %s by %s: 200", method.c_str(), r.target.c_str(), who.user.c_str());
    return respond(c, 200, engine_.metrics_text(), false, false,
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
  return respond(c, result.value().status, flexco::http::json_text(result.value().body.get()), false,
                 false);
}

}  // namespace flexcod
