/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  snapshot.c - copy slurmctld's state into a flexco_snapshot_t
 *****************************************************************************
 *  Everything the plugin computes (profiles, offers, fitness) starts from a
 *  snapshot: a plain-C copy of nodes, partitions, reservations and jobs,
 *  taken under read locks that are released and taken again every
 *  SnapshotJobsPerHold jobs, so that no hold is long.  Inside them we only
 *  copy plain fields into arrays allocated before locking; partitions and
 *  reservations of jobs are recorded as record pointers and named after
 *  the locks are released, and the backfill plans' node lists (strings)
 *  are expanded then too.  doc/bench-probe.md has the measured hold times.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "core/capi_probe.h"
#include "snapshot.h"

extern const char plugin_type[];

/* Growable array of node indices. */
typedef struct {
	uint32_t *v;
	uint32_t n, cap;
} idx_buf_t;

static void _push(idx_buf_t *b, uint32_t x)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 256;
		xrealloc(b->v, sizeof(uint32_t) * b->cap);
	}
	b->v[b->n++] = x;
}

/* Append the set bits of bitmap (node table indices) as dense indices. */
static void _add_bitmap(idx_buf_t *b, bitstr_t *bitmap, const int32_t *dense,
			int64_t dense_n, uint32_t *off, uint32_t *cnt)
{
	int64_t i, last;

	*off = b->n;
	*cnt = 0;
	if (!bitmap)
		return;
	last = bit_fls(bitmap);	/* -1 if empty */
	for (i = bit_ffs(bitmap); (i >= 0) && (i <= last); i++) {
		if ((i >= dense_n) || !bit_test(bitmap, i) ||
		    (dense[i] < 0))
			continue;
		_push(b, (uint32_t) dense[i]);
		(*cnt)++;
	}
}

static int64_t _limit_secs(uint32_t minutes)
{
	if ((minutes == INFINITE) || (minutes == NO_VAL))
		return FLEXCO_SNAP_FOREVER;
	return (int64_t) minutes * 60;
}

static int64_t _end_of(time_t start, int64_t limit)
{
	if (limit == FLEXCO_SNAP_FOREVER ||
	    (int64_t) start > FLEXCO_SNAP_FOREVER - limit)
		return FLEXCO_SNAP_FOREVER;
	return (int64_t) start + limit;
}

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static snapshot_lock_stats_t lock_stats;

