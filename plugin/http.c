/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  http.c - the slurmctld/flexco plugin's HTTP+JSON service: its host
 *****************************************************************************
 *  The server (microhttpd, connection limits, requests and their bodies,
 *  the order of the checks, authentication through MUNGE, rate limits,
 *  long polls and BackfillDefer, /v1/stats and GET /metrics) is
 *  src/service/api_server (service/capi_api_server.h), which includes no
 *  Slurm header.  This file is its host: whether this slurmctld is in
 *  charge, MUNGE verification (core/capi_auth.h), profiles and probes on
 *  snapshots, the events ring with PrivateData, backfill's cycle, and the
 *  members of /v1/stats and families of /metrics that come from the other
 *  Slurm-side modules.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "core/capi_auth.h"
#include "core/capi_probe.h"
#include "core/capi_profile.h"
#include "service/capi_api_server.h"
#include "compat.h"
#include "events.h"
#include "history.h"
#include "http.h"
#include "privacy.h"
#include "resv.h"
#include "snapshot.h"
#include "compute.h"
#include "willrun.h"

extern const char plugin_type[];

#define PROBE_VALID_FOR 60	/* seconds an offer is quoted as valid */

_Static_assert((int) FLEXCO_RL_CNT == (int) FLEXCO_API_RL_CNT,
	       "one list of limits");

static pthread_mutex_t daemon_lock = PTHREAD_MUTEX_INITIALIZER;
/* made by the first http_start() and kept: the events thread may still
 * call _events_arrived() after http_stop() */
static flexco_api_server_t *server = NULL;
static flexco_verifier_t *verifier = NULL;	/* daemon_lock */
static uint16_t published_share = 100;

/* ---------------------------------------------------------------------- */
/* the host: what the service asks of slurmctld */

static int _h_verify(void *arg, const char *method, const char *target,
		     const char *body, size_t body_len, const char *auth,
		     const char *idem_key, uint32_t *uid, uint32_t *gid,
		     char *digest, char *code, size_t codelen, char *err,
		     size_t errlen, char *grant, size_t grantlen)
{
	uid_t u = 0;
	gid_t g = 0;
	int status;

	(void) arg;
	status = flexco_verifier_verify(verifier, method, target, body,
					body_len, auth, idem_key, &u, &g,
					digest, code, codelen, err, errlen,
					grant, grantlen);
	*uid = u;
	*gid = g;
	return status;
}

#ifdef FLEXCO_TEST_HOOKS
/* Testing only: while this file exists, the deferral takes backfill to be
 * in a cycle (FLEXCO_TEST_BACKFILL_ACTIVE_FILE in slurmctld's environment;
 * testsuite/integration/test_plugin_bfdefer.py).  Only in the objects
 * `make check` builds. */
static char *test_bf_file = NULL;
#endif

/*
 * BackfillDefer (doc/admin.md, "Sizing"): slurmctld_diag_stats.bf_active
 * is one aligned word that backfill sets before it asks for its locks and
 * clears after it gave them back; it is read without a lock, like sdiag's
 * other counters.
 */
static bool _h_backfill_active(void *arg)
{
	(void) arg;
#ifdef FLEXCO_TEST_HOOKS
	if (test_bf_file && !access(test_bf_file, F_OK))
		return true;
#endif
	return snapshot_bf_active();
}

/* A profile or a probe computed on a compute thread (compute.h). */
typedef struct {
	flexco_snapshot_t *snap;
	const char *partition;
	int64_t horizon;
	const char *body;
	size_t body_len;
	const flexco_histories_t *hist;
	const flexco_will_run_answer_t *wa;
	char **json, *code, *err;
	size_t codelen, errlen;
	int status;
} task_t;

static void _profile_task(void *arg)
{
	task_t *t = arg;

	t->status = flexco_profile_json(t->snap, t->partition, t->horizon,
					published_share, t->json, t->code,
					t->codelen, t->err, t->errlen);
}

static void _probe_task(void *arg)
{
	task_t *t = arg;

	t->status = flexco_probe_json_ex(t->snap, t->body, t->body_len,
					 published_share, PROBE_VALID_FOR,
					 t->hist, t->wa, t->json, t->code,
					 t->codelen, t->err, t->errlen);
}

/* GET /v1/profile, its query decoded by the service */
static int _h_profile(void *arg, const char *partition, int64_t horizon,
		      char **json)
{
	char code[64], err[512];
	task_t t = {
		.partition = partition, .horizon = horizon, .json = json,
		.code = code, .codelen = sizeof(code), .err = err,
		.errlen = sizeof(err),
	};

	(void) arg;
	t.snap = snapshot_share();	/* read locks inside, released on return */
	compute_run(_profile_task, &t);	/* no lock held */
	snapshot_free(t.snap);
	return t.status;
}

