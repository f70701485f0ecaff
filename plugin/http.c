/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  http.c - the slurmctld/flexco plugin's HTTP+JSON service
 *****************************************************************************
 *  libmicrohttpd runs the listener and a small pool of its own threads;
 *  none of them ever holds a slurmctld lock while doing network or MUNGE
 *  work.  Every request is bounded (header memory, body size, connection
 *  count, idle timeout), authenticated with MUNGE (core/capi_auth.h) before
 *  anything else, and answered with JSON; errors are
 *  {"error":{"code":...,"message":...}} with a 4xx/5xx status and change
 *  nothing.
 *
 *  Connection limits (doc/admin.md, "Connection limits"): microhttpd refuses
 *  connections over MaxConnectionsPerAddress from one address; a reaper
 *  thread answers 408 and closes a connection whose request headers are not
 *  complete HeaderTimeout seconds after the request began, or whose body is
 *  not complete BodyTimeout seconds after its headers, however slowly it
 *  trickles in; bodies received but not yet authenticated hold at most
 *  MaxRequestMemory bytes in all (503 beyond); long polls are capped per
 *  uid and in all (503 beyond).  When every MaxConnections slot is taken,
 *  the connection that has waited longest (over 1 s) for its headers is
 *  closed to make room, so that silent connections from many addresses do
 *  not keep real requests waiting for HeaderTimeout.
 *
 *  Long polls (GET /v1/events?wait=N) hold no thread while they wait: the
 *  handler parks the request (service/parking.hpp), which suspends its
 *  connection (MHD_suspend_connection); the parking's waker thread resumes
 *  it when an event arrives (the events module calls us back) or its
 *  deadline passes, and microhttpd then calls the handler again, which
 *  answers.  Suspending and resuming both happen under the parking's lock,
 *  so a resume never overtakes its suspend.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "core/capi_auth.h"
#include "core/capi_decode.h"
#include "core/capi_probe.h"
#include "core/capi_profile.h"
#include "service/capi_http.h"
#include "compat.h"
#include "events.h"
#include "history.h"
#include "http.h"
#include "service/capi_metrics.h"
#include "service/capi_parking.h"
#include "service/capi_rate.h"
#include "privacy.h"
#include "resv.h"
#include "snapshot.h"
#include "compute.h"
#include "willrun.h"

extern const char plugin_type[];

/* the longest target a signed request can have (doc/auth.md) */
#define MAX_URI_LEN FLEXCO_AUTH_MAX_TARGET
#define HEADER_MEMORY (32 * 1024)
#define PROBE_VALID_FOR 60	/* seconds an offer is quoted as valid */

/* ---------------------------------------------------------------------- */
/* statistics */

enum { EP_PROFILE, EP_STATS, EP_EVENTS, EP_RESV, EP_PROBE, EP_OTHER,
       EP_COUNT };
static const char *ep_names[EP_COUNT] = { "profile", "stats", "events",
					  "reservations", "probe", "other" };
static const int stat_codes[] = { 200, 201, 400, 401, 403, 404, 405, 408,
				  409, 413, 429, 500, 503 };
#define N_CODES (sizeof(stat_codes) / sizeof(stat_codes[0]))
/* latency histogram upper bounds, microseconds; the last bucket is open */
static const uint64_t lat_bounds[] = { 1000, 10000, 100000, 1000000 };
#define N_LAT (sizeof(lat_bounds) / sizeof(lat_bounds[0]) + 1)

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static const flexco_conf_t *hconf = NULL;	/* set by http_start() */
static uint64_t stat_count[EP_COUNT][N_CODES + 1];	/* +1: other codes */
static uint64_t stat_lat[EP_COUNT][N_LAT];
static uint64_t stat_lat_sum[EP_COUNT];	/* usec, for GET /metrics */
static time_t started_at;

static uint64_t _usec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void _record(int ep, int status, uint64_t usec)
{
	size_t i, code = N_CODES, bucket = N_LAT - 1;

	for (i = 0; i < N_CODES; i++)
		if (stat_codes[i] == status)
			code = i;
	for (i = 0; i < N_LAT - 1; i++)
		if (usec <= lat_bounds[i]) {
			bucket = i;
			break;
		}
	slurm_mutex_lock(&stats_lock);
	stat_count[ep][code]++;
	stat_lat[ep][bucket]++;
	stat_lat_sum[ep] += usec;
	slurm_mutex_unlock(&stats_lock);
}

/* ---------------------------------------------------------------------- */
/* per-uid rate limits (flexco.conf ProbeRateLimit, ProfileRateLimit,
 * EventsRateLimit): a token bucket per uid and endpoint, holding up to
 * Count tokens and refilled with Count every Seconds.  A fixed table: a
 * uid not in it takes the slot of its group of RL_WAYS that was used
 * longest ago (and starts with a full bucket), so memory stays bounded
 * whatever the callers.  Checked after authentication, before the
 * endpoint takes any slurmctld lock. */

_Static_assert(FLEXCO_RL_CNT == FLEXCO_RATE_KINDS, "one list of limits");

/* made by http_start(), freed by http_stop() after microhttpd stopped */
static flexco_rate_t *rate = NULL;

static const char *const _rl_keys[FLEXCO_RL_CNT] = {
	"ProbeRateLimit", "ProfileRateLimit", "EventsRateLimit" };

static int _rl_index(int ep)
{
	switch (ep) {
	case EP_PROBE:
		return FLEXCO_RL_PROBE;
	case EP_PROFILE:
		return FLEXCO_RL_PROFILE;
	case EP_EVENTS:
		return FLEXCO_RL_EVENTS;
	default:
		return -1;
	}
}

static bool _is_daemon_user(uid_t uid)
{
	int i;

	for (i = 0; hconf && (i < hconf->daemon_uid_cnt); i++)
		if (hconf->daemon_uids[i] == uid)
			return true;
	return false;
}

/*
 * Take one token of uid's bucket for endpoint ep (service/capi_rate.h).
 * Returns 0 when the request may go on, else the seconds until a token is
 * there (>= 1).  DaemonUsers (flexcod) are not limited.
 */
static uint32_t _rate_take(int ep, uid_t uid)
{
	int k = _rl_index(ep);

	if ((k < 0) || _is_daemon_user(uid))
		return 0;
	return flexco_rate_take(rate, k, uid, _usec_now());
}

/* ---------------------------------------------------------------------- */
/* per-request state */

typedef struct req req_t;
struct req {
	char *uri;		/* request target as received: path?query */
	bool uri_too_long;
	bool started;
	flexco_http_body_t *bodyb;	/* in MaxRequestMemory (guard) */
	const char *body;	/* bodyb's bytes, once complete */
	size_t body_len;
	uint64_t t0;
	int ep;
	int status;
	uid_t uid;		/* authenticated caller */
	gid_t gid;
	const char *idem_key;	/* the signed Idempotency-Key, or NULL */
	char digest[FLEXCO_AUTH_DIGEST_SIZE];	/* the body's, verified */
	char retry_after[16];	/* seconds, for a 429 or 503 */
	/* a long poll (GET /v1/events?wait=N), authenticated and suspended */
	bool longpoll;
	struct MHD_Connection *conn;
	uint64_t after;
	uint32_t max;
	uint64_t deadline;	/* CLOCK_MONOTONIC microseconds */
	flexco_viewer_t viewer;	/* what PrivateData lets the caller see */
	bool has_viewer;
	bool daemon_user;	/* exempt from the long-poll caps */
	/* BackfillDefer: a probe or profile held while backfill's cycle runs */
	int defer;		/* DEFER_* */
};

enum { DEFER_NONE, DEFER_HELD, DEFER_DONE };

static struct MHD_Daemon *daemon_ptr = NULL;
static pthread_mutex_t daemon_lock = PTHREAD_MUTEX_INITIALIZER;
static flexco_verifier_t *verifier = NULL;
static uint32_t max_body = FLEXCO_DEFAULT_MAX_REQUEST_SIZE;
static uint16_t published_share = 100;

