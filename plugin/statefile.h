/*****************************************************************************\
 *  statefile.h - the plugin's state files under StateSaveLocation
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_STATEFILE_H
#define _FLEXCO_STATEFILE_H

#include <stddef.h>

/*
 * Replace path with text atomically: write path.new, fsync it, rename it
 * over path.  Logs the failure (with what, e.g. "history") and returns
 * SLURM_ERROR; never call it while holding a slurmctld lock.
 */
extern int statefile_write(const char *what, const char *path,
			   const char *text);

/*
 * The whole file, xmalloc'd and NUL-terminated, its length in *len; NULL
 * with errno set if it cannot be read or is larger than max bytes
 * (EFBIG).
 */
extern char *statefile_read(const char *path, size_t max, size_t *len);

#endif
