// SPDX-License-Identifier: GPL-2.0-or-later
// capi_decode.cpp - strict decoders of the plugin's request bodies and
// query parameters (capi_decode.h).  jansson and libc only: every string
// kept is malloc'd, every message bounded.

#include "core/capi_decode.h"
#include "core/capi_auth.h"

#include <jansson.h>

#include <cctype>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <set>
#include <string>
#include <utility>

#include "core/capi_profile.h"
#include "core/epoch.hpp"

namespace {

// 400 with a formatted message (at most 511 bytes) under `code`.
int fail(char** json_out, const char* code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
int fail(char** json_out, const char* code, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (json_out) *json_out = flexco_error_json(code, msg);
  return 400;
}

// The body as a JSON object without duplicate members, else 400.
json_t* object_body(const char* body, size_t len, char** json_out, int* status) {
  json_error_t jerr;
  if (!body || !len) {
    *status = fail(json_out, "bad_request", "a JSON object body is required");
    return nullptr;
  }
  json_t* o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!o || !json_is_object(o)) {
    if (o)
      *status = fail(json_out, "bad_request", "the body must be a JSON object");
    else
      *status = fail(json_out, "bad_request", "invalid JSON at line %d column %d: %s", jerr.line,
                     jerr.column, jerr.text);
    json_decref(o);
    return nullptr;
  }
  return o;
}

// The first member of o not in allowed (NULL-terminated), or NULL.
const char* unknown_member(json_t* o, const char* const* allowed) {
  const char* key;
  json_t* v;
  json_object_foreach(o, key, v) {
    (void)v;
    bool ok = false;
    for (int i = 0; allowed[i]; i++) ok |= !std::strcmp(key, allowed[i]);
    if (!ok) return key;
  }
  return nullptr;
}

// An integer member in [lo, hi]: absent gives def (or 400 if required).
int int_member(json_t* o, const char* key, bool required, int64_t def, int64_t lo, int64_t hi,
               int64_t* out, char** json_out) {
  json_t* v = json_object_get(o, key);
  if (!v) {
    if (required) return fail(json_out, "bad_request", "'%s' is required", key);
    *out = def;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return fail(json_out, "bad_request", "'%s' must be an integer from %" PRId64 " to %" PRId64, key,
                lo, hi);
  *out = json_integer_value(v);
  return 0;
}

// A string member without NUL bytes, of at most max bytes (and not empty
// unless empty_ok): absent leaves *out NULL; 0 or 400.
int str_member(json_t* o, const char* key, size_t max, bool empty_ok, char** out, char** json_out) {
  json_t* v = json_object_get(o, key);
  if (!v) return 0;
  const char* s = json_string_value(v);
  if (!s || (!empty_ok && !*s) || std::strlen(s) > max || std::strlen(s) != json_string_length(v))
    return fail(json_out, "bad_request", "'%s' must be a %sstring of at most %zu bytes", key,
                empty_ok ? "" : "non-empty ", max);
  if (!(*out = strdup(s))) return fail(json_out, "bad_request", "out of memory");
  return 0;
}

bool env_name_ok(const char* k) {
  if (!k || !*k || std::strlen(k) > 256 || std::isdigit(static_cast<unsigned char>(*k))) return false;
  for (const char* p = k; *p; p++)
    if (!std::isalnum(static_cast<unsigned char>(*p)) && *p != '_') return false;
  return true;
}

bool cluster_name_ok(const char* s) {
  if (!s || !*s || std::strlen(s) > 64) return false;
  for (const char* p = s; *p; p++)
    if (!std::isalnum(static_cast<unsigned char>(*p)) && !std::strchr("_-.", *p)) return false;
  return true;
}

// Appends to a malloc'd string (NULL: start one); false if out of memory.
bool append(char** s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
bool append(char** s, const char* fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  size_t old = *s ? std::strlen(*s) : 0;
  char* t = n < 0 ? nullptr : static_cast<char*>(std::realloc(*s, old + static_cast<size_t>(n) + 1));
  if (t) std::vsnprintf(t + old, static_cast<size_t>(n) + 1, fmt, ap2);
  va_end(ap2);
  if (!t) return false;
  *s = t;
  return true;
}

int jobspec_members(json_t* o, flexco_jobspec_t* s, char** json_out) {
  static const char* const keys[] = {"script",  "argv",  "environment", "work_dir",
                                     "std_out", "std_err", "time_limit", "nodes",
                                     "name",    "coallocation", "part_index", "parts",
                                     "start",   "hold",    "account", "qos",
                                     "rendezvous", nullptr};
  const char* bad = unknown_member(o, keys);
  if (bad) return fail(json_out, "bad_request", "unknown field '%.64s'", bad);
  if (!json_object_get(o, "script")) return fail(json_out, "bad_request", "'script' is required");
  int rc;
  if ((rc = str_member(o, "script", FLEXCO_JOB_MAX_SCRIPT, false, &s->script, json_out)) ||
      (rc = str_member(o, "work_dir", FLEXCO_JOB_MAX_STR, false, &s->work_dir, json_out)) ||
      (rc = str_member(o, "std_out", FLEXCO_JOB_MAX_STR, false, &s->std_out, json_out)) ||
      (rc = str_member(o, "std_err", FLEXCO_JOB_MAX_STR, false, &s->std_err, json_out)) ||
      (rc = str_member(o, "name", 256, false, &s->name, json_out)) ||
      (rc = str_member(o, "coallocation", 128, false, &s->coallocation, json_out)) ||
      (rc = str_member(o, "account", 64, false, &s->account, json_out)) ||
      (rc = str_member(o, "qos", 64, false, &s->qos, json_out)))
    return rc;
  for (const char* n : {s->account, s->qos}) {
    if (n && (!*n || std::strpbrk(n, " \t\n\r,:=#\"'\\")))
      return fail(json_out, "bad_request", "'%s' is not a valid name", n == s->account ? "account" : "qos");
  }
  if (json_t* h = json_object_get(o, "hold")) {
    if (!json_is_boolean(h)) return fail(json_out, "bad_request", "'hold' must be true or false");
    s->hold = json_is_true(h);
  }
  if (json_t* rv = json_object_get(o, "rendezvous")) {
    // flexcod's rendezvous for this part: where (http(s)://host:port) and
    // the part's token (doc/one-program.md); never logged.
    const char* url = nullptr;
    const char* tok = nullptr;
    if (!json_is_object(rv) || json_object_size(rv) != 2 ||
        json_unpack(rv, "{s:s, s:s}", "url", &url, "token", &tok))
      return fail(json_out, "bad_request", "'rendezvous' must be {\"url\": string, \"token\": string}");
    const std::size_t ul = std::strlen(url), tl = std::strlen(tok);
    bool good = ul > 8 && ul <= 512 && (!std::strncmp(url, "http://", 7) || !std::strncmp(url, "https://", 8));
    for (std::size_t k = 0; good && k < ul; k++) good = url[k] > 0x20 && url[k] < 0x7f;
    if (!good) return fail(json_out, "bad_request", "'rendezvous.url' must be an http(s) URL of at most 512 bytes");
    good = tl >= 16 && tl <= 128;
    for (std::size_t k = 0; good && k < tl; k++)
      good = std::isalnum(static_cast<unsigned char>(tok[k])) || tok[k] == '-' || tok[k] == '_';
    if (!good) return fail(json_out, "bad_request", "'rendezvous.token' must be 16 to 128 of [A-Za-z0-9_-]");
    if (!(s->rendezvous_url = strdup(url)) || !(s->rendezvous_token = strdup(tok)))
      return fail(json_out, "bad_request", "out of memory");
  }
  if (std::strncmp(s->script, "#!", 2)) return fail(json_out, "bad_request", "'script' must start with #!");
  if (s->work_dir && s->work_dir[0] != '/')
    return fail(json_out, "bad_request", "'work_dir' must be an absolute path");
  if ((rc = int_member(o, "time_limit", false, 0, 60, FLEXCO_JOB_MAX_TIME, &s->time_limit, json_out)) ||
      (rc = int_member(o, "nodes", false, 0, 1, FLEXCO_RESV_MAX_NODES, &s->nodes, json_out)) ||
      (rc = int_member(o, "part_index", false, -1, 0, FLEXCO_JOB_MAX_PARTS - 1, &s->part_index,
                       json_out)) ||
      (rc = int_member(o, "start", false, 0, 0, INT64_C(1) << 40, &s->start, json_out)))
    return rc;

  json_t *v, *e;
  size_t i;
  const char* key;
  if ((v = json_object_get(o, "argv"))) {
    if (!json_is_array(v) || json_array_size(v) > FLEXCO_JOB_MAX_ARGS)
      return fail(json_out, "bad_request", "'argv' must be an array of at most %d strings",
                  FLEXCO_JOB_MAX_ARGS);
    if (!(s->argv = static_cast<char**>(std::calloc(json_array_size(v) + 1, sizeof(char*)))))
      return fail(json_out, "bad_request", "out of memory");
    json_array_foreach(v, i, e) {
      const char* a = json_string_value(e);
      if (!a || std::strlen(a) != json_string_length(e) || std::strlen(a) > FLEXCO_JOB_MAX_STR)
        return fail(json_out, "bad_request", "'argv' must be an array of strings");
      if (!(s->argv[s->argc] = strdup(a))) return fail(json_out, "bad_request", "out of memory");
      s->argc++;
    }
  }
  if ((v = json_object_get(o, "environment"))) {
    if (!json_is_object(v) || json_object_size(v) > FLEXCO_JOB_MAX_ENV)
      return fail(json_out, "bad_request", "'environment' must be an object of at most %d strings",
                  FLEXCO_JOB_MAX_ENV);
    if (!(s->env = static_cast<char**>(std::calloc(json_object_size(v) + 1, sizeof(char*)))))
      return fail(json_out, "bad_request", "out of memory");
    json_object_foreach(v, key, e) {
      const char* a = json_string_value(e);
      if (!env_name_ok(key))
        return fail(json_out, "bad_request", "'%.64s' is not an environment variable name", key);
      if (!std::strncmp(key, "FLEXCO_", 7) || !std::strncmp(key, "SLURM_", 6))
        return fail(json_out, "bad_request",
                    "environment variable '%.64s' is reserved (FLEXCO_*, SLURM_*)", key);
      if (!a || std::strlen(a) != json_string_length(e) || std::strlen(a) > FLEXCO_JOB_MAX_STR)
        return fail(json_out, "bad_request", "environment variable '%.64s' must be a string", key);
      char* kv = nullptr;
      if (!append(&kv, "%s=%s", key, a)) return fail(json_out, "bad_request", "out of memory");
      s->env[s->env_cnt++] = kv;
    }
  }
  if ((v = json_object_get(o, "parts"))) {
    if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > FLEXCO_JOB_MAX_PARTS)
      return fail(json_out, "bad_request",
                  "'parts' must be an array of 1 to %d {\"cluster\",\"nodes\"}", FLEXCO_JOB_MAX_PARTS);
    json_array_foreach(v, i, e) {
      const char* cl = nullptr;
      json_int_t n = 0;
      if (!json_is_object(e) || json_object_size(e) != 2 ||
          json_unpack(e, "{s:s, s:I}", "cluster", &cl, "nodes", &n) || !cluster_name_ok(cl) ||
          n < 1 || n > FLEXCO_RESV_MAX_NODES)
        return fail(json_out, "bad_request",
                    "'parts' must be an array of {\"cluster\": name, \"nodes\": count}");
      if (!append(&s->parts, "%s%s:%" PRId64, i ? "," : "", cl, static_cast<int64_t>(n)))
        return fail(json_out, "bad_request", "out of memory");
    }
    if (s->part_index >= 0 && static_cast<size_t>(s->part_index) >= json_array_size(v))
      return fail(json_out, "bad_request", "'part_index' is beyond 'parts'");
  }
  return 0;
}

}  // namespace

extern "C" void flexco_jobspec_free(flexco_jobspec_t* s) {
  if (!s) return;
  std::free(s->script);
  for (uint32_t i = 0; s->argv && i < s->argc; i++) std::free(s->argv[i]);
  std::free(s->argv);
  for (uint32_t i = 0; s->env && i < s->env_cnt; i++) std::free(s->env[i]);
  std::free(s->env);
  std::free(s->work_dir);
  std::free(s->std_out);
  std::free(s->std_err);
  std::free(s->name);
  std::free(s->coallocation);
  std::free(s->account);
  std::free(s->qos);
  std::free(s->parts);
  std::free(s->rendezvous_url);
  std::free(s->rendezvous_token);
  std::memset(s, 0, sizeof *s);
  s->part_index = -1;
}

extern "C" int flexco_decode_jobspec(const char* body, size_t len, flexco_jobspec_t* spec,
                                     char** json_out) {
  std::memset(spec, 0, sizeof *spec);
  spec->part_index = -1;
  int status = 400;
  json_t* o = object_body(body, len, json_out, &status);
  if (!o) return status;
  int rc = jobspec_members(o, spec, json_out);
  json_decref(o);
  if (rc) flexco_jobspec_free(spec);
  return rc;
}

extern "C" int flexco_decode_release(const char* body, size_t len, int64_t* lease_end,
                                     bool* confirm, char** json_out) {
  *lease_end = 0;
  *confirm = false;
  if (!body || !len) return 0;  // a release for good, without a lease
  int status = 400;
  json_t* o = object_body(body, len, json_out, &status);
  if (!o) return status;
  json_t* le = json_object_get(o, "lease_end");
  json_t* cf = json_object_get(o, "confirm");
  int rc = 0;
  if (json_object_size(o) != 1 || (!le && !cf)) {
    rc = fail(json_out, "bad_request",
              "the body is either {\"lease_end\": <epoch seconds>} or {\"confirm\": true}");
  } else if (le && (!json_is_integer(le) || json_integer_value(le) < 1)) {
    rc = fail(json_out, "bad_request", "lease_end must be a positive integer (epoch seconds)");
  } else if (cf && !json_is_true(cf)) {
    rc = fail(json_out, "bad_request", "confirm must be true");
  } else if (le) {
    *lease_end = json_integer_value(le);
  } else {
    *confirm = true;
  }
  json_decref(o);
  return rc;
}

extern "C" bool flexco_owner_ok(const char* s) {
  if (!s) return false;
  size_t n = 0;
  for (; s[n]; n++)
    if (!std::isalnum(static_cast<unsigned char>(s[n])) && !std::strchr("._-", s[n])) return false;
  return n >= 1 && n <= 64;
}

extern "C" void flexco_resv_create_free(flexco_resv_create_t* req) {
  if (!req) return;
  std::free(req->user);
  std::free(req->partition);
  std::free(req->owner);
  std::memset(req, 0, sizeof *req);
}

extern "C" int flexco_decode_resv_create(const char* body, size_t len, int64_t now,
                                         flexco_resv_create_t* req, char** json_out) {
  static const char* const keys[] = {"user",      "nodes",          "start", "duration",
                                     "partition", "confirm_within", "owner", nullptr};
  std::memset(req, 0, sizeof *req);
  int status = 400;
  json_t* o = object_body(body, len, json_out, &status);
  if (!o) return status;
  const char* bad = unknown_member(o, keys);
  const char* s;
  int rc = 0;
  if (bad) {
    rc = fail(json_out, "bad_request", "unknown field '%.64s'", bad);
  } else if (!(s = json_string_value(json_object_get(o, "user"))) || !*s || std::strlen(s) > 64 ||
             std::strlen(s) != json_string_length(json_object_get(o, "user"))) {
    rc = fail(json_out, "bad_request", "'user' must be a user name");
  } else if (std::strspn(s, "0123456789") == std::strlen(s)) {
    // A number would be resolved as a uid (uid_from_string), and uids
    // differ between sites: only names travel (issue 38 §2.3).
    rc = fail(json_out, "bad_request", "'user' must be a user name, not a number");
  } else if (!(req->user = strdup(s))) {
    rc = fail(json_out, "bad_request", "out of memory");
  } else if (json_object_get(o, "partition") &&
             (!(s = json_string_value(json_object_get(o, "partition"))) || !*s ||
              std::strlen(s) > 64 ||
              std::strlen(s) != json_string_length(json_object_get(o, "partition")))) {
    rc = fail(json_out, "bad_request", "'partition' must be a partition name");
  } else if (json_object_get(o, "partition") && !(req->partition = strdup(s))) {
    rc = fail(json_out, "bad_request", "out of memory");
  } else if (json_object_get(o, "owner") &&
             !flexco_owner_ok(json_string_value(json_object_get(o, "owner")))) {
    rc = fail(json_out, "bad_request", "'owner' must be 1 to 64 of A-Z a-z 0-9 . _ -");
  } else if (json_object_get(o, "owner") &&
             !(req->owner = strdup(json_string_value(json_object_get(o, "owner"))))) {
    rc = fail(json_out, "bad_request", "out of memory");
  } else if ((rc = int_member(o, "nodes", true, 0, 1, FLEXCO_RESV_MAX_NODES, &req->nodes, json_out)) ||
             (rc = int_member(o, "start", true, 0, now - FLEXCO_RESV_PAST_START,
                              now + FLEXCO_RESV_MAX_DURATION, &req->start, json_out)) ||
             (rc = int_member(o, "duration", true, 0, FLEXCO_RESV_MIN_DURATION,
                              FLEXCO_RESV_MAX_DURATION, &req->duration, json_out)) ||
             (rc = int_member(o, "confirm_within", false, FLEXCO_RESV_DEFAULT_CONFIRM, 1,
                              FLEXCO_RESV_MAX_CONFIRM, &req->confirm_within, json_out))) {
  }
  json_decref(o);
  if (rc) flexco_resv_create_free(req);
  return rc;
}

extern "C" int flexco_decode_resv_modify(const char* body, size_t len, int64_t now,
                                         flexco_resv_modify_t* req, char** json_out) {
  static const char* const keys[] = {"start", "nodes", "duration", nullptr};
  int status = 400;
  json_t* o = object_body(body, len, json_out, &status);
  if (!o) return status;
  const char* bad = unknown_member(o, keys);
  flexco_resv_modify_t got = *req;
  int rc = 0;
  if (bad)
    rc = fail(json_out, "bad_request", "unknown field '%.64s'", bad);
  else if ((rc = int_member(o, "start", false, req->start, now - FLEXCO_RESV_PAST_START,
                            now + FLEXCO_RESV_MAX_DURATION, &got.start, json_out)) ||
           (rc = int_member(o, "nodes", false, req->nodes, 1, FLEXCO_RESV_MAX_NODES, &got.nodes,
                            json_out)) ||
           (rc = int_member(o, "duration", false, req->duration, FLEXCO_RESV_MIN_DURATION,
                            FLEXCO_RESV_MAX_DURATION, &got.duration, json_out))) {
  }
  json_decref(o);
  if (!rc) *req = got;
  return rc;
}

extern "C" int flexco_decode_u64(const char* s, uint64_t max, uint64_t* out) {
  uint64_t v = 0;
  if (!s || !*s) return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    if (v > (max - static_cast<uint64_t>(*s - '0')) / 10) return -1;
    v = v * 10 + static_cast<uint64_t>(*s - '0');
  }
  *out = v;
  return 0;
}

