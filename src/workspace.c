/*
 * The workspace: the one directory corral writes files into on an agent's
 * behalf (seed 002: agents return artifacts, the workflow writes them).
 *
 * A reply's outputs.artifacts entry with "path" and "content" is written
 * to that path under the workspace: "operation" create makes a new file
 * (refused if it exists), update replaces an existing one, and without an
 * operation the file is created or replaced.  Paths are confined: absolute
 * paths and ".." are refused outright, and every open goes through
 * openat2(2) with RESOLVE_BENEATH from the workspace's descriptor, so a
 * symlink that leads out of the workspace is refused by the kernel, not by
 * string checks.  Files are created 0600 (umask 077).
 */

#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

static int	workspace_fd = -1;
static char	*workspace_path;

/*
 * Without openat2 (Linux before 5.6), walk the path one component at a
 * time refusing every symbolic link: stricter, and just as confined.
 */
static int
workspace_walk(int dirfd, const char *path, int flags, mode_t mode)
{
	char	*copy, *comp, *slash;
	int	 cur, next, saved;

	if ((cur = dup(dirfd)) == -1)
		return -1;
	copy = xstrdup(path);
	for (comp = copy; (slash = strchr(comp, '/')) != NULL;
	    comp = slash + 1) {
		*slash = '\0';
		if (*comp == '\0' || strcmp(comp, ".") == 0)
			continue;
		next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		saved = errno;
		close(cur);
		if (next == -1) {
			free(copy);
			errno = saved;
			return -1;
		}
		cur = next;
	}
	next = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	saved = errno;
	close(cur);
	free(copy);
	errno = saved;
	return next;
}

/* openat2(2), which glibc 2.36 does not wrap; falls back to a walk. */
static int
workspace_openat2(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how	how;
	int		fd;

	memset(&how, 0, sizeof how);
	how.flags = (uint64_t)flags | O_CLOEXEC;
	how.mode = (flags & O_CREAT) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	if (fd == -1 && errno == ENOSYS)
		return workspace_walk(dirfd, path, flags, mode);
	return fd;
}

/*
 * Open (creating it if needed) the workflow's workspace.  Returns 0, or
 * -1 with errno set.
 */
int
workspace_open(const struct workflow *wf)
{
	char	*path;

	if (wf->workspace == NULL)
		return 0;
	if (wf->workspace[0] == '/')
		path = xstrdup(wf->workspace);
	else
		xasprintf(&path, "%s/%s", wf->dir, wf->workspace);
	if (mkdir(path, 0700) == -1 && errno != EEXIST) {
		free(path);
		return -1;
	}
	{
		char *real = realpath(path, NULL);

		if (real != NULL) {
			free(path);
			path = real;
		}
	}
	workspace_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (workspace_fd == -1) {
		free(path);
		return -1;
	}
	workspace_path = path;
	return 0;
}

/* Close the workspace. */
void
workspace_close(void)
{
	if (workspace_fd != -1)
		close(workspace_fd);
	workspace_fd = -1;
	free(workspace_path);
	workspace_path = NULL;
}

/* The workspace's path, or NULL. */
const char *
workspace_dir(void)
{
	return workspace_path;
}

/* Return nonzero if a workspace is open. */
int
workspace_enabled(void)
{
	return workspace_fd != -1;
}

/*
 * Check a relative path lexically: not empty, not absolute, no ".."
 * component, no NUL.  Returns NULL if fine, else the reason.
 */
const char *
workspace_path_problem(const char *path, size_t len)
{
	size_t	i, start = 0;

	if (len == 0)
		return "the path is empty";
	if (memchr(path, '\0', len) != NULL)
		return "the path holds a NUL byte";
	if (path[0] == '/')
		return "absolute paths are refused";
	for (i = 0; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		if (i - start == 2 && path[start] == '.' &&
		    path[start + 1] == '.')
			return "\"..\" is refused";
		start = i + 1;
	}
	if (path[len - 1] == '/')
		return "the path names a directory";
	return NULL;
}

/*
 * Create the directories leading to path, one component at a time, each
 * opened beneath the one before.
 */
static int
workspace_mkdirs(const char *path)
{
	char	*copy, *comp, *slash;
	int	 cur, next, saved;

	if ((cur = dup(workspace_fd)) == -1)
		return -1;
	copy = xstrdup(path);
	for (comp = copy; (slash = strchr(comp, '/')) != NULL;
	    comp = slash + 1) {
		*slash = '\0';
		if (*comp == '\0' || strcmp(comp, ".") == 0)
			continue;
		next = workspace_openat2(cur, comp, O_PATH | O_DIRECTORY, 0);
		if (next == -1 && errno == ENOENT) {
			if (mkdirat(cur, comp, 0700) == -1 && errno != EEXIST)
				goto fail;
			next = workspace_openat2(cur, comp, O_PATH |
			    O_DIRECTORY, 0);
		}
		if (next == -1)
			goto fail;
		close(cur);
		cur = next;
	}
	close(cur);
	free(copy);
	return 0;
fail:
	saved = errno;
	close(cur);
	free(copy);
	errno = saved;
	return -1;
}

