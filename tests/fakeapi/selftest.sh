#!/bin/bash
# selftest.sh: the fake API server alone (server-test.js), then each real CLI
# offline against it: text, tool and error turns, Claude's long-lived
# stream-json mode with an interrupt and its sub-agents, Codex resume,
# Gemini resume, and MCP over stdio.  Prints one line per check and
# "N passed, N failed[, N skipped]".  Exit 0 when nothing failed (77 when
# everything was skipped: node missing, or the CLIs not installed and the
# registry unreachable).
#   selftest.sh [claude] [codex] [gemini] [mcp] [server]   (default: all)
# FAKEAPI_INSTALL=0 stops it from installing missing CLIs (install.sh).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
what=${*:-server claude codex gemini mcp}
pass=0 fail=0 skip=0

command -v node >/dev/null 2>&1 || { echo "SKIPPED: node not installed"; exit 77; }

# One network namespace and one fake server for every run: the run-*.sh
# scripts see FAKEAPI_IN_NETNS and FAKEAPI_SHARED (lib.sh), and each still
# gets a fresh HOME, TMPDIR and configs.  Missing CLIs are installed
# before, outside the namespace (where the registry is reachable); the
# parts below skip the ones still missing.
if [ -z "$FAKEAPI_IN_NETNS" ]; then
	for w in $what; do
		case $w in
		claude | codex | gemini | mcp) (fakeapi_require "$w" >/dev/null) ;;
		esac
	done
fi
fakeapi_netns "$0" "$@"
out=$(mktemp -d "${TMPDIR:-/tmp}/fakeapi-selftest.XXXXXX")
trap 'rm -rf "$out"' EXIT
case " $what " in
*" claude "* | *" codex "* | *" gemini "* | *" mcp "*)
	fakeapi_setup || exit 1
	trap 'fakeapi_teardown; rm -rf "$out"' EXIT
	export FAKEAPI_SHARED=1
	;;
esac

ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# chk NAME FILE EXPR: EXPR is JavaScript over L (the JSON lines of FILE,
# others dropped), R (the lines whose type is "result") and T (FILE's text).
# Queued (in $out/chk.list, NUL-separated) for chk_run, which evaluates
# every queued check in one node: a node start costs as much as the check.
chk() {
	printf '%s\0%s\0%s\0' "$1" "$2" "$3" >>"$out/chk.list"
}

# chk_run: evaluate the queued checks, each over its file read afresh,
# and count each as passed or failed (with the exception, if one).  A
# check that node did not report (node itself failed) counts as failed.
chk_run() {
	[ -s "$out/chk.list" ] || return 0
	local line n=0 want
	want=$(tr -cd '\0' <"$out/chk.list" | wc -c)
	want=$((want / 3))
	while IFS= read -r line; do
		n=$((n + 1))
		case $line in
		"ok "*) ok "${line#ok }" ;;
		*) bad "${line#bad }" ;;
		esac
	done < <(node -e '
		const fs = require("fs");
		const f = fs.readFileSync(process.argv[1], "utf8").split("\0");
		// One check: T, L and R as its expression expects, nothing shared.
		function check(file, expr) {
			const T = fs.readFileSync(file, "utf8");
			const L = T.split("\n").map((l) => { try { return JSON.parse(l); } catch (e) { return null; } }).filter((x) => x && typeof x === "object");
			const R = L.filter((x) => x.type === "result");
			return eval(expr);
		}
		for (let i = 0; i + 2 < f.length; i += 3) {
			let r, err = "";
			try { r = check(f[i + 1], f[i + 2]); } catch (e) { err = String(e && e.stack || e); }
			const name = f[i].replace(/\n/g, " ");
			console.log(r ? "ok " + name : "bad " + name + " (" + err.replace(/\s+/g, " ").slice(0, 300) + ")");
		}
	' "$out/chk.list" 2>"$out/chk.err")
	[ $n -lt $want ] && bad "chk: node evaluated $n of $want checks ($(head -c 300 "$out/chk.err"))"
	rm -f "$out/chk.list"
}

