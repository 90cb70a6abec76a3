/*
 * Fuzz the JSON-RPC control-frame handler as an agent and as a control
 * socket client would drive it: each input that jscan accepts and that
 * carries "jsonrpc", and each that begins with '[' (a batch), goes to
 * control_frame for an agent of a workflow with
 * nothing to spawn, then for a client; any input at all goes to the
 * client as a line too (a client's bad line gets an error, not silence).
 * Every request must be answered (or refused) without crashing, leaking
 * or spawning anything.
 *
 * The run has an audit log and more events than the history holds, so a
 * map/replay from before the history reads the log; the loop runs a few
 * iterations after each input to let such a replay read.  The seed
 * corpus has the shapes a hostile client sends: huge filters, replays
 * from before the history, numbers out of every range, metadata too
 * large.
 */

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CORRAL_WHITEBOX	/* sets agents' parts by hand */
#include "corral.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct agent	*fuzz_agent;
static struct jscan	*js;
static struct chan	 fuzz_chan;
static struct peer	 fuzz_client;

/*
 * An audit log in the working directory, and more events than the
 * history keeps: the oldest are in the log only.
 */
static void
fuzz_history(void)
{
	static const char	fuzz_data[] = "{\"metadata\":{\"k\":1}}";
	struct event_info	ei;
	int			i;

	if (auditlog_open("fuzz_control.audit", "/fuzz/wf.yaml") != 0)
		abort();
	event_set_log("fuzz_control.audit", 1 << 20);
	memset(&ei, 0, sizeof ei);
	ei.type = "message_sent";
	ei.source = "client:old";
	ei.corr = "c1";
	ei.audit = 1;
	for (i = 0; i < 10100; i++)
		event_emit(&ei, fuzz_data, strlen(fuzz_data));
	auditlog_flush();
}

/* Build a supervisor with one agent whose stdin goes to /dev/null. */
static void
fuzz_setup(void)
{
	struct workflow		*wf;
	struct config_error	 err;
	static const char	 text[] =
	    "agents:\n  a:\n    cmd: [/nonexistent/agent]\n    autostart: false\n";

	if ((wf = config_load_string(text, sizeof text - 1, "/fuzz/wf.yaml",
	    &err)) == NULL)
		abort();
	supervisor_setup(wf, MODE_SERVE);
	fuzz_agent = lifecycle_create(&wf->agents[0], 1, NULL);
	chan_init(&fuzz_agent->proc.io, fuzz_agent->id, -1,
	    open("/dev/null", O_WRONLY | O_CLOEXEC), 1 << 20, fuzz_agent);
	fuzz_agent->life.state = AS_READY;
	fuzz_history();
	js = jscan_create(4);
	chan_init(&fuzz_chan, "client:fuzz", -1, open("/dev/null",
	    O_WRONLY | O_CLOEXEC), 1 << 20, NULL);
	fuzz_client.name = "client:fuzz";
	fuzz_client.chan = &fuzz_chan;
	fuzz_client.role = PEER_CLIENT;
	rpc_peer_add(&fuzz_client);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*s = (const char *)data;
	int		 i;

	if (fuzz_agent == NULL)
		fuzz_setup();
	if (size > 1 << 16)
		return 0;
	if ((size > 0 && s[0] == '[') || (jscan_run(js, s, size) == 0 &&
	    js->tok[0].type == JT_OBJECT &&
	    jscan_get(js, s, 0, "jsonrpc") != -1)) {
		control_frame(&fuzz_agent->peer, s, size);
		chan_flush_all();
		agent_reap_dead(0);
	}
	control_frame(&fuzz_client, s, size);
	chan_flush_all();
	agent_reap_dead(0);
	/* A replay from the log reads a stretch an iteration. */
	for (i = 0; i < 8; i++)
		ev_run(LOOP, EVRUN_NOWAIT);
	chan_flush_all();
	return 0;
}