static uint64_t _usec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int _name_cmp(const void *a, const void *b)
{
	const flexco_snap_node_t *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/*
 * The snapshot and what only this file needs to free it: the strings a job
 * owns (most jobs borrow their partition's and reservation's names from
 * the snapshot's own copies, see snapshot_take).
 */
typedef struct {
	flexco_snapshot_t pub;	/* first: snapshot_free() casts back */
	char **owned;
	uint32_t owned_n, owned_cap;
	/* sharing (snapshot_share): references, share_lock; when it was
	 * taken (CLOCK_MONOTONIC usec) and slurmctld's node, partition and
	 * reservation stamps read under its first hold */
	uint32_t refs;
	uint64_t taken_usec;
	time_t job_stamp, node_stamp, part_stamp, resv_stamp;
	/* the nodes as a digest (_node_digest), read under the first hold,
	 * and the second in which node_stamp was last read with the nodes
	 * found unchanged (pub.when, then each _node_recheck that passed);
	 * share_lock once shared */
	uint64_t node_digest;
	time_t node_checked;
} snap_priv_t;

/* A pending job backfill planned, and its node list (copied) */
typedef struct {
	uint32_t job;		/* index in snap->jobs */
	char *nodes;
} plan_t;

/* State of the job walk under the locks (list_for_each_ro callback). */
typedef struct {
	snap_priv_t *priv;
	const int32_t *dense;
	int64_t dense_n;		/* node table size the map was made for */
	idx_buf_t *idx;
	uint32_t cap;			/* of jobs, jpart, jresv */
	const void **jpart;		/* job -> part_record_t * (NULL: own string) */
	const void **jresv;		/* job -> slurmctld_resv_t * (NULL: none/own) */
	plan_t *plans;
	uint32_t plan_n, plan_cap;
} walk_t;

static char *_own(snap_priv_t *priv, const char *str)
{
	char *copy;

	if (!str)
		return NULL;
	if (priv->owned_n == priv->owned_cap) {
		priv->owned_cap = priv->owned_cap ? priv->owned_cap * 2 : 16;
		xrealloc(priv->owned, sizeof(char *) * priv->owned_cap);
	}
	copy = xstrdup(str);
	priv->owned[priv->owned_n++] = copy;
	return copy;
}

/*
 * Copy one job record: plain fields only.  Partition and reservation are
 * kept as record pointers and turned into names after the locks are
 * released; only a job with several partitions (its name is a list) or a
 * reservation name without a record copies a string.  A planned job's node
 * list is copied (there are at most bf_max_job_test of them).
 */
static int _walk_job(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	walk_t *w = arg;
	flexco_snapshot_t *snap = &w->priv->pub;
	flexco_snap_job_t *j;
	bool running = IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr);

	if (!running && !IS_JOB_PENDING(job_ptr))
		return 0;
	if (snap->job_count == w->cap) {	/* grew since list_count() */
		w->cap = w->cap * 2 + 64;
		xrealloc_nz(snap->jobs, sizeof(*snap->jobs) * w->cap);
		xrealloc_nz(w->jpart, sizeof(*w->jpart) * w->cap);
		xrealloc_nz(w->jresv, sizeof(*w->jresv) * w->cap);
	}
	j = &snap->jobs[snap->job_count];
	j->job_id = job_ptr->job_id;
	j->user_id = job_ptr->user_id;
	j->time_limit = _limit_secs(job_ptr->time_limit);
	j->min_nodes = job_ptr->details ? job_ptr->details->min_nodes : 1;
	j->priority = job_ptr->priority;
	j->partition = NULL;
	j->resv_name = NULL;
	j->node_off = 0;
	j->node_cnt = 0;
	if (job_ptr->part_ptr_list || !job_ptr->part_ptr) {
		w->jpart[snap->job_count] = NULL;
		j->partition = _own(w->priv, job_ptr->partition);
	} else {
		w->jpart[snap->job_count] = job_ptr->part_ptr;
	}
	w->jresv[snap->job_count] = NULL;
	if (job_ptr->resv_name) {
		if (job_ptr->resv_ptr)
			w->jresv[snap->job_count] = job_ptr->resv_ptr;
		else
			j->resv_name = _own(w->priv, job_ptr->resv_name);
	}
	if (running) {
		j->kind = FLEXCO_JOB_RUNNING;
		j->start = job_ptr->start_time;
		j->end = job_ptr->end_time;
		_add_bitmap(w->idx, job_ptr->node_bitmap, w->dense, w->dense_n,
			    &j->node_off, &j->node_cnt);
	} else if (job_ptr->start_time && job_ptr->sched_nodes) {
		j->kind = FLEXCO_JOB_PLANNED;
		j->start = job_ptr->start_time;
		j->end = _end_of(job_ptr->start_time, j->time_limit);
		if (w->plan_n == w->plan_cap) {
			w->plan_cap = w->plan_cap ? w->plan_cap * 2 : 64;
			xrealloc_nz(w->plans, sizeof(plan_t) * w->plan_cap);
		}
		w->plans[w->plan_n].job = snap->job_count;
		w->plans[w->plan_n].nodes = xstrdup(job_ptr->sched_nodes);
		w->plan_n++;
	} else {
		j->kind = FLEXCO_JOB_PENDING;
		j->start = 0;
		j->end = 0;
	}
	snap->job_count++;
	return 0;
}

/* Map each planned job's node name list to dense indices (no lock held). */
static void _resolve_plans(flexco_snapshot_t *snap, walk_t *w, idx_buf_t *idx)
{
	flexco_snap_node_t *by_name;
	uint32_t i;

	if (!snap->node_count || !w->plan_n)
		return;
	/* sorted copy: name -> dense index via the position in snap->nodes */
	by_name = xcalloc(snap->node_count, sizeof(*by_name));
	for (i = 0; i < snap->node_count; i++) {
		by_name[i].name = snap->nodes[i].name;
		by_name[i].cpus = i;	/* reuse the field for the index */
	}
	qsort(by_name, snap->node_count, sizeof(*by_name), _name_cmp);

	for (i = 0; i < w->plan_n; i++) {
		flexco_snap_job_t *job = &snap->jobs[w->plans[i].job];
		flexco_hostlist_t hl;
		char *host;

		job->node_off = idx->n;
		job->node_cnt = 0;
		if (!(hl = hostlist_create(w->plans[i].nodes))) {
			job->kind = FLEXCO_JOB_PENDING;
			continue;
		}
		while ((host = hostlist_shift(hl))) {
			flexco_snap_node_t key = { .name = host };
			flexco_snap_node_t *hit = bsearch(&key, by_name,
							  snap->node_count,
							  sizeof(*by_name),
							  _name_cmp);
			if (hit) {
				_push(idx, hit->cpus);
				job->node_cnt++;
			}
			free(host);
		}
		hostlist_destroy(hl);
	}
	xfree(by_name);
}

/* A record pointer and its index in the snapshot, sorted by pointer. */
typedef struct {
	const void *ptr;
	uint32_t index;
} ref_t;

static int _ref_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) ((const ref_t *) a)->ptr;
	uintptr_t y = (uintptr_t) ((const ref_t *) b)->ptr;

	return (x > y) - (x < y);
}

/* Index of ptr in refs (sorted), or -1. */
static int64_t _ref_find(const ref_t *refs, uint32_t n, const void *ptr)
{
	ref_t key = { .ptr = ptr };
	const ref_t *hit;

	if (!n)
		return -1;
	hit = bsearch(&key, refs, n, sizeof(*refs), _ref_cmp);
	return hit ? (int64_t) hit->index : -1;
}

