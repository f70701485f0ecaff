// SPDX-License-Identifier: GPL-2.0-or-later
// Reads SWF traces with flexco::swf::Reader and prints how fast.
//
//   flexco-bench-swf [-r RUNS] [--disorder] TRACE...
//
// For each trace: jobs, malformed lines (lenient mode), the best wall time
// of RUNS full reads and jobs per second.  With --disorder, one more
// (untimed) pass measures how far the file is from submit-time order: jobs
// that come after a later-submitted job, the largest such backward jump, and
// the smallest OrderedReader window that sorts the file without a late job.
// That pass keeps every submit time in memory (8 bytes a job).
//
// Exit status: 0, 1 if a trace cannot be read, 2 on bad usage.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/swf.hpp"

namespace swf = flexco::swf;

namespace {

struct Run {
  std::int64_t jobs = 0;
  std::int64_t malformed = 0;
  double seconds = 0.0;
  std::string first_diagnostic;
};

bool read_once(const std::string& path, Run& run, std::vector<std::int64_t>* submits) {
  swf::Options options;
  options.mode = swf::Mode::kLenient;
  options.max_diagnostics = 1;
  const auto t0 = std::chrono::steady_clock::now();
  auto reader = swf::Reader::open(path, options);
  if (!reader) {
    std::fprintf(stderr, "flexco-bench-swf: %s\n", reader.error().message.c_str());
    return false;
  }
  for (;;) {
    auto job = reader.value().next();
    if (!job) {
      std::fprintf(stderr, "flexco-bench-swf: %s: %s\n", path.c_str(),
                   job.error().message.c_str());
      return false;
    }
    if (!job.value()) break;
    if (submits != nullptr) submits->push_back(job.value()->submit_time);
  }
  const auto t1 = std::chrono::steady_clock::now();
  run.jobs = reader.value().stats().jobs;
  run.malformed = reader.value().stats().malformed_lines;
  run.seconds = std::chrono::duration<double>(t1 - t0).count();
  if (!reader.value().diagnostics().empty()) {
    run.first_diagnostic = reader.value().diagnostics().front().message;
  }
  return true;
}

// Late jobs, largest backward jump and the window that sorts `s` stably.
void print_disorder(const std::vector<std::int64_t>& s) {
  std::int64_t late = 0;
  std::int64_t jump = 0;
  std::int64_t latest = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && s[i] < latest) {
      ++late;
      jump = std::max(jump, latest - s[i]);
    }
    if (i == 0 || s[i] > latest) latest = s[i];
  }
  // A job with g earlier jobs submitted strictly later needs a window of
  // g + 1: count g with a Fenwick tree over submit-time ranks.
  std::vector<std::int64_t> ranks(s);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::vector<std::int64_t> tree(ranks.size() + 1, 0);
  std::int64_t window = s.empty() ? 0 : 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t r =
        static_cast<std::size_t>(std::lower_bound(ranks.begin(), ranks.end(), s[i]) - ranks.begin()) + 1;
    std::int64_t not_later = 0;  // earlier jobs with submit <= s[i]
    for (std::size_t k = r; k > 0; k -= k & (~k + 1)) not_later += tree[k];
    window = std::max(window, static_cast<std::int64_t>(i) - not_later + 1);
    for (std::size_t k = r; k < tree.size(); k += k & (~k + 1)) ++tree[k];
  }
  std::printf("  out-of-order jobs %lld, largest backward jump %lld s, window to sort %lld\n",
              static_cast<long long>(late), static_cast<long long>(jump),
              static_cast<long long>(window));
}

void usage() { std::fprintf(stderr, "usage: flexco-bench-swf [-r RUNS] [--disorder] TRACE...\n"); }

}  // namespace

int main(int argc, char** argv) {
  int runs = 1;
  bool disorder = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
      if (runs < 1 || runs > 1000) {
        usage();
        return 2;
      }
    } else if (std::strcmp(argv[i], "--disorder") == 0) {
      disorder = true;
    } else if (argv[i][0] == '-') {
      usage();
      return 2;
    } else {
      paths.emplace_back(argv[i]);
    }
  }
  if (paths.empty()) {
    usage();
    return 2;
  }

  int status = 0;
  for (const std::string& path : paths) {
    Run best;
    bool ok = true;
    for (int r = 0; r < runs && ok; ++r) {
      Run run;
      ok = read_once(path, run, nullptr);
      if (ok && (r == 0 || run.seconds < best.seconds)) best = run;
    }
    if (!ok) {
      status = 1;
      continue;
    }
    if (!best.first_diagnostic.empty()) {
      std::fprintf(stderr, "flexco-bench-swf: %s: first malformed line: %s\n", path.c_str(),
                   best.first_diagnostic.c_str());
    }
    const char* base = std::strrchr(path.c_str(), '/');
    std::printf("%s: %lld jobs, %lld malformed, %.3f s, %.0f jobs/s\n",
                base != nullptr ? base + 1 : path.c_str(), static_cast<long long>(best.jobs),
                static_cast<long long>(best.malformed), best.seconds,
                best.seconds > 0 ? static_cast<double>(best.jobs) / best.seconds : 0.0);
    if (disorder) {
      std::vector<std::int64_t> submits;
      Run run;
      if (!read_once(path, run, &submits)) {
        status = 1;
        continue;
      }
      print_disorder(submits);
    }
    std::fflush(stdout);
  }
  return status;
}
