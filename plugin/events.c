/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  events.c - ordered, numbered events: early job ends and reservations
 *****************************************************************************
 *  Who does what:
 *
 *  - events_job_end() runs from prep/flexco's epilog hook
 *    (prep_p_epilog_slurmctld), which slurmctld calls for every job that
 *    ends, whatever its end state, under the job write lock.  It copies a
 *    few fields into a fixed, preallocated queue under a private mutex and
 *    signals the events thread: no I/O, no slurmctld lock, no allocation.
 *
 *  - The events thread wakes at once on a hook signal (at most every
 *    MIN_GAP_MSEC) and otherwise every TICK_MSEC.  When last_job_update
 *    moved (or the hook queued something) it takes the job READ lock, drains
 *    the hook queue, copies the finished jobs that ended before their
 *    planned end (a safety net for records the full queue dropped),
 *    releases the lock and only then builds events,
 *    de-duplicated by job id.  When last_resv_update moved it copies
 *    resv_list under the node READ lock (which protects it) and compares
 *    with what it saw before; reservation starts and ends are also
 *    detected by the clock.  Events get consecutive sequence numbers and go
 *    into a bounded ring; the HTTP service reads the ring under its mutex.
 *
 *  - Sequence numbers never go backwards, also across restarts: before
 *    numbers above the persisted "reserved" mark are handed out, the mark
 *    is raised by a block of 1024 and written to StateSaveLocation (the
 *    rules: src/service/event_seq.hpp); a restart
 *    continues above the mark.  The ring itself, the job de-duplication
 *    set and the reservation tracking are saved with it (temp file +
 *    rename), by the events thread, never under a slurmctld lock, at most
 *    once a second, and at fini.
 *
 *  Only the events thread changes the ring, the counters and the tracking
 *  state; other threads read the ring under ring_lock.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/common/hostlist.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/read_config.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "events.h"
#include "privacy.h"
#include "service/statefile.h"
#include "core/capi_decode.h"
#include "service/capi_events.h"
#include "service/capi_tracker.h"

extern const char plugin_type[];

#define TICK_MSEC 1000		/* poll period of the events thread */
#define MIN_GAP_MSEC 100	/* at most ten cycles a second */
#define FULL_SCAN_SEC 60	/* scan job_list at least this often */
#define RESV_SNAP_SEC 30	/* copy resv_list at least this often */
#define SAVE_GAP_SEC 1		/* at most one state save a second */
#define FLOOR_SLACK_SEC 10	/* jobs ending this much before the floor */
#define HOOK_QUEUE_LEN 1024	/* epilog records between two cycles */
#define EXT_QUEUE_LEN 1024	/* events_publish() events between cycles */
#define HOOK_PART_LEN 64
#define HOOK_NODES_LEN 256
#define HOOK_ACCT_LEN 64
#define HELD_MAX 8192		/* events held while numbers cannot be reserved */
#define ACL_KEY "_acl"		/* who may see an event, until published */

/* ---------------------------------------------------------------------- */
/* the ring (service/capi_events.h, with its own lock; changed only by the
 * events thread): the retained events as compact JSON, "seq" first, each
 * tagged with who may see it (an xmalloc'd flexco_acl_t, NULL: anyone),
 * the highest number issued and the highest that may be gone.  Made by the
 * first events_start() and kept, so that a late reader never finds it
 * freed. */
static flexco_ring_t *ring = NULL;

/* the counters and the listener (ring_lock) */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*listener)(void) = NULL;
static uint64_t st_published = 0, st_saves = 0,
		st_save_errors = 0, st_job_scans = 0, st_resv_snaps = 0,
		st_scan_usec_max = 0, st_scan_usec_last = 0;

/* ---------------------------------------------------------------------- */
/* the epilog hook's queue and the external queue (hook_lock) */

typedef struct {
	uint32_t job_id;
	uint32_t user_id;
	uint32_t node_cnt;
	uint32_t state;
	time_t start;
	time_t end;		/* time of the hook call */
	time_t planned;
	bool truncated;		/* partition or nodes did not fit */
	char partition[HOOK_PART_LEN];
	char nodes[HOOK_NODES_LEN];
	char account[HOOK_ACCT_LEN];	/* "" if none or too long */
} hook_rec_t;

static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hook_cond;
static hook_rec_t hook_queue[HOOK_QUEUE_LEN];
static hook_rec_t hook_work[HOOK_QUEUE_LEN];	/* events thread only */
static uint32_t hook_cnt = 0;
static uint64_t hook_calls = 0, hook_dropped = 0;
static json_t *ext_queue[EXT_QUEUE_LEN];
static uint32_t ext_cnt = 0;
static uint64_t ext_dropped = 0;
static bool ev_stop = false, ev_running = false;
static pthread_t ev_tid;

/* ---------------------------------------------------------------------- */
/* the events thread's own state (also read by the final save in
 * events_stop(), after the thread was joined) */

/* A job run already reported: the id alone is not enough, slurmctld
 * hands out an id again after an unclean restart lost its last save. */
typedef struct {
	uint32_t job_id;
	time_t start;
	time_t end;
} reported_t;

typedef struct {
	uint32_t job_id, user_id, state, node_cnt;
	time_t start, end, planned;
	char *partition, *nodes, *account;	/* xmalloc'd */
	bool from_hook;
} job_cand_t;

static reported_t *reported = NULL;
static uint32_t reported_cnt = 0, reported_cap = 0;
/* the reservations seen, and which of their events were published
 * (service/capi_tracker.h); made by the first events_start() and kept */
static flexco_tracker_t *tracker = NULL;
static bool resv_baseline = false;	/* first look: record, no events */
static time_t job_floor = 0;		/* jobs ending before: not ours */
static time_t job_scan_time = 0;
static uint64_t seen_dropped = 0;	/* hook_dropped at the last full scan */
static time_t seen_resv_update = 0, resv_snap_time = 0;
/* the next number and the mark on disk (service/capi_events.h) */
static flexco_seq_t seq = { .next = 1, .reserved = 0 };
static flexco_seq_saved_t loaded;	/* what _parse_state() found */
/* Events waiting for numbers: the save that would reserve them failed
 * (events thread only; at most HELD_MAX, the oldest dropped beyond). */
