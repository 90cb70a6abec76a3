// Validators for everything a MAP server sends, built from the SDK's own
// zod schemas (dist/index.js, "src/schema/zod.gen.ts") wherever those agree
// with the SDK's TypeScript types (dist/index-DoccExTr.d.ts), and from the
// TypeScript types where they do not.  SPEC.md, "Validating responses",
// lists every place the two disagree and which one wins here; in short:
//
//   - frames (MAPResponseSuccessSchema, MAPResponseErrorSchema,
//     MAPNotificationSchema, MAPRequestSchema), errors (MAPErrorSchema),
//     capabilities (ParticipantCapabilitiesSchema), relationships,
//     lifecycle, visibility, the protocol version and timestamps: the
//     SDK's zod schemas as they are;
//   - Agent: the SDK's AgentSchema (strict) extended with what the .d.ts
//     has and the zod lacks (ownerId, children, the .d.ts AgentState, ...);
//   - Event: the SDK's EventSchema extended with id, source and causedBy,
//     and type restricted to the values of the SDK's EVENT_TYPES;
//   - results of each method: strict objects written from the .d.ts
//     (*ResponseResult interfaces and ClientConnection's return types).
//
// Every object schema is strict: a member the .d.ts does not have is an
// error.  Vendor data belongs in `metadata` (agents) or `_meta` (anywhere).

