// SPDX-License-Identifier: GPL-2.0-or-later
// idle_history.cpp - idle-capacity history and p_res^history (see
// idle_history.hpp; thesis §9.4.1).
//
// Text form of one history (all numbers decimal, one space apart):
//
//   history <period> <interval> <records> <first> <last> <n>
//   <bucket> <sum> <count>          n lines, buckets ascending, count >= 1
//   end

#include "core/idle_history.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace flexco {

namespace {

Error invalid(std::string msg) { return Error{Errc::kInvalidArgument, std::move(msg)}; }

// Splits text into lines; a final line without '\n' counts.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool to_i64(std::string_view s, std::int64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool to_u64(std::string_view s, std::uint64_t* out) {
  if (s.empty() || s[0] == '-') return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool to_double(std::string_view s, double* out) {
  if (s.empty() || s.size() > 64) return false;
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(tmp.c_str(), &end);
  if (errno != 0 || end != tmp.c_str() + tmp.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool valid_partition_name(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (unsigned char c : s)
    if (c <= ' ' || c == 0x7f) return false;
  return true;
}

// ceil(period / interval) for period, interval >= 1, without forming
// period + interval (which overflows for periods near the top of Time).
std::uint64_t bucket_count_for(Duration period, Duration interval) {
  return static_cast<std::uint64_t>(period / interval + (period % interval != 0));
}

Status check_shape(const char* where, Duration period, Duration interval) {
  if (period < 1 || period > kHistoryMaxPeriod)
    return invalid(std::string(where) + ": period " + std::to_string(period) +
                   " must be in [1, " + std::to_string(kHistoryMaxPeriod) + "]");
  if (interval < 1 || interval > period)
    return invalid(std::string(where) + ": interval " + std::to_string(interval) +
                   " must be in [1, period " + std::to_string(period) + "]");
  if (bucket_count_for(period, interval) > kHistoryMaxBuckets)
    return invalid(std::string(where) + ": period / interval = " +
                   std::to_string(bucket_count_for(period, interval)) + " buckets, more than " +
                   std::to_string(kHistoryMaxBuckets));
  return {};
}

}  // namespace

Result<IdleHistory> IdleHistory::create(Duration period, Duration interval) {
  if (auto st = check_shape("IdleHistory::create", period, interval); !st.ok())
    return st.error();
  return IdleHistory(period, interval,
                     static_cast<std::size_t>(bucket_count_for(period, interval)));
}

std::size_t IdleHistory::bucket_of(Time t) const noexcept {
  return static_cast<std::size_t>((t % period_) / interval_);
}

Status IdleHistory::record(Time t, Amount idle) {
  if (t < 0 || t >= kForever)
    return invalid("IdleHistory::record: time " + std::to_string(t) + " is out of range");
  if (idle < 0 || idle > kMaxAmount)
    return invalid("IdleHistory::record: idle " + std::to_string(idle) +
                   " is not in [0, kMaxAmount]");
  std::size_t k = bucket_of(t);
  sum_[k] += static_cast<double>(idle);
  ++count_[k];
  ++records_;
  if (first_ < 0 || t < first_) first_ = t;
  if (t > last_) last_ = t;
  return {};
}

std::optional<double> IdleHistory::mean_idle(Time b, Duration d) const {
  if (b < 0 || d < 0) return std::nullopt;
  const std::size_t n = sum_.size();
  double total = 0.0;
  std::size_t used = 0;
  auto take = [&](std::size_t k) {
    if (count_[k] == 0) return;
    total += sum_[k] / static_cast<double>(count_[k]);
    ++used;
  };
  if (d >= period_) {
    for (std::size_t k = 0; k < n; ++k) take(k);
  } else {
    // Buckets intersecting [x, x + d) of the day, wrapping at the period;
    // the instant (d = 0) is the bucket holding x.
    Time x = b % period_;
    Time last = x + (d > 0 ? d - 1 : 0);  // last second covered, < x + period
    std::size_t k0 = static_cast<std::size_t>(x / interval_);
    std::size_t k1 = static_cast<std::size_t>((last % period_) / interval_);
    bool wraps = last >= period_;
    if (!wraps) {
      for (std::size_t k = k0; k <= k1; ++k) take(k);
    } else if (k1 >= k0) {  // covers every bucket
      for (std::size_t k = 0; k < n; ++k) take(k);
    } else {
      for (std::size_t k = k0; k < n; ++k) take(k);
      for (std::size_t k = 0; k <= k1; ++k) take(k);
    }
  }
  if (used == 0) return std::nullopt;
  return total / static_cast<double>(used);
}

double p_res_history(Amount np, double mean_idle) noexcept {
  if (np < 1) np = 1;
  const double need = static_cast<double>(np);
  if (!(mean_idle >= need)) return 0.0;  // also NaN
  if (mean_idle >= 2.0 * need) return 1.0;
  return 2.0 - 2.0 * need / mean_idle;
}

std::string IdleHistory::to_text() const {
  std::size_t nonempty = 0;
  for (auto c : count_) nonempty += c > 0;
  std::string out = "history " + std::to_string(period_) + " " + std::to_string(interval_) + " " +
                    std::to_string(records_) + " " + std::to_string(first_) + " " +
                    std::to_string(last_) + " " + std::to_string(nonempty) + "\n";
  char buf[64];
  for (std::size_t k = 0; k < count_.size(); ++k) {
    if (count_[k] == 0) continue;
    std::snprintf(buf, sizeof buf, "%.17g", sum_[k]);
    out += std::to_string(k) + " " + buf + " " + std::to_string(count_[k]) + "\n";
  }
  out += "end\n";
  return out;
}

Result<IdleHistory> IdleHistory::parse_lines(const std::vector<std::string_view>& lines,
                                             std::size_t* at) {
  auto err = [&](std::size_t line, const std::string& what) {
    return invalid("IdleHistory::from_text: line " + std::to_string(line + 1) + ": " + what);
  };
  if (*at >= lines.size()) return err(*at, "missing history header");
  auto h = split_words(lines[*at]);
  std::int64_t period, interval, first, last;
  std::uint64_t records, n;
  if (h.size() != 7 || h[0] != "history" || !to_i64(h[1], &period) ||
      !to_i64(h[2], &interval) || !to_u64(h[3], &records) || !to_i64(h[4], &first) ||
      !to_i64(h[5], &last) || !to_u64(h[6], &n))
    return err(*at, "malformed history header");
  auto made = create(period, interval);
  if (!made.ok()) return err(*at, made.error().message);
  IdleHistory hist = std::move(made).value();
  if (n > hist.bucket_count()) return err(*at, "more buckets than the period has");
  if (first < -1 || last < first || (records == 0) != (first == -1))
    return err(*at, "inconsistent record count and times");
  std::uint64_t total = 0;
  std::int64_t prev = -1;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::size_t ln = *at + 1 + static_cast<std::size_t>(i);
    if (ln >= lines.size()) return err(ln, "missing bucket line");
    auto w = split_words(lines[ln]);
    std::int64_t k;
    double sum;
    std::uint64_t cnt;
    if (w.size() != 3 || !to_i64(w[0], &k) || !to_double(w[1], &sum) || !to_u64(w[2], &cnt))
      return err(ln, "malformed bucket line");
    if (k <= prev || k >= static_cast<std::int64_t>(hist.bucket_count()))
      return err(ln, "bucket " + std::to_string(k) + " out of order or out of range");
    if (cnt == 0 || sum < 0) return err(ln, "bucket with no record or a negative sum");
    if (total + cnt < total) return err(ln, "record count overflows");
    prev = k;
    total += cnt;
    hist.sum_[static_cast<std::size_t>(k)] = sum;
    hist.count_[static_cast<std::size_t>(k)] = cnt;
  }
  std::size_t end_line = *at + 1 + static_cast<std::size_t>(n);
  if (end_line >= lines.size() || lines[end_line] != "end")
    return err(end_line, "missing \"end\"");
  if (total != records) return err(*at, "bucket counts do not add up to the record count");
  hist.records_ = records;
  hist.first_ = first;
  hist.last_ = last;
  *at = end_line + 1;
  return hist;
}

Result<IdleHistory> IdleHistory::from_text(std::string_view text) {
  auto lines = split_lines(text);
  std::size_t at = 0;
  auto h = parse_lines(lines, &at);
  if (!h.ok()) return h.error();
  if (at != lines.size())
    return invalid("IdleHistory::from_text: line " + std::to_string(at + 1) +
                   ": text after \"end\"");
  return h;
}

// ---------------------------------------------------------------------------

Result<IdleHistories> IdleHistories::create(Duration period, Duration interval) {
  if (auto st = check_shape("IdleHistories::create", period, interval); !st.ok())
    return st.error();
  return IdleHistories(period, interval);
}

Status IdleHistories::record(const std::string& partition, Time t, Amount idle) {
  if (!valid_partition_name(partition))
    return invalid("IdleHistories::record: invalid partition name");
  auto it = parts_.find(partition);
  if (it == parts_.end()) {
    if (parts_.size() >= kHistoryMaxPartitions)
      return Error{Errc::kOutOfRange, "IdleHistories::record: more than " +
                                          std::to_string(kHistoryMaxPartitions) +
                                          " partitions"};
    auto h = IdleHistory::create(period_, interval_);
    if (!h.ok()) return h.error();
    it = parts_.emplace(partition, std::move(h).value()).first;
  }
  return it->second.record(t, idle);
}

const IdleHistory* IdleHistories::find(const std::string& partition) const {
  auto it = parts_.find(partition);
  return it == parts_.end() ? nullptr : &it->second;
}

std::string IdleHistories::to_text() const {
  std::string out = "flexco-idle-histories-v1 " + std::to_string(period_) + " " +
                    std::to_string(interval_) + " " + std::to_string(parts_.size()) + "\n";
  for (const auto& [name, h] : parts_) out += "partition " + name + "\n" + h.to_text();
  return out;
}

Result<IdleHistories> IdleHistories::from_text(std::string_view text, Duration period,
                                               Duration interval) {
  auto made = create(period, interval);
  if (!made.ok()) return made.error();
  IdleHistories out = std::move(made).value();
  auto lines = split_lines(text);
  auto err = [&](std::size_t line, const std::string& what) {
    return invalid("IdleHistories::from_text: line " + std::to_string(line + 1) + ": " + what);
  };
  if (lines.empty()) return err(0, "empty");
  auto h = split_words(lines[0]);
  std::int64_t p, i;
  std::uint64_t n;
  if (h.size() != 4 || h[0] != "flexco-idle-histories-v1" || !to_i64(h[1], &p) ||
      !to_i64(h[2], &i) || !to_u64(h[3], &n))
    return err(0, "malformed header");
  if (n > kHistoryMaxPartitions) return err(0, "too many partitions");
  if (p != period || i != interval) return out;  // another shape: start afresh
  std::size_t at = 1;
  for (std::uint64_t k = 0; k < n; ++k) {
    if (at >= lines.size()) return err(at, "missing partition line");
    std::string_view pl = lines[at];
    if (pl.substr(0, 10) != "partition ") return err(at, "expected \"partition NAME\"");
    std::string name(pl.substr(10));
    if (!valid_partition_name(name)) return err(at, "invalid partition name");
    if (out.parts_.count(name)) return err(at, "partition listed twice");
    ++at;
    std::size_t before = at;
    auto hist = IdleHistory::parse_lines(lines, &at);
    if (!hist.ok()) return err(before, hist.error().message);
    if (hist.value().period() != period || hist.value().interval() != interval)
      return err(before, "history shape differs from the header");
    out.parts_.emplace(std::move(name), std::move(hist).value());
  }
  if (at != lines.size()) return err(at, "text after the last partition");
  return out;
}

}  // namespace flexco
