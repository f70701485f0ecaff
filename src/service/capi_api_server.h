/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_api_server.h - the C interface of src/service/api_server: the
 * slurmctld plugin's HTTP+JSON service (doc/api.md) on libmicrohttpd,
 * behind a host of callbacks that plugin/http.c implements.
 *
 * The server does everything that needs no Slurm: the microhttpd daemon
 * with the connection guard's limits (service/capi_http.h), the request
 * record and its phases, 414, the body through MaxRequestMemory (413, 503
 * request_memory_full), the JSON answers and errors (Retry-After, Allow,
 * WWW-Authenticate), strict query parameters, the routing and the order
 * of the checks (not in charge: 503 before authentication; the
 * MetricsTokenFile bearer on GET /metrics only; MUNGE through the host's
 * verify; QueryUsers 403; the per-uid rate limits 429, DaemonUsers
 * exempt), the reservation requests (service/capi_resv_service.h), long
 * polls and BackfillDefer (service/parking.hpp), the per-endpoint
 * statistics and latency histogram, /v1/stats and GET /metrics.  The host
 * answers what needs slurmctld: whether this controller is in charge,
 * verification, profiles, probes, the events ring and the PrivateData
 * viewer, and the members of /v1/stats and families of /metrics that come
 * from Slurm-side modules.  testsuite/unit/check_api_server runs the real
 * server on 127.0.0.1 with a fake host.
 *
 * Host calls are made from microhttpd's threads (and, for latest and
 * backfill_active, the parking's waker) with none of the server's locks
 * held, except that events_page runs under the parking's lock (no event
 * may slip in between a long poll's look and its park).  Every function
 * catches whatever the C++ side throws.
 */

#ifndef FLEXCO_SERVICE_CAPI_API_SERVER_H
#define FLEXCO_SERVICE_CAPI_API_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service/capi_http.h"
#include "service/capi_metrics.h"
#include "service/capi_resv_service.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels of flexco_api_host_t.log. */
enum { FLEXCO_API_ERROR = 0, FLEXCO_API_INFO = 1, FLEXCO_API_DEBUG = 2,
       FLEXCO_API_DEBUG2 = 3 };

/* The kinds of rate-limited requests (flexco.conf's FLEXCO_RL_* order). */
enum { FLEXCO_API_RL_PROBE, FLEXCO_API_RL_PROFILE, FLEXCO_API_RL_EVENTS,
       FLEXCO_API_RL_CNT };

/* What one look at the events ring found (plugin/events.h's
 * events_page_t). */
typedef struct {
	uint64_t next;		/* the "after" to ask with next time */
	uint64_t latest;	/* highest sequence number issued */
	uint32_t count;		/* events in this page */
	bool lost;		/* some event after "after" is gone */
} flexco_api_page_t;

/*
 * What the server asks of its host.  Every member is required.  JSON
 * documents the host returns through char ** are malloc'd (the server
 * frees them); NULL is answered 500 out of memory.
 */
