// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of src/flexcod/rendezvous: the request targets, the wait
// parameter, the Bearer token's form, a registration's body (tables of
// good and hostile inputs) and the layout (rank offsets in index order,
// defaults for parts that gave no ranks or nodes, contacts of parts not
// registered yet are null), and fresh tokens.

#include <jansson.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "flexcod/rendezvous.hpp"

#include <check.h>

namespace rdv = flexcod::rendezvous;

namespace {

START_TEST(targets) {
  rdv::Target t;
  ck_assert(rdv::parse_target("/v1/rendezvous/12", &t) && t.co == 12 && t.part == -1);
  ck_assert(rdv::parse_target("/v1/rendezvous/12/parts/0", &t) && t.co == 12 && t.part == 0);
  ck_assert(rdv::parse_target("/v1/rendezvous/999999999999999/parts/63", &t) && t.part == 63);
  for (const char* bad : {"/v1/rendezvous/", "/v1/rendezvous/0", "/v1/rendezvous/012", "/v1/rendezvous/-1",
                          "/v1/rendezvous/1/", "/v1/rendezvous/1/parts/", "/v1/rendezvous/1/parts/64",
                          "/v1/rendezvous/1/parts/01", "/v1/rendezvous/1/parts/0/", "/v1/rendezvous/1/part/0",
                          "/v1/rendezvous/1000000000000000", "/v1/rendezvous/1x", "/v1/rendezvou/1",
                          "/v1/rendezvous/1/parts/0/../1"}) {
    ck_assert_msg(!rdv::parse_target(bad, &t), "%s accepted", bad);
  }
}
END_TEST

START_TEST(waits) {
  int w = -1;
  ck_assert(rdv::parse_wait("", &w) && w == 0);
  ck_assert(rdv::parse_wait("wait=0", &w) && w == 0);
  ck_assert(rdv::parse_wait("wait=30", &w) && w == 30);
  for (const char* bad : {"wait=31", "wait=", "wait=-1", "wait=05", "w=3", "wait=3&x=1", "x=1"}) {
    ck_assert_msg(!rdv::parse_wait(bad, &w), "%s accepted", bad);
  }
}
END_TEST

START_TEST(bearer) {
  const std::string hex(64, 'a');
  std::string tok;
  ck_assert(rdv::parse_bearer(nullptr, &tok) == rdv::TokenForm::kMissing);
  ck_assert(rdv::parse_bearer("", &tok) == rdv::TokenForm::kMissing);
  ck_assert(rdv::parse_bearer(("Bearer " + hex).c_str(), &tok) == rdv::TokenForm::kOk && tok == hex);
  ck_assert(rdv::parse_bearer(("bearer  " + hex + " ").c_str(), &tok) == rdv::TokenForm::kOk && tok == hex);
  const std::vector<std::string> bads = {"Bearer " + hex.substr(1), "Bearer " + hex + "a",
                                         "Bearer " + std::string(64, 'A'), "Basic " + hex, "Bearer",
                                         "Bearer " + std::string(63, 'a') + "g", "MUNGE xyz"};
  for (const std::string& bad : bads) {
    ck_assert_msg(rdv::parse_bearer(bad.c_str(), &tok) == rdv::TokenForm::kMalformed, "%s", bad.c_str());
  }
}
END_TEST

START_TEST(registrations) {
  rdv::Registration r;
  std::string why;
  ck_assert(rdv::parse_registration("", &r, &why) && r.contact.empty() && r.ranks == 0);
  ck_assert(rdv::parse_registration("{}", &r, &why));
  ck_assert(rdv::parse_registration(
      "{\"contact\":\"3417112576.0;tcp://127.0.0.1:4711\",\"nodes\":\"a[1-4],b7\",\"ranks\":12}", &r, &why));
  ck_assert(r.contact == "3417112576.0;tcp://127.0.0.1:4711" && r.nodes == "a[1-4],b7" && r.ranks == 12);
  ck_assert(rdv::parse_registration("{\"contact\":\"" + std::string(rdv::kMaxContact, 'x') + "\"}", &r, &why));
  struct Bad {
    std::string body, why;
  };
  const Bad bad[] = {
      {"[]", "JSON object"},
      {"{", "JSON object"},
      {"{\"contact\":1}", "contact"},
      {"{\"contact\":\"a\\u0000b\"}", "JSON object"},  // jansson refuses NUL
      {"{\"contact\":\"" + std::string(rdv::kMaxContact + 1, 'x') + "\"}", "contact"},
      {"{\"nodes\":\"\"}", "nodes"},
      {"{\"nodes\":\"a b\"}", "nodes"},
      {"{\"nodes\":\"a;rm\"}", "nodes"},
      {"{\"ranks\":0}", "ranks"},
      {"{\"ranks\":1000001}", "ranks"},
      {"{\"ranks\":2.5}", "ranks"},
      {"{\"ranks\":\"3\"}", "ranks"},
      {"{\"colour\":\"red\"}", "unknown member 'colour'"},
      {"{\"contact\":\"a\",\"contact\":\"b\"}", "JSON object"},
  };
  for (const auto& b : bad) {
    why.clear();
    ck_assert_msg(!rdv::parse_registration(b.body, &r, &why), "%s accepted", b.body.c_str());
    ck_assert_msg(why.find(b.why) != std::string::npos, "%s: %s", b.body.c_str(), why.c_str());
  }
}
END_TEST

START_TEST(layout) {
  std::vector<rdv::PartView> parts(3);
  for (int i = 0; i < 3; ++i) {
    parts[i].idx = i;
    parts[i].cluster = i == 1 ? "gamma" : "alpha";
    parts[i].node_count = 4 + i;
    parts[i].node_list = "n" + std::to_string(i);
  }
  parts[0].registered = true;
  parts[0].reg.contact = "port-name";
  parts[0].reg.ranks = 8;
  parts[2].registered = true;
  parts[2].reg.nodes = "z[1-6]";
  ck_assert(!rdv::complete(parts));
  json_t* j = rdv::layout_json(7, 2, parts, 1000);
  ck_assert(j != nullptr);
  ck_assert(json_is_false(json_object_get(j, "complete")));
  ck_assert_int_eq(json_integer_value(json_object_get(j, "registered")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "part")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "deadline")), 1000);
  json_t* a = json_object_get(j, "parts");
  ck_assert(json_is_null(json_object_get(json_array_get(a, 1), "contact")));
  json_decref(j);
  parts[1].registered = true;
  parts[1].reg.ranks = 3;
  ck_assert(rdv::complete(parts));
  j = rdv::layout_json(7, 0, parts, 1000);
  ck_assert(json_is_true(json_object_get(j, "complete")));
  // ranks 8, 3 and (not given) its 6 nodes; offsets 0, 8, 11
  ck_assert_int_eq(json_integer_value(json_object_get(j, "world_size")), 17);
  a = json_object_get(j, "parts");
  const std::int64_t offs[] = {0, 8, 11}, ranks[] = {8, 3, 6};
  const char* nodes[] = {"n0", "n1", "z[1-6]"};
  for (int i = 0; i < 3; ++i) {
    json_t* p = json_array_get(a, i);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "rank_offset")), offs[i]);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "ranks")), ranks[i]);
    ck_assert_str_eq(json_string_value(json_object_get(p, "nodes")), nodes[i]);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "index")), i);
  }
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "contact")), "port-name");
  json_decref(j);
  ck_assert(!rdv::complete({}));
}
END_TEST

START_TEST(tokens) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string t;
    ck_assert(rdv::new_token(&t));
    std::string parsed;
    ck_assert(rdv::parse_bearer(("Bearer " + t).c_str(), &parsed) == rdv::TokenForm::kOk && parsed == t);
    ck_assert(seen.insert(t).second);
    const std::string h = rdv::hash(t);
    ck_assert(h.size() == 64 && h != t);
  }
  const std::string empty = rdv::hash("");
  ck_assert_str_eq(empty.c_str(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

Suite* make_suite() {
  Suite* s = suite_create("flexcod_rendezvous");
  TCase* tc = tcase_create("wire");
  tcase_add_test(tc, targets);
  tcase_add_test(tc, waits);
  tcase_add_test(tc, bearer);
  tcase_add_test(tc, registrations);
  tcase_add_test(tc, layout);
  tcase_add_test(tc, tokens);
  suite_add_tcase(s, tc);
  return s;
}

}  // namespace

int main() {
  SRunner* sr = srunner_create(make_suite());
  srunner_set_tap(sr, "-");
  srunner_run_all(sr, CK_SILENT);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
