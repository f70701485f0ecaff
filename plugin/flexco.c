/*****************************************************************************\
 *  flexco.c - slurmctld/flexco: FlexCo co-allocation support in slurmctld
 *****************************************************************************
 *  Loaded through SlurmctldPlugstack=flexco.  Only the plugin's entry points
 *  live here; the plugin exports nothing else (see Makefile.am).
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later
 *  (the plugin links slurmctld's internals).
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <pthread.h>

#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld_plugstack.h"

#include "agent.h"
#include "flexco_conf.h"
#include "snapshot.h"
#include "resv.h"

/* Built with -fvisibility=hidden: only these entry points are exported. */
#define FLEXCO_EXPORT __attribute__((visibility("default")))

FLEXCO_EXPORT const char plugin_name[] = "FlexCo co-allocation plugin";
FLEXCO_EXPORT const char plugin_type[] = "slurmctld/flexco";
FLEXCO_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* Set once in init(), read-only until fini(). */
static flexco_conf_t *flexco_conf = NULL;
static pthread_mutex_t conf_lock = PTHREAD_MUTEX_INITIALIZER;

FLEXCO_EXPORT extern int init(void)
{
	flexco_conf_t *conf = flexco_conf_read();

	if (!conf)
		fatal("%s: unusable flexco.conf (see the errors above)",
		      plugin_type);

	slurm_mutex_lock(&conf_lock);
	flexco_conf = conf;
	slurm_mutex_unlock(&conf_lock);

	flexco_resv_init(conf);
	snapshot_set_jobs_per_hold(conf->snapshot_jobs_per_hold);

	if (flexco_agent_start(conf) != SLURM_SUCCESS) {
		flexco_resv_fini();
		slurm_mutex_lock(&conf_lock);
		flexco_conf_free(flexco_conf);
		flexco_conf = NULL;
		slurm_mutex_unlock(&conf_lock);
		return SLURM_ERROR;
	}

	info("%s: init: %s loaded (ListenAddress=%s ListenPort=%u DaemonUsers=%s)",
	     plugin_type, plugin_name, conf->listen_address,
	     conf->listen_port,
	     conf->daemon_users ? conf->daemon_users : "(null)");
	return SLURM_SUCCESS;
}

FLEXCO_EXPORT extern int fini(void)
{
	flexco_agent_stop();
	flexco_resv_fini();

	slurm_mutex_lock(&conf_lock);
	flexco_conf_free(flexco_conf);
	flexco_conf = NULL;
	slurm_mutex_unlock(&conf_lock);

	info("%s: fini: stopped", plugin_type);
	return SLURM_SUCCESS;
}

/* scontrol show config: "Slurmctld Plugstack Plugins Configuration". */
FLEXCO_EXPORT extern void slurmctld_plugstack_p_get_config(config_plugin_params_t *p)
{
	xstrcat(p->name, plugin_type);

	slurm_mutex_lock(&conf_lock);
	if (flexco_conf)
		flexco_conf_to_key_pairs(flexco_conf, p->key_pairs);
	slurm_mutex_unlock(&conf_lock);
}
