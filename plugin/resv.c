/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  resv.c - tentative and confirmed Slurm reservations made for flexcod:
 *  the host of src/service/resv_service
 *****************************************************************************
 *  A flexco reservation is a real Slurm reservation named flexco_<id>,
 *  visible in `scontrol show res`, made for one user on a node count, a
 *  start and a duration.  Its record, state machine, Idempotency-Keys,
 *  write-ahead records, state file contents, recovery and the agent's pass
 *  are the service's (service/capi_resv_service.h, unit-tested without
 *  slurmctld).  This file is what needs Slurm: making, changing and
 *  deleting the Slurm reservation, listing Slurm's flexco_* reservations,
 *  admission on a snapshot, part jobs (jobs.c), user lookups, events and
 *  the state file's disk (statefile.c).
 *
 *  Locking: the service holds its own mutex across these calls, which take
 *  slurmctld's locks; no slurmctld hook ever calls into the service, so
 *  this cannot deadlock.  Disk I/O and user lookups happen with the
 *  service's mutex held but never under slurmctld's locks.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/read_config.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/reservation.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "core/capi_probe.h"
#include "core/capi_profile.h"
#include "service/capi_resv_service.h"
#include "events.h"
#include "jobs.h"
#include "resv.h"
#include "snapshot.h"
#include "service/statefile.h"

extern const char plugin_type[];

#define STATE_FILE "flexco_resv.json"
#define NAME_PREFIX "flexco_"
#define MAX_JOBS FLEXCO_RSVC_MAX_JOBS	/* part jobs per reservation */

/* The service: made at the first term, kept as long as slurmctld (the
 * object is never unloaded: prep_flexco.c, RTLD_NODELETE). */
static pthread_mutex_t svc_lock = PTHREAD_MUTEX_INITIALIZER;
static flexco_rsvc_t *svc = NULL;
static char *state_path = NULL;			/* this term's */
/* PublishedShare and MinFit of this term, for admission */
static uint16_t published_share = 100;
static double min_fit = 0.0;

/* _h_remove() under slurmctld's write locks (del_lock) */
static pthread_mutex_t del_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t del_count = 0, del_examined_total = 0;
static uint64_t del_usec_last = 0, del_usec_max = 0;
static uint32_t del_examined_last = 0;

static char *_name_of(uint64_t id)
{
	return xstrdup_printf(NAME_PREFIX "%" PRIu64, id);
}

/* Parse a flexco_<id> name's id text: decimal, 1..2^53. */
static int _parse_id(const char *s, uint64_t *id)
{
	uint64_t v = 0;

	if (!s || !*s || (strlen(s) > 16))
		return -1;
	for (; *s; s++) {
		if ((*s < '0') || (*s > '9'))
			return -1;
		v = v * 10 + (uint64_t) (*s - '0');
	}
	if (!v)
		return -1;
	*id = v;
	return 0;
}

/* A Slurm error code as the service's FLEXCO_RSVC_*, its text in why. */
static int _rsvc_rc(int rc, char *why, size_t why_len)
{
	if (rc == SLURM_SUCCESS)
		return FLEXCO_RSVC_OK;
	snprintf(why, why_len, "%s", slurm_strerror(rc));
	if (rc == ESLURM_NODES_BUSY)
		return FLEXCO_RSVC_BUSY;
	if (rc == ESLURM_RESERVATION_INVALID)
		return FLEXCO_RSVC_NO_SUCH;
	return FLEXCO_RSVC_REFUSED;
}

#ifdef FLEXCO_TEST_HOOKS
/*
 * Test hook (test_plugin_submit_crash.py): while the file
 * StateSaveLocation/flexco-test-fail-saves exists, every save after the
 * next part-job submission fails, as on a failing disk.
 */
static bool test_fail_saves = false;

static bool _test_fail_file(void)
{
	char *p = flexco_state_path("flexco-test-fail-saves");
	bool there = !access(p, F_OK);

	xfree(p);
	return there;
}
#endif

/* ---------------------------------------------------------------------- */
/* Slurm calls: each takes exactly the locks of Slurm's own RPC handler */

