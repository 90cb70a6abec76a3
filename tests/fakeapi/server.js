#!/usr/bin/env node
// Fake LLM API server for running the real coding-agent CLIs offline.
// No npm dependencies; works on node 18+.
//
// Serves, on one port of 127.0.0.1:
//   Anthropic Messages   HEAD /, POST /v1/messages[?beta=true] (stream or not),
//                        POST /v1/messages/count_tokens
//   OpenAI Responses     POST /v1/responses (SSE), GET /v1/models
//   Gemini               POST /v1beta/models/M:generateContent,
//                        POST /v1beta/models/M:streamGenerateContent?alt=sse,
//                        POST /v1beta/models/M:countTokens
//
// Usage: node server.js [--port N] [--host H] [--port-file F] [--log F] [--dump DIR]
//   Prints the port as the first line of stdout (and writes it to --port-file).
//   --port 0 (default) picks a free port.  --log appends one JSON line per
//   request (also $FAKEAPI_LOG).  --dump DIR (or $FAKEAPI_DUMP) also writes
//   each request body to DIR/NNNN.json.  SIGTERM/SIGINT stop it.
//
// What to answer is chosen from the latest user prompt of the conversation
// (see scenarioOf below; the same markers work for all three APIs):
//   (none)             a text reply: "fakeapi reply: <prompt>"
//   [[say:TEXT]]       the reply is exactly TEXT
//   [[tool]]           first a tool call that runs `echo hi` with the CLI's
//   [[tool:CMD]]       shell tool (Bash / exec_command|shell / run_shell_command),
//                      then, once the tool result is in the conversation, the
//                      text "The command printed: <result>"
//   [[sub]]            (Claude) an Agent/Task tool call that starts a sub-agent
//   [[sub:fg]]         whose prompt is "CHILD_TASK say hi" (fg: with
//                      run_in_background false); then a text reply.  A
//                      <task-notification> prompt gets "fakeapi: the sub-agent finished"
//   [[subtool]]        as [[sub]], but the sub-agent's prompt is
//   [[subtool:fg]]     "CHILD_TASK [[tool]] [[slow:3]]": it calls the shell
//                      tool once, then answers over 3 seconds;
//                      [[subtool:hold:PATH]] ([[subtool:fg:hold:PATH]]):
//                      "CHILD_TASK [[tool]] [[hold:PATH]]" instead
//   [[subnest]]        as [[sub]], but the sub-agent's prompt is
//   [[subnest:fg]]     "CHILD_TASK [[subtool:fg]]": it starts a sub-agent of
//                      its own (nested), which runs as [[subtool]] does
//   [[slow]] [[slow:S]] the text reply is streamed over S seconds (default 20);
//                      with [[tool]], the text after the tool result is so
//   [[hold:PATH]]      the text reply is held after its first piece until
//                      the file PATH exists (Anthropic: with a ping event
//                      each half second); with [[tool]], the text after the
//                      tool result is so.  A test's event, not a time: the
//                      request is in flight until the test says
//   [[error]] [[error500]] HTTP 500; [[error529]] [[overloaded]] HTTP 529
//                      (Gemini gets 503); [[error429]] HTTP 429;
//                      [[error400]] HTTP 400 — in each API's error shape
//   [[streamerror]]    HTTP 200, then an error event inside the stream
//   [[mcp:TOOL:JSON]]  a call of the MCP tool whose name ends with TOOL (Claude
//                      mcp__corral__TOOL, Codex TOOL in namespace mcp__corral,
//                      Gemini TOOL or mcp_corral_TOOL) with the JSON object as
//                      its arguments; several markers make several calls, one
//                      after the other; once every result is in, the text
//                      "The tool said: <result>" (results joined by " | ").
//                      A tool the request does not offer is first looked up
//                      with the CLI's tool search (ToolSearch, tool_search).
// Usage numbers are fixed (USAGE below) so costs are deterministic.
'use strict';

const http = require('http');
const fs = require('fs');
const zlib = require('zlib');

const USAGE = { input: 100, output: 20 };

function parseArgs(argv) {
  const o = { port: 0, host: '127.0.0.1', portFile: null, log: process.env.FAKEAPI_LOG || null, dump: process.env.FAKEAPI_DUMP || null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) die(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--port') o.port = Number(next());
    else if (a === '--host') o.host = next();
    else if (a === '--port-file') o.portFile = next();
    else if (a === '--log') o.log = next();
    else if (a === '--dump') o.dump = next();
    else if (a === '-h' || a === '--help') {
      process.stdout.write('usage: server.js [--port N] [--host H] [--port-file F] [--log F] [--dump DIR]\n');
      process.exit(0);
    } else die(`unknown argument ${a}`);
  }
  return o;
}

function die(msg) {
  process.stderr.write(`fakeapi: ${msg}\n`);
  process.exit(2);
}

