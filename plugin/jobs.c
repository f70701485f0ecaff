/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  jobs.c - part jobs: batch jobs submitted into a flexco reservation
 *****************************************************************************
 *  flexcod starts each part of a co-allocation as a batch job of the
 *  reservation's user inside the reservation flexco_<id>.  The job is made
 *  the way _slurm_rpc_submit_batch_job() makes one (proc_req.c) for a
 *  submission by that user: validate_job_create_req() (the job_submit
 *  plugins, the nice/priority/AdminComment rules) under read locks, then
 *  job_allocate() under config read, job write, node write, partition read
 *  and federation read locks, both with the user's uid as the submitter,
 *  so the partition's RootOnly, AllowGroups, AllowAccounts and AllowQos
 *  apply as they do to the user's own sbatch.  Nothing else is done under
 *  the locks; the job and node state saves are scheduled and the scheduler
 *  is queued after unlocking.
 *
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/common/env.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"

#include "compat.h"
#include "core/capi_profile.h"
#include "jobs.h"

extern const char plugin_type[];

#define MAX_SCRIPT (4 * 1024 * 1024)
#define MAX_ARGS 1024
#define MAX_ENV 1024
#define MAX_STR 4096
#define MAX_PARTS 64
#define MAX_TIME (366 * 86400)

static int _bad(char **json_out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int _bad(char **json_out, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*json_out = flexco_error_json("bad_request", msg);
	return 400;
}

static bool _env_name_ok(const char *k)
{
	const char *p;

	if (!k || !*k || (strlen(k) > 256) || isdigit((unsigned char) *k))
		return false;
	for (p = k; *p; p++)
		if (!isalnum((unsigned char) *p) && (*p != '_'))
			return false;
	return true;
}

static bool _cluster_name_ok(const char *s)
{
	const char *p;

	if (!s || !*s || (strlen(s) > 64))
		return false;
	for (p = s; *p; p++)
		if (!isalnum((unsigned char) *p) && !strchr("_-.", *p))
			return false;
	return true;
}

/* An optional string member: 0 ok (absent leaves *out NULL), else 400. */
static int _str(json_t *o, const char *key, size_t max, bool empty_ok,
		char **out, char **json_out)
{
	json_t *v = json_object_get(o, key);
	const char *s;

	if (!v)
		return 0;
	s = json_string_value(v);
	if (!s || (!empty_ok && !*s) || (strlen(s) > max) ||
	    (strlen(s) != json_string_length(v)))
		return _bad(json_out, "'%s' must be a %sstring of at most %zu bytes",
			    key, empty_ok ? "" : "non-empty ", max);
	*out = xstrdup(s);
	return 0;
}

static int _int(json_t *o, const char *key, int64_t lo, int64_t hi,
		int64_t *out, char **json_out)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || (json_integer_value(v) < lo) ||
	    (json_integer_value(v) > hi))
		return _bad(json_out, "'%s' must be an integer from %" PRId64
			    " to %" PRId64, key, lo, hi);
	*out = json_integer_value(v);
	return 0;
}

extern void flexco_job_spec_free(flexco_jobspec_t *s)
{
	uint32_t i;

	xfree(s->script);
	for (i = 0; i < s->argc; i++)
		xfree(s->argv[i]);
	xfree(s->argv);
	for (i = 0; i < s->env_cnt; i++)
		xfree(s->env[i]);
	xfree(s->env);
	xfree(s->work_dir);
	xfree(s->std_out);
	xfree(s->std_err);
	xfree(s->name);
	xfree(s->coallocation);
	xfree(s->parts);
	memset(s, 0, sizeof(*s));
}

