// SPDX-License-Identifier: GPL-2.0-or-later
// rendezvous.cpp - see rendezvous.hpp.

#include "flexcod/rendezvous.hpp"

#include <strings.h>
#include <sys/random.h>

#include <cstring>

#include "core/sha256.hpp"

namespace flexcod::rendezvous {

namespace {

// 1..max digits, no leading zero, value in [lo, hi].
bool number(std::string_view s, std::int64_t lo, std::int64_t hi, std::int64_t* out) {
  if (s.empty() || s.size() > 15 || (s.size() > 1 && s[0] == '0')) return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool node_list_ok(std::string_view s) {
  if (s.empty() || s.size() > kMaxNodes) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || c == ',' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool parse_target(std::string_view path, Target* out) {
  if (path.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view rest = path.substr(kPrefix.size());
  const std::size_t slash = rest.find('/');
  std::int64_t co = 0;
  if (!number(rest.substr(0, slash), 1, INT64_C(999999999999999), &co)) return false;
  Target t;
  t.co = co;
  if (slash != std::string_view::npos) {
    rest = rest.substr(slash);
    constexpr std::string_view kParts = "/parts/";
    if (rest.substr(0, kParts.size()) != kParts) return false;
    std::int64_t idx = 0;
    if (!number(rest.substr(kParts.size()), 0, 63, &idx)) return false;
    t.part = static_cast<int>(idx);
  }
  *out = t;
  return true;
}

bool parse_wait(std::string_view query, int* wait) {
  *wait = 0;
  if (query.empty()) return true;
  constexpr std::string_view kWait = "wait=";
  if (query.substr(0, kWait.size()) != kWait) return false;
  std::int64_t v = 0;
  if (!number(query.substr(kWait.size()), 0, kMaxWait, &v)) return false;
  *wait = static_cast<int>(v);
  return true;
}

TokenForm parse_bearer(const char* header, std::string* token) {
  if (header == nullptr || *header == '\0') return TokenForm::kMissing;
  std::string_view h(header);
  if (h.size() < 7 || strncasecmp(h.data(), "Bearer ", 7) != 0) return TokenForm::kMalformed;
  h.remove_prefix(7);
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.remove_suffix(1);
  if (h.size() != kTokenHexLength) return TokenForm::kMalformed;
  for (char c : h) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return TokenForm::kMalformed;
  }
  token->assign(h);
  return TokenForm::kOk;
}

bool parse_registration(std::string_view body, Registration* out, std::string* why) {
  Registration r;
  if (body.empty()) {
    *out = r;
    return true;
  }
  json_error_t je;
  json_t* o = json_loadb(body.data(), body.size(), JSON_REJECT_DUPLICATES, &je);
  if (o == nullptr || !json_is_object(o)) {
    json_decref(o);
    *why = "the body must be a JSON object";
    return false;
  }
  bool ok = true;
  const char* k;
  json_t* v;
  json_object_foreach(o, k, v) {
    const std::string_view key(k);
    if (key == "contact") {
      const char* s = json_string_value(v);
      if (s == nullptr || std::strlen(s) != json_string_length(v) ||
          json_string_length(v) > kMaxContact) {
        *why = "contact: a string of at most " + std::to_string(kMaxContact) + " bytes without NUL";
        ok = false;
      } else {
        r.contact.assign(s, json_string_length(v));
      }
    } else if (key == "nodes") {
      const char* s = json_string_value(v);
      if (s == nullptr || std::strlen(s) != json_string_length(v) ||
          !node_list_ok(std::string_view(s, json_string_length(v)))) {
        *why = "nodes: a Slurm node list (1.." + std::to_string(kMaxNodes) +
               " of A-Z a-z 0-9 _ - . , [ ])";
        ok = false;
      } else {
        r.nodes = s;
      }
    } else if (key == "ranks") {
      if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > kMaxRanks) {
        *why = "ranks: an integer in 1.." + std::to_string(kMaxRanks);
        ok = false;
      } else {
        r.ranks = json_integer_value(v);
      }
    } else {
      *why = "unknown member '" + std::string(key.substr(0, 64)) + "' (contact, nodes, ranks)";
      ok = false;
    }
    if (!ok) break;
  }
  json_decref(o);
  if (ok) *out = r;
  return ok;
}

bool complete(const std::vector<PartView>& parts) {
  if (parts.empty()) return false;
  for (const auto& p : parts) {
    if (!p.registered) return false;
  }
  return true;
}

json_t* layout_json(std::int64_t co, int self, const std::vector<PartView>& parts,
                    std::int64_t deadline) {
  json_t* o = json_object();
  json_t* a = json_array();
  if (o == nullptr || a == nullptr) {
    json_decref(o);
    json_decref(a);
    return nullptr;
  }
  std::int64_t offset = 0;
  int registered = 0;
  for (const auto& p : parts) {
    const std::int64_t ranks = p.registered && p.reg.ranks > 0 ? p.reg.ranks : p.node_count;
    const std::string& nodes = p.registered && !p.reg.nodes.empty() ? p.reg.nodes : p.node_list;
    json_t* e = json_pack("{s:i, s:s, s:I, s:s, s:I, s:I, s:b}", "index", p.idx, "cluster",
                          p.cluster.c_str(), "node_count", static_cast<json_int_t>(p.node_count),
                          "nodes", nodes.c_str(), "ranks", static_cast<json_int_t>(ranks),
                          "rank_offset", static_cast<json_int_t>(offset), "registered",
                          p.registered ? 1 : 0);
    if (e == nullptr) continue;
    json_object_set_new(e, "contact",
                        p.registered ? json_stringn(p.reg.contact.data(), p.reg.contact.size())
                                     : json_null());
    json_array_append_new(a, e);
    offset += ranks;
    registered += p.registered ? 1 : 0;
  }
  json_object_set_new(o, "coallocation", json_integer(co));
  json_object_set_new(o, "part", json_integer(self));
  json_object_set_new(o, "complete", json_boolean(complete(parts)));
  json_object_set_new(o, "registered", json_integer(registered));
  json_object_set_new(o, "world_size", json_integer(offset));
  json_object_set_new(o, "deadline", json_integer(deadline));
  json_object_set_new(o, "parts", a);
  return o;
}

bool new_token(std::string* out) {
  unsigned char r[kTokenHexLength / 2];
  if (getrandom(r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) return false;
  static const char* hex = "0123456789abcdef";
  out->clear();
  for (unsigned char c : r) {
    *out += hex[c >> 4];
    *out += hex[c & 15];
  }
  return true;
}

std::string hash(std::string_view token) { return flexco::sha256_hex(token); }

}  // namespace flexcod::rendezvous
