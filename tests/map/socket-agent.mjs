#!/usr/bin/env node
// socket-agent.mjs: an agent whose MAP side is the SDK's AgentConnection
// over corral's control socket instead of its pipes: corral started it,
// so it shows the credential corral gave it (CORRAL_AGENT_TOKEN, in
// map/connect's auth) and acts as itself there (docs/subagents.md, "Tools
// for a model").
//
//   node socket-agent.mjs --report FILE [--spawn NAME]
//
// It connects with AgentConnection.connect() (map/connect, then
// map/agents/register, as the SDK always does: corral answers with the
// agent itself, whose id must be CORRAL_AGENT_ID), subscribes to
// agent_registered, spawns a child of entry NAME with a task and waits
// for the child's event on its subscription and for the child's result
// (a map/message with meta.isResult), unsubscribes, and disconnects
// (AgentConnection.disconnect(): map/agents/unregister, then
// map/disconnect).  The SDK warns on the console of any event that comes
// for a subscription it no longer has; every such warning is a failure.
// It reports "socket-agent[ID]: ok WHAT" / "FAIL WHAT: why" on stderr and
// to FILE, and then waits for stdin to end (corral's stop).
import fs from 'node:fs';
import net from 'node:net';
import { Readable, Writable } from 'node:stream';
import { loadSdk, SdkMissing } from './lib/sdk.mjs';

const opt = {};
for (let i = 2; i < process.argv.length; i++) {
	if (process.argv[i] === '--report')
		opt.report = process.argv[++i];
	else if (process.argv[i] === '--spawn')
		opt.spawn = process.argv[++i];
}
const me = process.env.CORRAL_AGENT_ID || '?';
let failed = 0;
function report(ok, what, detail) {
	if (!ok)
		failed++;
	const line = `socket-agent[${me}]: ${ok ? 'ok' : 'FAIL'} ${what}${detail ? (ok ? ' ' : ': ') + detail : ''}`;
	process.stderr.write(line + '\n');
	if (opt.report)
		fs.appendFileSync(opt.report, line + '\n');
}
const warnings = [];
console.warn = (...a) => warnings.push(a.map(String).join(' '));
const within = (ms, p, what) => Promise.race([p, new Promise((_, no) =>
    setTimeout(() => no(new Error(`no ${what} within ${ms} ms`)), ms))]);

let sdk;
try {
	({ sdk } = await loadSdk());
} catch (e) {
	report(false, 'sdk', e.message);
	process.exit(e instanceof SdkMissing ? 77 : 1);
}
const wait = Number(process.env.SOCKET_AGENT_WAIT || 20000);
try {
	const sock = net.createConnection(process.env.CORRAL_CONTROL);
	await new Promise((ok, no) => { sock.once('connect', ok); sock.once('error', no); });
	const stream = sdk.ndJsonStream(Readable.toWeb(sock), Writable.toWeb(sock));
	const agent = new sdk.AgentConnection(stream, { name: 'socket-agent', role: 'worker' });
	let resolveResult;
	const result = new Promise((r) => { resolveResult = r; });
	agent.onMessage((m) => {
		if (m.meta && m.meta.isResult)
			resolveResult(m);
	});
	const r = await agent.connect({ auth: { method: 'x-corral-agent',
	    credential: process.env.CORRAL_AGENT_TOKEN } });
	if (r.agent.id !== me || agent.agentId !== me)
		throw new Error(`registered as ${r.agent.id}, want ${me}`);
	report(true, 'connect', `id=${agent.agentId} principal=${r.connection.principal && r.connection.principal.id}`);
	const sub = await agent.subscribe({ eventTypes: ['agent_registered'] });
	report(true, 'subscribe', sub.id);
	if (opt.spawn) {
		const seen = (async () => {
			for await (const ev of sub)
				if (ev.data && ev.data.parent === me)
					return ev.data.agentId;
		})();
		const s = await agent.spawn({ name: opt.spawn, initialMessage: { payload: {
		    protocol: 'multiagent-1.0', role: 'agent', intent: 'execute',
		    task: 'child of a socket agent', content: { type: 'text', text: 'x' } } } });
		report(true, 'spawn', `child=${s.agent.id}`);
		const ev = await within(wait, seen, 'agent_registered event of the child');
		if (ev !== s.agent.id)
			throw new Error(`event about ${ev}, spawned ${s.agent.id}`);
		report(true, 'event', `agent_registered ${ev}`);
		const m = await within(wait, result, 'result of the child');
		report(true, 'result', `from ${m.from}`);
	}
	await sub.unsubscribe();
	await agent.disconnect('done');
	report(true, 'disconnect', 'closed');
} catch (e) {
	report(false, 'error', e && e.message ? e.message : String(e));
}
// disconnect() has closed the connection: whatever came after its answer
// was read by now, and any event among it warned.
if (warnings.length)
	report(false, 'warnings', warnings.join(' | '));
else
	report(true, 'warnings', 'none');
process.stdin.resume();
process.stdin.on('end', () => process.exit(failed ? 1 : 0));
