/*****************************************************************************\
 *  agent.c - the slurmctld/flexco plugin's own thread
 *****************************************************************************
 *  The agent owns everything the plugin does outside slurmctld's own threads.
 *  It wakes up periodically, takes a short read-locked snapshot of the
 *  cluster, releases the locks and only then works on the copy.  Stopping
 *  is prompt: fini() signals a condition variable and joins the thread.
 *  The events thread (events.c) is started before it and stopped after
 *  the HTTP service, which reads the events.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "agent.h"
#include "events.h"
#include "history.h"
#include "http.h"
#include "resv.h"

extern const char plugin_type[];

#define AGENT_PERIOD_SEC 5

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t agent_cond = PTHREAD_COND_INITIALIZER;
static pthread_t agent_tid;
static bool agent_running = false;
static bool agent_stop = false;
static bool have_summary = false;
static flexco_cluster_summary_t summary;
static const flexco_conf_t *agent_conf = NULL;

/*
 * Copy what we need under slurmctld's node read lock only, no I/O, no
 * logging, no allocation while it is held.
 */
static void _snapshot(flexco_cluster_summary_t *s)
{
	slurmctld_lock_t node_read = {
		NO_LOCK, NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK };
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

static void *_agent(void *arg)
{
	flexco_cluster_summary_t s;
	struct timespec until;
	bool first = true;

	(void) arg;
	debug("%s: agent thread started", plugin_type);

	slurm_mutex_lock(&agent_lock);
	while (!agent_stop) {
		slurm_mutex_unlock(&agent_lock);

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
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += AGENT_PERIOD_SEC;
		while (!agent_stop) {
			int rc = pthread_cond_timedwait(&agent_cond,
							&agent_lock, &until);
			if (rc == ETIMEDOUT)
				break;
		}
	}
	slurm_mutex_unlock(&agent_lock);

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
	slurm_mutex_unlock(&agent_lock);

	/* Events first (outside agent_lock: it takes the job write lock to
	 * hook job_fini); the HTTP service the agent starts serves them. */
	if (events_start(conf) != SLURM_SUCCESS)
		return SLURM_ERROR;

	if (history_start(conf) != SLURM_SUCCESS) {
		events_stop();
		return SLURM_ERROR;
	}

	slurm_mutex_lock(&agent_lock);
	agent_conf = conf;
	agent_stop = false;
	rc = pthread_create(&agent_tid, NULL, _agent, NULL);
	if (rc) {
		slurm_mutex_unlock(&agent_lock);
		error("%s: cannot create agent thread: %s",
		      plugin_type, strerror(rc));
		history_stop();
		events_stop();
		return SLURM_ERROR;
	}
	agent_running = true;
	slurm_mutex_unlock(&agent_lock);
	return SLURM_SUCCESS;
}

extern void flexco_agent_stop(void)
{
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
	slurm_mutex_unlock(&agent_lock);
	info("%s: agent thread joined", plugin_type);

	http_stop();	/* answers the long polls still waiting */
	history_stop();	/* saves the idle-node history a last time */
	events_stop();	/* saves the events' state a last time */
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
