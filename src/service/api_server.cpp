// SPDX-License-Identifier: GPL-2.0-or-later
// api_server.cpp - see api_server.hpp and capi_api_server.h.

#include "service/api_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/capi_auth.h"
#include "core/capi_decode.h"
#include "core/capi_profile.h"

namespace flexco::service {

namespace {

// the longest target a signed request can have (doc/auth.md)
constexpr std::size_t kMaxUri = FLEXCO_AUTH_MAX_TARGET;
constexpr std::size_t kHeaderMemory = 32 * 1024;
// microhttpd's messages, at most this many a minute: it logs every
// connection refused over MaxConnections or MaxConnectionsPerAddress, and a
// client that opens them in a loop must not fill slurmctld's log.
constexpr std::uint32_t kMhdLogBurst = 10;

const char* const kEpNames[ApiServer::kEndpoints] = {"profile", "stats", "events",
                                                     "reservations", "probe", "other"};
const char* const kRlKeys[FLEXCO_API_RL_CNT] = {"ProbeRateLimit", "ProfileRateLimit",
                                                "EventsRateLimit"};
const char* const kRlNames[FLEXCO_API_RL_CNT] = {"probe", "profile", "events"};

static_assert(FLEXCO_API_RL_CNT == RateLimiter::kKinds, "one list of limits");
// the statistics buckets are the router's (core/capi_decode.h)
static_assert(FLEXCO_EP_OTHER + 1 == ApiServer::kEndpoints, "endpoint buckets");

std::uint64_t usec_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

int rl_index(int ep) {
  switch (ep) {
    case FLEXCO_EP_PROBE:
      return FLEXCO_API_RL_PROBE;
    case FLEXCO_EP_PROFILE:
      return FLEXCO_API_RL_PROFILE;
    case FLEXCO_EP_EVENTS:
      return FLEXCO_API_RL_EVENTS;
    default:
      return -1;
  }
}

std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

// The socket address of a numeric IPv4 or IPv6 address and a port; NULL
// if address is neither.
sockaddr* socket_address(const char* address, std::uint16_t port, sockaddr_in* sin,
                         sockaddr_in6* sin6, bool* v6) {
  std::memset(sin, 0, sizeof(*sin));
  std::memset(sin6, 0, sizeof(*sin6));
  *v6 = false;
  if (address == nullptr) return nullptr;
  if (inet_pton(AF_INET, address, &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    return reinterpret_cast<sockaddr*>(sin);
  }
  if (inet_pton(AF_INET6, address, &sin6->sin6_addr) == 1) {
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    *v6 = true;
    return reinterpret_cast<sockaddr*>(sin6);
  }
  return nullptr;
}

// A log function and its argument, for the callbacks that microhttpd and
// the guard call without an argument of ours: the last server started's.
struct LogTarget {
  std::mutex mutex;
  IdleServer::Log log = nullptr;
  void* arg = nullptr;

  void set(IdleServer::Log l, void* a) {
    std::lock_guard<std::mutex> g(mutex);
    log = l;
    arg = a;
  }
  void say(int level, const char* msg) {
    IdleServer::Log l;
    void* a;
    {
      std::lock_guard<std::mutex> g(mutex);
      l = log;
      a = arg;
    }
    if (l != nullptr) l(a, level, msg);
  }
};
LogTarget g_panic_to;  // microhttpd's panic
LogTarget g_guard_to;  // the guard's lines, at debug level

// microhttpd calls abort() on what it takes for an internal inconsistency,
// which would end slurmctld with it.  One such case is no fault of ours:
// slurmctld 24.11 and later, run in the foreground (-D, not under
// systemd), reconfigure by closing every file descriptor of the process
// (closeall_except()) and exec()ing itself, while our threads still run;
// microhttpd then finds its epoll descriptor gone.  So the failing
// microhttpd thread says why and parks instead: the exec() that follows
// ends it, and in any other case slurmctld keeps running without FlexCo's
// HTTP service (the log says so) rather than being killed.
void mhd_panic(void*, const char* file, unsigned int line, const char* reason) {
  char msg[512];
  std::snprintf(msg, sizeof(msg),
                "microhttpd failed at %s:%u (%s); this HTTP thread stops, slurmctld goes on",
                file ? file : "?", line, reason ? reason : "?");
  g_panic_to.say(FLEXCO_API_ERROR, msg);
  for (;;) (void)sleep(3600);
}

void guard_log(const char* line) { g_guard_to.say(FLEXCO_API_DEBUG, line); }

void set_panic(IdleServer::Log log, void* arg) {
  g_panic_to.set(log, arg);
  MHD_set_panic_func(mhd_panic, nullptr);  // never abort() slurmctld
}

}  // namespace

struct MhdLog {
  IdleServer::Log log = nullptr;
  void* arg = nullptr;
  std::mutex mutex;
  std::time_t window = 0;
  std::uint32_t count = 0, dropped = 0;

  static void cb(void* cls, const char* fmt, va_list ap) {
    auto* m = static_cast<MhdLog*>(cls);
    const std::time_t now = std::time(nullptr);
    std::uint32_t was_dropped = 0;
    bool drop;
    {
      std::lock_guard<std::mutex> l(m->mutex);
      if (now - m->window >= 60) {
        was_dropped = m->dropped;
        m->window = now;
        m->count = m->dropped = 0;
      }
      drop = (++m->count > kMhdLogBurst);
      if (drop) m->dropped++;
    }
    if (m->log == nullptr) return;
    char buf[600];
    if (was_dropped) {
      std::snprintf(buf, sizeof(buf), "microhttpd: %u more messages in the last minute not logged",
                    was_dropped);
      m->log(m->arg, FLEXCO_API_ERROR, buf);
    }
    if (drop) return;
    char text[512];
    std::vsnprintf(text, sizeof(text), fmt, ap);
    std::size_t n = std::strlen(text);
    while (n && text[n - 1] == '\n') text[--n] = '\0';
    std::snprintf(buf, sizeof(buf), "microhttpd: %s", text);
    m->log(m->arg, FLEXCO_API_ERROR, buf);
  }
};

// ---------------------------------------------------------------------------
// per-request state

enum class Defer { kNone, kHeld, kDone };

struct ApiServer::Req {
  std::string uri;  // request target as received: path?query
  bool uri_too_long = false;
  bool started = false;
  flexco_http_body_t* bodyb = nullptr;  // in MaxRequestMemory (guard)
  const char* body = nullptr;           // bodyb's bytes, once complete
  std::size_t body_len = 0;
  std::uint64_t t0 = 0;
  int ep = FLEXCO_EP_OTHER;
  int status = 0;
  std::uint32_t uid = 0;  // authenticated caller
  std::uint32_t gid = 0;
  const char* idem_key = nullptr;  // the signed Idempotency-Key, or NULL
  char digest[FLEXCO_AUTH_DIGEST_SIZE] = {0};  // the body's, verified
  char retry_after[16] = {0};                  // seconds, for a 429 or 503
  char session_grant[FLEXCO_AUTH_GRANT_SIZE] = {0};  // FlexCo-Session answer header
  // a long poll (GET /v1/events?wait=N), authenticated and suspended
  bool longpoll = false;
  bool counted_parked = false;  // in parked_live_ until completed
  MHD_Connection* conn = nullptr;
  std::uint64_t after = 0;
  std::uint32_t max = 0;
  std::uint64_t deadline = 0;  // CLOCK_MONOTONIC microseconds
  void* viewer = nullptr;      // what PrivateData lets the caller see
  bool daemon_user = false;    // exempt from the long-poll caps
  // BackfillDefer: a probe or profile held while backfill's cycle runs
  Defer defer = Defer::kNone;
};

ApiServer::ApiServer()
    : mhd_log_(std::make_unique<MhdLog>()),
      parking_(Parking::Host{
          // the parking's lock held; the request may be gone after resume
          [](Parking::Handle h) { MHD_suspend_connection(static_cast<Req*>(h)->conn); },
          [](Parking::Handle h) { MHD_resume_connection(static_cast<Req*>(h)->conn); },
          [this] { return host_.events_latest ? host_.events_latest(host_.arg) : 0; },
          [this] { return host_.backfill_active && host_.backfill_active(host_.arg); },
          {}}) {}

ApiServer::~ApiServer() { stop(); }

void ApiServer::log(int level, const char* fmt, ...) {
  if (host_.log == nullptr) return;
  va_list ap;
  va_start(ap, fmt);
  const std::string msg = vformat(fmt, ap);
  va_end(ap);
  host_.log(host_.arg, level, msg.c_str());
}

// ---------------------------------------------------------------------------
// statistics

void ApiServer::record(int ep, int status, std::uint64_t usec) {
  std::size_t code = kCodes.size(), bucket = kLat - 1;
  for (std::size_t i = 0; i < kCodes.size(); i++)
    if (kCodes[i] == status) code = i;
  for (std::size_t i = 0; i < kLat - 1; i++)
    if (usec <= kLatBounds[i]) {
      bucket = i;
      break;
    }
  if (ep < 0 || static_cast<std::size_t>(ep) >= kEndpoints) ep = FLEXCO_EP_OTHER;
  std::lock_guard<std::mutex> l(stats_mutex_);
  stats_.count[ep][code]++;
  stats_.lat[ep][bucket]++;
  stats_.lat_sum[ep] += usec;
}

bool ApiServer::is_daemon_user(std::uint32_t uid) const {
  for (auto u : daemon_uids_)
    if (u == uid) return true;
  return false;
}

// QueryUsers: who may read profiles, probes, events and stats (daemon
// users always may); none listed means any authenticated user.
bool ApiServer::may_query(std::uint32_t uid) const {
  if (query_uids_.empty()) return true;
  for (auto u : query_uids_)
    if (u == uid) return true;
  return is_daemon_user(uid);
}

// ---------------------------------------------------------------------------
// microhttpd's callbacks

void* ApiServer::uri_log(void* cls, const char* uri, MHD_Connection* c) {
  auto* s = static_cast<ApiServer*>(cls);
  flexco_http_guard_requested(s->guard_, c);
  try {
    auto* req = new Req();
    req->t0 = usec_now();
    const std::size_t len = uri ? strnlen(uri, kMaxUri + 1) : 0;
    if (len > kMaxUri)
      req->uri_too_long = true;
    else
      req->uri.assign(uri ? uri : "", len);
    return req;
  } catch (...) {
    return nullptr;  // the handler drops the connection
  }
}

void ApiServer::completed(void* cls, MHD_Connection* c, void** con_cls,
                          MHD_RequestTerminationCode) {
  auto* s = static_cast<ApiServer*>(cls);
  auto* req = static_cast<Req*>(*con_cls);
  if (req == nullptr) return;
  try {
    if (req->longpoll || req->defer == Defer::kHeld) s->parking_.forget(req);  // normally resumed
  } catch (...) {
  }
  if (req->counted_parked) s->parked_live_--;
  // a next request on this connection starts its header clock now
  const bool cut = !flexco_http_guard_phase(s->guard_, c, FLEXCO_HTTP_HEADERS);
  s->record(req->ep, (cut && !req->status) ? 408 : req->status, usec_now() - req->t0);
  if (req->viewer != nullptr) s->host_.viewer_free(s->host_.arg, req->viewer);
  flexco_http_body_free(req->bodyb);
  delete req;
  *con_cls = nullptr;
}

MHD_Result ApiServer::handler(void* cls, MHD_Connection* c, const char* url, const char* method,
                              const char*, const char* upload_data,
                              std::size_t* upload_data_size, void** con_cls) {
  auto* req = static_cast<Req*>(*con_cls);
  if (req == nullptr) return MHD_NO;  // out of memory in uri_log: drop it
  try {
    return static_cast<ApiServer*>(cls)->handle(c, req, url, method, upload_data,
                                                upload_data_size);
  } catch (...) {
    return MHD_NO;  // out of memory: close the connection
  }
}

// ---------------------------------------------------------------------------
// responses

// body: malloc'd, ownership passes to microhttpd.
MHD_Result ApiServer::send(MHD_Connection* c, Req* req, int status, char* body,
                           const char* allow, const char* type) {
  if (body == nullptr)
    body = strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
  if (body == nullptr) return MHD_NO;
  MHD_Response* resp =
      MHD_create_response_from_buffer(std::strlen(body), body, MHD_RESPMEM_MUST_FREE);
  if (resp == nullptr) {
    std::free(body);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", type);
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  if (allow != nullptr) MHD_add_response_header(resp, "Allow", allow);
  // doc/auth.md, "Sessions": the session this request was granted
  if (req != nullptr && req->session_grant[0])
    MHD_add_response_header(resp, "FlexCo-Session", req->session_grant);
  // doc/auth.md: the scheme on every 401; when to retry on a 503
  if (status == MHD_HTTP_UNAUTHORIZED)
    MHD_add_response_header(resp, "WWW-Authenticate", "MUNGE");
  else if (status == MHD_HTTP_SERVICE_UNAVAILABLE || status == MHD_HTTP_TOO_MANY_REQUESTS)
    MHD_add_response_header(resp, "Retry-After",
                            (req != nullptr && req->retry_after[0]) ? req->retry_after : "1");
  if (req != nullptr) req->status = status;
  const MHD_Result rc = MHD_queue_response(c, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

MHD_Result ApiServer::error(MHD_Connection* c, Req* req, int status, const char* code,
                            const std::string& msg) {
  return send(c, req, status, flexco_error_json(code, msg.c_str()));
}

MHD_Result ApiServer::too_large(MHD_Connection* c, Req* req) {
  return error(c, req, 413, "payload_too_large",
               "request body larger than " + std::to_string(conf_.limits.max_request_size) +
                   " bytes");
}

MHD_Result ApiServer::no_memory(MHD_Connection* c, Req* req) {
  return error(c, req, 503, "request_memory_full",
               "request bodies being received hold MaxRequestMemory=" +
                   std::to_string(conf_.limits.max_request_memory) + " bytes; retry later");
}

namespace {

// The request's query parameters, as microhttpd decoded them, checked by
// the core (flexco_decode_query_args: unknown, repeated or empty ones are
// 400 bad_parameter): 0 with vals[i] allowed[i]'s value or NULL, else an
// HTTP status with *json its body.  what: the message when the endpoint
// takes no parameters.
int query_args(MHD_Connection* c, const char* const* allowed, const char** vals,
               const char* what, char** json) {
  std::vector<flexco_query_arg_t> args;
  MHD_get_connection_values(
      c, MHD_GET_ARGUMENT_KIND,
      [](void* cls, MHD_ValueKind, const char* key, const char* value) -> MHD_Result {
        static_cast<std::vector<flexco_query_arg_t>*>(cls)->push_back({key, value});
        return MHD_YES;
      },
      &args);
  return flexco_decode_query_args(args.data(), args.size(), allowed, vals, what, json);
}

const char* const kNone[] = {nullptr};

// Strict decimal Content-Length; -1 if absent or malformed.
std::int64_t content_length(MHD_Connection* c) {
  const char* s =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  std::uint64_t v;
  if (s == nullptr || flexco_decode_u64(s, INT64_MAX, &v)) return -1;
  return static_cast<std::int64_t>(v);
}

char* route_error(const flexco_route_t& rt) {
  return flexco_error_json(rt.status == 405 ? "method_not_allowed" : "not_found", rt.message);
}

}  // namespace

// ---------------------------------------------------------------------------
// the request's phases

MHD_Result ApiServer::handle(MHD_Connection* c, Req* req, const char* url, const char* method,
                             const char* upload_data, std::size_t* upload_data_size) {
  if (req->longpoll)  // resumed: authenticated before suspending
    return events_resumed(c, req);

  if (!req->started) {
    // headers complete: the body's clock starts
    req->started = true;
    if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_BODY)) return MHD_NO;
    if (req->uri_too_long) {
      if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_SERVING)) return MHD_NO;
      return error(c, req, 414, "uri_too_long", "request target too long");
    }
    if (!(req->bodyb = flexco_http_body_new(guard_))) return MHD_NO;
    // the whole declared body from MaxRequestMemory, now, before a byte
    // of it is read
    const int v = flexco_http_body_begin(req->bodyb, content_length(c));
    if (v == FLEXCO_BODY_FAILED) return MHD_NO;
    if (v != FLEXCO_BODY_OK) {
      if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_SERVING)) return MHD_NO;
      return (v == FLEXCO_BODY_TOO_LARGE) ? too_large(c, req) : no_memory(c, req);
    }
    return MHD_YES;
  }

  if (*upload_data_size) {
    const std::size_t n = *upload_data_size;
    *upload_data_size = 0;
    if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_BODY))
      return MHD_NO;  // past BodyTimeout: 408 sent
    // over a limit the rest is discarded, answered at the end
    if (flexco_http_body_add(req->bodyb, upload_data, n) == FLEXCO_BODY_FAILED) return MHD_NO;
    return MHD_YES;
  }

  // the request is complete: no deadline while it is served
  if (!flexco_http_guard_phase(guard_, c, FLEXCO_HTTP_SERVING)) return MHD_NO;
  switch (flexco_http_body_verdict(req->bodyb)) {
    case FLEXCO_BODY_OK:
      break;
    case FLEXCO_BODY_TOO_LARGE:
      return too_large(c, req);
    case FLEXCO_BODY_NO_MEMORY:
      return no_memory(c, req);
    default:
      return MHD_NO;
  }
  req->body = flexco_http_body_data(req->bodyb);
  req->body_len = flexco_http_body_size(req->bodyb);
  if (req->defer == Defer::kNone && defer(c, req, url, method))
    return MHD_YES;  // held while backfill's cycle runs
  return dispatch(c, req, url, method);
}