/* ---------------------------------------------------------------------- */
/* connections, their deadlines and request bodies in memory: the guard of
 * src/service (service/capi_http.h), as in flexcod.  It answers 408 and
 * shuts down a connection whose request headers are not complete
 * HeaderTimeout seconds after the request began, or whose body is not
 * complete BodyTimeout seconds after its headers; it closes the connection
 * that has waited longest for its headers when every MaxConnections slot
 * is taken; and it holds bodies received but not yet authenticated to
 * MaxRequestMemory bytes in all.  The handler moves a connection from one
 * phase to the next and closes it (MHD_NO) if the guard cut it first, so
 * FlexCo never writes an answer of its own after a 408. */

static flexco_http_guard_t *guard = NULL;	/* daemon_lock */

static void _guard_log(const char *line)
{
	debug("%s: %s", plugin_type, line);
}

static bool _conn_phase(struct MHD_Connection *c, int ph)
{
	return flexco_http_guard_phase(guard, c, ph);
}

static void *_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	req_t *req = calloc(1, sizeof(*req));
	size_t len;

	(void) cls;
	flexco_http_guard_requested(guard, c);
	if (!req)
		return NULL;
	req->t0 = _usec_now();
	req->ep = EP_OTHER;
	len = uri ? strnlen(uri, MAX_URI_LEN + 1) : 0;
	if (len > MAX_URI_LEN)
		req->uri_too_long = true;
	else
		req->uri = strndup(uri ? uri : "", len);
	return req;
}

/* long polls and deferred requests (service/capi_parking.h): made by the
 * first http_start() and kept, opened before microhttpd starts and
 * stopped before it stops (daemon_lock) */
static flexco_parking_t *parking = NULL;

static void _completed(void *cls, struct MHD_Connection *c, void **con_cls,
		       enum MHD_RequestTerminationCode toe)
{
	req_t *req = *con_cls;
	bool cut;

	(void) cls;
	(void) toe;
	if (!req)
		return;
	if (req->longpoll || (req->defer == DEFER_HELD))
		flexco_parking_forget(parking, req);	/* normally resumed */
	/* a next request on this connection starts its header clock now */
	cut = !_conn_phase(c, FLEXCO_HTTP_HEADERS);
	_record(req->ep, (cut && !req->status) ? 408 : req->status,
		_usec_now() - req->t0);
	if (req->has_viewer)
		privacy_viewer_free(&req->viewer);
	free(req->uri);
	flexco_http_body_free(req->bodyb);
	free(req);
	*con_cls = NULL;
}

/*
 * microhttpd's messages, at most MHD_LOG_BURST a minute: it logs every
 * connection refused over MaxConnections or MaxConnectionsPerAddress, and a
 * client that opens them in a loop must not fill slurmctld's log.
 */
#define MHD_LOG_BURST 10
/*
 * microhttpd calls abort() on what it takes for an internal inconsistency,
 * which would end slurmctld with it.  One such case is no fault of ours:
 * slurmctld 24.11 and later, run in the foreground (-D, not under
 * systemd), reconfigure by closing every file descriptor of the process
 * (closeall_except()) and exec()ing itself, while our threads still run;
 * microhttpd then finds its epoll descriptor gone.  So the failing
 * microhttpd thread says why and parks instead: the exec() that follows
 * ends it, and in any other case slurmctld keeps running without FlexCo's
 * HTTP service (the log says so) rather than being killed.
 */
static void _mhd_panic(void *cls, const char *file, unsigned int line,
		       const char *reason)
{
	(void) cls;
	error("%s: microhttpd failed at %s:%u (%s); this HTTP thread stops, slurmctld goes on",
	      plugin_type, file ? file : "?", line, reason ? reason : "?");
	for (;;)
		(void) sleep(3600);
}

static void _mhd_log(void *cls, const char *fmt, va_list ap)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static time_t window = 0;
	static uint32_t count = 0, dropped = 0;
	time_t now = time(NULL);
	uint32_t was_dropped = 0;
	bool drop;
	char buf[512];
	size_t n;

	(void) cls;
	slurm_mutex_lock(&lock);
	if (now - window >= 60) {
		was_dropped = dropped;
		window = now;
		count = dropped = 0;
	}
	drop = (++count > MHD_LOG_BURST);
	if (drop)
		dropped++;
	slurm_mutex_unlock(&lock);
	if (was_dropped)
		error("%s: microhttpd: %u more messages in the last minute not logged",
		      plugin_type, was_dropped);
	if (drop)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n'))
		buf[--n] = '\0';
	error("%s: microhttpd: %s", plugin_type, buf);
}

/* ---------------------------------------------------------------------- */
/* responses */

static enum MHD_Result _send_as(struct MHD_Connection *c, req_t *req,
				 int status, char *json, const char *allow,
				 const char *type);

/* json: malloc'd, ownership passes to microhttpd. */
static enum MHD_Result _send(struct MHD_Connection *c, req_t *req, int status,
			     char *json, const char *allow)
{
	return _send_as(c, req, status, json, allow, "application/json");
}

/* The same with another Content-Type (GET /metrics: text). */
static enum MHD_Result _send_as(struct MHD_Connection *c, req_t *req,
				 int status, char *json, const char *allow,
				 const char *type)
{
	struct MHD_Response *resp;
	enum MHD_Result rc;

	if (!json)
		json = strdup("{\"error\":{\"code\":\"internal\","
			      "\"message\":\"out of memory\"}}");
	if (!json)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(strlen(json), json,
					       MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(json);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (allow)
		MHD_add_response_header(resp, "Allow", allow);
	/* doc/auth.md: the scheme on every 401; when to retry on a 503 */
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, "WWW-Authenticate", "MUNGE");
	else if ((status == MHD_HTTP_SERVICE_UNAVAILABLE) ||
		 (status == MHD_HTTP_TOO_MANY_REQUESTS))
		MHD_add_response_header(resp, "Retry-After",
					(req && req->retry_after[0]) ?
					req->retry_after : "1");
	if (req)
		req->status = status;
	rc = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

static enum MHD_Result _error(struct MHD_Connection *c, req_t *req,
			      int status, const char *code, const char *msg)
{
	return _send(c, req, status, flexco_error_json(code, msg), NULL);
}

/* ---------------------------------------------------------------------- */
/* query parameters */

typedef struct {
	flexco_query_arg_t *v;
	size_t n, cap;
} args_buf_t;

static enum MHD_Result _collect_arg(void *cls, enum MHD_ValueKind kind,
				    const char *key, const char *value)
{
	args_buf_t *b = cls;

	(void) kind;
	if (b->n < b->cap) {
		b->v[b->n].key = key;
		b->v[b->n].value = value;
		b->n++;
	}
	return MHD_YES;
}

/*
 * The request's query parameters, as microhttpd decoded them, checked by
 * the core (flexco_decode_query_args: unknown, repeated or empty ones are
 * 400 bad_parameter): 0 with vals[i] allowed[i]'s value or NULL, else an
 * HTTP status with *json its body.  what: the message when the endpoint
 * takes no parameters.
 */
static int _query_args(struct MHD_Connection *c, const char *const *allowed,
		       const char **vals, const char *what, char **json)
{
	args_buf_t b = { 0 };
	int n, rc;

	n = MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, NULL, NULL);
	if ((n > 0) && !(b.v = malloc(sizeof(*b.v) * n))) {
		*json = NULL;	/* _send: 500 out of memory */
		return 500;
	}
	b.cap = (n > 0) ? n : 0;
	if (n > 0)
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND,
					  _collect_arg, &b);
	rc = flexco_decode_query_args(b.v, b.n, allowed, vals, what, json);
	free(b.v);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* endpoints */

/* A profile or a probe computed on a compute thread (compute.h). */
typedef struct {
	flexco_snapshot_t *snap;
	const char *partition;
	int64_t horizon;
	char **json, *code, *err;
	size_t codelen, errlen;
	int status;
} profile_task_t;

static void _profile_task(void *arg)
{
	profile_task_t *t = arg;

	t->status = flexco_profile_json(t->snap, t->partition, t->horizon,
					published_share, t->json, t->code,
					t->codelen, t->err, t->errlen);
}

