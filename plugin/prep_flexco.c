/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  prep_flexco.c - prep/flexco: loads FlexCo into slurmctld
 *****************************************************************************
 *  The one object a site names in slurm.conf (PrEpPlugins=script,flexco).
 *  Slurm loads PrEp plugins into slurmctld, slurmd and slurmstepd, where a
 *  load failure is fatal, so this object references nothing but
 *  libslurmfull and libc.  Only in slurmctld (a primary or a backup) does it
 *  load the FlexCo controller object (flexco_slurmctld.so, installed
 *  beside it), which holds everything else and resolves slurmctld's
 *  internal symbols; in slurmd and slurmstepd every call is a no-op.
 *
 *  prep_p_epilog_slurmctld() runs in slurmctld for every job that ends
 *  (completed, cancelled, failed, timed out, node failure, requeued,
 *  preempted), under the job write lock: it hands the job to the
 *  controller object, which copies a few fields into a preallocated
 *  queue and returns.  It never reports "async", so it never delays a
 *  job's completion, and it always returns SLURM_SUCCESS so that PrEp
 *  plugins listed after it still run.
 *
 *  Why PrEp and not a job_submit plugin: doc/decisions.md.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later
 *  (the plugin links slurmctld's internals).
\*****************************************************************************/

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE 1	/* dladdr() */
#endif
#include "src/common/slurm_xlator.h"	/* must be first */

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xstring.h"

#include "compat.h"
#include FLEXCO_PREP_H
#include "version.h"

#define FLEXCO_EXPORT __attribute__((visibility("default")))

FLEXCO_EXPORT const char plugin_name[] = "FlexCo co-allocation PrEp plugin";
FLEXCO_EXPORT const char plugin_type[] = "prep/flexco";
FLEXCO_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* The controller object's entry points (flexco.c). */
typedef int (*ctld_init_fn)(void);
typedef int (*ctld_fini_fn)(void);
typedef void (*ctld_job_end_fn)(job_record_t *job_ptr);

/*
 * Written by init() and fini() only.  Slurm calls them with its PrEp
 * context lock held for writing and every prep_p_* call with it held for
 * reading, so no call runs while these change.
 */
static void *ctld_handle = NULL;
static ctld_fini_fn ctld_fini = NULL;
static ctld_job_end_fn ctld_job_end = NULL;

/* <directory of this object>/flexco_slurmctld.so, or NULL. */
static char *_ctld_path(void)
{
	Dl_info dli;
	const char *slash;

	if (!dladdr((void *) &plugin_version, &dli) || !dli.dli_fname)
		return NULL;
	if (!(slash = strrchr(dli.dli_fname, '/')))
		return xstrdup(FLEXCO_CTLD_OBJECT);
	return xstrdup_printf("%.*s/%s", (int) (slash - dli.dli_fname),
			      dli.dli_fname, FLEXCO_CTLD_OBJECT);
}

static void _unload(void)
{
	ctld_job_end = NULL;
	ctld_fini = NULL;
	if (ctld_handle)
		dlclose(ctld_handle);
	ctld_handle = NULL;
}

/*
 * Load flexco_slurmctld.so and start it.  Any failure leaves slurmctld
 * running without FlexCo (an error in its log): a co-allocation add-on
 * must never keep a production controller from starting.
 */
static void _load(void)
{
	char *path = _ctld_path(), built[32], running[32];
	const uint32_t *ctld_version;
	ctld_init_fn ctld_init;
	uint32_t run_version;

	if (!path) {
		error("%s: cannot find my own file name; FlexCo disabled",
		      plugin_type);
		return;
	}

	/* The running slurmctld must be the exact release we were compiled
	 * against: the controller object reads its internal structures. */
	run_version = flexco_running_slurm_version();
	flexco_version_str(SLURM_VERSION_NUMBER, built, sizeof(built));
	if (run_version && (run_version != SLURM_VERSION_NUMBER)) {
		flexco_version_str(run_version, running, sizeof(running));
		error("%s: built for Slurm %s but slurmctld is Slurm %s: FlexCo disabled (rebuild it against this Slurm's source)",
		      plugin_type, built, running);
		xfree(path);
		return;
	} else if (!run_version) {
		error("%s: cannot tell the running Slurm version (no Slurm plugin loaded yet); assuming %s",
		      plugin_type, built);
	}

	/*
	 * RTLD_NODELETE: the object stays mapped after fini().  Slurm 22.05
	 * calls fini() and init() from a reconfigure with its write locks
	 * held, so fini() cannot wait for the object's threads (some may be
	 * waiting for those locks); they end on their own afterwards, and
	 * their code must still be there.  The next init() gets the same
	 * object back, whose new threads wait for the old ones (agent.c).
	 */
	ctld_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!ctld_handle) {
		error("%s: cannot load %s: %s; FlexCo disabled",
		      plugin_type, path, dlerror());
		xfree(path);
		return;
	}
	ctld_version = dlsym(ctld_handle, "flexco_ctld_slurm_version");
	ctld_init = (ctld_init_fn) dlsym(ctld_handle, "flexco_ctld_init");
	ctld_fini = (ctld_fini_fn) dlsym(ctld_handle, "flexco_ctld_fini");
	ctld_job_end = (ctld_job_end_fn) dlsym(ctld_handle,
					       "flexco_ctld_job_end");
	if (!ctld_version || !ctld_init || !ctld_fini || !ctld_job_end) {
		error("%s: %s lacks FlexCo's entry points; FlexCo disabled",
		      plugin_type, path);
		_unload();
	} else if (*ctld_version != SLURM_VERSION_NUMBER) {
		flexco_version_str(*ctld_version, running, sizeof(running));
		error("%s: %s was built for Slurm %s, this plugin for Slurm %s: install both from one build; FlexCo disabled",
		      plugin_type, path, running, built);
		_unload();
	} else if (ctld_init() != SLURM_SUCCESS) {
		error("%s: %s did not start; FlexCo disabled",
		      plugin_type, path);
		_unload();
	} else {
		debug("%s: loaded %s", plugin_type, path);
	}
	xfree(path);
}

