/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  willrun.h - Slurm's own will_run answer for a probe, on request
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_WILLRUN_H
#define _FLEXCO_WILLRUN_H

#include <sys/types.h>

#include "core/capi_probe.h"

/*
 * Ask slurmctld when a job of p->nodes nodes for p->duration seconds,
 * submitted now by uid/gid, would start: what `sbatch --test-only` does
 * (validate_job_create_req under read locks, then job_allocate in will_run
 * mode under the job and node write locks, exactly as the RPC handler).
 * It uses up one job id.  Fills *out; out->node_list and out->error are
 * xmalloc'd: release them with willrun_free().
 */
extern void willrun_ask(uid_t uid, gid_t gid,
			const flexco_will_run_params_t *p,
			flexco_will_run_answer_t *out);
extern void willrun_free(flexco_will_run_answer_t *a);

#endif
