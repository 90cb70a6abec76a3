#!/usr/bin/env node
// fake-server.mjs: a small MAP server that does what SPEC.md asks of
// corral, enough to prove client.mjs and agent.mjs work before corral has
// a control socket.  A harness self-test, not a product: no limits, no
// budgets, no visibility rules, no restarts.
//
//   node fake-server.mjs --socket PATH [--agent-report FILE] [--fault NAME]...
//
// Clients connect to PATH (a Unix stream socket, NDJSON).  The catalogue:
//   echo       an in-process agent: idle at once, answers messages that
//              expect a response with a finalize envelope
//   sdk-agent  a process: node agent.mjs --spawn sdk-leaf:leaf work
//   sdk-leaf   a process: node agent.mjs
// plus "root", a static workflow agent, listed from the start.  Process
// agents get corral's environment (CORRAL_AGENT_ID ...) and
// MAP_AGENT_REPORT=FILE; on their pipes the server speaks MAP and, after
// map/agents/register, checks that they answer corral's ping and a request
// envelope, logging "fake-server: ok|FAIL CHECK ..." lines on stderr.
//
// --fault NAME breaks one rule, so that selftest.sh can see client.mjs
// catch it: event-before-response, string-id, delivered-count,
// agent-extra-field, uppercase-category, null-id-notification, seq-gap,
// unfiltered, flat-capabilities, no-stop-agent.
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadSdk, SdkMissing } from './lib/sdk.mjs';
import { typeMatches, envelopeProblem } from './lib/schemas.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const opt = { faults: new Set() };
{
	const a = process.argv.slice(2);
	for (let i = 0; i < a.length; i++) {
		switch (a[i]) {
		case '--socket': opt.socket = a[++i]; break;
		case '--agent-report': opt.agentReport = a[++i]; break;
		case '--fault': opt.faults.add(a[++i]); break;
		default:
			console.error(`fake-server: unknown argument ${a[i]}`);
			process.exit(2);
		}
	}
	const FAULTS = ['event-before-response', 'string-id', 'delivered-count', 'agent-extra-field',
	    'uppercase-category', 'null-id-notification', 'seq-gap', 'unfiltered', 'flat-capabilities',
	    'no-stop-agent'];
	for (const f of opt.faults)
		if (!FAULTS.includes(f)) {
			console.error(`fake-server: unknown fault ${f} (${FAULTS.join(', ')})`);
			process.exit(2);
		}
	if (!opt.socket) {
		console.error('usage: node fake-server.mjs --socket PATH [--agent-report FILE] [--fault NAME]...');
		process.exit(2);
	}
}
const fault = (f) => opt.faults.has(f);

let sdk;
try {
	({ sdk } = await loadSdk());
} catch (e) {
	if (e instanceof SdkMissing) {
		console.log(`SKIPPED: ${e.message}`);
		process.exit(77);
	}
	throw e;
}
const ulid = sdk.monotonicFactory();
const RUN = `fake${process.pid}`;
const START = Date.now();
const log = (ok, what, detail) => process.stderr.write(`fake-server: ${ok ? 'ok' : 'FAIL'} ${what}${detail ? ` ${detail}` : ''}\n`);

// What corral offers a participant: the SDK's ParticipantCapabilitiesSchema
// is strict, so only these four groups (SPEC.md, "map/connect").
const CAPS = {
	observation: { canObserve: true, canQuery: true },
	messaging: { canSend: true, canReceive: true, canBroadcast: true },
	lifecycle: { canSpawn: true, canRegister: true, canUnregister: true, canSteer: false, canStop: true },
	scopes: { canCreateScopes: false, canManageScopes: false },
};

class MapErr extends Error {
	constructor(code, message, category, retryable = false, details) {
		super(message);
		this.code = code;
		this.data = { category: fault('uppercase-category') ? 'REJECTED' : category, retryable };
		if (details)
			this.data.details = details;
	}
}
const E = {
	params: (m) => new MapErr(-32602, m, 'protocol'),
	notFound: (id) => new MapErr(2001, `agent not found: ${id}`, 'routing'),
	noAddress: () => new MapErr(2000, 'the address matches no agent', 'routing'),
	noScope: (s) => new MapErr(2002, `scope not found: ${s} (corral has no scopes)`, 'routing'),
	denied: (m) => new MapErr(1003, m, 'auth'),
	terminated: (id) => new MapErr(3003, `agent terminated: ${id}`, 'agent'),
	spawnFailed: (m, reason) => new MapErr(3004, m, 'agent', false, { reason }),
};

