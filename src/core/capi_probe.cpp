// SPDX-License-Identifier: GPL-2.0-or-later
// capi_probe.cpp - the C face of parse_probe_request / probe (capi_probe.h).

#include "core/capi_probe.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
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

struct flexco_histories {
  flexco::IdleHistories h;
};

extern "C" flexco_histories_t* flexco_histories_create(int64_t period, int64_t interval,
                                                        char* err, size_t errlen) {
  try {
    auto h = flexco::IdleHistories::create(period, interval);
    if (!h.ok()) {
      put(err, errlen, h.error().message);
      return nullptr;
    }
    put(err, errlen, "");
    return new flexco_histories{std::move(h).value()};
  } catch (...) {
    put(err, errlen, "flexco_histories_create: out of memory");
    return nullptr;
  }
}

extern "C" flexco_histories_t* flexco_histories_load(const char* text, size_t len,
                                                      int64_t period, int64_t interval,
                                                      char* err, size_t errlen) {
  try {
    if (text == nullptr && len != 0) {
      put(err, errlen, "flexco_histories_load: text is NULL");
      return nullptr;
    }
    auto h = flexco::IdleHistories::from_text(std::string_view(text ? text : "", len), period,
                                              interval);
    if (!h.ok()) {
      put(err, errlen, h.error().message);
      return nullptr;
    }
    put(err, errlen, "");
    return new flexco_histories{std::move(h).value()};
  } catch (...) {
    put(err, errlen, "flexco_histories_load: out of memory");
    return nullptr;
  }
}

extern "C" void flexco_histories_free(flexco_histories_t* h) { delete h; }

extern "C" flexco_histories_t* flexco_histories_copy(const flexco_histories_t* h) {
  if (h == nullptr) return nullptr;
  try {
    return new flexco_histories{h->h};
  } catch (...) {
    return nullptr;
  }
}

extern "C" int flexco_histories_record(flexco_histories_t* h, const char* partition, int64_t t,
                                       int64_t idle, char* err, size_t errlen) {
  try {
    if (h == nullptr || partition == nullptr) {
      put(err, errlen, "flexco_histories_record: h and partition must not be NULL");
      return -1;
    }
    auto st = h->h.record(partition, t, idle);
    if (!st.ok()) {
      put(err, errlen, st.error().message);
      return -1;
    }
    put(err, errlen, "");
    return 0;
  } catch (...) {
    put(err, errlen, "flexco_histories_record: out of memory");
    return -1;
  }
}

extern "C" char* flexco_histories_save(const flexco_histories_t* h) {
  if (h == nullptr) return nullptr;
  try {
    return c_copy(h->h.to_text());
  } catch (...) {
    return nullptr;
  }
}

