/*
 * The client side of the control socket, for corral's own commands (ps,
 * events, send, stop, top, metrics, tree): where running corrals put
 * their sockets, finding the one meant, a small blocking JSON-RPC
 * client over it, and the lines ps and top show for requests.
 *
 * Sockets live in a private directory, $XDG_RUNTIME_DIR/corral or
 * /tmp/corral-UID, which must be ours and closed to everybody else, as
 * tmux checks its own: a socket's mode alone does not protect it on
 * every system.  A run's socket is <run id>.sock there.  A socket that
 * refuses connections is stale (its corral died without removing it).
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

#define CLIENT_MAX_LINE	(64UL * 1024 * 1024)	/* a graph of many agents */

/*
 * The directory of control sockets, made (mode 0700) when create is set,
 * and checked: a directory, ours, with no access for group and others.
 * Returns 0, or -1 with err.
 */
int
client_dir(char *buf, size_t len, int create, char *err, size_t errlen)
{
	const char	*xdg = getenv("XDG_RUNTIME_DIR");
	struct stat	 st;

	if (xdg != NULL && *xdg != '\0')
		snprintf(buf, len, "%s/corral", xdg);
	else
		snprintf(buf, len, "/tmp/corral-%ld", (long)geteuid());
	if (create && mkdir(buf, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", buf, strerror(errno));
		return -1;
	}
	if (lstat(buf, &st) == -1) {
		snprintf(err, errlen, "%s: %s", buf, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: not a private directory of ours "
		    "(it must be owned by uid %ld, mode 0700)", buf,
		    (long)geteuid());
		return -1;
	}
	return 0;
}

/* Fill a socket address; returns -1 when the path is too long. */
static int
client_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	if (strlcpy(sa->sun_path, path, sizeof sa->sun_path) >=
	    sizeof sa->sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Connect to a socket; returns the descriptor, or -1 with errno. */
static int
client_connect(const char *path)
{
	struct sockaddr_un	sa;
	int			fd, saved;

	if (client_addr(&sa, path) == -1)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/*
 * Is there a corral behind a socket?  1 yes, 0 no (nothing listens: a
 * stale socket, or no socket), -1 cannot tell (errno).  The connect does
 * not wait: a corral that is stopped or busy, its backlog full, answers
 * EAGAIN, which says that it is there; a blocking connect would wait for
 * it, and so would every corral starting meanwhile (its sweep probes).
 */
int
client_probe(const char *path)
{
	struct sockaddr_un	sa;
	int			fd, rc, saved;

	if (client_addr(&sa, path) == -1)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		return -1;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	saved = errno;
	close(fd);
	if (rc == 0 || saved == EAGAIN || saved == EINPROGRESS)
		return 1;
	errno = saved;
	if (errno == ECONNREFUSED || errno == ENOENT)
		return 0;
	return -1;
}

/* Order paths by name. */
static int
client_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The sockets in a directory (*.sock), sorted; returns how many, the
 * paths in *out (free each, then the array).
 */
size_t
client_sockets(const char *dir, char ***out)
{
	DIR		*d;
	struct dirent	*de;
	size_t		 n = 0, len;
	char		**v = NULL;

	*out = NULL;
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL && n < 4096) {
		len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".sock") != 0)
			continue;
		v = xreallocarray(v, n + 1, sizeof *v);
		xasprintf(&v[n++], "%s/%s", dir, de->d_name);
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof *v, client_cmp);
	*out = v;
	return n;
}

