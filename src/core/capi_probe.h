/*
 * capi_probe.h - C interface to the core's what-if probes (POST /v1/probe),
 * for the slurmctld plugin.  Same conventions as capi_profile.h: no C++
 * type or exception crosses it, every call reports an HTTP status, a code
 * and a message.  Request/response schema: doc/probe.md.
 */
#ifndef FLEXCO_CORE_CAPI_PROBE_H
#define FLEXCO_CORE_CAPI_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "core/snapshot.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Scored offers for the probe request `body` (JSON, len bytes, need not be
 * NUL-terminated) on the snapshot.  share_percent: published share 1..100;
 * valid_for: seconds (>= 0) added to the snapshot time to give each
 * offer's valid_until.
 *
 * Returns 200 (offers), 400 ("bad_request", "not_implemented",
 * "bad_parameter"), 404 ("unknown_partition") or 500 ("invalid_snapshot",
 * "internal").  *json_out is always set to a malloc'd document (offers or
 * {"error":{"code":...,"message":...}}), NULL only if out of memory; free
 * it with free().  code/err receive the code ("" on success) and message,
 * truncated to codelen/errlen (either may be NULL with length 0).
 */
int flexco_probe_json(const flexco_snapshot_t *snap, const char *body,
		      size_t len, int share_percent, int64_t valid_for,
		      char **json_out, char *code, size_t codelen, char *err,
		      size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
