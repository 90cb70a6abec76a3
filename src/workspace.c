/*
 * The workspace: the one directory corral writes files into on an agent's
 * behalf (seed 002: agents return artifacts, the workflow writes them).
 *
 * A reply's outputs.artifacts entry with "path" and "content" is written
 * to that path under the workspace: "operation" create makes a new file
 * (refused if anything is there), update replaces an existing regular
 * file, and without an operation a regular file is created or replaced.
 *
 * The workspace is the agent's too, so everything in it is hostile: a
 * FIFO, a symbolic or hard link, a directory tree 3000 levels deep.
 *
 *   - Paths are checked before the disk is touched: relative, no "..",
 *     at most WORKSPACE_PATH_MAX bytes, WORKSPACE_DEPTH_MAX components
 *     and NAME_MAX bytes a component.
 *   - Every directory is opened with openat2(2) RESOLVE_BENEATH from the
 *     one before, so a symlink that leads out is refused by the kernel.
 *   - The target itself is never opened: it is looked at with fstatat
 *     (not following a link) and must be absent or a regular file.  The
 *     content goes to a new file (O_EXCL, O_NOFOLLOW, O_NONBLOCK, 0600)
 *     in the same directory, which is then renamed over the target.  A
 *     hard link to a file outside is thereby replaced, not written
 *     through; a FIFO is refused, never opened.
 *   - A refusal removes the directories this write made and its
 *     temporary file.
 *
 * The file work runs on a thread of its own, never on the loop: the loop
 * copies each artifact and queues it, the thread writes the queue in
 * order (and takes each content's SHA-256, so the audit log says which
 * version of a file was written), and its outcomes go back to the loop
 * (ev_async), which logs them, records them in the audit log and tells
 * the engine, or, for a step's artifact, the callback given with it.
 */

#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sha2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

#define WS_PENDING_BYTES	(64 * 1024 * 1024) /* queued content, at most */
#define WS_DRAIN_WAIT		10	/* seconds close waits for the thread */
#define WS_STR(x)		WS_STR1(x)	/* a number macro as a string */
#define WS_STR1(x)		#x

/* The operations, as workspace.h-less callers name them. */
#define WS_ANY		WORKSPACE_ANY
#define WS_CREATE	WORKSPACE_CREATE
#define WS_UPDATE	WORKSPACE_UPDATE

/* The artifacts of one reply: its first refusal gets the notice. */
struct ws_reply {
	unsigned int	 left;		/* its artifacts not yet reported */
	int		 refused;
};

/* One artifact: queued, being written, or written with its outcome. */
struct ws_job {
	TAILQ_ENTRY(ws_job)	 entry;
	struct ws_reply		*reply;
	char			*agent;
	char			*reply_id;
	char			*path;
	char			*data;		/* NULL once refused early */
	size_t			 len;
	int			 op;		/* WORKSPACE_* */
	char			 why[320];	/* "" when written */
	char			 sha256[SHA256_DIGEST_STRING_LENGTH];
	workspace_result_cb	 cb;		/* NULL: the engine's */
	void			*arg;
};
TAILQ_HEAD(ws_jobs, ws_job);

static int			 workspace_fd = -1;
static char			*workspace_path;
static workspace_result_cb	 workspace_cb;

/* Shared with the writer thread, under ws_mu. */
static pthread_mutex_t		 ws_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t		 ws_cv = PTHREAD_COND_INITIALIZER;
static struct ws_jobs		 ws_queue = TAILQ_HEAD_INITIALIZER(ws_queue);
static struct ws_jobs		 ws_done = TAILQ_HEAD_INITIALIZER(ws_done);
static unsigned int		 ws_busy;	/* queued or being written */
static int			 ws_quit;

/* The loop's own. */
static pthread_t		 ws_thread;
static int			 ws_threaded;
static ev_async			 ws_async;
static size_t			 ws_pending;	/* content bytes queued */