const opts = parseArgs(process.argv.slice(2));
let logFd = null;
if (opts.log) logFd = fs.openSync(opts.log, 'a');

let counter = 0;
let dumpCount = 0;
function nextId(prefix) {
  counter++;
  return `${prefix}${String(counter).padStart(6, '0')}`;
}

function logLine(obj) {
  if (logFd === null) return;
  obj.t = new Date().toISOString();
  try {
    fs.writeSync(logFd, JSON.stringify(obj) + '\n');
  } catch (e) {
    /* ignore */
  }
}

function short(s, n = 120) {
  if (typeof s !== 'string') return s;
  s = s.replace(/\s+/g, ' ').trim();
  return s.length > n ? s.slice(0, n) + '...' : s;
}

// ---------------------------------------------------------------- scenarios

// The scenario a prompt asks for.
function scenarioOf(prompt) {
  const p = prompt || '';
  let m;
  const calls = mcpCalls(p);
  if (calls.length) return { kind: 'mcp', calls };
  if ((m = /\[\[say:([\s\S]*?)\]\]/.exec(p))) return { kind: 'say', text: m[1] };
  if (/\[\[streamerror\]\]/.test(p)) return { kind: 'streamerror' };
  if ((m = /\[\[(error(\d{3})?|overloaded)\]\]/.exec(p))) {
    let status = 500;
    if (m[1] === 'overloaded') status = 529;
    else if (m[2]) status = Number(m[2]);
    return { kind: 'error', status };
  }
  if ((m = /\[\[tool(?::([\s\S]*?))?\]\]/.exec(p))) return { kind: 'tool', command: m[1] || 'echo hi' };
  if ((m = /\[\[subnest(:fg)?\]\]/.exec(p))) return { kind: 'sub', foreground: !!m[1], child: 'CHILD_TASK [[subtool:fg]]' };
  if ((m = /\[\[subtool(:fg)?(?::hold:([^\]]+))?\]\]/.exec(p)))
    return { kind: 'sub', foreground: !!m[1], child: `CHILD_TASK [[tool]] ${m[2] ? `[[hold:${m[2]}]]` : '[[slow:3]]'}` };
  if ((m = /\[\[sub(:fg)?\]\]/.exec(p))) return { kind: 'sub', foreground: !!m[1] };
  if (/<task-notification>/.test(p)) return { kind: 'say', text: 'fakeapi: the sub-agent finished' };
  if ((m = /\[\[slow(?::(\d+(?:\.\d+)?))?\]\]/.exec(p)))
    return { kind: 'slow', seconds: m[1] ? Number(m[1]) : 20 };
  if ((m = /\[\[hold:([^\]]+)\]\]/.exec(p))) return { kind: 'hold', path: m[1] };
  return { kind: 'text' };
}

