// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/core/http_client: every error path of the transport
// (refused connection, total timeout, oversized answer, cut answer, caller's
// cancel, bad arguments, munged unreachable) and the plugin client's mapping
// of answers (error documents, wrong JSON, the records' parsers).
//
// The server is a real TCP listener on 127.0.0.1 run by a thread of this
// program: for each test it answers one connection with canned bytes, or
// holds it open without answering until the test ends (a pipe wakes it).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "core/http_client.hpp"

#include <check.h>

namespace http = flexco::http;
using http::Errc;

namespace {

// A listening socket on 127.0.0.1 (its port in *port) and a pipe that
// wakes the server's thread (wake).
int listen_loopback(int* port, int wake[2]) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  ck_assert(listen(fd, 8) == 0);
  ck_assert(pipe(wake) == 0);
  return fd;
}

// Wakes the server's thread, waits for it, closes its descriptors (once).
void stop_server(int fd, int wake[2], std::thread& thread) {
  if (thread.joinable()) {
    (void)!write(wake[1], "x", 1);
    thread.join();
    close(fd);
    close(wake[0]);
    close(wake[1]);
  }
}

// One-connection server.  `answer` is written after the request headers (and
// body, by Content-Length) were read; with hold=true nothing is written and
// the connection stays open until stop().
class OneShotServer {
 public:
  OneShotServer(std::string answer, bool hold) : answer_(std::move(answer)), hold_(hold) {
    fd_ = listen_loopback(&port_, wake_);
    thread_ = std::thread([this] { serve(); });
  }
  ~OneShotServer() { stop(); }

