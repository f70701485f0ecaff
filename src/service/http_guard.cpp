// SPDX-License-Identifier: GPL-2.0-or-later
// http_guard.cpp - see http_guard.hpp.

#include "service/http_guard.hpp"

#include <pthread.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace flexco::service {

struct HttpGuard::Conn {
  int fd = -1;
  Phase phase = Phase::kHeaders;
  std::uint64_t since = 0;  // when the phase began, usec
  bool requested = false;   // the request line is in
  bool cut = false;         // socket shut down
  Conn* prev = nullptr;
  Conn* next = nullptr;
};

namespace {

std::uint64_t monotonic_usec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

constexpr std::uint64_t kHourUsec = 3600ull * 1000000u;

}  // namespace

std::string cut_message(const HttpLimits& l, CutReason why) {
  char buf[256];
  if (why == CutReason::kEvicted) {
    std::snprintf(buf, sizeof buf,
                  "{\"error\":{\"code\":\"request_timeout\",\"message\":\"request headers not "
                  "complete within %u s while every connection (MaxConnections=%u) was taken\"}}",
                  static_cast<unsigned>(kEvictAfterUsec / 1000000), l.max_connections);
  } else {
    const bool h = why == CutReason::kHeaders;
    std::snprintf(buf, sizeof buf,
                  "{\"error\":{\"code\":\"request_timeout\",\"message\":\"request %s not "
                  "complete within %s=%u s\"}}",
                  h ? "headers" : "body", h ? "HeaderTimeout" : "BodyTimeout",
                  h ? l.header_timeout : l.body_timeout);
  }
  return buf;
}

HttpGuard::HttpGuard(const HttpLimits& limits, Cutter cutter, Clock clock, Logger log)
    : limits_(limits),
      cutter_(std::move(cutter)),
      clock_(clock ? std::move(clock) : Clock(monotonic_usec)),
      log_(std::move(log)) {}

HttpGuard::~HttpGuard() {
  stop();
  Conn* c = conns_;
  while (c != nullptr) {
    Conn* n = c->next;
    delete c;
    c = n;
  }
}

std::uint64_t HttpGuard::deadline(const Conn& c) const {
  const std::uint32_t secs =
      c.phase == Phase::kHeaders ? limits_.header_timeout : limits_.body_timeout;
  return c.since + static_cast<std::uint64_t>(secs) * 1000000u;
}

// mutex_ held
void HttpGuard::wake_if_before(std::uint64_t when) {
  if (when < next_) cond_.notify_one();
}

HttpGuard::Conn* HttpGuard::open(int fd) {
  Conn* c = new (std::nothrow) Conn;
  if (c == nullptr) return nullptr;
  c->fd = fd;
  c->since = clock_();
  std::lock_guard<std::mutex> lock(mutex_);
  c->next = conns_;
  if (conns_ != nullptr) conns_->prev = c;
  conns_ = c;
  stats_.open++;
  stats_.total++;
  if (fd >= 0) {
    wake_if_before(deadline(*c));
    if (stats_.open >= limits_.max_connections) wake_if_before(c->since + kEvictAfterUsec);
  }
  return c;
}

void HttpGuard::close(Conn* c) {
  if (c == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (c->prev != nullptr) {
      c->prev->next = c->next;
    } else {
      conns_ = c->next;
    }
    if (c->next != nullptr) c->next->prev = c->prev;
    stats_.open--;
  }
  delete c;
}

