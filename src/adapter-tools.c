/*
 * corral's tools for the model inside a wrapped CLI: an entry's tools:
 * (spawn, wait, send, list, stop) offered to Claude Code, Codex or Gemini
 * as the MCP server `corral mcp` (cmd-mcp.c), which acts on the control
 * socket as the agent whose CLI started it (docs/subagents.md).
 *
 * Each CLI is told of the server its own way, and never in the user's own
 * configuration: Claude Code by --mcp-config, a file in the agent's
 * private directory, with --allowedTools naming the tools; Codex by -c
 * overrides of mcp_servers.corral on its command line; Gemini, which
 * reads MCP servers only from settings files, by a private GEMINI_CLI_HOME
 * whose .gemini/settings.json is the user's with the server added, and
 * whose other entries link to the user's own (logins, sessions).
 *
 * The socket's path and the agent's credential reach `corral mcp` in its
 * environment (CORRAL_CONTROL, CORRAL_AGENT_TOKEN), which the CLIs pass
 * on: Claude Code whole, Codex the variables env_vars names, Gemini those
 * its redaction lets through, so the credential is never written to a
 * file or a command line.  Without a socket (--no-control), or for an
 * agent run as another user (it could not reach the socket), the tools
 * are not offered, and the log says why.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

/* The tools, in the order of their TOOL_* bits. */
static const struct {
	unsigned int	 bit;
	const char	*word;		/* in tools: and corral mcp --tools */
	const char	*name;		/* the MCP tool */
} adapter_tools_table[] = {
	{ TOOL_SPAWN,	"spawn",	"spawn_agent" },
	{ TOOL_WAIT,	"wait",		"wait_agents" },
	{ TOOL_SEND,	"send",		"send_message" },
	{ TOOL_LIST,	"list",		"list_agents" },
	{ TOOL_STOP,	"stop",		"stop_agent" },
};
#define ADAPTER_TOOLS	(sizeof adapter_tools_table / \
			    sizeof adapter_tools_table[0])

/* The server's name in each CLI's configuration. */
#define ADAPTER_TOOLS_SERVER	"corral"

static struct {
	char	*exe;		/* corral's own binary */
	char	*socket;	/* the control socket, or NULL */
	char	*dir;		/* the run's private directory, or NULL */
} adapter_tools_run;

/*
 * Learn how agents reach corral: its binary, its control socket (NULL:
 * none) and the run's private directory for the CLIs' configurations.
 */
void
adapter_tools_init(const char *exe, const char *socket, const char *dir)
{
	free(adapter_tools_run.exe);
	free(adapter_tools_run.socket);
	free(adapter_tools_run.dir);
	adapter_tools_run.exe = exe != NULL ? xstrdup(exe) : NULL;
	adapter_tools_run.socket = socket != NULL ? xstrdup(socket) : NULL;
	adapter_tools_run.dir = dir != NULL ? xstrdup(dir) : NULL;
}

/* corral's binary, which the CLIs run as `corral mcp`. */
const char *
adapter_tools_exe(void)
{
	return adapter_tools_run.exe;
}

/* The tools: words of an agent, comma-separated (corral mcp --tools). */
const char *
adapter_tools_list(const struct agent *a)
{
	static char	buf[64];
	size_t		i;

	buf[0] = '\0';
	for (i = 0; i < ADAPTER_TOOLS; i++) {
		if (!(a->conf->tools & adapter_tools_table[i].bit))
			continue;
		if (buf[0] != '\0')
			strlcat(buf, ",", sizeof buf);
		strlcat(buf, adapter_tools_table[i].word, sizeof buf);
	}
	return buf;
}

/* The MCP names of an agent's tools, each after prefix, comma-separated. */
void
adapter_tools_names(const struct agent *a, const char *prefix, char *buf,
    size_t len)
{
	size_t	i;

	buf[0] = '\0';
	for (i = 0; i < ADAPTER_TOOLS; i++) {
		if (!(a->conf->tools & adapter_tools_table[i].bit))
			continue;
		if (buf[0] != '\0')
			strlcat(buf, ",", len);
		strlcat(buf, prefix, len);
		strlcat(buf, adapter_tools_table[i].name, len);
	}
}

