// SPDX-License-Identifier: GPL-2.0-or-later
// Wire format of an availability profile (GET /v1/profile) and of the
// project's HTTP errors, as JSON (jansson).  The schema is specified, with
// an example, in doc/availability.md; in short:
//
//   {"cluster": "alpha", "partition": "batch", "partition_up": true,
//    "snapshot_time": T, "horizon_end": T, "share_percent": 100,
//    "backfill": {"last_cycle": T|null, "active": false, "plan_age": S|null},
//    "nodes": {"total": N, "available": N, "published": N},
//    "cpus":  {"total": N, "available": N, "published": N},
//    "steps": [{"start": T, "end": T, "free_nodes": N, "free_cpus": N}, ...]}
//
//   {"error": {"code": "unknown_partition", "message": "..."}}
//
// Times are integers, UTC epoch seconds.  Members are only ever added, never
// renamed or changed in meaning; readers ignore members they do not know.
// Strings are emitted as valid UTF-8 (invalid bytes become U+FFFD).

#ifndef FLEXCO_CORE_WIRE_PROFILE_HPP
#define FLEXCO_CORE_WIRE_PROFILE_HPP

#include <string>
#include <string_view>

#include "core/availability.hpp"
#include "core/profile.hpp"

namespace flexco {

// Compact JSON of `a`.  Only std::bad_alloc can escape.
std::string availability_to_json(const Availability& a);

// Strict reader of availability_to_json's output: every member listed above
// is required with its type (plan_age is derived and ignored), values must
// be consistent (available, published <= total; steps contiguous from
// snapshot_time to horizon_end with 0 <= free <= published), and the
// profiles are rebuilt from the steps (profiles_from_steps).  Unknown
// members are ignored.  Error: Errc::kInvalidArgument, the message names the
// member ("availability_from_json: steps[2].end: ...").
// `clock_shift`: the answering cluster's clock less the reader's, in
// seconds; every time read (snapshot_time, horizon_end, the steps, the
// last backfill cycle) is kept less it, by the reader's clock.
Result<Availability> availability_from_json(std::string_view text, Duration clock_shift = 0);

// The project's HTTP error body {"error":{"code":CODE,"message":MESSAGE}},
// compact.  Only std::bad_alloc can escape.
std::string error_json(std::string_view code, std::string_view message);

// Reader of an error body; both members required, strings.
struct WireError {
  std::string code;
  std::string message;
};
Result<WireError> error_from_json(std::string_view text);

// `text` with every byte that is not part of a well-formed UTF-8 sequence
// (overlong forms, surrogates and code points above U+10FFFF included)
// replaced by U+FFFD.
std::string utf8_sanitize(std::string_view text);

}  // namespace flexco

#endif  // FLEXCO_CORE_WIRE_PROFILE_HPP
