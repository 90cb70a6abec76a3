#!/bin/sh
# Install the pinned MAP TypeScript SDK (package.json and package-lock.json
# beside this script) from the npm registry into $MAP_SDK_PREFIX (default
# $CORRAL_NPM_CACHE/map-sdk-<version>, CORRAL_NPM_CACHE default
# /var/tmp/corral-npm) with `npm ci`, so the whole dependency tree is the
# locked one.  Idempotent: nothing is done when that version is there and
# was installed from this lock file.
#   sh tests/map/install.sh
# Exit 0 when installed, 77 (printing SKIPPED: ...) when node/npm or the
# registry is not reachable, 1 on any other failure.
#
# --ignore-scripts: the SDK depends on agentic-mesh, which depends on
# better-sqlite3, whose install script fetches a prebuilt binary from
# outside the registry and falls back to compiling SQLite with node-gyp
# (a C++ toolchain, about a minute).  The SDK only loads it for its mesh
# transport, which nothing here uses (SPEC.md, "Installing").
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	echo "SKIPPED: node/npm not installed (apt-get install nodejs npm)"
	exit 77
fi
if [ -z "$MAP_SDK_VERSION" ]; then
	echo "install.sh: no $MAP_SDK_PKG pin in $here/package.json" >&2
	exit 1
fi

# installed: true when the pinned SDK is in the prefix and was installed
# from the same lock file.
installed() {
	v=$(node -e 'try{process.stdout.write(require(process.argv[1]).version)}catch(e){}' \
	    "$MAP_SDK_DIR/package.json" 2>/dev/null)
	[ "$v" = "$MAP_SDK_VERSION" ] &&
	    cmp -s "$here/package-lock.json" "$MAP_SDK_PREFIX/package-lock.json"
}

if installed; then
	echo "install.sh: $MAP_SDK_PKG@$MAP_SDK_VERSION already in $MAP_SDK_PREFIX"
	exit 0
fi
if ! timeout 30 npm view "$MAP_SDK_PKG@$MAP_SDK_VERSION" version >/dev/null 2>&1; then
	echo "SKIPPED: npm registry not reachable ($(npm config get registry 2>/dev/null))"
	exit 77
fi
mkdir -p "$MAP_SDK_PREFIX" || exit 1
echo "install.sh: installing $MAP_SDK_PKG@$MAP_SDK_VERSION into $MAP_SDK_PREFIX" >&2
start=$(date +%s)
# The prefix gets our package.json and lock: npm ci installs exactly that
# tree (and never walks up to a parent package.json).
cp "$here/package.json" "$here/package-lock.json" "$MAP_SDK_PREFIX/" || exit 1
if ! timeout 900 npm ci --prefix "$MAP_SDK_PREFIX" --ignore-scripts --no-audit \
    --no-fund --loglevel=error >"$MAP_SDK_PREFIX/install.log" 2>&1; then
	echo "install.sh: npm ci failed, see $MAP_SDK_PREFIX/install.log" >&2
	tail -5 "$MAP_SDK_PREFIX/install.log" >&2
	# A half-done install must not pass for a done one next time.
	rm -f "$MAP_SDK_PREFIX/package-lock.json"
	if grep -Eqi 'ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|network' "$MAP_SDK_PREFIX/install.log"; then
		echo "SKIPPED: npm registry not reachable"
		exit 77
	fi
	exit 1
fi
if ! installed; then
	echo "install.sh: $MAP_SDK_PKG@$MAP_SDK_VERSION installed but not found in $MAP_SDK_DIR" >&2
	exit 1
fi
echo "install.sh: $MAP_SDK_PKG@$MAP_SDK_VERSION installed in $(($(date +%s) - start))s ($(du -sh "$MAP_SDK_PREFIX" | cut -f1))"
exit 0
