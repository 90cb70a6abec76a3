# Pinned versions of the real programs the fake-API harness runs.
# Sourced by install.sh and the run-*.sh scripts: the one place to change them.
# Chosen as the registry's "latest" when this harness was written.
CLAUDE_PKG=@anthropic-ai/claude-code
CLAUDE_VERSION=2.1.330
CODEX_PKG=@openai/codex
CODEX_VERSION=0.169.0
GEMINI_PKG=@google/gemini-cli
GEMINI_VERSION=0.61.0
MCP_PKG=@modelcontextprotocol/server-everything
MCP_VERSION=2026.8.31

# Where install.sh puts them (outside the source tree); one prefix per tool.
CORRAL_NPM_CACHE=${CORRAL_NPM_CACHE:-/var/tmp/corral-npm}
CLAUDE_PREFIX=$CORRAL_NPM_CACHE/claude-$CLAUDE_VERSION
CODEX_PREFIX=$CORRAL_NPM_CACHE/codex-$CODEX_VERSION
GEMINI_PREFIX=$CORRAL_NPM_CACHE/gemini-$GEMINI_VERSION
MCP_PREFIX=$CORRAL_NPM_CACHE/mcp-everything-$MCP_VERSION
CLAUDE_BIN=$CLAUDE_PREFIX/node_modules/.bin/claude
CODEX_BIN=$CODEX_PREFIX/node_modules/.bin/codex
GEMINI_BIN=$GEMINI_PREFIX/node_modules/.bin/gemini
MCP_BIN=$MCP_PREFIX/node_modules/.bin/mcp-server-everything
