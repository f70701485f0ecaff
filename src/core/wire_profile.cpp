// SPDX-License-Identifier: GPL-2.0-or-later
// wire_profile.cpp - JSON of availability profiles and HTTP errors
// (see wire_profile.hpp and doc/availability.md).

#include "core/wire_profile.hpp"

#include <jansson.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace flexco {

namespace {

struct JsonFree {
  void operator()(json_t* j) const noexcept { json_decref(j); }
};
using JsonPtr = std::unique_ptr<json_t, JsonFree>;

// jansson reports allocation failure as NULL.
json_t* must(json_t* j) {
  if (j == nullptr) throw std::bad_alloc();
  return j;
}

void set(json_t* obj, const char* key, json_t* value) {
  JsonPtr owned(must(value));
  if (json_object_set_new(obj, key, owned.release()) != 0)
    throw std::bad_alloc();
}

json_t* str(std::string_view s) {
  std::string clean = utf8_sanitize(s);
  return must(json_stringn(clean.data(), clean.size()));
}

json_t* integer(std::int64_t v) { return must(json_integer(v)); }

struct DumpSink {
  std::string out;
  bool oom = false;
};

int dump_cb(const char* buffer, size_t size, void* data) {
  auto* sink = static_cast<DumpSink*>(data);
  try {
    sink->out.append(buffer, size);
    return 0;
  } catch (...) {
    sink->oom = true;
    return -1;
  }
}

std::string dump(const json_t* root) {
  DumpSink sink;
  if (json_dump_callback(root, dump_cb, &sink, JSON_COMPACT) != 0)
    throw std::bad_alloc();  // the only way our documents fail to dump
  return std::move(sink.out);
}

// ---------------------------------------------------------------------------
// Reading: each getter names the member's path in its error.

class Reader {
 public:
  explicit Reader(const char* where) : where_(where) {}

  bool failed() const { return !error_.empty(); }
  Error error() const { return Error{Errc::kInvalidArgument, error_}; }

  void fail(const std::string& path, const std::string& what) {
    if (error_.empty())
      error_ = std::string(where_) + ": " + path + ": " + what;
  }

  json_t* member(json_t* obj, const std::string& path, const char* key) {
    json_t* v = json_object_get(obj, key);
    if (v == nullptr) fail(join(path, key), "missing");
    return v;
  }

  json_t* object(json_t* obj, const std::string& path, const char* key) {
    json_t* v = member(obj, path, key);
    if (v != nullptr && !json_is_object(v)) {
      fail(join(path, key), "not an object");
      return nullptr;
    }
    return v;
  }

  std::int64_t integer(json_t* obj, const std::string& path, const char* key,
                       std::int64_t lo, std::int64_t hi) {
    json_t* v = member(obj, path, key);
    if (v == nullptr) return 0;
    if (!json_is_integer(v)) {
      fail(join(path, key), "not an integer");
      return 0;
    }
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) {
      fail(join(path, key), std::to_string(x) + " outside [" +
                                std::to_string(lo) + ", " + std::to_string(hi) +
                                "]");
      return 0;
    }
    return x;
  }

  // An integer in [lo, hi] or null (returned as `null_value`).
  std::int64_t integer_or_null(json_t* obj, const std::string& path,
                               const char* key, std::int64_t lo,
                               std::int64_t hi, std::int64_t null_value) {
    json_t* v = member(obj, path, key);
    if (v != nullptr && json_is_null(v)) return null_value;
    return integer(obj, path, key, lo, hi);
  }

  bool boolean(json_t* obj, const std::string& path, const char* key) {
    json_t* v = member(obj, path, key);
    if (v == nullptr) return false;
    if (!json_is_boolean(v)) {
      fail(join(path, key), "not a boolean");
      return false;
    }
    return json_is_true(v);
  }

  std::string string(json_t* obj, const std::string& path, const char* key) {
    json_t* v = member(obj, path, key);
    if (v == nullptr) return std::string();
    if (!json_is_string(v)) {
      fail(join(path, key), "not a string");
      return std::string();
    }
    return std::string(json_string_value(v), json_string_length(v));
  }

  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }

 private:
  const char* where_;
  std::string error_;
};