static void	*workspace_thread(void *);
static void	 workspace_async_cb(struct ev_loop *, ev_async *, int);

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
 * Open (creating it if needed) the workflow's workspace and start its
 * writer.  Returns 0, or -1 with errno set.
 */
int
workspace_open(const struct workflow *wf)
{
	char	*path, *real;

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
	if ((real = realpath(path, NULL)) != NULL) {
		free(path);
		path = real;
	}
	workspace_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (workspace_fd == -1) {
		free(path);
		return -1;
	}
	workspace_path = path;
	ws_pending = 0;
	ws_quit = 0;
	ev_async_init(&ws_async, workspace_async_cb);
	ev_async_start(LOOP, &ws_async);
	ev_unref(LOOP);		/* pending writes do not keep corral up */
	ws_threaded = pthread_create(&ws_thread, NULL, workspace_thread,
	    NULL) == 0;
	if (!ws_threaded)
		log_warnx("workspace: no writer thread; artifacts are written "
		    "on the loop");
	return 0;
}

/* Register who hears of each artifact's outcome (the engine). */
void
workspace_on_result(workspace_result_cb cb)
{
	workspace_cb = cb;
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
 * component, no NUL, within the limits on length, depth and component
 * length, and naming a file.  Returns NULL if fine, else the reason.
 */
const char *
workspace_path_problem(const char *path, size_t len)
{
	size_t	i, start = 0, comps = 0, clen;

	if (len == 0)
		return "the path is empty";
	if (memchr(path, '\0', len) != NULL)
		return "the path holds a NUL byte";
	if (path[0] == '/')
		return "absolute paths are refused";
	for (i = 0; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		clen = i - start;
		if (clen == 2 && path[start] == '.' && path[start + 1] == '.')
			return "\"..\" is refused";
		if (clen > NAME_MAX)
			return "a path component is longer than "
			    WS_STR(NAME_MAX) " bytes";
		if (clen > 0 && !(clen == 1 && path[start] == '.') &&
		    ++comps > WORKSPACE_DEPTH_MAX)
			return "the path has more than "
			    WS_STR(WORKSPACE_DEPTH_MAX) " components";
		start = i + 1;
	}
	if (len > WORKSPACE_PATH_MAX)
		return "the path is longer than " WS_STR(WORKSPACE_PATH_MAX)
		    " bytes";
	if (path[len - 1] == '/' || (path[len - 1] == '.' && (len == 1 ||
	    path[len - 2] == '/')))
		return "the path names a directory";
	return NULL;
}

/*
 * The directories of one write, from the workspace down to the file's,
 * and which of them this write made (so a refusal can remove them).
 */
struct ws_dirs {
	int		 fd[WORKSPACE_DEPTH_MAX + 1];
	const char	*name[WORKSPACE_DEPTH_MAX + 1];
	int		 made[WORKSPACE_DEPTH_MAX + 1];
	int		 n;
};

/*
 * Open the directories leading to the last component of path (a copy we
 * may cut), making missing ones unless told not to.  Returns the last
 * component, or NULL with errno set.
 */
static char *
workspace_dirs(struct ws_dirs *d, char *path, int make)
{
	char	*comp, *slash;
	int	 next, saved;

	d->n = 0;
	if ((d->fd[0] = dup(workspace_fd)) == -1)
		return NULL;
	d->name[0] = NULL;
	d->made[0] = 0;
	d->n = 1;
	for (comp = path; (slash = strchr(comp, '/')) != NULL;
	    comp = slash + 1) {
		*slash = '\0';
		if (*comp == '\0' || strcmp(comp, ".") == 0)
			continue;
		if (d->n > WORKSPACE_DEPTH_MAX)
			fatalx("workspace_dirs: a path deeper than checked");
		d->made[d->n] = 0;
		next = workspace_openat2(d->fd[d->n - 1], comp, O_PATH |
		    O_DIRECTORY, 0);
		if (next == -1 && errno == ENOENT && make) {
			if (mkdirat(d->fd[d->n - 1], comp, 0700) == 0)
				d->made[d->n] = 1;
			else if (errno != EEXIST)
				return NULL;
			next = workspace_openat2(d->fd[d->n - 1], comp, O_PATH |
			    O_DIRECTORY, 0);
		}
		if (next == -1) {
			saved = errno;
			if (d->made[d->n])
				(void)unlinkat(d->fd[d->n - 1], comp,
				    AT_REMOVEDIR);
			errno = saved;
			return NULL;
		}
		d->fd[d->n] = next;
		d->name[d->n] = comp;
		d->n++;
	}
	return comp;
}

/*
 * Close the directories of a write; on a refusal (undo), first remove the
 * ones it made, deepest first.  One the agent has filled meanwhile stays.
 */
static void
workspace_dirs_close(struct ws_dirs *d, int undo)
{
	int	i, saved = errno;

	for (i = d->n - 1; i >= 0; i--) {
		if (undo && i > 0 && d->made[i])
			(void)unlinkat(d->fd[i - 1], d->name[i], AT_REMOVEDIR);
		close(d->fd[i]);
	}
	d->n = 0;
	errno = saved;
}

/*
 * Does the symbolic link at path lead out of the workspace?  Opened with
 * O_PATH, which follows it without opening what it names (no FIFO can
 * block this).
 */
static int
workspace_leads_out(const char *path)
{
	int	fd;

	if ((fd = workspace_openat2(workspace_fd, path, O_PATH, 0)) != -1) {
		close(fd);
		return 0;
	}
	return errno == EXDEV || errno == ELOOP;
}

/*
 * Write data to a new file in dir, made O_EXCL under a random name that
 * goes in tmp.  Returns 0, or -1 with errno set and no file left.
 */
static int
workspace_temp(int dir, char *tmp, size_t tmplen, const char *data,
    size_t len)
{
	ssize_t	n;
	int	fd = -1, tries, saved;

	for (tries = 0; tries < 16 && fd == -1; tries++) {
		snprintf(tmp, tmplen, ".corral-%08x.tmp", arc4random());
		fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC, 0600);
		if (fd == -1 && errno != EEXIST)
			return -1;
	}
	if (fd == -1)
		return -1;
	while (len > 0) {
		n = write(fd, data, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			saved = n == 0 ? EIO : errno;
			goto fail;
		}
		data += n;
		len -= (size_t)n;
	}
	if (close(fd) == -1) {
		saved = errno;
		fd = -1;
		goto fail;
	}
	return 0;
fail:
	if (fd != -1)
		close(fd);
	(void)unlinkat(dir, tmp, 0);
	errno = saved;
	return -1;
}

