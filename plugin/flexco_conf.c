/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  flexco_conf.c - read flexco.conf with Slurm's own parser
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MUNGE_DEFAULT_SOCKET "/run/munge/munge.socket.2"

#include "src/common/log.h"
#include "src/common/parse_config.h"
#include "src/common/slurm_protocol_api.h"
#include "src/common/read_config.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"

#include "core/capi_auth.h"
#include "flexco_conf.h"

/*
 * The reason of the last failed read, for the 503 answers of an idle
 * FlexCo (flexco_conf_idle_listen): every error() of this file is also
 * kept here.  Reads run in the agent thread only (or in `slurmctld -t`).
 */
static char conf_why[512];

static void _conf_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void _conf_error(const char *fmt, ...)
{
	char buf[sizeof(conf_why)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* without the "slurmctld/flexco: " prefix */
	snprintf(conf_why, sizeof(conf_why), "%s",
		 strncmp(buf, "slurmctld/flexco: ", 18) ? buf : buf + 18);
	slurm_error("%s", buf);
}
#undef error
#define error _conf_error

extern const char plugin_type[];

static s_p_options_t flexco_options[] = {
	{.key = "AuthMaxAge", .type = S_P_UINT32},
	{.key = "AuthMaxSkew", .type = S_P_UINT32},
	{.key = "BackfillDefer", .type = S_P_UINT32},
	{.key = "BodyTimeout", .type = S_P_UINT32},
	{.key = "ComputeNice", .type = S_P_UINT32},
	{.key = "ComputeThreads", .type = S_P_UINT32},
	{.key = "ConnectionTimeout", .type = S_P_UINT32},
	{.key = "DaemonUsers", .type = S_P_STRING},
	{.key = "EventBufferSize", .type = S_P_UINT32},
	{.key = "EventsRateLimit", .type = S_P_STRING},
	{.key = "HeaderTimeout", .type = S_P_UINT32},
	{.key = "HttpThreads", .type = S_P_UINT32},
	{.key = "ListenAddress", .type = S_P_STRING},
	{.key = "ListenPort", .type = S_P_UINT16},
	{.key = "MaxConnections", .type = S_P_UINT32},
	{.key = "MaxConnectionsPerAddress", .type = S_P_UINT32},
	{.key = "MaxLongPolls", .type = S_P_UINT32},
	{.key = "MaxLongPollsPerUser", .type = S_P_UINT32},
	{.key = "MaxRequestMemory", .type = S_P_UINT32},
	{.key = "MaxRequestSize", .type = S_P_UINT32},
	{.key = "MetricsTokenFile", .type = S_P_STRING},
	{.key = "MinFit", .type = S_P_STRING},
	{.key = "MinUserUid", .type = S_P_UINT32},
	{.key = "ActForRoot", .type = S_P_BOOLEAN},
	{.key = "MungeSocket", .type = S_P_STRING},
	{.key = "PResHistoryInterval", .type = S_P_UINT32},
	{.key = "PResHistoryPeriod", .type = S_P_UINT32},
	{.key = "ProbeRateLimit", .type = S_P_STRING},
	{.key = "ProfileRateLimit", .type = S_P_STRING},
	{.key = "PublishedShare", .type = S_P_UINT16},
	{.key = "QueryUsers", .type = S_P_STRING},
	{.key = "ReplayCachePerUser", .type = S_P_UINT32},
	{.key = "ReplayCacheSize", .type = S_P_UINT32},
	{.key = "SessionLifetime", .type = S_P_UINT32},
	{.key = "SnapshotJobLag", .type = S_P_UINT32},
	{.key = "SnapshotJobsPerHold", .type = S_P_UINT32},
	{.key = "SnapshotMaxAge", .type = S_P_UINT32},
	{.key = NULL}
};

#define VALID_KEYS "ActForRoot, AuthMaxAge, AuthMaxSkew, BackfillDefer, " \
	"BodyTimeout, " \
	"ComputeNice, ComputeThreads, " \
	"ConnectionTimeout, DaemonUsers, EventBufferSize, EventsRateLimit, " \
	"HeaderTimeout, HttpThreads, ListenAddress, ListenPort, MaxConnections, " \
	"MaxConnectionsPerAddress, MaxLongPolls, MaxLongPollsPerUser, " \
	"MaxRequestMemory, MaxRequestSize, MetricsTokenFile, MinFit, MinUserUid, MungeSocket, " \
	"PResHistoryInterval, PResHistoryPeriod, ProbeRateLimit, " \
	"ProfileRateLimit, PublishedShare, QueryUsers, ReplayCachePerUser, " \
	"ReplayCacheSize, SessionLifetime, SnapshotJobLag, SnapshotJobsPerHold, " \
	"SnapshotMaxAge"

static const char *const rate_keys[FLEXCO_RL_CNT] = {
	"ProbeRateLimit", "ProfileRateLimit", "EventsRateLimit" };
static const char *const rate_defaults[FLEXCO_RL_CNT] = {
	FLEXCO_DEFAULT_PROBE_RATE_LIMIT, FLEXCO_DEFAULT_PROFILE_RATE_LIMIT,
	FLEXCO_DEFAULT_EVENTS_RATE_LIMIT };

/* "Count/Seconds" (or "0": no limit) of one *RateLimit key. */
static int _get_rate(s_p_hashtbl_t *tbl, const char *path, int i,
		     flexco_conf_t *conf)
{
	char *val = NULL, *end = NULL;
	unsigned long cnt, secs = 1;
	int rc = SLURM_ERROR;

	if (!s_p_get_string(&val, (char *) rate_keys[i], tbl))
		val = xstrdup(rate_defaults[i]);
	errno = 0;
	if ((val[0] < '0') || (val[0] > '9'))
		goto out;
	cnt = strtoul(val, &end, 10);
	if (errno || (cnt > FLEXCO_MAX_RATE_COUNT))
		goto out;
	if (*end == '/') {
		const char *s = end + 1;

		if ((*s < '0') || (*s > '9'))
			goto out;
		secs = strtoul(s, &end, 10);
		if (errno || (secs < 1) || (secs > FLEXCO_MAX_RATE_SECONDS))
			goto out;
	} else if (cnt) {
		goto out;	/* "0" alone turns the limit off */
	}
	if (*end)
		goto out;
	conf->rate_count[i] = (uint32_t) cnt;
	conf->rate_secs[i] = (uint32_t) secs;
	rc = SLURM_SUCCESS;
out:
	if (rc != SLURM_SUCCESS)
		error("%s: %s: %s=%s is not Count/Seconds (Count 0-%u, Seconds 1-%u) or 0",
		      plugin_type, path, rate_keys[i], val,
		      FLEXCO_MAX_RATE_COUNT, FLEXCO_MAX_RATE_SECONDS);
	xfree(val);
	return rc;
}

/* Read an optional uint32 key with a default and an inclusive range. */
static int _get_u32(s_p_hashtbl_t *tbl, const char *path, const char *key,
		    uint32_t *out, uint32_t def, uint32_t lo, uint32_t hi)
{
	if (!s_p_get_uint32(out, (char *) key, tbl))
		*out = def;
	if ((*out < lo) || (*out > hi)) {
		error("%s: %s: %s=%u is out of range (%u-%u)",
		      plugin_type, path, key, *out, lo, hi);
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

static int _valid_address(const char *addr)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return (inet_pton(AF_INET, addr, buf) == 1) ||
	       (inet_pton(AF_INET6, addr, buf) == 1);
}

/*
 * ListenAddress=SlurmctldHost: the address of this host's own SlurmctldHost
 * line (the one whose name is this host's name, as slurmctld itself finds
 * it), resolved to a numeric address if it is a name.  A primary and a
 * backup controller can then share one flexco.conf, each listening on its
 * own address.  xmalloc'd, or NULL (logged).  Name lookups run without any
 * slurmctld lock held.
 */
static char *_ctld_host_address(const char *path)
{
	slurmctld_lock_t conf_read = { .conf = READ_LOCK };
	char host[256] = "", shorter[256], *dot, *name = NULL, *addr = NULL;
	char buf[INET6_ADDRSTRLEN];
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM }, *res = NULL;
	uint32_t i;
	int rc;

	if (gethostname(host, sizeof(host) - 1)) {
		error("%s: %s: ListenAddress=SlurmctldHost: gethostname: %m",
		      plugin_type, path);
		return NULL;
	}
	snprintf(shorter, sizeof(shorter), "%s", host);
	if ((dot = strchr(shorter, '.')))
		*dot = '\0';
	lock_slurmctld(conf_read);
	for (i = 0; i < slurm_conf.control_cnt; i++) {
		const char *m = slurm_conf.control_machine[i];

		if (m && (!xstrcmp(m, host) || !xstrcmp(m, shorter))) {
			name = xstrdup(m);
			addr = xstrdup(slurm_conf.control_addr[i] ?
				       slurm_conf.control_addr[i] : m);
			break;
		}
	}
	unlock_slurmctld(conf_read);
	if (!addr) {
		error("%s: %s: ListenAddress=SlurmctldHost: this host (%s) is none of slurm.conf's SlurmctldHost lines",
		      plugin_type, path, host);
		return NULL;
	}
	if (!_valid_address(addr)) {
		if ((rc = getaddrinfo(addr, NULL, &hints, &res)) || !res) {
			error("%s: %s: ListenAddress=SlurmctldHost: cannot resolve %s (SlurmctldHost %s): %s",
			      plugin_type, path, addr, name, gai_strerror(rc));
			xfree(name);
			xfree(addr);
			return NULL;
		}
		if (res->ai_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)
					     res->ai_addr)->sin_addr, buf,
				  sizeof(buf));
		else
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)
					      res->ai_addr)->sin6_addr, buf,
				  sizeof(buf));
		freeaddrinfo(res);
		xfree(addr);
		addr = xstrdup(buf);
	}
	info("%s: %s: ListenAddress=SlurmctldHost: %s, the address of SlurmctldHost %s",
	     plugin_type, path, addr, name);
	xfree(name);
	return addr;
}

