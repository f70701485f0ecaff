// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/http_guard, the connection limits the plugin's
// and flexcod's HTTP servers share: header and body deadlines, eviction
// when every slot is taken, the MaxRequestMemory budget and the body
// buffer, against a fake clock and a fake socket; then the C interface in
// a real libmicrohttpd daemon on 127.0.0.1 (a slow client is answered 408,
// MaxConnectionsPerAddress refuses the next connection, the reaper thread
// wakes for a deadline), without slurmctld.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "service/capi_http.h"
#include "service/http_guard.hpp"

#include <check.h>

#include "check_main.hpp"

namespace svc = flexco::service;
using svc::HttpGuard;
using svc::Phase;

namespace {

struct Cut {
  int fd;
  bool answer;
  std::string body;
};

struct Fake {
  std::uint64_t now = 1000000000;  // usec
  std::vector<Cut> cuts;
  svc::HttpLimits limits;
  std::unique_ptr<HttpGuard> guard;

  explicit Fake(svc::HttpLimits l = {}) : limits(l) {
    guard = std::make_unique<HttpGuard>(
        limits, [this](int fd, bool answer, const std::string& body) { cuts.push_back({fd, answer, body}); },
        [this] { return now; });
  }
  void advance_s(double s) { now += static_cast<std::uint64_t>(s * 1e6); }
};

constexpr std::uint64_t kSec = 1000000;

svc::HttpLimits small_limits() {
  svc::HttpLimits l;
  l.max_connections = 3;
  l.header_timeout = 10;
  l.body_timeout = 30;
  l.max_request_size = 100;
  l.max_request_memory = 250;
  return l;
}

}  // namespace

START_TEST(headers_deadline) {
  Fake f(small_limits());
  auto* c = f.guard->open(7);
  ck_assert_ptr_nonnull(c);
  // the next wake is the header deadline
  ck_assert_uint_eq(f.guard->sweep(f.now), f.now + 10 * kSec);
  f.advance_s(9.9);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 0);
  f.advance_s(0.1);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 1);
  ck_assert_int_eq(f.cuts[0].fd, 7);
  // no request line: closed quietly, no 408
  ck_assert(!f.cuts[0].answer);
  ck_assert(!f.guard->phase(c, Phase::kBody));  // the handler then closes it
  ck_assert_uint_eq(f.guard->stats().cut_headers, 1);
  // cut once only
  f.advance_s(60);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 1);
  f.guard->close(c);
  ck_assert_uint_eq(f.guard->stats().open, 0);
}
END_TEST

START_TEST(request_line_gets_408) {
  Fake f(small_limits());
  auto* c = f.guard->open(8);
  f.guard->requested(c);
  f.advance_s(10);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 1);
  ck_assert(f.cuts[0].answer);
  ck_assert(f.cuts[0].body.find("\"request_timeout\"") != std::string::npos);
  ck_assert(f.cuts[0].body.find("HeaderTimeout=10") != std::string::npos);
  f.guard->close(c);
}
END_TEST

START_TEST(body_deadline_not_reset_by_trickle) {
  Fake f(small_limits());
  auto* c = f.guard->open(9);
  f.guard->requested(c);
  f.advance_s(5);
  ck_assert(f.guard->phase(c, Phase::kBody));  // headers in after 5 s
  for (int i = 0; i < 29; i++) {
    f.advance_s(1);
    ck_assert(f.guard->phase(c, Phase::kBody));  // a byte a second
    f.guard->sweep(f.now);
  }
  ck_assert_uint_eq(f.cuts.size(), 0);
  f.advance_s(1);  // 30 s since the headers
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 1);
  ck_assert(f.cuts[0].answer);
  ck_assert(f.cuts[0].body.find("BodyTimeout=30") != std::string::npos);
  ck_assert(!f.guard->phase(c, Phase::kBody));
  ck_assert_uint_eq(f.guard->stats().cut_body, 1);
  f.guard->close(c);
}
END_TEST

START_TEST(serving_has_no_deadline_and_keepalive_restarts) {
  Fake f(small_limits());
  auto* c = f.guard->open(10);
  f.guard->requested(c);
  ck_assert(f.guard->phase(c, Phase::kBody));
  ck_assert(f.guard->phase(c, Phase::kServing));
  f.advance_s(3600);  // a long poll or a slow handler
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 0);
  // answered; kept alive: a new request, its header clock starts now and
  // it has sent no request line yet
  ck_assert(f.guard->phase(c, Phase::kHeaders));
  f.advance_s(10);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 1);
  ck_assert(!f.cuts[0].answer);
  f.guard->close(c);
}
END_TEST