static json_t *held = NULL;
static uint64_t st_held_dropped = 0, st_held = 0;	/* ring_lock */
static bool reserve_failing = false;
static bool dirty = false;
static time_t last_save = 0;
static char *state_path = NULL;
static char *st_last_save_error = NULL;	/* under ring_lock */

/* ---------------------------------------------------------------------- */
/* helpers */

static uint64_t _usec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void _deadline(struct timespec *ts, long msec)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += msec / 1000;
	ts->tv_nsec += (msec % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* A word-sized read of a slurmctld global without its lock: only used to
 * decide whether taking the lock is worth it. */
static time_t _peek(const time_t *p)
{
	return *(const volatile time_t *) p;
}

/* Planned end: start + limit + time spent suspended; 0 if no limit. */
static time_t _planned_end(time_t start, uint32_t limit_min, time_t sus)
{
	if (!start || (limit_min == INFINITE) || (limit_min == NO_VAL))
		return 0;
	return start + (time_t) limit_min * 60 + sus;
}

/* Bounded copy, no allocation; true if src did not fit. */
static bool _copy_str(char *dst, size_t cap, const char *src)
{
	size_t n;

	if (!src)
		src = "";
	n = strnlen(src, cap);
	if (n >= cap) {
		memcpy(dst, src, cap - 1);
		dst[cap - 1] = '\0';
		return true;
	}
	memcpy(dst, src, n + 1);
	return false;
}

static uint32_t _count_nodes(const char *nodes, uint32_t fallback)
{
	flexco_hostlist_t hl;
	uint32_t n;

	if (!nodes || !nodes[0] || !(hl = hostlist_create(nodes)))
		return fallback;
	n = hostlist_count(hl);
	hostlist_destroy(hl);
	return n;
}

/* ---------------------------------------------------------------------- */
/* the hook: slurmctld's job write lock is held, keep it tiny */

extern void events_job_end(job_record_t *job_ptr)
{
	if (!job_ptr)
		return;
	slurm_mutex_lock(&hook_lock);
	hook_calls++;
	if (hook_cnt < HOOK_QUEUE_LEN) {
		hook_rec_t *r = &hook_queue[hook_cnt++];
		/*
		 * No partition lock can be taken here (the caller's locks are
		 * unknown); only the name is read: a partition record is
		 * freed only under the job write lock our caller holds
		 * (delete partition, reconfigure), and its name never changes.
		 */
		const char *part = job_ptr->part_ptr ? job_ptr->part_ptr->name :
						       job_ptr->partition;

		r->job_id = job_ptr->job_id;
		r->user_id = job_ptr->user_id;
		r->node_cnt = job_ptr->node_cnt;
		r->state = job_ptr->job_state & JOB_STATE_BASE;
		r->start = job_ptr->start_time;
		/* slurmctld has set end_time when it deallocates the nodes */
		r->end = job_ptr->end_time ? job_ptr->end_time : time(NULL);
		r->planned = _planned_end(job_ptr->start_time,
					  job_ptr->time_limit,
					  job_ptr->tot_sus_time);
		r->truncated = _copy_str(r->partition, sizeof(r->partition),
					 part);
		r->truncated |= _copy_str(r->nodes, sizeof(r->nodes),
					  job_ptr->nodes);
		/* a cut name could match another account's coordinator */
		if (_copy_str(r->account, sizeof(r->account),
			      job_ptr->account))
			r->account[0] = '\0';
		/* Before events_start() the records wait for the thread. */
		if (ev_running)
			pthread_cond_signal(&hook_cond);
	} else {
		hook_dropped++;	/* the poller still finds the job */
	}
	slurm_mutex_unlock(&hook_lock);
}

/* ---------------------------------------------------------------------- */
/* jobs */

typedef struct {
	job_cand_t *v;
	uint32_t n, cap;
} cand_buf_t;

static job_cand_t *_cand_push(cand_buf_t *b)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		xrealloc(b->v, sizeof(job_cand_t) * b->cap);
	}
	memset(&b->v[b->n], 0, sizeof(job_cand_t));
	return &b->v[b->n++];
}

/* Called with the job read lock held. */
static bool _ended_early(job_record_t *j)
{
	time_t planned;

	if (!IS_JOB_FINISHED(j) || !j->nodes || !j->nodes[0] ||
	    !j->start_time || (j->end_time < j->start_time))
		return false;
	planned = _planned_end(j->start_time, j->time_limit, j->tot_sus_time);
	return planned && (planned > j->end_time);
}

/* Called with the job read lock held: copy only. */
static void _cand_from_job(cand_buf_t *b, job_record_t *j, bool from_hook)
{
	job_cand_t *c = _cand_push(b);
	const char *part = j->part_ptr ? j->part_ptr->name : j->partition;

	c->job_id = j->job_id;
	c->user_id = j->user_id;
	c->state = j->job_state & JOB_STATE_BASE;
	c->start = j->start_time;
	c->end = j->end_time;
	c->planned = _planned_end(j->start_time, j->time_limit,
				  j->tot_sus_time);
	c->partition = xstrdup(part);
	c->nodes = xstrdup(j->nodes);
	c->account = xstrdup(j->account);
	c->from_hook = from_hook;
}

static bool _was_reported(uint32_t job_id, time_t start)
{
	uint32_t i;

	for (i = 0; i < reported_cnt; i++)
		if ((reported[i].job_id == job_id) &&
		    (reported[i].start == start))
			return true;
	return false;
}

