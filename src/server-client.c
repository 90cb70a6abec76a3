/*
 * A connection to the control socket: a client participant, speaking
 * the same NDJSON JSON-RPC as agents do on their pipes.
 *
 * Its lines go to the control plane (control_frame) one at a time.  What
 * corral writes back waits in the connection's channel, whose writer has
 * the channels' watermarks; the memory a client can cost is bounded:
 *
 *   - events to a client above its high watermark are dropped and
 *     counted (event.c tells it once it reads again);
 *   - a client whose answers pile up above the high watermark is not
 *     read any more until they drain to the low one.  The lines of the
 *     chunk already read wait in a pending buffer (at most one read),
 *     and are handled, in order, as room comes back.
 *
 * A connection that ends, or fails, is marked dead in its own callback
 * and freed later from the loop's prepare callback, never inside one of
 * its own callbacks.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

struct server_client {
	struct peer			 peer;
	struct chan			 chan;
	char				 name[32];	/* client:N */
	pid_t				 pid;		/* SO_PEERCRED's */
	ev_tstamp			 last;		/* its last line */
	int				 flags;
#define SC_DEAD		0x01
#define SC_PAUSED	0x02	/* answers pile up: lines wait */
	char				*pend;		/* lines, '\n'-ended */
	size_t				 plen;
	size_t				 pcap;
	TAILQ_ENTRY(server_client)	 entry;
};

static TAILQ_HEAD(, server_client) server_clients =
				    TAILQ_HEAD_INITIALIZER(server_clients);
static unsigned int		 server_nclients;
static unsigned int		 server_ndead;
static uint64_t			 server_client_seq;

static void	server_client_line(struct chan *, enum ndjson_kind, char *,
		    size_t, size_t);
static void	server_client_eof(struct chan *, int);
static void	server_client_werror(struct chan *, int);
static void	server_client_drained(struct chan *, int);

/* How many clients are connected. */
unsigned int
server_client_count(void)
{
	return server_nclients - server_ndead;
}

/*
 * A new connection (already checked) becomes a client; one from inside
 * corral, from the processes of agent origin (or of none), becomes a
 * peer with no rights until it shows that agent's credential.
 */
void
server_client_create(int fd, uid_t uid, pid_t pid, struct agent *origin,
    int inside)
{
	static const struct chan_ops	 ops = { server_client_line,
	    server_client_eof, server_client_werror, server_client_drained };
	struct server_client		*c;
	int				 wfd;

	/* Two descriptors, so that the channel closes each once. */
	if ((wfd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) == -1) {
		log_warn("control: dup");
		close(fd);
		return;
	}
	c = xcalloc(1, sizeof *c);
	snprintf(c->name, sizeof c->name, "client:%llu",
	    (unsigned long long)++server_client_seq);
	c->pid = pid;
	c->last = ev_now(LOOP);
	chan_init(&c->chan, c->name, fd, wfd, CORRAL_MAX_LINE_DEFAULT, c);
	c->chan.ops = &ops;
	c->peer.name = c->name;
	c->peer.chan = &c->chan;
	c->peer.role = PEER_CLIENT;
	c->peer.flags = PEER_SOCKET | (inside ? PEER_INSIDE : 0);
	if (origin != NULL)
		rpc_conn(&c->peer)->origin = origin;
	rpc_peer_add(&c->peer);
	TAILQ_INSERT_TAIL(&server_clients, c, entry);
	server_nclients++;
	chan_start(&c->chan);
	log_debug("control: %s connected (uid %ld, pid %ld)%s%s%s", c->name,
	    (long)uid, (long)pid, inside ? " from inside" : "",
	    origin != NULL ? ": the processes of agent " : "",
	    origin != NULL ? origin->id : "");
}

