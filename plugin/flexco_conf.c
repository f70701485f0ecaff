/*****************************************************************************\
 *  flexco_conf.c - read flexco.conf with Slurm's own parser
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/common/log.h"
#include "src/common/parse_config.h"
#include "src/common/read_config.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "flexco_conf.h"

extern const char plugin_type[];

static s_p_options_t flexco_options[] = {
	{.key = "DaemonUsers", .type = S_P_STRING},
	{.key = "ListenAddress", .type = S_P_STRING},
	{.key = "ListenPort", .type = S_P_UINT16},
	{.key = NULL}
};

static int _valid_address(const char *addr)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return (inet_pton(AF_INET, addr, buf) == 1) ||
	       (inet_pton(AF_INET6, addr, buf) == 1);
}

/* "root,slurm,1234" -> uids; every name must exist. */
static int _parse_users(flexco_conf_t *conf)
{
	char *copy, *tok, *save = NULL;
	int rc = SLURM_SUCCESS;

	if (!conf->daemon_users || !conf->daemon_users[0])
		return SLURM_SUCCESS;

	copy = xstrdup(conf->daemon_users);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uid_t uid;

		if (uid_from_string(tok, &uid) != SLURM_SUCCESS) {
			error("%s: %s: DaemonUsers: unknown user '%s'",
			      plugin_type, conf->path, tok);
			rc = SLURM_ERROR;
			break;
		}
		xrealloc(conf->daemon_uids,
			 sizeof(uid_t) * (conf->daemon_uid_cnt + 1));
		conf->daemon_uids[conf->daemon_uid_cnt++] = uid;
	}
	xfree(copy);
	return rc;
}

extern flexco_conf_t *flexco_conf_read_file(const char *path)
{
	flexco_conf_t *conf = xmalloc(sizeof(*conf));
	s_p_hashtbl_t *tbl = NULL;
	struct stat st;

	conf->path = xstrdup(path);

	if (stat(path, &st) < 0) {
		error("%s: cannot stat %s: %m", plugin_type, path);
		goto fail;
	}

	tbl = s_p_hashtbl_create(flexco_options);
	/* ignore_new=false: an unknown key is an error, not a typo to skip. */
	if (s_p_parse_file(tbl, NULL, (char *) path, false, NULL) !=
	    SLURM_SUCCESS) {
		error("%s: cannot parse %s: unknown key or bad value (see the error above); valid keys are DaemonUsers, ListenAddress, ListenPort",
		      plugin_type, path);
		goto fail;
	}

	if (!s_p_get_string(&conf->listen_address, "ListenAddress", tbl))
		conf->listen_address = xstrdup(FLEXCO_DEFAULT_LISTEN_ADDRESS);
	if (!_valid_address(conf->listen_address)) {
		error("%s: %s: ListenAddress=%s is not a numeric IPv4 or IPv6 address",
		      plugin_type, path, conf->listen_address);
		goto fail;
	}

	if (!s_p_get_uint16(&conf->listen_port, "ListenPort", tbl) ||
	    (conf->listen_port == 0)) {
		error("%s: %s: ListenPort is required (1-65535)",
		      plugin_type, path);
		goto fail;
	}

	s_p_get_string(&conf->daemon_users, "DaemonUsers", tbl);
	if (_parse_users(conf) != SLURM_SUCCESS)
		goto fail;

	s_p_hashtbl_destroy(tbl);
	return conf;

fail:
	if (tbl)
		s_p_hashtbl_destroy(tbl);
	flexco_conf_free(conf);
	return NULL;
}

extern flexco_conf_t *flexco_conf_read(void)
{
	char *path = get_extra_conf_path("flexco.conf");
	flexco_conf_t *conf = flexco_conf_read_file(path);

	xfree(path);
	return conf;
}

extern void flexco_conf_free(flexco_conf_t *conf)
{
	if (!conf)
		return;
	xfree(conf->path);
	xfree(conf->listen_address);
	xfree(conf->daemon_users);
	xfree(conf->daemon_uids);
	xfree(conf);
}

static void _add_pair(List list, const char *name, char *value)
{
	config_key_pair_t *kp = xmalloc(sizeof(*kp));

	kp->name = xstrdup(name);
	kp->value = value;	/* takes ownership */
	list_append(list, kp);
}

extern void flexco_conf_to_key_pairs(const flexco_conf_t *conf, List list)
{
	_add_pair(list, "ConfigFile", xstrdup(conf->path));
	_add_pair(list, "DaemonUsers",
		  xstrdup(conf->daemon_users ? conf->daemon_users : "(null)"));
	_add_pair(list, "ListenAddress", xstrdup(conf->listen_address));
	_add_pair(list, "ListenPort", xstrdup_printf("%u", conf->listen_port));
}