extern "C" flexco_plan_cache* flexco_plan_cache_create(void) {
  try {
    return new flexco_plan_cache;
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_plan_cache_free(flexco_plan_cache* cache) { delete cache; }

extern "C" int flexco_probe_will_run_params(const char* body, size_t len,
                                            flexco_will_run_params_t* out) {
  try {
    if (out == nullptr || (body == nullptr && len != 0)) return 0;
    auto parsed = flexco::parse_probe_request(std::string_view(body ? body : "", len));
    auto* r = std::get_if<flexco::ProbeRequest>(&parsed);
    if (r == nullptr || !r->will_run || r->nodes.empty()) return 0;
    if (r->partition.size() >= sizeof(out->partition)) return 0;
    if (r->nodes.front() > static_cast<flexco::Amount>(UINT32_MAX)) return 0;
    out->nodes = static_cast<uint32_t>(r->nodes.front());
    out->duration = r->duration_for(r->nodes.front());
    out->earliest_start = r->earliest_start.value_or(0);
    std::memcpy(out->partition, r->partition.c_str(), r->partition.size() + 1);
    return 1;
  } catch (...) {
    return 0;
  }
}

extern "C" int flexco_probe_json(const flexco_snapshot_t* snap, const char* body, size_t len,
                                 int share_percent, int64_t valid_for, char** json_out,
                                 char* code, size_t codelen, char* err, size_t errlen) {
  return flexco_probe_json_ex(snap, body, len, share_percent, valid_for, nullptr, nullptr,
                              json_out, code, codelen, err, errlen);
}

namespace {

// Whether no probe planned on the snapshot yet (or it has no cache).
bool nothing_planned(const flexco_plan_cache* cache) {
  if (cache == nullptr) return true;
  std::lock_guard<std::mutex> hold(const_cast<flexco_plan_cache*>(cache)->mu);
  return cache->entries.empty();
}

int probe_json(const flexco_snapshot_t* snap, const char* body, size_t len, int share_percent,
               int64_t valid_for, const flexco_histories_t* histories,
               const flexco_will_run_answer_t* will_run, char** json_out, char* code,
               size_t codelen, char* err, size_t errlen, bool cached_only) {
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
    // A snapshot taken for this very request has nothing planned: leave
    // the request whole to the full path instead of parsing it twice.
    if (cached_only && nothing_planned(snap->plan_cache)) return 0;
    auto parsed = flexco::parse_probe_request(std::string_view(body ? body : "", len));
    if (auto* e = std::get_if<flexco::ProbeError>(&parsed))
      return fail(e->status, e->code, e->message, json_out, code, codelen, err, errlen);
    flexco::ProbePolicy policy;
    policy.cached_only = cached_only;
    auto res = flexco::probe(*snap, std::get<flexco::ProbeRequest>(parsed), share_percent,
                             valid_for, policy, histories != nullptr ? &histories->h : nullptr);
    if (auto* e = std::get_if<flexco::ProbeError>(&res)) {
      if (e->status == 0) return 0;  // cached_only: it would plan
      return fail(e->status, e->code, e->message, json_out, code, codelen, err, errlen);
    }
    auto& result = std::get<flexco::ProbeResult>(res);
    if (will_run != nullptr) {
      flexco::WillRunAnswer w;
      w.ok = will_run->ok != 0;
      w.start = will_run->start;
      w.nodes = will_run->nodes;
      w.job_id = will_run->job_id;
      if (will_run->node_list != nullptr) w.node_list = will_run->node_list;
      if (will_run->error != nullptr) w.error = will_run->error;
      result.will_run = std::move(w);
    }
    char* doc = c_copy(flexco::probe_result_to_json(result));
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

}  // namespace

extern "C" int flexco_probe_json_ex(const flexco_snapshot_t* snap, const char* body, size_t len,
                                    int share_percent, int64_t valid_for,
                                    const flexco_histories_t* histories,
                                    const flexco_will_run_answer_t* will_run, char** json_out,
                                    char* code, size_t codelen, char* err, size_t errlen) {
  return probe_json(snap, body, len, share_percent, valid_for, histories, will_run, json_out,
                    code, codelen, err, errlen, false);
}

extern "C" int flexco_probe_json_cached(const flexco_snapshot_t* snap, const char* body,
                                        size_t len, int share_percent, int64_t valid_for,
                                        const flexco_histories_t* histories,
                                        const flexco_will_run_answer_t* will_run,
                                        char** json_out, char* code, size_t codelen, char* err,
                                        size_t errlen) {
  return probe_json(snap, body, len, share_percent, valid_for, histories, will_run, json_out,
                    code, codelen, err, errlen, true);
}

extern "C" int flexco_slot_fit(const flexco_snapshot_t* snap, const char* partition,
                               int64_t start, int64_t duration, int64_t nodes,
                               int share_percent, double* fit, char* verdict,
                               size_t verdictlen, char* code, size_t codelen, char* err,
                               size_t errlen) {
  try {
    if (snap == nullptr || fit == nullptr)
      return fail(500, "internal", "flexco_slot_fit: snap and fit must not be NULL", nullptr,
                  code, codelen, err, errlen);
    if (share_percent < 1 || share_percent > 100)
      return fail(400, "bad_parameter", "flexco_slot_fit: share_percent is not in [1, 100]",
                  nullptr, code, codelen, err, errlen);
    if (nodes < 1 || duration < 1 || start < 0 || start > flexco::kForever / 4 ||
        duration > flexco::kForever / 4)
      return fail(400, "bad_request", "flexco_slot_fit: nodes and duration must be >= 1",
                  nullptr, code, codelen, err, errlen);
    flexco::ProbeRequest req;
    req.nodes = {nodes};
    req.duration = duration;
    req.earliest_start = start;
    req.latest_end = start + duration;  // the one slot: exactly at start
    req.max_offers = 1;
    if (partition != nullptr) req.partition = partition;
    auto res = flexco::probe(*snap, req, share_percent, 0);
    if (auto* e = std::get_if<flexco::ProbeError>(&res))
      return fail(e->status, e->code, e->message, nullptr, code, codelen, err, errlen);
    const auto& r = std::get<flexco::ProbeResult>(res);
    if (r.offers.empty()) {
      *fit = 0.0;
      put(verdict, verdictlen, "unavailable");
    } else {
      *fit = r.offers.front().fit;
      put(verdict, verdictlen, flexco::fit_verdict_name(r.offers.front().verdict));
    }
    put(code, codelen, "");
    put(err, errlen, "");
    return 200;
  } catch (const std::bad_alloc&) {
    return fail(500, "internal", "flexco_slot_fit: out of memory", nullptr, code, codelen, err,
                errlen);
  } catch (...) {
    return fail(500, "internal", "flexco_slot_fit: internal error", nullptr, code, codelen, err,
                errlen);
  }
}
