/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cluster_snapshot.h - a plain-C copy of what slurmctld knows, for the core library.
 *
 * The slurmctld plugin fills a flexco_snapshot_t under slurmctld's read
 * locks (copying only; no I/O) and hands it, after unlocking, to the core
 * library, which computes availability profiles and offers from it.  Only
 * C types cross this boundary: the plugin's Slurm-facing files are C, the
 * core is C++.  Times are UTC epoch seconds.  Node sets are index lists into
 * `nodes` stored in the shared `node_idx` array (offset + count).
 */
#ifndef FLEXCO_CORE_SNAPSHOT_H
#define FLEXCO_CORE_SNAPSHOT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct flexco_plan_cache;	/* probe.hpp */

#define FLEXCO_SNAP_FOREVER INT64_MAX	/* an end that never comes */

typedef enum {
	FLEXCO_JOB_RUNNING = 1,	/* holds its nodes until `end` (its limit) */
	FLEXCO_JOB_PLANNED = 2,	/* pending, backfill planned start/nodes */
	FLEXCO_JOB_PENDING = 3,	/* pending, no plan (yet) */
} flexco_job_kind_t;

typedef struct {
	const char *name;
	uint32_t cpus;		/* effective CPUs */
	uint8_t available;	/* up, not drained, not down, not future */
} flexco_snap_node_t;

typedef struct {
	uint32_t job_id;
	uint32_t user_id;
	uint32_t kind;		/* flexco_job_kind_t */
	int64_t start;		/* running: started; planned: planned start */
	int64_t end;		/* running: start + limit; planned: start + limit */
	int64_t time_limit;	/* seconds, FLEXCO_SNAP_FOREVER if none */
	uint32_t min_nodes;
	uint32_t priority;
	const char *partition;
	const char *resv_name;	/* NULL if none */
	uint32_t node_off, node_cnt;	/* running/planned: its nodes */
} flexco_snap_job_t;

typedef struct {
	const char *name;
	int64_t start, end;
	uint64_t flags;		/* Slurm RESERVE_FLAG_* */
	const char *users;
	uint32_t node_off, node_cnt;
} flexco_snap_resv_t;

typedef struct {
	const char *name;
	int64_t max_time;	/* seconds, FLEXCO_SNAP_FOREVER if unlimited */
	uint8_t is_default;
	uint8_t up;
	uint32_t node_off, node_cnt;
} flexco_snap_part_t;

typedef struct {
	const char *cluster;
	int64_t when;		/* time of the snapshot */
	int64_t bf_last_cycle;	/* end of the last backfill cycle, 0 if none */
	uint8_t bf_active;	/* a backfill cycle was running: plan partial */

	flexco_snap_node_t *nodes;	uint32_t node_count;
	flexco_snap_job_t *jobs;	uint32_t job_count;
	flexco_snap_resv_t *resvs;	uint32_t resv_count;
	flexco_snap_part_t *parts;	uint32_t part_count;
	uint32_t *node_idx;		uint32_t node_idx_count;

	/* The core library's cache of what-if plans on this snapshot
	 * (flexco_plan_cache_create() of capi_probe.h; probe.hpp), or NULL:
	 * none.  Whoever frees the snapshot frees it
	 * (flexco_plan_cache_free()). */
	struct flexco_plan_cache *plan_cache;
} flexco_snapshot_t;

#ifdef __cplusplus
}
#endif

#endif
