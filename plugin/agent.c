/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  agent.c - the slurmctld/flexco plugin's own thread, one per start
 *****************************************************************************
 *  The agent owns everything the plugin does outside slurmctld's own
 *  threads.  Each init() starts a new agent thread, a *generation*, which
 *  brings the plugin up (flexco.conf, compute threads, then, for every
 *  *term* in which this slurmctld is the controller in charge with its
 *  state loaded, the state files, the events, history and HTTP services;
 *  see _term()), wakes up periodically, and at the end takes everything
 *  down again, from its own thread.
 *
 *  Why the stop is asynchronous: slurmctld may call fini() and init()
 *  with its own write locks held.  Slurm 22.05's `scontrol reconfigure`
 *  does, when PrEpPlugins changed: read_slurm_conf() -> prep_g_reconfig()
 *  -> prep_g_fini() + prep_g_init(), inside the reconfigure RPC.  Every
 *  thread of ours (HTTP workers taking a snapshot, the events thread, this
 *  agent) can be waiting in lock_slurmctld() at that moment, and will wait
 *  until that RPC returns.  So fini() must not wait for any of them, nor
 *  take any lock that such a thread holds, nor take slurmctld's locks:
 *  flexco_agent_stop() only sets its generation's stop flag and wakes it,
 *  under agent_lock, which no thread ever holds while it waits for
 *  slurmctld (nor while it joins a thread).  The generation then stops its
 *  services itself once its threads got past the locks, outside them.
 *
 *  Why generations never collide: init() under those locks only records
 *  a new generation and creates its thread.  That thread first joins the
 *  generation before it (outside every lock), so the old one has closed
 *  its listening port, saved its state files and stopped its events
 *  sequence before the new one loads or opens any of them.  A generation
 *  asked to stop before it started ends without starting anything.  The
 *  controller object stays mapped (prep_flexco.c loads it RTLD_NODELETE),
 *  so the code of a generation still stopping is never unloaded.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#define _GNU_SOURCE 1		/* pthread_timedjoin_np() */
#include "src/common/slurm_xlator.h"	/* must be first */

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "agent.h"
#include "compute.h"
#include "events.h"
#include "history.h"
#include "http.h"
#include "resv.h"
#include "snapshot.h"
#include "service/statefile.h"

extern const char plugin_type[];

#define AGENT_PERIOD_SEC 5
#define READY_POLL_SEC 1
/* In StateSaveLocation: held by the process that owns FlexCo's state. */
#define STATE_LOCK_FILE "flexco_state.lock"

typedef struct agent_gen {
	uint64_t id;		/* 1 for the process's first start */
	pthread_t tid;
	bool stop;		/* agent_lock */
	flexco_conf_t *conf;	/* read and freed by the thread */
	struct agent_gen *prev;	/* joined and freed by this generation */
} agent_gen_t;

/*
 * agent_lock is held only for a few assignments: never while waiting for
 * slurmctld's locks, for I/O, or for a thread to end (see above).
 */
static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t agent_cond = PTHREAD_COND_INITIALIZER;
static agent_gen_t *newest = NULL;	/* the last started; agent_lock */
static uint64_t gen_count = 0;		/* agent_lock */

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
	unlock_slurmctld(node_read);
}

static bool _stopping(agent_gen_t *g)
{
	bool stop;

	slurm_mutex_lock(&agent_lock);
	stop = g->stop;
	slurm_mutex_unlock(&agent_lock);
	return stop;
}

/* Wait up to sec seconds, or until asked to stop; returns g->stop. */
static bool _wait_period(agent_gen_t *g, int sec)
{
	struct timespec until;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += sec;
	slurm_mutex_lock(&agent_lock);
	while (!g->stop) {
		if (pthread_cond_timedwait(&agent_cond, &agent_lock, &until) ==
		    ETIMEDOUT)
			break;
	}
	stop = g->stop;
	slurm_mutex_unlock(&agent_lock);
	return stop;
}

/*
 * Plugins start before slurmctld reads its saved state, and on a standby
 * controller too: wait until this is the controller in charge with its
 * state loaded.  Returns false if asked to stop first.
 */
static bool _wait_ready(agent_gen_t *g)
{
	bool said = false;

	while (!_stopping(g)) {
		if (flexco_ctld_ready())
			return !_stopping(g);
		if (!said) {
			debug("%s: agent: waiting until this slurmctld is the controller in charge with its state loaded",
			      plugin_type);
			said = true;
		}
		(void) _wait_period(g, READY_POLL_SEC);
	}
	return false;
}

