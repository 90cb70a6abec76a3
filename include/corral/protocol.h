/*
 * corral wire protocol constants, shared by the supervisor and by agents.
 *
 * Two kinds of frame share an agent's stdin and stdout, one JSON object per
 * line: data frames are multiagent-1.0 envelopes, control frames are
 * JSON-RPC 2.0 with Multi-Agent Protocol (MAP) method names.  A line is a
 * control frame exactly when its top-level object has a "jsonrpc" member.
 * See docs/protocol.md.
 *
 * Bump CORRAL_PROTOCOL_VERSION on any incompatible change to this file.
 */

#ifndef CORRAL_PROTOCOL_H
#define CORRAL_PROTOCOL_H

#define CORRAL_PROTOCOL_VERSION		1
#define CORRAL_ENVELOPE_PROTOCOL	"multiagent-1.0"

/* Default maximum line size, and the largest one a workflow may set. */
#define CORRAL_MAX_LINE_DEFAULT		(1024UL * 1024)
#define CORRAL_MAX_LINE_LIMIT		(256UL * 1024 * 1024)

/* Control methods (JSON-RPC "method"), MAP's names (docs/protocol.md). */
#define CORRAL_M_CONNECT	"map/connect"	/* handshake, agent or client */
#define CORRAL_M_DISCONNECT	"map/disconnect"
#define CORRAL_M_PING		"ping"		/* either way */
#define CORRAL_M_SPAWN		"map/agents/spawn"
#define CORRAL_M_SEND		"map/send"
#define CORRAL_M_STOP		"map/agents/stop"
#define CORRAL_M_SUSPEND	"map/agents/suspend"
#define CORRAL_M_RESUME		"map/agents/resume"
#define CORRAL_M_LIST		"map/agents/list"
#define CORRAL_M_GET		"map/agents/get"
#define CORRAL_M_REGISTER	"map/agents/register"
#define CORRAL_M_UNREGISTER	"map/agents/unregister"
#define CORRAL_M_UPDATE		"map/agents/update"
#define CORRAL_M_SUBSCRIBE	"map/subscribe"
#define CORRAL_M_UNSUBSCRIBE	"map/unsubscribe"
#define CORRAL_M_REPLAY		"map/replay"
#define CORRAL_M_GRAPH		"map/structure/graph"
#define CORRAL_M_SCOPES		"map/scopes/list"
#define CORRAL_M_SCOPE_GET	"map/scopes/get"
#define CORRAL_M_SCOPE_CREATE	"map/scopes/create"
#define CORRAL_M_SCOPE_DELETE	"map/scopes/delete"
#define CORRAL_M_SCOPE_JOIN	"map/scopes/join"
#define CORRAL_M_SCOPE_LEAVE	"map/scopes/leave"
#define CORRAL_M_SCOPE_MEMBERS	"map/scopes/members"
#define CORRAL_M_TASKS_CREATE	"map/tasks/create"
#define CORRAL_M_TASKS_ASSIGN	"map/tasks/assign"
#define CORRAL_M_TASKS_UPDATE	"map/tasks/update"
#define CORRAL_M_TASKS_LIST	"map/tasks/list"
#define CORRAL_M_SESSION_LIST	"map/session/list"
#define CORRAL_M_SESSION_LOAD	"map/session/load"
#define CORRAL_M_SESSION_CLOSE	"map/session/close"
#define CORRAL_M_EVENT		"map/event"	/* notification to a subscriber */
#define CORRAL_M_MESSAGE	"map/message"	/* notification to a recipient */
/* corral's extensions, named as the SDK's callExtension() examples are. */
#define CORRAL_M_METRICS	"_corral/metrics"
#define CORRAL_M_ROUTE		"_corral/route"	/* an envelope through routes */
#define CORRAL_M_SHUTDOWN	"_corral/shutdown"
#define CORRAL_M_CANCEL		"_corral/cancel"	/* a request */
#define CORRAL_M_REQUESTS	"_corral/requests"	/* those in flight */
#define CORRAL_M_HANDOFF	"_corral/handoff"	/* to another agent */
#define CORRAL_M_PROGRESS	"_corral/progress"	/* on a request */
#define CORRAL_M_REPORT		"_corral/report"	/* an error, on a request */
#define CORRAL_M_STEPS		"_corral/steps"	/* what waits for a person */
#define CORRAL_M_ANSWER		"_corral/answer"	/* a person's answer */
/* map/connect's auth.method for an agent's token (CORRAL_AGENT_TOKEN). */
#define CORRAL_AUTH_AGENT	"x-corral-agent"

/*
 * Error codes: JSON-RPC's and MAP's (the SDK's ERROR_CODES).  The
 * category and retryable flag in error.data follow from the code.
 */
#define CORRAL_E_PARSE		(-32700)
#define CORRAL_E_INVALID	(-32600)
#define CORRAL_E_NOMETHOD	(-32601)
#define CORRAL_E_PARAMS		(-32602)
#define CORRAL_E_INTERNAL	(-32603)
#define CORRAL_E_AUTHREQUIRED	1000	/* AUTH_REQUIRED: an agent's process */
#define CORRAL_E_DENIED		1003	/* PERMISSION_DENIED */
#define CORRAL_E_AUTHMETHOD	1005	/* METHOD_NOT_SUPPORTED: auth method */
#define CORRAL_E_CREDENTIALS	1006	/* INVALID_CREDENTIALS: agent token */
#define CORRAL_E_NOADDRESS	2000	/* ADDRESS_NOT_FOUND: matches nobody */
#define CORRAL_E_NOTFOUND	2001	/* AGENT_NOT_FOUND */
#define CORRAL_E_NOSCOPE	2002	/* SCOPE_NOT_FOUND */
#define CORRAL_E_DELIVERY	2003	/* DELIVERY_FAILED (retryable) */
#define CORRAL_E_STATE		3001	/* STATE_INVALID */
#define CORRAL_E_TERMINATED	3003	/* TERMINATED: the target stopped */
#define CORRAL_E_SPAWN		3004	/* SPAWN_FAILED */
#define CORRAL_E_EXHAUSTED	4000	/* EXHAUSTED: fan-out, agents alive */
#define CORRAL_E_QUOTA		4002	/* QUOTA_EXCEEDED: depth, budget */

/*
 * corral's codes before it took MAP's, still given in
 * error.data.details.corralCode.
 */
#define CORRAL_E_OLD_NOTFOUND	2001
#define CORRAL_E_OLD_SPAWN	2002
#define CORRAL_E_OLD_LIMIT	2003
#define CORRAL_E_OLD_DENIED	2004
#define CORRAL_E_OLD_UNKNOWN	2005

/*
 * The "corral" member corral adds to envelopes it delivers when they are
 * not ordinary requests: {"corral":{"kind":"notice"}} marks an error about
 * the agent's own output (never reply to it), "child_result" a sub-agent's
 * result delivered to its parent.
 */
#define CORRAL_KIND_NOTICE		"notice"
#define CORRAL_KIND_CHILD_RESULT	"child_result"
#define CORRAL_KIND_MESSAGE		"message"
#define CORRAL_KIND_REPLY		"reply"
/*
 * "cancel": a request the agent works on was cancelled; "progress": a
 * child's partial output, delivered to its parent.  Neither is answered.
 */
#define CORRAL_KIND_CANCEL		"cancel"
#define CORRAL_KIND_PROGRESS		"progress"
/* The result of a request the agent made itself (map/send expectsResponse). */
#define CORRAL_KIND_RESULT		"result"

#endif /* CORRAL_PROTOCOL_H */
