// SPDX-License-Identifier: GPL-2.0-or-later
// api_server.hpp - the slurmctld plugin's HTTP+JSON service on
// libmicrohttpd, without Slurm (service/capi_api_server.h says what it
// does and what its host does).  libmicrohttpd runs the listener and a
// small pool of its own threads; none of them ever holds a slurmctld lock
// while doing network or MUNGE work.  Every request is bounded (header
// memory, body size, connection count, idle timeout), authenticated with
// MUNGE before anything else, and answered with JSON; errors are
// {"error":{"code":...,"message":...}} with a 4xx/5xx status and change
// nothing.
//
// Connection limits (doc/admin.md, "Connection limits"): the guard
// (service/http_guard.hpp) gives microhttpd MaxConnections,
// MaxConnectionsPerAddress and the idle timeout, answers 408 and closes a
// connection whose headers are not complete HeaderTimeout seconds after
// the request began or whose body is not complete BodyTimeout seconds
// after its headers, closes the connection that has waited longest for
// its headers when every slot is taken, and holds bodies received but not
// yet authenticated to MaxRequestMemory bytes in all (503 beyond).  The
// handler moves a connection from one phase to the next and closes it
// (MHD_NO) if the guard cut it first, so no answer of ours follows a 408.
//
// Long polls (GET /v1/events?wait=N) and BackfillDefer hold no thread
// while they wait: the handler parks the request (service/parking.hpp),
// which suspends its connection; the waker resumes it when an event
// arrives (notify()), its deadline passes or backfill's cycle ended, and
// microhttpd then calls the handler again, which answers.  Suspending and
// resuming both happen under the parking's lock, so a resume never
// overtakes its suspend.

#ifndef FLEXCO_SERVICE_API_SERVER_HPP
#define FLEXCO_SERVICE_API_SERVER_HPP

#include <microhttpd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "service/capi_api_server.h"
#include "service/parking.hpp"
#include "service/rate_limit.hpp"

namespace flexco::service {

// microhttpd's messages, through a log function, at most a burst a minute.
struct MhdLog;

class ApiServer {
 public:
  // Statistics buckets: the router's FLEXCO_EP_* (core/capi_decode.h).
  static constexpr std::size_t kEndpoints = 6;
  // Status codes counted by name; others count as "other".
  static constexpr std::array<int, 13> kCodes = {200, 201, 400, 401, 403, 404, 405,
                                                 408, 409, 413, 429, 500, 503};
  // Latency histogram upper bounds, microseconds; the last bucket is open.
  static constexpr std::array<std::uint64_t, 4> kLatBounds = {1000, 10000, 100000, 1000000};
  static constexpr std::size_t kLat = kLatBounds.size() + 1;

  ApiServer();
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // 0, or -1 with the reason logged.
  int start(const flexco_api_conf_t& conf, const flexco_api_host_t& host);
  bool running() const;
  std::uint16_t port() const;
  void stop();
  void notify() { parking_.notify(); }

  struct Req;

 private:
  struct Stats {
    std::array<std::array<std::uint64_t, kCodes.size() + 1>, kEndpoints> count{};
    std::array<std::array<std::uint64_t, kLat>, kEndpoints> lat{};
    std::array<std::uint64_t, kEndpoints> lat_sum{};
  };

  // microhttpd's callbacks (cls: the server)
  static void* uri_log(void* cls, const char* uri, MHD_Connection* c);
  static void completed(void* cls, MHD_Connection* c, void** con_cls,
                        MHD_RequestTerminationCode toe);
  static MHD_Result handler(void* cls, MHD_Connection* c, const char* url, const char* method,
                            const char* version, const char* upload_data,
                            std::size_t* upload_data_size, void** con_cls);

  MHD_Result handle(MHD_Connection* c, Req* req, const char* url, const char* method,
                    const char* upload_data, std::size_t* upload_data_size);
  MHD_Result dispatch(MHD_Connection* c, Req* req, const char* url, const char* method);
  bool defer(MHD_Connection* c, Req* req, const char* url, const char* method);

  MHD_Result send(MHD_Connection* c, Req* req, int status, char* body,
                  const char* allow = nullptr, const char* type = "application/json");
  MHD_Result error(MHD_Connection* c, Req* req, int status, const char* code,
                   const std::string& msg);
  MHD_Result too_large(MHD_Connection* c, Req* req);
  MHD_Result no_memory(MHD_Connection* c, Req* req);

  MHD_Result get_profile(MHD_Connection* c, Req* req);
  MHD_Result post_probe(MHD_Connection* c, Req* req);
  MHD_Result get_stats(MHD_Connection* c, Req* req);
  MHD_Result get_metrics(MHD_Connection* c, Req* req);
  MHD_Result get_events(MHD_Connection* c, Req* req);
  MHD_Result events_resumed(MHD_Connection* c, Req* req);
  bool look(Req* req, bool again, char** json, std::uint64_t* after);
  MHD_Result reservations(MHD_Connection* c, Req* req, const void* route, const char* method);

  json_t* stats_json();
  char* metrics_text();
  void record(int ep, int status, std::uint64_t usec);

  bool is_daemon_user(std::uint32_t uid) const;
  bool may_query(std::uint32_t uid) const;
  void log(int level, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  void services_free();

  flexco_api_host_t host_{};
  // conf_, with its strings and lists owned
  flexco_api_conf_t conf_{};
  std::string listen_address_, metrics_token_;
  std::vector<std::uint32_t> daemon_uids_, query_uids_;

  std::mutex control_mutex_;         // start and stop, one at a time
  std::atomic<int> parked_live_{0};  // parked long polls not completed yet
  mutable std::mutex daemon_mutex_;  // daemon_ (running(), port())
  std::unique_ptr<MhdLog> mhd_log_;
  MHD_Daemon* daemon_ = nullptr;
  flexco_http_guard_t* guard_ = nullptr;
  std::unique_ptr<RateLimiter> rate_;
  Parking parking_;  // lives as long as the server; opened at each start

  std::mutex stats_mutex_;
  Stats stats_;
  // Requests authenticated, by MUNGE and by a request session
  // (doc/auth.md); sessions granted.
  std::atomic<std::uint64_t> auth_munge_{0}, auth_session_{0}, sessions_granted_{0};
  std::time_t started_at_ = 0;
};

// FlexCo idle: every request answered 503 flexco_idle with the reason.
class IdleServer {
 public:
  using Log = void (*)(void* arg, int level, const char* msg);
  IdleServer(std::string body, Log log, void* log_arg);
  ~IdleServer();
  IdleServer(const IdleServer&) = delete;
  IdleServer& operator=(const IdleServer&) = delete;
  // -1: address not numeric, -2: cannot listen
  int start(const char* address, std::uint16_t port);
  std::uint16_t port() const;

 private:
  static MHD_Result handler(void* cls, MHD_Connection* c, const char* url, const char* method,
                            const char* version, const char* upload_data,
                            std::size_t* upload_data_size, void** con_cls);
  std::string body_;
  std::unique_ptr<MhdLog> mhd_log_;
  MHD_Daemon* daemon_ = nullptr;
};

}  // namespace flexco::service

#endif
