/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_resv_service.h - the C interface of src/service/resv_service: the
 * plugin's reservation records (doc/reservations.md) with their state
 * machine, Idempotency-Keys, write-ahead records, state file, recovery
 * and the agent's pass, behind a host that does what needs Slurm.
 *
 * plugin/resv.c is the host: it makes, changes and deletes Slurm
 * reservations, lists Slurm's flexco_* reservations, submits, releases
 * and looks up part jobs, checks admission on a snapshot, resolves user
 * names, publishes events and reads and writes the state file.  The
 * service never includes a Slurm header; testsuite/unit/check_resv_service
 * runs it against a fake host.
 *
 * Locking: the service has one mutex.  It holds it across host calls
 * (which take slurmctld's locks), so the order is always the service's
 * mutex, then slurmctld's; no host call may call back into the service.
 * Every function catches whatever the C++ side throws.
 */

#ifndef FLEXCO_SERVICE_CAPI_RESV_SERVICE_H
#define FLEXCO_SERVICE_CAPI_RESV_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/capi_decode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels of flexco_rsvc_host_t.log. */
enum { FLEXCO_RSVC_ERROR = 0, FLEXCO_RSVC_INFO = 1, FLEXCO_RSVC_DEBUG = 2 };

/* What a host call on a Slurm reservation or job came to. */
enum {
	FLEXCO_RSVC_OK = 0,
	FLEXCO_RSVC_BUSY = 1,		/* create/update: no nodes free
					 * together (ESLURM_NODES_BUSY) */
	FLEXCO_RSVC_REFUSED = 2,	/* any other refusal; why says it */
	FLEXCO_RSVC_NO_SUCH = 3		/* delete: Slurm has no such
					 * reservation */
};

/* Where the loaded state came from (service/statefile.h's order). */
enum {
	FLEXCO_RSVC_LOADED_NONE = 0,	/* no copy: a first start */
	FLEXCO_RSVC_LOADED_CURRENT = 1,
	FLEXCO_RSVC_LOADED_PREV = 2,	/* the previous copy */
	FLEXCO_RSVC_LOADED_LOST = 3	/* copies, none valid */
};

/* A part job's phase (plugin/jobs.h's order). */
enum { FLEXCO_RSVC_PJ_PENDING, FLEXCO_RSVC_PJ_RUNNING,
       FLEXCO_RSVC_PJ_FINISHED, FLEXCO_RSVC_PJ_GONE };

/* A release's outcome (plugin/jobs.h's order). */
enum { FLEXCO_RSVC_RELEASE_OK, FLEXCO_RSVC_RELEASE_GONE,
       FLEXCO_RSVC_RELEASE_OTHER, FLEXCO_RSVC_RELEASE_ADMIN_HELD };

/* One of Slurm's flexco_* reservations, as the host lists it; valid
 * during the callback only.  users NULL: none; uid of its first user or
 * UINT32_MAX; jobs (ids and submit times) not finished in it, at most
 * FLEXCO_RSVC_MAX_JOBS. */
typedef struct {
	uint64_t id;
	const char *users;
	uint32_t uid;
	uint32_t nodes;
	const char *node_list, *partition;
	int64_t start, end;
	const uint32_t *job_ids;
	const int64_t *job_submitted;
	size_t job_cnt;
} flexco_rsvc_slurm_resv_t;

#define FLEXCO_RSVC_MAX_JOBS 64		/* part jobs per reservation */
#define FLEXCO_RSVC_MAX_RECORDS 4096	/* live and recently ended */
#define FLEXCO_RSVC_MAX_STATE (256 * 1024 * 1024)	/* state file bytes */

typedef void (*flexco_rsvc_id_cb)(void *sink, uint64_t id);
typedef void (*flexco_rsvc_resv_cb)(void *sink,
				    const flexco_rsvc_slurm_resv_t *r);
/* service/statefile.h's statefile_parse_t */
typedef int (*flexco_rsvc_parse_cb)(const char *text, size_t len, void *arg,
				    char *why, size_t why_len);

/*
 * What the service asks of its host.  Every member is required.  Strings
 * the host returns through char ** are malloc'd (the service frees them);
 * why buffers get a reason for the log and the answer.
 */
typedef struct {
	void *arg;			/* passed to every call */
	void (*log)(void *arg, int level, const char *msg);
	int64_t (*now)(void *arg);	/* time(NULL) */
	/* this process is the controller in charge, with its state loaded */
	bool (*in_charge)(void *arg);
	/* a user name to its uid (NSS); false: unknown */
	bool (*user_uid)(void *arg, const char *user, uint32_t *uid);
	/* admission of a new reservation on a fresh snapshot (free nodes
	 * for the whole window, MinFit): 200, or a status with an error
	 * document in *json_out; *low_fit: refused for MinFit */
	int (*admit)(void *arg, const char *partition, int64_t start,
		     int64_t duration, uint32_t nodes, char **json_out,
		     bool *low_fit);
	/* Slurm reservation flexco_<id> for user (NULL: no Users=) */
	int (*create)(void *arg, uint64_t id, const char *user, uint32_t nodes,
		      const char *partition, int64_t start, int64_t end,
		      char **node_list, uint32_t *got, char *why,
		      size_t why_len);
	/* change flexco_<id> from (start, end, nodes) now to the new ones
	 * (the host sends only what differs) */
	int (*update)(void *arg, uint64_t id, int64_t cur_start,
		      int64_t cur_end, uint32_t cur_nodes, int64_t start,
		      int64_t end, uint32_t nodes, char **node_list,
		      uint32_t *got, char *why, size_t why_len);
	/* delete flexco_<id>, cancelling its part jobs first (job_ids; an
	 * orphan, without a record: every job Slurm has in it) */
	int (*remove)(void *arg, uint64_t id, const uint32_t *job_ids,
		      size_t job_cnt, bool orphan, char *why, size_t why_len);
	/* the ids of Slurm's flexco_<id> reservations, cheaply */
	void (*slurm_ids)(void *arg, flexco_rsvc_id_cb cb, void *sink);
	/* Slurm's flexco_* reservations with their unfinished jobs (walks
	 * the job list: only when the state is recovered) */
	void (*slurm_resvs)(void *arg, flexco_rsvc_resv_cb cb, void *sink);
	/* a part job of uid into reservation flexco_<resv_id> */
	int (*job_submit)(void *arg, const flexco_jobspec_t *spec,
			  uint64_t resv_id, uint32_t uid, uint32_t nodes,
			  uint32_t minutes, const char *partition,
			  uint32_t *job_id, char *why, size_t why_len);
	/* a job's state as plugin/jobs.h's flexco_job_state() gives it (a
	 * new reference), or NULL once Slurm forgot it */
	json_t *(*job_state)(void *arg, uint32_t job_id);
	int (*job_phase)(void *arg, uint32_t job_id, bool *ran);
	int (*job_release)(void *arg, uint32_t job_id, const char *resv_name,
			   bool *released);
	/* cancel a part job of reservation resv_name, pending or running
	 * (its start lease lapsed): FLEXCO_RSVC_OK, or REFUSED with why */
	int (*job_cancel)(void *arg, uint32_t job_id, const char *resv_name,
			  char *why, size_t why_len);
	/* publish a part_job_started/_ended event, visible to uid's
	 * viewers under PrivateData; fields is stolen.  False: the events
	 * queue did not take it (the service tries again next tick). */
	bool (*publish)(void *arg, const char *type, json_t *fields,
			uint32_t uid);
	/* the state file: load the newest valid copy through parse
	 * (FLEXCO_RSVC_LOADED_*), save text (0, or -1 with why) */
	int (*load)(void *arg, size_t max, flexco_rsvc_parse_cb parse,
		    void *parse_arg);
	int (*save)(void *arg, const char *text, char *why, size_t why_len);
} flexco_rsvc_host_t;

/* What flexco.conf and slurm.conf say that the service needs. */
typedef struct {
	const uint32_t *daemon_uids;	/* DaemonUsers (copied) */
	size_t daemon_uid_cnt;
	bool act_for_root;		/* ActForRoot */
	uint32_t min_user_uid;		/* MinUserUid */
	uint32_t slurm_user_id;		/* SlurmUser's uid */
} flexco_rsvc_conf_t;

/* A mutation's Idempotency-Key as the verifier authenticated it and the
 * request it is bound to (doc/reservations.md, "Idempotency"): the
 * method, the request target as received (path?query) and the SHA-256 of
 * the body (64 lowercase hex). */
typedef struct {
	const char *key;	/* NULL: none */
	const char *method, *target, *digest;
} flexco_rsvc_idem_t;

typedef struct flexco_rsvc flexco_rsvc_t;

/* One per process, closed until opened; NULL if out of memory. */
extern flexco_rsvc_t *flexco_rsvc_create(void);
extern void flexco_rsvc_destroy(flexco_rsvc_t *s);

/*
 * A term begins: remember conf and host (both copied) and load the state
 * (host->load).  Requests before open or after close are refused (503
 * not_in_charge for mutations, 404 for lookups).
 */
extern void flexco_rsvc_open(flexco_rsvc_t *s, const flexco_rsvc_conf_t *conf,
			     const flexco_rsvc_host_t *host);
/* The term ends: save a last time, forget every record. */
extern void flexco_rsvc_close(flexco_rsvc_t *s);

/*
 * Requests.  Each returns an HTTP status and sets *json_out to a malloc'd
 * JSON document (the answer or an error); uid is the authenticated
 * caller; rq may be NULL.  Id texts are as in the request's path.
 */
extern int flexco_rsvc_create_resv(flexco_rsvc_t *s, uint32_t uid,
				   const flexco_rsvc_idem_t *rq,
				   const char *body, size_t len,
				   char **json_out);
extern int flexco_rsvc_confirm(flexco_rsvc_t *s, uint32_t uid,
			       const flexco_rsvc_idem_t *rq, const char *id,
			       char **json_out);
extern int flexco_rsvc_modify(flexco_rsvc_t *s, uint32_t uid,
			      const flexco_rsvc_idem_t *rq, const char *id,
			      const char *body, size_t len, char **json_out);
extern int flexco_rsvc_delete(flexco_rsvc_t *s, uint32_t uid,
			      const flexco_rsvc_idem_t *rq, const char *id,
			      char **json_out);
extern int flexco_rsvc_get(flexco_rsvc_t *s, uint32_t uid, const char *id,
			   char **json_out);
extern int flexco_rsvc_list(flexco_rsvc_t *s, uint32_t uid, char **json_out);
extern int flexco_rsvc_job_submit(flexco_rsvc_t *s, uint32_t uid,
				  const flexco_rsvc_idem_t *rq,
				  const char *id, const char *body,
				  size_t len, char **json_out);
extern int flexco_rsvc_job_get(flexco_rsvc_t *s, uint32_t uid,
			       const char *id, const char *job_id,
			       char **json_out);
extern int flexco_rsvc_job_release(flexco_rsvc_t *s, uint32_t uid,
				   const char *id, const char *job_id,
				   const char *body, size_t len,
				   char **json_out);

/*
 * Flexco-Epoch (core/epoch.hpp; doc/reservations.md, "Epochs"): `header`
 * is the request's value (NULL: none, not fenced).  0 when the request may
 * go on; else its status (409 stale_epoch: a mutation from a flexcod grid
 * at an epoch lower than one seen here; 400: a malformed value; 503: a
 * raised epoch could not be saved) and *json_out.  A new highest epoch of
 * DaemonUsers is saved before the request goes on.
 */
extern int flexco_rsvc_fence(flexco_rsvc_t *s, uint32_t uid, const char *header,
			     bool mutating, char **json_out);

/* The agent's pass: recovery on the first one of a term, deadlines,
 * orphans, part-job events, forgetting old records, the save. */
extern void flexco_rsvc_tick(flexco_rsvc_t *s);

/* Records by state, refusals, recovery and the state file, for
 * /v1/stats (a new object; NULL if out of memory). */
extern json_t *flexco_rsvc_stats_json(flexco_rsvc_t *s);

#ifdef __cplusplus
}
#endif

#endif