JsonPtr parse(std::string_view text, Reader& rd) {
  json_error_t jerr;
  JsonPtr root(
      json_loadb(text.data(), text.size(), JSON_REJECT_DUPLICATES, &jerr));
  if (!root) {
    rd.fail("document", std::string(jerr.text) + " (line " +
                            std::to_string(jerr.line) + ", column " +
                            std::to_string(jerr.column) + ")");
    return nullptr;
  }
  if (!json_is_object(root.get())) {
    rd.fail("document", "not a JSON object");
    return nullptr;
  }
  return root;
}

}  // namespace

std::string utf8_sanitize(std::string_view text) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0, n = text.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80)
        ok = false;
      else
        cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok && ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (ok) {
      out.append(text.data() + i, len);
      i += len;
    } else {
      out.append(kReplacement);
      ++i;
    }
  }
  return out;
}

std::string availability_to_json(const Availability& a) {
  JsonPtr root(must(json_object()));
  json_t* r = root.get();
  set(r, "cluster", str(a.cluster));
  set(r, "partition", str(a.partition));
  set(r, "partition_up", json_boolean(a.partition_up));
  set(r, "snapshot_time", integer(a.when));
  set(r, "horizon_end", integer(a.horizon_end));
  set(r, "share_percent", integer(a.share_percent));

  JsonPtr bf(must(json_object()));
  if (a.bf_last_cycle > 0) {
    set(bf.get(), "last_cycle", integer(a.bf_last_cycle));
    set(bf.get(), "active", json_boolean(a.bf_active));
    set(bf.get(), "plan_age",
        integer(a.when > a.bf_last_cycle ? a.when - a.bf_last_cycle : 0));
  } else {
    set(bf.get(), "last_cycle", json_null());
    set(bf.get(), "active", json_boolean(a.bf_active));
    set(bf.get(), "plan_age", json_null());
  }
  set(r, "backfill", bf.release());

  JsonPtr nodes(must(json_object()));
  set(nodes.get(), "total", integer(a.nodes_total));
  set(nodes.get(), "available", integer(a.nodes_available));
  set(nodes.get(), "published", integer(a.nodes_published));
  set(r, "nodes", nodes.release());

  JsonPtr cpus(must(json_object()));
  set(cpus.get(), "total", integer(a.cpus_total));
  set(cpus.get(), "available", integer(a.cpus_available));
  set(cpus.get(), "published", integer(a.cpus_published));
  set(r, "cpus", cpus.release());

  JsonPtr steps(must(json_array()));
  for (const Step& s : a.steps) {
    JsonPtr o(must(json_object()));
    set(o.get(), "start", integer(s.start));
    set(o.get(), "end", integer(s.end));
    set(o.get(), "free_nodes", integer(s.free_nodes));
    set(o.get(), "free_cpus", integer(s.free_cpus));
    if (json_array_append_new(steps.get(), o.release()) != 0)
      throw std::bad_alloc();
  }
  set(r, "steps", steps.release());
  return dump(r);
}

