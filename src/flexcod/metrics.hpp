// SPDX-License-Identifier: GPL-2.0-or-later
// metrics.hpp - Prometheus' text exposition format (0.0.4), written by
// hand, for flexcod's GET /metrics: histograms kept by the engine and a
// writer that says each family's HELP and TYPE once.

#ifndef FLEXCO_FLEXCOD_METRICS_HPP
#define FLEXCO_FLEXCOD_METRICS_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace flexcod {

// Observations by upper bound (seconds); counts are per bucket, the last
// one above the largest bound.  Not locked: its owner locks.
struct Histogram {
  explicit Histogram(std::vector<double> b = {}) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
  void observe(double v);
  std::vector<double> bounds;
  std::vector<std::uint64_t> counts;
  double sum = 0.0;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

class Exposition {
 public:
  void family(const std::string& name, const char* type, const char* help);
  void sample(const std::string& name, const Labels& labels, double value);
  // name_bucket (cumulative, le="+Inf" last), name_sum, name_count.
  void histogram(const std::string& name, const Labels& labels, const Histogram& h);
  const std::string& text() const { return out_; }

 private:
  void labels(const Labels& l, const char* le);
  std::string out_;
};

std::string format_number(double v);

}  // namespace flexcod

#endif
