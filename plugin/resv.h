/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  resv.h - tentative and confirmed Slurm reservations made for flexcod
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_RESV_H
#define _FLEXCO_RESV_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <sys/types.h>

#include "flexco_conf.h"
#include "service/capi_resv_service.h"

/*
 * Load the saved state (StateSaveLocation/flexco_resv.json) and remember
 * the configuration.  Called from init() with no slurmctld lock held.
 */
extern int flexco_resv_init(const flexco_conf_t *conf);
extern void flexco_resv_fini(void);

/*
 * The reservation service (service/capi_resv_service.h) the HTTP requests
 * of /v1/reservations go to: plugin/http.c hands it to the HTTP service
 * (service/capi_api_server.h), which calls it with the authenticated uid
 * and the signed Idempotency-Key bound to its request (doc/reservations.md,
 * "Idempotency").  NULL before the first flexco_resv_init().  None of its
 * requests may be made with a slurmctld lock held.
 */
extern flexco_rsvc_t *flexco_resv_service(void);

/*
 * Periodic work from the agent thread: delete tentative reservations past
 * their confirm deadline, forget ended ones, notice reservations deleted
 * behind our back, save the state when it changed.
 */
extern void flexco_resv_tick(void);

/* Reservation records by state and admission refusals, for /v1/stats. */
extern json_t *flexco_resv_stats_json(void);

#endif