// BackfillDefer (doc/admin.md, "Sizing"): a probe or profile request
// complete while slurmctld's backfill scheduler is in a cycle is suspended
// before it is even authenticated, and resumed when the cycle has ended or
// BackfillDefer ms have passed.  The cycle holds slurmctld's job and node
// write locks, so such a request would mostly wait for them anyway; held
// here, it does not take the CPU from backfill meanwhile (MUNGE, JSON,
// planning on a shared snapshot).  True if it was suspended: microhttpd
// calls the handler again when the waker resumes it.
bool ApiServer::defer(MHD_Connection* c, Req* req, const char* url, const char* method) {
  req->defer = Defer::kDone;  // looked at once only
  if (!conf_.backfill_defer) return false;
  flexco_route_t rt;
  flexco_route(method, url, &rt);
  if (rt.status || (rt.kind != FLEXCO_RT_PROBE && rt.kind != FLEXCO_RT_PROFILE)) return false;
  req->conn = c;
  req->defer = Defer::kHeld;  // before it can be resumed
  if (parking_.defer(req)) return true;
  req->defer = Defer::kDone;
  return false;
}

MHD_Result ApiServer::dispatch(MHD_Connection* c, Req* req, const char* url, const char* method) {
  using Fn = MHD_Result (ApiServer::*)(MHD_Connection*, Req*);
  static const struct {
    flexco_route_kind_t kind;
    Fn fn;
  } routes[] = {
      {FLEXCO_RT_PROBE, &ApiServer::post_probe},   {FLEXCO_RT_PROFILE, &ApiServer::get_profile},
      {FLEXCO_RT_STATS, &ApiServer::get_stats},    {FLEXCO_RT_EVENTS, &ApiServer::get_events},
      {FLEXCO_RT_METRICS, &ApiServer::get_metrics},
  };
  Fn fn = nullptr;
  flexco_route_t rt;

  // what answers it (core/capi_decode.h), said after authentication
  flexco_route(method, url, &rt);
  req->ep = rt.ep;
  for (const auto& r : routes)
    if (!rt.status && r.kind == rt.kind) fn = r.fn;

  // A standby, or a controller stopping or handing control back, acts on
  // nothing: its state may be another controller's by now.  Said before
  // authentication (it tells nothing about the request), so a client
  // moves to the next SlurmctldHost at once.
  if (!host_.in_charge(host_.arg))
    return error(c, req, 503, "not_in_charge",
                 "this slurmctld is not the controller in charge; ask the next controller of "
                 "the cluster");

  // Authenticate every request before saying anything about it: the
  // Idempotency-Key, if any, must be the signed one (doc/auth.md).
  const char* auth =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  req->idem_key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
  // GET /metrics also takes MetricsTokenFile's bearer token (a Prometheus
  // server cannot make MUNGE credentials); valid there only: anywhere
  // else a bearer token is no credential.
  if (rt.kind == FLEXCO_RT_METRICS && fn != nullptr && flexco_is_bearer(auth)) {
    const bool have = !metrics_token_.empty();
    if (have && flexco_bearer_matches(auth, metrics_token_.c_str())) {
      log(FLEXCO_API_DEBUG2, "%s %s with the metrics token", method, req->uri.c_str());
      return (this->*fn)(c, req);
    }
    log(FLEXCO_API_DEBUG, "%s %s: %s", method, req->uri.c_str(),
        have ? "wrong metrics token" : "no MetricsTokenFile is set");
    return error(c, req, 401, "invalid_token",
                 have ? "the bearer token is not MetricsTokenFile's"
                      : "no MetricsTokenFile is set: use MUNGE");
  }
  char code[64] = "", err[512] = "";
  std::uint32_t uid = 0, gid = 0;
  const int status = host_.verify(host_.arg, method, req->uri.c_str(), req->body, req->body_len,
                                  auth, req->idem_key, &uid, &gid, req->digest, code, sizeof(code),
                                  err, sizeof(err), req->session_grant,
                                  sizeof(req->session_grant));
  if (status != 200) {
    log(FLEXCO_API_DEBUG, "%s %s: %s", method, req->uri.c_str(), err);
    return error(c, req, status, code, err);
  }
  // "FlexCo-Session ...": verified by its MAC (the verifier took no other)
  if (auth != nullptr && strncasecmp(auth, "FlexCo-Session ", 15) == 0)
    ++auth_session_;
  else
    ++auth_munge_;
  if (req->session_grant[0]) ++sessions_granted_;

  if (rt.ep == FLEXCO_EP_RESV) {
    req->uid = uid;
    req->gid = gid;
    return reservations(c, req, &rt, method);
  }
  if (fn == nullptr) return send(c, req, rt.status ? rt.status : 404, route_error(rt), rt.allow);
  if (!may_query(uid))
    return error(c, req, 403, "forbidden", "uid " + std::to_string(uid) + " is not in QueryUsers");
  // per-uid rate limits (ProbeRateLimit, ProfileRateLimit,
  // EventsRateLimit), after authentication, before the endpoint takes any
  // slurmctld lock; DaemonUsers (flexcod) are not limited
  const int k = rl_index(req->ep);
  std::uint32_t wait = 0;
  if (k >= 0 && rate_ && !is_daemon_user(uid)) wait = rate_->take(k, uid, usec_now());
  if (wait) {
    char msg[160];
    std::snprintf(req->retry_after, sizeof(req->retry_after), "%u", wait);
    std::snprintf(msg, sizeof(msg), "uid %u: more than %u %s requests in %u s (%s); retry in %u s",
                  uid, conf_.rate_count[k], kEpNames[req->ep], conf_.rate_secs[k], kRlKeys[k],
                  wait);
    log(FLEXCO_API_DEBUG, "%s %s: %s", method, req->uri.c_str(), msg);
    return error(c, req, 429, "rate_limited", msg);
  }
  log(FLEXCO_API_DEBUG2, "%s %s uid=%u", method, req->uri.c_str(), uid);
  req->uid = uid;
  req->gid = gid;
  return (this->*fn)(c, req);
}

