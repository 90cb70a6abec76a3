# Shell helpers for running the real coding-agent CLIs offline against the
# fake API server (server.js).  Source it from bash:
#
#   . tests/fakeapi/lib.sh
#   fakeapi_netns "$0" "$@"     # re-exec the script in a fresh network namespace
#   fakeapi_setup               # fresh HOME/TMPDIR/configs, server started, env exported
#   claude -p "hi" ...          # PATH holds the pinned CLIs
#   fakeapi_teardown            # stop the server, remove the scratch dir
#
# After fakeapi_setup these are set and exported:
#   FAKEAPI_DIR (this directory) FAKEAPI_WORK (scratch dir) FAKEAPI_PORT
#   FAKEAPI_URL (http://127.0.0.1:PORT) FAKEAPI_LOG (request log, JSON lines)
#   FAKEAPI_PID (server) FAKEAPI_CWD (an empty working directory for the agent)
#   HOME TMPDIR XDG_RUNTIME_DIR PATH, and every variable the three CLIs need (see
#   docs/cli-notes.md).  Set FAKEAPI_KEEP=1 to keep the scratch dir.
#
# A script that runs several of the run-*.sh scripts (selftest.sh) can
# start the server once: fakeapi_netns and fakeapi_setup itself, then
# export FAKEAPI_SHARED=1; the scripts it runs are then already in the
# namespace, and their fakeapi_setup makes its own fresh HOME, TMPDIR and
# configs but uses that server (FAKEAPI_URL, FAKEAPI_LOG) and leaves it up.

FAKEAPI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
. "$FAKEAPI_DIR/versions.sh"
export FAKEAPI_DIR

# SLOW (tests/slow.sh, tests/README.md): the time limits here, in the
# run-*.sh scripts and in drive.js are multiplied by it.
if [ -z "${SLOW:-}" ]; then
	. "$FAKEAPI_DIR/../slow.sh"
	SLOW=$(corral_slow)
fi
export SLOW

# fakeapi_netns SCRIPT ARGS...: unless already done, re-execute SCRIPT in a
# new network namespace whose only interface is loopback (up).  Where
# namespaces cannot be made (no CAP_SYS_ADMIN, no user namespaces, no `ip`),
# go on without one and say so on stderr.  FAKEAPI_NETNS=0 skips it.
fakeapi_netns() {
	[ -n "$FAKEAPI_IN_NETNS" ] && return 0
	[ "${FAKEAPI_NETNS:-1}" = 0 ] && {
		export FAKEAPI_IN_NETNS=off
		return 0
	}
	local script=$1
	shift
	local how=""
	if command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then
		if unshare --net sh -c 'ip link set lo up' 2>/dev/null; then
			how="unshare --net"
		elif unshare --user --map-root-user --net sh -c 'ip link set lo up' 2>/dev/null; then
			how="unshare --user --map-root-user --net"
		fi
	fi
	if [ -z "$how" ]; then
		echo "fakeapi: network namespaces unavailable; running WITHOUT network isolation" >&2
		export FAKEAPI_IN_NETNS=off
		return 0
	fi
	FAKEAPI_IN_NETNS=1 exec $how bash -c 'ip link set lo up && exec "$@"' fakeapi-netns bash "$script" "$@"
}

# fakeapi_require TOOL...: exit 77 (SKIPPED) unless the pinned tools are
# installed; installs them first when FAKEAPI_INSTALL=1 (default) and the
# registry is reachable.  TOOL: claude codex gemini mcp.
fakeapi_require() {
	local missing="" t bin
	for t in "$@"; do
		case $t in
		claude) bin=$CLAUDE_BIN ;; codex) bin=$CODEX_BIN ;;
		gemini) bin=$GEMINI_BIN ;; mcp) bin=$MCP_BIN ;;
		esac
		[ -e "$bin" ] || missing="$missing $t"
	done
	[ -z "$missing" ] && return 0
	if [ "${FAKEAPI_INSTALL:-1}" = 1 ] && [ "$FAKEAPI_IN_NETNS" != 1 ]; then
		sh "$FAKEAPI_DIR/install.sh" $missing >&2
		local rc=$?
		[ $rc = 0 ] && return 0
		if [ $rc = 77 ]; then
			echo "SKIPPED: not installed:$missing, and the npm registry is not reachable"
			exit 77
		fi
	fi
	echo "SKIPPED: not installed:$missing (run tests/fakeapi/install.sh)"
	exit 77
}

