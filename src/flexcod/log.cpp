// SPDX-License-Identifier: GPL-2.0-or-later
// log.cpp - see log.hpp.

#include "flexcod/log.hpp"

#include <sys/time.h>
#include <syslog.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>

namespace flexcod {

namespace {

std::mutex g_mutex;
int g_level = kInfo;
bool g_foreground = true;
bool g_syslog = false;
std::string g_file;
FILE* g_out = nullptr;  // stderr or the log file

const char* prefix(int level) {
  switch (level) {
    case kFatal: return "fatal: ";
    case kError: return "error: ";
    case kDebug: return "debug: ";
    case kDebug2: return "debug2: ";
    case kDebug3: return "debug3: ";
    default: return "";
  }
}

int syslog_priority(int level) {
  switch (level) {
    case kFatal: return LOG_CRIT;
    case kError: return LOG_ERR;
    case kInfo:
    case kVerbose: return LOG_INFO;
    default: return LOG_DEBUG;
  }
}

}  // namespace

std::string log_init(bool foreground, const std::string& file, int level) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_level = level;
  g_foreground = foreground;
  g_file = foreground ? std::string() : file;
  if (g_out != nullptr && g_out != stderr) std::fclose(g_out);
  g_out = stderr;
  if (g_syslog) {
    closelog();
    g_syslog = false;
  }
  if (foreground && file.empty()) return {};
  g_file = file;
  if (!g_file.empty()) {
    FILE* f = std::fopen(g_file.c_str(), "a");
    if (f == nullptr) {
      const std::string why = g_file + ": " + std::strerror(errno);
      g_file.clear();
      return why;
    }
    setvbuf(f, nullptr, _IOLBF, 0);
    g_out = f;
    return {};
  }
  openlog("flexcod", LOG_PID, LOG_DAEMON);
  g_syslog = true;
  return {};
}

void log_set_level(int level) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_level = level;
}

int log_level() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_level;
}

void log_reopen() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_file.empty() || g_out == nullptr || g_out == stderr) return;
  FILE* f = std::fopen(g_file.c_str(), "a");
  if (f == nullptr) return;  // keep writing to the old one
  setvbuf(f, nullptr, _IOLBF, 0);
  std::fclose(g_out);
  g_out = f;
}

void log_msg(int level, const char* fmt, ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (level > g_level && level != kFatal) return;
  if (g_syslog) {
    syslog(syslog_priority(level), "%s%s", prefix(level), text);
    return;
  }
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm t;
  localtime_r(&tv.tv_sec, &t);
  char stamp[64];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &t);
  FILE* out = g_out != nullptr ? g_out : stderr;
  std::fprintf(out, "[%s.%03ld] %s%s\n", stamp, static_cast<long>(tv.tv_usec / 1000),
               prefix(level), text);
  std::fflush(out);
  if (g_foreground && out != stderr) {  // -D: copied to stderr, like slurmctld -D
    std::fprintf(stderr, "[%s.%03ld] %s%s\n", stamp, static_cast<long>(tv.tv_usec / 1000),
                 prefix(level), text);
  }
}

}  // namespace flexcod
