/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  statefile.c - the plugin's state files under StateSaveLocation
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE 1	/* F_OFD_SETLK */
#endif
#include "src/common/slurm_xlator.h"	/* must be first */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "statefile.h"

extern const char plugin_type[];

struct statefile_writer {
	char *what;
	char *path;
	char *tmp;
	int fd;
	int err;		/* first write errno, 0 if none */
};

/* Temporary names of this process: <path>.new.<pid>.<n> (see _tmp_name). */
static pthread_mutex_t tmp_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t tmp_count = 0;

/*
 * A temporary name no other process or thread writes at the same time:
 * two controllers sharing StateSaveLocation (or two saves of one process)
 * never write into the same file, whatever they do.
 */
static char *_tmp_name(const char *path, const char *suffix)
{
	uint64_t n;

	slurm_mutex_lock(&tmp_lock);
	n = ++tmp_count;
	slurm_mutex_unlock(&tmp_lock);
	return xstrdup_printf("%s%s.%ld.%" PRIu64, path, suffix,
			      (long) getpid(), n);
}

extern const char *statefile_src_name(statefile_src_t src)
{
	switch (src) {
	case STATEFILE_NONE:
		return "none";
	case STATEFILE_CURRENT:
		return "current";
	case STATEFILE_PREV:
		return "previous";
	case STATEFILE_LOST:
		return "lost";
	}
	return "?";
}

/* ---------------------------------------------------------------------- */
/* saving */

static void _writer_free(statefile_writer_t *w)
{
	xfree(w->what);
	xfree(w->path);
	xfree(w->tmp);
	xfree(w);
}

static int _fail(const char *what, char *err, size_t err_len,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int _fail(const char *what, char *err, size_t err_len,
		 const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error("%s: %s: state not saved: %s", plugin_type, what, msg);
	if (err && err_len)
		snprintf(err, err_len, "%s", msg);
	return SLURM_ERROR;
}

extern statefile_writer_t *statefile_begin(const char *what, const char *path,
					   char *err, size_t err_len)
{
	statefile_writer_t *w = xmalloc(sizeof(*w));

	w->what = xstrdup(what);
	w->path = xstrdup(path);
	w->tmp = _tmp_name(path, ".new");
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		(void) _fail(what, err, err_len, "cannot create %s: %s",
			     w->tmp, strerror(errno));
		_writer_free(w);
		return NULL;
	}
	return w;
}

extern void statefile_append(statefile_writer_t *w, const void *buf,
			     size_t len)
{
	const char *p = buf;
	size_t off = 0;

	while (!w->err && (off < len)) {
		ssize_t n = write(w->fd, p + off, len - off);

		if ((n < 0) && (errno == EINTR))
			continue;
		if (n <= 0) {
			w->err = (n < 0) ? errno : EIO;
			break;
		}
		off += n;
	}
}

extern void statefile_abort(statefile_writer_t *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	(void) unlink(w->tmp);
	_writer_free(w);
}

/* Keep the copy about to be replaced as <path>.prev: link, then rename. */
static void _rotate(const char *what, const char *path)
{
	char *prev = xstrdup_printf("%s.prev", path);
	char *prev_tmp = _tmp_name(path, ".prev.new");

	if (link(path, prev_tmp)) {
		if (errno != ENOENT)	/* no current copy: nothing to keep */
			error("%s: %s: cannot keep %s as %s: %m", plugin_type,
			      what, path, prev);
	} else if (rename(prev_tmp, prev)) {
		error("%s: %s: cannot keep %s as %s: %m", plugin_type, what,
		      path, prev);
		(void) unlink(prev_tmp);
	}
	xfree(prev);
	xfree(prev_tmp);
}

static int _fsync_dir(const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	int fd, rc = 0;

	if (slash)
		slash[slash == dir] = '\0';	/* "/x" -> "/", "/a/x" -> "/a" */
	fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		rc = errno;
	else if (fsync(fd))
		rc = errno;
	if (fd >= 0)
		close(fd);
	xfree(dir);
	return rc;
}

extern int statefile_commit(statefile_writer_t *w, char *err, size_t err_len)
{
	int rc = SLURM_SUCCESS, e;

	if (w->err) {
		rc = _fail(w->what, err, err_len, "cannot write %s: %s",
			   w->tmp, strerror(w->err));
	} else if (fsync(w->fd)) {
		rc = _fail(w->what, err, err_len, "fsync %s: %s", w->tmp,
			   strerror(errno));
	}
	e = close(w->fd) ? errno : 0;
	w->fd = -1;
	if ((rc == SLURM_SUCCESS) && e)
		rc = _fail(w->what, err, err_len, "close %s: %s", w->tmp,
			   strerror(e));
	if (rc != SLURM_SUCCESS) {
		statefile_abort(w);
		return rc;
	}
	_rotate(w->what, w->path);
	if (rename(w->tmp, w->path)) {
		rc = _fail(w->what, err, err_len, "cannot rename %s to %s: %s",
			   w->tmp, w->path, strerror(errno));
		statefile_abort(w);
		return rc;
	}
	if ((e = _fsync_dir(w->path)))
		rc = _fail(w->what, err, err_len,
			   "fsync of the directory of %s: %s", w->path,
			   strerror(e));
	_writer_free(w);
	return rc;
}

extern int statefile_write(const char *what, const char *path,
			   const char *text, char *err, size_t err_len)
{
	statefile_writer_t *w = statefile_begin(what, path, err, err_len);

	if (!w)
		return SLURM_ERROR;
	statefile_append(w, text, strlen(text));
	return statefile_commit(w, err, err_len);
}

/* ---------------------------------------------------------------------- */
/* loading */