const CATALOGUE = {
	echo: { role: 'echo' },
	'sdk-agent': { role: 'sdk', argv: [process.execPath, path.join(HERE, 'agent.mjs'), '--spawn', 'sdk-leaf:leaf work'] },
	'sdk-leaf': { role: 'sdk', argv: [process.execPath, path.join(HERE, 'agent.mjs')] },
};

// ---------------------------------------------------------------- agents
const agents = new Map();
let nAgents = 0;
const alive = (a) => a.state !== 'stopped' && a.state !== 'failed';

function addAgent({ id, name, role, parent, ownerId, state }) {
	const a = { id, name, role, parent: parent && parent.id, ownerId, state: state || 'registered',
	    depth: parent ? parent.depth + 1 : 0, createdAt: Date.now(), metadata: {}, queue: [] };
	agents.set(id, a);
	if (parent)
		(parent.kids ??= []).push(id);
	emit('agent_registered', id, { agentId: id, name, ...(role && { role }),
	    ...(a.parent && { parent: a.parent }), ownerId, state: a.state });
	return a;
}

function setState(a, to, reason) {
	if (a.state === to)
		return;
	const from = a.state;
	a.state = to;
	if (to === 'stopped' || to === 'failed')
		a.stoppedAt = Date.now();
	emit('agent_state_changed', a.id, { agentId: a.id, previousState: from, newState: to,
	    ...(reason && { reason }) });
}

function describe(a) {
	const d = { id: a.id, name: a.name, ownerId: a.ownerId, state: a.state, children: a.kids ?? [],
	    ...(a.parent && { parent: a.parent }), ...(a.role && { role: a.role }),
	    visibility: 'public',
	    lifecycle: { createdAt: a.createdAt, ...(a.stoppedAt && { stoppedAt: a.stoppedAt }),
		...(a.exitCode !== undefined && { exitCode: a.exitCode }),
		...(a.exitReason && { exitReason: a.exitReason }) },
	    metadata: { ...a.metadata, corralState: a.state.toUpperCase(), depth: a.depth,
		...(a.proc && { pid: a.proc.pid }) } };
	if (fault('agent-extra-field'))
		d.depth = a.depth;
	return d;
}

const get = (id) => {
	const a = agents.get(id);
	if (!a)
		throw E.notFound(id);
	return a;
};
const ancestors = (a) => {
	const r = [];
	for (let p = a.parent && agents.get(a.parent); p; p = p.parent && agents.get(p.parent))
		r.push(p);
	return r;
};
const descendants = (a, depth = Infinity, d = 1) => (d > depth ? [] :
    (a.kids ?? []).flatMap((k) => [agents.get(k), ...descendants(agents.get(k), depth, d + 1)]));

// ---------------------------------------------------------------- events
const history = [];
const conns = new Set();

function matches(ev, f) {
	if (!f)
		return true;
	if (f.eventTypes && f.eventTypes.length && !fault('unfiltered') && !typeMatches(ev.type, f.eventTypes))
		return false;
	if (f.fromAgents && f.fromAgents.length && !f.fromAgents.includes(ev.source))
		return false;
	const about = agents.get(ev.data && ev.data.agentId) || agents.get(ev.source);
	if (f.roles && f.roles.length && !(about && f.roles.includes(about.role)))
		return false;
	const src = agents.get(ev.source);
	if (f.fromRoles && f.fromRoles.length && !(src && f.fromRoles.includes(src.role)))
		return false;
	if (f.scopes && f.scopes.length && !(ev.data && f.scopes.includes(ev.data.scopeId)))
		return false;
	if (f.correlationIds && f.correlationIds.length && !(ev.data && f.correlationIds.includes(ev.data.correlationId)))
		return false;
	if (f.metadataMatch) {
		const md = ev.data && ev.data.metadata;
		if (!md || Object.entries(f.metadataMatch).some(([k, v]) => md[k] !== v))
			return false;
	}
	return true;
}

