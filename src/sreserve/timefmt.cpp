// SPDX-License-Identifier: GPL-2.0-or-later
// timefmt.cpp - Slurm-style time and duration parsing and printing.

#include "sreserve/timefmt.hpp"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <limits>
#include <vector>

namespace sreserve {

namespace {

constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;  // far beyond any sane time

Parsed fail(std::string_view what, std::string_view text) {
  Parsed p;
  p.error = std::string(what) + " \"" + std::string(text) + "\"";
  return p;
}

Parsed good(std::int64_t v) {
  Parsed p;
  p.ok = true;
  p.value = v;
  return p;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Non-negative decimal number of at most 12 digits.
bool to_int(std::string_view s, std::int64_t* out) {
  if (!all_digits(s) || s.size() > 12) return false;
  std::int64_t v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  *out = v;
  return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (true) {
    std::size_t next = s.find(sep, pos);
    if (next == std::string_view::npos) {
      parts.push_back(s.substr(pos));
      return parts;
    }
    parts.push_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
}

// Seconds per unit name, 0 if unknown.
std::int64_t unit_seconds(std::string_view u) {
  static const struct {
    const char* name;
    std::int64_t secs;
  } kUnits[] = {{"", 1},           {"s", 1},         {"sec", 1},        {"secs", 1},
                {"second", 1},     {"seconds", 1},   {"m", 60},         {"min", 60},
                {"mins", 60},      {"minute", 60},   {"minutes", 60},   {"h", 3600},
                {"hr", 3600},      {"hrs", 3600},    {"hour", 3600},    {"hours", 3600},
                {"d", 86400},      {"day", 86400},   {"days", 86400},   {"w", 604800},
                {"week", 604800},  {"weeks", 604800}};
  for (const auto& unit : kUnits)
    if (u == unit.name) return unit.secs;
  return 0;
}

struct Clock {
  bool set = false;
  int h = 0, m = 0, s = 0;
};

struct Date {
  bool set = false;
  bool year_given = true;
  int y = 0, mon = 0, d = 0;  // mon 1..12
};

// "HH:MM[:SS]" with an optional "am"/"pm" suffix.
bool parse_clock(std::string_view tok, Clock* c) {
  std::string_view ampm;
  if (tok.size() > 2 && (tok.substr(tok.size() - 2) == "am" || tok.substr(tok.size() - 2) == "pm")) {
    ampm = tok.substr(tok.size() - 2);
    tok.remove_suffix(2);
  }
  auto parts = split(tok, ':');
  if (parts.size() < 2 || parts.size() > 3) return false;
  std::int64_t v[3] = {0, 0, 0};
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (parts[i].size() > 2 || !to_int(parts[i], &v[i])) return false;
  if (v[1] > 59 || v[2] > 59) return false;
  if (ampm.empty()) {
    if (v[0] > 23) return false;
  } else {
    if (v[0] < 1 || v[0] > 12) return false;
    v[0] = v[0] % 12 + (ampm == "pm" ? 12 : 0);
  }
  c->set = true;
  c->h = static_cast<int>(v[0]);
  c->m = static_cast<int>(v[1]);
  c->s = static_cast<int>(v[2]);
  return true;
}

bool keyword_clock(std::string_view tok, Clock* c) {
  static const struct {
    const char* name;
    int hour;
  } kWords[] = {{"midnight", 0}, {"noon", 12}, {"elevenses", 11}, {"fika", 15}, {"teatime", 16}};
  for (const auto& w : kWords)
    if (tok == w.name) {
      *c = Clock{true, w.hour, 0, 0};
      return true;
    }
  return false;
}

int two_digit_year(std::int64_t yy) { return static_cast<int>(yy < 100 ? 2000 + yy : yy); }

bool parse_date(std::string_view tok, Date* d) {
  std::int64_t a = 0, b = 0, c = 0;
  if (tok.size() == 10 && tok[4] == '-' && tok[7] == '-') {  // YYYY-MM-DD
    if (!to_int(tok.substr(0, 4), &a) || !to_int(tok.substr(5, 2), &b) ||
        !to_int(tok.substr(8, 2), &c))
      return false;
    *d = Date{true, true, static_cast<int>(a), static_cast<int>(b), static_cast<int>(c)};
    return true;
  }
  if (tok.size() == 6 && all_digits(tok)) {  // MMDDYY
    to_int(tok.substr(0, 2), &a);
    to_int(tok.substr(2, 2), &b);
    to_int(tok.substr(4, 2), &c);
    *d = Date{true, true, two_digit_year(c), static_cast<int>(a), static_cast<int>(b)};
    return true;
  }
  for (char sep : {'/', '.'}) {  // MM/DD[/YY]  MM.DD[.YY]
    if (tok.find(sep) == std::string_view::npos) continue;
    auto parts = split(tok, sep);
    if (parts.size() < 2 || parts.size() > 3) return false;
    if (parts[0].size() > 2 || parts[1].size() > 2 || !to_int(parts[0], &a) ||
        !to_int(parts[1], &b))
      return false;
    Date r{true, false, 0, static_cast<int>(a), static_cast<int>(b)};
    if (parts.size() == 3) {
      if ((parts[2].size() != 2 && parts[2].size() != 4) || !to_int(parts[2], &c)) return false;
      r.year_given = true;
      r.y = two_digit_year(c);
    }
    *d = r;
    return true;
  }
  return false;
}

// mktime of a local date and time; false if the fields do not name a real
// time (Feb 30, month 13).
bool make_local(int y, int mon, int d, const Clock& c, std::int64_t* out) {
  if (mon < 1 || mon > 12 || d < 1 || d > 31 || y < 1970 || y > 9999) return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = d;
  tm.tm_hour = c.h;
  tm.tm_min = c.m;
  tm.tm_sec = c.s;
  tm.tm_isdst = -1;
  std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return false;
  if (tm.tm_mday != d || tm.tm_mon != mon - 1) return false;
  *out = static_cast<std::int64_t>(t);
  return true;
}

std::tm local_tm(std::int64_t epoch) {
  std::time_t t = static_cast<std::time_t>(epoch);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

Parsed parse_now(std::string_view text, std::string_view rest, std::int64_t now) {
  rest = trim(rest);
  if (rest.empty()) return good(now);
  int sign = 0;
  if (rest.front() == '+') sign = 1;
  if (rest.front() == '-') sign = -1;
  if (sign == 0) return fail("invalid time specification", text);
  rest = trim(rest.substr(1));
  std::size_t n = 0;
  while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
  std::int64_t count = 0;
  if (!to_int(rest.substr(0, n), &count) || count > kMaxCount)
    return fail("invalid time specification", text);
  std::int64_t unit = unit_seconds(trim(rest.substr(n)));
  if (unit == 0) return fail("invalid time unit in", text);
  return good(now + sign * count * unit);
}

}  // namespace

Parsed parse_time(std::string_view text, std::int64_t now) {
  std::string low = lower(trim(text));
  std::string_view s = low;
  if (s.empty()) return fail("empty time specification", text);
  if (s.front() == '@') {
    std::int64_t v = 0;
    if (!to_int(s.substr(1), &v)) return fail("invalid time specification", text);
    return good(v);
  }
  if (s.substr(0, 3) == "now") return parse_now(text, s.substr(3), now);

  // Tokens separated by blanks; an ISO "DATEtTIME" is two tokens.
  std::vector<std::string_view> toks;
  for (auto word : split(s, ' ')) {
    word = trim(word);
    if (word.empty()) continue;
    std::size_t t = word.find('t');
    if (t == 10 && word.size() > 11 && word[4] == '-') {
      toks.push_back(word.substr(0, 10));
      toks.push_back(word.substr(11));
    } else {
      toks.push_back(word);
    }
  }
  Clock clock;
  Date date;
  int day_offset = -1;  // today: 0, tomorrow: 1
  for (std::size_t i = 0; i < toks.size(); ++i) {
    std::string_view tok = toks[i];
    // "4:00 pm": a separate am/pm joins the clock before it
    std::string joined;
    if (i + 1 < toks.size() && (toks[i + 1] == "am" || toks[i + 1] == "pm") &&
        tok.find(':') != std::string_view::npos) {
      joined = std::string(tok) + std::string(toks[i + 1]);
      tok = joined;
      ++i;
    }
    Clock c;
    Date d;
    if (parse_clock(tok, &c) || keyword_clock(tok, &c)) {
      if (clock.set) return fail("two times of day in", text);
      clock = c;
    } else if (tok == "today" || tok == "tomorrow") {
      if (date.set || day_offset >= 0) return fail("two dates in", text);
      day_offset = tok == "today" ? 0 : 1;
    } else if (parse_date(tok, &d)) {
      if (date.set || day_offset >= 0) return fail("two dates in", text);
      date = d;
    } else {
      return fail("invalid time specification", text);
    }
  }

  std::tm today = local_tm(now);
  std::int64_t out = 0;
  if (day_offset >= 0) {
    if (!make_local(today.tm_year + 1900, today.tm_mon + 1, today.tm_mday, clock, &out))
      return fail("invalid time specification", text);
    if (day_offset == 1) {
      // the next calendar day at that clock time (DST-safe via mktime)
      std::tm tm = local_tm(out);
      tm.tm_mday += 1;
      tm.tm_isdst = -1;
      out = static_cast<std::int64_t>(std::mktime(&tm));
    }
    return good(out);
  }
  if (date.set) {
    int y = date.year_given ? date.y : today.tm_year + 1900;
    if (!make_local(y, date.mon, date.d, clock, &out))
      return fail("invalid date in", text);
    if (!date.year_given && out < now && !make_local(y + 1, date.mon, date.d, clock, &out))
      return fail("invalid date in", text);
    return good(out);
  }
  // a time of day only: today, or tomorrow if it has passed
  if (!make_local(today.tm_year + 1900, today.tm_mon + 1, today.tm_mday, clock, &out))
    return fail("invalid time specification", text);
  if (out <= now) {
    std::tm tm = local_tm(out);
    tm.tm_mday += 1;
    tm.tm_isdst = -1;
    out = static_cast<std::int64_t>(std::mktime(&tm));
  }
  return good(out);
}

Parsed parse_duration(std::string_view text) {
  std::string low = lower(trim(text));
  std::string_view s = low;
  if (s == "unlimited" || s == "infinite") return good(kUnlimited);
  if (s.empty()) return fail("invalid time limit", text);
  std::int64_t days = 0, f[3] = {0, 0, 0};
  bool has_days = false;
  std::size_t dash = s.find('-');
  if (dash != std::string_view::npos) {
    if (!to_int(s.substr(0, dash), &days)) return fail("invalid time limit", text);
    has_days = true;
    s = s.substr(dash + 1);
  }
  auto parts = split(s, ':');
  if (parts.size() > 3) return fail("invalid time limit", text);
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (!to_int(parts[i], &f[i])) return fail("invalid time limit", text);
  std::int64_t secs = 0;
  if (has_days) {  // D-H, D-H:M, D-H:M:S
    secs = days * 86400 + f[0] * 3600 + f[1] * 60 + f[2];
  } else if (parts.size() == 1) {  // minutes
    secs = f[0] * 60;
  } else if (parts.size() == 2) {  // minutes:seconds
    secs = f[0] * 60 + f[1];
  } else {  // hours:minutes:seconds
    secs = f[0] * 3600 + f[1] * 60 + f[2];
  }
  if (days > 100000 || secs > 100000 * std::int64_t{86400})
    return fail("time limit too large", text);
  if (secs == 0) return good(kUnlimited);  // sbatch: 0 means no limit
  return good(secs);
}

std::int64_t round_up_minutes(std::int64_t secs) {
  if (secs < 0) return secs;
  return (secs + 59) / 60 * 60;
}

namespace {

enum class TimeStyle { kStandard, kRelative, kStrftime };
TimeStyle g_style = TimeStyle::kStandard;
std::string g_strftime;       // kStrftime
std::int64_t g_today = 0;     // kRelative: the local day of `now`

// Days since 1970-01-01 of the local date of `epoch`.
std::int64_t local_day(std::int64_t epoch) {
  std::tm tm = local_tm(epoch);
  std::int64_t t = epoch + tm.tm_gmtoff;
  return t >= 0 ? t / 86400 : (t - 86399) / 86400;
}

std::string strftime_string(const char* fmt, const std::tm& tm) {
  char buf[256];
  std::size_t n = std::strftime(buf, sizeof buf, fmt, &tm);
  return std::string(buf, n);
}

// The format for a time `d` local days from the day of `now`.
const char* relative_format(std::int64_t d) {
  if (d == 0) return "%H:%M";
  if (d == -1) return "Ystday %H:%M";
  if (d == 1) return "Tomorr %H:%M";
  if (d > 1 && d < 7) return "%a %H:%M";
  if (d > -366 && d < 366) return "%-d %b %H:%M";
  return "%-d %b %Y";
}

}  // namespace

bool set_time_format(const std::string& spec, std::int64_t now, std::string* error) {
  if (spec.empty() || spec == "standard") {
    g_style = TimeStyle::kStandard;
    return true;
  }
  if (spec == "relative") {
    g_style = TimeStyle::kRelative;
    g_today = local_day(now);
    return true;
  }
  if (strftime_string(spec.c_str(), local_tm(now)).empty()) {
    *error = "SLURM_TIME_FORMAT: \"" + spec + "\" gives no text or more than 255 characters (standard, relative or a strftime format)";
    return false;
  }
  g_style = TimeStyle::kStrftime;
  g_strftime = spec;
  return true;
}

std::string format_time(std::int64_t epoch) {
  if (epoch <= 0) return "N/A";
  std::tm tm = local_tm(epoch);
  switch (g_style) {
    case TimeStyle::kRelative: return strftime_string(relative_format(local_day(epoch) - g_today), tm);
    case TimeStyle::kStrftime: return strftime_string(g_strftime.c_str(), tm);
    default: return strftime_string("%Y-%m-%dT%H:%M:%S", tm);
  }
}

std::string format_clock(std::int64_t epoch, bool with_date) {
  std::tm tm = local_tm(epoch);
  char buf[32];
  std::strftime(buf, sizeof buf, with_date ? "%m-%dT%H:%M" : "%H:%M", &tm);
  return buf;
}

std::string format_duration(std::int64_t secs) {
  if (secs == kUnlimited) return "UNLIMITED";
  if (secs < 0) return "INVALID";
  std::int64_t d = secs / 86400, h = secs / 3600 % 24, m = secs / 60 % 60, s = secs % 60;
  char buf[64];
  if (d > 0)
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(d),
                  static_cast<long long>(h), static_cast<long long>(m), static_cast<long long>(s));
  else if (h > 0)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(m),
                  static_cast<long long>(s));
  return buf;
}

}  // namespace sreserve