static void _add_reported(uint32_t job_id, time_t start, time_t end)
{
	if (reported_cnt == reported_cap) {
		reported_cap = reported_cap ? reported_cap * 2 : 64;
		xrealloc(reported, sizeof(reported_t) * reported_cap);
	}
	reported[reported_cnt].job_id = job_id;
	reported[reported_cnt].start = start;
	reported[reported_cnt].end = end;
	reported_cnt++;
	dirty = true;
}

/* Forget jobs the poller can no longer see (they end before the floor). */
static void _prune_reported(void)
{
	uint32_t i, k = 0;

	for (i = 0; i < reported_cnt; i++)
		if (reported[i].end + FLOOR_SLACK_SEC >= job_floor)
			reported[k++] = reported[i];
	reported_cnt = k;
}

/*
 * An event's ACL rides in the batch as its member ACL_KEY ({"job_uid":U,
 * "account":A} for a job, {"users":[U,...],"users_not":B} for a
 * reservation) and is taken out when the event is published: it is kept
 * beside the event's text (ring_ev_t.acl) and never sent.
 */
static json_t *_acl_json(const flexco_acl_t *acl)
{
	json_t *o = json_object(), *users;
	uint32_t i;

	if (acl->job) {
		json_object_set_new(o, "job_uid",
				    json_integer((json_int_t) acl->job_uid));
		if (acl->account)
			json_object_set_new(o, "account",
					    json_string(acl->account));
	}
	if (acl->resv) {
		users = json_array();
		for (i = 0; i < acl->user_cnt; i++)
			json_array_append_new(users, json_integer(
				(json_int_t) acl->users[i]));
		json_object_set_new(o, "users", users);
		json_object_set_new(o, "users_not",
				    json_boolean(acl->users_not));
	}
	return o;
}

/* The reverse of _acl_json(); members of the wrong type are left out,
 * which hides the event from everyone but privileged callers. */
static void _acl_from_json(json_t *o, flexco_acl_t *acl)
{
	json_t *v, *users;
	size_t i, n;

	memset(acl, 0, sizeof(*acl));
	if (!json_is_object(o))
		return;
	if ((v = json_object_get(o, "job_uid"))) {
		acl->job = true;
		acl->job_uid = json_is_integer(v) ?
			       (uid_t) json_integer_value(v) : (uid_t) -1;
		if (json_is_string(v = json_object_get(o, "account")))
			acl->account = xstrdup(json_string_value(v));
	}
	if ((users = json_object_get(o, "users"))) {
		acl->resv = true;
		n = json_array_size(users);
		if (n)
			acl->users = xcalloc(n, sizeof(uid_t));
		for (i = 0; i < n; i++) {
			v = json_array_get(users, i);
			if (json_is_integer(v))
				acl->users[acl->user_cnt++] =
					(uid_t) json_integer_value(v);
		}
		acl->users_not = !json_is_false(json_object_get(o,
								"users_not"));
	}
}

static json_t *_job_event(const job_cand_t *c, time_t now)
{
	flexco_acl_t acl = { .job = true, .job_uid = c->user_id,
			     .account = c->account };

	return json_pack("{s:s, s:I, s:I, s:I, s:s?, s:s?, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:o}",
			 "type", EVENT_JOB_ENDED_EARLY,
			 "time", (json_int_t) now,
			 "job_id", (json_int_t) c->job_id,
			 "user_id", (json_int_t) c->user_id,
			 "partition", c->partition,
			 "nodes", c->nodes,
			 "node_count",
			 (json_int_t) _count_nodes(c->nodes, c->node_cnt),
			 "start", (json_int_t) c->start,
			 "planned_end", (json_int_t) c->planned,
			 "actual_end", (json_int_t) c->end,
			 "seconds_early", (json_int_t) (c->planned - c->end),
			 "state", job_state_string(c->state),
			 "detected_by", c->from_hook ? "epilog" : "poll",
			 ACL_KEY, _acl_json(&acl));
}

static void _emit_job(json_t *batch, const job_cand_t *c, time_t now)
{
	json_t *ev;

	if (_was_reported(c->job_id, c->start))
		return;
	_add_reported(c->job_id, c->start, c->end);
	if ((ev = _job_event(c, now)))
		json_array_append_new(batch, ev);
}

/*
 * Drain the hook queue and, if full, scan job_list: both under the job
 * read lock, so that a job seen finished here had its hook record queued
 * before (the hook runs under the job write lock).
 */
static void _scan_jobs(json_t *batch, bool full)
{
	/* the partition lock for job->part_ptr (Slurm's order: job, part) */
	slurmctld_lock_t job_read = { .job = READ_LOCK, .part = READ_LOCK };
	cand_buf_t cands = { 0 };
	flexco_list_itr_t it;
	job_record_t *j;
	uint32_t nhooks, i;
	time_t scan_time, now;
	uint64_t t0, held;

	t0 = _usec_now();
	lock_slurmctld(job_read);
	scan_time = time(NULL);

	slurm_mutex_lock(&hook_lock);
	nhooks = hook_cnt;
	memcpy(hook_work, hook_queue, sizeof(hook_rec_t) * nhooks);
	hook_cnt = 0;
	slurm_mutex_unlock(&hook_lock);

	for (i = 0; i < nhooks; i++) {
		j = find_job_record(hook_work[i].job_id);
		if (!j || !IS_JOB_FINISHED(j))
			continue;	/* gone already: use the hook's copy */
		if (_ended_early(j))
			_cand_from_job(&cands, j, true);
		hook_work[i].job_id = 0;	/* handled */
	}
	if (full && job_list) {
		it = list_iterator_create(job_list);
		while ((j = list_next(it))) {
			if ((j->end_time + FLOOR_SLACK_SEC >= job_floor) &&
			    _ended_early(j))
				_cand_from_job(&cands, j, false);
		}
		list_iterator_destroy(it);
	}
	unlock_slurmctld(job_read);
	held = _usec_now() - t0;

	/* No slurmctld lock from here on. */
	now = time(NULL);
	for (i = 0; i < cands.n; i++) {
		_emit_job(batch, &cands.v[i], now);
		xfree(cands.v[i].partition);
		xfree(cands.v[i].nodes);
		xfree(cands.v[i].account);
	}
	xfree(cands.v);
	for (i = 0; i < nhooks; i++) {
		hook_rec_t *r = &hook_work[i];
		job_cand_t c;

		if (!r->job_id || r->truncated || !r->planned ||
		    (r->planned <= r->end))
			continue;	/* truncated: the poller reports it */
		memset(&c, 0, sizeof(c));
		c.job_id = r->job_id;
		c.user_id = r->user_id;
		c.state = r->state;
		c.node_cnt = r->node_cnt;
		c.start = r->start;
		c.end = r->end;
		c.planned = r->planned;
		c.partition = r->partition[0] ? r->partition : NULL;
		c.nodes = r->nodes[0] ? r->nodes : NULL;
		c.account = r->account[0] ? r->account : NULL;
		c.from_hook = true;
		_emit_job(batch, &c, now);
	}
	if (full) {
		job_scan_time = scan_time;
		job_floor = scan_time;
		_prune_reported();
	}

	slurm_mutex_lock(&ring_lock);
	st_job_scans++;
	st_scan_usec_last = held;
	if (held > st_scan_usec_max)
		st_scan_usec_max = held;
	slurm_mutex_unlock(&ring_lock);
}

