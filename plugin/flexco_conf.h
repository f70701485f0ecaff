/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  flexco_conf.h - flexco.conf, the slurmctld/flexco plugin's configuration
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later
 *  (the plugin links slurmctld's internals).
\*****************************************************************************/

#ifndef _FLEXCO_CONF_H
#define _FLEXCO_CONF_H

#include <stdint.h>
#include <sys/types.h>

#include "src/common/list.h"

#define FLEXCO_DEFAULT_LISTEN_ADDRESS "127.0.0.1"
#define FLEXCO_DEFAULT_MAX_CONNECTIONS 1024
#define FLEXCO_MAX_MAX_CONNECTIONS 16384
#define FLEXCO_DEFAULT_MAX_REQUEST_SIZE (1024 * 1024)
#define FLEXCO_DEFAULT_CONNECTION_TIMEOUT 10
#define FLEXCO_DEFAULT_MAX_CONNECTIONS_PER_ADDRESS 16
#define FLEXCO_DEFAULT_HEADER_TIMEOUT 10
#define FLEXCO_DEFAULT_BODY_TIMEOUT 30
#define FLEXCO_DEFAULT_MAX_LONG_POLLS 16
#define FLEXCO_DEFAULT_MAX_LONG_POLLS_PER_USER 4
#define FLEXCO_DEFAULT_MAX_REQUEST_MEMORY (8 * 1024 * 1024)
#define FLEXCO_DEFAULT_PUBLISHED_SHARE 100
#define FLEXCO_DEFAULT_AUTH_MAX_AGE 300
#define FLEXCO_DEFAULT_AUTH_MAX_SKEW 60
#define FLEXCO_DEFAULT_REPLAY_CACHE 65536
#define FLEXCO_MAX_REPLAY_CACHE (1 << 22)	/* core/auth.hpp kMaxReplayCapacity */
#define FLEXCO_DEFAULT_SESSION_LIFETIME 300	/* s; doc/auth.md "Sessions" */
#define FLEXCO_DEFAULT_EVENT_BUFFER_SIZE 4096
#define FLEXCO_MIN_EVENT_BUFFER_SIZE 8
#define FLEXCO_MAX_EVENT_BUFFER_SIZE 65536
#define FLEXCO_DEFAULT_HISTORY_INTERVAL 300
#define FLEXCO_DEFAULT_SNAPSHOT_JOBS_PER_HOLD 250
#define FLEXCO_DEFAULT_SNAPSHOT_MAX_AGE 1000	/* ms */
#define FLEXCO_DEFAULT_SNAPSHOT_JOB_LAG 0	/* ms: never share after a job change */
#define FLEXCO_DEFAULT_COMPUTE_THREADS 2
#define FLEXCO_DEFAULT_HTTP_THREADS 2
#define FLEXCO_DEFAULT_COMPUTE_NICE 10
#define FLEXCO_DEFAULT_MIN_USER_UID 1000	/* Debian's FIRST_UID */
#define FLEXCO_DEFAULT_HISTORY_PERIOD 86400
#define FLEXCO_DEFAULT_BACKFILL_DEFER 500	/* ms */
#define FLEXCO_MAX_BACKFILL_DEFER 10000	/* ms */

/* Per-uid token buckets: Count requests per Seconds, bursts of Count. */
enum { FLEXCO_RL_PROBE, FLEXCO_RL_PROFILE, FLEXCO_RL_EVENTS, FLEXCO_RL_CNT };
#define FLEXCO_DEFAULT_PROBE_RATE_LIMIT "30/60"
#define FLEXCO_DEFAULT_PROFILE_RATE_LIMIT "60/60"
#define FLEXCO_DEFAULT_EVENTS_RATE_LIMIT "120/60"
#define FLEXCO_MAX_RATE_COUNT 1000000
#define FLEXCO_MAX_RATE_SECONDS 86400

/* Read-only after flexco_conf_read(); safe to share between threads. */
typedef struct {
	char *path;		/* absolute path of flexco.conf */
	char *listen_address;	/* ListenAddress, numeric IPv4 or IPv6 */
	uint16_t listen_port;	/* ListenPort */
	char *daemon_users;	/* DaemonUsers as written */
	uid_t *daemon_uids;	/* ... resolved */
	int daemon_uid_cnt;
	uint32_t max_connections;	/* MaxConnections */
	uint32_t max_request_size;	/* MaxRequestSize, bytes of body */
	uint32_t connection_timeout;	/* ConnectionTimeout, seconds */
	uint32_t max_connections_per_address; /* MaxConnectionsPerAddress */
	uint32_t header_timeout;	/* HeaderTimeout, seconds */
	uint32_t body_timeout;		/* BodyTimeout, seconds */
	uint32_t max_long_polls;	/* MaxLongPolls, all users */
	uint32_t max_long_polls_per_user; /* MaxLongPollsPerUser */
	uint32_t max_request_memory;	/* MaxRequestMemory, bytes of bodies */
	uint16_t published_share;	/* PublishedShare, percent */
	uint32_t auth_max_age;		/* AuthMaxAge, seconds */
	uint32_t auth_max_skew;		/* AuthMaxSkew, seconds */
	uint32_t event_buffer_size;	/* EventBufferSize, events retained */
	char *munge_socket;	/* MungeSocket, else slurm.conf AuthInfo */
	uint32_t history_interval;	/* PResHistoryInterval, seconds (L) */
	uint32_t history_period;	/* PResHistoryPeriod, seconds (ap) */
	char *query_users;	/* QueryUsers as written, NULL: anyone */
	uid_t *query_uids;	/* ... resolved */
	int query_uid_cnt;
	double min_fit;		/* MinFit: admission threshold, 0 = off */
	uint32_t snapshot_jobs_per_hold; /* SnapshotJobsPerHold */
	uint32_t snapshot_max_age;	/* SnapshotMaxAge, ms (0: never share) */
	uint32_t snapshot_job_lag;	/* SnapshotJobLag, ms, <= snapshot_max_age */
	uint32_t compute_threads;	/* ComputeThreads (0: in the request thread) */
	uint32_t compute_nice;		/* ComputeNice, 0..19 */
	uint32_t http_threads;		/* HttpThreads: microhttpd's workers */
	uint32_t backfill_defer;	/* BackfillDefer, ms (0: off) */
	/* ProbeRateLimit, ProfileRateLimit, EventsRateLimit: Count/Seconds,
	 * indexed by FLEXCO_RL_*; rate_count 0: no limit */
	uint32_t rate_count[FLEXCO_RL_CNT];
	uint32_t rate_secs[FLEXCO_RL_CNT];
	uint32_t min_user_uid;	/* MinUserUid: lowest uid acted for */
	bool act_for_root;	/* ActForRoot: act for uid 0 (test grids) */
	uint32_t replay_cache_size;	/* ReplayCacheSize: nonces remembered */
	uint32_t replay_cache_per_user;	/* ReplayCachePerUser, 0: size / 4 */
	uint32_t session_lifetime;	/* SessionLifetime, s; 0: no sessions */
	char *metrics_token_file;	/* MetricsTokenFile, NULL: none */
	char *metrics_token;	/* ... its token, read with flexco.conf */
} flexco_conf_t;

/*
 * Read and validate flexco.conf beside slurm.conf.  Unknown keys, malformed
 * values and unknown users are errors.  Returns NULL and logs the reason on
 * error.
 */
extern flexco_conf_t *flexco_conf_read(void);

/* Parse an already located file (used by flexco_conf_read). */
extern flexco_conf_t *flexco_conf_read_file(const char *path);

extern void flexco_conf_free(flexco_conf_t *conf);

/*
 * After flexco_conf_read() failed: where an idle FlexCo answers (the
 * file's ListenAddress and ListenPort, read leniently) and why it is idle
 * (the error that made the file unusable).  False (why still set) when the
 * file names no usable port.  *address is xmalloc'd.
 */
extern bool flexco_conf_idle_listen(char **address, uint16_t *port,
				    char *why, size_t why_len);

/* Log every effective setting on one line (not in scontrol show config). */
extern void flexco_conf_log(const flexco_conf_t *conf);

#endif