/*
 * Turn the jobs' partition and reservation record pointers into the names
 * copied from those records (no lock held: the pointers are only compared
 * with the ones recorded under the same locks, never dereferenced).  A
 * pointer that matches no record (should not happen: both were read under
 * the same locks) leaves the partition NULL (the job matches no partition)
 * and gives the reservation a placeholder name (the job is still "in a
 * reservation", which is what the core checks).
 */
static void _resolve_names(flexco_snapshot_t *snap, walk_t *w,
			   ref_t *part_refs, ref_t *resv_refs)
{
	const void *last_part = NULL;
	const char *last_name = NULL;
	uint32_t i;

	qsort(part_refs, snap->part_count, sizeof(ref_t), _ref_cmp);
	qsort(resv_refs, snap->resv_count, sizeof(ref_t), _ref_cmp);
	for (i = 0; i < snap->job_count; i++) {
		flexco_snap_job_t *j = &snap->jobs[i];
		int64_t k;

		if (w->jpart[i]) {
			if (w->jpart[i] != last_part) {
				k = _ref_find(part_refs, snap->part_count,
					      w->jpart[i]);
				last_part = w->jpart[i];
				last_name = (k >= 0) ? snap->parts[k].name :
						       NULL;
			}
			j->partition = last_name;
		}
		if (w->jresv[i]) {
			k = _ref_find(resv_refs, snap->resv_count,
				      w->jresv[i]);
			j->resv_name = (k >= 0) ? snap->resvs[k].name :
						  "(unknown reservation)";
		}
	}
}

/* Jobs copied per hold of the read locks (SnapshotJobsPerHold). */
static uint32_t jobs_per_hold = 250;

/*
 * Shared snapshots (SnapshotMaxAge, snapshot_share).  Probes and profile
 * requests that arrive within SnapshotMaxAge of a snapshot use it instead
 * of walking slurmctld's job list again, so 100 probes a second cost
 * slurmctld's read locks about once a second, not 100 times.  The
 * snapshot one request took stays here (one reference) until a newer one
 * replaces it; each user holds a reference and snapshot_free() drops it.
 * While one request takes a snapshot, the others that want one wait for
 * it instead of taking their own.
 */
static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t share_cond = PTHREAD_COND_INITIALIZER;
static snap_priv_t *shared = NULL;	/* share_lock */
static bool share_taking = false;	/* share_lock */
static uint32_t share_max_age_ms = 1000;
static uint32_t share_job_lag_ms = 0;	/* SnapshotJobLag */
static uint64_t share_hits = 0;		/* share_lock */
static uint64_t share_job_lag_hits = 0;	/* share_lock: of those, after a job change */
static uint64_t share_node_rechecked = 0; /* share_lock: of those, after
					   * last_node_update moved and
					   * _node_recheck found the nodes
					   * unchanged */

/*
 * Testing only: microseconds to sleep between two holds (with the locks
 * released), from FLEXCO_TEST_SNAPSHOT_PAUSE_USEC in slurmctld's
 * environment, so that a test can change records during a walk
 * (testsuite/integration/test_plugin_snapshot.py).  0 when unset, and
 * always 0 in the installed plugin, which is built without
 * FLEXCO_TEST_HOOKS.
 */
static useconds_t test_pause_usec = 0;

extern void snapshot_set_jobs_per_hold(uint32_t n)
{
	jobs_per_hold = n ? n : 1;
#ifdef FLEXCO_TEST_HOOKS
	/* Only in the objects `make check` builds (plugin/testhooks/). */
	const char *pause = getenv("FLEXCO_TEST_SNAPSHOT_PAUSE_USEC");

	test_pause_usec = pause ? (useconds_t) strtoul(pause, NULL, 10) : 0;
	if (test_pause_usec > 1000000)
		test_pause_usec = 1000000;
	if (test_pause_usec)
		info("%s: FLEXCO_TEST_SNAPSHOT_PAUSE_USEC=%u: snapshots pause between holds (testing only)",
		     plugin_type, (unsigned) test_pause_usec);
#endif
}

/* The copies of nodes, partitions and reservations, and their lookups. */
typedef struct {
	int32_t *dense;		/* node table index -> index in snap->nodes */
	int64_t dense_n;	/* node_record_count it was made for */
	uint32_t node_cap;
	ref_t *part_refs, *resv_refs;
	uint32_t part_cap, resv_cap;
} static_t;

/*
 * Copy the snapshot time, backfill's state, nodes, partitions and
 * reservations into the arrays of snap and st (grown if the state grew
 * since they were allocated).  Read locks held.
 */
