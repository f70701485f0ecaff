// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/service/api_server, the plugin's HTTP service, run for
// real (libmicrohttpd on 127.0.0.1, any port) with a fake host and no
// slurmctld: a fake verifier ("Authorization: Fake <uid>"; anything else
// is a bad credential), a fake events ring, fake stats members, and
// counters of every host call.  The order of the checks (not in charge
// before authentication, the metrics token on /metrics only, QueryUsers,
// rate limits with DaemonUsers exempt), routing errors, strict query
// parameters, MaxRequestSize, the statistics and /metrics, and long polls
// woken by new events or timed out at their deadline.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <jansson.h>

#include "service/capi_api_server.h"

#include <check.h>

#include "check_main.hpp"

namespace {

constexpr std::uint32_t kUser = 1000;    // in QueryUsers
constexpr std::uint32_t kDaemon = 500;   // DaemonUsers
constexpr std::uint32_t kOther = 2000;   // in neither
const char* const kToken = "0123456789abcdef-metrics";

// ---------------------------------------------------------------------------
// the fake host

struct Fake {
  std::atomic<bool> in_charge{true};
  std::atomic<int> verify_calls{0}, probe_calls{0}, profile_calls{0};
  std::atomic<int> viewers_made{0}, viewers_freed{0};
  std::mutex ring_mutex;
  std::vector<std::uint64_t> ring;  // seqs of the retained events
  std::uint64_t latest = 0;
  std::mutex log_mutex;
  std::vector<std::string> lines;

  void publish() {
    std::lock_guard<std::mutex> l(ring_mutex);
    ring.push_back(++latest);
  }
};

Fake* fk(void* arg) { return static_cast<Fake*>(arg); }

void h_log(void* arg, int, const char* msg) {
  std::lock_guard<std::mutex> l(fk(arg)->log_mutex);
  fk(arg)->lines.emplace_back(msg);
}

bool h_in_charge(void* arg) { return fk(arg)->in_charge; }

int h_verify(void* arg, const char*, const char*, const char*, std::size_t, const char* auth,
             const char*, std::uint32_t* uid, std::uint32_t* gid, char* digest, char* code,
             std::size_t codelen, char* err, std::size_t errlen, char* grant,
             std::size_t grantlen) {
  fk(arg)->verify_calls++;
  if (grant != nullptr && grantlen > 0) grant[0] = '\0';
  digest[0] = '\0';
  if (auth != nullptr && std::strncmp(auth, "Fake ", 5) == 0 &&
      std::strspn(auth + 5, "0123456789") == std::strlen(auth + 5) && auth[5] != '\0') {
    *uid = *gid = static_cast<std::uint32_t>(std::strtoul(auth + 5, nullptr, 10));
    return 200;
  }
  std::snprintf(code, codelen, "bad_credential");
  std::snprintf(err, errlen, "not a fake credential");
  return 401;
}

bool h_backfill(void*) { return false; }

int h_probe(void* arg, std::uint32_t, std::uint32_t, const char*, std::size_t, char** json) {
  fk(arg)->probe_calls++;
  *json = strdup("{\"offers\":[]}");
  return 200;
}

int h_profile(void* arg, const char*, std::int64_t, char** json) {
  fk(arg)->profile_calls++;
  *json = strdup("{\"profile\":[]}");
  return 200;
}

void* h_viewer_new(void* arg, std::uint32_t uid, bool) {
  fk(arg)->viewers_made++;
  return new std::uint32_t(uid);
}

void h_viewer_free(void* arg, void* v) {
  fk(arg)->viewers_freed++;
  delete static_cast<std::uint32_t*>(v);
}

char* h_events_page(void* arg, std::uint64_t after, std::uint32_t max, const void*,
                    flexco_api_page_t* page) {
  Fake* f = fk(arg);
  std::lock_guard<std::mutex> l(f->ring_mutex);
  std::string ids;
  page->count = 0;
  page->next = after;
  page->lost = false;
  page->latest = f->latest;
  for (auto seq : f->ring)
    if (seq > after && page->count < max) {
      ids += (page->count ? "," : "") + std::to_string(seq);
      page->count++;
      page->next = seq;
    }
  const std::string doc =
      "{\"events\":[" + ids + "],\"next\":" + std::to_string(page->next) + "}";
  return strdup(doc.c_str());
}

std::uint64_t h_latest(void* arg) {
  std::lock_guard<std::mutex> l(fk(arg)->ring_mutex);
  return fk(arg)->latest;
}

flexco_rsvc_t* h_resv(void*) { return nullptr; }

void h_stats(void*, json_t* root) {
  json_object_set_new(root, "events", json_pack("{s:i, s:i}", "published", 7, "capacity", 64));
  json_object_set_new(root, "reservations",
                      json_pack("{s:{s:i}, s:{}, s:{s:i, s:b}}", "by_state", "confirmed", 2,
                                "refused", "state", "save_errors", 0, "saving", 1));
  json_object_set_new(root, "history_samples", json_integer(3));
}

void h_metrics(void*, flexco_metrics_t* b) {
  flexco_metrics_family(b, "flexco_snapshots_total", "counter", "Snapshots taken.");
  flexco_metrics_sample(b, "flexco_snapshots_total", nullptr, 11);
}

// ---------------------------------------------------------------------------
// a server on 127.0.0.1 with the fake host

struct Server {
  Fake fake;
  flexco_api_server_t* s = nullptr;
  std::uint16_t port = 0;
  std::uint32_t daemons[1] = {kDaemon};
  std::uint32_t queries[1] = {kUser};

