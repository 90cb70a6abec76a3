/*
 * The control socket: a Unix stream socket on which a running corral
 * speaks MAP to clients (corral ps, events, top ..., the MAP SDK).
 *
 * By default it is <run id>.sock in the private directory of client.c
 * ($XDG_RUNTIME_DIR/corral or /tmp/corral-UID, mode 0700); --control
 * PATH puts it elsewhere, --no-control turns it off.  The socket is mode
 * 0600, and every connection is checked with SO_PEERCRED: the same uid
 * as corral, or root, else it is closed.  A connection from inside,
 * from an agent's processes (lineage.c), is no client: it may only show
 * its own agent's credential (control.c).  A socket that nobody listens
 * on any more (its corral was killed) is stale: corral removes stale
 * sockets from the directory when it starts, and replaces one at its
 * own path.  A failure here never stops the run: it runs without a
 * socket, and says why.
 *
 * A socket put elsewhere with --control gets a symbolic link in the
 * directory, <run id>.sock, so that corral ps and --run ID find that run
 * too; it goes with the socket, and a link whose socket is gone is stale
 * like a socket.
 *
 * Next to the socket is the run's private directory (<run id>.d, mode
 * 0700), where the adapters write the configurations that tell a CLI of
 * corral's tools (adapter-tools.c); it goes with the socket.
 *
 * Accepting backs off for a second when descriptors run out, as tmux's
 * server_add_accept does, rather than spinning on a listener that stays
 * readable.  Each connection becomes a client (server-client.c), up to
 * SERVER_CLIENTS at once; then a new one takes the place of an idle one
 * (server_full), so that the owner's commands always get in.
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define SERVER_CLIENTS	128	/* connections at once */
#define SERVER_BACKLOG	128
#define SERVER_HOG	16	/* one process's connections, beyond which
				   it loses its idlest to a newcomer */
#define SERVER_IDLE	1.0	/* else a connection silent this long may */
#define SERVER_LOG_GAP	10.0	/* one line about the limit in this time */

static struct {
	int		 fd;
	ev_io		 w;
	ev_timer	 backoff;
	char		 path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	ino_t		 ino;		/* of the socket we made */
	dev_t		 dev;
	char		*want;		/* --control PATH */
	int		 off;		/* --no-control */
	char		 rundir[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	ev_timer	 full_w;	/* the next line about the limit */
	unsigned int	 refused;	/* since the last line */
	unsigned int	 evicted;
	char		 link[600];	/* in the directory, to --control's */
} srv = { .fd = -1 };

static void	server_accept_cb(struct ev_loop *, ev_io *, int);
static void	server_backoff_cb(struct ev_loop *, ev_timer *, int);
static void	server_full_cb(struct ev_loop *, ev_timer *, int);

/* Choose the socket: a path (NULL: the default), or none at all. */
void
server_configure(const char *path, int off)
{
	free(srv.want);
	srv.want = path != NULL ? xstrdup(path) : NULL;
	srv.off = off;
}

/* The socket's path, or NULL when there is none. */
const char *
server_path(void)
{
	return srv.fd != -1 ? srv.path : NULL;
}

/* The run directory of a socket: X.d for X.sock, else PATH.d. */
static void
server_rundir_of(const char *sock, char *buf, size_t len)
{
	size_t	n = strlen(sock);

	if (n > 5 && strcmp(sock + n - 5, ".sock") == 0)
		n -= 5;
	snprintf(buf, len, "%.*s.d", (int)n, sock);
}

/* Remove one entry of a run directory (nftw, deepest first). */
static int
server_rm_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (remove(path) == -1 && errno != ENOENT)
		log_warn("control: remove %s", path);
	return 0;
}

