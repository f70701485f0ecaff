// SPDX-License-Identifier: GPL-2.0-or-later
// timefmt.hpp - times and durations read and written the way Slurm's
// commands do (sbatch --begin, sbatch -t, squeue's columns).
//
// Times on the wire are UTC epoch seconds; people read and type local time,
// as with Slurm.  Every function takes the reference time `now` explicitly
// and uses the process's time zone (TZ), so the tests can pin both.

#ifndef FLEXCO_SRESERVE_TIMEFMT_HPP
#define FLEXCO_SRESERVE_TIMEFMT_HPP

#include <cstdint>
#include <string>
#include <string_view>

namespace sreserve {

// A parse result: ok, value, or the reason it is not valid.
struct Parsed {
  bool ok = false;
  std::int64_t value = 0;
  std::string error;  // e.g. "invalid time specification \"16:99\""
};

// Duration meaning "no limit" (UNLIMITED, INFINITE, or 0 as in sbatch -t 0).
inline constexpr std::int64_t kUnlimited = -1;

// A point in time as sbatch --begin accepts it, relative to `now`:
//   now[{+|-}COUNT[UNIT]]       UNIT: seconds (default), minutes, hours,
//                               days, weeks, abbreviated s, sec, m, min,
//                               h, hr, d, w and plurals
//   HH:MM[:SS][AM|PM]           next such time of day (tomorrow if past)
//   midnight noon elevenses fika teatime   00:00 12:00 11:00 15:00 16:00
//   today tomorrow              the date (00:00:00 unless a time is given)
//   YYYY-MM-DD[THH:MM[:SS]]     ISO 8601, local time
//   MMDDYY  MM/DD[/YY]  MM.DD[.YY]   a date (year: this one, next if past)
//   a date and a time of day separated by blanks, in either order
//   @EPOCH                      seconds since the epoch (as Slurm's `date +@`)
// The result is UTC epoch seconds.
Parsed parse_time(std::string_view text, std::int64_t now);

// A time limit as sbatch -t accepts it, in seconds: "MINUTES",
// "MINUTES:SECONDS", "HOURS:MINUTES:SECONDS", "DAYS-HOURS",
// "DAYS-HOURS:MINUTES", "DAYS-HOURS:MINUTES:SECONDS"; "UNLIMITED",
// "INFINITE" and "0" give kUnlimited.  Seconds are kept exactly (sbatch
// rounds them up to whole minutes; callers that hand the value to Slurm do
// that themselves with round_up_minutes).
Parsed parse_duration(std::string_view text);

// `secs` rounded up to a whole number of minutes (kUnlimited unchanged).
std::int64_t round_up_minutes(std::int64_t secs);

// Local time as Slurm prints it: "2026-11-23T16:00:00" (or as
// set_time_format says).  0 gives "N/A".
std::string format_time(std::int64_t epoch);

// How format_time prints from now on, as SLURM_TIME_FORMAT tells Slurm's
// commands: "standard" (or ""), the default, "2026-11-23T16:00:00";
// "relative", by the distance from the day of `now`: "16:00" today,
// "Ystday 16:00", "Tomorr 16:00", "Wed 16:00" within the week ahead,
// "23 Nov 16:00" within a year, else "23 Nov 2027"; anything else is a
// strftime(3) format.  False (and *error set) for a format strftime makes
// nothing of.
bool set_time_format(const std::string& spec, std::int64_t now, std::string* error);

// A time of day only, "16:00" (for chart axes); with the date "11-23T16:00"
// when `with_date`.
std::string format_clock(std::int64_t epoch, bool with_date);

// An elapsed time as squeue prints it: "M:SS", "H:MM:SS", "D-HH:MM:SS";
// kUnlimited gives "UNLIMITED", other negatives "INVALID".
std::string format_duration(std::int64_t secs);

}  // namespace sreserve

#endif