static int _parse(json_t *o, flexco_jobspec_t *s, char **json_out)
{
	static const char *const keys[] = {
		"script", "argv", "environment", "work_dir", "std_out",
		"std_err", "time_limit", "nodes", "name", "coallocation",
		"part_index", "parts", "start", NULL };
	const char *key;
	json_t *v, *e;
	size_t i;
	int rc;

	json_object_foreach(o, key, v) {
		bool ok = false;

		for (i = 0; keys[i]; i++)
			if (!strcmp(key, keys[i]))
				ok = true;
		if (!ok)
			return _bad(json_out, "unknown field '%.64s'", key);
	}
	if (!json_object_get(o, "script"))
		return _bad(json_out, "'script' is required");
	if ((rc = _str(o, "script", MAX_SCRIPT, false, &s->script, json_out)) ||
	    (rc = _str(o, "work_dir", MAX_STR, false, &s->work_dir, json_out)) ||
	    (rc = _str(o, "std_out", MAX_STR, false, &s->std_out, json_out)) ||
	    (rc = _str(o, "std_err", MAX_STR, false, &s->std_err, json_out)) ||
	    (rc = _str(o, "name", 256, false, &s->name, json_out)) ||
	    (rc = _str(o, "coallocation", 128, false, &s->coallocation,
		       json_out)))
		return rc;
	if (strncmp(s->script, "#!", 2))
		return _bad(json_out, "'script' must start with #!");
	if (s->work_dir && (s->work_dir[0] != '/'))
		return _bad(json_out, "'work_dir' must be an absolute path");
	s->part_index = -1;
	if ((rc = _int(o, "time_limit", 60, MAX_TIME, &s->time_limit,
		       json_out)) ||
	    (rc = _int(o, "nodes", 1, 1000000, &s->nodes, json_out)) ||
	    (rc = _int(o, "part_index", 0, MAX_PARTS - 1, &s->part_index,
		       json_out)) ||
	    (rc = _int(o, "start", 0, INT64_C(1) << 40, &s->start, json_out)))
		return rc;

	if ((v = json_object_get(o, "argv"))) {
		if (!json_is_array(v) || (json_array_size(v) > MAX_ARGS))
			return _bad(json_out, "'argv' must be an array of at most %d strings",
				    MAX_ARGS);
		s->argv = xcalloc(json_array_size(v) + 1, sizeof(char *));
		json_array_foreach(v, i, e) {
			const char *a = json_string_value(e);

			if (!a || (strlen(a) != json_string_length(e)) ||
			    (strlen(a) > MAX_STR))
				return _bad(json_out, "'argv' must be an array of strings");
			s->argv[s->argc++] = xstrdup(a);
		}
	}
	if ((v = json_object_get(o, "environment"))) {
		if (!json_is_object(v) || (json_object_size(v) > MAX_ENV))
			return _bad(json_out, "'environment' must be an object of at most %d strings",
				    MAX_ENV);
		s->env = xcalloc(json_object_size(v) + 1, sizeof(char *));
		json_object_foreach(v, key, e) {
			const char *a = json_string_value(e);

			if (!_env_name_ok(key))
				return _bad(json_out, "'%.64s' is not an environment variable name",
					    key);
			if (!strncmp(key, "FLEXCO_", 7) ||
			    !strncmp(key, "SLURM_", 6))
				return _bad(json_out, "environment variable '%.64s' is reserved (FLEXCO_*, SLURM_*)",
					    key);
			if (!a || (strlen(a) != json_string_length(e)) ||
			    (strlen(a) > MAX_STR))
				return _bad(json_out, "environment variable '%.64s' must be a string",
					    key);
			s->env[s->env_cnt++] = xstrdup_printf("%s=%s", key, a);
		}
	}
	if ((v = json_object_get(o, "parts"))) {
		if (!json_is_array(v) || !json_array_size(v) ||
		    (json_array_size(v) > MAX_PARTS))
			return _bad(json_out, "'parts' must be an array of 1 to %d {\"cluster\",\"nodes\"}",
				    MAX_PARTS);
		json_array_foreach(v, i, e) {
			const char *cl = NULL;
			json_int_t n = 0;

			if (!json_is_object(e) || (json_object_size(e) != 2) ||
			    json_unpack(e, "{s:s, s:I}", "cluster", &cl,
					"nodes", &n) ||
			    !_cluster_name_ok(cl) || (n < 1) || (n > 1000000))
				return _bad(json_out, "'parts' must be an array of {\"cluster\": name, \"nodes\": count}");
			xstrfmtcat(s->parts, "%s%s:%" PRId64, i ? "," : "", cl,
				   (int64_t) n);
		}
		if ((s->part_index >= 0) &&
		    ((size_t) s->part_index >= json_array_size(v)))
			return _bad(json_out, "'part_index' is beyond 'parts'");
	}
	return 0;
}