/* "root,slurm,1234" -> uids; every name must exist. */
static int _parse_user_list(const char *path, const char *key,
			    const char *list, uid_t **uids, int *cnt)
{
	char *copy, *tok, *save = NULL;
	int rc = SLURM_SUCCESS;

	if (!list || !list[0])
		return SLURM_SUCCESS;

	copy = xstrdup(list);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uid_t uid;

		if (uid_from_string(tok, &uid) != SLURM_SUCCESS) {
			error("%s: %s: %s: unknown user '%s'",
			      plugin_type, path, key, tok);
			rc = SLURM_ERROR;
			break;
		}
		xrealloc(*uids, sizeof(uid_t) * (*cnt + 1));
		(*uids)[(*cnt)++] = uid;
	}
	xfree(copy);
	return rc;
}

static int _parse_users(flexco_conf_t *conf)
{
	return _parse_user_list(conf->path, "DaemonUsers", conf->daemon_users,
				&conf->daemon_uids, &conf->daemon_uid_cnt);
}

extern flexco_conf_t *flexco_conf_read_file(const char *path)
{
	flexco_conf_t *conf = xmalloc(sizeof(*conf));
	s_p_hashtbl_t *tbl = NULL;
	struct stat st;
	int i;

	conf_why[0] = '\0';
	conf->path = xstrdup(path);

	if (stat(path, &st) < 0) {
		error("%s: cannot stat %s: %m", plugin_type, path);
		goto fail;
	}

	tbl = s_p_hashtbl_create(flexco_options);
	/* ignore_new=false: an unknown key is an error, not a typo to skip. */
	if (s_p_parse_file(tbl, NULL, (char *) path, false, NULL) !=
	    SLURM_SUCCESS) {
		error("%s: cannot parse %s: unknown key or bad value (see the error above); valid keys are "
		      VALID_KEYS, plugin_type, path);
		goto fail;
	}

	if (!s_p_get_string(&conf->listen_address, "ListenAddress", tbl))
		conf->listen_address = xstrdup(FLEXCO_DEFAULT_LISTEN_ADDRESS);
	if (!xstrcasecmp(conf->listen_address, "SlurmctldHost")) {
		xfree(conf->listen_address);
		if (!(conf->listen_address = _ctld_host_address(path)))
			goto fail;
	}
	if (!_valid_address(conf->listen_address)) {
		error("%s: %s: ListenAddress=%s is not a numeric IPv4 or IPv6 address, nor SlurmctldHost",
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

	if (_get_u32(tbl, path, "MaxConnections", &conf->max_connections,
		     FLEXCO_DEFAULT_MAX_CONNECTIONS, 1,
		     FLEXCO_MAX_MAX_CONNECTIONS) ||
	    _get_u32(tbl, path, "MaxRequestSize", &conf->max_request_size,
		     FLEXCO_DEFAULT_MAX_REQUEST_SIZE, 1024, 64 * 1024 * 1024) ||
	    _get_u32(tbl, path, "ConnectionTimeout",
		     &conf->connection_timeout,
		     FLEXCO_DEFAULT_CONNECTION_TIMEOUT, 1, 3600) ||
	    _get_u32(tbl, path, "MaxConnectionsPerAddress",
		     &conf->max_connections_per_address,
		     FLEXCO_DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, 1, 1024) ||
	    _get_u32(tbl, path, "HeaderTimeout", &conf->header_timeout,
		     FLEXCO_DEFAULT_HEADER_TIMEOUT, 1, 3600) ||
	    _get_u32(tbl, path, "BodyTimeout", &conf->body_timeout,
		     FLEXCO_DEFAULT_BODY_TIMEOUT, 1, 3600) ||
	    _get_u32(tbl, path, "MaxLongPolls", &conf->max_long_polls,
		     FLEXCO_DEFAULT_MAX_LONG_POLLS, 1, 1024) ||
	    _get_u32(tbl, path, "MaxLongPollsPerUser",
		     &conf->max_long_polls_per_user,
		     FLEXCO_DEFAULT_MAX_LONG_POLLS_PER_USER, 1, 1024) ||
	    _get_u32(tbl, path, "AuthMaxAge", &conf->auth_max_age,
		     FLEXCO_DEFAULT_AUTH_MAX_AGE, 1, 86400) ||
	    _get_u32(tbl, path, "AuthMaxSkew", &conf->auth_max_skew,
		     FLEXCO_DEFAULT_AUTH_MAX_SKEW, 0, 86400) ||
	    _get_u32(tbl, path, "EventBufferSize", &conf->event_buffer_size,
		     FLEXCO_DEFAULT_EVENT_BUFFER_SIZE,
		     FLEXCO_MIN_EVENT_BUFFER_SIZE,
		     FLEXCO_MAX_EVENT_BUFFER_SIZE) ||
	    _get_u32(tbl, path, "PResHistoryPeriod", &conf->history_period,
		     FLEXCO_DEFAULT_HISTORY_PERIOD, 60, 7 * 86400) ||
	    _get_u32(tbl, path, "PResHistoryInterval",
		     &conf->history_interval,
		     FLEXCO_DEFAULT_HISTORY_INTERVAL, 5, 86400) ||
	    _get_u32(tbl, path, "MinUserUid", &conf->min_user_uid,
		     FLEXCO_DEFAULT_MIN_USER_UID, 1, 4294967294U) ||
	    _get_u32(tbl, path, "SnapshotJobsPerHold",
		     &conf->snapshot_jobs_per_hold,
		     FLEXCO_DEFAULT_SNAPSHOT_JOBS_PER_HOLD, 1, 1000000) ||
	    _get_u32(tbl, path, "SnapshotMaxAge", &conf->snapshot_max_age,
		     FLEXCO_DEFAULT_SNAPSHOT_MAX_AGE, 0, 60000) ||
	    _get_u32(tbl, path, "SnapshotJobLag", &conf->snapshot_job_lag,
		     FLEXCO_DEFAULT_SNAPSHOT_JOB_LAG, 0, 60000) ||
	    _get_u32(tbl, path, "HttpThreads", &conf->http_threads,
		     FLEXCO_DEFAULT_HTTP_THREADS, 1, 64) ||
	    _get_u32(tbl, path, "ComputeThreads", &conf->compute_threads,
		     FLEXCO_DEFAULT_COMPUTE_THREADS, 0, 64) ||
	    _get_u32(tbl, path, "ComputeNice", &conf->compute_nice,
		     FLEXCO_DEFAULT_COMPUTE_NICE, 0, 19) ||
	    _get_u32(tbl, path, "BackfillDefer", &conf->backfill_defer,
		     FLEXCO_DEFAULT_BACKFILL_DEFER, 0,
		     FLEXCO_MAX_BACKFILL_DEFER) ||
	    _get_u32(tbl, path, "ReplayCacheSize", &conf->replay_cache_size,
		     FLEXCO_DEFAULT_REPLAY_CACHE, 1024,
		     FLEXCO_MAX_REPLAY_CACHE) ||
	    _get_u32(tbl, path, "ReplayCachePerUser",
		     &conf->replay_cache_per_user, 0, 0,
		     FLEXCO_MAX_REPLAY_CACHE) ||
	    _get_u32(tbl, path, "SessionLifetime", &conf->session_lifetime,
		     FLEXCO_DEFAULT_SESSION_LIFETIME, 0, 86400))
		goto fail;
	if (!conf->replay_cache_per_user)
		conf->replay_cache_per_user = conf->replay_cache_size / 4;
	if (conf->max_long_polls_per_user > conf->max_long_polls) {
		error("%s: %s: MaxLongPollsPerUser=%u is more than MaxLongPolls=%u",
		      plugin_type, path, conf->max_long_polls_per_user,
		      conf->max_long_polls);
		goto fail;
	}
	/* default: 8 MiB, or one largest body if that is more */
	if (_get_u32(tbl, path, "MaxRequestMemory", &conf->max_request_memory,
		     (conf->max_request_size > FLEXCO_DEFAULT_MAX_REQUEST_MEMORY) ?
		     conf->max_request_size :
		     FLEXCO_DEFAULT_MAX_REQUEST_MEMORY,
		     1024, 4294967295U))
		goto fail;
	if (conf->max_request_memory < conf->max_request_size) {
		error("%s: %s: MaxRequestMemory=%u is less than MaxRequestSize=%u",
		      plugin_type, path, conf->max_request_memory,
		      conf->max_request_size);
		goto fail;
	}
	if (conf->snapshot_job_lag > conf->snapshot_max_age) {
		error("%s: %s: SnapshotJobLag=%u is more than SnapshotMaxAge=%u",
		      plugin_type, path, conf->snapshot_job_lag,
		      conf->snapshot_max_age);
		goto fail;
	}
	if (conf->replay_cache_per_user > conf->replay_cache_size) {
		error("%s: %s: ReplayCachePerUser=%u is more than ReplayCacheSize=%u",
		      plugin_type, path, conf->replay_cache_per_user,
		      conf->replay_cache_size);
		goto fail;
	}
	if (!s_p_get_boolean(&conf->act_for_root, "ActForRoot", tbl))
		conf->act_for_root = false;
	if (conf->history_interval > conf->history_period) {
		error("%s: %s: PResHistoryInterval=%u is longer than PResHistoryPeriod=%u",
		      plugin_type, path, conf->history_interval,
		      conf->history_period);
		goto fail;
	}

	for (i = 0; i < FLEXCO_RL_CNT; i++)
		if (_get_rate(tbl, path, i, conf))
			goto fail;

	s_p_get_string(&conf->query_users, "QueryUsers", tbl);
	if (_parse_user_list(path, "QueryUsers", conf->query_users,
			     &conf->query_uids, &conf->query_uid_cnt))
		goto fail;

	conf->min_fit = 0.0;
	{
		char *mf = NULL, *end = NULL;

		if (s_p_get_string(&mf, "MinFit", tbl)) {
			errno = 0;
			conf->min_fit = strtod(mf, &end);
			if (errno || (end == mf) || *end ||
			    !(conf->min_fit >= 0.0) || (conf->min_fit > 1.0)) {
				error("%s: %s: MinFit=%s is not a number in [0, 1]",
				      plugin_type, path, mf);
				xfree(mf);
				goto fail;
			}
			xfree(mf);
		}
	}

	if (!s_p_get_uint16(&conf->published_share, "PublishedShare", tbl))
		conf->published_share = FLEXCO_DEFAULT_PUBLISHED_SHARE;
	if ((conf->published_share < 1) || (conf->published_share > 100)) {
		error("%s: %s: PublishedShare=%u is out of range (1-100)",
		      plugin_type, path, conf->published_share);
		goto fail;
	}

	if (!s_p_get_string(&conf->munge_socket, "MungeSocket", tbl)) {
		/* slurm_conf is rewritten by a reconfigure, under this lock;
		 * only a string is parsed while it is held */
		slurmctld_lock_t conf_read = { .conf = READ_LOCK };

		lock_slurmctld(conf_read);
		conf->munge_socket =
			slurm_auth_opts_to_socket(slurm_conf.authinfo);
		unlock_slurmctld(conf_read);
	}
	if (conf->munge_socket && (conf->munge_socket[0] != '/')) {
		error("%s: %s: MungeSocket=%s is not an absolute path",
		      plugin_type, path, conf->munge_socket);
		goto fail;
	}
	if (!conf->munge_socket)
		conf->munge_socket = xstrdup(MUNGE_DEFAULT_SOCKET);

	/* read here, with flexco.conf, never while serving a request */
	if (s_p_get_string(&conf->metrics_token_file, "MetricsTokenFile",
			   tbl)) {
		char tok[FLEXCO_METRICS_TOKEN_MAX + 1], err[512];

		if (flexco_token_file_read(conf->metrics_token_file, tok,
					   sizeof(tok), err, sizeof(err))) {
			error("%s: %s: MetricsTokenFile: %s", plugin_type,
			      path, err);
			goto fail;
		}
		conf->metrics_token = xstrdup(tok);
		memset(tok, 0, sizeof(tok));
	}

	s_p_hashtbl_destroy(tbl);
	return conf;

fail:
	if (tbl)
		s_p_hashtbl_destroy(tbl);
	flexco_conf_free(conf);
	return NULL;
}

extern bool flexco_conf_idle_listen(char **address, uint16_t *port,
				    char *why, size_t why_len)
{
	char *path = get_extra_conf_path("flexco.conf");
	char line[1024], *addr = NULL;
	unsigned long p = 0;
	FILE *f;

	snprintf(why, why_len, "%s", conf_why[0] ? conf_why :
		 "flexco.conf is unusable (see slurmctld's log)");
	*address = NULL;
	*port = 0;
	if (!(f = fopen(path, "re"))) {
		xfree(path);
		return false;
	}
	/* KEY=VALUE lines, keys in any case, '#' comments; nothing else */
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *v, *end;

		if ((end = strchr(k, '#')))
			*end = '\0';
		while (*k == ' ' || *k == '\t')
			k++;
		if (!(v = strchr(k, '=')))
			continue;
		*v++ = '\0';
		for (end = k + strlen(k); end > k && (end[-1] == ' ' || end[-1] == '\t'); )
			*--end = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		for (end = v + strlen(v); end > v && strchr(" \t\r\n", end[-1]); )
			*--end = '\0';
		if (!xstrcasecmp(k, "ListenPort")) {
			char *e = NULL;

			p = strtoul(v, &e, 10);
			if (!*v || *e || (p < 1) || (p > 65535))
				p = 0;
		} else if (!xstrcasecmp(k, "ListenAddress")) {
			xfree(addr);
			addr = xstrdup(v);
		}
	}
	fclose(f);
	if (addr && !xstrcasecmp(addr, "SlurmctldHost")) {
		char keep[sizeof(conf_why)];

		snprintf(keep, sizeof(keep), "%s", conf_why);
		xfree(addr);
		addr = _ctld_host_address(path);
		snprintf(conf_why, sizeof(conf_why), "%s", keep);
	}
	xfree(path);
	if (!addr)
		addr = xstrdup(FLEXCO_DEFAULT_LISTEN_ADDRESS);
	if (!p || !_valid_address(addr)) {
		xfree(addr);
		return false;
	}
	*address = addr;
	*port = (uint16_t) p;
	return true;
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
	xfree(conf->munge_socket);
	xfree(conf->metrics_token_file);
	if (conf->metrics_token) {
		memset(conf->metrics_token, 0, strlen(conf->metrics_token));
		xfree(conf->metrics_token);
	}
	xfree(conf->query_users);
	xfree(conf->query_uids);
	xfree(conf);
}

/* One line with every effective setting: flexco.conf is not part of
 * `scontrol show config`. */
extern void flexco_conf_log(const flexco_conf_t *conf)
{
	char rate[FLEXCO_RL_CNT][32];
	int i;

	for (i = 0; i < FLEXCO_RL_CNT; i++) {
		if (conf->rate_count[i])
			snprintf(rate[i], sizeof(rate[i]), "%u/%u",
				 conf->rate_count[i], conf->rate_secs[i]);
		else
			snprintf(rate[i], sizeof(rate[i]), "0");
	}
	info("%s: %s: ActForRoot=%s AuthMaxAge=%u AuthMaxSkew=%u BackfillDefer=%u BodyTimeout=%u ComputeNice=%u ComputeThreads=%u ConnectionTimeout=%u DaemonUsers=%s EventBufferSize=%u EventsRateLimit=%s HeaderTimeout=%u HttpThreads=%u ListenAddress=%s ListenPort=%u MaxConnections=%u MaxConnectionsPerAddress=%u MaxLongPolls=%u MaxLongPollsPerUser=%u MaxRequestMemory=%u MaxRequestSize=%u MetricsTokenFile=%s MinFit=%.2f MinUserUid=%u MungeSocket=%s PResHistoryInterval=%u PResHistoryPeriod=%u ProbeRateLimit=%s ProfileRateLimit=%s PublishedShare=%u QueryUsers=%s ReplayCachePerUser=%u ReplayCacheSize=%u SessionLifetime=%u SnapshotJobLag=%u SnapshotJobsPerHold=%u SnapshotMaxAge=%u",
	     plugin_type, conf->path, conf->act_for_root ? "yes" : "no",
	     conf->auth_max_age, conf->auth_max_skew, conf->backfill_defer,
	     conf->body_timeout,
	     conf->compute_nice, conf->compute_threads,
	     conf->connection_timeout,
	     conf->daemon_users ? conf->daemon_users : "(null)",
	     conf->event_buffer_size, rate[FLEXCO_RL_EVENTS],
	     conf->header_timeout, conf->http_threads, conf->listen_address,
	     conf->listen_port,
	     conf->max_connections, conf->max_connections_per_address,
	     conf->max_long_polls, conf->max_long_polls_per_user,
	     conf->max_request_memory, conf->max_request_size,
	     conf->metrics_token_file ? conf->metrics_token_file : "(none)",
	     conf->min_fit,
	     conf->min_user_uid,
	     conf->munge_socket ? conf->munge_socket : "(default)",
	     conf->history_interval, conf->history_period,
	     rate[FLEXCO_RL_PROBE], rate[FLEXCO_RL_PROFILE],
	     conf->published_share,
	     conf->query_users ? conf->query_users : "(any)",
	     conf->replay_cache_per_user, conf->replay_cache_size,
	     conf->session_lifetime,
	     conf->snapshot_job_lag, conf->snapshot_jobs_per_hold,
	     conf->snapshot_max_age);
}
