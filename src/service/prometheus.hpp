// SPDX-License-Identifier: GPL-2.0-or-later
// prometheus.hpp - Prometheus' text exposition format (0.0.4), written by
// hand: histograms and a writer that says each family's HELP and TYPE
// once.  The one writer of flexcod's GET /metrics and (through
// capi_metrics.h) the plugin's.  Formatting takes no lock and does no I/O.

#ifndef FLEXCO_SERVICE_PROMETHEUS_HPP
#define FLEXCO_SERVICE_PROMETHEUS_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace flexco::service {

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
  std::string& text() { return out_; }

 private:
  void labels(const Labels& l, const char* le);
  std::string out_;
};

std::string format_number(double v);

}  // namespace flexco::service

#endif
