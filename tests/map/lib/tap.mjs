// A tap between the SDK and its transport: every frame in each direction
// goes through a FrameChecker, which validates it against lib/schemas.mjs
// and checks the rules no single frame shows (SPEC.md, "Frames" and
// "Subscriptions"): response ids echo the request's id with the same JSON
// type, notifications have no id, a subscription's events come after its
// map/subscribe response and before its map/unsubscribe response, with
// sequenceNumber 1, 2, 3 ... and ever-greater ULID eventIds, and only the
// event types its filter asked for.
import { issues, typeMatches } from './schemas.mjs';

const key = (id) => `${typeof id}:${JSON.stringify(id)}`;

export class FrameChecker {
	constructor(S, sdk) {
		this.S = S;
		this.sdk = sdk;
		this.sent = new Map();		// key(id) -> {method, params}
		this.subs = new Map();		// subscriptionId -> state
		this.pendingSubscribes = 0;
		this.violations = [];
		this.frames = 0;
		this.listeners = new Set();
	}

	bad(msg) {
		this.violations.push(msg);
	}

	// Frames we write: remember requests, so that a response can be checked
	// against the method it answers.
	outgoing(m) {
		if (m && typeof m === 'object' && 'method' in m && 'id' in m) {
			this.sent.set(key(m.id), { method: m.method, params: m.params, id: m.id });
			if (m.method === 'map/subscribe')
				this.pendingSubscribes++;
		}
	}

	incoming(m) {
		this.frames++;
		try {
			this.#incoming(m);
		} catch (e) {
			this.bad(`checker error: ${e.stack || e}`);
		}
		for (const f of this.listeners)
			f(m);
	}

