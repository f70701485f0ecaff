/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_idem.h - the C interface of src/service/idem_cache (the
 * Idempotency-Key cache) for plugin/resv.c, which calls it under its lock.
 * Every function catches whatever the C++ side throws; strings may be
 * NULL (none).
 */

#ifndef FLEXCO_SERVICE_CAPI_IDEM_H
#define FLEXCO_SERVICE_CAPI_IDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flexco_idem flexco_idem_t;

typedef struct {
	const char *key;
	uint32_t uid;
	int status;
	const char *response;
	int64_t when;
	/* the request it answered; all NULL: unbound (an old state file's) */
	const char *method, *target, *digest;
} flexco_idem_entry_t;

typedef struct {
	size_t keys, max_uid_keys, capacity, per_uid;
	int64_t keep_seconds;
	uint64_t evicted_share, evicted_full;
} flexco_idem_stats_t;

enum {
	FLEXCO_IDEM_NEW = 0,	/* carry the request out */
	FLEXCO_IDEM_REPLAY = 1,	/* answer with the stored answer */
	FLEXCO_IDEM_REUSED = 2	/* the key answered another request: 422 */
};

/* NULL if out of memory. */
extern flexco_idem_t *flexco_idem_create(size_t capacity, size_t per_uid,
					 int64_t keep_seconds);
extern void flexco_idem_destroy(flexco_idem_t *c);
extern void flexco_idem_clear(flexco_idem_t *c);
extern bool flexco_idem_final(int status);

/*
 * FLEXCO_IDEM_*; for REPLAY and REUSED *out is the stored entry (its
 * strings valid until the next change of the cache) and *same_target says
 * whether a REUSED key answered the same method and target.
 */
extern int flexco_idem_answer(const flexco_idem_t *c, const char *key,
			      uint32_t uid, const char *method,
			      const char *target, const char *digest,
			      int64_t now, flexco_idem_entry_t *out,
			      bool *same_target);

/* Keep a final answer; false if not kept (no key, not final). */
extern bool flexco_idem_store(flexco_idem_t *c, const char *key, uint32_t uid,
			      const char *method, const char *target,
			      const char *digest, int status,
			      const char *response, int64_t now);

/* Loading: an entry as saved, with its own time. */
extern void flexco_idem_put(flexco_idem_t *c, const flexco_idem_entry_t *e,
			    int64_t now);

/* fn for each live entry, oldest first, until it returns non-zero (which
 * is returned). */
extern int flexco_idem_each(const flexco_idem_t *c, int64_t now,
			    int (*fn)(const flexco_idem_entry_t *e, void *arg),
			    void *arg);

extern void flexco_idem_stats(const flexco_idem_t *c, int64_t now,
			      flexco_idem_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif
