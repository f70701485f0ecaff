// SPDX-License-Identifier: GPL-2.0-or-later
// http_client.cpp - libcurl client signing every request with MUNGE, and the
// typed client of the slurmctld/flexco plugin.  See http_client.hpp.

#include "core/http_client.hpp"

#include "core/session.hpp"
#include "core/epoch.hpp"

#include <curl/curl.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>

namespace flexco::http {

namespace {

Error make_error(Errc code, std::string what, int status = 0,
                 std::string api_code = {}) {
  Error e;
  e.code = code;
  e.http_status = status;
  e.api_code = std::move(api_code);
  e.message = std::string(errc_name(code)) + ": " + what;
  return e;
}

struct SlistDeleter {
  void operator()(curl_slist* l) const noexcept { curl_slist_free_all(l); }
};

struct Sink {
  std::string data;
  std::size_t limit = 0;
  bool overflow = false;
};

extern "C" size_t write_cb(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * nmemb;
  if (sink->data.size() + n > sink->limit) {
    sink->overflow = true;
    return 0;  // makes curl fail with CURLE_WRITE_ERROR
  }
  try {
    sink->data.append(ptr, n);
  } catch (...) {
    return 0;
  }
  return n;
}

extern "C" int progress_cb(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::atomic<bool>*>(user);
  return cancel != nullptr && cancel->load() ? 1 : 0;
}

bool is_https(const std::string& url) { return url.compare(0, 8, "https://") == 0; }

bool valid_base_url(const std::string& url) {
  const std::string_view p = is_https(url) ? "https://" : "http://";
  if (url.size() <= p.size() || url.compare(0, p.size(), p) != 0) return false;
  for (std::size_t i = p.size(); i < url.size(); ++i) {
    const char c = url[i];
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == '?' || c == '#' || c == '@') return false;
  }
  return true;
}

bool visible_ascii(std::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

// Helpers reading a JSON object member.
bool get_int(const json_t* o, const char* key, std::int64_t* out, bool nullable) {
  const json_t* v = json_object_get(o, key);
  if (v == nullptr || json_is_null(v)) {
    if (!nullable) return false;
    *out = 0;
    return true;
  }
  if (!json_is_integer(v)) return false;
  *out = json_integer_value(v);
  return true;
}

bool get_str(const json_t* o, const char* key, std::string* out, bool nullable) {
  const json_t* v = json_object_get(o, key);
  if (v == nullptr || json_is_null(v)) {
    if (!nullable) return false;
    out->clear();
    return true;
  }
  if (!json_is_string(v)) return false;
  out->assign(json_string_value(v), json_string_length(v));
  return true;
}

Error bad(std::string_view what, const char* member) {
  return make_error(Errc::kBadResponse,
                    std::string(what) + ": member '" + member + "' missing or of the wrong type");
}

std::string uri_escape(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::kInvalidArgument: return "invalid_argument";
    case Errc::kSignFailed: return "sign_failed";
    case Errc::kConnect: return "connect_failed";
    case Errc::kTimeout: return "timeout";
    case Errc::kTransport: return "transport";
    case Errc::kTooLarge: return "response_too_large";
    case Errc::kCancelled: return "cancelled";
    case Errc::kBadResponse: return "bad_response";
    case Errc::kHttp: return "http_error";
    case Errc::kInternal: return "internal_error";
    case Errc::kTls: return "tls_failed";
  }
  return "internal_error";
}

JsonPtr json_ref(json_t* j) noexcept { return JsonPtr(j == nullptr ? nullptr : json_incref(j)); }

std::string json_text(const json_t* j) {
  if (j == nullptr) return {};
  char* s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  if (s == nullptr) return {};
  std::string out(s);
  std::free(s);
  return out;
}

struct Client::Pool {
  std::mutex mutex;
  std::vector<CURL*> idle;  // reset handles whose connections stay open
  // The session with the server (ClientConfig::session), shared by the
  // copies of the client.
  auth::ClientSession session;
  // Requests in flight, against ClientConfig::max_in_flight.
  std::mutex slot_mutex;
  std::condition_variable slot_cv;
  std::size_t in_flight = 0;
  // Which of the URLs (base_url, then other_urls) to ask first: the last
  // one that answered as the service in charge.
  std::atomic<std::size_t> current{0};

  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    for (CURL* h : idle) curl_easy_cleanup(h);
  }

