/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_events_service.h - the C interface of src/service/events_service:
 * the plugin's ordered, numbered events (doc/events.md) -- the publish
 * pipeline (numbers reserved on disk first, events held while that save
 * fails, the ring, the listener), the queue of events_publish(), the
 * epilog hook's queue, the early-end decision, the set of job runs already
 * reported, the reservation events, the cycle's decisions, the events
 * thread, the state file's contents and the stats -- behind a host that
 * does what needs Slurm.
 *
 * plugin/events.c is the host: it takes slurmctld's job and partition
 * read locks and copies job records, copies resv_list under the node read
 * lock, counts a node list, says whether a viewer may see an event
 * (PrivateData), whether this process is in charge, and reads and writes
 * the state file.  The service never includes a Slurm header;
 * testsuite/unit/check_events_service runs it against a fake host.
 *
 * Locking: the service has two small mutexes, neither ever held across a
 * host call: the queues' (taken by flexco_esvc_job_end() under
 * slurmctld's job write lock, and by the service between the host's
 * lock_jobs and unlock_jobs: slurmctld's lock, then the queues', as in
 * the hook) and the counters'.  The ring has its own lock.  The cycle's
 * state belongs to one caller: the events thread, or (without the
 * thread) whoever calls flexco_esvc_cycle().  No host call may call back
 * into the service; the sinks the service passes to each_job and
 * copy_resvs only copy.  Every function catches whatever the C++ side
 * throws.
 */

#ifndef FLEXCO_SERVICE_CAPI_EVENTS_SERVICE_H
#define FLEXCO_SERVICE_CAPI_EVENTS_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/capi_decode.h"
#include "service/capi_events.h"
#include "service/statefile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels of flexco_esvc_host_t.log. */
enum { FLEXCO_ESVC_ERROR = 0, FLEXCO_ESVC_INFO = 1, FLEXCO_ESVC_DEBUG = 2 };

/* A job's time limit when it has none (Slurm's INFINITE or NO_VAL). */
#define FLEXCO_ESVC_NO_LIMIT UINT32_MAX

#define FLEXCO_ESVC_HOOK_QUEUE_LEN 1024	/* epilog records between cycles */
#define FLEXCO_ESVC_EXT_QUEUE_LEN 1024	/* published events between cycles */

/*
 * A job as the host copies it from slurmctld's job record; the strings are
 * borrowed (valid during the call only; NULL: none).
 */
typedef struct {
	uint32_t job_id;
	uint32_t user_id;
	uint32_t node_cnt;
	const char *state;	/* job_state_string() of the base state: a
				 * static string, kept as it is */
	bool finished;		/* IS_JOB_FINISHED */
	int64_t start;
	int64_t end;		/* the hook: the time of the call if unset */
	uint32_t time_limit;	/* minutes, or FLEXCO_ESVC_NO_LIMIT */
	int64_t suspended;	/* seconds spent suspended */
	const char *partition;	/* the partition record's name, else the
				 * job's partition text */
	const char *nodes;
	const char *account;
} flexco_esvc_job_t;

typedef void (*flexco_esvc_job_cb)(void *sink, const flexco_esvc_job_t *j);
/* one reservation of resv_list, borrowed (its activated and ended are
 * ignored) */
typedef void (*flexco_esvc_resv_cb)(void *sink,
				    const flexco_evstate_resv_t *r);

/* What the service asks of its host.  Every member is required. */
typedef struct {
	void *arg;			/* passed to every call */
	void (*log)(void *arg, int level, const char *msg);
	int64_t (*now)(void *arg);	/* time(NULL) */
	/* this process is the controller in charge */
	bool (*in_charge)(void *arg);
	/* take and release slurmctld's job and partition read locks; in
	 * between, find_job and each_job copy job records */
	void (*lock_jobs)(void *arg);
	void (*unlock_jobs)(void *arg);
	bool (*find_job)(void *arg, uint32_t job_id, flexco_esvc_job_t *out);
	void (*each_job)(void *arg, flexco_esvc_job_cb cb, void *sink);
	/* last_resv_update, read without a lock (is a copy worth it?) */
	int64_t (*resv_update)(void *arg);
	/* under the node read lock: *when the time and *update
	 * last_resv_update then, and cb for each reservation */
	void (*copy_resvs)(void *arg, int64_t *when, int64_t *update,
			   flexco_esvc_resv_cb cb, void *sink);
	/* the nodes in a node list, fallback if it cannot be read */
	uint32_t (*node_count)(void *arg, const char *nodes,
			       uint32_t fallback);
	/* may viewer (flexco_esvc_query()'s, not NULL) see an event with
	 * this acl? */
	bool (*visible)(void *arg, const void *viewer,
			const flexco_evstate_acl_t *acl);
	/* the state file: load the newest valid copy through parse (where
	 * it came from), save text (0, or -1 with why) */
	statefile_src_t (*load)(void *arg, size_t max,
				statefile_parse_t parse, void *parse_arg);
	int (*save)(void *arg, const char *text, size_t len, char *why,
		    size_t why_len);
} flexco_esvc_host_t;

typedef struct flexco_esvc flexco_esvc_t;

/* One per process, closed until opened; NULL if out of memory.  The hook
 * queue is allocated here: flexco_esvc_job_end() never allocates. */
extern flexco_esvc_t *flexco_esvc_create(void);
extern void flexco_esvc_destroy(flexco_esvc_t *s);

/*
 * A term begins: keep host (copied), make or reset the ring (capacity
 * events), load the state (host->load) and, if thread, start the events
 * thread.  0, or -1 (logged) if out of memory or the thread cannot be
 * made: the service stays closed.  Opening an open service does nothing.
 */
extern int flexco_esvc_open(flexco_esvc_t *s, uint32_t capacity,
			    const flexco_esvc_host_t *host, bool thread);
/* The term ends: stop and join the thread, save a last time, forget the
 * tracking state and the queues.  The ring's marks stay readable. */
extern void flexco_esvc_close(flexco_esvc_t *s);

/* One cycle of the events thread (tests: only without the thread). */
extern void flexco_esvc_cycle(flexco_esvc_t *s);

/* The epilog hook: job copied into the preallocated queue under the
 * queues' mutex; no allocation, no I/O, no host call. */
extern void flexco_esvc_job_end(flexco_esvc_t *s, const flexco_esvc_job_t *job);

/*
 * events_publish(): an event of type with the members of fields (stolen)
 * at now; acl (copied; NULL: anyone) says who may see it.  refuse: count
 * it dropped as if the queue were full (the plugin's test hook).  0, or
 * -1 if dropped (not an object, queue full, service not open).
 */
extern int flexco_esvc_publish(flexco_esvc_t *s, const char *type,
			       json_t *fields,
			       const flexco_evstate_acl_t *acl, int64_t now,
			       bool refuse);

/* Highest sequence number issued so far (0 if none). */
extern uint64_t flexco_esvc_latest(flexco_esvc_t *s);

/* fn after every batch of new events (no lock held); NULL: none. */
extern void flexco_esvc_set_listener(flexco_esvc_t *s, void (*fn)(void));

/* The page of GET /v1/events (malloc'd JSON; NULL if out of memory) that
 * viewer may see (host->visible; NULL: every event). */
extern char *flexco_esvc_query(flexco_esvc_t *s, uint64_t after, uint32_t max,
			       const void *viewer, flexco_ring_page_t *page);

/* The counters of GET /v1/stats' "events" (a new object, NULL if out of
 * memory). */
extern json_t *flexco_esvc_stats_json(flexco_esvc_t *s);

#ifdef __cplusplus
}
#endif

#endif
