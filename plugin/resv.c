/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  resv.c - tentative and confirmed Slurm reservations made for flexcod
 *****************************************************************************
 *  A flexco reservation is a real Slurm reservation named flexco_<id>,
 *  visible in `scontrol show res`, made for one user on a node count, a
 *  start and a duration.  It is tentative until flexcod confirms it, and
 *  deleted at its confirm deadline otherwise.  Mutations are idempotent
 *  under the client's Idempotency-Key and allowed to DaemonUsers only.
 *
 *  Locking: our own records are guarded by resv_lock.  The order is always
 *  resv_lock, then slurmctld's locks; no slurmctld hook ever takes
 *  resv_lock, so this cannot deadlock.  Disk I/O (the state file) and user
 *  lookups happen with resv_lock held but never under slurmctld's locks.
 *
 *  Crash safety: the next id and a "creating" record are written to disk
 *  before create_resv(); on restart a "creating" record whose Slurm
 *  reservation exists becomes tentative with an expired deadline (so it is
 *  deleted at once) and one whose reservation does not exist is dropped.
 *  The state file is saved and loaded through statefile.c (.prev kept,
 *  newest valid copy loaded).  With the current copy, Slurm reservations
 *  named flexco_* that no record knows are deleted; with an older copy or
 *  none, they are adopted and nothing is deleted (_reconcile), and ids
 *  stay above every flexco_<id> in Slurm.  A failed save makes every
 *  mutation 503 until a save succeeds (doc/reservations.md).
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
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
#include "core/capi_auth.h"
#include "core/capi_decode.h"
#include "core/capi_probe.h"
#include "core/capi_profile.h"
#include "service/capi_idem.h"
#include "service/capi_resv.h"
#include "events.h"
#include "jobs.h"
#include "resv.h"
#include "snapshot.h"
#include "statefile.h"

extern const char plugin_type[];

#define STATE_FILE "flexco_resv.json"
#define NAME_PREFIX "flexco_"
#define MAX_RECORDS 4096		/* live + recently ended */
#define KEEP_ENDED (24 * 3600)		/* forget ended records after */
#define IDEM_MAX 4096			/* remembered idempotency keys */
#define IDEM_PER_UID (IDEM_MAX / 4)	/* of which one uid may hold */
#define IDEM_KEEP (24 * 3600)
#define MAX_JOBS 64			/* part jobs per reservation */

/* The states and their rules: src/service/resv_rules.hpp. */
typedef enum {
	ST_CREATING = FLEXCO_RESV_CREATING,
	ST_TENTATIVE = FLEXCO_RESV_TENTATIVE,
	ST_CONFIRMED = FLEXCO_RESV_CONFIRMED,
	ST_ENDED = FLEXCO_RESV_ENDED,
	ST_DELETED = FLEXCO_RESV_DELETED,
	ST_EXPIRED = FLEXCO_RESV_EXPIRED,
	ST_COUNT = FLEXCO_RESV_STATES
} st_t;
static const char *st_names[ST_COUNT] = {
	"creating", "tentative", "confirmed", "ended", "deleted", "expired" };

typedef struct {
	uint32_t job_id;
	int part_index;
	int64_t submitted;
	bool started;		/* part_job_started published */
	bool ended;		/* part_job_ended published */
} rj_t;

typedef struct {
	uint64_t id;
	char *user;
	uint32_t uid;
	uint32_t nodes;
	char *partition;
	char *node_list;
	int64_t start, end, created, confirm_by, changed;
	st_t state;
	char *reason;
	char *owner;		/* the client's tag (its instance), or NULL */
	rj_t *jobs;		/* part jobs submitted into it */
	int job_cnt;
	/* A part-job submission under way, written to the state file before
	 * Slurm gets the job (sub_key NULL: none; "" when the request had no
	 * Idempotency-Key): whom it is for, its part index, when it began and
	 * the request it came in. */
	char *sub_key, *sub_target, *sub_digest;
	uint32_t sub_uid;
	int sub_part;
	int64_t sub_since;
} rv_t;

static pthread_mutex_t resv_lock = PTHREAD_MUTEX_INITIALIZER;
static const flexco_conf_t *rconf = NULL;
static char *state_path = NULL;
static rv_t *rvs = NULL;
static int rv_cnt = 0;
/* the Idempotency-Key cache (service/capi_idem.h), under resv_lock */
static flexco_idem_t *idem = NULL;
static uint64_t next_id = 1;
static uint64_t refused_busy = 0, refused_fit = 0;	/* under resv_lock */

/* The state file (under resv_lock): where it came from, saves. */
#define MAX_STATE_FILE (256 * 1024 * 1024)
static statefile_src_t loaded_from = STATEFILE_NONE;
static bool reconciled = false;	/* first tick compared state and Slurm */
static bool save_failing = false;	/* the last save failed */
static uint64_t saves = 0, save_errors = 0;
static uint64_t adopted = 0, unaccounted = 0;
static uint64_t ticks = 0;	/* agent passes (deadlines, orphans) this term */
/* _slurm_delete() under slurmctld's write locks (resv_lock held) */
static uint64_t del_count = 0, del_examined_total = 0;
static uint64_t del_usec_last = 0, del_usec_max = 0;
static uint32_t del_examined_last = 0;
static char last_save_error[256] = "";
static int64_t last_save_error_at = 0;

/* ---------------------------------------------------------------------- */
/* helpers */

static bool _live(const rv_t *r)
{
	return flexco_resv_live(r->state);
}

static bool _is_daemon(uid_t uid)
{
	int i;

	for (i = 0; i < rconf->daemon_uid_cnt; i++)
		if (rconf->daemon_uids[i] == uid)
			return true;
	return false;
}

static char *_name_of(uint64_t id)
{
	return xstrdup_printf(NAME_PREFIX "%" PRIu64, id);
}

