#!/bin/sh
# A step of the wall clock moves no request's timeout.  A request to an
# agent that never answers (timeout: 2s) must expire about 2 s after it
# was routed even when the clock is set back an hour meanwhile, as NTP
# or a resumed virtual machine may do: corral counts waits on the
# monotonic clock.  (Requests that wait as long share one timer; their
# list once compared deadlines with the wall clock, and this request
# then waited an hour more.)
. "$(dirname "$0")/rel-lib.sh"

SHIM="$TOOLS/clockstep.so"
[ -f "$SHIM" ] || { echo "SKIPPED: $SHIM was not built"; exit 77; }
STEP="$T/clockstep"
: >"$STEP"
# The library comes before the sanitizers' runtime in the preload list.
[ "$SAN" = 1 ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

cat >"$T/wf.yaml" <<YAML
agents:
  deaf:
    cmd: [$RA, --deaf]
    timeout: 2s
    stop: {grace: 200ms, timeout: 2s}
routes:
  plan: deaf
retry: {max: 0}
YAML

export CLOCKSTEP_FILE="$STEP" LD_PRELOAD="$SHIM"
serve_start "$T/wf.yaml" --log "$AUD"
unset LD_PRELOAD
"$RG" env 1 --id step- >&8
aud_wait 1 route
# An hour back, while the request waits for its agent.
echo -3600 >"$STEP"
wait_result step-1 20
[ "$(code_of step-1)" = timeout ] ||
    fail "expected the request to time out, got: $(result_of step-1 | cut -c1-300)"
serve_eof
corral_wait 30
expect_rc 0
expect_no_leftovers 5
exit 0