typedef struct {
	flexco_snapshot_t *snap;
	const char *body;
	size_t body_len;
	const flexco_histories_t *hist;
	const flexco_will_run_answer_t *wa;
	char **json, *code, *err;
	size_t codelen, errlen;
	int status;
} probe_task_t;

static void _probe_task(void *arg)
{
	probe_task_t *t = arg;

	t->status = flexco_probe_json_ex(t->snap, t->body, t->body_len,
					 published_share, PROBE_VALID_FOR,
					 t->hist, t->wa, t->json, t->code,
					 t->codelen, t->err, t->errlen);
}

static enum MHD_Result _get_profile(struct MHD_Connection *c, req_t *req)
{
	static const char *const allowed[] = { "partition", "horizon", NULL };
	const char *vals[2];
	char code[64], err[512];
	flexco_snapshot_t *snap;
	int64_t horizon;
	char *json = NULL;
	int status;

	/* strictly (core/capi_decode.h) */
	if ((status = _query_args(c, allowed, vals, NULL, &json)))
		return _send(c, req, status, json, NULL);
	if (flexco_decode_profile_query(vals[0], vals[1], &horizon, &json))
		return _send(c, req, 400, json, NULL);

	snap = snapshot_share();	/* read locks inside, released on return */
	{
		profile_task_t t = {
			.snap = snap, .partition = vals[0], .horizon = horizon,
			.json = &json, .code = code, .codelen = sizeof(code),
			.err = err, .errlen = sizeof(err),
		};
		compute_run(_profile_task, &t);	/* no lock held */
		status = t.status;
	}
	snapshot_free(snap);
	return _send(c, req, status, json, NULL);
}

/* ---------------------------------------------------------------------- */
/* long polls and BackfillDefer: requests parked without a thread
 * (service/capi_parking.h).  The parking suspends and resumes their
 * connections under its own lock, so a resume never overtakes its
 * suspend; its waker resumes a long poll when an event arrives past its
 * cursor (the events module calls _events_arrived()) or its deadline
 * passes, and microhttpd then calls the handler again, which answers.
 *
 * BackfillDefer (doc/admin.md, "Sizing"): a probe or profile request
 * complete while slurmctld's backfill scheduler is in a cycle
 * (slurmctld_diag_stats.bf_active) is suspended before it is even
 * authenticated, and resumed when the cycle has ended or BackfillDefer ms
 * have passed.  The cycle holds slurmctld's job and node write locks, so
 * such a request would mostly wait for them anyway; held here, it does
 * not take the CPU from backfill meanwhile (MUNGE, JSON, planning on a
 * shared snapshot).  bf_active is one aligned word that backfill sets
 * before it asks for its locks and clears after it gave them back; it is
 * read without a lock, like sdiag's other counters. */

#ifdef FLEXCO_TEST_HOOKS
/* Testing only: while this file exists, the deferral takes backfill to be
 * in a cycle (FLEXCO_TEST_BACKFILL_ACTIVE_FILE in slurmctld's environment;
 * testsuite/integration/test_plugin_bfdefer.py).  Only in the objects
 * `make check` builds. */
static char *test_bf_file = NULL;
#endif

static bool _bf_active(void)
{
#ifdef FLEXCO_TEST_HOOKS
	if (test_bf_file && !access(test_bf_file, F_OK))
		return true;
#endif
	return snapshot_bf_active();
}

/* the parking's lock held */
static void _park_suspend(void *handle)
{
	MHD_suspend_connection(((req_t *) handle)->conn);
}

/* the parking's lock held; the request may be gone after this */
static void _park_resume(void *handle)
{
	MHD_resume_connection(((req_t *) handle)->conn);
}

/*
 * Hold a complete probe or profile request while backfill is in a cycle
 * (BackfillDefer).  True if it was suspended: microhttpd calls the handler
 * again when the waker resumes it.
 */
static bool _defer(struct MHD_Connection *c, req_t *req, const char *url,
		   const char *method)
{
	flexco_route_t rt;

	req->defer = DEFER_DONE;	/* looked at once only */
	if (!hconf || !hconf->backfill_defer)
		return false;
	flexco_route(method, url, &rt);
	if (rt.status || ((rt.kind != FLEXCO_RT_PROBE) &&
			  (rt.kind != FLEXCO_RT_PROFILE)))
		return false;
	req->conn = c;
	req->defer = DEFER_HELD;	/* before it can be resumed */
	if (flexco_parking_defer(parking, req))
		return true;
	req->defer = DEFER_DONE;
	return false;
}

/* Called by the events module after each batch of new events. */
static void _events_arrived(void)
{
	flexco_parking_notify(parking);
}

/* ---------------------------------------------------------------------- */
/* GET /v1/events */

/* A long poll's look at the ring, under the parking's lock. */
typedef struct {
	req_t *req;
	bool again;		/* resumed before */
	char *json;		/* the answer, if it answers now */
	events_page_t page;
} look_t;

static int _look(void *arg, uint64_t *after)
{
	look_t *l = arg;
	req_t *req = l->req;

	l->json = events_query_json(req->after, req->max, &req->viewer,
				    &l->page);
	if (!l->json)
		return 0;
	if (l->again) {
		/* past events it may not see, up to the latest (core) */
		if (!flexco_events_park(req->after, &(flexco_events_page_t) {
			    .count = l->page.count, .next = l->page.next,
			    .lost = l->page.lost }, l->page.latest))
			return 0;
	} else if (l->page.count || l->page.lost) {
		return 0;
	}
	/* nothing yet (or nothing the caller may see): park it past what
	 * was looked at; set before it can be resumed */
	req->after = *after = l->page.next;
	return 1;
}

/*
 * Answer a long poll that was resumed (an event, its deadline, or stop).
 * If every new event is one the caller may not see (PrivateData) and time
 * is left, park it again past them.
 */
static enum MHD_Result _events_resumed(struct MHD_Connection *c, req_t *req)
{
	look_t l = { .req = req, .again = true };

	if (flexco_parking_poll(parking, req, req->uid, req->daemon_user,
				req->deadline, true, _look, &l, NULL, NULL) ==
	    FLEXCO_PARK_PARKED) {
		free(l.json);
		return MHD_YES;
	}
	return _send(c, req, 200, l.json, NULL);
}

static enum MHD_Result _get_events(struct MHD_Connection *c, req_t *req)
{
	static const char *const allowed[] = { "after", "wait", "max", NULL };
	const char *vals[3];
	flexco_events_query_t q;
	look_t l = { .req = req };
	uint32_t in_way, secs;
	char msg[160], *json = NULL;
	int status, rc;

	/* after, wait and max, strictly (core/capi_decode.h) */
	if ((status = _query_args(c, allowed, vals, NULL, &json)))
		return _send(c, req, status, json, NULL);
	if (flexco_decode_events_query(vals[0], vals[1], vals[2], &q, &json))
		return _send(c, req, 400, json, NULL);

	/* before the parking's lock: may take slurmctld's config lock and
	 * the association manager's user lock (no I/O under either) */
	req->daemon_user = _is_daemon_user(req->uid);
	privacy_viewer_get(req->uid, req->daemon_user, &req->viewer);
	req->has_viewer = true;
	req->after = q.after;
	req->max = (uint32_t) q.max;
	if (!q.wait) {
		events_page_t page;

		json = events_query_json(q.after, req->max, &req->viewer,
					 &page);
		return _send(c, req, 200, json, NULL);
	}
	req->longpoll = true;
	req->conn = c;
	req->deadline = _usec_now() + q.wait * 1000000ULL;
	/* MaxLongPollsPerUser, MaxLongPolls (DaemonUsers exempt): a caller
	 * over them gets 503 with Retry-After, the seconds until the first of
	 * the polls in its way ends at the latest (doc/events.md). */
	rc = flexco_parking_poll(parking, req, req->uid, req->daemon_user,
				 req->deadline, false, _look, &l, &in_way,
				 &secs);
	if (rc == FLEXCO_PARK_PARKED) {
		free(l.json);
		return MHD_YES;
	}
	if (rc == FLEXCO_PARK_ANSWER)
		return _send(c, req, 200, l.json, NULL);
	free(l.json);
	snprintf(req->retry_after, sizeof(req->retry_after), "%u", secs);
	if (rc == FLEXCO_PARK_REFUSED_USER)
		snprintf(msg, sizeof(msg),
			 "uid %u already waits in %u long polls (MaxLongPollsPerUser); retry in %u s",
			 req->uid, in_way, secs);
	else
		snprintf(msg, sizeof(msg),
			 "%u long polls wait already (MaxLongPolls); retry in %u s",
			 in_way, secs);
	debug("%s: %s %s: %s", plugin_type, "GET", req->uri, msg);
	return _error(c, req, 503, "too_many_long_polls", msg);
}

