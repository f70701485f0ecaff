/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  events.c - ordered, numbered events: early job ends and reservations;
 *  the host of src/service/events_service
 *****************************************************************************
 *  The publish pipeline (sequence numbers reserved on disk before they are
 *  handed out, events held while that save fails, the ring), the queues
 *  of the epilog hook and of events_publish(), the early-end decision, the
 *  job runs already reported, the reservation events, the events thread
 *  and its cycle, the state file's contents and the stats are the
 *  service's (service/capi_events_service.h, unit-tested without
 *  slurmctld).  This file is what needs Slurm:
 *
 *  - events_job_end() runs from prep/flexco's epilog hook
 *    (prep_p_epilog_slurmctld), which slurmctld calls for every job that
 *    ends, whatever its end state, under the job write lock.  It copies
 *    the job record's fields into a plain record on the stack and hands
 *    it to the service, which copies it into a preallocated queue under
 *    its small queue mutex: no I/O, no slurmctld lock, no allocation.
 *
 *  - The service's events thread asks for the job records it needs under
 *    slurmctld's job and partition read locks (_h_lock_jobs ..
 *    _h_unlock_jobs), for a copy of resv_list under the node read lock,
 *    for the node count of a node list (hostlist), whether this
 *    slurmctld is in charge, who may see an event (privacy.c) and for the
 *    state file's disk (statefile.c, never under a slurmctld lock).
 *
 *  Locking: the service holds none of its mutexes across these calls but
 *  its queue mutex inside the job read lock (slurmctld's lock, then the
 *  queue's: the hook's order); no host call calls back into the service.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/common/hostlist.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "events.h"
#include "privacy.h"
#include "service/capi_events_service.h"
#include "service/statefile.h"

extern const char plugin_type[];

/* The service: made when the plugin is loaded, so that the hook and the
 * listener find it before events_start(), and kept as long as slurmctld
 * (the object is never unloaded: prep_flexco.c, RTLD_NODELETE). */
static flexco_esvc_t *svc = NULL;
static char *state_path = NULL;		/* this term's (events thread) */
static bool started = false;		/* agent thread only */

__attribute__((constructor)) static void _events_init(void)
{
	svc = flexco_esvc_create();
}

_Static_assert(sizeof(uid_t) == sizeof(uint32_t), "32-bit uids");

/* A job's time limit in minutes, or the service's "no limit". */
static uint32_t _limit(uint32_t limit_min)
{
	return ((limit_min == INFINITE) || (limit_min == NO_VAL)) ?
	       FLEXCO_ESVC_NO_LIMIT : limit_min;
}

/* The service's plain copy of a job record (strings borrowed). */
static void _job_of(const job_record_t *j, flexco_esvc_job_t *out)
{
	memset(out, 0, sizeof(*out));
	out->job_id = j->job_id;
	out->user_id = j->user_id;
	out->node_cnt = j->node_cnt;
	out->state = job_state_string(j->job_state & JOB_STATE_BASE);
	out->finished = IS_JOB_FINISHED(j);
	out->start = j->start_time;
	out->end = j->end_time;
	out->time_limit = _limit(j->time_limit);
	out->suspended = j->tot_sus_time;
	/*
	 * The hook can take no partition lock (the caller's locks are
	 * unknown); only the name is read: a partition record is freed only
	 * under the job write lock our caller holds (delete partition,
	 * reconfigure), and its name never changes.
	 */
	out->partition = j->part_ptr ? j->part_ptr->name : j->partition;
	out->nodes = j->nodes;
	out->account = j->account;
}

/* ---------------------------------------------------------------------- */
/* the hook: slurmctld's job write lock is held, keep it tiny */

extern void events_job_end(job_record_t *job_ptr)
{
	flexco_esvc_job_t j;

	if (!job_ptr)
		return;
	_job_of(job_ptr, &j);
	/* slurmctld has set end_time when it deallocates the nodes */
	if (!j.end)
		j.end = time(NULL);
	flexco_esvc_job_end(svc, &j);
}

/* ---------------------------------------------------------------------- */
/* the host */

/* the partition lock for job->part_ptr (Slurm's order: job, part) */
static slurmctld_lock_t job_read = { .job = READ_LOCK, .part = READ_LOCK };

static void _h_lock_jobs(void *arg)
{
	(void) arg;
	lock_slurmctld(job_read);
}

static void _h_unlock_jobs(void *arg)
{
	(void) arg;
	unlock_slurmctld(job_read);
}

/* Called with the job read lock held: copy only. */
static bool _h_find_job(void *arg, uint32_t job_id, flexco_esvc_job_t *out)
{
	job_record_t *j = find_job_record(job_id);

	(void) arg;
	if (!j)
		return false;
	_job_of(j, out);
	return true;
}

static void _h_each_job(void *arg, flexco_esvc_job_cb cb, void *sink)
{
	flexco_list_itr_t it;
	flexco_esvc_job_t c;
	job_record_t *j;

	(void) arg;
	if (!job_list)
		return;
	it = list_iterator_create(job_list);
	while ((j = list_next(it))) {
		_job_of(j, &c);
		cb(sink, &c);
	}
	list_iterator_destroy(it);
}

/* A word-sized read of a slurmctld global without its lock: only used to
 * decide whether taking the lock is worth it. */
static int64_t _h_resv_update(void *arg)
{
	(void) arg;
	return *(const volatile time_t *) &last_resv_update;
}

