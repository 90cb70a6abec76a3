# The pinned MAP SDK and where install.sh puts it.  Sourced by install.sh
# and selftest.sh after they set $here to this directory.  The pin itself
# lives in package.json (with package-lock.json for the whole tree), the
# one place to change it; lib/sdk.mjs reads the same file.
MAP_SDK_PKG=@multi-agent-protocol/sdk
MAP_SDK_VERSION=$(sed -n 's/.*"@multi-agent-protocol\/sdk": *"\([^"]*\)".*/\1/p' "$here/package.json" | head -1)

# Outside the source tree, one prefix per pinned version (as tests/fakeapi).
CORRAL_NPM_CACHE=${CORRAL_NPM_CACHE:-/var/tmp/corral-npm}
MAP_SDK_PREFIX=${MAP_SDK_PREFIX:-$CORRAL_NPM_CACHE/map-sdk-$MAP_SDK_VERSION}
MAP_SDK_DIR=$MAP_SDK_PREFIX/node_modules/$MAP_SDK_PKG
export CORRAL_NPM_CACHE MAP_SDK_PREFIX
