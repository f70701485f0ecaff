/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  flexco.c - slurmctld/flexco: FlexCo co-allocation support in slurmctld
 *****************************************************************************
 *  The controller object, flexco_slurmctld.so.  prep/flexco
 *  (prep_flexco.c) loads it in the primary slurmctld process only and
 *  calls the three entry points below; the object exports nothing else
 *  (see flexco_slurmctld.map), so our names never collide with
 *  slurmctld's.
 *
 *  init runs early in slurmctld's start, before it has loaded its saved
 *  jobs, partitions and reservations, and also on a backup controller:
 *  it reads flexco.conf and starts the agent thread, which waits until
 *  this process is the primary controller with its state loaded
 *  (compat.h: flexco_ctld_ready) before it touches any of it.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later
 *  (the plugin links slurmctld's internals).
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <pthread.h>
#include <stdlib.h>

#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "agent.h"
#include "compat.h"
#include "events.h"
#include "flexco_conf.h"
#include "snapshot.h"
#include "compute.h"
#include "resv.h"

/* Built with -fvisibility=hidden: only these entry points are exported. */
#define FLEXCO_EXPORT __attribute__((visibility("default")))

/* The prefix of every log line (not exported). */
const char plugin_type[] = "slurmctld/flexco";

/* prep/flexco refuses to start us when this is not its own version. */
FLEXCO_EXPORT const uint32_t flexco_ctld_slurm_version = SLURM_VERSION_NUMBER;

/* Set once in flexco_ctld_init(), read-only until flexco_ctld_fini(). */
static flexco_conf_t *flexco_conf = NULL;
static pthread_mutex_t conf_lock = PTHREAD_MUTEX_INITIALIZER;
static bool at_exit_registered = false;

FLEXCO_EXPORT extern int flexco_ctld_fini(void);

/*
 * slurmctld calls the PrEp plugins' fini() only in builds made for memory
 * leak debugging, so a normal shutdown would end the process with our
 * threads running and the last state unsaved.  At exit (after slurmctld
 * has saved its own state and released its locks) stop as fini would:
 * join the threads, answer the long polls, save every state file, and
 * mark the events' state clean, so a restart continues the numbering
 * without telling clients that events were lost.
 */
static void _at_exit(void)
{
	bool running;

	slurm_mutex_lock(&conf_lock);
	running = (flexco_conf != NULL);
	slurm_mutex_unlock(&conf_lock);
	if (running)
		(void) flexco_ctld_fini();
}

FLEXCO_EXPORT extern int flexco_ctld_init(void)
{
	flexco_conf_t *conf;

	if (FLEXCO_TEST_CONFIG) {	/* slurmctld -t: check the config, start nothing */
		info("%s: init: configuration test, not starting", plugin_type);
		return SLURM_SUCCESS;
	}
	/* Like Slurm's own plugins: an unusable config file is fatal at
	 * start, where the admin who just edited it sees it at once. */
	if (!(conf = flexco_conf_read()))
		fatal("%s: unusable flexco.conf (see the errors above)",
		      plugin_type);

	slurm_mutex_lock(&conf_lock);
	flexco_conf = conf;
	slurm_mutex_unlock(&conf_lock);

	flexco_resv_init(conf);
	snapshot_set_jobs_per_hold(conf->snapshot_jobs_per_hold);
	snapshot_set_max_age(conf->snapshot_max_age);
	snapshot_set_job_lag(conf->snapshot_job_lag);
	/* before the agent: requests may come as soon as it listens */
	(void) compute_start(conf->compute_threads, conf->compute_nice);

	if (flexco_agent_start(conf) != SLURM_SUCCESS) {
		compute_stop();
		flexco_resv_fini();
		slurm_mutex_lock(&conf_lock);
		flexco_conf_free(flexco_conf);
		flexco_conf = NULL;
		slurm_mutex_unlock(&conf_lock);
		return SLURM_ERROR;
	}

	if (!at_exit_registered && !atexit(_at_exit))
		at_exit_registered = true;

	flexco_conf_log(conf);
	info("%s: init: Slurm %s, ListenAddress=%s ListenPort=%u DaemonUsers=%s",
	     plugin_type, SLURM_VERSION_STRING, conf->listen_address,
	     conf->listen_port,
	     conf->daemon_users ? conf->daemon_users : "(null)");
	return SLURM_SUCCESS;
}

FLEXCO_EXPORT extern int flexco_ctld_fini(void)
{
	slurm_mutex_lock(&conf_lock);
	if (!flexco_conf) {	/* never started, or stopped already */
		slurm_mutex_unlock(&conf_lock);
		return SLURM_SUCCESS;
	}
	slurm_mutex_unlock(&conf_lock);

	flexco_agent_stop();
	compute_stop();		/* no request runs any more */
	snapshot_share_drop();
	flexco_resv_fini();

	slurm_mutex_lock(&conf_lock);
	flexco_conf_free(flexco_conf);
	flexco_conf = NULL;
	slurm_mutex_unlock(&conf_lock);

	info("%s: fini: stopped", plugin_type);
	return SLURM_SUCCESS;
}

/* From prep/flexco's epilog hook: slurmctld's job write lock is held. */
FLEXCO_EXPORT extern void flexco_ctld_job_end(job_record_t *job_ptr)
{
	events_job_end(job_ptr);
}
