#!/usr/bin/env node
// sdk-facts.mjs: re-checks, against the installed SDK, the facts SPEC.md
// states about it (each "[Fn]" there is a check here), so that a new pin
// in package.json shows at once which of them no longer hold.  In-process:
// the SDK's own createStreamPair() plays the server, no socket.
//
//   node sdk-facts.mjs      prints "ok Fn what" / "FAIL Fn what: why", then
//                           "N passed, N failed"; exit 0, 1, or 77 (no SDK)
import { loadSdk, SdkMissing } from './lib/sdk.mjs';

let sdk, serverMod;
try {
	({ sdk } = await loadSdk());
	const { SDK_DIR } = await import('./lib/sdk.mjs');
	serverMod = await import(new URL(`file://${SDK_DIR}/dist/server.js`).href);
} catch (e) {
	if (e instanceof SdkMissing) {
		console.log(`SKIPPED: ${e.message}`);
		process.exit(77);
	}
	throw e;
}

let pass = 0, fail = 0;
async function fact(id, what, fn) {
	try {
		const r = await fn();
		if (r === true || r === undefined) {
			pass++;
			console.log(`ok ${id} ${what}`);
		} else {
			fail++;
			console.log(`FAIL ${id} ${what}: ${r}`);
		}
	} catch (e) {
		fail++;
		console.log(`FAIL ${id} ${what}: ${e.stack || e}`);
	}
}
const same = (got, want) => JSON.stringify(got) === JSON.stringify(want) ? true :
    `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Capture console.warn/console.error while fn runs.
async function captured(fn) {
	const lines = [];
	const w = console.warn, e = console.error;
	console.warn = console.error = (...a) => lines.push(a.map(String).join(' '));
	try {
		await fn(lines);
	} finally {
		console.warn = w;
		console.error = e;
	}
	return lines;
}

// A fake server on the other end of createStreamPair(): next() reads what
// the SDK wrote, send() writes to it.
function pair() {
	const [cs, ss] = sdk.createStreamPair();
	const rd = ss.readable.getReader();
	const wr = ss.writable.getWriter();
	return { cs, next: async () => (await rd.read()).value, send: (m) => wr.write(m) };
}
const ok = (id, result) => ({ jsonrpc: '2.0', id, result });
const CONNECT_RESULT = { protocolVersion: 1, sessionId: 's', participantId: 'p', capabilities: {} };

await fact('F1', 'PROTOCOL_VERSION is 1', () => same(sdk.PROTOCOL_VERSION, 1));

await fact('F2', 'ERROR_CODES (SPEC.md, "Errors")', () => same(sdk.ERROR_CODES, {
	PARSE_ERROR: -32700, INVALID_REQUEST: -32600, METHOD_NOT_FOUND: -32601, INVALID_PARAMS: -32602,
	INTERNAL_ERROR: -32603,
	AUTH_REQUIRED: 1000, AUTH_FAILED: 1001, TOKEN_EXPIRED: 1002, PERMISSION_DENIED: 1003,
	INSUFFICIENT_SCOPE: 1004, METHOD_NOT_SUPPORTED: 1005, INVALID_CREDENTIALS: 1006,
	ADDRESS_NOT_FOUND: 2000, AGENT_NOT_FOUND: 2001, SCOPE_NOT_FOUND: 2002, DELIVERY_FAILED: 2003,
	ADDRESS_AMBIGUOUS: 2004,
	AGENT_EXISTS: 3000, STATE_INVALID: 3001, NOT_RESPONDING: 3002, TERMINATED: 3003, SPAWN_FAILED: 3004,
	EXHAUSTED: 4000, RATE_LIMITED: 4001, QUOTA_EXCEEDED: 4002,
	FEDERATION_UNAVAILABLE: 5000, FEDERATION_SYSTEM_NOT_FOUND: 5001, FEDERATION_AUTH_FAILED: 5002,
	FEDERATION_ROUTE_REJECTED: 5003, FEDERATION_LOOP_DETECTED: 5010, FEDERATION_MAX_HOPS_EXCEEDED: 5011,
	FEDERATION_DID_RESOLUTION_FAILED: 5004, FEDERATION_DID_PROOF_INVALID: 5005,
	MAIL_CONVERSATION_NOT_FOUND: 10000, MAIL_CONVERSATION_CLOSED: 10001, MAIL_NOT_A_PARTICIPANT: 10002,
	MAIL_PERMISSION_DENIED: 10003, MAIL_TURN_NOT_FOUND: 10004, MAIL_THREAD_NOT_FOUND: 10005,
	MAIL_INVALID_TURN_CONTENT: 10006, MAIL_PARTICIPANT_ALREADY_JOINED: 10007,
	MAIL_INVITATION_REQUIRED: 10008, MAIL_HISTORY_ACCESS_DENIED: 10009,
	MAIL_PARENT_CONVERSATION_NOT_FOUND: 10010,
	TRAJECTORY_NOT_ENABLED: 13000, TRAJECTORY_CHECKPOINT_NOT_FOUND: 13001,
	TRAJECTORY_CONTENT_UNAVAILABLE: 13002, TRAJECTORY_STREAM_FAILED: 13003,
	TRAJECTORY_PERMISSION_DENIED: 13004,
}));

await fact('F3', 'MAPRequestError helpers: category and retryable of each', () => {
	const E = sdk.MAPRequestError;
	const got = Object.fromEntries([
		['agentNotFound', E.agentNotFound('x')], ['addressNotFound', E.addressNotFound('x')],
		['scopeNotFound', E.scopeNotFound('x')], ['deliveryFailed', E.deliveryFailed()],
		['addressAmbiguous', E.addressAmbiguous('x')], ['agentExists', E.agentExists('x')],
		['stateInvalid', E.stateInvalid('a', 'b')], ['agentTerminated', E.agentTerminated('x')],
		['spawnFailed', E.spawnFailed()], ['resourceExhausted', E.resourceExhausted()],
		['quotaExceeded', E.quotaExceeded()], ['permissionDenied', E.permissionDenied()],
		['methodNotFound', E.methodNotFound('m')], ['invalidParams', E.invalidParams()],
		['internalError', E.internalError()],
	].map(([k, e]) => [k, [e.code, e.data.category, e.data.retryable ?? false]]));
	return same(got, {
		agentNotFound: [2001, 'routing', false], addressNotFound: [2000, 'routing', false],
		scopeNotFound: [2002, 'routing', false], deliveryFailed: [2003, 'routing', true],
		addressAmbiguous: [2004, 'routing', false], agentExists: [3000, 'agent', false],
		stateInvalid: [3001, 'agent', false], agentTerminated: [3003, 'agent', false],
		spawnFailed: [3004, 'agent', false], resourceExhausted: [4000, 'resource', true],
		quotaExceeded: [4002, 'resource', false], permissionDenied: [1003, 'auth', false],
		methodNotFound: [-32601, 'protocol', false], invalidParams: [-32602, 'protocol', false],
		internalError: [-32603, 'internal', false],
	});
});

await fact('F4', 'EVENT_TYPES values (underscore style, a few dotted)', () => same(Object.values(sdk.EVENT_TYPES), [
	'agent_registered', 'agent_unregistered', 'agent_state_changed', 'agent_environment_changed',
	'agent_orphaned', 'participant_connected', 'participant_disconnected', 'message_sent',
	'message_delivered', 'message_failed', 'scope_created', 'scope_deleted', 'scope_member_joined',
	'scope_member_left', 'permissions_client_updated', 'permissions_agent_updated', 'system_error',
	'agent.resumed', 'agent.identity.verification.failed', 'credential.issued', 'credential.denied',
	'federation_connected', 'federation_disconnected', 'trajectory.checkpoint',
	'trajectory.content.available', 'task.created', 'task.assigned', 'task.status', 'task.completed',
	'mail.created', 'mail.closed', 'mail.participant.joined', 'mail.participant.left', 'mail.turn.added',
	'mail.turn.updated', 'mail.thread.created', 'mail.summary.generated']));

await fact('F5', 'MAP_METHODS and NOTIFICATION_METHODS (SPEC.md, "Every method")', () => same(
	[Object.values(sdk.MAP_METHODS).sort(), Object.values(sdk.NOTIFICATION_METHODS).sort()],
	[['mail/close', 'mail/create', 'mail/get', 'mail/invite', 'mail/join', 'mail/leave', 'mail/list',
	    'mail/replay', 'mail/summary', 'mail/thread/create', 'mail/thread/list', 'mail/turn',
	    'mail/turns/list', 'map/agents/get', 'map/agents/list', 'map/agents/register',
	    'map/agents/resume', 'map/agents/spawn', 'map/agents/stop', 'map/agents/suspend',
	    'map/agents/unregister', 'map/agents/update', 'map/auth/refresh', 'map/authenticate',
	    'map/connect', 'map/disconnect', 'map/federation/connect', 'map/federation/route',
	    'map/inject', 'map/permissions/update', 'map/replay', 'map/scopes/create', 'map/scopes/delete',
	    'map/scopes/get', 'map/scopes/join', 'map/scopes/leave', 'map/scopes/list',
	    'map/scopes/members', 'map/send', 'map/session/close', 'map/session/list', 'map/session/load',
	    'map/structure/graph', 'map/subscribe', 'map/tasks/assign', 'map/tasks/create',
	    'map/tasks/list', 'map/tasks/update', 'map/unsubscribe', 'trajectory/checkpoint',
	    'trajectory/content', 'trajectory/get', 'trajectory/list', 'workspace/list', 'workspace/read',
	    'workspace/search'],
	['map/auth/expiring', 'map/event', 'map/message', 'map/send', 'map/subscribe.ack',
	    'trajectory/content.chunk']]));

// The zod schemas the SDK exports, against the .d.ts (SPEC.md, "Validating").
const zodCases = [
	['F6a', 'AgentSchema rejects ownerId (the .d.ts requires it)', sdk.AgentSchema, { id: 'a', state: 'idle', ownerId: 'x' }, false],
	['F6b', 'AgentSchema rejects state "active" (a .d.ts state)', sdk.AgentSchema, { id: 'a', state: 'active' }, false],
	['F6c', 'AgentSchema accepts state "waiting" (not a .d.ts state)', sdk.AgentSchema, { id: 'a', state: 'waiting' }, true],
	['F6d', 'EventSchema rejects a .d.ts Event (id, source, agent_registered)', sdk.EventSchema,
	    { id: 'e', type: 'agent_registered', timestamp: 1, source: 'a', data: {} }, false],
	['F6e', 'MessageSchema rejects meta.expectsResponse (ClientConnection.request() sends it)', sdk.MessageSchema,
	    { id: 'm', from: 'a', to: { agent: 'b' }, timestamp: 1, meta: { expectsResponse: true } }, false],
	['F6f', 'AddressSchema rejects {role, within} (ClientConnection.sendToRole sends it)', sdk.AddressSchema,
	    { role: 'r', within: 's' }, false],
	['F6g', 'ParticipantCapabilitiesSchema rejects streaming (the .d.ts has it)', sdk.ParticipantCapabilitiesSchema,
	    { streaming: { supportsAck: true } }, false],
	['F6h', 'MAPErrorSchema rejects category "REJECTED" (corral\'s today)', sdk.MAPErrorSchema,
	    { code: 2001, message: 'm', data: { category: 'REJECTED', retryable: false } }, false],
	['F6i', 'MAPNotificationSchema rejects "id":null', sdk.MAPNotificationSchema,
	    { jsonrpc: '2.0', id: null, method: 'map/event', params: {} }, false],
	['F6j', 'MAPResponseSuccessSchema is strict', sdk.MAPResponseSuccessSchema,
	    { jsonrpc: '2.0', id: 1, result: {}, extra: 1 }, false],
	['F6k', 'server.js ConnectParamsSchema rejects what ClientConnection.connect() sends', serverMod.ConnectParamsSchema,
	    { protocolVersion: 1, participantType: 'client', name: 'x' }, false],
	['F6l', 'server.js AgentsListParamsSchema rejects {filter} (what listAgents sends)', serverMod.AgentsListParamsSchema,
	    { filter: {} }, false],
];
for (const [id, what, schema, value, want] of zodCases)
	await fact(id, what, () => (schema.safeParse(value).success === want ? true : `safeParse gave ${!want}`));

await fact('F7', 'ClientConnection has no spawn(); AgentConnection has', () =>
	same([typeof sdk.ClientConnection.prototype.spawn, typeof sdk.AgentConnection.prototype.spawn], ['undefined', 'function']));

await fact('F8', 'ClientConnection.connect() sends exactly {protocolVersion:1, participantType:"client", name}', async () => {
	const p = pair();
	const c = new sdk.ClientConnection(p.cs, { name: 'n' });
	const done = c.connect();
	const m = await p.next();
	await p.send(ok(m.id, CONNECT_RESULT));
	await done;
	return same([m.id, m.method, m.params], [1, 'map/connect', { protocolVersion: 1, participantType: 'client', name: 'n' }]);
});

await fact('F9', 'AgentConnection.connect() sends map/connect (participantType agent) then map/agents/register, and needs result.agent.id', async () => {
	const p = pair();
	const a = new sdk.AgentConnection(p.cs, { name: 'w', role: 'r' });
	const done = a.connect({ agentId: 'w-1' });
	const m1 = await p.next();
	await p.send(ok(m1.id, CONNECT_RESULT));
	const m2 = await p.next();
	await p.send(ok(m2.id, { agent: { id: 'w-1', ownerId: 'corral', state: 'idle' } }));
	await done;
	return same([m1.params, m2.method, m2.params, a.agentId, a.state],
	    [{ protocolVersion: 1, participantType: 'agent', participantId: 'w-1', name: 'w' },
		'map/agents/register', { agentId: 'w-1', name: 'w', role: 'r' }, 'w-1', 'idle']);
});

await fact('F10', 'an SDK agent answers ping with -32601, data {category:"protocol"} (no retryable)', async () => {
	const p = pair();
	new sdk.AgentConnection(p.cs, {});
	await p.send({ jsonrpc: '2.0', id: 9, method: 'ping' });
	return same(await p.next(), { jsonrpc: '2.0', id: 9,
	    error: { code: -32601, message: 'Method not found: ping', data: { category: 'protocol' } } });
});

await fact('F11', 'an SDK agent drops a non-JSON-RPC line (an envelope) with "MAP: Unknown message type"; map/message reaches onMessage', async () => {
	const p = pair();
	const got = [];
	const a = new sdk.AgentConnection(p.cs, {});
	a.onMessage((m) => got.push(m.id));
	const lines = await captured(async () => {
		await p.send({ protocol: 'multiagent-1.0', role: 'user', intent: 'execute', task: 't', content: { type: 'text' } });
		await p.send({ jsonrpc: '2.0', method: 'map/message', params: { message: { id: 'm1', from: 'c', to: 'x', timestamp: 1 } } });
		await sleep(20);
	});
	return same([got, lines.some((l) => l.startsWith('MAP: Unknown message type'))], [['m1'], true]);
});

async function subscribed(server) {
	const p = pair();
	const c = new sdk.ClientConnection(p.cs, {});
	const done = c.connect();
	await p.send(ok((await p.next()).id, CONNECT_RESULT));
	await done;
	const subP = c.subscribe({ eventTypes: ['agent_registered'] });
	const req = await p.next();
	await server(p, req);
	return { c, sub: await subP, req };
}
const ev = (sub, n, id = `01J00000000000000000000${String(n).padStart(3, '0')}`) => ({
	jsonrpc: '2.0', method: 'map/event', params: { subscriptionId: sub, sequenceNumber: n, eventId: id,
	    timestamp: 1, event: { id, type: 'agent_registered', timestamp: 1, data: {} } } });

await fact('F12', 'subscribe(filter) sends {filter}; an event written before the response is dropped ("MAP: Event for unknown subscription")', async () => {
	let req, sub;
	const lines = await captured(async () => {
		({ sub, req } = await subscribed(async (p, r) => {
			await p.send(ev('s1', 1));
			await p.send(ok(r.id, { subscriptionId: 's1' }));
		}));
		await sleep(20);
	});
	return same([req.params, sub.bufferedCount, lines.some((l) => l.startsWith('MAP: Event for unknown subscription'))],
	    [{ filter: { eventTypes: ['agent_registered'] } }, 0, true]);
});

await fact('F13', 'the race: over createStreamPair, the first event written right after the subscribe response is dropped too', async () => {
	let sub;
	const lines = await captured(async () => {
		({ sub } = await subscribed(async (p, r) => {
			await p.send(ok(r.id, { subscriptionId: 's1' }));
			await p.send(ev('s1', 1));
			await p.send(ev('s1', 2));
		}));
		await sleep(20);
	});
	return same([sub.bufferedCount, lines.some((l) => l.startsWith('MAP: Event for unknown subscription'))], [1, true]);
});

await fact('F14', 'over ndJsonStream on a Unix socket, events in the same write right after the subscribe response are all kept (20 runs)', async () => {
	const net = await import('node:net');
	const { Readable, Writable } = await import('node:stream');
	const path = `${process.env.TMPDIR || '/tmp'}/map-facts-${process.pid}.sock`;
	const srv = net.createServer((c) => {
		let buf = '';
		c.on('data', (d) => {
			buf += d;
			let i;
			while ((i = buf.indexOf('\n')) >= 0) {
				const m = JSON.parse(buf.slice(0, i));
				buf = buf.slice(i + 1);
				const line = (o) => JSON.stringify(o) + '\n';
				if (m.method === 'map/connect')
					c.write(line(ok(m.id, CONNECT_RESULT)));
				else if (m.method === 'map/subscribe')
					c.write(line(ok(m.id, { subscriptionId: 's1' })) + line(ev('s1', 1)) + line(ev('s1', 2)));
			}
		});
	});
	await new Promise((r) => srv.listen(path, r));
	const kept = [];
	// (Destroying the socket makes the SDK log "MAP: Error receiving
	// message: AbortError": captured away.)
	await captured(async () => {
		try {
			for (let i = 0; i < 20; i++) {
				const sock = net.createConnection(path);
				await new Promise((r) => sock.once('connect', r));
				const c = new sdk.ClientConnection(sdk.ndJsonStream(Readable.toWeb(sock), Writable.toWeb(sock)), {});
				await c.connect();
				const sub = await c.subscribe();
				await sleep(10);
				kept.push(sub.bufferedCount);
				sock.destroy();
			}
		} finally {
			srv.close();
		}
	});
	return kept.every((k) => k === 2) ? true : `buffered counts ${kept.join(',')}`;
});

await fact('F15', 'a sequence gap only warns; a repeated eventId is dropped silently', async () => {
	let sub;
	const lines = await captured(async () => {
		({ sub } = await subscribed(async (p, r) => {
			await p.send(ok(r.id, { subscriptionId: 's1' }));
			await sleep(10);
			await p.send(ev('s1', 1));
			await p.send(ev('s1', 3));
			await p.send(ev('s1', 4, '01J00000000000000000000003'));
		}));
		await sleep(20);
	});
	return same([sub.bufferedCount, sub.lastSequenceNumber, lines.filter((l) => l.includes('sequence gap')).length], [2, 3, 1]);
});

await fact('F16', 'a response whose id changed JSON type matches nothing ("Received response for unknown request"); the request times out', async () => {
	const p = pair();
	const c = new sdk.ClientConnection(p.cs, { defaultTimeout: 100 });
	let err;
	const lines = await captured(async () => {
		const done = c.connect().catch((e) => { err = e; });
		const m = await p.next();
		await p.send({ jsonrpc: '2.0', id: String(m.id), result: CONNECT_RESULT });
		await done;
	});
	return same([err && err.name, lines.some((l) => l.startsWith('MAP: Received response for unknown request'))],
	    ['MAPTimeoutError', true]);
});

await fact('F17', 'a notification with "id":null is taken for a request and answered -32601', async () => {
	const p = pair();
	new sdk.ClientConnection(p.cs, {});
	await p.send({ jsonrpc: '2.0', id: null, method: 'map/event', params: {} });
	const r = await p.next();
	return same([r.id, r.error && r.error.code], [null, -32601]);
});

await fact('F18', 'ClientConnection.request() returns the first message_delivered event whose data.correlationId is its own', async () => {
	const p = pair();
	const c = new sdk.ClientConnection(p.cs, {});
	const done = c.connect();
	await p.send(ok((await p.next()).id, CONNECT_RESULT));
	await done;
	const rq = c.request({ agent: 'a' }, 'hi', { timeout: 1000 });
	const sub = await p.next();			// map/subscribe {filter: {}}
	await p.send(ok(sub.id, { subscriptionId: 'r1' }));
	const send = await p.next();			// map/send
	const cid = send.params.meta.correlationId;
	await p.send(ok(send.id, { messageId: 'm1', delivered: ['a'] }));
	const mk = (n, from) => ({ jsonrpc: '2.0', method: 'map/event', params: { subscriptionId: 'r1', sequenceNumber: n,
	    eventId: `01J0000000000000000000000${n}`, timestamp: 1, event: { id: `e${n}`, type: 'message_delivered',
		timestamp: 1, data: { correlationId: cid, message: { id: `m${n}`, from } } } } });
	await p.send(mk(1, 'request-itself'));
	await p.send(mk(2, 'a'));
	const unsub = p.next().then((u) => p.send(ok(u.id, { subscription: { id: 'r1', closedAt: 1 } })));
	const reply = await rq;
	await unsub;
	return same([sub.params, send.params.meta.expectsResponse, reply.from], [{ filter: {} }, true, 'request-itself']);
});

await fact('F19', 'replay() sends limit 100 by default and clamps it to 1000', async () => {
	const p = pair();
	const c = new sdk.ClientConnection(p.cs, {});
	const r1 = c.replay();
	const m1 = await p.next();
	await p.send(ok(m1.id, { events: [], hasMore: false }));
	await r1;
	const r2 = c.replay({ afterEventId: 'x', limit: 5000 });
	const m2 = await p.next();
	await p.send(ok(m2.id, { events: [], hasMore: false }));
	await r2;
	return same([m1.params, m2.params], [{ limit: 100 }, { afterEventId: 'x', limit: 1000 }]);
});

await fact('F20', 'disconnect() needs an object result: null makes it throw', async () => {
	const p = pair();
	const c = new sdk.ClientConnection(p.cs, {});
	const done = c.connect();
	await p.send(ok((await p.next()).id, CONNECT_RESULT));
	await done;
	const d = c.disconnect().then(() => 'resolved', (e) => e.constructor.name);
	const m = await p.next();
	await p.send(ok(m.id, null));
	return same([m.params, await d], [undefined, 'TypeError']);
});

await fact('F21', 'AgentConnection.spawn() sends its options plus parent = its own id; reply() sends {to:{agent:from}, meta:{correlationId, isResult:true}}', async () => {
	const p = pair();
	const a = new sdk.AgentConnection(p.cs, { name: 'w' });
	const done = a.connect();
	await p.send(ok((await p.next()).id, CONNECT_RESULT));
	await p.send(ok((await p.next()).id, { agent: { id: 'w-1', ownerId: 'corral', state: 'idle' } }));
	await done;
	const s = a.spawn({ name: 'helper', metadata: { k: 1 } });
	const m = await p.next();
	await p.send(ok(m.id, { agent: { id: 'helper-2', ownerId: 'w-1', parent: 'w-1', state: 'registered' } }));
	await s;
	const r = a.reply({ id: 'q1', from: 'c:1', to: 'w-1', timestamp: 1, meta: { correlationId: 'k' } }, 'ans');
	const m2 = await p.next();
	await p.send(ok(m2.id, { messageId: 'm9', delivered: ['c:1'] }));
	await r;
	return same([m.params, m2.params], [{ name: 'helper', metadata: { k: 1 }, parent: 'w-1' },
	    { to: { agent: 'c:1' }, payload: 'ans', meta: { correlationId: 'k', isResult: true } }]);
});

await fact('F22', 'AgentConnection.disconnect() sends map/agents/unregister {agentId, reason} then map/disconnect {reason}', async () => {
	const p = pair();
	const a = new sdk.AgentConnection(p.cs, {});
	const done = a.connect();
	await p.send(ok((await p.next()).id, CONNECT_RESULT));
	await p.send(ok((await p.next()).id, { agent: { id: 'w-1', ownerId: 'corral', state: 'idle' } }));
	await done;
	const d = a.disconnect('bye');
	const m1 = await p.next();
	await p.send(ok(m1.id, { agent: { id: 'w-1', ownerId: 'corral', state: 'idle' } }));
	const m2 = await p.next();
	await p.send(ok(m2.id, { session: { id: 's', createdAt: 1 } }));
	await d;
	return same([m1.method, m1.params, m2.method, m2.params],
	    ['map/agents/unregister', { agentId: 'w-1', reason: 'bye' }, 'map/disconnect', { reason: 'bye' }]);
});

await fact('F23', 'the server closing the stream fails pending requests (MAPConnectionError) but leaves subscriptions open', async () => {
	const [cs, ss] = sdk.createStreamPair();
	const rd = ss.readable.getReader();
	const wr = ss.writable.getWriter();
	const c = new sdk.ClientConnection(cs, {});
	const d = c.connect();
	await wr.write(ok((await rd.read()).value.id, CONNECT_RESULT));
	await d;
	const sp = c.subscribe();
	await wr.write(ok((await rd.read()).value.id, { subscriptionId: 's1' }));
	const sub = await sp;
	const pending = c.listAgents().then(() => 'resolved', (e) => e.name);
	await rd.read();
	await wr.close();
	return same([await pending, c.isConnected, sub.isClosed], ['MAPConnectionError', false, false]);
});

console.log(`${pass} passed, ${fail} failed`);
process.exit(fail ? 1 : 0);
