/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  metrics.h - Prometheus' text exposition format (version 0.0.4), written
 *  by hand: families with their HELP and TYPE once, samples, histograms.
 *****************************************************************************
 *  Only ever used on values already copied out of every lock: formatting
 *  takes no lock and does no I/O.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_METRICS_H
#define _FLEXCO_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct {
	char *s;		/* malloc'd, NUL-terminated; NULL if out of memory */
	size_t len, cap;
	int failed;		/* out of memory: metrics_take() returns NULL */
} metrics_buf_t;

/* # HELP and # TYPE of a family (type: counter, gauge, histogram). */
extern void metrics_family(metrics_buf_t *b, const char *name,
			   const char *type, const char *help);

/*
 * One sample: name{labels} value.  labels: NULL, or pairs of label name
 * and value ending with NULL; values are escaped.
 */
extern void metrics_sample(metrics_buf_t *b, const char *name,
			   const char *const *labels, double value);

/*
 * A histogram's samples (its family written before): name_bucket with
 * le="bound" for every bound and "+Inf", cumulative, then name_sum and
 * name_count.  counts[n_bounds + 1] are per bucket, not cumulative (the
 * last is above the largest bound); bounds in the unit of sum.
 */
extern void metrics_histogram(metrics_buf_t *b, const char *name,
			      const char *const *labels, const double *bounds,
			      const uint64_t *counts, size_t n_bounds,
			      double sum);

/* The text (malloc'd, the caller frees), or NULL if out of memory. */
extern char *metrics_take(metrics_buf_t *b);

#endif
