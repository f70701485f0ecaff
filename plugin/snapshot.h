/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  snapshot.h - copy slurmctld's state into a flexco_snapshot_t
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_PLUGIN_SNAPSHOT_H
#define _FLEXCO_PLUGIN_SNAPSHOT_H

#include "core/cluster_snapshot.h"

/*
 * Lock statistics of snapshot_take(), in microseconds.  A snapshot takes
 * the read locks once per SnapshotJobsPerHold jobs (snapshot.c); a hold lasts
 * from having the locks to releasing them: max_usec/last_usec are the
 * longest single hold (what slurmctld's writers may wait behind),
 * *total_usec the sum.  wait_*_usec is the time lock_slurmctld() waited to
 * get them, summed over a snapshot's holds (a writer such as backfill or an
 * RPC held them; the probe waits, slurmctld does not).
 */
#define SNAPSHOT_HOLD_BUCKETS 5
/* their upper bounds, microseconds */
#define SNAPSHOT_HOLD_BOUNDS_USEC { 100, 1000, 10000, 100000, 1000000 }

typedef struct {
	uint64_t count;		/* snapshots */
	uint64_t holds;		/* holds of the locks (SnapshotJobsPerHold jobs each) */
	uint64_t restarts;	/* walks redone in one hold (records changed) */
	uint64_t total_usec;	/* all holds */
	uint64_t max_usec;	/* the longest single hold */
	uint64_t last_usec;	/* the longest hold of the last snapshot */
	uint64_t last_total_usec; /* all holds of the last snapshot */
	uint64_t last_holds;
	uint64_t wait_total_usec;
	uint64_t wait_max_usec;
	uint64_t wait_last_usec;
	uint64_t shared;	/* requests served from a shared snapshot */
	uint64_t shared_job_lag; /* ... of those, after a job changed
				  * (SnapshotJobLag) */
	uint64_t shared_node_rechecked; /* ... of those, after
					 * last_node_update moved with
					 * nothing a snapshot shows changed */
	/* snapshots taken for such requests, by why the shared one could
	 * not serve: none yet, SnapshotMaxAge passed, a node, partition,
	 * reservation or (past SnapshotJobLag) job changed */
	uint64_t stale_none, stale_age, stale_node, stale_part, stale_resv,
		 stale_job;
	/* every hold by its length: hold_hist[i] holds of at most
	 * snapshot_hold_bounds_usec[i] (and over the one before), the last
	 * one those over the largest bound; not cumulative */
	uint64_t hold_hist[SNAPSHOT_HOLD_BUCKETS + 1];
} snapshot_lock_stats_t;

/*
 * Take slurmctld's config, job, node and partition read locks, copy nodes,
 * partitions, reservations and jobs (releasing and retaking the locks
 * every SnapshotJobsPerHold jobs), release the locks, then resolve the backfill
 * plans' node names.  Must be called with no slurmctld lock held
 * and never from a slurmctld hook.  Returns NULL only if out of memory
 * (which xmalloc turns into a fatal anyway).
 */
extern flexco_snapshot_t *snapshot_take(void);

/*
 * A snapshot for a read-only request (probe, profile): the one another
 * request took less than SnapshotMaxAge ago if no job, node, partition or
 * reservation changed since (job changes are allowed while it is less than
 * SnapshotJobLag old; snapshot.c, _share_fresh), else a new one
 * that later requests may share.  Same rules as snapshot_take; release
 * it with snapshot_free.  Never for a mutation: those take their own.
 */
extern flexco_snapshot_t *snapshot_share(void);

/* SnapshotMaxAge of flexco.conf(5), milliseconds (0: never share). */
extern void snapshot_set_max_age(uint32_t ms);

/* SnapshotJobLag of flexco.conf(5), milliseconds (0: never share after a
 * job change); at most SnapshotMaxAge. */
extern void snapshot_set_job_lag(uint32_t ms);

/* Is slurmctld's backfill scheduler in a cycle (sdiag's "Active")?  Read
 * without a lock: one aligned word; a stale answer only holds or lets go
 * a request (BackfillDefer) a little early or late. */
extern bool snapshot_bf_active(void);

/* Free the shared snapshot (plugin shutdown). */
extern void snapshot_share_drop(void);

/* Drop a reference; the last one frees the snapshot. */
extern void snapshot_free(flexco_snapshot_t *snap);

/* SnapshotJobsPerHold of flexco.conf(5); set before the first snapshot. */
extern void snapshot_set_jobs_per_hold(uint32_t n);

extern void snapshot_get_lock_stats(snapshot_lock_stats_t *out);

#endif