/* ---------------------------------------------------------------------- */
/* reservations */

static json_t *_resv_event(const char *type, const flexco_evstate_resv_t *t,
			   time_t now)
{
	_Static_assert(sizeof(uid_t) == sizeof(uint32_t), "32-bit uids");
	flexco_acl_t acl = { .resv = true, .users = (uid_t *) t->users,
			     .user_cnt = (uint32_t) t->user_cnt,
			     .users_not = t->users_not };

	return json_pack("{s:s, s:I, s:s, s:I, s:I, s:s?, s:I, s:o}",
			 "type", type,
			 "time", (json_int_t) now,
			 "reservation", t->name,
			 "start", (json_int_t) t->start,
			 "end", (json_int_t) t->end,
			 "nodes", t->nodes,
			 "node_count", (json_int_t) t->node_cnt,
			 ACL_KEY, _acl_json(&acl));
}

/* the batch the tracker's changes go into, and their time */
typedef struct {
	json_t *batch;
	time_t now;
} emit_arg_t;

/* flexco_tracker_emit_t: one reservation event into the batch */
static void _emit_resv(int what, const flexco_evstate_resv_t *r, void *arg)
{
	emit_arg_t *e = arg;
	json_t *ev = _resv_event((what == FLEXCO_RESV_ACTIVATED) ?
				 EVENT_RESV_ACTIVATED :
				 (what == FLEXCO_RESV_ENDED) ?
				 EVENT_RESV_ENDED : EVENT_RESV_DELETED,
				 r, e->now);

	if (ev)
		json_array_append_new(e->batch, ev);
	dirty = true;
}

/* Copy resv_list under the node read lock (which protects it); the
 * copies' strings and users are xmalloc'd. */
static flexco_evstate_resv_t *_copy_resvs(uint32_t *cnt)
{
	slurmctld_lock_t node_read = { .node = READ_LOCK };
	flexco_evstate_resv_t *v = NULL;
	slurmctld_resv_t *r;
	flexco_list_itr_t it;
	uint32_t n = 0, cap;

	lock_slurmctld(node_read);
	resv_snap_time = time(NULL);
	seen_resv_update = last_resv_update;
	cap = resv_list ? list_count(resv_list) : 0;
	if (cap) {
		v = xcalloc(cap, sizeof(*v));
		it = list_iterator_create(resv_list);
		while ((r = list_next(it)) && (n < cap)) {
			v[n].name = xstrdup(r->name);
			v[n].start = r->start_time;
			v[n].end = r->end_time;
			v[n].nodes = xstrdup(r->node_list);
			v[n].node_cnt = r->node_cnt;
			if ((r->user_cnt > 0) && r->user_list) {
				v[n].users = xcalloc(r->user_cnt,
						     sizeof(uint32_t));
				memcpy(v[n].users, r->user_list,
				       sizeof(uint32_t) * r->user_cnt);
				v[n].user_cnt = r->user_cnt;
			}
			v[n].users_not = (r->ctld_flags &
					  RESV_CTLD_USER_NOT);
			n++;
		}
		list_iterator_destroy(it);
	}
	unlock_slurmctld(node_read);
	*cnt = n;
	return v;
}

/* Compare a copy of resv_list with what was seen (service/resv_tracker.hpp
 * has the rules), with no lock held. */
static void _refresh_resvs(json_t *batch)
{
	emit_arg_t e = { .batch = batch };
	flexco_evstate_resv_t *cur;
	uint32_t n, i;

	cur = _copy_resvs(&n);
	e.now = time(NULL);
	if (flexco_tracker_refresh(tracker, cur, n, e.now, resv_baseline,
				   _emit_resv, &e))
		dirty = true;
	for (i = 0; i < n; i++) {
		xfree(cur[i].name);
		xfree(cur[i].nodes);
		xfree(cur[i].users);
	}
	xfree(cur);
	resv_baseline = false;

	slurm_mutex_lock(&ring_lock);
	st_resv_snaps++;
	slurm_mutex_unlock(&ring_lock);
}

/* Starts and ends happen by the clock, with or without a list change. */
static void _check_resv_times(json_t *batch, time_t now)
{
	emit_arg_t e = { .batch = batch, .now = now };

	if (flexco_tracker_tick(tracker, now, _emit_resv, &e))
		dirty = true;
}

/* ---------------------------------------------------------------------- */
/* state file */

/* statefile_append() for flexco_encode_events_state() */
static int _put(const char *buf, size_t len, void *arg)
{
	statefile_append(arg, buf, len);
	return 0;
}

