// capi_probe.cpp - the C face of parse_probe_request / probe (capi_probe.h).

#include "core/capi_probe.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <variant>

#include "core/probe.hpp"
#include "core/wire_profile.hpp"
#include "core/capi_util.hpp"

using flexco::capi::c_copy;
using flexco::capi::fail;
using flexco::capi::put;

extern "C" int flexco_probe_json(const flexco_snapshot_t* snap, const char* body, size_t len,
                                 int share_percent, int64_t valid_for, char** json_out,
                                 char* code, size_t codelen, char* err, size_t errlen) {
  if (json_out != nullptr) *json_out = nullptr;
  try {
    if (snap == nullptr || json_out == nullptr || (body == nullptr && len != 0))
      return fail(500, "internal",
                  "flexco_probe_json: snap, json_out and body must not be NULL", json_out,
                  code, codelen, err, errlen);
    if (share_percent < 1 || share_percent > 100)
      return fail(400, "bad_parameter",
                  "flexco_probe_json: share_percent " + std::to_string(share_percent) +
                      " is not in [1, 100]",
                  json_out, code, codelen, err, errlen);
    if (valid_for < 0)
      return fail(500, "internal", "flexco_probe_json: valid_for must be >= 0", json_out, code,
                  codelen, err, errlen);
    auto parsed = flexco::parse_probe_request(std::string_view(body ? body : "", len));
    if (auto* e = std::get_if<flexco::ProbeError>(&parsed))
      return fail(e->status, e->code, e->message, json_out, code, codelen, err, errlen);
    auto res = flexco::probe(*snap, std::get<flexco::ProbeRequest>(parsed), share_percent,
                             valid_for);
    if (auto* e = std::get_if<flexco::ProbeError>(&res))
      return fail(e->status, e->code, e->message, json_out, code, codelen, err, errlen);
    char* doc = c_copy(flexco::probe_result_to_json(std::get<flexco::ProbeResult>(res)));
    if (doc == nullptr)
      return fail(500, "internal", "flexco_probe_json: out of memory", json_out, code, codelen,
                  err, errlen);
    *json_out = doc;
    put(code, codelen, "");
    put(err, errlen, "");
    return 200;
  } catch (const std::bad_alloc&) {
    return fail(500, "internal", "flexco_probe_json: out of memory", json_out, code, codelen,
                err, errlen);
  } catch (...) {
    return fail(500, "internal", "flexco_probe_json: internal error", json_out, code, codelen,
                err, errlen);
  }
}