  // A handle from the pool, or a new one (nullptr if libcurl has none).
  CURL* take() noexcept {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (!idle.empty()) {
        CURL* h = idle.back();
        idle.pop_back();
        return h;
      }
    }
    return curl_easy_init();
  }

  // Back to the pool with its connection, its options reset (no pointer
  // into the finished request stays behind); freed when the pool is full.
  void give(CURL* h) noexcept {
    if (h == nullptr) return;
    curl_easy_reset(h);
    try {
      const std::lock_guard<std::mutex> lock(mutex);
      if (idle.size() < kIdleHandles) {
        idle.push_back(h);
        return;
      }
    } catch (...) {
    }
    curl_easy_cleanup(h);
  }
};

namespace {

// The error.code of a JSON error answer, "" if it has none.
std::string api_code_of(const Response& r) {
  const json_t* err = json_object_get(r.json.get(), "error");
  const json_t* code = json_is_object(err) ? json_object_get(err, "code") : nullptr;
  return json_is_string(code) ? std::string(json_string_value(code)) : std::string();
}

// A place among ClientConfig::max_in_flight for one request (none when
// max is 0): waits until `deadline` or a cancel, checked every 100 ms.
class InFlight {
 public:
  InFlight(Client::Pool& pool, std::size_t max, std::chrono::steady_clock::time_point deadline,
           const std::atomic<bool>* cancel)
      : pool_(pool) {
    if (max == 0) {
      held_ = true;
      counted_ = false;
      return;
    }
    std::unique_lock<std::mutex> lock(pool_.slot_mutex);
    while (pool_.in_flight >= max) {
      if ((cancel != nullptr && cancel->load()) || std::chrono::steady_clock::now() >= deadline)
        return;
      pool_.slot_cv.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() +
                                                            std::chrono::milliseconds(100)));
    }
    ++pool_.in_flight;
    held_ = true;
  }
  ~InFlight() {
    if (!held_ || !counted_) return;
    {
      std::lock_guard<std::mutex> lock(pool_.slot_mutex);
      --pool_.in_flight;
    }
    pool_.slot_cv.notify_one();
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  bool held() const noexcept { return held_; }

 private:
  Client::Pool& pool_;
  bool held_ = false;
  bool counted_ = true;
};

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A 401 that refuses the session itself, not the request (doc/auth.md,
// "Sessions"): the client forgets it and signs with MUNGE again.
bool session_refused(const Response& r) {
  const std::string code = api_code_of(r);
  return code == "unknown_session" || code == "session_expired" || code == "bad_mac" ||
         code == "replayed" || code == "expired" || code == "not_yet_valid";
}

// A pool handle for one request, given back when it ends.
class Lease {
 public:
  explicit Lease(Client::Pool& pool) noexcept : pool_(pool), h_(pool.take()) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { pool_.give(h_); }
  CURL* get() const noexcept { return h_; }

 private:
  Client::Pool& pool_;
  CURL* h_;
};

}  // namespace

Result<Client> Client::create(ClientConfig config, std::optional<auth::Signer> signer) noexcept {
  try {
    if (!valid_base_url(config.base_url)) {
      return make_error(Errc::kInvalidArgument,
                        "base_url must be http://host[:port] or https://host[:port], got '" +
                            config.base_url + "'");
    }
    if (config.other_urls.size() > kMaxUrls - 1) {
      return make_error(Errc::kInvalidArgument,
                        "at most " + std::to_string(kMaxUrls) + " URLs for one service");
    }
    for (const auto& u : config.other_urls) {
      if (!valid_base_url(u) || is_https(u) != is_https(config.base_url)) {
        return make_error(Errc::kInvalidArgument,
                          "other URL '" + u + "' must be " +
                              (is_https(config.base_url) ? "https" : "http") + "://host[:port]");
      }
    }
    if (is_https(config.base_url) && !config.ca_file.empty() &&
        access(config.ca_file.c_str(), R_OK) != 0) {
      return make_error(Errc::kInvalidArgument, "CA file " + config.ca_file +
                                                    " is not readable: " + std::strerror(errno));
    }
    if (config.connect_timeout_ms < 1 || config.connect_timeout_ms > 600000) {
      return make_error(Errc::kInvalidArgument, "connect_timeout_ms outside 1..600000");
    }
    if (config.total_timeout_ms < 1 || config.total_timeout_ms > 3600000) {
      return make_error(Errc::kInvalidArgument, "total_timeout_ms outside 1..3600000");
    }
    if (config.max_response_bytes < 1 || config.max_response_bytes > (std::size_t{1} << 30)) {
      return make_error(Errc::kInvalidArgument, "max_response_bytes outside 1..1 GiB");
    }
    if (signer.has_value()) {
      if (auto s = auth::validate_audience(config.audience); !s.ok()) {
        return make_error(Errc::kInvalidArgument, s.error().message);
      }
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      return make_error(Errc::kInternal, "curl_global_init failed");
    }
    return Client(std::move(config), std::move(signer), std::make_shared<Pool>());
  } catch (const std::bad_alloc&) {
    return make_error(Errc::kInternal, "out of memory");
  }
}