extern int flexco_job_parse(const char *body, size_t len,
			    flexco_jobspec_t *spec, char **json_out)
{
	json_error_t jerr;
	json_t *o;
	int rc;

	memset(spec, 0, sizeof(*spec));
	if (!body || !len)
		return _bad(json_out, "a JSON object body is required");
	o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		return o ? _bad(json_out, "the body must be a JSON object") :
			   _bad(json_out, "invalid JSON at line %d column %d: %s",
				jerr.line, jerr.column, jerr.text);
	}
	rc = _parse(o, spec, json_out);
	json_decref(o);
	if (rc)
		flexco_job_spec_free(spec);
	return rc;
}

static void _env_add(char ***env, uint32_t *cnt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void _env_add(char ***env, uint32_t *cnt, const char *fmt, ...)
{
	va_list ap, ap2;
	char *s;
	int n;

	/* Sized to the value: FLEXCO_PARTS of 64 parts is 4671 bytes, and a
	 * fixed buffer silently cut it (doc/reservations.md).  22.05 has no
	 * va_list variant of xstrdup_printf(). */
	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	s = xmalloc((n > 0 ? n : 0) + 1);
	if (n > 0)
		vsnprintf(s, n + 1, fmt, ap2);
	va_end(ap2);
	va_end(ap);
	xrecalloc(*env, *cnt + 2, sizeof(char *));
	(*env)[(*cnt)++] = s;
	(*env)[*cnt] = NULL;
}

extern int flexco_job_submit(const flexco_jobspec_t *spec,
			     const char *resv_name, uint64_t resv_id,
			     uid_t uid, uint32_t nodes, uint32_t time_min,
			     const char *partition, uint32_t *job_id,
			     char **err_msg)
{
	/* _slurm_rpc_submit_batch_job: read config, write job, write node,
	 * read partition, read federation */
	slurmctld_lock_t lk = { .conf = READ_LOCK, .job = WRITE_LOCK,
			.node = WRITE_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	/* for the job_submit plugins: everything read */
	slurmctld_lock_t rlk = { .conf = READ_LOCK, .job = READ_LOCK,
			.node = READ_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	struct passwd pw, *pwp = NULL;
	job_desc_msg_t *d;
	job_record_t *job_ptr = NULL;
	char buf[16384], host[256];
	uint32_t i;
	int rc;

	*job_id = 0;
	/* the user's gid and home: outside slurmctld's locks */
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &pwp) || !pwp) {
		*err_msg = xstrdup_printf("uid %u has no passwd entry", uid);
		return ESLURM_USER_ID_MISSING;
	}
	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';

	d = xmalloc(sizeof(*d));
	slurm_init_job_desc_msg(d);
	d->script = xstrdup(spec->script);
	d->argc = spec->argc + 1;
	d->argv = xcalloc(d->argc + 1, sizeof(char *));
	d->argv[0] = xstrdup(spec->name ? spec->name : "flexco_part");
	for (i = 0; i < spec->argc; i++)
		d->argv[i + 1] = xstrdup(spec->argv[i]);
	d->environment = xcalloc(spec->env_cnt + 1, sizeof(char *));
	for (i = 0; i < spec->env_cnt; i++)
		d->environment[d->env_size++] = xstrdup(spec->env[i]);
	_env_add(&d->environment, &d->env_size, "FLEXCO_RESERVATION=%s",
		 resv_name);
	_env_add(&d->environment, &d->env_size, "FLEXCO_RESERVATION_ID=%" PRIu64,
		 resv_id);
	if (spec->coallocation)
		_env_add(&d->environment, &d->env_size,
			 "FLEXCO_COALLOCATION=%s", spec->coallocation);
	_env_add(&d->environment, &d->env_size, "FLEXCO_PART_INDEX=%" PRId64,
		 (spec->part_index >= 0) ? spec->part_index : 0);
	if (spec->parts)
		_env_add(&d->environment, &d->env_size, "FLEXCO_PARTS=%s",
			 spec->parts);
	if (spec->start)
		_env_add(&d->environment, &d->env_size, "FLEXCO_START=%" PRId64,
			 spec->start);
	d->work_dir = xstrdup(spec->work_dir ? spec->work_dir :
			      (pw.pw_dir && pw.pw_dir[0] ? pw.pw_dir : "/"));
	d->std_out = xstrdup(spec->std_out);
	d->std_err = xstrdup(spec->std_err);
	d->name = xstrdup(spec->name ? spec->name : "flexco_part");
	d->user_id = uid;
	d->group_id = pw.pw_gid;
	d->min_nodes = nodes;
	d->max_nodes = nodes;
	d->time_limit = time_min;
	d->reservation = xstrdup(resv_name);
	d->partition = xstrdup(partition);
	d->alloc_node = xstrdup(host);
	d->alloc_sid = 0;
	d->het_job_offset = NO_VAL;

	/* the job_submit plugins and checks sbatch gets, as the user */
	lock_slurmctld(rlk);
	rc = validate_job_create_req(d, uid, err_msg);
	unlock_slurmctld(rlk);
	if (rc != SLURM_SUCCESS) {
		slurm_free_job_desc_msg(d);
		return rc;
	}
	xfree(*err_msg);	/* a job_submit note; job_allocate may set it */

	lock_slurmctld(lk);
	rc = job_allocate(d, 0, 0, NULL, 0, uid, false, &job_ptr, err_msg,
			  SLURM_PROTOCOL_VERSION);
	if (job_ptr && !(rc && (job_ptr->job_state == JOB_FAILED)))
		*job_id = job_ptr->job_id;
	unlock_slurmctld(lk);

	slurm_free_job_desc_msg(d);
	if (!*job_id)
		return rc ? rc : SLURM_ERROR;
	schedule_job_save();	/* own locks */
	schedule_node_save();
	queue_job_scheduler();
	return SLURM_SUCCESS;
}

extern json_t *flexco_job_state(uint32_t job_id)
{
	slurmctld_lock_t lk = { .job = READ_LOCK };
	job_record_t *j;
	json_t *o = NULL;
	uint32_t ec = 0, state = 0, reason = 0;
	int64_t start = 0, end = 0;
	char *nodes = NULL, *resv = NULL;

	lock_slurmctld(lk);
	if ((j = find_job_record(job_id))) {
		state = j->job_state;
		reason = j->state_reason;
		start = j->start_time;
		end = j->end_time;
		ec = j->exit_code;
		nodes = xstrdup(j->nodes);
		resv = xstrdup(j->resv_name);
	}
	unlock_slurmctld(lk);
	if (!j)
		return NULL;

	o = json_pack("{s:I, s:s, s:s, s:I, s:I}",
		      "job_id", (json_int_t) job_id,
		      "state", job_state_string(state),
		      "reason", flexco_job_reason_string(reason),
		      "start_time", (json_int_t) start,
		      "end_time", (json_int_t) end);
	json_object_set_new(o, "nodes", (nodes && *nodes) ?
			    json_string(nodes) : json_null());
	json_object_set_new(o, "reservation", resv ? json_string(resv) :
			    json_null());
	if ((state & JOB_STATE_BASE) > JOB_SUSPENDED) {
		json_object_set_new(o, "exit_code", WIFEXITED(ec) ?
				    json_integer(WEXITSTATUS(ec)) : json_null());
		json_object_set_new(o, "signal", WIFSIGNALED(ec) ?
				    json_integer(WTERMSIG(ec)) : json_null());
	} else {
		json_object_set_new(o, "exit_code", json_null());
		json_object_set_new(o, "signal", json_null());
	}
	xfree(nodes);
	xfree(resv);
	return o;
}

extern int flexco_job_phase(uint32_t job_id, bool *ran)
{
	slurmctld_lock_t lk = { .job = READ_LOCK };
	job_record_t *j;
	int phase = FLEXCO_PJ_GONE;
	uint32_t base;

	*ran = false;
	lock_slurmctld(lk);
	if ((j = find_job_record(job_id))) {
		base = j->job_state & JOB_STATE_BASE;
		*ran = (j->start_time > 0) && j->nodes && j->nodes[0] &&
		       (base != JOB_PENDING);
		if (base == JOB_PENDING)
			phase = FLEXCO_PJ_PENDING;
		else if ((base <= JOB_SUSPENDED) ||
			 (j->job_state & JOB_COMPLETING))
			phase = FLEXCO_PJ_RUNNING;
		else
			phase = FLEXCO_PJ_FINISHED;
	}
	unlock_slurmctld(lk);
	return phase;
}
