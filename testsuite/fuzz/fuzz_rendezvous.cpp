// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer harness: the start-up rendezvous' request parsing and its
// answer (flexcod's src/flexcod/rendezvous.cpp), before the engine looks
// anything up.  Input: four fields split at NUL bytes: the path, the
// Authorization header, the query string, the body; the body's first
// byte (if any) also chooses how many parts the co-allocation has (1-64)
// and which of them registered before.  Checks: an accepted path is one
// of the two forms and prints back to itself; an accepted wait is 0..30;
// an accepted token is 64 lowercase hex digits found in the header; an
// accepted registration keeps the bounds (contact, nodes, ranks) and
// parses again to itself; a refusal says why.  Then the layout with that
// registration for the chosen part: rank offsets are the sums of the
// ranks before, the world size their total, complete exactly when every
// part registered, and it serializes and parses back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <jansson.h>

#include "flexcod/rendezvous.hpp"

namespace rdv = flexcod::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> f;
  std::size_t p = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t z = in.find('\0', p);
    if (z == std::string::npos) break;
    f.push_back(in.substr(p, z - p));
    p = z + 1;
  }
  f.push_back(in.substr(std::min(p, in.size())));
  while (f.size() < 4) f.emplace_back();
  const std::string &path = f[0], &header = f[1], &query = f[2], &body = f[3];

  rdv::Target t;
  if (rdv::parse_target(path, &t)) {
    if (t.co < 1 || t.part < -1 || t.part > 63) abort();
    const std::string again = std::string(rdv::kPrefix) + std::to_string(t.co) +
                              (t.part >= 0 ? "/parts/" + std::to_string(t.part) : "");
    if (again != path) abort();
  }
  int wait = -1;
  if (rdv::parse_wait(query, &wait)) {
    if (wait < 0 || wait > rdv::kMaxWait) abort();
  } else if (query.empty()) {
    abort();
  }
  std::string tok;
  const auto form = rdv::parse_bearer(header.c_str(), &tok);
  if (form == rdv::TokenForm::kOk) {
    if (tok.size() != rdv::kTokenHexLength || header.find(tok) == std::string::npos) abort();
    for (char c : tok) {
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) abort();
    }
  } else if (form == rdv::TokenForm::kMissing && !header.empty() && header[0] != '\0') {
    abort();
  }

  rdv::Registration reg;
  std::string why;
  const bool ok = rdv::parse_registration(body, &reg, &why);
  if (!ok) {
    if (why.empty()) abort();
    return 0;
  }
  if (reg.contact.size() > rdv::kMaxContact || reg.nodes.size() > rdv::kMaxNodes || reg.ranks < 0 ||
      reg.ranks > rdv::kMaxRanks || reg.contact.find('\0') != std::string::npos)
    abort();
  // the registration as flexco-rendezvous would send it again
  json_t* o = json_object();
  json_object_set_new(o, "contact", json_stringn(reg.contact.data(), reg.contact.size()));
  if (!reg.nodes.empty()) json_object_set_new(o, "nodes", json_string(reg.nodes.c_str()));
  if (reg.ranks > 0) json_object_set_new(o, "ranks", json_integer(reg.ranks));
  char* s = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (s == nullptr) return 0;  // the contact is not valid UTF-8 (jansson checked it on load)
  rdv::Registration back;
  if (!rdv::parse_registration(s, &back, &why) || !(back == reg)) abort();
  std::free(s);

  const unsigned char b0 = body.empty() ? 0 : static_cast<unsigned char>(body[0]);
  const int n = 1 + b0 % 64;
  std::vector<rdv::PartView> parts(n);
  for (int i = 0; i < n; ++i) {
    parts[i].idx = i;
    parts[i].cluster = "c" + std::to_string(i % 3);
    parts[i].node_count = 1 + (i * 7 + b0) % 16;
    parts[i].node_list = "n" + std::to_string(i);
    parts[i].registered = ((b0 >> (i % 8)) & 1) != 0;
  }
  const int self = b0 % n;
  parts[self].registered = true;
  parts[self].reg = reg;
  json_t* l = rdv::layout_json(t.co, self, parts, 1000);
  if (l == nullptr) abort();
  std::int64_t offset = 0;
  bool all = true;
  json_t* a = json_object_get(l, "parts");
  if (static_cast<int>(json_array_size(a)) != n) abort();
  for (int i = 0; i < n; ++i) {
    json_t* e = json_array_get(a, i);
    const std::int64_t want = parts[i].registered && parts[i].reg.ranks > 0 ? parts[i].reg.ranks
                                                                            : parts[i].node_count;
    if (json_integer_value(json_object_get(e, "rank_offset")) != offset ||
        json_integer_value(json_object_get(e, "ranks")) != want)
      abort();
    offset += want;
    all = all && parts[i].registered;
  }
  if (json_integer_value(json_object_get(l, "world_size")) != offset ||
      json_is_true(json_object_get(l, "complete")) != all || rdv::complete(parts) != all)
    abort();
  char* text = json_dumps(l, JSON_COMPACT);
  json_decref(l);
  if (text == nullptr) abort();
  json_error_t je;
  json_t* again = json_loads(text, 0, &je);
  if (again == nullptr) abort();
  json_decref(again);
  std::free(text);
  return 0;
}
