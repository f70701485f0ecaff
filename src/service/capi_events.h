/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_events.h - the C interface of src/service/event_seq (the events'
 * sequence numbers) for plugin/events.c.  Every function catches whatever
 * the C++ side throws.
 */

#ifndef FLEXCO_SERVICE_CAPI_EVENTS_H
#define FLEXCO_SERVICE_CAPI_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The numbering: the next number to hand out and the mark on disk. */
typedef struct {
	uint64_t next;
	uint64_t reserved;
} flexco_seq_t;

/* Where the state came from. */
enum {
	FLEXCO_SEQ_NONE = 0,		/* no file: a first start */
	FLEXCO_SEQ_CURRENT = 1,
	FLEXCO_SEQ_PREVIOUS = 2,	/* the .prev copy */
	FLEXCO_SEQ_LOST = 3		/* no valid copy */
};

typedef struct {
	uint64_t reserved, latest, lost_upto;
	bool clean;	/* written by a clean stop */
} flexco_seq_saved_t;

/*
 * Set *seq after a load from src (FLEXCO_SEQ_*) of saved (ignored for
 * NONE and LOST); floor: epoch seconds x 10^6.  *latest and *lost_upto:
 * the ring's, as they must be now.
 */
extern void flexco_seq_restore(flexco_seq_t *seq, int src,
			       const flexco_seq_saved_t *saved, uint64_t floor,
			       uint64_t *latest, uint64_t *lost_upto);

/*
 * The first of n numbers, or 0 if they must wait: the block does not cover
 * them and save_mark(mark, arg) (0 on success) failed.
 */
extern uint64_t flexco_seq_take(flexco_seq_t *seq, size_t n,
				int (*save_mark)(uint64_t mark, void *arg),
				void *arg);

#ifdef __cplusplus
}
#endif

#endif