	#incoming(m) {
		const S = this.S;
		if (m === null || typeof m !== 'object' || Array.isArray(m)) {
			this.bad(`frame is not a JSON object: ${JSON.stringify(m).slice(0, 80)}`);
			return;
		}
		if (m.jsonrpc !== '2.0') {
			this.bad(`frame without "jsonrpc":"2.0": ${JSON.stringify(m).slice(0, 120)}`);
			return;
		}
		if ('method' in m) {
			if ('id' in m) {
				// A request to us.  id:null on an event is the classic bug:
				// the SDK then takes it for a request and answers -32601.
				if (m.id === null && typeof m.method === 'string' && m.method.startsWith('map/'))
					this.bad(`${m.method} carries "id":null: a notification must have no id member at all`);
				const r = S.Request.safeParse(m);
				if (!r.success)
					this.bad(`request ${m.method}: ${issues(r)}`);
				return;
			}
			const r = S.Notification.safeParse(m);
			if (!r.success) {
				this.bad(`notification ${m.method}: ${issues(r)}`);
				return;
			}
			const ps = S.notifications[m.method];
			if (!ps) {
				if (m.method !== 'map/auth/expiring')
					this.bad(`unknown notification method ${m.method}`);
				return;
			}
			const p = ps.safeParse(m.params);
			if (!p.success) {
				this.bad(`${m.method} params: ${issues(p)}`);
				return;
			}
			if (m.method === 'map/event')
				this.#event(m.params);
			return;
		}
		if (!('id' in m)) {
			this.bad(`frame is neither request, notification nor response: ${JSON.stringify(m).slice(0, 120)}`);
			return;
		}
		const req = this.sent.get(key(m.id));
		if (!req) {
			const other = [...this.sent.values()].find((s) => String(s.id) === String(m.id));
			if (other)
				this.bad(`response id ${JSON.stringify(m.id)} is a ${typeof m.id}, the request's was a ${typeof other.id} (${JSON.stringify(other.id)}): ids must keep their JSON type`);
			else
				this.bad(`response to an id never sent: ${JSON.stringify(m.id)}`);
			return;
		}
		this.sent.delete(key(m.id));
		if ('result' in m && 'error' in m) {
			this.bad(`${req.method} response has both result and error`);
			return;
		}
		if ('error' in m) {
			const r = S.ResponseError.safeParse(m);
			if (!r.success) {
				this.bad(`${req.method} error response: ${issues(r)}`);
				return;
			}
			const e = S.ErrorObject.safeParse(m.error);
			if (!e.success)
				this.bad(`${req.method} error: ${issues(e)}`);
			if (req.method === 'map/subscribe')
				this.pendingSubscribes--;
			return;
		}
		const r = S.ResponseSuccess.safeParse(m);
		if (!r.success) {
			this.bad(`${req.method} response: ${issues(r)}`);
			return;
		}
		const rs = S.results[req.method];
		if (rs) {
			const v = rs.safeParse(m.result);
			if (!v.success)
				this.bad(`${req.method} result: ${issues(v)}`);
		}
		if (req.method === 'map/subscribe') {
			this.pendingSubscribes--;
			const id = m.result && m.result.subscriptionId;
			if (typeof id === 'string') {
				if (this.subs.has(id))
					this.bad(`map/subscribe returned subscriptionId ${id} twice`);
				this.subs.set(id, {
					filter: (req.params && req.params.filter) || {},
					lastSeq: 0, lastEventId: '', seen: new Set(), closed: false, records: [],
				});
				this.lastSubscriptionId = id;
			}
		}
		if (req.method === 'map/unsubscribe' && req.params) {
			const s = this.subs.get(req.params.subscriptionId);
			if (s)
				s.closed = true;
		}
	}

	#event(p) {
		const s = this.subs.get(p.subscriptionId);
		if (!s) {
			this.bad(this.pendingSubscribes > 0 ?
			    `map/event for subscription ${p.subscriptionId} arrived before its map/subscribe response` :
			    `map/event for unknown subscription ${p.subscriptionId}`);
			return;
		}
		if (s.closed)
			this.bad(`map/event for subscription ${p.subscriptionId} after its map/unsubscribe response`);
		if (p.sequenceNumber !== s.lastSeq + 1)
			this.bad(`subscription ${p.subscriptionId}: sequenceNumber ${p.sequenceNumber} after ${s.lastSeq} (want ${s.lastSeq + 1})`);
		s.lastSeq = p.sequenceNumber;
		if (!this.sdk.isValidUlid(p.eventId))
			this.bad(`eventId ${p.eventId} is not a ULID`);
		if (s.seen.has(p.eventId))
			this.bad(`subscription ${p.subscriptionId}: eventId ${p.eventId} delivered twice`);
		else if (p.eventId <= s.lastEventId)
			this.bad(`subscription ${p.subscriptionId}: eventId ${p.eventId} is not greater than the previous one ${s.lastEventId}`);
		s.seen.add(p.eventId);
		if (p.eventId > s.lastEventId)
			s.lastEventId = p.eventId;
		const f = s.filter;
		if (f.eventTypes && !typeMatches(p.event.type, f.eventTypes))
			this.bad(`subscription ${p.subscriptionId} filtered on ${f.eventTypes.join(',')} got a ${p.event.type} event`);
		if (f.fromAgents && f.fromAgents.length && !f.fromAgents.includes(p.event.source))
			this.bad(`subscription ${p.subscriptionId} filtered on fromAgents got an event from ${p.event.source}`);
		s.records.push({ eventId: p.eventId, sequenceNumber: p.sequenceNumber, timestamp: p.timestamp, event: p.event });
	}
}

// Put the checker between an SDK Stream ({readable, writable} of message
// objects) and the SDK.
export function tapStream(stream, checker) {
	const readable = stream.readable.pipeThrough(new TransformStream({
		transform(msg, ctl) {
			checker.incoming(msg);
			ctl.enqueue(msg);
		},
	}));
	const inner = stream.writable.getWriter();
	const writable = new WritableStream({
		async write(msg) {
			checker.outgoing(msg);
			await inner.write(msg);
		},
		async close() {
			await inner.close();
		},
		async abort(reason) {
			await inner.abort(reason);
		},
	});
	return { readable, writable };
}