static uint64_t _usec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int _h_create(void *arg, uint64_t id, const char *user,
		     uint32_t nodes, const char *partition, int64_t start,
		     int64_t end, char **node_list, uint32_t *got, char *why,
		     size_t why_len)
{
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = READ_LOCK,
			.node = WRITE_LOCK, .part = READ_LOCK };
	resv_desc_msg_t *d = xmalloc(sizeof(*d));
	slurmctld_resv_t *made;
	char *name = _name_of(id), *err_msg = NULL;
	int rc;

	(void) arg;
	slurm_init_resv_desc_msg(d);
	d->name = xstrdup(name);
	d->users = xstrdup(user);
	FLEXCO_RESV_SET_NODE_CNT(d, nodes);
	d->start_time = start;
	d->end_time = end;
	d->duration = NO_VAL;
	d->flags = 0;
	if (partition)
		d->partition = xstrdup(partition);

	*got = 0;
	*node_list = NULL;
	lock_slurmctld(lk);
	rc = flexco_create_resv(d, &err_msg);
	if ((rc == SLURM_SUCCESS) && (made = find_resv_name(name))) {
		*node_list = made->node_list ? strdup(made->node_list) : NULL;
		*got = made->node_cnt;
	}
	unlock_slurmctld(lk);

	if (err_msg)
		debug("%s: create %s: %s", plugin_type, name, err_msg);
	xfree(err_msg);
	slurm_free_resv_desc_msg(d);
	xfree(name);
	if (rc == SLURM_SUCCESS)
		queue_job_scheduler();
	return _rsvc_rc(rc, why, why_len);
}

static int _h_update(void *arg, uint64_t id, int64_t cur_start,
		     int64_t cur_end, uint32_t cur_nodes, int64_t start,
		     int64_t end, uint32_t nodes, char **node_list,
		     uint32_t *got, char *why, size_t why_len)
{
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = READ_LOCK,
			.node = WRITE_LOCK, .part = READ_LOCK };
	resv_desc_msg_t *d = xmalloc(sizeof(*d));
	slurmctld_resv_t *made;
	char *name = _name_of(id), *err_msg = NULL;
	int rc;

	(void) arg;
	slurm_init_resv_desc_msg(d);
	d->name = xstrdup(name);
	if (start != cur_start)
		d->start_time = start;
	if (end != cur_end)
		d->end_time = end;
	if (nodes != cur_nodes)
		FLEXCO_RESV_SET_NODE_CNT(d, nodes);

	*got = 0;
	*node_list = NULL;
	lock_slurmctld(lk);
	rc = flexco_update_resv(d, &err_msg);
	if ((rc == SLURM_SUCCESS) && (made = find_resv_name(name))) {
		*node_list = made->node_list ? strdup(made->node_list) : NULL;
		*got = made->node_cnt;
	}
	unlock_slurmctld(lk);

	if (err_msg)
		debug("%s: update %s: %s", plugin_type, name, err_msg);
	xfree(err_msg);
	slurm_free_resv_desc_msg(d);
	xfree(name);
	if (rc == SLURM_SUCCESS)
		queue_job_scheduler();
	return _rsvc_rc(rc, why, why_len);
}

/*
 * Deleting a Slurm reservation only unlinks its pending jobs (they would
 * then run anywhere) and is refused while one runs.  A flexco_* reservation
 * holds nothing but part jobs, which must never outlive it, so they are
 * cancelled first, under the same locks as Slurm's kill RPC (config read,
 * job and node write, federation read), and the reservation is deleted
 * within the same lock hold.
 *
 * The part jobs are the ones the record lists (at most MAX_JOBS):
 * each is looked up by id in Slurm's job hash, so the plugin's share of
 * the write lock hold grows with the reservation's own jobs, not with the
 * queue (delete_resv() itself still walks the job list twice, comparing
 * pointers: Slurm's cost, as for scontrol delete reservation).  Only an
 * orphan, a flexco_* reservation without a record (found when the state is
 * recovered), has no such list: for it the job list is walked once.  What
 * happened is logged after the locks are released.
 */