/* resv_list under the node read lock (which protects it), borrowed. */
static void _h_copy_resvs(void *arg, int64_t *when, int64_t *update,
			  flexco_esvc_resv_cb cb, void *sink)
{
	slurmctld_lock_t node_read = { .node = READ_LOCK };
	flexco_evstate_resv_t v;
	slurmctld_resv_t *r;
	flexco_list_itr_t it;

	(void) arg;
	lock_slurmctld(node_read);
	*when = time(NULL);
	*update = last_resv_update;
	if (resv_list) {
		it = list_iterator_create(resv_list);
		while ((r = list_next(it))) {
			memset(&v, 0, sizeof(v));
			v.name = r->name;
			v.start = r->start_time;
			v.end = r->end_time;
			v.nodes = r->node_list;
			v.node_cnt = r->node_cnt;
			if ((r->user_cnt > 0) && r->user_list) {
				v.users = (uint32_t *) r->user_list;
				v.user_cnt = r->user_cnt;
			}
			v.users_not = (r->ctld_flags & RESV_CTLD_USER_NOT);
			cb(sink, &v);
		}
		list_iterator_destroy(it);
	}
	unlock_slurmctld(node_read);
}

static uint32_t _h_node_count(void *arg, const char *nodes, uint32_t fallback)
{
	flexco_hostlist_t hl;
	uint32_t n;

	(void) arg;
	if (!nodes || !nodes[0] || !(hl = hostlist_create(nodes)))
		return fallback;
	n = hostlist_count(hl);
	hostlist_destroy(hl);
	return n;
}

/* The plugin's view of an acl, borrowed. */
static void _acl_of(const flexco_evstate_acl_t *in, flexco_acl_t *out)
{
	memset(out, 0, sizeof(*out));
	out->job = in->job;
	out->job_uid = (uid_t) in->job_uid;
	out->account = in->account;
	out->resv = in->resv;
	out->users = (uid_t *) in->users;
	out->user_cnt = (uint32_t) in->user_cnt;
	out->users_not = in->users_not;
}

static bool _h_visible(void *arg, const void *viewer,
		       const flexco_evstate_acl_t *acl)
{
	flexco_acl_t a;

	(void) arg;
	_acl_of(acl, &a);
	return privacy_visible(viewer, &a);
}

static statefile_src_t _h_load(void *arg, size_t max,
			       statefile_parse_t parse, void *parse_arg)
{
	(void) arg;
	return statefile_load("events", state_path, max, parse,
				    parse_arg);
}

static int _h_save(void *arg, const char *text, size_t len, char *why,
		   size_t why_len)
{
	(void) arg;
	(void) len;
	return (statefile_write("events", state_path, text, why, why_len) ==
		SLURM_SUCCESS) ? 0 : -1;
}

/* ---------------------------------------------------------------------- */
/* API */

extern int events_start(const flexco_conf_t *conf)
{
	const flexco_esvc_host_t host = {
		.arg = NULL, .log = flexco_host_log, .now = flexco_host_now,
		.in_charge = flexco_host_in_charge, .lock_jobs = _h_lock_jobs,
		.unlock_jobs = _h_unlock_jobs, .find_job = _h_find_job,
		.each_job = _h_each_job, .resv_update = _h_resv_update,
		.copy_resvs = _h_copy_resvs, .node_count = _h_node_count,
		.visible = _h_visible, .load = _h_load, .save = _h_save,
	};

	if (started)
		return SLURM_SUCCESS;
	if (!svc) {
		error("%s: events: out of memory", plugin_type);
		return SLURM_ERROR;
	}
	xfree(state_path);
	state_path = flexco_state_path(EVENTS_STATE_FILE);
	/* loads the state, starts the events thread */
	if (flexco_esvc_open(svc, conf->event_buffer_size, &host, true))
		return SLURM_ERROR;
	started = true;
	info("%s: events: buffer of %u events, state in %s", plugin_type,
	     conf->event_buffer_size, state_path);
	return SLURM_SUCCESS;
}

extern void events_stop(void)
{
	flexco_esvc_close(svc);	/* joins the thread, saves a last time */
	started = false;
}

extern uint64_t events_latest(void)
{
	return flexco_esvc_latest(svc);
}

extern void events_set_listener(void (*fn)(void))
{
	flexco_esvc_set_listener(svc, fn);
}

extern char *events_query_json(uint64_t after, uint32_t max,
			       const flexco_viewer_t *viewer,
			       events_page_t *page)
{
	flexco_ring_page_t pg;
	char *json;

	/* which events, and the cursor: service/event_ring.hpp */
	json = flexco_esvc_query(svc, after, max, viewer, &pg);
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
	json_t *o = flexco_esvc_stats_json(svc);

	return o ? o : json_object();
}

#ifdef FLEXCO_TEST_HOOKS
/*
 * Test hook (test_plugin_submit_crash.py): while the file
 * StateSaveLocation/flexco-test-events-full exists, events_publish()
 * refuses every event as if its queue were full.
 */
static bool _test_queue_full(void)
{
	char *p = flexco_state_path("flexco-test-events-full");
	bool there = p && !access(p, F_OK);

	xfree(p);
	return there;
}
#endif

extern int events_publish_private(const char *type, json_t *fields,
				  const flexco_acl_t *acl)
{
	flexco_evstate_acl_t a = { 0 };
	bool full = false;

	if (acl) {
		a.job = acl->job;
		a.job_uid = (uint32_t) acl->job_uid;
		a.account = acl->account;
		a.resv = acl->resv;
		a.users = (uint32_t *) acl->users;
		a.user_cnt = acl->user_cnt;
		a.users_not = acl->users_not;
	}
#ifdef FLEXCO_TEST_HOOKS
	if (type && json_is_object(fields))
		full = _test_queue_full();
#endif
	return flexco_esvc_publish(svc, type, fields, acl ? &a : NULL,
				   time(NULL), full);
}

extern int events_publish(const char *type, json_t *fields)
{
	return events_publish_private(type, fields, NULL);
}