/* The core's view of an acl (borrowed: uid_t is a 32-bit uid). */
static void _acl_to_state(const flexco_acl_t *acl, flexco_evstate_acl_t *out)
{
	out->job = acl->job;
	out->job_uid = (uint32_t) acl->job_uid;
	out->account = acl->account;
	out->resv = acl->resv;
	out->users = (uint32_t *) acl->users;
	out->user_cnt = acl->user_cnt;
	out->users_not = acl->users_not;
}

/* An acl of the ring from a decoded one (xmalloc'd copies). */
static void _acl_from_state(const flexco_evstate_acl_t *in, flexco_acl_t *acl)
{
	size_t i;

	memset(acl, 0, sizeof(*acl));
	acl->job = in->job;
	acl->job_uid = (uid_t) in->job_uid;
	acl->account = xstrdup(in->account);
	acl->resv = in->resv;
	if (in->user_cnt) {
		acl->users = xcalloc(in->user_cnt, sizeof(uid_t));
		for (i = 0; i < in->user_cnt; i++)
			acl->users[i] = (uid_t) in->users[i];
		acl->user_cnt = in->user_cnt;
	}
	acl->users_not = in->users_not;
}

/* the retained events for the state file, borrowed from the ring */
typedef struct {
	flexco_evstate_event_t *events;
	size_t cap, n;
} ev_fill_t;

/* flexco_ring_each() for _save_state() */
static int _event_to_state(uint64_t seq, const char *text, size_t len,
			   const void *tag, void *arg)
{
	static const flexco_acl_t anyone;
	ev_fill_t *fill = arg;
	flexco_evstate_event_t *e;

	if (fill->n >= fill->cap)
		return 1;
	e = &fill->events[fill->n++];
	e->seq = seq;
	e->text = (char *) text;
	e->len = len;
	_acl_to_state(tag ? tag : &anyone, &e->acl);
	return 0;
}

/*
 * Write the whole state through the state-file module (temp file, fsync,
 * .prev kept, rename, directory fsync), encoded by the core
 * (flexco_encode_events_state, the reverse of the loader's decoder): the
 * ring's texts are written as they are, not copied.  Events thread only
 * (or after it was joined), never with a slurmctld lock held.
 */
static int _save_state(uint64_t reserved, bool clean)
{
	flexco_events_state_t st;
	statefile_writer_t *w = NULL;
	flexco_ring_stats_t rs;
	ev_fill_t fill = { 0 };
	char err[256] = "";
	uint32_t i;
	int rc = -1;

	_Static_assert(sizeof(uid_t) == sizeof(uint32_t), "32-bit uids");
	memset(&st, 0, sizeof(st));
	st.clean = clean;
	st.saved_at = time(NULL);
	st.reserved = reserved;
	flexco_ring_marks(ring, &st.latest, &st.lost_upto);
	st.job_floor = job_floor;
	st.job_cnt = reported_cnt;
	if (reported_cnt)
		st.jobs = xcalloc(reported_cnt, sizeof(*st.jobs));
	for (i = 0; i < reported_cnt; i++) {
		st.jobs[i].job_id = reported[i].job_id;
		st.jobs[i].start = reported[i].start;
		st.jobs[i].end = reported[i].end;
	}
	/* the tracked reservations, borrowed (malloc'd array of views) */
	st.resv_cnt = flexco_tracker_view(tracker, &st.resvs);
	/* the retained events and who may see each (PrivateData): the
	 * ring's texts, valid while this thread does not change it */
	flexco_ring_stats(ring, &rs);
	fill.cap = rs.retained;
	if (fill.cap)
		fill.events = xcalloc(fill.cap, sizeof(*fill.events));
	flexco_ring_each(ring, _event_to_state, &fill);
	st.events = fill.events;
	st.event_cnt = fill.n;

	if (!(w = statefile_begin("events", state_path, err, sizeof(err))))
		goto out;
	if (flexco_encode_events_state(&st, _put, w, err, sizeof(err))) {
		error("%s: events: %s", plugin_type, err);
		statefile_abort(w);
		goto out;
	}
	if (statefile_commit(w, err, sizeof(err)) == SLURM_SUCCESS)
		rc = 0;
out:
	xfree(st.jobs);
	free(st.resvs);
	xfree(fill.events);
	slurm_mutex_lock(&ring_lock);
	if (rc) {
		st_save_errors++;
		xfree(st_last_save_error);
		st_last_save_error = xstrdup(err);
	} else {
		st_saves++;
	}
	slurm_mutex_unlock(&ring_lock);
	if (!rc) {
		dirty = false;
		last_save = time(NULL);
	}
	return rc;
}

/* The ring's free_tag: an event's acl. */
static void _free_tag(void *tag)
{
	flexco_acl_t *acl = tag;

	privacy_acl_free(acl);
	xfree(acl);
}

/* Append one stored event: json (malloc'd) is freed here, acl's members
 * are the ring's afterwards (acl NULL: anyone may see it). */
static void _ring_append(uint64_t seq, char *json, flexco_acl_t *acl)
{
	flexco_acl_t *tag = NULL;

	if (acl && (acl->job || acl->resv)) {
		tag = xmalloc(sizeof(*tag));
		*tag = *acl;
	} else if (acl) {
		privacy_acl_free(acl);
	}
	/* out of memory: the ring frees the tag and counts seq as lost */
	(void) flexco_ring_append(ring, seq, json, strlen(json), tag);
	free(json);
}

static void _reset_tracking(void)
{
	flexco_ring_clear(ring);
	flexco_tracker_clear(tracker);
	reported_cnt = 0;
}

/*
 * One copy of the state file (statefile_parse_t), decoded strictly by the
 * core (flexco_decode_events_state: schema, bounds, order; nothing kept on
 * error), then turned into the ring and the tracking state.
 */