function emit(type, source, data) {
	const eventId = ulid();
	const timestamp = Date.now();
	const event = { id: eventId, type, timestamp, ...(source && { source }), data };
	history.push({ eventId, timestamp, event });
	if (history.length > 10000)
		history.shift();
	for (const c of conns)
		for (const s of c.subs.values())
			if (matches(event, s.filter)) {
				s.seq += fault('seq-gap') && s.seq === 1 ? 2 : 1;
				c.notify('map/event', { subscriptionId: s.id, sequenceNumber: s.seq, eventId, timestamp, event });
			}
}

// ---------------------------------------------------------------- connections
let nClients = 0, nSubs = 0;

class Conn {
	constructor(kind, write) {
		this.kind = kind;		// 'client' or 'agent'
		this.write = write;
		this.subs = new Map();
		this.waiting = new Map();
		this.nextId = 1;
		this.participantId = null;
		conns.add(this);
	}
	send(obj) {
		this.write(JSON.stringify(obj) + '\n');
	}
	notify(method, params) {
		const m = { jsonrpc: '2.0', method, params };
		if (fault('null-id-notification') && method === 'map/event')
			m.id = null;
		this.send(m);
	}
	request(method, params, timeout = 5000) {
		const id = this.nextId++;
		this.send({ jsonrpc: '2.0', id, method, ...(params && { params }) });
		return new Promise((resolve, reject) => {
			const t = setTimeout(() => { this.waiting.delete(id); reject(new Error(`${method}: no answer in ${timeout} ms`)); }, timeout);
			this.waiting.set(id, (m) => { clearTimeout(t); resolve(m); });
		});
	}
	close() {
		conns.delete(this);
		this.subs.clear();
	}
}

// One JSON-RPC frame from a connection.
async function onFrame(c, m) {
	if (m === null || typeof m !== 'object' || m.jsonrpc !== '2.0') {
		c.send({ jsonrpc: '2.0', id: m && m.id !== undefined ? m.id : null,
		    error: { code: -32600, message: 'invalid request', data: { category: 'protocol', retryable: false } } });
		return;
	}
	if (!('method' in m)) {
		const w = c.waiting.get(m.id);
		if (w) {
			c.waiting.delete(m.id);
			w(m);
		}
		return;
	}
	if (!('id' in m))
		return;		// notifications (map/subscribe.ack): nothing to do
	const fn = METHODS[m.method];
	let after;
	try {
		if (!fn)
			throw new MapErr(-32601, `method not found: ${m.method}`, 'protocol');
		const r = await fn(c, m.params ?? {}, (f) => { after = f; });
		const id = fault('string-id') && m.method === 'map/agents/list' ? String(m.id) : m.id;
		c.send({ jsonrpc: '2.0', id, result: r });
	} catch (e) {
		if (!(e instanceof MapErr)) {
			console.error(e);
			e = new MapErr(-32603, e.message, 'internal');
		}
		c.send({ jsonrpc: '2.0', id: m.id, error: { code: e.code, message: e.message, data: e.data } });
	}
	if (after)
		after();
}

// The agent a frame comes from (null for a client).
const caller = (c) => (c.kind === 'agent' ? c.agent : null);

// ---------------------------------------------------------------- messages
function resolveAddress(c, to) {
	const me = caller(c);
	const one = (id) => {
		if (agents.has(id)) {
			const a = agents.get(id);
			if (!alive(a))
				throw E.terminated(id);
			return [id];
		}
		for (const k of conns)
			if (k.kind === 'client' && k.participantId === id)
				return [id];
		throw E.notFound(id);
	};
	if (typeof to === 'string')
		return one(to);
	if (to === null || typeof to !== 'object')
		throw E.params('params.to must be an address');
	if (typeof to.agent === 'string' && to.system === undefined)
		return one(to.agent);
	if (typeof to.participant === 'string')
		return one(to.participant);
	if (Array.isArray(to.agents)) {
		const r = to.agents.filter((id) => agents.has(id) && alive(agents.get(id)));
		if (!r.length)
			throw E.noAddress();
		return r;
	}
	if (typeof to.scope === 'string')
		throw E.noScope(to.scope);
	let r;
	if (typeof to.role === 'string')
		r = [...agents.values()].filter((a) => a.role === to.role);
	else if (to.broadcast === true)
		r = [...agents.values()];
	else if (to.parent || to.children || to.siblings || to.ancestors || to.descendants) {
		if (!me)
			throw E.params('a hierarchical address needs an agent as sender');
		r = [];
		if (to.parent && me.parent)
			r.push(agents.get(me.parent));
		if (to.children)
			r.push(...(me.kids ?? []).map((k) => agents.get(k)));
		if (to.siblings)
			r.push(...[...agents.values()].filter((a) => a.parent === me.parent && a !== me));
		if (to.ancestors)
			r.push(...ancestors(me).slice(0, to.depth ?? Infinity));
		if (to.descendants)
			r.push(...descendants(me, to.depth ?? Infinity));
	} else
		throw E.params(`unsupported address ${JSON.stringify(to)}`);
	r = [...new Set(r)].filter((a) => a !== me && alive(a)).map((a) => a.id);
	if (!r.length)
		throw E.noAddress();
	return r;
}

