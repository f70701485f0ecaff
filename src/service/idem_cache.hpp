// SPDX-License-Identifier: GPL-2.0-or-later
// idem_cache.hpp - the plugin's Idempotency-Key cache (doc/auth.md,
// "Idempotency"): the final answer of a mutation, kept under (uid, key)
// and bound to the request it answered (method, target, body digest), so
// that a retry gets the same answer and nothing is done twice, while the
// same key on another request is refused (422).  Bounded: one uid holds
// at most `per_uid` live keys (it loses its own oldest), so one client
// cannot evict another's; only when every slot is live does the oldest of
// all go.  No Slurm headers: resv_service calls it under its lock and
// saves its live entries with the reservations, so retries are answered
// across a crash and a takeover (testsuite/unit/check_idem_cache).

#ifndef FLEXCO_SERVICE_IDEM_CACHE_HPP
#define FLEXCO_SERVICE_IDEM_CACHE_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace flexco::service {

struct IdemEntry {
  std::string key;
  std::uint32_t uid = 0;
  int status = 0;
  std::string response;
  std::int64_t when = 0;   // stored, epoch seconds
  std::uint64_t seq = 0;   // order of storing, with when: oldest first
  bool bound = false;      // method, target and digest known (false: an old state file's)
  std::string method, target, digest;
};

class IdemCache {
 public:
  IdemCache(std::size_t capacity, std::size_t per_uid, std::int64_t keep_seconds);

  // Is this answer final, i.e. would the same request get it again whatever
  // happens meanwhile?  2xx and 4xx but 409 (Slurm or the cluster refused
  // it now: a retry may succeed); no 5xx.
  static bool final_status(int status);

  enum class Verdict { kNew, kReplay, kReused };
  struct Answer {
    Verdict verdict = Verdict::kNew;
    const IdemEntry* entry = nullptr;  // kReplay and kReused: the stored one
    bool same_target = false;          // kReused: same method and target, other body
  };
  // The answer for a request (key empty: none, kNew).
  Answer answer(const std::string& key, std::uint32_t uid, const std::string& method,
                const std::string& target, const std::string& digest, std::int64_t now) const;

  // Keep a final answer (digest, method or target empty: unbound); false if
  // not kept (no key, or not final).
  bool store(const std::string& key, std::uint32_t uid, const std::string& method,
             const std::string& target, const std::string& digest, int status,
             const std::string& response, std::int64_t now);

  // Loading the state file: an entry as saved (its own `when`).
  void put(IdemEntry e, std::int64_t now);

  // Live entries, oldest first (to save them).
  std::vector<const IdemEntry*> live(std::int64_t now) const;

  void clear();

  struct Stats {
    std::size_t keys = 0, max_uid_keys = 0;
    std::uint64_t evicted_share = 0, evicted_full = 0;
  };
  Stats stats(std::int64_t now) const;
  std::size_t capacity() const { return slots_.size(); }
  std::size_t per_uid() const { return per_uid_; }
  std::int64_t keep_seconds() const { return keep_; }

 private:
  bool is_live(const IdemEntry& e, std::int64_t now) const;
  IdemEntry* slot_for(std::uint32_t uid, std::int64_t now);

  std::vector<IdemEntry> slots_;  // key empty: free
  std::size_t per_uid_;
  std::int64_t keep_;
  std::uint64_t seq_ = 0, evicted_share_ = 0, evicted_full_ = 0;
};

}  // namespace flexco::service

#endif