static void _copy_static(flexco_snapshot_t *snap, static_t *st,
			 idx_buf_t *idx)
{
	node_record_t *node_ptr;
	part_record_t *part_ptr;
	slurmctld_resv_t *resv_ptr;
	flexco_list_itr_t it;
	int i;

	snap->when = time(NULL);
	snap->cluster = xstrdup(slurm_conf.cluster_name);
	snap->bf_last_cycle = slurmctld_diag_stats.bf_when_last_cycle;
	snap->bf_active = slurmctld_diag_stats.bf_active ? 1 : 0;

	/* nodes: dense indices over the table's non-NULL entries */
	if ((uint32_t) node_record_count + 1 > st->node_cap) {
		st->node_cap = node_record_count + 1;
		xrealloc_nz(st->dense, sizeof(int32_t) * st->node_cap);
		xrealloc_nz(snap->nodes,
			    sizeof(flexco_snap_node_t) * st->node_cap);
	}
	st->dense_n = node_record_count;
	for (i = 0; i < node_record_count; i++)
		st->dense[i] = -1;
	for (i = 0; (node_ptr = next_node(&i)); i++) {
		flexco_snap_node_t *n = &snap->nodes[snap->node_count];

		n->name = xstrdup(node_ptr->name);
		n->cpus = node_ptr->cpus_efctv ? node_ptr->cpus_efctv :
						 node_ptr->cpus;
		n->available = (avail_node_bitmap &&
				bit_test(avail_node_bitmap, i) &&
				!IS_NODE_FUTURE(node_ptr)) ? 1 : 0;
		st->dense[i] = snap->node_count++;
	}

	/* partitions */
	it = list_iterator_create(part_list);
	while ((part_ptr = list_next(it))) {
		flexco_snap_part_t *p;

		if (snap->part_count == st->part_cap) {
			st->part_cap *= 2;
			xrealloc_nz(snap->parts,
				    sizeof(flexco_snap_part_t) * st->part_cap);
			xrealloc_nz(st->part_refs,
				    sizeof(ref_t) * st->part_cap);
		}
		st->part_refs[snap->part_count].ptr = part_ptr;
		st->part_refs[snap->part_count].index = snap->part_count;
		p = &snap->parts[snap->part_count++];
		p->name = xstrdup(part_ptr->name);
		p->max_time = _limit_secs(part_ptr->max_time);
		p->is_default = (part_ptr->flags & PART_FLAG_DEFAULT) ? 1 : 0;
		p->up = (part_ptr->state_up & PARTITION_SCHED) ? 1 : 0;
		_add_bitmap(idx, part_ptr->node_bitmap, st->dense, st->dense_n,
			    &p->node_off, &p->node_cnt);
	}
	list_iterator_destroy(it);

	/* reservations (protected by the node lock) */
	it = list_iterator_create(resv_list);
	while ((resv_ptr = list_next(it))) {
		flexco_snap_resv_t *r;

		if (snap->resv_count == st->resv_cap) {
			st->resv_cap *= 2;
			xrealloc_nz(snap->resvs,
				    sizeof(flexco_snap_resv_t) * st->resv_cap);
			xrealloc_nz(st->resv_refs,
				    sizeof(ref_t) * st->resv_cap);
		}
		st->resv_refs[snap->resv_count].ptr = resv_ptr;
		st->resv_refs[snap->resv_count].index = snap->resv_count;
		r = &snap->resvs[snap->resv_count++];
		r->name = xstrdup(resv_ptr->name);
		r->start = resv_ptr->start_time;
		r->end = resv_ptr->end_time;
		r->flags = resv_ptr->flags;
		r->users = xstrdup(resv_ptr->users);
		_add_bitmap(idx, resv_ptr->node_bitmap, st->dense, st->dense_n,
			    &r->node_off, &r->node_cnt);
	}
	list_iterator_destroy(it);
}

