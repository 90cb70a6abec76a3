#!/usr/bin/env node
// client.mjs: drive a MAP server over a Unix stream socket with the real
// SDK's ClientConnection, step by step, validating every frame the server
// sends (lib/tap.mjs, lib/schemas.mjs) and what each step means.
//
//   node client.mjs --socket PATH [options] STEP...
//   node client.mjs --socket PATH --scenario basic --spawn-name echo
//
// Prints one line per step: "ok STEP detail" or "FAIL STEP: reason", then
// "N passed, N failed".  Exit 0 when all passed, 1 when one failed, 2 on a
// usage error, 77 when the SDK is not installed (tests/map/install.sh).
// Stops at the first failure unless --keep-going.
//
// Options:
//   --socket PATH       the server's socket (required)
//   --timeout MS        SDK request timeout (default 5000)
//   --wait MS           how long wait-* steps wait (default 5000)
//   --name NAME         the client's name in map/connect (default corral-map-harness)
//   --scenario NAME     run a preset step list (basic, request, tree, full) after
//                       any STEP given first; --spawn-name names the catalogue
//                       entry it spawns (default echo), --tree-name the entry
//                       whose agent spawns a child of its own (default sdk-agent)
//   --keep-going        run every step even after a failure
//   --trace             print every frame on stderr
//
// Steps (ID may be @first: the first agent listed, @spawned: the last spawned,
// @child: found by wait-child, @self: our participant id):
//   connect                 map/connect
//   list                    map/agents/list (sets @first)
//   get:ID                  map/agents/get, the agent is ID
//   get-missing             map/agents/get of an unknown id: error 2001, category routing
//   unknown-method          an unknown method: error -32601
//   subscribe[:T1,T2..]     map/subscribe with eventTypes T1,T2.. (none: no filter)
//   spawn:NAME[:TEXT]       map/agents/spawn {name: NAME} (sets @spawned); with TEXT,
//                           an initialMessage whose payload is an execute envelope
//   send:ID[:TEXT]          map/send {to: {agent: ID}}, payload an envelope;
//                           delivered must name ID
//   request:ID[:TEXT]       ClientConnection.request(): map/send with
//                           expectsResponse, then the reply through a
//                           message_delivered event with its correlationId
//   wait:TYPE[:ID]          wait for an event of TYPE (either naming style)
//                           about ID (data.agentId or source) on the subscription
//   wait-child:ID           poll map/agents/list until an agent has parent ID (sets @child)
//   wait-state:ID:S1|S2..   poll map/agents/get until ID is in one of the states
//                           ("gone": get answers 2001)
//   stop:ID                 map/agents/stop: {stopping: true, agent} in state
//                           stopping or stopped
//   suspend:ID, resume:ID   map/agents/suspend, map/agents/resume
//   replay:after-first      map/replay after the subscription's first event:
//                           exactly the later events, in order
//   replay:all              map/replay from the start: every event seen, in order
//   graph                   map/structure/graph: edges join listed nodes, one
//                           parent-child edge per node with a listed parent
//   unsubscribe             map/unsubscribe of the subscription
//   scope-create:S          map/scopes/create {scopeId: S}: a Scope (SDK schema)
//   scope-join:S:ID         map/scopes/join: the Agent answered lists S in scopes
//   scope-leave:S:ID        map/scopes/leave: the Agent no longer lists S
//   scope-members:S:ID[:no] map/scopes/members: ID among them (with no: not)
//   scope-list:S            map/scopes/list: S among them, each a Scope
//   scope-send:S:ID         sendToScope: delivered names ID (and not us)
//   scope-missing           sendToScope of an unknown scope: error 2002
//   spawn-scope:NAME:S      map/agents/spawn {name: NAME, scopes: [S]}: the Agent
//                           answered (SDK schema) lists S in scopes (sets @spawned)
//   spawn-scope-missing:NAME  map/agents/spawn into an unknown scope: error 2002,
//                           and no agent of NAME more than before
//   find-capability:C:ID    map/agents/list {filter: {capabilityId: C}}: ID
//                           among them, each with capability C
//   session-request:ID:S    request() of ID with an envelope of session S
//   session-list:S          listSessions(): the run's session first, then S,
//                           each a SessionInfo
//   session-load:S:ID[:WHO] loadSession(S): restored, ID and @self (or WHO) among
//                           its participants, a request and its result in history
//   session-close:S         closeSession(S): a SessionInfo with closedAt
//   task-create:T           createTask({task: {id: T, title, description}}):
//                           a MAPTask with status open
//   task-assign:T:ID        assignTask(T, ID): in_progress, assignee ID
//   task-list:T:S[:A]       listTasks() until T has status S (a MAPTask each,
//                           meta.corral with the registry's own status), and
//                           with A, assignee A
//   task-filter:ID          listTasks({filter: {assignee: ID}}): only ID's
//   disconnect              map/disconnect
//   sleep:MS
// A final "frames" step reports any frame-level violation not yet reported.
import net from 'node:net';
import { Readable, Writable } from 'node:stream';
import { loadSdk, SdkMissing } from './lib/sdk.mjs';
import { buildSchemas, issues, typeMatches, envelopeProblem } from './lib/schemas.mjs';
import { FrameChecker, tapStream } from './lib/tap.mjs';