/*
 * Take the state lock (statefile.h), retrying while this process stays in
 * charge: the controller before us may still be saving.  Returns the lock
 * descriptor, or -1 if this process stopped being in charge or was asked
 * to stop first.
 */
static int _lock_state(agent_gen_t *g, const char *path)
{
	bool elsewhere, said = false;
	int fd;

	while (!_stopping(g) && flexco_ctld_in_charge()) {
		if ((fd = statefile_lock_try(path, &elsewhere)) >= 0) {
			if (said)
				info("%s: agent: got the state lock %s",
				     plugin_type, path);
			return fd;
		}
		if (!said) {
			error("%s: agent: %s: %s; waiting for it before FlexCo loads its state",
			      plugin_type, path, elsewhere ?
			      "the state lock is held by another slurmctld (or an earlier start of this one) that still owns FlexCo's state" :
			      "the state lock cannot be taken");
			said = true;
		}
		(void) _wait_period(g, READY_POLL_SEC);
	}
	return -1;
}

/*
 * One term: from the moment this process is the controller in charge with
 * its state loaded until it stops being so (a hand-back to another
 * controller, a shutdown) or the plugin stops.  Everything FlexCo keeps in
 * StateSaveLocation is loaded at the start of every term, never earlier (a
 * standby that takes over weeks after it started must not act on what it
 * would have read then), changed and saved only during the term, under
 * the state lock, and saved a last time at its end before the lock is
 * released: the next controller cannot load before that.  A process that
 * never was in charge never writes a state file.
 */
static void _term(agent_gen_t *g, const flexco_conf_t *conf)
{
	/* only now: slurm_conf is complete once slurmctld is in charge */
	char *lock_path = flexco_state_path(STATE_LOCK_FILE);
	flexco_cluster_summary_t s;
	bool services = false;
	int lock_fd;

	lock_fd = _lock_state(g, lock_path);
	xfree(lock_path);
	if (lock_fd < 0)
		return;
	info("%s: agent: this slurmctld is the controller in charge: loading FlexCo's state",
	     plugin_type);
	flexco_resv_init(conf);
	if (events_start(conf) != SLURM_SUCCESS) {
		error("%s: agent: cannot start the events service; FlexCo is idle",
		      plugin_type);
		goto end;
	}
	if (history_start(conf) != SLURM_SUCCESS) {
		error("%s: agent: cannot start the history service; FlexCo is idle",
		      plugin_type);
		events_stop();
		goto end;
	}
	services = true;

	_snapshot(&s);	/* slurmctld locks only */
	info("%s: agent: %d nodes (%d available), %ld CPUs", plugin_type,
	     s.nodes, s.nodes_avail, s.cpus);
	while (!_stopping(g) && flexco_ctld_in_charge()) {
		if (!http_running())
			(void) http_start(conf);	/* retried each period */
		flexco_resv_tick();	/* deadlines, orphans, state file */
		history_tick();		/* idle nodes per partition, state file */
		(void) _wait_period(g, AGENT_PERIOD_SEC);
	}
	if (!_stopping(g))
		info("%s: agent: not the controller in charge any more (shutdown, or control handed to another controller): FlexCo saves its state and serves nothing",
		     plugin_type);

end:
	http_stop();	/* answers the long polls still waiting */
	if (services) {
		history_stop();	/* saves the idle-node history a last time */
		events_stop();	/* saves the events' state a last time */
	}
	flexco_resv_fini();	/* saves the reservations a last time */
	statefile_unlock(lock_fd);
}

/* Terms, one after another, until asked to stop. */
static void _run(agent_gen_t *g, const flexco_conf_t *conf)
{
	while (_wait_ready(g))
		_term(g, conf);
}

/*
 * FlexCo idle (flexco.conf unusable): while this slurmctld is in charge,
 * every request to the file's ListenAddress:ListenPort is answered 503
 * flexco_idle with the reason, so flexcod and sreserve say why instead of
 * "cannot connect".  Until asked to stop.
 */
static void _idle(agent_gen_t *g)
{
	char why[512], *addr = NULL;
	uint16_t port = 0;
	bool listen = flexco_conf_idle_listen(&addr, &port, why, sizeof(why));

	if (!listen)
		info("%s: FlexCo is idle, and flexco.conf names no usable ListenAddress and ListenPort to say so on",
		     plugin_type);
	while (listen && _wait_ready(g)) {
		while (!_stopping(g) && flexco_ctld_in_charge()) {
			(void) http_start_idle(addr, port, why); /* or retry */
			(void) _wait_period(g, AGENT_PERIOD_SEC);
		}
		http_stop_idle();
	}
	xfree(addr);
}

