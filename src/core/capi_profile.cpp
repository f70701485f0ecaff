// SPDX-License-Identifier: GPL-2.0-or-later
// capi_profile.cpp - the C face of build_availability and the wire format
// (see capi_profile.h).

#include "core/capi_profile.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>

#include "core/availability.hpp"
#include "core/wire_profile.hpp"
#include "core/capi_util.hpp"

using flexco::capi::c_copy;
using flexco::capi::fail;
using flexco::capi::put;

extern "C" int flexco_profile_json(const flexco_snapshot_t* snap,
                                   const char* partition, int64_t horizon,
                                   int share_percent, char** json_out,
                                   char* code, size_t codelen, char* err,
                                   size_t errlen) {
  if (json_out != nullptr) *json_out = nullptr;
  try {
    if (snap == nullptr || json_out == nullptr)
      return fail(500, "internal",
                  "flexco_profile_json: snap and json_out must not be NULL",
                  json_out, code, codelen, err, errlen);
    flexco::AvailabilityQuery query;
    query.partition = partition ? partition : "";
    query.horizon = horizon;
    query.share_percent = share_percent;
    auto built = flexco::build_availability(*snap, query);
    if (!built.ok()) {
      const auto& e = built.error();
      return fail(flexco::availability_http_status(e.code),
                  flexco::availability_errc_name(e.code), e.message, json_out,
                  code, codelen, err, errlen);
    }
    std::string json = flexco::availability_to_json(built.value());
    char* doc = c_copy(json);
    if (doc == nullptr)
      return fail(500, "internal", "flexco_profile_json: out of memory",
                  json_out, code, codelen, err, errlen);
    *json_out = doc;
    put(code, codelen, "");
    put(err, errlen, "");
    return 200;
  } catch (const std::bad_alloc&) {
    return fail(500, "internal", "flexco_profile_json: out of memory", json_out,
                code, codelen, err, errlen);
  } catch (...) {
    return fail(500, "internal", "flexco_profile_json: internal error",
                json_out, code, codelen, err, errlen);
  }
}

extern "C" int flexco_min_free_nodes(const flexco_snapshot_t* snap,
                                     const char* partition, int64_t start,
                                     int64_t duration, int share_percent,
                                     int64_t* min_free, char* code,
                                     size_t codelen, char* err,
                                     size_t errlen) {
  try {
    if (snap == nullptr || min_free == nullptr)
      return fail(500, "internal",
                  "flexco_min_free_nodes: snap and min_free must not be NULL",
                  nullptr, code, codelen, err, errlen);
    if (duration <= 0 || start < 0)
      return fail(400, "bad_parameter",
                  "flexco_min_free_nodes: start >= 0 and duration > 0 needed",
                  nullptr, code, codelen, err, errlen);
    const flexco::Time from = start > snap->when ? start : snap->when;
    const flexco::Time end =
        start > flexco::kForever - duration ? flexco::kForever : start + duration;
    if (end <= from) {  // the window lies wholly in the past
      *min_free = 0;
      put(code, codelen, "");
      put(err, errlen, "");
      return 200;
    }
    flexco::AvailabilityQuery query;
    query.partition = partition ? partition : "";
    // The profile must reach the end of the window.
    query.horizon = end - snap->when;
    if (query.horizon > flexco::kMaxHorizon)
      return fail(400, "bad_parameter",
                  "the reservation ends beyond the longest horizon (366 days)",
                  nullptr, code, codelen, err, errlen);
    query.share_percent = share_percent;
    auto built = flexco::build_availability(*snap, query);
    if (!built.ok()) {
      const auto& e = built.error();
      return fail(flexco::availability_http_status(e.code),
                  flexco::availability_errc_name(e.code), e.message, nullptr,
                  code, codelen, err, errlen);
    }
    auto m = built.value().nodes.min_over(from, end - from);
    if (!m.ok())
      return fail(500, "internal", m.error().message, nullptr, code, codelen,
                  err, errlen);
    *min_free = m.value();
    put(code, codelen, "");
    put(err, errlen, "");
    return 200;
  } catch (const std::bad_alloc&) {
    return fail(500, "internal", "flexco_min_free_nodes: out of memory",
                nullptr, code, codelen, err, errlen);
  } catch (...) {
    return fail(500, "internal", "flexco_min_free_nodes: internal error",
                nullptr, code, codelen, err, errlen);
  }
}

extern "C" char* flexco_error_json(const char* code, const char* message) {
  return flexco::capi::error_doc(code ? code : "", message ? message : "");
}
