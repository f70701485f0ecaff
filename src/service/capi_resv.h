/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_resv.h - the C interface of src/service/resv_rules (the states of
 * the plugin's reservation records and the agent's pass) for
 * plugin/resv.c.  Every function catches whatever the C++ side throws.
 */

#ifndef FLEXCO_SERVICE_CAPI_RESV_H
#define FLEXCO_SERVICE_CAPI_RESV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In this order (plugin/resv.c's st_t is the same). */
enum {
	FLEXCO_RESV_CREATING = 0,
	FLEXCO_RESV_TENTATIVE = 1,
	FLEXCO_RESV_CONFIRMED = 2,
	FLEXCO_RESV_ENDED = 3,
	FLEXCO_RESV_DELETED = 4,
	FLEXCO_RESV_EXPIRED = 5,
	FLEXCO_RESV_STATES = 6
};

extern const char *flexco_resv_state_name(int state);
extern bool flexco_resv_live(int state);
extern bool flexco_resv_allowed(int from, int to);

/* What the agent's pass does with a record. */
enum {
	FLEXCO_TICK_KEEP = 0,
	FLEXCO_TICK_EXPIRE_INTERRUPTED = 1,	/* delete if in Slurm; expired */
	FLEXCO_TICK_EXPIRE_UNCONFIRMED = 2,	/* delete; expired */
	FLEXCO_TICK_END = 3,			/* ended */
	FLEXCO_TICK_GONE = 4			/* deleted outside FlexCo */
};

typedef struct {
	uint64_t id;
	int state;	/* FLEXCO_RESV_* */
	int64_t confirm_by, end;
} flexco_resv_view_t;

/*
 * Plan one pass at now: action[i] (FLEXCO_TICK_*) for each of the n
 * records, delete[j] for each of Slurm's m flexco_* ids (an orphan).
 * Returns false (and fills nothing) if out of memory.
 */
extern bool flexco_resv_plan_tick(const flexco_resv_view_t *records,
				  size_t n, const uint64_t *slurm_ids,
				  size_t m, bool unaccounted, int64_t now,
				  int *action, bool *delete_slurm);

#ifdef __cplusplus
}
#endif

#endif
