#!/bin/sh
# Install the OpenTelemetry protocol's definitions (package.json and
# package-lock.json beside this script: @opentelemetry/otlp-proto-exporter-base,
# whose build/src/generated/root.js is code generated from opentelemetry-proto)
# from the npm registry into $OTLP_PREFIX (default
# $CORRAL_NPM_CACHE/otlp-proto-<version>, CORRAL_NPM_CACHE default
# /var/tmp/corral-npm) with `npm ci`.  Idempotent.
#   sh tests/otlp/install.sh
# Prints the prefix.  Exit 0 when installed, 77 (printing SKIPPED: ...)
# when node/npm or the registry is not reachable, 1 on any other failure.
here=$(cd "$(dirname "$0")" && pwd)
pkg=@opentelemetry/otlp-proto-exporter-base
ver=$(sed -n 's/.*"@opentelemetry\/otlp-proto-exporter-base": "\([^"]*\)".*/\1/p' "$here/package.json")
: "${CORRAL_NPM_CACHE:=/var/tmp/corral-npm}"
: "${OTLP_PREFIX:=$CORRAL_NPM_CACHE/otlp-proto-$ver}"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	echo "SKIPPED: node/npm not installed (apt-get install nodejs npm)"
	exit 77
fi
root="$OTLP_PREFIX/node_modules/$pkg/build/src/generated/root.js"
if [ -f "$root" ] && cmp -s "$here/package-lock.json" "$OTLP_PREFIX/package-lock.json"; then
	echo "$OTLP_PREFIX"
	exit 0
fi
if ! timeout 30 npm view "$pkg@$ver" version >/dev/null 2>&1; then
	echo "SKIPPED: npm registry not reachable ($(npm config get registry 2>/dev/null))"
	exit 77
fi
mkdir -p "$OTLP_PREFIX" || exit 1
cp "$here/package.json" "$here/package-lock.json" "$OTLP_PREFIX/" || exit 1
if ! timeout 600 npm ci --prefix "$OTLP_PREFIX" --ignore-scripts --no-audit \
    --no-fund --loglevel=error >"$OTLP_PREFIX/install.log" 2>&1; then
	rm -f "$OTLP_PREFIX/package-lock.json"
	if grep -Eqi 'ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|network' "$OTLP_PREFIX/install.log"; then
		echo "SKIPPED: npm registry not reachable"
		exit 77
	fi
	echo "install.sh: npm ci failed, see $OTLP_PREFIX/install.log" >&2
	exit 1
fi
[ -f "$root" ] || { echo "install.sh: no $root after npm ci" >&2; exit 1; }
echo "$OTLP_PREFIX"
