// SPDX-License-Identifier: GPL-2.0-or-later
// A small HTTP+JSON client for FlexCo's MUNGE-signed APIs (libcurl, jansson).
//
// base_url is http://host[:port] or https://host[:port].  Over https the
// server's certificate is always verified, chain and host name, against
// ClientConfig::ca_file (or the system's CA certificates); there is no way
// to turn that off.  libcurl verifies it as it makes the TLS connection,
// before any byte of the request is sent, so a request (and its MUNGE credential)
// never reaches a server whose certificate fails: the call ends with
// kTls.  doc/admin.md, "Network and TLS", has the tested setup (a TLS
// proxy in front of the plugin and flexcod).
//
// Every request is signed exactly as doc/auth.md specifies (core/auth.hpp's
// Signer: the audience (the service behind base_url: a cluster's
// ClusterName or "flexcod"), method, request-target as sent, SHA-256 of the
// body, timestamp, nonce) and carries "Authorization: MUNGE <credential>".  Every request has
// a connect timeout and a total timeout, runs with CURLOPT_NOSIGNAL (safe in
// threaded daemons) and reads at most max_response_bytes of answer.
//
// Any HTTP answer is a Response (status, body, parsed JSON when the body is
// JSON).  Only failures to get an answer are Errors: the request could not be
// signed, the connection failed, the time ran out, the answer was too big or
// cut, or the caller cancelled it.
//
// PluginClient (below) is the typed client of the slurmctld/flexco plugin
// (doc/openapi-plugin.yaml): there a non-2xx answer becomes an Error of code
// kHttp carrying the HTTP status and the server's error code and message.
//
// Threads: Client and PluginClient are immutable after create(); request()
// may be called from several threads at once (each call uses its own curl
// easy handle).  curl_global_init must have been called once by the program
// before any thread uses them (flexcod's main does; Client::create also does
// it, which is only thread-safe with libcurl >= 7.84).  The library never
// logs and never exits.

#ifndef FLEXCO_CORE_HTTP_CLIENT_HPP
#define FLEXCO_CORE_HTTP_CLIENT_HPP

#include <jansson.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/auth.hpp"
#include "core/result.hpp"