static char *_err(const char *code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static char *_err(const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return flexco_error_json(code, msg);
}

/*
 * DaemonUsers act for ordinary users only: never for SlurmUser nor a
 * system account (uid below MinUserUid).  Returns 0 if uid may be acted
 * for, else 422 with the reason in *json_out.
 */
static int _user_refused(uid_t uid, const char *user, char **json_out)
{
	if (!uid && !rconf->act_for_root) {
		*json_out = _err("user_not_allowed",
				 "user '%s' is root (uid 0); flexco does not act for root (ActForRoot=no)",
				 user);
		return 422;
	}
	if (uid && (uid == slurm_conf.slurm_user_id)) {
		*json_out = _err("user_not_allowed",
				 "user '%s' (uid %u) is SlurmUser; flexco does not act for it",
				 user, uid);
		return 422;
	}
	if (uid && (uid < rconf->min_user_uid)) {
		*json_out = _err("user_not_allowed",
				 "user '%s' (uid %u) is below MinUserUid=%u; flexco does not act for system users",
				 user, uid, rconf->min_user_uid);
		return 422;
	}
	return 0;
}

/*
 * The core codec's view of a record (core/capi_decode.h: the one codec of
 * a reservation record, for the API and the state file), borrowing its
 * strings; jobs has room for r->job_cnt.
 */
static void _rv_view(const rv_t *r, flexco_state_resv_t *v,
		     flexco_state_job_t *jobs)
{
	int i;

	memset(v, 0, sizeof(*v));
	v->id = (int64_t) r->id;
	v->user = r->user;	/* NULL: adopted without Users=, written "" */
	v->uid = r->uid;
	v->nodes = r->nodes;
	v->start = r->start;
	v->end = r->end;
	v->created = r->created;
	v->changed = r->changed;
	v->state = (char *) st_names[r->state];
	v->partition = r->partition;
	v->node_list = r->node_list;
	v->reason = r->reason;
	v->owner = r->owner;
	v->confirm_by = r->confirm_by;
	for (i = 0; i < r->job_cnt; i++) {
		jobs[i].job_id = r->jobs[i].job_id;
		jobs[i].part_index = r->jobs[i].part_index;
		jobs[i].submitted = r->jobs[i].submitted;
		jobs[i].started = r->jobs[i].started;
		jobs[i].ended = r->jobs[i].ended;
	}
	v->jobs = r->job_cnt ? jobs : NULL;
	v->job_cnt = r->job_cnt;
	v->submit_key = r->sub_key;
	v->submit_target = r->sub_target;
	v->submit_digest = r->sub_digest;
	v->submit_uid = r->sub_uid;
	v->submit_part = r->sub_part;
	v->submit_since = r->sub_since;
}

/* The API's answer for one record (malloc'd JSON; NULL if out of memory). */
static char *_rv_text(const rv_t *r)
{
	flexco_state_job_t jobs[MAX_JOBS];
	flexco_state_resv_t v;

	_rv_view(r, &v, jobs);
	return flexco_encode_resv_record(&v);
}

static char *_dump(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(o);
	return s;
}

static rv_t *_find(uint64_t id)
{
	int i;

	for (i = 0; i < rv_cnt; i++)
		if (rvs[i].id == id)
			return &rvs[i];
	return NULL;
}

static void _rv_free(rv_t *r)
{
	xfree(r->user);
	xfree(r->partition);
	xfree(r->node_list);
	xfree(r->reason);
	xfree(r->owner);
	xfree(r->jobs);
	r->job_cnt = 0;
	xfree(r->sub_key);
	xfree(r->sub_target);
	xfree(r->sub_digest);
}

static void _sub_clear(rv_t *r)
{
	xfree(r->sub_key);
	xfree(r->sub_target);
	xfree(r->sub_digest);
}

static void _set_state(rv_t *r, st_t state, const char *reason)
{
	if (!flexco_resv_allowed(r->state, state)) {
		/* never expected: the table is every change resv.c makes */
		error("%s: reservation %s%" PRIu64 ": %s to %s is not a transition of the state machine; the record stays %s",
		      plugin_type, NAME_PREFIX, r->id, st_names[r->state],
		      st_names[state], st_names[r->state]);
		return;
	}
	r->state = state;
	r->changed = time(NULL);
	xfree(r->reason);
	if (reason)
		r->reason = xstrdup(reason);
}

/* Parse "/v1/reservations/<id>" id text: decimal, 1..2^53. */
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

/* ---------------------------------------------------------------------- */
/* idempotency */

/*
 * An Idempotency-Key no signer may send (doc/auth.md: 1 to 128 bytes of
 * visible ASCII, not "-"): 400 on every mutation.  The verifier refuses
 * such a header before this is reached; this keeps the cache's own bound.
 */
static int _idem_key_refused(const flexco_idem_req_t *rq, char **json_out)
{
	if (!rq || !rq->key || flexco_idempotency_key_valid(rq->key))
		return 0;
	*json_out = _err("invalid_request",
			 "Idempotency-Key must be 1 to %d visible ASCII characters without spaces, and not '-'",
			 FLEXCO_AUTH_MAX_IDEMPOTENCY_KEY);
	return 400;
}

/*
 * Keep a mutation's final answer under its key (resv_lock held).  Only
 * final answers are kept (service/idem_cache.hpp: 2xx, and 4xx but 409),
 * so that the daemon's retries of a non-final one are carried out.
 */
static void _idem_keep(const flexco_idem_req_t *rq, uid_t uid, int status,
		       const char *response)
{
	if (rq)
		(void) flexco_idem_store(idem, rq->key, uid, rq->method,
					 rq->target, rq->digest, status,
					 response, time(NULL));
}

/*
 * Answer a mutation from the cache (resv_lock held): the stored answer if
 * (uid, key) was used for this very request (method, target and body
 * digest), 422 idempotency_key_reused if it was used for another one
 * (nothing is done).  False: the key is new (or none), carry it out.
 */
static bool _idem_answer(const flexco_idem_req_t *rq, uid_t uid,
			 char **json_out, int *status)
{
	flexco_idem_entry_t e;
	bool same = false;
	int v;

	if (!rq || !rq->key)
		return false;
	v = flexco_idem_answer(idem, rq->key, uid, rq->method, rq->target,
			       rq->digest, time(NULL), &e, &same);
	if (v == FLEXCO_IDEM_NEW)
		return false;
	if (v == FLEXCO_IDEM_REUSED) {
		*json_out = _err("idempotency_key_reused",
				 "Idempotency-Key '%s' was used within %d hours for another request (%s %.200s%s); nothing was done",
				 rq->key, IDEM_KEEP / 3600, e.method,
				 e.target, same ? " with another body" : "");
		*status = 422;
		return true;
	}
	/* a copy for microhttpd (malloc) */
	*json_out = strdup(e.response ? e.response : "{}");
	*status = e.status;
	return true;
}

/* ---------------------------------------------------------------------- */
/* state file */

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

/* The saved keys, borrowed from the cache (valid while resv_lock is held
 * and the cache does not change). */
typedef struct {
	flexco_state_key_t *keys;
	size_t cap, n;
} key_fill_t;

/* flexco_idem_each(): one saved key */
static int _key_view(const flexco_idem_entry_t *e, void *arg)
{
	key_fill_t *f = arg;
	flexco_state_key_t *k;

	if (f->n >= f->cap)
		return 1;
	k = &f->keys[f->n++];
	k->key = (char *) e->key;
	k->uid = e->uid;
	k->status = e->status;
	k->response = (char *) e->response;
	k->when = e->when;
	k->method = (char *) e->method;
	k->target = (char *) e->target;
	k->digest = (char *) e->digest;
	return 0;
}

/* Encode the state (the one codec, core/capi_decode.h) and write it. */
static int _write_state(char *err, size_t err_len)
{
	flexco_resv_state_t st = { 0 };
	flexco_state_job_t *jobs;
	flexco_idem_stats_t is;
	key_fill_t keys = { 0 };
	char *text;
	int i, rc;

	/* the records and the saved keys, borrowed */
	st.next_id = (int64_t) next_id;
	st.resvs = xcalloc(rv_cnt + 1, sizeof(*st.resvs));
	jobs = xcalloc((size_t) (rv_cnt + 1) * MAX_JOBS, sizeof(*jobs));
	for (i = 0; i < rv_cnt; i++)
		_rv_view(&rvs[i], &st.resvs[i], &jobs[i * MAX_JOBS]);
	st.resv_cnt = rv_cnt;
	flexco_idem_stats(idem, time(NULL), &is);
	keys.cap = is.keys;
	keys.keys = xcalloc(keys.cap + 1, sizeof(*keys.keys));
	(void) flexco_idem_each(idem, time(NULL), _key_view, &keys);
	st.keys = keys.keys;
	st.key_cnt = keys.n;
	/* a record that cannot be written fails the save: left out, its
	 * reservation would be an orphan at the next start */
	text = flexco_encode_resv_state(&st, err, err_len);
	xfree(st.resvs);
	xfree(jobs);
	xfree(keys.keys);
	if (!text) {
		error("%s: reservations: %s", plugin_type, err);
		return SLURM_ERROR;
	}
	rc = statefile_write("reservations", state_path, text, err, err_len);
	free(text);
	return rc;
}

static int _save(void)
{
	char err[sizeof(last_save_error)] = "";
	int rc = SLURM_SUCCESS;

#ifdef FLEXCO_TEST_HOOKS
	if (test_fail_saves && (test_fail_saves = _test_fail_file())) {
		snprintf(err, sizeof(err), "test hook: saves fail");
		error("%s: reservations: state not saved: %s", plugin_type, err);
		rc = SLURM_ERROR;
	}
#endif
	if (rc == SLURM_SUCCESS)
		rc = _write_state(err, sizeof(err));
	if (rc != SLURM_SUCCESS) {
		save_errors++;
		save_failing = true;
		snprintf(last_save_error, sizeof(last_save_error), "%s", err);
		last_save_error_at = time(NULL);
	} else {
		saves++;
		if (save_failing)
			info("%s: reservations: %s saved again", plugin_type,
			     state_path);
		save_failing = false;
	}
	return rc;
}

/* A submission written ahead and not settled yet (resv_lock held). */
static bool _subs_pending(void)
{
	int i;

	for (i = 0; i < rv_cnt; i++)
		if (rvs[i].sub_key)
			return true;
	return false;
}

/*
 * May a mutation go ahead (resv_lock held)?  Not while the state recovered
 * from an older or no copy was not yet compared with Slurm's reservations,
 * nor while the state cannot be saved (a save is tried first): 503.
 */
static bool _mutable(char **json_out, int *status)
{
	if (!rconf || !flexco_ctld_in_charge()) {
		*json_out = flexco_error_json("not_in_charge",
			"this slurmctld is not the controller in charge (a standby, or stopping or handing control to another controller); ask the controller in charge");
		*status = 503;
		return false;
	}
	if (!reconciled && ((loaded_from == STATEFILE_PREV) ||
			    (loaded_from == STATEFILE_LOST) || _subs_pending())) {
		*json_out = flexco_error_json("recovering",
			"the reservation state is being recovered; retry in a few seconds");
		*status = 503;
		return false;
	}
	if (save_failing && (_save() != SLURM_SUCCESS)) {
		*json_out = _err("state_not_saved",
				 "the reservation state cannot be saved (%s); nothing is changed until it can",
				 last_save_error);
		*status = 503;
		return false;
	}
	return true;
}

/*
 * Save after a mutation (resv_lock held).  If that fails the answer becomes
 * 503: the change is made (and its answer kept under the Idempotency-Key)
 * but not on disk, and a retry gets the answer once a save succeeds.
 */
static int _saved(int status, char **json_out)
{
	if (_save() == SLURM_SUCCESS)
		return status;
	free(*json_out);
	*json_out = _err("state_not_saved",
			 "done, but the reservation state cannot be saved (%s); retry with the same Idempotency-Key",
			 last_save_error);
	return 503;
}

/* The state of a name the decoder accepted (so one of st_names). */
static bool _st_from_name(const char *s, st_t *out)
{
	int i;

	for (i = 0; s && (i < ST_COUNT); i++)
		if (!strcmp(s, st_names[i])) {
			*out = (st_t) i;
			return true;
		}
	return false;
}

static void _forget_all(void)
{
	int i;

	for (i = 0; i < rv_cnt; i++)
		_rv_free(&rvs[i]);
	rv_cnt = 0;
	flexco_idem_clear(idem);
	next_id = 1;
}

/*
 * One copy of the state file (statefile_parse_t), strictly: any malformed
 * record rejects the whole copy (a sign of corruption; the previous copy
 * is tried instead), and nothing is kept then.
 */
static int _parse_state(const char *text, size_t len, void *arg, char *why,
			size_t why_len)
{
	flexco_resv_state_t st;
	size_t i, j;

	(void) arg;
	/* the file, strictly (core/capi_decode.h); then into our records */
	if (flexco_decode_resv_state(text, len, MAX_RECORDS, MAX_JOBS, &st,
				     why, why_len))
		return -1;
	next_id = st.next_id;
	for (i = 0; i < st.resv_cnt; i++) {
		const flexco_state_resv_t *s = &st.resvs[i];
		rv_t r = { 0 };

		r.id = s->id;
		r.user = xstrdup(s->user);
		r.uid = s->uid;
		r.nodes = s->nodes;
		r.start = s->start;
		r.end = s->end;
		if (!_st_from_name(s->state, &r.state)) {
			snprintf(why, why_len, "reservation %" PRId64 ": state '%s'",
				 s->id, s->state);
			_rv_free(&r);
			flexco_resv_state_free(&st);
			_forget_all();	/* nothing kept (loads start empty) */
			return -1;
		}
		r.created = s->created;
		r.changed = s->changed;
		r.confirm_by = s->confirm_by;
		r.partition = xstrdup(s->partition);
		r.node_list = xstrdup(s->node_list);
		r.reason = xstrdup(s->reason);
		r.owner = xstrdup(s->owner);
		if (s->job_cnt)
			r.jobs = xcalloc(MAX_JOBS, sizeof(rj_t));
		for (j = 0; j < s->job_cnt; j++) {
			r.jobs[j].job_id = s->jobs[j].job_id;
			r.jobs[j].part_index = s->jobs[j].part_index;
			r.jobs[j].submitted = s->jobs[j].submitted;
			r.jobs[j].started = s->jobs[j].started;
			r.jobs[j].ended = s->jobs[j].ended;
		}
		r.job_cnt = s->job_cnt;
		if (s->submit_key) {
			r.sub_key = xstrdup(s->submit_key);
			r.sub_target = xstrdup(s->submit_target);
			r.sub_digest = xstrdup(s->submit_digest);
			r.sub_uid = s->submit_uid;
			r.sub_part = s->submit_part;
			r.sub_since = s->submit_since;
		}
		rvs[rv_cnt++] = r;
		if ((uint64_t) r.id >= next_id)
			next_id = r.id + 1;
	}
	for (i = 0; i < st.key_cnt; i++) {
		const flexco_state_key_t *k = &st.keys[i];
		flexco_idem_entry_t e = {
			.key = k->key, .uid = k->uid, .status = k->status,
			.response = k->response, .when = k->when,
			.method = k->method, .target = k->target,
			.digest = k->digest,
		};

		/* answers that are not final (saved by older versions), and
		 * keys no signer can send any more (older versions took any
		 * length on confirm, modify and delete), go */
		if (!flexco_idempotency_key_valid(k->key))
			continue;
		flexco_idem_put(idem, &e, time(NULL));
	}
	flexco_resv_state_free(&st);
	return 0;
}

static void _load(void)
{
	loaded_from = statefile_load("reservations", state_path,
				     MAX_STATE_FILE, _parse_state, NULL);
	reconciled = false;
	if (loaded_from == STATEFILE_PREV) {
		/* the lost save may have handed out one more id */
		next_id++;
	} else if (loaded_from == STATEFILE_LOST) {
		/*
		 * Ids above every one ever handed out: the counter started
		 * at 1 and grew by far less than one a second.
		 */
		_forget_all();
		next_id = time(NULL);
	}
	if (loaded_from != STATEFILE_NONE)
		info("%s: reservations: %d records from the %s copy of %s (next id %" PRIu64 ")",
		     plugin_type, rv_cnt, statefile_src_name(loaded_from),
		     state_path, next_id);
	if ((loaded_from == STATEFILE_PREV) || (loaded_from == STATEFILE_LOST))
		error("%s: reservations: the state is not the newest: Slurm's flexco_* reservations will be compared with it and adopted, never deleted; mutations wait for that (503)",
		      plugin_type);
}

/* ---------------------------------------------------------------------- */
/* Slurm calls: each takes exactly the locks of Slurm's own RPC handler */

static uint64_t _usec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int _slurm_create(rv_t *r, char **node_list, uint32_t *got)
{
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = READ_LOCK,
			.node = WRITE_LOCK, .part = READ_LOCK };
	resv_desc_msg_t *d = xmalloc(sizeof(*d));
	slurmctld_resv_t *made;
	char *name = _name_of(r->id), *err_msg = NULL;
	int rc;

	slurm_init_resv_desc_msg(d);
	d->name = xstrdup(name);
	d->users = xstrdup(r->user);
	FLEXCO_RESV_SET_NODE_CNT(d, r->nodes);
	d->start_time = r->start;
	d->end_time = r->end;
	d->duration = NO_VAL;
	d->flags = 0;
	if (r->partition)
		d->partition = xstrdup(r->partition);

	*got = 0;
	lock_slurmctld(lk);
	rc = flexco_create_resv(d, &err_msg);
	if ((rc == SLURM_SUCCESS) && (made = find_resv_name(name))) {
		*node_list = xstrdup(made->node_list);
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
	return rc;
}

static int _slurm_update(rv_t *r, int64_t start, int64_t end, uint32_t nodes,
			 char **node_list, uint32_t *got)
{
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = READ_LOCK,
			.node = WRITE_LOCK, .part = READ_LOCK };
	resv_desc_msg_t *d = xmalloc(sizeof(*d));
	slurmctld_resv_t *made;
	char *name = _name_of(r->id), *err_msg = NULL;
	int rc;

	slurm_init_resv_desc_msg(d);
	d->name = xstrdup(name);
	if (start != r->start)
		d->start_time = start;
	if (end != r->end)
		d->end_time = end;
	if (nodes != r->nodes)
		FLEXCO_RESV_SET_NODE_CNT(d, nodes);

	*got = 0;
	lock_slurmctld(lk);
	rc = flexco_update_resv(d, &err_msg);
	if ((rc == SLURM_SUCCESS) && (made = find_resv_name(name))) {
		*node_list = xstrdup(made->node_list);
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
	return rc;
}

/*
 * Deleting a Slurm reservation only unlinks its pending jobs (they would
 * then run anywhere) and is refused while one runs.  A flexco_* reservation
 * holds nothing but part jobs, which must never outlive it, so they are
 * cancelled first, under the same locks as Slurm's kill RPC (config read,
 * job and node write, federation read), and the reservation is deleted
 * within the same lock hold.
 *
 * The part jobs are the ones the record lists (r->jobs, at most MAX_JOBS):
 * each is looked up by id in Slurm's job hash, so the plugin's share of
 * the write lock hold grows with the reservation's own jobs, not with the
 * queue (delete_resv() itself still walks the job list twice, comparing
 * pointers: Slurm's cost, as for scontrol delete reservation).  Only an
 * orphan, a flexco_* reservation without a record (found when the state is
 * recovered), has no such list: for it the job list is walked once.  What
 * happened is logged after the locks are released.
 */
static int _slurm_delete(uint64_t id, const rj_t *jobs, int job_cnt,
			 bool orphan)
{
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = WRITE_LOCK,
			.node = WRITE_LOCK, .fed = READ_LOCK };
	reservation_name_msg_t msg = { .name = _name_of(id) };
	uint32_t *kill_ids = NULL;
	int *kill_rc = NULL;
	int kill_cnt = 0, kill_cap = 0, i, rc;
	uint32_t examined = 0;
	job_record_t *job_ptr;
	flexco_list_itr_t it;
	uint64_t t0, held;

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
		for (i = 0; i < job_cnt; i++) {
			examined++;
			job_ptr = find_job_record(jobs[i].job_id);
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

	del_count++;
	del_examined_last = examined;
	del_examined_total += examined;
	del_usec_last = held;
	if (held > del_usec_max)
		del_usec_max = held;
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
	return rc;
}

/* Names of Slurm's flexco_* reservations (node read lock), id list. */
static uint64_t *_slurm_flexco_ids(int *count)
{
	slurmctld_lock_t lk = { .node = READ_LOCK };
	slurmctld_resv_t *r;
	flexco_list_itr_t it;
	uint64_t *ids, id;
	int n = 0, cap;

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
	*count = n;
	return ids;
}

/* Raise next_id above every flexco_<id> reservation in Slurm. */
static void _id_floor(const uint64_t *ids, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (ids[i] >= next_id)
			next_id = ids[i] + 1;
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
	rj_t *jobs;
	int job_cnt;
} sres_t;

static void _sres_free(sres_t *s, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		xfree(s[i].users);
		xfree(s[i].node_list);
		xfree(s[i].partition);
		xfree(s[i].jobs);
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
		s->uid = (r->user_cnt > 0) ? r->user_list[0] : NO_VAL;
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
			if (!s->jobs)
				s->jobs = xcalloc(MAX_JOBS, sizeof(rj_t));
			s->jobs[s->job_cnt].job_id = job_ptr->job_id;
			s->jobs[s->job_cnt++].submitted = job_ptr->details ?
				job_ptr->details->submit_time : 0;
			break;
		}
	}
	list_iterator_destroy(it);
	unlock_slurmctld(lk);
	*count = n;
	return out;
}

