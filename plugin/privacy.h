/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  privacy.h - slurm.conf PrivateData for the plugin's answers
 *****************************************************************************
 *  What a caller may see of other users' jobs and reservations, decided as
 *  squeue, scontrol show job and scontrol show res decide it (see
 *  doc/events.md, "Privacy").
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_PRIVACY_H
#define _FLEXCO_PRIVACY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Who is asking, and what slurm.conf PrivateData hides from them. */
typedef struct {
	uid_t uid;
	bool hide_jobs;		/* PrivateData=jobs applies to this caller */
	bool hide_resvs;	/* PrivateData=reservations applies */
	char **coord_accts;	/* accounts uid coordinates (hide_jobs only) */
	uint32_t coord_cnt;
} flexco_viewer_t;

/*
 * What an item shows.  job: a job's id, user or nodes (PrivateData=jobs);
 * resv: a reservation's name, users or nodes (PrivateData=reservations).
 */
typedef struct {
	bool job;
	uid_t job_uid;		/* the job's owner */
	char *account;		/* the job's account, NULL if unknown */
	bool resv;
	uid_t *users;		/* the reservation's Users= (uids) */
	uint32_t user_cnt;
	bool users_not;		/* Users=-name: the list excludes */
} flexco_acl_t;

/*
 * Fill *v for uid.  privileged: a caller that sees everything whatever
 * PrivateData says (DaemonUsers).  Otherwise PrivateData is read under the
 * config read lock, then, if it hides anything, validate_operator() (root,
 * SlurmUser, AdminLevel Operator or Administrator) and the accounts uid
 * coordinates are looked up under the association manager's user read
 * lock, with no slurmctld lock held.  Must be called with no slurmctld or
 * assoc_mgr lock held.  Free with privacy_viewer_free().
 */
extern void privacy_viewer_get(uid_t uid, bool privileged,
			       flexco_viewer_t *v);
extern void privacy_viewer_free(flexco_viewer_t *v);

/* True if v may see the item acl describes (v NULL: everything). */
extern bool privacy_visible(const flexco_viewer_t *v, const flexco_acl_t *acl);

/* Copies and release of an ACL's members. */
extern void privacy_acl_copy(flexco_acl_t *dst, const flexco_acl_t *src);
extern void privacy_acl_free(flexco_acl_t *acl);

#endif
