// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/core/capi_decode: the plugin's request decoders, without
// slurmctld.  Every rule of doc/reservations.md and doc/events.md that a
// decoder enforces has a case that is accepted at its bound and refused
// just past it, with the exact error code.

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <jansson.h>

#include "core/capi_decode.h"

#include <check.h>

namespace {

constexpr int64_t kNow = 1800000000;

// The error code of a JSON error document (and frees it).
std::string code_of(char* doc) {
  std::string code;
  json_t* o = doc ? json_loads(doc, 0, nullptr) : nullptr;
  const char* c = nullptr;
  if (o && !json_unpack(o, "{s:{s:s}}", "error", "code", &c)) code = c;
  json_decref(o);
  std::free(doc);
  return code;
}

int create(const std::string& body, flexco_resv_create_t* r, std::string* code) {
  char* err = nullptr;
  int rc = flexco_decode_resv_create(body.data(), body.size(), kNow, r, &err);
  *code = rc ? code_of(err) : "";
  if (!rc) ck_assert_ptr_null(err);
  return rc;
}

std::string with(const std::string& members) {
  return "{\"user\":\"alice\",\"nodes\":2,\"start\":" + std::to_string(kNow + 600) +
         ",\"duration\":600" + members + "}";
}

START_TEST(resv_create_ok) {
  flexco_resv_create_t r;
  std::string code;
  ck_assert_int_eq(create(with(",\"partition\":\"batch\",\"owner\":\"flexcod-0a.b_c\"," \
                               "\"confirm_within\":3600"), &r, &code), 0);
  ck_assert_str_eq(r.user, "alice");
  ck_assert_str_eq(r.partition, "batch");
  ck_assert_str_eq(r.owner, "flexcod-0a.b_c");
  ck_assert_int_eq(r.nodes, 2);
  ck_assert_int_eq(r.start, kNow + 600);
  ck_assert_int_eq(r.duration, 600);
  ck_assert_int_eq(r.confirm_within, 3600);
  flexco_resv_create_free(&r);
  ck_assert_int_eq(create(with(""), &r, &code), 0);
  ck_assert_ptr_null(r.partition);
  ck_assert_ptr_null(r.owner);
  ck_assert_int_eq(r.confirm_within, FLEXCO_RESV_DEFAULT_CONFIRM);
  flexco_resv_create_free(&r);
}
END_TEST

// A user is a name: a number would be resolved as a uid, and uids differ
// between sites (issue 38 §2.3).  A name with digits in it is a name.
START_TEST(resv_create_user_not_a_number) {
  flexco_resv_create_t r;
  std::string code;
  const std::string tail = ",\"nodes\":2,\"start\":" + std::to_string(kNow + 600) + ",\"duration\":600}";
  ck_assert_int_eq(create("{\"user\":\"64001\"" + tail, &r, &code), 400);
  ck_assert_str_eq(code.c_str(), "bad_request");
  ck_assert_int_eq(create("{\"user\":\"0\"" + tail, &r, &code), 400);
  ck_assert_int_eq(create("{\"user\":\"u64001\"" + tail, &r, &code), 0);
  ck_assert_str_eq(r.user, "u64001");
  flexco_resv_create_free(&r);
}
END_TEST

START_TEST(resv_create_window) {
  flexco_resv_create_t r;
  std::string code;
  auto body = [](int64_t start, int64_t dur) {
    return "{\"user\":\"a\",\"nodes\":1,\"start\":" + std::to_string(start) +
           ",\"duration\":" + std::to_string(dur) + "}";
  };
  // start: now - 60 .. now + 366 days
  ck_assert_int_eq(create(body(kNow - 60, 60), &r, &code), 0);
  flexco_resv_create_free(&r);
  ck_assert_int_eq(create(body(kNow - 61, 60), &r, &code), 400);
  ck_assert_str_eq(code.c_str(), "bad_request");
  ck_assert_int_eq(create(body(kNow + FLEXCO_RESV_MAX_DURATION, 60), &r, &code), 0);
  flexco_resv_create_free(&r);
  ck_assert_int_eq(create(body(kNow + FLEXCO_RESV_MAX_DURATION + 1, 60), &r, &code), 400);
  // duration: 60 s .. 366 days
  ck_assert_int_eq(create(body(kNow, 59), &r, &code), 400);
  ck_assert_int_eq(create(body(kNow, FLEXCO_RESV_MAX_DURATION), &r, &code), 0);
  flexco_resv_create_free(&r);
  ck_assert_int_eq(create(body(kNow, FLEXCO_RESV_MAX_DURATION + 1), &r, &code), 400);
}
END_TEST

START_TEST(resv_create_refused) {
  const char* bad[] = {
      "",
      "[]",
      "{\"user\":\"a\"",
      "{\"user\":\"a\",\"user\":\"b\",\"nodes\":1,\"start\":1800000000,\"duration\":60}",
      "{\"nodes\":1,\"start\":1800000000,\"duration\":60}",
      "{\"user\":\"\",\"nodes\":1,\"start\":1800000000,\"duration\":60}",
      "{\"user\":\"a\\u0000b\",\"nodes\":1,\"start\":1800000000,\"duration\":60}",
      "{\"user\":7,\"nodes\":1,\"start\":1800000000,\"duration\":60}",
      "{\"user\":\"a\",\"nodes\":0,\"start\":1800000000,\"duration\":60}",
      "{\"user\":\"a\",\"nodes\":1000001,\"start\":1800000000,\"duration\":60}",
      "{\"user\":\"a\",\"nodes\":\"2\",\"start\":1800000000,\"duration\":60}",
      "{\"user\":\"a\",\"nodes\":1.5,\"start\":1800000000,\"duration\":60}",
      "{\"user\":\"a\",\"nodes\":1,\"duration\":60}",
      "{\"user\":\"a\",\"nodes\":1,\"start\":1800000000,\"duration\":60,\"colour\":1}",
      "{\"user\":\"a\",\"nodes\":1,\"start\":1800000000,\"duration\":60,\"partition\":\"\"}",
      "{\"user\":\"a\",\"nodes\":1,\"start\":1800000000,\"duration\":60,\"owner\":\"a b\"}",
      "{\"user\":\"a\",\"nodes\":1,\"start\":1800000000,\"duration\":60,\"owner\":null}",
      "{\"user\":\"a\",\"nodes\":1,\"start\":1800000000,\"duration\":60,\"confirm_within\":0}",
      "{\"user\":\"a\",\"nodes\":1,\"start\":1800000000,\"duration\":60,\"confirm_within\":3601}",
  };
  for (const char* b : bad) {
    flexco_resv_create_t r;
    std::string code;
    ck_assert_msg(create(b, &r, &code) == 400 && code == "bad_request", "accepted: %s", b);
    ck_assert_ptr_null(r.user);  // nothing left to free
  }
  std::string long_user = "{\"user\":\"" + std::string(65, 'u') +
                          "\",\"nodes\":1,\"start\":1800000000,\"duration\":60}";
  flexco_resv_create_t r;
  std::string code;
  ck_assert_int_eq(create(long_user, &r, &code), 400);
  ck_assert_int_eq(create(with(",\"owner\":\"" + std::string(65, 'o') + "\""), &r, &code), 400);
  ck_assert_int_eq(create(with(",\"owner\":\"" + std::string(64, 'o') + "\""), &r, &code), 0);
  flexco_resv_create_free(&r);
}
END_TEST

START_TEST(resv_modify) {
  flexco_resv_modify_t m = {kNow + 100, 3, 600};
  char* err = nullptr;
  std::string b = "{\"nodes\":4}";
  ck_assert_int_eq(flexco_decode_resv_modify(b.data(), b.size(), kNow, &m, &err), 0);
  ck_assert_int_eq(m.nodes, 4);
  ck_assert_int_eq(m.start, kNow + 100);  // left out: kept
  ck_assert_int_eq(m.duration, 600);
  const char* bad[] = {"{\"nodes\":0}", "{\"start\":1799999939}", "{\"duration\":59}",
                       "{\"end\":1}", "null", "{\"nodes\":4,\"nodes\":5}"};
  for (const char* x : bad) {
    flexco_resv_modify_t keep = m;
    ck_assert_msg(flexco_decode_resv_modify(x, std::strlen(x), kNow, &m, &err) == 400 &&
                      code_of(err) == "bad_request",
                  "accepted: %s", x);
    err = nullptr;
    ck_assert_int_eq(m.nodes, keep.nodes);  // unchanged on refusal
    ck_assert_int_eq(m.start, keep.start);
  }
}
END_TEST

int job(const std::string& body, flexco_jobspec_t* s, std::string* code) {
  char* err = nullptr;
  int rc = flexco_decode_jobspec(body.data(), body.size(), s, &err);
  *code = rc ? code_of(err) : "";
  return rc;
}

START_TEST(jobspec_ok) {
  flexco_jobspec_t s;
  std::string code;
  ck_assert_int_eq(job("{\"script\":\"#!/bin/sh\\n\",\"argv\":[\"a\",\"b c\"],"
                       "\"environment\":{\"X\":\"1\",\"_Y2\":\"\"},\"work_dir\":\"/tmp\","
                       "\"time_limit\":60,\"nodes\":2,\"name\":\"n\",\"coallocation\":\"co-1\","
                       "\"part_index\":1,\"parts\":[{\"cluster\":\"alpha\",\"nodes\":2},"
                       "{\"cluster\":\"b-1.x\",\"nodes\":3}],\"start\":1800000000}",
                       &s, &code),
                   0);
  ck_assert_str_eq(s.script, "#!/bin/sh\n");
  ck_assert_uint_eq(s.argc, 2);
  ck_assert_str_eq(s.argv[1], "b c");
  ck_assert_uint_eq(s.env_cnt, 2);
  ck_assert_str_eq(s.env[0], "X=1");
  ck_assert_str_eq(s.parts, "alpha:2,b-1.x:3");
  ck_assert_int_eq(s.part_index, 1);
  ck_assert_int_eq(s.time_limit, 60);
  ck_assert_int_eq(s.hold, 0);
  flexco_jobspec_free(&s);
  ck_assert_int_eq(job("{\"script\":\"#!x\"}", &s, &code), 0);
  ck_assert_int_eq(s.part_index, -1);
  ck_assert_ptr_null(s.parts);
  ck_assert_int_eq(s.hold, 0);
  flexco_jobspec_free(&s);
  ck_assert_int_eq(job("{\"script\":\"#!x\",\"account\":\"proj1\",\"qos\":\"high\"}", &s, &code), 0);
  ck_assert_str_eq(s.account, "proj1");
  ck_assert_str_eq(s.qos, "high");
  flexco_jobspec_free(&s);
  ck_assert_ptr_null(s.account);
  ck_assert_int_eq(job("{\"script\":\"#!x\",\"hold\":true}", &s, &code), 0);
  ck_assert_int_eq(s.hold, 1);
  flexco_jobspec_free(&s);
  ck_assert_int_eq(job("{\"script\":\"#!x\",\"hold\":false}", &s, &code), 0);
  ck_assert_int_eq(s.hold, 0);
  ck_assert_ptr_null(s.rendezvous_url);
  flexco_jobspec_free(&s);
  // flexcod's start-up rendezvous: the URL and the part's token
  const std::string tok(64, 'f');
  ck_assert_int_eq(job("{\"script\":\"#!x\",\"rendezvous\":{\"url\":\"http://10.0.0.1:26990\","
                       "\"token\":\"" + tok + "\"}}", &s, &code),
                   0);
  ck_assert_str_eq(s.rendezvous_url, "http://10.0.0.1:26990");
  ck_assert_str_eq(s.rendezvous_token, tok.c_str());
  flexco_jobspec_free(&s);
  ck_assert_ptr_null(s.rendezvous_token);
}
END_TEST

START_TEST(jobspec_refused) {
  std::string parts65 = "[";
  for (int i = 0; i < 65; i++) parts65 += std::string(i ? "," : "") + "{\"cluster\":\"c\",\"nodes\":1}";
  parts65 += "]";
  const std::string bad[] = {
      "{}",
      "{\"script\":\"echo\"}",
      "{\"script\":\"#!x\",\"x\":1}",
      "{\"script\":\"#!x\",\"argv\":\"a\"}",
      "{\"script\":\"#!x\",\"argv\":[1]}",
      "{\"script\":\"#!x\",\"environment\":{\"SLURM_X\":\"1\"}}",
      "{\"script\":\"#!x\",\"environment\":{\"FLEXCO_X\":\"1\"}}",
      "{\"script\":\"#!x\",\"environment\":{\"1X\":\"1\"}}",
      "{\"script\":\"#!x\",\"environment\":{\"A-B\":\"1\"}}",
      "{\"script\":\"#!x\",\"environment\":{\"A\":1}}",
      "{\"script\":\"#!x\",\"work_dir\":\"tmp\"}",
      "{\"script\":\"#!x\",\"account\":\"\"}",
      "{\"script\":\"#!x\",\"account\":\"a b\"}",
      "{\"script\":\"#!x\",\"account\":1}",
      "{\"script\":\"#!x\",\"qos\":\"a,b\"}",
      "{\"script\":\"#!x\",\"qos\":\"0123456789012345678901234567890123456789012345678901234567890123x\"}",
      "{\"script\":\"#!x\",\"time_limit\":59}",
      "{\"script\":\"#!x\",\"part_index\":64}",
      "{\"script\":\"#!x\",\"parts\":[]}",
      "{\"script\":\"#!x\",\"parts\":" + parts65 + "}",
      "{\"script\":\"#!x\",\"parts\":[{\"cluster\":\"" + std::string(65, 'c') + "\",\"nodes\":1}]}",
      "{\"script\":\"#!x\",\"parts\":[{\"cluster\":\"a b\",\"nodes\":1}]}",
      "{\"script\":\"#!x\",\"parts\":[{\"cluster\":\"a\",\"nodes\":1,\"x\":2}]}",
      "{\"script\":\"#!x\",\"parts\":[{\"cluster\":\"a\",\"nodes\":1}],\"part_index\":1}",
      "{\"script\":\"#!x\",\"name\":\"" + std::string(257, 'n') + "\"}",
      "{\"script\":\"#!x\",\"hold\":1}",
      "{\"script\":\"#!x\",\"hold\":\"true\"}",
      "{\"script\":\"#!x\",\"hold\":null}",
      "{\"script\":\"#!x\",\"rendezvous\":\"http://h:1\"}",
      "{\"script\":\"#!x\",\"rendezvous\":{\"url\":\"http://h:1\"}}",
      "{\"script\":\"#!x\",\"rendezvous\":{\"url\":\"ftp://h:1\",\"token\":\"" + std::string(64, 'a') + "\"}}",
      "{\"script\":\"#!x\",\"rendezvous\":{\"url\":\"http://h :1\",\"token\":\"" + std::string(64, 'a') + "\"}}",
      "{\"script\":\"#!x\",\"rendezvous\":{\"url\":\"http://h:1\",\"token\":\"short\"}}",
      "{\"script\":\"#!x\",\"rendezvous\":{\"url\":\"http://h:1\",\"token\":\"" + std::string(64, ';') + "\"}}",
      "{\"script\":\"#!x\",\"rendezvous\":{\"url\":\"http://h:1\",\"token\":\"" + std::string(129, 'a') + "\"}}",
      "{\"script\":\"#!x\",\"rendezvous\":{\"url\":\"http://h:1\",\"token\":\"" + std::string(64, 'a') +
          "\",\"x\":1}}",
  };
  for (const auto& b : bad) {
    flexco_jobspec_t s;
    std::string code;
    ck_assert_msg(job(b, &s, &code) == 400 && code == "bad_request", "accepted: %.200s", b.c_str());
    ck_assert_ptr_null(s.script);  // freed
  }
}
END_TEST

START_TEST(events_query) {
  flexco_events_query_t q;
  char* err = nullptr;
  ck_assert_int_eq(flexco_decode_events_query(nullptr, nullptr, nullptr, &q, &err), 0);
  ck_assert_uint_eq(q.after, 0);
  ck_assert_uint_eq(q.wait, 0);
  ck_assert_uint_eq(q.max, FLEXCO_EVENTS_DEFAULT_MAX);
  ck_assert_int_eq(flexco_decode_events_query("9223372036854775807", "60", "1000", &q, &err), 0);
  ck_assert_uint_eq(q.after, 9223372036854775807ULL);
  const char* bad[][3] = {{"9223372036854775808", nullptr, nullptr}, {"-1", nullptr, nullptr},
                          {"", nullptr, nullptr},  {"1 ", nullptr, nullptr},
                          {nullptr, "61", nullptr}, {nullptr, "+1", nullptr},
                          {nullptr, nullptr, "0"},  {nullptr, nullptr, "1001"},
                          {nullptr, nullptr, "0x10"}};
  for (auto& b : bad) {
    ck_assert_int_eq(flexco_decode_events_query(b[0], b[1], b[2], &q, &err), 400);
    ck_assert_str_eq(code_of(err).c_str(), "bad_parameter");
    err = nullptr;
  }
  int64_t h = 0;
  ck_assert_int_eq(flexco_decode_profile_query(nullptr, nullptr, &h, &err), 0);
  ck_assert_int_eq(h, FLEXCO_PROFILE_DEFAULT_HORIZON);
  ck_assert_int_eq(flexco_decode_profile_query(std::string(256, 'p').c_str(), "31622400", &h, &err), 0);
  ck_assert_int_eq(h, 31622400);
  const char* pbad[][2] = {{nullptr, "0"}, {nullptr, "31622401"}, {nullptr, "-5"}, {nullptr, ""},
                           {nullptr, "1h"}};
  for (auto& b : pbad) {
    ck_assert_int_eq(flexco_decode_profile_query(b[0], b[1], &h, &err), 400);
    ck_assert_str_eq(code_of(err).c_str(), "bad_parameter");
    err = nullptr;
  }
  ck_assert_int_eq(flexco_decode_profile_query(std::string(257, 'p').c_str(), nullptr, &h, &err), 400);
  ck_assert_str_eq(code_of(err).c_str(), "bad_parameter");
  err = nullptr;
  uint64_t v = 0;
  ck_assert_int_eq(flexco_decode_u64("18446744073709551615", UINT64_MAX, &v), 0);
  ck_assert_int_eq(flexco_decode_u64("18446744073709551616", UINT64_MAX, &v), -1);
}
END_TEST

START_TEST(owner_rule) {
  ck_assert(flexco_owner_ok("a"));
  ck_assert(flexco_owner_ok("flexcod-0123456789abcdef"));
  ck_assert(!flexco_owner_ok(""));
  ck_assert(!flexco_owner_ok(nullptr));
  ck_assert(!flexco_owner_ok("a/b"));
  ck_assert(!flexco_owner_ok(std::string(65, 'x').c_str()));
}
END_TEST

START_TEST(router) {
  struct Case {
    const char *method, *path;
    flexco_route_kind_t kind;
    int status, ep;
    const char *allow, *id, *job;
  } cases[] = {
      {"POST", "/v1/probe", FLEXCO_RT_PROBE, 0, FLEXCO_EP_PROBE, nullptr, "", nullptr},
      {"GET", "/v1/probe", FLEXCO_RT_NONE, 405, FLEXCO_EP_PROBE, "POST", "", nullptr},
      {"GET", "/v1/profile", FLEXCO_RT_PROFILE, 0, FLEXCO_EP_PROFILE, nullptr, "", nullptr},
      {"GET", "/v1/stats", FLEXCO_RT_STATS, 0, FLEXCO_EP_STATS, nullptr, "", nullptr},
      {"GET", "/v1/events", FLEXCO_RT_EVENTS, 0, FLEXCO_EP_EVENTS, nullptr, "", nullptr},
      {"POST", "/v1/events", FLEXCO_RT_NONE, 405, FLEXCO_EP_EVENTS, "GET", "", nullptr},
      {"GET", "/v1/events/", FLEXCO_RT_NONE, 404, FLEXCO_EP_OTHER, nullptr, "", nullptr},
      {"GET", "/v1/statsx", FLEXCO_RT_NONE, 404, FLEXCO_EP_OTHER, nullptr, "", nullptr},
      {"GET", "", FLEXCO_RT_NONE, 404, FLEXCO_EP_OTHER, nullptr, "", nullptr},
      {"GET", "/v1/reservations", FLEXCO_RT_RESV_LIST, 0, FLEXCO_EP_RESV, nullptr, "", nullptr},
      {"POST", "/v1/reservations", FLEXCO_RT_RESV_CREATE, 0, FLEXCO_EP_RESV, nullptr, "", nullptr},
      {"PUT", "/v1/reservations", FLEXCO_RT_NONE, 405, FLEXCO_EP_RESV, "GET, POST", "", nullptr},
      {"GET", "/v1/reservationsx", FLEXCO_RT_NONE, 404, FLEXCO_EP_OTHER, nullptr, "", nullptr},
      {"GET", "/v1/reservations/", FLEXCO_RT_NONE, 404, FLEXCO_EP_RESV, nullptr, "", nullptr},
      {"GET", "/v1/reservations/7", FLEXCO_RT_RESV_GET, 0, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"PATCH", "/v1/reservations/7", FLEXCO_RT_RESV_MODIFY, 0, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"DELETE", "/v1/reservations/7", FLEXCO_RT_RESV_DELETE, 0, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"POST", "/v1/reservations/7", FLEXCO_RT_NONE, 405, FLEXCO_EP_RESV, "GET, PATCH, DELETE", "7", nullptr},
      {"POST", "/v1/reservations/7/confirm", FLEXCO_RT_RESV_CONFIRM, 0, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"GET", "/v1/reservations/7/confirm", FLEXCO_RT_NONE, 405, FLEXCO_EP_RESV, "POST", "7", nullptr},
      {"POST", "/v1/reservations/7/jobs", FLEXCO_RT_JOB_SUBMIT, 0, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"GET", "/v1/reservations/7/jobs/42", FLEXCO_RT_JOB_GET, 0, FLEXCO_EP_RESV, nullptr, "7", "42"},
      {"GET", "/v1/reservations/7/jobs/42/x", FLEXCO_RT_NONE, 404, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"POST", "/v1/reservations/7/jobs/42/release", FLEXCO_RT_JOB_RELEASE, 0, FLEXCO_EP_RESV, nullptr, "7", "42"},
      {"GET", "/v1/reservations/7/jobs/42/release", FLEXCO_RT_NONE, 405, FLEXCO_EP_RESV, "POST", "7", nullptr},
      {"POST", "/v1/reservations/7/jobs/42/release/", FLEXCO_RT_NONE, 404, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"POST", "/v1/reservations/7/jobs//release", FLEXCO_RT_NONE, 404, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"GET", "/v1/reservations/7/jobs/", FLEXCO_RT_NONE, 404, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"POST", "/v1/reservations/7/other", FLEXCO_RT_NONE, 404, FLEXCO_EP_RESV, nullptr, "7", nullptr},
      {"GET", "/v1/reservations/0123456789012345678901234567890", FLEXCO_RT_RESV_GET, 0,
       FLEXCO_EP_RESV, nullptr, "0123456789012345678901234567890", nullptr},
      {"GET", "/v1/reservations/01234567890123456789012345678901", FLEXCO_RT_NONE, 404,
       FLEXCO_EP_RESV, nullptr, "", nullptr},
  };
  for (const auto& c : cases) {
    flexco_route_t r;
    flexco_route(c.method, c.path, &r);
    ck_assert_msg(r.kind == c.kind && r.status == c.status && r.ep == c.ep, "%s %s: %d %d %d",
                  c.method, c.path, r.kind, r.status, r.ep);
    ck_assert_msg((c.allow == nullptr) == (r.allow == nullptr) &&
                      (!c.allow || !std::strcmp(c.allow, r.allow)),
                  "%s %s: allow", c.method, c.path);
    ck_assert_msg(!r.status || r.message[0], "%s %s: no message", c.method, c.path);
    ck_assert_str_eq(r.id, c.id);
    ck_assert_msg((c.job == nullptr) == (r.job == nullptr) && (!c.job || !std::strcmp(c.job, r.job)),
                  "%s %s: job", c.method, c.path);
  }
}
END_TEST

const char* kGoodState =
    "{\"version\":1,\"next_id\":9,\"reservations\":["
    "{\"id\":3,\"name\":\"flexco_3\",\"user\":\"alice\",\"uid\":1000,\"nodes\":2,"
    "\"start\":100,\"end\":200,\"state\":\"confirmed\",\"created\":50,\"changed\":60,"
    "\"partition\":null,\"node_list\":\"n[1-2]\",\"confirm_by\":null,\"reason\":null,"
    "\"owner\":\"flexcod-ab\",\"jobs\":[{\"job_id\":7,\"part_index\":1,\"submitted\":70,"
    "\"started\":true,\"ended\":false}]},"
    "{\"id\":12,\"name\":\"flexco_12\",\"user\":\"bob\",\"uid\":1001,\"nodes\":1,"
    "\"start\":100,\"end\":200,\"state\":\"tentative\",\"created\":50,\"changed\":60,"
    "\"partition\":\"batch\",\"node_list\":null,\"confirm_by\":90,\"reason\":\"r\","
    "\"jobs\":[]}],"
    "\"requests\":[{\"key\":\"k1\",\"uid\":0,\"status\":201,\"response\":\"{}\",\"when\":5},"
    "{\"key\":\"k2\",\"uid\":0,\"status\":200,\"response\":\"{}\",\"when\":6,"
    "\"method\":\"DELETE\",\"target\":\"/v1/reservations/3\",\"body_sha256\":"
    "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}]}";

START_TEST(resv_state_ok) {
  flexco_resv_state_t st;
  char why[256] = "";
  ck_assert_int_eq(flexco_decode_resv_state(kGoodState, std::strlen(kGoodState), 4096, 64, &st,
                                            why, sizeof why),
                   0);
  ck_assert_int_eq(st.next_id, 9);
  ck_assert_uint_eq(st.resv_cnt, 2);
  ck_assert_str_eq(st.resvs[0].owner, "flexcod-ab");
  ck_assert_ptr_null(st.resvs[0].partition);
  ck_assert_uint_eq(st.resvs[0].job_cnt, 1);
  ck_assert_int_eq(st.resvs[0].jobs[0].job_id, 7);
  ck_assert(st.resvs[0].jobs[0].started && !st.resvs[0].jobs[0].ended);
  ck_assert_ptr_null(st.resvs[1].owner);  // saved before owners
  ck_assert_int_eq(st.resvs[1].confirm_by, 90);
  ck_assert_uint_eq(st.key_cnt, 2);
  ck_assert_ptr_null(st.keys[0].method);  // saved unbound
  ck_assert_str_eq(st.keys[1].target, "/v1/reservations/3");
  flexco_resv_state_free(&st);
}
END_TEST

START_TEST(resv_state_refused) {
  const std::string good = kGoodState;
  auto swap = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    size_t at = t.find(from);
    ck_assert_msg(at != std::string::npos, "no %s", from.c_str());
    return t.replace(at, from.size(), to);
  };
  const std::string bad[] = {
      good.substr(0, good.size() - 1),
      swap("\"version\":1", "\"version\":2"),
      swap("\"next_id\":9", "\"next_id\":0"),
      swap("\"name\":\"flexco_12\"", "\"name\":\"flexco_13\""),
      swap("\"id\":12,", "\"id\":3,"),
      swap("\"name\":\"flexco_12\"", "\"name\":\"flexco_3\"").replace(
          good.find("\"id\":12,"), 8, "\"id\":3, "),
      swap("\"state\":\"tentative\"", "\"state\":\"lost\""),
      swap("\"uid\":1001", "\"uid\":4294967296"),
      swap("\"job_id\":7", "\"job_id\":0"),
      swap("\"owner\":\"flexcod-ab\"", "\"owner\":\"a b\""),
      swap("\"reason\":\"r\"", "\"reason\":5"),
      swap("\"jobs\":[]}", "\"jobs\":[],\"extra\":1}"),
      swap("\"target\":\"/v1/reservations/3\",", ""),
      swap("e3b0c44298fc", "E3B0C44298FC"),
      swap("\"when\":5}", "\"when\":\"5\"}"),
  };
  for (const auto& b : bad) {
    flexco_resv_state_t st;
    char why[256] = "";
    ck_assert_msg(flexco_decode_resv_state(b.data(), b.size(), 4096, 64, &st, why, sizeof why) == -1 &&
                      why[0] && st.resvs == nullptr && st.keys == nullptr,
                  "accepted: %.300s", b.c_str());
  }
  flexco_resv_state_t st;
  char why[256] = "";
  ck_assert_int_eq(flexco_decode_resv_state(kGoodState, std::strlen(kGoodState), 1, 64, &st, why,
                                            sizeof why),
                   -1);  // more records than allowed
  ck_assert_int_eq(flexco_decode_resv_state(kGoodState, std::strlen(kGoodState), 4096, 0, &st, why,
                                            sizeof why),
                   -1);  // more jobs than allowed
}
END_TEST

