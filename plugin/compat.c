/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  compat.c - what compat.h declares beyond names
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <limits.h>
#include <stdio.h>
#include <sys/prctl.h>

#include "src/common/node_conf.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "service/capi_api_server.h"
#include "service/capi_events_service.h"
#include "service/capi_resv_service.h"

/*
 * When this controller last took control (0 while it has not, or after it
 * gave control back): defined and exported by slurmctld in every supported
 * release (controller.c), declared in none of its headers.
 */
extern time_t control_time;

/*
 * slurmctld_primary says which host this is (the first SlurmctldHost), not
 * whether it is in control: a backup that took over runs with it false.
 * control_time is what every release sets once this process runs as the
 * controller (after it loaded its state) and clears when it starts over
 * as a standby (controller.c, the top of its main loop); shutdown_time is
 * set when it begins to stop or to hand control back.
 */
extern void flexco_thread_name(const char *name)
{
	(void) prctl(PR_SET_NAME, (unsigned long) name, 0, 0, 0);
}

extern char *flexco_state_path(const char *file)
{
	slurmctld_lock_t conf_read = { .conf = READ_LOCK };
	char dir[PATH_MAX];

	lock_slurmctld(conf_read);	/* a copy only, nothing else */
	snprintf(dir, sizeof(dir), "%s", slurm_conf.state_save_location ?
		 slurm_conf.state_save_location : "");
	unlock_slurmctld(conf_read);
	return xstrdup_printf("%s/%s", dir, file);
}

extern bool flexco_ctld_in_charge(void)
{
	return *(volatile time_t *) &control_time &&
	       !*(volatile time_t *) &slurmctld_config.shutdown_time;
}

extern bool flexco_ctld_ready(void)
{
	slurmctld_lock_t read_locks = { .conf = READ_LOCK, .job = READ_LOCK,
					.node = READ_LOCK, .part = READ_LOCK };
	bool ready;

	/* A word read without the lock decides whether to take it. */
	if (!flexco_ctld_in_charge())
		return false;
	lock_slurmctld(read_locks);
	ready = control_time && !slurmctld_config.shutdown_time && job_list &&
		part_list && resv_list && (node_record_count > 0);
	unlock_slurmctld(read_locks);
	return ready;
}

extern int flexco_job_signal_id(uint32_t job_id, uint16_t signal,
				uint16_t flags, uid_t uid, bool preempt)
{
#if FLEXCO_SLURM_AT_LEAST(25, 11)
	job_record_t *job_ptr = find_job_record(job_id);

	if (!job_ptr)
		return ESLURM_INVALID_JOB_ID;
	return job_signal(job_ptr, signal, flags, uid, preempt);
#else
	return job_signal_id(job_id, signal, flags, uid, preempt);
#endif
}

_Static_assert((FLEXCO_RSVC_ERROR == 0) && (FLEXCO_RSVC_INFO == 1) &&
	       (FLEXCO_RSVC_DEBUG == 2) && (FLEXCO_ESVC_ERROR == 0) &&
	       (FLEXCO_ESVC_INFO == 1) && (FLEXCO_ESVC_DEBUG == 2) &&
	       (FLEXCO_API_ERROR == 0) && (FLEXCO_API_INFO == 1) &&
	       (FLEXCO_API_DEBUG == 2) && (FLEXCO_API_DEBUG2 == 3),
	       "one set of log levels for the services' hosts");

extern const char plugin_type[];

extern void flexco_host_log(void *arg, int level, const char *msg)
{
	(void) arg;
	switch (level) {
	case 0:
		error("%s: %s", plugin_type, msg);
		break;
	case 1:
		info("%s: %s", plugin_type, msg);
		break;
	case 2:
		debug("%s: %s", plugin_type, msg);
		break;
	default:
		debug2("%s: %s", plugin_type, msg);
	}
}

extern int64_t flexco_host_now(void *arg)
{
	(void) arg;
	return time(NULL);
}

extern bool flexco_host_in_charge(void *arg)
{
	(void) arg;
	return flexco_ctld_in_charge();	/* standby, hand-back or shutdown */
}