  explicit Server(const std::function<void(flexco_api_conf_t&)>& tune = {}) {
    flexco_api_conf_t c{};
    c.listen_address = "127.0.0.1";
    c.listen_port = 0;
    c.http_threads = 2;
    c.limits.max_connections = 32;
    c.limits.max_connections_per_address = 32;
    c.limits.connection_timeout = 30;
    c.limits.header_timeout = 10;
    c.limits.body_timeout = 10;
    c.limits.max_request_size = 1000;
    c.limits.max_request_memory = 100000;
    c.max_long_polls_per_user = 4;
    c.max_long_polls = 16;
    c.daemon_uids = daemons;
    c.daemon_uid_cnt = 1;
    c.query_uids = queries;
    c.query_uid_cnt = 1;
    c.metrics_token = kToken;
    for (auto& n : c.rate_secs) n = 1;
    if (tune) tune(c);
    flexco_api_host_t h{};
    h.arg = &fake;
    h.log = h_log;
    h.in_charge = h_in_charge;
    h.verify = h_verify;
    h.backfill_active = h_backfill;
    h.probe = h_probe;
    h.profile = h_profile;
    h.viewer_new = h_viewer_new;
    h.viewer_free = h_viewer_free;
    h.events_page = h_events_page;
    h.events_latest = h_latest;
    h.resv = h_resv;
    h.stats = h_stats;
    h.metrics = h_metrics;
    s = flexco_api_server_create();
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(flexco_api_server_start(s, &c, &h), 0);
    ck_assert(flexco_api_server_running(s));
    port = flexco_api_server_port(s);
    ck_assert_uint_ne(port, 0);
  }
  ~Server() {
    flexco_api_server_stop(s);
    flexco_api_server_destroy(s);
  }
};

struct Resp {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower case
  std::string body;
  std::string header(const char* n) const {
    auto it = headers.find(n);
    return it == headers.end() ? "" : it->second;
  }
  std::string code() const {  // the error's code
    json_error_t e;
    json_t* j = json_loads(body.c_str(), 0, &e);
    const char* c = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
    std::string out = c ? c : "";
    json_decref(j);
    return out;
  }
};

// One request on its own connection, answered and closed; an answer is
// awaited for at most wait_s seconds (a long poll parked by a test waits
// until the test stops the server, however loaded the machine).
Resp http(std::uint16_t port, const std::string& method, const std::string& target,
          const std::string& auth = "", const std::string& body = "", long wait_s = 20) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  ck_assert_int_eq(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timeval tv{wait_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!auth.empty()) req += "Authorization: " + auth + "\r\n";
  if (!body.empty() || method == "POST")
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  ck_assert_int_eq(::send(fd, req.data(), req.size(), MSG_NOSIGNAL),
                   static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  Resp r;
  const std::size_t end = out.find("\r\n\r\n");
  ck_assert_msg(end != std::string::npos, "no answer to %s %s: '%s'", method.c_str(),
                target.c_str(), out.c_str());
  std::sscanf(out.c_str(), "HTTP/1.%*d %d", &r.status);
  std::size_t pos = out.find("\r\n") + 2;
  while (pos < end) {
    const std::size_t eol = out.find("\r\n", pos);
    const std::string line = out.substr(pos, eol - pos);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& ch : name) ch = static_cast<char>(std::tolower(ch));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value[0] == ' ') value.erase(0, 1);
      r.headers[name] = value;
    }
    pos = eol + 2;
  }
  r.body = out.substr(end + 4);
  return r;
}