static json_t *_stats_json(void)
{
	json_t *root = json_object(), *reqs = json_array(), *lat, *ep, *codes;
	snapshot_lock_stats_t ls;
	flexco_parking_stats_t ps;
	uint64_t refused[FLEXCO_RATE_KINDS];
	compute_stats_t cs;
	size_t e, i;

	slurm_mutex_lock(&stats_lock);
	for (e = 0; e < EP_COUNT; e++) {
		ep = json_object();
		codes = json_object();
		lat = json_array();
		for (i = 0; i < N_CODES + 1; i++) {
			char key[16];

			if (!stat_count[e][i])
				continue;
			if (i < N_CODES)
				snprintf(key, sizeof(key), "%d", stat_codes[i]);
			else
				snprintf(key, sizeof(key), "other");
			json_object_set_new(codes, key,
					    json_integer(stat_count[e][i]));
		}
		for (i = 0; i < N_LAT; i++) {
			json_t *b = json_object();

			if (i < N_LAT - 1)
				json_object_set_new(b, "le_usec",
						    json_integer(lat_bounds[i]));
			else
				json_object_set_new(b, "le_usec", json_null());
			json_object_set_new(b, "count",
					    json_integer(stat_lat[e][i]));
			json_array_append_new(lat, b);
		}
		json_object_set_new(ep, "endpoint", json_string(ep_names[e]));
		json_object_set_new(ep, "status", codes);
		json_object_set_new(ep, "latency", lat);
		json_array_append_new(reqs, ep);
	}
	slurm_mutex_unlock(&stats_lock);

	snapshot_get_lock_stats(&ls);
	flexco_parking_stats(parking, &ps);
	json_object_set_new(root, "long_polls", json_pack(
		"{s:I, s:I, s:I, s:I, s:I}",
		"waiting", (json_int_t) ps.waiting,
		"total", (json_int_t) ps.total,
		"woken", (json_int_t) ps.woken,
		"timed_out", (json_int_t) ps.timed_out,
		"refused", (json_int_t) ps.refused));
	json_object_set_new(root, "backfill_defer", json_pack(
		"{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"defer_ms", (json_int_t) (hconf ? hconf->backfill_defer : 0),
		"waiting", (json_int_t) ps.deferred,
		"total", (json_int_t) ps.defer_total,
		"released", (json_int_t) ps.defer_released,
		"timed_out", (json_int_t) ps.defer_timed_out,
		"wait_usec_total", (json_int_t) ps.defer_wait_usec,
		"wait_usec_max", (json_int_t) ps.defer_wait_max_usec));
	{
		flexco_http_guard_stats_t gs;

		flexco_http_guard_stats(guard, &gs);
		json_object_set_new(root, "connections", json_pack(
			"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"open", (json_int_t) gs.open,
			"total", (json_int_t) gs.total,
			"cut_headers", (json_int_t) gs.cut_headers,
			"cut_body", (json_int_t) gs.cut_body,
			"evicted", (json_int_t) gs.evicted,
			"body_bytes", (json_int_t) gs.memory_used,
			"body_bytes_max", (json_int_t) gs.memory_peak,
			"body_refused", (json_int_t) gs.memory_refused));
	}
	flexco_rate_refused(rate, refused);
	json_object_set_new(root, "rate_limited", json_pack(
		"{s:I, s:I, s:I}",
		"probe", (json_int_t) refused[FLEXCO_RL_PROBE],
		"profile", (json_int_t) refused[FLEXCO_RL_PROFILE],
		"events", (json_int_t) refused[FLEXCO_RL_EVENTS]));
	json_object_set_new(root, "events", events_stats_json());
	json_object_set_new(root, "reservations", flexco_resv_stats_json());
	json_object_set_new(root, "history_samples",
			    json_integer((json_int_t) history_samples()));
	json_object_set_new(root, "started", json_integer(started_at));
	json_object_set_new(root, "now", json_integer(time(NULL)));
	json_object_set_new(root, "requests", reqs);
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
	return root;
}

static enum MHD_Result _get_stats(struct MHD_Connection *c, req_t *req)
{
	static const char *const allowed[] = { NULL };
	json_t *root;
	char *json = NULL;
	int status;

	if ((status = _query_args(c, allowed, NULL,
				  "stats takes no query parameters", &json)))
		return _send(c, req, status, json, NULL);
	root = _stats_json();
	json = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(root);
	return _send(c, req, 200, json, NULL);
}

/* ---------------------------------------------------------------------- */
/* GET /metrics: the counters of /v1/stats in Prometheus' text format
 * (doc/admin.md, "Prometheus").  Everything is copied under the plugin's
 * own locks (never a slurmctld lock) first, then formatted. */

typedef struct {
	uint64_t count[EP_COUNT][N_CODES + 1];
	uint64_t lat[EP_COUNT][N_LAT];
	uint64_t lat_sum[EP_COUNT];
	snapshot_lock_stats_t ls;
	flexco_parking_stats_t ps;	/* long polls, BackfillDefer */
	flexco_http_guard_stats_t gs;	/* connections */
	uint64_t rate_refused[FLEXCO_RL_CNT];
	json_t *events, *resv;
} metrics_copy_t;

static void _metrics_gather(metrics_copy_t *m)
{
	slurm_mutex_lock(&stats_lock);
	memcpy(m->count, stat_count, sizeof(m->count));
	memcpy(m->lat, stat_lat, sizeof(m->lat));
	memcpy(m->lat_sum, stat_lat_sum, sizeof(m->lat_sum));
	slurm_mutex_unlock(&stats_lock);
	snapshot_get_lock_stats(&m->ls);
	flexco_parking_stats(parking, &m->ps);
	flexco_http_guard_stats(guard, &m->gs);
	flexco_rate_refused(rate, m->rate_refused);
	m->events = events_stats_json();		/* ring_lock, hook_lock */
	m->resv = flexco_resv_stats_json();	/* resv_lock */
}

static double _jnum(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : 0.0;
}

