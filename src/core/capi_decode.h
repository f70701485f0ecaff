/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_decode.h - strict decoders of the plugin's request bodies and query
 * parameters, for the slurmctld plugin (issue 14 §2).  Nothing here knows
 * Slurm: each decoder turns outside bytes into a plain C struct or an HTTP
 * status with a JSON error, so it is unit-tested (testsuite/unit/
 * check_decode.cpp) and fuzzed (testsuite/fuzz/fuzz_plugin_decode.cpp)
 * without slurmctld.  The plugin then checks what needs Slurm (the user
 * exists, the reservation is live) and acts.
 *
 * Conventions (as capi_profile.h): no C++ type or exception crosses this
 * interface; a decoder returns 0 on success, else an HTTP status (400)
 * with *json_out set to a malloc'd {"error":{"code":"bad_request",
 * "message":...}} document (free() it).  Bodies need not be
 * NUL-terminated.  Every string a struct holds is malloc'd and freed by its
 * _free function; a failed decode leaves nothing to free.  Every rule and
 * bound below is documented in doc/reservations.md and doc/events.md.
 */
#ifndef FLEXCO_CORE_CAPI_DECODE_H
#define FLEXCO_CORE_CAPI_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds of a part job (POST /v1/reservations/{id}/jobs). */
#define FLEXCO_JOB_MAX_SCRIPT (4 * 1024 * 1024)
#define FLEXCO_JOB_MAX_ARGS 1024
#define FLEXCO_JOB_MAX_ENV 1024
#define FLEXCO_JOB_MAX_STR 4096
#define FLEXCO_JOB_MAX_PARTS 64
#define FLEXCO_JOB_MAX_TIME (366 * 86400)

/* The admission window of a reservation (doc/reservations.md). */
#define FLEXCO_RESV_MIN_DURATION 60
#define FLEXCO_RESV_MAX_DURATION (366 * 86400)
#define FLEXCO_RESV_PAST_START 60	/* a start this far back means now */
#define FLEXCO_RESV_MAX_NODES 1000000
#define FLEXCO_RESV_DEFAULT_CONFIRM 120
#define FLEXCO_RESV_MAX_CONFIRM 3600

/* GET /v1/events parameters. */
#define FLEXCO_EVENTS_MAX_WAIT 60
#define FLEXCO_EVENTS_MAX_MAX 1000
#define FLEXCO_EVENTS_DEFAULT_MAX 100

typedef struct {
	char *script;		/* required, starts with #! */
	char **argv;		/* argc strings (NULL-terminated) */
	uint32_t argc;
	char **env;		/* "NAME=value", env_cnt of them (NULL-terminated) */
	uint32_t env_cnt;
	char *work_dir;		/* absolute, or NULL */
	char *std_out;
	char *std_err;
	char *name;
	char *coallocation;
	char *account;		/* the job's account, NULL: the user's default */
	char *qos;		/* the job's QOS, NULL: the default */
	int64_t time_limit;	/* seconds, 0 if not given */
	int64_t nodes;		/* 0 if not given */
	int64_t part_index;	/* -1 if not given */
	char *parts;		/* "alpha:2,beta:4", NULL if not given */
	int64_t start;		/* common start, 0 if not given */
	int hold;		/* "hold": true: submitted held (priority 0)
				 * until POST .../jobs/{job}/release */
	char *rendezvous_url;	/* "rendezvous": flexcod's start-up
				 * rendezvous for this part (its URL and the
				 * part's capability token), NULL if not given */
	char *rendezvous_token;
} flexco_jobspec_t;

int flexco_decode_jobspec(const char *body, size_t len, flexco_jobspec_t *spec,
			  char **json_out);
void flexco_jobspec_free(flexco_jobspec_t *spec);

