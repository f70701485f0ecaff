// SPDX-License-Identifier: GPL-2.0-or-later
// rendezvous.hpp - the start-up rendezvous' wire (doc/one-program.md,
// doc/openapi-flexcod.yaml): the request targets, the part's capability
// token in its Authorization header, a registration's body, and the
// layout every part is answered.  Pure functions over their input (no
// store, no engine, no log): the engine's handler (rendezvous_engine.cpp)
// and the fuzz harness (testsuite/fuzz/fuzz_rendezvous.cpp) call them.
//
//   POST /v1/rendezvous/{co}/parts/{index}[?wait=S]   register, wait up to S s
//   GET  /v1/rendezvous/{co}[?wait=S]                 the layout, waiting up to S s
//   Authorization: Bearer <the part's token>          (FLEXCO_RENDEZVOUS_TOKEN)

#ifndef FLEXCO_FLEXCOD_RENDEZVOUS_HPP
#define FLEXCO_FLEXCOD_RENDEZVOUS_HPP

#include <jansson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flexcod::rendezvous {

inline constexpr std::string_view kPrefix = "/v1/rendezvous/";
inline constexpr std::size_t kTokenHexLength = 64;  // 256 random bits
inline constexpr std::size_t kMaxContact = 4096;    // bytes of a part's contact
inline constexpr std::size_t kMaxNodes = 8192;      // bytes of a part's node list
inline constexpr std::int64_t kMaxRanks = 1000000;  // processes of one part
inline constexpr int kMaxWait = 30;                 // s one call may wait

// A request target's path: the co-allocation and, for a registration,
// the part's index (-1: the layout).  false for anything else below
// kPrefix (ids are 1..10^15 without leading zeros, indices 0..63).
struct Target {
  std::int64_t co = 0;
  int part = -1;
};
bool parse_target(std::string_view path, Target* out);

// The query: at most "wait=S" with S in 0..kMaxWait (default 0).
bool parse_wait(std::string_view query, int* wait);

// The Authorization header: "Bearer " and 64 lowercase hex digits.
enum class TokenForm { kMissing, kMalformed, kOk };
TokenForm parse_bearer(const char* header, std::string* token);

// A registration's body: {"contact": string (0..kMaxContact bytes, no NUL),
// "nodes": string (optional, a Slurm node list: 1..kMaxNodes of
// [A-Za-z0-9_.,[]-]), "ranks": integer (optional, 1..kMaxRanks)}; an
// empty body is {}.  Unknown members are refused.  ranks 0 / nodes "" =
// not given.
struct Registration {
  std::string contact;
  std::string nodes;
  std::int64_t ranks = 0;
  bool operator==(const Registration& o) const {
    return contact == o.contact && nodes == o.nodes && ranks == o.ranks;
  }
};
bool parse_registration(std::string_view body, Registration* out, std::string* why);

// One part as the layout shows it.  node_count: its reservation's; reg
// once registered (its ranks default to node_count, its nodes to
// node_list, the reservation's nodes).
struct PartView {
  int idx = 0;
  std::string cluster;
  std::int64_t node_count = 0;
  std::string node_list;
  bool registered = false;
  Registration reg;
};

// The layout document (doc/openapi-flexcod.yaml, RendezvousLayout):
// {"coallocation", "part" (the caller's index), "complete", "registered",
// "parts": [{"index", "cluster", "node_count", "nodes", "ranks",
// "rank_offset", "contact", "registered"}], "world_size", "deadline"
// (0: none yet)}.  A part's ranks are its registration's, else its node
// count; rank offsets sum the ranks of the parts before it in index order
// and the world size all of them, so they are final once every part has
// registered.  contact is null until its part registered.  nullptr only
// without memory.
json_t* layout_json(std::int64_t co, int self, const std::vector<PartView>& parts,
                    std::int64_t deadline);

// Whether every part registered.
bool complete(const std::vector<PartView>& parts);

// A fresh token (64 lowercase hex digits of getrandom); false without
// randomness.  Its stored form: hash().
bool new_token(std::string* out);
std::string hash(std::string_view token);

}  // namespace flexcod::rendezvous

#endif