/*
 * The default PrEpPlugins is prep/script, which runs Prolog, Epilog,
 * PrologSlurmctld and EpilogSlurmctld.  A site that writes
 * PrEpPlugins=flexco alone silently loses those scripts: say so.
 */
static void _check_script_kept(void)
{
	const char *list = slurm_conf.prep_plugins;
	bool scripts = FLEXCO_CONF_HAS_PREP_SCRIPTS(slurm_conf);

	if (scripts && list && !xstrstr(list, "script"))
		error("%s: PrEpPlugins=%s does not list \"script\": Prolog, Epilog, PrologSlurmctld and EpilogSlurmctld will not run; write PrEpPlugins=script,flexco",
		      plugin_type, list);
}

FLEXCO_EXPORT extern int init(void)
{
	if (!running_in_slurmctld())
		return SLURM_SUCCESS;	/* slurmd, slurmstepd: nothing to do */
	_check_script_kept();
	_load();
	return SLURM_SUCCESS;
}

/* Slurm ignores what fini() returns (void in some versions, int in others). */
FLEXCO_EXPORT extern void fini(void)
{
	if (ctld_fini)
		(void) ctld_fini();
	_unload();
}

FLEXCO_EXPORT extern void prep_p_register_callbacks(prep_callbacks_t *callbacks)
{
	(void) callbacks;	/* we never run asynchronously */
}

FLEXCO_EXPORT extern int prep_p_prolog(job_env_t *job_env, slurm_cred_t *cred)
{
	(void) job_env;
	(void) cred;
	return SLURM_SUCCESS;
}

FLEXCO_EXPORT extern int prep_p_epilog(job_env_t *job_env, slurm_cred_t *cred)
{
	(void) job_env;
	(void) cred;
	return SLURM_SUCCESS;
}

FLEXCO_EXPORT extern int prep_p_prolog_slurmctld(job_record_t *job_ptr,
						 bool *async)
{
	(void) job_ptr;
	*async = false;
	return SLURM_SUCCESS;
}

/* slurmctld, job write lock held: hand over and return at once. */
FLEXCO_EXPORT extern int prep_p_epilog_slurmctld(job_record_t *job_ptr,
						 bool *async)
{
	*async = false;
	if (ctld_job_end && job_ptr)
		ctld_job_end(job_ptr);
	return SLURM_SUCCESS;
}

FLEXCO_EXPORT extern void prep_p_required(prep_call_type_t type,
					  bool *required)
{
	/* Only the controller's epilog hook, and only when FlexCo runs;
	 * never the prolog, so job starts are not touched.  Never clears
	 * what another PrEp plugin asked for. */
	if ((type == PREP_EPILOG_SLURMCTLD) && ctld_job_end &&
	    running_in_slurmctld())
		*required = true;
}
