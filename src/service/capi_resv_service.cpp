// SPDX-License-Identifier: GPL-2.0-or-later
// capi_resv_service.cpp - see capi_resv_service.h.  The only extern "C"
// unit of the reservation service: every call catches what the C++ side
// throws and answers 500 (a request) or does nothing (the rest).

#include "service/capi_resv_service.h"

#include <new>

#include "core/capi_profile.h"
#include "service/resv_service.hpp"

using flexco::service::ResvService;

struct flexco_rsvc {
  ResvService svc;
};

namespace {

// A request that threw (out of memory): 500 with a document if one can
// still be made.
int failed(char** json_out) {
  if (json_out != nullptr) {
    std::free(*json_out);
    *json_out = flexco_error_json("internal", "out of memory");
  }
  return 500;
}

template <typename F>
int request(flexco_rsvc_t* s, char** json_out, F&& f) {
  if (json_out != nullptr) *json_out = nullptr;
  if (s == nullptr || json_out == nullptr) return failed(json_out);
  try {
    return f(s->svc);
  } catch (...) {
    return failed(json_out);
  }
}

}  // namespace

extern "C" flexco_rsvc_t* flexco_rsvc_create(void) {
  try {
    return new flexco_rsvc();
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_rsvc_destroy(flexco_rsvc_t* s) { delete s; }

extern "C" void flexco_rsvc_open(flexco_rsvc_t* s, const flexco_rsvc_conf_t* conf,
                                 const flexco_rsvc_host_t* host) {
  if (s == nullptr || conf == nullptr || host == nullptr) return;
  try {
    s->svc.open(*conf, *host);
  } catch (...) {
  }
}

extern "C" void flexco_rsvc_close(flexco_rsvc_t* s) {
  if (s == nullptr) return;
  try {
    s->svc.close();
  } catch (...) {
  }
}

extern "C" int flexco_rsvc_create_resv(flexco_rsvc_t* s, uint32_t uid, const flexco_rsvc_idem_t* rq,
                                       const char* body, size_t len, char** json_out) {
  return request(s, json_out,
                 [&](ResvService& v) { return v.create(uid, rq, body, len, json_out); });
}

extern "C" int flexco_rsvc_fence(flexco_rsvc_t* s, uint32_t uid, const char* header, bool mutating,
                                 char** json_out) {
  return request(s, json_out, [&](ResvService& v) { return v.fence(uid, header, mutating, json_out); });
}

extern "C" int flexco_rsvc_confirm(flexco_rsvc_t* s, uint32_t uid, const flexco_rsvc_idem_t* rq,
                                   const char* id, char** json_out) {
  return request(s, json_out, [&](ResvService& v) { return v.confirm(uid, rq, id, json_out); });
}

extern "C" int flexco_rsvc_modify(flexco_rsvc_t* s, uint32_t uid, const flexco_rsvc_idem_t* rq,
                                  const char* id, const char* body, size_t len, char** json_out) {
  return request(s, json_out,
                 [&](ResvService& v) { return v.modify(uid, rq, id, body, len, json_out); });
}

extern "C" int flexco_rsvc_delete(flexco_rsvc_t* s, uint32_t uid, const flexco_rsvc_idem_t* rq,
                                  const char* id, char** json_out) {
  return request(s, json_out, [&](ResvService& v) { return v.remove(uid, rq, id, json_out); });
}

extern "C" int flexco_rsvc_get(flexco_rsvc_t* s, uint32_t uid, const char* id, char** json_out) {
  return request(s, json_out, [&](ResvService& v) { return v.get(uid, id, json_out); });
}

extern "C" int flexco_rsvc_list(flexco_rsvc_t* s, uint32_t uid, char** json_out) {
  return request(s, json_out, [&](ResvService& v) { return v.list(uid, json_out); });
}

extern "C" int flexco_rsvc_job_submit(flexco_rsvc_t* s, uint32_t uid, const flexco_rsvc_idem_t* rq,
                                      const char* id, const char* body, size_t len,
                                      char** json_out) {
  return request(s, json_out,
                 [&](ResvService& v) { return v.job_submit(uid, rq, id, body, len, json_out); });
}

extern "C" int flexco_rsvc_job_get(flexco_rsvc_t* s, uint32_t uid, const char* id,
                                   const char* job_id, char** json_out) {
  return request(s, json_out, [&](ResvService& v) { return v.job_get(uid, id, job_id, json_out); });
}

extern "C" int flexco_rsvc_job_release(flexco_rsvc_t* s, uint32_t uid, const char* id,
                                       const char* job_id, const char* body, size_t len,
                                       char** json_out) {
  return request(s, json_out, [&](ResvService& v) {
    return v.job_release(uid, id, job_id, body, len, json_out);
  });
}

extern "C" void flexco_rsvc_tick(flexco_rsvc_t* s) {
  if (s == nullptr) return;
  try {
    s->svc.tick();
  } catch (...) {
  }
}

extern "C" json_t* flexco_rsvc_stats_json(flexco_rsvc_t* s) {
  if (s == nullptr) return nullptr;
  try {
    return s->svc.stats_json();
  } catch (...) {
    return nullptr;
  }
}
