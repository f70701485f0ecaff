/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  agent.h - the slurmctld/flexco plugin's own thread, one per start
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_AGENT_H
#define _FLEXCO_AGENT_H

#include <stdbool.h>
#include <time.h>

#include "flexco_conf.h"

/* What one short read-locked snapshot of slurmctld saw (logged once). */
typedef struct {
	time_t when;		/* time of the snapshot */
	int nodes;		/* node records */
	int nodes_avail;	/* nodes up and not drained */
	long cpus;		/* effective CPUs over all nodes */
} flexco_cluster_summary_t;

/*
 * Start a new agent thread (a new generation, agent.c).  It first waits
 * until the generation before it has ended, then reads flexco.conf,
 * starts the compute threads and, each time slurmctld becomes the
 * controller in charge with its state loaded (compat.h), loads the state
 * files and starts the events thread (events.h), the history and the HTTP
 * service, which it keeps retrying while it cannot listen.  May be called with slurmctld's locks held: it
 * only creates the thread.
 */
extern int flexco_agent_start(void);

/*
 * Ask the newest generation to stop and return at once: it stops its
 * HTTP service (answering the long polls still waiting), its events and
 * history (saving their state) and the rest from its own thread.  May be
 * called with slurmctld's locks held: it waits for no thread and takes
 * no lock that a thread waiting for slurmctld's locks can hold.
 */
extern void flexco_agent_stop(void);

/* True while a generation runs that was not asked to stop. */
extern bool flexco_agent_running(void);

/*
 * Wait up to timeout_sec seconds for every generation to end (at exit,
 * after flexco_agent_stop()).  SLURM_ERROR if they did not: e.g. exit()
 * came from a fatal() while slurmctld's locks were held, so a thread of
 * ours cannot get past them.  Never call it with slurmctld's locks held.
 */
extern int flexco_agent_wait(int timeout_sec);


#endif