static int _h_remove(void *arg, uint64_t id, const uint32_t *jobs,
		     size_t job_cnt, bool orphan, char *why, size_t why_len)
{
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = WRITE_LOCK,
			.node = WRITE_LOCK, .fed = READ_LOCK };
	reservation_name_msg_t msg = { .name = _name_of(id) };
	uint32_t *kill_ids = NULL;
	int *kill_rc = NULL;
	int kill_cnt = 0, kill_cap = 0, i, rc;
	size_t k;
	uint32_t examined = 0;
	job_record_t *job_ptr;
	flexco_list_itr_t it;
	uint64_t t0, held;

	(void) arg;
	if (!orphan) {
		kill_cap = job_cnt;
		kill_ids = xcalloc(kill_cap + 1, sizeof(uint32_t));
	}
	t0 = _usec_now();
	lock_slurmctld(lk);
	if (orphan) {
		it = list_iterator_create(job_list);
		while ((job_ptr = list_next(it))) {
			examined++;
			if (IS_JOB_FINISHED(job_ptr) || !job_ptr->resv_name ||
			    xstrcmp(job_ptr->resv_name, msg.name))
				continue;
			if (kill_cnt == kill_cap) {
				kill_cap = kill_cap ? 2 * kill_cap : 8;
				xrealloc(kill_ids,
					 kill_cap * sizeof(uint32_t));
			}
			kill_ids[kill_cnt++] = job_ptr->job_id;
		}
		list_iterator_destroy(it);
	} else {
		for (k = 0; k < job_cnt; k++) {
			examined++;
			job_ptr = find_job_record(jobs[k]);
			if (!job_ptr || IS_JOB_FINISHED(job_ptr) ||
			    !job_ptr->resv_name ||
			    xstrcmp(job_ptr->resv_name, msg.name))
				continue;
			kill_ids[kill_cnt++] = job_ptr->job_id;
		}
	}
	kill_rc = xcalloc(kill_cnt + 1, sizeof(int));
	for (i = 0; i < kill_cnt; i++)
		kill_rc[i] = flexco_job_signal_id(kill_ids[i], SIGKILL, 0, 0,
						  false);
	rc = delete_resv(&msg);
	unlock_slurmctld(lk);
	held = _usec_now() - t0;

	slurm_mutex_lock(&del_lock);
	del_count++;
	del_examined_last = examined;
	del_examined_total += examined;
	del_usec_last = held;
	if (held > del_usec_max)
		del_usec_max = held;
	slurm_mutex_unlock(&del_lock);
	for (i = 0; i < kill_cnt; i++) {
		if (kill_rc[i] != SLURM_SUCCESS)
			error("%s: cancelling JobId=%u of %s: %s", plugin_type,
			      kill_ids[i], msg.name,
			      slurm_strerror(kill_rc[i]));
		else
			info("%s: JobId=%u cancelled with its reservation %s",
			     plugin_type, kill_ids[i], msg.name);
	}
	debug("%s: deleting %s: %u job records examined, %d cancelled, locks held %" PRIu64 " usec: %s",
	      plugin_type, msg.name, examined, kill_cnt, held,
	      slurm_strerror(rc));
	xfree(kill_rc);
	xfree(kill_ids);
	xfree(msg.name);
	if (rc == SLURM_SUCCESS)
		queue_job_scheduler();
	return _rsvc_rc(rc, why, why_len);
}

/* The ids of Slurm's flexco_* reservations (node read lock), handed to
 * the service after the lock is released. */
static void _h_slurm_ids(void *arg, flexco_rsvc_id_cb cb, void *sink)
{
	slurmctld_lock_t lk = { .node = READ_LOCK };
	slurmctld_resv_t *r;
	flexco_list_itr_t it;
	uint64_t *ids, id;
	int n = 0, cap, i;

	(void) arg;
	lock_slurmctld(lk);
	cap = list_count(resv_list) + 1;
	ids = xcalloc(cap, sizeof(uint64_t));
	it = list_iterator_create(resv_list);
	while ((r = list_next(it))) {
		if (r->name && !strncmp(r->name, NAME_PREFIX,
					strlen(NAME_PREFIX)) &&
		    !_parse_id(r->name + strlen(NAME_PREFIX), &id) &&
		    (n < cap))
			ids[n++] = id;
	}
	list_iterator_destroy(it);
	unlock_slurmctld(lk);
	for (i = 0; i < n; i++)
		cb(sink, ids[i]);
	xfree(ids);
}

/* One of Slurm's flexco_* reservations and its jobs, for adoption. */
typedef struct {
	uint64_t id;
	char *users;
	uint32_t uid;
	uint32_t nodes;
	char *node_list;
	char *partition;
	int64_t start, end;
	uint32_t *job_ids;
	int64_t *job_submitted;
	int job_cnt;
} sres_t;

