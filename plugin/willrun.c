/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  willrun.c - Slurm's own will_run answer for a probe, on request
 *****************************************************************************
 *  A probe may ask ("will_run": true) for Slurm's answer beside the
 *  plugin's offers, to compare them.  Slurm's will_run test places the job
 *  against running jobs and a crude estimate of the higher-priority queue,
 *  ignores backfill's plan (job_start_data() in job_scheduler.c), which is
 *  why it is only done when asked.
 *
 *  job_allocate(will_run=1) builds a real job record, inserts it into the
 *  job list and hash, tests it and purges it again: that needs the job and
 *  node write locks (config, partition and federation read), asserted by
 *  job_allocate() in 22.05 and 24.11 alike, and those are the locks of
 *  Slurm's own RPC handler (_slurm_rpc_job_will_run) taken here; nothing
 *  else is held, no I/O inside them.  A record without a job id gets one
 *  from get_next_job_id(false), which advances the id sequence for good:
 *  that is what sbatch --test-only costs.  A job id given in the request is
 *  used as is (_validate_job_desc() allows it to root and SlurmUser and
 *  refuses one in use), so the test runs under a reserved id that the
 *  sequence never hands out (MAX_JOB_ID, above any MaxJobId, with the
 *  federation's cluster bits) and no id is used up.  The only other effect
 *  of submitting as SlurmUser is that RootOnly partitions let the test in,
 *  so for a caller who is not privileged a RootOnly partition keeps the old
 *  way (Slurm's refusal, with the caller's uid); so does a reserved id that
 *  a job really holds (root may submit with --jobid).
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <string.h>
#include <time.h>

#include "src/common/log.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/fed_mgr.h"	/* after slurmctld.h (24.11) */

#include "compat.h"
#include "willrun.h"

extern const char plugin_type[];

/*
 * May the test run under the reserved id?  Write locks held (partition
 * read): not if a job holds the id, nor if an unprivileged caller names a
 * RootOnly partition or, naming none, gets a RootOnly default.
 */
static bool _reserved_id_ok(const job_desc_msg_t *d, uid_t uid, uint32_t id)
{
	part_record_t *part_ptr;
	char *names, *tok, *save = NULL;
	bool ok = true;

	if (find_job_record(id))
		return false;
	if ((uid == 0) || (uid == slurm_conf.slurm_user_id))
		return true;
	if (!d->partition)
		return !(default_part_loc &&
			 (default_part_loc->flags & PART_FLAG_ROOT_ONLY));
	names = xstrdup(d->partition);
	for (tok = strtok_r(names, ",", &save); tok && ok;
	     tok = strtok_r(NULL, ",", &save)) {
		if ((part_ptr = find_part_record(tok)) &&
		    (part_ptr->flags & PART_FLAG_ROOT_ONLY))
			ok = false;
	}
	xfree(names);
	return ok;
}

extern void willrun_ask(uid_t uid, gid_t gid,
			const flexco_will_run_params_t *p,
			flexco_will_run_answer_t *out)
{
	slurmctld_lock_t read_lock = { .conf = READ_LOCK, .job = READ_LOCK,
			.node = READ_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	slurmctld_lock_t write_lock = { .conf = READ_LOCK, .job = WRITE_LOCK,
			.node = WRITE_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	job_desc_msg_t *d = xmalloc(sizeof(*d));
	will_run_response_msg_t *resp = NULL;
	job_record_t *job_ptr = NULL;
	char *err_msg = NULL;
	int64_t minutes;
	uint32_t reserved_id;
	uid_t submit_uid = uid;
	int rc;

	memset(out, 0, sizeof(*out));
	out->nodes = p->nodes;

	slurm_init_job_desc_msg(d);
	d->min_nodes = d->max_nodes = p->nodes;
	minutes = (p->duration + 59) / 60;
	if (minutes < 1)
		minutes = 1;
	if (minutes >= INFINITE)
		minutes = INFINITE - 1;
	d->time_limit = (uint32_t) minutes;
	d->user_id = uid;
	d->group_id = gid;
	d->name = xstrdup("flexco-will-run");
	/* 24.11 refuses a job without one, even a test; it never runs */
	d->work_dir = xstrdup("/");
	if (p->partition[0])
		d->partition = xstrdup(p->partition);
	if (p->earliest_start > time(NULL))
		d->begin_time = (time_t) p->earliest_start;
	d->het_job_offset = NO_VAL;

	lock_slurmctld(read_lock);
	/* the submit host of the test: the controller itself */
	if (slurm_conf.control_cnt && slurm_conf.control_machine &&
	    slurm_conf.control_machine[0])
		d->alloc_node = xstrdup(slurm_conf.control_machine[0]);
	else
		d->alloc_node = xstrdup("localhost");
	rc = validate_job_create_req(d, uid, &err_msg);
	unlock_slurmctld(read_lock);

	if (rc == SLURM_SUCCESS) {
		xfree(err_msg);
		lock_slurmctld(write_lock);
		reserved_id = fed_mgr_get_job_id(MAX_JOB_ID);
		if (_reserved_id_ok(d, uid, reserved_id)) {
			FLEXCO_JOB_DESC_JOB_ID(d) = reserved_id;
			submit_uid = slurm_conf.slurm_user_id;
		}
		rc = job_allocate(d, 0, 1, &resp, 1, submit_uid, false,
				  &job_ptr, &err_msg, SLURM_PROTOCOL_VERSION);
		unlock_slurmctld(write_lock);
	}

	/* job_id: the id used up by the test, 0 for none */
	if ((rc == SLURM_SUCCESS) && resp) {
		out->ok = 1;
		out->start = resp->start_time;
		if (FLEXCO_JOB_DESC_JOB_ID(d) == NO_VAL)
			out->job_id = FLEXCO_WILL_RUN_JOB_ID(resp);
		out->node_list = xstrdup(resp->node_list);
	} else {
		out->ok = 0;
		if (resp && (FLEXCO_JOB_DESC_JOB_ID(d) == NO_VAL))
			out->job_id = FLEXCO_WILL_RUN_JOB_ID(resp);
		out->error = (err_msg && err_msg[0]) ?
			xstrdup(err_msg) :
			xstrdup(slurm_strerror(rc ? rc : SLURM_ERROR));
	}
	debug("%s: will_run for uid %u, %u nodes, %u min: %s", plugin_type,
	      uid, p->nodes, d->time_limit,
	      out->ok ? "answered" : out->error);

	if (resp)
		slurm_free_will_run_response_msg(resp);
	slurm_free_job_desc_msg(d);
	xfree(err_msg);
}

extern void willrun_free(flexco_will_run_answer_t *a)
{
	char *s;

	if (!a)
		return;
	s = (char *) a->node_list;
	xfree(s);
	s = (char *) a->error;
	xfree(s);
	a->node_list = NULL;
	a->error = NULL;
}
