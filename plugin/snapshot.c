/*****************************************************************************\
 *  snapshot.c - copy slurmctld's state into a flexco_snapshot_t
 *****************************************************************************
 *  Everything the plugin computes (profiles, offers, fitness) starts from a
 *  snapshot: a plain-C copy of nodes, partitions, reservations and jobs,
 *  taken in one short critical section under read locks.  Inside it we only
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

#include "snapshot.h"

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
			uint32_t *off, uint32_t *cnt)
{
	int64_t i, last;

	*off = b->n;
	*cnt = 0;
	if (!bitmap)
		return;
	last = bit_fls(bitmap);	/* -1 if empty */
	for (i = bit_ffs(bitmap); (i >= 0) && (i <= last); i++) {
		if (!bit_test(bitmap, i) || (i >= node_record_count) ||
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
		_add_bitmap(w->idx, job_ptr->node_bitmap, w->dense,
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
		hostlist_t hl;
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

extern flexco_snapshot_t *snapshot_take(void)
{
	slurmctld_lock_t read_locks = {
		READ_LOCK, READ_LOCK, READ_LOCK, READ_LOCK, NO_LOCK };
	snap_priv_t *priv = xmalloc(sizeof(*priv));
	flexco_snapshot_t *snap = &priv->pub;
	idx_buf_t idx = { 0 };
	walk_t w = { 0 };
	int32_t *dense = NULL;
	ref_t *part_refs, *resv_refs;
	uint32_t node_cap, part_cap, resv_cap;
	node_record_t *node_ptr;
	part_record_t *part_ptr;
	slurmctld_resv_t *resv_ptr;
	ListIterator it;
	uint64_t t0, t_locked, t_jobs, t_end, held;
	int i;

	/*
	 * Allocate before locking, from counts read without the slurmctld
	 * locks (list_count() takes the list's own lock; node_record_count
	 * changes only on reconfiguration).  Everything is checked again
	 * under the locks and grown there if the state grew meanwhile.
	 */
	node_cap = node_record_count + 1;
	part_cap = list_count(part_list) + 8;
	resv_cap = list_count(resv_list) + 8;
	w.cap = list_count(job_list);
	w.cap += w.cap / 8 + 64;
	dense = xmalloc_nz(sizeof(int32_t) * node_cap);
	snap->nodes = xmalloc_nz(sizeof(flexco_snap_node_t) * node_cap);
	snap->parts = xmalloc_nz(sizeof(flexco_snap_part_t) * part_cap);
	part_refs = xmalloc_nz(sizeof(ref_t) * part_cap);
	snap->resvs = xmalloc_nz(sizeof(flexco_snap_resv_t) * resv_cap);
	resv_refs = xmalloc_nz(sizeof(ref_t) * resv_cap);
	snap->jobs = xmalloc_nz(sizeof(flexco_snap_job_t) * w.cap);
	w.jpart = xmalloc_nz(sizeof(*w.jpart) * w.cap);
	w.jresv = xmalloc_nz(sizeof(*w.jresv) * w.cap);
	idx.cap = 4 * node_cap + 256;
	idx.v = xmalloc_nz(sizeof(uint32_t) * idx.cap);
	w.priv = priv;
	w.idx = &idx;

	t0 = _usec_now();
	lock_slurmctld(read_locks);
	t_locked = _usec_now();

	snap->when = time(NULL);
	snap->cluster = xstrdup(slurm_conf.cluster_name);
	snap->bf_last_cycle = slurmctld_diag_stats.bf_when_last_cycle;
	snap->bf_active = slurmctld_diag_stats.bf_active ? 1 : 0;

	/* nodes: dense indices over the table's non-NULL entries */
	if ((uint32_t) node_record_count + 1 > node_cap) {
		node_cap = node_record_count + 1;
		xrealloc_nz(dense, sizeof(int32_t) * node_cap);
		xrealloc_nz(snap->nodes, sizeof(flexco_snap_node_t) * node_cap);
	}
	for (i = 0; i < node_record_count; i++)
		dense[i] = -1;
	for (i = 0; (node_ptr = next_node(&i)); i++) {
		flexco_snap_node_t *n = &snap->nodes[snap->node_count];

		n->name = xstrdup(node_ptr->name);
		n->cpus = node_ptr->cpus_efctv ? node_ptr->cpus_efctv :
						 node_ptr->cpus;
		n->available = (avail_node_bitmap &&
				bit_test(avail_node_bitmap, i) &&
				!IS_NODE_FUTURE(node_ptr)) ? 1 : 0;
		dense[i] = snap->node_count++;
	}
	w.dense = dense;

	/* partitions */
	it = list_iterator_create(part_list);
	while ((part_ptr = list_next(it))) {
		flexco_snap_part_t *p;

		if (snap->part_count == part_cap) {
			part_cap *= 2;
			xrealloc_nz(snap->parts,
				    sizeof(flexco_snap_part_t) * part_cap);
			xrealloc_nz(part_refs, sizeof(ref_t) * part_cap);
		}
		part_refs[snap->part_count].ptr = part_ptr;
		part_refs[snap->part_count].index = snap->part_count;
		p = &snap->parts[snap->part_count++];
		p->name = xstrdup(part_ptr->name);
		p->max_time = _limit_secs(part_ptr->max_time);
		p->is_default = (part_ptr->flags & PART_FLAG_DEFAULT) ? 1 : 0;
		p->up = (part_ptr->state_up & PARTITION_SCHED) ? 1 : 0;
		_add_bitmap(&idx, part_ptr->node_bitmap, dense,
			    &p->node_off, &p->node_cnt);
	}
	list_iterator_destroy(it);

	/* reservations (protected by the node lock) */
	it = list_iterator_create(resv_list);
	while ((resv_ptr = list_next(it))) {
		flexco_snap_resv_t *r;

		if (snap->resv_count == resv_cap) {
			resv_cap *= 2;
			xrealloc_nz(snap->resvs,
				    sizeof(flexco_snap_resv_t) * resv_cap);
			xrealloc_nz(resv_refs, sizeof(ref_t) * resv_cap);
		}
		resv_refs[snap->resv_count].ptr = resv_ptr;
		resv_refs[snap->resv_count].index = snap->resv_count;
		r = &snap->resvs[snap->resv_count++];
		r->name = xstrdup(resv_ptr->name);
		r->start = resv_ptr->start_time;
		r->end = resv_ptr->end_time;
		r->flags = resv_ptr->flags;
		r->users = xstrdup(resv_ptr->users);
		_add_bitmap(&idx, resv_ptr->node_bitmap, dense,
			    &r->node_off, &r->node_cnt);
	}
	list_iterator_destroy(it);

	/* jobs: running ones and pending ones (with backfill's plan) */
	/*
	 * One pass, list_for_each_ro (the list's lock once, not per node as
	 * list_next).  With 10k jobs submitted over time the list nodes and
	 * job records are scattered in memory and this walk is bound by
	 * memory latency: each node's address is in the one before.  Copying
	 * in the same pass lets the CPU overlap the record reads with that
	 * chain; collecting the pointers first and copying in a second pass
	 * (with or without prefetching) was measured slower (doc/bench-probe.md).
	 */
	t_jobs = _usec_now();
	list_for_each_ro(job_list, _walk_job, &w);

	unlock_slurmctld(read_locks);
	t_end = _usec_now();
	held = t_end - t_locked;

	_resolve_names(snap, &w, part_refs, resv_refs);
	_resolve_plans(snap, &w, &idx);
	for (i = 0; i < (int) w.plan_n; i++)
		xfree(w.plans[i].nodes);
	xfree(w.plans);
	xfree(w.jpart);
	xfree(w.jresv);
	xfree(part_refs);
	xfree(resv_refs);
	xfree(dense);

	snap->node_idx = idx.v;
	snap->node_idx_count = idx.n;

	slurm_mutex_lock(&stats_lock);
	lock_stats.count++;
	lock_stats.wait_total_usec += t_locked - t0;
	lock_stats.wait_last_usec = t_locked - t0;
	if (t_locked - t0 > lock_stats.wait_max_usec)
		lock_stats.wait_max_usec = t_locked - t0;
	lock_stats.total_usec += held;
	lock_stats.last_usec = held;
	if (held > lock_stats.max_usec)
		lock_stats.max_usec = held;
	slurm_mutex_unlock(&stats_lock);
	debug2("flexco: snapshot: %u jobs, %u planned, waited %"PRIu64" us for the locks, held them %"PRIu64" us (%"PRIu64" us walking the jobs)",
	       snap->job_count, w.plan_n, t_locked - t0, held,
	       t_end - t_jobs);

	return snap;
}

extern void snapshot_free(flexco_snapshot_t *snap)
{
	snap_priv_t *priv = (snap_priv_t *) snap;
	uint32_t i;

	if (!snap)
		return;
	for (i = 0; i < snap->node_count; i++)
		xfree(snap->nodes[i].name);
	for (i = 0; i < snap->part_count; i++)
		xfree(snap->parts[i].name);
	for (i = 0; i < snap->resv_count; i++) {
		xfree(snap->resvs[i].name);
		xfree(snap->resvs[i].users);
	}
	for (i = 0; i < priv->owned_n; i++)
		xfree(priv->owned[i]);
	xfree(priv->owned);
	xfree(snap->cluster);
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
}
