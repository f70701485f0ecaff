/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  statefile.h - the plugin's state files under StateSaveLocation
 *****************************************************************************
 *  One module for every state file of the plugin (reservations, events,
 *  history).  A save writes <path>.new.<pid>.<n> (a name no other process
 *  or save uses), fsyncs it, keeps the copy it
 *  replaces as <path>.prev (a hard link, so there is no moment without a
 *  current copy), renames it over <path> and fsyncs the directory.
 *  A load takes the newest valid copy: <path>, else <path>.prev; a copy
 *  that cannot be read or parsed is renamed <path>.bad.<epoch> and kept.
 *
 *  Never call any of these while holding a slurmctld lock.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_STATEFILE_H
#define _FLEXCO_STATEFILE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Where the module's log lines go (the plugin: Slurm's log, prefixed with
 * its name); error or not, msg without a trailing newline.  None: silent.
 */
typedef void (*statefile_log_t)(bool is_error, const char *msg);
extern void statefile_set_log(statefile_log_t fn);

typedef enum {
	STATEFILE_NONE,		/* no copy at all: a first start */
	STATEFILE_CURRENT,	/* <path> */
	STATEFILE_PREV,		/* <path> missing or invalid, <path>.prev used */
	STATEFILE_LOST,		/* copies exist but none is valid */
} statefile_src_t;

/* "none", "current", "previous", "lost" */
extern const char *statefile_src_name(statefile_src_t src);

/*
 * Parse one copy.  Returns 0 and keeps what it parsed, or -1 with a reason
 * in why and nothing kept (the caller's state as before the call).
 */
typedef int (*statefile_parse_t)(const char *text, size_t len, void *arg,
				 char *why, size_t why_len);

/*
 * Load the newest valid copy of path (at most max bytes) through parse.
 * Logs which copy was used and why another one was rejected (what names
 * the file in log lines, e.g. "reservations").
 */
extern statefile_src_t statefile_load(const char *what, const char *path,
				      size_t max, statefile_parse_t parse,
				      void *arg);

/* A save in steps, for files written in pieces. */
typedef struct statefile_writer statefile_writer_t;

/* NULL (logged, reason in err) if <path>.new cannot be created. */
extern statefile_writer_t *statefile_begin(const char *what, const char *path,
					   char *err, size_t err_len);
/* Append bytes; an error is remembered and reported by commit. */
extern void statefile_append(statefile_writer_t *w, const void *buf,
			     size_t len);
/*
 * fsync, rotate <path> to <path>.prev, rename over <path>, fsync the
 * directory; frees w.  0, or -1 logged with the
 * reason (also in err), <path> untouched.
 */
extern int statefile_commit(statefile_writer_t *w, char *err, size_t err_len);
/* Give up a save: removes <path>.new, frees w. */
extern void statefile_abort(statefile_writer_t *w);

/*
 * The state lock <path> (StateSaveLocation/flexco_state.lock): held by the
 * one process whose plugin owns the state files, for as long as it loads,
 * changes and saves them (agent.c: a term).  Returns the descriptor that
 * holds it, or -1: *held_elsewhere says another process or start holds it
 * (else the error is logged).  Never waits.
 */
extern int statefile_lock_try(const char *path, bool *held_elsewhere);
/* Release the lock taken by statefile_lock_try(); -1 is ignored. */
extern void statefile_unlock(int fd);

/* begin + append(text) + commit. */
extern int statefile_write(const char *what, const char *path,
			   const char *text, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
