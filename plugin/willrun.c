/*****************************************************************************\
 *  willrun.c - Slurm's own will_run answer for a probe, on request
 *****************************************************************************
 *  A probe may ask ("will_run": true) for Slurm's answer beside the
 *  plugin's offers, to compare them.  Slurm's will_run test places the job
 *  against running jobs and a crude estimate of the higher-priority queue,
 *  ignores backfill's plan, needs the job and node write locks, and uses
 *  up a job id (job_start_data() in job_scheduler.c), which is why it is only
 *  done when asked.  The locks are those of Slurm's own RPC handler
 *  (_slurm_rpc_job_will_run): nothing else is held, no I/O inside them.
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

#include "compat.h"
#include "willrun.h"

extern const char plugin_type[];

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
		rc = job_allocate(d, 0, 1, &resp, 1, uid, false, &job_ptr,
				  &err_msg, SLURM_PROTOCOL_VERSION);
		unlock_slurmctld(write_lock);
	}

	if ((rc == SLURM_SUCCESS) && resp) {
		out->ok = 1;
		out->start = resp->start_time;
		out->job_id = FLEXCO_WILL_RUN_JOB_ID(resp);
		out->node_list = xstrdup(resp->node_list);
	} else {
		out->ok = 0;
		if (resp)
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
