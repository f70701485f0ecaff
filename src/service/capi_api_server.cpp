// SPDX-License-Identifier: GPL-2.0-or-later
// capi_api_server.cpp - see capi_api_server.h.  The only extern "C" unit
// of the plugin's HTTP service: every call catches what the C++ side
// throws and fails (-1, false, 0) or does nothing.

#include "service/capi_api_server.h"

#include <new>
#include <string>

#include "core/capi_profile.h"
#include "service/api_server.hpp"

using flexco::service::ApiServer;
using flexco::service::IdleServer;

struct flexco_api_server {
  ApiServer server;
};

struct flexco_api_idle {
  explicit flexco_api_idle(std::string body, IdleServer::Log log, void* arg)
      : server(std::move(body), log, arg) {}
  IdleServer server;
};

extern "C" flexco_api_server_t* flexco_api_server_create(void) {
  try {
    return new flexco_api_server();
  } catch (...) {
    return nullptr;
  }
}

extern "C" void flexco_api_server_destroy(flexco_api_server_t* s) {
  try {
    delete s;
  } catch (...) {
  }
}

extern "C" int flexco_api_server_start(flexco_api_server_t* s, const flexco_api_conf_t* conf,
                                       const flexco_api_host_t* host) {
  if (s == nullptr || conf == nullptr || host == nullptr) return -1;
  try {
    return s->server.start(*conf, *host);
  } catch (...) {
    try {
      s->server.stop();
    } catch (...) {
    }
    return -1;
  }
}

extern "C" bool flexco_api_server_running(flexco_api_server_t* s) {
  try {
    return s != nullptr && s->server.running();
  } catch (...) {
    return false;
  }
}

extern "C" uint16_t flexco_api_server_port(flexco_api_server_t* s) {
  try {
    return s != nullptr ? s->server.port() : 0;
  } catch (...) {
    return 0;
  }
}

extern "C" void flexco_api_server_stop(flexco_api_server_t* s) {
  if (s == nullptr) return;
  try {
    s->server.stop();
  } catch (...) {
  }
}

extern "C" void flexco_api_server_notify(flexco_api_server_t* s) {
  if (s == nullptr) return;
  try {
    s->server.notify();
  } catch (...) {
  }
}

extern "C" int flexco_api_idle_start(const char* address, uint16_t port, const char* why,
                                     void (*log)(void* arg, int level, const char* msg),
                                     void* log_arg, flexco_api_idle_t** out) {
  *out = nullptr;
  try {
    const std::string msg =
        std::string("FlexCo is idle on this cluster: ") +
        (why != nullptr && *why ? why : "flexco.conf is unusable (see slurmctld's log)") +
        "; the cluster's admin must fix flexco.conf and reconfigure or restart slurmctld";
    char* body = flexco_error_json("flexco_idle", msg.c_str());
    if (body == nullptr) return -2;
    std::string text(body);
    std::free(body);
    auto* i = new flexco_api_idle(std::move(text), log, log_arg);
    const int rc = i->server.start(address, port);
    if (rc != 0) {
      delete i;
      return rc;
    }
    *out = i;
    return 0;
  } catch (...) {
    return -2;
  }
}

extern "C" uint16_t flexco_api_idle_port(flexco_api_idle_t* i) {
  try {
    return i != nullptr ? i->server.port() : 0;
  } catch (...) {
    return 0;
  }
}

extern "C" void flexco_api_idle_stop(flexco_api_idle_t* i) {
  try {
    delete i;
  } catch (...) {
  }
}