// (ck_assert_str_eq would keep the pointer of a temporary string)
void expect_error(const Resp& r, int status, const char* code) {
  const std::string got = r.code();
  ck_assert_msg(r.status == status && got == code, "%d %s, not %d %s: %s", r.status, got.c_str(),
                status, code, r.body.c_str());
}

void expect_body(const Resp& r, const char* text) {
  ck_assert_msg(r.body.find(text) != std::string::npos, "no '%s' in %d %s", text, r.status,
                r.body.c_str());
}

void expect_header(const Resp& r, const char* name, const char* value) {
  const std::string got = r.header(name);
  ck_assert_msg(got == value, "%s: '%s', not '%s'", name, got.c_str(), value);
}

std::string fake(std::uint32_t uid) { return "Fake " + std::to_string(uid); }

// Wait (at most 10 s) for cond; false if it never held.
bool await(const std::function<bool()>& cond) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

// GET /v1/stats as the daemon user, parsed (a new reference).
json_t* stats(const Server& s) {
  const Resp r = http(s.port, "GET", "/v1/stats", fake(kDaemon));
  ck_assert_int_eq(r.status, 200);
  json_error_t e;
  json_t* j = json_loads(r.body.c_str(), 0, &e);
  ck_assert_ptr_nonnull(j);
  return j;
}

// requests[endpoint].status[code] in a stats document (0 if absent).
long long count_of(json_t* st, const char* endpoint, const char* code) {
  size_t i;
  json_t* ep;
  json_array_foreach(json_object_get(st, "requests"), i, ep) {
    if (std::strcmp(json_string_value(json_object_get(ep, "endpoint")), endpoint) == 0)
      return json_integer_value(json_object_get(json_object_get(ep, "status"), code));
  }
  return -1;
}

long long counted(const Server& s, const char* endpoint, const char* code) {
  json_t* st = stats(s);
  const long long n = count_of(st, endpoint, code);
  json_decref(st);
  return n;
}

long long member(const Server& s, const char* obj, const char* key) {
  json_t* st = stats(s);
  const long long n = json_integer_value(json_object_get(json_object_get(st, obj), key));
  json_decref(st);
  return n;
}

}  // namespace

// ---------------------------------------------------------------------------

START_TEST(not_in_charge_before_authentication) {
  Server s;
  s.fake.in_charge = false;
  const Resp r = http(s.port, "POST", "/v1/probe", "garbage", "{}");
  expect_error(r, 503, "not_in_charge");
  expect_header(r, "retry-after", "1");
  ck_assert_int_eq(s.fake.verify_calls, 0);
  ck_assert_int_eq(s.fake.probe_calls, 0);
  // and in charge again: the same request reaches the verifier
  s.fake.in_charge = true;
  ck_assert_int_eq(http(s.port, "POST", "/v1/probe", "garbage", "{}").status, 401);
  ck_assert_int_eq(s.fake.verify_calls, 1);
}
END_TEST

START_TEST(bad_credential_401_handler_not_called) {
  Server s;
  const Resp r = http(s.port, "POST", "/v1/probe", "MUNGE forged", "{}");
  expect_error(r, 401, "bad_credential");
  expect_header(r, "www-authenticate", "MUNGE");
  ck_assert_int_eq(s.fake.verify_calls, 1);
  ck_assert_int_eq(s.fake.probe_calls, 0);
  // a good one is served
  ck_assert_int_eq(http(s.port, "POST", "/v1/probe", fake(kUser), "{}").status, 200);
  ck_assert_int_eq(s.fake.probe_calls, 1);
}
END_TEST