// The [[mcp:TOOL:JSON]] markers of a prompt, in order: [{tool, args}].  The
// JSON is read up to its balanced closing brace, so markers nested inside
// its strings (a task for the child) stay inside it.
function mcpCalls(p) {
  const out = [];
  const re = /\[\[mcp:([A-Za-z0-9_.-]+):/g;
  let m;
  while ((m = re.exec(p))) {
    const start = m.index + m[0].length;
    const end = jsonEnd(p, start);
    if (end < 0 || p.slice(end, end + 2) !== ']]') continue;
    let args;
    try {
      args = JSON.parse(p.slice(start, end));
    } catch (e) {
      continue;
    }
    out.push({ tool: m[1], args });
    re.lastIndex = end + 2;
  }
  return out;
}

// The index after the JSON object that starts at i, or -1.
function jsonEnd(s, i) {
  if (s[i] !== '{') return -1;
  let depth = 0;
  let str = false;
  for (let j = i; j < s.length; j++) {
    const c = s[j];
    if (str) {
      if (c === '\\') j++;
      else if (c === '"') str = false;
    } else if (c === '"') str = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return j + 1;
  }
  return -1;
}

// The offered tool a marker's TOOL means: the name ending in it (a name
// with "corral" in it first), or null.
function pickMcpTool(names, tool) {
  const ends = names.filter((n) => n === tool || n.endsWith('_' + tool));
  return ends.find((n) => /corral/.test(n)) || ends[0] || null;
}

// Context the CLIs put into user messages besides the user's own words.
function isContextText(t) {
  return /^\s*\[Request interrupted by user/.test(t) || /^\s*<(system-reminder|session_context|environment_context|user_instructions|permissions|skills_instructions|apps_instructions|INSTRUCTIONS)/.test(t) || /^\s*# AGENTS\.md/.test(t);
}

function defaultReply(prompt) {
  return `fakeapi reply: ${short(prompt, 200)}`;
}

// Decide the answer of one model call.  conv = {prompt, toolResults: [..]}
// where toolResults are the tool outputs that came back after the prompt.
// toolNames: names of the tools the request offers.  Returns one of
//   {type:'text', text, slow?} {type:'tool', name, input} {type:'error', status}
//   {type:'streamerror'} {type:'search', name, query} (a tool search call)
function decide(conv, pickTool, pickAgentTool, pickMcp) {
  const sc = scenarioOf(conv.prompt);
  const after = conv.toolResults.length;
  switch (sc.kind) {
    case 'say':
      return { type: 'text', text: sc.text };
    case 'error':
      return { type: 'error', status: sc.status };
    case 'streamerror':
      return { type: 'streamerror' };
    case 'slow':
      return { type: 'text', text: defaultReply(conv.prompt), slow: sc.seconds };
    case 'hold':
      return { type: 'text', text: defaultReply(conv.prompt), hold: sc.path };
    case 'tool': {
      if (after > 0) {
        const slow = /\[\[slow(?::(\d+(?:\.\d+)?))?\]\]/.exec(conv.prompt || '');
        const hold = /\[\[hold:([^\]]+)\]\]/.exec(conv.prompt || '');
        return { type: 'text', text: `The command printed: ${toolResultText(conv.toolResults[after - 1])}`, slow: slow ? (slow[1] ? Number(slow[1]) : 20) : undefined, hold: hold ? hold[1] : undefined };
      }
      const t = pickTool(sc.command);
      if (!t) return { type: 'text', text: 'fakeapi: the request offered no shell tool' };
      return { type: 'tool', name: t.name, input: t.input };
    }
    case 'mcp': {
      const done = (conv.toolNames || []).filter((n) => !isSearchTool(n)).length;
      if (done >= sc.calls.length) {
        const texts = conv.toolResults.filter((r, i) => !isSearchTool((conv.toolNames || [])[i])).map(mcpResultText);
        return { type: 'text', text: `The tool said: ${texts.join(' | ')}` };
      }
      const want = sc.calls[done];
      const t = pickMcp && pickMcp(want.tool, want.args);
      if (!t) return { type: 'text', text: `fakeapi: the request offered no tool named *${want.tool}` };
      return t;
    }
    case 'sub': {
      if (after > 0) return { type: 'text', text: 'fakeapi: the sub-agent was started' };
      const t = pickAgentTool && pickAgentTool(sc.foreground, sc.child);
      if (!t) return { type: 'text', text: 'fakeapi: the request offered no agent tool' };
      return { type: 'tool', name: t.name, input: t.input };
    }
    default:
      return { type: 'text', text: defaultReply(conv.prompt) };
  }
}

// The CLIs' tool search tools, whose results are not the marker's calls.
function isSearchTool(n) {
  return n === 'ToolSearch' || n === 'tool_search';
}

// The command output inside the CLIs' tool-result wrappers: Codex's
// unified exec ("Chunk ID: ..\nOutput:\nhi"), Gemini's ("Output: hi\nProcess
// Group PGID: ..").
function cleanToolOutput(s) {
  s = s.replace(/<\/?untrusted_context>/g, '').trim();
  let m;
  if ((m = /(?:^|\n)Output:\n([\s\S]*)$/.exec(s))) return m[1].trim();
  if ((m = /(?:^|\n)Output: ([\s\S]*?)(?:\n(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID):|$)/.exec(s))) return m[1].trim();
  return s;
}

// An MCP tool's result text without Codex's "Wall time ... Output:" header.
function mcpResultText(r) {
  return toolResultRaw(r).replace(/<\/?untrusted_context>/g, '').trim().replace(/^Wall time: [^\n]*\nOutput:\s*/, '');
}

function toolResultText(r) {
  const t = toolResultRaw(r);
  return cleanToolOutput(t);
}

function toolResultRaw(r) {
  if (r === undefined || r === null) return '';
  if (typeof r === 'string') return r.trim();
  if (Array.isArray(r)) return r.map(toolResultRaw).join('').trim();
  if (typeof r === 'object') {
    if (typeof r.text === 'string') return r.text.trim();
    if (typeof r.output === 'string') return r.output.trim();
    if (r.content !== undefined) return toolResultRaw(r.content);
    return JSON.stringify(r);
  }
  return String(r);
}

// Split text into a few chunks for streaming.
function chunks(text, n) {
  if (!text) return [''];
  const out = [];
  const size = Math.max(1, Math.ceil(text.length / n));
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// An SSE writer that stops quietly when the client went away.
function sse(res) {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'request-id': nextId('req_fake_'),
    'x-request-id': nextId('req_fake_'),
  });
  return {
    event(name, data) {
      if (res.destroyed || res.writableEnded) return false;
      let s = '';
      if (name) s += `event: ${name}\n`;
      s += `data: ${JSON.stringify(data)}\n\n`;
      res.write(s);
      return true;
    },
    end() {
      if (!res.writableEnded) res.end();
    },
    get closed() {
      return res.destroyed || res.writableEnded;
    },
  };
}

function sendJson(res, status, obj, headers = {}) {
  const body = JSON.stringify(obj);
  res.writeHead(status, Object.assign({ 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, headers));
  res.end(body);
}

// Stream text pieces with pacing: seconds spread over the pieces; with
// hold (a path), the rest waits after the first piece until that file
// exists, calling keepalive (if any) each half second.
async function paced(text, seconds, emit, isClosed, hold, keepalive) {
  const n = seconds ? Math.max(4, Math.ceil(seconds * 2)) : 3;
  const parts = chunks(text, n);
  const delay = seconds ? (seconds * 1000) / parts.length : 0;
  for (let i = 0; i < parts.length; i++) {
    if (isClosed()) return false;
    emit(parts[i]);
    for (let k = 1; i === 0 && hold && !fs.existsSync(hold); k++) {
      await sleep(100);
      if (isClosed()) return false;
      if (keepalive && k % 5 === 0) keepalive();
    }
    if (delay) await sleep(delay);
  }
  return !isClosed();
}

// ---------------------------------------------------------------- Anthropic

function anthropicConversation(body) {
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  const blocksOf = (m) => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content : []);
  let promptIdx = -1;
  let prompt = '';
  for (let i = msgs.length - 1; i >= 0; i--) {
    const m = msgs[i];
    if (m.role !== 'user') continue;
    // A user message is the prompt when it holds words of the user's own; a
    // tool_result message may carry such words too (a prompt sent right
    // after an interrupt), otherwise it only answers a tool call.
    const bl = blocksOf(m);
    const hasResult = bl.some((b) => b.type === 'tool_result');
    const texts = bl.filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text);
    const real = texts.filter((t) => !isContextText(t));
    if (!texts.length || (hasResult && !real.length)) continue;
    promptIdx = i;
    prompt = (real.length ? real : texts).join('\n');
    break;
  }
  const toolResults = [];
  const toolNames = [];
  const named = {};
  for (let i = promptIdx + 1; i < msgs.length; i++) {
    for (const b of blocksOf(msgs[i])) {
      if (b.type === 'tool_use') named[b.id] = b.name;
      if (b.type === 'tool_result') {
        toolResults.push(b.content === undefined ? '' : b.content);
        toolNames.push(named[b.tool_use_id] || '');
      }
    }
  }
  return { prompt, toolResults, toolNames };
}

