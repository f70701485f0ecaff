/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  version.h - which Slurm release we were built for, and which one runs
 *****************************************************************************
 *  Used by both objects (prep_flexco.so and flexco_slurmctld.so): no
 *  slurmctld symbol, only libc's dynamic loader.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_VERSION_H
#define _FLEXCO_VERSION_H

#include <stddef.h>
#include <stdint.h>

/* The controller object prep/flexco loads, from its own directory. */
#define FLEXCO_CTLD_OBJECT "flexco_slurmctld.so"

/*
 * The SLURM_VERSION_NUMBER of the Slurm running this process, read from
 * the plugin_version of a Slurm plugin already loaded from the directory
 * of libslurmfull.so (every Slurm plugin carries the exact release it was
 * built for).  0 if none can be found.
 */
extern uint32_t flexco_running_slurm_version(void);

/* "22.05.8" for 0x160508. */
extern void flexco_version_str(uint32_t v, char *buf, size_t len);

#endif