/* The client is gone: its agents and subscriptions go; freed later. */
static void
server_client_dead(struct server_client *c, const char *why)
{
	if (c->flags & SC_DEAD)
		return;
	c->flags |= SC_DEAD;
	server_ndead++;
	log_debug("control: %s %s", c->name, why);
	chan_stop_reading(&c->chan);
	rpc_peer_remove(&c->peer);
	control_gone(&c->peer);
}

/* Handle one line: a JSON-RPC frame, or an error for a bad line. */
static void
server_client_handle(struct server_client *c, enum ndjson_kind kind,
    char *line, size_t len, size_t extra)
{
	json_t	*id;
	char	 why[128];

	if (kind == NDJSON_LINE) {
		control_frame(&c->peer, line, len);
		if (c->peer.flags & PEER_HANGUP)
			/* Refused: its answer is written as it closes. */
			server_client_dead(c, "refused");
		return;
	}
	if (kind == NDJSON_TOOLONG)
		snprintf(why, sizeof why, "a line of %zu bytes exceeds the "
		    "limit of %zu bytes and was dropped", extra,
		    (size_t)c->chan.max);
	else
		snprintf(why, sizeof why, "the line holds a NUL byte at offset "
		    "%zu and was dropped", extra);
	/* The request's id, when its first bytes have it: the answer is
	 * then its own. */
	if (kind != NDJSON_TOOLONG || (id = rpc_prefix_id(line, len)) == NULL)
		id = json_null();
	rpc_error(&c->peer, id, kind == NDJSON_TOOLONG ? CORRAL_E_INVALID :
	    CORRAL_E_PARSE, why, NULL);
	json_decref(id);
}

/* Stop reading while the client's answers pile up. */
static void
server_client_check(struct server_client *c)
{
	if (!(c->flags & SC_PAUSED) && chan_full(&c->chan)) {
		c->flags |= SC_PAUSED;
		chan_stop_reading(&c->chan);
	}
}

/* A line from the client. */
static void
server_client_line(struct chan *ch, enum ndjson_kind kind, char *line,
    size_t len, size_t extra)
{
	struct server_client	*c = ch->owner;

	if (c->flags & SC_DEAD)
		return;
	c->last = ev_now(LOOP);
	if ((c->flags & SC_PAUSED) && kind == NDJSON_LINE) {
		/* The rest of a chunk already read: it waits its turn. */
		if (c->plen + len + 1 > c->pcap) {
			c->pcap = c->plen + len + 1 + 4096;
			c->pend = xreallocarray(c->pend, 1, c->pcap);
		}
		memcpy(c->pend + c->plen, line, len);
		c->pend[c->plen + len] = '\n';
		c->plen += len + 1;
		return;
	}
	server_client_handle(c, kind, line, len, extra);
	server_client_check(c);
}

/*
 * The client's answers drained: events it missed are summed up, waiting
 * lines are handled while there is room, then reading starts again.
 */
static void
server_client_drained(struct chan *ch, int arg)
{
	struct server_client	*c = ch->owner;
	char			*nl;
	size_t			 off = 0, len;

	if (c->flags & SC_DEAD)
		return;
	event_drained(&c->peer);
	if (!(c->flags & SC_PAUSED))
		return;
	c->flags &= ~SC_PAUSED;
	while (off < c->plen && !(c->flags & (SC_DEAD | SC_PAUSED))) {
		nl = memchr(c->pend + off, '\n', c->plen - off);
		len = (size_t)(nl - (c->pend + off));
		server_client_handle(c, NDJSON_LINE, c->pend + off, len, 0);
		off += len + 1;
		server_client_check(c);
	}
	if (off > 0) {		/* none: c->pend may be NULL */
		memmove(c->pend, c->pend + off, c->plen - off);
		c->plen -= off;
	}
	if (!(c->flags & (SC_DEAD | SC_PAUSED)))
		chan_resume_reading(&c->chan);
}

/* The client closed its side. */
static void
server_client_eof(struct chan *ch, int arg)
{
	server_client_dead(ch->owner, "disconnected");
}