/*
 * Write one artifact under the workspace.  op: "create", "update" or NULL.
 * Returns 0, or -1 with why filled.
 */
int
workspace_write(const char *path, size_t pathlen, const char *op,
    const char *data, size_t len, char *why, size_t whylen)
{
	const char	*problem;
	char		*p;
	ssize_t		 n;
	int		 fd, flags;

	if (workspace_fd == -1) {
		snprintf(why, whylen, "the workflow has no workspace:");
		return -1;
	}
	if ((problem = workspace_path_problem(path, pathlen)) != NULL) {
		snprintf(why, whylen, "%s", problem);
		return -1;
	}
	p = xmemdup0(path, pathlen);
	if (op != NULL && strcmp(op, "create") == 0)
		flags = O_WRONLY | O_CREAT | O_EXCL;
	else if (op != NULL && strcmp(op, "update") == 0)
		flags = O_WRONLY | O_TRUNC;
	else
		flags = O_WRONLY | O_CREAT | O_TRUNC;
	if (workspace_mkdirs(p) == -1 ||
	    (fd = workspace_openat2(workspace_fd, p, flags | O_NOFOLLOW,
	    0600)) == -1) {
		if (errno == EXDEV || errno == ELOOP)
			snprintf(why, whylen, "%s leads out of the workspace",
			    p);
		else
			snprintf(why, whylen, "%s: %s", p, strerror(errno));
		free(p);
		return -1;
	}
	while (len > 0) {
		n = write(fd, data, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			snprintf(why, whylen, "%s: %s", p, strerror(errno));
			close(fd);
			free(p);
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	close(fd);
	free(p);
	return 0;
}

/*
 * Write the artifacts of a reply that carry a path and content.  Returns
 * the number written; refusals are logged, recorded and reported to the
 * agent as notices by the caller through why (the first refusal).
 */
int
workspace_artifacts(struct agent *a, struct jscan *js, const char *line,
    const struct env *env, char *why, size_t whylen)
{
	const char	*path, *content, *opv;
	char		 op[16], reason[256], *pcopy, *ccopy;
	size_t		 plen, clen, olen;
	int		 outs, arts, e, t, c, o, written = 0;

	why[0] = '\0';
	if (workspace_fd == -1 || (outs = JSCAN_GET(js, line, 0, "outputs")) ==
	    -1 || (arts = JSCAN_GET(js, line, outs, "artifacts")) == -1)
		return 0;
	for (e = jscan_first(js, arts); e != -1; e = jscan_next(js, arts, e)) {
		if ((t = JSCAN_GET(js, line, e, "path")) == -1 ||
		    (c = JSCAN_GET(js, line, e, "content")) == -1)
			continue;
		if (js->tok[t].type != JT_STRING || js->tok[c].type != JT_STRING)
			continue;
		path = jscan_text(js, line, t, &plen);
		pcopy = xmemdup0(path, plen);
		content = jscan_text(js, line, c, &clen);
		ccopy = xmemdup0(content, clen);
		op[0] = '\0';
		if ((o = JSCAN_GET(js, line, e, "operation")) != -1 &&
		    js->tok[o].type == JT_STRING) {
			opv = jscan_text(js, line, o, &olen);
			snprintf(op, sizeof op, "%.*s", (int)olen, opv);
		}
		if (workspace_write(pcopy, plen, op[0] ? op : NULL, ccopy, clen,
		    reason, sizeof reason) == 0) {
			written++;
			log_info("agent %s: wrote %s in the workspace (%zu "
			    "bytes)", a->id, pcopy, clen);
			auditlog_event("artifact", a->id, NULL, "path", pcopy,
			    "outcome", "written", NULL);
		} else {
			log_warnx("agent %s: artifact refused: %s", a->id,
			    reason);
			auditlog_event("artifact", a->id, NULL, "path", pcopy,
			    "outcome", "refused", "reason", reason, NULL);
			if (why[0] == '\0')
				snprintf(why, whylen, "artifact %s refused: %s",
				    pcopy, reason);
		}
		free(pcopy);
		free(ccopy);
	}
	(void)env;
	return written;
}