/*
 * POST /v1/reservations/{id}/jobs/{job}/release's optional body (the start
 * gate, doc/reservations.md): none (release for good), {"lease_end": T}
 * with T >= 1, or {"confirm": true}; anything else is 400 with an error
 * document in *json_out.
 */
int flexco_decode_release(const char *body, size_t len, int64_t *lease_end,
			  bool *confirm, char **json_out);

typedef struct {
	char *user;		/* 1-64 bytes; the plugin resolves it */
	char *partition;	/* 1-64 bytes, or NULL: the default */
	char *owner;		/* 1-64 of A-Z a-z 0-9 . _ -, or NULL */
	int64_t nodes;
	int64_t start;
	int64_t duration;
	int64_t confirm_within;
} flexco_resv_create_t;

/* POST /v1/reservations against the admission window at now. */
int flexco_decode_resv_create(const char *body, size_t len, int64_t now,
			      flexco_resv_create_t *req, char **json_out);
void flexco_resv_create_free(flexco_resv_create_t *req);

/* PATCH /v1/reservations/{id}: a member left out keeps its given value
 * (the reservation's current one), which is then not checked. */
typedef struct {
	int64_t start;
	int64_t nodes;
	int64_t duration;
} flexco_resv_modify_t;

int flexco_decode_resv_modify(const char *body, size_t len, int64_t now,
			      flexco_resv_modify_t *req, char **json_out);

/* The owner rule on its own (also for state files): 1-64 of A-Z a-z 0-9 . _ - */
bool flexco_owner_ok(const char *s);

/*
 * GET /v1/events?after=&wait=&max= (each NULL when absent): after 0..2^63-1
 * (default 0), wait 0..60 s (default 0), max 1..1000 (default 100).
 */
typedef struct {
	uint64_t after;
	uint64_t wait;
	uint64_t max;
} flexco_events_query_t;

int flexco_decode_events_query(const char *after, const char *wait,
			       const char *max, flexco_events_query_t *q,
			       char **json_out);

/*
 * GET /v1/profile?partition=&horizon= (each NULL when absent): partition
 * at most 256 bytes (left NULL when absent: the default partition),
 * horizon 1..366 days in seconds (default one day).
 */
#define FLEXCO_PROFILE_DEFAULT_HORIZON (24 * 3600)
#define FLEXCO_PROFILE_MAX_HORIZON (366 * 86400)
#define FLEXCO_PROFILE_MAX_PARTITION 256

int flexco_decode_profile_query(const char *partition, const char *horizon,
				int64_t *horizon_out, char **json_out);

/* A decimal u64 in [0, max] with no sign, space or leading junk: 0 or -1. */
int flexco_decode_u64(const char *s, uint64_t max, uint64_t *out);

/*
 * The plugin's endpoints: method and path (the request target without its
 * query string, as microhttpd gives it) to what answers it.  status 0: kind
 * says which; 404: no such path; 405: the path exists, allow lists its
 * methods.  message is the error's text for 404/405.  id is the
 * reservation id as written (1-31 bytes, checked by its handler); job
 * points into path (the part job id as written).  ep is the statistics
 * bucket (FLEXCO_EP_*), set for 404/405 too.
 */
typedef enum {
	FLEXCO_RT_NONE,
	FLEXCO_RT_PROBE,		/* POST /v1/probe */
	FLEXCO_RT_PROFILE,		/* GET /v1/profile */
	FLEXCO_RT_STATS,		/* GET /v1/stats */
	FLEXCO_RT_EVENTS,		/* GET /v1/events */
	FLEXCO_RT_RESV_LIST,		/* GET /v1/reservations */
	FLEXCO_RT_RESV_CREATE,		/* POST /v1/reservations */
	FLEXCO_RT_RESV_GET,		/* GET /v1/reservations/{id} */
	FLEXCO_RT_RESV_MODIFY,		/* PATCH /v1/reservations/{id} */
	FLEXCO_RT_RESV_DELETE,		/* DELETE /v1/reservations/{id} */
	FLEXCO_RT_RESV_CONFIRM,		/* POST /v1/reservations/{id}/confirm */
	FLEXCO_RT_JOB_SUBMIT,		/* POST /v1/reservations/{id}/jobs */
	FLEXCO_RT_JOB_GET,		/* GET /v1/reservations/{id}/jobs/{job} */
	FLEXCO_RT_METRICS,		/* GET /metrics (counted as stats) */
	FLEXCO_RT_JOB_RELEASE,		/* POST /v1/reservations/{id}/jobs/{job}/release */
} flexco_route_kind_t;

