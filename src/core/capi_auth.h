/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capi_auth.h - C interface to the core's MUNGE request verification, for
 * the slurmctld plugin (whose Slurm-facing files are C).
 *
 * No C++ type or exception crosses this interface: every function catches
 * everything and reports an HTTP status and a message.  verify() blocks on
 * munged; call it with no slurmctld lock held.
 */
#ifndef FLEXCO_CORE_CAPI_AUTH_H
#define FLEXCO_CORE_CAPI_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flexco_verifier flexco_verifier_t;

/*
 * The longest request-target (path and query) a signed request can carry:
 * the payload's request-target line is at most this long (doc/auth.md).
 * Servers answer a longer target 414 before authenticating it.
 */
#define FLEXCO_AUTH_MAX_TARGET 2048

/*
 * An Idempotency-Key is 1 to this many bytes of visible ASCII (0x21-0x7e),
 * and not "-" (doc/auth.md, flexco-auth-v3).
 */
#define FLEXCO_AUTH_MAX_IDEMPOTENCY_KEY 128

/* A body digest: SHA-256 as 64 lowercase hex digits and a NUL. */
#define FLEXCO_AUTH_DIGEST_SIZE 65

/*
 * audience: the service this verifier speaks for, i.e. the cluster's
 * ClusterName (requests signed for any other audience are refused with
 * wrong_audience, doc/auth.md); socket_path: munged's socket (absolute);
 * max_age, max_skew: seconds a
 * request's timestamp may lie behind / ahead of now; replay_capacity: how
 * many (uid, nonce) pairs are remembered; replay_per_uid: how many of them
 * one uid may hold (0: a quarter of replay_capacity), except the n_exempt
 * uids in exempt (the plugin's DaemonUsers; may be NULL when n_exempt is
 * 0), which only the whole capacity bounds; session_lifetime: seconds a
 * session granted to a request that offers one lasts (0: none granted;
 * doc/auth.md, "Sessions").  Returns NULL with a message
 * in err (NUL-terminated, truncated to errlen) on invalid arguments.
 */
flexco_verifier_t *flexco_verifier_create(const char *audience,
					  const char *socket_path,
					  int64_t max_age, int64_t max_skew,
					  size_t replay_capacity,
					  size_t replay_per_uid,
					  const uid_t *exempt, size_t n_exempt,
					  int64_t session_lifetime,
					  char *err, size_t errlen);

void flexco_verifier_destroy(flexco_verifier_t *v);

/*
 * Verify one request.  method, path (with its raw query string) and the
 * body exactly as received; header is the Authorization value or NULL;
 * idem_key the Idempotency-Key header value or NULL (it must be the signed
 * one: idempotency_key_mismatch otherwise).  Returns 200 and sets *uid,
 * *gid and, if digest is not NULL, digest (FLEXCO_AUTH_DIGEST_SIZE bytes:
 * the body's SHA-256 in hex) when authentic; otherwise the HTTP status
 * (401, 400, 503, 500), an error code name in code (e.g. "expired",
 * "wrong_audience", "idempotency_key_mismatch") and a message in err.
 * grant (FLEXCO_AUTH_GRANT_SIZE bytes, may be NULL) receives the value of
 * the FlexCo-Session header the answer must carry when the request was
 * granted a session, "" otherwise.  A request authenticated by a session
 * (Authorization: FlexCo-Session ...) costs no MUNGE IPC.
 */
#define FLEXCO_AUTH_GRANT_SIZE 128
int flexco_verifier_verify(flexco_verifier_t *v, const char *method,
			   const char *path, const char *body, size_t body_len,
			   const char *header, const char *idem_key,
			   uid_t *uid, gid_t *gid, char *digest,
			   char *code, size_t codelen, char *err, size_t errlen,
			   char *grant, size_t grantlen);

/*
 * Bearer tokens for GET /metrics (MetricsTokenFile=, doc/auth.md "Metrics
 * tokens"): Prometheus cannot make MUNGE credentials.
 *
 * flexco_token_file_read: the token in path, which must be a regular file
 * (not a symbolic link) owned by this process's effective uid and not
 * readable or writable by group or others (mode 0600 or 0400).  The token
 * is the file's first line without surrounding white space: 16 to
 * FLEXCO_METRICS_TOKEN_MAX bytes of visible ASCII.  Returns 0 and writes
 * the token and its NUL to out (outlen > FLEXCO_METRICS_TOKEN_MAX), else
 * -1 with the reason in err.
 */
#define FLEXCO_METRICS_TOKEN_MIN 16
#define FLEXCO_METRICS_TOKEN_MAX 512
int flexco_token_file_read(const char *path, char *out, size_t outlen,
			   char *err, size_t errlen);

/*
 * Does the Authorization header value header hold "Bearer <token>" with
 * exactly this token?  Compared in time that depends only on the lengths,
 * never on where the first difference is.  token "" never matches.
 */
int flexco_bearer_matches(const char *header, const char *token);

/* Does the header use the Bearer scheme at all (case-insensitive)? */
int flexco_is_bearer(const char *header);

/* Is key a valid Idempotency-Key (1..128 bytes of 0x21-0x7e, not "-")? */
int flexco_idempotency_key_valid(const char *key);

#ifdef __cplusplus
}
#endif

#endif