extern "C" int flexco_decode_profile_query(const char* partition, const char* horizon,
                                           int64_t* horizon_out, char** json_out) {
  uint64_t h = FLEXCO_PROFILE_DEFAULT_HORIZON;
  if (partition && std::strlen(partition) > FLEXCO_PROFILE_MAX_PARTITION)
    return fail(json_out, "bad_parameter", "partition: name too long");
  if (horizon && (flexco_decode_u64(horizon, FLEXCO_PROFILE_MAX_HORIZON, &h) || h < 1))
    return fail(json_out, "bad_parameter", "horizon: seconds, an integer from 1 to %d",
                FLEXCO_PROFILE_MAX_HORIZON);
  *horizon_out = static_cast<int64_t>(h);
  return 0;
}

extern "C" int flexco_decode_events_query(const char* after, const char* wait, const char* max,
                                          flexco_events_query_t* q, char** json_out) {
  flexco_events_query_t got = {0, 0, FLEXCO_EVENTS_DEFAULT_MAX};
  if (after && flexco_decode_u64(after, INT64_MAX, &got.after))
    return fail(json_out, "bad_parameter",
                "after: a sequence number, an integer from 0 to 9223372036854775807");
  if (wait && flexco_decode_u64(wait, FLEXCO_EVENTS_MAX_WAIT, &got.wait))
    return fail(json_out, "bad_parameter", "wait: seconds, an integer from 0 to %d",
                FLEXCO_EVENTS_MAX_WAIT);
  if (max && (flexco_decode_u64(max, FLEXCO_EVENTS_MAX_MAX, &got.max) || got.max < 1))
    return fail(json_out, "bad_parameter", "max: an integer from 1 to %d", FLEXCO_EVENTS_MAX_MAX);
  *q = got;
  return 0;
}

