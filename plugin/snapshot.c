/*****************************************************************************\
 *  snapshot.c - copy slurmctld's state into a flexco_snapshot_t
 *****************************************************************************
 *  Everything the plugin computes (profiles, offers, fitness) starts from a
 *  snapshot: a plain-C copy of nodes, partitions, reservations and jobs,
 *  taken in one short critical section under read locks.  Inside it we only
 *  copy; the backfill plans' node lists (strings) are expanded after the
 *  locks are released.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

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
	int64_t i, size;

	*off = b->n;
	*cnt = 0;
	if (!bitmap)
		return;
	size = bit_size(bitmap);
	for (i = bit_ffs(bitmap); (i >= 0) && (i < size); i++) {
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

/* Map each planned job's node name list to dense indices (no lock held). */
static void _resolve_plans(flexco_snapshot_t *snap, char **sched_nodes,
			   idx_buf_t *idx)
{
	flexco_snap_node_t *by_name;
	uint32_t i;

	if (!snap->node_count)
		return;
	/* sorted copy: name -> dense index via the position in snap->nodes */
	by_name = xcalloc(snap->node_count, sizeof(*by_name));
	for (i = 0; i < snap->node_count; i++) {
		by_name[i].name = snap->nodes[i].name;
		by_name[i].cpus = i;	/* reuse the field for the index */
	}
	qsort(by_name, snap->node_count, sizeof(*by_name), _name_cmp);

	for (i = 0; i < snap->job_count; i++) {
		flexco_snap_job_t *job = &snap->jobs[i];
		hostlist_t hl;
		char *host;

		if (!sched_nodes[i])
			continue;
		job->node_off = idx->n;
		job->node_cnt = 0;
		if (!(hl = hostlist_create(sched_nodes[i]))) {
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

extern flexco_snapshot_t *snapshot_take(void)
{
	slurmctld_lock_t read_locks = {
		READ_LOCK, READ_LOCK, READ_LOCK, READ_LOCK, NO_LOCK };
	flexco_snapshot_t *snap = xmalloc(sizeof(*snap));
	idx_buf_t idx = { 0 };
	int32_t *dense = NULL;
	char **sched_nodes = NULL;
	node_record_t *node_ptr;
	part_record_t *part_ptr;
	slurmctld_resv_t *resv_ptr;
	job_record_t *job_ptr;
	ListIterator it;
	uint64_t t0, held;
	int i;

	t0 = _usec_now();
	lock_slurmctld(read_locks);

	snap->when = time(NULL);
	snap->cluster = xstrdup(slurm_conf.cluster_name);
	snap->bf_last_cycle = slurmctld_diag_stats.bf_when_last_cycle;
	snap->bf_active = slurmctld_diag_stats.bf_active ? 1 : 0;

	/* nodes: dense indices over the table's non-NULL entries */
	dense = xcalloc(node_record_count ? node_record_count : 1,
			sizeof(int32_t));
	snap->nodes = xcalloc(node_record_count ? node_record_count : 1,
			      sizeof(flexco_snap_node_t));
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

	/* partitions */
	snap->part_count = list_count(part_list);
	snap->parts = xcalloc(snap->part_count ? snap->part_count : 1,
			      sizeof(flexco_snap_part_t));
	snap->part_count = 0;
	it = list_iterator_create(part_list);
	while ((part_ptr = list_next(it))) {
		flexco_snap_part_t *p = &snap->parts[snap->part_count++];

		p->name = xstrdup(part_ptr->name);
		p->max_time = _limit_secs(part_ptr->max_time);
		p->is_default = (part_ptr->flags & PART_FLAG_DEFAULT) ? 1 : 0;
		p->up = (part_ptr->state_up & PARTITION_SCHED) ? 1 : 0;
		_add_bitmap(&idx, part_ptr->node_bitmap, dense,
			    &p->node_off, &p->node_cnt);
	}
	list_iterator_destroy(it);

	/* reservations (protected by the node lock) */
	snap->resv_count = list_count(resv_list);
	snap->resvs = xcalloc(snap->resv_count ? snap->resv_count : 1,
			      sizeof(flexco_snap_resv_t));
	snap->resv_count = 0;
	it = list_iterator_create(resv_list);
	while ((resv_ptr = list_next(it))) {
		flexco_snap_resv_t *r = &snap->resvs[snap->resv_count++];

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
	snap->job_count = list_count(job_list);
	snap->jobs = xcalloc(snap->job_count ? snap->job_count : 1,
			     sizeof(flexco_snap_job_t));
	sched_nodes = xcalloc(snap->job_count ? snap->job_count : 1,
			      sizeof(char *));
	snap->job_count = 0;
	it = list_iterator_create(job_list);
	while ((job_ptr = list_next(it))) {
		flexco_snap_job_t *j;
		bool running = IS_JOB_RUNNING(job_ptr) ||
			       IS_JOB_SUSPENDED(job_ptr);

		if (!running && !IS_JOB_PENDING(job_ptr))
			continue;
		j = &snap->jobs[snap->job_count];
		j->job_id = job_ptr->job_id;
		j->user_id = job_ptr->user_id;
		j->time_limit = _limit_secs(job_ptr->time_limit);
		j->min_nodes = job_ptr->details ?
			       job_ptr->details->min_nodes : 1;
		j->priority = job_ptr->priority;
		j->partition = xstrdup(job_ptr->partition);
		j->resv_name = xstrdup(job_ptr->resv_name);
		if (running) {
			j->kind = FLEXCO_JOB_RUNNING;
			j->start = job_ptr->start_time;
			j->end = job_ptr->end_time;
			_add_bitmap(&idx, job_ptr->node_bitmap, dense,
				    &j->node_off, &j->node_cnt);
		} else if (job_ptr->start_time && job_ptr->sched_nodes) {
			j->kind = FLEXCO_JOB_PLANNED;
			j->start = job_ptr->start_time;
			j->end = _end_of(job_ptr->start_time, j->time_limit);
			sched_nodes[snap->job_count] =
				xstrdup(job_ptr->sched_nodes);
		} else {
			j->kind = FLEXCO_JOB_PENDING;
		}
		snap->job_count++;
	}
	list_iterator_destroy(it);

	unlock_slurmctld(read_locks);
	held = _usec_now() - t0;

	_resolve_plans(snap, sched_nodes, &idx);
	for (i = 0; i < (int) snap->job_count; i++)
		xfree(sched_nodes[i]);
	xfree(sched_nodes);
	xfree(dense);

	snap->node_idx = idx.v;
	snap->node_idx_count = idx.n;

	slurm_mutex_lock(&stats_lock);
	lock_stats.count++;
	lock_stats.total_usec += held;
	lock_stats.last_usec = held;
	if (held > lock_stats.max_usec)
		lock_stats.max_usec = held;
	slurm_mutex_unlock(&stats_lock);

	return snap;
}

extern void snapshot_free(flexco_snapshot_t *snap)
{
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
	for (i = 0; i < snap->job_count; i++) {
		xfree(snap->jobs[i].partition);
		xfree(snap->jobs[i].resv_name);
	}
	xfree(snap->cluster);
	xfree(snap->nodes);
	xfree(snap->parts);
	xfree(snap->resvs);
	xfree(snap->jobs);
	xfree(snap->node_idx);
	xfree(snap);
}

extern void snapshot_get_lock_stats(snapshot_lock_stats_t *out)
{
	slurm_mutex_lock(&stats_lock);
	*out = lock_stats;
	slurm_mutex_unlock(&stats_lock);
}