function anthropicError(status) {
  const type = { 400: 'invalid_request_error', 401: 'authentication_error', 429: 'rate_limit_error', 529: 'overloaded_error' }[status] || 'api_error';
  const message = { 529: 'Overloaded', 429: 'Rate limited (fakeapi)', 400: 'Bad request (fakeapi)' }[status] || `Internal server error (fakeapi ${status})`;
  return { type: 'error', error: { type, message }, request_id: nextId('req_fake_') };
}

async function handleAnthropic(req, res, body, log) {
  const toolNames = (body.tools || []).map((t) => t.name).filter(Boolean);
  const conv = anthropicConversation(body);
  const model = body.model || 'claude-fake';
  const pickTool = (command) =>
    toolNames.includes('Bash') ? { name: 'Bash', input: { command, description: 'Run the test command' } } : null;
  const pickAgent = (foreground, child) => {
    const n = toolNames.includes('Agent') ? 'Agent' : toolNames.includes('Task') ? 'Task' : null;
    if (!n) return null;
    const input = { description: 'fake child', prompt: child || 'CHILD_TASK say hi', subagent_type: 'general-purpose' };
    if (foreground) input.run_in_background = false;
    return { name: n, input };
  };
  const pickMcp = (tool, args) => {
    const n = pickMcpTool(toolNames, tool);
    if (n) return { type: 'tool', name: n, input: args };
    if (toolNames.includes('ToolSearch') && !conv.toolNames.includes('ToolSearch'))
      return { type: 'tool', name: 'ToolSearch', input: { query: tool, max_results: 5 } };
    return null;
  };
  let d = decide(conv, pickTool, pickAgent, pickMcp);
  // Side requests (titles, topic checks: no tools offered) never get errors or tool calls.
  if (!toolNames.length && d.type !== 'text') d = { type: 'text', text: defaultReply(conv.prompt) };
  Object.assign(log, { api: 'anthropic', model, stream: !!body.stream, tools: toolNames.length, prompt: short(conv.prompt, 80), tool_results: conv.toolResults.length, answer: d.type });

  if (d.type === 'error') {
    log.status = d.status;
    return sendJson(res, d.status, anthropicError(d.status), { 'request-id': nextId('req_fake_'), 'x-should-retry': 'true' });
  }
  const msgId = nextId('msg_fake_');
  const usage = { input_tokens: USAGE.input, output_tokens: USAGE.output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const toolId = nextId('toolu_fake_');
  const stopReason = d.type === 'tool' ? 'tool_use' : 'end_turn';
  const finalContent =
    d.type === 'tool' ? [{ type: 'tool_use', id: toolId, name: d.name, input: d.input }] : [{ type: 'text', text: d.text || '' }];

  if (!body.stream) {
    log.status = d.type === 'streamerror' ? 500 : 200;
    if (d.type === 'streamerror') return sendJson(res, 500, anthropicError(500));
    return sendJson(res, 200, { id: msgId, type: 'message', role: 'assistant', model, content: finalContent, stop_reason: stopReason, stop_sequence: null, usage });
  }
  log.status = 200;
  const s = sse(res);
  s.event('message_start', {
    type: 'message_start',
    message: { id: msgId, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: Object.assign({}, usage, { output_tokens: 1 }) },
  });
  if (d.type === 'streamerror') {
    s.event('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded (fakeapi stream error)' } });
    return s.end();
  }
  s.event('ping', { type: 'ping' });
  if (d.type === 'tool') {
    s.event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: toolId, name: d.name, input: {} } });
    for (const p of chunks(JSON.stringify(d.input), 3))
      s.event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: p } });
  } else {
    s.event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const ok = await paced(d.text, d.slow, (p) => s.event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } }), () => s.closed,
      d.hold, () => s.event('ping', { type: 'ping' }));
    if (!ok) {
      log.aborted = true;
      return s.end();
    }
  }
  s.event('content_block_stop', { type: 'content_block_stop', index: 0 });
  s.event('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: USAGE.output } });
  s.event('message_stop', { type: 'message_stop' });
  s.end();
}

