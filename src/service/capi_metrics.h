/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_metrics.h - the C interface of src/service/prometheus (Prometheus'
 * text exposition format, version 0.0.4) for the plugin's GET /metrics.
 * Only ever used on values already copied out of every lock: formatting
 * takes no lock and does no I/O.  Every function catches whatever the
 * C++ side throws; after an allocation failure the buffer only counts as
 * failed and flexco_metrics_take() returns NULL.
 */

#ifndef FLEXCO_SERVICE_CAPI_METRICS_H
#define FLEXCO_SERVICE_CAPI_METRICS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLEXCO_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A writer: zero-initialize it ({ 0 }); flexco_metrics_take() ends it. */
typedef struct {
	void *impl;		/* the C++ writer, made on first use */
	int failed;		/* out of memory: take() returns NULL */
} flexco_metrics_t;

/* # HELP and # TYPE of a family (type: counter, gauge, histogram). */
extern void flexco_metrics_family(flexco_metrics_t *b, const char *name,
				  const char *type, const char *help);

/*
 * One sample: name{labels} value.  labels: NULL, or pairs of label name
 * and value ending with NULL; values are escaped.
 */
extern void flexco_metrics_sample(flexco_metrics_t *b, const char *name,
				  const char *const *labels, double value);

/*
 * A histogram's samples (its family written before): name_bucket with
 * le="bound" for every bound and "+Inf", cumulative, then name_sum and
 * name_count.  counts[n_bounds + 1] are per bucket, not cumulative (the
 * last is above the largest bound); bounds in the unit of sum.
 */
extern void flexco_metrics_histogram(flexco_metrics_t *b, const char *name,
				     const char *const *labels,
				     const double *bounds,
				     const uint64_t *counts, size_t n_bounds,
				     double sum);

/* The text (malloc'd, the caller frees), or NULL if out of memory; the
 * writer is reset. */
extern char *flexco_metrics_take(flexco_metrics_t *b);

#ifdef __cplusplus
}
#endif

#endif
