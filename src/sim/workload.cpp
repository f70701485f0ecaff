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

// What a trace line gives the simulation.
enum class Verdict { kJob, kNoData, kPartial };

// Run time and size (in the rules' unit) of a trace job.  A partial
// execution (status 2-4) is left out unless TracePartial=keep: the SWF
// definition gives such a job a summary line (status 0, 1 or 5) with its
// whole run, so replaying both would count its work twice.
Verdict classify(const swf::Job& j, const JobRules& r, std::int64_t ppn, Duration& run,
                 Amount& size) {
  if (!r.keep_partial && j.status &&
      (*j.status == swf::JobStatus::kPartial ||
       *j.status == swf::JobStatus::kLastPartialCompleted ||
       *j.status == swf::JobStatus::kLastPartialFailed))
    return Verdict::kPartial;
  const auto& first = r.size_field == SizeField::kAllocated ? j.allocated_procs : j.requested_procs;
  const auto& second = r.size_field == SizeField::kAllocated ? j.requested_procs : j.allocated_procs;
  std::int64_t procs = first.value_or(0);
  if (procs <= 0) procs = second.value_or(0);
  run = j.run_time.value_or(0);
  if (procs <= 0 || run <= 0) return Verdict::kNoData;
  size = static_cast<Amount>(r.unit == SizeUnit::kNodes ? (procs + ppn - 1) / ppn : procs);
  return Verdict::kJob;
}

swf::Options reader_options(const JobRules& r) {
  swf::Options o;
  o.mode = r.lenient ? swf::Mode::kLenient : swf::Mode::kStrict;
  return o;
}

// An error of the reader with the file in front: "PATH: line N: ...".
swf::Error in_file(const std::string& path, swf::Error e) {
  if (!path.empty() && e.message.rfind("cannot open", 0) != 0) e.message = path + ": " + e.message;
  return e;
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

namespace {

swf::Result<TraceScan> scan_reader(const std::string& path, swf::Reader& reader,
                                   const JobRules& rules) {
  TraceScan scan;
  const swf::Header& h = reader.header();
  scan.max_nodes = h.max_nodes();
  scan.max_procs = h.max_procs();
  if (rules.unit == SizeUnit::kNodes) {
    if (rules.procs_per_node > 0) {
      scan.procs_per_node = rules.procs_per_node;
    } else if (scan.max_nodes && scan.max_procs) {
      // MaxProcs / MaxNodes, rounded up: DAS2-fs1 64 / 32, SDSC-BLUE 1152 / 144.
      scan.procs_per_node = (*scan.max_procs + *scan.max_nodes - 1) / *scan.max_nodes;
    } else {
      return swf::Error{swf::Errc::kInvalidArgument, 0,
                        path + ": TraceUnit=nodes needs MaxNodes and MaxProcs in the header, "
                               "or TraceProcsPerNode="};
    }
  }
  bool first = true;
  for (;;) {
    auto next = reader.next();
    if (!next) return in_file(path, next.error());
    if (!next.value()) break;
    const swf::Job& j = *next.value();
    ++scan.status[j.status ? static_cast<int>(*j.status) + 1 : 0];
    if (first || j.submit_time < scan.first_submit) scan.first_submit = j.submit_time;
    if (first || j.submit_time > scan.last_submit) scan.last_submit = j.submit_time;
    first = false;
    Duration run = 0;
    Amount size = 0;
    const Verdict v = classify(j, rules, scan.procs_per_node, run, size);
    if (v == Verdict::kPartial) ++scan.partial;
    if (v != Verdict::kJob) {
      ++scan.dropped;
      continue;
    }
    scan.largest = std::max(scan.largest, size);
    if ((rules.max_nodes > 0 && size > rules.max_nodes) || is_small(rules, run, size)) {
      ++scan.dropped;
      continue;
    }
    ++scan.jobs;
    scan.work += static_cast<double>(run) * static_cast<double>(size);
    if (j.requested_time.value_or(0) > 0) scan.has_estimates = true;
  }
  scan.malformed = reader.stats().malformed_lines;
  if (!reader.diagnostics().empty())
    scan.first_malformed = in_file(path, reader.diagnostics().front()).message;
  return scan;
}

}  // namespace

swf::Result<TraceScan> scan_trace(const std::string& path, const JobRules& rules) {
  auto reader = swf::Reader::open(path, reader_options(rules));
  if (!reader) return in_file(path, reader.error());
  return scan_reader(path, reader.value(), rules);
}

swf::Result<TraceScan> scan_trace_text(const std::string& text, const JobRules& rules) {
  auto reader = swf::Reader::from_string(text, reader_options(rules));
  if (!reader) return reader.error();
  return scan_reader("", reader.value(), rules);
}

TraceStream::TraceStream(const StreamSpec& spec, const TraceScan& scan)
    : spec_(spec), ppn_(scan.procs_per_node), rng_(stream_rng(spec.seed, spec.index)) {
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
  auto reader = in_memory_ ? swf::Reader::from_string(text_, reader_options(spec_.rules))
                           : swf::Reader::open(spec_.path, reader_options(spec_.rules));
  if (!reader) return in_file(spec_.path, reader.error());
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
  const JobRules& r = spec_.rules;
  Duration run = 0;
  Amount nodes = 0;
  switch (classify(j, r, ppn_, run, nodes)) {
    case Verdict::kPartial: ++counts_.partial; return std::nullopt;
    case Verdict::kNoData: ++counts_.no_data; return std::nullopt;
    case Verdict::kJob: break;
  }
  if (r.max_nodes > 0 && nodes > r.max_nodes) {
    ++counts_.too_large;
    return std::nullopt;
  }
  if (is_small(r, run, nodes)) {
    ++counts_.small;
    return std::nullopt;
  }
  Duration est = j.requested_time.value_or(0);
  if (r.exact_estimates) {
    est = run;  // de Assuncao's set-up: run times taken as estimates
  } else if (est <= 0 || r.model_always) {
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
    if (!next) return in_file(spec_.path, next.error());
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
