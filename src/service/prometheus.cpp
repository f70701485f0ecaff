// SPDX-License-Identifier: GPL-2.0-or-later
// prometheus.cpp - see prometheus.hpp.

#include "service/prometheus.hpp"

#include <cmath>
#include <cstdio>

namespace flexco::service {

void Histogram::observe(double v) {
  std::size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  counts[i]++;
  sum += v;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  if (std::fabs(v) < 9007199254740992.0 && v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", v);
  }
  return buf;
}

void Exposition::family(const std::string& name, const char* type, const char* help) {
  out_ += "# HELP " + name + " ";
  for (const char* p = help; *p; ++p) {
    if (*p == '\\') {
      out_ += "\\\\";
    } else if (*p == '\n') {
      out_ += "\\n";
    } else {
      out_ += *p;
    }
  }
  out_ += "\n# TYPE " + name + " " + type + "\n";
}

void Exposition::labels(const Labels& l, const char* le) {
  if (l.empty() && le == nullptr) return;
  out_ += '{';
  bool first = true;
  for (const auto& kv : l) {
    if (!first) out_ += ',';
    first = false;
    out_ += kv.first + "=\"";
    for (char c : kv.second) {
      if (c == '\\') {
        out_ += "\\\\";
      } else if (c == '"') {
        out_ += "\\\"";
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }
  if (le != nullptr) {
    if (!first) out_ += ',';
    out_ += "le=\"";
    out_ += le;
    out_ += '"';
  }
  out_ += '}';
}

void Exposition::sample(const std::string& name, const Labels& l, double value) {
  out_ += name;
  labels(l, nullptr);
  out_ += ' ' + format_number(value) + '\n';
}

void Exposition::histogram(const std::string& name, const Labels& l, const Histogram& h) {
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i < h.counts.size(); ++i) {
    cum += h.counts[i];
    char le[40];
    if (i < h.bounds.size()) {
      std::snprintf(le, sizeof le, "%.9g", h.bounds[i]);
    } else {
      std::snprintf(le, sizeof le, "+Inf");
    }
    out_ += name + "_bucket";
    labels(l, le);
    out_ += ' ' + format_number(static_cast<double>(cum)) + '\n';
  }
  out_ += name + "_sum";
  labels(l, nullptr);
  out_ += ' ' + format_number(h.sum) + '\n';
  out_ += name + "_count";
  labels(l, nullptr);
  out_ += ' ' + format_number(static_cast<double>(cum)) + '\n';
}

}  // namespace flexco::service