const SCENARIOS = {
	basic: (o) => ['connect', 'list', 'get:@first', 'get-missing', 'unknown-method',
	    'subscribe', `spawn:${o.spawn}`, 'wait:agent_registered:@spawned', 'send:@spawned',
	    'wait:message_delivered', 'graph', 'replay:after-first', 'replay:all',
	    'stop:@spawned', 'wait-state:@spawned:stopped|gone', 'unsubscribe', 'disconnect'],
	request: (o) => ['connect', 'subscribe:agent.registered', `spawn:${o.spawn}`,
	    'wait:agent_registered:@spawned', 'request:@spawned:are you there', 'stop:@spawned',
	    'unsubscribe', 'disconnect'],
	tree: (o) => ['connect', 'subscribe:agent_registered,agent_state_changed',
	    `spawn:${o.tree}:build a tree`, 'wait-child:@spawned', 'get:@child', 'graph',
	    'request:@child:hello child', 'stop:@spawned', 'wait-state:@child:stopped|gone',
	    'replay:after-first', 'unsubscribe', 'disconnect'],
};
SCENARIOS.full = (o) => [...SCENARIOS.basic(o).slice(0, -1), 'subscribe',
    ...SCENARIOS.request(o).slice(2, -2), ...SCENARIOS.tree(o).slice(2, -2), 'unsubscribe', 'disconnect'];

function usage(msg) {
	if (msg)
		console.error(`client.mjs: ${msg}`);
	console.error('usage: node client.mjs --socket PATH [--timeout MS] [--wait MS] [--name N] [--scenario basic|request|tree|full] [--spawn-name N] [--tree-name N] [--keep-going] [--trace] STEP...');
	process.exit(2);
}

const opt = { timeout: 5000, wait: 5000, name: 'corral-map-harness', spawn: 'echo', tree: 'sdk-agent',
    keepGoing: false, trace: false, steps: [] };
{
	const a = process.argv.slice(2);
	for (let i = 0; i < a.length; i++) {
		const v = () => (i + 1 < a.length ? a[++i] : usage(`${a[i]} needs a value`));
		switch (a[i]) {
		case '--socket': opt.socket = v(); break;
		case '--timeout': opt.timeout = Number(v()); break;
		case '--wait': opt.wait = Number(v()); break;
		case '--name': opt.name = v(); break;
		case '--scenario': opt.scenario = v(); break;
		case '--spawn-name': opt.spawn = v(); break;
		case '--tree-name': opt.tree = v(); break;
		case '--keep-going': opt.keepGoing = true; break;
		case '--trace': opt.trace = true; break;
		case '-h': case '--help': usage();
		default:
			if (a[i].startsWith('--'))
				usage(`unknown option ${a[i]}`);
			opt.steps.push(a[i]);
		}
	}
	if (!opt.socket)
		usage('--socket is required');
	if (opt.scenario) {
		if (!SCENARIOS[opt.scenario])
			usage(`unknown scenario ${opt.scenario}`);
		opt.steps.push(...SCENARIOS[opt.scenario](opt));
	}
	if (opt.steps.length === 0)
		usage('no steps');
}

let loaded;
try {
	loaded = await loadSdk();
} catch (e) {
	if (e instanceof SdkMissing) {
		console.log(`SKIPPED: ${e.message}`);
		process.exit(77);
	}
	throw e;
}
const { sdk, z } = loaded;
const S = buildSchemas(sdk, z);
const checker = new FrameChecker(S, sdk);