// ---------------------------------------------------------------- OpenAI Responses

function responsesConversation(body) {
  let input = body.input;
  if (typeof input === 'string') input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  if (!Array.isArray(input)) input = [];
  const textOf = (item) => {
    if (typeof item.content === 'string') return [item.content];
    if (!Array.isArray(item.content)) return [];
    return item.content.filter((c) => typeof c.text === 'string' && (c.type === 'input_text' || c.type === 'text')).map((c) => c.text);
  };
  let promptIdx = -1;
  let prompt = '';
  for (let i = input.length - 1; i >= 0; i--) {
    const it = input[i];
    if (it.role !== 'user' || (it.type && it.type !== 'message')) continue;
    const texts = textOf(it).filter((t) => !isContextText(t));
    if (!texts.length) continue;
    promptIdx = i;
    prompt = texts.join('\n');
    break;
  }
  const toolResults = [];
  const toolNames = [];
  const named = {};
  let searched = false;
  for (let i = promptIdx + 1; i < input.length; i++) {
    const it = input[i];
    if (/_call$/.test(it.type || '') && it.call_id) named[it.call_id] = it.name || it.type;
    if (it.type === 'tool_search_call') searched = true;
    if (/_call_output$/.test(it.type || '')) {
      let out = it.output;
      if (out && typeof out === 'object' && !Array.isArray(out)) out = out.content !== undefined ? out.content : JSON.stringify(out);
      toolResults.push(out === undefined ? '' : out);
      toolNames.push(named[it.call_id] || '');
    }
  }
  return { prompt, toolResults, toolNames, searched, input };
}

function responsesToolNames(body) {
  return (body.tools || []).map((t) => t.name || (t.function && t.function.name) || t.type).filter(Boolean);
}

function openaiError(status) {
  const type = { 400: 'invalid_request_error', 429: 'rate_limit_exceeded', 529: 'server_error' }[status] || 'server_error';
  const message = { 400: 'Bad request (fakeapi)', 429: 'Rate limited (fakeapi)', 529: 'The server is overloaded (fakeapi)' }[status] || `Internal server error (fakeapi ${status})`;
  return { error: { message, type, param: null, code: status === 400 ? 'invalid_request' : null } };
}