// ---------------------------------------------------------------------------
// endpoints

MHD_Result ApiServer::get_profile(MHD_Connection* c, Req* req) {
  static const char* const allowed[] = {"partition", "horizon", nullptr};
  const char* vals[2];
  char* json = nullptr;
  std::int64_t horizon;
  int status;

  // strictly (core/capi_decode.h)
  if ((status = query_args(c, allowed, vals, nullptr, &json))) return send(c, req, status, json);
  if (flexco_decode_profile_query(vals[0], vals[1], &horizon, &json))
    return send(c, req, 400, json);
  status = host_.profile(host_.arg, vals[0], horizon, &json);
  return send(c, req, status, json);
}

MHD_Result ApiServer::post_probe(MHD_Connection* c, Req* req) {
  char* json = nullptr;
  int status;

  if ((status = query_args(c, kNone, nullptr, "probe takes no query parameters", &json)))
    return send(c, req, status, json);
  status = host_.probe(host_.arg, req->uid, req->gid, req->body, req->body_len, &json);
  return send(c, req, status, json);
}

// A long poll's look at the ring, under the parking's lock: true to park
// past *after, false to answer now with *json.
bool ApiServer::look(Req* req, bool again, char** json, std::uint64_t* after) {
  flexco_api_page_t page{};
  std::free(*json);
  *json = host_.events_page(host_.arg, req->after, req->max, req->viewer, &page);
  if (*json == nullptr) return false;
  if (again) {
    // past events it may not see, up to the latest (core)
    const flexco_events_page_t p = {page.count, page.next, page.lost};
    if (!flexco_events_park(req->after, &p, page.latest)) return false;
  } else if (page.count || page.lost) {
    return false;
  }
  // nothing yet (or nothing the caller may see): park it past what was
  // looked at; set before it can be resumed
  req->after = *after = page.next;
  return true;
}

// Answer a long poll that was resumed (an event, its deadline, or stop).
// If every new event is one the caller may not see (PrivateData) and time
// is left, park it again past them.
MHD_Result ApiServer::events_resumed(MHD_Connection* c, Req* req) {
  char* json = nullptr;
  const bool parked = parking_.repoll(req, req->uid, req->daemon_user, req->deadline,
                                      [&](std::uint64_t* after) {
                                        return look(req, true, &json, after);
                                      });
  if (parked) {
    std::free(json);
    return MHD_YES;
  }
  return send(c, req, 200, json);
}

