// SPDX-License-Identifier: GPL-2.0-or-later
// Workload streams: see workload.hpp and doc/sim.md.

#include "sim/workload.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace flexco::sim {

namespace {

// A uniform double in [0, 1) from the top 53 bits: the same on every
// platform, unlike std::uniform_real_distribution.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

// The model's round values (seconds) and their relative popularity.  The
// maximum estimate is appended with the largest weight: Tsafrir et al.
// found the system's limit to be the single most popular estimate, followed
// by round hours and round fractions of an hour.
struct Popular {
  Duration value;
  double weight;
};
constexpr Popular kPopular[] = {
    {60, 2},     {300, 8},    {600, 7},    {900, 5},    {1200, 4},   {1800, 9},
    {2700, 3},   {3600, 10},  {5400, 3},   {7200, 8},   {10800, 5},  {14400, 5},
    {18000, 2},  {21600, 5},  {28800, 4},  {36000, 3},  {43200, 4},
};
constexpr double kMaxWeight = 20;

std::mt19937_64 stream_rng(std::uint64_t seed, int index) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(index), 0x5eedu};
  return std::mt19937_64(seq);
}

swf::Error stream_error(const std::string& message) {
  return swf::Error{swf::Errc::kInvalidArgument, 0, message};
}

// Run time and size of a trace job, or nullopt when unknown or zero.
std::optional<std::pair<Duration, Amount>> run_and_size(const swf::Job& j) {
  std::int64_t procs = j.allocated_procs.value_or(0);
  if (procs <= 0) procs = j.requested_procs.value_or(0);
  Duration run = j.run_time.value_or(0);
  if (procs <= 0 || run <= 0) return std::nullopt;
  return std::make_pair(run, static_cast<Amount>(procs));
}

bool is_small(const JobRules& r, Duration run, Amount nodes) {
  return r.no_small && run <= r.small_run && nodes <= r.small_nodes;
}

}  // namespace

Duration model_estimate(Duration run, Duration max_estimate, std::mt19937_64& rng) {
  if (run >= max_estimate) return run;
  double total = kMaxWeight;
  for (const auto& p : kPopular)
    if (p.value >= run && p.value < max_estimate) total += p.weight;
  double u = uniform01(rng) * total;
  for (const auto& p : kPopular) {
    if (p.value < run || p.value >= max_estimate) continue;
    if (u < p.weight) return p.value;
    u -= p.weight;
  }
  return max_estimate;
}

int draw_overhead(double lambda, int cap, std::mt19937_64& rng) {
  // Inversion: walk the cumulative distribution until it passes u.
  double u = uniform01(rng);
  double p = std::exp(-lambda);
  double cdf = p;
  int k = 0;
  while (u > cdf && k < cap) {
    ++k;
    p *= lambda / k;
    cdf += p;
  }
  return std::min(k, cap);
}

swf::Result<TraceScan> scan_trace(const std::string& path, const JobRules& rules) {
  auto reader = swf::Reader::open(path);
  if (!reader) return reader.error();
  TraceScan scan;
  bool first = true;
  for (;;) {
    auto next = reader.value().next();
    if (!next) return next.error();
    if (!next.value()) break;
    const swf::Job& j = *next.value();
    if (first || j.submit_time < scan.first_submit) scan.first_submit = j.submit_time;
    if (first || j.submit_time > scan.last_submit) scan.last_submit = j.submit_time;
    first = false;
    auto rs = run_and_size(j);
    if (!rs || (rules.max_nodes > 0 && rs->second > rules.max_nodes) ||
        is_small(rules, rs->first, rs->second)) {
      ++scan.dropped;
      continue;
    }
    ++scan.jobs;
    scan.work += static_cast<double>(rs->first) * static_cast<double>(rs->second);
    if (j.requested_time.value_or(0) > 0) scan.has_estimates = true;
  }
  return scan;
}

TraceStream::TraceStream(const StreamSpec& spec, const TraceScan& scan)
    : spec_(spec), rng_(stream_rng(spec.seed, spec.index)) {
  std::int64_t span = scan.last_submit - scan.first_submit + 1;
  std::int64_t len = std::max<std::int64_t>(1, span / spec.parts);
  seg_from_ = scan.first_submit + len * spec.part;
  seg_to_ = spec.part == spec.parts - 1 ? scan.last_submit + 1 : seg_from_ + len;
}

