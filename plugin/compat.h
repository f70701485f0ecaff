/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  compat.h - every difference between the Slurm releases we build against
 *****************************************************************************
 *  The plugin compiles against the internal headers of exactly one Slurm
 *  release (configure --with-slurm-source), and must run only in that very
 *  release (struct layouts change even between micro releases: 26.05.5's
 *  job_record_t differs from 26.05.3's, doc/slurm-26.05.md).  Covered: 22.05
 *  and 24.11 (built and tested), 26.05 (builds against 26.05.3).  What
 *  differs between them is named here and nowhere else; the rest of
 *  plugin/ uses only these names.  To add a release: build against
 *  its source, give every compile error a name here, and add the release
 *  to m4/flexco_slurm.m4 (see README, "Slurm versions").
 *
 *  Include after src/common/slurm_xlator.h (which brings config.h).
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_COMPAT_H
#define _FLEXCO_COMPAT_H

#include "slurm/slurm_version.h"
#include "src/common/hostlist.h"
#include "src/common/list.h"

#define FLEXCO_SLURM_AT_LEAST(ma, mi) \
	(SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(ma, mi, 0))

/*
 * 24.11 moved the plugin interfaces (prep.h, job_submit.h, select.h ...)
 * from src/common to src/interfaces.
 */
#if FLEXCO_SLURM_AT_LEAST(24, 11)
#  define FLEXCO_PREP_H "src/interfaces/prep.h"
#else
#  define FLEXCO_PREP_H "src/common/prep.h"
#endif

/* List and ListIterator became list_t * and list_itr_t * (24.11). */
#if FLEXCO_SLURM_AT_LEAST(24, 11)
typedef list_t *flexco_list_t;
typedef list_itr_t *flexco_list_itr_t;
#else
typedef List flexco_list_t;
typedef ListIterator flexco_list_itr_t;
#endif

/* hostlist_t became a struct used through a pointer (24.11). */
#if FLEXCO_SLURM_AT_LEAST(24, 11)
typedef hostlist_t *flexco_hostlist_t;
#else
typedef hostlist_t flexco_hostlist_t;
#endif

/*
 * resv_desc_msg_t.node_cnt: a 0-terminated array per partition in 22.05,
 * one uint32_t in 24.11.  d must come from slurm_init_resv_desc_msg().
 */
#if FLEXCO_SLURM_AT_LEAST(24, 11)
#  define FLEXCO_RESV_SET_NODE_CNT(d, n) ((d)->node_cnt = (n))
#else
#  define FLEXCO_RESV_SET_NODE_CNT(d, n) do {			\
		xfree((d)->node_cnt);				\
		(d)->node_cnt = xcalloc(2, sizeof(uint32_t));	\
		(d)->node_cnt[0] = (n);				\
	} while (0)
#endif

/*
 * create_resv() and update_resv() also return an error text since 23.02;
 * *err_msg is an xmalloc'd string or NULL, the caller frees it.
 */
#if FLEXCO_SLURM_AT_LEAST(24, 11)
#  define flexco_create_resv(d, err_msg) create_resv((d), (err_msg))
#  define flexco_update_resv(d, err_msg) update_resv((d), (err_msg))
#else
#  define flexco_create_resv(d, err_msg) \
	(*(err_msg) = NULL, create_resv(d))
#  define flexco_update_resv(d, err_msg) \
	(*(err_msg) = NULL, update_resv(d))
#endif

/* job_reason_string() was renamed job_state_reason_string(). */
#if FLEXCO_SLURM_AT_LEAST(24, 11)
#  define flexco_job_reason_string(r) job_state_reason_string(r)
#else
#  define flexco_job_reason_string(r) job_reason_string(r)
#endif

/* job_desc_msg_t.job_id became step_id.job_id (25.11, with the SLUID). */
#if FLEXCO_SLURM_AT_LEAST(25, 11)
#  define FLEXCO_JOB_DESC_JOB_ID(d) ((d)->step_id.job_id)
#else
#  define FLEXCO_JOB_DESC_JOB_ID(d) ((d)->job_id)
#endif

/* will_run_response_msg_t.job_id became step_id.job_id (25.11). */
#if FLEXCO_SLURM_AT_LEAST(25, 11)
#  define FLEXCO_WILL_RUN_JOB_ID(resp) ((resp)->step_id.job_id)
#else
#  define FLEXCO_WILL_RUN_JOB_ID(resp) ((resp)->job_id)
#endif

/*
 * Signal a job by id (job_signal_id() is gone since 25.11).  Job write lock
 * held, as for job_signal().
 */
extern int flexco_job_signal_id(uint32_t job_id, uint16_t signal,
				uint16_t flags, uid_t uid, bool preempt);

/* `slurmctld -t` (a configuration test) exists up to 22.05 only. */
#if FLEXCO_SLURM_AT_LEAST(24, 11)
#  define FLEXCO_TEST_CONFIG false
#else
#  define FLEXCO_TEST_CONFIG test_config
#endif

/* Prolog, Epilog, PrologSlurmctld and EpilogSlurmctld became lists. */
#if FLEXCO_SLURM_AT_LEAST(24, 11)
#  define FLEXCO_CONF_HAS_PREP_SCRIPTS(c)				\
	((c).prolog_cnt || (c).epilog_cnt || (c).prolog_slurmctld_cnt ||	\
	 (c).epilog_slurmctld_cnt)
#else
#  define FLEXCO_CONF_HAS_PREP_SCRIPTS(c)				\
	((c).prolog || (c).epilog || (c).prolog_slurmctld ||		\
	 (c).epilog_slurmctld)
#endif

/*
 * True once this process is the controller in charge (the primary, or a
 * backup that took over) and has loaded its state (control_time is set,
 * job_list, part_list and resv_list exist, the node table is built), and
 * is not shutting down or handing control back.  slurmctld builds its
 * state under its write locks, so the answer is taken under read locks.
 * Before that (plugins start before the state is read), on a standby
 * controller, and once shutdown began (24.11's `scontrol reconfigure`
 * starts a new slurmctld while the old one exits) the plugin must not act.
 */
extern bool flexco_ctld_ready(void);

/* In charge (control_time set, no shutdown or hand-back begun), read
 * without a lock (words): for threads and handlers that must stop acting
 * the moment this controller stops being the one in charge. */
extern bool flexco_ctld_in_charge(void);

/*
 * What every service's host (resv.c, events.c, http.c) gives its service
 * alike: the log (levels 0 error, 1 info, 2 debug, 3 debug2: the services'
 * FLEXCO_RSVC_*, FLEXCO_ESVC_* and FLEXCO_API_* levels), the clock and
 * whether this controller is in charge.  arg is unused.
 */
extern void flexco_host_log(void *arg, int level, const char *msg);
extern int64_t flexco_host_now(void *arg);
extern bool flexco_host_in_charge(void *arg);

/*
 * Name the calling thread (at most 15 characters; Linux shows it in
 * top -H, ps -L and /proc/PID/task/TID/comm), as slurmctld names its own
 * ("bckfl", "rpcmgr").  Every thread of the plugin is named "flexco_..."
 * (doc/admin.md, "The plugin's threads").  Best effort: a failure changes
 * nothing else.
 */
extern void flexco_thread_name(const char *name);

/*
 * StateSaveLocation/file, xmalloc'd.  slurm_conf is re-read (its strings
 * freed and set again) under slurmctld's conf write lock while it starts
 * and at a reconfigure, so it is read under the conf read lock.
 */
extern char *flexco_state_path(const char *file);

#endif