static char *_metrics_text(const metrics_copy_t *m)
{
	static const char *const rl_names[FLEXCO_RL_CNT] = {
		"probe", "profile", "events" };
	const uint64_t hold_usec[SNAPSHOT_HOLD_BUCKETS] =
		SNAPSHOT_HOLD_BOUNDS_USEC;
	double lat_b[N_LAT - 1], hold_b[SNAPSHOT_HOLD_BUCKETS], sum;
	flexco_metrics_t b = { 0 };
	const char *key;
	json_t *v, *o;
	size_t e, i;
	char code[16];

	for (i = 0; i < N_LAT - 1; i++)
		lat_b[i] = lat_bounds[i] / 1e6;
	for (i = 0; i < SNAPSHOT_HOLD_BUCKETS; i++)
		hold_b[i] = hold_usec[i] / 1e6;

	flexco_metrics_family(&b, "flexco_http_requests_total", "counter",
			      "Requests answered, by endpoint and HTTP status (GET /metrics counts as stats).");
	for (e = 0; e < EP_COUNT; e++)
		for (i = 0; i < N_CODES + 1; i++) {
			if (!m->count[e][i])
				continue;
			if (i < N_CODES)
				snprintf(code, sizeof(code), "%d",
					 stat_codes[i]);
			else
				snprintf(code, sizeof(code), "other");
			flexco_metrics_sample(&b, "flexco_http_requests_total",
					      (const char *const[]) {
						      "endpoint", ep_names[e],
						      "code", code, NULL },
					      (double) m->count[e][i]);
		}
	flexco_metrics_family(&b, "flexco_http_request_duration_seconds", "histogram",
			      "Time from a request's first line to its answer, by endpoint.");
	for (e = 0; e < EP_COUNT; e++)
		flexco_metrics_histogram(&b, "flexco_http_request_duration_seconds",
					 (const char *const[]) {
						 "endpoint", ep_names[e], NULL },
					 lat_b, m->lat[e], N_LAT - 1,
					 m->lat_sum[e] / 1e6);

	flexco_metrics_family(&b, "flexco_snapshot_lock_hold_seconds", "histogram",
			      "Each hold of slurmctld's read locks by a snapshot (SnapshotJobsPerHold jobs at most).");
	sum = m->ls.total_usec / 1e6;
	flexco_metrics_histogram(&b, "flexco_snapshot_lock_hold_seconds", NULL,
				 hold_b, m->ls.hold_hist, SNAPSHOT_HOLD_BUCKETS, sum);
	flexco_metrics_family(&b, "flexco_snapshot_lock_wait_seconds_total", "counter",
			      "Time snapshots waited for slurmctld's read locks.");
	flexco_metrics_sample(&b, "flexco_snapshot_lock_wait_seconds_total", NULL,
			      m->ls.wait_total_usec / 1e6);
	flexco_metrics_family(&b, "flexco_snapshots_total", "counter",
			      "Snapshots of slurmctld's state taken.");
	flexco_metrics_sample(&b, "flexco_snapshots_total", NULL,
			      (double) m->ls.count);

	flexco_metrics_family(&b, "flexco_reservations", "gauge",
			      "FlexCo reservation records, by state.");
	o = json_object_get(m->resv, "by_state");
	json_object_foreach(o, key, v)
		flexco_metrics_sample(&b, "flexco_reservations",
				      (const char *const[]) { "state", key, NULL },
				      json_is_number(v) ? json_number_value(v) : 0);
	flexco_metrics_family(&b, "flexco_admission_refused_total", "counter",
			      "Reservation requests refused by admission, by reason.");
	o = json_object_get(m->resv, "refused");
	json_object_foreach(o, key, v)
		flexco_metrics_sample(&b, "flexco_admission_refused_total",
				      (const char *const[]) { "reason", key, NULL },
				      json_is_number(v) ? json_number_value(v) : 0);
	o = json_object_get(m->resv, "state");
	flexco_metrics_family(&b, "flexco_state_save_errors_total", "counter",
			      "Failed saves of the reservation state file.");
	flexco_metrics_sample(&b, "flexco_state_save_errors_total", NULL,
			      _jnum(o, "save_errors"));
	flexco_metrics_family(&b, "flexco_state_saving", "gauge",
			      "1 if the last save of the reservation state file succeeded.");
	flexco_metrics_sample(&b, "flexco_state_saving", NULL,
			      json_is_true(json_object_get(o, "saving")) ? 1 : 0);

	flexco_metrics_family(&b, "flexco_event_buffer_capacity", "gauge",
			      "Events the buffer holds at most (EventBufferSize).");
	flexco_metrics_sample(&b, "flexco_event_buffer_capacity", NULL,
			      _jnum(m->events, "capacity"));
	flexco_metrics_family(&b, "flexco_event_buffer_events", "gauge",
			      "Events in the buffer now.");
	flexco_metrics_sample(&b, "flexco_event_buffer_events", NULL,
			      _jnum(m->events, "retained"));
	flexco_metrics_family(&b, "flexco_events_published_total", "counter",
			      "Events published.");
	flexco_metrics_sample(&b, "flexco_events_published_total", NULL,
			      _jnum(m->events, "published"));
	flexco_metrics_family(&b, "flexco_events_evicted_total", "counter",
			      "Events pushed out of a full buffer.");
	flexco_metrics_sample(&b, "flexco_events_evicted_total", NULL,
			      _jnum(m->events, "evicted"));
	flexco_metrics_family(&b, "flexco_events_dropped_total", "counter",
			      "Events lost before the buffer, by where (full queues).");
	flexco_metrics_sample(&b, "flexco_events_dropped_total",
			      (const char *const[]) { "where", "epilog", NULL },
			      _jnum(m->events, "epilog_dropped"));
	flexco_metrics_sample(&b, "flexco_events_dropped_total",
			      (const char *const[]) { "where", "publish", NULL },
			      _jnum(m->events, "publish_dropped"));

	flexco_metrics_family(&b, "flexco_long_polls_waiting", "gauge",
			      "GET /v1/events long polls waiting now.");
	flexco_metrics_sample(&b, "flexco_long_polls_waiting", NULL,
			      (double) m->ps.waiting);
	flexco_metrics_family(&b, "flexco_long_polls_refused_total", "counter",
			      "Long polls refused (MaxLongPolls, MaxLongPollsPerUser).");
	flexco_metrics_sample(&b, "flexco_long_polls_refused_total", NULL,
			      (double) m->ps.refused);
	flexco_metrics_family(&b, "flexco_backfill_deferred_waiting", "gauge",
			      "Probes and profiles held now while backfill's cycle runs (BackfillDefer).");
	flexco_metrics_sample(&b, "flexco_backfill_deferred_waiting", NULL,
			      (double) m->ps.deferred);
	flexco_metrics_family(&b, "flexco_backfill_deferred_total", "counter",
			      "Probes and profiles held while backfill's cycle ran, by how they were let go.");
	flexco_metrics_sample(&b, "flexco_backfill_deferred_total",
			      (const char *const[]) { "released", "cycle_end", NULL },
			      (double) m->ps.defer_released);
	flexco_metrics_sample(&b, "flexco_backfill_deferred_total",
			      (const char *const[]) { "released", "timeout", NULL },
			      (double) m->ps.defer_timed_out);
	flexco_metrics_family(&b, "flexco_backfill_deferred_seconds_total", "counter",
			      "Time requests were held while backfill's cycle ran.");
	flexco_metrics_sample(&b, "flexco_backfill_deferred_seconds_total", NULL,
			      (double) m->ps.defer_wait_usec / 1e6);
	flexco_metrics_family(&b, "flexco_connections_open", "gauge",
			      "HTTP connections open now.");
	flexco_metrics_sample(&b, "flexco_connections_open", NULL,
			      (double) m->gs.open);
	flexco_metrics_family(&b, "flexco_connections_total", "counter",
			      "HTTP connections accepted.");
	flexco_metrics_sample(&b, "flexco_connections_total", NULL,
			      (double) m->gs.total);
	flexco_metrics_family(&b, "flexco_connections_closed_total", "counter",
			      "Connections closed by FlexCo, by reason.");
	flexco_metrics_sample(&b, "flexco_connections_closed_total",
			      (const char *const[]) { "reason", "header_timeout",
						      NULL }, (double) m->gs.cut_headers);
	flexco_metrics_sample(&b, "flexco_connections_closed_total",
			      (const char *const[]) { "reason", "body_timeout",
						      NULL }, (double) m->gs.cut_body);
	flexco_metrics_sample(&b, "flexco_connections_closed_total",
			      (const char *const[]) { "reason", "make_room", NULL },
			      (double) m->gs.evicted);
	flexco_metrics_family(&b, "flexco_request_memory_refused_total", "counter",
			      "Requests refused for MaxRequestMemory.");
	flexco_metrics_sample(&b, "flexco_request_memory_refused_total", NULL,
			      (double) m->gs.memory_refused);
	flexco_metrics_family(&b, "flexco_rate_limited_total", "counter",
			      "Requests refused by the per-uid rate limits, by endpoint.");
	for (i = 0; i < FLEXCO_RL_CNT; i++)
		flexco_metrics_sample(&b, "flexco_rate_limited_total",
				      (const char *const[]) { "endpoint",
							      rl_names[i], NULL },
				      (double) m->rate_refused[i]);
	flexco_metrics_family(&b, "flexco_start_time_seconds", "gauge",
			      "When the HTTP service started, seconds since the epoch.");
	flexco_metrics_sample(&b, "flexco_start_time_seconds", NULL,
			      (double) started_at);
	return flexco_metrics_take(&b);
}