namespace {

struct Fixed {
  const char* path;
  const char* method;
  flexco_route_kind_t kind;
  int ep;
};

constexpr Fixed kFixed[] = {
    {"/v1/probe", "POST", FLEXCO_RT_PROBE, FLEXCO_EP_PROBE},
    {"/v1/profile", "GET", FLEXCO_RT_PROFILE, FLEXCO_EP_PROFILE},
    {"/v1/stats", "GET", FLEXCO_RT_STATS, FLEXCO_EP_STATS},
    {"/v1/events", "GET", FLEXCO_RT_EVENTS, FLEXCO_EP_EVENTS},
    {"/metrics", "GET", FLEXCO_RT_METRICS, FLEXCO_EP_STATS},
};

void not_found(flexco_route_t* r) {
  r->status = 404;
  std::snprintf(r->message, sizeof r->message, "no such endpoint");
}

// 405 under /v1/reservations (the message names the method only).
void resv_not_allowed(flexco_route_t* r, const char* method, const char* allow) {
  r->status = 405;
  r->allow = allow;
  std::snprintf(r->message, sizeof r->message, "%.32s is not allowed here", method);
}

}  // namespace

extern "C" void flexco_route(const char* method, const char* path, flexco_route_t* r) {
  std::memset(r, 0, sizeof *r);
  r->ep = FLEXCO_EP_OTHER;
  if (!method) method = "";
  if (!path) path = "";
  const bool resv = !std::strncmp(path, "/v1/reservations", 16) && (path[16] == '\0' || path[16] == '/');
  if (!resv) {
    for (const Fixed& f : kFixed) {
      if (std::strcmp(path, f.path)) continue;
      r->ep = f.ep;
      if (!std::strcmp(method, f.method)) {
        r->kind = f.kind;
        return;
      }
      r->status = 405;
      r->allow = f.method;
      std::snprintf(r->message, sizeof r->message, "%.32s is not allowed on %s", method, f.path);
      return;
    }
    not_found(r);
    return;
  }
  r->ep = FLEXCO_EP_RESV;
  const char* rest = path + 16;
  if (!*rest) {
    if (!std::strcmp(method, "GET"))
      r->kind = FLEXCO_RT_RESV_LIST;
    else if (!std::strcmp(method, "POST"))
      r->kind = FLEXCO_RT_RESV_CREATE;
    else
      resv_not_allowed(r, method, "GET, POST");
    return;
  }
  rest++;  // the '/'
  const char* slash = std::strchr(rest, '/');
  const size_t n = slash ? static_cast<size_t>(slash - rest) : std::strlen(rest);
  if (!n || n >= sizeof r->id) {
    not_found(r);
    return;
  }
  std::memcpy(r->id, rest, n);
  r->id[n] = '\0';
  if (slash && !std::strcmp(slash, "/jobs")) {
    if (!std::strcmp(method, "POST"))
      r->kind = FLEXCO_RT_JOB_SUBMIT;
    else
      resv_not_allowed(r, method, "POST");
    return;
  }
  if (slash && !std::strncmp(slash, "/jobs/", 6) && slash[6]) {
    // /jobs/{job}/release
    const char* job = slash + 6;
    const char* tail = std::strchr(job, '/');
    const size_t jn = tail ? static_cast<size_t>(tail - job) : 0;
    if (tail && !std::strcmp(tail, "/release") && jn && jn < sizeof r->job_buf) {
      std::memcpy(r->job_buf, job, jn);
      r->job_buf[jn] = '\0';
      if (!std::strcmp(method, "POST")) {
        r->kind = FLEXCO_RT_JOB_RELEASE;
        r->job = r->job_buf;
      } else {
        resv_not_allowed(r, method, "POST");
      }
      return;
    }
  }
  if (slash && !std::strncmp(slash, "/jobs/", 6) && slash[6] && !std::strchr(slash + 6, '/')) {
    if (!std::strcmp(method, "GET")) {
      r->kind = FLEXCO_RT_JOB_GET;
      r->job = slash + 6;
    } else {
      resv_not_allowed(r, method, "GET");
    }
    return;
  }
  if (slash) {
    if (std::strcmp(slash, "/confirm")) {
      not_found(r);
    } else if (!std::strcmp(method, "POST")) {
      r->kind = FLEXCO_RT_RESV_CONFIRM;
    } else {
      resv_not_allowed(r, method, "POST");
    }
    return;
  }
  if (!std::strcmp(method, "GET"))
    r->kind = FLEXCO_RT_RESV_GET;
  else if (!std::strcmp(method, "PATCH"))
    r->kind = FLEXCO_RT_RESV_MODIFY;
  else if (!std::strcmp(method, "DELETE"))
    r->kind = FLEXCO_RT_RESV_DELETE;
  else
    resv_not_allowed(r, method, "GET, PATCH, DELETE");
}