async function handleResponses(req, res, body, log) {
  const toolNames = responsesToolNames(body);
  const conv = responsesConversation(body);
  const model = body.model || 'gpt-fake';
  const pickTool = (command) => {
    if (toolNames.includes('exec_command')) return { name: 'exec_command', input: { cmd: command } };
    if (toolNames.includes('shell_command')) return { name: 'shell_command', input: { command } };
    if (toolNames.includes('shell')) return { name: 'shell', input: { command: ['bash', '-lc', command] } };
    return null;
  };
  // Tools it may call: functions, the tools of namespaces, and those a
  // tool search loaded (in the conversation's tool_search_output items).
  const callable = [];
  const addTools = (list, ns) => {
    for (const t of list || []) {
      if (!t || typeof t !== 'object') continue;
      if (t.type === 'namespace' || Array.isArray(t.tools)) addTools(t.tools, t.name || ns);
      else if (t.name) callable.push({ name: t.name, namespace: ns });
    }
  };
  addTools(body.tools);
  for (const it of conv.input) if (it && it.type === 'tool_search_output') addTools(it.tools);
  const pickMcp = (tool, args) => {
    const names = callable.map((c) => (c.namespace ? `${c.namespace}${/_$/.test(c.namespace) ? '' : '__'}${c.name}` : c.name));
    const n = pickMcpTool(names, tool);
    if (n) {
      const c = callable[names.indexOf(n)];
      return { type: 'tool', name: c.name, namespace: c.namespace, input: args };
    }
    if (toolNames.includes('tool_search') && !conv.searched) return { type: 'search', query: tool };
    return null;
  };
  const d = decide(conv, pickTool, null, pickMcp);
  Object.assign(log, { api: 'openai', model, stream: body.stream !== false, tools: toolNames.length, prompt: short(conv.prompt, 80), tool_results: conv.toolResults.length, answer: d.type });
  if (d.type === 'error') {
    log.status = d.status;
    return sendJson(res, d.status, openaiError(d.status), { 'x-request-id': nextId('req_fake_') });
  }
  const respId = nextId('resp_fake_');
  const created = Math.floor(Date.now() / 1000);
  const usage = {
    input_tokens: USAGE.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: USAGE.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: USAGE.input + USAGE.output,
  };
  const base = { id: respId, object: 'response', created_at: created, model, parallel_tool_calls: false, tool_choice: 'auto', tools: [] };
  let item;
  if (d.type === 'tool') {
    item = { id: nextId('fc_fake_'), type: 'function_call', status: 'completed', arguments: JSON.stringify(d.input), call_id: nextId('call_fake_'), name: d.name };
    if (d.namespace) item.namespace = d.namespace;
  } else if (d.type === 'search') {
    item = { id: nextId('ts_fake_'), type: 'tool_search_call', status: 'completed', call_id: nextId('call_fake_'), execution: 'client', arguments: { query: d.query, limit: 8 } };
  } else if (d.type === 'text') {
    item = { id: nextId('msg_fake_'), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: d.text, annotations: [] }] };
  }
  if (body.stream === false) {
    log.status = d.type === 'streamerror' ? 500 : 200;
    if (d.type === 'streamerror') return sendJson(res, 500, openaiError(500));
    return sendJson(res, 200, Object.assign({}, base, { status: 'completed', output: [item], usage }));
  }
  log.status = 200;
  const s = sse(res);
  let seq = 0;
  const ev = (type, obj) => s.event(type, Object.assign({ type, sequence_number: seq++ }, obj));
  ev('response.created', { response: Object.assign({}, base, { status: 'in_progress', output: [] }) });
  ev('response.in_progress', { response: Object.assign({}, base, { status: 'in_progress', output: [] }) });
  if (d.type === 'streamerror') {
    ev('response.failed', {
      response: Object.assign({}, base, { status: 'failed', output: [], error: { code: 'server_error', message: 'The server had an error (fakeapi stream error)' } }),
    });
    return s.end();
  }
  if (d.type === 'search') {
    ev('response.output_item.added', { output_index: 0, item: Object.assign({}, item, { status: 'in_progress' }) });
    ev('response.output_item.done', { output_index: 0, item });
  } else if (d.type === 'tool') {
    ev('response.output_item.added', { output_index: 0, item: Object.assign({}, item, { status: 'in_progress', arguments: '' }) });
    for (const p of chunks(item.arguments, 2)) ev('response.function_call_arguments.delta', { item_id: item.id, output_index: 0, delta: p });
    ev('response.function_call_arguments.done', { item_id: item.id, output_index: 0, arguments: item.arguments });
    ev('response.output_item.done', { output_index: 0, item });
  } else {
    ev('response.output_item.added', { output_index: 0, item: Object.assign({}, item, { status: 'in_progress', content: [] }) });
    ev('response.content_part.added', { item_id: item.id, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
    const ok = await paced(d.text, d.slow, (p) => ev('response.output_text.delta', { item_id: item.id, output_index: 0, content_index: 0, delta: p }), () => s.closed, d.hold);
    if (!ok) {
      log.aborted = true;
      return s.end();
    }
    ev('response.output_text.done', { item_id: item.id, output_index: 0, content_index: 0, text: d.text });
    ev('response.content_part.done', { item_id: item.id, output_index: 0, content_index: 0, part: { type: 'output_text', text: d.text, annotations: [] } });
    ev('response.output_item.done', { output_index: 0, item });
  }
  ev('response.completed', { response: Object.assign({}, base, { status: 'completed', output: [item], usage }) });
  s.end();
}

// ---------------------------------------------------------------- Gemini

function geminiConversation(body) {
  const contents = Array.isArray(body.contents) ? body.contents : [];
  let promptIdx = -1;
  let prompt = '';
  for (let i = contents.length - 1; i >= 0; i--) {
    const c = contents[i];
    if (c.role && c.role !== 'user') continue;
    const parts = Array.isArray(c.parts) ? c.parts : [];
    const hasResult = parts.some((p) => p.functionResponse);
    const texts = parts.filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text);
    const real = texts.filter((t) => !isContextText(t));
    if (!texts.length || (hasResult && !real.length)) continue;
    promptIdx = i;
    prompt = (real.length ? real : texts).join('\n');
    break;
  }
  const toolResults = [];
  const toolNames = [];
  for (let i = promptIdx + 1; i < contents.length; i++) {
    for (const p of contents[i].parts || []) {
      if (p.functionResponse) {
        const r = p.functionResponse.response;
        toolResults.push(r && typeof r === 'object' && typeof r.output === 'string' ? r.output : r && typeof r === 'object' ? JSON.stringify(r) : String(r));
        toolNames.push(p.functionResponse.name || '');
      }
    }
  }
  return { prompt, toolResults, toolNames };
}