/*
 * POST /v1/probe: scored offers for a moldable request (doc/probe.md),
 * computed on a snapshot taken for this request (or shared), after
 * unlocking.  When the snapshot's plan cache already holds everything the
 * answer needs, it is made here, in the request's thread; otherwise a
 * compute thread plans (doc/probe.md, "Where a probe is computed").
 */
static int _h_probe(void *arg, uint32_t uid, uint32_t gid, const char *body,
		    size_t body_len, char **json)
{
	char code[64], err[512];
	flexco_snapshot_t *snap;
	flexco_histories_t *hist;
	flexco_will_run_params_t wp;
	flexco_will_run_answer_t wa;
	bool asked;
	int status;

	(void) arg;
	asked = flexco_probe_will_run_params(body, body_len, &wp);
	hist = history_copy();
	snap = snapshot_share();
	if (asked)	/* after the snapshot: offers see the state before it */
		willrun_ask(uid, gid, &wp, &wa);
	/* no lock held from here */
	status = flexco_probe_json_cached(snap, body, body_len,
					  published_share, PROBE_VALID_FOR,
					  hist, asked ? &wa : NULL, json, code,
					  sizeof(code), err, sizeof(err));
	if (status) {
		compute_count_cached();	/* no thread woken for it */
	} else {
		task_t t = {
			.snap = snap, .body = body, .body_len = body_len,
			.hist = hist, .wa = asked ? &wa : NULL, .json = json,
			.code = code, .codelen = sizeof(code), .err = err,
			.errlen = sizeof(err),
		};
		compute_run(_probe_task, &t);
		status = t.status;
	}
	if (asked)
		willrun_free(&wa);
	flexco_histories_free(hist);
	snapshot_free(snap);
	return status;
}

/* GET /v1/events: may take slurmctld's config lock and the association
 * manager's user lock (no I/O under either) */
static void *_h_viewer_new(void *arg, uint32_t uid, bool daemon_user)
{
	flexco_viewer_t *v = xmalloc(sizeof(*v));

	(void) arg;
	privacy_viewer_get(uid, daemon_user, v);
	return v;
}

static void _h_viewer_free(void *arg, void *viewer)
{
	(void) arg;
	privacy_viewer_free(viewer);
	xfree(viewer);
}

static char *_h_events_page(void *arg, uint64_t after, uint32_t max,
			    const void *viewer, flexco_api_page_t *out)
{
	events_page_t page = { 0 };
	char *json = events_query_json(after, max, viewer, &page);

	(void) arg;
	out->next = page.next;
	out->latest = page.latest;
	out->count = page.count;
	out->lost = page.lost;
	return json;
}

static uint64_t _h_events_latest(void *arg)
{
	(void) arg;
	return events_latest();
}

static flexco_rsvc_t *_h_resv(void *arg)
{
	(void) arg;
	return flexco_resv_service();
}

/* Called by the events module after each batch of new events. */
static void _events_arrived(void)
{
	flexco_api_server_notify(server);
}

/* /v1/stats: the members from the Slurm-side modules, each under its own
 * lock (never a slurmctld lock) */
static void _h_stats(void *arg, json_t *root)
{
	snapshot_lock_stats_t ls;
	compute_stats_t cs;

	(void) arg;
	json_object_set_new(root, "events", events_stats_json());
	json_object_set_new(root, "reservations", flexco_resv_stats_json());
	json_object_set_new(root, "history_samples",
			    json_integer((json_int_t) history_samples()));
	snapshot_get_lock_stats(&ls);
	json_object_set_new(root, "snapshot_lock", json_pack(
		"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
		" s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
		"count", (json_int_t) ls.count,
		"holds", (json_int_t) ls.holds,
		"restarts", (json_int_t) ls.restarts,
		"total_usec", (json_int_t) ls.total_usec,
		"max_usec", (json_int_t) ls.max_usec,
		"last_usec", (json_int_t) ls.last_usec,
		"last_total_usec", (json_int_t) ls.last_total_usec,
		"last_holds", (json_int_t) ls.last_holds,
		"wait_total_usec", (json_int_t) ls.wait_total_usec,
		"wait_max_usec", (json_int_t) ls.wait_max_usec,
		"wait_last_usec", (json_int_t) ls.wait_last_usec,
		"shared", (json_int_t) ls.shared,
		"shared_job_lag", (json_int_t) ls.shared_job_lag,
		"shared_node_rechecked", (json_int_t) ls.shared_node_rechecked,
		"stale",
		"none", (json_int_t) ls.stale_none,
		"age", (json_int_t) ls.stale_age,
		"node", (json_int_t) ls.stale_node,
		"partition", (json_int_t) ls.stale_part,
		"reservation", (json_int_t) ls.stale_resv,
		"job", (json_int_t) ls.stale_job));
	compute_get_stats(&cs);
	json_object_set_new(root, "compute", json_pack(
		"{s:i, s:i, s:I, s:I, s:I, s:I}",
		"threads", (int) cs.threads,
		"nice", cs.nice,
		"runs", (json_int_t) cs.runs,
		"inline_runs", (json_int_t) cs.inline_runs,
		"cached_runs", (json_int_t) cs.cached_runs,
		"queued_max", (json_int_t) cs.queued_max));
}