static int _parse_state(const char *text, size_t len, void *arg, char *why,
			size_t why_len)
{
	static const flexco_evstate_limits_t lim =
		FLEXCO_EVSTATE_LIMITS_DEFAULT;
	flexco_events_state_t st;
	flexco_acl_t acl;
	uint64_t latest;
	size_t i;

	(void) arg;
	if (flexco_decode_events_state(text, len, &lim, &st, why, why_len))
		return -1;
	loaded.reserved = st.reserved;
	loaded.latest = st.latest;
	loaded.clean = st.clean;
	/* lost_upto raised below if the ring is smaller now */
	flexco_ring_set_marks(ring, st.latest, st.lost_upto);
	job_floor = st.job_floor;
	for (i = 0; i < st.event_cnt; i++) {
		_acl_from_state(&st.events[i].acl, &acl);
		/* drops the oldest if the buffer is smaller now */
		_ring_append(st.events[i].seq, st.events[i].text, &acl);
		st.events[i].text = NULL;	/* the ring's now */
	}
	for (i = 0; i < st.job_cnt; i++)
		_add_reported(st.jobs[i].job_id, (time_t) st.jobs[i].start,
			      (time_t) st.jobs[i].end);
	/* a state file older than "users": nobody but operators may see a
	 * reservation until it is seen again */
	for (i = 0; i < st.resv_cnt; i++)
		flexco_tracker_put(tracker, &st.resvs[i]);
	flexco_ring_marks(ring, &latest, &loaded.lost_upto);
	flexco_events_state_free(&st);
	return 0;
}

/*
 * Read the state file (the current copy, else the previous one).
 * None: a first start, numbering from 1, and what already exists
 * (finished jobs, reservations) is the baseline, not news.  No valid copy,
 * or only the previous one (numbers reserved by the lost save may have
 * been handed out): number from (epoch seconds) x 10^6 -- above anything
 * the lost counter can have reached -- telling every client that it may
 * have missed events.
 */
static void _load_state(void)
{
	time_t now = time(NULL);
	statefile_src_t src;
	uint64_t floor = (uint64_t) now * 1000000, latest, lost;
	flexco_ring_stats_t rs;

	memset(&loaded, 0, sizeof(loaded));
	src = statefile_load("events", state_path, SIZE_MAX, _parse_state,
			     NULL);
	/* the numbering rules: service/event_seq.hpp */
	flexco_ring_marks(ring, &latest, &lost);
	flexco_seq_restore(&seq, (src == STATEFILE_CURRENT) ? FLEXCO_SEQ_CURRENT :
				 (src == STATEFILE_PREV) ? FLEXCO_SEQ_PREVIOUS :
				 (src == STATEFILE_LOST) ? FLEXCO_SEQ_LOST :
				 FLEXCO_SEQ_NONE,
			   &loaded, floor, &latest, &lost);
	flexco_ring_set_marks(ring, latest, lost);
	if (src == STATEFILE_NONE) {
		job_floor = now;
		resv_baseline = true;
		info("%s: events: numbering events from 1", plugin_type);
		return;
	}
	if (src == STATEFILE_LOST) {
		_reset_tracking();
		job_floor = now;
		resv_baseline = true;
		error("%s: events: starting over at sequence number %"PRIu64,
		      plugin_type, seq.next);
		return;
	}
	if ((src == STATEFILE_PREV) && (loaded.reserved < floor))
		error("%s: events: numbering continues at %"PRIu64" after the previous copy",
		      plugin_type, seq.next);
	resv_baseline = false;
	flexco_ring_stats(ring, &rs);
	info("%s: events: restored %"PRIu64" events from %s (latest %"PRIu64"); numbering continues at %"PRIu64,
	     plugin_type, rs.retained, statefile_src_name(src), latest,
	     seq.next);
}

/* ---------------------------------------------------------------------- */
/* publishing */

/*
 * Number the batch's events and append them to the ring.  A number is
 * handed out only once the mark above it is on disk: if that save fails,
 * the events wait (held, in order) and nothing is numbered, so a crash
 * can never make a restart hand the same number to another event.
 */
/* flexco_seq_take()'s save of a new mark: 0 if it is on disk */
static int _save_mark(uint64_t mark, void *arg)
{
	(void) arg;
	return _save_state(mark, false);
}

static void _publish(json_t *batch)
{
	uint64_t first;
	size_t n, i;
	void (*fn)(void);
	flexco_acl_t *acls;
	char **texts;

	if (held && json_array_size(held)) {	/* the held ones go first */
		json_array_extend(held, batch);
		json_array_clear(batch);
		json_array_extend(batch, held);
		json_array_clear(held);
	}
	if (!(n = json_array_size(batch)))
		return;
	if (!(first = flexco_seq_take(&seq, n, _save_mark, NULL))) {
		if (!reserve_failing)
			error("%s: events: cannot save the sequence mark (StateSaveLocation); %zu events wait unnumbered until it can be saved",
			      plugin_type, n);
		reserve_failing = true;
		if (!held)
			held = json_array();
		while (json_array_size(batch) > HELD_MAX) {
			json_array_remove(batch, 0);
			slurm_mutex_lock(&ring_lock);
			st_held_dropped++;
			slurm_mutex_unlock(&ring_lock);
		}
		json_array_extend(held, batch);
		slurm_mutex_lock(&ring_lock);
		st_held = json_array_size(held);
		slurm_mutex_unlock(&ring_lock);
		return;
	}
	if (reserve_failing)
		info("%s: events: sequence mark saved again; numbering resumes at %"PRIu64,
		     plugin_type, first);
	reserve_failing = false;
	slurm_mutex_lock(&ring_lock);
	st_held = 0;
	slurm_mutex_unlock(&ring_lock);

	texts = xcalloc(n, sizeof(char *));
	acls = xcalloc(n, sizeof(flexco_acl_t));
	for (i = 0; i < n; i++) {
		json_t *ev = json_array_get(batch, i), *obj = json_object();

		json_object_set_new(obj, "seq",
				    json_integer((json_int_t) (first + i)));
		json_object_set(obj, "type", json_object_get(ev, "type"));
		json_object_set(obj, "time", json_object_get(ev, "time"));
		json_object_update(obj, ev);
		_acl_from_json(json_object_get(obj, ACL_KEY), &acls[i]);
		json_object_del(obj, ACL_KEY);
		texts[i] = json_dumps(obj, JSON_COMPACT);
		json_decref(obj);
	}

	/* latest rises to first + n - 1 with the last of them */
	for (i = 0; i < n; i++) {
		if (texts[i]) {
			_ring_append(first + i, texts[i], &acls[i]);
		} else {
			privacy_acl_free(&acls[i]);
			flexco_ring_skip(ring, first + i); /* out of memory */
		}
	}
	slurm_mutex_lock(&ring_lock);
	st_published += n;
	fn = listener;
	slurm_mutex_unlock(&ring_lock);

	dirty = true;
	xfree(texts);
	xfree(acls);
	if (fn)
		fn();
}

