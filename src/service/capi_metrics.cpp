// SPDX-License-Identifier: GPL-2.0-or-later
// capi_metrics.cpp - see capi_metrics.h.

#include "service/capi_metrics.h"

#include <cstdlib>
#include <cstring>

#include "service/prometheus.hpp"

using flexco::service::Exposition;
using flexco::service::Histogram;
using flexco::service::Labels;

namespace {

Exposition* writer(flexco_metrics_t* b) {
  if (b == nullptr || b->failed) return nullptr;
  if (b->impl == nullptr) {
    try {
      b->impl = new Exposition();
    } catch (...) {
      b->failed = 1;
      return nullptr;
    }
  }
  return static_cast<Exposition*>(b->impl);
}

Labels labels_of(const char* const* l) {
  Labels out;
  for (std::size_t i = 0; l != nullptr && l[i] != nullptr && l[i + 1] != nullptr; i += 2)
    out.emplace_back(l[i], l[i + 1]);
  return out;
}

void fail(flexco_metrics_t* b) {
  delete static_cast<Exposition*>(b->impl);
  b->impl = nullptr;
  b->failed = 1;
}

}  // namespace

extern "C" void flexco_metrics_family(flexco_metrics_t* b, const char* name, const char* type,
                                      const char* help) {
  Exposition* x = writer(b);
  if (x == nullptr || name == nullptr || type == nullptr) return;
  try {
    x->family(name, type, help != nullptr ? help : "");
  } catch (...) {
    fail(b);
  }
}

extern "C" void flexco_metrics_sample(flexco_metrics_t* b, const char* name,
                                      const char* const* labels, double value) {
  Exposition* x = writer(b);
  if (x == nullptr || name == nullptr) return;
  try {
    x->sample(name, labels_of(labels), value);
  } catch (...) {
    fail(b);
  }
}

extern "C" void flexco_metrics_histogram(flexco_metrics_t* b, const char* name,
                                         const char* const* labels, const double* bounds,
                                         const uint64_t* counts, size_t n_bounds, double sum) {
  Exposition* x = writer(b);
  if (x == nullptr || name == nullptr || counts == nullptr || (n_bounds && bounds == nullptr))
    return;
  try {
    Histogram h(std::vector<double>(bounds, bounds + n_bounds));
    h.counts.assign(counts, counts + n_bounds + 1);
    h.sum = sum;
    x->histogram(name, labels_of(labels), h);
  } catch (...) {
    fail(b);
  }
}

extern "C" char* flexco_metrics_take(flexco_metrics_t* b) {
  if (b == nullptr) return nullptr;
  Exposition* x = static_cast<Exposition*>(b->impl);
  char* s = nullptr;
  if (!b->failed) {
    const std::string empty;
    const std::string& t = x != nullptr ? x->text() : empty;
    s = static_cast<char*>(std::malloc(t.size() + 1));
    if (s != nullptr) std::memcpy(s, t.c_str(), t.size() + 1);
  }
  delete x;
  b->impl = nullptr;
  b->failed = 0;
  return s;
}