namespace flexco::http {

// Owning jansson reference.
struct JsonDeleter {
  void operator()(json_t* j) const noexcept { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonDeleter>;

// A new reference to `j` (json_incref), null stays null.
JsonPtr json_ref(json_t* j) noexcept;

// Compact JSON text of `j` (sorted keys off, members in insertion order);
// "" if j is null or jansson runs out of memory.
std::string json_text(const json_t* j);

enum class Errc {
  kInvalidArgument = 1,  // "invalid_argument": bad URL, method, target, config
  kSignFailed,           // "sign_failed": munged refused or is unreachable
  kConnect,              // "connect_failed": could not connect (refused, no route, DNS)
  kTimeout,              // "timeout": connect or total timeout elapsed
  kTransport,            // "transport": connection broken, protocol error
  kTooLarge,             // "response_too_large": answer above max_response_bytes
  kCancelled,            // "cancelled": the caller's cancel flag was set
  kBadResponse,          // "bad_response": 2xx answer that is not the expected JSON
  kHttp,                 // "http_error": the server answered with an error status
  kInternal,             // "internal_error": out of memory, curl init failed
  kTls,                  // "tls_failed": the TLS connection failed, above all a
                         // server certificate that does not verify; nothing was sent
};

// The stable code: "connect_failed", "timeout", ...
const char* errc_name(Errc code) noexcept;

struct Error {
  Errc code = Errc::kInternal;
  int http_status = 0;     // kHttp (and kBadResponse): the answer's status
  std::string api_code;    // kHttp: the server's error.code, "" if none
  std::string message;     // "<code>: <precise reason>"
};

template <typename T>
using Result = BasicResult<T, Error>;
using Status = BasicStatus<Error>;

struct Response {
  int status = 0;
  std::string body;  // exactly as received
  JsonPtr json;      // parsed body; null when the body is empty or not JSON
  std::string session_grant;  // its FlexCo-Session header, "" if none
};

struct ClientConfig {
  std::string base_url;                // "http://127.0.0.1:26001", no trailing path,
                                       // or "https://flexco.example.org:26443"
  // The same service at other addresses (a cluster's backup controllers),
  // same scheme: a request that reaches none of base_url and these, or
  // that one answers 503 not_in_charge, goes to the next; the one that
  // answered is asked first from then on (Client::request).
  std::vector<std::string> other_urls;
  // https only: the PEM file of the CA certificates that the server's
  // certificate must chain to; "" = the system's (/etc/ssl/certs).  Read by
  // libcurl at every connection, so a renewed file is used at once.
  std::string ca_file;
  // Whom every request is signed for (doc/auth.md, "Audience"): the
  // ClusterName of the cluster whose plugin listens at base_url, or
  // auth::kFlexcodAudience.  Required when the client signs.
  std::string audience;
  long connect_timeout_ms = 2000;      // 1 .. 600000
  long total_timeout_ms = 10000;       // 1 .. 3600000, whole request
  std::size_t max_response_bytes = std::size_t{16} << 20;  // 1 .. 1 GiB
  // At most this many requests of this client (and its copies) in flight
  // at once, 0 = no bound: a server that counts connections per address
  // (the plugin's MaxConnectionsPerAddress) is not asked for more.  A
  // request waits for a place at most its total timeout (then kTimeout,
  // nothing sent), and before it is signed.
  std::size_t max_in_flight = 0;
  // Session authentication (core/session.hpp, doc/auth.md "Sessions"):
  // the first request offers a session in its MUNGE payload; once the
  // server granted one, requests carry its MAC instead of a MUNGE
  // credential until it nears its end.  A 401 refusing the session
  // (unknown_session, session_expired, bad_mac, replayed and the time
  // checks) drops it and sends the request once more with MUNGE.  A
  // server that grants none is asked with MUNGE as before; one that
  // refuses the offering payload (401 malformed_payload: older than
  // flexco-auth-v4) gets the request again as flexco-auth-v3, and no
  // offer for 10 minutes.
  bool session = false;
  // Told of every request that was sent: its duration, whether an answer
  // came (and its status), and whether the call set its own timeout (a
  // long poll, which waits on purpose).  For metrics; must not throw.
  std::function<void(double seconds, bool answered, int status, bool long_poll)> observer;
  // Told, for every answer that has a Date header, the server's clock
  // minus ours in seconds (its Date header, which has
  // whole seconds, taken as the middle of its second, against the middle
  // of the call by our wall clock) and the call's round trip; for the
  // clusters' clock offsets (doc/flexcod.md, "Clocks").  Must not throw.
  std::function<void(double offset, double round_trip)> clock_sample;
  // flexcod's lease (doc/flexcod.md, "High availability"): asked before
  // every request; true with the Flexco-Epoch header's value
  // (core/epoch.hpp) to send, false when this flexcod does not act: then
  // a request other than GET is not sent (kInvalidArgument, "not in
  // charge") and a GET goes without the header.  None: no header.
  std::function<bool(std::string* value)> fence;
};

struct Header {
  std::string name;
  std::string value;
};

class Client {
 public:
  // kInvalidArgument if base_url is not http://host[:port] or
  // https://host[:port] (no path, query or fragment), ca_file is given for
  // an https URL and is not a readable file, a bound is out of range, or a signer is given and the
  // audience is not one (auth::validate_audience).  With signer == nullopt
  // the requests go unsigned (only for tests of servers' 401 answers).
  static Result<Client> create(ClientConfig config,
                               std::optional<auth::Signer> signer) noexcept;

  // One request.  `target` is the request-target (path and query) exactly as
  // it is sent and signed; it must start with '/' and be visible ASCII.
  // `body` is sent as is with Content-Type: application/json when not empty.
  // `total_timeout_ms` > 0 overrides the configured total timeout for this
  // call (long polls).  When `cancel` is set (checked about every 100 ms and
  // before connecting), the transfer stops with kCancelled.
  Result<Response> request(std::string_view method, std::string_view target,
                           std::string_view body = {},
                           const std::vector<Header>& headers = {},
                           long total_timeout_ms = 0,
                           const std::atomic<bool>* cancel = nullptr) const noexcept;

  const ClientConfig& config() const noexcept { return config_; }

  // Connections are kept alive between requests (HTTP/1.1): a finished
  // request's curl handle, with its connection, goes back to a pool shared
  // by the copies of this client, and the next request takes it.  At most
  // kIdleHandles wait there; a connection idle for kMaxIdleSeconds is not
  // reused (the plugin closes idle ones after ConnectionTimeout, 10 s by
  // default).  A server that closed one meanwhile costs nothing: libcurl
  // sees it closed, or resends on a fresh connection when nothing came
  // back.  So the pool never holds more connections than were in use at
  // once.
  static constexpr std::size_t kIdleHandles = 8;
  static constexpr long kMaxIdleSeconds = 5;

  struct Pool;  // http_client.cpp
  static constexpr std::size_t kMaxUrls = 8;  // base_url and other_urls

 private:
  // request() once; *again (if not null) set when the server refused the
  // session the request was sent under (it is to be sent again).
  Result<Response> request_once(std::string_view method, std::string_view target,
                                std::string_view body, const std::vector<Header>& headers,
                                long total_timeout_ms, const std::atomic<bool>* cancel,
                                bool* again) const noexcept;
  // One attempt at one of the URLs, with the headers already built.
  // (c is a CURL*, headers a curl_slist*: libcurl stays out of this header.)
  Result<Response> perform(void* c, const std::string& base, std::string_view method,
                           std::string_view target, std::string_view body,
                           void* headers, long total_timeout_ms,
                           const std::atomic<bool>* cancel) const noexcept;
  Client(ClientConfig config, std::optional<auth::Signer> signer, std::shared_ptr<Pool> pool)
      : config_(std::move(config)), signer_(std::move(signer)), pool_(std::move(pool)) {}
  ClientConfig config_;
  std::optional<auth::Signer> signer_;
  std::shared_ptr<Pool> pool_;
};

// ---------------------------------------------------------------------------
// The slurmctld/flexco plugin's API (doc/openapi-plugin.yaml)

struct Reservation {
  std::int64_t id = 0;
  std::string name;        // "flexco_<id>"
  std::string user;
  std::int64_t nodes = 0;
  std::string node_list;   // "" when null
  std::string partition;   // "" when null
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::string state;       // creating, tentative, confirmed, ended, deleted, expired
  std::int64_t confirm_by = 0;  // 0 when null
  std::string reason;
  std::int64_t created = 0;     // when the plugin made the record (0 if absent)
  std::string owner;            // the creator's tag, "" when null or absent
  std::vector<std::int64_t> job_ids;  // part jobs submitted into it
};

struct ReservationRequest {
  std::string user;
  std::int64_t nodes = 0;
  std::int64_t start = 0;
  std::int64_t duration = 0;
  std::string partition;        // "" = default partition
  std::int64_t confirm_within = 0;  // 0 = plugin default (120 s)
  std::string owner;                // "" = none; 1-64 of A-Z a-z 0-9 . _ -
};

struct PartJobRequest {
  std::string script;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> environment;
  std::string work_dir, std_out, std_err, name, coallocation;
  std::string account, qos;     // "" = not sent (the user's default)
  std::int64_t time_limit = 0;  // 0 = all that is left of the reservation
  std::int64_t nodes = 0;       // 0 = the reservation's count
  int part_index = 0;
  std::vector<std::pair<std::string, std::int64_t>> parts;  // cluster, nodes
  std::int64_t start = 0;       // common start, 0 = not sent
  bool hold = false;            // submitted held until release_job
  // flexcod's start-up rendezvous for this part ("" = not sent): the URL
  // its compute nodes reach flexcod at and the part's capability token
  std::string rendezvous_url, rendezvous_token;
};

struct PartJob {
  std::int64_t job_id = 0;
  std::string state;       // Slurm's name, UNKNOWN once purged
  std::string reason;
  std::int64_t start_time = 0;  // 0 when null
  std::int64_t end_time = 0;
  std::string nodes;
  std::string reservation;
  int exit_code = -1;           // -1 when null
};

struct Event {
  std::int64_t seq = 0;
  std::string type;
  std::int64_t time = 0;
  JsonPtr raw;  // the whole event object
};

struct EventBatch {
  std::vector<Event> events;
  std::int64_t next = 0;
  std::int64_t oldest = 0;
  std::int64_t latest = 0;
  bool lost = false;
};

// Every call: non-2xx -> Error{kHttp, status, api_code}; a 2xx answer that is
// not the documented JSON -> kBadResponse.  Mutations take an idempotency
// key ("" = none), sent as Idempotency-Key: a retry with the same key gets
// the first answer and never acts twice.
class PluginClient {
 public:
  explicit PluginClient(Client client) : client_(std::move(client)) {}

  // GET /v1/profile?horizon=H[&partition=P]; the raw profile document
  // (core/wire_profile.hpp's availability_from_json reads it).
  // `timeout_ms` > 0: this call's total timeout instead of the client's.
  Result<JsonPtr> profile(std::int64_t horizon, std::string_view partition = {},
                          long timeout_ms = 0) const;
  // POST /v1/probe with `request` (a ProbeRequest document); the answer.
  Result<JsonPtr> probe(const json_t* request, long timeout_ms = 0) const;

  Result<Reservation> create_reservation(const ReservationRequest& r,
                                         std::string_view idempotency_key,
                                         const std::atomic<bool>* cancel = nullptr) const;
  Result<Reservation> get_reservation(std::int64_t id) const;
  Result<std::vector<Reservation>> list_reservations() const;
  Result<Reservation> confirm_reservation(std::int64_t id,
                                          std::string_view idempotency_key) const;
  // PATCH: fields <= 0 are not sent (start is sent when `start` has a value).
  Result<Reservation> modify_reservation(std::int64_t id, std::optional<std::int64_t> start,
                                         std::int64_t nodes, std::int64_t duration,
                                         std::string_view idempotency_key) const;
  Result<Reservation> delete_reservation(std::int64_t id,
                                         std::string_view idempotency_key) const;
  // POST /v1/reservations/{id}/jobs -> the job id.
  Result<std::int64_t> submit_job(std::int64_t reservation_id, const PartJobRequest& r,
                                  std::string_view idempotency_key) const;
  Result<PartJob> get_job(std::int64_t reservation_id, std::int64_t job_id) const;
  // POST /v1/reservations/{id}/jobs/{job}/release: a job submitted held
  // may start (idempotent: no key needed).  The job as it is then.
  Result<PartJob> release_job(std::int64_t reservation_id, std::int64_t job_id) const;
  // The start gate: release under a start lease ending at lease_end (the
  // cluster's clock), and confirm the start (the lease no longer applies).
  Result<PartJob> open_gate(std::int64_t reservation_id, std::int64_t job_id,
                            std::int64_t lease_end) const;
  Result<PartJob> confirm_start(std::int64_t reservation_id, std::int64_t job_id) const;
  // GET /v1/events?after=A&wait=W&max=M (W <= 60; the request's timeout is
  // extended by W seconds).
  Result<EventBatch> events(std::int64_t after, int wait_seconds, int max = 100,
                            const std::atomic<bool>* cancel = nullptr) const;

  const Client& client() const noexcept { return client_; }

 private:
  Result<JsonPtr> call(std::string_view method, std::string_view target,
                       const json_t* body, std::string_view idempotency_key,
                       long timeout_ms = 0, const std::atomic<bool>* cancel = nullptr) const;
  Client client_;
};

// Parsers of the plugin's records (exposed for tests).
Result<Reservation> reservation_from_json(const json_t* j);
Result<PartJob> part_job_from_json(const json_t* j);
Result<EventBatch> events_from_json(const json_t* j);

}  // namespace flexco::http

#endif  // FLEXCO_CORE_HTTP_CLIENT_HPP
