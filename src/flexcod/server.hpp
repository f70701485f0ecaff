// SPDX-License-Identifier: GPL-2.0-or-later
// server.hpp - flexcod's HTTP+JSON listener (libmicrohttpd): MUNGE
// verification of every request (doc/auth.md), the caller's identity and
// admin flag, routing to the Engine (doc/openapi-flexcod.yaml).

#ifndef FLEXCO_FLEXCOD_SERVER_HPP
#define FLEXCO_FLEXCOD_SERVER_HPP

#include <microhttpd.h>

#include <memory>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "core/auth.hpp"
#include "flexcod/engine.hpp"
#include "service/capi_http.h"
#include "flexcod/ui.hpp"

namespace flexcod {

class Server {
 public:
  Server(Engine& engine, flexco::auth::Verifier verifier, std::vector<std::string> admin_users);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens on address:port with the limits of flexcod.conf (the same
  // connection guard as the plugin's, src/service); "" or why not.
  std::string start(const std::string& address, int port, const flexco_http_limits_t& limits);
  void stop();
  void set_admins(std::vector<std::string> admin_users);
  // PublicStats: GET /v1/stats and /v1/clusters without a credential.
  void set_public_stats(bool yes) { public_stats_ = yes; }
  // MetricsTokenFile's token ("" none): a bearer credential for GET /metrics only.
  void set_metrics_token(const std::string& token) {
    std::lock_guard<std::mutex> lock(admins_mutex_);
    metrics_token_ = token;
  }
  // The web view (UiDir, UiTokenLifetime, UiReadAll; doc/flexcod.md).
  void set_ui(const std::string& dir, int token_lifetime, bool read_all);

  // libmicrohttpd callbacks (public for the C trampolines).
  MHD_Result handle(MHD_Connection* c, const char* method, const char* upload, size_t* upload_size,
                    void** con_cls);
  static void* uri_log(void* cls, const char* uri, MHD_Connection* c);
  static void completed(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode toe);

 private:
  struct Request;
  // challenge: the WWW-Authenticate value of a 401 ("" = none).
  MHD_Result respond(MHD_Connection* c, int status, const std::string& body, const char* challenge,
                     bool retry_after, const char* type = "application/json");
  MHD_Result error(MHD_Connection* c, int status, const std::string& code, const std::string& msg,
                   const char* challenge);
  MHD_Result serve_static(MHD_Connection* c, const std::string& method, const std::string& path);
  MHD_Result issue_token(MHD_Connection* c, const Caller& who, const std::string& body);
  MHD_Result error(MHD_Connection* c, int status, const std::string& code, const std::string& msg);
  MHD_Result dispatch(MHD_Connection* c, const std::string& method, Request& r);
  // /v1/rendezvous/...: a part job's capability token, not MUNGE
  // (server_rendezvous.cpp; doc/one-program.md).
  MHD_Result rendezvous(MHD_Connection* c, const std::string& method, const std::string& path,
                        const std::string& query, const std::string& body);
  MHD_Result too_large(MHD_Connection* c);
  MHD_Result no_memory(MHD_Connection* c);
  bool is_admin(uid_t uid);

  Engine& engine_;
  flexco::auth::Verifier verifier_;
  std::mutex admins_mutex_;
  std::vector<std::string> admin_users_;
  std::atomic<bool> public_stats_{false};
  std::string metrics_token_;  // admins_mutex_
  std::mutex ui_mutex_;
  std::string ui_dir_;
  int ui_token_lifetime_ = 0;
  bool ui_read_all_ = false;
  ui::TokenStore tokens_;
  MHD_Daemon* daemon_ = nullptr;
  flexco_http_guard_t* guard_ = nullptr;
  std::uint32_t max_body_ = 0;
};

}  // namespace flexcod

#endif