enum { FLEXCO_EP_PROFILE, FLEXCO_EP_STATS, FLEXCO_EP_EVENTS, FLEXCO_EP_RESV,
       FLEXCO_EP_PROBE, FLEXCO_EP_OTHER };

typedef struct {
	flexco_route_kind_t kind;
	int status;		/* 0, 404 or 405 */
	int ep;
	const char *allow;	/* for 405 */
	char message[160];	/* for 404/405 */
	char id[32];
	const char *job;	/* into the path, or job_buf */
	char job_buf[32];
} flexco_route_t;

void flexco_route(const char *method, const char *path, flexco_route_t *r);

/*
 * The reservation state file (StateSaveLocation/flexco_resv.json, written
 * by plugin/resv.c): {"version":1, "next_id", "reservations":[...],
 * "requests":[...]}.  Strict: any malformed record rejects the whole copy
 * (a sign of corruption: the plugin tries the previous copy), with a
 * reason in why.  Checked here: every member and its type, ids 1..2^53
 * without repeats, names "flexco_<id>", state names, uids and node counts
 * within 32 bits, at most max_records records of at most max_jobs part
 * jobs, and a request record's binding (method, target, body_sha256: all
 * or none, the digest 64 hex digits).  All strings are malloc'd.
 */
typedef struct {
	int64_t job_id;
	int part_index;
	int64_t submitted;
	bool started, ended;
	/* the start gate (doc/reservations.md, "The start gate"): the end
	 * of the start lease by this cluster's clock (0: none), confirmed
	 * (the lease no longer applies), lapsed (ended unconfirmed: the job
	 * was cancelled and can never be released again).  Absent in older
	 * state files: 0, false, false. */
	int64_t lease_end;
	bool confirmed, lapsed;
	/* submitted held and not released through the API since: a start
	 * of it is someone else's release (absent in older files: false) */
	bool gated;
} flexco_state_job_t;

typedef struct {
	int64_t id;
	char *user;
	int64_t uid, nodes, start, end, created, changed;
	char *state;		/* creating, tentative, confirmed, ended, deleted, expired */
	char *partition, *node_list, *reason, *owner;	/* NULL when null */
	int64_t confirm_by;	/* 0 when null */
	flexco_state_job_t *jobs;
	size_t job_cnt;
	/* a part-job submission under way when the state was saved (written
	 * ahead of it): its Idempotency-Key (NULL: none under way), the uid
	 * that sent it, the part index, when it began, and the request it
	 * came in (target, body digest; "" when it had no key) */
	char *submit_key, *submit_target, *submit_digest;
	int64_t submit_uid, submit_part, submit_since;
} flexco_state_resv_t;

typedef struct {
	char *key;
	int64_t uid;
	int status;
	char *response;
	int64_t when;
	char *method, *target, *digest;	/* all NULL: saved unbound */
} flexco_state_key_t;

/* The highest Flexco-Epoch seen from a flexcod grid (core/epoch.hpp). */
typedef struct {
	char *grid;
	int64_t epoch;
} flexco_state_epoch_t;

typedef struct {
	int64_t next_id;
	flexco_state_resv_t *resvs;
	size_t resv_cnt;
	flexco_state_key_t *keys;
	size_t key_cnt;
	/* "epochs" (optional: written when there is one, a state file
	 * without it loads with none) */
	flexco_state_epoch_t *epochs;
	size_t epoch_cnt;
} flexco_resv_state_t;