// A value that fits a (JSON or OpenAPI-style) schema, for the routing
// classifier and other structured-output calls.
function fromSchema(schema, key) {
  if (!schema || typeof schema !== 'object') return null;
  if (key === 'next_speaker') return 'user';
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.anyOf) && schema.anyOf.length) return fromSchema(schema.anyOf[0], key);
  if (Array.isArray(schema.oneOf) && schema.oneOf.length) return fromSchema(schema.oneOf[0], key);
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') || type[0];
  type = String(type || (schema.properties ? 'object' : 'string')).toLowerCase();
  switch (type) {
    case 'object': {
      const o = {};
      const props = schema.properties || {};
      for (const k of Object.keys(props)) o[k] = fromSchema(props[k], k);
      return o;
    }
    case 'array':
      return [];
    case 'integer':
    case 'number':
      // Gemini's classifier wants complexity_score in 1..100.
      if (typeof schema.minimum === 'number') return schema.minimum;
      if (typeof schema.maximum === 'number' && schema.maximum < 1) return schema.maximum;
      return 1;
    case 'boolean':
      return false;
    default:
      return key === 'reasoning' ? 'fakeapi classifier' : 'fake';
  }
}

function geminiError(status) {
  const st = { 400: 'INVALID_ARGUMENT', 429: 'RESOURCE_EXHAUSTED', 503: 'UNAVAILABLE' }[status] || 'INTERNAL';
  const message = { 400: 'Bad request (fakeapi)', 429: 'Resource exhausted (fakeapi)', 503: 'The model is overloaded (fakeapi)' }[status] || `Internal error (fakeapi ${status})`;
  return { error: { code: status, message, status: st } };
}

async function handleGemini(req, res, body, log, model, method) {
  const conv = geminiConversation(body);
  const gc = body.generationConfig || body.generation_config || {};
  const schema = gc.responseJsonSchema || gc.responseSchema || gc.response_json_schema || gc.response_schema;
  const decls = [];
  for (const t of body.tools || []) for (const f of t.functionDeclarations || t.function_declarations || []) decls.push(f.name);
  const usageMetadata = { promptTokenCount: USAGE.input, candidatesTokenCount: USAGE.output, totalTokenCount: USAGE.input + USAGE.output };
  Object.assign(log, { api: 'gemini', model, call: method, stream: method === 'streamGenerateContent', tools: decls.length, prompt: short(conv.prompt, 80), tool_results: conv.toolResults.length });

  if (method === 'countTokens') {
    log.answer = 'count';
    log.status = 200;
    return sendJson(res, 200, { totalTokens: USAGE.input });
  }
  let d;
  if (schema) {
    d = { type: 'text', text: JSON.stringify(fromSchema(schema)) };
    log.answer = 'json';
  } else {
    const pickTool = (command) => {
      const n = decls.includes('run_shell_command') ? 'run_shell_command' : decls.find((x) => /shell/.test(x));
      return n ? { name: n, input: { command, description: 'Run the test command' } } : null;
    };
    const pickMcp = (tool, args) => {
      const n = pickMcpTool(decls, tool);
      return n ? { type: 'tool', name: n, input: args } : null;
    };
    d = decide(conv, pickTool, null, pickMcp);
    if (d.type === 'error' && d.status === 529) d.status = 503;
    log.answer = d.type;
  }
  if (d.type === 'error') {
    log.status = d.status;
    return sendJson(res, d.status, geminiError(d.status));
  }
  const candidate = (parts, finish) => {
    const c = { content: { role: 'model', parts }, index: 0 };
    if (finish) c.finishReason = 'STOP';
    return c;
  };
  const parts = d.type === 'tool' ? [{ functionCall: { name: d.name, args: d.input } }] : [{ text: d.text || '' }];
  if (method !== 'streamGenerateContent') {
    if (d.type === 'streamerror') {
      log.status = 500;
      return sendJson(res, 500, geminiError(500));
    }
    log.status = 200;
    return sendJson(res, 200, { candidates: [candidate(parts, true)], usageMetadata, modelVersion: model, responseId: nextId('resp_fake_') });
  }
  log.status = 200;
  const s = sse(res);
  const responseId = nextId('resp_fake_');
  if (d.type === 'streamerror') {
    // Google ends a failed stream with an error object in the data.
    s.event(null, geminiError(500));
    return s.end();
  }
  if (d.type === 'tool') {
    s.event(null, { candidates: [candidate(parts, true)], usageMetadata, modelVersion: model, responseId });
  } else {
    const pieces = [];
    const ok = await paced(d.text, d.slow, (p) => {
      pieces.push(p);
      s.event(null, { candidates: [candidate([{ text: p }], false)], modelVersion: model, responseId });
    }, () => s.closed, d.hold);
    if (!ok) {
      log.aborted = true;
      return s.end();
    }
    s.event(null, { candidates: [candidate([{ text: '' }], true)], usageMetadata, modelVersion: model, responseId });
  }
  s.end();
}

