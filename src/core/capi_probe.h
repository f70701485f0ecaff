/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_probe.h - C interface to the core's what-if probes (POST /v1/probe),
 * for the slurmctld plugin.  Same conventions as capi_profile.h: no C++
 * type or exception crosses it, every call reports an HTTP status, a code
 * and a message.  Request/response schema: doc/probe.md.
 */
#ifndef FLEXCO_CORE_CAPI_PROBE_H
#define FLEXCO_CORE_CAPI_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster_snapshot.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A cache of what-if plans for one snapshot (probe.hpp): set it as the
 * snapshot's plan_cache when the snapshot is made, and the probes that use
 * the snapshot plan each partition's queue once instead of once each.  Its
 * memory is bounded (a plan per partition, at most 4096 remembered slots
 * each).  Free it with the snapshot, once no probe uses the snapshot.
 * create returns NULL when out of memory (the snapshot then has no cache).
 */
struct flexco_plan_cache *flexco_plan_cache_create(void);
void flexco_plan_cache_free(struct flexco_plan_cache *cache);

/*
 * Scored offers for the probe request `body` (JSON, len bytes, need not be
 * NUL-terminated) on the snapshot.  share_percent: published share 1..100;
 * valid_for: seconds (>= 0) added to the snapshot time to give each
 * offer's valid_until.
 *
 * Returns 200 (offers), 400 ("bad_request", "not_implemented",
 * "bad_parameter"), 404 ("unknown_partition") or 500 ("invalid_snapshot",
 * "internal").  *json_out is always set to a malloc'd document (offers or
 * {"error":{"code":...,"message":...}}), NULL only if out of memory; free
 * it with free().  code/err receive the code ("" on success) and message,
 * truncated to codelen/errlen (either may be NULL with length 0).
 */
int flexco_probe_json(const flexco_snapshot_t *snap, const char *body,
		      size_t len, int share_percent, int64_t valid_for,
		      char **json_out, char *code, size_t codelen, char *err,
		      size_t errlen);

/*
 * Idle-node histories per partition, for p_res_method "history" (thesis
 * §9.4.1; core/idle_history.hpp).  The plugin records every partition's
 * idle nodes every `interval` seconds, averaged per time of day over
 * `period` seconds, and saves the text form under StateSaveLocation.  An
 * object is used by one thread at a time (the plugin guards it).
 */
typedef struct flexco_histories flexco_histories_t;

/* NULL on bad shape or out of memory (err says which). */
flexco_histories_t *flexco_histories_create(int64_t period, int64_t interval,
					    char *err, size_t errlen);
/* From saved text; text saved with another period/interval yields an
 * empty set.  NULL if malformed (err names the line). */
flexco_histories_t *flexco_histories_load(const char *text, size_t len,
					  int64_t period, int64_t interval,
					  char *err, size_t errlen);
void flexco_histories_free(flexco_histories_t *h);
/* A deep copy, NULL if out of memory. */
flexco_histories_t *flexco_histories_copy(const flexco_histories_t *h);
/* 0 on success, -1 with err set. */
int flexco_histories_record(flexco_histories_t *h, const char *partition,
			    int64_t t, int64_t idle, char *err, size_t errlen);
/* The text form, malloc'd (free()), NULL if out of memory. */
char *flexco_histories_save(const flexco_histories_t *h);

/*
 * What a probe request asks of Slurm's will_run: returns 1 and fills *out
 * when the body is a valid probe request with "will_run": true, else 0
 * (not asked, or invalid: flexco_probe_json_ex reports why).  nodes is the
 * smallest node count asked, duration its duration in seconds; partition
 * is "" for the default one.
 */
typedef struct {
	uint32_t nodes;
	int64_t duration;
	int64_t earliest_start;	/* 0: now */
	char partition[256];
} flexco_will_run_params_t;

int flexco_probe_will_run_params(const char *body, size_t len,
				 flexco_will_run_params_t *out);

/* Slurm's answer, as obtained by the plugin. */
typedef struct {
	int ok;			/* 1: start/node_list valid; 0: error */
	int64_t start;
	uint32_t nodes;
	uint32_t job_id;	/* the job id the test used up, 0 if none */
	const char *node_list;	/* may be NULL */
	const char *error;	/* may be NULL */
} flexco_will_run_answer_t;

/*
 * As flexco_probe_json, with the plugin's idle-node histories (may be
 * NULL) and Slurm's will_run answer (NULL: not asked; it is reported in
 * the response as "will_run").
 */
int flexco_probe_json_ex(const flexco_snapshot_t *snap, const char *body,
			 size_t len, int share_percent, int64_t valid_for,
			 const flexco_histories_t *histories,
			 const flexco_will_run_answer_t *will_run,
			 char **json_out, char *code, size_t codelen,
			 char *err, size_t errlen);

/*
 * As flexco_probe_json_ex, but answered only from the snapshot's plan
 * cache: returns 0 (and *json_out NULL, nothing planned) when the answer
 * would plan the partition's queue or a slot that no earlier probe of the
 * snapshot planned; any other return is flexco_probe_json_ex's answer.
 * On a snapshot with nothing planned yet (or no cache) it returns 0 at
 * once, without parsing the body; otherwise it costs the parse and the
 * snapshot's availability, no planning.
 */
int flexco_probe_json_cached(const flexco_snapshot_t *snap, const char *body,
			     size_t len, int share_percent, int64_t valid_for,
			     const flexco_histories_t *histories,
			     const flexco_will_run_answer_t *will_run,
			     char **json_out, char *code, size_t codelen,
			     char *err, size_t errlen);

/*
 * The what-if fitness of one exact slot (nodes over [start, start +
 * duration)) on the snapshot, as a probe would score it (the reservation
 * admission check of MinFit).  Returns 200 with *fit in [0, 1] and the
 * verdict ("placed", "collision", "head-delayed", or "unavailable" when
 * the published availability does not hold the slot: fit 0), else an
 * error status with code and message as flexco_probe_json.
 */
int flexco_slot_fit(const flexco_snapshot_t *snap, const char *partition,
		    int64_t start, int64_t duration, int64_t nodes,
		    int share_percent, double *fit, char *verdict,
		    size_t verdictlen, char *code, size_t codelen, char *err,
		    size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
