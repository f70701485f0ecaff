/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  statefile.c - the plugin's state files under StateSaveLocation
 *****************************************************************************
 *  Plain POSIX, no Slurm header: the plugin names its log (statefile_set_log)
 *  and testsuite/unit/check_statefile runs it with failing writes, fsyncs
 *  and renames (ENOSPC, EIO) wrapped in at link time.
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE 1	/* F_OFD_SETLK */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service/statefile.h"

static statefile_log_t log_fn = NULL;

extern void statefile_set_log(statefile_log_t fn)
{
	log_fn = fn;
}

static void _log(bool is_error, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void _log(bool is_error, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_fn)
		log_fn(is_error, msg);
}

/* malloc'd printf; aborts when out of memory, as Slurm's xmalloc does */
static char *_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *_printf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

static char *_strdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		abort();
	return d;
}

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

	pthread_mutex_lock(&tmp_lock);
	n = ++tmp_count;
	pthread_mutex_unlock(&tmp_lock);
	return _printf("%s%s.%ld.%" PRIu64, path, suffix,
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
	free(w->what);
	free(w->path);
	free(w->tmp);
	free(w);
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
	_log(true, "%s: state not saved: %s", what, msg);
	if (err && err_len)
		snprintf(err, err_len, "%s", msg);
	return -1;
}

extern statefile_writer_t *statefile_begin(const char *what, const char *path,
					   char *err, size_t err_len)
{
	statefile_writer_t *w = calloc(1, sizeof(*w));

	if (!w)
		abort();

	w->what = _strdup(what);
	w->path = _strdup(path);
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
	char *prev = _printf("%s.prev", path);
	char *prev_tmp = _tmp_name(path, ".prev.new");

	if (link(path, prev_tmp)) {
		if (errno != ENOENT)	/* no current copy: nothing to keep */
			_log(true, "%s: cannot keep %s as %s: %s", what, path,
			     prev, strerror(errno));
	} else if (rename(prev_tmp, prev)) {
		_log(true, "%s: cannot keep %s as %s: %s", what, path, prev,
		     strerror(errno));
		(void) unlink(prev_tmp);
	}
	free(prev);
	free(prev_tmp);
}

static int _fsync_dir(const char *path)
{
	char *dir = _strdup(path), *slash = strrchr(dir, '/');
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
	free(dir);
	return rc;
}

extern int statefile_commit(statefile_writer_t *w, char *err, size_t err_len)
{
	int rc = 0, e;

	if (w->err) {
		rc = _fail(w->what, err, err_len, "cannot write %s: %s",
			   w->tmp, strerror(w->err));
	} else if (fsync(w->fd)) {
		rc = _fail(w->what, err, err_len, "fsync %s: %s", w->tmp,
			   strerror(errno));
	}
	e = close(w->fd) ? errno : 0;
	w->fd = -1;
	if ((rc == 0) && e)
		rc = _fail(w->what, err, err_len, "close %s: %s", w->tmp,
			   strerror(e));
	if (rc != 0) {
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
		return -1;
	statefile_append(w, text, strlen(text));
	return statefile_commit(w, err, err_len);
}

/* ---------------------------------------------------------------------- */
/* loading */

/* The whole file, malloc'd and NUL-terminated; NULL with errno set. */
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
	if (!(buf = calloc(1, st.st_size + 1)))
		abort();
	while (off < (size_t) st.st_size) {
		ssize_t n = read(fd, buf + off, st.st_size - off);

		if ((n < 0) && (errno == EINTR))
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			free(buf);
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
		free(text);
	}
	if (rc == 1)
		return 1;

	bad = _printf("%s.bad.%ld", copy, (long) time(NULL));
	if (rename(copy, bad)) {
		snprintf(why, why_len, "%s rejected (%s), could not rename it: %s",
			 copy, reason, strerror(errno));
	} else {
		snprintf(why, why_len, "%s rejected (%s), kept as %s", copy,
			 reason, bad);
	}
	_log(true, "%s: %s", what, why);
	free(bad);
	return -1;
}

/*
 * Remove the temporary files of saves that a crash interrupted
 * (<path>.new.* and <path>.prev.new.*).  Only the holder of the state
 * lock loads, so no save of another process is under way.
 */
static void _sweep(const char *what, const char *path)
{
	char *dir = _strdup(path), *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : path;
	char *p_new = _printf("%s.new.", base);
	char *p_prev = _printf("%s.prev.new.", base);
	struct dirent *de;
	DIR *d;

	if (slash)
		slash[slash == dir] = '\0';
	if (!(d = opendir(slash ? dir : "."))) {
		free(dir);
		free(p_new);
		free(p_prev);
		return;
	}
	while ((de = readdir(d))) {
		char *full;

		if (strncmp(de->d_name, p_new, strlen(p_new)) &&
		    strncmp(de->d_name, p_prev, strlen(p_prev)))
			continue;
		full = _printf("%s/%s", slash ? dir : ".", de->d_name);
		if (!unlink(full))
			_log(false, "%s: removed %s, left by an interrupted save",
			     what, full);
		free(full);
	}
	closedir(d);
	free(dir);
	free(p_new);
	free(p_prev);
}

extern statefile_src_t statefile_load(const char *what, const char *path,
				      size_t max, statefile_parse_t parse,
				      void *arg)
{
	char *prev = _printf("%s.prev", path);
	char why_cur[1024] = "", why_prev[1024] = "";
	statefile_src_t src;
	int cur, old = 0;

	_sweep(what, path);
	cur = _try(what, path, max, parse, arg, why_cur, sizeof(why_cur));
	if (cur == 1) {
		_log(false, "%s: loaded %s", what, path);
		src = STATEFILE_CURRENT;
		goto out;
	}
	old = _try(what, prev, max, parse, arg, why_prev, sizeof(why_prev));
	if (old == 1) {
		_log(true, "%s: loaded the previous copy %s because %s", what,
		     prev, why_cur);
		src = STATEFILE_PREV;
	} else if ((cur == 0) && (old == 0)) {
		_log(false, "%s: no %s yet", what, path);
		src = STATEFILE_NONE;
	} else {
		_log(true, "%s: NO VALID STATE: %s; %s", what, why_cur,
		     why_prev);
		src = STATEFILE_LOST;
	}
out:
	free(prev);
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
		_log(true, "cannot open the state lock %s: %s", path,
		     strerror(errno));
		return -1;
	}
	if (fcntl(fd, F_OFD_SETLK, &fl)) {
		int e = errno;

		close(fd);
		if ((e == EAGAIN) || (e == EACCES)) {
			*held_elsewhere = true;
		} else {
			_log(true, "cannot lock the state lock %s: %s", path,
			     strerror(e));
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
