/*****************************************************************************\
 *  snapshot.h - copy slurmctld's state into a flexco_snapshot_t
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_PLUGIN_SNAPSHOT_H
#define _FLEXCO_PLUGIN_SNAPSHOT_H

#include "core/snapshot.h"

/*
 * Lock statistics of snapshot_take(), in microseconds: *_usec is the hold
 * (from having the read locks to releasing them), wait_*_usec the time
 * lock_slurmctld() waited to get them (a writer such as backfill or an RPC
 * held them; the probe waits, slurmctld does not).
 */
typedef struct {
	uint64_t count;
	uint64_t total_usec;
	uint64_t max_usec;
	uint64_t last_usec;
	uint64_t wait_total_usec;
	uint64_t wait_max_usec;
	uint64_t wait_last_usec;
} snapshot_lock_stats_t;

/*
 * Take slurmctld's config, job, node and partition read locks, copy nodes,
 * partitions, reservations and jobs, release the locks, then resolve the
 * backfill plans' node names.  Must be called with no slurmctld lock held
 * and never from a slurmctld hook.  Returns NULL only if out of memory
 * (which xmalloc turns into a fatal anyway).
 */
extern flexco_snapshot_t *snapshot_take(void);

extern void snapshot_free(flexco_snapshot_t *snap);

extern void snapshot_get_lock_stats(snapshot_lock_stats_t *out);

#endif
