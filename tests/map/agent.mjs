#!/usr/bin/env node
// agent.mjs: an agent for corral to start, built on the real SDK's
// AgentConnection over its own stdin and stdout (corral's pipes, NDJSON).
//
//   node agent.mjs [--spawn NAME[:TEXT]] [--name N] [--role R] [--report FILE]
//                  [--timeout MS] [--exit-after-spawn] [--keep]
//
// It connects (map/connect, then map/agents/register: AgentConnection.
// connect() sends both), optionally spawns one child with the SDK's spawn()
// (map/agents/spawn {name, parent, initialMessage?}; --keep adds corral's
// keep: true, so the child stays after its task), answers every
// map/message that expects a response with AgentConnection.reply(), and
// still speaks corral's own protocol on the same pipes: it answers corral's
// `ping` and every multiagent-1.0 request envelope with a finalize
// envelope, and takes notices, messages and child results without answering.
//
// The SDK's ndJsonStream cannot share a stream with envelopes: its
// BaseConnection drops any line that is not JSON-RPC ("MAP: Unknown message
// type") and answers every request, ping included, with -32601.  So this
// file splits the lines itself: JSON-RPC frames (a top-level "jsonrpc"
// member, corral's own rule) go to the SDK, except `ping`, answered here;
// everything else is an envelope.  SPEC.md, "Agents on corral's pipes",
// says what corral must do for an agent that does not split.
//
// It reports each check on stderr as "agent.mjs[ID]: ok WHAT ..." or
// "agent.mjs[ID]: FAIL WHAT: why" (corral logs an agent's stderr), and with
// --report FILE (or $MAP_AGENT_REPORT) appends the same lines to FILE.  It
// exits when stdin ends (corral's stop), 0 if nothing failed, else 1.
import fs from 'node:fs';
import { loadSdk, SdkMissing } from './lib/sdk.mjs';
import { buildSchemas, issues, envelopeProblem } from './lib/schemas.mjs';
import { FrameChecker } from './lib/tap.mjs';

const opt = { timeout: 10000, report: process.env.MAP_AGENT_REPORT };
{
	const a = process.argv.slice(2);
	for (let i = 0; i < a.length; i++) {
		const v = () => a[++i];
		switch (a[i]) {
		case '--spawn': opt.spawn = v(); break;
		case '--name': opt.name = v(); break;
		case '--role': opt.role = v(); break;
		case '--report': opt.report = v(); break;
		case '--timeout': opt.timeout = Number(v()); break;
		case '--exit-after-spawn': opt.exitAfterSpawn = true; break;
		case '--keep': opt.keep = true; break;
		default:
			process.stderr.write(`agent.mjs: unknown argument ${a[i]}\n`);
			process.exit(2);
		}
	}
}

const myId = () => (agent && agent.agentId) || process.env.CORRAL_AGENT_ID || '?';
let failed = 0;
function report(ok, what, detail) {
	if (!ok)
		failed++;
	const line = `agent.mjs[${myId()}]: ${ok ? 'ok' : 'FAIL'} ${what}${detail ? (ok ? ' ' : ': ') + detail : ''}`;
	process.stderr.write(line + '\n');
	if (opt.report) {
		try {
			fs.appendFileSync(opt.report, line + '\n');
		} catch (e) {
			process.stderr.write(`agent.mjs: cannot write ${opt.report}: ${e.message}\n`);
		}
	}
}

let loaded;
try {
	loaded = await loadSdk();
} catch (e) {
	if (e instanceof SdkMissing) {
		report(false, 'sdk', e.message);
		process.exit(77);
	}
	throw e;
}
const { sdk, z } = loaded;
const S = buildSchemas(sdk, z);
const checker = new FrameChecker(S, sdk);

// stdout carries protocol lines only: one write per line, in order.
function out(obj) {
	process.stdout.write(JSON.stringify(obj) + '\n');
}

// The SDK's side of the pipes: message objects in, message objects out.
let toSdk;
const stream = {
	readable: new ReadableStream({ start(c) { toSdk = c; } }),
	writable: new WritableStream({
		write(msg) {
			checker.outgoing(msg);
			out(msg);
		},
	}),
};

let agent;
const pending = new Set();	// work started from handlers, awaited at exit

function reply(env) {
	return {
		protocol: 'multiagent-1.0', role: 'agent',
		agent: { id: myId(), name: opt.name || 'agent.mjs', model: 'none' },
		intent: 'finalize', task: typeof env.task === 'string' ? env.task : 'reply',
		content: { type: 'text', text: `agent.mjs ${myId()}: done` },
		confidence: { score: 1 },
		trace: env.trace && typeof env.trace.id === 'string' ? { parents: [env.trace.id] } : {},
	};
}

function onEnvelope(env) {
	const p = envelopeProblem(env);
	if (p) {
		report(false, 'envelope', `${p}: ${JSON.stringify(env).slice(0, 200)}`);
		return;
	}
	const kind = env.corral && env.corral.kind;
	if (kind === 'notice' || kind === 'message' || kind === 'child_result') {
		// Never answered (docs/protocol.md).
		report(true, `envelope-${kind}`, env.trace && env.trace.id);
		return;
	}
	out(reply(env));
	report(true, kind === 'task' ? 'envelope-task' : 'envelope-request',
	    `${env.trace && env.trace.id} answered`);
}