fakeapi_setup() {
	if ! command -v node >/dev/null 2>&1; then
		echo "SKIPPED: node not installed"
		exit 77
	fi
	FAKEAPI_WORK=$(mktemp -d "${FAKEAPI_TMP:-/tmp}/fakeapi.XXXXXX") || return 1
	local w=$FAKEAPI_WORK
	mkdir -p "$w/home" "$w/tmp" "$w/cwd" || return 1
	if [ "${FAKEAPI_SHARED:-0}" = 1 ] && [ -n "$FAKEAPI_URL" ] && [ -n "$FAKEAPI_LOG" ]; then
		# The server a calling script (selftest.sh) started stays up
		# for each of its runs: this script neither starts nor stops it
		# (no FAKEAPI_PID), and counts only the requests made from now
		# on (the log is the caller's, appended to).
		FAKEAPI_PID=""
		FAKEAPI_LOG_START=$(grep -c '"api":' "$FAKEAPI_LOG" 2>/dev/null)
	else
		FAKEAPI_LOG=${FAKEAPI_LOG:-$w/requests.log}
		: >"$FAKEAPI_LOG"
		FAKEAPI_LOG_START=0
		"${FAKEAPI_NODE:-node}" "$FAKEAPI_DIR/server.js" --port 0 --port-file "$w/port" --log "$FAKEAPI_LOG" \
		    >"$w/server.out" 2>"$w/server.err" &
		FAKEAPI_PID=$!
		local i=0
		while [ ! -s "$w/port" ]; do
			i=$((i + 1))
			if [ $i -gt $((100 * SLOW)) ] || ! kill -0 "$FAKEAPI_PID" 2>/dev/null; then
				echo "fakeapi: server did not start" >&2
				cat "$w/server.err" >&2
				return 1
			fi
			sleep 0.1
		done
		FAKEAPI_PORT=$(cat "$w/port")
		FAKEAPI_URL=http://127.0.0.1:$FAKEAPI_PORT
	fi
	FAKEAPI_CWD=$w/cwd
	export FAKEAPI_WORK FAKEAPI_LOG FAKEAPI_PID FAKEAPI_PORT FAKEAPI_URL FAKEAPI_CWD

	export HOME=$w/home TMPDIR=$w/tmp
	# A private runtime directory too: corral's control socket and
	# Codex's sandbox socket go there, not in a /tmp/NAME-UID another
	# run (as the real root, seen from a user namespace) already made.
	mkdir -p -m 0700 "$w/run"
	export XDG_RUNTIME_DIR=$w/run
	export PATH=$CLAUDE_PREFIX/node_modules/.bin:$CODEX_PREFIX/node_modules/.bin:$GEMINI_PREFIX/node_modules/.bin:$MCP_PREFIX/node_modules/.bin:$PATH
	unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy NO_PROXY no_proxy

	# Claude Code
	export ANTHROPIC_BASE_URL=$FAKEAPI_URL ANTHROPIC_API_KEY=fakeapi-key
	export CLAUDE_CONFIG_DIR=$HOME/.claude
	export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
	export DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1
	# Bounded error turns; set CLAUDE_CODE_MAX_RETRIES yourself to see retries.
	export CLAUDE_CODE_MAX_RETRIES=${CLAUDE_CODE_MAX_RETRIES-0}
	# --dangerously-skip-permissions refuses to run as root without it.
	[ "$(id -u)" = 0 ] && export IS_SANDBOX=1
	unset ANTHROPIC_AUTH_TOKEN CLAUDE_CODE_USE_BEDROCK CLAUDE_CODE_USE_VERTEX
	mkdir -p "$CLAUDE_CONFIG_DIR"

	# Codex CLI
	export CODEX_HOME=$HOME/.codex FAKEAPI_KEY=fakeapi-key
	unset OPENAI_API_KEY CODEX_API_KEY OPENAI_BASE_URL
	mkdir -p "$CODEX_HOME"
	# FAKEAPI_CODEX_RETRIES=default leaves Codex's own retry counts in force.
	local retries="request_max_retries = ${FAKEAPI_CODEX_RETRIES:-0}
stream_max_retries = ${FAKEAPI_CODEX_RETRIES:-0}"
	[ "$FAKEAPI_CODEX_RETRIES" = default ] && retries="# retries: Codex defaults"
	cat >"$CODEX_HOME/config.toml" <<-EOF
	model = "${FAKEAPI_CODEX_MODEL:-gpt-5.5}"
	model_provider = "fakeapi"
	approval_policy = "never"
	sandbox_mode = "danger-full-access"
	check_for_update_on_startup = false

	[model_providers.fakeapi]
	name = "fakeapi"
	base_url = "$FAKEAPI_URL/v1"
	wire_api = "responses"
	env_key = "FAKEAPI_KEY"
	$retries
	stream_idle_timeout_ms = 30000
	supports_websockets = false

	[analytics]
	enabled = false

	[features]
	responses_websockets = false
	responses_websockets_v2 = false
	EOF

	# Gemini CLI
	export GOOGLE_GEMINI_BASE_URL=$FAKEAPI_URL GEMINI_API_KEY=fakeapi-key
	export GEMINI_CLI_TRUST_WORKSPACE=true
	unset GOOGLE_API_KEY GOOGLE_CLOUD_PROJECT GOOGLE_GENAI_USE_VERTEXAI GOOGLE_APPLICATION_CREDENTIALS
	mkdir -p "$HOME/.gemini"
	cat >"$HOME/.gemini/settings.json" <<-EOF
	{
	  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false,
	              "maxAttempts": ${FAKEAPI_GEMINI_MAX_ATTEMPTS:-1}},
	  "privacy": {"usageStatisticsEnabled": false},
	  "telemetry": {"enabled": false},
	  "security": {"auth": {"selectedType": "gemini-api-key"}}
	}
	EOF
}