export function buildSchemas(sdk, z) {
	const Str = z.string();
	const NonEmpty = z.string().min(1);
	const Ts = sdk.TimestampSchema;		// z.number().int(): ms since epoch
	const Meta = sdk.MetaSchema;		// z.record(z.unknown()).optional()
	const Rec = z.record(z.unknown());

	// AgentState (.d.ts): the zod AgentStateSchema has another list
	// (waiting, error; no active, suspended, failed, orphaned).
	const AGENT_STATES = ['registered', 'active', 'busy', 'idle', 'suspended',
	    'stopping', 'stopped', 'failed', 'orphaned'];
	const AgentState = z.union([z.enum(AGENT_STATES), z.string().regex(/^x-./)]);

	// EventType (.d.ts) = the values of EVENT_TYPES.  The zod EventTypeSchema
	// has an older dot-style list ("agent.state-changed", ...).
	const EVENT_TYPE_VALUES = Object.values(sdk.EVENT_TYPES);
	const EventType = z.enum(EVENT_TYPE_VALUES);

	const Capabilities = sdk.ParticipantCapabilitiesSchema;

	const Agent = sdk.AgentSchema.extend({
		id: NonEmpty,
		ownerId: z.string().nullable(),
		children: z.array(Str).optional(),
		state: AgentState,
		permissionOverrides: Rec.optional(),
		lifecycle: sdk.AgentLifecycleSchema.extend({ orphanedAt: Ts.optional() }).optional(),
		environment: Rec.optional(),
		capabilityDescriptor: Rec.optional(),
		persistentIdentity: Rec.optional(),
	});

	const Event = sdk.EventSchema.extend({
		id: NonEmpty,
		type: EventType,
		source: Str.optional(),
		causedBy: z.array(Str).optional(),
	});

	// Address (.d.ts): a string, or one of these objects.  (The zod
	// AddressSchema says `scope` where the .d.ts says `within`, `address`
	// where it says `agent`, and has no string form and no `depth`.)
	const Address = z.union([
		Str,
		z.object({ agent: Str }).strict(),
		z.object({ agents: z.array(Str) }).strict(),
		z.object({ scope: Str }).strict(),
		z.object({ role: Str, within: Str.optional() }).strict(),
		z.object({
			parent: z.literal(true).optional(), children: z.literal(true).optional(),
			ancestors: z.literal(true).optional(), descendants: z.literal(true).optional(),
			siblings: z.literal(true).optional(), depth: z.number().optional(),
		}).strict(),
		z.object({ broadcast: z.literal(true) }).strict(),
		z.object({ system: z.literal(true) }).strict(),
		z.object({ participant: Str.optional(),
		    participants: z.enum(['all', 'agents', 'clients']).optional() }).strict(),
		z.object({ system: Str, agent: Str }).strict(),
	]);

	// MessageMeta: the .d.ts members, plus the zod-only ones (causationId,
	// traceId, spanId, expiresAt) so that either kind of sender passes.
	const MessageMeta = z.object({
		timestamp: Ts.optional(),
		relationship: z.enum(['parent-to-child', 'child-to-parent', 'peer', 'broadcast',
		    'supervisor-to-supervised']).optional(),
		expectsResponse: z.boolean().optional(),
		correlationId: Str.optional(),
		causationId: Str.optional(),
		traceId: Str.optional(),
		spanId: Str.optional(),
		isResult: z.boolean().optional(),
		priority: z.enum(['urgent', 'high', 'normal', 'low']).optional(),
		delivery: z.enum(['fire-and-forget', 'acknowledged', 'guaranteed',
		    'at-most-once', 'at-least-once', 'exactly-once']).optional(),
		ttlMs: z.number().optional(),
		expiresAt: Ts.optional(),
		protocol: Str.optional(),
		mail: Rec.optional(),
		_meta: Meta,
	}).strict();

	const Message = z.object({
		id: NonEmpty,
		from: NonEmpty,
		to: Address,
		timestamp: Ts,
		payload: z.unknown().optional(),
		meta: MessageMeta.optional(),
		_meta: Meta,
	}).strict();

	const SessionInfo = z.object({
		id: NonEmpty, createdAt: Ts, lastActiveAt: Ts.optional(), closedAt: Ts.optional(),
	}).strict();

	const AgentResult = z.object({ agent: Agent, _meta: Meta }).strict();

	const ReplayedEvent = z.object({
		eventId: NonEmpty,
		timestamp: Ts,
		causedBy: z.array(Str).optional(),
		event: Event,
	}).strict();

	const results = {
		'map/connect': z.object({
			protocolVersion: sdk.ProtocolVersionSchema,	// literal 1
			sessionId: NonEmpty,
			participantId: NonEmpty,
			capabilities: Capabilities,
			systemInfo: z.object({ name: Str.optional(), version: Str.optional() }).strict().optional(),
			reconnected: z.boolean().optional(),
			reclaimedAgents: z.array(Agent).optional(),
			ownedAgents: z.array(Str).optional(),
			principal: Rec.optional(),
			authRequired: Rec.optional(),
			resumeToken: Str.optional(),
			_meta: Meta,
		}).strict(),
		'map/disconnect': z.object({
			session: SessionInfo, resumeToken: Str.optional(), _meta: Meta,
		}).strict(),
		'map/agents/list': z.object({
			agents: z.array(Agent), nextCursor: Str.optional(), _meta: Meta,
		}).strict(),
		'map/agents/get': z.object({
			agent: Agent,
			parent: Agent.optional(),
			children: z.array(Agent).optional(),
			siblings: z.array(Agent).optional(),
			ancestors: z.array(Agent).optional(),
			descendants: z.array(Agent).optional(),
			_meta: Meta,
		}).strict(),
		'map/agents/register': z.object({
			agent: Agent, resumed: z.boolean().optional(),
			resumedFrom: z.object({ previousSessionId: Str }).strict().optional(), _meta: Meta,
		}).strict(),
		'map/agents/unregister': AgentResult,
		'map/agents/update': AgentResult,
		'map/agents/spawn': z.object({
			agent: Agent, messageId: Str.optional(), _meta: Meta,
		}).strict(),
		// ClientConnection.stopAgent/suspendAgent/resumeAgent's return types
		// ({stopping, agent?} ...); the protocol's AgentsStopResponseResult
		// is {agent}.  corral sends both members (SPEC.md).
		'map/agents/stop': z.object({ stopping: z.boolean(), agent: Agent.optional(), _meta: Meta }).strict(),
		'map/agents/suspend': z.object({ suspended: z.boolean(), agent: Agent.optional(), _meta: Meta }).strict(),
		'map/agents/resume': z.object({ resumed: z.boolean(), agent: Agent.optional(), _meta: Meta }).strict(),
		'map/send': z.object({
			messageId: NonEmpty, delivered: z.array(Str).optional(), _meta: Meta,
		}).strict(),
		'map/subscribe': z.object({ subscriptionId: NonEmpty, _meta: Meta }).strict(),
		'map/unsubscribe': z.object({
			subscription: z.object({ id: NonEmpty, closedAt: Ts }).strict(), _meta: Meta,
		}).strict(),
		'map/replay': z.object({
			events: z.array(ReplayedEvent), hasMore: z.boolean(),
			totalCount: z.number().int().nonnegative().optional(), _meta: Meta,
		}).strict(),
		'map/structure/graph': z.object({
			nodes: z.array(Agent),
			edges: z.array(z.object({
				from: NonEmpty, to: NonEmpty,
				type: z.enum(['parent-child', 'peer', 'supervisor', 'collaborator']),
			}).strict()),
			_meta: Meta,
		}).strict(),
		// The reply to corral's heartbeat on an agent's pipes.
		'ping': z.object({}).strict(),
	};

	const notifications = {
		'map/event': z.object({
			subscriptionId: NonEmpty,
			sequenceNumber: z.number().int().positive(),
			eventId: NonEmpty,	// optional in the .d.ts; corral always sends it
			timestamp: Ts,		// likewise
			causedBy: z.array(Str).optional(),
			event: Event,
			_meta: Meta,
		}).strict(),
		'map/message': z.object({ message: Message, _meta: Meta }).strict(),
	};

	// corral's rule on top of MAPErrorSchema: data with a category and
	// retryable, always (docs/protocol.md did so before MAP did).
	const ErrorObject = sdk.MAPErrorSchema.superRefine((e, ctx) => {
		if (e.data === undefined)
			ctx.addIssue({ code: 'custom', path: ['data'], message: 'error.data is required (category, retryable)' });
		else {
			if (e.data.category === undefined)
				ctx.addIssue({ code: 'custom', path: ['data', 'category'], message: 'error.data.category is required' });
			if (typeof e.data.retryable !== 'boolean')
				ctx.addIssue({ code: 'custom', path: ['data', 'retryable'], message: 'error.data.retryable is required' });
		}
	});

	return {
		AGENT_STATES, EVENT_TYPE_VALUES, Agent, Event, Message, Address, Capabilities, SessionInfo,
		results, notifications, ErrorObject,
		Request: sdk.MAPRequestSchema,
		ResponseSuccess: sdk.MAPResponseSuccessSchema,
		ResponseError: sdk.MAPResponseErrorSchema,
		Notification: sdk.MAPNotificationSchema,
	};
}