namespace {

char* dup_or_null(json_t* v) { return json_is_string(v) ? strdup(json_string_value(v)) : nullptr; }

bool nullable_string(json_t* v) { return json_is_string(v) || json_is_null(v); }

const char* const kStates[] = {"creating", "tentative", "confirmed", "ended", "deleted", "expired"};

bool state_ok(const char* s) {
  for (const char* k : kStates)
    if (!std::strcmp(s, k)) return true;
  return false;
}

bool hex64(const char* s) {
  if (std::strlen(s) != 64) return false;
  for (const char* p = s; *p; p++)
    if (!std::isdigit(static_cast<unsigned char>(*p)) && !(*p >= 'a' && *p <= 'f')) return false;
  return true;
}

int state_fail(char* why, size_t why_len, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
int state_fail(char* why, size_t why_len, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (why && why_len) std::vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
  return -1;
}

int resv_record(json_t* o, size_t i, size_t max_jobs, flexco_state_resv_t* r, char* why,
                size_t why_len) {
  json_error_t jerr;
  const char *user = nullptr, *name = nullptr, *st = nullptr;
  json_int_t id = 0, uid = 0, nodes = 0, start = 0, end = 0, created = 0, changed = 0;
  json_t *jp = nullptr, *jn = nullptr, *jc = nullptr, *jr = nullptr, *jw = nullptr, *jobs = nullptr,
         *jsub = nullptr;
  jerr.text[0] = '\0';
  if (json_unpack_ex(o, &jerr, JSON_STRICT,
                     "{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s?o, s:o, s?o}",
                     "id", &id, "name", &name, "user", &user, "uid", &uid, "nodes", &nodes, "start",
                     &start, "end", &end, "state", &st, "created", &created, "changed", &changed,
                     "partition", &jp, "node_list", &jn, "confirm_by", &jc, "reason", &jr, "owner",
                     &jw, "jobs", &jobs, "submitting", &jsub) ||
      id < 1 || id > static_cast<json_int_t>(9007199254740992LL) || !state_ok(st) || uid < 0 ||
      uid > static_cast<json_int_t>(UINT32_MAX) || nodes < 0 ||
      nodes > static_cast<json_int_t>(UINT32_MAX) || !json_is_array(jobs) ||
      json_array_size(jobs) > max_jobs || !nullable_string(jp) || !nullable_string(jn) ||
      !(json_is_integer(jc) || json_is_null(jc)) || !nullable_string(jr) ||
      (jw && !json_is_null(jw) && !flexco_owner_ok(json_string_value(jw))))
    return state_fail(why, why_len, "malformed reservation record %zu (%s)", i,
                      jerr.text[0] ? jerr.text : "bad values");
  char want[40];
  std::snprintf(want, sizeof want, "flexco_%" PRId64, static_cast<int64_t>(id));
  if (std::strcmp(want, name))
    return state_fail(why, why_len, "reservation record %zu: name %.64s does not match id %" PRId64,
                      i, name, static_cast<int64_t>(id));
  r->id = id;
  r->uid = uid;
  r->nodes = nodes;
  r->start = start;
  r->end = end;
  r->created = created;
  r->changed = changed;
  r->confirm_by = json_is_integer(jc) ? json_integer_value(jc) : 0;
  r->user = strdup(user);
  r->state = strdup(st);
  r->partition = dup_or_null(jp);
  r->node_list = dup_or_null(jn);
  r->reason = dup_or_null(jr);
  r->owner = jw ? dup_or_null(jw) : nullptr;
  if (json_array_size(jobs) &&
      !(r->jobs = static_cast<flexco_state_job_t*>(std::calloc(json_array_size(jobs), sizeof *r->jobs))))
    return state_fail(why, why_len, "out of memory");
  size_t j;
  json_t* jo;
  json_array_foreach(jobs, j, jo) {
    json_int_t jid = 0, sub = 0, lease_end = 0;
    int pi = 0, started = 0, ended = 0, confirmed = 0, lapsed = 0, gated = 0;
    if (json_unpack_ex(jo, &jerr, JSON_STRICT, "{s:I, s:i, s:I, s:b, s:b, s?I, s?b, s?b, s?b}",
                       "job_id", &jid, "part_index", &pi, "submitted", &sub, "started", &started,
                       "ended", &ended, "lease_end", &lease_end, "confirmed", &confirmed,
                       "lapsed", &lapsed, "gated", &gated) ||
        jid < 1 || jid > static_cast<json_int_t>(UINT32_MAX) || lease_end < 0)
      return state_fail(why, why_len, "malformed job %zu of reservation record %zu", j, i);
    r->jobs[r->job_cnt++] = flexco_state_job_t{jid,        pi,          sub,        started != 0,
                                               ended != 0, lease_end,   confirmed != 0,
                                               lapsed != 0, gated != 0};
  }
  if (jsub && !json_is_null(jsub)) {
    const char *key = nullptr, *target = nullptr, *digest = nullptr;
    json_int_t su = 0, sp = 0, ss = 0;
    if (json_unpack_ex(jsub, &jerr, JSON_STRICT, "{s:s, s:I, s:I, s:I, s:s, s:s}", "key", &key,
                       "uid", &su, "part_index", &sp, "since", &ss, "target", &target,
                       "body_sha256", &digest) ||
        (*key && !flexco_idempotency_key_valid(key)) || su < 0 ||
        su > static_cast<json_int_t>(UINT32_MAX) || sp < 0 || sp > INT32_MAX ||
        std::strlen(target) > 4096 || std::strlen(digest) > 64)
      return state_fail(why, why_len, "malformed submission of reservation record %zu", i);
    if (!(r->submit_key = strdup(key)) || !(r->submit_target = strdup(target)) ||
        !(r->submit_digest = strdup(digest)))
      return state_fail(why, why_len, "out of memory");
    r->submit_uid = su;
    r->submit_part = sp;
    r->submit_since = ss;
  }
  if (!r->user || !r->state) return state_fail(why, why_len, "out of memory");
  return 0;
}

int key_record(json_t* o, size_t i, flexco_state_key_t* k, char* why, size_t why_len) {
  json_error_t jerr;
  const char *key = nullptr, *resp = nullptr, *method = nullptr, *target = nullptr, *digest = nullptr;
  json_int_t uid = 0, when = 0;
  int status = 0;
  // method, target, body_sha256: all or none (none: saved by a version
  // before keys were bound to their request)
  if (json_unpack_ex(o, &jerr, JSON_STRICT, "{s:s, s:I, s:i, s:s, s:I, s?s, s?s, s?s}", "key", &key,
                     "uid", &uid, "status", &status, "response", &resp, "when", &when, "method",
                     &method, "target", &target, "body_sha256", &digest) ||
      uid < 0 || uid > static_cast<json_int_t>(UINT32_MAX) || !method != !target ||
      !method != !digest || (digest && !hex64(digest)))
    return state_fail(why, why_len, "malformed request record %zu", i);
  k->key = strdup(key);
  k->uid = uid;
  k->status = status;
  k->response = strdup(resp);
  k->when = when;
  k->method = method ? strdup(method) : nullptr;
  k->target = target ? strdup(target) : nullptr;
  k->digest = digest ? strdup(digest) : nullptr;
  if (!k->key || !k->response || (method && (!k->method || !k->target || !k->digest)))
    return state_fail(why, why_len, "out of memory");
  return 0;
}

}  // namespace

extern "C" void flexco_resv_state_free(flexco_resv_state_t* st) {
  if (!st) return;
  for (size_t i = 0; st->resvs && i < st->resv_cnt; i++) {
    flexco_state_resv_t* r = &st->resvs[i];
    std::free(r->user);
    std::free(r->state);
    std::free(r->partition);
    std::free(r->node_list);
    std::free(r->reason);
    std::free(r->owner);
    std::free(r->jobs);
    std::free(r->submit_key);
    std::free(r->submit_target);
    std::free(r->submit_digest);
  }
  std::free(st->resvs);
  for (size_t i = 0; st->keys && i < st->key_cnt; i++) {
    flexco_state_key_t* k = &st->keys[i];
    std::free(k->key);
    std::free(k->response);
    std::free(k->method);
    std::free(k->target);
    std::free(k->digest);
  }
  for (size_t i = 0; st->epochs && i < st->epoch_cnt; i++) std::free(st->epochs[i].grid);
  std::free(st->epochs);
  std::free(st->keys);
  std::memset(st, 0, sizeof *st);
}

extern "C" int flexco_decode_resv_state(const char* text, size_t len, size_t max_records,
                                        size_t max_jobs, flexco_resv_state_t* out, char* why,
                                        size_t why_len) {
  std::memset(out, 0, sizeof *out);
  json_error_t jerr;
  json_t* root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) return state_fail(why, why_len, "%s (line %d)", jerr.text, jerr.line);
  json_t *list = nullptr, *keys = nullptr, *epochs = nullptr;
  json_int_t version = 0, nid = 0;
  jerr.text[0] = '\0';
  int rc = 0;
  if (json_unpack_ex(root, &jerr, JSON_STRICT, "{s:I, s:I, s:o, s:o, s?o}", "version", &version,
                     "next_id", &nid, "reservations", &list, "requests", &keys, "epochs",
                     &epochs) ||
      version != 1 || nid < 1 || !json_is_array(list) || !json_is_array(keys) ||
      json_array_size(list) > max_records ||
      (epochs && (!json_is_object(epochs) ||
                  json_object_size(epochs) > flexco::epoch::kMaxGrids))) {
    rc = state_fail(why, why_len, "unexpected content (%s)", jerr.text[0] ? jerr.text : "bad values");
  } else {
    out->next_id = nid;
    if ((json_array_size(list) &&
         !(out->resvs = static_cast<flexco_state_resv_t*>(
               std::calloc(json_array_size(list), sizeof *out->resvs)))) ||
        (json_array_size(keys) &&
         !(out->keys = static_cast<flexco_state_key_t*>(
               std::calloc(json_array_size(keys), sizeof *out->keys)))))
      rc = state_fail(why, why_len, "out of memory");
    size_t i;
    json_t* o;
    json_array_foreach(list, i, o) {
      if (rc) break;
      rc = resv_record(o, i, max_jobs, &out->resvs[out->resv_cnt], why, why_len);
      out->resv_cnt++;  // so that free sees what this record holds
      for (size_t k = 0; !rc && k + 1 < out->resv_cnt; k++)
        if (out->resvs[k].id == out->resvs[out->resv_cnt - 1].id)
          rc = state_fail(why, why_len, "malformed reservation record %zu (id %" PRId64 " twice)", i,
                          out->resvs[k].id);
    }
    json_array_foreach(keys, i, o) {
      if (rc) break;
      rc = key_record(o, i, &out->keys[out->key_cnt], why, why_len);
      out->key_cnt++;
    }
    // the highest epoch of each flexcod grid (core/epoch.hpp)
    if (!rc && epochs && json_object_size(epochs) &&
        !(out->epochs = static_cast<flexco_state_epoch_t*>(
              std::calloc(json_object_size(epochs), sizeof *out->epochs))))
      rc = state_fail(why, why_len, "out of memory");
    const char* grid;
    json_t* ev;
    if (epochs) {
      json_object_foreach(epochs, grid, ev) {
        if (rc) break;
        if (!flexco::epoch::valid_grid(grid) || !json_is_integer(ev) || json_integer_value(ev) < 1 ||
            json_integer_value(ev) > flexco::epoch::kMaxEpoch) {
          rc = state_fail(why, why_len, "malformed epoch of grid '%.64s'", grid);
          break;
        }
        flexco_state_epoch_t& e = out->epochs[out->epoch_cnt];
        if (!(e.grid = strdup(grid))) {
          rc = state_fail(why, why_len, "out of memory");
          break;
        }
        e.epoch = json_integer_value(ev);
        out->epoch_cnt++;
      }
    }
  }
  json_decref(root);
  if (rc) flexco_resv_state_free(out);
  return rc;
}