/* The whole file, xmalloc'd and NUL-terminated; NULL with errno set. */
static char *_read(const char *path, size_t max, size_t *len)
{
	struct stat st;
	char *buf;
	size_t off = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		errno = e;
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || (st.st_size < 0) ||
	    ((size_t) st.st_size > max)) {
		int e = S_ISREG(st.st_mode) ? EFBIG : EINVAL;

		close(fd);
		errno = e;
		return NULL;
	}
	buf = xmalloc(st.st_size + 1);
	while (off < (size_t) st.st_size) {
		ssize_t n = read(fd, buf + off, st.st_size - off);

		if ((n < 0) && (errno == EINTR))
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			xfree(buf);
			errno = e;
			return NULL;
		}
		if (!n)
			break;
		off += n;
	}
	close(fd);
	*len = off;
	return buf;
}

/*
 * Try one copy.  1: parsed.  0: it does not exist.  -1: rejected (why set,
 * the copy renamed <copy>.bad.<epoch>).
 */
static int _try(const char *what, const char *copy, size_t max,
		statefile_parse_t parse, void *arg, char *why, size_t why_len)
{
	char reason[512] = "";
	size_t len = 0;
	char *text = _read(copy, max, &len), *bad;
	int rc;

	if (!text && (errno == ENOENT)) {
		snprintf(why, why_len, "%s does not exist", copy);
		return 0;
	}
	if (!text) {
		snprintf(reason, sizeof(reason), "cannot read it: %s",
			 (errno == EFBIG) ? "larger than the limit" :
			 strerror(errno));
		rc = -1;
	} else {
		rc = parse(text, len, arg, reason, sizeof(reason)) ? -1 : 1;
		xfree(text);
	}
	if (rc == 1)
		return 1;

	bad = xstrdup_printf("%s.bad.%ld", copy, (long) time(NULL));
	if (rename(copy, bad)) {
		snprintf(why, why_len, "%s rejected (%s), could not rename it: %s",
			 copy, reason, strerror(errno));
	} else {
		snprintf(why, why_len, "%s rejected (%s), kept as %s", copy,
			 reason, bad);
	}
	error("%s: %s: %s", plugin_type, what, why);
	xfree(bad);
	return -1;
}

/*
 * Remove the temporary files of saves that a crash interrupted
 * (<path>.new.* and <path>.prev.new.*).  Only the holder of the state
 * lock loads, so no save of another process is under way.
 */
static void _sweep(const char *what, const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : path;
	char *p_new = xstrdup_printf("%s.new.", base);
	char *p_prev = xstrdup_printf("%s.prev.new.", base);
	struct dirent *de;
	DIR *d;

	if (slash)
		slash[slash == dir] = '\0';
	if (!(d = opendir(slash ? dir : "."))) {
		xfree(dir);
		xfree(p_new);
		xfree(p_prev);
		return;
	}
	while ((de = readdir(d))) {
		char *full;

		if (xstrncmp(de->d_name, p_new, strlen(p_new)) &&
		    xstrncmp(de->d_name, p_prev, strlen(p_prev)))
			continue;
		full = xstrdup_printf("%s/%s", slash ? dir : ".", de->d_name);
		if (!unlink(full))
			info("%s: %s: removed %s, left by an interrupted save",
			     plugin_type, what, full);
		xfree(full);
	}
	closedir(d);
	xfree(dir);
	xfree(p_new);
	xfree(p_prev);
}

extern statefile_src_t statefile_load(const char *what, const char *path,
				      size_t max, statefile_parse_t parse,
				      void *arg)
{
	char *prev = xstrdup_printf("%s.prev", path);
	char why_cur[1024] = "", why_prev[1024] = "";
	statefile_src_t src;
	int cur, old = 0;

	_sweep(what, path);
	cur = _try(what, path, max, parse, arg, why_cur, sizeof(why_cur));
	if (cur == 1) {
		info("%s: %s: loaded %s", plugin_type, what, path);
		src = STATEFILE_CURRENT;
		goto out;
	}
	old = _try(what, prev, max, parse, arg, why_prev, sizeof(why_prev));
	if (old == 1) {
		error("%s: %s: loaded the previous copy %s because %s",
		      plugin_type, what, prev, why_cur);
		src = STATEFILE_PREV;
	} else if ((cur == 0) && (old == 0)) {
		info("%s: %s: no %s yet", plugin_type, what, path);
		src = STATEFILE_NONE;
	} else {
		error("%s: %s: NO VALID STATE: %s; %s", plugin_type, what,
		      why_cur, why_prev);
		src = STATEFILE_LOST;
	}
out:
	xfree(prev);
	return src;
}

/* ---------------------------------------------------------------------- */
/* the state lock */

/*
 * An open file description lock (F_OFD_SETLK): it belongs to this open
 * file, not to the process, so it also keeps out a later start (a 22.05
 * reconfigure) of this same process, and it goes with the descriptor when
 * the process dies or exec()s (the descriptor is close-on-exec).  Linux
 * passes it on to NFS servers as an ordinary lock.
 */
extern int statefile_lock_try(const char *path, bool *held_elsewhere)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	*held_elsewhere = false;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		error("%s: cannot open the state lock %s: %m", plugin_type,
		      path);
		return -1;
	}
	if (fcntl(fd, F_OFD_SETLK, &fl)) {
		int e = errno;

		close(fd);
		if ((e == EAGAIN) || (e == EACCES)) {
			*held_elsewhere = true;
		} else {
			errno = e;
			error("%s: cannot lock the state lock %s: %m",
			      plugin_type, path);
		}
		return -1;
	}
	return fd;
}

extern void statefile_unlock(int fd)
{
	if (fd >= 0)
		(void) close(fd);	/* releases the lock */
}