// "path: message; ..." for the first few issues of a failed safeParse.
export function issues(res, max = 4) {
	const list = res.error.issues.map((i) => {
		let m = `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`;
		if (i.code === 'unrecognized_keys')
			m = `${i.path.length ? i.path.join('.') : '(root)'}: unknown member(s) ${i.keys.join(', ')}`;
		else if (i.code === 'invalid_union' && i.unionErrors) {
			// The branch that got furthest says most.
			const best = i.unionErrors.map((e) => e.issues).sort((a, b) =>
			    Math.max(...b.map((x) => x.path.length)) - Math.max(...a.map((x) => x.path.length)))[0];
			if (best && best.length)
				m += ` (${best.slice(0, 2).map((x) => `${[...i.path, ...x.path].join('.')}: ${x.message}`).join('; ')})`;
		}
		return m;
	});
	return list.slice(0, max).join('; ') + (list.length > max ? `; ... (${list.length} issues)` : '');
}

// Event type matching for subscription filters: "agent_registered",
// "agent.registered" and "agent-registered" are one name; "agent.*" is a
// prefix; "*" is everything (SPEC.md, "Event types").
export function normType(t) {
	return String(t).replace(/[_-]/g, '.');
}
export function typeMatches(type, filterTypes) {
	if (!filterTypes || filterTypes.length === 0)
		return true;
	const t = normType(type);
	return filterTypes.some((f) => {
		const n = normType(f);
		if (n === '*' || n === t)
			return true;
		return n.endsWith('.*') && t.startsWith(n.slice(0, -1));
	});
}

// Minimal check of a multiagent-1.0 envelope, as corral's docs/protocol.md
// states it: enough for harness self-tests, not corral's full validator.
const INTENTS = ['plan', 'decompose', 'execute', 'route', 'retrieve', 'analyze', 'summarize',
    'reflect', 'finalize', 'tool.call'];
export function envelopeProblem(e) {
	if (e === null || typeof e !== 'object' || Array.isArray(e))
		return 'not an object';
	if (e.protocol !== 'multiagent-1.0')
		return 'protocol is not multiagent-1.0';
	if (!['agent', 'user', 'system', 'tool'].includes(e.role))
		return 'bad role';
	if (!INTENTS.includes(e.intent))
		return 'bad intent';
	if (typeof e.task !== 'string')
		return 'task is not a string';
	if (e.content === null || typeof e.content !== 'object' ||
	    !['text', 'code', 'json', 'tool_result', 'error'].includes(e.content.type))
		return 'bad content.type';
	if (e.trace !== undefined && (typeof e.trace !== 'object' || e.trace === null))
		return 'trace is not an object';
	return null;
}