# status NAME FILE WANT: the summary line of the run in FILE has exit=WANT.
# requests NAME FILE MAX: ... and the CLI made at most MAX model requests:
# it did not retry (with their retries on, Claude Code makes 11 over 180 s,
# Codex 30 over 26 s, Gemini 10 over 199 s: docs/cli-notes.md).  A count,
# not a time: a busy machine makes the run slower, not longer in requests.
status() {
	local got
	got=$(sed -n 's/.*: exit=\([0-9]*\) .*/\1/p' "$2" | tail -1)
	[ "$got" = "$3" ] && ok "$1: exit $3" || bad "$1: exit ${got:-?}, want $3"
}
requests() {
	local got
	got=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' "$2" | tail -1)
	[ -n "$got" ] && [ "$got" -ge 1 ] && [ "$got" -le "$3" ] &&
	    ok "$1: $got request(s), at most $3" ||
	    bad "$1: ${got:-?} requests, want 1 to $3"
}

# installed TOOL: true when TOOL is there (or could be installed now).
installed() {
	(fakeapi_require "$1" >/dev/null) && return 0
	echo "skip $1: not installed (tests/fakeapi/install.sh)"
	skip=$((skip + 1))
	return 1
}

for w in $what; do
	case $w in
	server)
		if node "$here/server-test.js" >"$out/server.txt" 2>&1; then
			ok "server-test.js: $(tail -1 "$out/server.txt")"
		else
			cat "$out/server.txt"
			bad "server-test.js"
		fi
		;;
	claude)
		installed claude || continue
		r="$here/run-claude.sh"
		$r "say [[say:Hello from fakeapi]]" >"$out/c1" 2>"$out/c1.err"
		status "claude -p text" "$out/c1.err" 0
		chk "claude -p text: init, assistant, result" "$out/c1" 'L[0].type==="system" && L[0].subtype==="init" && L.some(x=>x.type==="assistant") && R.length===1'
		chk "claude -p text: result text, cost, usage" "$out/c1" 'R[0].result==="Hello from fakeapi" && R[0].is_error===false && R[0].subtype==="success" && R[0].total_cost_usd>0 && R[0].usage.input_tokens===100 && R[0].usage.output_tokens===20'
		chk "claude -p text: one session_id" "$out/c1" 'new Set(L.filter(x=>x.session_id).map(x=>x.session_id)).size===1'

		$r "run it [[tool]]" >"$out/c2" 2>"$out/c2.err"
		status "claude -p tool" "$out/c2.err" 0
		chk "claude -p tool: Bash tool_use, tool_result hi, final text" "$out/c2" 'L.some(x=>x.type==="assistant" && x.message.content.some(c=>c.type==="tool_use" && c.name==="Bash")) && L.some(x=>x.type==="user" && x.message.content.some(c=>c.type==="tool_result" && c.content==="hi")) && R[0].result==="The command printed: hi" && R[0].num_turns===2'

		$r "fail [[error529]]" >"$out/c3" 2>"$out/c3.err"
		status "claude -p error 529" "$out/c3.err" 1
		requests "claude -p error 529 (CLAUDE_CODE_MAX_RETRIES=0)" "$out/c3.err" 1
		chk "claude -p error 529: result is_error, api_error_status 529" "$out/c3" 'R[0].is_error===true && R[0].api_error_status===529 && R[0].terminal_reason==="api_error" && /529/.test(R[0].result)'

		$r --stream "$here/steps/claude-two-turns-interrupt.json" >"$out/c4" 2>"$out/c4.err"
		status "claude stream-json: 3 turns + interrupt" "$out/c4.err" 0
		chk "claude stream-json: results one, reply, interrupted, reply" "$out/c4" 'R.length===4 && R[0].result==="one" && R[1].result==="fakeapi reply: second turn" && R[2].subtype==="error_during_execution" && R[2].is_error===true && R[3].subtype==="success" && R.map(x=>x.result_index).join()==="0,1,2,3"'
		chk "claude stream-json: control_response for the interrupt" "$out/c4" 'L.some(x=>x.type==="control_response" && x.response.subtype==="success" && x.response.request_id==="req-1")'

		$r "spawn [[sub]]" >"$out/c5" 2>"$out/c5.err"
		status "claude sub-agent" "$out/c5.err" 0
		chk "claude sub-agent: task_started, task_notification, child lines with parent_tool_use_id" "$out/c5" 'const ts=L.find(x=>x.subtype==="task_started"); ts && L.some(x=>x.subtype==="task_notification" && x.task_id===ts.task_id && x.status==="completed") && L.some(x=>x.parent_tool_use_id===ts.tool_use_id) && R.length>=1'
		;;
	codex)
		installed codex || continue
		r="$here/run-codex.sh"
		$r "hello codex" "second turn" >"$out/x1" 2>"$out/x1.err"
		status "codex exec text + resume" "$out/x1.err" 0
		chk "codex exec text: thread.started, agent_message, turn.completed usage" "$out/x1" 'L[0].type==="thread.started" && L.some(x=>x.type==="item.completed" && x.item.type==="agent_message" && x.item.text==="fakeapi reply: hello codex") && L.some(x=>x.type==="turn.completed" && x.usage.input_tokens===100 && x.usage.output_tokens===20)'
		chk "codex exec resume: same thread id, second reply" "$out/x1" 'const th=L.filter(x=>x.type==="thread.started"); th.length===2 && th[0].thread_id===th[1].thread_id && L.some(x=>x.item && x.item.text==="fakeapi reply: second turn")'

		$r "run it [[tool]]" >"$out/x2" 2>"$out/x2.err"
		status "codex exec tool" "$out/x2.err" 0
		chk "codex exec tool: command_execution exit 0 output hi, final text" "$out/x2" 'L.some(x=>x.type==="item.started" && x.item.type==="command_execution" && x.item.status==="in_progress") && L.some(x=>x.type==="item.completed" && x.item.type==="command_execution" && x.item.exit_code===0 && x.item.aggregated_output==="hi\n") && L.some(x=>x.item && x.item.type==="agent_message" && x.item.text==="The command printed: hi")'

		$r "fail [[error500]]" >"$out/x3" 2>"$out/x3.err"
		status "codex exec error 500" "$out/x3.err" 1
		requests "codex exec error 500 (retries 0)" "$out/x3.err" 1
		chk "codex exec error 500: error + turn.failed" "$out/x3" 'L.some(x=>x.type==="error") && L.some(x=>x.type==="turn.failed" && x.error.message.length>0) && !L.some(x=>x.type==="turn.completed")'
		;;
	gemini)
		installed gemini || continue
		r="$here/run-gemini.sh"
		$r "hello gemini" "second turn" >"$out/g1" 2>"$out/g1.err"
		status "gemini text + resume" "$out/g1.err" 0
		chk "gemini text: init, user, assistant deltas, result success" "$out/g1" 'L[0].type==="init" && L.filter(x=>x.type==="message" && x.role==="assistant").map(x=>x.content).join("").startsWith("fakeapi reply: hello gemini") && R[0].status==="success" && R[0].stats.output_tokens>0'
		chk "gemini --resume: same session_id" "$out/g1" 'const i=L.filter(x=>x.type==="init"); i.length===2 && i[0].session_id===i[1].session_id && R.length===2'

		$r --yolo "run it [[tool]]" >"$out/g2" 2>"$out/g2.err"
		status "gemini tool (yolo)" "$out/g2.err" 0
		chk "gemini tool: tool_use run_shell_command, tool_result hi, final text" "$out/g2" 'L.some(x=>x.type==="tool_use" && x.tool_name==="run_shell_command" && x.parameters.command==="echo hi") && L.some(x=>x.type==="tool_result" && x.status==="success" && x.output==="hi") && L.filter(x=>x.type==="message" && x.role==="assistant").map(x=>x.content).join("")==="The command printed: hi" && R[0].stats.tool_calls===1'

		$r "fail [[error500]]" >"$out/g3" 2>"$out/g3.err"
		status "gemini error 500 (exit = HTTP status & 255)" "$out/g3.err" 244
		# Its model router's call (answered), then the main one.
		requests "gemini error 500 (general.maxAttempts 1)" "$out/g3.err" 2
		chk "gemini error 500: result status error" "$out/g3" 'R[0].status==="error" && /500/.test(R[0].error.message)'
		;;
	mcp)
		installed mcp || continue
		"$here/run-mcp.sh" >"$out/m1" 2>"$out/m1.err"
		status "mcp stdio session" "$out/m1.err" 0
		chk "mcp: initialize, tools/list with echo, echo result, ping, errors" "$out/m1" 'const by=(i)=>L.find(x=>x.id===i); by(1).result.protocolVersion && by(1).result.serverInfo.name && by(2).result.tools.some(t=>t.name==="echo") && by(3).result.content[0].text==="Echo: hello from corral" && JSON.stringify(by(4).result)==="{}" && by(5).result.isError===true && by(6).error.code===-32601'
		;;
	*) echo "selftest.sh: unknown part $w" >&2; exit 2 ;;
	esac
	chk_run
done

if [ $skip -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ $fail -gt 0 ] && exit 1
[ $pass -eq 0 ] && exit 77
exit 0