/* Put the new file in place: create only if nothing is there. */
static int
workspace_commit(int dir, const char *tmp, const char *name, int op)
{
	if (op != WS_CREATE)
		return renameat(dir, tmp, dir, name);
	if (renameat2(dir, tmp, dir, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* No RENAME_NOREPLACE in this file system: link never replaces. */
	if (linkat(dir, tmp, dir, name, 0) == -1)
		return -1;
	(void)unlinkat(dir, tmp, 0);
	return 0;
}

/*
 * Write one artifact (the writer thread, or the loop without one); on a
 * refusal, fill job->why.  The path has passed workspace_path_problem.
 */
static void
workspace_write_one(struct ws_job *job)
{
	struct ws_dirs	 d;
	struct stat	 st;
	char		*copy, *name, tmp[64];
	const char	*p = job->path;
	int		 have_tmp = 0;

	SHA256Data((const uint8_t *)job->data, job->len, job->sha256);
	copy = xstrdup(p);
	if ((name = workspace_dirs(&d, copy, job->op != WS_UPDATE)) == NULL) {
		if (errno == EXDEV || errno == ELOOP)
			snprintf(job->why, sizeof job->why, "%s leads out of "
			    "the workspace", p);
		else
			snprintf(job->why, sizeof job->why, "%s: %s", p,
			    strerror(errno));
		goto out;
	}
	if (fstatat(d.fd[d.n - 1], name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (job->op == WS_CREATE)
			snprintf(job->why, sizeof job->why, "%s: %s", p,
			    strerror(EEXIST));
		else if (S_ISLNK(st.st_mode) && workspace_leads_out(p))
			snprintf(job->why, sizeof job->why, "%s leads out of "
			    "the workspace", p);
		else if (S_ISLNK(st.st_mode))
			snprintf(job->why, sizeof job->why, "%s: a symbolic "
			    "link; refused", p);
		else if (S_ISDIR(st.st_mode))
			snprintf(job->why, sizeof job->why, "%s: %s", p,
			    strerror(EISDIR));
		else if (!S_ISREG(st.st_mode))
			snprintf(job->why, sizeof job->why, "%s: not a regular "
			    "file", p);
		if (job->why[0] != '\0')
			goto out;
	} else if (errno != ENOENT || job->op == WS_UPDATE) {
		snprintf(job->why, sizeof job->why, "%s: %s", p,
		    strerror(errno));
		goto out;
	}
	if (workspace_temp(d.fd[d.n - 1], tmp, sizeof tmp, job->data,
	    job->len) == -1) {
		snprintf(job->why, sizeof job->why, "%s: %s", p,
		    strerror(errno));
		goto out;
	}
	have_tmp = 1;
	if (workspace_commit(d.fd[d.n - 1], tmp, name, job->op) == -1) {
		snprintf(job->why, sizeof job->why, "%s: %s", p,
		    strerror(errno));
		goto out;
	}
	have_tmp = 0;
out:
	if (have_tmp)
		(void)unlinkat(d.fd[d.n - 1], tmp, 0);
	if (d.n > 0)
		workspace_dirs_close(&d, job->why[0] != '\0');
	free(copy);
}

/* The writer thread: write each queued artifact, in order, until told. */
static void *
workspace_thread(void *arg)
{
	struct ws_job	*job;
	sigset_t	 all;

	/* Signals are the loop's business, never this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	pthread_mutex_lock(&ws_mu);
	for (;;) {
		while (TAILQ_EMPTY(&ws_queue) && !ws_quit)
			pthread_cond_wait(&ws_cv, &ws_mu);
		if ((job = TAILQ_FIRST(&ws_queue)) == NULL)
			break;
		TAILQ_REMOVE(&ws_queue, job, entry);
		pthread_mutex_unlock(&ws_mu);
		if (job->why[0] == '\0')
			workspace_write_one(job);
		pthread_mutex_lock(&ws_mu);
		TAILQ_INSERT_TAIL(&ws_done, job, entry);
		ws_busy--;
		pthread_cond_broadcast(&ws_cv);
		ev_async_send(LOOP, &ws_async);
	}
	pthread_mutex_unlock(&ws_mu);
	return NULL;
}

/* Free a job. */
static void
workspace_job_free(struct ws_job *job)
{
	free(job->agent);
	free(job->reply_id);
	free(job->path);
	free(job->data);
	free(job);
}

/*
 * Report one outcome (on the loop): log it, record it, tell the engine.
 * Bytes from the agent are escaped before they reach the log.
 */
static void
workspace_report(struct ws_job *job)
{
	struct workspace_result	 r;
	struct jsonw		 j;
	char			 esc[4 * sizeof job->why + 16], *s;
	size_t			 len;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "path");
	jsonw_str(&j, job->path);
	jsonw_key(&j, "outcome");
	if (job->why[0] == '\0') {
		log_escape(esc, sizeof esc, job->path, strlen(job->path));
		log_info("agent %s: wrote %s in the workspace (%zu bytes)",
		    job->agent, esc, job->len);
		jsonw_str(&j, "written");
		jsonw_key(&j, "bytes");
		jsonw_u64(&j, job->len);
		jsonw_key(&j, "sha256");
		jsonw_str(&j, job->sha256);
	} else {
		log_escape(esc, sizeof esc, job->why, strlen(job->why));
		log_warnx("agent %s: artifact refused: %s", job->agent, esc);
		jsonw_str(&j, "refused");
		jsonw_key(&j, "reason");
		jsonw_str(&j, job->why);
	}
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	auditlog_fields("artifact", job->agent, job->reply_id, s, len);
	free(s);

	memset(&r, 0, sizeof r);
	r.agent = job->agent;
	r.reply = job->reply_id;
	r.path = job->path;
	r.size = job->len;
	r.op = job->op;
	r.sha256 = job->sha256[0] != '\0' ? job->sha256 : NULL;
	r.arg = job->arg;
	if (job->why[0] != '\0') {
		r.why = job->why;
		r.first_refusal = job->reply == NULL || !job->reply->refused;
		if (job->reply != NULL)
			job->reply->refused = 1;
	}
	if (job->cb != NULL)
		job->cb(&r);
	else if (workspace_cb != NULL)
		workspace_cb(&r);
	if (job->reply != NULL && --job->reply->left == 0)
		free(job->reply);
}

/* Report every outcome the writer has finished, in order. */
static void
workspace_deliver(void)
{
	struct ws_jobs	 done;
	struct ws_job	*job;

	TAILQ_INIT(&done);
	pthread_mutex_lock(&ws_mu);
	TAILQ_CONCAT(&done, &ws_done, entry);
	pthread_mutex_unlock(&ws_mu);
	while ((job = TAILQ_FIRST(&done)) != NULL) {
		TAILQ_REMOVE(&done, job, entry);
		if (job->data != NULL)
			ws_pending -= job->len;
		workspace_report(job);
		workspace_job_free(job);
	}
}

/* The writer finished something. */
static void
workspace_async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	workspace_deliver();
}

/* Queue one artifact for the writer (or write it now, without one). */
static void
workspace_queue(struct ws_job *job)
{
	if (job->data != NULL)
		ws_pending += job->len;
	pthread_mutex_lock(&ws_mu);
	ws_busy++;
	if (ws_threaded) {
		TAILQ_INSERT_TAIL(&ws_queue, job, entry);
		pthread_cond_broadcast(&ws_cv);
		pthread_mutex_unlock(&ws_mu);
		return;
	}
	pthread_mutex_unlock(&ws_mu);
	if (job->why[0] == '\0')
		workspace_write_one(job);
	pthread_mutex_lock(&ws_mu);
	TAILQ_INSERT_TAIL(&ws_done, job, entry);
	ws_busy--;
	pthread_mutex_unlock(&ws_mu);
	ev_async_send(LOOP, &ws_async);
}

/*
 * Queue the artifacts of a reply that carry a path and content, by agent
 * with reply_id.  Nothing waits for them: each outcome is reported later,
 * in order, through the callback of workspace_on_result.  Returns the
 * number queued.
 */
int
workspace_artifacts(const char *agent, const char *reply_id,
    struct jscan *js, const char *line)
{
	struct ws_reply	*reply = NULL;
	struct ws_job	*job;
	const char	*path, *content, *opv, *problem;
	size_t		 plen, clen, olen;
	int		 outs, arts, e, t, c, o, n = 0;

	if (workspace_fd == -1 || (outs = JSCAN_GET(js, line, 0, "outputs")) ==
	    -1 || (arts = JSCAN_GET(js, line, outs, "artifacts")) == -1)
		return 0;
	for (e = jscan_first(js, arts); e != -1; e = jscan_next(js, arts, e)) {
		if ((t = JSCAN_GET(js, line, e, "path")) == -1 ||
		    (c = JSCAN_GET(js, line, e, "content")) == -1)
			continue;
		if (js->tok[t].type != JT_STRING || js->tok[c].type != JT_STRING)
			continue;
		if (reply == NULL)
			reply = xcalloc(1, sizeof *reply);
		reply->left++;
		job = xcalloc(1, sizeof *job);
		job->reply = reply;
		job->agent = xstrdup(agent);
		job->reply_id = xstrdup(reply_id);
		path = jscan_text(js, line, t, &plen);
		job->path = xmemdup0(path, plen);
		if ((o = JSCAN_GET(js, line, e, "operation")) != -1 &&
		    js->tok[o].type == JT_STRING) {
			opv = jscan_text(js, line, o, &olen);
			if (olen == 6 && memcmp(opv, "create", 6) == 0)
				job->op = WS_CREATE;
			else if (olen == 6 && memcmp(opv, "update", 6) == 0)
				job->op = WS_UPDATE;
		}
		content = jscan_text(js, line, c, &clen);
		job->len = clen;
		if ((problem = workspace_path_problem(job->path, plen)) != NULL)
			snprintf(job->why, sizeof job->why, "%s", problem);
		else if (ws_pending > 0 && ws_pending + clen > WS_PENDING_BYTES)
			snprintf(job->why, sizeof job->why, "%s: %zu bytes of "
			    "artifacts are already waiting to be written",
			    job->path, ws_pending);
		else
			job->data = xmemdup0(content, clen);
		workspace_queue(job);
		n++;
	}
	return n;
}

/*
 * Queue one artifact of a step's reply, by agent with reply_id: its
 * outcome goes to cb with arg (later, on the loop, in order), not to the
 * engine.  op is WORKSPACE_CREATE, WORKSPACE_UPDATE or WORKSPACE_ANY
 * (create or replace).  Without a workspace the artifact is refused.
 */
void
workspace_write(const char *agent, const char *reply_id, const char *path,
    size_t plen, const char *data, size_t len, int op,
    workspace_result_cb cb, void *arg)
{
	struct workspace_result	 r;
	struct ws_job		*job;
	const char		*problem;

	if (workspace_fd == -1) {
		memset(&r, 0, sizeof r);
		r.agent = agent;
		r.reply = reply_id;
		r.path = path;
		r.why = "no workspace: is set";
		r.first_refusal = 1;
		r.op = op;
		r.arg = arg;
		cb(&r);
		return;
	}
	job = xcalloc(1, sizeof *job);
	job->agent = xstrdup(agent);
	job->reply_id = xstrdup(reply_id);
	job->path = xmemdup0(path, plen);
	job->len = len;
	job->op = op;
	job->cb = cb;
	job->arg = arg;
	if ((problem = workspace_path_problem(job->path, plen)) != NULL)
		snprintf(job->why, sizeof job->why, "%s", problem);
	else if (ws_pending > 0 && ws_pending + len > WS_PENDING_BYTES)
		snprintf(job->why, sizeof job->why, "%s: %zu bytes of "
		    "artifacts are already waiting to be written", job->path,
		    ws_pending);
	else
		job->data = xmemdup0(data, len);
	workspace_queue(job);
}

/*
 * Close the workspace: wait for the writer to finish what is queued (a
 * while at most), report the outcomes, and stop it.  Called before the
 * run's last audit line.
 */
void
workspace_close(void)
{
	struct timespec	ts;
	int		stuck = 0;

	if (workspace_fd == -1)
		return;
	if (ws_threaded) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += WS_DRAIN_WAIT;
		pthread_mutex_lock(&ws_mu);
		while (ws_busy > 0 && !stuck)
			stuck = pthread_cond_timedwait(&ws_cv, &ws_mu, &ts) ==
			    ETIMEDOUT;
		ws_quit = 1;
		pthread_cond_broadcast(&ws_cv);
		pthread_mutex_unlock(&ws_mu);
	}
	workspace_deliver();
	if (stuck) {
		/* The process is about to exit; the thread goes with it. */
		log_warnx("workspace: %u artifact writes still pending after "
		    "%ds; not waiting for them", ws_busy, WS_DRAIN_WAIT);
		pthread_detach(ws_thread);
	} else if (ws_threaded)
		pthread_join(ws_thread, NULL);
	ws_threaded = 0;
	ev_ref(LOOP);
	ev_async_stop(LOOP, &ws_async);
	if (stuck)
		return;		/* the thread may still use the descriptor */
	close(workspace_fd);
	workspace_fd = -1;
	free(workspace_path);
	workspace_path = NULL;
}
