// SPDX-License-Identifier: GPL-2.0-or-later
// capi_events_service.cpp - see capi_events_service.h.  The only extern
// "C" unit of the events service: every call catches what the C++ side
// throws and then does nothing (or answers NULL, 0 or -1).

#include "service/capi_events_service.h"

#include "service/events_service.hpp"

using flexco::service::EventsService;

struct flexco_esvc {
  EventsService svc;
};

extern "C" flexco_esvc_t* flexco_esvc_create(void) {
  try {
    return new flexco_esvc();
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_esvc_destroy(flexco_esvc_t* s) {
  try {
    delete s;
  } catch (...) {
  }
}

extern "C" int flexco_esvc_open(flexco_esvc_t* s, uint32_t capacity,
                                const flexco_esvc_host_t* host, bool thread) {
  if (s == nullptr || host == nullptr) return -1;
  try {
    return s->svc.open(capacity, *host, thread);
  } catch (...) {
    return -1;
  }
}

extern "C" void flexco_esvc_close(flexco_esvc_t* s) {
  if (s == nullptr) return;
  try {
    s->svc.close();
  } catch (...) {
  }
}

extern "C" void flexco_esvc_cycle(flexco_esvc_t* s) {
  if (s == nullptr) return;
  try {
    s->svc.cycle();
  } catch (...) {
  }
}

extern "C" void flexco_esvc_job_end(flexco_esvc_t* s, const flexco_esvc_job_t* job) {
  if (s != nullptr && job != nullptr) s->svc.job_end(*job);  // noexcept
}

extern "C" int flexco_esvc_publish(flexco_esvc_t* s, const char* type, json_t* fields,
                                   const flexco_evstate_acl_t* acl, int64_t now, bool refuse) {
  if (s == nullptr) {
    json_decref(fields);
    return -1;
  }
  try {
    return s->svc.publish(type, fields, acl, now, refuse);
  } catch (...) {
    return -1;
  }
}

extern "C" uint64_t flexco_esvc_latest(flexco_esvc_t* s) {
  if (s == nullptr) return 0;
  try {
    return s->svc.latest();
  } catch (...) {
    return 0;
  }
}

extern "C" void flexco_esvc_set_listener(flexco_esvc_t* s, void (*fn)(void)) {
  if (s == nullptr) return;
  try {
    s->svc.set_listener(fn);
  } catch (...) {
  }
}

extern "C" char* flexco_esvc_query(flexco_esvc_t* s, uint64_t after, uint32_t max,
                                   const void* viewer, flexco_ring_page_t* page) {
  if (s == nullptr || page == nullptr) return nullptr;
  try {
    return s->svc.query(after, max, viewer, page);
  } catch (...) {
    return nullptr;
  }
}

extern "C" json_t* flexco_esvc_stats_json(flexco_esvc_t* s) {
  if (s == nullptr) return nullptr;
  try {
    return s->svc.stats_json();
  } catch (...) {
    return nullptr;
  }
}
