#!/usr/bin/env node
// answer.mjs: answer a step of a workflow of steps with the real MAP SDK,
// as a web page or a chat bot would (docs/control.md, "Steps and
// answers"): a ClientConnection over the control socket connects, waits
// (polling _corral/steps) until STEP waits for a person, prints what it
// says, and answers with _corral/answer through callExtension().
//
//   node answer.mjs --socket PATH --step STEP (--text TEXT | --action A)
//
// Prints "waiting STEP JOB REASON: SUMMARY" and "answered JOB ACTION".
// Exit 0, 1 on a failure, 77 when the SDK is not installed.
import net from 'node:net';
import { Readable, Writable } from 'node:stream';
import { loadSdk, SdkMissing } from './lib/sdk.mjs';

const opt = {};
for (let i = 2; i < process.argv.length; i += 2)
	opt[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
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
const sock = net.createConnection(opt.socket);
await new Promise((resolve, reject) => {
	sock.once('connect', resolve);
	sock.once('error', reject);
});
const client = new sdk.ClientConnection(sdk.ndJsonStream(Readable.toWeb(sock),
    Writable.toWeb(sock)), { name: 'answer-bot', defaultTimeout: 10000 });
await client.connect();
const until = Date.now() + Number(opt.wait || 20000);
let w;
while (!w) {
	const r = await client.callExtension('_corral/steps', {});
	w = r.waiting.find((x) => x.step === opt.step);
	if (!w && Date.now() > until) {
		console.log(`FAIL: step ${opt.step} never waited`);
		process.exit(1);
	}
	if (!w)
		await new Promise((r) => setTimeout(r, 100));
}
console.log(`waiting ${w.step} ${w.jobId} ${w.reason}: ${w.summary}`);
const params = { step: opt.step, jobId: w.jobId };
if (opt.text !== undefined)
	params.text = opt.text;
if (opt.action !== undefined)
	params.action = opt.action;
const res = await client.callExtension('_corral/answer', params);
console.log(`answered ${res.jobId} ${res.action}`);
// The answer may let the run finish: a corral run then exits, and may
// close the socket before map/disconnect is written or answered.  The
// answer is in; only a failure to disconnect from a corral that is still
// there is one.
sock.on('error', () => {});
try {
	await client.disconnect();
} catch (e) {
	if (!sock.destroyed && !sock.readableEnded) {
		console.log(`FAIL: disconnect: ${e.message}`);
		process.exit(1);
	}
}
sock.end();
process.exit(0);
