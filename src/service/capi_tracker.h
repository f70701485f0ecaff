/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_tracker.h - the C interface of src/service/resv_tracker (which
 * reservation events to publish) for plugin/events.c, in the shape of the
 * events state file's reservation records (core/capi_decode.h).  Every
 * function catches whatever the C++ side throws.
 */

#ifndef FLEXCO_SERVICE_CAPI_TRACKER_H
#define FLEXCO_SERVICE_CAPI_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/capi_decode.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flexco_tracker flexco_tracker_t;

enum {
	FLEXCO_RESV_ACTIVATED = 0,
	FLEXCO_RESV_ENDED = 1,
	FLEXCO_RESV_DELETED = 2
};

/* emit(what, r, arg): r is valid during the call only */
typedef void (*flexco_tracker_emit_t)(int what, const flexco_evstate_resv_t *r,
				      void *arg);

extern flexco_tracker_t *flexco_tracker_create(void);
extern void flexco_tracker_destroy(flexco_tracker_t *t);
extern void flexco_tracker_clear(flexco_tracker_t *t);

/* Loading: one record as saved (copied). */
extern void flexco_tracker_put(flexco_tracker_t *t,
			       const flexco_evstate_resv_t *r);

/*
 * A copy of slurmctld's reservation list (n records; their activated and
 * ended are ignored) at now; baseline: the first look, which reports
 * nothing.  True if anything the state file keeps changed.
 */
extern bool flexco_tracker_refresh(flexco_tracker_t *t,
				   const flexco_evstate_resv_t *list, size_t n,
				   int64_t now, bool baseline,
				   flexco_tracker_emit_t emit, void *arg);

/* Starts and ends the clock passed; true if anything changed. */
extern bool flexco_tracker_tick(flexco_tracker_t *t, int64_t now,
				flexco_tracker_emit_t emit, void *arg);

/* The tracked records for the state file: *out a malloc'd array (free()
 * it) of views valid until the tracker next changes; their count. */
extern size_t flexco_tracker_view(const flexco_tracker_t *t,
				  flexco_evstate_resv_t **out);

#ifdef __cplusplus
}
#endif

#endif