int flexco_decode_resv_state(const char *text, size_t len, size_t max_records,
			     size_t max_jobs, flexco_resv_state_t *out,
			     char *why, size_t why_len);
void flexco_resv_state_free(flexco_resv_state_t *st);

/*
 * The writer's side, the one codec of a reservation record: the record as
 * the API answers it (GET, POST, PATCH, DELETE /v1/reservations...) and as
 * the state file keeps it, with the state file's "submitting" member only
 * in the file.  Strings and arrays are borrowed; NULL strings are written
 * as null, but user as "" (an adopted reservation without Users=); name is
 * flexco_<id>; confirm_by is null unless the record is tentative.  Compact
 * JSON, keys sorted; malloc'd, NULL if out of memory or a value cannot be
 * encoded (why says which record, for the state).
 */
char *flexco_encode_resv_record(const flexco_state_resv_t *r);
char *flexco_encode_resv_list(const flexco_state_resv_t *rs, size_t n);
char *flexco_encode_resv_state(const flexco_resv_state_t *st, char *why,
			       size_t why_len);

/* The answer to POST /v1/reservations/{id}/jobs (201), as the submission
 * gives it and as a restart that adopted the job keeps it for a retry:
 * {"job_id","part_index","reservation":"flexco_<id>","reservation_id",
 *  "state":"PENDING"}.  malloc'd; NULL if out of memory. */
char *flexco_encode_part_job_submitted(uint32_t job_id, int64_t resv_id,
				       int part_index);

/*
 * A request's query parameters as microhttpd hands them over (decoded,
 * in order; value NULL for "?k" without "=").  Checked against allowed
 * (NULL-terminated; empty: the endpoint takes none): an unknown parameter
 * (reported first, in order), one given twice or one without a value is
 * 400 bad_parameter.  vals[i] is allowed[i]'s value, NULL when absent.
 * what names the endpoint in the message when it takes no parameters
 * ("stats takes no query parameters").
 */
typedef struct {
	const char *key;
	const char *value;
} flexco_query_arg_t;

int flexco_decode_query_args(const flexco_query_arg_t *args, size_t n,
			     const char *const *allowed, const char **vals,
			     const char *what, char **json_out);

/*
 * GET /v1/events's paging over the retained events (seqs ascending, at
 * seq_at(0..cnt-1)): the first max events after `after` that visible()
 * lets the caller see go into pick (indices, room for max), hidden ones
 * are stepped over.  lost: `after` is below lost_upto (events it wants may
 * be gone) or above latest (never handed out); max >= 1 (the decoder
 * sees to it).  next: the seq of the last
 * event examined; if none, latest when lost, else after.  A long poll
 * with nothing to show may wait on (flexco_events_park) when nothing was
 * lost and it has seen up to latest.
 */
typedef struct {
	uint32_t count;
	uint64_t next;
	bool lost;
} flexco_events_page_t;

void flexco_events_page(uint64_t after, uint32_t max, uint64_t latest,
			uint64_t lost_upto, size_t cnt,
			uint64_t (*seq_at)(size_t i, void *arg),
			bool (*visible)(size_t i, void *arg), void *arg,
			uint32_t *pick, flexco_events_page_t *page);

/* Index of the first of cnt ascending seqs above after; cnt if none. */
size_t flexco_events_first_after(uint64_t after, size_t cnt,
				 uint64_t (*seq_at)(size_t i, void *arg),
				 void *arg);

/* A page answered with nothing to show: may the long poll wait on past
 * page->next? (time left is the caller's). */
bool flexco_events_park(uint64_t after, const flexco_events_page_t *page,
			uint64_t latest);