// ---------------------------------------------------------------------------
// the reservation record, written

namespace {

json_t* str_or_null(const char* s) { return s ? json_string(s) : json_null(); }

// nullptr if a value cannot be encoded (a string that is not UTF-8)
json_t* resv_json(const flexco_state_resv_t* r, bool with_submitting) {
  char name[40];
  std::snprintf(name, sizeof name, "flexco_%" PRId64, r->id);
  const bool tentative = r->state && !std::strcmp(r->state, "tentative");
  json_t* jobs = json_array();
  for (size_t i = 0; jobs && i < r->job_cnt; i++) {
    const flexco_state_job_t& j = r->jobs[i];
    if (json_array_append_new(
            jobs, json_pack("{s:I, s:i, s:I, s:b, s:b, s:I, s:b, s:b, s:b}", "job_id",
                            static_cast<json_int_t>(j.job_id), "part_index", j.part_index,
                            "submitted", static_cast<json_int_t>(j.submitted), "started",
                            j.started, "ended", j.ended, "lease_end",
                            static_cast<json_int_t>(j.lease_end), "confirmed", j.confirmed,
                            "lapsed", j.lapsed, "gated", j.gated))) {
      json_decref(jobs);
      return nullptr;
    }
  }
  // json_pack takes ownership of the "o" values even when it fails
  json_t* o = json_pack(
      "{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
      static_cast<json_int_t>(r->id), "name", name, "user", r->user ? r->user : "", "uid",
      static_cast<json_int_t>(r->uid), "nodes", static_cast<json_int_t>(r->nodes), "start",
      static_cast<json_int_t>(r->start), "end", static_cast<json_int_t>(r->end), "state",
      r->state ? r->state : "", "created", static_cast<json_int_t>(r->created), "changed",
      static_cast<json_int_t>(r->changed), "partition", str_or_null(r->partition), "node_list",
      str_or_null(r->node_list), "confirm_by",
      tentative ? json_integer(static_cast<json_int_t>(r->confirm_by)) : json_null(), "reason",
      str_or_null(r->reason), "owner", str_or_null(r->owner), "jobs", jobs);
  if (!o) return nullptr;
  if (with_submitting && r->submit_key) {
    json_t* sub = json_pack("{s:s, s:I, s:I, s:I, s:s, s:s}", "key", r->submit_key, "uid",
                            static_cast<json_int_t>(r->submit_uid), "part_index",
                            static_cast<json_int_t>(r->submit_part), "since",
                            static_cast<json_int_t>(r->submit_since), "target",
                            r->submit_target ? r->submit_target : "", "body_sha256",
                            r->submit_digest ? r->submit_digest : "");
    if (!sub || json_object_set_new(o, "submitting", sub)) {
      json_decref(o);
      return nullptr;
    }
  }
  return o;
}

char* dump_sorted(json_t* o) {
  char* s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : nullptr;
  json_decref(o);
  return s;
}

}  // namespace

