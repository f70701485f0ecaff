/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  history.h - idle nodes per partition over time, for p_res "history"
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_HISTORY_H
#define _FLEXCO_HISTORY_H

#include "core/capi_probe.h"

#include "flexco_conf.h"

/* Load the saved history (StateSaveLocation/flexco_history.state). */
extern int history_start(const flexco_conf_t *conf);

/*
 * Called by the agent thread every period, with no lock held: records the
 * idle nodes of every partition when PResHistoryInterval has passed since
 * the last record (a short node+partition read lock), and saves the
 * history file after releasing the locks.
 */
extern void history_tick(void);

/* A copy for one probe (free with flexco_histories_free), NULL if none. */
extern flexco_histories_t *history_copy(void);

/* Save a last time and free everything. */
extern void history_stop(void);

/* Records taken so far (for /v1/stats). */
extern uint64_t history_samples(void);

#endif