  void stop() { stop_server(fd_, wake_, thread_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& request() const { return request_; }

 private:
  void serve() {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(p, 2, -1) <= 0 || (p[1].revents & POLLIN)) return;
    const int c = accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    // Read headers and body.
    char buf[4096];
    std::size_t want = std::string::npos;
    while (true) {
      pollfd q[2] = {{c, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (poll(q, 2, -1) <= 0 || (q[1].revents & POLLIN)) break;
      const ssize_t n = read(c, buf, sizeof buf);
      if (n <= 0) break;
      request_.append(buf, static_cast<std::size_t>(n));
      const std::size_t h = request_.find("\r\n\r\n");
      if (h != std::string::npos && want == std::string::npos) {
        std::size_t cl = 0;
        const std::size_t k = request_.find("Content-Length: ");
        if (k != std::string::npos && k < h) cl = std::strtoul(request_.c_str() + k + 16, nullptr, 10);
        want = h + 4 + cl;
      }
      if (want != std::string::npos && request_.size() >= want) break;
    }
    if (!hold_) {
      std::size_t off = 0;
      while (off < answer_.size()) {
        const ssize_t n = write(c, answer_.data() + off, answer_.size() - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
    } else {
      pollfd q = {wake_[0], POLLIN, 0};
      poll(&q, 1, -1);
    }
    close(c);
  }

  std::string answer_;
  bool hold_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::string request_;
  std::thread thread_;
};

// Serves requests one connection at a time, each kept alive after its
// answer (no "Connection: close") unless close_each; counts connections
// accepted and requests answered.
class KeepAliveServer {
 public:
  explicit KeepAliveServer(bool close_each) : close_each_(close_each) {
    fd_ = listen_loopback(&port_, wake_);
    thread_ = std::thread([this] { serve(); });
  }
  ~KeepAliveServer() { stop_server(fd_, wake_, thread_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }
  int answered() const { return answered_.load(); }

 private:
  bool wait_in(int fd) {
    pollfd p[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    return poll(p, 2, -1) > 0 && !(p[1].revents & POLLIN);
  }
  void serve() {
    while (wait_in(fd_)) {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++accepted_;
      std::string in;
      char buf[4096];
      bool open = true;
      while (open && wait_in(c)) {
        const ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
        for (;;) {  // every complete request in `in`
          const std::size_t h = in.find("\r\n\r\n");
          if (h == std::string::npos) break;
          std::size_t cl = 0;
          const std::size_t k = in.find("Content-Length: ");
          if (k != std::string::npos && k < h) cl = std::strtoul(in.c_str() + k + 16, nullptr, 10);
          if (in.size() < h + 4 + cl) break;
          in.erase(0, h + 4 + cl);
          const std::string body = "{\"n\":" + std::to_string(++answered_) + "}";
          const std::string a = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
          if (write(c, a.data(), a.size()) != static_cast<ssize_t>(a.size())) open = false;
          if (close_each_) open = false;
        }
      }
      close(c);
    }
  }

  bool close_each_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<int> accepted_{0}, answered_{0};
  std::thread thread_;
};

std::string reply(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

http::Client client_for(const std::string& url, long total_ms = 5000, std::size_t max = 1 << 20) {
  http::ClientConfig cfg;
  cfg.base_url = url;
  cfg.connect_timeout_ms = 1000;
  cfg.total_timeout_ms = total_ms;
  cfg.max_response_bytes = max;
  auto c = http::Client::create(cfg, std::nullopt);
  ck_assert_msg(c.ok(), "%s", c.ok() ? "" : c.error().message.c_str());
  return std::move(c).value();
}

// A port nobody listens on: bind, read the port, close.
int closed_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

START_TEST(ok_answer_parsed_and_request_as_sent) {
  OneShotServer s(reply(201, "{\"a\":1}"), false);
  auto c = client_for(s.url());
  auto r = c.request("POST", "/v1/x?y=1", "{\"n\":2}", {{"Idempotency-Key", "k1"}});
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  ck_assert_int_eq(r.value().status, 201);
  ck_assert(json_integer_value(json_object_get(r.value().json.get(), "a")) == 1);
  s.stop();
  const std::string& q = s.request();
  ck_assert_msg(q.rfind("POST /v1/x?y=1 HTTP/1.1\r\n", 0) == 0, "%s", q.c_str());
  ck_assert(q.find("Idempotency-Key: k1\r\n") != std::string::npos);
  ck_assert(q.find("Content-Type: application/json\r\n") != std::string::npos);
  ck_assert(q.find("Authorization:") == std::string::npos);  // unsigned client
  ck_assert(q.size() >= 7 && q.substr(q.size() - 7) == "{\"n\":2}");
}
END_TEST

START_TEST(connection_kept_alive) {
  // Requests of one client, and of its copies, go over one connection:
  // a plugin then accepts one connection, not one per probe.
  KeepAliveServer s(false);
  auto c = client_for(s.url());
  for (int i = 1; i <= 3; ++i) {
    auto r = c.request("POST", "/v1/probe", "{\"nodes\":1}");
    ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
    ck_assert(json_integer_value(json_object_get(r.value().json.get(), "n")) == i);
  }
  const http::Client copy = c;
  ck_assert(copy.request("GET", "/v1/health").ok());
  ck_assert_int_eq(s.answered(), 4);
  ck_assert_int_eq(s.accepted(), 1);
}
END_TEST

START_TEST(connection_closed_by_server_is_replaced) {
  // A server that closes each connection after its answer (as the plugin
  // closes idle ones after ConnectionTimeout): every request is still
  // answered, each on a fresh connection.
  KeepAliveServer s(true);
  auto c = client_for(s.url());
  for (int i = 1; i <= 3; ++i) {
    auto r = c.request("POST", "/v1/probe", "{\"nodes\":1}");
    ck_assert_msg(r.ok(), "request %d: %s", i, r.ok() ? "" : r.error().message.c_str());
    ck_assert(json_integer_value(json_object_get(r.value().json.get(), "n")) == i);
  }
  ck_assert_int_eq(s.accepted(), 3);
}
END_TEST

START_TEST(connection_refused) {
  auto c = client_for("http://127.0.0.1:" + std::to_string(closed_port()));
  auto r = c.request("GET", "/v1/profile");
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kConnect, "%s", r.error().message.c_str());
  ck_assert(r.error().message.rfind("connect_failed: GET http://127.0.0.1:", 0) == 0);
}
END_TEST

http::Client client_for_urls(const std::string& first, std::vector<std::string> others) {
  http::ClientConfig cfg;
  cfg.base_url = first;
  cfg.other_urls = std::move(others);
  cfg.connect_timeout_ms = 1000;
  cfg.total_timeout_ms = 5000;
  auto c = http::Client::create(cfg, std::nullopt);
  ck_assert_msg(c.ok(), "%s", c.ok() ? "" : c.error().message.c_str());
  return std::move(c).value();
}

START_TEST(next_url_when_one_is_down_or_not_in_charge) {
  // A cluster's primary and backup controllers: the client asks the next
  // address when one refuses the connection or answers 503 not_in_charge,
  // and from then on asks the one that answered first.
  OneShotServer standby(reply(503, "{\"error\":{\"code\":\"not_in_charge\",\"message\":\"x\"}}"),
                        false);
  KeepAliveServer boss(false);
  const std::string down = "http://127.0.0.1:" + std::to_string(closed_port());
  auto c = client_for_urls(down, {standby.url(), boss.url()});
  auto r = c.request("POST", "/v1/probe", "{\"nodes\":1}");
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  ck_assert_int_eq(r.value().status, 200);
  ck_assert(json_integer_value(json_object_get(r.value().json.get(), "n")) == 1);
  standby.stop();
  ck_assert(standby.request().rfind("POST /v1/probe HTTP/1.1\r\n", 0) == 0);
  // the next request goes straight to the one in charge (and a copy too)
  const http::Client copy = c;
  ck_assert(copy.request("POST", "/v1/probe", "{\"nodes\":1}").ok());
  ck_assert_int_eq(boss.answered(), 2);
  // another 503 (not not_in_charge) is an answer, not a reason to move on
  OneShotServer busy(reply(503, "{\"error\":{\"code\":\"state_not_saved\",\"message\":\"x\"}}"),
                     false);
  auto c2 = client_for_urls(busy.url(), {boss.url()});
  auto r2 = c2.request("GET", "/v1/profile");
  ck_assert(r2.ok() && r2.value().status == 503);
  ck_assert_int_eq(boss.answered(), 2);
  // nobody answers: the last address's error
  auto c3 = client_for_urls(down, {"http://127.0.0.1:" + std::to_string(closed_port())});
  auto r3 = c3.request("GET", "/v1/profile");
  ck_assert(!r3.ok() && r3.error().code == Errc::kConnect);
  // other URLs must have the first one's scheme
  http::ClientConfig bad;
  bad.base_url = "http://127.0.0.1:1";
  bad.other_urls = {"https://127.0.0.1:2"};
  ck_assert(!http::Client::create(bad, std::nullopt).ok());
}
END_TEST

START_TEST(total_timeout) {
  OneShotServer s("", true);
  auto c = client_for(s.url(), 300);
  auto r = c.request("GET", "/v1/profile");
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kTimeout, "%s", r.error().message.c_str());
}
END_TEST

START_TEST(answer_too_large) {
  OneShotServer s(reply(200, "[" + std::string(5000, '1') + "]"), false);
  auto c = client_for(s.url(), 5000, 1000);
  auto r = c.request("GET", "/v1/big");
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kTooLarge, "%s", r.error().message.c_str());
}
END_TEST

START_TEST(answer_too_large_without_length) {
  const std::string body(5000, 'x');
  OneShotServer s("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body, false);
  auto c = client_for(s.url(), 5000, 1000);
  auto r = c.request("GET", "/v1/big");
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kTooLarge, "%s", r.error().message.c_str());
}
END_TEST

START_TEST(answer_cut_short) {
  OneShotServer s("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\":", false);
  auto c = client_for(s.url());
  auto r = c.request("GET", "/v1/x");
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kTransport, "%s", r.error().message.c_str());
}
END_TEST

START_TEST(cancelled_by_caller) {
  OneShotServer s("", true);
  auto c = client_for(s.url(), 20000);
  std::atomic<bool> cancel{true};
  auto r0 = c.request("GET", "/v1/x", {}, {}, 0, &cancel);
  ck_assert(!r0.ok() && r0.error().code == Errc::kCancelled);
  cancel = false;
  std::thread t([&cancel] {
    // Cancel from another thread once the request is under way.
    for (int i = 0; i < 50 && !cancel.load(); ++i) {
      pollfd none{-1, 0, 0};
      poll(&none, 0, 20);
    }
    cancel = true;
  });
  auto r = c.request("GET", "/v1/x", {}, {}, 0, &cancel);
  t.join();
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kCancelled, "%s", r.error().message.c_str());
}
END_TEST

struct BadArg {
  const char* url;
  const char* method;
  const char* target;
};
const BadArg kBadArgs[] = {
    {"https://127.0.0.1:1/v1", "GET", "/"},
    {"https://", "GET", "/"},
    {"HTTPS://127.0.0.1:1", "GET", "/"},
    {"http://127.0.0.1:1/v1", "GET", "/"},
    {"http://", "GET", "/"},
    {"ftp://x", "GET", "/"},
    {"http://127.0.0.1:1", "get", "/"},
    {"http://127.0.0.1:1", "GET", "v1"},
    {"http://127.0.0.1:1", "GET", "/a b"},
    {"http://127.0.0.1:1", "", "/"},
};

START_TEST(bad_arguments) {
  const BadArg& b = kBadArgs[_i];
  http::ClientConfig cfg;
  cfg.base_url = b.url;
  auto c = http::Client::create(cfg, std::nullopt);
  if (!c.ok()) {
    ck_assert(c.error().code == Errc::kInvalidArgument);
    return;
  }
  auto r = c.value().request(b.method, b.target);
  ck_assert_msg(!r.ok() && r.error().code == Errc::kInvalidArgument, "case %d", _i);
}
END_TEST

START_TEST(bad_config_bounds) {
  http::ClientConfig cfg;
  cfg.base_url = "http://127.0.0.1:1";
  cfg.connect_timeout_ms = 0;
  ck_assert(!http::Client::create(cfg, std::nullopt).ok());
  cfg.connect_timeout_ms = 1000;
  cfg.total_timeout_ms = 0;
  ck_assert(!http::Client::create(cfg, std::nullopt).ok());
  cfg.total_timeout_ms = 1000;
  cfg.max_response_bytes = 0;
  ck_assert(!http::Client::create(cfg, std::nullopt).ok());
}
END_TEST

// https URLs are accepted (a TLS proxy in front of the plugin or flexcod:
// doc/admin.md); their CA file must be readable; the TLS handshake itself
// is tested on a real proxy (integration/test_tls.py).
START_TEST(https_url_and_ca_file) {
  http::ClientConfig cfg;
  cfg.base_url = "https://127.0.0.1:" + std::to_string(closed_port());
  cfg.connect_timeout_ms = 1000;
  auto c = http::Client::create(cfg, std::nullopt);
  ck_assert_msg(c.ok(), "%s", c.ok() ? "" : c.error().message.c_str());
  auto r = c.value().request("GET", "/v1/profile");
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kConnect, "%s", r.error().message.c_str());
  ck_assert(r.error().message.rfind("connect_failed: GET https://127.0.0.1:", 0) == 0);
  cfg.ca_file = "/nonexistent/ca.pem";
  auto bad = http::Client::create(cfg, std::nullopt);
  ck_assert(!bad.ok());
  ck_assert_msg(bad.error().code == Errc::kInvalidArgument &&
                    bad.error().message ==
                        "invalid_argument: CA file /nonexistent/ca.pem is not readable: "
                        "No such file or directory",
                "%s", bad.error().message.c_str());
  // An http URL never uses it.
  cfg.base_url = "http://127.0.0.1:1";
  ck_assert(http::Client::create(cfg, std::nullopt).ok());
  ck_assert_str_eq(http::errc_name(Errc::kTls), "tls_failed");
}
END_TEST

START_TEST(sign_failed_when_munged_absent) {
  flexco::auth::SignerConfig sc;
  sc.socket_path = "/nonexistent/munge.socket";
  auto signer = flexco::auth::Signer::create(sc);
  ck_assert(signer.ok());
  http::ClientConfig cfg;
  cfg.base_url = "http://127.0.0.1:" + std::to_string(closed_port());
  // A signing client needs an audience (doc/auth.md), and a valid one.
  auto none = http::Client::create(cfg, signer.value());
  ck_assert(!none.ok());
  ck_assert_msg(none.error().code == Errc::kInvalidArgument, "%s", none.error().message.c_str());
  cfg.audience = "alpha beta";
  ck_assert(!http::Client::create(cfg, signer.value()).ok());
  cfg.audience = "alpha";
  auto c = http::Client::create(cfg, signer.value());
  ck_assert(c.ok());
  auto r = c.value().request("GET", "/v1/profile");
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kSignFailed, "%s", r.error().message.c_str());
}
END_TEST

START_TEST(plugin_error_document) {
  OneShotServer s(reply(409, "{\"error\":{\"code\":\"not_available\",\"message\":\"only 2 free\"}}"),
                  false);
  http::PluginClient pc(client_for(s.url()));
  http::ReservationRequest q;
  q.user = "root";
  q.nodes = 4;
  q.start = 100;
  q.duration = 600;
  auto r = pc.create_reservation(q, "key-1");
  ck_assert(!r.ok());
  ck_assert(r.error().code == Errc::kHttp);
  ck_assert_int_eq(r.error().http_status, 409);
  ck_assert(r.error().api_code == "not_available");
  ck_assert_msg(r.error().message.find("only 2 free") != std::string::npos, "%s",
                r.error().message.c_str());
  s.stop();
  ck_assert(s.request().find("Idempotency-Key: key-1\r\n") != std::string::npos);
  ck_assert(s.request().find("\"user\":\"root\"") != std::string::npos);
}
END_TEST

START_TEST(plugin_error_without_json) {
  OneShotServer s("HTTP/1.1 502 Bad\r\nContent-Length: 4\r\n\r\noops", false);
  http::PluginClient pc(client_for(s.url()));
  auto r = pc.get_reservation(3);
  ck_assert(!r.ok() && r.error().code == Errc::kHttp && r.error().http_status == 502);
  ck_assert(r.error().api_code.empty());
}
END_TEST

START_TEST(plugin_wrong_json) {
  OneShotServer s(reply(200, "{\"id\":\"seven\"}"), false);
  http::PluginClient pc(client_for(s.url()));
  auto r = pc.get_reservation(7);
  ck_assert(!r.ok());
  ck_assert_msg(r.error().code == Errc::kBadResponse, "%s", r.error().message.c_str());
  ck_assert(r.error().message.find("'id'") != std::string::npos);
}
END_TEST

START_TEST(plugin_not_json) {
  OneShotServer s("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false);
  http::PluginClient pc(client_for(s.url()));
  auto r = pc.list_reservations();
  ck_assert(!r.ok() && r.error().code == Errc::kBadResponse);
}
END_TEST

START_TEST(record_parsers) {
  json_error_t e;
  http::JsonPtr j(json_loads(
      "{\"id\":42,\"name\":\"flexco_42\",\"user\":\"root\",\"uid\":0,\"nodes\":2,"
      "\"node_list\":\"n[1-2]\",\"partition\":null,\"start\":10,\"end\":70,\"state\":\"tentative\","
      "\"confirm_by\":50,\"created\":1,\"changed\":2,\"reason\":null,"
      "\"jobs\":[{\"job_id\":7,\"part_index\":0}]}",
      0, &e));
  auto r = http::reservation_from_json(j.get());
  ck_assert_msg(r.ok(), "%s", r.ok() ? "" : r.error().message.c_str());
  ck_assert(r.value().id == 42 && r.value().name == "flexco_42" && r.value().nodes == 2);
  ck_assert(r.value().node_list == "n[1-2]" && r.value().partition.empty());
  ck_assert(r.value().confirm_by == 50 && r.value().job_ids.size() == 1 &&
            r.value().job_ids[0] == 7);

  http::JsonPtr ev(json_loads(
      "{\"events\":[{\"seq\":5,\"type\":\"job_ended_early\",\"time\":9,\"job_id\":3}],"
      "\"next\":5,\"oldest\":1,\"latest\":5,\"lost\":false}",
      0, &e));
  auto b = http::events_from_json(ev.get());
  ck_assert(b.ok() && b.value().events.size() == 1 && b.value().next == 5 && !b.value().lost);
  ck_assert(b.value().events[0].type == "job_ended_early");
  ck_assert(json_integer_value(json_object_get(b.value().events[0].raw.get(), "job_id")) == 3);

  http::JsonPtr pj(json_loads(
      "{\"job_id\":3,\"state\":\"RUNNING\",\"reason\":null,\"start_time\":100,\"end_time\":null,"
      "\"nodes\":\"n1\",\"reservation\":\"flexco_4\",\"exit_code\":null,"
      "\"flexco_reservation\":\"flexco_4\",\"part_index\":0,\"submitted\":90}",
      0, &e));
  auto p = http::part_job_from_json(pj.get());
  ck_assert(p.ok() && p.value().state == "RUNNING" && p.value().start_time == 100 &&
            p.value().end_time == 0 && p.value().exit_code == -1);

  http::JsonPtr badev(json_loads("{\"events\":[],\"next\":1,\"oldest\":1,\"latest\":1}", 0, &e));
  ck_assert(!http::events_from_json(badev.get()).ok());  // no "lost"
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("http_client");
  TCase* tc = tcase_create("transport");
  tcase_add_test(tc, ok_answer_parsed_and_request_as_sent);
  tcase_add_test(tc, connection_kept_alive);
  tcase_add_test(tc, connection_closed_by_server_is_replaced);
  tcase_add_test(tc, connection_refused);
  tcase_add_test(tc, next_url_when_one_is_down_or_not_in_charge);
  tcase_add_test(tc, total_timeout);
  tcase_add_test(tc, answer_too_large);
  tcase_add_test(tc, answer_too_large_without_length);
  tcase_add_test(tc, answer_cut_short);
  tcase_add_test(tc, cancelled_by_caller);
  tcase_add_loop_test(tc, bad_arguments, 0, static_cast<int>(sizeof(kBadArgs) / sizeof(kBadArgs[0])));
  tcase_add_test(tc, bad_config_bounds);
  tcase_add_test(tc, https_url_and_ca_file);
  tcase_add_test(tc, sign_failed_when_munged_absent);
  tcase_set_timeout(tc, 30);
  suite_add_tcase(s, tc);
  TCase* pc = tcase_create("plugin");
  tcase_add_test(pc, plugin_error_document);
  tcase_add_test(pc, plugin_error_without_json);
  tcase_add_test(pc, plugin_wrong_json);
  tcase_add_test(pc, plugin_not_json);
  tcase_add_test(pc, record_parsers);
  tcase_set_timeout(pc, 30);
  suite_add_tcase(s, pc);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
