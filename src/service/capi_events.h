/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_events.h - the C interface of src/service/event_seq (the events'
 * sequence numbers) and src/service/event_ring (the retained events and
 * their pages) for plugin/events.c.  Every function catches whatever the
 * C++ side throws.
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

/* ---------------------------------------------------------------------- */
/* the ring of retained events (service/event_ring.hpp) */

typedef struct flexco_ring flexco_ring_t;

typedef struct {
	uint32_t count;
	uint64_t next, oldest, latest;
	bool lost;
} flexco_ring_page_t;

typedef struct {
	uint64_t capacity, retained, oldest, latest, lost_upto, evicted;
} flexco_ring_stats_t;

/* Room for capacity events; free_tag(tag) frees an event's tag when it
 * goes (NULL: tags are not freed).  NULL if out of memory. */
extern flexco_ring_t *flexco_ring_create(uint32_t capacity,
					 void (*free_tag)(void *tag));
extern void flexco_ring_destroy(flexco_ring_t *r);
/* Drop every event (the marks stay); reset: and hold capacity from now. */
extern void flexco_ring_clear(flexco_ring_t *r);
extern void flexco_ring_reset(flexco_ring_t *r, uint32_t capacity);

/*
 * Keep event seq (above every retained one): its text (len bytes, copied)
 * and tag (the ring's from now on, also on failure); the oldest goes when
 * full.  False if out of memory: seq then counts as lost.
 */
extern bool flexco_ring_append(flexco_ring_t *r, uint64_t seq,
			       const char *json, size_t len, void *tag);
/* Number seq was handed out but its event is gone (out of memory). */
extern void flexco_ring_skip(flexco_ring_t *r, uint64_t seq);
extern void flexco_ring_set_marks(flexco_ring_t *r, uint64_t latest,
				  uint64_t lost_upto);
extern void flexco_ring_marks(const flexco_ring_t *r, uint64_t *latest,
			      uint64_t *lost_upto);

/*
 * The answer of GET /v1/events?after&max (malloc'd JSON; NULL if out of
 * memory): the first max events after `after` that visible(tag, arg) lets
 * the caller see (visible NULL: all).
 */
extern char *flexco_ring_page(const flexco_ring_t *r, uint64_t after,
			      uint32_t max,
			      bool (*visible)(const void *tag, void *arg),
			      void *arg, flexco_ring_page_t *page);

/* fn for each retained event, oldest first, until it returns non-zero
 * (returned); text stays valid until the ring next changes. */
extern int flexco_ring_each(const flexco_ring_t *r,
			    int (*fn)(uint64_t seq, const char *text,
				      size_t len, const void *tag, void *arg),
			    void *arg);

extern void flexco_ring_stats(const flexco_ring_t *r,
			      flexco_ring_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif
