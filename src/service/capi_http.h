/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_http.h - the C interface of src/service/http_guard for the
 * slurmctld plugin's HTTP service (service/api_server, whose host is
 * plugin/http.c); flexcod uses the same module from C++
 * (src/flexcod/server.cpp).  Both servers take their connection limits
 * from flexco_http_guard_options() and report their connections to it, so
 * the plugin's and flexcod's HTTP servers keep the same per-address,
 * memory and deadline limits (doc/decisions.md, "One HTTP guard").
 *
 * Every function catches whatever the C++ side throws.
 */

#ifndef FLEXCO_SERVICE_CAPI_HTTP_H
#define FLEXCO_SERVICE_CAPI_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
	uint32_t max_connections;		/* MaxConnections */
	uint32_t max_connections_per_address;	/* MaxConnectionsPerAddress */
	uint32_t connection_timeout;		/* s idle */
	uint32_t header_timeout;		/* s, HeaderTimeout */
	uint32_t body_timeout;			/* s, BodyTimeout */
	uint32_t max_request_size;		/* bytes of one body */
	uint64_t max_request_memory;		/* bytes of all bodies */
} flexco_http_limits_t;

typedef struct {
	uint64_t open, total, cut_headers, cut_body, evicted;
	uint64_t memory_used, memory_peak, memory_refused;
} flexco_http_guard_stats_t;

enum {
	FLEXCO_HTTP_HEADERS = 0,	/* receiving headers (HeaderTimeout) */
	FLEXCO_HTTP_BODY = 1,		/* receiving the body (BodyTimeout) */
	FLEXCO_HTTP_SERVING = 2		/* being served: no deadline */
};

typedef struct flexco_http_guard flexco_http_guard_t;

/* log: one line at debug level (may be NULL).  NULL if out of memory. */
extern flexco_http_guard_t *flexco_http_guard_create(
	const flexco_http_limits_t *limits, void (*log)(const char *line));
extern void flexco_http_guard_destroy(flexco_http_guard_t *g);

/*
 * The guard's options for MHD_start_daemon (pass MHD_OPTION_ARRAY, opts):
 * MaxConnections, MaxConnectionsPerAddress, the idle timeout and the
 * connection notifications.  opts has room for n items (at least 5);
 * returns the number used, the last being MHD_OPTION_END, or 0 if n is
 * too small.
 */
extern size_t flexco_http_guard_options(flexco_http_guard_t *g,
					struct MHD_OptionItem *opts, size_t n);

/* The reaper thread; false if it could not be made. */
extern bool flexco_http_guard_start(flexco_http_guard_t *g,
				    const char *thread_name);
/* Stop it (before MHD_stop_daemon: no shutdown() while microhttpd stops). */
extern void flexco_http_guard_stop(flexco_http_guard_t *g);

/* The request line of c arrived (from MHD_OPTION_URI_LOG_CALLBACK). */
extern void flexco_http_guard_requested(flexco_http_guard_t *g,
					struct MHD_Connection *c);
/* Move c to phase ph (FLEXCO_HTTP_*); false if the reaper cut it (408
 * sent): the caller answers MHD_NO. */
extern bool flexco_http_guard_phase(flexco_http_guard_t *g,
				    struct MHD_Connection *c, int ph);

extern void flexco_http_guard_stats(flexco_http_guard_t *g,
				    flexco_http_guard_stats_t *out);

/* A request body held in the guard's MaxRequestMemory budget. */
enum {
	FLEXCO_BODY_OK = 0,
	FLEXCO_BODY_TOO_LARGE = 1,	/* over MaxRequestSize: answer 413 */
	FLEXCO_BODY_NO_MEMORY = 2,	/* over MaxRequestMemory: answer 503 */
	FLEXCO_BODY_FAILED = 3		/* out of memory: close (MHD_NO) */
};
typedef struct flexco_http_body flexco_http_body_t;
extern flexco_http_body_t *flexco_http_body_new(flexco_http_guard_t *g);
extern void flexco_http_body_free(flexco_http_body_t *b);
/* The headers are in: content_length -1 if none.  A FLEXCO_BODY_* verdict. */
extern int flexco_http_body_begin(flexco_http_body_t *b,
				  int64_t content_length);
extern int flexco_http_body_add(flexco_http_body_t *b, const char *data,
				size_t n);
/* Give the buffer back to the budget now (the verdict stays). */
extern void flexco_http_body_drop(flexco_http_body_t *b);
extern int flexco_http_body_verdict(const flexco_http_body_t *b);
/* NUL-terminated; "" if empty. */
extern const char *flexco_http_body_data(const flexco_http_body_t *b);
extern size_t flexco_http_body_size(const flexco_http_body_t *b);

#ifdef __cplusplus
}
#endif

#endif