/* Remove a run directory and what it holds (links are not followed). */
static void
server_rm_rundir(const char *dir)
{
	struct stat	st;

	if (lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode))
		return;
	(void)nftw(dir, server_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Remove the stale sockets of dead corrals from the directory. */
static void
server_sweep(const char *dir)
{
	char	**v, rd[600];
	size_t	  n, i;

	n = client_sockets(dir, &v);
	for (i = 0; i < n; i++)
		if (client_probe(v[i]) == 0 && unlink(v[i]) == 0) {
			log_info("control: removed the stale socket %s", v[i]);
			server_rundir_of(v[i], rd, sizeof rd);
			server_rm_rundir(rd);
		}
	client_sockets_free(v, n);
}

/*
 * A socket put elsewhere with --control: link it into the directory as
 * <run id>.sock, unless it is in the directory already.
 */
static void
server_link(void)
{
	char	dir[512], err[600], abs[1024], *cwd, *rdir, *rsock, *slash;

	if (srv.path[0] == '/')
		strlcpy(abs, srv.path, sizeof abs);
	else if ((cwd = getcwd(NULL, 0)) != NULL) {
		snprintf(abs, sizeof abs, "%s/%s", cwd, srv.path);
		free(cwd);
	} else
		return;
	if (client_dir(dir, sizeof dir, 1, err, sizeof err) != 0) {
		log_info("control: %s; corral ps will not list this run", err);
		return;
	}
	server_sweep(dir);
	rdir = realpath(dir, NULL);
	rsock = realpath(abs, NULL);
	slash = rsock != NULL ? strrchr(rsock, '/') : NULL;
	if (slash != NULL && rdir != NULL && (size_t)(slash - rsock) ==
	    strlen(rdir) && strncmp(rsock, rdir, strlen(rdir)) == 0)
		slash = NULL;	/* in the directory: listed as it is */
	else if (slash != NULL) {
		snprintf(srv.link, sizeof srv.link, "%s/%s.sock", dir,
		    protocol_run_id());
		if (symlink(rsock, srv.link) == -1) {
			log_warn("control: %s", srv.link);
			srv.link[0] = '\0';
		}
	}
	free(rdir);
	free(rsock);
}

/* Remove the link server_link made, if it is still ours. */
static void
server_unlink(void)
{
	char	buf[1024], *rsock;
	ssize_t	n;

	if (srv.link[0] == '\0')
		return;
	n = readlink(srv.link, buf, sizeof buf - 1);
	rsock = realpath(srv.path, NULL);
	if (n > 0 && rsock != NULL && (size_t)n == strlen(rsock) &&
	    memcmp(buf, rsock, (size_t)n) == 0)
		(void)unlink(srv.link);
	free(rsock);
	srv.link[0] = '\0';
}

/* The run's private directory, or NULL when there is no socket. */
const char *
server_rundir(void)
{
	return srv.fd != -1 && srv.rundir[0] != '\0' ? srv.rundir : NULL;
}

/*
 * Make the path free for our socket: nothing there, or a stale socket
 * (removed).  Returns -1 when a live corral, or something that is not a
 * socket, is there.
 */
static int
server_claim(const char *path)
{
	struct stat	st;

	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		log_warnx("control: %s exists and is not a socket", path);
		return -1;
	}
	switch (client_probe(path)) {
	case 1:
		log_warnx("control: %s is the socket of a running corral",
		    path);
		return -1;
	case 0:
		if (unlink(path) == -1) {
			log_warn("control: unlink %s", path);
			return -1;
		}
		log_info("control: replaced the stale socket %s", path);
		return 0;
	default:
		log_warn("control: %s", path);
		return -1;
	}
}

/*
 * Open the control socket.  Returns 0 (with or without a socket: a
 * failure is logged and the run goes on without one).
 */