Result<Availability> availability_from_json(std::string_view text, Duration clock_shift) {
  constexpr std::int64_t kTimeMax = kForever - 1;
  Reader rd("availability_from_json");
  JsonPtr root = parse(text, rd);
  if (!root) return rd.error();
  json_t* r = root.get();

  std::string cluster = rd.string(r, "", "cluster");
  std::string partition = rd.string(r, "", "partition");
  bool up = rd.boolean(r, "", "partition_up");
  Time when = rd.integer(r, "", "snapshot_time", 0, kTimeMax);
  Time horizon_end = rd.integer(r, "", "horizon_end", 0, kTimeMax);
  int share = static_cast<int>(rd.integer(r, "", "share_percent", 1, 100));

  Time bf_last = 0;
  bool bf_active = false;
  if (json_t* bf = rd.object(r, "", "backfill")) {
    bf_last = rd.integer_or_null(bf, "backfill", "last_cycle", 1, kTimeMax, 0);
    bf_active = rd.boolean(bf, "backfill", "active");
  }
  Amount counts[2][3] = {{0, 0, 0}, {0, 0, 0}};
  const char* dims[2] = {"nodes", "cpus"};
  for (int d = 0; d < 2; ++d) {
    if (json_t* o = rd.object(r, "", dims[d])) {
      counts[d][0] = rd.integer(o, dims[d], "total", 0, kMaxAmount);
      counts[d][1] = rd.integer(o, dims[d], "available", 0, kMaxAmount);
      counts[d][2] = rd.integer(o, dims[d], "published", 0, kMaxAmount);
      if (!rd.failed() && counts[d][1] > counts[d][0])
        rd.fail(std::string(dims[d]) + ".available", "exceeds total");
      if (!rd.failed() && counts[d][2] > counts[d][0])
        rd.fail(std::string(dims[d]) + ".published", "exceeds total");
    }
  }
  if (!rd.failed() && horizon_end <= when)
    rd.fail("horizon_end", "not after snapshot_time");

  std::vector<Step> steps;
  json_t* arr = rd.member(r, "", "steps");
  if (arr != nullptr && !json_is_array(arr)) rd.fail("steps", "not an array");
  if (!rd.failed()) {
    if (json_array_size(arr) == 0) rd.fail("steps", "empty");
    for (std::size_t i = 0; !rd.failed() && i < json_array_size(arr); ++i) {
      std::string path = "steps[" + std::to_string(i) + "]";
      json_t* o = json_array_get(arr, i);
      if (!json_is_object(o)) {
        rd.fail(path, "not an object");
        break;
      }
      Step s{rd.integer(o, path, "start", 0, kTimeMax),
             rd.integer(o, path, "end", 0, kTimeMax),
             rd.integer(o, path, "free_nodes", 0, counts[0][2]),
             rd.integer(o, path, "free_cpus", 0, counts[1][2])};
      if (rd.failed()) break;
      Time expect = steps.empty() ? when : steps.back().end;
      if (s.start != expect)
        rd.fail(path + ".start", std::to_string(s.start) + ", expected " +
                                     std::to_string(expect));
      else if (s.end <= s.start)
        rd.fail(path + ".end", "not after start");
      steps.push_back(s);
    }
    if (!rd.failed() && steps.back().end != horizon_end)
      rd.fail("steps", "last end " + std::to_string(steps.back().end) +
                           " is not horizon_end " +
                           std::to_string(horizon_end));
  }
  if (rd.failed()) return rd.error();

  if (clock_shift != 0) {
    // Checked above: every time is in [0, kTimeMax]; a shift that takes
    // one out of it is no clock this reader can plan with.
    auto out = [&](Time t) { return t - clock_shift < 0 || t - clock_shift > kTimeMax; };
    if (out(when) || out(horizon_end))
      return Error{Errc::kInvalidArgument, "availability_from_json: clock shift " +
                                               std::to_string(clock_shift) + " out of range"};
    when -= clock_shift;
    horizon_end -= clock_shift;
    if (bf_last != 0) bf_last = std::max<Time>(1, bf_last - clock_shift);
    for (Step& s : steps) {
      s.start -= clock_shift;
      s.end -= clock_shift;
    }
  }
  auto profiles = profiles_from_steps(steps, counts[0][2], counts[1][2]);
  if (!profiles.ok())
    return Error{Errc::kInvalidArgument,
                 "availability_from_json: " + profiles.error().message};
  PublishedProfiles p = std::move(profiles).value();
  return Availability{std::move(cluster),
                      std::move(partition),
                      up,
                      when,
                      horizon_end,
                      bf_last,
                      bf_active,
                      share,
                      counts[0][0],
                      counts[0][1],
                      counts[0][2],
                      counts[1][0],
                      counts[1][1],
                      counts[1][2],
                      std::move(p.nodes),
                      std::move(p.cpus),
                      std::move(steps)};
}

std::string error_json(std::string_view code, std::string_view message) {
  JsonPtr root(must(json_object()));
  JsonPtr err(must(json_object()));
  set(err.get(), "code", str(code));
  set(err.get(), "message", str(message));
  set(root.get(), "error", err.release());
  return dump(root.get());
}

Result<WireError> error_from_json(std::string_view text) {
  Reader rd("error_from_json");
  JsonPtr root = parse(text, rd);
  if (!root) return rd.error();
  WireError out;
  if (json_t* e = rd.object(root.get(), "", "error")) {
    out.code = rd.string(e, "error", "code");
    out.message = rd.string(e, "error", "message");
  }
  if (rd.failed()) return rd.error();
  return out;
}

}  // namespace flexco