Result<Response> Client::request(std::string_view method, std::string_view target,
                                 std::string_view body, const std::vector<Header>& headers,
                                 long total_timeout_ms,
                                 const std::atomic<bool>* cancel) const noexcept {
  bool again = false;
  auto r = request_once(method, target, body, headers, total_timeout_ms, cancel, &again);
  if (!again) return r;
  return request_once(method, target, body, headers, total_timeout_ms, cancel, nullptr);
}

Result<Response> Client::request_once(std::string_view method, std::string_view target,
                                      std::string_view body, const std::vector<Header>& headers,
                                      long total_timeout_ms, const std::atomic<bool>* cancel,
                                      bool* again) const noexcept {
  try {
    if (!auth::validate_method(method).ok()) {
      return make_error(Errc::kInvalidArgument, "method '" + std::string(method) + "' is not [A-Z]{1,16}");
    }
    if (target.empty() || target[0] != '/' || !visible_ascii(target) ||
        target.size() > auth::kMaxPathLength) {
      return make_error(Errc::kInvalidArgument,
                        "target must start with '/', be visible ASCII and at most 2048 bytes");
    }
    for (const auto& h : headers) {
      if (h.name.empty() || !visible_ascii(h.name) || h.name.find(':') != std::string::npos ||
          h.value.find_first_of("\r\n") != std::string::npos) {
        return make_error(Errc::kInvalidArgument, "bad header '" + h.name + "'");
      }
    }
    if (cancel != nullptr && cancel->load()) {
      return make_error(Errc::kCancelled, "cancelled before sending");
    }
    const long wait_ms = total_timeout_ms > 0 ? total_timeout_ms : config_.total_timeout_ms;
    const InFlight place(*pool_, config_.max_in_flight,
                         std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms),
                         cancel);
    if (!place.held()) {
      if (cancel != nullptr && cancel->load()) {
        return make_error(Errc::kCancelled, "cancelled before sending");
      }
      return make_error(Errc::kTimeout, std::string(method) + " " + std::string(target) +
                                            ": no place among the " +
                                            std::to_string(config_.max_in_flight) +
                                            " requests in flight within " +
                                            std::to_string(wait_ms) + " ms; nothing sent");
    }
    std::string stamp;
    bool stamped = false;
    if (config_.fence) {
      stamped = config_.fence(&stamp);
      if (!stamped && method != "GET") {
        return make_error(Errc::kInvalidArgument,
                          "not in charge: this flexcod does not hold the lease, nothing was sent");
      }
    }
    std::unique_ptr<curl_slist, SlistDeleter> list;
    auth::ClientSession::Plan plan;  // how this request is authenticated
    auto add = [&list](const std::string& line) -> bool {
      curl_slist* n = curl_slist_append(list.get(), line.c_str());
      if (n == nullptr) return false;
      list.release();
      list.reset(n);
      return true;
    };
    if (signer_.has_value()) {
      // The Idempotency-Key header is signed too (flexco-auth-v3).
      std::optional<std::string_view> key;
      for (const auto& h : headers) {
        if (strcasecmp(h.name.c_str(), std::string(auth::kIdempotencyKeyHeader).c_str()) == 0) {
          if (key.has_value()) {
            return make_error(Errc::kInvalidArgument, "more than one Idempotency-Key header");
          }
          key = h.value;
        }
      }
      if (config_.session) {
        plan = pool_->session.next(config_.audience, method, target, body, key, unix_now());
      }
      if (!plan.header.empty()) {
        if (!add("Authorization: " + plan.header)) return make_error(Errc::kInternal, "out of memory");
      } else {
        auto h = plan.offer.empty()
                     ? signer_->sign(config_.audience, method, target, body, key)
                     : signer_->sign_offer(config_.audience, method, target, body, key, plan.offer);
        if (!h.ok()) {
          pool_->session.answered(plan, std::nullopt, config_.audience, unix_now());
          return make_error(Errc::kSignFailed, h.error().message);
        }
        if (!add("Authorization: " + h.value())) return make_error(Errc::kInternal, "out of memory");
      }
    }
    if (!body.empty() && !add("Content-Type: application/json")) {
      return make_error(Errc::kInternal, "out of memory");
    }
    // No "Expect: 100-continue" round trip for bodies.
    if (!add("Expect:")) return make_error(Errc::kInternal, "out of memory");
    for (const auto& h : headers) {
      if (!add(h.name + ": " + h.value)) return make_error(Errc::kInternal, "out of memory");
    }
    if (stamped && !add(std::string(flexco::epoch::kHeaderName) + ": " + stamp)) {
      return make_error(Errc::kInternal, "out of memory");
    }

    const Lease curl(*pool_);
    if (curl.get() == nullptr) return make_error(Errc::kInternal, "curl_easy_init failed");
    const std::size_t n_urls = 1 + config_.other_urls.size();
    const std::size_t first = pool_->current.load() % n_urls;
    // One service behind several addresses (a cluster's primary and backup
    // controllers): a request that reached none of them, or that one
    // answered 503 not_in_charge (it acted on nothing), goes to the next;
    // the one that answers is asked first from then on.  A timeout is not
    // retried here (the request may have been acted on; the caller retries
    // with its Idempotency-Key), but the next request starts at the next.
    for (std::size_t k = 0;; ++k) {
      const std::size_t idx = (first + k) % n_urls;
      const std::string& base = idx == 0 ? config_.base_url : config_.other_urls[idx - 1];
      auto r = perform(curl.get(), base, method, target, body, list.get(), total_timeout_ms, cancel);
      const bool last = k + 1 >= n_urls;
      if (config_.session && r.ok()) {
        if (!plan.offer.empty() && r.value().status == 401 &&
            api_code_of(r.value()) == "malformed_payload") {
          // A server older than flexco-auth-v4: nothing was done; once
          // more without the offer, and no offers to it for a while.
          pool_->session.offer_refused(unix_now());
          if (again != nullptr) *again = true;
          return r;
        }
        if (!plan.offer.empty()) {
          pool_->session.answered(plan, r.value().session_grant.empty()
                                            ? std::nullopt
                                            : std::optional<std::string_view>(r.value().session_grant),
                                  config_.audience, unix_now());
          plan.offer.clear();
        }
        if (!plan.header.empty() && r.value().status == 401 && session_refused(r.value())) {
          // The server no longer has the session (it restarted, the session
          // ended or was evicted): nothing was done; once more with MUNGE.
          pool_->session.drop(plan);
          if (again != nullptr) *again = true;
          return r;
        }
      } else if (config_.session && !plan.offer.empty()) {
        pool_->session.answered(plan, std::nullopt, config_.audience, unix_now());
        plan.offer.clear();
      }
      if (!r.ok()) {
        if (r.error().code == Errc::kConnect && !last) continue;
        if (r.error().code == Errc::kTimeout && n_urls > 1) {
          std::size_t expect = first;
          pool_->current.compare_exchange_strong(expect, (idx + 1) % n_urls);
        }
        return r;
      }
      if (r.value().status == 503 && !last && api_code_of(r.value()) == "not_in_charge") continue;
      if (idx != first) pool_->current.store(idx);
      return r;
    }
  } catch (const std::bad_alloc&) {
    return make_error(Errc::kInternal, "out of memory");
  } catch (...) {
    return make_error(Errc::kInternal, "unexpected exception");
  }
}