// Hand a message to one target: an agent process (map/message), the echo
// agent, or a client (map/message, which ClientConnection ignores; clients
// see replies through message_delivered events).
function deliver(target, message) {
	const a = agents.get(target);
	if (a && a.conn) {
		if (a.registered)
			a.conn.notify('map/message', { message });
		else
			a.queue.push(message);
	} else if (a && a.name === 'echo') {
		if (message.meta && message.meta.expectsResponse)
			setImmediate(() => route(null, a, { to: { agent: message.from },
			    payload: finalize(message.payload, message.id, a.id),
			    meta: { isResult: true, correlationId: message.meta.correlationId ?? message.id } }));
	} else {
		for (const k of conns)
			if (k.kind === 'client' && k.participantId === target)
				k.notify('map/message', { message });
	}
}

function finalize(req, parent, who) {
	return { protocol: 'multiagent-1.0', role: 'agent', agent: { id: who, name: who, model: 'none' },
	    intent: 'finalize', task: req && typeof req.task === 'string' ? req.task : 'reply',
	    content: { type: 'text', text: `${who}: done` }, trace: { parents: [parent] } };
}

// map/send from connection c (or from the in-process agent `from`).
function route(c, from, p) {
	const sender = from ? from.id : c.participantId;
	const targets = resolveAddress(c ?? { kind: 'agent', agent: from }, p.to);
	const message = { id: ulid(), from: sender, to: p.to, timestamp: Date.now(),
	    ...(p.payload !== undefined && { payload: p.payload }), ...(p.meta && { meta: p.meta }) };
	// data.correlationId only on a result: ClientConnection.request() takes
	// the first message_delivered event whose data.correlationId is its
	// own, so the request's own delivery must not carry it (SPEC.md).
	const corr = p.meta && p.meta.isResult === true ? p.meta.correlationId : undefined;
	emit('message_sent', sender, { messageId: message.id, from: sender, to: p.to,
	    timestamp: message.timestamp, ...(corr && { correlationId: corr }) });
	for (const t of targets)
		deliver(t, message);
	emit('message_delivered', sender, { messageId: message.id, from: sender, deliveredTo: targets,
	    timestamp: Date.now(), ...(corr && { correlationId: corr }), message });
	if (p.meta && p.meta.isResult)
		log(true, 'result', `${sender} -> ${targets.join(',')} correlationId=${corr}`);
	return { messageId: message.id, delivered: fault('delivered-count') ? targets.length : targets };
}

// ---------------------------------------------------------------- processes
function startProcess(a, argv) {
	const env = { PATH: process.env.PATH, HOME: process.env.HOME ?? '/', CORRAL_AGENT_ID: a.id,
	    CORRAL_AGENT_NAME: a.name, CORRAL_RUN_ID: RUN, CORRAL_PROTOCOL: '1' };
	for (const k of ['MAP_SDK_PREFIX', 'CORRAL_NPM_CACHE'])
		if (process.env[k])
			env[k] = process.env[k];
	if (opt.agentReport)
		env.MAP_AGENT_REPORT = opt.agentReport;
	const cp = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env });
	a.proc = cp;
	a.conn = new Conn('agent', (s) => { if (!cp.stdin.destroyed) cp.stdin.write(s); });
	a.conn.agent = a;
	a.conn.participantId = a.id;
	cp.stdin.on('error', () => {});
	let buf = '';
	cp.stdout.setEncoding('utf8');
	cp.stdout.on('data', (d) => {
		buf += d;
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			const line = buf.slice(0, i);
			buf = buf.slice(i + 1);
			if (!line.trim())
				continue;
			let m;
			try {
				m = JSON.parse(line);
			} catch {
				log(false, 'agent-line', `${a.id}: not JSON: ${line.slice(0, 100)}`);
				continue;
			}
			if (m && typeof m === 'object' && 'jsonrpc' in m)
				onFrame(a.conn, m);
			else
				onEnvelope(a, m);
		}
	});
	let ebuf = '';
	cp.stderr.setEncoding('utf8');
	cp.stderr.on('data', (d) => {
		ebuf += d;
		let i;
		while ((i = ebuf.indexOf('\n')) >= 0) {
			process.stderr.write(`[${a.id}] ${ebuf.slice(0, i)}\n`);
			ebuf = ebuf.slice(i + 1);
		}
	});
	cp.on('exit', (code, sig) => {
		a.exitCode = code ?? undefined;
		a.exitReason = sig ? `killed by signal ${sig}` : `exit status ${code}`;
		a.conn.close();
		setState(a, a.stopping || code === 0 ? 'stopped' : 'failed', a.exitReason);
	});
}