MHD_Result ApiServer::get_events(MHD_Connection* c, Req* req) {
  static const char* const allowed[] = {"after", "wait", "max", nullptr};
  const char* vals[3];
  flexco_events_query_t q;
  char* json = nullptr;
  int status;

  // after, wait and max, strictly (core/capi_decode.h)
  if ((status = query_args(c, allowed, vals, nullptr, &json))) return send(c, req, status, json);
  if (flexco_decode_events_query(vals[0], vals[1], vals[2], &q, &json))
    return send(c, req, 400, json);

  // before the parking's lock: the host may take slurmctld's locks
  req->daemon_user = is_daemon_user(req->uid);
  req->viewer = host_.viewer_new(host_.arg, req->uid, req->daemon_user);
  req->after = q.after;
  req->max = static_cast<std::uint32_t>(q.max);
  if (!q.wait) {
    flexco_api_page_t page{};
    json = host_.events_page(host_.arg, q.after, req->max, req->viewer, &page);
    return send(c, req, 200, json);
  }
  req->longpoll = true;
  req->conn = c;
  req->deadline = usec_now() + q.wait * 1000000ULL;
  // MaxLongPollsPerUser, MaxLongPolls (DaemonUsers exempt): a caller over
  // them gets 503 with Retry-After, the seconds until the first of the
  // polls in its way ends at the latest (doc/events.md).
  const Parking::Outcome o =
      parking_.poll(req, req->uid, req->daemon_user, req->deadline,
                    [&](std::uint64_t* after) { return look(req, false, &json, after); });
  if (o.verdict == Parking::Verdict::kParked) {
    std::free(json);
    if (!req->counted_parked) {
      req->counted_parked = true;
      parked_live_++;
    }
    return MHD_YES;
  }
  if (o.verdict == Parking::Verdict::kAnswer) return send(c, req, 200, json);
  std::free(json);
  char msg[160];
  std::snprintf(req->retry_after, sizeof(req->retry_after), "%u", o.retry_after);
  if (o.verdict == Parking::Verdict::kRefusedUser)
    std::snprintf(msg, sizeof(msg),
                  "uid %u already waits in %u long polls (MaxLongPollsPerUser); retry in %u s",
                  req->uid, o.in_way, o.retry_after);
  else
    std::snprintf(msg, sizeof(msg), "%u long polls wait already (MaxLongPolls); retry in %u s",
                  o.in_way, o.retry_after);
  log(FLEXCO_API_DEBUG, "%s %s: %s", "GET", req->uri.c_str(), msg);
  return error(c, req, 503, "too_many_long_polls", msg);
}

// /v1/reservations                 GET list, POST create
// /v1/reservations/{id}            GET, PATCH, DELETE
// /v1/reservations/{id}/confirm    POST
// /v1/reservations/{id}/jobs       POST; /jobs/{job} GET; /jobs/{job}/release POST
MHD_Result ApiServer::reservations(MHD_Connection* c, Req* req, const void* route,
                                   const char* method) {
  const auto* rt = static_cast<const flexco_route_t*>(route);
  // the key as verified: signed, and bound to this request
  const flexco_rsvc_idem_t rq = {req->idem_key, method, req->uri.c_str(), req->digest};
  const std::uint32_t uid = req->uid;
  char* json = nullptr;
  int status;

  if ((status = query_args(c, kNone, nullptr, "reservations take no query parameters", &json)))
    return send(c, req, status, json);
  if (rt->status) return send(c, req, rt->status, route_error(*rt), rt->allow);
  flexco_rsvc_t* s = host_.resv(host_.arg);
  // Fencing (doc/reservations.md, "Epochs"): a mutation from a flexcod
  // that lost its lease to another is refused before anything is done.
  {
    const bool reads = rt->kind == FLEXCO_RT_RESV_LIST || rt->kind == FLEXCO_RT_RESV_GET ||
                       rt->kind == FLEXCO_RT_JOB_GET;
    const char* stamp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Flexco-Epoch");
    if ((status = flexco_rsvc_fence(s, uid, stamp, !reads, &json))) {
      log(FLEXCO_API_DEBUG, "%s %s: Flexco-Epoch %s refused (%d)", method, req->uri.c_str(),
          stamp, status);
      return send(c, req, status, json);
    }
  }
  switch (rt->kind) {
    case FLEXCO_RT_RESV_LIST:
      status = flexco_rsvc_list(s, uid, &json);
      break;
    case FLEXCO_RT_RESV_CREATE:
      status = flexco_rsvc_create_resv(s, uid, &rq, req->body, req->body_len, &json);
      break;
    case FLEXCO_RT_JOB_SUBMIT:
      status = flexco_rsvc_job_submit(s, uid, &rq, rt->id, req->body, req->body_len, &json);
      break;
    case FLEXCO_RT_JOB_GET:
      status = flexco_rsvc_job_get(s, uid, rt->id, rt->job, &json);
      break;
    case FLEXCO_RT_JOB_RELEASE:
      status = flexco_rsvc_job_release(s, uid, rt->id, rt->job, req->body, req->body_len, &json);
      break;
    case FLEXCO_RT_RESV_CONFIRM:
      status = flexco_rsvc_confirm(s, uid, &rq, rt->id, &json);
      break;
    case FLEXCO_RT_RESV_GET:
      status = flexco_rsvc_get(s, uid, rt->id, &json);
      break;
    case FLEXCO_RT_RESV_MODIFY:
      status = flexco_rsvc_modify(s, uid, &rq, rt->id, req->body, req->body_len, &json);
      break;
    case FLEXCO_RT_RESV_DELETE:
      status = flexco_rsvc_delete(s, uid, &rq, rt->id, &json);
      break;
    default:
      return error(c, req, 404, "not_found", "no such endpoint");
  }
  return send(c, req, status, json);
}

// ---------------------------------------------------------------------------
// GET /v1/stats and GET /metrics