Result<Response> Client::perform(void* handle, const std::string& base, std::string_view method,
                                 std::string_view target, std::string_view body,
                                 void* header_list, long total_timeout_ms,
                                 const std::atomic<bool>* cancel) const noexcept {
  try {
    CURL* c = static_cast<CURL*>(handle);
    curl_slist* headers = static_cast<curl_slist*>(header_list);
    curl_easy_reset(c);
    const std::string url = base + std::string(target);
    const std::string meth(method);
    Sink sink;
    sink.limit = config_.max_response_bytes;
    char errbuf[CURL_ERROR_SIZE] = {0};
    const long total = total_timeout_ms > 0 ? total_timeout_ms : config_.total_timeout_ms;

    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, config_.connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_MAXCONNECTS, 1L);  // this handle's one kept-alive connection
    curl_easy_setopt(c, CURLOPT_MAXAGE_CONN, kMaxIdleSeconds);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, total);
    const bool tls = is_https(base);
    // Only the URL's own scheme: never a redirect or a downgrade to another.
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, tls ? "https" : "http");
    if (tls) {
      // Always verified, chain and host name (no option turns this off).
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
      curl_easy_setopt(c, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
      if (!config_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, config_.ca_file.c_str());
    }
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROXY, "");  // never through an environment proxy
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE,
                     static_cast<curl_off_t>(config_.max_response_bytes));
    if (cancel != nullptr) {
      curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
      curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
    }
    if (meth == "GET") {
      curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, meth.c_str());
    }
    if (!body.empty() || (meth != "GET" && meth != "DELETE")) {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }

    const auto t0 = std::chrono::steady_clock::now();
    const auto w0 = std::chrono::system_clock::now();
    const CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK && config_.clock_sample) {
      const auto w1 = std::chrono::system_clock::now();
      struct curl_header* h = nullptr;
      if (curl_easy_header(c, "Date", 0, CURLH_HEADER, -1, &h) == CURLHE_OK && h != nullptr) {
        const time_t server = curl_getdate(h->value, nullptr);
        if (server > 0) {
          const double mid = std::chrono::duration<double>((w0 + (w1 - w0) / 2).time_since_epoch()).count();
          try {
            config_.clock_sample(static_cast<double>(server) + 0.5 - mid,
                                 std::chrono::duration<double>(w1 - w0).count());
          } catch (...) {
          }
        }
      }
    }
    if (config_.observer) {
      long st = 0;
      if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
      try {
        config_.observer(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                         rc == CURLE_OK, static_cast<int>(st), total_timeout_ms > 0);
      } catch (...) {
      }
    }
    const std::string where = meth + " " + url;
    if (rc != CURLE_OK) {
      const std::string why = errbuf[0] != '\0' ? std::string(errbuf) : curl_easy_strerror(rc);
      switch (rc) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
          return make_error(Errc::kConnect, where + ": " + why);
        case CURLE_OPERATION_TIMEDOUT:
          return make_error(Errc::kTimeout, where + ": " + why);
        case CURLE_ABORTED_BY_CALLBACK:
          return make_error(Errc::kCancelled, where + ": cancelled by the caller");
        case CURLE_FILESIZE_EXCEEDED:
          return make_error(Errc::kTooLarge, where + ": answer larger than " +
                                                 std::to_string(config_.max_response_bytes) + " bytes");
        case CURLE_WRITE_ERROR:
          if (sink.overflow) {
            return make_error(Errc::kTooLarge, where + ": answer larger than " +
                                                   std::to_string(config_.max_response_bytes) + " bytes");
          }
          return make_error(Errc::kInternal, where + ": out of memory");
        case CURLE_OUT_OF_MEMORY:
          return make_error(Errc::kInternal, where + ": out of memory");
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
          // The TLS connection failed or its certificate did not verify:
          // the request, and its credential, were never sent.
          return make_error(Errc::kTls,
                            where + ": " + why + " (CA certificates: " +
                                (config_.ca_file.empty() ? std::string("the system's")
                                                         : config_.ca_file) +
                                "); the request was not sent");
        default:
          return make_error(Errc::kTransport, where + ": " + why);
      }
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    Response r;
    r.status = static_cast<int>(status);
    r.body = std::move(sink.data);
    {
      struct curl_header* h = nullptr;
      if (curl_easy_header(c, std::string(auth::kSessionHeader).c_str(), 0, CURLH_HEADER, -1, &h) ==
              CURLHE_OK &&
          h != nullptr && h->value != nullptr) {
        r.session_grant = h->value;
      }
    }
    if (!r.body.empty()) {
      json_error_t jerr;
      r.json.reset(json_loadb(r.body.data(), r.body.size(), JSON_DECODE_ANY, &jerr));
    }
    return r;
  } catch (const std::bad_alloc&) {
    return make_error(Errc::kInternal, "out of memory");
  } catch (...) {
    return make_error(Errc::kInternal, "unexpected exception");
  }
}

