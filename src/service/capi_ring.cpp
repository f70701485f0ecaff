// SPDX-License-Identifier: GPL-2.0-or-later
// capi_ring.cpp - the ring's part of capi_events.h (apart from the
// numbering's, so that what uses only the numbers does not link the ring
// and the core's paging rules it calls).

#include <cstdlib>
#include <cstring>
#include <string>

#include "service/capi_events.h"
#include "service/event_ring.hpp"

using flexco::service::EventRing;

struct flexco_ring {
  flexco_ring(uint32_t cap, void (*free_tag)(void*))
      : ring(cap, free_tag != nullptr ? EventRing::FreeTag(free_tag) : EventRing::FreeTag()),
        free_tag(free_tag) {}
  EventRing ring;
  void (*free_tag)(void*);
};

extern "C" flexco_ring_t* flexco_ring_create(uint32_t capacity, void (*free_tag)(void* tag)) {
  try {
    return new flexco_ring(capacity, free_tag);
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_ring_destroy(flexco_ring_t* r) { delete r; }

extern "C" void flexco_ring_clear(flexco_ring_t* r) {
  if (r != nullptr) r->ring.clear();
}

extern "C" void flexco_ring_reset(flexco_ring_t* r, uint32_t capacity) {
  try {
    if (r != nullptr) r->ring.reset(capacity);
  } catch (...) {
    // out of memory: what is there stays
  }
}

extern "C" bool flexco_ring_append(flexco_ring_t* r, uint64_t seq, const char* json, size_t len,
                                   void* tag) {
  if (r == nullptr) return false;
  try {
    r->ring.append(seq, std::string(json, len), tag);
    return true;
  } catch (...) {
    if (tag != nullptr && r->free_tag != nullptr) r->free_tag(tag);
    r->ring.skip(seq);
    return false;
  }
}

extern "C" void flexco_ring_skip(flexco_ring_t* r, uint64_t seq) {
  if (r != nullptr) r->ring.skip(seq);
}

extern "C" void flexco_ring_set_marks(flexco_ring_t* r, uint64_t latest, uint64_t lost_upto) {
  if (r != nullptr) r->ring.set_marks(latest, lost_upto);
}

extern "C" void flexco_ring_marks(const flexco_ring_t* r, uint64_t* latest, uint64_t* lost_upto) {
  *latest = r != nullptr ? r->ring.latest() : 0;
  *lost_upto = r != nullptr ? r->ring.lost_upto() : 0;
}

extern "C" char* flexco_ring_page(const flexco_ring_t* r, uint64_t after, uint32_t max,
                                  bool (*visible)(const void* tag, void* arg), void* arg,
                                  flexco_ring_page_t* page) {
  try {
    flexco::service::RingPage pg;
    std::string body;
    if (r != nullptr) {
      EventRing::Visible v;
      if (visible != nullptr) v = [visible, arg](const void* tag) { return visible(tag, arg); };
      body = r->ring.page(after, max, v, &pg);
    } else {
      body = "{\"events\":[],\"next\":0,\"oldest\":0,\"latest\":0,\"lost\":false}";
    }
    char* out = static_cast<char*>(std::malloc(body.size() + 1));
    if (out == nullptr) return nullptr;
    std::memcpy(out, body.c_str(), body.size() + 1);
    page->count = pg.count;
    page->next = pg.next;
    page->oldest = pg.oldest;
    page->latest = pg.latest;
    page->lost = pg.lost;
    return out;
  } catch (...) {
    return nullptr;
  }
}

extern "C" int flexco_ring_each(const flexco_ring_t* r,
                                int (*fn)(uint64_t seq, const char* text, size_t len,
                                          const void* tag, void* arg),
                                void* arg) {
  int rc = 0;
  if (r == nullptr) return 0;
  try {
    r->ring.each([&](uint64_t seq, const std::string& text, const void* tag) {
      rc = fn(seq, text.c_str(), text.size(), tag, arg);
      return rc == 0;
    });
  } catch (...) {
    return -1;
  }
  return rc;
}

extern "C" void flexco_ring_stats(const flexco_ring_t* r, flexco_ring_stats_t* out) {
  std::memset(out, 0, sizeof(*out));
  if (r == nullptr) return;
  const auto s = r->ring.stats();
  out->capacity = s.capacity;
  out->retained = s.retained;
  out->oldest = s.oldest;
  out->latest = s.latest;
  out->lost_upto = s.lost_upto;
  out->evicted = s.evicted;
}