// An envelope line from an agent: a reply to a request we sent.
function onEnvelope(a, env) {
	const p = envelopeProblem(env);
	const w = a.envWaiting;
	if (p) {
		log(false, 'envelope-reply', `${a.id}: ${p}`);
		return;
	}
	const parents = (env.trace && env.trace.parents) || [];
	if (w && parents.includes(w.id)) {
		a.envWaiting = null;
		w.done(env);
	} else
		log(false, 'envelope-reply', `${a.id}: unsolicited envelope ${JSON.stringify(env).slice(0, 120)}`);
}

let nTrace = 0;
// What corral expects of any agent: an answer to ping, a reply envelope to
// a request envelope.  agent.mjs answers both on the pipes it shares with
// the SDK.
async function checkAgent(a) {
	try {
		const r = await a.conn.request('ping');
		if (r.result && typeof r.result === 'object' && Object.keys(r.result).length === 0)
			log(true, 'ping', a.id);
		else if (r.error && r.error.code === -32601)
			log(true, 'ping', `${a.id} (-32601: the SDK's own answer, still a sign of life)`);
		else
			log(false, 'ping', `${a.id}: ${JSON.stringify(r)}`);
	} catch (e) {
		log(false, 'ping', `${a.id}: ${e.message}`);
	}
	const id = `${RUN}-${++nTrace}`;
	const got = new Promise((resolve) => {
		a.envWaiting = { id, done: resolve };
		setTimeout(() => resolve(null), 5000);
	});
	a.conn.send({ protocol: 'multiagent-1.0', role: 'user', intent: 'execute', task: 'harness check',
	    content: { type: 'text', text: 'are you there' }, trace: { id } });
	const env = await got;
	if (env)
		log(true, 'envelope-reply', `${a.id} intent=${env.intent}`);
	else
		log(false, 'envelope-reply', `${a.id}: no reply to ${id} in 5 s`);
}

function stopTree(a, reason) {
	for (const k of [...(a.kids ?? [])].reverse())
		if (alive(agents.get(k)))
			stopTree(agents.get(k), 'its parent is stopping');
	if (!alive(a) || a.stopping)
		return;
	a.stopping = true;
	if (a.proc) {
		setState(a, 'stopping', reason);
		a.proc.stdin.end();
		setTimeout(() => { if (a.proc.exitCode === null) a.proc.kill('SIGKILL'); }, 3000).unref();
	} else {
		setState(a, 'stopping', reason);
		setState(a, 'stopped', reason);
	}
}