extern "C" char* flexco_encode_resv_record(const flexco_state_resv_t* r) {
  try {
    return dump_sorted(resv_json(r, false));
  } catch (...) {
    return nullptr;
  }
}

extern "C" char* flexco_encode_resv_list(const flexco_state_resv_t* rs, size_t n) {
  try {
    json_t* list = json_array();
    for (size_t i = 0; list && i < n; i++) {
      if (json_array_append_new(list, resv_json(&rs[i], false))) {
        json_decref(list);
        return nullptr;
      }
    }
    return list ? dump_sorted(json_pack("{s:o}", "reservations", list)) : nullptr;
  } catch (...) {
    return nullptr;
  }
}

extern "C" char* flexco_encode_resv_state(const flexco_resv_state_t* st, char* why,
                                          size_t why_len) {
  try {
    json_t *list = json_array(), *keys = json_array();
    if (!list || !keys) {
      json_decref(list);
      json_decref(keys);
      state_fail(why, why_len, "out of memory");
      return nullptr;
    }
    for (size_t i = 0; i < st->resv_cnt; i++) {
      // a record that cannot be written fails the save: left out, its
      // reservation would be an orphan at the next start
      if (json_array_append_new(list, resv_json(&st->resvs[i], true))) {
        json_decref(list);
        json_decref(keys);
        state_fail(why, why_len, "cannot encode the record of flexco_%" PRId64, st->resvs[i].id);
        return nullptr;
      }
    }
    for (size_t i = 0; i < st->key_cnt; i++) {
      const flexco_state_key_t& k = st->keys[i];
      json_t* o = json_pack("{s:s, s:I, s:i, s:s, s:I}", "key", k.key ? k.key : "", "uid",
                            static_cast<json_int_t>(k.uid), "status", k.status, "response",
                            k.response ? k.response : "{}", "when",
                            static_cast<json_int_t>(k.when));
      if (o && k.method &&
          (json_object_set_new(o, "method", json_string(k.method)) ||
           json_object_set_new(o, "target", str_or_null(k.target)) ||
           json_object_set_new(o, "body_sha256", str_or_null(k.digest)))) {
        json_decref(o);
        o = nullptr;
      }
      // a key that cannot be written is left out: its retry is carried
      // out again, as after its time
      if (o) json_array_append_new(keys, o);
    }
    json_t* root = json_pack("{s:i, s:I, s:o, s:o}", "version", 1, "next_id",
                             static_cast<json_int_t>(st->next_id), "reservations", list,
                             "requests", keys);
    if (root && st->epoch_cnt) {
      // written only when there is one: a state file without flexcod
      // epochs stays as older plugins wrote and read it
      json_t* ep = json_object();
      for (size_t i = 0; ep && i < st->epoch_cnt; i++) {
        if (json_object_set_new(ep, st->epochs[i].grid,
                                json_integer(static_cast<json_int_t>(st->epochs[i].epoch)))) {
          json_decref(ep);
          ep = nullptr;
        }
      }
      if (!ep || json_object_set_new(root, "epochs", ep)) {
        json_decref(root);
        root = nullptr;
      }
    }
    char* text = dump_sorted(root);
    if (!text) state_fail(why, why_len, "cannot encode the state");
    return text;
  } catch (...) {
    state_fail(why, why_len, "out of memory");
    return nullptr;
  }
}

extern "C" char* flexco_encode_part_job_submitted(uint32_t job_id, int64_t resv_id,
                                                  int part_index) {
  try {
    char name[40];
    std::snprintf(name, sizeof name, "flexco_%" PRId64, resv_id);
    return dump_sorted(json_pack("{s:I, s:s, s:I, s:i, s:s}", "job_id",
                                 static_cast<json_int_t>(job_id), "reservation", name,
                                 "reservation_id", static_cast<json_int_t>(resv_id), "part_index",
                                 part_index, "state", "PENDING"));
  } catch (...) {
    return nullptr;
  }
}

// ---------------------------------------------------------------------------
// query parameters

extern "C" int flexco_decode_query_args(const flexco_query_arg_t* args, size_t n,
                                        const char* const* allowed, const char** vals,
                                        const char* what, char** json_out) {
  size_t na = 0;
  while (allowed[na]) na++;
  for (size_t k = 0; k < na; k++) vals[k] = nullptr;
  // an unknown parameter first, wherever it is
  for (size_t i = 0; i < n; i++) {
    const char* key = args[i].key ? args[i].key : "";
    size_t k = 0;
    while (k < na && std::strcmp(key, allowed[k])) k++;
    if (k < na) continue;
    if (!na) return fail(json_out, "bad_parameter", "%s", what ? what : "no query parameters are taken");
    char list[256] = "";
    size_t used = 0;
    for (size_t j = 0; j < na && used < sizeof list; j++)
      used += static_cast<size_t>(
          std::snprintf(list + used, sizeof list - used, "%s%s", j ? ", " : "", allowed[j]));
    return fail(json_out, "bad_parameter", "unknown query parameter '%.100s' (allowed: %s)", key,
                list);
  }
  // then, in order, one given twice or without a value
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (std::strcmp(args[i].key, allowed[k])) k++;
    if (vals[k]) return fail(json_out, "bad_parameter", "%s: given more than once", allowed[k]);
    if (!args[i].value || !args[i].value[0])
      return fail(json_out, "bad_parameter", "%s: needs a value", allowed[k]);
    vals[k] = args[i].value;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// the events cursor

extern "C" size_t flexco_events_first_after(uint64_t after, size_t cnt,
                                            uint64_t (*seq_at)(size_t, void*), void* arg) {
  size_t lo = 0, hi = cnt;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (seq_at(mid, arg) <= after)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

extern "C" void flexco_events_page(uint64_t after, uint32_t max, uint64_t latest, uint64_t lost_upto,
                                   size_t cnt, uint64_t (*seq_at)(size_t, void*),
                                   bool (*visible)(size_t, void*), void* arg, uint32_t* pick,
                                   flexco_events_page_t* page) {
  uint64_t examined = 0;  // seq of the last event looked at
  uint32_t n = 0;
  page->lost = after < lost_upto || after > latest;
  // Events the caller may not see are skipped, not shown redacted (as
  // squeue leaves other users' jobs out); "next" still moves past them, so
  // a client never asks for them again.
  for (size_t k = flexco_events_first_after(after, cnt, seq_at, arg); k < cnt && n < max; k++) {
    examined = seq_at(k, arg);
    if (visible(k, arg)) pick[n++] = static_cast<uint32_t>(k);
  }
  page->count = n;
  page->next = examined ? examined : (page->lost ? latest : after);
}

extern "C" bool flexco_events_park(uint64_t after, const flexco_events_page_t* page,
                                   uint64_t latest) {
  return !page->count && !page->lost && page->next > after && page->next >= latest;
}

// ---------------------------------------------------------------------------
// the events state file

namespace {

constexpr json_int_t kMaxTime = FLEXCO_EVSTATE_MAX_TIME;

bool time_ok(json_int_t t) { return t >= 0 && t <= kMaxTime; }

bool u32_value(json_t* v, uint32_t* out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) > static_cast<json_int_t>(UINT32_MAX))
    return false;
  *out = static_cast<uint32_t>(json_integer_value(v));
  return true;
}

// A string of 1..max bytes without NUL, malloc'd into *out; false if not.
bool str_value(json_t* v, size_t max, char** out) {
  const char* s = json_string_value(v);
  if (!s || !*s || json_string_length(v) > max || std::strlen(s) != json_string_length(v))
    return false;
  return (*out = strdup(s)) != nullptr;
}

// An array of at most max uids into a malloc'd array (NULL when empty).
bool uid_array(json_t* v, size_t max, uint32_t** out, size_t* cnt) {
  if (!json_is_array(v) || json_array_size(v) > max) return false;
  if (!json_array_size(v)) return true;
  if (!(*out = static_cast<uint32_t*>(std::calloc(json_array_size(v), sizeof **out)))) return false;
  size_t i;
  json_t* e;
  json_array_foreach(v, i, e) {
    if (!u32_value(e, &(*out)[i])) return false;
    (*cnt)++;
  }
  return true;
}

void acl_free(flexco_evstate_acl_t* a) {
  std::free(a->account);
  std::free(a->users);
  std::memset(a, 0, sizeof *a);
}

// Who may see an event saved without "access" (an older file), from its
// type: a job's owner for an early end, nobody but the privileged for a
// part job or reservation whose users are unknown.
void acl_from_type(json_t* ev, const char* type, flexco_evstate_acl_t* a) {
  if (!std::strcmp(type, "job_ended_early")) {
    a->job = true;
    if (!u32_value(json_object_get(ev, "user_id"), &a->job_uid)) a->job_uid = UINT32_MAX;
  } else if (!std::strncmp(type, "part_job_", 9)) {
    a->job = a->resv = true;
    a->job_uid = UINT32_MAX;
  } else if (!std::strncmp(type, "reservation_", 12)) {
    a->resv = true;
  }
}

int reported_record(json_t* o, size_t i, flexco_evstate_job_t* j, char* why, size_t why_len) {
  json_int_t id = 0, start = 0, end = 0;
  if (json_unpack_ex(o, nullptr, JSON_STRICT, "[I, I, I]", &id, &start, &end) || id < 1 ||
      id > static_cast<json_int_t>(UINT32_MAX) || !time_ok(start) || !time_ok(end))
    return state_fail(why, why_len, "malformed reported job %zu", i);
  *j = flexco_evstate_job_t{static_cast<uint32_t>(id), start, end};
  return 0;
}

int tracking_record(json_t* o, size_t i, const flexco_evstate_limits_t* lim,
                    flexco_evstate_resv_t* r, char* why, size_t why_len) {
  json_error_t jerr;
  json_t *name = nullptr, *nodes = nullptr, *users = nullptr;
  json_int_t start = 0, end = 0, cnt = 0;
  int activated = 0, ended = 0, users_not = 0;
  jerr.text[0] = '\0';
  if (json_unpack_ex(o, &jerr, JSON_STRICT, "{s:o, s:I, s:I, s?o, s:I, s:b, s:b, s?o, s?b}", "name",
                     &name, "start", &start, "end", &end, "nodes", &nodes, "node_count", &cnt,
                     "activated", &activated, "ended", &ended, "users", &users, "users_not",
                     &users_not) ||
      !time_ok(start) || !time_ok(end) || cnt < 0 || cnt > static_cast<json_int_t>(UINT32_MAX))
    return state_fail(why, why_len, "malformed reservation record %zu (%s)", i,
                      jerr.text[0] ? jerr.text : "bad values");
  if (!str_value(name, lim->max_str, &r->name) ||
      (nodes && !json_is_null(nodes) && !str_value(nodes, lim->max_str, &r->nodes)) ||
      (users && !uid_array(users, lim->max_users, &r->users, &r->user_cnt)))
    return state_fail(why, why_len, "malformed reservation record %zu (name, nodes or users)", i);
  r->start = start;
  r->end = end;
  r->node_cnt = static_cast<uint32_t>(cnt);
  r->activated = activated;
  r->ended = ended;
  r->users_not = users_not;
  return 0;
}

int access_record(json_t* o, size_t i, const flexco_evstate_limits_t* lim,
                  flexco_events_state_t* st, size_t* at, char* why, size_t why_len) {
  json_int_t seq = 0;
  json_t *uid = nullptr, *account = nullptr, *users = nullptr;
  int users_not = -1;
  if (json_unpack_ex(o, nullptr, JSON_STRICT, "{s:I, s?o, s?o, s?o, s?b}", "seq", &seq, "job_uid",
                     &uid, "account", &account, "users", &users, "users_not", &users_not) ||
      seq < 1 || (!uid && !users) || (account && !uid) || (users_not >= 0) != (users != nullptr))
    return state_fail(why, why_len, "malformed access record %zu", i);
  // records ascend like the events: a merge
  while (*at < st->event_cnt && st->events[*at].seq < static_cast<uint64_t>(seq)) (*at)++;
  if (*at == st->event_cnt || st->events[*at].seq != static_cast<uint64_t>(seq) ||
      st->events[*at].acl.job || st->events[*at].acl.resv)
    return state_fail(why, why_len, "access record %zu: no event %" PRId64 " (or twice)", i,
                      static_cast<int64_t>(seq));
  flexco_evstate_acl_t* a = &st->events[*at].acl;
  if (uid) {
    a->job = true;
    if (!u32_value(uid, &a->job_uid) ||
        (account && !str_value(account, lim->max_str, &a->account)))
      return state_fail(why, why_len, "access record %zu: bad job_uid or account", i);
  }
  if (users) {
    a->resv = true;
    a->users_not = users_not > 0;
    if (!uid_array(users, lim->max_users, &a->users, &a->user_cnt))
      return state_fail(why, why_len, "access record %zu: bad users", i);
  }
  return 0;
}

int event_record(json_t* ev, size_t i, const flexco_evstate_limits_t* lim, uint64_t prev,
                 uint64_t latest, bool derive, flexco_evstate_event_t* e, char* why,
                 size_t why_len) {
  json_int_t seq = 0;
  const char* type = nullptr;
  if (!json_is_object(ev) || json_unpack(ev, "{s:I, s:s}", "seq", &seq, "type", &type) || seq < 1 ||
      static_cast<uint64_t>(seq) <= prev || static_cast<uint64_t>(seq) > latest || !*type ||
      std::strlen(type) > lim->max_str ||
      std::strlen(type) != json_string_length(json_object_get(ev, "type")))
    return state_fail(why, why_len, "malformed event %zu", i);
  e->seq = static_cast<uint64_t>(seq);
  if (!(e->text = json_dumps(ev, JSON_COMPACT))) return state_fail(why, why_len, "out of memory");
  e->len = std::strlen(e->text);
  if (e->len > lim->max_event_len)
    return state_fail(why, why_len, "event %zu: %zu bytes, more than %zu", i, e->len,
                      lim->max_event_len);
  if (derive) acl_from_type(ev, type, &e->acl);
  return 0;
}

int decode_events_state(json_t* root, const flexco_evstate_limits_t* lim, flexco_events_state_t* out,
                        char* why, size_t why_len) {
  json_error_t jerr;
  json_t *rep = nullptr, *rv = nullptr, *acc = nullptr, *evs = nullptr;
  json_int_t version = 0, saved = 0, reserved = 0, latest = 0, lost = 0, floor = 0;
  int clean = 0;
  jerr.text[0] = '\0';
  if (json_unpack_ex(root, &jerr, JSON_STRICT,
                     "{s:I, s:b, s?I, s:I, s:I, s:I, s:I, s:o, s:o, s?o, s:o}", "version", &version,
                     "clean", &clean, "saved_at", &saved, "reserved", &reserved, "latest", &latest,
                     "lost_upto", &lost, "job_floor", &floor, "reported_jobs", &rep,
                     "reservations", &rv, "access", &acc, "events", &evs) ||
      version != 1 || reserved < 0 || latest < 0 || latest > reserved || lost < 0 || lost > latest ||
      !time_ok(saved) || !time_ok(floor) || !json_is_array(rep) || !json_is_array(rv) ||
      !json_is_array(evs) || (acc && !json_is_array(acc)))
    return state_fail(why, why_len, "unexpected content (%s)", jerr.text[0] ? jerr.text : "bad values");
  if (json_array_size(rep) > lim->max_reported || json_array_size(rv) > lim->max_resvs ||
      json_array_size(evs) > lim->max_events || json_array_size(acc) > json_array_size(evs))
    return state_fail(why, why_len,
                      "too many records (%zu reported jobs, %zu reservations, %zu events, %zu "
                      "access records)",
                      json_array_size(rep), json_array_size(rv), json_array_size(evs),
                      json_array_size(acc));
  out->clean = clean;
  out->saved_at = saved;
  out->reserved = static_cast<uint64_t>(reserved);
  out->latest = static_cast<uint64_t>(latest);
  out->lost_upto = static_cast<uint64_t>(lost);
  out->job_floor = floor;
  out->has_access = acc != nullptr;
  if ((json_array_size(rep) &&
       !(out->jobs = static_cast<flexco_evstate_job_t*>(std::calloc(json_array_size(rep), sizeof *out->jobs)))) ||
      (json_array_size(rv) &&
       !(out->resvs = static_cast<flexco_evstate_resv_t*>(std::calloc(json_array_size(rv), sizeof *out->resvs)))) ||
      (json_array_size(evs) &&
       !(out->events = static_cast<flexco_evstate_event_t*>(std::calloc(json_array_size(evs), sizeof *out->events)))))
    return state_fail(why, why_len, "out of memory");

  size_t i;
  json_t* o;
  std::set<std::pair<uint32_t, int64_t>> runs;  // a job run is reported once
  json_array_foreach(rep, i, o) {
    if (reported_record(o, i, &out->jobs[out->job_cnt], why, why_len)) return -1;
    if (!runs.insert({out->jobs[out->job_cnt].job_id, out->jobs[out->job_cnt].start}).second)
      return state_fail(why, why_len, "reported job %zu: job %u twice", i, out->jobs[out->job_cnt].job_id);
    out->job_cnt++;
  }
  std::set<std::string> names;
  json_array_foreach(rv, i, o) {
    int rc = tracking_record(o, i, lim, &out->resvs[out->resv_cnt], why, why_len);
    out->resv_cnt++;  // so that free sees what this record holds
    if (rc) return rc;
    if (!names.insert(out->resvs[out->resv_cnt - 1].name).second)
      return state_fail(why, why_len, "reservation record %zu: %.64s twice", i,
                        out->resvs[out->resv_cnt - 1].name);
  }
  uint64_t prev = 0;
  json_array_foreach(evs, i, o) {
    int rc = event_record(o, i, lim, prev, out->latest, !acc, &out->events[out->event_cnt], why,
                          why_len);
    out->event_cnt++;
    if (rc) return rc;
    prev = out->events[out->event_cnt - 1].seq;
  }
  size_t at = 0;
  json_array_foreach(acc, i, o) {
    if (access_record(o, i, lim, out, &at, why, why_len)) return -1;
  }
  return 0;
}

}  // namespace

