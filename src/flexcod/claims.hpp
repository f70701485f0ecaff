// SPDX-License-Identifier: GPL-2.0-or-later
// claims.hpp - the capacity flexcod has claimed on its clusters that a
// profile read may not show yet.
//
// A placement reads the clusters' profiles and probes without holding the
// claim (a slow cluster then delays only the placements that wait for its
// answer), and plans under the claim.  Its profiles may predate the
// reservations made by placements and moves that claimed after its reads
// began: those are here, from the moment the claim is given up for them
// until every profile read that began before their answer is done with.
// Planning subtracts them (subtract_unseen in placement.cpp), so that it
// never plans on nodes another placement holds or is reserving.
//
// Times: `since` and `at` are steady milliseconds (flexcod's steady_ms);
// windows are the clusters' epoch seconds as the reservation asks them.
// Thread-safe; O(entries) per query, entries bounded by the reservations in
// flight plus those answered while an older read is still in use.

#ifndef FLEXCOD_CLAIMS_HPP
#define FLEXCOD_CLAIMS_HPP

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace flexcod {

class ClaimLedger {
 public:
  using Id = std::uint64_t;
  struct Entry {
    std::string cluster;
    std::int64_t start = 0, end = 0;  // [start, end), cluster epoch seconds
    std::int64_t nodes = 0;
  };

  // Profile reads that began at `since` are in use until read_done.
  Id reading(std::int64_t since);
  void read_done(Id id);
  // reading/read_done as an object (Gathered keeps one while it is used).
  class Reading {
   public:
    Reading() = default;
    Reading(ClaimLedger* l, std::int64_t since) : l_(l), since_(since), id_(l->reading(since)) {}
    Reading(Reading&& o) noexcept : l_(o.l_), since_(o.since_), id_(o.id_) { o.l_ = nullptr; }
    Reading& operator=(Reading&& o) noexcept {
      if (this != &o) {
        if (l_) l_->read_done(id_);
        l_ = o.l_;
        since_ = o.since_;
        id_ = o.id_;
        o.l_ = nullptr;
      }
      return *this;
    }
    Reading(const Reading&) = delete;
    Reading& operator=(const Reading&) = delete;
    ~Reading() {
      if (l_) l_->read_done(id_);
    }
    bool active() const { return l_ != nullptr; }
    std::int64_t since() const { return since_; }

   private:
    ClaimLedger* l_ = nullptr;
    std::int64_t since_ = 0;
    Id id_ = 0;
  };

  // A reservation about to be asked for (under the claim).
  Id hold(const Entry& e);
  // Its answer at `at`: made (the cluster's later profiles show it) or not
  // (nothing to subtract; dropped at once).
  void answered(Id id, bool made, std::int64_t at);

  // What a profile of `cluster` read from `since` on may not show: every
  // reservation still in flight, and every one answered at or after since.
  std::vector<Entry> unseen(const std::string& cluster, std::int64_t since) const;

  std::size_t size() const;

 private:
  struct Held {
    Entry e;
    bool done = false;
    std::int64_t at = 0;
  };
  void prune_locked();
  mutable std::mutex m_;
  Id next_ = 1;
  std::map<Id, std::int64_t> reads_;  // id -> since
  std::map<Id, Held> held_;
};

}  // namespace flexcod

#endif
