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

/* Control methods (JSON-RPC "method"). */
#define CORRAL_M_CONNECT	"map/connect"	/* agent -> corral: handshake */
#define CORRAL_M_DISCONNECT	"map/disconnect"
#define CORRAL_M_PING		"ping"		/* either way */
#define CORRAL_M_SPAWN		"map/agents/spawn"
#define CORRAL_M_SEND		"map/send"
#define CORRAL_M_STOP		"map/agents/stop"
#define CORRAL_M_SUSPEND	"map/agents/suspend"
#define CORRAL_M_RESUME		"map/agents/resume"
#define CORRAL_M_LIST		"map/agents/list"
#define CORRAL_M_GET		"map/agents/get"

/* JSON-RPC and MAP error codes corral uses. */
#define CORRAL_E_PARSE		(-32700)
#define CORRAL_E_INVALID	(-32600)
#define CORRAL_E_NOMETHOD	(-32601)
#define CORRAL_E_PARAMS		(-32602)
#define CORRAL_E_INTERNAL	(-32603)
#define CORRAL_E_NOTFOUND	2001	/* agent not found */
#define CORRAL_E_SPAWN		2002	/* spawn failed */
#define CORRAL_E_LIMIT		2003	/* depth, fan-out, alive or budget */
#define CORRAL_E_DENIED		2004	/* sender may not reach target */
#define CORRAL_E_UNKNOWN_AGENT	2005	/* not in the workflow's catalogue */

/*
 * The "corral" member corral adds to envelopes it delivers when they are
 * not ordinary requests: {"corral":{"kind":"notice"}} marks an error about
 * the agent's own output (never reply to it), "child_result" a sub-agent's
 * result delivered to its parent.
 */
#define CORRAL_KIND_NOTICE		"notice"
#define CORRAL_KIND_CHILD_RESULT	"child_result"
#define CORRAL_KIND_MESSAGE		"message"

#endif /* CORRAL_PROTOCOL_H */
