// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the SWF trace reader (core/swf.hpp), which flexco-sim
// runs on any log a user gives it, cleaned or not.  Checks: no crash; the
// strict and the lenient reader agree (a text the strict reader accepts
// gives the lenient reader the same jobs and no diagnostic; otherwise the
// strict reader stops at the first line the lenient one reports); every
// error names its line; the ordered reader yields every job once,
// whatever the window.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/swf.hpp"

namespace {

using flexco::swf::Job;

struct Read {
  std::vector<Job> jobs;
  bool failed = false;
  flexco::swf::Error error;
};

Read read_all(const std::string& text, flexco::swf::Mode mode) {
  Read out;
  flexco::swf::Options options;
  options.mode = mode;
  options.max_line_length = 256;
  auto r = flexco::swf::Reader::from_string(text, options);
  if (!r) {
    out.failed = true;
    out.error = r.error();
    return out;
  }
  for (;;) {
    auto n = r.value().next();
    if (!n) {
      out.failed = true;
      out.error = n.error();
      return out;
    }
    if (!n.value()) break;
    out.jobs.push_back(*n.value());
  }
  if (mode == flexco::swf::Mode::kLenient &&
      static_cast<std::int64_t>(r.value().diagnostics().size()) + r.value().dropped_diagnostics() !=
          r.value().stats().malformed_lines)
    abort();
  for (const auto& d : r.value().diagnostics())
    if (d.line < 1 || d.message.rfind("line " + std::to_string(d.line) + ": ", 0) != 0) abort();
  return out;
}

bool same(const Job& a, const Job& b) {
  return a.line == b.line && a.job_number == b.job_number && a.submit_time == b.submit_time &&
         a.run_time == b.run_time && a.allocated_procs == b.allocated_procs &&
         a.requested_procs == b.requested_procs && a.requested_time == b.requested_time &&
         a.status == b.status;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Read strict = read_all(text, flexco::swf::Mode::kStrict);
  const Read lenient = read_all(text, flexco::swf::Mode::kLenient);
  if (lenient.failed) abort();  // no I/O from a string: lenient never stops
  if (!strict.failed) {
    if (strict.jobs.size() != lenient.jobs.size()) abort();
    for (std::size_t i = 0; i < strict.jobs.size(); ++i)
      if (!same(strict.jobs[i], lenient.jobs[i])) abort();
  } else {
    if (strict.error.code != flexco::swf::Errc::kFormat || strict.error.line < 1) abort();
    // The strict reader returned every job before its error, as the
    // lenient one did.
    if (strict.jobs.size() > lenient.jobs.size()) abort();
    for (std::size_t i = 0; i < strict.jobs.size(); ++i)
      if (!same(strict.jobs[i], lenient.jobs[i])) abort();
  }
  for (const Job& j : lenient.jobs) {
    if (j.job_number < 1 || j.submit_time < 0) abort();
    if (j.run_time && *j.run_time < 0) abort();
  }

  // Ordered reading with a window of 1 + (first byte % 8), emitting late
  // jobs: every job comes out exactly once.
  flexco::swf::Options options;
  options.mode = flexco::swf::Mode::kLenient;
  options.max_line_length = 256;
  auto r = flexco::swf::Reader::from_string(text, options);
  if (!r) abort();
  flexco::swf::OrderOptions order;
  order.window = 1 + (size > 0 ? data[0] % 8 : 0);
  order.late = flexco::swf::LatePolicy::kEmit;
  auto o = flexco::swf::OrderedReader::create(std::move(r).value(), order);
  if (!o) abort();
  std::size_t count = 0;
  for (;;) {
    auto n = o.value().next();
    if (!n) abort();
    if (!n.value()) break;
    ++count;
  }
  if (count != lenient.jobs.size()) abort();
  if (static_cast<std::int64_t>(o.value().late_reports().size()) > o.value().stats().late_jobs) abort();
  return 0;
}