static void *_agent(void *arg)
{
	agent_gen_t *g = arg;
	flexco_conf_t *conf;

	flexco_thread_name("flexco_agent");
	debug("%s: agent thread %"PRIu64" started", plugin_type, g->id);

	/*
	 * The generation before must be gone before this one touches the
	 * port, the state files or the events sequence.  Its threads may
	 * still wait for slurmctld's locks (we were started under them):
	 * this waits outside every lock, so it ends once they got past.
	 */
	if (g->prev) {
		pthread_join(g->prev->tid, NULL);
		xfree(g->prev);
		debug("%s: agent %"PRIu64": the previous start has ended",
		      plugin_type, g->id);
	}
	if (_stopping(g))
		goto out;

	/* flexco.conf is read here, not in init(): its NSS lookups must not
	 * run under slurmctld's locks (a reconfigure), and an unusable file
	 * must leave FlexCo idle, not end slurmctld. */
	if (!(g->conf = flexco_conf_read())) {
		error("%s: unusable flexco.conf (see the errors above): FlexCo is idle until it is fixed and slurmctld reconfigured or restarted",
		      plugin_type);
		_idle(g);
		goto out;
	}
	conf = g->conf;
	flexco_conf_log(conf);
	info("%s: init: Slurm %s, ListenAddress=%s ListenPort=%u DaemonUsers=%s",
	     plugin_type, SLURM_VERSION_STRING, conf->listen_address,
	     conf->listen_port,
	     conf->daemon_users ? conf->daemon_users : "(null)");

	snapshot_set_jobs_per_hold(conf->snapshot_jobs_per_hold);
	snapshot_set_max_age(conf->snapshot_max_age);
	snapshot_set_job_lag(conf->snapshot_job_lag);
	/* before HTTP: requests may come as soon as it listens */
	(void) compute_start(conf->compute_threads, conf->compute_nice);
	_run(g, conf);
	compute_stop();		/* no request runs any more */
	snapshot_share_drop();
	info("%s: fini: stopped", plugin_type);
out:
	flexco_conf_free(g->conf);
	g->conf = NULL;
	debug("%s: agent thread %"PRIu64" exiting", plugin_type, g->id);
	return NULL;
}

extern int flexco_agent_start(void)
{
	agent_gen_t *g = xmalloc(sizeof(*g));
	int rc;

	slurm_mutex_lock(&agent_lock);
	g->id = ++gen_count;
	g->prev = newest;
	rc = pthread_create(&g->tid, NULL, _agent, g);
	if (!rc)
		newest = g;
	slurm_mutex_unlock(&agent_lock);
	if (rc) {
		error("%s: cannot create agent thread: %s",
		      plugin_type, strerror(rc));
		xfree(g);
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

/* See the top of this file: returns at once, whatever the threads do. */
extern void flexco_agent_stop(void)
{
	slurm_mutex_lock(&agent_lock);
	if (newest && !newest->stop) {
		newest->stop = true;
		slurm_cond_broadcast(&agent_cond);
	}
	slurm_mutex_unlock(&agent_lock);
}

extern bool flexco_agent_running(void)
{
	bool running;

	slurm_mutex_lock(&agent_lock);
	running = newest && !newest->stop;
	slurm_mutex_unlock(&agent_lock);
	return running;
}

extern int flexco_agent_wait(int timeout_sec)
{
	struct timespec until;
	agent_gen_t *g;
	int rc;

	slurm_mutex_lock(&agent_lock);
	g = newest;
	slurm_mutex_unlock(&agent_lock);
	if (!g)
		return SLURM_SUCCESS;
	if (pthread_equal(g->tid, pthread_self()))
		return SLURM_ERROR;	/* exit() from our own thread */

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_sec;
	if ((rc = pthread_timedjoin_np(g->tid, NULL, &until))) {
		error("%s: agent did not stop within %d s (%s); not waiting for it",
		      plugin_type, timeout_sec, strerror(rc));
		return SLURM_ERROR;
	}
	slurm_mutex_lock(&agent_lock);
	if (newest == g)
		newest = NULL;
	slurm_mutex_unlock(&agent_lock);
	xfree(g);
	info("%s: agent thread joined", plugin_type);
	return SLURM_SUCCESS;
}
