/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  jobs.c - part jobs: batch jobs submitted into a flexco reservation
 *****************************************************************************
 *  flexcod starts each part of a co-allocation as a batch job of the
 *  reservation's user inside the reservation flexco_<id>.  The job is made
 *  the way _slurm_rpc_submit_batch_job() makes one (proc_req.c) for a
 *  submission by that user: validate_job_create_req() (the job_submit
 *  plugins, the nice/priority/AdminComment rules) under read locks, then
 *  job_allocate() under config read, job write, node write, partition read
 *  and federation read locks, both with the user's uid as the submitter,
 *  so the partition's RootOnly, AllowGroups, AllowAccounts and AllowQos
 *  apply as they do to the user's own sbatch, with the account and QOS
 *  the co-allocation asked for (sreserve submit -A, -q).  Nothing else is done under
 *  the locks; the job and node state saves are scheduled and the scheduler
 *  is queued after unlocking.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "src/common/env.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"

#include "compat.h"
#include "core/capi_profile.h"
#include "jobs.h"

extern const char plugin_type[];


static void _env_add(char ***env, uint32_t *cnt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void _env_add(char ***env, uint32_t *cnt, const char *fmt, ...)
{
	va_list ap, ap2;
	char *s;
	int n;

	/* Sized to the value: FLEXCO_PARTS of 64 parts is 4671 bytes, and a
	 * fixed buffer silently cut it (doc/reservations.md).  22.05 has no
	 * va_list variant of xstrdup_printf(). */
	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	s = xmalloc((n > 0 ? n : 0) + 1);
	if (n > 0)
		vsnprintf(s, n + 1, fmt, ap2);
	va_end(ap2);
	va_end(ap);
	xrecalloc(*env, *cnt + 2, sizeof(char *));
	(*env)[(*cnt)++] = s;
	(*env)[*cnt] = NULL;
}

extern int flexco_job_submit(const flexco_jobspec_t *spec,
			     const char *resv_name, uint64_t resv_id,
			     uid_t uid, uint32_t nodes, uint32_t time_min,
			     const char *partition, uint32_t *job_id,
			     char **err_msg)
{
	/* _slurm_rpc_submit_batch_job: read config, write job, write node,
	 * read partition, read federation */
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = WRITE_LOCK,
			.node = WRITE_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	/* for the job_submit plugins: everything read */
	slurmctld_lock_t rlk = { .conf = READ_LOCK, .job = READ_LOCK,
			.node = READ_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	struct passwd pw, *pwp = NULL;
	job_desc_msg_t *d;
	job_record_t *job_ptr = NULL;
	char buf[16384], host[256];
	uint32_t i;
	int rc;

	*job_id = 0;
	/* the user's gid and home: outside slurmctld's locks */
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &pwp) || !pwp) {
		*err_msg = xstrdup_printf("uid %u has no passwd entry", uid);
		return ESLURM_USER_ID_MISSING;
	}
	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';

	d = xmalloc(sizeof(*d));
	slurm_init_job_desc_msg(d);
	d->script = xstrdup(spec->script);
	d->argc = spec->argc + 1;
	d->argv = xcalloc(d->argc + 1, sizeof(char *));
	d->argv[0] = xstrdup(spec->name ? spec->name : "flexco_part");
	for (i = 0; i < spec->argc; i++)
		d->argv[i + 1] = xstrdup(spec->argv[i]);
	d->environment = xcalloc(spec->env_cnt + 1, sizeof(char *));
	for (i = 0; i < spec->env_cnt; i++)
		d->environment[d->env_size++] = xstrdup(spec->env[i]);
	_env_add(&d->environment, &d->env_size, "FLEXCO_RESERVATION=%s",
		 resv_name);
	_env_add(&d->environment, &d->env_size, "FLEXCO_RESERVATION_ID=%" PRIu64,
		 resv_id);
	if (spec->coallocation)
		_env_add(&d->environment, &d->env_size,
			 "FLEXCO_COALLOCATION=%s", spec->coallocation);
	_env_add(&d->environment, &d->env_size, "FLEXCO_PART_INDEX=%" PRId64,
		 (spec->part_index >= 0) ? spec->part_index : 0);
	if (spec->parts)
		_env_add(&d->environment, &d->env_size, "FLEXCO_PARTS=%s",
			 spec->parts);
	if (spec->start)
		_env_add(&d->environment, &d->env_size, "FLEXCO_START=%" PRId64,
			 spec->start);
	/* flexcod's start-up rendezvous (doc/one-program.md): the token is a
	 * secret of this part, in its environment only, never logged */
	if (spec->rendezvous_url && spec->rendezvous_token) {
		_env_add(&d->environment, &d->env_size,
			 "FLEXCO_RENDEZVOUS_URL=%s", spec->rendezvous_url);
		_env_add(&d->environment, &d->env_size,
			 "FLEXCO_RENDEZVOUS_TOKEN=%s", spec->rendezvous_token);
	}
	d->work_dir = xstrdup(spec->work_dir ? spec->work_dir :
			      (pw.pw_dir && pw.pw_dir[0] ? pw.pw_dir : "/"));
	d->std_out = xstrdup(spec->std_out);
	d->std_err = xstrdup(spec->std_err);
	d->name = xstrdup(spec->name ? spec->name : "flexco_part");
	d->user_id = uid;
	d->group_id = pw.pw_gid;
	d->min_nodes = nodes;
	d->max_nodes = nodes;
	d->time_limit = time_min;
	d->reservation = xstrdup(resv_name);
	d->partition = xstrdup(partition);
	/* as sbatch -A and -q: NULL leaves Slurm's defaults (the user's
	 * default account, the association's or partition's QOS); checked by
	 * job_allocate() as for the user's own sbatch (AllowAccounts,
	 * AllowQos, the associations when accounting enforces them) */
	d->account = xstrdup(spec->account);
	d->qos = xstrdup(spec->qos);
	d->alloc_node = xstrdup(host);
	d->alloc_sid = 0;
	d->het_job_offset = NO_VAL;
	/* held as `sbatch --hold` holds it: priority 0, JobHeldUser, until
	 * flexco_job_release() */
	if (spec->hold)
		d->priority = 0;

	/* the job_submit plugins and checks sbatch gets, as the user */
	lock_slurmctld(rlk);
	rc = validate_job_create_req(d, uid, err_msg);
	unlock_slurmctld(rlk);
	if (rc != SLURM_SUCCESS) {
		slurm_free_job_desc_msg(d);
		return rc;
	}
	xfree(*err_msg);	/* a job_submit note; job_allocate may set it */

	lock_slurmctld(lk);
	rc = job_allocate(d, 0, 0, NULL, 0, uid, false, &job_ptr, err_msg,
			  SLURM_PROTOCOL_VERSION);
	if (job_ptr && !(rc && (job_ptr->job_state == JOB_FAILED)))
		*job_id = job_ptr->job_id;
	unlock_slurmctld(lk);

	slurm_free_job_desc_msg(d);
	if (!*job_id)
		return rc ? rc : SLURM_ERROR;
	schedule_job_save();	/* own locks */
	schedule_node_save();
	queue_job_scheduler();
	return SLURM_SUCCESS;
}

