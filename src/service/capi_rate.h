/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_rate.h - the C interface of src/service/rate_limit (per-uid request
 * rate limits: flexco.conf ProbeRateLimit, ProfileRateLimit,
 * EventsRateLimit) for plugin/http.c.  Every function catches whatever
 * the C++ side throws.
 */

#ifndef FLEXCO_SERVICE_CAPI_RATE_H
#define FLEXCO_SERVICE_CAPI_RATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the kinds of limited requests, as plugin/flexco_conf.h FLEXCO_RL_* */
#define FLEXCO_RATE_KINDS 3

typedef struct flexco_rate flexco_rate_t;

/* count[k] requests in secs[k] seconds (count 0: no limit); NULL if out
 * of memory. */
extern flexco_rate_t *flexco_rate_create(const uint32_t count[FLEXCO_RATE_KINDS],
					 const uint32_t secs[FLEXCO_RATE_KINDS]);
extern void flexco_rate_destroy(flexco_rate_t *r);

/*
 * One token of uid's bucket of kind at now_usec (CLOCK_MONOTONIC): 0 when
 * the request may go on, else the seconds until a token is there (>= 1).
 * r NULL, or a kind without a limit: 0.
 */
extern uint32_t flexco_rate_take(flexco_rate_t *r, int kind, uint32_t uid,
				 uint64_t now_usec);

/* requests refused so far, per kind (zeros if r is NULL) */
extern void flexco_rate_refused(const flexco_rate_t *r,
				uint64_t out[FLEXCO_RATE_KINDS]);

#ifdef __cplusplus
}
#endif

#endif
