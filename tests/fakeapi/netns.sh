#!/bin/bash
# netns.sh CMD [ARGS...]: run CMD in a fresh network namespace whose only
# interface is loopback, up (unshare --net; as non-root unshare --user
# --map-root-user --net).  Where namespaces cannot be made, CMD runs without
# isolation and a note goes to stderr.  No fake server: see with-fakeapi.sh.
. "$(dirname "$0")/lib.sh"
fakeapi_netns "$0" "$@"
[ $# -gt 0 ] || { echo "usage: netns.sh CMD [ARGS...]" >&2; exit 2; }
exec "$@"
