#!/usr/bin/env node
// sdk-only-agent.mjs: an agent written the way the SDK's own examples
// write one, with nothing of corral's: AgentConnection over
// ndJsonStream(stdin, stdout), which reads nothing but JSON-RPC.  corral
// puts such an agent in MAP mode (SPEC.md 11): its requests and its task
// come as map/message, and its reply() is its answer.
//
//   node sdk-only-agent.mjs [--report FILE]
//
// It answers every message that expects a response with a finalize
// envelope ("sdk-only-agent ID: TASK"), never awaiting inside the handler
// (the SDK would never read the response).  It reports "sdk-only[ID]: ok
// WHAT" / "FAIL WHAT: why" on stderr and to --report FILE, and exits when
// stdin ends.
import fs from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { loadSdk, SdkMissing } from './lib/sdk.mjs';

const report_to = process.argv[2] === '--report' ? process.argv[3] : undefined;
let agent;
function report(ok, what, detail) {
	const line = `sdk-only[${(agent && agent.agentId) || '?'}]: ${ok ? 'ok' : 'FAIL'} ${what}${detail ? ' ' + detail : ''}`;
	process.stderr.write(line + '\n');
	if (report_to)
		fs.appendFileSync(report_to, line + '\n');
}

let sdk;
try {
	({ sdk } = await loadSdk());
} catch (e) {
	if (e instanceof SdkMissing) {
		report(false, 'sdk', e.message);
		process.exit(77);
	}
	throw e;
}
const stream = sdk.ndJsonStream(Readable.toWeb(process.stdin), Writable.toWeb(process.stdout));
agent = new sdk.AgentConnection(stream, { name: process.env.CORRAL_AGENT_NAME || 'sdk-only' });
agent.onMessage((msg) => {
	report(true, 'message', `${msg.id} from ${msg.from}${msg.meta && msg.meta.expectsResponse ? ' (a request)' : ''}`);
	if (!(msg.meta && msg.meta.expectsResponse))
		return;
	const task = msg.payload && typeof msg.payload.task === 'string' ? msg.payload.task : 'reply';
	setImmediate(() => agent.reply(msg, {
		protocol: 'multiagent-1.0', role: 'agent', intent: 'finalize', task,
		content: { type: 'text', text: `sdk-only-agent ${agent.agentId}: ${task}` },
		confidence: { score: 0.9 },
	}).then((r) => report(true, 'reply', `to ${msg.from} messageId=${r.messageId}`),
	    (e) => report(false, 'reply', e.message)));
});
try {
	await agent.connect({ agentId: process.env.CORRAL_AGENT_ID });
	report(true, 'connect', `id=${agent.agentId} state=${agent.state}`);
} catch (e) {
	report(false, 'connect', e.message);
	process.exit(1);
}
process.stdin.on('end', () => {
	report(true, 'exit', 'stdin closed');
	process.exit(0);
});