extern json_t *flexco_job_state(uint32_t job_id)
{
	slurmctld_lock_t lk = { .job = READ_LOCK };
	job_record_t *j;
	json_t *o = NULL;
	uint32_t ec = 0, state = 0, reason = 0;
	int64_t start = 0, end = 0;
	char *nodes = NULL, *resv = NULL;

	lock_slurmctld(lk);
	if ((j = find_job_record(job_id))) {
		state = j->job_state;
		reason = j->state_reason;
		start = j->start_time;
		end = j->end_time;
		ec = j->exit_code;
		nodes = xstrdup(j->nodes);
		resv = xstrdup(j->resv_name);
	}
	unlock_slurmctld(lk);
	if (!j)
		return NULL;

	o = json_pack("{s:I, s:s, s:s, s:I, s:I}",
		      "job_id", (json_int_t) job_id,
		      "state", job_state_string(state),
		      "reason", flexco_job_reason_string(reason),
		      "start_time", (json_int_t) start,
		      "end_time", (json_int_t) end);
	json_object_set_new(o, "nodes", (nodes && *nodes) ?
			    json_string(nodes) : json_null());
	json_object_set_new(o, "reservation", resv ? json_string(resv) :
			    json_null());
	if ((state & JOB_STATE_BASE) > JOB_SUSPENDED) {
		json_object_set_new(o, "exit_code", WIFEXITED(ec) ?
				    json_integer(WEXITSTATUS(ec)) : json_null());
		json_object_set_new(o, "signal", WIFSIGNALED(ec) ?
				    json_integer(WTERMSIG(ec)) : json_null());
	} else {
		json_object_set_new(o, "exit_code", json_null());
		json_object_set_new(o, "signal", json_null());
	}
	xfree(nodes);
	xfree(resv);
	return o;
}

