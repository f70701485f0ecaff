/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_profile.h - C interface to the core's availability profiles, for the
 * slurmctld plugin (whose Slurm-facing files are C).
 *
 * No C++ type or exception crosses this interface: every function catches
 * everything and reports an HTTP status, an error code and a message.  The
 * functions only read the snapshot; call them with no slurmctld lock held
 * (they do not need one: the snapshot is a private copy).  Rules and JSON
 * schema: doc/availability.md.
 */
#ifndef FLEXCO_CORE_CAPI_PROFILE_H
#define FLEXCO_CORE_CAPI_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster_snapshot.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The availability profile of one partition as the JSON body of
 * GET /v1/profile.
 *
 * partition: NULL or "" = the default partition.  horizon: seconds,
 * 1..31622400 (366 days).  share_percent: published share, 1..100.
 *
 * Returns the HTTP status: 200, 400 (bad horizon or share, code
 * "bad_parameter"), 404 (no such partition or no default partition,
 * "unknown_partition") or 500 ("invalid_snapshot", "internal").  In every
 * case *json_out is set to a malloc'd, NUL-terminated document to send as
 * is (the profile, or {"error":{"code":...,"message":...}}); the caller
 * frees it with free().  *json_out is NULL only if even the error document
 * could not be allocated (status 500).  code and err receive the code
 * ("" on success) and the message, NUL-terminated and truncated to codelen
 * and errlen (either may be NULL with length 0).
 */
int flexco_profile_json(const flexco_snapshot_t *snap, const char *partition,
			int64_t horizon, int share_percent, char **json_out,
			char *code, size_t codelen, char *err, size_t errlen);

/*
 * {"error":{"code":CODE,"message":MESSAGE}} as a malloc'd string (free with
 * free()), or NULL if out of memory.  NULL arguments count as "".  Invalid
 * UTF-8 is replaced by U+FFFD.
 */
char *flexco_error_json(const char *code, const char *message);

/*
 * Admission check for a reservation: the fewest published free nodes of the
 * partition over [start, start + duration) (start before the snapshot time
 * counts from it).  Returns 200 and sets *min_free, else 400/404/500 with a
 * code and a message.
 */
int flexco_min_free_nodes(const flexco_snapshot_t *snap, const char *partition,
			  int64_t start, int64_t duration, int share_percent,
			  int64_t *min_free, char *code, size_t codelen,
			  char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