// ---------------------------------------------------------------------------
// query parameters, the events cursor, the events state file

std::string query(const std::vector<flexco_query_arg_t>& args, const char* const* allowed,
                  const char** vals, std::string* msg) {
  char* err = nullptr;
  int rc = flexco_decode_query_args(args.data(), args.size(), allowed, vals, "stats takes none",
                                    &err);
  if (!rc) {
    ck_assert_ptr_null(err);
    return "";
  }
  ck_assert_int_eq(rc, 400);
  json_t* o = json_loads(err, 0, nullptr);
  const char *c = nullptr, *m = nullptr;
  ck_assert(o && !json_unpack(o, "{s:{s:s, s:s}}", "error", "code", &c, "message", &m));
  std::string code = c;
  *msg = m;
  json_decref(o);
  std::free(err);
  return code;
}

START_TEST(query_args) {
  static const char* const ev[] = {"after", "wait", "max", nullptr};
  static const char* const none[] = {nullptr};
  const char* vals[3];
  std::string msg;
  ck_assert_str_eq(query({}, ev, vals, &msg).c_str(), "");
  ck_assert(!vals[0] && !vals[1] && !vals[2]);
  ck_assert_str_eq(query({{"max", "5"}, {"after", "7"}}, ev, vals, &msg).c_str(), "");
  ck_assert(!std::strcmp(vals[0], "7") && !vals[1] && !std::strcmp(vals[2], "5"));
  // an unknown one is reported first, wherever it is
  ck_assert_str_eq(query({{"after", "1"}, {"after", "2"}, {"bogus", "1"}}, ev, vals, &msg).c_str(),
                   "bad_parameter");
  ck_assert_str_eq(msg.c_str(), "unknown query parameter 'bogus' (allowed: after, wait, max)");
  ck_assert_str_eq(query({{"wait", "1"}, {"wait", "1"}}, ev, vals, &msg).c_str(), "bad_parameter");
  ck_assert_str_eq(msg.c_str(), "wait: given more than once");
  ck_assert_str_eq(query({{"after", ""}}, ev, vals, &msg).c_str(), "bad_parameter");
  ck_assert_str_eq(msg.c_str(), "after: needs a value");
  ck_assert_str_eq(query({{"max", nullptr}}, ev, vals, &msg).c_str(), "bad_parameter");
  ck_assert_str_eq(msg.c_str(), "max: needs a value");
  ck_assert_str_eq(query({{"", "1"}}, ev, vals, &msg).c_str(), "bad_parameter");
  ck_assert_str_eq(query({{"After", "1"}}, ev, vals, &msg).c_str(), "bad_parameter");
  // an endpoint without parameters
  ck_assert_str_eq(query({}, none, nullptr, &msg).c_str(), "");
  ck_assert_str_eq(query({{"x", "1"}}, none, nullptr, &msg).c_str(), "bad_parameter");
  ck_assert_str_eq(msg.c_str(), "stats takes none");
  // a long unknown name is cut in the message
  ck_assert_str_eq(query({{std::string(300, 'k').c_str(), "1"}}, ev, vals, &msg).c_str(),
                   "bad_parameter");
  ck_assert_uint_lt(msg.size(), 200);
}
END_TEST

