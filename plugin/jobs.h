/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  jobs.h - part jobs: batch jobs submitted into a flexco reservation
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_JOBS_H
#define _FLEXCO_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A POST /v1/reservations/{id}/jobs body is decoded by
 * flexco_decode_jobspec() of core/capi_decode.h into a flexco_jobspec_t
 * (all strings malloc'd, freed by flexco_jobspec_free). */
#include "core/capi_decode.h"

/*
 * Submit spec as a batch job of user uid into Slurm reservation resv_name
 * on nodes nodes for time_min minutes.  Resolves the user (home, gid)
 * first, then calls job_allocate() under the locks of Slurm's batch
 * submit RPC and nothing else; queues the scheduler after unlocking.
 * Must be called with no slurmctld lock held.  Returns a Slurm error code;
 * on failure *err_msg (xmalloc'd) may say more.
 */
extern int flexco_job_submit(const flexco_jobspec_t *spec,
			     const char *resv_name, uint64_t resv_id,
			     uid_t uid, uint32_t nodes, uint32_t time_min,
			     const char *partition, uint32_t *job_id,
			     char **err_msg);

/*
 * {"job_id","state","reason","start_time","end_time","nodes","exit_code",
 * "signal","reservation"} of a job from slurmctld (job read lock), or NULL
 * if slurmctld no longer knows it.  No slurmctld lock may be held.
 */
extern json_t *flexco_job_state(uint32_t job_id);

/*
 * Where a job is (job read lock): pending; running (also suspended or
 * still completing); finished; gone (slurmctld forgot it).  *ran: it was
 * given nodes and started (false for a job cancelled while pending).
 */
enum { FLEXCO_PJ_PENDING, FLEXCO_PJ_RUNNING, FLEXCO_PJ_FINISHED,
       FLEXCO_PJ_GONE };
extern int flexco_job_phase(uint32_t job_id, bool *ran);

/*
 * Release a part job submitted held ("hold": true; priority 0, reason
 * JobHeldUser) as `scontrol release` does, under the locks of Slurm's
 * update RPC, and queue the scheduler after unlocking.  *released: this
 * call released it (false when it was not held: released before, started
 * or ended).  The job must be in Slurm reservation resv_name.  No
 * slurmctld lock may be held.
 */
enum { FLEXCO_RELEASE_OK, FLEXCO_RELEASE_GONE, FLEXCO_RELEASE_OTHER,
       FLEXCO_RELEASE_ADMIN_HELD };
extern int flexco_job_release(uint32_t job_id, const char *resv_name,
			      bool *released);

/*
 * Cancel a part job of Slurm reservation resv_name, pending or running, as
 * `scancel` does (SIGKILL through job_signal), under the job and node
 * write locks, logged after unlocking: its start lease lapsed (the start
 * gate, doc/reservations.md).  SLURM_SUCCESS also when it had ended or is
 * gone; ESLURM_INVALID_JOB_ID when it is in another reservation.  No
 * slurmctld lock may be held.
 */
extern int flexco_job_cancel(uint32_t job_id, const char *resv_name);

#endif
