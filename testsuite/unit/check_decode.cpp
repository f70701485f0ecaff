// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/core/capi_decode: the plugin's request decoders, without
// slurmctld.  Every rule of doc/reservations.md and doc/events.md that a
// decoder enforces has a case that is accepted at its bound and refused
// just past it, with the exact error code.

#include <cstdlib>
#include <cstring>
#include <string>

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
  flexco_jobspec_free(&s);
  ck_assert_int_eq(job("{\"script\":\"#!x\"}", &s, &code), 0);
  ck_assert_int_eq(s.part_index, -1);
  ck_assert_ptr_null(s.parts);
  flexco_jobspec_free(&s);
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
      "{\"script\":\"#!x\",\"time_limit\":59}",
      "{\"script\":\"#!x\",\"part_index\":64}",
      "{\"script\":\"#!x\",\"parts\":[]}",
      "{\"script\":\"#!x\",\"parts\":" + parts65 + "}",
      "{\"script\":\"#!x\",\"parts\":[{\"cluster\":\"" + std::string(65, 'c') + "\",\"nodes\":1}]}",
      "{\"script\":\"#!x\",\"parts\":[{\"cluster\":\"a b\",\"nodes\":1}]}",
      "{\"script\":\"#!x\",\"parts\":[{\"cluster\":\"a\",\"nodes\":1,\"x\":2}]}",
      "{\"script\":\"#!x\",\"parts\":[{\"cluster\":\"a\",\"nodes\":1}],\"part_index\":1}",
      "{\"script\":\"#!x\",\"name\":\"" + std::string(257, 'n') + "\"}",
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

Suite* make_suite() {
  Suite* s = suite_create("decode");
  TCase* r = tcase_create("reservations");
  tcase_add_test(r, resv_create_ok);
  tcase_add_test(r, resv_create_window);
  tcase_add_test(r, resv_create_refused);
  tcase_add_test(r, resv_modify);
  tcase_add_test(r, owner_rule);
  tcase_add_test(r, resv_state_ok);
  tcase_add_test(r, resv_state_refused);
  suite_add_tcase(s, r);
  TCase* j = tcase_create("jobs");
  tcase_add_test(j, jobspec_ok);
  tcase_add_test(j, jobspec_refused);
  suite_add_tcase(s, j);
  TCase* e = tcase_create("events");
  tcase_add_test(e, events_query);
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