struct TestRing {
  std::vector<uint64_t> seq;
  std::vector<bool> vis;
};
uint64_t ring_seq(size_t i, void* a) { return static_cast<TestRing*>(a)->seq[i]; }
bool ring_vis(size_t i, void* a) { return static_cast<TestRing*>(a)->vis[i]; }

flexco_events_page_t page_of(TestRing& r, uint64_t after, uint32_t max, uint64_t latest,
                             uint64_t lost_upto, std::vector<uint32_t>* pick) {
  flexco_events_page_t pg;
  pick->assign(max, UINT32_MAX);
  flexco_events_page(after, max, latest, lost_upto, r.seq.size(), ring_seq, ring_vis, &r,
                     pick->data(), &pg);
  pick->resize(pg.count);
  return pg;
}

START_TEST(events_cursor) {
  // retained 11..15 (13 hidden), latest 15, 1..10 pushed out
  TestRing r{{11, 12, 13, 14, 15}, {true, true, false, true, true}};
  std::vector<uint32_t> pick;
  ck_assert_uint_eq(flexco_events_first_after(0, 5, ring_seq, &r), 0);
  ck_assert_uint_eq(flexco_events_first_after(12, 5, ring_seq, &r), 2);
  ck_assert_uint_eq(flexco_events_first_after(15, 5, ring_seq, &r), 5);
  ck_assert_uint_eq(flexco_events_first_after(0, 0, ring_seq, &r), 0);
  // max=2 pages: next is the last one shown
  flexco_events_page_t pg = page_of(r, 10, 2, 15, 10, &pick);
  ck_assert(!pg.lost && pg.count == 2 && pick == std::vector<uint32_t>({0, 1}) && pg.next == 12);
  // a hidden event is stepped over, not shown, and not asked for again
  pg = page_of(r, 12, 1, 15, 10, &pick);
  ck_assert(!pg.lost && pick == std::vector<uint32_t>({3}) && pg.next == 14);
  pg = page_of(r, 12, 100, 15, 10, &pick);
  ck_assert(pick == std::vector<uint32_t>({3, 4}) && pg.next == 15);
  // lost: after below lost_upto (at lost_upto is not), or above latest
  pg = page_of(r, 9, 100, 15, 10, &pick);
  ck_assert(pg.lost && pg.count == 4 && pg.next == 15);
  pg = page_of(r, 10, 100, 15, 10, &pick);
  ck_assert(!pg.lost && pg.count == 4);
  pg = page_of(r, 1015, 100, 15, 10, &pick);
  ck_assert(pg.lost && pg.count == 0 && pg.next == 15);  // next: latest
  // nothing new: next stays at after, and a long poll may wait
  pg = page_of(r, 15, 100, 15, 10, &pick);
  ck_assert(!pg.lost && pg.count == 0 && pg.next == 15);
  ck_assert(!flexco_events_park(15, &pg, 15));  // nothing stepped over
  // only a hidden event new: the resumed poll waits on past it
  TestRing h{{11, 12}, {true, false}};
  pg = page_of(h, 11, 100, 12, 0, &pick);
  ck_assert(pg.count == 0 && pg.next == 12 && flexco_events_park(11, &pg, 12));
  ck_assert(!flexco_events_park(11, &pg, 13));  // more came than it saw
  pg = page_of(h, 10, 100, 12, 0, &pick);
  ck_assert(pg.count == 1 && !flexco_events_park(10, &pg, 12));
  // an empty ring
  TestRing e;
  pg = page_of(e, 0, 100, 0, 0, &pick);
  ck_assert(!pg.lost && pg.count == 0 && pg.next == 0);
  pg = page_of(e, 3, 100, 0, 0, &pick);
  ck_assert(pg.lost && pg.next == 0);
}
END_TEST

