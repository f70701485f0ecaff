// SPDX-License-Identifier: GPL-2.0-or-later
// event_ring.cpp - see event_ring.hpp.

#include "service/event_ring.hpp"

#include <cinttypes>
#include <cstdio>

#include "core/capi_decode.h"

namespace flexco::service {

EventRing::EventRing(std::size_t capacity, FreeTag free_tag)
    : free_tag_(std::move(free_tag)), events_(capacity ? capacity : 1) {}

EventRing::~EventRing() { clear(); }

void EventRing::clear_locked() {
  for (std::size_t i = 0; i < count_; i++) {
    Event& e = events_[(head_ + i) % events_.size()];
    if (e.tag != nullptr && free_tag_) free_tag_(e.tag);
    e = Event{};
  }
  head_ = count_ = 0;
}

void EventRing::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  clear_locked();
}

void EventRing::reset(std::size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  clear_locked();
  events_.assign(capacity ? capacity : 1, Event{});
}

void EventRing::append(std::uint64_t seq, std::string json, Tag tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (count_ == events_.size()) {
    Event& old = events_[head_];
    if (old.seq > lost_upto_) lost_upto_ = old.seq;
    if (old.tag != nullptr && free_tag_) free_tag_(old.tag);
    old = Event{};
    head_ = (head_ + 1) % events_.size();
    count_--;
    evicted_++;
  }
  Event& e = events_[(head_ + count_) % events_.size()];
  e.seq = seq;
  e.json = std::move(json);
  e.tag = tag;
  count_++;
  if (seq > latest_) latest_ = seq;
}

void EventRing::skip(std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (seq > lost_upto_) lost_upto_ = seq;
  if (seq > latest_) latest_ = seq;
}

void EventRing::set_marks(std::uint64_t latest, std::uint64_t lost_upto) {
  std::lock_guard<std::mutex> lock(mutex_);
  latest_ = latest;
  lost_upto_ = lost_upto;
}

std::uint64_t EventRing::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

std::uint64_t EventRing::lost_upto() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_upto_;
}

namespace {
struct PageView {
  const std::function<std::uint64_t(std::size_t)>* seq_at;
  const std::function<bool(std::size_t)>* visible;
};
std::uint64_t view_seq(std::size_t i, void* arg) {
  return (*static_cast<PageView*>(arg)->seq_at)(i);
}
bool view_visible(std::size_t i, void* arg) { return (*static_cast<PageView*>(arg)->visible)(i); }
}  // namespace

std::string EventRing::page(std::uint64_t after, std::uint32_t max, const Visible& visible,
                            RingPage* out) const {
  if (max == 0) max = 1;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::function<std::uint64_t(std::size_t)> seq_at = [this](std::size_t i) {
    return at(i).seq;
  };
  const std::function<bool(std::size_t)> vis = [this, &visible](std::size_t i) {
    return !visible || visible(at(i).tag);
  };
  PageView v{&seq_at, &vis};
  std::vector<std::uint32_t> pick(max);
  flexco_events_page_t pg;
  // which events, and the cursor: core/capi_decode.h
  flexco_events_page(after, max, latest_, lost_upto_, count_, view_seq, view_visible, &v,
                     pick.data(), &pg);
  RingPage r;
  r.count = pg.count;
  r.next = pg.next;
  r.lost = pg.lost;
  r.latest = latest_;
  r.oldest = count_ ? at(0).seq : 0;
  std::size_t size = 160;
  for (std::uint32_t i = 0; i < pg.count; i++) size += at(pick[i]).json.size() + 1;
  std::string body;
  body.reserve(size);
  body += "{\"events\":[";
  for (std::uint32_t i = 0; i < pg.count; i++) {
    if (i) body += ',';
    body += at(pick[i]).json;
  }
  char tail[160];
  std::snprintf(tail, sizeof(tail),
                "],\"next\":%" PRIu64 ",\"oldest\":%" PRIu64 ",\"latest\":%" PRIu64 ",\"lost\":%s}",
                r.next, r.oldest, r.latest, r.lost ? "true" : "false");
  body += tail;
  if (out != nullptr) *out = r;
  return body;
}

void EventRing::each(
    const std::function<bool(std::uint64_t, const std::string&, const void*)>& fn) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < count_; i++) {
    if (!fn(at(i).seq, at(i).json, at(i).tag)) break;
  }
}

RingStats EventRing::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  RingStats s;
  s.capacity = events_.size();
  s.retained = count_;
  s.oldest = count_ ? at(0).seq : 0;
  s.latest = latest_;
  s.lost_upto = lost_upto_;
  s.evicted = evicted_;
  return s;
}

}  // namespace flexco::service
