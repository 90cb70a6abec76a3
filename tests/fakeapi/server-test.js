#!/usr/bin/env node
// Checks of server.js alone (no CLI, no registry needed): starts it on a free
// port and speaks each API to it with node's http module.
// Prints one line per check and "N passed, N failed"; exit 0 when all pass.
'use strict';

const { spawn } = require('child_process');
const http = require('http');
const path = require('path');
const fs = require('fs');
const os = require('os');

const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fakeapi-test.'));
const logFile = path.join(tmpDir, 'requests.log');
process.on('exit', () => fs.rmSync(tmpDir, { recursive: true, force: true }));
// SLOW (tests/slow.sh): every time limit here is multiplied by it.
const slow = Math.max(1, Number(process.env.SLOW) || 1);
const srv = spawn(process.execPath, [path.join(__dirname, 'server.js'), '--port', '0', '--log', logFile], { stdio: ['ignore', 'pipe', 'inherit'] });
let passed = 0;
let failed = 0;

function check(name, cond, detail) {
  if (cond) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}${detail ? ': ' + detail : ''}`);
  }
}

function request(port, method, p, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers: data ? { 'content-type': 'application/json', 'content-length': data.length } : {} }, (res) => {
      const bufs = [];
      res.on('data', (b) => bufs.push(b));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(bufs).toString('utf8') }));
    });
    req.on('error', reject);
    req.setTimeout(10000 * slow, () => req.destroy(new Error('timeout')));
    if (data) req.write(data);
    req.end();
  });
}

// SSE body -> [{event, data}]
function sse(body) {
  return body
    .split('\n\n')
    .filter((b) => b.trim())
    .map((b) => {
      const ev = {};
      for (const line of b.split('\n')) {
        if (line.startsWith('event: ')) ev.event = line.slice(7);
        else if (line.startsWith('data: ')) ev.data = JSON.parse(line.slice(6));
      }
      return ev;
    });
}

const user = (text) => ({ role: 'user', content: [{ type: 'text', text: '<system-reminder>ctx</system-reminder>' }, { type: 'text', text }] });

async function main(port) {
  let r = await request(port, 'HEAD', '/');
  check('HEAD / is 200', r.status === 200);

  // Anthropic
  const tools = [{ name: 'Bash' }, { name: 'Agent' }];
  r = await request(port, 'POST', '/v1/messages?beta=true', { model: 'claude-x', stream: true, tools, messages: [user('hello there')] });
  let evs = sse(r.body);
  check('anthropic text: event order', evs.map((e) => e.event).join(',') === 'message_start,ping,content_block_start,content_block_delta,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop', evs.map((e) => e.event).join(','));
  const text = evs.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text).join('');
  check('anthropic text: echoes the prompt, not the reminder', text === 'fakeapi reply: hello there', text);
  const md = evs.find((e) => e.event === 'message_delta');
  check('anthropic text: end_turn, fixed usage', md.data.delta.stop_reason === 'end_turn' && md.data.usage.output_tokens === 20 && evs[0].data.message.usage.input_tokens === 100);

  r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: true, tools, messages: [user('x [[tool:ls -l]]')] });
  evs = sse(r.body);
  const cbs = evs.find((e) => e.event === 'content_block_start');
  const json = evs.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.partial_json).join('');
  check('anthropic tool: tool_use Bash with input_json_delta', cbs.data.content_block.type === 'tool_use' && cbs.data.content_block.name === 'Bash' && JSON.parse(json).command === 'ls -l', json);
  check('anthropic tool: stop_reason tool_use', evs.find((e) => e.event === 'message_delta').data.delta.stop_reason === 'tool_use');
  const toolId = cbs.data.content_block.id;
  r = await request(port, 'POST', '/v1/messages', {
    model: 'claude-x',
    stream: true,
    tools,
    messages: [user('x [[tool:ls -l]]'), { role: 'assistant', content: [{ type: 'tool_use', id: toolId, name: 'Bash', input: {} }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolId, content: 'total 0' }] }],
  });
  evs = sse(r.body);
  const t2 = evs.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text).join('');
  check('anthropic tool: final text after the tool result', t2 === 'The command printed: total 0', t2);

  r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: false, tools, messages: [user('[[say:exact words]]')] });
  let j = JSON.parse(r.body);
  check('anthropic non-streaming [[say:]]', r.status === 200 && j.content[0].text === 'exact words' && j.usage.output_tokens === 20, r.body);

  for (const [marker, status, type] of [['[[error]]', 500, 'api_error'], ['[[overloaded]]', 529, 'overloaded_error'], ['[[error400]]', 400, 'invalid_request_error'], ['[[error429]]', 429, 'rate_limit_error']]) {
    r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: true, tools, messages: [user(`x ${marker}`)] });
    j = JSON.parse(r.body);
    check(`anthropic ${marker}: HTTP ${status} ${type}`, r.status === status && j.type === 'error' && j.error.type === type, `${r.status} ${r.body}`);
  }
  r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: true, messages: [user('side request [[error]]')] });
  check('anthropic: requests without tools never get errors', r.status === 200);

  r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: true, tools, messages: [user('[[sub]]')] });
  evs = sse(r.body);
  const sub = evs.find((e) => e.event === 'content_block_start').data.content_block;
  check('anthropic [[sub]]: Agent tool_use', sub.name === 'Agent');
  r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: true, tools, messages: [user('[[subnest:fg]]')] });
  evs = sse(r.body);
  const nest = JSON.parse(evs.filter((e) => e.event === 'content_block_delta' && e.data.delta.type === 'input_json_delta').map((e) => e.data.delta.partial_json).join(''));
  check('anthropic [[subnest:fg]]: an Agent call whose sub-agent starts one of its own',
      nest.prompt === 'CHILD_TASK [[subtool:fg]]' && nest.run_in_background === false, JSON.stringify(nest));
  r = await request(port, 'POST', '/v1/messages/count_tokens', { model: 'claude-x', messages: [user('x')] });
  check('anthropic count_tokens', JSON.parse(r.body).input_tokens === 100);

  // OpenAI Responses
  const oinput = (text) => [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
  ];
  const otools = [{ type: 'function', name: 'exec_command' }];
  r = await request(port, 'POST', '/v1/responses', { model: 'gpt-x', stream: true, tools: otools, input: oinput('hi codex') });
  evs = sse(r.body);
  const types = evs.map((e) => e.data.type);
  check('responses text: created first, completed last', types[0] === 'response.created' && types[types.length - 1] === 'response.completed', types.join(','));
  const done = evs.find((e) => e.data.type === 'response.output_item.done').data.item;
  check('responses text: message item echoes the prompt', done.type === 'message' && done.content[0].text === 'fakeapi reply: hi codex', JSON.stringify(done));
  const usage = evs[evs.length - 1].data.response.usage;
  check('responses text: fixed usage', usage.input_tokens === 100 && usage.output_tokens === 20 && usage.total_tokens === 120);
  r = await request(port, 'POST', '/v1/responses', { model: 'gpt-x', stream: true, tools: otools, input: oinput('[[tool]]') });
  evs = sse(r.body);
  const fc = evs.find((e) => e.data.type === 'response.output_item.done').data.item;
  check('responses tool: function_call exec_command {cmd}', fc.type === 'function_call' && fc.name === 'exec_command' && JSON.parse(fc.arguments).cmd === 'echo hi', JSON.stringify(fc));
  r = await request(port, 'POST', '/v1/responses', {
    model: 'gpt-x',
    stream: true,
    tools: otools,
    input: oinput('[[tool]]').concat([fc, { type: 'function_call_output', call_id: fc.call_id, output: 'Chunk ID: 1\nWall time: 0\nProcess exited with code 0\nOutput:\nhi\n' }]),
  });
  evs = sse(r.body);
  const fin = evs.find((e) => e.data.type === 'response.output_item.done').data.item;
  check('responses tool: final text after function_call_output', fin.content[0].text === 'The command printed: hi', JSON.stringify(fin));
  r = await request(port, 'POST', '/v1/responses', { model: 'gpt-x', stream: true, tools: [{ type: 'function', name: 'shell' }], input: oinput('[[tool]]') });
  const sh = sse(r.body).find((e) => e.data.type === 'response.output_item.done').data.item;
  check('responses tool: legacy shell tool {command: [..]}', sh.name === 'shell' && JSON.parse(sh.arguments).command[2] === 'echo hi');
  r = await request(port, 'POST', '/v1/responses', { model: 'gpt-x', stream: true, tools: otools, input: oinput('[[error529]]') });
  check('responses [[error529]]: HTTP 529 with error object', r.status === 529 && JSON.parse(r.body).error.message.length > 0);
  r = await request(port, 'POST', '/v1/responses', { model: 'gpt-x', stream: true, tools: otools, input: oinput('[[streamerror]]') });
  check('responses [[streamerror]]: response.failed', sse(r.body).some((e) => e.data.type === 'response.failed'));
  r = await request(port, 'GET', '/v1/models');
  check('GET /v1/models', r.status === 200 && Array.isArray(JSON.parse(r.body).data));

  // Gemini
  const gcontents = (text) => [{ role: 'user', parts: [{ text: '<session_context>\nThis is the Gemini CLI.' }, { text }] }];
  const schema = { type: 'OBJECT', properties: { complexity_reasoning: { type: 'STRING' }, complexity_score: { type: 'INTEGER' } }, required: ['complexity_reasoning', 'complexity_score'] };
  r = await request(port, 'POST', '/v1beta/models/gemini-x-lite:generateContent', { contents: gcontents('[[error]] hi'), generationConfig: { responseMimeType: 'application/json', responseJsonSchema: schema } });
  j = JSON.parse(r.body);
  const cls = JSON.parse(j.candidates[0].content.parts[0].text);
  check('gemini classifier: valid JSON for the schema, never an error', r.status === 200 && typeof cls.complexity_reasoning === 'string' && cls.complexity_score >= 1, r.body);
  r = await request(port, 'POST', '/v1beta/models/gemini-x:generateContent', {
    contents: gcontents('x'),
    generationConfig: { responseJsonSchema: { type: 'object', properties: { reasoning: { type: 'string' }, next_speaker: { type: 'string', enum: ['model', 'user'] } } } },
  });
  check('gemini next-speaker check answers "user"', JSON.parse(JSON.parse(r.body).candidates[0].content.parts[0].text).next_speaker === 'user');
  r = await request(port, 'POST', '/v1beta/models/gemini-x:streamGenerateContent?alt=sse', { contents: gcontents('hi gemini') });
  evs = sse(r.body);
  const gtext = evs.map((e) => e.data.candidates[0].content.parts.map((p) => p.text || '').join('')).join('');
  const last = evs[evs.length - 1].data;
  check('gemini stream text echoes the prompt', gtext === 'fakeapi reply: hi gemini', gtext);
  check('gemini stream: finishReason STOP and usageMetadata last', last.candidates[0].finishReason === 'STOP' && last.usageMetadata.totalTokenCount === 120);
  const gtools = [{ functionDeclarations: [{ name: 'read_file' }, { name: 'run_shell_command' }] }];
  r = await request(port, 'POST', '/v1beta/models/gemini-x:streamGenerateContent?alt=sse', { contents: gcontents('[[tool]]'), tools: gtools });
  const call = sse(r.body)[0].data.candidates[0].content.parts[0].functionCall;
  check('gemini tool: functionCall run_shell_command', call && call.name === 'run_shell_command' && call.args.command === 'echo hi', JSON.stringify(call));
  r = await request(port, 'POST', '/v1beta/models/gemini-x:streamGenerateContent?alt=sse', {
    contents: gcontents('[[tool]]').concat([
      { role: 'model', parts: [{ functionCall: call }] },
      { role: 'user', parts: [{ functionResponse: { name: 'run_shell_command', response: { output: 'Output: hi\nProcess Group PGID: 42' } } }] },
    ]),
    tools: gtools,
  });
  const gfin = sse(r.body).map((e) => e.data.candidates[0].content.parts.map((p) => p.text || '').join('')).join('');
  check('gemini tool: final text after functionResponse', gfin === 'The command printed: hi', gfin);
  r = await request(port, 'POST', '/v1beta/models/gemini-x:streamGenerateContent?alt=sse', { contents: gcontents('[[overloaded]]'), tools: gtools });
  check('gemini [[overloaded]]: HTTP 503 UNAVAILABLE', r.status === 503 && JSON.parse(r.body).error.status === 'UNAVAILABLE', r.body);
  r = await request(port, 'POST', '/v1beta/models/gemini-x:streamGenerateContent?alt=sse', { contents: gcontents('[[error400]]'), tools: gtools });
  check('gemini [[error400]]: HTTP 400 INVALID_ARGUMENT', r.status === 400 && JSON.parse(r.body).error.code === 400);

  // [[mcp:TOOL:JSON]]: a call of the MCP tool by suffix, nested markers kept
  // inside the arguments, several calls in turn, then the results as text.
  const inner = '[[mcp:spawn_agent:{"agent":"r","task":"[[say:ok]]"}]]';
  const mp = `go [[mcp:spawn_agent:${JSON.stringify({ agent: 'w', task: inner })}]] [[mcp:list_agents:{}]]`;
  const mtools = [{ name: 'Bash' }, { name: 'mcp__corral__spawn_agent' }, { name: 'mcp__corral__list_agents' }];
  r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: false, tools: mtools, messages: [user(mp)] });
  j = JSON.parse(r.body);
  check('anthropic [[mcp:]]: tool_use by suffix, the nested marker in its arguments', j.content[0].type === 'tool_use' && j.content[0].name === 'mcp__corral__spawn_agent' && j.content[0].input.task === inner, r.body);
  const m1 = j.content[0];
  r = await request(port, 'POST', '/v1/messages', {
    model: 'claude-x', stream: false, tools: mtools,
    messages: [user(mp), { role: 'assistant', content: [m1] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: m1.id, content: [{ type: 'text', text: 'w-1 finished' }] }] }],
  });
  j = JSON.parse(r.body);
  check('anthropic [[mcp:]]: the second marker is the next call', j.content[0].type === 'tool_use' && j.content[0].name === 'mcp__corral__list_agents', r.body);
  const m2 = j.content[0];
  r = await request(port, 'POST', '/v1/messages', {
    model: 'claude-x', stream: false, tools: mtools,
    messages: [user(mp), { role: 'assistant', content: [m1] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: m1.id, content: [{ type: 'text', text: 'w-1 finished' }] }] },
      { role: 'assistant', content: [m2] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: m2.id, content: 'w-1, me' }] }],
  });
  j = JSON.parse(r.body);
  check('anthropic [[mcp:]]: then the results as text', j.content[0].text === 'The tool said: w-1 finished | w-1, me', r.body);
  r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: false, tools: [{ name: 'ToolSearch' }], messages: [user(mp)] });
  j = JSON.parse(r.body);
  check('anthropic [[mcp:]]: a deferred tool is searched for first', j.content[0].name === 'ToolSearch' && j.content[0].input.query === 'spawn_agent', r.body);
  const oin = oinput('[[mcp:stop_agent:{"agent":"w-1"}]]');
  r = await request(port, 'POST', '/v1/responses', { model: 'gpt-x', stream: true, tools: otools.concat([{ type: 'tool_search' }]), input: oin });
  const ts = sse(r.body).find((e) => e.data.type === 'response.output_item.done').data.item;
  check('responses [[mcp:]]: tool_search_call for a deferred tool', ts.type === 'tool_search_call' && ts.arguments.query === 'stop_agent', JSON.stringify(ts));
  const tso = { type: 'tool_search_output', call_id: ts.call_id, tools: [{ type: 'namespace', name: 'multi_agent_v1', tools: [{ type: 'function', name: 'stop_agent' }] }, { type: 'namespace', name: 'mcp__corral', tools: [{ type: 'function', name: 'stop_agent' }] }] };
  r = await request(port, 'POST', '/v1/responses', { model: 'gpt-x', stream: true, tools: otools.concat([{ type: 'tool_search' }]), input: oin.concat([ts, tso]) });
  const mfc = sse(r.body).find((e) => e.data.type === 'response.output_item.done').data.item;
  check('responses [[mcp:]]: function_call in the corral namespace', mfc.type === 'function_call' && mfc.name === 'stop_agent' && mfc.namespace === 'mcp__corral' && JSON.parse(mfc.arguments).agent === 'w-1', JSON.stringify(mfc));
  r = await request(port, 'POST', '/v1/responses', {
    model: 'gpt-x', stream: true, tools: otools,
    input: oin.concat([ts, tso, mfc, { type: 'function_call_output', call_id: mfc.call_id, output: [{ type: 'input_text', text: 'Wall time: 0.01 seconds\nOutput:' }, { type: 'input_text', text: 'Stopping w-1.' }] }]),
  });
  const mfin = sse(r.body).find((e) => e.data.type === 'response.output_item.done').data.item;
  check('responses [[mcp:]]: the result without its Wall time header', mfin.content[0].text === 'The tool said: Stopping w-1.', JSON.stringify(mfin));
  r = await request(port, 'POST', '/v1beta/models/gemini-x:streamGenerateContent?alt=sse', { contents: gcontents('[[mcp:list_agents:{}]]'), tools: [{ functionDeclarations: [{ name: 'read_file' }, { name: 'mcp_corral_list_agents' }] }] });
  const gm = sse(r.body)[0].data.candidates[0].content.parts[0].functionCall;
  check('gemini [[mcp:]]: functionCall mcp_corral_list_agents', gm && gm.name === 'mcp_corral_list_agents', JSON.stringify(gm));

  r = await request(port, 'GET', '/nope');
  check('unknown route: 404', r.status === 404);

  // [[slow:1]] takes about a second
  const t0 = Date.now();
  r = await request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: true, tools, messages: [user('[[slow:1]]')] });
  const dt = Date.now() - t0;
  check('[[slow:1]] streams over about 1 s', dt >= 900 && dt < 3000 * slow, `${dt} ms`);

  // [[hold:PATH]] holds the reply, with pings, until PATH exists
  const holdFile = path.join(tmpDir, 'hold');
  let held = true;
  const hp = request(port, 'POST', '/v1/messages', { model: 'claude-x', stream: true, tools, messages: [user(`[[hold:${holdFile}]]`)] })
    .then((x) => { held = false; return x; });
  await new Promise((res) => setTimeout(res, 1500));
  check('[[hold:PATH]]: the reply is held while PATH does not exist', held);
  fs.writeFileSync(holdFile, '');
  r = await hp;
  const hev = sse(r.body);
  check('[[hold:PATH]]: then it ends, pings sent meanwhile', hev.some((e) => e.event === 'message_stop') &&
    hev.filter((e) => e.event === 'ping').length >= 2, r.body.slice(0, 300));

  const log = fs.readFileSync(logFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  check('request log: one JSON line per request', log.filter((l) => l.method).length >= 25 && log.some((l) => l.api === 'gemini' && l.answer === 'json'), `${log.length} lines`);
}

let portBuf = '';
srv.stdout.on('data', async (d) => {
  portBuf += d;
  if (!portBuf.includes('\n') || main.started) return;
  main.started = true;
  const port = Number(portBuf.split('\n')[0]);
  try {
    await main(port);
  } catch (e) {
    check('no exception', false, e && e.stack);
  }
  srv.kill('SIGTERM');
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
});
setTimeout(() => {
  console.log('FAIL server-test timed out');
  srv.kill('SIGKILL');
  process.exit(1);
}, 60000 * slow).unref();
