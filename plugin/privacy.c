/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  privacy.c - slurm.conf PrivateData for the plugin's answers
 *****************************************************************************
 *  slurmctld decides per RPC who sees what (job_mgr.c, reservation.c):
 *
 *  - PrivateData=jobs: a job is shown to its owner, to operators
 *    (validate_operator(): root, SlurmUser, AdminLevel Operator or
 *    Administrator) and to coordinators of the job's account; nobody else
 *    sees it at all (squeue leaves it out).
 *  - PrivateData=reservations: a reservation is shown to operators and to
 *    the users who may use it (its Users= list, or its associations when
 *    accounting enforces them); others do not see it at all.
 *
 *  The plugin does the same for its own answers.  What the caller may see
 *  is worked out once per request (privacy_viewer_get), before any of the
 *  plugin's own mutexes is taken: the config read lock for PrivateData,
 *  then, without any slurmctld lock, validate_operator() and the
 *  coordinator accounts under the association manager's user read lock
 *  (slurmctld's order is slurmctld locks before assoc_mgr locks; we never
 *  hold both).  Checking an item is then a comparison of uids and names.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <string.h>

#include "slurm/slurm.h"
#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "compat.h"
#include "privacy.h"

#define MAX_COORD_ACCTS 256	/* a coordinator of more sees fewer jobs */

/* Copy the names of the accounts uid coordinates (assoc_mgr user lock). */
static void _coord_accts(flexco_viewer_t *v)
{
	assoc_mgr_lock_t locks = { .user = READ_LOCK };
	slurmdb_user_rec_t *user = NULL;
	slurmdb_coord_rec_t *coord;
	flexco_list_itr_t it;

	assoc_mgr_lock(&locks);
	if (assoc_mgr_user_list) {
		it = list_iterator_create(assoc_mgr_user_list);
		while ((user = list_next(it)))
			if (user->uid == v->uid)
				break;
		list_iterator_destroy(it);
	}
	if (user && user->coord_accts && list_count(user->coord_accts)) {
		v->coord_accts = xcalloc(MAX_COORD_ACCTS, sizeof(char *));
		it = list_iterator_create(user->coord_accts);
		while ((coord = list_next(it)) &&
		       (v->coord_cnt < MAX_COORD_ACCTS))
			if (coord->name)
				v->coord_accts[v->coord_cnt++] =
					xstrdup(coord->name);
		list_iterator_destroy(it);
	}
	assoc_mgr_unlock(&locks);
}

extern void privacy_viewer_get(uid_t uid, bool privileged,
			       flexco_viewer_t *v)
{
	slurmctld_lock_t conf_read = { .conf = READ_LOCK };
	uint16_t private_data;

	memset(v, 0, sizeof(*v));
	v->uid = uid;
	if (privileged)
		return;
	lock_slurmctld(conf_read);
	private_data = slurm_conf.private_data;
	unlock_slurmctld(conf_read);
	if (!(private_data &
	      (PRIVATE_DATA_JOBS | PRIVATE_DATA_RESERVATIONS)))
		return;
	/* may read the user list from the accounting storage, as for any
	 * RPC; no slurmctld lock is held here */
	if (validate_operator(uid))
		return;
	v->hide_jobs = (private_data & PRIVATE_DATA_JOBS);
	v->hide_resvs = (private_data & PRIVATE_DATA_RESERVATIONS);
	if (v->hide_jobs)
		_coord_accts(v);
}

extern void privacy_viewer_free(flexco_viewer_t *v)
{
	uint32_t i;

	for (i = 0; i < v->coord_cnt; i++)
		xfree(v->coord_accts[i]);
	xfree(v->coord_accts);
	v->coord_cnt = 0;
}

static bool _job_visible(const flexco_viewer_t *v, const flexco_acl_t *acl)
{
	uint32_t i;

	if (acl->job_uid == v->uid)
		return true;
	if (!acl->account)
		return false;
	for (i = 0; i < v->coord_cnt; i++)
		if (!xstrcasecmp(v->coord_accts[i], acl->account))
			return true;
	return false;
}

/*
 * The users who may use the reservation: its Users= list.  A reservation
 * open to accounts (Accounts=, or Users=-name) is shown to operators only:
 * telling who may use it needs the caller's associations, which the plugin
 * does not look up (stricter than scontrol, never looser).
 */
static bool _resv_visible(const flexco_viewer_t *v, const flexco_acl_t *acl)
{
	uint32_t i;

	if (acl->users_not)
		return false;
	for (i = 0; i < acl->user_cnt; i++)
		if (acl->users[i] == v->uid)
			return true;
	return false;
}

extern bool privacy_visible(const flexco_viewer_t *v, const flexco_acl_t *acl)
{
	if (!v || !acl)
		return true;
	if (acl->job && v->hide_jobs && !_job_visible(v, acl))
		return false;
	if (acl->resv && v->hide_resvs && !_resv_visible(v, acl))
		return false;
	return true;
}

extern void privacy_acl_copy(flexco_acl_t *dst, const flexco_acl_t *src)
{
	*dst = *src;
	dst->account = xstrdup(src->account);
	dst->users = NULL;
	if (src->user_cnt) {
		dst->users = xcalloc(src->user_cnt, sizeof(uid_t));
		memcpy(dst->users, src->users, sizeof(uid_t) * src->user_cnt);
	}
}

extern void privacy_acl_free(flexco_acl_t *acl)
{
	xfree(acl->account);
	xfree(acl->users);
	acl->user_cnt = 0;
}
