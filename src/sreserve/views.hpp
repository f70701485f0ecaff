// SPDX-License-Identifier: GPL-2.0-or-later
// views.hpp - sreserve's formatting layer: from the answers of the
// clusters' plugins and of flexcod to what the user sees (tables, charts,
// JSON), stderr lines and the exit code.
//
// The answers come in one JSON document (the "exchange"), which main.cpp
// builds from the real HTTP calls and the golden tests read from files
// (testsuite/sreserve_golden/), so every table is tested without a daemon:
//
//   {"now": T,
//    "clusters": [CALL, ...],   offers: probes; profile: profiles (in -M order)
//    "daemon":   [CALL, ...]}   offers: the dry run; others: one per request
//
//   CALL = {"target": "alpha" | "flexcod", "url": "http://...",
//           ["path": "/v1/...",] "status": 200, "answer": {...}}   an HTTP answer
//        | {"target": ..., "url": ..., "code": "connect_failed",
//           "error": "connect_failed: ..."}              no answer
//
// "code" is the HTTP client's error code (core/http_client.hpp:
// connect_failed, timeout, transport, sign_failed, ...).

#ifndef FLEXCO_SRESERVE_VIEWS_HPP
#define FLEXCO_SRESERVE_VIEWS_HPP

#include <jansson.h>

#include <string>
#include <vector>

#include "sreserve/cli.hpp"
#include "sreserve/table.hpp"

namespace sreserve {

struct Output {
  std::string out;  // stdout
  std::string err;  // stderr lines, each "sreserve: ...\n"
  int exit_code = kExitOk;
  std::string svg;  // profile --svg: the document to write
  bool munge_reported = false;  // munged's failure is said once, not per call
};

// The fields each table offers (for -o and --helpformat).
const std::vector<FieldDef>& offer_fields();
const std::vector<FieldDef>& step_fields();
const std::vector<FieldDef>& coalloc_fields();
const std::vector<FieldDef>& part_fields();

// The default -o of each table.
extern const char* const kOffersFormat;
extern const char* const kStepsFormat;
extern const char* const kListFormat;
extern const char* const kPartsFormat;

// The node counts an offers request probes on each cluster: MIN..MAX for
// -N MIN-MAX (at most 64), else N and the part sizes ceil(N/k) for k up to
// --max-parts (default: the number of clusters asked), ascending.
std::vector<std::int64_t> probe_counts(const Options& o, std::size_t n_clusters);

// Checks -o against the command's fields before anything is asked; false
// with *error set when a field is unknown.
bool check_format(const Options& o, std::string* error);

// Everything the user sees for `o.command`, given the exchange.
Output render(const Options& o, const json_t* exchange);

// One stderr line for a failed call (no trailing newline), and the exit code
// it maps to: sign_failed -> kExitNoMunge; no answer from flexcod ->
// kExitNoDaemon, from a cluster -> kExitNoCluster; an HTTP error -> kExitError.
std::string call_error(const json_t* call, int* exit_code);

}  // namespace sreserve

#endif