START_TEST(bearer_token_on_metrics_only) {
  Server s;
  const std::string bearer = std::string("Bearer ") + kToken;
  Resp r = http(s.port, "GET", "/metrics", bearer);
  ck_assert_int_eq(r.status, 200);
  ck_assert(r.header("content-type").find("text/plain") == 0);
  ck_assert_int_eq(s.fake.verify_calls, 0);  // the token, not MUNGE
  r = http(s.port, "GET", "/metrics", "Bearer wrong-token-wrong-token");
  expect_error(r, 401, "invalid_token");
  ck_assert_int_eq(s.fake.verify_calls, 0);
  // anywhere else the token is no credential: MUNGE decides (and refuses)
  r = http(s.port, "GET", "/v1/stats", bearer);
  ck_assert_int_eq(r.status, 401);
  ck_assert_int_eq(s.fake.verify_calls, 1);
}
END_TEST

START_TEST(bearer_without_token_file) {
  Server s([](flexco_api_conf_t& c) { c.metrics_token = nullptr; });
  const Resp r = http(s.port, "GET", "/metrics", std::string("Bearer ") + kToken);
  ck_assert_int_eq(r.status, 401);
  expect_body(r, "no MetricsTokenFile is set");
}
END_TEST

START_TEST(query_users_403) {
  Server s;
  Resp r = http(s.port, "GET", "/v1/profile", fake(kOther));
  expect_error(r, 403, "forbidden");
  expect_body(r, "uid 2000 is not in QueryUsers");
  ck_assert_int_eq(s.fake.profile_calls, 0);
  ck_assert_int_eq(http(s.port, "GET", "/v1/profile", fake(kUser)).status, 200);
  ck_assert_int_eq(http(s.port, "GET", "/v1/profile", fake(kDaemon)).status, 200);
  ck_assert_int_eq(s.fake.profile_calls, 2);
}
END_TEST

START_TEST(rate_limit_429_daemon_exempt) {
  Server s([](flexco_api_conf_t& c) {
    c.rate_count[FLEXCO_API_RL_PROFILE] = 2;
    c.rate_secs[FLEXCO_API_RL_PROFILE] = 60;
  });
  ck_assert_int_eq(http(s.port, "GET", "/v1/profile", fake(kUser)).status, 200);
  ck_assert_int_eq(http(s.port, "GET", "/v1/profile", fake(kUser)).status, 200);
  const Resp r = http(s.port, "GET", "/v1/profile", fake(kUser));
  expect_error(r, 429, "rate_limited");
  ck_assert_int_ge(std::atoi(r.header("retry-after").c_str()), 1);
  expect_body(r, "ProfileRateLimit");
  ck_assert_int_eq(s.fake.profile_calls, 2);
  // not the other endpoints' buckets
  ck_assert_int_eq(http(s.port, "POST", "/v1/probe", fake(kUser), "{}").status, 200);
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(http(s.port, "GET", "/v1/profile", fake(kDaemon)).status, 200);
  ck_assert_int_eq(member(s, "rate_limited", "profile"), 1);
}
END_TEST

START_TEST(routing_404_405) {
  Server s;
  Resp r = http(s.port, "GET", "/v1/nope", fake(kUser));
  expect_error(r, 404, "not_found");
  r = http(s.port, "DELETE", "/v1/stats", fake(kUser));
  expect_error(r, 405, "method_not_allowed");
  expect_header(r, "allow", "GET");
  // said after authentication only
  r = http(s.port, "GET", "/v1/nope", "forged");
  ck_assert_int_eq(r.status, 401);
}
END_TEST

START_TEST(query_args_400) {
  Server s;
  Resp r = http(s.port, "GET", "/v1/stats?x=1", fake(kUser));
  expect_error(r, 400, "bad_parameter");
  expect_body(r, "stats takes no query parameters");
  r = http(s.port, "POST", "/v1/probe?a=b", fake(kUser), "{}");
  ck_assert_int_eq(r.status, 400);
  ck_assert_int_eq(s.fake.probe_calls, 0);
  r = http(s.port, "GET", "/v1/reservations?a=b", fake(kUser));
  ck_assert_int_eq(r.status, 400);
  expect_body(r, "reservations take no query parameters");
  r = http(s.port, "GET", "/v1/profile?bogus=1", fake(kUser));
  ck_assert_int_eq(r.status, 400);
  ck_assert_int_eq(s.fake.profile_calls, 0);
  ck_assert_int_eq(http(s.port, "GET", "/v1/profile?horizon=3600", fake(kUser)).status, 200);
}
END_TEST