extern int flexco_job_phase(uint32_t job_id, bool *ran)
{
	slurmctld_lock_t lk = { .job = READ_LOCK };
	job_record_t *j;
	int phase = FLEXCO_PJ_GONE;
	uint32_t base;

	*ran = false;
	lock_slurmctld(lk);
	if ((j = find_job_record(job_id))) {
		base = j->job_state & JOB_STATE_BASE;
		*ran = (j->start_time > 0) && j->nodes && j->nodes[0] &&
		       (base != JOB_PENDING);
		if (base == JOB_PENDING)
			phase = FLEXCO_PJ_PENDING;
		else if ((base <= JOB_SUSPENDED) ||
			 (j->job_state & JOB_COMPLETING))
			phase = FLEXCO_PJ_RUNNING;
		else
			phase = FLEXCO_PJ_FINISHED;
	}
	unlock_slurmctld(lk);
	return phase;
}

extern int flexco_job_release(uint32_t job_id, const char *resv_name,
			      bool *released)
{
	/* _slurm_rpc_update_job's locks: read config, write job, write node,
	 * read partition, read federation */
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = WRITE_LOCK,
			.node = WRITE_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	job_record_t *j;
	int rc = FLEXCO_RELEASE_OK;
	time_t now = time(NULL);

	*released = false;
	lock_slurmctld(lk);
	j = find_job_record(job_id);
	if (!j) {
		rc = FLEXCO_RELEASE_GONE;
	} else if (!j->resv_name || !resv_name ||
		   strcmp(j->resv_name, resv_name)) {
		rc = FLEXCO_RELEASE_OTHER;
	} else if (IS_JOB_PENDING(j) && (j->priority == 0)) {
		if (j->state_reason != WAIT_HELD_USER) {
			/* an administrator's hold stays */
			rc = FLEXCO_RELEASE_ADMIN_HELD;
		} else {
			/* what `scontrol release` does for a user hold
			 * (job_mgr.c, _release_job_rec) */
			if (j->details && (j->details->begin_time < now))
				j->details->begin_time = 0;
			j->direct_set_prio = 0;
			set_job_prio(j);
			j->state_reason = WAIT_NO_REASON;
			xfree(j->state_desc);
			j->exit_code = 0;
			last_job_update = now;
			*released = true;
		}
	}
	unlock_slurmctld(lk);
	if (*released) {
		info("%s: part job %u in %s released", plugin_type, job_id,
		     resv_name);
		schedule_job_save();	/* own locks */
		queue_job_scheduler();
	}
	return rc;
}

extern int flexco_job_cancel(uint32_t job_id, const char *resv_name)
{
	/* _h_remove's locks (plugin/resv.c) */
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = WRITE_LOCK,
			.node = WRITE_LOCK, .fed = READ_LOCK };
	job_record_t *j;
	int rc = SLURM_SUCCESS;
	bool sent = false;

	lock_slurmctld(lk);
	j = find_job_record(job_id);
	if (j && !IS_JOB_FINISHED(j)) {
		if (!j->resv_name || !resv_name ||
		    strcmp(j->resv_name, resv_name)) {
			rc = ESLURM_INVALID_JOB_ID;
		} else {
			rc = flexco_job_signal_id(job_id, SIGKILL, 0, 0, false);
			sent = (rc == SLURM_SUCCESS);
		}
	}
	unlock_slurmctld(lk);
	if (sent) {
		info("%s: JobId=%u in %s cancelled", plugin_type, job_id,
		     resv_name);
		schedule_job_save();	/* own locks */
		queue_job_scheduler();
	}
	return rc;
}