/* Add Slurm's jobs in the reservation that r does not list yet. */
/* Add job to r's part jobs unless known or full; the added one or NULL. */
static rj_t *_adopt_job(rv_t *r, const rj_t *job)
{
	int k;

	for (k = 0; k < r->job_cnt; k++)
		if (r->jobs[k].job_id == job->job_id)
			return NULL;
	if (r->job_cnt >= MAX_JOBS)
		return NULL;
	if (!r->jobs)
		r->jobs = xcalloc(MAX_JOBS, sizeof(rj_t));
	r->jobs[r->job_cnt] = *job;
	return &r->jobs[r->job_cnt++];
}

static void _merge_jobs(rv_t *r, const sres_t *s)
{
	int i;

	for (i = 0; i < s->job_cnt; i++) {
		if (!_adopt_job(r, &s->jobs[i]))
			continue;
		info("%s: reservations: JobId=%u in %s%" PRIu64 " adopted as a part job",
		     plugin_type, s->jobs[i].job_id, NAME_PREFIX, r->id);
	}
}

/*
 * First tick after a start (resv_lock held).  With the current copy of the
 * state nothing is to do.  Otherwise (previous copy, no valid copy, or no
 * file while Slurm has flexco_* reservations) every flexco_* reservation
 * in Slurm is accounted for: one the state knows as live stays (a
 * tentative or creating record of the previous copy becomes confirmed, as
 * its confirmation may be what the lost save held), one it does not know
 * is adopted as confirmed from Slurm's own record, and its jobs become its
 * part jobs.  Nothing is deleted; ids continue above every one seen.
 */
