/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  history.c - idle nodes per partition over time, for p_res "history"
 *****************************************************************************
 *  The thesis' history method (§9.4.1) estimates how likely a reservation
 *  is still granted later from how many processors were idle at the same
 *  time of day before.  Every PResHistoryInterval seconds the agent thread
 *  counts, per partition, the nodes that are idle and available, under a
 *  node+partition read lock that only reads bits into a fixed array; after
 *  unlocking, the counts go into the core's per-time-of-day averages
 *  (core/idle_history.hpp) and the whole history is written to
 *  StateSaveLocation/flexco_history.state (temp file, fsync, rename), so it
 *  survives slurmctld restarts.  Memory is O(partitions x period/interval)
 *  whatever the uptime.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "history.h"
#include "service/statefile.h"

extern const char plugin_type[];

#define HIST_MAX_PARTS 256	/* as the core's kHistoryMaxPartitions */
#define HIST_NAME_MAX 256
#define HIST_MAX_FILE (64 * 1024 * 1024)

typedef struct {
	char name[HIST_NAME_MAX];
	int64_t idle;
} sample_t;

static pthread_mutex_t hist_lock = PTHREAD_MUTEX_INITIALIZER;
static flexco_histories_t *hist = NULL;	/* under hist_lock */
static uint64_t samples = 0;		/* under hist_lock */
static char *state_path = NULL;
static int64_t interval = FLEXCO_DEFAULT_HISTORY_INTERVAL;
static int64_t period = FLEXCO_DEFAULT_HISTORY_PERIOD;
static time_t next_sample = 0;		/* agent thread only */
static sample_t sample_buf[HIST_MAX_PARTS];	/* agent thread only */

typedef struct {
	flexco_histories_t *h;
} hist_load_t;

static int _parse(const char *text, size_t len, void *arg, char *why,
		  size_t why_len)
{
	hist_load_t *l = arg;

	l->h = flexco_histories_load(text, len, period, interval, why,
				     why_len);
	return l->h ? 0 : -1;
}

extern int history_start(const flexco_conf_t *conf)
{
	char err[512];
	hist_load_t l = { NULL };
	flexco_histories_t *h;

	interval = conf->history_interval;
	period = conf->history_period;
	xfree(state_path);
	state_path = flexco_state_path("flexco_history.state");

	if (statefile_load("history", state_path, HIST_MAX_FILE, _parse, &l) ==
	    STATEFILE_LOST)
		error("%s: history: starting a new history", plugin_type);
	h = l.h;
	if (!h)
		h = flexco_histories_create(period, interval, err, sizeof(err));
	if (!h) {
		error("%s: history: %s", plugin_type, err);
		return SLURM_ERROR;
	}
	slurm_mutex_lock(&hist_lock);
	flexco_histories_free(hist);
	hist = h;
	slurm_mutex_unlock(&hist_lock);
	next_sample = 0;
	verbose("%s: history: idle nodes recorded every %"PRId64" s, averaged over %"PRId64" s",
		plugin_type, interval, period);
	return SLURM_SUCCESS;
}

/* Count idle, available nodes per partition: node+part read locks, bits
 * only, into the fixed sample buffer.  Returns the number of partitions. */
static int _sample(time_t *when)
{
	slurmctld_lock_t read_locks = { .node = READ_LOCK, .part = READ_LOCK };
	part_record_t *part_ptr;
	flexco_list_itr_t it;
	int n = 0;

	lock_slurmctld(read_locks);
	*when = time(NULL);
	it = list_iterator_create(part_list);
	while ((part_ptr = list_next(it)) && (n < HIST_MAX_PARTS)) {
		sample_t *s = &sample_buf[n];
		int64_t i, first, last, idle = 0;

		if (!part_ptr->name ||
		    (strlen(part_ptr->name) >= sizeof(s->name)))
			continue;
		strcpy(s->name, part_ptr->name);
		if (part_ptr->node_bitmap && idle_node_bitmap &&
		    avail_node_bitmap &&
		    ((first = bit_ffs(part_ptr->node_bitmap)) >= 0)) {
			last = bit_fls(part_ptr->node_bitmap);
			for (i = first; i <= last; i++) {
				if (bit_test(part_ptr->node_bitmap, i) &&
				    bit_test(idle_node_bitmap, i) &&
				    bit_test(avail_node_bitmap, i))
					idle++;
			}
		}
		s->idle = idle;
		n++;
	}
	list_iterator_destroy(it);
	unlock_slurmctld(read_locks);
	return n;
}

static void _save(void)
{
	char *text;

	slurm_mutex_lock(&hist_lock);
	text = hist ? flexco_histories_save(hist) : NULL;
	slurm_mutex_unlock(&hist_lock);
	if (text) {
		(void) statefile_write("history", state_path, text, NULL, 0);
		free(text);
	}
}

extern void history_tick(void)
{
	time_t now = time(NULL), when;
	char err[512];
	int i, n;

	if (!state_path || (now < next_sample))
		return;
	n = _sample(&when);
	next_sample = when + interval;

	slurm_mutex_lock(&hist_lock);
	for (i = 0; hist && (i < n); i++) {
		if (flexco_histories_record(hist, sample_buf[i].name, when,
					    sample_buf[i].idle, err,
					    sizeof(err)))
			debug("%s: history: %s", plugin_type, err);
	}
	samples++;
	slurm_mutex_unlock(&hist_lock);
	_save();
}

extern flexco_histories_t *history_copy(void)
{
	flexco_histories_t *copy;

	slurm_mutex_lock(&hist_lock);
	copy = flexco_histories_copy(hist);
	slurm_mutex_unlock(&hist_lock);
	return copy;
}

extern uint64_t history_samples(void)
{
	uint64_t n;

	slurm_mutex_lock(&hist_lock);
	n = samples;
	slurm_mutex_unlock(&hist_lock);
	return n;
}

extern void history_stop(void)
{
	if (state_path)
		_save();
	slurm_mutex_lock(&hist_lock);
	flexco_histories_free(hist);
	hist = NULL;
	slurm_mutex_unlock(&hist_lock);
	xfree(state_path);
}