/* Free what client_sockets returned. */
void
client_sockets_free(char **v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * The sockets in a directory that a corral listens on (those of the runs
 * whose id begins with run, when it is not NULL), sorted; returns how
 * many, the paths in *out (free them with client_sockets_free).
 */
size_t
client_live(const char *dir, const char *run, char ***out)
{
	char	**v, *base;
	size_t	  n, i, live = 0;

	n = client_sockets(dir, &v);
	for (i = 0; i < n; i++) {
		base = strrchr(v[i], '/') + 1;
		if ((run != NULL && strncmp(base, run, strlen(run)) != 0) ||
		    client_probe(v[i]) != 1)
			free(v[i]);
		else
			v[live++] = v[i];
	}
	*out = v;
	return live;
}

/*
 * The socket of the run a command means: path when given, else
 * $CORRAL_CONTROL, else the one live run in the directory (or the run
 * named by run, an id or a prefix of one).  Returns 0 with the path in
 * out, or -1 with err.
 */
int
client_find(const char *path, const char *run, char *out, size_t len,
    char *err, size_t errlen)
{
	char	  dir[512], **v, *base, names[512] = "";
	size_t	  live, i, nl;

	if (path == NULL)
		path = getenv("CORRAL_CONTROL");
	if (path != NULL && *path != '\0') {
		strlcpy(out, path, len);
		return 0;
	}
	if (client_dir(dir, sizeof dir, 0, err, errlen) != 0)
		return -1;
	live = client_live(dir, run, &v);
	for (i = 0; i < live; i++) {
		base = strrchr(v[i], '/') + 1;
		nl = strlen(names);
		snprintf(names + nl, sizeof names - nl, "%s%.*s", nl ? ", " :
		    "", (int)(strlen(base) - 5), base);
	}
	if (live == 1)
		strlcpy(out, v[0], len);
	else if (live == 0)
		snprintf(err, errlen, "no running corral%s%s found in %s",
		    run != NULL ? " with run id " : "", run != NULL ? run : "",
		    dir);
	else
		snprintf(err, errlen, "%zu corrals are running (%s): choose one "
		    "with --run ID or -S PATH", live, names);
	client_sockets_free(v, live);
	return live == 1 ? 0 : -1;
}

/* Queue a frame the reader framed. */
static void
client_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct client	*c = arg;
	json_t		*j;

	if (kind != NDJSON_LINE) {
		fprintf(stderr, "corral: a frame of %zu bytes from corral was "
		    "dropped\n", extra);
		return;
	}
	if ((j = json_loadb(line, len, 0, NULL)) == NULL) {
		fprintf(stderr, "corral: corral sent a line that is not JSON\n");
		return;
	}
	json_array_append_new(c->queue, j);
}

/* Milliseconds on the monotonic clock. */
static int64_t
client_ms(void)
{
	return (int64_t)(util_mono() * 1000.0);
}

/*
 * Read what the socket has, waiting up to timeout_ms (< 0: forever).
 * Returns 1 when something was read, 0 on timeout, -1 at end of file or
 * on an error.
 */
static int
client_read(struct client *c, int timeout_ms)
{
	struct pollfd	 pfd;
	char		 buf[65536];
	ssize_t		 n;
	int		 rc;

	if (c->eof)
		return -1;
	pfd.fd = c->fd;
	pfd.events = POLLIN;
	rc = poll(&pfd, 1, timeout_ms);
	if (rc == -1)
		return errno == EINTR ? 0 : -1;
	if (rc == 0)
		return 0;
	n = read(c->fd, buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		c->eof = 1;
		ndjson_finish(&c->rd, client_line, c);
		return -1;
	}
	ndjson_feed(&c->rd, buf, (size_t)n, client_line, c);
	return 1;
}

/* Write all of a buffer (blocking); returns 0, or -1 with errno. */
static int
client_write_all(int fd, const char *p, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write one frame (blocking). */
static int
client_write(struct client *c, json_t *frame)
{
	char	*s;
	size_t	 len;
	int	 rc;

	if ((s = jsonw_dumps(frame, CORRAL_JSON_FLAGS)) == NULL)
		return -1;
	len = strlen(s);
	s[len] = '\n';
	rc = client_write_all(c->fd, s, len + 1);
	free(s);
	return rc;
}

/*
 * Call a method and wait up to timeout_ms for its answer.  Returns the
 * result (a new reference); or NULL with *error the error object (a new
 * reference), or NULL with *error NULL when the connection failed or
 * timed out.  Notifications that arrive meanwhile are kept for
 * client_next.
 */
json_t *
client_call(struct client *c, const char *method, json_t *params,
    int timeout_ms, json_t **error)
{
	json_t		*f, *x, *res;
	json_int_t	 id = ++c->next_id;
	int64_t		 end = client_ms() + timeout_ms;
	size_t		 i;
	int		 left;

	*error = NULL;
	f = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method",
	    method);
	if (params != NULL)
		json_object_set_new(f, "params", params);
	if (client_write(c, f) != 0) {
		json_decref(f);
		return NULL;
	}
	json_decref(f);
	for (;;) {
		json_array_foreach(c->queue, i, x) {
			if (json_integer_value(json_object_get(x, "id")) != id ||
			    json_object_get(x, "method") != NULL)
				continue;
			res = json_incref(json_object_get(x, "result"));
			if (res == NULL)
				*error = json_incref(json_object_get(x,
				    "error"));
			json_array_remove(c->queue, i);
			return res;
		}
		left = (int)(end - client_ms());
		if (left <= 0 || client_read(c, left) == -1)
			return NULL;
	}
}

