#!/usr/bin/env node
// Drive a long-lived NDJSON program (claude --input-format stream-json, an
// MCP server on stdio, ...) through a script of steps.  No npm dependencies.
//
// Usage: node drive.js [--timeout SEC] [--out FILE] STEPS.json -- CMD [ARGS...]
//
// STEPS.json is an array; each step is one of
//   {"send": OBJ}                 write OBJ as one JSON line to CMD's stdin
//   {"wait": PATTERN, "timeout": SEC, "count": N}
//                                 wait until N (default 1) more stdout lines
//                                 match PATTERN (a recursive subset: every
//                                 key of PATTERN must be present with an
//                                 equal value; arrays match element-wise as
//                                 subsets) counting from where the last wait
//                                 left off
//   {"sleep": MS}
//   {"close": true}               close CMD's stdin
//   {"signal": "SIGINT"}          send a signal to CMD
//   {"note": TEXT}                print TEXT in the timeline
// After the last step, drive.js waits for CMD to exit.
//
// CMD's stdout lines are copied unchanged to --out FILE (default: stdout);
// a timeline ("drive: +1.234s ...") goes to stderr, and CMD's stderr is
// passed through to stderr.  Exit status: CMD's own; 124 when the overall
// --timeout (default 60 s) ran out; 3 when a wait step timed out (CMD is then
// killed).
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');

function usage() {
  process.stderr.write('usage: drive.js [--timeout SEC] [--out FILE] STEPS.json -- CMD [ARGS...]\n');
  process.exit(2);
}

const argv = process.argv.slice(2);
let timeoutSec = 60;
let outFile = null;
let stepsFile = null;
while (argv.length && argv[0] !== '--') {
  const a = argv.shift();
  if (a === '--timeout') timeoutSec = Number(argv.shift());
  else if (a === '--out') outFile = argv.shift();
  else if (!stepsFile) stepsFile = a;
  else usage();
}
if (argv.shift() !== '--' || !argv.length || !stepsFile) usage();
// SLOW (tests/slow.sh): every time limit and pause here is multiplied by it.
const slow = Math.max(1, Number(process.env.SLOW) || 1);
timeoutSec *= slow;
const steps = JSON.parse(fs.readFileSync(stepsFile, 'utf8'));

const t0 = Date.now();
const note = (s) => process.stderr.write(`drive: +${((Date.now() - t0) / 1000).toFixed(3)}s ${s}\n`);
const out = outFile ? fs.createWriteStream(outFile) : process.stdout;

const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
child.stdin.on('error', () => {});
let exited = null;
const lines = [];
let cursor = 0;
let waiter = null;
let buf = '';

child.stdout.on('data', (d) => {
  buf += d.toString('utf8');
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    out.write(line + '\n');
    let obj = null;
    try {
      obj = JSON.parse(line);
    } catch (e) {
      /* not JSON */
    }
    lines.push(obj);
    if (waiter) waiter();
  }
});

const exitPromise = new Promise((resolve) => {
  child.on('exit', (code, sig) => {
    exited = { code, sig };
    note(`exit ${sig ? 'signal ' + sig : 'code ' + code}`);
    if (waiter) waiter();
    resolve();
  });
});

function matches(pat, v) {
  if (pat === null || typeof pat !== 'object') return pat === v;
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(pat)) {
    if (!Array.isArray(v)) return false;
    return pat.every((p) => v.some((x) => matches(p, x)));
  }
  return Object.keys(pat).every((k) => matches(pat[k], v[k]));
}

function waitFor(pat, count, sec) {
  return new Promise((resolve) => {
    let seen = 0;
    const timer = setTimeout(() => {
      waiter = null;
      resolve(false);
    }, sec * 1000);
    const check = () => {
      while (cursor < lines.length) {
        const o = lines[cursor++];
        if (o && matches(pat, o) && ++seen >= count) {
          clearTimeout(timer);
          waiter = null;
          return resolve(true);
        }
      }
      if (exited) {
        clearTimeout(timer);
        waiter = null;
        resolve(false);
      }
    };
    waiter = check;
    check();
  });
}

const overall = setTimeout(() => {
  note(`overall timeout of ${timeoutSec}s: killing`);
  child.kill('SIGKILL');
  finish(124);
}, timeoutSec * 1000);

let finished = false;
function finish(code) {
  if (finished) return;
  finished = true;
  clearTimeout(overall);
  const done = () => process.exit(code);
  if (outFile) out.end(done);
  else done();
}

(async () => {
  for (const st of steps) {
    if (st.send !== undefined) {
      const s = typeof st.send === 'string' ? st.send : JSON.stringify(st.send);
      note(`send ${s.length > 160 ? s.slice(0, 160) + '...' : s}`);
      child.stdin.write(s + '\n');
    } else if (st.wait !== undefined) {
      const ok = await waitFor(st.wait, st.count || 1, (st.timeout || 30) * slow);
      if (!ok) {
        note(`wait for ${JSON.stringify(st.wait)} failed${exited ? ' (CMD exited)' : ' (timeout)'}`);
        if (!exited) child.kill('SIGKILL');
        await exitPromise;
        return finish(3);
      }
      note(`got ${JSON.stringify(st.wait)}`);
    } else if (st.sleep !== undefined) {
      await new Promise((r) => setTimeout(r, st.sleep * slow));
    } else if (st.close) {
      note('close stdin');
      child.stdin.end();
    } else if (st.signal) {
      note(`signal ${st.signal}`);
      child.kill(st.signal);
    } else if (st.note) {
      note(st.note);
    }
  }
  await exitPromise;
  finish(exited.code === null ? 128 + 9 : exited.code);
})();