// ---------------------------------------------------------------------------
// Plugin client

Result<Reservation> reservation_from_json(const json_t* j) {
  const char* what = "reservation";
  if (!json_is_object(j)) return make_error(Errc::kBadResponse, "reservation: not an object");
  Reservation r;
  if (!get_int(j, "id", &r.id, false)) return bad(what, "id");
  if (!get_str(j, "name", &r.name, false)) return bad(what, "name");
  if (!get_str(j, "user", &r.user, false)) return bad(what, "user");
  if (!get_int(j, "nodes", &r.nodes, false)) return bad(what, "nodes");
  if (!get_str(j, "node_list", &r.node_list, true)) return bad(what, "node_list");
  if (!get_str(j, "partition", &r.partition, true)) return bad(what, "partition");
  if (!get_int(j, "start", &r.start, false)) return bad(what, "start");
  if (!get_int(j, "end", &r.end, false)) return bad(what, "end");
  if (!get_str(j, "state", &r.state, false)) return bad(what, "state");
  if (!get_int(j, "confirm_by", &r.confirm_by, true)) return bad(what, "confirm_by");
  if (!get_str(j, "reason", &r.reason, true)) return bad(what, "reason");
  if (!get_int(j, "created", &r.created, true)) return bad(what, "created");
  if (!get_str(j, "owner", &r.owner, true)) return bad(what, "owner");
  const json_t* jobs = json_object_get(j, "jobs");
  if (jobs != nullptr && !json_is_null(jobs)) {
    if (!json_is_array(jobs)) return bad(what, "jobs");
    std::size_t i;
    const json_t* v;
    json_array_foreach(jobs, i, v) {
      std::int64_t id = 0;
      if (!get_int(v, "job_id", &id, false)) return bad(what, "jobs[].job_id");
      r.job_ids.push_back(id);
    }
  }
  return r;
}