/* GET /metrics: the snapshots' families (doc/admin.md, "Prometheus") */
static void _h_metrics(void *arg, flexco_metrics_t *b)
{
	const uint64_t hold_usec[SNAPSHOT_HOLD_BUCKETS] =
		SNAPSHOT_HOLD_BOUNDS_USEC;
	double hold_b[SNAPSHOT_HOLD_BUCKETS];
	snapshot_lock_stats_t ls;
	size_t i;

	(void) arg;
	snapshot_get_lock_stats(&ls);
	for (i = 0; i < SNAPSHOT_HOLD_BUCKETS; i++)
		hold_b[i] = hold_usec[i] / 1e6;
	flexco_metrics_family(b, "flexco_snapshot_lock_hold_seconds", "histogram",
			      "Each hold of slurmctld's read locks by a snapshot (SnapshotJobsPerHold jobs at most).");
	flexco_metrics_histogram(b, "flexco_snapshot_lock_hold_seconds", NULL,
				 hold_b, ls.hold_hist, SNAPSHOT_HOLD_BUCKETS,
				 ls.total_usec / 1e6);
	flexco_metrics_family(b, "flexco_snapshot_lock_wait_seconds_total", "counter",
			      "Time snapshots waited for slurmctld's read locks.");
	flexco_metrics_sample(b, "flexco_snapshot_lock_wait_seconds_total", NULL,
			      ls.wait_total_usec / 1e6);
	flexco_metrics_family(b, "flexco_snapshots_total", "counter",
			      "Snapshots of slurmctld's state taken.");
	flexco_metrics_sample(b, "flexco_snapshots_total", NULL,
			      (double) ls.count);
}

/* ---------------------------------------------------------------------- */
/* the plugin's interface (http.h) */

