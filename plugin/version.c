/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  version.c - which Slurm release runs this process
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

#define SLURMFULL "/libslurmfull.so"

#define MAX_CANDIDATES 16

typedef struct {
	char dir[4096];		/* directory of libslurmfull.so, "" if unseen */
	const char *self;	/* our own object, skipped */
	char *cand[MAX_CANDIDATES];	/* other objects loaded from dir */
	int ncand;
} search_t;

static int _find_slurmfull(struct dl_phdr_info *info, size_t size, void *arg)
{
	search_t *s = arg;
	const char *n = info->dlpi_name;
	size_t len = n ? strlen(n) : 0, suf = strlen(SLURMFULL);

	(void) size;
	if ((len > suf) && !strcmp(n + len - suf, SLURMFULL) &&
	    (len - suf < sizeof(s->dir))) {
		memcpy(s->dir, n, len - suf);
		s->dir[len - suf] = '\0';
		return 1;
	}
	return 0;
}

/* Only collects names: no dlopen() while the loader's list is walked. */
static int _find_plugins(struct dl_phdr_info *info, size_t size, void *arg)
{
	search_t *s = arg;
	const char *n = info->dlpi_name, *slash;

	(void) size;
	if (!n || !n[0] || !(slash = strrchr(n, '/')) ||
	    ((size_t) (slash - n) != strlen(s->dir)) ||
	    strncmp(n, s->dir, slash - n) || !strcmp(slash, SLURMFULL) ||
	    (s->self && !strcmp(n, s->self)))
		return 0;
	if (!(s->cand[s->ncand] = strdup(n)))
		return 1;
	return (++s->ncand == MAX_CANDIDATES) ? 1 : 0;
}

extern uint32_t flexco_running_slurm_version(void)
{
	search_t s;
	Dl_info self;
	uint32_t version = 0;
	int i;

	memset(&s, 0, sizeof(s));
	if (dladdr((void *) &flexco_running_slurm_version, &self))
		s.self = self.dli_fname;
	if (!dl_iterate_phdr(_find_slurmfull, &s))
		return 0;
	(void) dl_iterate_phdr(_find_plugins, &s);
	for (i = 0; i < s.ncand; i++) {
		/* Already loaded: RTLD_NOLOAD only takes a reference. */
		void *h = version ? NULL :
			  dlopen(s.cand[i], RTLD_LAZY | RTLD_NOLOAD);

		if (h) {
			const uint32_t *v = dlsym(h, "plugin_version");

			if (v && *v)
				version = *v;
			dlclose(h);
		}
		free(s.cand[i]);
	}
	return version;
}

extern void flexco_version_str(uint32_t v, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%02u.%u", (v >> 16) & 0xff, (v >> 8) & 0xff,
		 v & 0xff);
}
