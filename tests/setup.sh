#!/bin/sh
# Shared set-up for examples/demo.sh and tests/check.sh: install what a fresh
# Debian 12 machine lacks (as root, or through sudo), then configure and
# build.  Source it with BUILD (the build directory) and CMAKE_ARGS set.

corral_setup_packages() {
	pkgs="cmake make gcc pkg-config libev-dev libbsd-dev libmd-dev libjansson-dev
	    libfyaml-dev libcmocka-dev procps $CORRAL_EXTRA_PACKAGES"
	missing=""
	for p in $pkgs; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -eq 0 ]; then
		SUDO=""
	elif command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "setup: missing packages:$missing (run as root or install sudo)" >&2
		return 1
	fi
	echo "setup: installing$missing" >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || return 1
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	    --no-install-recommends $missing >&2
}

corral_build() {
	dir="$1"
	shift
	cmake -S . -B "$dir" "$@" >/dev/null || return 1
	cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" >&2
}