START_TEST(body_over_max_request_size_413) {
  Server s;
  const Resp r = http(s.port, "POST", "/v1/probe", fake(kUser), std::string(1001, 'x'));
  expect_error(r, 413, "payload_too_large");
  expect_body(r, "larger than 1000 bytes");
  ck_assert_int_eq(s.fake.verify_calls, 0);
  ck_assert_int_eq(s.fake.probe_calls, 0);
  ck_assert_int_eq(http(s.port, "POST", "/v1/probe", fake(kUser), std::string(1000, ' ')).status,
                   200);
}
END_TEST

START_TEST(uri_too_long_414) {
  Server s;
  const Resp r = http(s.port, "GET", "/v1/" + std::string(2100, 'a'), fake(kUser));
  expect_error(r, 414, "uri_too_long");
  ck_assert_int_eq(s.fake.verify_calls, 0);
}
END_TEST

START_TEST(stats_counts_and_latency) {
  Server s;
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(http(s.port, "GET", "/v1/profile", fake(kUser)).status, 200);
  ck_assert_int_eq(http(s.port, "GET", "/v1/profile", "forged").status, 401);
  ck_assert_int_eq(http(s.port, "GET", "/v1/nope", fake(kUser)).status, 404);
  // recorded when microhttpd completes each request, just after its answer
  ck_assert(await([&] { return counted(s, "profile", "200") == 3; }));
  ck_assert_int_eq(counted(s, "profile", "401"), 1);
  ck_assert_int_eq(counted(s, "other", "404"), 1);
  ck_assert_int_eq(counted(s, "probe", "200"), 0);
  json_t* st = stats(s);
  size_t i;
  json_t* ep;
  bool seen = false;
  json_array_foreach(json_object_get(st, "requests"), i, ep) {
    if (std::strcmp(json_string_value(json_object_get(ep, "endpoint")), "profile") != 0) continue;
    seen = true;
    json_t* lat = json_object_get(ep, "latency");
    ck_assert_uint_eq(json_array_size(lat), 5);
    long long sum = 0;
    size_t k;
    json_t* b;
    json_array_foreach(lat, k, b) sum += json_integer_value(json_object_get(b, "count"));
    ck_assert_int_eq(sum, 4);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(lat, 0), "le_usec")), 1000);
    ck_assert(json_is_null(json_object_get(json_array_get(lat, 4), "le_usec")));
  }
  ck_assert(seen);
  // the server's own members and the host's
  for (const char* m : {"long_polls", "backfill_defer", "connections", "rate_limited", "started",
                        "now", "events", "reservations", "history_samples"})
    ck_assert_msg(json_object_get(st, m) != nullptr, "no %s in /v1/stats", m);
  ck_assert_int_eq(json_integer_value(json_object_get(st, "history_samples")), 3);
  json_decref(st);
}
END_TEST

START_TEST(metrics_families) {
  Server s;
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(http(s.port, "GET", "/v1/profile", fake(kUser)).status, 200);
  ck_assert(await([&] { return counted(s, "profile", "200") == 2; }));
  const Resp r = http(s.port, "GET", "/metrics", std::string("Bearer ") + kToken);
  ck_assert_int_eq(r.status, 200);
  for (const char* want :
       {"# TYPE flexco_http_requests_total counter\n",
        "flexco_http_requests_total{endpoint=\"profile\",code=\"200\"} 2\n",
        "# TYPE flexco_http_request_duration_seconds histogram\n",
        "flexco_http_request_duration_seconds_count{endpoint=\"profile\"} 2\n",
        "flexco_snapshots_total 11\n", "flexco_reservations{state=\"confirmed\"} 2\n",
        "flexco_state_saving 1\n", "flexco_events_published_total 7\n",
        "flexco_event_buffer_capacity 64\n", "# TYPE flexco_long_polls_waiting gauge\n",
        "flexco_connections_closed_total{reason=\"make_room\"} 0\n",
        "flexco_rate_limited_total{endpoint=\"probe\"} 0\n", "# TYPE flexco_start_time_seconds gauge\n"})
    ck_assert_msg(r.body.find(want) != std::string::npos, "no '%s' in:\n%s", want, r.body.c_str());
  // the host's families come after the requests' and before the reservations'
  ck_assert(r.body.find("flexco_http_request_duration_seconds") < r.body.find("flexco_snapshots_total"));
  ck_assert(r.body.find("flexco_snapshots_total") < r.body.find("flexco_reservations"));
}
END_TEST