static void _reconcile(void)
{
	sres_t *sr;
	int n, i;

	reconciled = true;
	if (loaded_from == STATEFILE_CURRENT)
		return;
	sr = _slurm_flexco_resvs(&n);
	if ((loaded_from == STATEFILE_NONE) && n) {
		error("%s: reservations: no state file, but Slurm has %d flexco_* reservations: the state was lost",
		      plugin_type, n);
		loaded_from = STATEFILE_LOST;
		if (next_id < (uint64_t) time(NULL))
			next_id = time(NULL);
	}
	for (i = 0; i < n; i++) {
		sres_t *s = &sr[i];
		rv_t *r = _find(s->id);

		if (s->id >= next_id)
			next_id = s->id + 1;
		if (r && _live(r)) {
			if ((r->state == ST_CREATING) ||
			    (r->state == ST_TENTATIVE)) {
				error("%s: reservations: %s%" PRIu64 " was %s in the older state copy; kept as confirmed",
				      plugin_type, NAME_PREFIX, r->id,
				      st_names[r->state]);
				_set_state(r, ST_CONFIRMED,
					   "recovered from an older state copy: kept as confirmed");
			}
			_merge_jobs(r, s);
			continue;
		}
		if (!r && (rv_cnt >= MAX_RECORDS)) {
			unaccounted++;
			error("%s: reservations: %s%" PRIu64 " is unaccounted for (record limit %d reached); left to the admin, never deleted by the plugin",
			      plugin_type, NAME_PREFIX, s->id, MAX_RECORDS);
			continue;
		}
		if (r)
			_rv_free(r);
		else
			r = &rvs[rv_cnt++];
		memset(r, 0, sizeof(*r));
		r->id = s->id;
		r->user = xstrdup(s->users);
		r->uid = s->uid;
		r->nodes = s->nodes;
		r->node_list = xstrdup(s->node_list);
		r->partition = xstrdup(s->partition);
		r->start = s->start;
		r->end = s->end;
		r->created = time(NULL);
		_set_state(r, ST_CONFIRMED,
			   "adopted from Slurm's reservation list: the state file was lost");
		adopted++;
		error("%s: reservations: %s%" PRIu64 " adopted from Slurm (users %s, %u nodes %s, %" PRId64 " to %" PRId64 ") as confirmed: the state file did not account for it",
		      plugin_type, NAME_PREFIX, r->id, r->user ? r->user : "?",
		      r->nodes, r->node_list ? r->node_list : "?", r->start,
		      r->end);
		_merge_jobs(r, s);
	}
	_sres_free(sr, n);
	info("%s: reservations: state recovered (%s copy): %d flexco_* reservations in Slurm, %" PRIu64 " adopted, %" PRIu64 " unaccounted; next id %" PRIu64,
	     plugin_type, statefile_src_name(loaded_from), n, adopted,
	     unaccounted, next_id);
}

/*
 * First tick of a term (resv_lock held): a part-job submission written
 * ahead but never completed (slurmctld died between the save and the
 * answer) is settled against Slurm.  A job that Slurm has in the
 * reservation and the record does not know is that submission's: it
 * becomes the record's part job, with the submission's part index, and
 * the answer is kept under the request's Idempotency-Key, so flexcod's
 * retry gets that job instead of a second one.  No such job: Slurm never
 * got it; the submission is forgotten and a retry submits it.
 */
static void _adopt_submissions(void)
{
	sres_t *sr;
	int n = 0, i, j;
	bool any = false;

	for (i = 0; i < rv_cnt; i++)
		if (rvs[i].sub_key)
			any = true;
	if (!any)
		return;
	sr = _slurm_flexco_resvs(&n);
	for (i = 0; i < rv_cnt; i++) {
		rv_t *r = &rvs[i];
		sres_t *s = NULL;
		uint32_t got = 0;

		if (!r->sub_key)
			continue;
		for (j = 0; j < n; j++)
			if (sr[j].id == r->id)
				s = &sr[j];
		for (j = 0; s && (j < s->job_cnt); j++) {
			rj_t *added = _adopt_job(r, &s->jobs[j]);

			if (!added)
				continue;
			added->part_index = r->sub_part;
			r->changed = time(NULL);
			got = s->jobs[j].job_id;
			error("%s: reservations: JobId=%u in %s%" PRIu64 " is the part job (part %d) of a submission that a restart interrupted: adopted",
			      plugin_type, got, NAME_PREFIX, r->id, r->sub_part);
		}
		if (got && r->sub_key[0]) {
			char *resp = flexco_encode_part_job_submitted(
				got, (int64_t) r->id, r->sub_part);

			if (resp)
				(void) flexco_idem_store(idem, r->sub_key,
							 r->sub_uid, "POST",
							 r->sub_target,
							 r->sub_digest, 201,
							 resp, time(NULL));
			free(resp);
		} else if (!got) {
			info("%s: reservations: a part-job submission into %s%" PRIu64 " was interrupted by a restart before Slurm had the job; forgotten",
			     plugin_type, NAME_PREFIX, r->id);
		}
		_sub_clear(r);
	}
	_sres_free(sr, n);
}