Result<PartJob> part_job_from_json(const json_t* j) {
  const char* what = "part job";
  if (!json_is_object(j)) return make_error(Errc::kBadResponse, "part job: not an object");
  PartJob p;
  if (!get_int(j, "job_id", &p.job_id, false)) return bad(what, "job_id");
  if (!get_str(j, "state", &p.state, false)) return bad(what, "state");
  if (!get_str(j, "reason", &p.reason, true)) return bad(what, "reason");
  if (!get_int(j, "start_time", &p.start_time, true)) return bad(what, "start_time");
  if (!get_int(j, "end_time", &p.end_time, true)) return bad(what, "end_time");
  if (!get_str(j, "nodes", &p.nodes, true)) return bad(what, "nodes");
  if (!get_str(j, "reservation", &p.reservation, true)) return bad(what, "reservation");
  const json_t* ec = json_object_get(j, "exit_code");
  if (json_is_integer(ec)) p.exit_code = static_cast<int>(json_integer_value(ec));
  return p;
}

Result<EventBatch> events_from_json(const json_t* j) {
  const char* what = "events";
  if (!json_is_object(j)) return make_error(Errc::kBadResponse, "events: not an object");
  EventBatch b;
  if (!get_int(j, "next", &b.next, false)) return bad(what, "next");
  if (!get_int(j, "oldest", &b.oldest, false)) return bad(what, "oldest");
  if (!get_int(j, "latest", &b.latest, false)) return bad(what, "latest");
  const json_t* lost = json_object_get(j, "lost");
  if (!json_is_boolean(lost)) return bad(what, "lost");
  b.lost = json_is_true(lost);
  const json_t* evs = json_object_get(j, "events");
  if (!json_is_array(evs)) return bad(what, "events");
  std::size_t i;
  json_t* v;
  json_array_foreach(evs, i, v) {
    Event e;
    if (!get_int(v, "seq", &e.seq, false)) return bad(what, "events[].seq");
    if (!get_str(v, "type", &e.type, false)) return bad(what, "events[].type");
    if (!get_int(v, "time", &e.time, false)) return bad(what, "events[].time");
    e.raw = json_ref(v);
    b.events.push_back(std::move(e));
  }
  return b;
}

Result<JsonPtr> PluginClient::call(std::string_view method, std::string_view target,
                                   const json_t* body, std::string_view idempotency_key,
                                   long timeout_ms, const std::atomic<bool>* cancel) const {
  std::string text;
  if (body != nullptr) {
    text = json_text(body);
    if (text.empty()) return make_error(Errc::kInternal, "cannot encode the request body");
  }
  std::vector<Header> headers;
  if (!idempotency_key.empty()) headers.push_back({"Idempotency-Key", std::string(idempotency_key)});
  auto r = client_.request(method, target, text, headers, timeout_ms, cancel);
  if (!r.ok()) return r.error();
  Response& resp = r.value();
  const std::string where = std::string(method) + " " + std::string(target);
  if (resp.status < 200 || resp.status > 299) {
    std::string code, message;
    const json_t* err = json_object_get(resp.json.get(), "error");
    if (json_is_object(err)) {
      get_str(err, "code", &code, true);
      get_str(err, "message", &message, true);
    }
    return make_error(Errc::kHttp,
                      where + ": HTTP " + std::to_string(resp.status) +
                          (code.empty() ? std::string() : " " + code) +
                          (message.empty() ? std::string() : ": " + message),
                      resp.status, code);
  }
  if (!resp.json) {
    return make_error(Errc::kBadResponse, where + ": answer is not JSON", resp.status);
  }
  return std::move(resp.json);
}