/*
 * Whether the agent's CLI is offered tools: its entry asks for some and
 * it can reach the socket.  Then dir holds its private directory (made,
 * mode 0700).  When it asks but cannot, the log says why, once.
 */
int
adapter_tools(struct agent *a, char *dir, size_t len)
{
	const char	*why = NULL;

	if (a->conf->tools == 0 || a->adapter == NULL)
		return 0;
	if (adapter_tools_run.socket == NULL)
		why = "corral has no control socket (--no-control, or it could "
		    "not be made)";
	else if (a->conf->user != NULL)
		why = "it runs as another user, who cannot reach the control "
		    "socket";
	else if (adapter_tools_run.exe == NULL || adapter_tools_run.dir == NULL)
		why = "corral could not find its own binary or make its run "
		    "directory";
	if (why == NULL) {
		snprintf(dir, len, "%s/%s", adapter_tools_run.dir, a->id);
		if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
			log_warn("agent %s: tools: mkdir %s", a->id, dir);
			why = "its private directory could not be made";
		}
	}
	if (why != NULL) {
		if (!a->adapter->tools_warned)
			log_warnx("agent %s: tools (%s) are not offered to its "
			    "CLI: %s", a->id, adapter_tools_list(a), why);
		a->adapter->tools_warned = 1;
		return 0;
	}
	return 1;
}

/*
 * Set NAME=value in the environment the adapter adds to its processes,
 * replacing an earlier value.
 */
void
adapter_set_env(struct agent *a, const char *name, const char *value)
{
	char	**env = a->adapter->env, *s;
	size_t	  n = 0, kl = strlen(name);

	xasprintf(&s, "%s=%s", name, value);
	for (; env != NULL && env[n] != NULL; n++) {
		if (strncmp(env[n], name, kl) == 0 && env[n][kl] == '=') {
			free(env[n]);
			env[n] = s;
			return;
		}
	}
	env = xreallocarray(env, n + 2, sizeof *env);
	env[n] = s;
	env[n + 1] = NULL;
	a->adapter->env = env;
}