START_TEST(unknown_fd_is_never_cut) {
  Fake f(small_limits());
  auto* c = f.guard->open(-1);
  f.advance_s(1000);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 0);
  f.guard->close(c);
}
END_TEST

START_TEST(evicts_oldest_waiting_for_headers_when_full) {
  Fake f(small_limits());  // MaxConnections=3
  auto* a = f.guard->open(11);
  f.advance_s(0.2);
  auto* b = f.guard->open(12);
  ck_assert(f.guard->phase(b, Phase::kBody));  // b is receiving a body
  f.advance_s(0.2);
  auto* c = f.guard->open(13);
  f.guard->requested(c);
  // full: a waited 0.4 s, not yet 1 s: the wake is a's eviction time
  const std::uint64_t next = f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 0);
  ck_assert_uint_eq(next, f.now - 400000 + svc::kEvictAfterUsec);
  f.advance_s(0.6);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 1);
  ck_assert_int_eq(f.cuts[0].fd, 11);  // the oldest in kHeaders, not b
  ck_assert_uint_eq(f.guard->stats().evicted, 1);
  // one slot is free again (a is cut): nobody else goes
  f.advance_s(5);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 1);
  f.guard->close(a);
  f.guard->close(b);
  f.guard->close(c);
}
END_TEST

START_TEST(never_evicts_bodies_or_served) {
  Fake f(small_limits());
  std::vector<HttpGuard::Conn*> cs;
  for (int i = 0; i < 3; i++) {
    cs.push_back(f.guard->open(20 + i));
    f.guard->phase(cs.back(), i == 0 ? Phase::kBody : Phase::kServing);
  }
  f.advance_s(5);
  f.guard->sweep(f.now);
  ck_assert_uint_eq(f.cuts.size(), 0);
  for (auto* c : cs) f.guard->close(c);
}
END_TEST

START_TEST(memory_budget) {
  Fake f(small_limits());  // 250 bytes
  ck_assert(f.guard->take(200));
  ck_assert(!f.guard->take(51));
  ck_assert(f.guard->take(50));
  auto s = f.guard->stats();
  ck_assert_uint_eq(s.memory_used, 250);
  ck_assert_uint_eq(s.memory_peak, 250);
  ck_assert_uint_eq(s.memory_refused, 1);
  f.guard->give(250);
  ck_assert_uint_eq(f.guard->stats().memory_used, 0);
  ck_assert_uint_eq(f.guard->stats().memory_peak, 250);
}
END_TEST

START_TEST(body_buffer) {
  Fake f(small_limits());  // MaxRequestSize 100, MaxRequestMemory 250
  {
    svc::BodyBuffer b(*f.guard);
    ck_assert(b.begin(101) == svc::BodyBuffer::Verdict::kTooLarge);
    ck_assert_uint_eq(f.guard->stats().memory_used, 0);
  }
  {
    // the declared length is taken before a byte arrives
    svc::BodyBuffer a(*f.guard), b(*f.guard), c(*f.guard);
    ck_assert(a.begin(99) == svc::BodyBuffer::Verdict::kOk);
    ck_assert(b.begin(99) == svc::BodyBuffer::Verdict::kOk);
    ck_assert_uint_eq(f.guard->stats().memory_used, 200);
    ck_assert(c.begin(99) == svc::BodyBuffer::Verdict::kNoMemory);
    ck_assert(c.add("x", 1) == svc::BodyBuffer::Verdict::kNoMemory);  // discarded
    ck_assert(a.add("hello", 5) == svc::BodyBuffer::Verdict::kOk);
    ck_assert_str_eq(a.data(), "hello");
    ck_assert_uint_eq(a.size(), 5);
  }
  ck_assert_uint_eq(f.guard->stats().memory_used, 0);  // all given back
  {
    // chunked: grows, and over MaxRequestSize it is dropped and discarded
    svc::BodyBuffer b(*f.guard);
    ck_assert(b.begin(-1) == svc::BodyBuffer::Verdict::kOk);
    std::string chunk(40, 'a');
    ck_assert(b.add(chunk.data(), chunk.size()) == svc::BodyBuffer::Verdict::kOk);
    ck_assert(b.add(chunk.data(), chunk.size()) == svc::BodyBuffer::Verdict::kOk);
    ck_assert_uint_eq(b.size(), 80);
    ck_assert(f.guard->stats().memory_used <= 101);
    ck_assert(b.add(chunk.data(), chunk.size()) == svc::BodyBuffer::Verdict::kTooLarge);
    ck_assert_uint_eq(f.guard->stats().memory_used, 0);
    ck_assert(b.add("x", 1) == svc::BodyBuffer::Verdict::kTooLarge);
    ck_assert_uint_eq(b.size(), 0);
  }
}
END_TEST