/*
 * The next notification, waiting up to timeout_ms (< 0: forever): a new
 * reference, or NULL on timeout (*eof 0) or at the end (*eof 1).
 */
json_t *
client_next(struct client *c, int timeout_ms, int *eof)
{
	json_t	*x;
	size_t	 i;
	int64_t	 end = client_ms() + timeout_ms;
	int	 left, rc;

	*eof = 0;
	for (;;) {
		json_array_foreach(c->queue, i, x)
			if (json_object_get(x, "method") != NULL) {
				json_incref(x);
				json_array_remove(c->queue, i);
				return x;
			}
		left = timeout_ms < 0 ? -1 : (int)(end - client_ms());
		if (timeout_ms >= 0 && left <= 0)
			return NULL;
		if ((rc = client_read(c, left)) == -1) {
			*eof = 1;
			return NULL;
		}
	}
}

/*
 * Send a request without waiting for its answer (client_poll and
 * client_take bring it).  Returns its id, or -1 when the write failed.
 */
long long
client_request(struct client *c, const char *method, json_t *params)
{
	json_t		*f;
	json_int_t	 id = ++c->next_id;
	int		 rc;

	f = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method",
	    method);
	if (params != NULL)
		json_object_set_new(f, "params", params);
	rc = client_write(c, f);
	json_decref(f);
	return rc == 0 ? (long long)id : -1;
}

/*
 * Queue a request to be written without blocking (client_flush writes
 * it), unless its frame is longer than max bytes (corral would drop such
 * a line).  Returns its id; 0 when it is too long, with its length in
 * *len, and nothing queued.
 */
long long
client_queue(struct client *c, const char *method, json_t *params,
    size_t max, size_t *len)
{
	json_t		*f;
	json_int_t	 id = c->next_id + 1;
	char		*s;

	f = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method",
	    method);
	if (params != NULL)
		json_object_set_new(f, "params", params);
	s = jsonw_dumps(f, CORRAL_JSON_FLAGS);
	json_decref(f);
	*len = s != NULL ? strlen(s) : SIZE_MAX;
	if (s == NULL || *len > max) {
		free(s);
		return 0;
	}
	ndjson_writer_add(&c->out, s, *len);
	ndjson_writer_add(&c->out, "\n", 1);
	free(s);
	c->next_id = id;
	return (long long)id;
}

/*
 * Write what client_queue queued, as much as the socket takes now.
 * Returns 0, or -1 when the connection failed.
 */