/* Write a JSON document to path, mode 0600.  Returns 0, or -1 (logged). */
static int
adapter_tools_write(struct agent *a, const char *path, json_t *doc)
{
	char	tmp[1100];
	int	fd, rc;

	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	(void)unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) == -1) {
		log_warn("agent %s: tools: %s", a->id, tmp);
		return -1;
	}
	rc = jsonw_dumpfd(doc, fd, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	if (close(fd) == -1 || rc != 0 || rename(tmp, path) == -1) {
		log_warn("agent %s: tools: %s", a->id, path);
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

/* The MCP server's command line arguments: mcp --tools LIST. */
static json_t *
adapter_tools_server_args(struct agent *a)
{
	return json_pack("[s, s, s]", "mcp", "--tools", adapter_tools_list(a));
}

/*
 * Claude Code: --mcp-config FILE (the server, its tools always loaded,
 * never deferred behind tool search, and an hour for a call, longer than
 * corral mcp's own waits) and --allowedTools naming them, so that -p mode
 * does not refuse them for want of a permission.
 */
static char **
adapter_tools_claude(struct agent *a, const char *dir)
{
	char	**v, path[1024], names[512];
	json_t	*doc;
	int	  rc;

	snprintf(path, sizeof path, "%s/mcp.json", dir);
	doc = json_pack("{s:{s:{s:s, s:s, s:o, s:b, s:i}}}", "mcpServers",
	    ADAPTER_TOOLS_SERVER, "type", "stdio", "command",
	    adapter_tools_run.exe, "args", adapter_tools_server_args(a),
	    "alwaysLoad", 1, "timeout", 3600000);
	rc = adapter_tools_write(a, path, doc);
	json_decref(doc);
	if (rc != 0)
		return NULL;
	adapter_tools_names(a, "mcp__" ADAPTER_TOOLS_SERVER "__", names,
	    sizeof names);
	v = xcalloc(5, sizeof *v);
	v[0] = xstrdup("--mcp-config");
	v[1] = xstrdup(path);
	v[2] = xstrdup("--allowedTools");
	v[3] = xstrdup(names);
	return v;
}

/* A TOML basic string: quoted, with quotes, backslashes, controls escaped. */
static void
adapter_tools_toml(char *buf, size_t len, const char *s)
{
	size_t	n = 0;

	if (len < 3)
		return;
	buf[n++] = '"';
	for (; *s != '\0' && n + 8 < len; s++) {
		if (*s == '"' || *s == '\\') {
			buf[n++] = '\\';
			buf[n++] = *s;
		} else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			n += (size_t)snprintf(buf + n, len - n, "\\u%04x",
			    (unsigned char)*s);
		else
			buf[n++] = *s;
	}
	buf[n++] = '"';
	buf[n] = '\0';
}

/*
 * Codex: -c overrides of mcp_servers.corral (nothing written), its tools
 * approved in advance, the two variables passed on, and a tool timeout
 * longer than corral mcp's own waits.
 */
static char **
adapter_tools_codex(struct agent *a)
{
	char	**v, exe[2048], buf[2100];
	size_t	  n = 0;

	v = xcalloc(13, sizeof *v);
	adapter_tools_toml(exe, sizeof exe, adapter_tools_run.exe);
#define CODEX_SET(fmt, ...) do {					\
	snprintf(buf, sizeof buf, "mcp_servers." ADAPTER_TOOLS_SERVER "."	\
	    fmt, __VA_ARGS__);						\
	v[n++] = xstrdup("-c");						\
	v[n++] = xstrdup(buf);						\
} while (0)
	CODEX_SET("command=%s", exe);
	CODEX_SET("args=[\"mcp\", \"--tools\", \"%s\"]", adapter_tools_list(a));
	CODEX_SET("env_vars=[%s]", "\"CORRAL_CONTROL\", \"CORRAL_AGENT_TOKEN\"");
	CODEX_SET("default_tools_approval_mode=%s", "\"approve\"");
	CODEX_SET("tool_timeout_sec=%d", 3600);
	CODEX_SET("startup_timeout_sec=%d", 30);
#undef CODEX_SET
	return v;
}

/*
 * The user's Gemini settings directory, as the agent's environment names
 * it: GEMINI_CLI_HOME, else HOME, each its env: first.
 */
static void
adapter_tools_gemini_source(struct agent *a, char *buf, size_t len)
{
	const char	*home = NULL, *gh = NULL;
	size_t		 i;

	for (i = 0; i < a->conf->nenv; i++) {
		if (strcmp(a->conf->env[i].key, "GEMINI_CLI_HOME") == 0)
			gh = a->conf->env[i].value;
		if (strcmp(a->conf->env[i].key, "HOME") == 0)
			home = a->conf->env[i].value;
	}
	if (gh == NULL)
		gh = getenv("GEMINI_CLI_HOME");
	if (home == NULL)
		home = getenv("HOME");
	snprintf(buf, len, "%s/.gemini", gh != NULL && *gh != '\0' ? gh :
	    home != NULL ? home : "/");
}

/*
 * Link every entry of the user's .gemini but settings.json into ours, so
 * that logins, trusted folders and sessions stay the user's.
 */
static void
adapter_tools_gemini_links(struct agent *a, const char *src, const char *dst)
{
	DIR		*d;
	struct dirent	*de;
	char		 from[1100], to[1100];

	if ((d = opendir(src)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, "settings.json") == 0)
			continue;
		snprintf(from, sizeof from, "%s/%s", src, de->d_name);
		snprintf(to, sizeof to, "%s/%s", dst, de->d_name);
		if (symlink(from, to) == -1 && errno != EEXIST)
			log_warn("agent %s: tools: symlink %s", a->id, to);
	}
	closedir(d);
}

