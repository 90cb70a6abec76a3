#!/bin/sh
# Install the pinned real CLIs (see versions.sh) from the npm registry into
# $CORRAL_NPM_CACHE (default /var/tmp/corral-npm), one --prefix per tool.
# Idempotent: a tool whose pinned version is already there is not touched.
#   sh tests/fakeapi/install.sh [claude] [codex] [gemini] [mcp]   (default: all)
# Exit 0 when all asked-for tools are installed, 77 (printing SKIPPED: ...)
# when npm or the registry is not reachable, 1 on any other failure.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

tools=${*:-claude codex gemini mcp}

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	echo "SKIPPED: node/npm not installed (apt-get install nodejs npm)"
	exit 77
fi

# installed PREFIX PKG VERSION BIN: true when BIN exists and the package's
# package.json carries VERSION.  Read with jq where there is one (every
# adapter test asks, and a node start costs ten times a jq one).
installed() {
	[ -x "$4" ] || [ -L "$4" ] || return 1
	if command -v jq >/dev/null 2>&1; then
		v=$(jq -j '.version // empty' "$1/node_modules/$2/package.json" 2>/dev/null)
	else
		v=$(node -e 'try{process.stdout.write(require(process.argv[1]).version)}catch(e){}' \
		    "$1/node_modules/$2/package.json" 2>/dev/null)
	fi
	[ "$v" = "$3" ]
}

# Tests running side by side (ctest -j) may ask for the same tool at
# once: one install.sh at a time, the others wait and then find it there.
mkdir -p "$CORRAL_NPM_CACHE" 2>/dev/null || true
lock=$CORRAL_NPM_CACHE/.install.lock
if command -v flock >/dev/null 2>&1 && [ -d "$CORRAL_NPM_CACHE" ] &&
    [ -w "$CORRAL_NPM_CACHE" ] && { [ ! -e "$lock" ] || [ -w "$lock" ]; }; then
	exec 9>>"$lock"
	flock 9
fi

registry_checked=""
check_registry() {
	[ -n "$registry_checked" ] && return 0
	if ! timeout 30 npm view "$CODEX_PKG@$CODEX_VERSION" version >/dev/null 2>&1; then
		echo "SKIPPED: npm registry not reachable ($(npm config get registry 2>/dev/null))"
		exit 77
	fi
	registry_checked=1
}

rc=0
for t in $tools; do
	case $t in
	claude) pfx=$CLAUDE_PREFIX pkg=$CLAUDE_PKG ver=$CLAUDE_VERSION bin=$CLAUDE_BIN ;;
	codex) pfx=$CODEX_PREFIX pkg=$CODEX_PKG ver=$CODEX_VERSION bin=$CODEX_BIN ;;
	gemini) pfx=$GEMINI_PREFIX pkg=$GEMINI_PKG ver=$GEMINI_VERSION bin=$GEMINI_BIN ;;
	mcp) pfx=$MCP_PREFIX pkg=$MCP_PKG ver=$MCP_VERSION bin=$MCP_BIN ;;
	*) echo "install.sh: unknown tool $t" >&2; exit 1 ;;
	esac
	if installed "$pfx" "$pkg" "$ver" "$bin"; then
		echo "install.sh: $pkg@$ver already in $pfx"
		continue
	fi
	check_registry
	mkdir -p "$pfx" || exit 1
	echo "install.sh: installing $pkg@$ver into $pfx" >&2
	start=$(date +%s)
	# A package.json of its own keeps npm from walking up to a parent one.
	[ -f "$pfx/package.json" ] || echo '{"name":"corral-fakeapi-cache","private":true}' >"$pfx/package.json"
	if ! timeout 900 npm install --prefix "$pfx" --no-audit --no-fund \
	    --loglevel=error "$pkg@$ver" >"$pfx/install.log" 2>&1; then
		echo "install.sh: npm install $pkg@$ver failed, see $pfx/install.log" >&2
		tail -5 "$pfx/install.log" >&2
		if grep -Eqi 'ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|network' "$pfx/install.log"; then
			echo "SKIPPED: npm registry not reachable"
			exit 77
		fi
		rc=1
		continue
	fi
	if ! installed "$pfx" "$pkg" "$ver" "$bin"; then
		echo "install.sh: $pkg@$ver installed but $bin is missing" >&2
		rc=1
		continue
	fi
	echo "install.sh: $pkg@$ver installed in $(($(date +%s) - start))s ($(du -sh "$pfx" | cut -f1))"
done
exit $rc