START_TEST(long_poll_woken_by_event) {
  Server s;
  Resp got;
  std::atomic<bool> done{false};
  const auto t0 = std::chrono::steady_clock::now();
  std::thread poller([&] {
    got = http(s.port, "GET", "/v1/events?wait=30", fake(kUser), "", 60);
    done = true;
  });
  ck_assert(await([&] { return member(s, "long_polls", "waiting") == 1; }));
  ck_assert(!done);
  s.fake.publish();
  flexco_api_server_notify(s.s);
  ck_assert(await([&] { return done.load(); }));
  poller.join();
  ck_assert_int_eq(got.status, 200);
  expect_body(got, "\"events\":[1]");
  ck_assert(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
  ck_assert_int_eq(member(s, "long_polls", "woken"), 1);
  ck_assert(await([&] { return s.fake.viewers_freed == s.fake.viewers_made; }));
  ck_assert_int_eq(s.fake.viewers_made, 1);
}
END_TEST

START_TEST(long_poll_times_out) {
  Server s;
  const auto t0 = std::chrono::steady_clock::now();
  const Resp r = http(s.port, "GET", "/v1/events?wait=1", fake(kUser));
  const auto took = std::chrono::steady_clock::now() - t0;
  ck_assert_int_eq(r.status, 200);
  expect_body(r, "\"events\":[]");
  ck_assert(took >= std::chrono::milliseconds(900));
  ck_assert(took < std::chrono::seconds(5));
  ck_assert_int_eq(member(s, "long_polls", "timed_out"), 1);
  ck_assert_int_eq(member(s, "long_polls", "waiting"), 0);
}
END_TEST

START_TEST(long_poll_cap_per_user) {
  Server s([](flexco_api_conf_t& c) { c.max_long_polls_per_user = 1; });
  // parked until the server stops: their deadline (60 s, the most) and
  // their sockets' timeout are beyond any wait of the test's own
  std::thread poller([&] { http(s.port, "GET", "/v1/events?wait=60", fake(kUser), "", 120); });
  ck_assert(await([&] { return member(s, "long_polls", "waiting") == 1; }));
  const Resp r = http(s.port, "GET", "/v1/events?wait=60", fake(kUser));
  expect_error(r, 503, "too_many_long_polls");
  ck_assert_int_ge(std::atoi(r.header("retry-after").c_str()), 1);
  // a DaemonUser is not capped
  std::thread daemon([&] { http(s.port, "GET", "/v1/events?wait=60", fake(kDaemon), "", 120); });
  ck_assert(await([&] { return member(s, "long_polls", "waiting") == 2; }));
  flexco_api_server_stop(s.s);  // answers both
  poller.join();
  daemon.join();
}
END_TEST

START_TEST(idle_server_says_why) {
  flexco_api_idle_t* i = nullptr;
  ck_assert_int_eq(flexco_api_idle_start("not an address", 0, "x", nullptr, nullptr, &i), -1);
  ck_assert_int_eq(flexco_api_idle_start("127.0.0.1", 0, "ListenPort is bad", nullptr, nullptr, &i),
                   0);
  const Resp r = http(flexco_api_idle_port(i), "GET", "/v1/stats");
  expect_error(r, 503, "flexco_idle");
  expect_body(r, "ListenPort is bad");
  expect_header(r, "retry-after", "60");
  flexco_api_idle_stop(i);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("api_server");
  TCase* tc = tcase_create("server");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, not_in_charge_before_authentication);
  tcase_add_test(tc, bad_credential_401_handler_not_called);
  tcase_add_test(tc, bearer_token_on_metrics_only);
  tcase_add_test(tc, bearer_without_token_file);
  tcase_add_test(tc, query_users_403);
  tcase_add_test(tc, rate_limit_429_daemon_exempt);
  tcase_add_test(tc, routing_404_405);
  tcase_add_test(tc, query_args_400);
  tcase_add_test(tc, body_over_max_request_size_413);
  tcase_add_test(tc, uri_too_long_414);
  tcase_add_test(tc, stats_counts_and_latency);
  tcase_add_test(tc, metrics_families);
  tcase_add_test(tc, long_poll_woken_by_event);
  tcase_add_test(tc, long_poll_times_out);
  tcase_add_test(tc, long_poll_cap_per_user);
  tcase_add_test(tc, idle_server_says_why);
  suite_add_tcase(s, tc);
  return s;
}

int main() { return run_check_suite(make_suite()); }
