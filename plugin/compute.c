/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  compute.c - the plugin's low-priority threads for probe and profile work
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
 *
 *  A request thread queues a task (on its own stack) and waits on the
 *  task's condition; a compute thread takes tasks in arrival order.  The
 *  nice value is set per thread (Linux: setpriority() on the thread id
 *  changes that thread only), once, when the thread starts, to
 *  ComputeNice above slurmctld's own (at most 19); the threads
 *  never take slurmctld's locks, so their low priority cannot hold up a
 *  writer of slurmctld's state.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/xmalloc.h"

#include "compat.h"
#include "compute.h"

extern const char plugin_type[];

typedef struct task {
	void (*fn)(void *arg);
	void *arg;
	bool done;
	pthread_cond_t done_cond;
	struct task *next;
} task_t;

#define COMPUTE_MAX_THREADS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cond = PTHREAD_COND_INITIALIZER;
static task_t *head = NULL, *tail = NULL;	/* lock */
static uint64_t queued = 0;			/* lock */
static bool stopping = false;			/* lock */
static pthread_t tids[COMPUTE_MAX_THREADS];
static uint32_t n_threads = 0;			/* lock for readers */
static int thread_nice = 0;
static bool nice_failed = false;		/* lock */
static uint64_t runs = 0, inline_runs = 0, cached_runs = 0;	/* lock */
static uint64_t queued_max = 0;					/* lock */

static void *_compute_thread(void *arg)
{
	pid_t tid = (pid_t) syscall(SYS_gettid);
	task_t *t;

	(void) arg;
	flexco_thread_name("flexco_compute");
	if (thread_nice) {
		/* relative to the nice value slurmctld runs at (a thread
		 * starts with its creator's), so that the threads are always
		 * below slurmctld's own and never raised above it */
		int base, want;

		errno = 0;
		base = getpriority(PRIO_PROCESS, (id_t) tid);
		if ((base == -1) && errno)
			base = 0;
		want = base + thread_nice;
		if (want > 19)
			want = 19;
		if ((want != base) &&
		    (setpriority(PRIO_PROCESS, (id_t) tid, want) != 0)) {
			slurm_mutex_lock(&lock);
			if (!nice_failed)
				error("%s: compute thread: setpriority(%d): %s; probes run at slurmctld's priority",
				      plugin_type, want, strerror(errno));
			nice_failed = true;
			slurm_mutex_unlock(&lock);
		}
	}

	slurm_mutex_lock(&lock);
	for (;;) {
		while (!head && !stopping)
			pthread_cond_wait(&work_cond, &lock);
		if (!head)	/* stopping and nothing left */
			break;
		t = head;
		head = t->next;
		if (!head)
			tail = NULL;
		queued--;
		slurm_mutex_unlock(&lock);

		t->fn(t->arg);

		slurm_mutex_lock(&lock);
		runs++;
		t->done = true;
		pthread_cond_signal(&t->done_cond);
	}
	slurm_mutex_unlock(&lock);
	return NULL;
}

extern int compute_start(uint32_t count, uint32_t nice_value)
{
	uint32_t i;

	if (count > COMPUTE_MAX_THREADS)
		count = COMPUTE_MAX_THREADS;
	slurm_mutex_lock(&lock);
	stopping = false;
	thread_nice = (int) nice_value;
	nice_failed = false;
	slurm_mutex_unlock(&lock);
	for (i = 0; i < count; i++) {
		int rc = pthread_create(&tids[i], NULL, _compute_thread, NULL);

		if (rc) {
			error("%s: compute thread: pthread_create: %s",
			      plugin_type, strerror(rc));
			break;
		}
		slurm_mutex_lock(&lock);
		n_threads = i + 1;
		slurm_mutex_unlock(&lock);
	}
	return (i == count) ? SLURM_SUCCESS : SLURM_ERROR;
}

extern void compute_run(void (*fn)(void *arg), void *arg)
{
	task_t t = { .fn = fn, .arg = arg, .done = false, .next = NULL };

	slurm_mutex_lock(&lock);
	if (!n_threads || stopping) {
		inline_runs++;
		slurm_mutex_unlock(&lock);
		fn(arg);
		return;
	}
	pthread_cond_init(&t.done_cond, NULL);
	if (tail)
		tail->next = &t;
	else
		head = &t;
	tail = &t;
	if (++queued > queued_max)
		queued_max = queued;
	pthread_cond_signal(&work_cond);
	while (!t.done)
		pthread_cond_wait(&t.done_cond, &lock);
	slurm_mutex_unlock(&lock);
	pthread_cond_destroy(&t.done_cond);
}

extern void compute_count_cached(void)
{
	slurm_mutex_lock(&lock);
	cached_runs++;
	slurm_mutex_unlock(&lock);
}

extern void compute_stop(void)
{
	uint32_t i, n;

	slurm_mutex_lock(&lock);
	stopping = true;	/* the threads finish what is queued, then end */
	pthread_cond_broadcast(&work_cond);
	n = n_threads;
	slurm_mutex_unlock(&lock);
	for (i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	slurm_mutex_lock(&lock);
	n_threads = 0;
	slurm_mutex_unlock(&lock);
}

extern void compute_get_stats(compute_stats_t *out)
{
	slurm_mutex_lock(&lock);
	out->runs = runs;
	out->inline_runs = inline_runs;
	out->cached_runs = cached_runs;
	out->queued_max = queued_max;
	out->threads = n_threads;
	out->nice = nice_failed ? -1 : thread_nice;
	slurm_mutex_unlock(&lock);
}
