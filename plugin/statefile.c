/*****************************************************************************\
 *  statefile.c - the plugin's state files under StateSaveLocation
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#include "src/common/slurm_xlator.h"	/* must be first */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "statefile.h"

extern const char plugin_type[];

extern int statefile_write(const char *what, const char *path,
			   const char *text)
{
	char *tmp = xstrdup_printf("%s.new", path);
	size_t len = strlen(text), off = 0;
	int rc = SLURM_SUCCESS;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0) {
		error("%s: %s: cannot write %s: %m", plugin_type, what, tmp);
		xfree(tmp);
		return SLURM_ERROR;
	}
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if ((n < 0) && (errno == EINTR))
			continue;
		if (n <= 0) {
			error("%s: %s: cannot write %s: %m",
			      plugin_type, what, tmp);
			rc = SLURM_ERROR;
			break;
		}
		off += n;
	}
	if ((rc == SLURM_SUCCESS) && fsync(fd)) {
		error("%s: %s: fsync %s: %m", plugin_type, what, tmp);
		rc = SLURM_ERROR;
	}
	close(fd);
	if ((rc == SLURM_SUCCESS) && rename(tmp, path)) {
		error("%s: %s: rename %s: %m", plugin_type, what, tmp);
		rc = SLURM_ERROR;
	}
	if (rc != SLURM_SUCCESS)
		(void) unlink(tmp);
	xfree(tmp);
	return rc;
}

extern char *statefile_read(const char *path, size_t max, size_t *len)
{
	struct stat st;
	char *buf;
	size_t off = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || (st.st_size < 0) ||
	    ((size_t) st.st_size > max)) {
		close(fd);
		errno = EFBIG;
		return NULL;
	}
	buf = xmalloc(st.st_size + 1);
	while (off < (size_t) st.st_size) {
		ssize_t n = read(fd, buf + off, st.st_size - off);

		if ((n < 0) && (errno == EINTR))
			continue;
		if (n <= 0)
			break;
		off += n;
	}
	close(fd);
	*len = off;
	return buf;
}