int
server_start(void)
{
	struct sockaddr_un	 sa;
	struct stat		 st;
	char			 dir[512], err[600], tmp[600];
	int			 fd;

	if (srv.off)
		return 0;
	if (srv.want != NULL)
		strlcpy(dir, srv.want, sizeof dir);
	else {
		if (client_dir(dir, sizeof dir, 1, err, sizeof err) != 0) {
			log_warnx("control: %s; no control socket", err);
			return 0;
		}
		server_sweep(dir);
		strlcat(dir, "/", sizeof dir);
		strlcat(dir, protocol_run_id(), sizeof dir);
		strlcat(dir, ".sock", sizeof dir);
	}
	/*
	 * Bound and listening under a temporary name first, then renamed
	 * into place: another corral's sweep never sees our socket before
	 * it listens, and takes it for stale.
	 */
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", dir, (long)getpid());
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlcpy(sa.sun_path, tmp, sizeof sa.sun_path) >=
	    sizeof sa.sun_path) {
		log_warnx("control: %s: the path is too long for a socket",
		    dir);
		return 0;
	}
	if (server_claim(dir) != 0) {
		log_warnx("control: no control socket");
		return 0;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		log_warn("control: socket");
		return 0;
	}
	(void)unlink(tmp);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == -1 ||
	    chmod(tmp, 0600) == -1 || listen(fd, SERVER_BACKLOG) == -1 ||
	    rename(tmp, dir) == -1 || stat(dir, &st) == -1) {
		log_warn("control: %s", dir);
		(void)unlink(tmp);
		close(fd);
		return 0;
	}
	srv.fd = fd;
	srv.ino = st.st_ino;
	srv.dev = st.st_dev;
	strlcpy(srv.path, dir, sizeof srv.path);
	server_rundir_of(srv.path, srv.rundir, sizeof srv.rundir);
	if (mkdir(srv.rundir, 0700) == -1 && (errno != EEXIST ||
	    lstat(srv.rundir, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) != 0)) {
		/* Someone else's, or not a directory: leave it be. */
		log_warnx("control: %s: cannot be the run's private directory; "
		    "no tools for CLIs", srv.rundir);
		srv.rundir[0] = '\0';
	}
	if (srv.want != NULL)
		server_link();
	ev_io_init(&srv.w, server_accept_cb, fd, EV_READ);
	ev_io_start(LOOP, &srv.w);
	ev_timer_init(&srv.backoff, server_backoff_cb, 1.0, 0);
	ev_timer_init(&srv.full_w, server_full_cb, SERVER_LOG_GAP, 0);
	log_info("control socket %s", srv.path);
	return 0;
}

/*
 * Close the socket and remove it (if it is still ours: another corral
 * may have replaced it), and every client with it.
 */
void
server_stop(void)
{
	struct stat	st;

	server_client_close_all();
	if (srv.fd == -1)
		return;
	ev_io_stop(LOOP, &srv.w);
	ev_timer_stop(LOOP, &srv.backoff);
	ev_timer_stop(LOOP, &srv.full_w);
	close(srv.fd);
	srv.fd = -1;
	if (stat(srv.path, &st) == 0 && st.st_ino == srv.ino &&
	    st.st_dev == srv.dev) {
		server_unlink();
		(void)unlink(srv.path);
		if (srv.rundir[0] != '\0')
			server_rm_rundir(srv.rundir);
	}
	srv.rundir[0] = '\0';
}

/* Descriptors may be free again: accept again. */
static void
server_backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	if (srv.fd != -1)
		ev_io_start(loop, &srv.w);
}

/*
 * Refuse a connection with a JSON-RPC error, written at once (a new
 * socket's buffer takes one line), and close it.
 */
static void
server_refuse(int fd, int code, const char *why)
{
	json_t	*f;
	char	*s;

	f = json_pack("{s:s, s:n, s:{s:i, s:s, s:{s:s, s:b}}}", "jsonrpc",
	    "2.0", "id", "error", "code", code, "message", why, "data",
	    "category", rpc_category(code), "retryable", rpc_retryable(code));
	if ((s = jsonw_dumps(f, CORRAL_JSON_FLAGS)) != NULL) {
		(void)!write(fd, s, strlen(s));
		(void)!write(fd, "\n", 1);
		free(s);
	}
	json_decref(f);
	close(fd);
}