/* Move events_publish()'s queue into the batch. */
static void _drain_ext(json_t *batch)
{
	json_t *q[EXT_QUEUE_LEN];
	uint32_t n, i;

	slurm_mutex_lock(&hook_lock);
	n = ext_cnt;
	memcpy(q, ext_queue, sizeof(json_t *) * n);
	ext_cnt = 0;
	slurm_mutex_unlock(&hook_lock);
	for (i = 0; i < n; i++)
		json_array_append_new(batch, q[i]);
}

static void _cycle(void)
{
	json_t *batch = json_array();
	time_t now = time(NULL);
	time_t ru = _peek(&last_resv_update);
	bool hooks, scan;
	uint64_t dropped;

	if (!flexco_ctld_in_charge()) {	/* standby, hand-back or shutdown */
		json_decref(batch);
		return;
	}
	_drain_ext(batch);

	slurm_mutex_lock(&hook_lock);
	hooks = (hook_cnt > 0);
	dropped = hook_dropped;
	slurm_mutex_unlock(&hook_lock);
	/*
	 * The epilog hook sees every job that ends, so the whole job list is
	 * walked only as a safety net: at the first cycle (jobs that ended
	 * while slurmctld or the plugin was down), when the hook's queue
	 * overflowed, and every FULL_SCAN_SEC.  The lock hold of a cycle
	 * otherwise grows with the jobs that ended, not with the queue.
	 */
	scan = !job_scan_time || (dropped != seen_dropped) ||
	       (now - job_scan_time >= FULL_SCAN_SEC);
	if (scan)
		seen_dropped = dropped;
	if (hooks || scan)
		_scan_jobs(batch, scan);

	if ((ru != seen_resv_update) || (ru >= resv_snap_time) ||
	    (now - resv_snap_time >= RESV_SNAP_SEC))
		_refresh_resvs(batch);
	_check_resv_times(batch, time(NULL));

	_publish(batch);
	json_decref(batch);

	if (dirty && (time(NULL) - last_save >= SAVE_GAP_SEC))
		(void) _save_state(seq.reserved, false);
}

static void *_events_thread(void *arg)
{
	struct timespec min_until, tick_until;

	(void) arg;
	flexco_thread_name("flexco_events");
	debug("%s: events thread started", plugin_type);
	slurm_mutex_lock(&hook_lock);
	while (!ev_stop) {
		_deadline(&min_until, MIN_GAP_MSEC);
		_deadline(&tick_until, TICK_MSEC);
		while (!ev_stop &&
		       (pthread_cond_timedwait(&hook_cond, &hook_lock,
					       &min_until) != ETIMEDOUT))
			;
		while (!ev_stop && !hook_cnt && !ext_cnt &&
		       (pthread_cond_timedwait(&hook_cond, &hook_lock,
					       &tick_until) != ETIMEDOUT))
			;
		if (ev_stop)
			break;
		slurm_mutex_unlock(&hook_lock);
		_cycle();
		slurm_mutex_lock(&hook_lock);
	}
	slurm_mutex_unlock(&hook_lock);
	debug("%s: events thread exiting", plugin_type);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* API */

extern int events_start(const flexco_conf_t *conf)
{
	pthread_condattr_t attr;
	int rc;

	slurm_mutex_lock(&hook_lock);
	if (ev_running) {
		slurm_mutex_unlock(&hook_lock);
		return SLURM_SUCCESS;
	}
	slurm_mutex_unlock(&hook_lock);

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&hook_cond, &attr);
	pthread_condattr_destroy(&attr);

	if (!ring)
		ring = flexco_ring_create(conf->event_buffer_size, _free_tag);
	else
		flexco_ring_reset(ring, conf->event_buffer_size);
	if (!tracker)
		tracker = flexco_tracker_create();
	else
		flexco_tracker_clear(tracker);
	if (!ring || !tracker) {
		error("%s: events: out of memory", plugin_type);
		return SLURM_ERROR;
	}
	state_path = flexco_state_path(EVENTS_STATE_FILE);
	_load_state();
	dirty = false;
	last_save = 0;
	job_scan_time = 0;
	seen_resv_update = resv_snap_time = 0;

	slurm_mutex_lock(&hook_lock);
	ev_stop = false;
	rc = pthread_create(&ev_tid, NULL, _events_thread, NULL);
	if (!rc)
		ev_running = true;
	slurm_mutex_unlock(&hook_lock);
	if (rc) {
		error("%s: cannot create events thread: %s", plugin_type,
		      strerror(rc));
		return SLURM_ERROR;
	}
	info("%s: events: buffer of %u events, state in %s", plugin_type,
	     conf->event_buffer_size, state_path);
	return SLURM_SUCCESS;
}

