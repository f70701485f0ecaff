/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  compute.h - the plugin's low-priority threads for probe and profile work
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_PLUGIN_COMPUTE_H
#define _FLEXCO_PLUGIN_COMPUTE_H

#include <stdint.h>

/*
 * Probes and profiles are computed on a snapshot the request already holds
 * (no slurmctld lock), but on a busy controller the computation competes
 * for the CPUs with slurmctld's own threads: the RPC handlers behind
 * sbatch and squeue, and backfill.  compute_run() hands that work to one
 * of ComputeThreads threads whose nice value is ComputeNice, so that the
 * kernel gives slurmctld's threads the CPU first and the plugin the rest.
 * Only computations that take no slurmctld lock run there: a thread with a
 * low priority must never hold a lock slurmctld's threads wait for.
 */

/* Start the threads (count 0: compute_run() runs the work in the caller). */
extern int compute_start(uint32_t count, uint32_t nice_value);

/* Run fn(arg) on a compute thread and return when it has returned. */
extern void compute_run(void (*fn)(void *arg), void *arg);

/* Count work the caller did itself because it was cheap (a probe answered
 * from the snapshot's plan cache): no thread woken for it. */
extern void compute_count_cached(void);

/* Stop and join the threads; nothing may call compute_run() any more. */
extern void compute_stop(void);

typedef struct {
	uint64_t runs;		/* computations done on the threads */
	uint64_t inline_runs;	/* done in the caller (no threads) */
	uint64_t cached_runs;	/* cheap, done in the caller (compute_count_cached) */
	uint64_t queued_max;	/* most waiting at once */
	uint32_t threads;	/* running */
	int nice;		/* their nice value (-1: could not be set) */
} compute_stats_t;

extern void compute_get_stats(compute_stats_t *out);

#endif