static enum MHD_Result _get_metrics(struct MHD_Connection *c, req_t *req)
{
	static const char *const allowed[] = { NULL };
	metrics_copy_t m = { 0 };
	char *json = NULL, *text;
	int status;

	if ((status = _query_args(c, allowed, NULL,
				  "metrics takes no query parameters", &json)))
		return _send(c, req, status, json, NULL);
	_metrics_gather(&m);
	text = _metrics_text(&m);	/* no lock held */
	json_decref(m.events);
	json_decref(m.resv);
	if (!text)
		return _send(c, req, 500, NULL, NULL);	/* out of memory */
	return _send_as(c, req, 200, text, NULL, FLEXCO_METRICS_CONTENT_TYPE);
}

/*
 * /v1/reservations                 GET list, POST create
 * /v1/reservations/{id}            GET, PATCH, DELETE
 * /v1/reservations/{id}/confirm    POST
 * /v1/reservations/{id}/jobs       POST; /jobs/{job} GET; /jobs/{job}/release POST
 */
static enum MHD_Result _reservations(struct MHD_Connection *c, req_t *req,
				     const flexco_route_t *rt,
				     const char *method, uid_t uid)
{
	static const char *const allowed[] = { NULL };
	/* the key as verified: signed, and bound to this request */
	const flexco_idem_req_t rq = {
		.key = req->idem_key, .method = method, .target = req->uri,
		.digest = req->digest };
	const flexco_idem_req_t *key = &rq;
	char *json = NULL;
	int status;

	if ((status = _query_args(c, allowed, NULL,
				  "reservations take no query parameters", &json)))
		return _send(c, req, status, json, NULL);
	if (rt->status)
		return _send(c, req, rt->status,
			     flexco_error_json((rt->status == 405) ?
					       "method_not_allowed" :
					       "not_found", rt->message),
			     rt->allow);
	switch (rt->kind) {
	case FLEXCO_RT_RESV_LIST:
		status = flexco_resv_list(uid, &json);
		break;
	case FLEXCO_RT_RESV_CREATE:
		status = flexco_resv_create(uid, key, req->body,
					    req->body_len, &json);
		break;
	case FLEXCO_RT_JOB_SUBMIT:
		status = flexco_resv_job_submit(uid, key, rt->id, req->body,
						req->body_len, &json);
		break;
	case FLEXCO_RT_JOB_GET:
		status = flexco_resv_job_get(uid, rt->id, rt->job, &json);
		break;
	case FLEXCO_RT_JOB_RELEASE:
		status = flexco_resv_job_release(uid, rt->id, rt->job, &json);
		break;
	case FLEXCO_RT_RESV_CONFIRM:
		status = flexco_resv_confirm(uid, key, rt->id, &json);
		break;
	case FLEXCO_RT_RESV_GET:
		status = flexco_resv_get(uid, rt->id, &json);
		break;
	case FLEXCO_RT_RESV_MODIFY:
		status = flexco_resv_modify(uid, key, rt->id, req->body,
					    req->body_len, &json);
		break;
	case FLEXCO_RT_RESV_DELETE:
		status = flexco_resv_delete(uid, key, rt->id, &json);
		break;
	default:
		return _error(c, req, 404, "not_found", "no such endpoint");
	}
	return _send(c, req, status, json, NULL);
}

typedef struct {
	flexco_route_kind_t kind;
	enum MHD_Result (*fn)(struct MHD_Connection *c, req_t *req);
} route_t;

/* http.c's statistics buckets are the router's (core/capi_decode.h) */
_Static_assert(((int) EP_PROFILE == (int) FLEXCO_EP_PROFILE) &&
	       ((int) EP_STATS == (int) FLEXCO_EP_STATS) &&
	       ((int) EP_EVENTS == (int) FLEXCO_EP_EVENTS) &&
	       ((int) EP_RESV == (int) FLEXCO_EP_RESV) &&
	       ((int) EP_PROBE == (int) FLEXCO_EP_PROBE) &&
	       ((int) EP_OTHER == (int) FLEXCO_EP_OTHER),
	       "endpoint buckets differ from the router's");

/*
 * POST /v1/probe: scored offers for a moldable request (doc/probe.md),
 * computed on a snapshot taken for this request (or shared), after
 * unlocking.  When the snapshot's plan cache already holds everything the
 * answer needs, it is made here, in the request's thread; otherwise a
 * compute thread plans (doc/probe.md, "Where a probe is computed").
 */
static enum MHD_Result _post_probe(struct MHD_Connection *c, req_t *req)
{
	static const char *const allowed[] = { NULL };
	char code[64], err[512], *json = NULL;
	flexco_snapshot_t *snap;
	flexco_histories_t *hist;
	flexco_will_run_params_t wp;
	flexco_will_run_answer_t wa;
	bool asked;
	int status;

	if ((status = _query_args(c, allowed, NULL,
				  "probe takes no query parameters", &json)))
		return _send(c, req, status, json, NULL);
	asked = flexco_probe_will_run_params(req->body, req->body_len, &wp);
	hist = history_copy();
	snap = snapshot_share();
	if (asked)	/* after the snapshot: offers see the state before it */
		willrun_ask(req->uid, req->gid, &wp, &wa);
	/* no lock held from here */
	status = flexco_probe_json_cached(snap, req->body, req->body_len,
					  published_share, PROBE_VALID_FOR,
					  hist, asked ? &wa : NULL, &json, code,
					  sizeof(code), err, sizeof(err));
	if (status) {
		compute_count_cached();	/* no thread woken for it */
	} else {
		probe_task_t t = {
			.snap = snap, .body = req->body,
			.body_len = req->body_len, .hist = hist,
			.wa = asked ? &wa : NULL, .json = &json, .code = code,
			.codelen = sizeof(code), .err = err,
			.errlen = sizeof(err),
		};
		compute_run(_probe_task, &t);
		status = t.status;
	}
	if (asked)
		willrun_free(&wa);
	flexco_histories_free(hist);
	snapshot_free(snap);
	return _send(c, req, status, json, NULL);
}

static const route_t routes[] = {
	{ FLEXCO_RT_PROBE, _post_probe },
	{ FLEXCO_RT_PROFILE, _get_profile },
	{ FLEXCO_RT_STATS, _get_stats },
	{ FLEXCO_RT_EVENTS, _get_events },
	{ FLEXCO_RT_METRICS, _get_metrics },
};
#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

/* ---------------------------------------------------------------------- */
/* QueryUsers: who may read profiles, probes, events and stats (daemon
 * users always may); none listed means any authenticated user. */
static bool _may_query(uid_t uid)
{
	int i;

	if (!hconf || !hconf->query_uid_cnt)
		return true;
	for (i = 0; i < hconf->query_uid_cnt; i++)
		if (hconf->query_uids[i] == uid)
			return true;
	for (i = 0; i < hconf->daemon_uid_cnt; i++)
		if (hconf->daemon_uids[i] == uid)
			return true;
	return false;
}

