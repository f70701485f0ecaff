/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  agent.c - the slurmctld/flexco plugin's own thread
 *****************************************************************************
 *  The agent owns everything the plugin does outside slurmctld's own threads.
 *  It first waits until slurmctld is the primary controller with its state
 *  loaded, starts the events and history services, then wakes up
 *  periodically, takes a short read-locked snapshot of the
 *  cluster, releases the locks and only then works on the copy.  Stopping
 *  is prompt: fini() signals a condition variable and joins the thread.
 *  The events thread (events.c) is stopped after the HTTP service, which
 *  reads the events.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "agent.h"
#include "events.h"
#include "history.h"
#include "http.h"
#include "resv.h"

extern const char plugin_type[];

#define AGENT_PERIOD_SEC 5
#define READY_POLL_SEC 1

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t agent_cond = PTHREAD_COND_INITIALIZER;
static pthread_t agent_tid;
static bool agent_running = false;
static bool agent_stop = false;
static bool have_summary = false;
static bool services_started = false;	/* events and history */
static flexco_cluster_summary_t summary;
static const flexco_conf_t *agent_conf = NULL;

/*
 * Copy what we need under slurmctld's node read lock only, no I/O, no
 * logging, no allocation while it is held.
 */
static void _snapshot(flexco_cluster_summary_t *s)
{
	slurmctld_lock_t node_read = { .node = READ_LOCK };
	node_record_t *node_ptr;
	int i;

	memset(s, 0, sizeof(*s));
	lock_slurmctld(node_read);
	s->when = time(NULL);
	for (i = 0; (node_ptr = next_node(&i)); i++) {
		s->nodes++;
		s->cpus += node_ptr->cpus_efctv;
		if (avail_node_bitmap && bit_test(avail_node_bitmap, i))
			s->nodes_avail++;
	}
	s->bf_last_cycle = slurmctld_diag_stats.bf_when_last_cycle;
	unlock_slurmctld(node_read);
}

/* Wait (stop-aware) for the next period; agent_lock held. */
static void _wait_period(int sec)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += sec;
	while (!agent_stop) {
		if (pthread_cond_timedwait(&agent_cond, &agent_lock, &until) ==
		    ETIMEDOUT)
			break;
	}
}

/*
 * Plugins start before slurmctld reads its saved state, and on a backup
 * controller too: wait until this is the primary with its state loaded.
 * Returns false if asked to stop first.
 */
static bool _wait_ready(void)
{
	bool said = false;

	slurm_mutex_lock(&agent_lock);
	while (!agent_stop) {
		slurm_mutex_unlock(&agent_lock);
		if (flexco_ctld_ready()) {
			slurm_mutex_lock(&agent_lock);
			break;
		}
		if (!said) {
			debug("%s: agent: waiting for slurmctld to be the primary with its state loaded",
			      plugin_type);
			said = true;
		}
		slurm_mutex_lock(&agent_lock);
		_wait_period(READY_POLL_SEC);
	}
	slurm_mutex_unlock(&agent_lock);
	return !agent_stop;
}

/* Events and history need slurmctld's state: started once it is there. */
static int _start_services(void)
{
	if (events_start(agent_conf) != SLURM_SUCCESS)
		return SLURM_ERROR;
	if (history_start(agent_conf) != SLURM_SUCCESS) {
		events_stop();
		return SLURM_ERROR;
	}
	slurm_mutex_lock(&agent_lock);
	services_started = true;
	slurm_mutex_unlock(&agent_lock);
	return SLURM_SUCCESS;
}

extern void flexco_thread_name(const char *name)
{
	(void) prctl(PR_SET_NAME, (unsigned long) name, 0, 0, 0);
}

static void *_agent(void *arg)
{
	flexco_cluster_summary_t s;
	bool first = true;

	(void) arg;
	flexco_thread_name("flexco_agent");
	debug("%s: agent thread started", plugin_type);

	if (!_wait_ready())
		goto done;
	if (_start_services() != SLURM_SUCCESS) {
		error("%s: agent: cannot start the events and history services; FlexCo is idle",
		      plugin_type);
		goto done;
	}

	slurm_mutex_lock(&agent_lock);
	while (!agent_stop) {
		slurm_mutex_unlock(&agent_lock);

		if (!flexco_ctld_ready()) {
			/* A backup that gave control back, or a slurmctld
			 * shutting down (24.11's reconfigure starts its
			 * successor meanwhile): free the port, serve nothing. */
			if (http_running()) {
				info("%s: agent: not the controller in charge any more (shutdown or backup), not serving",
				     plugin_type);
				http_stop();
			}
			slurm_mutex_lock(&agent_lock);
			_wait_period(AGENT_PERIOD_SEC);
			continue;
		}

		_snapshot(&s);	/* slurmctld locks only, ours released */
		if (!http_running())
			(void) http_start(agent_conf);	/* retried each period */
		flexco_resv_tick();	/* deadlines, orphans, state file */
		history_tick();		/* idle nodes per partition, state file */

		slurm_mutex_lock(&agent_lock);
		summary = s;
		have_summary = true;
		if (first) {
			info("%s: agent: %d nodes (%d available), %ld CPUs",
			     plugin_type, s.nodes, s.nodes_avail, s.cpus);
			first = false;
		}
		if (agent_stop)
			break;
		_wait_period(AGENT_PERIOD_SEC);
	}
	slurm_mutex_unlock(&agent_lock);
done:
	debug("%s: agent thread exiting", plugin_type);
	return NULL;
}

extern int flexco_agent_start(const flexco_conf_t *conf)
{
	int rc;

	slurm_mutex_lock(&agent_lock);
	if (agent_running) {
		slurm_mutex_unlock(&agent_lock);
		return SLURM_SUCCESS;
	}
	agent_conf = conf;
	agent_stop = false;
	services_started = false;
	rc = pthread_create(&agent_tid, NULL, _agent, NULL);
	if (rc) {
		slurm_mutex_unlock(&agent_lock);
		error("%s: cannot create agent thread: %s",
		      plugin_type, strerror(rc));
		return SLURM_ERROR;
	}
	agent_running = true;
	slurm_mutex_unlock(&agent_lock);
	return SLURM_SUCCESS;
}

extern void flexco_agent_stop(void)
{
	bool started;

	slurm_mutex_lock(&agent_lock);
	if (!agent_running) {
		slurm_mutex_unlock(&agent_lock);
		return;
	}
	agent_stop = true;
	slurm_cond_broadcast(&agent_cond);
	slurm_mutex_unlock(&agent_lock);

	pthread_join(agent_tid, NULL);

	slurm_mutex_lock(&agent_lock);
	agent_running = false;
	started = services_started;
	services_started = false;
	slurm_mutex_unlock(&agent_lock);
	info("%s: agent thread joined", plugin_type);

	http_stop();	/* answers the long polls still waiting */
	if (started) {
		history_stop();	/* saves the idle-node history a last time */
		events_stop();	/* saves the events' state a last time */
	}
}

extern int flexco_agent_summary(flexco_cluster_summary_t *out)
{
	int rc = -1;

	slurm_mutex_lock(&agent_lock);
	if (have_summary) {
		*out = summary;
		rc = 0;
	}
	slurm_mutex_unlock(&agent_lock);
	return rc;
}
