// SPDX-License-Identifier: GPL-2.0-or-later
// Idle-capacity history and the "history" reservation probability.
//
// The thesis (Röblitz, CORES, §9.4.1 eq. 9.1-9.4) estimates
// the chance that a reservation is still granted later from how many
// processors were idle at the same time of day in the past:
//
//   every L seconds record (t, n), n = idle capacity at t;
//   dyt(t) = t - ap * floor(t / ap)                          time of day (9.1)
//   H_day: for every time of day, the mean of the records at it         (9.2)
//   H^∅(b, d): mean of H_day over the times of day the slot covers      (9.3)
//   p_res(b, d, np) = 1              if 2 np <= H^∅
//                   = 2 - 2 np / H^∅ if np <= H^∅ < 2 np
//                   = 0              if H^∅ < np                         (9.4)
//
// IdleHistory keeps H_day incrementally: one bucket per L seconds of the
// averaging period ap, holding the sum and the count of the records whose
// time of day falls in it, so memory is O(ap / L) whatever the uptime, and
// a query costs O(buckets the window covers).  A bucket stands for the
// records of [k L, (k + 1) L) of the day; a window [b, b + d) uses every
// bucket whose interval it intersects (the thesis' "[t, n] ∩ [dyt(b),
// dyt(b + d)) ≠ ∅"), wrapping over midnight; a window of ap or longer uses
// all of them.  Buckets without records are skipped; with none at all the
// mean is unknown (nullopt) and the caller falls back to another method.
//
// IdleHistories holds one IdleHistory per partition name, with a text form
// for saving it across restarts.  Core rules: no logging, no globals; one
// thread at a time per object.  Errors are values (flexco::Error).

#ifndef FLEXCO_CORE_IDLE_HISTORY_HPP
#define FLEXCO_CORE_IDLE_HISTORY_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/profile.hpp"

namespace flexco {

inline constexpr Duration kHistoryDefaultPeriod = 86400;  // ap: one day (thesis Table 9.3)
inline constexpr Duration kHistoryDefaultInterval = 300;  // L
inline constexpr std::size_t kHistoryMaxBuckets = 100000;  // ap / L at most
// The longest averaging period: a (leap) year.  It keeps every sum of two
// times of the period far from overflowing Time.
inline constexpr Duration kHistoryMaxPeriod = 366 * 86400;
inline constexpr std::size_t kHistoryMaxPartitions = 256;

class IdleHistory {
 public:
  // period (ap) in [1, kHistoryMaxPeriod], interval (L) in [1, period],
  // ceil(ap / L) <= kHistoryMaxBuckets.
  static Result<IdleHistory> create(Duration period = kHistoryDefaultPeriod,
                                    Duration interval = kHistoryDefaultInterval);

  Duration period() const noexcept { return period_; }
  Duration interval() const noexcept { return interval_; }
  std::size_t bucket_count() const noexcept { return sum_.size(); }
  std::uint64_t records() const noexcept { return records_; }
  Time first() const noexcept { return first_; }  // -1 before any record
  Time last() const noexcept { return last_; }    // -1 before any record

  // One record: idle units at t.  t in [0, kForever), idle in [0, kMaxAmount].
  Status record(Time t, Amount idle);

  // H^∅(b, d): the mean of the daily averages over the time of day that
  // [b, b + d) covers; nullopt when no covered bucket has a record.  b >= 0,
  // d >= 0 (d = 0: the instant b).
  std::optional<double> mean_idle(Time b, Duration d) const;

  // Text form (see idle_history.cpp); parse rejects anything malformed.
  std::string to_text() const;
  static Result<IdleHistory> from_text(std::string_view text);

 private:
  IdleHistory(Duration period, Duration interval, std::size_t buckets)
      : period_(period), interval_(interval), sum_(buckets, 0.0), count_(buckets, 0) {}
  std::size_t bucket_of(Time t) const noexcept;
  // Parses one history starting at lines[*at]; advances *at past its "end".
  static Result<IdleHistory> parse_lines(const std::vector<std::string_view>& lines,
                                         std::size_t* at);
  friend class IdleHistories;

  Duration period_;
  Duration interval_;
  std::vector<double> sum_;
  std::vector<std::uint64_t> count_;
  std::uint64_t records_ = 0;
  Time first_ = -1;
  Time last_ = -1;
};

// Eq. 9.4: np >= 1 units requested, mean_idle >= 0.
double p_res_history(Amount np, double mean_idle) noexcept;

// One IdleHistory per partition (at most kHistoryMaxPartitions), all with
// the same period and interval.
class IdleHistories {
 public:
  static Result<IdleHistories> create(Duration period = kHistoryDefaultPeriod,
                                      Duration interval = kHistoryDefaultInterval);

  Duration period() const noexcept { return period_; }
  Duration interval() const noexcept { return interval_; }
  std::size_t size() const noexcept { return parts_.size(); }

  // Records idle units of `partition` at t (a new partition gets a history).
  Status record(const std::string& partition, Time t, Amount idle);
  // The history of a partition, nullptr if it has none.
  const IdleHistory* find(const std::string& partition) const;

  // "flexco-idle-histories-v1 <period> <interval> <partitions>\n" then, per
  // partition, a line "partition <name>\n" and its IdleHistory text.
  std::string to_text() const;
  // Histories saved with another period or interval are dropped (the
  // buckets would not line up): the result is empty, not an error.
  static Result<IdleHistories> from_text(std::string_view text, Duration period,
                                         Duration interval);

 private:
  IdleHistories(Duration period, Duration interval) : period_(period), interval_(interval) {}
  Duration period_;
  Duration interval_;
  std::map<std::string, IdleHistory> parts_;
};

}  // namespace flexco

#endif  // FLEXCO_CORE_IDLE_HISTORY_HPP