static void _sres_free(sres_t *s, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		xfree(s[i].users);
		xfree(s[i].node_list);
		xfree(s[i].partition);
		xfree(s[i].job_ids);
		xfree(s[i].job_submitted);
	}
	xfree(s);
}

/*
 * Slurm's flexco_* reservations with what a record needs, and the jobs
 * not yet finished in each, copied under the job and node read locks
 * (resv_list is protected by the node lock).  Only when the state is
 * recovered: it walks the whole job list once.
 */
static sres_t *_slurm_flexco_resvs(int *count)
{
	slurmctld_lock_t lk = { .job = READ_LOCK, .node = READ_LOCK };
	slurmctld_resv_t *r;
	job_record_t *job_ptr;
	flexco_list_itr_t it;
	sres_t *out;
	uint64_t id;
	int n = 0, cap, i;

	lock_slurmctld(lk);
	cap = list_count(resv_list) + 1;
	out = xcalloc(cap, sizeof(sres_t));
	it = list_iterator_create(resv_list);
	while ((r = list_next(it)) && (n < cap)) {
		sres_t *s = &out[n];

		if (!r->name || strncmp(r->name, NAME_PREFIX,
					strlen(NAME_PREFIX)) ||
		    _parse_id(r->name + strlen(NAME_PREFIX), &id))
			continue;
		s->id = id;
		s->users = xstrdup(r->users);
		s->uid = (r->user_cnt > 0) ? r->user_list[0] : UINT32_MAX;
		s->nodes = r->node_cnt;
		s->node_list = xstrdup(r->node_list);
		s->partition = xstrdup(r->partition);
		s->start = r->start_time;
		s->end = r->end_time;
		n++;
	}
	list_iterator_destroy(it);
	it = list_iterator_create(job_list);
	while ((job_ptr = list_next(it))) {
		/* the id parsed once, no allocation per job under the lock */
		if (IS_JOB_FINISHED(job_ptr) || !job_ptr->resv_name ||
		    strncmp(job_ptr->resv_name, NAME_PREFIX,
			    strlen(NAME_PREFIX)) ||
		    _parse_id(job_ptr->resv_name + strlen(NAME_PREFIX), &id))
			continue;
		for (i = 0; i < n; i++) {
			sres_t *s = &out[i];

			if ((s->id != id) || (s->job_cnt >= MAX_JOBS))
				continue;
			if (!s->job_ids) {
				s->job_ids = xcalloc(MAX_JOBS,
						     sizeof(uint32_t));
				s->job_submitted = xcalloc(MAX_JOBS,
							   sizeof(int64_t));
			}
			s->job_ids[s->job_cnt] = job_ptr->job_id;
			s->job_submitted[s->job_cnt++] = job_ptr->details ?
				job_ptr->details->submit_time : 0;
			break;
		}
	}
	list_iterator_destroy(it);
	unlock_slurmctld(lk);
	*count = n;
	return out;
}

static void _h_slurm_resvs(void *arg, flexco_rsvc_resv_cb cb, void *sink)
{
	sres_t *sr;
	int n = 0, i;

	(void) arg;
	sr = _slurm_flexco_resvs(&n);
	for (i = 0; i < n; i++) {
		flexco_rsvc_slurm_resv_t v = {
			.id = sr[i].id, .users = sr[i].users,
			.uid = sr[i].uid, .nodes = sr[i].nodes,
			.node_list = sr[i].node_list,
			.partition = sr[i].partition,
			.start = sr[i].start, .end = sr[i].end,
			.job_ids = sr[i].job_ids,
			.job_submitted = sr[i].job_submitted,
			.job_cnt = (size_t) sr[i].job_cnt,
		};

		cb(sink, &v);
	}
	_sres_free(sr, n);
}

/* ---------------------------------------------------------------------- */
/* admission, users, jobs, events, the state file, the log */