Result<JsonPtr> PluginClient::profile(std::int64_t horizon, std::string_view partition,
                                      long timeout_ms) const {
  std::string t = "/v1/profile?horizon=" + std::to_string(horizon);
  if (!partition.empty()) t += "&partition=" + uri_escape(partition);
  return call("GET", t, nullptr, {}, timeout_ms);
}

Result<JsonPtr> PluginClient::probe(const json_t* request, long timeout_ms) const {
  if (request == nullptr) return make_error(Errc::kInvalidArgument, "probe: no request");
  return call("POST", "/v1/probe", request, {}, timeout_ms);
}

namespace {
template <typename T, typename F>
Result<T> parse_with(Result<JsonPtr> r, F parse) {
  if (!r.ok()) return r.error();
  return parse(r.value().get());
}
}  // namespace

Result<Reservation> PluginClient::create_reservation(const ReservationRequest& q,
                                                     std::string_view key,
                                                     const std::atomic<bool>* cancel) const {
  JsonPtr b(json_object());
  if (!b) return make_error(Errc::kInternal, "out of memory");
  json_object_set_new(b.get(), "user", json_string(q.user.c_str()));
  json_object_set_new(b.get(), "nodes", json_integer(q.nodes));
  json_object_set_new(b.get(), "start", json_integer(q.start));
  json_object_set_new(b.get(), "duration", json_integer(q.duration));
  if (!q.partition.empty()) json_object_set_new(b.get(), "partition", json_string(q.partition.c_str()));
  if (q.confirm_within > 0) json_object_set_new(b.get(), "confirm_within", json_integer(q.confirm_within));
  if (!q.owner.empty()) json_object_set_new(b.get(), "owner", json_string(q.owner.c_str()));
  return parse_with<Reservation>(call("POST", "/v1/reservations", b.get(), key, 0, cancel),
                                 reservation_from_json);
}

Result<Reservation> PluginClient::get_reservation(std::int64_t id) const {
  return parse_with<Reservation>(call("GET", "/v1/reservations/" + std::to_string(id), nullptr, {}),
                                 reservation_from_json);
}

Result<std::vector<Reservation>> PluginClient::list_reservations() const {
  auto r = call("GET", "/v1/reservations", nullptr, {});
  if (!r.ok()) return r.error();
  const json_t* arr = json_object_get(r.value().get(), "reservations");
  if (!json_is_array(arr)) return bad("reservations", "reservations");
  std::vector<Reservation> out;
  std::size_t i;
  const json_t* v;
  json_array_foreach(arr, i, v) {
    auto one = reservation_from_json(v);
    if (!one.ok()) return one.error();
    out.push_back(std::move(one).value());
  }
  return out;
}

Result<Reservation> PluginClient::confirm_reservation(std::int64_t id, std::string_view key) const {
  return parse_with<Reservation>(
      call("POST", "/v1/reservations/" + std::to_string(id) + "/confirm", nullptr, key),
      reservation_from_json);
}

Result<Reservation> PluginClient::modify_reservation(std::int64_t id,
                                                     std::optional<std::int64_t> start,
                                                     std::int64_t nodes, std::int64_t duration,
                                                     std::string_view key) const {
  JsonPtr b(json_object());
  if (!b) return make_error(Errc::kInternal, "out of memory");
  if (start.has_value()) json_object_set_new(b.get(), "start", json_integer(*start));
  if (nodes > 0) json_object_set_new(b.get(), "nodes", json_integer(nodes));
  if (duration > 0) json_object_set_new(b.get(), "duration", json_integer(duration));
  return parse_with<Reservation>(
      call("PATCH", "/v1/reservations/" + std::to_string(id), b.get(), key),
      reservation_from_json);
}

Result<Reservation> PluginClient::delete_reservation(std::int64_t id, std::string_view key) const {
  return parse_with<Reservation>(
      call("DELETE", "/v1/reservations/" + std::to_string(id), nullptr, key),
      reservation_from_json);
}