static enum MHD_Result _dispatch(struct MHD_Connection *c, req_t *req,
				 const char *url, const char *method)
{
	const char *auth;
	const route_t *route = NULL;
	flexco_route_t rt;
	char code[64], err[512];
	uid_t uid = 0;
	gid_t gid = 0;
	uint32_t wait;
	int status;
	size_t i;

	/* what answers it (core/capi_decode.h), said after authentication */
	flexco_route(method, url, &rt);
	req->ep = rt.ep;
	for (i = 0; !rt.status && (i < N_ROUTES); i++)
		if (routes[i].kind == rt.kind)
			route = &routes[i];

	/* A standby, or a controller stopping or handing control back, acts
	 * on nothing: its state may be another controller's by now.  Said
	 * before authentication (it tells nothing about the request), so a
	 * client moves to the next SlurmctldHost at once. */
	if (!flexco_ctld_in_charge())
		return _error(c, req, 503, "not_in_charge",
			      "this slurmctld is not the controller in charge; ask the next controller of the cluster");

	/* Authenticate every request before saying anything about it: the
	 * Idempotency-Key, if any, must be the signed one (doc/auth.md). */
	auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_AUTHORIZATION);
	req->idem_key = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "Idempotency-Key");
	/* GET /metrics also takes MetricsTokenFile's bearer token (a
	 * Prometheus server cannot make MUNGE credentials); valid there
	 * only: anywhere else a bearer token is no credential. */
	if ((rt.kind == FLEXCO_RT_METRICS) && route && flexco_is_bearer(auth)) {
		if (hconf && hconf->metrics_token &&
		    flexco_bearer_matches(auth, hconf->metrics_token)) {
			debug2("%s: %s %s with the metrics token", plugin_type,
			       method, req->uri);
			return route->fn(c, req);
		}
		debug("%s: %s %s: %s", plugin_type, method, req->uri,
		      hconf && hconf->metrics_token ?
		      "wrong metrics token" : "no MetricsTokenFile is set");
		return _error(c, req, 401, "invalid_token",
			      (hconf && hconf->metrics_token) ?
			      "the bearer token is not MetricsTokenFile's" :
			      "no MetricsTokenFile is set: use MUNGE");
	}
	status = flexco_verifier_verify(verifier, method, req->uri,
					req->body, req->body_len, auth,
					req->idem_key, &uid, &gid, req->digest,
					code, sizeof(code), err, sizeof(err));
	if (status != 200) {
		debug("%s: %s %s: %s", plugin_type, method, req->uri, err);
		return _error(c, req, status, code, err);
	}

	if (rt.ep == EP_RESV)
		return _reservations(c, req, &rt, method, uid);
	if (!route)
		return _send(c, req, rt.status ? rt.status : 404,
			     flexco_error_json((rt.status == 405) ?
					       "method_not_allowed" :
					       "not_found", rt.message),
			     rt.allow);
	if (!_may_query(uid)) {
		char msg[96];

		snprintf(msg, sizeof(msg), "uid %u is not in QueryUsers", uid);
		return _error(c, req, 403, "forbidden", msg);
	}
	if ((wait = _rate_take(req->ep, uid))) {
		char msg[160];

		snprintf(req->retry_after, sizeof(req->retry_after), "%u",
			 wait);
		snprintf(msg, sizeof(msg),
			 "uid %u: more than %u %s requests in %u s (%s); retry in %u s",
			 uid, hconf->rate_count[_rl_index(req->ep)],
			 ep_names[req->ep], hconf->rate_secs[_rl_index(req->ep)],
			 _rl_keys[_rl_index(req->ep)], wait);
		debug("%s: %s %s: %s", plugin_type, method, req->uri, msg);
		return _error(c, req, 429, "rate_limited", msg);
	}
	debug2("%s: %s %s uid=%u", plugin_type, method, req->uri, uid);
	req->uid = uid;
	req->gid = gid;
	return route->fn(c, req);
}

/* Strict decimal Content-Length; -1 if absent or malformed. */
static int64_t _content_length(struct MHD_Connection *c)
{
	const char *s = MHD_lookup_connection_value(
		c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	uint64_t v;

	if (!s || flexco_decode_u64(s, INT64_MAX, &v))
		return -1;
	return (int64_t) v;
}

static enum MHD_Result _too_large(struct MHD_Connection *c, req_t *req)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "request body larger than %u bytes",
		 max_body);
	return _error(c, req, 413, "payload_too_large", msg);
}

static enum MHD_Result _no_memory(struct MHD_Connection *c, req_t *req)
{
	char msg[160];

	snprintf(msg, sizeof(msg),
		 "request bodies being received hold MaxRequestMemory=%u bytes; retry later",
		 hconf->max_request_memory);
	return _error(c, req, 503, "request_memory_full", msg);
}

static enum MHD_Result _handler(void *cls, struct MHD_Connection *c,
				const char *url, const char *method,
				const char *version, const char *upload_data,
				size_t *upload_data_size, void **con_cls)
{
	req_t *req = *con_cls;

	(void) cls;
	(void) version;
	if (!req)
		return MHD_NO;	/* out of memory in _uri_log: drop it */
	if (req->longpoll)	/* resumed: authenticated before suspending */
		return _events_resumed(c, req);

	if (!req->started) {
		int v;

		/* headers complete: the body's clock starts */
		req->started = true;
		if (!_conn_phase(c, FLEXCO_HTTP_BODY))
			return MHD_NO;
		if (req->uri_too_long) {
			if (!_conn_phase(c, FLEXCO_HTTP_SERVING))
				return MHD_NO;
			return _error(c, req, 414, "uri_too_long",
				      "request target too long");
		}
		if (!(req->bodyb = flexco_http_body_new(guard)))
			return MHD_NO;
		/* the whole declared body from MaxRequestMemory, now, before
		 * a byte of it is read */
		v = flexco_http_body_begin(req->bodyb, _content_length(c));
		if (v == FLEXCO_BODY_FAILED)
			return MHD_NO;
		if (v != FLEXCO_BODY_OK) {
			if (!_conn_phase(c, FLEXCO_HTTP_SERVING))
				return MHD_NO;
			return (v == FLEXCO_BODY_TOO_LARGE) ?
				_too_large(c, req) : _no_memory(c, req);
		}
		return MHD_YES;
	}

	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (!_conn_phase(c, FLEXCO_HTTP_BODY))
			return MHD_NO;	/* past BodyTimeout: 408 sent */
		/* over a limit the rest is discarded, answered at the end */
		if (flexco_http_body_add(req->bodyb, upload_data, n) ==
		    FLEXCO_BODY_FAILED)
			return MHD_NO;
		return MHD_YES;
	}

	/* the request is complete: no deadline while it is served */
	if (!_conn_phase(c, FLEXCO_HTTP_SERVING))
		return MHD_NO;
	switch (flexco_http_body_verdict(req->bodyb)) {
	case FLEXCO_BODY_OK:
		break;
	case FLEXCO_BODY_TOO_LARGE:
		return _too_large(c, req);
	case FLEXCO_BODY_NO_MEMORY:
		return _no_memory(c, req);
	default:
		return MHD_NO;
	}
	req->body = flexco_http_body_data(req->bodyb);
	req->body_len = flexco_http_body_size(req->bodyb);
	if ((req->defer == DEFER_NONE) && _defer(c, req, url, method))
		return MHD_YES;	/* held while backfill's cycle runs */
	return _dispatch(c, req, url, method);
}

/*
 * The socket address of a numeric IPv4 or IPv6 address and a port, into
 * *sin or *sin6 (*v6 set for IPv6); NULL if address is neither.
 */
static struct sockaddr *_sockaddr(const char *address, uint16_t port,
				  struct sockaddr_in *sin,
				  struct sockaddr_in6 *sin6, bool *v6)
{
	memset(sin, 0, sizeof(*sin));
	memset(sin6, 0, sizeof(*sin6));
	*v6 = false;
	if (inet_pton(AF_INET, address, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return (struct sockaddr *) sin;
	}
	if (inet_pton(AF_INET6, address, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*v6 = true;
		return (struct sockaddr *) sin6;
	}
	return NULL;
}

/* After a failed start or once microhttpd stopped: the rate limits go,
 * the parking is closed (it is kept: see its definition). */
static void _services_free(void)
{
	events_set_listener(NULL);
	flexco_parking_stop(parking);
	flexco_rate_destroy(rate);
	rate = NULL;
}

extern int http_start(const flexco_conf_t *conf)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_ERROR_LOG | MHD_USE_AUTO |
			     MHD_ALLOW_SUSPEND_RESUME;
	struct MHD_OptionItem guard_opts[8];
	char err[512];
	bool v6;

	slurm_mutex_lock(&daemon_lock);
	if (daemon_ptr) {
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
						  err, sizeof(err));
		if (!verifier) {
			slurm_mutex_unlock(&daemon_lock);
			error("%s: cannot set up MUNGE verification: %s",
			      plugin_type, err);
			return SLURM_ERROR;
		}
	}
	max_body = conf->max_request_size;
	published_share = conf->published_share;
	hconf = conf;
#ifdef FLEXCO_TEST_HOOKS
	xfree(test_bf_file);
	if (getenv("FLEXCO_TEST_BACKFILL_ACTIVE_FILE")) {
		test_bf_file = xstrdup(getenv("FLEXCO_TEST_BACKFILL_ACTIVE_FILE"));
		info("%s: FLEXCO_TEST_BACKFILL_ACTIVE_FILE=%s: backfill counts as in a cycle while it exists (testing only)",
		     plugin_type, test_bf_file);
	}
#endif

