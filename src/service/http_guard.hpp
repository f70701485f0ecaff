// SPDX-License-Identifier: GPL-2.0-or-later
// http_guard.hpp - the limits every FlexCo HTTP server keeps (the slurmctld
// plugin's and flexcod's): how long a client may take to send its request
// headers and its body, how many connections wait for their headers when
// every slot is taken, and how many bytes of request bodies are held in
// memory at once.  No Slurm headers, no libmicrohttpd: the caller reports
// what happens on its connections and the guard decides; a Cutter acts on
// the socket (answers 408 and shuts it down), so the decisions are tested
// against a fake clock and a fake socket (testsuite/unit/check_http_guard).
//
// Why: libmicrohttpd's connection timeout only closes a connection that is
// idle, so one that sends a byte every few seconds holds its slot forever.
// Every connection gets a record with the phase of its current request and
// when that phase began:
//   kHeaders  receiving headers, from the accept or the end of the previous
//             request on a kept-alive connection (HeaderTimeout);
//   kBody     receiving the body, from the first call of the handler
//             (BodyTimeout);
//   kServing  being served: no deadline (the handler runs, a long poll
//             waits, the answer goes out).
// A connection past its deadline is cut (408 if it sent a request line);
// when every MaxConnections slot is taken, the one that has waited longest
// for its headers, once it has waited kEvictAfterUsec, is cut to make room.
// Connections receiving a body or being served are never evicted.

#ifndef FLEXCO_SERVICE_HTTP_GUARD_HPP
#define FLEXCO_SERVICE_HTTP_GUARD_HPP

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace flexco::service {

struct HttpLimits {
  std::uint32_t max_connections = 64;          // MaxConnections
  std::uint32_t max_connections_per_address = 16;  // MaxConnectionsPerAddress
  std::uint32_t connection_timeout = 60;       // s idle (libmicrohttpd's own)
  std::uint32_t header_timeout = 10;           // s, HeaderTimeout
  std::uint32_t body_timeout = 30;             // s, BodyTimeout
  std::uint32_t max_request_size = 1u << 20;   // bytes of one body, MaxRequestSize
  std::uint64_t max_request_memory = 16u << 20;  // bytes of all bodies, MaxRequestMemory
};

// A connection without its headers this long may be closed to make room.
constexpr std::uint64_t kEvictAfterUsec = 1000000;

enum class Phase { kHeaders, kBody, kServing };

// Why a connection was cut, for the Cutter's answer and the log.
enum class CutReason { kHeaders, kBody, kEvicted };

struct GuardStats {
  std::uint64_t open = 0, total = 0, cut_headers = 0, cut_body = 0, evicted = 0;
  std::uint64_t memory_used = 0, memory_peak = 0, memory_refused = 0;
};

class HttpGuard {
 public:
  // Acts on a connection's socket: `answer` says whether to write a 408
  // (with `body`, a JSON error document) before shutting it down.  Called
  // with the guard's lock held: must not block and must not call back.
  using Cutter = std::function<void(int fd, bool answer, const std::string& body)>;
  // Monotonic microseconds.
  using Clock = std::function<std::uint64_t()>;
  // One line for the log (debug level).
  using Logger = std::function<void(const std::string&)>;

  struct Conn;

  HttpGuard(const HttpLimits& limits, Cutter cutter, Clock clock = {}, Logger log = {});
  ~HttpGuard();
  HttpGuard(const HttpGuard&) = delete;
  HttpGuard& operator=(const HttpGuard&) = delete;

  const HttpLimits& limits() const { return limits_; }

  // A connection was accepted on fd (-1 if unknown: it then has no deadline).
  // nullptr when out of memory: the caller shuts the socket down.
  Conn* open(int fd);
  // It was closed (the record is freed; conn may be nullptr).
  void close(Conn* conn);
  // Its request line arrived.
  void requested(Conn* conn);
  // Move it to phase ph; the phase's clock starts now unless it is already
  // in ph.  false if it was cut: the caller then closes it without answering.
  bool phase(Conn* conn, Phase ph);

  // Cut what is past its deadline, make room if every slot is taken;
  // returns when to look again (monotonic usec).  The reaper thread calls it.
  std::uint64_t sweep(std::uint64_t now);

  // MaxRequestMemory: take n bytes for a body buffer (false: over budget,
  // counted as refused) and give them back.
  bool take(std::size_t n);
  void give(std::size_t n);

  GuardStats stats() const;

  // The reaper thread (thread name `name`, at most 15 characters): wakes
  // at the earliest deadline.  start() is false if no thread could be made.
  bool start(const char* name);
  void stop();

 private:
  std::uint64_t deadline(const Conn& c) const;
  void cut(Conn& c, CutReason why);
  std::uint64_t make_room(std::uint64_t now);
  std::uint64_t sweep_locked(std::uint64_t now);
  void wake_if_before(std::uint64_t when);
  void run();

  const HttpLimits limits_;
  Cutter cutter_;
  Clock clock_;
  Logger log_;
  mutable std::mutex mutex_;
  std::condition_variable cond_;
  Conn* conns_ = nullptr;  // doubly linked
  GuardStats stats_;
  std::uint64_t next_ = 0;  // when the reaper wakes; 0 until it planned
  bool stopping_ = false;
  std::thread reaper_;
};

// The JSON error document of a 408 for a cut (as both servers answer it).
std::string cut_message(const HttpLimits& limits, CutReason why);

// A request body received into memory taken from a guard's budget: the
// declared Content-Length is taken before a byte is read; a body without
// one (chunked) grows, doubling, up to MaxRequestSize.
class BodyBuffer {
 public:
  enum class Verdict { kOk, kTooLarge, kNoMemory, kFailed };
  explicit BodyBuffer(HttpGuard& guard) : guard_(guard) {}
  ~BodyBuffer() { drop(); }
  BodyBuffer(const BodyBuffer&) = delete;
  BodyBuffer& operator=(const BodyBuffer&) = delete;

  // The headers are in: content_length is -1 if absent.
  Verdict begin(std::int64_t content_length);
  // More of the body (after kTooLarge or kNoMemory the rest is discarded
  // and the verdict stays).
  Verdict add(const char* data, std::size_t n);
  Verdict verdict() const { return verdict_; }
  const char* data() const { return data_ != nullptr ? data_ : ""; }
  std::size_t size() const { return len_; }
  void drop();

 private:
  bool reserve(std::size_t cap);
  HttpGuard& guard_;
  char* data_ = nullptr;
  std::size_t len_ = 0, cap_ = 0;
  Verdict verdict_ = Verdict::kOk;
};

}  // namespace flexco::service

#endif