Result<std::int64_t> PluginClient::submit_job(std::int64_t rid, const PartJobRequest& q,
                                              std::string_view key) const {
  JsonPtr b(json_object());
  if (!b) return make_error(Errc::kInternal, "out of memory");
  json_t* o = b.get();
  json_object_set_new(o, "script", json_string(q.script.c_str()));
  if (!q.argv.empty()) {
    json_t* a = json_array();
    for (const auto& s : q.argv) json_array_append_new(a, json_string(s.c_str()));
    json_object_set_new(o, "argv", a);
  }
  if (!q.environment.empty()) {
    json_t* e = json_object();
    for (const auto& kv : q.environment) json_object_set_new(e, kv.first.c_str(), json_string(kv.second.c_str()));
    json_object_set_new(o, "environment", e);
  }
  auto set_str = [o](const char* k, const std::string& v) {
    if (!v.empty()) json_object_set_new(o, k, json_string(v.c_str()));
  };
  set_str("work_dir", q.work_dir);
  set_str("std_out", q.std_out);
  set_str("std_err", q.std_err);
  set_str("name", q.name);
  set_str("coallocation", q.coallocation);
  set_str("account", q.account);
  set_str("qos", q.qos);
  if (q.time_limit > 0) json_object_set_new(o, "time_limit", json_integer(q.time_limit));
  if (q.nodes > 0) json_object_set_new(o, "nodes", json_integer(q.nodes));
  json_object_set_new(o, "part_index", json_integer(q.part_index));
  if (!q.parts.empty()) {
    json_t* a = json_array();
    for (const auto& p : q.parts) {
      json_array_append_new(a, json_pack("{s:s, s:I}", "cluster", p.first.c_str(), "nodes",
                                         static_cast<json_int_t>(p.second)));
    }
    json_object_set_new(o, "parts", a);
  }
  if (q.start > 0) json_object_set_new(o, "start", json_integer(q.start));
  if (q.hold) json_object_set_new(o, "hold", json_true());
  if (!q.rendezvous_url.empty() && !q.rendezvous_token.empty()) {
    json_object_set_new(o, "rendezvous", json_pack("{s:s, s:s}", "url", q.rendezvous_url.c_str(),
                                                   "token", q.rendezvous_token.c_str()));
  }
  auto r = call("POST", "/v1/reservations/" + std::to_string(rid) + "/jobs", o, key);
  if (!r.ok()) return r.error();
  std::int64_t id = 0;
  if (!get_int(r.value().get(), "job_id", &id, false)) return bad("part job", "job_id");
  return id;
}

Result<PartJob> PluginClient::get_job(std::int64_t rid, std::int64_t job_id) const {
  return parse_with<PartJob>(
      call("GET", "/v1/reservations/" + std::to_string(rid) + "/jobs/" + std::to_string(job_id),
           nullptr, {}),
      part_job_from_json);
}

Result<PartJob> PluginClient::release_job(std::int64_t rid, std::int64_t job_id) const {
  return parse_with<PartJob>(call("POST",
                                  "/v1/reservations/" + std::to_string(rid) + "/jobs/" +
                                      std::to_string(job_id) + "/release",
                                  nullptr, {}),
                             part_job_from_json);
}

// The start gate (doc/reservations.md): release under a start lease that
// ends at lease_end by the cluster's clock, or confirm the start.
Result<PartJob> PluginClient::open_gate(std::int64_t rid, std::int64_t job_id,
                                        std::int64_t lease_end) const {
  JsonPtr b(json_object());
  if (!b) return make_error(Errc::kInternal, "out of memory");
  json_object_set_new(b.get(), "lease_end", json_integer(lease_end));
  return parse_with<PartJob>(call("POST",
                                  "/v1/reservations/" + std::to_string(rid) + "/jobs/" +
                                      std::to_string(job_id) + "/release",
                                  b.get(), {}),
                             part_job_from_json);
}

Result<PartJob> PluginClient::confirm_start(std::int64_t rid, std::int64_t job_id) const {
  JsonPtr b(json_object());
  if (!b) return make_error(Errc::kInternal, "out of memory");
  json_object_set_new(b.get(), "confirm", json_true());
  return parse_with<PartJob>(call("POST",
                                  "/v1/reservations/" + std::to_string(rid) + "/jobs/" +
                                      std::to_string(job_id) + "/release",
                                  b.get(), {}),
                             part_job_from_json);
}

Result<EventBatch> PluginClient::events(std::int64_t after, int wait_seconds, int max,
                                        const std::atomic<bool>* cancel) const {
  if (wait_seconds < 0 || wait_seconds > 60 || max < 1 || max > 1000 || after < 0) {
    return make_error(Errc::kInvalidArgument, "events: after >= 0, wait 0..60, max 1..1000");
  }
  const std::string t = "/v1/events?after=" + std::to_string(after) +
                        "&wait=" + std::to_string(wait_seconds) + "&max=" + std::to_string(max);
  const long timeout = client_.config().total_timeout_ms + 1000L * wait_seconds;
  return parse_with<EventBatch>(call("GET", t, nullptr, {}, timeout, cancel), events_from_json);
}

}  // namespace flexco::http