static char *_err_json(const char *code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static char *_err_json(const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return flexco_error_json(code, msg);
}

static int _check_free(const char *partition, int64_t start, int64_t dur,
		       uint32_t nodes, char **json_out)
{
	flexco_snapshot_t *snap = snapshot_take();
	char code[64], err[512];
	int64_t free_nodes = 0;
	int status;

	status = flexco_min_free_nodes(snap, partition, start, dur,
				       published_share, &free_nodes,
				       code, sizeof(code), err, sizeof(err));
	snapshot_free(snap);
	if (status != 200) {
		*json_out = flexco_error_json(code, err);
		return status;
	}
	if (free_nodes < nodes) {
		*json_out = _err_json("not_available",
				 "only %" PRId64 " of the %u nodes asked for are free for the whole window",
				 free_nodes, nodes);
		return 409;
	}
	return 200;
}

/*
 * MinFit: the what-if fitness of the exact slot (how much it would delay
 * the planned local queue, thesis eq. 9.8) must reach the configured
 * threshold.  Computed on a fresh snapshot, after its locks are released.
 */
static int _check_fit(const char *partition, int64_t start, int64_t dur,
		      uint32_t nodes, char **json_out)
{
	flexco_snapshot_t *snap;
	char code[64], err[512], verdict[32];
	double fit = 0.0;
	int status;

	if (!(min_fit > 0.0))
		return 200;
	snap = snapshot_take();
	status = flexco_slot_fit(snap, partition, start, dur, nodes,
				 published_share, &fit, verdict,
				 sizeof(verdict), code, sizeof(code), err,
				 sizeof(err));
	snapshot_free(snap);
	if (status != 200) {
		*json_out = flexco_error_json(code, err);
		return status;
	}
	if (fit < min_fit) {
		*json_out = _err_json("low_fit",
				 "the slot's fitness %.3f (%s) is below MinFit %.2f: it would delay planned local jobs",
				 fit, verdict, min_fit);
		return 409;
	}
	return 200;
}

/* Free nodes for the whole window, then MinFit, each on a fresh snapshot. */
static int _h_admit(void *arg, const char *partition, int64_t start,
		    int64_t duration, uint32_t nodes, char **json_out,
		    bool *low_fit)
{
	int status;

	(void) arg;
	*low_fit = false;
	status = _check_free(partition, start, duration, nodes, json_out);
	if (status != 200)
		return status;
	status = _check_fit(partition, start, duration, nodes, json_out);
	*low_fit = (status == 409);
	return status;
}

static bool _h_user_uid(void *arg, const char *user, uint32_t *uid)
{
	uid_t u;

	(void) arg;
	if (uid_from_string(user, &u) != SLURM_SUCCESS)
		return false;
	*uid = u;
	return true;
}

static int _h_job_submit(void *arg, const flexco_jobspec_t *spec,
			 uint64_t resv_id, uint32_t uid, uint32_t nodes,
			 uint32_t minutes, const char *partition,
			 uint32_t *job_id, char *why, size_t why_len)
{
	char *name = _name_of(resv_id), *err_msg = NULL;
	int rc;

	(void) arg;
	rc = flexco_job_submit(spec, name, resv_id, uid, nodes, minutes,
			       partition, job_id, &err_msg);
#ifdef FLEXCO_TEST_HOOKS
	/* test_plugin_submit_crash.py: saves fail from here on */
	test_fail_saves = _test_fail_file();
#endif
	if (rc != SLURM_SUCCESS)
		snprintf(why, why_len, "%s%s%s", slurm_strerror(rc),
			 err_msg ? ": " : "", err_msg ? err_msg : "");
	xfree(err_msg);
	xfree(name);
	return (rc == SLURM_SUCCESS) ? FLEXCO_RSVC_OK : FLEXCO_RSVC_REFUSED;
}

static json_t *_h_job_state(void *arg, uint32_t job_id)
{
	(void) arg;
	return flexco_job_state(job_id);
}

static int _h_job_phase(void *arg, uint32_t job_id, bool *ran)
{
	(void) arg;
	return flexco_job_phase(job_id, ran);
}

static int _h_job_release(void *arg, uint32_t job_id, const char *resv_name,
			  bool *released)
{
	(void) arg;
	return flexco_job_release(job_id, resv_name, released);
}

static int _h_job_cancel(void *arg, uint32_t job_id, const char *resv_name,
			 char *why, size_t why_len)
{
	int rc;

	(void) arg;
	rc = flexco_job_cancel(job_id, resv_name);
	if (rc == SLURM_SUCCESS)
		return FLEXCO_RSVC_OK;
	snprintf(why, why_len, "%s", slurm_strerror(rc));
	return FLEXCO_RSVC_REFUSED;
}

/* A part-job event, shown to the reservation's user under PrivateData. */
static bool _h_publish(void *arg, const char *type, json_t *fields,
		       uint32_t uid)
{
	uid_t user = uid;
	flexco_acl_t acl = { .job = true, .job_uid = uid, .resv = true,
			     .users = &user, .user_cnt = 1 };

	(void) arg;
	return !events_publish_private(type, fields, &acl);
}

static int _h_load(void *arg, size_t max, flexco_rsvc_parse_cb parse,
		   void *parse_arg)
{
	(void) arg;
	return (int) statefile_load("reservations", state_path, max, parse,
				    parse_arg);
}

static int _h_save(void *arg, const char *text, char *why, size_t why_len)
{
	(void) arg;
#ifdef FLEXCO_TEST_HOOKS
	if (test_fail_saves && (test_fail_saves = _test_fail_file())) {
		snprintf(why, why_len, "test hook: saves fail");
		error("%s: reservations: state not saved: %s", plugin_type,
		      why);
		return -1;
	}
#endif
	return (statefile_write("reservations", state_path, text, why,
				why_len) == SLURM_SUCCESS) ? 0 : -1;
}

/* ---------------------------------------------------------------------- */
/* the plugin's interface (resv.h) */

static flexco_rsvc_t *_svc(void)
{
	flexco_rsvc_t *s;

	slurm_mutex_lock(&svc_lock);
	s = svc;
	slurm_mutex_unlock(&svc_lock);
	return s;
}

/* The service the HTTP requests of /v1/reservations go to (plugin/http.c
 * hands it to service/api_server); NULL before the first init. */
extern flexco_rsvc_t *flexco_resv_service(void)
{
	return _svc();
}

extern void flexco_resv_tick(void)
{
	flexco_rsvc_tick(_svc());
}

extern int flexco_resv_init(const flexco_conf_t *conf)
{
	const flexco_rsvc_host_t host = {
		.arg = NULL, .log = flexco_host_log, .now = flexco_host_now,
		.in_charge = flexco_host_in_charge, .user_uid = _h_user_uid,
		.admit = _h_admit, .create = _h_create, .update = _h_update,
		.remove = _h_remove, .slurm_ids = _h_slurm_ids,
		.slurm_resvs = _h_slurm_resvs, .job_submit = _h_job_submit,
		.job_state = _h_job_state, .job_phase = _h_job_phase,
		.job_release = _h_job_release, .job_cancel = _h_job_cancel,
		.publish = _h_publish,
		.load = _h_load, .save = _h_save,
	};
	flexco_rsvc_conf_t c = { 0 };
	uint32_t *uids;
	int i;

	slurm_mutex_lock(&svc_lock);
	if (!svc && !(svc = flexco_rsvc_create())) {
		slurm_mutex_unlock(&svc_lock);
		error("%s: reservations: out of memory", plugin_type);
		return SLURM_ERROR;
	}
	published_share = conf->published_share;
	min_fit = conf->min_fit;
	xfree(state_path);
	state_path = flexco_state_path(STATE_FILE);
	slurm_mutex_unlock(&svc_lock);

	uids = xcalloc(conf->daemon_uid_cnt + 1, sizeof(*uids));
	for (i = 0; i < conf->daemon_uid_cnt; i++)
		uids[i] = conf->daemon_uids[i];
	c.daemon_uids = uids;
	c.daemon_uid_cnt = conf->daemon_uid_cnt;
	c.act_for_root = conf->act_for_root;
	c.min_user_uid = conf->min_user_uid;
	c.slurm_user_id = slurm_conf.slurm_user_id;
	flexco_rsvc_open(svc, &c, &host);	/* loads the state */
	xfree(uids);
	return SLURM_SUCCESS;
}

extern void flexco_resv_fini(void)
{
	flexco_rsvc_close(_svc());	/* saves a last time */
}

extern json_t *flexco_resv_stats_json(void)
{
	json_t *root = flexco_rsvc_stats_json(_svc());

	if (!root)
		root = json_object();
	slurm_mutex_lock(&del_lock);
	json_object_set_new(root, "delete_lock", json_pack(
		"{s:I, s:I, s:I, s:I, s:I}",
		"count", (json_int_t) del_count,
		"jobs_examined_last", (json_int_t) del_examined_last,
		"jobs_examined_total", (json_int_t) del_examined_total,
		"last_usec", (json_int_t) del_usec_last,
		"max_usec", (json_int_t) del_usec_max));
	slurm_mutex_unlock(&del_lock);
	return root;
}
