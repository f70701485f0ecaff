/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  metrics.c - Prometheus' text exposition format (see metrics.h)
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static void _put(metrics_buf_t *b, const char *text, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *ns;

		while (b->len + n + 1 > cap)
			cap *= 2;
		if (!(ns = realloc(b->s, cap))) {
			b->failed = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, text, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void _puts(metrics_buf_t *b, const char *text)
{
	_put(b, text, strlen(text));
}

static void _printf(metrics_buf_t *b, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		_put(b, buf, ((size_t) n < sizeof(buf)) ? (size_t) n :
			     sizeof(buf) - 1);
}

/* A label value: backslash, double quote and newline escaped. */
static void _put_value(metrics_buf_t *b, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			_puts(b, "\\\\");
		else if (*v == '"')
			_puts(b, "\\\"");
		else if (*v == '\n')
			_puts(b, "\\n");
		else
			_put(b, v, 1);
	}
}

/* A number as Prometheus reads it: integers exactly, +Inf, NaN. */
static void _put_number(metrics_buf_t *b, double v)
{
	if (isnan(v))
		_puts(b, "NaN");
	else if (isinf(v))
		_puts(b, (v > 0) ? "+Inf" : "-Inf");
	else if ((v > -9007199254740992.0) && (v < 9007199254740992.0) &&
		 (v == (double) (long long) v))
		_printf(b, "%lld", (long long) v);
	else
		_printf(b, "%.9g", v);
}

static void _put_labels(metrics_buf_t *b, const char *const *labels,
			const char *le)
{
	int first = 1, i;

	if (!(labels && labels[0]) && !le)
		return;
	_puts(b, "{");
	for (i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
		if (!first)
			_puts(b, ",");
		first = 0;
		_puts(b, labels[i]);
		_puts(b, "=\"");
		_put_value(b, labels[i + 1]);
		_puts(b, "\"");
	}
	if (le) {
		if (!first)
			_puts(b, ",");
		_puts(b, "le=\"");
		_puts(b, le);
		_puts(b, "\"");
	}
	_puts(b, "}");
}

extern void metrics_family(metrics_buf_t *b, const char *name,
			   const char *type, const char *help)
{
	_puts(b, "# HELP ");
	_puts(b, name);
	_puts(b, " ");
	for (; *help; help++) {	/* HELP escapes backslash and newline */
		if (*help == '\\')
			_puts(b, "\\\\");
		else if (*help == '\n')
			_puts(b, "\\n");
		else
			_put(b, help, 1);
	}
	_puts(b, "\n# TYPE ");
	_puts(b, name);
	_puts(b, " ");
	_puts(b, type);
	_puts(b, "\n");
}

extern void metrics_sample(metrics_buf_t *b, const char *name,
			   const char *const *labels, double value)
{
	_puts(b, name);
	_put_labels(b, labels, NULL);
	_puts(b, " ");
	_put_number(b, value);
	_puts(b, "\n");
}

extern void metrics_histogram(metrics_buf_t *b, const char *name,
			      const char *const *labels, const double *bounds,
			      const uint64_t *counts, size_t n_bounds,
			      double sum)
{
	uint64_t cum = 0;
	char le[32];
	size_t i;

	for (i = 0; i <= n_bounds; i++) {
		cum += counts[i];
		if (i < n_bounds)
			snprintf(le, sizeof(le), "%.9g", bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		_puts(b, name);
		_puts(b, "_bucket");
		_put_labels(b, labels, le);
		_puts(b, " ");
		_put_number(b, (double) cum);
		_puts(b, "\n");
	}
	_puts(b, name);
	_puts(b, "_sum");
	_put_labels(b, labels, NULL);
	_puts(b, " ");
	_put_number(b, sum);
	_puts(b, "\n");
	_puts(b, name);
	_puts(b, "_count");
	_put_labels(b, labels, NULL);
	_puts(b, " ");
	_put_number(b, (double) cum);
	_puts(b, "\n");
}

extern char *metrics_take(metrics_buf_t *b)
{
	char *s = b->s;

	if (b->failed || !s) {
		free(b->s);
		s = NULL;
	}
	b->s = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
	return s;
}
