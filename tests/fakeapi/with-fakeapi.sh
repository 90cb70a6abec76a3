#!/bin/bash
# with-fakeapi.sh CMD ARGS...
# Run CMD offline: in a fresh network namespace with only loopback (see
# lib.sh), with the fake API server running inside it, a fresh HOME, TMPDIR,
# CLAUDE_CONFIG_DIR, CODEX_HOME and Gemini settings, and every variable the
# real CLIs need to talk to the fake server (docs/cli-notes.md).  CMD runs
# in $FAKEAPI_CWD (an empty directory) unless FAKEAPI_CHDIR=0.
# Exit status: CMD's.  FAKEAPI_KEEP=1 keeps the scratch dir (request log in
# $FAKEAPI_WORK/requests.log); FAKEAPI_LOG=FILE puts the request log there.
. "$(dirname "$0")/lib.sh"
fakeapi_netns "$0" "$@"
[ $# -gt 0 ] || { echo "usage: with-fakeapi.sh CMD [ARGS...]" >&2; exit 2; }
fakeapi_setup || exit 1
trap fakeapi_teardown EXIT
if [ "${FAKEAPI_CHDIR:-1}" = 1 ]; then cd "$FAKEAPI_CWD" || exit 1; fi
"$@"
rc=$?
exit $rc