extern int http_start(const flexco_conf_t *conf)
{
	const flexco_api_host_t host = {
		.arg = NULL, .log = flexco_host_log, .in_charge = flexco_host_in_charge,
		.verify = _h_verify, .backfill_active = _h_backfill_active,
		.probe = _h_probe, .profile = _h_profile,
		.viewer_new = _h_viewer_new, .viewer_free = _h_viewer_free,
		.events_page = _h_events_page,
		.events_latest = _h_events_latest, .resv = _h_resv,
		.stats = _h_stats, .metrics = _h_metrics,
	};
	flexco_api_conf_t c = {
		.listen_address = conf->listen_address,
		.listen_port = conf->listen_port,
		.http_threads = conf->http_threads,
		.limits = {
			.max_connections = conf->max_connections,
			.max_connections_per_address =
				conf->max_connections_per_address,
			.connection_timeout = conf->connection_timeout,
			.header_timeout = conf->header_timeout,
			.body_timeout = conf->body_timeout,
			.max_request_size = conf->max_request_size,
			.max_request_memory = conf->max_request_memory,
		},
		.max_long_polls_per_user = conf->max_long_polls_per_user,
		.max_long_polls = conf->max_long_polls,
		.backfill_defer = conf->backfill_defer,
		.daemon_uid_cnt = conf->daemon_uid_cnt,
		.query_uid_cnt = conf->query_uid_cnt,
		.metrics_token = conf->metrics_token,
	};
	uint32_t *daemon_uids, *query_uids;
	char err[512];
	int i, rc;

	slurm_mutex_lock(&daemon_lock);
	if (!server && !(server = flexco_api_server_create())) {
		slurm_mutex_unlock(&daemon_lock);
		error("%s: HTTP service: out of memory", plugin_type);
		return SLURM_ERROR;
	}
	if (flexco_api_server_running(server)) {
		slurm_mutex_unlock(&daemon_lock);
		return SLURM_SUCCESS;
	}
	if (!verifier) {
		/* Requests must be signed for this cluster (doc/auth.md,
		 * "Audience"): ClusterName is the audience.  It cannot change
		 * while slurmctld runs. */
		verifier = flexco_verifier_create(slurm_conf.cluster_name,
						  conf->munge_socket,
						  conf->auth_max_age,
						  conf->auth_max_skew,
						  conf->replay_cache_size,
						  conf->replay_cache_per_user,
						  conf->daemon_uids,
						  conf->daemon_uid_cnt,
						  conf->session_lifetime,
						  err, sizeof(err));
		if (!verifier) {
			slurm_mutex_unlock(&daemon_lock);
			error("%s: cannot set up MUNGE verification: %s",
			      plugin_type, err);
			return SLURM_ERROR;
		}
	}
	published_share = conf->published_share;
#ifdef FLEXCO_TEST_HOOKS
	xfree(test_bf_file);
	if (getenv("FLEXCO_TEST_BACKFILL_ACTIVE_FILE")) {
		test_bf_file = xstrdup(getenv("FLEXCO_TEST_BACKFILL_ACTIVE_FILE"));
		info("%s: FLEXCO_TEST_BACKFILL_ACTIVE_FILE=%s: backfill counts as in a cycle while it exists (testing only)",
		     plugin_type, test_bf_file);
	}
#endif
	for (i = 0; i < FLEXCO_RL_CNT; i++) {
		c.rate_count[i] = conf->rate_count[i];
		c.rate_secs[i] = conf->rate_secs[i];
	}
	daemon_uids = xcalloc(conf->daemon_uid_cnt + 1, sizeof(*daemon_uids));
	for (i = 0; i < conf->daemon_uid_cnt; i++)
		daemon_uids[i] = conf->daemon_uids[i];
	query_uids = xcalloc(conf->query_uid_cnt + 1, sizeof(*query_uids));
	for (i = 0; i < conf->query_uid_cnt; i++)
		query_uids[i] = conf->query_uids[i];
	c.daemon_uids = daemon_uids;
	c.query_uids = query_uids;

	rc = flexco_api_server_start(server, &c, &host);	/* copies c */
	xfree(daemon_uids);
	xfree(query_uids);
	if (!rc)
		events_set_listener(_events_arrived);
	slurm_mutex_unlock(&daemon_lock);
	if (rc)
		return SLURM_ERROR;
	info("%s: listening on http://%s:%u/v1/ (MUNGE socket %s)",
	     plugin_type, conf->listen_address, conf->listen_port,
	     conf->munge_socket);
	return SLURM_SUCCESS;
}

extern bool http_running(void)
{
	bool running;

	slurm_mutex_lock(&daemon_lock);
	running = flexco_api_server_running(server);
	slurm_mutex_unlock(&daemon_lock);
	return running;
}

extern void http_stop(void)
{
	events_set_listener(NULL);
	/* resumes every long poll, then stops microhttpd (not under
	 * daemon_lock: http_running() answers meanwhile) */
	flexco_api_server_stop(server);
	slurm_mutex_lock(&daemon_lock);
	flexco_verifier_destroy(verifier);
	verifier = NULL;
	slurm_mutex_unlock(&daemon_lock);
}

/* ---------------------------------------------------------------------- */
/* FlexCo idle: every request answered 503 with the reason */

static flexco_api_idle_t *idle = NULL;	/* daemon_lock */

extern int http_start_idle(const char *address, uint16_t port,
			   const char *why)
{
	int rc;

	slurm_mutex_lock(&daemon_lock);
	if (idle) {
		slurm_mutex_unlock(&daemon_lock);
		return SLURM_SUCCESS;
	}
	rc = flexco_api_idle_start(address, port, why, flexco_host_log, NULL, &idle);
	slurm_mutex_unlock(&daemon_lock);
	if (rc == -1)
		return SLURM_ERROR;	/* not a numeric address */
	if (rc) {
		error("%s: FlexCo is idle, and cannot listen on %s port %u to say so",
		      plugin_type, address, port);
		return SLURM_ERROR;
	}
	info("%s: FlexCo is idle: every request to %s port %u is answered 503 flexco_idle with the reason",
	     plugin_type, address, port);
	return SLURM_SUCCESS;
}

extern void http_stop_idle(void)
{
	flexco_api_idle_t *i;

	slurm_mutex_lock(&daemon_lock);
	i = idle;
	idle = NULL;
	slurm_mutex_unlock(&daemon_lock);
	flexco_api_idle_stop(i);
}
