#!/bin/sh
# corral new agent NAME --python|--c|--sh writes an agent and a workflow
# that runs it; each scaffold works as written:
#   - corral check passes, and corral run (from another directory) gives
#     "NAME got: GOAL" with exit status 0 (the C one compiled as the
#     command it prints says);
#   - piped in, a ping is answered and a notice is not;
#   - the Python one imports corral_agent with no PYTHONPATH of its own:
#     corral puts the module it was built with last on its agents'
#     PYTHONPATH, after what the workflow's env: gives;
#   - a second new over existing files is refused and changes nothing;
#     a bad name exits 2;
#   - pip install agents/python works offline (its build backend is
#     standard library only) and installs the module.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || skip "python3 is missing"
W="$T/w"
mkdir "$W" "$T/elsewhere"
unset PYTHONPATH

for lang in python c sh; do
	name="hi_$lang"
	corral_run 5 new agent "$name" "--$lang" --dir "$W"
	expect_rc 0
	grep -q "^  corral run $W/$name.yaml --goal" "$OUT" || fail "new --$lang: $(cat "$OUT")"
	grep -q "^      cmd: \[\./$name" "$OUT" || fail "new --$lang: no workflow lines: $(cat "$OUT")"
	if [ "$lang" = c ]; then
		command -v cc >/dev/null 2>&1 && pkg-config --exists jansson ||
		    { note "no cc or jansson: the C scaffold is not built"; continue; }
		build=$(sed -n 's/^  (cd [^ ]* && \(.*\))$/\1/p' "$OUT")
		[ -n "$build" ] || fail "new --c: no build command: $(cat "$OUT")"
		(cd "$W" && eval "$build -Wall -Werror") || fail "the C scaffold does not build: $build"
	fi
	"$CORRAL" check "$W/$name.yaml" >"$T/check" 2>&1 || fail "check $name.yaml: $(cat "$T/check")"
	cd "$T/elsewhere" || fail "cd $T/elsewhere"
	corral_run 20 run "$W/$name.yaml" --goal 'hi "you"' --output text
	expect_rc 0
	cd "$T" || fail "cd $T"
	[ "$(cat "$OUT")" = "$name got: hi \"you\"" ] || fail "$name's result: $(cat "$OUT") $(cat "$ERR")"
	# Piped in: a ping gets its answer, a notice none.
	cmd=$(sed -n 's/^    cmd: \[\(.*\)\]$/\1/p' "$W/$name.yaml")
	printf '%s\n' '{"jsonrpc":"2.0","id":7,"method":"ping"}' \
	    '{"protocol":"multiagent-1.0","role":"system","intent":"route","task":"n","content":{"type":"error","text":"x"},"corral":{"kind":"notice"}}' |
	    (cd "$W" && PYTHONPATH="$SRCDIR/agents/python" "$cmd") >"$T/piped" 2>"$T/piped.err"
	[ "$(cat "$T/piped")" = '{"jsonrpc":"2.0","id":7,"result":{}}' ] ||
	    fail "$name piped a ping and a notice answered: $(cat "$T/piped" "$T/piped.err")"
done

# Existing files are left alone; a bad name is a usage error.
cp "$W/hi_sh.sh" "$T/before"
corral_run 5 new agent hi_sh --sh --dir "$W"
expect_rc 1
grep -q "hi_sh.yaml exists" "$ERR" || fail "new over an existing workflow: $(cat "$ERR")"
cmp -s "$W/hi_sh.sh" "$T/before" || fail "new over existing files changed hi_sh.sh"
corral_run 5 new agent "bad name" --dir "$W"
expect_rc 2

# PYTHONPATH: corral's module directory last, after env:'s.
cat >"$T/pp.yaml" <<YAML
agents:
  own:
    cmd: [sh, -c, 'printf "%s" "\$PYTHONPATH" >$T/pp.own; exec $W/hi_sh.sh']
    env: {PYTHONPATH: /mine}
  none:
    cmd: [sh, -c, 'printf "%s" "\$PYTHONPATH" >$T/pp.none; exec $W/hi_sh.sh']
routes:
  plan: own
  "*": none
YAML
corral_run 20 run "$T/pp.yaml" --goal x
expect_rc 0
mod=$(cat "$T/pp.none")
[ -f "$mod/corral_agent.py" ] || fail "PYTHONPATH without env: is '$mod', which holds no corral_agent.py"
[ "$(cat "$T/pp.own")" = "/mine:$mod" ] || fail "PYTHONPATH with env: /mine: '$(cat "$T/pp.own")'"
cmp -s "$mod/corral_agent.py" "$SRCDIR/agents/python/corral_agent.py" ||
    fail "$mod/corral_agent.py is not agents/python's"

# pip install, offline, from a copy (nothing is written in the tree).
if python3 -m pip --version >/dev/null 2>&1; then
	cp -r "$SRCDIR/agents/python" "$T/pysrc"
	PYTHONDONTWRITEBYTECODE=1 python3 -m pip install --no-index --quiet \
	    --disable-pip-version-check --target "$T/site" "$T/pysrc" >"$T/pip" 2>&1 ||
	    fail "pip install agents/python: $(cat "$T/pip")"
	got=$(cd "$T" && PYTHONPATH="$T/site" python3 -c 'import corral_agent; print(corral_agent.__file__)')
	[ "$got" = "$T/site/corral_agent.py" ] || fail "after pip install: corral_agent is $got"
else
	note "pip is missing: pip install agents/python is not tried"
fi
exit 0
