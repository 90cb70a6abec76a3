/*
 * The event module's internals, shared by event.c (ids, the history,
 * subscriptions, map/replay), event-filter.c (MAP's subscription filters,
 * compiled) and event-log.c (a replay's older events, read back from the
 * audit log a step at a time).  Nothing else includes this file: the rest
 * of corral sees the functions in corral.h.
 */

#ifndef EVENT_INT_H
#define EVENT_INT_H

/*
 * A filter holds at most this many strings (list entries and
 * metadataMatch members together), and this many bytes of them.
 * Compiled, it costs at most EVENT_FILTER_COST.
 */
#define EVENT_FILTER_STRINGS	256
#define EVENT_FILTER_TEXT	8192
#define EVENT_FILTER_COST	(16 * 1024)

#define EVENT_SUBS_MAX		64	/* subscriptions per peer */
#define EVENT_REPLAY_LIMIT	1000	/* events per map/replay answer */
#define EVENT_REPLAY_BYTES	(1024 * 1024)	/* and their bytes, about */
#define EVENT_MS_MAX		9007199254740991ULL	/* 2^53 - 1 */

struct event_filter;

/* What a filter reads besides an event's type (event_filter_fields). */
#define EVENT_FIELDS_KEYS	0x01	/* source, roles, agent, corr */
#define EVENT_FIELDS_TEXT	0x02	/* data.metadata */

/*
 * What a filter looks at in one event.  The strings after type may be
 * left NULL when event_filter_fields says the filter does not read them;
 * metadataMatch reads text (parsed once, kept in ev: event_fields_done
 * frees it).
 */
struct event_fields {
	const char	*type;
	const char	*source;
	const char	*srole;
	const char	*agent;
	const char	*arole;
	const char	*corr;
	const char	*text;		/* the Event object */
	size_t		 len;
	json_t		*ev;		/* text, parsed for metadataMatch */
	int		 parsed;
};

/* A map/replay being answered: what it asked for and what it found. */
struct event_replay {
	struct peer		*peer;
	json_t			*id;		/* the request's */
	char			 after[EVENT_ID_LEN + 1]; /* "": none */
	uint64_t		 from;
	uint64_t		 to;		/* 0: no end */
	char			 stop[EVENT_ID_LEN + 1]; /* the newest then */
	struct event_filter	*filter;	/* NULL: every event */
	size_t			 limit;
	size_t			 n;		/* events in the answer */
	size_t			 total;		/* how many matched */
	int			 full;		/* more matched: hasMore */
	int			 partial;	/* stopped before the end */
	struct jsonw		 out;		/* the events array */
	/* Reading the audit log (event-log.c). */
	int			 fd;
	uint64_t		 off;		/* of the next read */
	int			 ours;		/* in this run's lines */
	int			 done;
	struct ndjson_reader	 rd;
	TAILQ_ENTRY(event_replay) entry;
};

/* event.c */
int	 event_sees(const struct peer *, const char *);
int	 event_replay_in(struct event_replay *, const char *, uint64_t);
int	 event_replay_add(struct event_replay *, const char *, uint64_t,
	    const char *, size_t);
const char *event_oldest_id(void);
void	 event_replay_finish(struct event_replay *);
void	 event_replay_free(struct event_replay *);

/* event-filter.c */
int	 event_filter_compile(json_t *, struct event_filter **, char *,
	    size_t);
void	 event_filter_free(struct event_filter *);
size_t	 event_filter_cost(const struct event_filter *);
int	 event_filter_fields(const struct event_filter *);
int	 event_filter_match(const struct event_filter *,
	    struct event_fields *);
void	 event_fields_done(struct event_fields *);

/* event-log.c */
void	 event_log_init(void);
void	 event_log_set(const char *, size_t);
int	 event_log_usable(void);
void	 event_log_audited(const char *, uint64_t, uint64_t);
int	 event_log_start(struct event_replay *);
int	 event_log_busy(const struct peer *);
void	 event_log_peer_gone(struct peer *);
size_t	 event_log_index_cost(void);

#endif