json_t* ApiServer::stats_json() {
  json_t* root = json_object();
  json_t* reqs = json_array();
  Stats st;
  {
    std::lock_guard<std::mutex> l(stats_mutex_);
    st = stats_;
  }
  for (std::size_t e = 0; e < kEndpoints; e++) {
    json_t* ep = json_object();
    json_t* codes = json_object();
    json_t* lat = json_array();
    for (std::size_t i = 0; i < kCodes.size() + 1; i++) {
      if (!st.count[e][i]) continue;
      const std::string key = i < kCodes.size() ? std::to_string(kCodes[i]) : "other";
      json_object_set_new(codes, key.c_str(), json_integer(st.count[e][i]));
    }
    for (std::size_t i = 0; i < kLat; i++) {
      json_t* b = json_object();
      json_object_set_new(b, "le_usec", i < kLat - 1 ? json_integer(kLatBounds[i]) : json_null());
      json_object_set_new(b, "count", json_integer(st.lat[e][i]));
      json_array_append_new(lat, b);
    }
    json_object_set_new(ep, "endpoint", json_string(kEpNames[e]));
    json_object_set_new(ep, "status", codes);
    json_object_set_new(ep, "latency", lat);
    json_array_append_new(reqs, ep);
  }

  const ParkingStats ps = parking_.stats();
  json_object_set_new(root, "long_polls",
                      json_pack("{s:I, s:I, s:I, s:I, s:I}", "waiting", (json_int_t)ps.waiting,
                                "total", (json_int_t)ps.total, "woken", (json_int_t)ps.woken,
                                "timed_out", (json_int_t)ps.timed_out, "refused",
                                (json_int_t)ps.refused));
  json_object_set_new(
      root, "backfill_defer",
      json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "defer_ms",
                (json_int_t)conf_.backfill_defer, "waiting", (json_int_t)ps.deferred, "total",
                (json_int_t)ps.defer_total, "released", (json_int_t)ps.defer_released,
                "timed_out", (json_int_t)ps.defer_timed_out, "wait_usec_total",
                (json_int_t)ps.defer_wait_usec, "wait_usec_max",
                (json_int_t)ps.defer_wait_max_usec));
  flexco_http_guard_stats_t gs;
  flexco_http_guard_stats(guard_, &gs);
  json_object_set_new(
      root, "connections",
      json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "open", (json_int_t)gs.open, "total",
                (json_int_t)gs.total, "cut_headers", (json_int_t)gs.cut_headers, "cut_body",
                (json_int_t)gs.cut_body, "evicted", (json_int_t)gs.evicted, "body_bytes",
                (json_int_t)gs.memory_used, "body_bytes_max", (json_int_t)gs.memory_peak,
                "body_refused", (json_int_t)gs.memory_refused));
  std::array<std::uint64_t, RateLimiter::kKinds> refused{};
  if (rate_) refused = rate_->refused();
  json_object_set_new(root, "rate_limited",
                      json_pack("{s:I, s:I, s:I}", "probe",
                                (json_int_t)refused[FLEXCO_API_RL_PROBE], "profile",
                                (json_int_t)refused[FLEXCO_API_RL_PROFILE], "events",
                                (json_int_t)refused[FLEXCO_API_RL_EVENTS]));
  json_object_set_new(root, "auth",
                      json_pack("{s:I, s:I, s:I}", "munge", (json_int_t)auth_munge_.load(),
                                "session", (json_int_t)auth_session_.load(), "sessions_granted",
                                (json_int_t)sessions_granted_.load()));
  json_object_set_new(root, "started", json_integer(started_at_));
  json_object_set_new(root, "now", json_integer(std::time(nullptr)));
  json_object_set_new(root, "requests", reqs);
  // events, reservations, history_samples, snapshot_lock, compute
  host_.stats(host_.arg, root);
  return root;
}

MHD_Result ApiServer::get_stats(MHD_Connection* c, Req* req) {
  char* json = nullptr;
  int status;

  if ((status = query_args(c, kNone, nullptr, "stats takes no query parameters", &json)))
    return send(c, req, status, json);
  json_t* root = stats_json();
  json = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(root);
  return send(c, req, 200, json);
}

namespace {

double jnum(const json_t* o, const char* k) {
  const json_t* v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : 0.0;
}

// every number member of o as a sample of name, labelled label=key
void samples_by_key(flexco_metrics_t* b, const char* name, const char* label, json_t* o) {
  const char* key;
  json_t* v;
  json_object_foreach(o, key, v) {
    const char* const labels[] = {label, key, nullptr};
    flexco_metrics_sample(b, name, labels, json_is_number(v) ? json_number_value(v) : 0);
  }
}

void one(flexco_metrics_t* b, const char* name, const char* type, const char* help, double v) {
  flexco_metrics_family(b, name, type, help);
  flexco_metrics_sample(b, name, nullptr, v);
}

void labelled(flexco_metrics_t* b, const char* name, const char* label, const char* value,
              double v) {
  const char* const labels[] = {label, value, nullptr};
  flexco_metrics_sample(b, name, labels, v);
}

}  // namespace

