/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_parking.h - the C interface of src/service/parking (long polls and
 * requests held during a backfill cycle, held without a thread) for
 * plugin/http.c.  Every function catches whatever the C++ side throws.
 * A request is named by an opaque handle; suspend and resume are called
 * with the parking's lock held, and a handle is off every list before
 * resume is called with it.
 */

#ifndef FLEXCO_SERVICE_CAPI_PARKING_H
#define FLEXCO_SERVICE_CAPI_PARKING_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flexco_parking flexco_parking_t;

typedef struct {
	uint32_t max_long_polls_per_user;	/* MaxLongPollsPerUser */
	uint32_t max_long_polls;		/* MaxLongPolls */
	uint64_t defer_usec;			/* BackfillDefer; 0: off */
} flexco_parking_limits_t;

typedef struct {
	void (*suspend)(void *handle);
	void (*resume)(void *handle);
	uint64_t (*latest)(void);		/* the newest event's number */
	bool (*backfill_active)(void);
} flexco_parking_host_t;

typedef struct {
	uint64_t waiting, total, woken, timed_out, refused;
	uint64_t deferred, defer_total, defer_released, defer_timed_out;
	uint64_t defer_wait_usec, defer_wait_max_usec;
} flexco_parking_stats_t;

enum {
	FLEXCO_PARK_ANSWER = 0,		/* answer now */
	FLEXCO_PARK_PARKED = 1,		/* suspended; answered when resumed */
	FLEXCO_PARK_REFUSED_USER = 2,	/* over MaxLongPollsPerUser */
	FLEXCO_PARK_REFUSED_TOTAL = 3	/* over MaxLongPolls */
};

/* Closed (every poll answered at once) until opened; NULL if out of
 * memory.  The plugin makes one and keeps it for the life of the process,
 * so that a late call of a stopped service never finds it gone. */
extern flexco_parking_t *flexco_parking_create(const flexco_parking_host_t *host);
extern void flexco_parking_destroy(flexco_parking_t *p);

/* Open it with these limits and its waker thread (thread name `name`);
 * false if the thread cannot be made. */
extern bool flexco_parking_open(flexco_parking_t *p,
				const flexco_parking_limits_t *l,
				const char *name);
/* Close it (nothing parks any more), resume everything, join the waker. */
extern void flexco_parking_stop(flexco_parking_t *p);

/*
 * A long poll: look(arg, &after) runs under the parking's lock and says
 * whether to park past after (non-zero) or answer now (0).  again: a poll
 * resumed before, parked again uncapped if time is left before deadline
 * (CLOCK_MONOTONIC usec).  FLEXCO_PARK_*; for a refusal *in_way polls
 * were counted and the first of them ends in *retry_after s at the latest.
 */
extern int flexco_parking_poll(flexco_parking_t *p, void *handle, uint32_t uid,
			       bool exempt, uint64_t deadline, bool again,
			       int (*look)(void *arg, uint64_t *after),
			       void *arg, uint32_t *in_way,
			       uint32_t *retry_after);

/* Hold a complete probe or profile while backfill is in a cycle; true if
 * held. */
extern bool flexco_parking_defer(flexco_parking_t *p, void *handle);

/* The request ended: off every list, not resumed. */
extern void flexco_parking_forget(flexco_parking_t *p, void *handle);

/* New events arrived. */
extern void flexco_parking_notify(flexco_parking_t *p);

extern void flexco_parking_stats(const flexco_parking_t *p,
				 flexco_parking_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif
