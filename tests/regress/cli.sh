#!/bin/sh
# The command line: global options before the command, the command's own
# options before or after its file, --help, --trace, and corral check's
# two forms.
#   - -v, -vv, -vvv (or --verbose, repeated) before the command, -v after
#     it (run and serve), and both together add up: one -v logs state
#     changes, two or more also the debugging detail (READY -> BUSY);
#   - --version/-V and --help/-h exit 0 on stdout; no command, an unknown
#     command or option exit 2 with the usage on stderr;
#   - corral check prints "ok" and nothing else; --print/-p (before or
#     after the file) prints the normalized workflow instead.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  a:
    cmd: [$TA]
routes:
  "*": a
YAML

# verbosity WANT ARGS...: run the workflow with ARGS around it; WANT is
# 0 (no state changes logged), 1 (state changes only) or 2 (debug too).
verbosity() {
	want=$1
	shift
	corral_run 10 "$@"
	expect_rc 0
	info=0 debug=0
	log_has 'agent a: STOPPED -> INITIALIZING' && info=1
	log_has 'agent a: READY -> BUSY' && debug=1
	got=$((info + debug))
	[ "$got" = "$want" ] ||
	    fail "corral $*: expected verbosity $want, the log shows $got: $(head -c 300 "$ERR")"
}

verbosity 0 run "$T/wf.yaml" --goal hi
verbosity 1 -v run "$T/wf.yaml" --goal hi
verbosity 1 run "$T/wf.yaml" --goal hi -v
verbosity 2 -vvv run "$T/wf.yaml" --goal hi
verbosity 2 -vv run "$T/wf.yaml" --goal hi
verbosity 2 --verbose --verbose run "$T/wf.yaml" --goal hi
verbosity 2 run "$T/wf.yaml" --goal hi -vv
verbosity 2 -v run -v "$T/wf.yaml" --goal hi
serve_start "$T/wf.yaml" -vv
echo '{"protocol":"multiagent-1.0","role":"user","intent":"analyze","task":"t","content":{"type":"text"},"trace":{"id":"in-1"}}' >&8
serve_eof
corral_wait 10
expect_rc 0
log_has 'agent a: READY -> BUSY' ||
    fail "corral serve FILE -vv: expected the debugging detail in the log"

# --trace: a line on stderr for each envelope to and from an agent, the
# agent's bytes escaped (an ESC byte in the goal comes back as \033).
corral_run 10 run "$T/wf.yaml" --goal "$(printf 'hi\033[2J there')" --trace
expect_rc 0
grep -q '^corral: [0-9:.]* user -> a: plan [^ ]*-1 "hi\\033\[2J there"$' "$ERR" ||
    fail "--trace: no line for the goal to a: $(cat "$ERR")"
grep -q '^corral: [0-9:.]* a -> corral: [a-z]* [^ ]* (re [^ ]*-1) "' "$ERR" ||
    fail "--trace: no line for a's reply: $(cat "$ERR")"
grep -q "$(printf '\033')" "$ERR" && fail "--trace let an escape byte through"
corral_run 10 run "$T/wf.yaml" --goal hi
grep -q ' -> ' "$ERR" && fail "trace lines without --trace: $(cat "$ERR")"

for opt in --version -V; do
	corral_run 5 "$opt"
	expect_rc 0
	grep -q '^corral [0-9][0-9.]* (protocol [0-9]*)$' "$OUT" ||
	    fail "corral $opt: expected 'corral VERSION (protocol N)', got: $(cat "$OUT")"
done
for opt in --help -h; do
	corral_run 5 "$opt"
	expect_rc 0
	grep -q '^usage: corral ' "$OUT" || fail "corral $opt: no usage on stdout"
	grep -q 'corral check \[-p | --print\] FILE' "$OUT" ||
	    fail "corral $opt: the usage does not show check's --print"
done
# --help shows every command with all its options (from the command
# table: tests/unit/cmd.c holds the manual to the same table).
corral_run 5 --help
for w in "corral events [-S PATH | --run ID]" "[--since EVENTID] [--new]" \
    "[--timeout DURATION] AGENT|INTENT ENVELOPE" "corral ps [-S PATH | --run ID]"; do
	grep -qF -- "$w" "$OUT" || fail "corral --help lacks '$w': $(cat "$OUT")"
done
awk 'length > 79 { exit 1 }' "$OUT" || fail "corral --help has lines over 79 columns"
for cmd in run serve check new tree ps events send stop cancel top metrics tasks mcp; do
	corral_run 5 "$cmd" --help
	expect_rc 0
	grep -q "^usage: corral $cmd " "$OUT" || fail "corral $cmd --help: $(cat "$OUT")"
	[ -s "$ERR" ] && fail "corral $cmd --help wrote on stderr: $(cat "$ERR")"
done
corral_run 5 events --new
expect_rc 2
grep -q "^usage: corral events " "$ERR" || fail "corral events --new without -f: $(cat "$ERR")"

for args in "" "--no-such-option check $T/wf.yaml" "-x check $T/wf.yaml" \
    "no-such-command" "check" "check --no-such-option $T/wf.yaml" \
    "check $T/wf.yaml $T/wf.yaml"; do
	# shellcheck disable=SC2086 # args are words
	corral_run 5 $args
	expect_rc 2
	[ -s "$OUT" ] && fail "corral $args: printed on stdout: $(head -c 200 "$OUT")"
	grep -q '^usage: corral ' "$ERR" || fail "corral $args: no usage on stderr"
done

corral_run 5 check "$T/wf.yaml"
expect_rc 0
[ "$(cat "$OUT")" = ok ] || fail "corral check: expected 'ok', got: $(head -c 300 "$OUT")"
[ -s "$ERR" ] && fail "corral check: unexpected stderr: $(cat "$ERR")"
for args in "--print $T/wf.yaml" "-p $T/wf.yaml" "$T/wf.yaml -p"; do
	# shellcheck disable=SC2086 # args are words
	corral_run 5 check $args
	expect_rc 0
	grep -q '^    breaker: {failures: 5, reset: 1m, probes: 3}$' "$OUT" &&
	    grep -q '^  "\*": \[a\]$' "$OUT" ||
	    fail "corral check $args: expected the normalized workflow, got: $(head -c 300 "$OUT")"
done
corral_run 5 check "$T/no-such-file.yaml"
expect_rc 2
[ "$(cat "$ERR")" = "corral: $T/no-such-file.yaml: No such file or directory" ] ||
    fail "corral check of a missing file: got: $(cat "$ERR")"
exit 0