class StepFail extends Error {}
const fail = (m) => { throw new StepFail(m); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function envelope(text) {
	return { protocol: 'multiagent-1.0', role: 'user', intent: 'execute', task: text,
	    content: { type: 'text', text } };
}

// What a request's error was, for messages.
function errText(e) {
	if (e instanceof sdk.MAPRequestError)
		return `error ${e.code} ${JSON.stringify(e.message)}${e.data ? ` data ${JSON.stringify(e.data)}` : ''}`;
	return e && e.message ? e.message : String(e);
}

// Connect the socket; the SDK's ClientConnection over the SDK's
// ndJsonStream, with the checker in between.
const sock = net.createConnection(opt.socket);
const sockReady = new Promise((resolve, reject) => {
	sock.once('connect', resolve);
	sock.once('error', reject);
});
let client;
const ctx = { vars: {}, sdkEvents: [], sub: null, subFilter: undefined, subId: null };

async function connectSocket() {
	await sockReady;
	const raw = sdk.ndJsonStream(Readable.toWeb(sock), Writable.toWeb(sock));
	if (opt.trace) {
		checker.listeners.add((m) => console.error(`<- ${JSON.stringify(m)}`));
	}
	const stream = tapStream(raw, checker);
	if (opt.trace) {
		const w = stream.writable;
		const inner = w.getWriter();
		stream.writable = new WritableStream({
			write(m) { console.error(`-> ${JSON.stringify(m)}`); return inner.write(m); },
			close() { return inner.close(); },
			abort(r) { return inner.abort(r); },
		});
	}
	client = new sdk.ClientConnection(stream, { name: opt.name, defaultTimeout: opt.timeout });
}

function resolveId(s) {
	if (s && s.startsWith('@')) {
		const v = ctx.vars[s.slice(1)];
		if (v === undefined)
			fail(`${s} is not set (an earlier step sets it)`);
		return v;
	}
	return s;
}

// Fail unless t has MAPTask's shape (the SDK ships no schema for it).
function taskShape(t) {
	const st = ['open', 'in_progress', 'blocked', 'completed', 'failed'];
	if (!t || typeof t.id !== 'string' || !st.includes(t.status) ||
	    (t.assignee !== undefined && t.assignee !== null && typeof t.assignee !== 'string') ||
	    (t.title !== undefined && typeof t.title !== 'string') ||
	    (t.meta !== undefined && (typeof t.meta !== 'object' || t.meta === null)))
		fail(`not a MAPTask: ${JSON.stringify(t)}`);
}

function eventAbout(ev, id) {
	return id === undefined || ev.source === id || (ev.data && ev.data.agentId === id);
}

const steps = {
	async connect() {
		const r = await client.connect();
		ctx.vars.self = r.participantId;
		ctx.vars.session = r.sessionId;
		return `session=${r.sessionId} participant=${r.participantId}`;
	},
	async list() {
		const r = await client.listAgents();
		const ids = r.agents.map((a) => a.id);
		if (new Set(ids).size !== ids.length)
			fail(`duplicate agent ids: ${ids.join(',')}`);
		if (ids.length)
			ctx.vars.first = ids[0];
		return `n=${ids.length} ${ids.join(',')}`;
	},
	async get(arg) {
		const id = resolveId(arg);
		const r = await client.getAgent(id);
		if (!r || !r.agent || r.agent.id !== id)
			fail(`asked for ${id}, got ${JSON.stringify(r && r.agent && r.agent.id)}`);
		return `${id} state=${r.agent.state}${r.agent.parent ? ` parent=${r.agent.parent}` : ''}`;
	},
	async 'get-missing'() {
		try {
			await client.getAgent('corral-map-harness-no-such-agent');
		} catch (e) {
			if (!(e instanceof sdk.MAPRequestError))
				fail(errText(e));
			if (e.code !== sdk.ERROR_CODES.AGENT_NOT_FOUND)
				fail(`want error ${sdk.ERROR_CODES.AGENT_NOT_FOUND} (AGENT_NOT_FOUND), got ${errText(e)}`);
			if (!e.data || e.data.category !== 'routing')
				fail(`want data.category routing, got ${JSON.stringify(e.data)}`);
			return `${e.code} ${e.message}`;
		}
		fail('an unknown agent id was answered with a result');
	},
	async 'unknown-method'() {
		try {
			await client.callExtension('map/corral-harness/no-such-method', {});
		} catch (e) {
			if (!(e instanceof sdk.MAPRequestError) || e.code !== -32601)
				fail(`want error -32601, got ${errText(e)}`);
			return `${e.code} ${e.message}`;
		}
		fail('an unknown method was answered with a result');
	},
	async subscribe(arg) {
		const filter = arg ? { eventTypes: arg.split(',') } : undefined;
		if (ctx.sub)
			await ctx.sub.unsubscribe();
		const sub = await client.subscribe(filter);
		ctx.sub = sub;
		ctx.subId = sub.id;
		ctx.subFilter = filter;
		ctx.sdkEvents = [];
		// The SDK buffers what arrives before anyone iterates; the pump
		// keeps what a user of the SDK would see.
		(async () => {
			for await (const ev of sub)
				ctx.sdkEvents.push(ev);
		})();
		return `id=${sub.id}${filter ? ` eventTypes=${arg}` : ''}`;
	},
	async spawn(arg) {
		const [name, ...rest] = arg.split(':');
		const text = rest.join(':');
		const params = { name };
		if (text) {
			params.initialMessage = { id: `harness-${process.pid}-${Date.now()}`,
			    from: ctx.vars.self ?? 'client', to: { agent: name }, timestamp: Date.now(),
			    payload: envelope(text), meta: { expectsResponse: true } };
		}
		// ClientConnection has no spawn(): a client calls the method raw
		// (SPEC.md, "map/agents/spawn").
		const r = await client.callExtension('map/agents/spawn', params);
		if (!r || !r.agent || typeof r.agent.id !== 'string')
			fail(`no agent in ${JSON.stringify(r)}`);
		if (r.agent.parent !== undefined)
			fail(`a client's spawn has no parent, got parent ${r.agent.parent}`);
		if (ctx.vars.self && r.agent.ownerId !== ctx.vars.self)
			fail(`ownerId ${r.agent.ownerId}, want the client's participant ${ctx.vars.self}`);
		ctx.vars.spawned = r.agent.id;
		return `id=${r.agent.id} state=${r.agent.state}${r.messageId ? ` messageId=${r.messageId}` : ''}`;
	},
	async send(arg) {
		const [idArg, ...rest] = arg.split(':');
		const id = resolveId(idArg);
		const r = await client.send({ agent: id }, envelope(rest.join(':') || 'harness message'),
		    { correlationId: `harness-send-${Date.now()}` });
		if (!Array.isArray(r.delivered) || !r.delivered.includes(id))
			fail(`delivered ${JSON.stringify(r.delivered)} does not name ${id}`);
		return `messageId=${r.messageId} delivered=${r.delivered.join(',')}`;
	},
	async request(arg) {
		const [idArg, ...rest] = arg.split(':');
		const id = resolveId(idArg);
		const reply = await client.request({ agent: id }, envelope(rest.join(':') || 'harness request'),
		    { timeout: opt.wait });
		const m = S.Message.safeParse(reply);
		if (!m.success)
			fail(`reply message: ${issues(m)}`);
		if (reply.from !== id)
			fail(`reply from ${reply.from}, want ${id}`);
		if (!reply.meta || reply.meta.isResult !== true)
			fail('reply meta.isResult is not true');
		const p = envelopeProblem(reply.payload);
		if (p)
			fail(`reply payload is not an envelope: ${p}`);
		return `reply ${reply.id} from ${reply.from} intent=${reply.payload.intent}`;
	},
	async wait(arg) {
		const [type, idArg] = arg.split(':');
		if (!ctx.sub)
			fail('no subscription (subscribe first)');
		const id = idArg === undefined ? undefined : resolveId(idArg);
		const deadline = Date.now() + opt.wait;
		for (;;) {
			const ev = ctx.sdkEvents.find((e) => typeMatches(e.type, [type]) && eventAbout(e, id));
			if (ev)
				return `${ev.type} id=${ev.id}${id ? ` about ${id}` : ''}`;
			if (Date.now() > deadline)
				fail(`no ${type} event${id ? ` about ${id}` : ''} within ${opt.wait} ms; got ${ctx.sdkEvents.map((e) => e.type).join(',') || 'none'}`);
			await sleep(20);
		}
	},
	async 'scope-create'(arg) {
		const r = await client.callExtension('map/scopes/create', { scopeId: arg });
		const v = sdk.ScopeSchema.safeParse(r.scope);
		if (!v.success)
			fail(`scope: ${issues(v)}`);
		if (r.scope.id !== arg)
			fail(`created ${r.scope.id}, asked for ${arg}`);
		return `id=${r.scope.id}`;
	},
	async 'scope-join'(arg) {
		const [scope, idArg] = arg.split(':');
		const id = resolveId(idArg);
		const r = await client.callExtension('map/scopes/join', { scopeId: scope, agentId: id });
		const a = S.Agent.safeParse(r.agent);
		if (!a.success)
			fail(`agent: ${issues(a)}`);
		if (!(r.agent.scopes || []).includes(scope))
			fail(`${id}.scopes is ${JSON.stringify(r.agent.scopes)}, want ${scope} in it`);
		return `${id} in ${r.agent.scopes.join(',')}`;
	},
	async 'scope-leave'(arg) {
		const [scope, idArg] = arg.split(':');
		const id = resolveId(idArg);
		const r = await client.callExtension('map/scopes/leave', { scopeId: scope, agentId: id });
		if ((r.agent.scopes || []).includes(scope))
			fail(`${id} still lists ${scope}`);
		return `${id} left ${scope}`;
	},
	async 'scope-members'(arg) {
		const [scope, idArg, no] = arg.split(':');
		const id = resolveId(idArg);
		const r = await client.getScopeMembers(scope);
		if (!Array.isArray(r.members) || r.members.includes(id) !== (no === undefined))
			fail(`members of ${scope}: ${JSON.stringify(r.members)}, want ${id} ${no ? 'not ' : ''}among them`);
		return `${scope}: ${r.members.join(',')}`;
	},
	async 'scope-list'(arg) {
		const r = await client.listScopes();
		for (const sc of r.scopes) {
			const v = sdk.ScopeSchema.safeParse(sc);
			if (!v.success)
				fail(`scope ${sc.id}: ${issues(v)}`);
		}
		if (!r.scopes.some((sc) => sc.id === arg))
			fail(`no ${arg} in ${JSON.stringify(r.scopes.map((sc) => sc.id))}`);
		return `n=${r.scopes.length}`;
	},
	async 'scope-send'(arg) {
		const [scope, idArg] = arg.split(':');
		const id = resolveId(idArg);
		const r = await client.sendToScope(scope, envelope('harness topic message'));
		if (!Array.isArray(r.delivered) || !r.delivered.includes(id))
			fail(`delivered ${JSON.stringify(r.delivered)} does not name ${id}`);
		if (r.delivered.includes(ctx.vars.self))
			fail('the sender got its own message');
		return `delivered=${r.delivered.join(',')}`;
	},
	async 'spawn-scope'(arg) {
		const [name, scope] = arg.split(':');
		const r = await client.callExtension('map/agents/spawn', { name, scopes: [scope] });
		const a = S.Agent.safeParse(r && r.agent);
		if (!a.success)
			fail(`agent: ${issues(a)}`);
		if (!(r.agent.scopes || []).includes(scope))
			fail(`${r.agent.id}.scopes is ${JSON.stringify(r.agent.scopes)}, want ${scope} in it`);
		ctx.vars.spawned = r.agent.id;
		return `${r.agent.id} in ${r.agent.scopes.join(',')}`;
	},
	async 'spawn-scope-missing'(name) {
		const count = async () => (await client.listAgents()).agents
		    .filter((a) => a.name === name || a.id.startsWith(`${name}-`) || a.id === name).length;
		const before = await count();
		try {
			await client.callExtension('map/agents/spawn', { name,
			    scopes: ['corral-harness-no-such-scope'] });
		} catch (e) {
			if (!(e instanceof sdk.MAPRequestError) || e.code !== sdk.ERROR_CODES.SCOPE_NOT_FOUND)
				fail(`want error 2002, got ${errText(e)}`);
			const after = await count();
			if (after !== before)
				fail(`${after} agents of ${name} after a refused spawn, ${before} before`);
			return `${e.code} ${e.message}`;
		}
		fail('a spawn into an unknown scope was answered with a result');
	},
	async 'scope-missing'() {
		try {
			await client.sendToScope('corral-harness-no-such-scope', envelope('nobody'));
		} catch (e) {
			if (!(e instanceof sdk.MAPRequestError) || e.code !== sdk.ERROR_CODES.SCOPE_NOT_FOUND)
				fail(`want error 2002, got ${errText(e)}`);
			return `${e.code} ${e.message}`;
		}
		fail('a send to an unknown scope was answered with a result');
	},
	async 'find-capability'(arg) {
		const [cap, idArg] = arg.split(':');
		const id = resolveId(idArg);
		const r = await client.listAgents({ filter: { capabilityId: cap } });
		if (!r.agents.some((a) => a.id === id))
			fail(`no ${id} among ${JSON.stringify(r.agents.map((a) => a.id))}`);
		for (const a of r.agents) {
			const ids = ((a.capabilityDescriptor || {}).capabilities || []).map((c) => c.id);
			if (!ids.includes(cap))
				fail(`${a.id} has no capability ${cap}: ${JSON.stringify(a.capabilityDescriptor)}`);
		}
		return `${r.agents.map((a) => a.id).join(',')}`;
	},
	async 'session-request'(arg) {
		const [idArg, sess] = arg.split(':');
		const id = resolveId(idArg);
		const reply = await client.request({ agent: id },
		    { ...envelope('in a session'), session: sess }, { timeout: opt.wait });
		if (!reply.meta || reply.meta.isResult !== true)
			fail('reply meta.isResult is not true');
		return `reply from ${reply.from}`;
	},
	async 'session-list'(arg) {
		const r = await client.listSessions();
		for (const x of r.sessions) {
			const v = S.SessionInfo.safeParse(x);
			if (!v.success)
				fail(`session ${x.id}: ${issues(v)}`);
		}
		if (r.sessions[0].id !== ctx.vars.session)
			fail(`first session ${r.sessions[0].id}, want the run's ${ctx.vars.session}`);
		if (!r.sessions.some((x) => x.id === arg))
			fail(`no ${arg} in ${JSON.stringify(r.sessions.map((x) => x.id))}`);
		return `n=${r.sessions.length}`;
	},
	async 'session-load'(arg) {
		const [sess, idArg, whoArg] = arg.split(':');
		const id = resolveId(idArg);
		const who = whoArg ?? ctx.vars.self;
		const r = await client.loadSession(sess);
		if (r.sessionId !== sess || r.restored !== true)
			fail(`load answered ${JSON.stringify(r)}`);
		const d = r._meta && r._meta.corral;
		if (!d || !d.participants.includes(id) || !d.participants.includes(who))
			fail(`participants ${JSON.stringify(d && d.participants)}, want ${id} and ${who}`);
		const kinds = d.history.map((h) => h.kind);
		if (kinds.indexOf('request') < 0 || kinds.indexOf('result') < kinds.indexOf('request'))
			fail(`history ${JSON.stringify(kinds)}, want a request then its result`);
		return `participants=${d.participants.join(',')} history=${kinds.join(',')}`;
	},
	async 'session-close'(arg) {
		const r = await client.closeSession(arg);
		const v = S.SessionInfo.safeParse(r.session);
		if (!v.success)
			fail(`session: ${issues(v)}`);
		if (r.session.id !== arg || typeof r.session.closedAt !== 'number')
			fail(`closed ${JSON.stringify(r.session)}`);
		return `closedAt=${r.session.closedAt}`;
	},
	async 'task-create'(arg) {
		const r = await client.createTask({ task: { id: arg, title: `harness task ${arg}`,
		    description: 'a task from the MAP harness' } });
		taskShape(r.task);
		if (r.task.id !== arg || r.task.status !== 'open')
			fail(`created ${JSON.stringify(r.task)}`);
		return `id=${r.task.id} status=${r.task.status}`;
	},
	async 'task-assign'(arg) {
		const [tid, idArg] = arg.split(':');
		const id = resolveId(idArg);
		const r = await client.assignTask(tid, id);
		taskShape(r.task);
		if (r.task.assignee !== id || r.task.status !== 'in_progress')
			fail(`assigned ${JSON.stringify(r.task)}`);
		return `assignee=${r.task.assignee} status=${r.task.status}`;
	},
	async 'task-list'(arg) {
		const [tid, want, who] = arg.split(':');
		const deadline = Date.now() + opt.wait;
		for (;;) {
			const r = await client.listTasks();
			if (typeof r.hasMore !== 'boolean')
				fail(`hasMore ${JSON.stringify(r.hasMore)}`);
			r.tasks.forEach(taskShape);
			const t = r.tasks.find((x) => x.id === tid);
			if (t && t.status === want) {
				if (who !== undefined && t.assignee !== who)
					fail(`${tid} is assigned to ${t.assignee}, want ${who}`);
				return `${tid} ${t.status} (${t.meta.corral.status}) of ${r.tasks.length}`;
			}
			if (Date.now() > deadline)
				fail(`${tid} is ${t ? t.status : 'missing'}, want ${want}`);
			await sleep(50);
		}
	},
	async 'task-filter'(arg) {
		const id = resolveId(arg);
		const r = await client.listTasks({ filter: { assignee: id } });
		if (!r.tasks.length || r.tasks.some((t) => t.assignee !== id))
			fail(`tasks of ${id}: ${JSON.stringify(r.tasks.map((t) => [t.id, t.assignee]))}`);
		return `n=${r.tasks.length}`;
	},
	async 'wait-child'(arg) {
		const id = resolveId(arg);
		const deadline = Date.now() + opt.wait;
		for (;;) {
			const r = await client.listAgents();
			const c = r.agents.find((a) => a.parent === id);
			if (c) {
				ctx.vars.child = c.id;
				const p = r.agents.find((a) => a.id === id);
				if (p && Array.isArray(p.children) && !p.children.includes(c.id))
					fail(`${c.id} has parent ${id} but ${id}.children is ${JSON.stringify(p.children)}`);
				return `${c.id} parent=${id} state=${c.state}`;
			}
			if (Date.now() > deadline)
				fail(`no agent with parent ${id} within ${opt.wait} ms`);
			await sleep(100);
		}
	},
	async 'wait-state'(arg) {
		const [idArg, state] = arg.split(':');
		const id = resolveId(idArg);
		const want = state.split('|');
		const deadline = Date.now() + opt.wait;
		let last;
		for (;;) {
			try {
				last = (await client.getAgent(id)).agent.state;
			} catch (e) {
				// "gone": corral no longer lists it (2001).
				last = e instanceof sdk.MAPRequestError && e.code === 2001 ? 'gone' : errText(e);
			}
			if (want.includes(last))
				return `${id} ${last}`;
			if (Date.now() > deadline)
				fail(`${id} is ${last} after ${opt.wait} ms, want ${state}`);
			await sleep(50);
		}
	},
	async stop(arg) {
		const id = resolveId(arg);
		const r = await client.stopAgent(id, { reason: 'corral map harness' });
		if (r.stopping !== true)
			fail(`stopping is ${JSON.stringify(r.stopping)}`);
		if (!r.agent)
			fail('no agent in the result (corral sends it: SPEC.md)');
		if (r.agent.id !== id)
			fail(`result agent is ${r.agent.id}, want ${id}`);
		if (!['stopping', 'stopped'].includes(r.agent.state))
			fail(`result agent is ${r.agent.state}, want stopping or stopped`);
		return `${id} state=${r.agent.state}`;
	},
	async suspend(arg) {
		const id = resolveId(arg);
		const r = await client.suspendAgent(id, 'corral map harness');
		if (r.suspended !== true)
			fail(`suspended is ${JSON.stringify(r.suspended)}`);
		return `${id} state=${r.agent && r.agent.state}`;
	},
	async resume(arg) {
		const id = resolveId(arg);
		const r = await client.resumeAgent(id);
		if (r.resumed !== true)
			fail(`resumed is ${JSON.stringify(r.resumed)}`);
		return `${id} state=${r.agent && r.agent.state}`;
	},
	async replay(arg) {
		const s = ctx.subId && checker.subs.get(ctx.subId);
		if (!s)
			fail('no subscription (subscribe first)');
		const seen = s.records.map((r) => r.eventId);
		let params, want;
		if (arg === 'after-first') {
			if (seen.length < 2)
				fail(`the subscription has ${seen.length} event(s); after-first needs 2`);
			params = { afterEventId: seen[0], limit: 1000 };
			if (ctx.subFilter)
				params.filter = ctx.subFilter;
			want = seen.slice(1);
		} else if (arg === 'all' || arg === undefined) {
			if (seen.length < 1)
				fail('the subscription has no event to look for');
			params = { limit: 1000 };
			want = seen;
		} else
			fail(`unknown replay mode ${arg}`);
		const r = await client.replay(params);
		const got = r.events.map((e) => e.eventId);
		for (let i = 1; i < got.length; i++)
			if (!(got[i] > got[i - 1]))
				fail(`replayed eventIds not increasing: ${got[i - 1]} then ${got[i]}`);
		if (params.afterEventId && got.some((g) => g <= params.afterEventId))
			fail(`replay after ${params.afterEventId} returned ${got.find((g) => g <= params.afterEventId)}`);
		if (params.filter && params.filter.eventTypes) {
			const odd = r.events.find((e) => !typeMatches(e.event.type, params.filter.eventTypes));
			if (odd)
				fail(`replay filtered on ${params.filter.eventTypes} returned a ${odd.event.type}`);
		}
		// Every event the subscription saw is there, in order (replay may
		// have more: later events, or ones the subscription's filter left out).
		let j = 0;
		for (const g of got)
			if (j < want.length && g === want[j])
				j++;
		if (j < want.length && !r.hasMore)
			fail(`replay lacks event ${want[j]} seen on the subscription (${got.length} returned)`);
		// The same event replayed and delivered is the same event.
		const live = new Map(s.records.map((x) => [x.eventId, x.event]));
		for (const e of r.events) {
			const l = live.get(e.eventId);
			if (l && JSON.stringify(l) !== JSON.stringify(e.event))
				fail(`event ${e.eventId} replayed differs from the one delivered`);
		}
		return `${got.length} events hasMore=${r.hasMore}${r.totalCount !== undefined ? ` totalCount=${r.totalCount}` : ''}`;
	},
	async graph() {
		const r = await client.getStructureGraph();
		const ids = new Set(r.nodes.map((n) => n.id));
		if (ids.size !== r.nodes.length)
			fail('duplicate node ids');
		for (const e of r.edges)
			if (!ids.has(e.from) || !ids.has(e.to))
				fail(`edge ${e.from} -> ${e.to} names an unlisted node`);
		for (const n of r.nodes) {
			if (n.parent === undefined || !ids.has(n.parent))
				continue;
			const k = r.edges.filter((e) => e.type === 'parent-child' && e.from === n.parent && e.to === n.id);
			if (k.length !== 1)
				fail(`node ${n.id} with parent ${n.parent} has ${k.length} parent-child edges from it`);
		}
		return `${r.nodes.length} nodes ${r.edges.length} edges`;
	},
	async unsubscribe() {
		if (!ctx.sub)
			fail('no subscription');
		await ctx.sub.unsubscribe();
		const s = checker.subs.get(ctx.subId);
		// What the SDK's iterator gave is what the server sent, in order
		// (the checker has already flagged what would make the SDK drop one).
		const got = ctx.sdkEvents.map((e) => e.id);
		const sent = s ? s.records.map((r) => r.event.id) : [];
		if (got.some((id, k) => id !== sent[k]))
			fail(`the SDK yielded ${got.join(',')} for events sent as ${sent.join(',')}`);
		ctx.sub = null;
		return `${ctx.subId} after ${sent.length} events`;
	},
	async disconnect() {
		await client.disconnect('corral map harness done');
		return 'closed';
	},
	async sleep(arg) {
		await sleep(Number(arg));
		return `${arg} ms`;
	},
};

let pass = 0, nfail = 0, reported = 0;
function newViolations() {
	const v = checker.violations.slice(reported);
	reported = checker.violations.length;
	return v;
}

try {
	await connectSocket();
} catch (e) {
	console.log(`FAIL socket: ${opt.socket}: ${e.message}`);
	console.log('0 passed, 1 failed');
	process.exit(1);
}

for (const step of opt.steps) {
	const i = step.indexOf(':');
	const name = i < 0 ? step : step.slice(0, i);
	const arg = i < 0 ? undefined : step.slice(i + 1);
	const fn = steps[name];
	let line;
	if (!fn) {
		line = `FAIL ${step}: unknown step`;
	} else {
		try {
			const detail = await fn(arg);
			// Let frames that came with the answer be checked with it.
			await sleep(10);
			const v = newViolations();
			line = v.length ? `FAIL ${step}: ${v.join(' | ')}` : `ok ${step}${detail ? ` ${detail}` : ''}`;
		} catch (e) {
			await sleep(10);
			const v = newViolations();
			line = `FAIL ${step}: ${e instanceof StepFail ? e.message : errText(e)}${v.length ? ` | ${v.join(' | ')}` : ''}`;
		}
	}
	console.log(line);
	if (line.startsWith('ok '))
		pass++;
	else {
		nfail++;
		if (!opt.keepGoing)
			break;
	}
}

if (nfail === 0) {
	await sleep(50);
	const v = newViolations();
	if (v.length) {
		console.log(`FAIL frames: ${v.join(' | ')}`);
		nfail++;
	} else {
		console.log(`ok frames ${checker.frames} checked`);
		pass++;
	}
}
console.log(`${pass} passed, ${nfail} failed`);
sock.destroy();
process.exit(nfail ? 1 : 0);