/*
 * Gemini: a private GEMINI_CLI_HOME (the only place besides root-owned
 * system files and the project's own .gemini that it reads MCP servers
 * from).  Its settings.json is the user's, read as JSON, with the server
 * added (trusted: no confirmation in -p mode) and the two variables let
 * through Gemini's redaction of names holding TOKEN.
 */
static char **
adapter_tools_gemini(struct agent *a, const char *dir)
{
	char		 src[1024], home[1040], gdir[1060], path[1100];
	json_t		*doc, *servers, *sec, *red, *allowed;
	json_error_t	 e;

	adapter_tools_gemini_source(a, src, sizeof src);
	snprintf(home, sizeof home, "%s/gemini", dir);
	snprintf(gdir, sizeof gdir, "%s/.gemini", home);
	if ((mkdir(home, 0700) == -1 && errno != EEXIST) ||
	    (mkdir(gdir, 0700) == -1 && errno != EEXIST)) {
		log_warn("agent %s: tools: mkdir %s", a->id, gdir);
		return NULL;
	}
	snprintf(path, sizeof path, "%s/settings.json", src);
	doc = json_load_file(path, 0, &e);
	if (doc == NULL && access(path, F_OK) == 0)
		log_warnx("agent %s: tools: %s is not plain JSON (%s); Gemini "
		    "runs with corral's settings only", a->id, path, e.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		doc = json_object();
	}
	if (!json_is_object(servers = json_object_get(doc, "mcpServers"))) {
		servers = json_object();
		json_object_set_new(doc, "mcpServers", servers);
	}
	json_object_set_new(servers, ADAPTER_TOOLS_SERVER, json_pack(
	    "{s:s, s:o, s:b, s:i}", "command", adapter_tools_run.exe, "args",
	    adapter_tools_server_args(a), "trust", 1, "timeout", 3600000));
	if (!json_is_object(sec = json_object_get(doc, "security"))) {
		sec = json_object();
		json_object_set_new(doc, "security", sec);
	}
	if (!json_is_object(red = json_object_get(sec,
	    "environmentVariableRedaction"))) {
		red = json_object();
		json_object_set_new(sec, "environmentVariableRedaction", red);
	}
	if (!json_is_array(allowed = json_object_get(red, "allowed"))) {
		allowed = json_array();
		json_object_set_new(red, "allowed", allowed);
	}
	json_array_append_new(allowed, json_string("CORRAL_CONTROL"));
	json_array_append_new(allowed, json_string("CORRAL_AGENT_TOKEN"));
	snprintf(path, sizeof path, "%s/settings.json", gdir);
	if (adapter_tools_write(a, path, doc) != 0) {
		json_decref(doc);
		return NULL;
	}
	json_decref(doc);
	adapter_tools_gemini_links(a, src, gdir);
	adapter_set_env(a, "GEMINI_CLI_HOME", home);
	return xcalloc(1, sizeof(char *));
}

/*
 * The arguments to add to the command line of the agent's CLI (cli:
 * claude, codex or gemini) to offer it its tools, NULL-terminated, or
 * NULL when none are offered.  Free with adapter_free_argv.
 */
char **
adapter_tools_args(struct agent *a, const char *cli)
{
	char	dir[1024];

	if (!adapter_tools(a, dir, sizeof dir))
		return NULL;
	if (strcmp(cli, "claude") == 0)
		return adapter_tools_claude(a, dir);
	if (strcmp(cli, "codex") == 0)
		return adapter_tools_codex(a);
	if (strcmp(cli, "gemini") == 0)
		return adapter_tools_gemini(a, dir);
	return NULL;
}

/* How many arguments a list from adapter_tools_args holds. */
size_t
adapter_tools_count(char **v)
{
	size_t	n = 0;

	while (v != NULL && v[n] != NULL)
		n++;
	return n;
}
