// SPDX-License-Identifier: GPL-2.0-or-later
// capi_http.cpp - see capi_http.h: libmicrohttpd's side of the guard.

#include "service/capi_http.h"

#include <sys/socket.h>

#include <memory>
#include <new>
#include <string>

#include "service/http_guard.hpp"

using flexco::service::BodyBuffer;
using flexco::service::HttpGuard;
using flexco::service::HttpLimits;
using flexco::service::Phase;

struct flexco_http_guard {
  std::unique_ptr<HttpGuard> guard;
};

struct flexco_http_body {
  explicit flexco_http_body(HttpGuard& g) : buf(g) {}
  BodyBuffer buf;
};

namespace {

// Writes the 408 (a fresh socket's buffer takes it; never block the
// reaper) and shuts the socket down, which microhttpd sees as the client
// going away.  The descriptor is never closed here: microhttpd notifies
// the close (the record leaves the guard under its lock) before it closes
// the descriptor, and the guard cuts only sockets it holds a record of, so
// it never acts on a reused descriptor number.
void cut_socket(int fd, bool answer, const std::string& body) {
  if (answer) {
    std::string msg =
        "HTTP/1.1 408 Request Timeout\r\n"
        "Content-Type: application/json\r\n"
        "Cache-Control: no-store\r\n"
        "Connection: close\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    (void)send(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  shutdown(fd, SHUT_RDWR);
}

HttpGuard::Conn* conn_of(MHD_Connection* c) {
  const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci != nullptr ? static_cast<HttpGuard::Conn*>(ci->socket_context) : nullptr;
}

void notify(void* cls, MHD_Connection* c, void** socket_context,
            MHD_ConnectionNotificationCode toe) noexcept try {
  auto* g = static_cast<flexco_http_guard*>(cls);
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const int fd = ci != nullptr ? ci->connect_fd : -1;
    HttpGuard::Conn* conn = g->guard->open(fd);
    // no record, no deadline: do not serve it
    if (conn == nullptr && fd >= 0) shutdown(fd, SHUT_RDWR);
    *socket_context = conn;
  } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    g->guard->close(static_cast<HttpGuard::Conn*>(*socket_context));
    *socket_context = nullptr;
  }
} catch (...) {
}

}  // namespace

extern "C" flexco_http_guard_t* flexco_http_guard_create(const flexco_http_limits_t* l,
                                                         void (*log)(const char* line)) {
  try {
    HttpLimits limits;
    limits.max_connections = l->max_connections;
    limits.max_connections_per_address = l->max_connections_per_address;
    limits.connection_timeout = l->connection_timeout;
    limits.header_timeout = l->header_timeout;
    limits.body_timeout = l->body_timeout;
    limits.max_request_size = l->max_request_size;
    limits.max_request_memory = l->max_request_memory;
    HttpGuard::Logger logger;
    if (log != nullptr) logger = [log](const std::string& s) { log(s.c_str()); };
    auto g = std::make_unique<flexco_http_guard>();
    g->guard = std::make_unique<HttpGuard>(limits, cut_socket, HttpGuard::Clock{}, logger);
    return g.release();
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_http_guard_destroy(flexco_http_guard_t* g) { delete g; }

extern "C" size_t flexco_http_guard_options(flexco_http_guard_t* g, MHD_OptionItem* o, size_t n) {
  if (g == nullptr || n < 5) return 0;
  const HttpLimits& l = g->guard->limits();
  o[0] = {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(l.max_connections), nullptr};
  // over it microhttpd closes a new connection at once
  o[1] = {MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<intptr_t>(l.max_connections_per_address),
          nullptr};
  o[2] = {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(l.connection_timeout), nullptr};
  o[3] = {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&notify), g};
  o[4] = {MHD_OPTION_END, 0, nullptr};
  return 5;
}

extern "C" bool flexco_http_guard_start(flexco_http_guard_t* g, const char* name) {
  try {
    return g != nullptr && g->guard->start(name);
  } catch (...) {
    return false;
  }
}

extern "C" void flexco_http_guard_stop(flexco_http_guard_t* g) {
  try {
    if (g != nullptr) g->guard->stop();
  } catch (...) {
  }
}

extern "C" void flexco_http_guard_requested(flexco_http_guard_t* g, MHD_Connection* c) {
  try {
    if (g != nullptr) g->guard->requested(conn_of(c));
  } catch (...) {
  }
}

extern "C" bool flexco_http_guard_phase(flexco_http_guard_t* g, MHD_Connection* c, int ph) {
  if (g == nullptr) return true;
  const Phase p = ph == FLEXCO_HTTP_HEADERS ? Phase::kHeaders
                  : ph == FLEXCO_HTTP_BODY  ? Phase::kBody
                                            : Phase::kServing;
  try {
    return g->guard->phase(conn_of(c), p);
  } catch (...) {
    return true;  // no record, no deadline: as for a connection without one
  }
}

extern "C" void flexco_http_guard_stats(flexco_http_guard_t* g, flexco_http_guard_stats_t* out) {
  *out = flexco_http_guard_stats_t{};
  if (g == nullptr) return;
  flexco::service::GuardStats s;
  try {
    s = g->guard->stats();
  } catch (...) {
    return;
  }
  out->open = s.open;
  out->total = s.total;
  out->cut_headers = s.cut_headers;
  out->cut_body = s.cut_body;
  out->evicted = s.evicted;
  out->memory_used = s.memory_used;
  out->memory_peak = s.memory_peak;
  out->memory_refused = s.memory_refused;
}

extern "C" flexco_http_body_t* flexco_http_body_new(flexco_http_guard_t* g) {
  if (g == nullptr) return nullptr;
  return new (std::nothrow) flexco_http_body(*g->guard);
}

extern "C" void flexco_http_body_free(flexco_http_body_t* b) { delete b; }

namespace {
int verdict_code(BodyBuffer::Verdict v) {
  switch (v) {
    case BodyBuffer::Verdict::kOk: return FLEXCO_BODY_OK;
    case BodyBuffer::Verdict::kTooLarge: return FLEXCO_BODY_TOO_LARGE;
    case BodyBuffer::Verdict::kNoMemory: return FLEXCO_BODY_NO_MEMORY;
    case BodyBuffer::Verdict::kFailed: break;
  }
  return FLEXCO_BODY_FAILED;
}
}  // namespace

extern "C" int flexco_http_body_begin(flexco_http_body_t* b, int64_t content_length) {
  return verdict_code(b->buf.begin(content_length));
}

extern "C" int flexco_http_body_add(flexco_http_body_t* b, const char* data, size_t n) {
  return verdict_code(b->buf.add(data, n));
}

extern "C" void flexco_http_body_drop(flexco_http_body_t* b) { b->buf.drop(); }

extern "C" int flexco_http_body_verdict(const flexco_http_body_t* b) {
  return verdict_code(b->buf.verdict());
}

extern "C" const char* flexco_http_body_data(const flexco_http_body_t* b) { return b->buf.data(); }

extern "C" size_t flexco_http_body_size(const flexco_http_body_t* b) { return b->buf.size(); }