/*
 * The events state file (StateSaveLocation/flexco_events.json, plugin/
 * events.c):
 *   {"version":1, "clean":B, "saved_at":T, "reserved":S, "latest":S,
 *    "lost_upto":S, "job_floor":T,
 *    "reported_jobs":[[job_id,start,end],...],
 *    "reservations":[{"name","start","end","nodes","node_count",
 *                     "activated","ended","users":[uid,...],"users_not"}],
 *    "access":[{"seq", "job_uid"?, "account"?, "users"?, "users_not"?}],
 *    "events":[{"seq":S,"type":"...",...},...]}
 * Strict: no unknown or repeated member, 0 <= lost_upto <= latest <=
 * reserved, times 0..2^40, ids and uids within 32 bits, events' seqs
 * 1..latest strictly ascending, every access record naming a retained
 * event (ascending), reservation names unique, and every count and length
 * within lim.  A state without "access" (older files) gets each event's
 * visibility from its type; "saved_at", "access", a reservation's "nodes",
 * "users" and "users_not" may be absent (older files).  Any fault rejects
 * the whole copy with a reason in why (the plugin then tries the previous
 * copy); all memory is malloc'd, freed by flexco_events_state_free.
 */
#define FLEXCO_EVSTATE_MAX_TIME (INT64_C(1) << 40)

typedef struct {
	size_t max_events;	/* retained events */
	size_t max_event_len;	/* bytes of one event (compact JSON) */
	size_t max_reported;	/* reported_jobs records */
	size_t max_resvs;	/* tracked reservations */
	size_t max_users;	/* uids of one reservation or event */
	size_t max_str;		/* a name, node list or account */
} flexco_evstate_limits_t;

/* What the plugin allows (events.c): EventBufferSize's maximum, etc. */
#define FLEXCO_EVSTATE_LIMITS_DEFAULT \
	{ 65536, 1048576, 1000000, 100000, 65536, 262144 }

typedef struct {
	bool job;		/* a job's: owner and account */
	uint32_t job_uid;	/* 4294967295: unknown */
	char *account;		/* NULL: unknown */
	bool resv;		/* a reservation's: its Users= */
	uint32_t *users;
	size_t user_cnt;
	bool users_not;
} flexco_evstate_acl_t;

typedef struct {
	uint64_t seq;
	char *text;		/* compact JSON, NUL-terminated */
	size_t len;
	flexco_evstate_acl_t acl;
} flexco_evstate_event_t;

typedef struct {
	uint32_t job_id;
	int64_t start, end;
} flexco_evstate_job_t;

typedef struct {
	char *name;
	int64_t start, end;
	char *nodes;		/* NULL when null */
	uint32_t node_cnt;
	uint32_t *users;
	size_t user_cnt;
	bool users_not, activated, ended;
} flexco_evstate_resv_t;

typedef struct {
	bool clean;
	int64_t saved_at;	/* 0 when absent */
	uint64_t reserved, latest, lost_upto;
	int64_t job_floor;
	flexco_evstate_job_t *jobs;
	size_t job_cnt;
	flexco_evstate_resv_t *resvs;
	size_t resv_cnt;
	bool has_access;	/* "access" was there */
	flexco_evstate_event_t *events;
	size_t event_cnt;
} flexco_events_state_t;

int flexco_decode_events_state(const char *text, size_t len,
			       const flexco_evstate_limits_t *lim,
			       flexco_events_state_t *out, char *why,
			       size_t why_len);
void flexco_events_state_free(flexco_events_state_t *st);

/*
 * The writer's side: st (its strings and arrays borrowed, events' texts
 * written as they are) as the file the decoder reads, passed to put in
 * pieces (no copy of the events).  0, or -1 if put failed or st cannot be
 * encoded (the message in why).  An event's visibility goes to "access"
 * when it has one.
 */
int flexco_encode_events_state(const flexco_events_state_t *st,
			       int (*put)(const char *buf, size_t len,
					  void *arg),
			       void *arg, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
