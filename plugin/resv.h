/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  resv.h - tentative and confirmed Slurm reservations made for flexcod
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_RESV_H
#define _FLEXCO_RESV_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <sys/types.h>

#include "flexco_conf.h"

/*
 * Load the saved state (StateSaveLocation/flexco_resv.json) and remember
 * the configuration.  Called from init() with no slurmctld lock held.
 */
extern int flexco_resv_init(const flexco_conf_t *conf);
extern void flexco_resv_fini(void);

/*
 * A mutation as the verifier authenticated it, for its Idempotency-Key
 * (doc/reservations.md, "Idempotency"): key is the signed Idempotency-Key
 * (NULL: none); a key is bound to the method, the request target and the
 * body digest of the request it was first used for.
 */
typedef struct {
	const char *key;	/* Idempotency-Key or NULL */
	const char *method;	/* "POST", "PATCH", "DELETE" */
	const char *target;	/* request target as received: path?query */
	const char *digest;	/* SHA-256 of the body, 64 lowercase hex */
} flexco_idem_req_t;

/*
 * Requests.  Each returns an HTTP status and sets *json_out to a malloc'd
 * JSON document (the answer or an error).  uid is the authenticated
 * caller; rq the request's idempotency key and what it is bound to.  None
 * may be called with a slurmctld lock held.
 */
extern int flexco_resv_create(uid_t uid, const flexco_idem_req_t *rq,
			      const char *body, size_t len, char **json_out);
extern int flexco_resv_confirm(uid_t uid, const flexco_idem_req_t *rq,
			       const char *id, char **json_out);
extern int flexco_resv_modify(uid_t uid, const flexco_idem_req_t *rq,
			      const char *id, const char *body, size_t len,
			      char **json_out);
extern int flexco_resv_delete(uid_t uid, const flexco_idem_req_t *rq,
			      const char *id, char **json_out);
extern int flexco_resv_get(uid_t uid, const char *id, char **json_out);
extern int flexco_resv_list(uid_t uid, char **json_out);

/*
 * Part jobs (doc/reservations.md): submit a batch job of the reservation's
 * user into it (DaemonUsers, idempotent), and its state from slurmctld
 * (DaemonUsers or the reservation's user; 404 for a job not submitted
 * into this reservation).
 */
extern int flexco_resv_job_submit(uid_t uid, const flexco_idem_req_t *rq,
				  const char *id, const char *body, size_t len,
				  char **json_out);
extern int flexco_resv_job_get(uid_t uid, const char *id, const char *job_id,
			       char **json_out);
/*
 * POST /v1/reservations/{id}/jobs/{job}/release (DaemonUsers): release a
 * part job submitted held; idempotent (a job released before, started,
 * ended or gone is answered as it is).  200 with the job as GET shows it.
 */
extern int flexco_resv_job_release(uid_t uid, const char *id,
				   const char *job_id, char **json_out);

/*
 * Periodic work from the agent thread: delete tentative reservations past
 * their confirm deadline, forget ended ones, notice reservations deleted
 * behind our back, save the state when it changed.
 */
extern void flexco_resv_tick(void);

/* Reservation records by state and admission refusals, for /v1/stats. */
extern json_t *flexco_resv_stats_json(void);

#endif