swf::Result<TraceStream> TraceStream::open(const StreamSpec& spec, const TraceScan& scan) {
  if (spec.parts < 1 || spec.part < 0 || spec.part >= spec.parts)
    return stream_error(spec.path + ": part must be in [1, parts]");
  if (!(spec.time_scale > 0)) return stream_error(spec.path + ": time scale must be > 0");
  if (spec.loop && spec.horizon >= kForever)
    return stream_error(spec.path + ": a looped trace needs a horizon");
  if (!(spec.rules.estimate_factor >= 1.0))
    return stream_error(spec.path + ": estimate factor must be >= 1");
  TraceStream s(spec, scan);
  if (auto st = s.reopen(); !st) return st.error();
  return s;
}

swf::Result<TraceStream> TraceStream::from_string(const StreamSpec& spec, const TraceScan& scan,
                                                  std::string text) {
  TraceStream s(spec, scan);
  s.text_ = std::move(text);
  s.in_memory_ = true;
  if (auto st = s.reopen(); !st) return st.error();
  return s;
}

BasicStatus<swf::Error> TraceStream::reopen() {
  auto reader = in_memory_ ? swf::Reader::from_string(text_) : swf::Reader::open(spec_.path);
  if (!reader) return reader.error();
  swf::OrderOptions order;
  order.window = 4096;
  order.late = swf::LatePolicy::kDrop;
  auto ordered = swf::OrderedReader::create(std::move(reader).value(), order);
  if (!ordered) return ordered.error();
  reader_.emplace(std::move(ordered).value());
  return {};
}

const swf::Reader* TraceStream::reader() const noexcept {
  return reader_ ? &reader_->reader() : nullptr;
}

std::optional<Job> TraceStream::convert(const swf::Job& j) {
  auto rs = run_and_size(j);
  if (!rs) {
    ++counts_.no_data;
    return std::nullopt;
  }
  auto [run, nodes] = *rs;
  const JobRules& r = spec_.rules;
  if (r.max_nodes > 0 && nodes > r.max_nodes) {
    ++counts_.too_large;
    return std::nullopt;
  }
  if (is_small(r, run, nodes)) {
    ++counts_.small;
    return std::nullopt;
  }
  Duration est = j.requested_time.value_or(0);
  if (est <= 0 || r.model_always) {
    est = model_estimate(run, r.model_max, rng_);
    ++counts_.modelled;
  } else if (run > est) {
    // The job ran past its limit (the archive keeps a few such records):
    // the limit is what a scheduler enforces, so the run is cut there.
    ++counts_.overran;
    run = est;
  }
  if (r.estimate_factor > 1.0)
    est = std::max(est, static_cast<Duration>(std::ceil(static_cast<double>(est) *
                                                        r.estimate_factor)));
  Job job;
  job.id = (static_cast<std::uint64_t>(spec_.index + 1) << 40) | ++seq_;
  job.kind = spec_.kind;
  job.cluster = spec_.cluster;
  job.run = run;
  job.estimate = est;
  job.nodes = nodes;
  job.line = j.line;
  if (r.overhead) job.overhead_pct = draw_overhead(r.overhead_lambda, r.overhead_cap, rng_);
  return job;
}

swf::Result<std::optional<Job>> TraceStream::next() {
  while (!done_) {
    if (spec_.max_jobs > 0 && static_cast<std::uint64_t>(counts_.emitted) >= spec_.max_jobs) break;
    auto next = reader_->next();
    if (!next) return next.error();
    if (!next.value() || next.value()->submit_time >= seg_to_) {
      if (!spec_.loop || counts_.emitted == emitted_at_loop_) break;
      emitted_at_loop_ = counts_.emitted;
      // Replay the segment, its second copy starting where the first ended.
      offset_ += seg_to_ - seg_from_;
      ++counts_.loops;
      if (auto st = reopen(); !st) return st.error();
      continue;
    }
    const swf::Job& j = *next.value();
    if (j.submit_time < seg_from_) continue;
    ++counts_.read;
    double t = static_cast<double>(j.submit_time - seg_from_ + offset_) * spec_.time_scale;
    if (t >= static_cast<double>(spec_.horizon)) break;
    std::optional<Job> job = convert(j);
    if (!job) continue;
    job->submit = static_cast<Time>(std::llround(t));
    ++counts_.emitted;
    return std::optional<Job>(std::move(*job));
  }
  done_ = true;
  return std::optional<Job>();
}

}  // namespace flexco::sim
