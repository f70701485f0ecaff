// SPDX-License-Identifier: GPL-2.0-or-later
// capi_idem.cpp - see capi_idem.h.

#include "service/capi_idem.h"

#include <memory>
#include <new>

#include "service/idem_cache.hpp"

using flexco::service::IdemCache;
using flexco::service::IdemEntry;

struct flexco_idem {
  flexco_idem(size_t cap, size_t per_uid, int64_t keep) : cache(cap, per_uid, keep) {}
  IdemCache cache;
};

namespace {

std::string str(const char* s) { return s != nullptr ? s : ""; }

void view(const IdemEntry& e, flexco_idem_entry_t* out) {
  out->key = e.key.c_str();
  out->uid = e.uid;
  out->status = e.status;
  out->response = e.response.c_str();
  out->when = e.when;
  out->method = e.bound ? e.method.c_str() : nullptr;
  out->target = e.bound ? e.target.c_str() : nullptr;
  out->digest = e.bound ? e.digest.c_str() : nullptr;
}

}  // namespace

extern "C" flexco_idem_t* flexco_idem_create(size_t capacity, size_t per_uid, int64_t keep) {
  try {
    return new flexco_idem(capacity, per_uid, keep);
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_idem_destroy(flexco_idem_t* c) { delete c; }

extern "C" void flexco_idem_clear(flexco_idem_t* c) {
  if (c != nullptr) c->cache.clear();
}

extern "C" bool flexco_idem_final(int status) { return IdemCache::final_status(status); }

extern "C" int flexco_idem_answer(const flexco_idem_t* c, const char* key, uint32_t uid,
                                  const char* method, const char* target, const char* digest,
                                  int64_t now, flexco_idem_entry_t* out, bool* same_target) {
  try {
    if (c == nullptr || key == nullptr) return FLEXCO_IDEM_NEW;
    const IdemCache::Answer a =
        c->cache.answer(key, uid, str(method), str(target), str(digest), now);
    if (a.verdict == IdemCache::Verdict::kNew) return FLEXCO_IDEM_NEW;
    view(*a.entry, out);
    *same_target = a.same_target;
    return a.verdict == IdemCache::Verdict::kReplay ? FLEXCO_IDEM_REPLAY : FLEXCO_IDEM_REUSED;
  } catch (...) {
    return FLEXCO_IDEM_NEW;
  }
}

extern "C" bool flexco_idem_store(flexco_idem_t* c, const char* key, uint32_t uid,
                                  const char* method, const char* target, const char* digest,
                                  int status, const char* response, int64_t now) {
  try {
    if (c == nullptr || key == nullptr) return false;
    // bound only with all three
    const bool bound = method != nullptr && target != nullptr && digest != nullptr;
    return c->cache.store(key, uid, bound ? method : "", bound ? target : "",
                          bound ? digest : "", status, str(response), now);
  } catch (...) {
    return false;
  }
}

extern "C" void flexco_idem_put(flexco_idem_t* c, const flexco_idem_entry_t* e, int64_t now) {
  try {
    if (c == nullptr || e == nullptr || e->key == nullptr) return;
    IdemEntry x;
    x.key = e->key;
    x.uid = e->uid;
    x.status = e->status;
    x.response = str(e->response);
    x.when = e->when;
    if (e->method != nullptr && e->target != nullptr && e->digest != nullptr) {
      x.bound = true;
      x.method = e->method;
      x.target = e->target;
      x.digest = e->digest;
    }
    c->cache.put(std::move(x), now);
  } catch (...) {
  }
}

extern "C" int flexco_idem_each(const flexco_idem_t* c, int64_t now,
                                int (*fn)(const flexco_idem_entry_t* e, void* arg), void* arg) {
  try {
    if (c == nullptr) return 0;
    for (const IdemEntry* e : c->cache.live(now)) {
      flexco_idem_entry_t v;
      view(*e, &v);
      const int rc = fn(&v, arg);
      if (rc != 0) return rc;
    }
    return 0;
  } catch (...) {
    return -1;
  }
}

extern "C" void flexco_idem_stats(const flexco_idem_t* c, int64_t now, flexco_idem_stats_t* out) {
  *out = flexco_idem_stats_t{};
  try {
    if (c == nullptr) return;
    const IdemCache::Stats s = c->cache.stats(now);
    out->keys = s.keys;
    out->max_uid_keys = s.max_uid_keys;
    out->capacity = c->cache.capacity();
    out->per_uid = c->cache.per_uid();
    out->keep_seconds = c->cache.keep_seconds();
    out->evicted_share = s.evicted_share;
    out->evicted_full = s.evicted_full;
  } catch (...) {
  }
}
