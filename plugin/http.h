/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  http.h - the slurmctld/flexco plugin's HTTP+JSON service
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_HTTP_H
#define _FLEXCO_HTTP_H

#include "flexco_conf.h"

/*
 * Start listening as configured.  Never fatal: on failure (e.g. the port is
 * taken) it logs the reason and returns SLURM_ERROR; the agent retries.
 * Called with no slurmctld lock held.
 */
extern int http_start(const flexco_conf_t *conf);

/* True while the service listens. */
extern bool http_running(void);

/* Stop listening and wait for the service's threads. */
extern void http_stop(void);

/*
 * FlexCo idle (an unusable flexco.conf): listen on address:port and answer
 * every request 503 flexco_idle with why, until http_stop_idle().
 */
extern int http_start_idle(const char *address, uint16_t port,
			   const char *why);
extern void http_stop_idle(void);

#endif
