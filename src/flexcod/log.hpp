// SPDX-License-Identifier: GPL-2.0-or-later
// log.hpp - flexcod's one log module.
//
// Lines look like slurmctld's: "[2026-11-23T10:33:00.123] message", with
// "error: ", "fatal: ", "debug: ", "debug2: " ... prefixes as Slurm's log.c
// writes them.  Destination: stderr in the foreground (-D), else LogFile,
// else syslog (daemon facility, ident "flexcod").  Level: DebugLevel from
// flexcod.conf, raised by each -v.  Thread-safe; reopen() after SIGHUP
// (log rotation).

#ifndef FLEXCO_FLEXCOD_LOG_HPP
#define FLEXCO_FLEXCOD_LOG_HPP

#include <string>

namespace flexcod {

enum Level { kQuiet = 0, kFatal, kError, kInfo, kVerbose, kDebug, kDebug2, kDebug3 };

// Set up (or change) the destination: foreground -> stderr; else `file` if
// not empty, else syslog.  Returns "" or the reason the file cannot be opened
// (logging then goes to stderr).
std::string log_init(bool foreground, const std::string& file, int level);
void log_set_level(int level);
int log_level();
// Reopen the log file (after rotation); no-op for stderr/syslog.
void log_reopen();

void log_msg(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace flexcod

#define fc_fatal(...) ::flexcod::log_msg(::flexcod::kFatal, __VA_ARGS__)
#define fc_error(...) ::flexcod::log_msg(::flexcod::kError, __VA_ARGS__)
#define fc_info(...) ::flexcod::log_msg(::flexcod::kInfo, __VA_ARGS__)
#define fc_verbose(...) ::flexcod::log_msg(::flexcod::kVerbose, __VA_ARGS__)
#define fc_debug(...) ::flexcod::log_msg(::flexcod::kDebug, __VA_ARGS__)
#define fc_debug2(...) ::flexcod::log_msg(::flexcod::kDebug2, __VA_ARGS__)

#endif