// A state the writer made: two reported jobs, two reservations, three
// events with their visibility.
const char* kEvState =
    "{\"version\":1,\"clean\":true,\"saved_at\":1800000100,\"reserved\":2048,\"latest\":7,"
    "\"lost_upto\":2,\"job_floor\":1800000050,\"reported_jobs\":[[41,1800000000,1800000040],"
    "[42,1800000010,1800000045]],\"reservations\":[{\"name\":\"flexco_3\",\"start\":1800000000,"
    "\"end\":1800003600,\"nodes\":\"n[1-2]\",\"node_count\":2,\"activated\":true,\"ended\":false,"
    "\"users\":[1001],\"users_not\":false},{\"name\":\"maint\",\"start\":1800009000,"
    "\"end\":1800012600,\"nodes\":null,\"node_count\":0,\"activated\":false,\"ended\":false,"
    "\"users\":[],\"users_not\":true}],\"access\":[{\"seq\":5,\"job_uid\":1001,\"account\":"
    "\"physics\"},{\"seq\":6,\"users\":[1001,1002],\"users_not\":false},{\"seq\":7,\"job_uid\":"
    "4294967295,\"users\":[],\"users_not\":false}],\"events\":[{\"seq\":5,\"type\":"
    "\"job_ended_early\",\"time\":1800000041,\"job_id\":41,\"user_id\":1001},\n"
    "{\"seq\":6,\"type\":\"reservation_activated\",\"time\":1800000001,\"reservation\":"
    "\"flexco_3\"},\n{\"seq\":7,\"type\":\"part_job_started\",\"time\":1800000002,\"job_id\":43}]}\n";