static uint64_t _mix(uint64_t h)
{
	/* splitmix64's finalizer: every input bit moves every output bit */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

/*
 * A digest of the nodes as far as a snapshot depends on them: what
 * _copy_static copies (the table, each node's cpus and availability), what
 * a job that starts, ends or is suspended changes on its nodes (state, job
 * counts, last_busy), and backfill's last cycle (probe answers show it).
 * Not the PLANNED flag: 24.11's backfill sets it on the nodes it plans for
 * pending jobs, and moves last_node_update, at every lock yield
 * (bf_yield_interval) of every cycle; no snapshot shows it.  Node read
 * lock held.
 */
static uint64_t _node_digest(void)
{
	node_record_t *node_ptr;
	uint64_t h = _mix(0x9e3779b97f4a7c15ULL ^ (uint64_t) node_record_count);
	int i;

	for (i = 0; (node_ptr = next_node(&i)); i++) {
		uint64_t avail = (avail_node_bitmap &&
				  bit_test(avail_node_bitmap, i)) ? 1 : 0;

		h = _mix(h ^ (uint64_t) (uintptr_t) node_ptr);
		h = _mix(h ^ ((uint64_t) i << 1 | avail));
		h = _mix(h ^ ((uint64_t) (node_ptr->node_state &
					  ~NODE_STATE_PLANNED) << 32 |
			      (uint64_t) node_ptr->cpus << 16 |
			      node_ptr->cpus_efctv));
		h = _mix(h ^ ((uint64_t) node_ptr->run_job_cnt << 48 |
			      (uint64_t) node_ptr->comp_job_cnt << 32 |
			      (uint64_t) node_ptr->no_share_job_cnt << 16 |
			      node_ptr->sus_job_cnt));
		h = _mix(h ^ (uint64_t) node_ptr->last_busy);
	}
	h = _mix(h ^ (uint64_t) slurmctld_diag_stats.bf_when_last_cycle);
	h = _mix(h ^ (uint64_t) (slurmctld_diag_stats.bf_active ? 1 : 0));
	return h;
}

/* Free the strings _copy_static made; the arrays are kept, emptied. */
static void _free_names(flexco_snapshot_t *snap)
{
	uint32_t i;

	for (i = 0; i < snap->node_count; i++)
		xfree(snap->nodes[i].name);
	for (i = 0; i < snap->part_count; i++)
		xfree(snap->parts[i].name);
	for (i = 0; i < snap->resv_count; i++) {
		xfree(snap->resvs[i].name);
		xfree(snap->resvs[i].users);
	}
	xfree(snap->cluster);
	snap->node_count = snap->part_count = snap->resv_count = 0;
}

/* Undo _copy_static (keeping the arrays) and empty the node index list. */
static void _free_static(flexco_snapshot_t *snap, idx_buf_t *idx)
{
	_free_names(snap);
	idx->n = 0;
}

/* Forget the jobs copied so far (the arrays are kept). */
static void _walk_reset(walk_t *w)
{
	snap_priv_t *priv = w->priv;
	uint32_t i;

	for (i = 0; i < w->plan_n; i++)
		xfree(w->plans[i].nodes);
	w->plan_n = 0;
	for (i = 0; i < priv->owned_n; i++)
		xfree(priv->owned[i]);
	priv->owned_n = 0;
	priv->pub.job_count = 0;
}

static const uint64_t snapshot_hold_bounds_usec[SNAPSHOT_HOLD_BUCKETS] =
	SNAPSHOT_HOLD_BOUNDS_USEC;

/* One hold of the read locks of usec, into its histogram bucket (not
 * cumulative; the last is over the largest bound). */
static void _hold_count(uint64_t *hist, uint64_t usec)
{
	int i;

	for (i = 0; i < SNAPSHOT_HOLD_BUCKETS; i++)
		if (usec <= snapshot_hold_bounds_usec[i])
			break;
	hist[i]++;
}

extern flexco_snapshot_t *snapshot_take(void)
{
	slurmctld_lock_t read_locks = { .conf = READ_LOCK, .job = READ_LOCK,
			.node = READ_LOCK, .part = READ_LOCK };
	snap_priv_t *priv = xmalloc(sizeof(*priv));
	flexco_snapshot_t *snap = &priv->pub;
	idx_buf_t idx = { 0 };
	walk_t w = { 0 };
	static_t st = { 0 };
	job_record_t *job_ptr;
	flexco_list_itr_t it;
	time_t part_stamp, resv_stamp;
	bool yield;
	uint32_t in_hold, holds = 1, restarts = 0;
	const uint32_t per_hold = jobs_per_hold;
	uint64_t t0, t_locked, t_jobs, t_now, t_end, hold_start;
	uint64_t held = 0, held_total = 0, wait;
	uint64_t hold_hist[SNAPSHOT_HOLD_BUCKETS + 1] = { 0 };
	uint32_t i;

	/* the core's what-if plans on this snapshot, made by the first probe
	 * that needs them and freed with the snapshot (no slurmctld lock is
	 * held while they are made) */
	snap->plan_cache = flexco_plan_cache_create();

	/*
	 * Allocate before the long hold, from counts read under a short one
	 * of the same read locks: 22.05's scontrol reconfigure replaces
	 * part_list (and frees the old one) under the partition write lock,
	 * so even list_count() must not look at it without; resv_list and
	 * job_list are read under theirs too.  Everything is checked
	 * again under the locks and grown there if the state grew meanwhile.
	 */
	lock_slurmctld(read_locks);
	st.node_cap = node_record_count + 1;
	st.part_cap = list_count(part_list) + 8;
	st.resv_cap = list_count(resv_list) + 8;
	w.cap = list_count(job_list);
	unlock_slurmctld(read_locks);
	w.cap += w.cap / 8 + 64;
	st.dense = xmalloc_nz(sizeof(int32_t) * st.node_cap);
	snap->nodes = xmalloc_nz(sizeof(flexco_snap_node_t) * st.node_cap);
	snap->parts = xmalloc_nz(sizeof(flexco_snap_part_t) * st.part_cap);
	st.part_refs = xmalloc_nz(sizeof(ref_t) * st.part_cap);
	snap->resvs = xmalloc_nz(sizeof(flexco_snap_resv_t) * st.resv_cap);
	st.resv_refs = xmalloc_nz(sizeof(ref_t) * st.resv_cap);
	snap->jobs = xmalloc_nz(sizeof(flexco_snap_job_t) * w.cap);
	w.jpart = xmalloc_nz(sizeof(*w.jpart) * w.cap);
	w.jresv = xmalloc_nz(sizeof(*w.jresv) * w.cap);
	idx.cap = 4 * st.node_cap + 256;
	idx.v = xmalloc_nz(sizeof(uint32_t) * idx.cap);
	w.priv = priv;
	w.idx = &idx;

	t0 = _usec_now();
	lock_slurmctld(read_locks);
	t_locked = hold_start = _usec_now();
	wait = t_locked - t0;

	_copy_static(snap, &st, &idx);
	w.dense = st.dense;
	w.dense_n = st.dense_n;
	priv->refs = 1;
	priv->taken_usec = t_locked;
	priv->job_stamp = last_job_update;
	priv->node_stamp = last_node_update;
	priv->part_stamp = last_part_update;
	priv->resv_stamp = last_resv_update;
	priv->node_digest = _node_digest();
	priv->node_checked = snap->when;

	/*
	 * Jobs: running ones and pending ones (with backfill's plan), at most
	 * SnapshotJobsPerHold of them per hold of the read locks.  Between holds
	 * the locks are released, so slurmctld's writers (submissions, job
	 * ends, its schedulers) wait for one hold at most, not for a walk of
	 * the whole job list (~0.25 us per job record, bound by memory
	 * latency): the same idea as backfill's bf_yield_interval.
	 *
	 * Why this is safe: the list iterator stays valid while the locks are
	 * released (Slurm's list fixes registered iterators up on insertion
	 * and removal, under the list's own lock), every job is copied whole
	 * within one hold, and nothing read in an earlier hold is
	 * dereferenced later.  Partition and reservation records are named by
	 * pointer after unlocking, which is only right if none was created or
	 * deleted during the walk: slurmctld stamps every such change in
	 * last_part_update / last_resv_update (seconds).  We yield only if
	 * both stamps are from an earlier second than this snapshot, so any
	 * change during the walk moves them; if one moved, or the node table
	 * changed size, everything is copied again in one hold.  A job that
	 * changes state between two holds is copied as it was when its hold
	 * read it: the snapshot is then a few milliseconds older for some
	 * jobs than for others, which the reservation's admission check at
	 * reserve time covers like any other staleness.
	 */
	part_stamp = last_part_update;
	resv_stamp = last_resv_update;
	yield = (part_stamp < snap->when) && (resv_stamp < snap->when);
	t_jobs = _usec_now();
	it = list_iterator_create(job_list);
	in_hold = 0;
	while ((job_ptr = list_next(it))) {
		_walk_job(job_ptr, &w);
		if (!yield || (++in_hold < per_hold))
			continue;
		in_hold = 0;
		unlock_slurmctld(read_locks);
		t_now = _usec_now();
		_hold_count(hold_hist, t_now - hold_start);
		if (t_now - hold_start > held)
			held = t_now - hold_start;
		held_total += t_now - hold_start;
		if (test_pause_usec)
			usleep(test_pause_usec);
		lock_slurmctld(read_locks);
		hold_start = _usec_now();
		wait += hold_start - t_now;
		holds++;
		if ((last_part_update != part_stamp) ||
		    (last_resv_update != resv_stamp) ||
		    ((int64_t) node_record_count != st.dense_n)) {
			/* records may have been replaced: again, one hold */
			_walk_reset(&w);
			_free_static(snap, &idx);
			_copy_static(snap, &st, &idx);
			priv->node_digest = _node_digest();
			w.dense = st.dense;
			w.dense_n = st.dense_n;
			list_iterator_reset(it);
			yield = false;
			restarts++;
		}
	}
	list_iterator_destroy(it);

	unlock_slurmctld(read_locks);
	t_end = _usec_now();
	_hold_count(hold_hist, t_end - hold_start);
	if (t_end - hold_start > held)
		held = t_end - hold_start;
	held_total += t_end - hold_start;

	_resolve_names(snap, &w, st.part_refs, st.resv_refs);
	_resolve_plans(snap, &w, &idx);
	for (i = 0; i < w.plan_n; i++)
		xfree(w.plans[i].nodes);
	xfree(w.plans);
	xfree(w.jpart);
	xfree(w.jresv);
	xfree(st.part_refs);
	xfree(st.resv_refs);
	xfree(st.dense);

	snap->node_idx = idx.v;
	snap->node_idx_count = idx.n;

	slurm_mutex_lock(&stats_lock);
	lock_stats.count++;
	lock_stats.holds += holds;
	lock_stats.restarts += restarts;
	lock_stats.wait_total_usec += wait;
	lock_stats.wait_last_usec = wait;
	if (wait > lock_stats.wait_max_usec)
		lock_stats.wait_max_usec = wait;
	lock_stats.total_usec += held_total;
	lock_stats.last_usec = held;
	lock_stats.last_total_usec = held_total;
	lock_stats.last_holds = holds;
	if (held > lock_stats.max_usec)
		lock_stats.max_usec = held;
	for (i = 0; i <= SNAPSHOT_HOLD_BUCKETS; i++)
		lock_stats.hold_hist[i] += hold_hist[i];
	slurm_mutex_unlock(&stats_lock);
	debug2("flexco: snapshot: %u jobs, %u planned, %u holds of the read locks (longest %"PRIu64" us, %"PRIu64" us in all, %"PRIu64" us walking the jobs, %u restarts), waited %"PRIu64" us for them",
	       snap->job_count, w.plan_n, holds, held, held_total,
	       t_end - t_jobs, restarts, wait);

	return snap;
}

/*
 * May the shared snapshot s still serve a request at now?  Within
 * SnapshotMaxAge, and only if no job, node, partition or reservation
 * changed since it was taken: slurmctld stamps each such change (in
 * seconds) in last_job_update, last_node_update, last_part_update and
 * last_resv_update, and the stamps read under its first hold must be from
 * an earlier second than the snapshot, so that a change later in that
 * same second moves them too.  So a request sees every job submitted,
 * started or ended and every reservation made before it, as with a
 * snapshot of its own.  The stamps are read without slurmctld's locks:
 * each is one aligned word, written whole, and a stale read only makes us
 * take a new snapshot.
 *
 * When last_node_update moved, the nodes themselves are looked at
 * (_node_recheck: the node read lock alone, O(nodes)): if their digest is
 * the snapshot's, the snapshot still serves, and the stamp read then, with
 * the second it was read in, replaces node_stamp.  slurmctld moves the
 * stamp for more than a snapshot shows (24.11's backfill at every lock
 * yield), and a new snapshot walks every job.
 *
 * SnapshotJobLag relaxes this for jobs alone: a snapshot at most that old
 * may serve after job changes (under sbatch load last_job_update moves
 * with nearly every submission, and every probe would walk the queue
 * again).  A job that starts or ends also changes its nodes (their state,
 * job counts and last_busy are in the digest), so what can be missed, for
 * at most SnapshotJobLag ms, is submissions and changes that leave every
 * node as it was (a pending job's priority or limits, a running job's
 * time limit).
 */
typedef enum {
	SHARE_FRESH,		/* nothing changed */
	SHARE_JOB_LAG,		/* only jobs changed, within SnapshotJobLag */
	/* stale, by the first reason found (the order of share_stale[]) */
	SHARE_STALE_NONE,	/* no snapshot shared yet (or dropped) */
	SHARE_STALE_AGE,	/* SnapshotMaxAge passed */
	SHARE_STALE_NODE,	/* a node changed */
	SHARE_STALE_PART,	/* a partition changed */
	SHARE_STALE_RESV,	/* a reservation changed */
	SHARE_STALE_JOB,	/* a job changed, past SnapshotJobLag */
	SHARE_END
} share_fresh_t;

/* share_lock: new snapshots taken for snapshot_share(), by why the shared
 * one could not serve (index: share_fresh_t - SHARE_STALE_NONE) */
static uint64_t share_stale[SHARE_END - SHARE_STALE_NONE];

static share_fresh_t _share_fresh(const snap_priv_t *s, uint64_t now,
				  bool nodes_rechecked)
{
	time_t second;
	uint64_t age;

	if (!s)
		return SHARE_STALE_NONE;
	second = s->pub.when;
	age = now - s->taken_usec;
	if (age >= share_max_age_ms * 1000ULL)
		return SHARE_STALE_AGE;
	if (!nodes_rechecked &&
	    ((s->node_stamp >= s->node_checked) ||
	     (last_node_update != s->node_stamp)))
		return SHARE_STALE_NODE;
	if ((s->part_stamp >= second) || (last_part_update != s->part_stamp))
		return SHARE_STALE_PART;
	if ((s->resv_stamp >= second) || (last_resv_update != s->resv_stamp))
		return SHARE_STALE_RESV;
	if ((s->job_stamp < second) && (last_job_update == s->job_stamp))
		return SHARE_FRESH;
	if (age < share_job_lag_ms * 1000ULL)
		return SHARE_JOB_LAG;
	return SHARE_STALE_JOB;
}

/*
 * Are the nodes still as snapshot s has them (its digest)?  Under a short
 * hold of the node read lock (O(nodes), no job walked).  If so, *stamp
 * and *second get last_node_update and the second it was read in.
 */
static bool _node_recheck(const snap_priv_t *s, time_t *stamp, time_t *second)
{
	slurmctld_lock_t node_read = { .node = READ_LOCK };
	uint64_t digest;

	lock_slurmctld(node_read);
	*stamp = last_node_update;
	*second = time(NULL);
	digest = _node_digest();
	unlock_slurmctld(node_read);
	return digest == s->node_digest;
}

extern flexco_snapshot_t *snapshot_share(void)
{
	snap_priv_t *mine, *old = NULL, *cand;
	share_fresh_t f;

	if (!share_max_age_ms)
		return snapshot_take();
	slurm_mutex_lock(&share_lock);
	for (;;) {
		f = _share_fresh(shared, _usec_now(), false);
		if (f < SHARE_STALE_NONE) {
			shared->refs++;
			share_hits++;
			if (f == SHARE_JOB_LAG)
				share_job_lag_hits++;
			mine = shared;
			slurm_mutex_unlock(&share_lock);
			return &mine->pub;
		}
		if (!share_taking)
			break;
		/* another request is taking one: it will be fresh */
		slurm_cond_wait(&share_cond, &share_lock);
	}
	share_taking = true;
	if (f == SHARE_STALE_NODE) {
		/*
		 * last_node_update moved: often for nothing a snapshot shows
		 * (24.11's backfill marks planned nodes at every lock yield).
		 * Look at the nodes themselves, under the node read lock only
		 * and without share_lock (a slurmctld thread holding its locks
		 * may want share_lock: snapshot_share_drop); the others wait
		 * on share_taking meanwhile.  Our reference keeps cand.
		 */
		time_t stamp, second;
		bool same;

		cand = shared;
		cand->refs++;
		slurm_mutex_unlock(&share_lock);
		same = _node_recheck(cand, &stamp, &second);
		slurm_mutex_lock(&share_lock);
		if (same && (cand == shared)) {
			cand->node_stamp = stamp;
			cand->node_checked = second;
			f = _share_fresh(cand, _usec_now(), true);
			if (f < SHARE_STALE_NONE) {
				share_hits++;
				share_node_rechecked++;
				if (f == SHARE_JOB_LAG)
					share_job_lag_hits++;
				share_taking = false;
				slurm_cond_broadcast(&share_cond);
				slurm_mutex_unlock(&share_lock);
				return &cand->pub;
			}
		} else if (cand == shared) {
			f = SHARE_STALE_NODE;
		} else {
			f = SHARE_STALE_NONE;	/* dropped meanwhile */
		}
		share_stale[f - SHARE_STALE_NONE]++;
		slurm_mutex_unlock(&share_lock);
		snapshot_free(&cand->pub);	/* our reference */
	} else {
		share_stale[f - SHARE_STALE_NONE]++;
		slurm_mutex_unlock(&share_lock);
	}

	mine = (snap_priv_t *) snapshot_take();	/* no lock of ours held */

	slurm_mutex_lock(&share_lock);
	mine->refs++;			/* the cache's reference */
	old = shared;
	shared = mine;
	share_taking = false;
	slurm_cond_broadcast(&share_cond);
	slurm_mutex_unlock(&share_lock);
	if (old)
		snapshot_free(&old->pub); /* drops the cache's reference */
	return &mine->pub;
}

extern void snapshot_set_max_age(uint32_t ms)
{
	share_max_age_ms = ms;
}

extern void snapshot_set_job_lag(uint32_t ms)
{
	share_job_lag_ms = ms;
}

extern bool snapshot_bf_active(void)
{
	return __atomic_load_n(&slurmctld_diag_stats.bf_active,
			       __ATOMIC_RELAXED) != 0;
}

extern void snapshot_share_drop(void)
{
	snap_priv_t *old;

	slurm_mutex_lock(&share_lock);
	old = shared;
	shared = NULL;
	slurm_mutex_unlock(&share_lock);
	if (old)
		snapshot_free(&old->pub);
}

extern void snapshot_free(flexco_snapshot_t *snap)
{
	snap_priv_t *priv = (snap_priv_t *) snap;
	uint32_t i;

	if (!snap)
		return;
	slurm_mutex_lock(&share_lock);
	if (--priv->refs) {
		slurm_mutex_unlock(&share_lock);
		return;
	}
	slurm_mutex_unlock(&share_lock);
	flexco_plan_cache_free(snap->plan_cache);
	_free_names(snap);
	for (i = 0; i < priv->owned_n; i++)
		xfree(priv->owned[i]);
	xfree(priv->owned);
	xfree(snap->nodes);
	xfree(snap->parts);
	xfree(snap->resvs);
	xfree(snap->jobs);
	xfree(snap->node_idx);
	xfree(priv);
}

extern void snapshot_get_lock_stats(snapshot_lock_stats_t *out)
{
	slurm_mutex_lock(&stats_lock);
	*out = lock_stats;
	slurm_mutex_unlock(&stats_lock);
	slurm_mutex_lock(&share_lock);
	out->shared = share_hits;
	out->shared_job_lag = share_job_lag_hits;
	out->shared_node_rechecked = share_node_rechecked;
	out->stale_none = share_stale[SHARE_STALE_NONE - SHARE_STALE_NONE];
	out->stale_age = share_stale[SHARE_STALE_AGE - SHARE_STALE_NONE];
	out->stale_node = share_stale[SHARE_STALE_NODE - SHARE_STALE_NONE];
	out->stale_part = share_stale[SHARE_STALE_PART - SHARE_STALE_NONE];
	out->stale_resv = share_stale[SHARE_STALE_RESV - SHARE_STALE_NONE];
	out->stale_job = share_stale[SHARE_STALE_JOB - SHARE_STALE_NONE];
	slurm_mutex_unlock(&share_lock);
}