/* Writing to the client failed: it is gone. */
static void
server_client_werror(struct chan *ch, int error)
{
	server_client_dead(ch->owner, strerror(error));
}

/* Free a client. */
static void
server_client_free(struct server_client *c)
{
	TAILQ_REMOVE(&server_clients, c, entry);
	server_nclients--;
	if (c->flags & SC_DEAD)
		server_ndead--;
	chan_close(&c->chan);
	rpc_conn_free(&c->peer);
	free(c->pend);
	free(c);
}

/*
 * How much a client is worth keeping when room is short: a session an
 * agent acts through (corral mcp, whose children's results come to it)
 * most, then one with subscriptions or agents of its own, then the
 * rest.
 */
static int
server_client_worth(struct server_client *c)
{
	return 2 * ((c->peer.role & PEER_DELEGATE) != 0) +
	    (c->peer.nsubs > 0) + mapview_owns(c->name);
}

/*
 * The connection to close to make room for a new one, or NULL: the
 * idlest connection of the process that holds the most, when it holds
 * more than hog of them; else the idlest of those silent for min_idle
 * seconds, the ones worth least first.  Processes are told apart by
 * SO_PEERCRED's pid, which is 0 for every one outside corral's pid
 * namespace: those count as one.
 */
static struct server_client *
server_client_victim(unsigned int hog, double min_idle)
{
	struct server_client	*c, *d, *best = NULL;
	ev_tstamp		 now = ev_now(LOOP);
	unsigned int		 n, most = 0;
	pid_t			 pid = 0;

	TAILQ_FOREACH(c, &server_clients, entry) {
		if (c->flags & SC_DEAD)
			continue;
		n = 0;
		TAILQ_FOREACH(d, &server_clients, entry)
			n += !(d->flags & SC_DEAD) && d->pid == c->pid;
		if (n > most) {
			most = n;
			pid = c->pid;
		}
	}
	TAILQ_FOREACH(c, &server_clients, entry) {
		if (c->flags & SC_DEAD)
			continue;
		if (most > hog ? c->pid != pid : now - c->last < min_idle)
			continue;
		if (best == NULL || server_client_worth(c) <
		    server_client_worth(best) || (server_client_worth(c) ==
		    server_client_worth(best) && c->last < best->last))
			best = c;
	}
	return best;
}

/*
 * All places are taken: close one connection to make room (see
 * server_client_victim), telling it why.  Returns 0 with its name and
 * how long it was idle, or -1 when none may go.
 */
int
server_client_evict(unsigned int hog, double min_idle, char *name,
    size_t len, double *idle)
{
	struct server_client	*c;
	json_t			*nul;
	char			 why[160];

	if ((c = server_client_victim(hog, min_idle)) == NULL)
		return -1;
	strlcpy(name, c->name, len);
	*idle = ev_now(LOOP) - c->last;
	snprintf(why, sizeof why, "connection closed to make room for a new "
	    "one: every place was taken and this one was idle for %.1fs",
	    *idle);
	nul = json_null();
	rpc_error(&c->peer, nul, CORRAL_E_EXHAUSTED, why, NULL);
	json_decref(nul);
	server_client_dead(c, "closed to make room");
	return 0;
}

/* Free the clients that are gone (the loop's prepare callback). */
void
server_client_reap(void)
{
	struct server_client	*c, *next;

	if (server_ndead == 0)
		return;
	TAILQ_FOREACH_SAFE(c, &server_clients, entry, next)
		if (c->flags & SC_DEAD)
			server_client_free(c);
}

/* corral is exiting: write what each client can take, and close it. */
void
server_client_close_all(void)
{
	struct server_client	*c;

	while ((c = TAILQ_FIRST(&server_clients)) != NULL) {
		server_client_dead(c, "closed: corral is exiting");
		server_client_free(c);
	}
}