// The counters of /v1/stats in Prometheus' text format (doc/admin.md,
// "Prometheus").  Everything is copied under the server's and the host's
// own locks (never a slurmctld lock) first, then formatted.
char* ApiServer::metrics_text() {
  Stats st;
  {
    std::lock_guard<std::mutex> l(stats_mutex_);
    st = stats_;
  }
  const ParkingStats ps = parking_.stats();
  flexco_http_guard_stats_t gs;
  flexco_http_guard_stats(guard_, &gs);
  std::array<std::uint64_t, RateLimiter::kKinds> refused{};
  if (rate_) refused = rate_->refused();
  json_t* side = json_object();
  host_.stats(host_.arg, side);  // events and reservations
  json_t* events = json_object_get(side, "events");
  json_t* resv = json_object_get(side, "reservations");

  double lat_b[kLat - 1];
  for (std::size_t i = 0; i < kLat - 1; i++) lat_b[i] = kLatBounds[i] / 1e6;
  flexco_metrics_t b = {nullptr, 0};

  flexco_metrics_family(
      &b, "flexco_http_requests_total", "counter",
      "Requests answered, by endpoint and HTTP status (GET /metrics counts as stats).");
  for (std::size_t e = 0; e < kEndpoints; e++)
    for (std::size_t i = 0; i < kCodes.size() + 1; i++) {
      if (!st.count[e][i]) continue;
      const std::string code = i < kCodes.size() ? std::to_string(kCodes[i]) : "other";
      const char* const labels[] = {"endpoint", kEpNames[e], "code", code.c_str(), nullptr};
      flexco_metrics_sample(&b, "flexco_http_requests_total", labels,
                            static_cast<double>(st.count[e][i]));
    }
  flexco_metrics_family(&b, "flexco_http_request_duration_seconds", "histogram",
                        "Time from a request's first line to its answer, by endpoint.");
  for (std::size_t e = 0; e < kEndpoints; e++) {
    const char* const labels[] = {"endpoint", kEpNames[e], nullptr};
    flexco_metrics_histogram(&b, "flexco_http_request_duration_seconds", labels, lat_b,
                             st.lat[e].data(), kLat - 1, st.lat_sum[e] / 1e6);
  }

  host_.metrics(host_.arg, &b);  // the snapshots'

  flexco_metrics_family(&b, "flexco_reservations", "gauge",
                        "FlexCo reservation records, by state.");
  samples_by_key(&b, "flexco_reservations", "state", json_object_get(resv, "by_state"));
  flexco_metrics_family(&b, "flexco_admission_refused_total", "counter",
                        "Reservation requests refused by admission, by reason.");
  samples_by_key(&b, "flexco_admission_refused_total", "reason", json_object_get(resv, "refused"));
  const json_t* o = json_object_get(resv, "state");
  one(&b, "flexco_state_save_errors_total", "counter",
      "Failed saves of the reservation state file.", jnum(o, "save_errors"));
  one(&b, "flexco_state_saving", "gauge",
      "1 if the last save of the reservation state file succeeded.",
      json_is_true(json_object_get(o, "saving")) ? 1 : 0);

  one(&b, "flexco_event_buffer_capacity", "gauge",
      "Events the buffer holds at most (EventBufferSize).", jnum(events, "capacity"));
  one(&b, "flexco_event_buffer_events", "gauge", "Events in the buffer now.",
      jnum(events, "retained"));
  one(&b, "flexco_events_published_total", "counter", "Events published.",
      jnum(events, "published"));
  one(&b, "flexco_events_evicted_total", "counter", "Events pushed out of a full buffer.",
      jnum(events, "evicted"));
  flexco_metrics_family(&b, "flexco_events_dropped_total", "counter",
                        "Events lost before the buffer, by where (full queues).");
  labelled(&b, "flexco_events_dropped_total", "where", "epilog", jnum(events, "epilog_dropped"));
  labelled(&b, "flexco_events_dropped_total", "where", "publish",
           jnum(events, "publish_dropped"));
  json_decref(side);

  one(&b, "flexco_long_polls_waiting", "gauge", "GET /v1/events long polls waiting now.",
      static_cast<double>(ps.waiting));
  one(&b, "flexco_long_polls_refused_total", "counter",
      "Long polls refused (MaxLongPolls, MaxLongPollsPerUser).", static_cast<double>(ps.refused));
  one(&b, "flexco_backfill_deferred_waiting", "gauge",
      "Probes and profiles held now while backfill's cycle runs (BackfillDefer).",
      static_cast<double>(ps.deferred));
  flexco_metrics_family(
      &b, "flexco_backfill_deferred_total", "counter",
      "Probes and profiles held while backfill's cycle ran, by how they were let go.");
  labelled(&b, "flexco_backfill_deferred_total", "released", "cycle_end",
           static_cast<double>(ps.defer_released));
  labelled(&b, "flexco_backfill_deferred_total", "released", "timeout",
           static_cast<double>(ps.defer_timed_out));
  one(&b, "flexco_backfill_deferred_seconds_total", "counter",
      "Time requests were held while backfill's cycle ran.",
      static_cast<double>(ps.defer_wait_usec) / 1e6);
  one(&b, "flexco_connections_open", "gauge", "HTTP connections open now.",
      static_cast<double>(gs.open));
  one(&b, "flexco_connections_total", "counter", "HTTP connections accepted.",
      static_cast<double>(gs.total));
  flexco_metrics_family(&b, "flexco_connections_closed_total", "counter",
                        "Connections closed by FlexCo, by reason.");
  labelled(&b, "flexco_connections_closed_total", "reason", "header_timeout",
           static_cast<double>(gs.cut_headers));
  labelled(&b, "flexco_connections_closed_total", "reason", "body_timeout",
           static_cast<double>(gs.cut_body));
  labelled(&b, "flexco_connections_closed_total", "reason", "make_room",
           static_cast<double>(gs.evicted));
  one(&b, "flexco_request_memory_refused_total", "counter",
      "Requests refused for MaxRequestMemory.", static_cast<double>(gs.memory_refused));
  flexco_metrics_family(&b, "flexco_rate_limited_total", "counter",
                        "Requests refused by the per-uid rate limits, by endpoint.");
  for (std::size_t i = 0; i < FLEXCO_API_RL_CNT; i++)
    labelled(&b, "flexco_rate_limited_total", "endpoint", kRlNames[i],
             static_cast<double>(refused[i]));
  one(&b, "flexco_start_time_seconds", "gauge",
      "When the HTTP service started, seconds since the epoch.",
      static_cast<double>(started_at_));
  return flexco_metrics_take(&b);
}

MHD_Result ApiServer::get_metrics(MHD_Connection* c, Req* req) {
  char* json = nullptr;
  int status;

  if ((status = query_args(c, kNone, nullptr, "metrics takes no query parameters", &json)))
    return send(c, req, status, json);
  char* text = metrics_text();  // no lock held
  if (text == nullptr) return send(c, req, 500, nullptr);  // out of memory
  return send(c, req, 200, text, nullptr, FLEXCO_METRICS_CONTENT_TYPE);
}

// ---------------------------------------------------------------------------
// start and stop

