// Check a file of corral's --otlp output against the OpenTelemetry
// protocol's definitions: each line an ExportTraceServiceRequest in
// OTLP/JSON (ids as hex, 64-bit integers as decimal strings) that
// protobufjs code generated from opentelemetry-proto accepts, verifies,
// encodes and decodes back to the same content (so no member is unknown
// or of the wrong type); then corral's own rules: ids of the right
// lengths, one span per request, parents that exist in the same trace,
// start before end.
//   node validate.mjs PREFIX FILE [--min-parents N]
// Prints "ok N spans, M with a parent, T traces" or "FAIL: why" (exit 1).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [prefix, file, ...rest] = process.argv.slice(2);
const minParents = rest[0] === '--min-parents' ? Number(rest[1]) : 0;
const require = createRequire(path.join(prefix, 'node_modules', 'x.js'));
const root = require('@opentelemetry/otlp-proto-exporter-base/build/src/generated/root.js');
const T = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

function fail(why) {
	console.log(`FAIL: ${why}`);
	process.exit(1);
}
const hex = (s, n, what) => {
	if (typeof s !== 'string' || !new RegExp(`^[0-9a-f]{${n}}$`).test(s) || /^0+$/.test(s))
		fail(`${what} ${JSON.stringify(s)} is not ${n} hex digits`);
	return Buffer.from(s, 'hex');
};
// OTLP/JSON to protobufjs' object form: ids as bytes.
function toProto(req) {
	const c = structuredClone(req);
	for (const rs of c.resourceSpans ?? [])
		for (const ss of rs.scopeSpans ?? [])
			for (const sp of ss.spans ?? []) {
				sp.traceId = hex(sp.traceId, 32, 'traceId');
				sp.spanId = hex(sp.spanId, 16, 'spanId');
				if (sp.parentSpanId !== undefined)
					sp.parentSpanId = hex(sp.parentSpanId, 16, 'parentSpanId');
			}
	return c;
}
// Back: bytes as hex, longs as strings, enums as numbers, no defaults.
function fromProto(msg) {
	const o = T.toObject(msg, { longs: String, enums: Number, bytes: String, defaults: false });
	for (const rs of o.resourceSpans ?? [])
		for (const ss of rs.scopeSpans ?? [])
			for (const sp of ss.spans ?? [])
				for (const k of ['traceId', 'spanId', 'parentSpanId'])
					if (sp[k] !== undefined)
						sp[k] = Buffer.from(sp[k], 'base64').toString('hex');
	return o;
}
const canon = (v) => JSON.stringify(v, (k, x) => (x && typeof x === 'object' && !Array.isArray(x)) ?
    Object.fromEntries(Object.keys(x).sort().map((y) => [y, x[y]])) : x);

const spans = [];
const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.length);
if (!lines.length)
	fail(`${file} is empty`);
lines.forEach((line, i) => {
	let req;
	try {
		req = JSON.parse(line);
	} catch (e) {
		fail(`line ${i + 1}: ${e.message}`);
	}
	const msg = T.fromObject(toProto(req));
	const err = T.verify(msg);
	if (err)
		fail(`line ${i + 1}: ${err}`);
	const back = fromProto(T.decode(T.encode(msg).finish()));
	if (canon(back) !== canon(req))
		fail(`line ${i + 1}: not the same after a round trip through the protocol's types:\n${canon(req).slice(0, 600)}\n${canon(back).slice(0, 600)}`);
	for (const rs of req.resourceSpans)
		for (const ss of rs.scopeSpans)
			spans.push(...ss.spans);
});
const byId = new Map();
for (const s of spans) {
	if (byId.has(s.spanId))
		fail(`span id ${s.spanId} twice`);
	byId.set(s.spanId, s);
	if (BigInt(s.startTimeUnixNano) > BigInt(s.endTimeUnixNano))
		fail(`span ${s.spanId} ends before it starts`);
	if (!s.name)
		fail(`span ${s.spanId} has no name`);
}
let parented = 0;
for (const s of spans) {
	if (s.parentSpanId === undefined)
		continue;
	const p = byId.get(s.parentSpanId);
	if (!p)
		fail(`span ${s.spanId} (${s.name}) names a parent ${s.parentSpanId} that is not in the file`);
	if (p.traceId !== s.traceId)
		fail(`span ${s.spanId} and its parent are in different traces`);
	parented++;
}
if (parented < minParents)
	fail(`${parented} spans with a parent, want at least ${minParents}`);
console.log(`ok ${spans.length} spans, ${parented} with a parent, ${new Set(spans.map((s) => s.traceId)).size} traces`);