// ---------------------------------------------------------------- methods
const METHODS = {
	'map/connect'(c, p) {
		if (c.kind === 'client') {
			c.participantId ??= `client:${++nClients}`;
			emit('participant_connected', c.participantId, { participantId: c.participantId,
			    participantType: p.participantType ?? 'client', ...(p.name && { name: p.name }) });
		}
		return { protocolVersion: 1, sessionId: RUN, participantId: c.participantId,
		    capabilities: fault('flat-capabilities') ? { canSpawn: true, canSend: true, canQuery: true } : CAPS,
		    systemInfo: { name: 'corral-map-fake-server', version: '0' } };
	},
	'map/disconnect'(c, p, after) {
		const a = caller(c);
		if (a)
			after(() => stopTree(a, 'map/disconnect'));
		return { session: { id: RUN, createdAt: START, closedAt: Date.now() } };
	},
	'map/agents/list'(c, p) {
		const f = p.filter ?? {};
		let r = [...agents.values()];
		if (f.states && f.states.length)
			r = r.filter((a) => f.states.includes(a.state));
		if (f.roles && f.roles.length)
			r = r.filter((a) => f.roles.includes(a.role));
		if (f.parent)
			r = r.filter((a) => a.parent === f.parent);
		if (f.ownerId)
			r = r.filter((a) => a.ownerId === f.ownerId);
		if (f.hasChildren !== undefined)
			r = r.filter((a) => Boolean(a.kids && a.kids.length) === f.hasChildren);
		return { agents: r.map(describe) };
	},
	'map/agents/get'(c, p) {
		if (typeof p.agentId !== 'string')
			throw E.params('params.agentId must be a string');
		const a = get(p.agentId);
		const inc = p.include ?? {};
		const r = { agent: describe(a) };
		if (inc.parent && a.parent)
			r.parent = describe(agents.get(a.parent));
		if (inc.children)
			r.children = (a.kids ?? []).map((k) => describe(agents.get(k)));
		if (inc.siblings)
			r.siblings = [...agents.values()].filter((s) => s.parent === a.parent && s !== a).map(describe);
		if (inc.ancestors)
			r.ancestors = ancestors(a).map(describe);
		if (inc.descendants)
			r.descendants = descendants(a, inc.maxDepth ?? Infinity).map(describe);
		return r;
	},
	'map/agents/register'(c, p, after) {
		const a = caller(c);
		if (!a)
			throw E.denied('only an agent on its own pipes registers (itself)');
		a.registered = true;
		if (p.metadata && typeof p.metadata === 'object')
			Object.assign(a.metadata, p.metadata);
		after(() => {
			setState(a, 'idle', 'registered');
			for (const m of a.queue.splice(0))
				a.conn.notify('map/message', { message: m });
			checkAgent(a);
		});
		return { agent: describe(a) };
	},
	'map/agents/unregister'(c, p, after) {
		const a = get(p.agentId);
		const me = caller(c);
		if (me && me !== a)
			throw E.denied('an agent unregisters only itself');
		if (!me)
			after(() => stopTree(a, 'map/agents/unregister'));
		return { agent: describe(a) };
	},
	'map/agents/update'(c, p) {
		const a = get(p.agentId);
		const me = caller(c);
		if (me && me !== a)
			throw E.denied('an agent updates only itself');
		if (p.metadata && typeof p.metadata === 'object')
			Object.assign(a.metadata, p.metadata);
		if (typeof p.state === 'string')
			a.metadata.reportedState = p.state;
		return { agent: describe(a) };
	},
	'map/agents/spawn'(c, p) {
		const me = caller(c);
		if (typeof p.name !== 'string')
			throw E.params('params.name must name a catalogue entry');
		if (me && p.parent !== undefined && p.parent !== me.id)
			throw E.denied(`an agent spawns its own children only (parent ${p.parent} is not ${me.id})`);
		if (!me && p.parent !== undefined)
			throw E.params('a client spawns top-level agents only: no parent');
		const entry = CATALOGUE[p.name];
		if (!entry)
			throw E.spawnFailed(`unknown agent '${p.name}': not in the catalogue`, 'unknown_agent');
		const id = `${p.name}-${++nAgents}`;
		const a = addAgent({ id, name: p.name, role: p.role ?? entry.role, parent: me,
		    ownerId: me ? me.id : c.participantId });
		let messageId;
		if (p.initialMessage) {
			messageId = ulid();
			a.queue.push({ ...p.initialMessage, id: messageId, from: me ? me.id : c.participantId,
			    to: { agent: id }, timestamp: Date.now() });
		}
		if (entry.argv)
			startProcess(a, entry.argv);
		else
			setState(a, 'idle', 'ready');
		return { agent: describe(a), ...(messageId && { messageId }) };
	},
	'map/agents/stop'(c, p) {
		const a = get(p.agentId);
		const me = caller(c);
		if (me && !ancestors(a).includes(me))
			throw E.denied('an agent may stop only its own descendants');
		stopTree(a, p.reason ?? 'map/agents/stop');
		return { stopping: true, ...(!fault('no-stop-agent') && { agent: describe(a) }) };
	},
	'map/agents/suspend'(c, p) {
		const a = get(p.agentId);
		if (alive(a) && a.state !== 'suspended') {
			if (a.proc)
				a.proc.kill('SIGSTOP');
			setState(a, 'suspended', p.reason);
		}
		return { suspended: a.state === 'suspended', agent: describe(a) };
	},
	'map/agents/resume'(c, p) {
		const a = get(p.agentId);
		if (a.state === 'suspended') {
			if (a.proc)
				a.proc.kill('SIGCONT');
			setState(a, 'idle', 'resumed');
		}
		return { resumed: alive(a) && a.state !== 'suspended', agent: describe(a) };
	},
	'map/send'(c, p) {
		if (p.to === undefined)
			throw E.params('params.to is required');
		return route(c, null, p);
	},
	'map/subscribe'(c, p) {
		const s = { id: `sub-${++nSubs}`, filter: p.filter, seq: 0 };
		c.subs.set(s.id, s);
		if (fault('event-before-response')) {
			const eventId = ulid();
			s.seq++;
			c.notify('map/event', { subscriptionId: s.id, sequenceNumber: 1, eventId, timestamp: Date.now(),
			    event: { id: eventId, type: 'system_error', timestamp: Date.now(), data: { message: 'too early' } } });
		}
		return { subscriptionId: s.id };
	},
	'map/unsubscribe'(c, p) {
		c.subs.delete(p.subscriptionId);
		return { subscription: { id: String(p.subscriptionId), closedAt: Date.now() } };
	},
	'map/replay'(c, p) {
		const limit = Math.min(Math.max(Number(p.limit ?? 100), 1), 1000);
		let r = history;
		// ULIDs order the history: "after" is "greater than", so an id that
		// has aged out of the history still works.
		if (typeof p.afterEventId === 'string')
			r = r.filter((e) => e.eventId > p.afterEventId);
		else if (p.fromTimestamp !== undefined)
			r = r.filter((e) => e.timestamp >= p.fromTimestamp);
		if (p.toTimestamp !== undefined)
			r = r.filter((e) => e.timestamp <= p.toTimestamp);
		if (p.filter)
			r = r.filter((e) => matches(e.event, p.filter));
		return { events: r.slice(0, limit).map((e) => ({ eventId: e.eventId, timestamp: e.timestamp, event: e.event })),
		    hasMore: r.length > limit, totalCount: r.length };
	},
	'map/structure/graph'(c, p) {
		let nodes = [...agents.values()];
		if (p.rootAgentId)
			nodes = [get(p.rootAgentId), ...descendants(get(p.rootAgentId), p.depth ?? Infinity)];
		const ids = new Set(nodes.map((a) => a.id));
		const edges = nodes.filter((a) => a.parent && ids.has(a.parent))
		    .map((a) => ({ from: a.parent, to: a.id, type: 'parent-child' }));
		return { nodes: nodes.map(describe), edges };
	},
};