// ---------------------------------------------------------------- HTTP

function readBody(req) {
  return new Promise((resolve, reject) => {
    const bufs = [];
    req.on('data', (b) => bufs.push(b));
    req.on('error', reject);
    req.on('end', () => {
      let buf = Buffer.concat(bufs);
      const enc = String(req.headers['content-encoding'] || '').toLowerCase();
      try {
        if (enc === 'gzip') buf = zlib.gunzipSync(buf);
        else if (enc === 'deflate') buf = zlib.inflateSync(buf);
        else if (enc === 'br') buf = zlib.brotliDecompressSync(buf);
        else if (enc === 'zstd' && zlib.zstdDecompressSync) buf = zlib.zstdDecompressSync(buf);
      } catch (e) {
        /* leave as is */
      }
      resolve(buf);
    });
  });
}

async function route(req, res) {
  const url = new URL(req.url, 'http://localhost');
  const path = url.pathname;
  const log = { method: req.method, path: req.url };
  try {
    const raw = await readBody(req);
    let body = {};
    if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch (e) {
        log.bad_json = true;
        log.body = short(raw.toString('utf8'), 80);
      }
    }
    if (opts.dump && raw.length) {
      dumpCount++;
      const f = `${opts.dump}/${String(dumpCount).padStart(4, '0')}.json`;
      try {
        fs.writeFileSync(f, raw);
        log.dump = f;
      } catch (e) {
        /* ignore */
      }
    }
    let m;
    if (req.method === 'HEAD' || (req.method === 'GET' && path === '/')) {
      log.status = 200;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.method === 'HEAD' ? undefined : 'fakeapi\n');
    } else if (req.method === 'POST' && path === '/v1/messages') {
      await handleAnthropic(req, res, body, log);
    } else if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
      log.api = 'anthropic';
      log.status = 200;
      sendJson(res, 200, { input_tokens: USAGE.input });
    } else if (req.method === 'POST' && /\/responses$/.test(path)) {
      await handleResponses(req, res, body, log);
    } else if (req.method === 'GET' && /\/models$/.test(path)) {
      log.status = 200;
      sendJson(res, 200, { object: 'list', data: [], models: [] });
    } else if (req.method === 'POST' && (m = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/.exec(path))) {
      await handleGemini(req, res, body, log, decodeURIComponent(m[1]), m[2]);
    } else {
      log.status = 404;
      sendJson(res, 404, { error: { code: 404, message: `fakeapi: no route for ${req.method} ${path}`, type: 'not_found_error', status: 'NOT_FOUND' } });
    }
  } catch (e) {
    log.status = 500;
    log.exception = String(e && e.stack ? e.stack : e).slice(0, 300);
    if (!res.headersSent) sendJson(res, 500, { error: { message: 'fakeapi internal error' } });
    else res.end();
  }
  logLine(log);
}

const server = http.createServer((req, res) => {
  route(req, res);
});
server.keepAliveTimeout = 5000;
// WebSocket upgrades (Codex tries ws:// first): refuse at once so the
// client falls back to plain HTTPS-style requests.
server.on('upgrade', (req, socket) => {
  logLine({ method: req.method, path: req.url, upgrade: req.headers.upgrade, status: 426 });
  socket.end('HTTP/1.1 426 Upgrade Required\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
});
server.on('clientError', (err, socket) => {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
});

server.listen(opts.port, opts.host, () => {
  const port = server.address().port;
  process.stdout.write(`${port}\n`);
  if (opts.portFile) {
    fs.writeFileSync(opts.portFile + '.tmp', `${port}\n`);
    fs.renameSync(opts.portFile + '.tmp', opts.portFile);
  }
  logLine({ event: 'listening', host: opts.host, port });
});

function stop() {
  server.close();
  setTimeout(() => process.exit(0), 200).unref();
  // Open SSE streams would keep close() waiting.
  if (server.closeAllConnections) server.closeAllConnections();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