fakeapi_teardown() {
	if [ -n "$FAKEAPI_PID" ]; then
		kill "$FAKEAPI_PID" 2>/dev/null
		wait "$FAKEAPI_PID" 2>/dev/null
		FAKEAPI_PID=""
	fi
	if [ -n "$FAKEAPI_WORK" ] && [ "${FAKEAPI_KEEP:-0}" != 1 ]; then
		rm -rf "$FAKEAPI_WORK"
	elif [ -n "$FAKEAPI_WORK" ]; then
		echo "fakeapi: kept $FAKEAPI_WORK" >&2
	fi
}

# fakeapi_now: seconds since the epoch with milliseconds.
fakeapi_now() {
	date +%s.%3N
}

# fakeapi_timed NAME SECONDS CMD...: run CMD under `timeout SECONDS` (times
# SLOW; KILL 5 s later), then print "NAME: exit=RC seconds=T requests=N" on
# stderr, where N counts the model requests the server saw (since
# fakeapi_setup, when the server is shared).  Returns CMD's
# status.  The timeout is a safety net for a CLI that hangs (the run-*.sh
# scripts give 180 s): a CLI on a busy 2-core machine takes a minute.
fakeapi_timed() {
	local name=$1 secs=$(($2 * ${SLOW:-1})) t0 t1 rc n
	shift 2
	t0=$(fakeapi_now)
	timeout -k 5 "$secs" "$@"
	rc=$?
	t1=$(fakeapi_now)
	n=$(grep -c '"api":' "$FAKEAPI_LOG" 2>/dev/null)
	n=$((${n:-0} - ${FAKEAPI_LOG_START:-0}))
	echo "$name: exit=$rc seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') requests=$n" >&2
	[ $rc = 124 ] && echo "$name: TIMED OUT after ${secs}s" >&2
	return $rc
}
