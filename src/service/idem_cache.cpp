// SPDX-License-Identifier: GPL-2.0-or-later
// idem_cache.cpp - see idem_cache.hpp.

#include "service/idem_cache.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace flexco::service {

namespace {
bool older(const IdemEntry& a, const IdemEntry& b) {
  return a.when < b.when || (a.when == b.when && a.seq < b.seq);
}
}  // namespace

IdemCache::IdemCache(std::size_t capacity, std::size_t per_uid, std::int64_t keep_seconds)
    : slots_(capacity), per_uid_(per_uid), keep_(keep_seconds) {}

bool IdemCache::final_status(int status) {
  return (status >= 200 && status < 300) || (status >= 400 && status < 500 && status != 409);
}

bool IdemCache::is_live(const IdemEntry& e, std::int64_t now) const {
  return !e.key.empty() && now - e.when < keep_;
}

IdemCache::Answer IdemCache::answer(const std::string& key, std::uint32_t uid,
                                    const std::string& method, const std::string& target,
                                    const std::string& digest, std::int64_t now) const {
  Answer a;
  if (key.empty()) return a;
  for (const IdemEntry& e : slots_) {
    if (!is_live(e, now) || e.uid != uid || e.key != key) continue;
    a.entry = &e;
    if (e.bound && (e.method != method || e.target != target || e.digest != digest)) {
      a.verdict = Verdict::kReused;
      a.same_target = e.method == method && e.target == target;
    } else {
      a.verdict = Verdict::kReplay;
    }
    return a;
  }
  return a;
}

// The slot a new entry of uid goes to: its own oldest when it holds its
// share, else a free or expired one, else the oldest of all.
IdemEntry* IdemCache::slot_for(std::uint32_t uid, std::int64_t now) {
  IdemEntry *free_e = nullptr, *oldest = nullptr, *own_oldest = nullptr;
  std::size_t own = 0;
  for (IdemEntry& x : slots_) {
    if (!is_live(x, now)) {
      if (free_e == nullptr) free_e = &x;
      continue;
    }
    if (oldest == nullptr || older(x, *oldest)) oldest = &x;
    if (x.uid == uid) {
      own++;
      if (own_oldest == nullptr || older(x, *own_oldest)) own_oldest = &x;
    }
  }
  if (own >= per_uid_ && own_oldest != nullptr) {
    evicted_share_++;
    return own_oldest;
  }
  if (free_e != nullptr) return free_e;
  if (oldest != nullptr) evicted_full_++;
  return oldest;
}

bool IdemCache::store(const std::string& key, std::uint32_t uid, const std::string& method,
                      const std::string& target, const std::string& digest, int status,
                      const std::string& response, std::int64_t now) {
  if (key.empty() || !final_status(status) || slots_.empty()) return false;
  IdemEntry* e = slot_for(uid, now);
  if (e == nullptr) return false;
  *e = IdemEntry{};
  e->key = key;
  e->uid = uid;
  e->status = status;
  e->response = response;
  e->when = now;
  e->seq = ++seq_;
  if (!method.empty() && !target.empty() && !digest.empty()) {
    e->bound = true;
    e->method = method;
    e->target = target;
    e->digest = digest;
  }
  return true;
}

void IdemCache::put(IdemEntry in, std::int64_t now) {
  if (in.key.empty() || !final_status(in.status) || slots_.empty()) return;
  IdemEntry* e = slot_for(in.uid, now);
  if (e == nullptr) return;
  in.seq = ++seq_;
  *e = std::move(in);
}

std::vector<const IdemEntry*> IdemCache::live(std::int64_t now) const {
  std::vector<const IdemEntry*> out;
  for (const IdemEntry& e : slots_) {
    if (is_live(e, now)) out.push_back(&e);
  }
  std::sort(out.begin(), out.end(), [](const IdemEntry* a, const IdemEntry* b) { return older(*a, *b); });
  return out;
}

void IdemCache::clear() {
  for (IdemEntry& e : slots_) e = IdemEntry{};
  seq_ = 0;
}

IdemCache::Stats IdemCache::stats(std::int64_t now) const {
  Stats s;
  std::map<std::uint32_t, std::size_t> per;
  for (const IdemEntry& e : slots_) {
    if (!is_live(e, now)) continue;
    s.keys++;
    s.max_uid_keys = std::max(s.max_uid_keys, ++per[e.uid]);
  }
  s.evicted_share = evicted_share_;
  s.evicted_full = evicted_full_;
  return s;
}

}  // namespace flexco::service