// Generous limits; each test narrows one.
flexco_evstate_limits_t lim_all() { return flexco_evstate_limits_t{16, 4096, 16, 16, 16, 64}; }

int evdecode(const std::string& text, const flexco_evstate_limits_t& lim,
             flexco_events_state_t* st) {
  char why[256] = "";
  int rc = flexco_decode_events_state(text.data(), text.size(), &lim, st, why, sizeof why);
  if (rc) {
    ck_assert_msg(rc == -1 && why[0] && !st->events && !st->jobs && !st->resvs && !st->event_cnt,
                  "refused without a reason or kept something");
  }
  return rc;
}

bool ev_ok(const std::string& text, const flexco_evstate_limits_t& lim = lim_all()) {
  flexco_events_state_t st;
  if (evdecode(text, lim, &st)) return false;
  flexco_events_state_free(&st);
  return true;
}

std::string evswap(const std::string& from, const std::string& to) {
  std::string t = kEvState;
  size_t at = t.find(from);
  ck_assert_msg(at != std::string::npos, "no %s", from.c_str());
  return t.replace(at, from.size(), to);
}

int put_string(const char* buf, size_t len, void* arg) {
  static_cast<std::string*>(arg)->append(buf, len);
  return 0;
}

std::string evencode(const flexco_events_state_t& st) {
  std::string out;
  char why[256] = "";
  ck_assert_int_eq(flexco_encode_events_state(&st, put_string, &out, why, sizeof why), 0);
  return out;
}

