/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  agent.h - the slurmctld/flexco plugin's own thread
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_AGENT_H
#define _FLEXCO_AGENT_H

#include <time.h>

#include "flexco_conf.h"

/* What one short read-locked snapshot of slurmctld saw. */
typedef struct {
	time_t when;		/* time of the snapshot */
	int nodes;		/* node records */
	int nodes_avail;	/* nodes up and not drained */
	long cpus;		/* effective CPUs over all nodes */
	time_t bf_last_cycle;	/* end of the last backfill cycle, 0 if none */
} flexco_cluster_summary_t;

/*
 * Start the agent thread.  Once slurmctld is the primary controller with
 * its state loaded (compat.h), it starts the events thread (events.h), the
 * history, and the HTTP service, which it keeps retrying while it cannot
 * listen.  conf must outlive the threads.  Called from init(), no
 * slurmctld lock held.
 */
extern int flexco_agent_start(const flexco_conf_t *conf);

/* Ask the agent thread to stop, join it, stop the HTTP service (which
 * answers the long polls still waiting), then stop the events thread (which
 * saves the events' state).  Called from fini(). */
extern void flexco_agent_stop(void);

/*
 * Name the calling thread (at most 15 characters; Linux shows it in
 * top -H, ps -L and /proc/PID/task/TID/comm), as slurmctld names its own
 * ("bckfl", "rpcmgr").  Every thread of the plugin is named "flexco_..."
 * (doc/admin.md, "The plugin's threads").  Best effort: a failure changes
 * nothing else.
 */
extern void flexco_thread_name(const char *name);

/* Copy of the latest snapshot; returns -1 if none was taken yet. */
extern int flexco_agent_summary(flexco_cluster_summary_t *out);

#endif