typedef struct {
	void *arg;			/* passed to every call */
	/* one line, without the plugin's prefix */
	void (*log)(void *arg, int level, const char *msg);
	/* this slurmctld is the controller in charge */
	bool (*in_charge)(void *arg);
	/* core/capi_auth.h's flexco_verifier_verify() */
	int (*verify)(void *arg, const char *method, const char *target,
		      const char *body, size_t body_len,
		      const char *authorization, const char *idem_key,
		      uint32_t *uid, uint32_t *gid, char *digest,
		      char *code, size_t codelen, char *err, size_t errlen,
		      char *grant, size_t grantlen);
	/* slurmctld's backfill scheduler is in a cycle (BackfillDefer) */
	bool (*backfill_active)(void *arg);
	/* POST /v1/probe of an authenticated uid: a status, *json_out */
	int (*probe)(void *arg, uint32_t uid, uint32_t gid, const char *body,
		     size_t body_len, char **json_out);
	/* GET /v1/profile, its query decoded: a status, *json_out */
	int (*profile)(void *arg, const char *partition, int64_t horizon,
		       char **json_out);
	/* GET /v1/events: what PrivateData lets uid see (freed with
	 * viewer_free; called with no lock of the server held); a page of
	 * the events after `after` (the answer's document, NULL if out of
	 * memory) and the newest event's number (the parking's waker) */
	void *(*viewer_new)(void *arg, uint32_t uid, bool daemon_user);
	void (*viewer_free)(void *arg, void *viewer);
	char *(*events_page)(void *arg, uint64_t after, uint32_t max,
			     const void *viewer, flexco_api_page_t *page);
	uint64_t (*events_latest)(void *arg);
	/* the reservation service of /v1/reservations (may be NULL: 500) */
	flexco_rsvc_t *(*resv)(void *arg);
	/* /v1/stats: set the members that come from Slurm-side modules
	 * ("events", "reservations", "snapshot_lock", "compute",
	 * "history_samples") into root.  GET /metrics reads its events and
	 * reservation families from "events" and "reservations". */
	void (*stats)(void *arg, json_t *root);
	/* GET /metrics: the snapshot families, written after the requests' */
	void (*metrics)(void *arg, flexco_metrics_t *b);
} flexco_api_host_t;

/* What flexco.conf says that the server needs (copied by start). */
typedef struct {
	const char *listen_address;	/* numeric IPv4 or IPv6 */
	uint16_t listen_port;		/* 0: any (the unit tests) */
	uint32_t http_threads;		/* HttpThreads */
	flexco_http_limits_t limits;	/* connections and bodies */
	uint32_t max_long_polls_per_user, max_long_polls;
	uint32_t backfill_defer;	/* ms; 0: off */
	uint32_t rate_count[FLEXCO_API_RL_CNT];	/* 0: no limit */
	uint32_t rate_secs[FLEXCO_API_RL_CNT];
	const uint32_t *daemon_uids;	/* DaemonUsers */
	size_t daemon_uid_cnt;
	const uint32_t *query_uids;	/* QueryUsers; none: anyone */
	size_t query_uid_cnt;
	const char *metrics_token;	/* MetricsTokenFile's; NULL: none */
} flexco_api_conf_t;

typedef struct flexco_api_server flexco_api_server_t;

/*
 * One per process, stopped until started; the plugin keeps it for the
 * life of slurmctld, so that a late notify from the events thread never
 * finds it freed.  NULL if out of memory.
 */
extern flexco_api_server_t *flexco_api_server_create(void);
extern void flexco_api_server_destroy(flexco_api_server_t *s);

/*
 * Start serving (a no-op if running): the parking and rate limits, the
 * guard's reaper, then microhttpd.  0, or -1 with the reason logged
 * through host->log.  conf and host are copied.
 */
extern int flexco_api_server_start(flexco_api_server_t *s,
				   const flexco_api_conf_t *conf,
				   const flexco_api_host_t *host);
extern bool flexco_api_server_running(flexco_api_server_t *s);
/* The port listened on (the bound one when listen_port was 0); 0 if
 * stopped. */
extern uint16_t flexco_api_server_port(flexco_api_server_t *s);
/* Answer every parked request, stop microhttpd and the reaper. */
extern void flexco_api_server_stop(flexco_api_server_t *s);
/* New events arrived: parked long polls look again. */
extern void flexco_api_server_notify(flexco_api_server_t *s);

/*
 * FlexCo idle: a small server that answers every request 503 flexco_idle
 * with the reason (doc/admin.md).  0 with *out, -1 if address is not a
 * numeric address, -2 if it cannot listen.  log may be NULL.
 */
typedef struct flexco_api_idle flexco_api_idle_t;
extern int flexco_api_idle_start(const char *address, uint16_t port,
				 const char *why,
				 void (*log)(void *arg, int level,
					     const char *msg),
				 void *log_arg, flexco_api_idle_t **out);
extern uint16_t flexco_api_idle_port(flexco_api_idle_t *i);
extern void flexco_api_idle_stop(flexco_api_idle_t *i);

#ifdef __cplusplus
}
#endif

#endif