// --- the C interface in a real libmicrohttpd daemon ------------------------

namespace {

MHD_Result answer_ok(void* cls, MHD_Connection* c, const char*, const char*, const char*,
                     const char* upload, size_t* upload_size, void** con_cls) {
  auto* g = static_cast<flexco_http_guard_t*>(cls);
  auto* b = static_cast<flexco_http_body_t*>(*con_cls);
  if (b == nullptr) {
    if (!flexco_http_guard_phase(g, c, FLEXCO_HTTP_BODY)) return MHD_NO;
    b = flexco_http_body_new(g);
    *con_cls = b;
    const char* cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    flexco_http_body_begin(b, cl != nullptr ? std::atoll(cl) : -1);
    return MHD_YES;
  }
  if (*upload_size != 0) {
    if (!flexco_http_guard_phase(g, c, FLEXCO_HTTP_BODY)) return MHD_NO;
    flexco_http_body_add(b, upload, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  if (!flexco_http_guard_phase(g, c, FLEXCO_HTTP_SERVING)) return MHD_NO;
  const std::string text = "{\"size\":" + std::to_string(flexco_http_body_size(b)) + "}";
  MHD_Response* r = MHD_create_response_from_buffer(text.size(), const_cast<char*>(text.data()),
                                                    MHD_RESPMEM_MUST_COPY);
  const MHD_Result rc = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return rc;
}

void* uri_seen(void* cls, const char*, MHD_Connection* c) {
  flexco_http_guard_requested(static_cast<flexco_http_guard_t*>(cls), c);
  return nullptr;
}

void done(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode) {
  flexco_http_body_free(static_cast<flexco_http_body_t*>(*con_cls));
  *con_cls = nullptr;
  flexco_http_guard_phase(static_cast<flexco_http_guard_t*>(cls), c, FLEXCO_HTTP_HEADERS);
}

struct Daemon {
  flexco_http_guard_t* g = nullptr;
  MHD_Daemon* d = nullptr;
  int port = 0;
  explicit Daemon(const flexco_http_limits_t& l) {
    g = flexco_http_guard_create(&l, nullptr);
    MHD_OptionItem opts[8];
    ck_assert_uint_eq(flexco_http_guard_options(g, opts, 8), 5);
    ck_assert(flexco_http_guard_start(g, "test_reaper"));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, nullptr, nullptr,
                         &answer_ok, g, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_ARRAY, opts,
                         MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_URI_LOG_CALLBACK, &uri_seen, g,
                         MHD_OPTION_NOTIFY_COMPLETED, &done, g, MHD_OPTION_END);
    ck_assert_ptr_nonnull(d);
    port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
  }
  ~Daemon() {
    flexco_http_guard_stop(g);
    MHD_stop_daemon(d);
    flexco_http_guard_destroy(g);
  }
  int connect_fd() const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    ck_assert_int_eq(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
  }
};

// Everything the server sends until it closes (or 10 s pass).
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

flexco_http_limits_t real_limits() {
  flexco_http_limits_t l{};
  l.max_connections = 16;
  l.max_connections_per_address = 3;
  l.connection_timeout = 60;
  l.header_timeout = 1;
  l.body_timeout = 1;
  l.max_request_size = 1000;
  l.max_request_memory = 4000;
  return l;
}

}  // namespace

START_TEST(real_daemon_slow_headers_get_408) {
  Daemon d(real_limits());
  const int fd = d.connect_fd();
  const std::string part = "GET /v1/stats HTTP/1.1\r\nHost: x\r\n";
  ck_assert_int_eq(send(fd, part.data(), part.size(), MSG_NOSIGNAL), static_cast<ssize_t>(part.size()));
  const auto t0 = std::chrono::steady_clock::now();
  // a header line every 0.3 s never completes the headers: the reaper
  // cuts it at HeaderTimeout=1 (the thread wakes for that deadline)
  std::string out;
  for (int i = 0; i < 20 && out.empty(); i++) {
    const std::string h = "X-Slow: " + std::to_string(i) + "\r\n";
    (void)send(fd, h.data(), h.size(), MSG_NOSIGNAL);
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 300) > 0) out = read_all(fd);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  ck_assert_msg(out.rfind("HTTP/1.1 408", 0) == 0, "got %s", out.c_str());
  ck_assert(out.find("HeaderTimeout=1") != std::string::npos);
  ck_assert_msg(secs >= 0.9 && secs < 4, "cut after %.2f s", secs);
  flexco_http_guard_stats_t s;
  flexco_http_guard_stats(d.g, &s);
  ck_assert_uint_eq(s.cut_headers, 1);
}
END_TEST