extern "C" void flexco_events_state_free(flexco_events_state_t* st) {
  if (!st) return;
  std::free(st->jobs);
  for (size_t i = 0; st->resvs && i < st->resv_cnt; i++) {
    std::free(st->resvs[i].name);
    std::free(st->resvs[i].nodes);
    std::free(st->resvs[i].users);
  }
  std::free(st->resvs);
  for (size_t i = 0; st->events && i < st->event_cnt; i++) {
    std::free(st->events[i].text);
    acl_free(&st->events[i].acl);
  }
  std::free(st->events);
  std::memset(st, 0, sizeof *st);
}

extern "C" int flexco_decode_events_state(const char* text, size_t len,
                                          const flexco_evstate_limits_t* lim,
                                          flexco_events_state_t* out, char* why, size_t why_len) {
  std::memset(out, 0, sizeof *out);
  json_error_t jerr;
  json_t* root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) return state_fail(why, why_len, "%s (line %d)", jerr.text, jerr.line);
  int rc;
  try {
    rc = decode_events_state(root, lim, out, why, why_len);
  } catch (const std::exception&) {
    rc = state_fail(why, why_len, "out of memory");
  }
  json_decref(root);
  if (rc) flexco_events_state_free(out);
  return rc;
}

namespace {

json_t* uid_json_array(const uint32_t* v, size_t n) {
  json_t* a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_integer(static_cast<json_int_t>(v[i])))) {
      json_decref(a);
      return nullptr;
    }
  return a;
}

// The head of the file: every member but "events", as one object.
json_t* state_head(const flexco_events_state_t* st) {
  json_t *rep = json_array(), *rv = json_array(), *acc = json_array();
  bool ok = rep && rv && acc;
  for (size_t i = 0; ok && i < st->job_cnt; i++)
    ok = !json_array_append_new(rep, json_pack("[I, I, I]", static_cast<json_int_t>(st->jobs[i].job_id),
                                               static_cast<json_int_t>(st->jobs[i].start),
                                               static_cast<json_int_t>(st->jobs[i].end)));
  for (size_t i = 0; ok && i < st->resv_cnt; i++) {
    const flexco_evstate_resv_t& r = st->resvs[i];
    ok = !json_array_append_new(
        rv, json_pack("{s:s, s:I, s:I, s:s?, s:I, s:b, s:b, s:o, s:b}", "name", r.name, "start",
                      static_cast<json_int_t>(r.start), "end", static_cast<json_int_t>(r.end),
                      "nodes", r.nodes, "node_count", static_cast<json_int_t>(r.node_cnt),
                      "activated", r.activated, "ended", r.ended, "users",
                      uid_json_array(r.users, r.user_cnt), "users_not", r.users_not));
  }
  for (size_t i = 0; ok && i < st->event_cnt; i++) {
    const flexco_evstate_acl_t& a = st->events[i].acl;
    if (!a.job && !a.resv) continue;
    json_t* o = json_pack("{s:I}", "seq", static_cast<json_int_t>(st->events[i].seq));
    if (o && a.job) {
      json_object_set_new(o, "job_uid", json_integer(static_cast<json_int_t>(a.job_uid)));
      if (a.account) json_object_set_new(o, "account", json_string(a.account));
    }
    if (o && a.resv) {
      json_object_set_new(o, "users", uid_json_array(a.users, a.user_cnt));
      json_object_set_new(o, "users_not", json_boolean(a.users_not));
    }
    ok = !json_array_append_new(acc, o);
  }
  if (!ok) {
    json_decref(rep);
    json_decref(rv);
    json_decref(acc);
    return nullptr;
  }
  return json_pack("{s:i, s:b, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "version", 1, "clean",
                   st->clean, "saved_at", static_cast<json_int_t>(st->saved_at), "reserved",
                   static_cast<json_int_t>(st->reserved), "latest",
                   static_cast<json_int_t>(st->latest), "lost_upto",
                   static_cast<json_int_t>(st->lost_upto), "job_floor",
                   static_cast<json_int_t>(st->job_floor), "reported_jobs", rep, "reservations",
                   rv, "access", acc);
}

}  // namespace

extern "C" int flexco_encode_events_state(const flexco_events_state_t* st,
                                          int (*put)(const char*, size_t, void*), void* arg,
                                          char* why, size_t why_len) {
  if (st->reserved > static_cast<uint64_t>(INT64_MAX) || st->latest > st->reserved ||
      st->lost_upto > st->latest)
    return state_fail(why, why_len, "cannot encode the state (sequence numbers out of order)");
  json_t* root = state_head(st);
  char* head = root ? json_dumps(root, JSON_COMPACT) : nullptr;
  json_decref(root);
  size_t hlen = head ? std::strlen(head) : 0;
  if (hlen < 2 || head[hlen - 1] != '}') {
    std::free(head);
    return state_fail(why, why_len, "cannot encode the state");
  }
  // {...head..., "events":[e1,\ne2,...]} with the events' texts as they are
  int rc = put(head, hlen - 1, arg) || put(",\"events\":[", 11, arg);
  for (size_t i = 0; !rc && i < st->event_cnt; i++)
    rc = (i && put(",\n", 2, arg)) || put(st->events[i].text, st->events[i].len, arg);
  rc = rc || put("]}\n", 3, arg);
  std::free(head);
  if (rc) return state_fail(why, why_len, "write failed");
  return 0;
}