int
client_flush(struct client *c)
{
	ssize_t	n;

	while (c->out.tail > c->out.head) {
		n = send(c->fd, c->out.buf + c->out.head, c->out.tail -
		    c->out.head, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		c->out.head += (size_t)n;
	}
	c->out.head = c->out.tail = 0;
	if (c->out.cap > 1024 * 1024) {
		/* Give back what a burst of big requests took. */
		ndjson_writer_free(&c->out);
		memset(&c->out, 0, sizeof c->out);
	}
	return 0;
}

/* Bytes queued and not yet written. */
size_t
client_queued(const struct client *c)
{
	return c->out.tail - c->out.head;
}

/*
 * Read what the socket has, waiting up to timeout_ms (0: only what is
 * there): 1 when something was read, 0 when nothing, -1 at the end.
 */
int
client_poll(struct client *c, int timeout_ms)
{
	return client_read(c, timeout_ms);
}

/* The oldest frame read and not yet taken (a new reference), or NULL. */
json_t *
client_take(struct client *c)
{
	json_t	*x;

	if ((x = json_array_get(c->queue, 0)) == NULL)
		return NULL;
	json_incref(x);
	json_array_remove(c->queue, 0);
	return x;
}

/*
 * Connect to a corral and greet it (map/connect as a client named name).
 * Returns 0, or -1 with err.
 */
int
client_open(struct client *c, const char *path, const char *name, char *err,
    size_t errlen)
{
	return client_open_auth(c, path, name, NULL, err, errlen);
}

/*
 * Connect and greet as client_open does, showing auth (map/connect's
 * auth: {method, credential}, a stolen reference, or NULL).  A refusal
 * leaves err "message (error N)".
 */
int
client_open_auth(struct client *c, const char *path, const char *name,
    json_t *auth, char *err, size_t errlen)
{
	json_t	*res, *e, *params;
	char	 why[300];

	memset(c, 0, sizeof *c);
	c->fd = -1;
	strlcpy(c->path, path, sizeof c->path);
	if ((c->fd = client_connect(path)) == -1) {
		json_decref(auth);
		snprintf(err, errlen, "%s: %s", path, errno == ECONNREFUSED ?
		    "no corral is listening (a stale socket)" :
		    strerror(errno));
		return -1;
	}
	ndjson_reader_init(&c->rd, CLIENT_MAX_LINE, 0);
	c->queue = json_array();
	params = json_pack("{s:i, s:s, s:s}", "protocolVersion",
	    CORRAL_PROTOCOL_VERSION, "participantType", auth != NULL ?
	    "agent" : "client", "name", name);
	if (auth != NULL)
		json_object_set_new(params, "auth", auth);
	res = client_call(c, CORRAL_M_CONNECT, params, 10000, &e);
	if (res == NULL) {
		client_error_text(e, why, sizeof why);
		snprintf(err, errlen, "%s: map/connect: %s", path, why);
		json_decref(e);
		client_close(c);
		return -1;
	}
	c->info = res;
	return 0;
}

/* The run's own data from map/connect's _meta.corral (borrowed). */
json_t *
client_run(struct client *c)
{
	return json_object_get(json_object_get(c->info, "_meta"), "corral");
}

/* Close the connection. */
void
client_close(struct client *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	json_decref(c->queue);
	json_decref(c->info);
	c->queue = c->info = NULL;
	ndjson_reader_free(&c->rd);
	ndjson_writer_free(&c->out);
	memset(&c->out, 0, sizeof c->out);
}

/* Describe an error object for a person: "message (code N)". */
void
client_error_text(json_t *e, char *buf, size_t len)
{
	if (e == NULL) {
		snprintf(buf, len, "no answer from corral");
		return;
	}
	snprintf(buf, len, "%s (error %lld)",
	    json_string_value(json_object_get(e, "message")) != NULL ?
	    json_string_value(json_object_get(e, "message")) : "?",
	    (long long)json_integer_value(json_object_get(e, "code")));
}

/*
 * For a command: find the run meant (-S PATH, --run ID, or the only one)
 * and connect to it as name.  Returns 0, or -1 after saying why on
 * stderr.
 */
int
client_attach(struct client *c, const char *path, const char *run,
    const char *name)
{
	char	sock[512], err[1024];

	if (client_find(path, run, sock, sizeof sock, err, sizeof err) != 0 ||
	    client_open(c, sock, name, err, sizeof err) != 0) {
		fprintf(stderr, "corral: %s\n", err);
		return -1;
	}
	return 0;
}

/*
 * An agent's process, for a person, from its map/agents/list metadata:
 * its pid; "per-call" for an adapter that runs a process per request
 * (exec, codex, gemini: none lives between them); "-" for one inside
 * its agent's CLI, or none at all.
 */
void
client_pid(char *buf, size_t len, json_t *md)
{
	json_int_t	pid = json_integer_value(json_object_get(md, "pid"));

	if (json_is_true(json_object_get(md, "perCall")))
		strlcpy(buf, "per-call", len);
	else if (json_is_true(json_object_get(md, "virtual")) || pid <= 0)
		strlcpy(buf, "-", len);
	else
		snprintf(buf, len, "%lld", (long long)pid);
}

/* How long something has run, for a person: 0.4s, 12s, 4m05s, 2h03m. */
void
client_uptime(char *buf, size_t len, double secs)
{
	long	s = (long)secs;

	if (secs < 0)
		secs = s = 0;
	if (secs < 10)
		snprintf(buf, len, "%.1fs", secs);
	else if (s < 60)
		snprintf(buf, len, "%lds", s);
	else if (s < 3600)
		snprintf(buf, len, "%ldm%02lds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%ldh%02ldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, len, "%ldd%02ldh", s / 86400, s % 86400 / 3600);
}

/*
 * Where an agent runs, from its MAP metadata, in one word for corral ps
 * and top: "-" on this machine; else its host, with Slurm's job
 * ("node1:job=42") or the container ("ctr=8a24bfec59d6@beta"), and a
 * "!" when its link is lost.
 */
void
client_where(json_t *md, char *buf, size_t len)
{
	json_t		*h = json_object_get(md, "host");
	const char	*name, *job, *ctr, *node;
	char		 c[16], *esc;

	if (!json_is_object(h)) {
		snprintf(buf, len, "-");
		return;
	}
	name = json_string_value(json_object_get(h, "name"));
	node = json_string_value(json_object_get(h, "node"));
	job = json_string_value(json_object_get(h, "slurmJob"));
	ctr = json_string_value(json_object_get(h, "container"));
	if (name == NULL || *name == '\0')
		name = node != NULL ? node : "?";
	if (ctr != NULL) {
		snprintf(c, sizeof c, "%.12s", ctr);
		if (node != NULL && strcmp(name, node) != 0)
			snprintf(buf, len, "ctr=%s@%s", c, name);
		else
			snprintf(buf, len, "ctr=%s", c);
	} else if (job != NULL)
		snprintf(buf, len, "%s:job=%s", name, job);
	else
		snprintf(buf, len, "%s", name);
	if (json_is_string(json_object_get(h, "link")) &&
	    strcmp(json_string_value(json_object_get(h, "link")), "lost") == 0)
		strlcat(buf, "!", len);
	/* The far end named itself: harmless to a terminal. */
	esc = util_vis(buf, strlen(buf));
	snprintf(buf, len, "%s", esc);
	free(esc);
}

/*
 * The requests in flight (_corral/requests, at most limit of them): the
 * answer, or NULL when this corral cannot say (an older one).
 */
json_t *
client_requests(struct client *c, int limit)
{
	json_t	*res, *e;

	res = client_call(c, CORRAL_M_REQUESTS, json_pack("{s:i}", "limit",
	    limit), 10000, &e);
	json_decref(e);
	return res;
}

/* The heading of the lines client_request_row makes. */
void
client_request_head(char *buf, size_t len)
{
	snprintf(buf, len, "%-22s %-10s %-9s %-20s %-7s %s", "REQUEST",
	    "INTENT", "STATE", "AGENT", "AGE", "TASK");
}

/*
 * One request of _corral/requests as a line for a person: its trace id
 * (what corral cancel takes), intent, state, agent and age, then the start
 * of its task.  What a peer wrote is made harmless to a terminal.
 */
void
client_request_row(char *buf, size_t len, json_t *r)
{
	const char	*agent, *task;
	char		 age[32], *p;

	agent = json_string_value(json_object_get(r, "agentId"));
	task = json_string_value(json_object_get(r, "task"));
	client_uptime(age, sizeof age, json_number_value(json_object_get(r,
	    "age")));
	snprintf(buf, len, "%-22s %-10s %-9s %-20s %-7s %.60s",
	    json_string_value(json_object_get(r, "requestId")),
	    json_string_value(json_object_get(r, "intent")),
	    json_string_value(json_object_get(r, "state")),
	    agent != NULL ? agent : "-", age, task != NULL ? task : "");
	for (p = buf; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
}

/*
 * Append a number of a report's object to a status line, when it is one:
 * before it pre, after it post, prec digits after the point.
 */
static void
client_status_num(char *buf, size_t len, json_t *o, const char *key,
    const char *pre, int prec, const char *post)
{
	json_t	*v = json_object_get(o, key);
	size_t	 n = strlen(buf);

	if (json_is_number(v) && n < len)
		snprintf(buf + n, len - n, "%s%.*f%s", pre, prec,
		    json_number_value(v), post);
}

/*
 * What an agent says of itself (a STATUS_UPDATE, map/agents/update), as
 * a line for a person: its reported state, then the numbers of its
 * metadata's resource_usage, health_metrics and current_tasks.  Returns 0
 * when it said nothing.  What the agent wrote is made harmless to a
 * terminal.
 */
int
client_status_row(char *buf, size_t len, json_t *md)
{
	json_t		*ru = json_object_get(md, "resource_usage");
	json_t		*hm = json_object_get(md, "health_metrics");
	json_t		*ct = json_object_get(md, "current_tasks");
	const char	*st = json_string_value(json_object_get(md,
			    "reportedState"));
	char		*p;
	size_t		 n;

	if (st == NULL && !json_is_object(ru) && !json_is_object(hm))
		return 0;
	snprintf(buf, len, "reports %.20s:", st != NULL ? st : "-");
	client_status_num(buf, len, ru, "tokens_used", " ", 0, " tokens used");
	client_status_num(buf, len, ru, "tokens_remaining", ", ", 0, " left");
	client_status_num(buf, len, ru, "cost_usd", ", $", 4, "");
	client_status_num(buf, len, ru, "cpu_usage", ", cpu ", 0, "%");
	client_status_num(buf, len, ru, "memory_usage", ", memory ", 0, "%");
	client_status_num(buf, len, hm, "success_rate", ", success ", 2, "");
	client_status_num(buf, len, hm, "avg_latency_ms", ", ", 0, " ms");
	client_status_num(buf, len, hm, "error_count", ", ", 0, " errors");
	if (json_is_array(ct) && (n = strlen(buf)) < len)
		snprintf(buf + n, len - n, ", %zu tasks", json_array_size(ct));
	for (p = buf; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return 1;
}