/*
 * Say how many connections the limit refused, or made room for, since
 * the last line about it: one line at most every SERVER_LOG_GAP seconds,
 * however many come.
 */
static void
server_full_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	if (srv.refused > 0)
		log_warnx("control: %u more connections were refused in the "
		    "last %.0fs: %d clients are connected, the limit",
		    srv.refused, SERVER_LOG_GAP, SERVER_CLIENTS);
	if (srv.evicted > 0)
		log_warnx("control: %u more idle connections were closed to "
		    "make room in the last %.0fs (%d clients are connected, "
		    "the limit)", srv.evicted, SERVER_LOG_GAP, SERVER_CLIENTS);
	if (srv.refused + srv.evicted > 0) {
		/* Another gap before the next line. */
		srv.refused = srv.evicted = 0;
		ev_timer_set(w, SERVER_LOG_GAP, 0);
		ev_timer_start(loop, w);
	}
}

/*
 * Every place is taken and a connection comes: it takes the place of an
 * idle one (server_client_evict: a process holding many connections
 * loses its idlest first; else one silent for a second, those without
 * subscriptions or agents first), or it is refused.  So a client that
 * leaves connections open, or opens them in a loop, cannot lock the
 * owner's corral ps and corral stop out.  The log says so once, then
 * counts.  Returns 0 when the connection may become a client.
 */
static int
server_full(int fd)
{
	char	name[32], msg[160];
	double	idle;
	int	quiet = ev_is_active(&srv.full_w), rc = 0;

	if (server_client_evict(SERVER_HOG, SERVER_IDLE, name, sizeof name,
	    &idle) == 0) {
		if (quiet)
			srv.evicted++;
		else
			log_warnx("control: closed %s to make room, idle for "
			    "%.1fs: %d clients are connected, the limit", name,
			    idle, SERVER_CLIENTS);
	} else {
		snprintf(msg, sizeof msg, "too many clients: %d are connected, "
		    "the limit, and none may make room", SERVER_CLIENTS);
		server_refuse(fd, CORRAL_E_EXHAUSTED, msg);
		rc = -1;
		if (quiet)
			srv.refused++;
		else
			log_warnx("control: refused a connection: %d clients "
			    "are connected, the limit", SERVER_CLIENTS);
	}
	if (!quiet) {
		ev_timer_set(&srv.full_w, SERVER_LOG_GAP, 0);
		ev_timer_start(LOOP, &srv.full_w);
	}
	return rc;
}

/* Whose process a pid is (lineage.c asks): an agent, or NULL. */
static void *
server_match(pid_t pid, void *arg)
{
	return agent_of_pid(pid);
}

/* A connection is waiting: check who it is, and make it a client. */
static void
server_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ucred	cred;
	socklen_t	len = sizeof cred;
	void		*origin;
	int		fd, inside;

	fd = accept4(srv.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			/* Out of descriptors: try again in a second. */
			log_warn("control: accept");
			ev_io_stop(loop, &srv.w);
			ev_timer_stop(loop, &srv.backoff);
			ev_timer_set(&srv.backoff, 1.0, 0);
			ev_timer_start(loop, &srv.backoff);
		}
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		log_warn("control: SO_PEERCRED");
		close(fd);
		return;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		log_warnx("control: refused a connection from uid %ld (pid %ld): "
		    "only uid %ld and root may connect", (long)cred.uid,
		    (long)cred.pid, (long)geteuid());
		server_refuse(fd, CORRAL_E_DENIED, "permission denied: another "
		    "user's corral");
		return;
	}
	if (server_client_count() >= SERVER_CLIENTS && server_full(fd) != 0)
		return;
	inside = lineage_peer(fd, cred.pid, server_match, NULL, &origin);
	server_client_create(fd, cred.uid, cred.pid, origin, inside);
}
