// SPDX-License-Identifier: GPL-2.0-or-later
// host_log.hpp - the log line of a service that logs through its host's
// log(arg, level, msg) (resv_service, events_service): printf-style, at
// most 1023 bytes, nothing if the host has no log.

#ifndef FLEXCO_SERVICE_HOST_LOG_HPP
#define FLEXCO_SERVICE_HOST_LOG_HPP

#include <cstdarg>
#include <cstdio>

namespace flexco::service {

inline void host_vlog(void (*log)(void* arg, int level, const char* msg), void* arg, int level,
                      const char* fmt, va_list ap) {
  char msg[1024];
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  if (log != nullptr) log(arg, level, msg);
}

}  // namespace flexco::service

#endif
