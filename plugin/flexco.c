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
 *  this process is the controller in charge with its state loaded
 *  (compat.h: flexco_ctld_ready) before it touches any of it, and loads
 *  FlexCo's state files then, at every takeover anew (agent.c).  Slurm
 *  22.05 also calls fini and init again from `scontrol reconfigure` when
 *  PrEpPlugins changed, with its write locks held: neither waits for
 *  anything then (agent.c says how).
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later
 *  (the plugin links slurmctld's internals).
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

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
#include "service/statefile.h"

/* Built with -fvisibility=hidden: only these entry points are exported. */
#define FLEXCO_EXPORT __attribute__((visibility("default")))

/* The prefix of every log line (not exported). */
const char plugin_type[] = "slurmctld/flexco";

/* prep/flexco refuses to start us when this is not its own version. */
FLEXCO_EXPORT const uint32_t flexco_ctld_slurm_version = SLURM_VERSION_NUMBER;

static bool at_exit_registered = false;
/* How long the exit handler waits for the plugin's threads to stop. */
#define EXIT_WAIT_SEC 10

/* service/statefile.h's log lines, as the plugin's own */
static void _statefile_log(bool is_error, const char *msg)
{
	if (is_error)
		error("%s: %s", plugin_type, msg);
	else
		info("%s: %s", plugin_type, msg);
}

/*
 * slurmctld calls the PrEp plugins' fini() only in builds made for memory
 * leak debugging, so a normal shutdown would end the process with our
 * threads running and the last state unsaved.  At exit (after slurmctld
 * has saved its own state and released its locks) stop as fini would and
 * wait for the threads: they answer the long polls, save every state file
 * and mark the events' state clean, so a restart continues the numbering
 * without telling clients that events were lost.  exit() may also come
 * from a fatal() with slurmctld's locks held, where a thread of ours may
 * never get past them: the wait is bounded (EXIT_WAIT_SEC).
 */
static void _at_exit(void)
{
	flexco_agent_stop();
	(void) flexco_agent_wait(EXIT_WAIT_SEC);
}

/*
 * May run with slurmctld's write locks held (22.05's reconfigure when
 * PrEpPlugins changed, agent.c), so it only starts the agent thread, which
 * reads flexco.conf and does everything else.  An unusable flexco.conf
 * leaves FlexCo idle, with the reason in the log; it never keeps slurmctld
 * from starting or ends a running one (doc/decisions.md, "Loading into
 * slurmctld").
 */
FLEXCO_EXPORT extern int flexco_ctld_init(void)
{
	statefile_set_log(_statefile_log);
	if (FLEXCO_TEST_CONFIG) {
		/* slurmctld -t (no lock held, nothing runs): check the file,
		 * start nothing; a bad one fails the test, as it should */
		flexco_conf_t *conf = flexco_conf_read();

		if (!conf)
			fatal("%s: unusable flexco.conf (see the errors above)",
			      plugin_type);
		flexco_conf_free(conf);
		info("%s: init: configuration test, not starting", plugin_type);
		return SLURM_SUCCESS;
	}
	if (flexco_agent_start() != SLURM_SUCCESS)
		return SLURM_ERROR;
	if (!at_exit_registered && !atexit(_at_exit))
		at_exit_registered = true;
	return SLURM_SUCCESS;
}

/* Returns at once: the agent stops everything from its own thread. */
FLEXCO_EXPORT extern int flexco_ctld_fini(void)
{
	if (flexco_agent_running()) {
		flexco_agent_stop();
		info("%s: fini: stopping", plugin_type);
	}
	return SLURM_SUCCESS;
}

/* From prep/flexco's epilog hook: slurmctld's job write lock is held. */
FLEXCO_EXPORT extern void flexco_ctld_job_end(job_record_t *job_ptr)
{
	events_job_end(job_ptr);
}