START_TEST(events_state_ok) {
  flexco_events_state_t st;
  ck_assert_int_eq(evdecode(kEvState, lim_all(), &st), 0);
  ck_assert(st.clean && st.has_access && st.saved_at == 1800000100 && st.reserved == 2048 &&
            st.latest == 7 && st.lost_upto == 2 && st.job_floor == 1800000050);
  ck_assert_uint_eq(st.job_cnt, 2);
  ck_assert(st.jobs[1].job_id == 42 && st.jobs[1].start == 1800000010 && st.jobs[1].end == 1800000045);
  ck_assert_uint_eq(st.resv_cnt, 2);
  ck_assert_str_eq(st.resvs[0].name, "flexco_3");
  ck_assert_str_eq(st.resvs[0].nodes, "n[1-2]");
  ck_assert(st.resvs[0].node_cnt == 2 && st.resvs[0].activated && !st.resvs[0].ended &&
            st.resvs[0].user_cnt == 1 && st.resvs[0].users[0] == 1001 && !st.resvs[0].users_not);
  ck_assert(!st.resvs[1].nodes && st.resvs[1].user_cnt == 0 && st.resvs[1].users_not);
  ck_assert_uint_eq(st.event_cnt, 3);
  ck_assert_str_eq(st.events[0].text,
                   "{\"seq\":5,\"type\":\"job_ended_early\",\"time\":1800000041,\"job_id\":41,"
                   "\"user_id\":1001}");
  ck_assert_uint_eq(st.events[0].len, std::strlen(st.events[0].text));
  const flexco_evstate_acl_t &a = st.events[0].acl, &b = st.events[1].acl, &c = st.events[2].acl;
  ck_assert(a.job && a.job_uid == 1001 && !std::strcmp(a.account, "physics") && !a.resv);
  ck_assert(!b.job && b.resv && b.user_cnt == 2 && b.users[1] == 1002 && !b.users_not);
  ck_assert(c.job && c.job_uid == UINT32_MAX && !c.account && c.resv && !c.user_cnt);
  // the writer writes it back byte for byte
  const std::string written = evencode(st);
  ck_assert_str_eq(written.c_str(), kEvState);
  flexco_events_state_free(&st);
  flexco_events_state_free(&st);  // twice is harmless
}
END_TEST

START_TEST(events_state_old_file) {
  // saved before "access", "saved_at" and the reservations' users: who
  // may see an event follows from its type
  const std::string old =
      "{\"version\":1,\"clean\":false,\"reserved\":1024,\"latest\":4,\"lost_upto\":0,"
      "\"job_floor\":5,\"reported_jobs\":[],\"reservations\":[{\"name\":\"r1\",\"start\":1,"
      "\"end\":2,\"node_count\":1,\"activated\":true,\"ended\":false}],\"events\":["
      "{\"seq\":1,\"type\":\"job_ended_early\",\"user_id\":500},"
      "{\"seq\":2,\"type\":\"job_ended_early\",\"user_id\":\"x\"},"
      "{\"seq\":3,\"type\":\"part_job_ended\"},{\"seq\":4,\"type\":\"reservation_ended\"}]}";
  flexco_events_state_t st;
  ck_assert_int_eq(evdecode(old, lim_all(), &st), 0);
  ck_assert(!st.clean && !st.has_access && st.saved_at == 0);
  ck_assert(!st.resvs[0].nodes && !st.resvs[0].user_cnt && !st.resvs[0].users_not);
  ck_assert(st.events[0].acl.job && st.events[0].acl.job_uid == 500 && !st.events[0].acl.resv);
  ck_assert(st.events[1].acl.job && st.events[1].acl.job_uid == UINT32_MAX);
  ck_assert(st.events[2].acl.job && st.events[2].acl.resv && st.events[2].acl.job_uid == UINT32_MAX);
  ck_assert(!st.events[3].acl.job && st.events[3].acl.resv && !st.events[3].acl.user_cnt);
  // written again with "access": loads back the same visibility
  const std::string again = evencode(st);
  flexco_events_state_t back;
  ck_assert_int_eq(evdecode(again, lim_all(), &back), 0);
  ck_assert(back.has_access && back.event_cnt == 4);
  for (size_t i = 0; i < 4; i++)
    ck_assert(back.events[i].acl.job == st.events[i].acl.job &&
              back.events[i].acl.job_uid == st.events[i].acl.job_uid &&
              back.events[i].acl.resv == st.events[i].acl.resv &&
              !std::strcmp(back.events[i].text, st.events[i].text));
  const std::string twice = evencode(back);
  ck_assert_str_eq(twice.c_str(), again.c_str());
  flexco_events_state_free(&back);
  flexco_events_state_free(&st);
}
END_TEST

START_TEST(events_state_round_trip) {
  // a state as the plugin holds it, written, read back: the same
  uint32_t users[] = {0, 4294967295u};
  char name[] = "resv \"q\" \xc3\xa9";
  char nodes[] = "n[1-1000]";
  char acct[] = "a";
  char t1[] = "{\"seq\":9,\"type\":\"x\",\"s\":\"\\u00e9\\n\"}";
  char t2[] = "{\"seq\":4611686018427387904,\"type\":\"y\",\"v\":[1,{\"a\":null}]}";
  flexco_evstate_job_t jobs[] = {{4294967295u, 0, FLEXCO_EVSTATE_MAX_TIME}};
  flexco_evstate_resv_t resv[1] = {};
  resv[0].name = name;
  resv[0].start = 0;
  resv[0].end = FLEXCO_EVSTATE_MAX_TIME;
  resv[0].nodes = nodes;
  resv[0].node_cnt = 4294967295u;
  resv[0].users = users;
  resv[0].user_cnt = 2;
  resv[0].users_not = true;
  resv[0].ended = true;
  flexco_evstate_event_t ev[2] = {};
  ev[0].seq = 9;
  ev[0].text = t1;
  ev[0].len = std::strlen(t1);
  ev[0].acl.job = true;
  ev[0].acl.job_uid = 7;
  ev[0].acl.account = acct;
  ev[1].seq = UINT64_C(4611686018427387904);
  ev[1].text = t2;
  ev[1].len = std::strlen(t2);
  flexco_events_state_t st = {};
  st.reserved = st.latest = INT64_MAX;
  st.lost_upto = 3;
  st.job_floor = 17;
  st.saved_at = 18;
  st.jobs = jobs;
  st.job_cnt = 1;
  st.resvs = resv;
  st.resv_cnt = 1;
  st.events = ev;
  st.event_cnt = 2;
  const std::string text = evencode(st);
  flexco_events_state_t back;
  ck_assert_int_eq(evdecode(text, lim_all(), &back), 0);
  ck_assert(!back.clean && back.reserved == INT64_MAX && back.latest == INT64_MAX &&
            back.lost_upto == 3 && back.job_floor == 17 && back.saved_at == 18);
  ck_assert(back.job_cnt == 1 && back.jobs[0].job_id == 4294967295u && back.jobs[0].start == 0 &&
            back.jobs[0].end == FLEXCO_EVSTATE_MAX_TIME);
  const flexco_evstate_resv_t& r = back.resvs[0];
  ck_assert(back.resv_cnt == 1 && !std::strcmp(r.name, name) && !std::strcmp(r.nodes, nodes) &&
            r.node_cnt == 4294967295u && r.user_cnt == 2 && r.users[0] == 0 &&
            r.users[1] == 4294967295u && r.users_not && r.ended && !r.activated &&
            r.end == FLEXCO_EVSTATE_MAX_TIME);
  ck_assert_uint_eq(back.event_cnt, 2);
  ck_assert_str_eq(back.events[0].text, "{\"seq\":9,\"type\":\"x\",\"s\":\"\xc3\xa9\\n\"}");
  ck_assert_str_eq(back.events[1].text, t2);
  ck_assert(back.events[0].acl.job && back.events[0].acl.job_uid == 7 &&
            !std::strcmp(back.events[0].acl.account, "a") && !back.events[0].acl.resv);
  ck_assert(!back.events[1].acl.job && !back.events[1].acl.resv);  // anyone: no access record
  // and a second save of what was loaded is the same file
  const std::string again = evencode(back);
  flexco_events_state_t third;
  ck_assert_int_eq(evdecode(again, lim_all(), &third), 0);
  const std::string thrice = evencode(third);
  ck_assert_str_eq(thrice.c_str(), again.c_str());
  flexco_events_state_free(&third);
  flexco_events_state_free(&back);
  // the writer refuses numbers out of order rather than write them
  st.lost_upto = INT64_MAX;
  st.latest = 5;
  std::string out;
  char why[256] = "";
  ck_assert_int_eq(flexco_encode_events_state(&st, put_string, &out, why, sizeof why), -1);
  ck_assert(why[0]);
}
END_TEST