void HttpGuard::requested(Conn* c) {
  if (c == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  c->requested = true;
}

bool HttpGuard::phase(Conn* c, Phase ph) {
  if (c == nullptr) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  if (c->cut) return false;
  if (c->phase != ph) {
    c->phase = ph;
    c->since = clock_();
    if (ph == Phase::kHeaders) c->requested = false;  // kept alive: a new request
    if (ph != Phase::kServing && c->fd >= 0) wake_if_before(deadline(*c));
  }
  return true;
}

// mutex_ held.  No answer to a connection that has not sent a request
// line: a kept-alive connection that stays idle is closed quietly, as HTTP
// clients expect, and one that never sent a request would not read it.
void HttpGuard::cut(Conn& c, CutReason why) {
  const bool answer = c.phase != Phase::kHeaders || c.requested;
  cutter_(c.fd, answer, cut_message(limits_, why));
  c.cut = true;
  char line[200];
  switch (why) {
    case CutReason::kEvicted:
      stats_.evicted++;
      std::snprintf(line, sizeof line,
                    "connection closed%s to make room: headers not complete within %u s and "
                    "all %u connections taken",
                    answer ? " with 408" : "", static_cast<unsigned>(kEvictAfterUsec / 1000000),
                    limits_.max_connections);
      break;
    case CutReason::kHeaders:
      stats_.cut_headers++;
      std::snprintf(line, sizeof line, "connection closed%s: headers not complete within %u s",
                    answer ? " with 408" : "", limits_.header_timeout);
      break;
    case CutReason::kBody:
      stats_.cut_body++;
      std::snprintf(line, sizeof line, "connection closed with 408: body not complete within %u s",
                    limits_.body_timeout);
      break;
  }
  if (log_) log_(line);
}

// mutex_ held.  When every slot is taken, libmicrohttpd stops accepting
// and the next client waits in the kernel's queue, maybe HeaderTimeout
// long.  So keep a slot free: a client that means to send a request sends
// its headers at once; one that holds a connection without them is what
// fills the table.  Returns when to look again (UINT64_MAX: not before
// the next connection arrives).
std::uint64_t HttpGuard::make_room(std::uint64_t now) {
  Conn* oldest = nullptr;
  std::uint32_t live = 0;
  for (Conn* c = conns_; c != nullptr; c = c->next) {
    if (c->cut) continue;
    live++;
    if (c->fd < 0 || c->phase != Phase::kHeaders) continue;
    if (oldest == nullptr || c->since < oldest->since) oldest = c;
  }
  if (live < limits_.max_connections || oldest == nullptr) return UINT64_MAX;
  if (oldest->since + kEvictAfterUsec > now) return oldest->since + kEvictAfterUsec;
  cut(*oldest, CutReason::kEvicted);
  return UINT64_MAX;
}

std::uint64_t HttpGuard::sweep(std::uint64_t now) {
  std::lock_guard<std::mutex> lock(mutex_);
  return sweep_locked(now);
}

// mutex_ held
std::uint64_t HttpGuard::sweep_locked(std::uint64_t now) {
  std::uint64_t next = now + kHourUsec;
  for (Conn* c = conns_; c != nullptr; c = c->next) {
    if (c->cut || c->phase == Phase::kServing || c->fd < 0) continue;
    const std::uint64_t dl = deadline(*c);
    if (now >= dl) {
      cut(*c, c->phase == Phase::kHeaders ? CutReason::kHeaders : CutReason::kBody);
    } else if (dl < next) {
      next = dl;
    }
  }
  if (stats_.open >= limits_.max_connections) {
    const std::uint64_t room = make_room(now);
    if (room < next) next = room;
  }
  return next;
}

bool HttpGuard::take(std::size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.memory_used + n > limits_.max_request_memory) {
    stats_.memory_refused++;
    return false;
  }
  stats_.memory_used += n;
  if (stats_.memory_used > stats_.memory_peak) stats_.memory_peak = stats_.memory_used;
  return true;
}

void HttpGuard::give(std::size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.memory_used -= n;
}

GuardStats HttpGuard::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void HttpGuard::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const std::uint64_t now = clock_();
    const std::uint64_t next = sweep_locked(now);
    next_ = next;
    cond_.wait_for(lock, std::chrono::microseconds(next > now ? next - now : 0));
  }
  next_ = 0;
}

bool HttpGuard::start(const char* name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reaper_.joinable()) return true;
  stopping_ = false;
  next_ = 0;  // wake at once until it has planned
  try {
    reaper_ = std::thread([this] { run(); });
  } catch (...) {
    return false;
  }
  if (name != nullptr) pthread_setname_np(reaper_.native_handle(), name);
  return true;
}

void HttpGuard::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!reaper_.joinable()) return;
    stopping_ = true;
    cond_.notify_one();
  }
  reaper_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  reaper_ = std::thread();
}

// ---------------------------------------------------------------------------

bool BodyBuffer::reserve(std::size_t cap) {
  if (cap <= cap_) return true;
  if (!guard_.take(cap - cap_)) return false;
  char* nb = static_cast<char*>(std::realloc(data_, cap));
  if (nb == nullptr) {
    guard_.give(cap - cap_);
    verdict_ = Verdict::kFailed;
    return false;
  }
  data_ = nb;
  cap_ = cap;
  return true;
}

void BodyBuffer::drop() {
  if (cap_ != 0) guard_.give(cap_);
  std::free(data_);
  data_ = nullptr;
  len_ = cap_ = 0;
}

BodyBuffer::Verdict BodyBuffer::begin(std::int64_t content_length) {
  const std::size_t max = guard_.limits().max_request_size;
  if (content_length > static_cast<std::int64_t>(max)) {
    verdict_ = Verdict::kTooLarge;
  } else if (content_length > 0) {
    // the whole declared body from the budget now, before a byte is read
    if (!reserve(static_cast<std::size_t>(content_length) + 1) && verdict_ == Verdict::kOk) {
      verdict_ = Verdict::kNoMemory;
    }
  }
  return verdict_;
}

BodyBuffer::Verdict BodyBuffer::add(const char* data, std::size_t n) {
  if (verdict_ != Verdict::kOk || n == 0) return verdict_;
  const std::size_t max = guard_.limits().max_request_size;
  if (len_ + n > max) {
    drop();
    verdict_ = Verdict::kTooLarge;
    return verdict_;
  }
  if (len_ + n + 1 > cap_) {
    // no or a too short Content-Length (chunked)
    std::size_t cap = (len_ + n + 1) * 2;
    if (cap > max + 1) cap = max + 1;
    if (!reserve(cap)) {
      drop();
      if (verdict_ == Verdict::kOk) verdict_ = Verdict::kNoMemory;
      return verdict_;
    }
  }
  std::memcpy(data_ + len_, data, n);
  len_ += n;
  data_[len_] = '\0';
  return verdict_;
}

}  // namespace flexco::service