START_TEST(real_daemon_slow_body_gets_408_and_fast_is_served) {
  Daemon d(real_limits());
  {
    const int fd = d.connect_fd();
    const std::string req = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
    (void)send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    std::string out;
    char buf[512];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) out.assign(buf, static_cast<std::size_t>(n));
    close(fd);
    ck_assert_msg(out.rfind("HTTP/1.1 200", 0) == 0 && out.find("{\"size\":5}") != std::string::npos,
                  "got %s", out.c_str());
  }
  // microhttpd may end the first request (giving its body's bytes back)
  // after its answer was sent: wait for that, so that the peak below is
  // the second request's alone (the peak is a maximum over both)
  flexco_http_guard_stats_t s{};
  for (int i = 0; i < 500; i++) {
    flexco_http_guard_stats(d.g, &s);
    if (s.memory_used == 0 && s.open == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ck_assert_uint_eq(s.memory_used, 0);
  const int fd = d.connect_fd();
  const std::string head = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n";
  (void)send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::string out;
  for (int i = 0; i < 20 && out.empty(); i++) {
    (void)send(fd, "a", 1, MSG_NOSIGNAL);
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 300) > 0) out = read_all(fd);
  }
  close(fd);
  ck_assert_msg(out.rfind("HTTP/1.1 408", 0) == 0 && out.find("BodyTimeout=1") != std::string::npos,
                "got %s", out.c_str());
  // the cut body's bytes come back when microhttpd ends the request
  for (int i = 0; i < 500; i++) {
    flexco_http_guard_stats(d.g, &s);
    if (s.memory_used == 0 && s.open == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ck_assert_uint_eq(s.cut_body, 1);
  ck_assert_uint_eq(s.memory_peak, 501);
  ck_assert_uint_eq(s.memory_used, 0);
}
END_TEST

START_TEST(real_daemon_per_address_limit) {
  Daemon d(real_limits());  // MaxConnectionsPerAddress=3
  std::vector<int> held;
  for (int i = 0; i < 3; i++) held.push_back(d.connect_fd());
  // wait until the daemon holds all three
  flexco_http_guard_stats_t s{};
  for (int i = 0; i < 200; i++) {
    flexco_http_guard_stats(d.g, &s);
    if (s.open == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ck_assert_uint_eq(s.open, 3);
  const int extra = d.connect_fd();  // accepted by the kernel, closed by microhttpd
  const std::string req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)send(extra, req.data(), req.size(), MSG_NOSIGNAL);
  const std::string out = read_all(extra);
  close(extra);
  ck_assert_msg(out.empty(), "a fourth connection from one address was served: %s", out.c_str());
  flexco_http_guard_stats(d.g, &s);
  ck_assert_uint_eq(s.total, 3);
  for (int fd : held) close(fd);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("http_guard");
  TCase* tc = tcase_create("guard");
  tcase_add_test(tc, headers_deadline);
  tcase_add_test(tc, request_line_gets_408);
  tcase_add_test(tc, body_deadline_not_reset_by_trickle);
  tcase_add_test(tc, serving_has_no_deadline_and_keepalive_restarts);
  tcase_add_test(tc, unknown_fd_is_never_cut);
  tcase_add_test(tc, evicts_oldest_waiting_for_headers_when_full);
  tcase_add_test(tc, never_evicts_bodies_or_served);
  tcase_add_test(tc, memory_budget);
  tcase_add_test(tc, body_buffer);
  suite_add_tcase(s, tc);
  TCase* rc = tcase_create("daemon");
  tcase_set_timeout(rc, 30);
  tcase_add_test(rc, real_daemon_slow_headers_get_408);
  tcase_add_test(rc, real_daemon_slow_body_gets_408_and_fast_is_served);
  tcase_add_test(rc, real_daemon_per_address_limit);
  suite_add_tcase(s, rc);
  return s;
}

int main() { return run_check_suite(make_suite()); }