	/* rate limits and parking before the first request can come */
	{
		flexco_parking_limits_t pl = {
			.max_long_polls_per_user =
				conf->max_long_polls_per_user,
			.max_long_polls = conf->max_long_polls,
			.defer_usec = (uint64_t) conf->backfill_defer * 1000,
		};
		flexco_parking_host_t ph = {
			.suspend = _park_suspend,
			.resume = _park_resume,
			.latest = events_latest,
			.backfill_active = _bf_active,
		};

		rate = flexco_rate_create(conf->rate_count, conf->rate_secs);
		if (!parking)
			parking = flexco_parking_create(&ph);
		if (!rate || !parking ||
		    !flexco_parking_open(parking, &pl, "flexco_waker")) {
			error("%s: cannot start the long-poll thread",
			      plugin_type);
			_services_free();
			slurm_mutex_unlock(&daemon_lock);
			return SLURM_ERROR;
		}
	}
	events_set_listener(_events_arrived);

	/* flexco.conf checked it: numeric */
	sa = _sockaddr(conf->listen_address, conf->listen_port, &sin, &sin6,
		       &v6);
	if (v6)
		flags |= MHD_USE_IPv6;

	{
		flexco_http_limits_t lim = {
			.max_connections = conf->max_connections,
			.max_connections_per_address =
				conf->max_connections_per_address,
			.connection_timeout = conf->connection_timeout,
			.header_timeout = conf->header_timeout,
			.body_timeout = conf->body_timeout,
			.max_request_size = conf->max_request_size,
			.max_request_memory = conf->max_request_memory,
		};

		if (!(guard = flexco_http_guard_create(&lim, _guard_log)) ||
		    !flexco_http_guard_options(guard, guard_opts,
					       ARRAY_SIZE(guard_opts)) ||
		    !flexco_http_guard_start(guard, "flexco_reaper")) {
			error("%s: cannot start the connection reaper",
			      plugin_type);
			flexco_http_guard_destroy(guard);
			guard = NULL;
			_services_free();
			slurm_mutex_unlock(&daemon_lock);
			return SLURM_ERROR;
		}
	}

	MHD_set_panic_func(_mhd_panic, NULL);	/* never abort() slurmctld */
	daemon_ptr = MHD_start_daemon(
		flags, conf->listen_port, NULL, NULL, _handler, NULL,
		/* first, or microhttpd logs the options' errors elsewhere */
		MHD_OPTION_EXTERNAL_LOGGER, _mhd_log, NULL,
		MHD_OPTION_SOCK_ADDR, sa,
		/* MaxConnections, MaxConnectionsPerAddress, ConnectionTimeout
		 * and the connection records: the guard's */
		MHD_OPTION_ARRAY, guard_opts,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) HEADER_MEMORY,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned int) conf->http_threads,
		MHD_OPTION_URI_LOG_CALLBACK, _uri_log, NULL,
		MHD_OPTION_NOTIFY_COMPLETED, _completed, NULL,
		MHD_OPTION_END);
	if (!daemon_ptr) {
		flexco_http_guard_stop(guard);
		flexco_http_guard_destroy(guard);
		guard = NULL;
		_services_free();
		slurm_mutex_unlock(&daemon_lock);
		error("%s: cannot listen on %s port %u (will retry)",
		      plugin_type, conf->listen_address, conf->listen_port);
		return SLURM_ERROR;
	}
	started_at = time(NULL);
	slurm_mutex_unlock(&daemon_lock);
	info("%s: listening on http://%s:%u/v1/ (MUNGE socket %s)",
	     plugin_type, conf->listen_address, conf->listen_port,
	     conf->munge_socket);
	return SLURM_SUCCESS;
}

extern bool http_running(void)
{
	bool running;

	slurm_mutex_lock(&daemon_lock);
	running = (daemon_ptr != NULL);
	slurm_mutex_unlock(&daemon_lock);
	return running;
}

extern void http_stop(void)
{
	struct MHD_Daemon *d;

	slurm_mutex_lock(&daemon_lock);
	d = daemon_ptr;
	daemon_ptr = NULL;
	slurm_mutex_unlock(&daemon_lock);

	/* Resume every long poll first: microhttpd aborts if stopped with a
	 * suspended connection. */
	events_set_listener(NULL);
	flexco_parking_stop(parking);
	/* no shutdown() while microhttpd stops */
	flexco_http_guard_stop(guard);
	if (d) {
		MHD_stop_daemon(d);	/* joins microhttpd's threads */
		info("%s: HTTP service stopped", plugin_type);
	}
	flexco_http_guard_destroy(guard);	/* no connection left */
	guard = NULL;
	_services_free();
	flexco_verifier_destroy(verifier);
	verifier = NULL;
}

/* ---------------------------------------------------------------------- */
/* FlexCo idle: every request answered 503 with the reason */

static struct MHD_Daemon *idle_ptr = NULL;	/* daemon_lock */
static char *idle_body = NULL;			/* daemon_lock */

static enum MHD_Result _idle_handler(void *cls, struct MHD_Connection *c,
				     const char *url, const char *method,
				     const char *version,
				     const char *upload_data,
				     size_t *upload_data_size, void **con_cls)
{
	static int marker;
	struct MHD_Response *resp;
	enum MHD_Result rc;

	(void) url;
	(void) method;
	(void) version;
	(void) upload_data;
	if (!*con_cls) {		/* headers: nothing to decide yet */
		*con_cls = &marker;
		return MHD_YES;
	}
	if (*upload_data_size) {	/* a body: read and dropped */
		*upload_data_size = 0;
		return MHD_YES;
	}
	resp = MHD_create_response_from_buffer(strlen(cls), cls,
					       MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Retry-After", "60");
	rc = MHD_queue_response(c, 503, resp);
	MHD_destroy_response(resp);
	return rc;
}

extern int http_start_idle(const char *address, uint16_t port,
			   const char *why)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_ERROR_LOG;
	char msg[768];
	bool v6;

	if (!(sa = _sockaddr(address, port, &sin, &sin6, &v6)))
		return SLURM_ERROR;
	if (v6)
		flags |= MHD_USE_IPv6;
	slurm_mutex_lock(&daemon_lock);
	if (idle_ptr) {
		slurm_mutex_unlock(&daemon_lock);
		return SLURM_SUCCESS;
	}
	snprintf(msg, sizeof(msg),
		 "FlexCo is idle on this cluster: %s; the cluster's admin must fix flexco.conf and reconfigure or restart slurmctld",
		 why && *why ? why : "flexco.conf is unusable (see slurmctld's log)");
	free(idle_body);
	idle_body = flexco_error_json("flexco_idle", msg);
	MHD_set_panic_func(_mhd_panic, NULL);	/* never abort() slurmctld */
	/* small and bounded: it only ever says why it is idle */
	idle_ptr = MHD_start_daemon(
		flags, port, NULL, NULL, _idle_handler, idle_body,
		MHD_OPTION_EXTERNAL_LOGGER, _mhd_log, NULL,
		MHD_OPTION_SOCK_ADDR, sa,
		MHD_OPTION_CONNECTION_LIMIT, 64U,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, 8U,
		MHD_OPTION_CONNECTION_TIMEOUT, 10U,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) HEADER_MEMORY,
		MHD_OPTION_END);
	slurm_mutex_unlock(&daemon_lock);
	if (!idle_ptr) {
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
	struct MHD_Daemon *d;

	slurm_mutex_lock(&daemon_lock);
	d = idle_ptr;
	idle_ptr = NULL;
	slurm_mutex_unlock(&daemon_lock);
	if (d)
		MHD_stop_daemon(d);
	slurm_mutex_lock(&daemon_lock);
	free(idle_body);
	idle_body = NULL;
	slurm_mutex_unlock(&daemon_lock);
}