extern void events_stop(void)
{
	uint32_t i;

	slurm_mutex_lock(&hook_lock);
	if (!ev_running) {
		slurm_mutex_unlock(&hook_lock);
		return;
	}
	ev_stop = true;
	pthread_cond_broadcast(&hook_cond);
	slurm_mutex_unlock(&hook_lock);
	pthread_join(ev_tid, NULL);

	/* Jobs still in the hook queue are found again by the poller after
	 * the restart: the saved floor lies before their end. */
	/* Events still held (their numbers could not be reserved) are lost:
	 * the state is then not clean, so the next start tells clients that
	 * events may be missing. */
	if (held && json_array_size(held))
		error("%s: events: %zu events never got a sequence number (the mark could not be saved) and are lost",
		      plugin_type, json_array_size(held));
	if (_save_state(seq.reserved, !(held && json_array_size(held))))
		error("%s: events: final state save failed", plugin_type);
	if (held) {
		json_decref(held);
		held = NULL;
	}
	reserve_failing = false;

	slurm_mutex_lock(&hook_lock);
	ev_running = false;
	hook_cnt = 0;
	for (i = 0; i < ext_cnt; i++)
		json_decref(ext_queue[i]);
	ext_cnt = 0;
	slurm_mutex_unlock(&hook_lock);

	_reset_tracking();
	slurm_mutex_lock(&ring_lock);
	listener = NULL;
	slurm_mutex_unlock(&ring_lock);
	xfree(reported);
	reported_cap = 0;
	xfree(state_path);
	xfree(st_last_save_error);
	pthread_cond_destroy(&hook_cond);
	info("%s: events: stopped at sequence number %"PRIu64, plugin_type,
	     events_latest());
}

extern uint64_t events_latest(void)
{
	uint64_t latest, lost;

	flexco_ring_marks(ring, &latest, &lost);
	return latest;
}

extern void events_set_listener(void (*fn)(void))
{
	slurm_mutex_lock(&ring_lock);
	listener = fn;
	slurm_mutex_unlock(&ring_lock);
}

/* flexco_ring_page()'s question: may the viewer see this event? */
static bool _ring_visible(const void *tag, void *arg)
{
	return !tag || privacy_visible(arg, tag);
}

extern char *events_query_json(uint64_t after, uint32_t max,
			       const flexco_viewer_t *viewer,
			       events_page_t *page)
{
	flexco_ring_page_t pg;
	char *json;

	/* which events, and the cursor: service/event_ring.hpp */
	json = flexco_ring_page(ring, after, max, _ring_visible,
				(void *) viewer, &pg);
	if (!json)
		return NULL;
	page->next = pg.next;
	page->oldest = pg.oldest;
	page->latest = pg.latest;
	page->lost = pg.lost;
	page->count = pg.count;
	return json;
}

extern json_t *events_stats_json(void)
{
	json_t *o;
	uint64_t calls, dropped, edropped;
	uint32_t queued;
	flexco_ring_stats_t rs;

	slurm_mutex_lock(&hook_lock);
	calls = hook_calls;
	dropped = hook_dropped;
	edropped = ext_dropped;
	queued = hook_cnt;
	slurm_mutex_unlock(&hook_lock);

	flexco_ring_stats(ring, &rs);
	slurm_mutex_lock(&ring_lock);
	o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		      "capacity", (json_int_t) rs.capacity,
		      "retained", (json_int_t) rs.retained,
		      "oldest", (json_int_t) rs.oldest,
		      "latest", (json_int_t) rs.latest,
		      "lost_upto", (json_int_t) rs.lost_upto,
		      "published", (json_int_t) st_published,
		      "evicted", (json_int_t) rs.evicted,
		      "epilog_calls", (json_int_t) calls,
		      "epilog_dropped", (json_int_t) dropped,
		      "epilog_queued", (json_int_t) queued,
		      "publish_dropped", (json_int_t) edropped,
		      "job_scans", (json_int_t) st_job_scans,
		      "scan_lock_usec_last", (json_int_t) st_scan_usec_last,
		      "scan_lock_usec_max", (json_int_t) st_scan_usec_max,
		      "resv_snapshots", (json_int_t) st_resv_snaps,
		      "state_saves", (json_int_t) st_saves,
		      "state_save_errors", (json_int_t) st_save_errors);
	json_object_set_new(o, "unnumbered", json_integer((json_int_t) st_held));
	json_object_set_new(o, "unnumbered_dropped",
			    json_integer((json_int_t) st_held_dropped));
	json_object_set_new(o, "state_last_save_error", st_last_save_error ?
			    json_string(st_last_save_error) : json_null());
	slurm_mutex_unlock(&ring_lock);
	return o;
}

extern int events_publish_private(const char *type, json_t *fields,
				  const flexco_acl_t *acl)
{
	if (acl && json_is_object(fields))
		json_object_set_new(fields, ACL_KEY, _acl_json(acl));
	return events_publish(type, fields);
}

#ifdef FLEXCO_TEST_HOOKS
/*
 * Test hook (test_plugin_submit_crash.py): while the file
 * StateSaveLocation/flexco-test-events-full exists, events_publish()
 * refuses every event as if its queue of EXT_QUEUE_LEN were full.
 */
static bool _test_queue_full(void)
{
	char *p = flexco_state_path("flexco-test-events-full");
	bool there = p && !access(p, F_OK);

	xfree(p);
	return there;
}
#endif

extern int events_publish(const char *type, json_t *fields)
{
	bool full = false;

	if (!type || !json_is_object(fields)) {
		json_decref(fields);
		return -1;
	}
	json_object_set_new(fields, "type", json_string(type));
	json_object_set_new(fields, "time",
			    json_integer((json_int_t) time(NULL)));
#ifdef FLEXCO_TEST_HOOKS
	full = _test_queue_full();
#endif

	slurm_mutex_lock(&hook_lock);
	if (!ev_running || ev_stop || full || (ext_cnt == EXT_QUEUE_LEN)) {
		ext_dropped++;
		slurm_mutex_unlock(&hook_lock);
		json_decref(fields);
		return -1;
	}
	ext_queue[ext_cnt++] = fields;
	pthread_cond_signal(&hook_cond);
	slurm_mutex_unlock(&hook_lock);
	return 0;
}