function onControl(m) {
	// corral's heartbeat: the SDK would answer -32601 (it has no request
	// handler), which corral also takes as a sign of life; a real answer
	// is better.
	if (m.method === 'ping' && 'id' in m) {
		out({ jsonrpc: '2.0', id: m.id, result: {} });
		report(true, 'ping', `id=${JSON.stringify(m.id)}`);
		return;
	}
	checker.incoming(m);
	for (const v of checker.violations.splice(0))
		report(false, 'frame', v);
	toSdk.enqueue(m);
}

// Split stdin into lines: JSON-RPC frames and envelopes.
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
	buf += d;
	let i;
	while ((i = buf.indexOf('\n')) >= 0) {
		const line = buf.slice(0, i).replace(/\r$/, '');
		buf = buf.slice(i + 1);
		if (line.trim() === '')
			continue;
		let m;
		try {
			m = JSON.parse(line);
		} catch {
			report(false, 'stdin', `not JSON: ${line.slice(0, 120)}`);
			continue;
		}
		if (m !== null && typeof m === 'object' && !Array.isArray(m) && 'jsonrpc' in m)
			onControl(m);
		else
			onEnvelope(m);
	}
});

let ending = false;
async function finish(why) {
	if (ending)
		return;
	ending = true;
	await Promise.allSettled([...pending]);
	report(failed === 0, 'exit', `${why}, ${failed} failed`);
	try {
		toSdk.close();
	} catch {}
	process.exit(failed ? 1 : 0);
}
process.stdin.on('end', () => finish('stdin closed'));
process.on('SIGTERM', () => finish('SIGTERM'));

agent = new sdk.AgentConnection(stream, { name: opt.name || process.env.CORRAL_AGENT_NAME || 'agent.mjs',
    role: opt.role, defaultTimeout: opt.timeout });

// Messages (map/message).  Never await a request inside this handler: the
// SDK awaits the handler before it reads the next frame, so the response
// to that request would never be read (SPEC.md, "Agents on corral's pipes").
agent.onMessage((msg) => {
	const m = S.Message.safeParse(msg);
	if (!m.success) {
		report(false, 'message', issues(m));
		return;
	}
	report(true, 'message', `${msg.id} from ${msg.from}`);
	if (!(msg.meta && msg.meta.expectsResponse))
		return;
	const p = envelopeProblem(msg.payload);
	const task = p ? { task: 'reply' } : msg.payload;
	const work = new Promise((r) => setImmediate(r))
	    .then(() => agent.reply(msg, reply({ task: task.task, trace: { id: msg.id } })))
	    .then((r) => report(true, 'reply', `to ${msg.from} messageId=${r.messageId}`),
		(e) => report(false, 'reply', e.message));
	pending.add(work);
	work.finally(() => pending.delete(work));
});

try {
	const r = await agent.connect({ agentId: process.env.CORRAL_AGENT_ID });
	for (const v of checker.violations.splice(0))
		report(false, 'frame', v);
	if (process.env.CORRAL_AGENT_ID && agent.agentId !== process.env.CORRAL_AGENT_ID)
		report(false, 'connect', `registered as ${agent.agentId}, CORRAL_AGENT_ID is ${process.env.CORRAL_AGENT_ID}`);
	else
		report(true, 'connect', `id=${agent.agentId} state=${agent.state} session=${r.connection.sessionId}`);
} catch (e) {
	report(false, 'connect', e.code !== undefined ? `error ${e.code} ${e.message}` : e.message);
	await finish('connect failed');
}

if (opt.spawn) {
	const [name, ...rest] = opt.spawn.split(':');
	const text = rest.join(':');
	const options = { name };
	if (opt.keep)
		options.keep = true;	/* corral's extension: the child stays after its task */
	if (text) {
		options.initialMessage = { id: `agent-mjs-${process.pid}-${Date.now()}`, from: agent.agentId,
		    to: { agent: name }, timestamp: Date.now(), meta: { expectsResponse: true },
		    payload: { protocol: 'multiagent-1.0', role: 'agent', intent: 'execute', task: text,
			content: { type: 'text', text } } };
	}
	try {
		const r = await agent.spawn(options);
		for (const v of checker.violations.splice(0))
			report(false, 'frame', v);
		if (r.agent.parent !== agent.agentId)
			report(false, 'spawn', `child ${r.agent.id} has parent ${r.agent.parent}, want ${agent.agentId}`);
		else
			report(true, 'spawn', `child=${r.agent.id} state=${r.agent.state}${r.messageId ? ` messageId=${r.messageId}` : ''}`);
	} catch (e) {
		report(false, 'spawn', e.code !== undefined ? `error ${e.code} ${e.message}` : e.message);
	}
	if (opt.exitAfterSpawn) {
		try {
			await agent.disconnect('done');
			report(true, 'disconnect');
		} catch (e) {
			report(false, 'disconnect', e.message);
		}
		await finish('spawned');
	}
}