START_TEST(events_state_bounds) {
  flexco_evstate_limits_t l = lim_all();
  // counts: at the limit, and one past it
  l = lim_all(), l.max_events = 3;
  ck_assert(ev_ok(kEvState, l));
  l.max_events = 2;
  ck_assert(!ev_ok(kEvState, l));
  l = lim_all(), l.max_reported = 2;
  ck_assert(ev_ok(kEvState, l));
  l.max_reported = 1;
  ck_assert(!ev_ok(kEvState, l));
  l = lim_all(), l.max_resvs = 2;
  ck_assert(ev_ok(kEvState, l));
  l.max_resvs = 1;
  ck_assert(!ev_ok(kEvState, l));
  l = lim_all(), l.max_users = 2;  // event 6's two users
  ck_assert(ev_ok(kEvState, l));
  l.max_users = 1;
  ck_assert(!ev_ok(kEvState, l));
  const std::string three_users = evswap("\"users\":[1001],", "\"users\":[1,2,3],");
  l = lim_all(), l.max_users = 3;  // a reservation's users
  ck_assert(ev_ok(three_users, l));
  l.max_users = 2;
  ck_assert(!ev_ok(three_users, l));
  // lengths: the longest event, and a name, node list, account or type
  // (the longest string checked is "reservation_activated", 21 bytes)
  const size_t longest = std::strlen(
      "{\"seq\":6,\"type\":\"reservation_activated\",\"time\":1800000001,\"reservation\":\"flexco_3\"}");
  l = lim_all(), l.max_event_len = longest;
  ck_assert(ev_ok(kEvState, l));
  l.max_event_len = longest - 1;
  ck_assert(!ev_ok(kEvState, l));
  for (const char* from : {"\"name\":\"maint\"", "\"nodes\":\"n[1-2]\"", "\"account\":\"physics\"",
                           "\"type\":\"part_job_started\""}) {
    const std::string f = from;
    const std::string key = f.substr(0, f.find(':') + 1);
    l = lim_all(), l.max_str = 21;
    ck_assert_msg(ev_ok(evswap(from, key + "\"" + std::string(21, 'x') + "\""), l), "%s at 21", from);
    ck_assert_msg(!ev_ok(evswap(from, key + "\"" + std::string(22, 'x') + "\""), l), "%s at 22", from);
    ck_assert_msg(!ev_ok(evswap(from, key + "\"\""), lim_all()), "%s empty", from);
  }
  // values
  const struct {
    const char *from, *ok, *bad;
  } v[] = {
      {"\"job_floor\":1800000050", "\"job_floor\":1099511627776", "\"job_floor\":1099511627777"},
      {"\"job_floor\":1800000050", "\"job_floor\":0", "\"job_floor\":-1"},
      {"\"saved_at\":1800000100", "\"saved_at\":1099511627776", "\"saved_at\":1099511627777"},
      {"[41,1800000000,1800000040]", "[4294967295,0,1099511627776]", "[4294967296,0,1]"},
      {"[41,1800000000,1800000040]", "[1,1,1]", "[0,1,1]"},
      {"[41,1800000000,1800000040]", "[41,1099511627776,1]", "[41,1099511627777,1]"},
      {"[41,1800000000,1800000040]", "[41,1,1099511627776]", "[41,1,-1]"},
      {"\"start\":1800009000", "\"start\":1099511627776", "\"start\":1099511627777"},
      {"\"end\":1800012600", "\"end\":0", "\"end\":-1"},
      {"\"node_count\":0", "\"node_count\":4294967295", "\"node_count\":4294967296"},
      {"\"users\":[1001],", "\"users\":[4294967295],", "\"users\":[4294967296],"},
      {"\"users\":[1001],", "\"users\":[0],", "\"users\":[-1],"},
      {"\"job_uid\":1001", "\"job_uid\":0", "\"job_uid\":4294967296"},
      {"\"users\":[1001,1002]", "\"users\":[1001,4294967295]", "\"users\":[1001,\"1002\"]"},
      // sequence numbers: 0 <= lost_upto <= latest <= reserved
      {"\"lost_upto\":2", "\"lost_upto\":7", "\"lost_upto\":8"},
      {"\"lost_upto\":2", "\"lost_upto\":0", "\"lost_upto\":-1"},
      {"\"reserved\":2048", "\"reserved\":7", "\"reserved\":6"},
      {"\"reserved\":2048", "\"reserved\":9223372036854775807", "\"reserved\":9223372036854775808"},
      // an event's seq: 1..latest, ascending
      {"\"latest\":7", "\"latest\":7", "\"latest\":6"},
  };
  for (const auto& c : v) {
    ck_assert_msg(ev_ok(evswap(c.from, c.ok)), "refused at the bound: %s", c.ok);
    ck_assert_msg(!ev_ok(evswap(c.from, c.bad)), "accepted past the bound: %s", c.bad);
  }
}
END_TEST

START_TEST(events_state_refused) {
  const std::string good = kEvState;
  const std::string bad[] = {
      "",
      "null",
      "[]",
      evswap("\"version\":1", "\"version\":2"),
      evswap("\"clean\":true", "\"clean\":1"),
      evswap("\"clean\":true,", ""),
      evswap("\"job_floor\":1800000050,", ""),
      evswap("\"reported_jobs\":[", "\"reported_jobs\":{},\"x\":["),
      evswap("\"version\":1,", "\"version\":1,\"extra\":0,"),           // unknown member
      evswap("\"version\":1,", "\"version\":1,\"version\":1,"),         // repeated member
      evswap("\"reservations\":[", "\"reservations\":{\"a\":["),
      evswap("[41,1800000000,1800000040]", "[41,1800000000]"),
      evswap("[41,1800000000,1800000040]", "[41,1800000000,1800000040,0]"),
      evswap("[42,1800000010,1800000045]", "[41,1800000000,1800000045]"),  // a run twice
      evswap("\"name\":\"maint\"", "\"name\":\"flexco_3\""),             // a name twice
      evswap("\"name\":\"maint\"", "\"name\":5"),
      evswap("\"name\":\"maint\"", "\"name\":\"a\\u0000b\""),
      evswap("\"nodes\":null", "\"nodes\":7"),
      evswap("\"activated\":false,", ""),
      evswap("\"users_not\":true}", "\"users_not\":true,\"x\":1}"),
      evswap("\"users\":[],\"users_not\":true", "\"users\":{},\"users_not\":true"),
      // events: order, type, members
      evswap("{\"seq\":5,\"type\"", "{\"seq\":0,\"type\""),  // 1 is in events_state_old_file
      evswap("{\"seq\":6,", "{\"seq\":5,"),
      evswap("{\"seq\":7,", "{\"seq\":3,"),
      evswap("\"type\":\"part_job_started\"", "\"type\":7"),
      evswap("\"type\":\"part_job_started\",", ""),
      evswap(",\n{\"seq\":7", ",7,{\"seq\":7"),
      evswap("{\"seq\":5,\"type\":\"job_ended_early\",", "{\"seq\":5,\"type\":\"job_ended_early\",\"seq\":5,"),
      // access: every record names a retained event, in order, once
      evswap("{\"seq\":6,\"users\"", "{\"seq\":8,\"users\""),
      evswap("{\"seq\":6,\"users\"", "{\"seq\":5,\"users\""),
      evswap("{\"seq\":7,\"job_uid\"", "{\"seq\":6,\"job_uid\""),
      evswap("{\"seq\":5,\"job_uid\":1001,", "{\"seq\":5,"),       // account without job_uid
      evswap(",\"users_not\":false},{\"seq\":7", "},{\"seq\":7"),  // users without users_not
      evswap("{\"seq\":6,\"users\":[1001,1002],", "{\"seq\":6,"),  // users_not without users
      evswap("{\"seq\":6,\"users\":[1001,1002],\"users_not\":false}", "{\"seq\":6}"),
      evswap("\"account\":\"physics\"", "\"account\":null"),
      evswap("\"access\":[", "\"access\":[{\"seq\":5,\"job_uid\":1},"),
      evswap("\"access\":[", "\"access\":{},\"y\":["),
  };
  for (const auto& b : bad) {
    flexco_events_state_t st;
    ck_assert_msg(evdecode(b, lim_all(), &st) == -1, "accepted: %.400s", b.c_str());
  }
  // a truncated file, at every length, and a byte overwritten anywhere:
  // refused (or, for a flipped byte, at worst another valid state), never
  // a crash
  for (size_t n = 0; n < good.size() - 1; n++) {
    flexco_events_state_t st;
    ck_assert_msg(evdecode(good.substr(0, n), lim_all(), &st) == -1, "accepted %zu bytes", n);
  }
  for (size_t n = 0; n < good.size(); n++)
    for (char c : {'\0', '"', '}', '9', 'x'}) {
      std::string t = good;
      t[n] = c;
      flexco_events_state_t st;
      if (!evdecode(t, lim_all(), &st)) flexco_events_state_free(&st);
    }
}
END_TEST