int ApiServer::start(const flexco_api_conf_t& conf, const flexco_api_host_t& host) {
  std::lock_guard<std::mutex> l(control_mutex_);
  if (running()) return 0;

  host_ = host;
  conf_ = conf;
  listen_address_ = conf.listen_address ? conf.listen_address : "";
  metrics_token_ = conf.metrics_token ? conf.metrics_token : "";
  daemon_uids_.assign(conf.daemon_uids, conf.daemon_uids + conf.daemon_uid_cnt);
  query_uids_.assign(conf.query_uids, conf.query_uids + conf.query_uid_cnt);
  conf_.listen_address = listen_address_.c_str();
  conf_.metrics_token = nullptr;
  conf_.daemon_uids = nullptr;
  conf_.query_uids = nullptr;
  mhd_log_->log = host.log;
  mhd_log_->arg = host.arg;

  // rate limits and parking before the first request can come
  std::array<RateLimiter::Limit, RateLimiter::kKinds> limits;
  for (std::size_t k = 0; k < RateLimiter::kKinds; k++)
    limits[k] = {conf.rate_count[k], conf.rate_secs[k]};
  rate_ = std::make_unique<RateLimiter>(limits);
  ParkingLimits pl;
  pl.max_long_polls_per_user = conf.max_long_polls_per_user;
  pl.max_long_polls = conf.max_long_polls;
  pl.defer_usec = static_cast<std::uint64_t>(conf.backfill_defer) * 1000;
  if (!parking_.start("flexco_waker", pl)) {
    log(FLEXCO_API_ERROR, "cannot start the long-poll thread");
    services_free();
    return -1;
  }

  // flexco.conf checked it: numeric
  sockaddr_in sin;
  sockaddr_in6 sin6;
  bool v6;
  sockaddr* sa = socket_address(conf_.listen_address, conf.listen_port, &sin, &sin6, &v6);
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_AUTO |
                       MHD_ALLOW_SUSPEND_RESUME;
  if (v6) flags |= MHD_USE_IPv6;

  MHD_OptionItem guard_opts[8];
  g_guard_to.set(host.log, host.arg);
  guard_ = flexco_http_guard_create(&conf.limits, guard_log);
  if (guard_ == nullptr || !flexco_http_guard_options(guard_, guard_opts, 8) ||
      !flexco_http_guard_start(guard_, "flexco_reaper")) {
    log(FLEXCO_API_ERROR, "cannot start the connection reaper");
    flexco_http_guard_destroy(guard_);
    guard_ = nullptr;
    services_free();
    return -1;
  }

  set_panic(host.log, host.arg);
  MHD_Daemon* d = MHD_start_daemon(
      flags, conf.listen_port, nullptr, nullptr, &ApiServer::handler, this,
      // first, or microhttpd logs the options' errors elsewhere
      MHD_OPTION_EXTERNAL_LOGGER, &MhdLog::cb, mhd_log_.get(), MHD_OPTION_SOCK_ADDR, sa,
      // MaxConnections, MaxConnectionsPerAddress, ConnectionTimeout and
      // the connection records: the guard's
      MHD_OPTION_ARRAY, guard_opts, MHD_OPTION_CONNECTION_MEMORY_LIMIT, kHeaderMemory,
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned int>(conf.http_threads),
      MHD_OPTION_URI_LOG_CALLBACK, &ApiServer::uri_log, this, MHD_OPTION_NOTIFY_COMPLETED,
      &ApiServer::completed, this, MHD_OPTION_END);
  if (d == nullptr) {
    flexco_http_guard_stop(guard_);
    flexco_http_guard_destroy(guard_);
    guard_ = nullptr;
    services_free();
    log(FLEXCO_API_ERROR, "cannot listen on %s port %u (will retry)", conf_.listen_address,
        conf.listen_port);
    return -1;
  }
  started_at_ = std::time(nullptr);
  std::lock_guard<std::mutex> dl(daemon_mutex_);
  daemon_ = d;
  return 0;
}

// After a failed start or once microhttpd stopped: the rate limits go, the
// parking is closed (it is kept: see its definition).
void ApiServer::services_free() {
  parking_.stop();
  rate_.reset();
}

bool ApiServer::running() const {
  std::lock_guard<std::mutex> l(daemon_mutex_);
  return daemon_ != nullptr;
}

std::uint16_t ApiServer::port() const {
  std::lock_guard<std::mutex> l(daemon_mutex_);
  if (daemon_ == nullptr) return 0;
  const MHD_DaemonInfo* i = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  return i ? i->port : 0;
}

void ApiServer::stop() {
  std::lock_guard<std::mutex> l(control_mutex_);
  MHD_Daemon* d;
  {
    std::lock_guard<std::mutex> dl(daemon_mutex_);
    d = daemon_;
    daemon_ = nullptr;  // running() is false from here
  }
  // Resume every long poll first: microhttpd aborts if stopped with a
  // suspended connection.
  parking_.stop();
  // ... and let microhttpd send their answers: stopped at once, it closes
  // a resumed connection before writing its answer, and the poller sees
  // the connection end without one.  At most 2 s: a stop never waits on
  // a client that does not read.
  for (int i = 0; i < 200 && parked_live_.load() > 0; i++) usleep(10000);
  // no shutdown() while microhttpd stops
  flexco_http_guard_stop(guard_);
  if (d != nullptr) {
    MHD_stop_daemon(d);  // joins microhttpd's threads
    log(FLEXCO_API_INFO, "HTTP service stopped");
  }
  flexco_http_guard_destroy(guard_);  // no connection left
  guard_ = nullptr;
  services_free();
}

// ---------------------------------------------------------------------------
// FlexCo idle

IdleServer::IdleServer(std::string body, Log log, void* log_arg)
    : body_(std::move(body)), mhd_log_(std::make_unique<MhdLog>()) {
  mhd_log_->log = log;
  mhd_log_->arg = log_arg;
}

IdleServer::~IdleServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

MHD_Result IdleServer::handler(void* cls, MHD_Connection* c, const char*, const char*,
                               const char*, const char*, std::size_t* upload_data_size,
                               void** con_cls) {
  static int marker;
  auto* s = static_cast<IdleServer*>(cls);
  if (*con_cls == nullptr) {  // headers: nothing to decide yet
    *con_cls = &marker;
    return MHD_YES;
  }
  if (*upload_data_size) {  // a body: read and dropped
    *upload_data_size = 0;
    return MHD_YES;
  }
  MHD_Response* resp = MHD_create_response_from_buffer(
      s->body_.size(), const_cast<char*>(s->body_.data()), MHD_RESPMEM_PERSISTENT);
  if (resp == nullptr) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", "application/json");
  MHD_add_response_header(resp, "Retry-After", "60");
  const MHD_Result rc = MHD_queue_response(c, 503, resp);
  MHD_destroy_response(resp);
  return rc;
}

int IdleServer::start(const char* address, std::uint16_t port) {
  sockaddr_in sin;
  sockaddr_in6 sin6;
  bool v6;
  sockaddr* sa = socket_address(address, port, &sin, &sin6, &v6);
  if (sa == nullptr) return -1;
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (v6) flags |= MHD_USE_IPv6;
  set_panic(mhd_log_->log, mhd_log_->arg);
  // small and bounded: it only ever says why it is idle
  daemon_ = MHD_start_daemon(flags, port, nullptr, nullptr, &IdleServer::handler, this,
                             MHD_OPTION_EXTERNAL_LOGGER, &MhdLog::cb, mhd_log_.get(),
                             MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_LIMIT, 64U,
                             MHD_OPTION_PER_IP_CONNECTION_LIMIT, 8U,
                             MHD_OPTION_CONNECTION_TIMEOUT, 10U,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, kHeaderMemory, MHD_OPTION_END);
  return daemon_ != nullptr ? 0 : -2;
}

std::uint16_t IdleServer::port() const {
  if (daemon_ == nullptr) return 0;
  const MHD_DaemonInfo* i = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  return i ? i->port : 0;
}

}  // namespace flexco::service