static bool _in(const uint64_t *ids, int n, uint64_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* ---------------------------------------------------------------------- */
/* admission */

static int _check_free(const char *partition, int64_t start, int64_t dur,
		       uint32_t nodes, char **json_out)
{
	flexco_snapshot_t *snap = snapshot_take();
	char code[64], err[512];
	int64_t free_nodes = 0;
	int status;

	status = flexco_min_free_nodes(snap, partition, start, dur,
				       rconf->published_share, &free_nodes,
				       code, sizeof(code), err, sizeof(err));
	snapshot_free(snap);
	if (status != 200) {
		*json_out = flexco_error_json(code, err);
		return status;
	}
	if (free_nodes < nodes) {
		*json_out = _err("not_available",
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

	if (!(rconf->min_fit > 0.0))
		return 200;
	snap = snapshot_take();
	status = flexco_slot_fit(snap, partition, start, dur, nodes,
				 rconf->published_share, &fit, verdict,
				 sizeof(verdict), code, sizeof(code), err,
				 sizeof(err));
	snapshot_free(snap);
	if (status != 200) {
		*json_out = flexco_error_json(code, err);
		return status;
	}
	if (fit < rconf->min_fit) {
		*json_out = _err("low_fit",
				 "the slot's fitness %.3f (%s) is below MinFit %.2f: it would delay planned local jobs",
				 fit, verdict, rconf->min_fit);
		return 409;
	}
	return 200;
}

/* ---------------------------------------------------------------------- */
/* requests */

extern int flexco_resv_create(uid_t uid, const flexco_idem_req_t *rq,
			      const char *body, size_t len, char **json_out)
{
	flexco_resv_create_t req = { 0 };
	int64_t nodes, start, dur, confirm, now = time(NULL);
	const char *user, *partition = NULL, *owner = NULL;
	char *node_list = NULL;
	uid_t ruid;
	uint32_t got = 0;
	rv_t *r;
	int status = 400, rc;

	if (!_is_daemon(uid)) {
		*json_out = _err("forbidden", "uid %u is not in DaemonUsers", uid);
		return 403;
	}
	if ((status = _idem_key_refused(rq, json_out)))
		return status;
	status = 400;
	slurm_mutex_lock(&resv_lock);
	if (_idem_answer(rq, uid, json_out, &status)) {
		slurm_mutex_unlock(&resv_lock);
		return status;
	}
	slurm_mutex_unlock(&resv_lock);

	/* the body, strictly (core/capi_decode.h) */
	if ((status = flexco_decode_resv_create(body, len, now, &req, json_out)))
		return status;
	user = req.user;
	partition = req.partition;
	owner = req.owner;
	nodes = req.nodes;
	start = req.start;
	dur = req.duration;
	confirm = req.confirm_within;
	if (uid_from_string(user, &ruid) != SLURM_SUCCESS) {
		*json_out = _err("bad_request", "unknown user '%s'", user);
		goto bad;
	}
	if ((status = _user_refused(ruid, user, json_out)))
		goto out;
	if (start < now)
		start = now;

	status = _check_free(partition, start, dur, nodes, json_out);
	if (status == 200)
		status = _check_fit(partition, start, dur, nodes, json_out);
	if (status != 200) {
		slurm_mutex_lock(&resv_lock);
		if ((status == 409) && *json_out &&
		    strstr(*json_out, "\"low_fit\""))
			refused_fit++;
		else if (status == 409)
			refused_busy++;
		slurm_mutex_unlock(&resv_lock);
		goto out;
	}

	slurm_mutex_lock(&resv_lock);
	if (_idem_answer(rq, uid, json_out, &status)) {	/* raced */
		slurm_mutex_unlock(&resv_lock);
		goto out;
	}
	if (!_mutable(json_out, &status)) {
		slurm_mutex_unlock(&resv_lock);
		goto out;
	}
	if (rv_cnt >= MAX_RECORDS) {
		slurm_mutex_unlock(&resv_lock);
		*json_out = _err("too_many", "%d reservation records kept; delete some",
				 MAX_RECORDS);
		status = 503;
		goto out;
	}
	/* Write ahead: the id and a "creating" record reach the disk first. */
	{
		int n;
		uint64_t *ids = _slurm_flexco_ids(&n);

		_id_floor(ids, n);	/* never an id Slurm already has */
		xfree(ids);
	}
	r = &rvs[rv_cnt++];
	memset(r, 0, sizeof(*r));
	r->id = next_id++;
	r->user = xstrdup(user);
	r->uid = ruid;
	r->nodes = nodes;
	r->partition = xstrdup(partition);
	r->owner = xstrdup(owner);
	r->start = start;
	r->end = start + dur;
	r->created = now;
	r->confirm_by = now + confirm;
	_set_state(r, ST_CREATING, NULL);
	if (_save() != SLURM_SUCCESS) {
		_rv_free(r);
		rv_cnt--;
		slurm_mutex_unlock(&resv_lock);
		*json_out = _err("state_not_saved",
				 "the reservation state cannot be saved (%s); nothing was made",
				 last_save_error);
		status = 503;
		goto out;
	}

	rc = _slurm_create(r, &node_list, &got);
	if ((rc == SLURM_SUCCESS) && (got != r->nodes)) {
		/* Slurm gave fewer nodes than asked: undo, refuse */
		(void) _slurm_delete(r->id, r->jobs, r->job_cnt, false);
		xfree(node_list);
		*json_out = _err("not_available",
				 "Slurm could only reserve %u of the %u nodes",
				 got, r->nodes);
		status = 409;
		_rv_free(r);
		rv_cnt--;
	} else if (rc == ESLURM_NODES_BUSY) {
		/*
		 * Enough nodes are free at every moment of the window, but
		 * not the same ones throughout: Slurm reserves whole nodes
		 * for the whole window.  A lack of capacity like the one
		 * above, so the same code (flexcod re-plans around it).
		 */
		*json_out = _err("not_available",
				 "Slurm has no %u nodes free together for the whole window: %s",
				 r->nodes, slurm_strerror(rc));
		status = 409;
		refused_busy++;
		_rv_free(r);
		rv_cnt--;
	} else if (rc != SLURM_SUCCESS) {
		*json_out = _err("refused", "Slurm refused the reservation: %s",
				 slurm_strerror(rc));
		status = 409;
		_rv_free(r);
		rv_cnt--;
	} else {
		r->node_list = node_list;
		_set_state(r, ST_TENTATIVE, NULL);
		*json_out = _rv_text(r);
		status = 201;
		info("%s: reservation %s" "%" PRIu64 " for %s: %u nodes (%s) from %" PRId64 " to %" PRId64 ", tentative until %" PRId64,
		     plugin_type, NAME_PREFIX, r->id, r->user, r->nodes,
		     r->node_list, r->start, r->end, r->confirm_by);
	}
	_idem_keep(rq, uid, status, *json_out);
	status = _saved(status, json_out);
	slurm_mutex_unlock(&resv_lock);
out:
	flexco_resv_create_free(&req);
	return status;
bad:
	flexco_resv_create_free(&req);
	return 400;
}

/* Look up id for a mutation: 403 / 400 / 404 answered here. */
static rv_t *_lookup(uid_t uid, const char *id_s, bool mutate,
		     char **json_out, int *status)
{
	uint64_t id;
	rv_t *r;

	if (mutate && !_is_daemon(uid)) {
		*json_out = _err("forbidden", "uid %u is not in DaemonUsers", uid);
		*status = 403;
		return NULL;
	}
	if (_parse_id(id_s, &id)) {
		*json_out = _err("bad_request", "reservation id must be a positive integer");
		*status = 400;
		return NULL;
	}
	r = _find(id);
	if (!r || (!mutate && !_is_daemon(uid) && (r->uid != uid))) {
		*json_out = _err("not_found", "no reservation %" PRIu64, id);
		*status = 404;
		return NULL;
	}
	return r;
}

extern int flexco_resv_confirm(uid_t uid, const flexco_idem_req_t *rq,
			       const char *id, char **json_out)
{
	rv_t *r;
	int status = 200;

	if (!_is_daemon(uid)) {	/* before anything else, a save retry too */
		*json_out = _err("forbidden", "uid %u is not in DaemonUsers", uid);
		return 403;
	}
	if ((status = _idem_key_refused(rq, json_out)))
		return status;
	status = 200;
	slurm_mutex_lock(&resv_lock);
	if (_idem_answer(rq, uid, json_out, &status))
		goto out;
	if (!_mutable(json_out, &status))
		goto out;
	if (!(r = _lookup(uid, id, true, json_out, &status)))
		goto out;
	if (r->state == ST_TENTATIVE) {
		_set_state(r, ST_CONFIRMED, NULL);
		info("%s: reservation %s%" PRIu64 " confirmed", plugin_type,
		     NAME_PREFIX, r->id);
	}
	if (r->state == ST_CONFIRMED) {
		*json_out = _rv_text(r);
	} else {
		*json_out = _err("gone", "reservation %" PRIu64 " is %s", r->id,
				 st_names[r->state]);
		status = 409;
	}
	_idem_keep(rq, uid, status, *json_out);
	status = _saved(status, json_out);
out:
	slurm_mutex_unlock(&resv_lock);
	return status;
}

extern int flexco_resv_modify(uid_t uid, const flexco_idem_req_t *rq,
			      const char *id, const char *body, size_t len,
			      char **json_out)
{
	flexco_resv_modify_t want;
	int64_t start, nodes, dur, now = time(NULL);
	char *node_list = NULL;
	uint32_t got = 0;
	rv_t *r;
	int status = 200, rc;

	if (!_is_daemon(uid)) {	/* before anything else, a save retry too */
		*json_out = _err("forbidden", "uid %u is not in DaemonUsers", uid);
		return 403;
	}
	if ((status = _idem_key_refused(rq, json_out)))
		return status;
	status = 200;
	slurm_mutex_lock(&resv_lock);
	if (_idem_answer(rq, uid, json_out, &status))
		goto out;
	if (!_mutable(json_out, &status))
		goto out;
	if (!(r = _lookup(uid, id, true, json_out, &status)))
		goto out;
	/* the body, strictly (core/capi_decode.h); what it leaves out stays */
	want.start = r->start;
	want.nodes = r->nodes;
	want.duration = r->end - r->start;
	if ((status = flexco_decode_resv_modify(body, len, now, &want,
						json_out)))
		goto out;
	status = 200;
	start = want.start;
	nodes = want.nodes;
	dur = want.duration;
	if (!_live(r)) {
		*json_out = _err("gone", "reservation %" PRIu64 " is %s", r->id,
				 st_names[r->state]);
		status = 409;
		goto store;
	}
	rc = _slurm_update(r, start, start + dur, nodes, &node_list, &got);
	if ((rc == SLURM_SUCCESS) && (got != nodes)) {
		/* Slurm silently gave another count: put it back, refuse */
		rv_t want = *r;
		char *nl2 = NULL;
		uint32_t got2 = 0;

		want.start = start;
		want.end = start + dur;
		want.nodes = got;
		xfree(node_list);
		(void) _slurm_update(&want, r->start, r->end, r->nodes, &nl2,
				     &got2);
		xfree(nl2);
		*json_out = _err("not_available",
				 "Slurm could only give %u of the %u nodes; reservation unchanged",
				 got, (uint32_t) nodes);
		status = 409;
		goto store;
	}
	if (rc == ESLURM_NODES_BUSY) {	/* as in create */
		*json_out = _err("not_available",
				 "Slurm has no %u nodes free together for the whole new window: %s; reservation unchanged",
				 (uint32_t) nodes, slurm_strerror(rc));
		status = 409;
		goto store;
	}
	if (rc != SLURM_SUCCESS) {
		*json_out = _err("refused", "Slurm refused the change: %s",
				 slurm_strerror(rc));
		status = 409;
		goto store;
	}
	r->start = start;
	r->end = start + dur;
	r->nodes = nodes;
	xfree(r->node_list);
	r->node_list = node_list;
	r->changed = time(NULL);
	info("%s: reservation %s%" PRIu64 " now %u nodes (%s) from %" PRId64 " to %" PRId64,
	     plugin_type, NAME_PREFIX, r->id, r->nodes, r->node_list,
	     r->start, r->end);
	*json_out = _rv_text(r);
store:
	_idem_keep(rq, uid, status, *json_out);
	status = _saved(status, json_out);
out:
	slurm_mutex_unlock(&resv_lock);
	return status;
}

extern int flexco_resv_delete(uid_t uid, const flexco_idem_req_t *rq,
			      const char *id, char **json_out)
{
	rv_t *r;
	int status = 200, rc;

	if (!_is_daemon(uid)) {	/* before anything else, a save retry too */
		*json_out = _err("forbidden", "uid %u is not in DaemonUsers", uid);
		return 403;
	}
	if ((status = _idem_key_refused(rq, json_out)))
		return status;
	status = 200;
	slurm_mutex_lock(&resv_lock);
	if (_idem_answer(rq, uid, json_out, &status))
		goto out;
	if (!_mutable(json_out, &status))
		goto out;
	if (!(r = _lookup(uid, id, true, json_out, &status)))
		goto out;
	if (_live(r)) {
		rc = _slurm_delete(r->id, r->jobs, r->job_cnt, false);
		if ((rc != SLURM_SUCCESS) &&
		    (rc != ESLURM_RESERVATION_INVALID)) {
			*json_out = _err("refused", "Slurm refused to delete it: %s",
					 slurm_strerror(rc));
			status = 409;
			goto store;
		}
		_set_state(r, ST_DELETED, "deleted by request");
		info("%s: reservation %s%" PRIu64 " deleted", plugin_type,
		     NAME_PREFIX, r->id);
	}
	*json_out = _rv_text(r);
store:
	_idem_keep(rq, uid, status, *json_out);
	status = _saved(status, json_out);
out:
	slurm_mutex_unlock(&resv_lock);
	return status;
}

extern int flexco_resv_get(uid_t uid, const char *id, char **json_out)
{
	int status = 200;
	rv_t *r;

	slurm_mutex_lock(&resv_lock);
	if ((r = _lookup(uid, id, false, json_out, &status)))
		*json_out = _rv_text(r);
	slurm_mutex_unlock(&resv_lock);
	return status;
}

extern int flexco_resv_list(uid_t uid, char **json_out)
{
	bool all = _is_daemon(uid);
	flexco_state_resv_t *views;
	flexco_state_job_t *jobs;
	int i, n = 0;

	slurm_mutex_lock(&resv_lock);
	views = xcalloc(rv_cnt + 1, sizeof(*views));
	jobs = xcalloc((size_t) (rv_cnt + 1) * MAX_JOBS, sizeof(*jobs));
	for (i = 0; i < rv_cnt; i++)
		if (all || (rvs[i].uid == uid)) {
			_rv_view(&rvs[i], &views[n], &jobs[n * MAX_JOBS]);
			n++;
		}
	*json_out = flexco_encode_resv_list(views, n);
	slurm_mutex_unlock(&resv_lock);
	xfree(views);
	xfree(jobs);
	return *json_out ? 200 : 500;
}

/*
 * POST /v1/reservations/{id}/jobs: a part job of the reservation's user in
 * it.  resv_lock is held across the submission (then slurmctld's locks,
 * taken and released by flexco_job_submit()), so a retry with the same
 * Idempotency-Key waits for the first one and replays its answer.
 */
extern int flexco_resv_job_submit(uid_t uid, const flexco_idem_req_t *rq,
				  const char *id, const char *body, size_t len,
				  char **json_out)
{
	flexco_jobspec_t spec = { 0 };
	int64_t now = time(NULL), from, room, nodes, minutes;
	char *name = NULL, *err_msg = NULL;
	uint32_t job_id = 0;
	rv_t *r;
	int status = 201, rc;

	if (!_is_daemon(uid)) {
		*json_out = _err("forbidden", "uid %u is not in DaemonUsers", uid);
		return 403;
	}
	if ((status = _idem_key_refused(rq, json_out)))
		return status;
	status = 201;
	slurm_mutex_lock(&resv_lock);
	if (_idem_answer(rq, uid, json_out, &status))
		goto out;
	if (!_mutable(json_out, &status))
		goto out;
	if (!(r = _lookup(uid, id, true, json_out, &status)))
		goto out;
	if ((status = _user_refused(r->uid, r->user ? r->user : "?",
				     json_out)))
		goto out;
	if ((status = flexco_decode_jobspec(body, len, &spec, json_out)))
		goto out;
	status = 201;
	nodes = spec.nodes ? spec.nodes : r->nodes;
	if (nodes > r->nodes) {
		*json_out = _err("bad_request", "'nodes' %" PRId64 " is more than the reservation's %u",
				 nodes, r->nodes);
		status = 400;
		goto out;
	}
	if (!_live(r) || (r->state == ST_CREATING) || (r->end <= now)) {
		*json_out = _err("gone", "reservation %" PRIu64 " is %s", r->id,
				 (r->end <= now) ? "ended" : st_names[r->state]);
		status = 409;
		goto store;
	}
	from = (r->start > now) ? r->start : now;
	room = r->end - from;
	if (spec.time_limit) {
		minutes = (spec.time_limit + 59) / 60;
		if (minutes * 60 > room) {
			*json_out = _err("bad_request",
					 "'time_limit' %" PRId64 " s (%" PRId64 " min) does not fit in the %" PRId64 " s left of the reservation",
					 spec.time_limit, minutes, room);
			status = 400;
			goto out;
		}
	} else if ((minutes = room / 60) < 1) {
		*json_out = _err("gone", "reservation %" PRIu64 " has less than a minute left",
				 r->id);
		status = 409;
		goto store;
	}
	if (r->job_cnt >= MAX_JOBS) {
		*json_out = _err("too_many", "%d jobs already submitted into reservation %" PRIu64,
				 MAX_JOBS, r->id);
		status = 409;
		goto store;
	}

	/*
	 * Write ahead: the submission reaches the disk before Slurm has the
	 * job, so a crash between the two leaves a job that the next start
	 * adopts, and answers a retry with (_adopt_submissions), never a job
	 * the plugin does not know.
	 */
	r->sub_key = xstrdup((rq && rq->key) ? rq->key : "");
	r->sub_target = xstrdup((rq && rq->key && rq->target) ? rq->target : "");
	r->sub_digest = xstrdup((rq && rq->key && rq->digest) ? rq->digest : "");
	r->sub_uid = uid;
	r->sub_part = (spec.part_index >= 0) ? spec.part_index : 0;
	r->sub_since = now;
	if (_save() != SLURM_SUCCESS) {
		_sub_clear(r);
		*json_out = _err("state_not_saved",
				 "the reservation state cannot be saved (%s); nothing was submitted",
				 last_save_error);
		status = 503;
		goto out;
	}
	name = _name_of(r->id);
	rc = flexco_job_submit(&spec, name, r->id, r->uid, nodes, minutes,
			       r->partition, &job_id, &err_msg);
#ifdef FLEXCO_TEST_HOOKS
	/* test_plugin_submit_crash.py: saves fail from here on */
	test_fail_saves = _test_fail_file();
#endif
	_sub_clear(r);
	if (rc != SLURM_SUCCESS) {
		*json_out = _err("refused", "Slurm refused the job: %s%s%s",
				 slurm_strerror(rc), err_msg ? ": " : "",
				 err_msg ? err_msg : "");
		status = 409;
		goto store;
	}
	if (!r->jobs)
		r->jobs = xcalloc(MAX_JOBS, sizeof(rj_t));
	r->jobs[r->job_cnt].job_id = job_id;
	r->jobs[r->job_cnt].part_index = (spec.part_index >= 0) ?
					 spec.part_index : 0;
	r->jobs[r->job_cnt++].submitted = now;
	r->changed = time(NULL);
	info("%s: part job %u (part %" PRId64 ") of %s: %" PRId64 " nodes, %" PRId64 " min",
	     plugin_type, job_id, (int64_t) r->jobs[r->job_cnt - 1].part_index,
	     name, nodes, minutes);
	*json_out = flexco_encode_part_job_submitted(
		job_id, (int64_t) r->id, r->jobs[r->job_cnt - 1].part_index);
store:
	_idem_keep(rq, uid, status, *json_out);
	status = _saved(status, json_out);
out:
	slurm_mutex_unlock(&resv_lock);
	flexco_jobspec_free(&spec);
	xfree(name);
	xfree(err_msg);
	return status;
}

/*
 * The answer about a part job (GET .../jobs/{job}, POST .../release): its
 * state as Slurm has it (jobs.c; UNKNOWN once slurmctld purged it) and
 * what the reservation knows of it; released: whether a release moved it
 * out (NULL: not a release).  No lock held.
 */
static char *_job_answer(uint64_t jid, const char *name, int part_index,
			 int64_t submitted, const bool *released)
{
	json_t *o;

	if (!(o = flexco_job_state((uint32_t) jid)))	/* purged from slurmctld */
		o = json_pack("{s:I, s:s, s:n, s:n, s:n, s:n, s:n, s:n, s:n}",
			      "job_id", (json_int_t) jid, "state", "UNKNOWN",
			      "reason", "start_time", "end_time", "nodes",
			      "reservation", "exit_code", "signal");
	if (!o)
		return NULL;
	json_object_set_new(o, "flexco_reservation", json_string(name));
	json_object_set_new(o, "part_index", json_integer(part_index));
	json_object_set_new(o, "submitted", json_integer(submitted));
	if (released)
		json_object_set_new(o, "released", json_boolean(*released));
	return _dump(o);
}

/* GET /v1/reservations/{id}/jobs/{jobid}: the job's state from slurmctld. */
extern int flexco_resv_job_get(uid_t uid, const char *id, const char *job_s,
			       char **json_out)
{
	uint64_t jid = 0;
	int64_t submitted = 0;
	int part_index = 0, status = 200, i;
	bool found = false;
	char *name = NULL;
	rv_t *r;

	slurm_mutex_lock(&resv_lock);
	if (!(r = _lookup(uid, id, false, json_out, &status))) {
		slurm_mutex_unlock(&resv_lock);
		return status;
	}
	if (_parse_id(job_s, &jid) || (jid > UINT32_MAX)) {
		slurm_mutex_unlock(&resv_lock);
		*json_out = _err("bad_request", "job id must be a positive integer");
		return 400;
	}
	for (i = 0; i < r->job_cnt; i++)
		if (r->jobs[i].job_id == jid) {
			found = true;
			part_index = r->jobs[i].part_index;
			submitted = r->jobs[i].submitted;
		}
	name = _name_of(r->id);
	slurm_mutex_unlock(&resv_lock);
	if (!found) {
		*json_out = _err("not_found", "job %" PRIu64 " is not a job of %s",
				 jid, name);
		xfree(name);
		return 404;
	}

	*json_out = _job_answer(jid, name, part_index, submitted, NULL);
	xfree(name);
	return 200;
}

/*
 * POST /v1/reservations/{id}/jobs/{jobid}/release: release a part job
 * submitted held.  resv_lock is held across the release (then slurmctld's
 * locks, as for a submission), so a release cannot overtake the
 * submission of the same job.  Nothing is stored: releasing twice is
 * harmless, so no Idempotency-Key is needed.
 */
extern int flexco_resv_job_release(uid_t uid, const char *id,
				   const char *job_s, char **json_out)
{
	uint64_t jid = 0;
	int64_t submitted = 0;
	int part_index = 0, status = 200, i, rc;
	bool found = false, released = false;
	char *name = NULL;
	rv_t *r;

	slurm_mutex_lock(&resv_lock);
	if (!(r = _lookup(uid, id, true, json_out, &status)))
		goto out;
	if (_parse_id(job_s, &jid) || (jid > UINT32_MAX)) {
		*json_out = _err("bad_request", "job id must be a positive integer");
		status = 400;
		goto out;
	}
	for (i = 0; i < r->job_cnt; i++)
		if (r->jobs[i].job_id == jid) {
			found = true;
			part_index = r->jobs[i].part_index;
			submitted = r->jobs[i].submitted;
		}
	name = _name_of(r->id);
	if (!found) {
		*json_out = _err("not_found", "job %" PRIu64 " is not a job of %s",
				 jid, name);
		status = 404;
		goto out;
	}
	rc = flexco_job_release(jid, name, &released);
	if (rc == FLEXCO_RELEASE_ADMIN_HELD) {
		*json_out = _err("held", "job %" PRIu64 " is held by an administrator; it stays held",
				 jid);
		status = 409;
		goto out;
	}
	/* FLEXCO_RELEASE_OTHER: moved out of the reservation by hand; shown
	 * as it is, like a job that ended or is gone */
	*json_out = _job_answer(jid, name, part_index, submitted, &released);
out:
	slurm_mutex_unlock(&resv_lock);
	xfree(name);
	return status;
}

/*
 * One part job event: the job's state from slurmctld plus our record.
 * False if the events queue did not take it (full, or not running): the
 * caller then leaves the job's flag unset, so the next tick tries again.
 */
static bool _publish(const char *type, const rv_t *r, const rj_t *j)
{
	json_t *o = flexco_job_state(j->job_id);
	char *name = _name_of(r->id);
	bool ok;

	if (!o)
		o = json_pack("{s:I, s:s}", "job_id", (json_int_t) j->job_id,
			      "state", "UNKNOWN");
	json_object_del(o, "reservation");
	json_object_set_new(o, "reservation", json_string(name));
	json_object_set_new(o, "reservation_id", json_integer(r->id));
	json_object_set_new(o, "part_index", json_integer(j->part_index));
	/* a job of the reservation's user in the reservation (PrivateData) */
	{
		uid_t user = r->uid;
		flexco_acl_t acl = { .job = true, .job_uid = r->uid,
				     .resv = true, .users = &user,
				     .user_cnt = 1 };

		ok = !events_publish_private(type, o, &acl);
	}
	xfree(name);
	return ok;
}

/*
 * Publish part_job_started / part_job_ended for the jobs of r whose phase
 * moved on since the last tick (resv_lock held; takes the job read lock
 * per job).  True if a flag changed.
 */
static bool _poll_jobs(rv_t *r)
{
	bool changed = false, ran;
	int i, phase;

	for (i = 0; i < r->job_cnt; i++) {
		rj_t *j = &r->jobs[i];

		if (j->ended)
			continue;
		phase = flexco_job_phase(j->job_id, &ran);
		if (phase == FLEXCO_PJ_PENDING)
			continue;
		if (!j->started && ((phase == FLEXCO_PJ_RUNNING) || ran)) {
			if (!_publish(EVENT_PART_JOB_STARTED, r, j))
				continue;	/* queue full: next tick */
			j->started = true;
			changed = true;
		}
		if (((phase == FLEXCO_PJ_FINISHED) ||
		     (phase == FLEXCO_PJ_GONE)) &&
		    _publish(EVENT_PART_JOB_ENDED, r, j)) {
			j->ended = true;
			changed = true;
		}
	}
	return changed;
}

/* ---------------------------------------------------------------------- */

extern void flexco_resv_tick(void)
{
	int64_t now = time(NULL);
	flexco_resv_view_t *views;
	int *action;
	bool *orphan;
	uint64_t *ids;
	bool dirty = false;
	int n, i, j;

	slurm_mutex_lock(&resv_lock);
	/* the state is this term's and the controller still in charge: a
	 * hand-back must not delete what the next controller will own */
	if (!rconf || !flexco_ctld_in_charge()) {
		slurm_mutex_unlock(&resv_lock);
		return;
	}
	ticks++;
	if (!reconciled) {
		_adopt_submissions();
		_reconcile();
		dirty = true;
	}
	ids = _slurm_flexco_ids(&n);
	_id_floor(ids, n);
	/* the plan: src/service/resv_rules.hpp; carried out here */
	views = xcalloc(rv_cnt + 1, sizeof(*views));
	action = xcalloc(rv_cnt + 1, sizeof(*action));
	orphan = xcalloc(n + 1, sizeof(*orphan));
	for (i = 0; i < rv_cnt; i++) {
		views[i].id = rvs[i].id;
		views[i].state = rvs[i].state;
		views[i].confirm_by = rvs[i].confirm_by;
		views[i].end = rvs[i].end;
	}
	if (!flexco_resv_plan_tick(views, rv_cnt, ids, n, unaccounted, now,
				   action, orphan)) {
		error("%s: reservations: no memory for the agent's pass; next pass retries",
		      plugin_type);
		n = 0;
		memset(action, 0, (rv_cnt + 1) * sizeof(*action));
	}
	for (i = 0; i < rv_cnt; i++) {
		rv_t *r = &rvs[i];

		switch (action[i]) {
		case FLEXCO_TICK_EXPIRE_INTERRUPTED:
			/* interrupted create: delete it if it exists */
			if (_in(ids, n, r->id))
				(void) _slurm_delete(r->id, r->jobs, r->job_cnt, false);
			_set_state(r, ST_EXPIRED,
				   "create interrupted by a slurmctld restart");
			dirty = true;
			break;
		case FLEXCO_TICK_EXPIRE_UNCONFIRMED:
			(void) _slurm_delete(r->id, r->jobs, r->job_cnt, false);
			_set_state(r, ST_EXPIRED, "not confirmed in time");
			info("%s: reservation %s%" PRIu64 " expired unconfirmed",
			     plugin_type, NAME_PREFIX, r->id);
			dirty = true;
			break;
		case FLEXCO_TICK_END:
			_set_state(r, ST_ENDED, NULL);
			dirty = true;
			break;
		case FLEXCO_TICK_GONE:
			_set_state(r, ST_DELETED,
				   "the Slurm reservation was deleted outside flexco");
			dirty = true;
			break;
		default:
			break;
		}
	}
	/*
	 * Slurm reservations named flexco_* that no live record knows:
	 * orphans, deleted only while the state accounts for every flexco_*
	 * reservation (after a lost state they were adopted; ones that could
	 * not be are left alone).
	 */
	for (j = 0; j < n; j++) {
		rv_t *r;

		if (!orphan[j])
			continue;
		r = _find(ids[j]);
		info("%s: deleting orphan reservation %s%" PRIu64,
		     plugin_type, NAME_PREFIX, ids[j]);
		(void) _slurm_delete(ids[j], r ? r->jobs : NULL,
				     r ? r->job_cnt : 0, !r);
	}
	xfree(views);
	xfree(action);
	xfree(orphan);
	xfree(ids);
	for (i = 0; i < rv_cnt; i++)
		if (_poll_jobs(&rvs[i]))
			dirty = true;
	/* forget records that ended long ago */
	for (i = 0; i < rv_cnt;) {
		if (!_live(&rvs[i]) && (now - rvs[i].changed > KEEP_ENDED)) {
			_rv_free(&rvs[i]);
			rvs[i] = rvs[--rv_cnt];
			dirty = true;
		} else {
			i++;
		}
	}
	if (dirty || save_failing)
		(void) _save();
	slurm_mutex_unlock(&resv_lock);
}

extern int flexco_resv_init(const flexco_conf_t *conf)
{
	slurm_mutex_lock(&resv_lock);
	rconf = conf;
	rvs = xcalloc(MAX_RECORDS, sizeof(rv_t));
	if (!idem)
		idem = flexco_idem_create(IDEM_MAX, IDEM_PER_UID, IDEM_KEEP);
	state_path = flexco_state_path(STATE_FILE);
	ticks = 0;
	_load();
	slurm_mutex_unlock(&resv_lock);
	return SLURM_SUCCESS;
}

extern void flexco_resv_fini(void)
{
	int i;

	slurm_mutex_lock(&resv_lock);
	if (rconf)
		(void) _save();
	for (i = 0; i < rv_cnt; i++)
		_rv_free(&rvs[i]);
	xfree(rvs);
	rv_cnt = 0;
	flexco_idem_destroy(idem);
	idem = NULL;
	xfree(state_path);
	rconf = NULL;
	slurm_mutex_unlock(&resv_lock);
}

/* The idempotency cache for /v1/stats (resv_lock held). */
static json_t *_idem_stats_json(void)
{
	flexco_idem_stats_t st;

	flexco_idem_stats(idem, time(NULL), &st);
	return json_pack("{s:i, s:i, s:i, s:i, s:i, s:I, s:I}",
			 "keys", (int) st.keys, "capacity", (int) st.capacity,
			 "per_uid", (int) st.per_uid,
			 "max_uid_keys", (int) st.max_uid_keys,
			 "keep_seconds", (int) st.keep_seconds,
			 "evicted_share", (json_int_t) st.evicted_share,
			 "evicted_full", (json_int_t) st.evicted_full);
}

extern json_t *flexco_resv_stats_json(void)
{
	json_t *by_state = json_object(), *root;
	int counts[ST_COUNT] = { 0 };
	int i;

	slurm_mutex_lock(&resv_lock);
	for (i = 0; i < rv_cnt; i++)
		counts[rvs[i].state]++;
	for (i = 0; i < ST_COUNT; i++)
		json_object_set_new(by_state, st_names[i],
				    json_integer(counts[i]));
	root = json_pack("{s:o, s:{s:I, s:I}, s:I}",
			 "by_state", by_state,
			 "refused", "not_available", (json_int_t) refused_busy,
			 "low_fit", (json_int_t) refused_fit,
			 "next_id", (json_int_t) next_id);
	json_object_set_new(root, "adopted", json_integer(adopted));
	json_object_set_new(root, "ticks", json_integer(ticks));
	json_object_set_new(root, "delete_lock", json_pack(
		"{s:I, s:I, s:I, s:I, s:I}",
		"count", (json_int_t) del_count,
		"jobs_examined_last", (json_int_t) del_examined_last,
		"jobs_examined_total", (json_int_t) del_examined_total,
		"last_usec", (json_int_t) del_usec_last,
		"max_usec", (json_int_t) del_usec_max));
	json_object_set_new(root, "unaccounted", json_integer(unaccounted));
	json_object_set_new(root, "idempotency", _idem_stats_json());
	json_object_set_new(root, "state", json_pack(
		"{s:s, s:b, s:b, s:I, s:I, s:o, s:o}",
		"loaded_from", statefile_src_name(loaded_from),
		"recovered", reconciled,
		"saving", !save_failing,
		"saves", (json_int_t) saves,
		"save_errors", (json_int_t) save_errors,
		"last_save_error", last_save_error[0] ?
			json_string(last_save_error) : json_null(),
		"last_save_error_at", last_save_error_at ?
			json_integer(last_save_error_at) : json_null()));
	slurm_mutex_unlock(&resv_lock);
	return root;
}