// The one codec of a reservation record, written: the API's answer, the
// state file (decoded back to the same records and written again to the
// same bytes), what a record that cannot be written does to a save, and
// the answer to a part-job submission.
START_TEST(resv_state_written) {
  flexco_resv_state_t st, back;
  char why[256] = "";
  ck_assert_int_eq(flexco_decode_resv_state(kGoodState, std::strlen(kGoodState), 4096, 64, &st,
                                            why, sizeof why),
                   0);
  char* one = flexco_encode_resv_record(&st.resvs[0]);
  ck_assert_str_eq(one,
                   "{\"changed\":60,\"confirm_by\":null,\"created\":50,\"end\":200,\"id\":3,"
                   "\"jobs\":[{\"confirmed\":false,\"ended\":false,\"gated\":false,\"job_id\":7,"
                   "\"lapsed\":false,\"lease_end\":0,\"part_index\":1,\"started\":true,"
                   "\"submitted\":70}],\"name\":\"flexco_3\",\"node_list\":\"n[1-2]\",\"nodes\":2,"
                   "\"owner\":\"flexcod-ab\",\"partition\":null,\"reason\":null,\"start\":100,"
                   "\"state\":\"confirmed\",\"uid\":1000,\"user\":\"alice\"}");
  std::free(one);
  // confirm_by only while tentative; a submission under way only in the file
  st.resvs[1].submit_key = strdup("key-1");
  st.resvs[1].submit_target = strdup("/v1/reservations/12/jobs");
  st.resvs[1].submit_digest = strdup("");
  st.resvs[1].submit_uid = 1001;
  st.resvs[1].submit_part = 2;
  st.resvs[1].submit_since = 80;
  one = flexco_encode_resv_record(&st.resvs[1]);
  ck_assert_ptr_nonnull(std::strstr(one, "\"confirm_by\":90"));
  ck_assert_ptr_null(std::strstr(one, "submitting"));
  std::free(one);
  char* text = flexco_encode_resv_state(&st, why, sizeof why);
  ck_assert_ptr_nonnull(text);
  ck_assert_ptr_nonnull(std::strstr(text, "\"submitting\":{\"body_sha256\":\"\",\"key\":\"key-1\""));
  ck_assert_int_eq(flexco_decode_resv_state(text, std::strlen(text), 4096, 64, &back, why,
                                            sizeof why),
                   0);
  ck_assert_uint_eq(back.resv_cnt, 2);
  ck_assert_uint_eq(back.key_cnt, 2);
  ck_assert_int_eq(back.next_id, 9);
  ck_assert_str_eq(back.resvs[1].submit_key, "key-1");
  ck_assert_int_eq(back.resvs[1].submit_part, 2);
  ck_assert_str_eq(back.resvs[0].owner, "flexcod-ab");
  ck_assert_ptr_null(back.resvs[1].owner);  // absent in the old record: null now
  ck_assert_str_eq(back.keys[1].digest,
                   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ck_assert_ptr_null(back.keys[0].method);  // unbound stays unbound
  char* again = flexco_encode_resv_state(&back, why, sizeof why);
  ck_assert_str_eq(again, text);  // a fixpoint
  std::free(again);
  std::free(text);
  // the list answer
  text = flexco_encode_resv_list(st.resvs, 2);
  ck_assert(std::strncmp(text, "{\"reservations\":[{\"changed\":60,", 31) == 0);
  std::free(text);
  text = flexco_encode_resv_list(nullptr, 0);
  ck_assert_str_eq(text, "{\"reservations\":[]}");
  std::free(text);
  // an adopted reservation without Users=: user "" (defect 8 of issue 37)
  std::free(st.resvs[0].user);
  st.resvs[0].user = nullptr;
  one = flexco_encode_resv_record(&st.resvs[0]);
  ck_assert_ptr_nonnull(std::strstr(one, "\"user\":\"\""));
  std::free(one);
  // a value that cannot be written (not UTF-8) fails the whole save
  std::free(st.resvs[1].reason);
  st.resvs[1].reason = strdup("bad \xff reason");
  ck_assert_ptr_null(flexco_encode_resv_record(&st.resvs[1]));
  ck_assert_ptr_null(flexco_encode_resv_state(&st, why, sizeof why));
  ck_assert_str_eq(why, "cannot encode the record of flexco_12");
  flexco_resv_state_free(&st);
  flexco_resv_state_free(&back);
  text = flexco_encode_part_job_submitted(77, 12, 1);
  ck_assert_str_eq(text,
                   "{\"job_id\":77,\"part_index\":1,\"reservation\":\"flexco_12\","
                   "\"reservation_id\":12,\"state\":\"PENDING\"}");
  std::free(text);
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("decode");
  TCase* r = tcase_create("reservations");
  tcase_add_test(r, resv_create_ok);
  tcase_add_test(r, resv_create_user_not_a_number);
  tcase_add_test(r, resv_create_window);
  tcase_add_test(r, resv_create_refused);
  tcase_add_test(r, resv_modify);
  tcase_add_test(r, owner_rule);
  tcase_add_test(r, resv_state_ok);
  tcase_add_test(r, resv_state_refused);
  tcase_add_test(r, resv_state_written);
  suite_add_tcase(s, r);
  TCase* j = tcase_create("jobs");
  tcase_add_test(j, jobspec_ok);
  tcase_add_test(j, jobspec_refused);
  suite_add_tcase(s, j);
  TCase* e = tcase_create("events");
  tcase_add_test(e, events_query);
  tcase_add_test(e, query_args);
  tcase_add_test(e, events_cursor);
  tcase_add_test(e, events_state_ok);
  tcase_add_test(e, events_state_old_file);
  tcase_add_test(e, events_state_round_trip);
  tcase_add_test(e, events_state_bounds);
  tcase_add_test(e, events_state_refused);
  tcase_add_test(e, router);
  suite_add_tcase(s, e);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