// ---------------------------------------------------------------- start
addAgent({ id: 'root', name: 'root', role: 'coordinator', ownerId: 'corral', state: 'idle' });

try {
	fs.unlinkSync(opt.socket);
} catch {}
const server = net.createServer((sock) => {
	const c = new Conn('client', (s) => { if (!sock.destroyed) sock.write(s); });
	let buf = '';
	let chain = Promise.resolve();
	sock.setEncoding('utf8');
	sock.on('data', (d) => {
		buf += d;
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			const line = buf.slice(0, i);
			buf = buf.slice(i + 1);
			if (!line.trim())
				continue;
			let m;
			try {
				m = JSON.parse(line);
			} catch {
				c.send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error',
				    data: { category: 'protocol', retryable: false } } });
				continue;
			}
			// One request at a time per connection, in order.
			chain = chain.then(() => onFrame(c, m));
		}
	});
	const bye = () => {
		if (!conns.has(c))
			return;
		c.close();
		if (c.participantId)
			emit('participant_disconnected', c.participantId, { participantId: c.participantId,
			    participantType: 'client' });
	};
	sock.on('close', bye);
	sock.on('error', bye);
});
server.listen(opt.socket, () => {
	fs.chmodSync(opt.socket, 0o600);
	console.error(`fake-server: listening on ${opt.socket}${opt.faults.size ? ` faults=${[...opt.faults].join(',')}` : ''}`);
});
const shutdown = () => {
	for (const a of agents.values())
		if (a.proc && a.proc.exitCode === null)
			a.proc.kill('SIGKILL');
	try {
		fs.unlinkSync(opt.socket);
	} catch {}
	process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
