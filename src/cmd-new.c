/*
 * corral new agent: write a working agent, in Python, C or sh, and a
 * workflow that runs it, to start from.
 *
 *   corral new agent NAME [--python | --c | --sh] [--dir DIR]
 *
 * It writes NAME.py (or NAME.c, NAME.sh) and NAME.yaml in DIR (the
 * current directory by default), never over a file that exists, and
 * prints how to run it and the lines that add it to a workflow of one's
 * own.  The agent answers every request with a finalize that quotes the
 * goal, answers pings, and leaves notices, messages and child results
 * unanswered, as docs/protocol.md asks.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "cmd.h"

/* A language: its file's suffix, its cmd: and its template (@NAME@). */
struct cmd_new_lang {
	const char	*option;
	const char	*suffix;
	const char	*cmd;		/* what cmd: runs, @NAME@ in it */
	int		 executable;
	const char	*build;		/* a step before it runs, or NULL */
	const char	*text;
};

static const struct cmd_new_lang cmd_new_langs[] = {
	{ "python", ".py", "./@NAME@.py", 1, NULL,
"#!/usr/bin/env python3\n"
"\"\"\"@NAME@: a corral agent in Python.\n"
"\n"
"    corral run @NAME@.yaml --goal \"hello\"\n"
"\n"
"corral puts its corral_agent module on the agent's PYTHONPATH; to run it\n"
"elsewhere, pip install corral's agents/python.  docs/writing-agents.md\n"
"has the module's API: next actions, artifacts, sub-agents.\n"
"\"\"\"\n"
"from corral_agent import Agent\n"
"\n"
"agent = Agent(\"@NAME@\")\n"
"\n"
"\n"
"@agent.on(\"*\")\n"
"def answer(req):\n"
"    # req.intent, req.task and req.text (content.text, the goal) are the\n"
"    # request's; finalize ends the run with this reply as its result.\n"
"    return agent.reply(req, \"@NAME@ got: \" + req.text, "
    "intent=\"finalize\",\n"
"                       confidence=0.9)\n"
"\n"
"\n"
"if __name__ == \"__main__\":\n"
"    raise SystemExit(agent.run())\n" },
	{ "c", ".c", "./@NAME@", 0,
	    "cc -o @NAME@ @NAME@.c $(pkg-config --cflags --libs jansson)",
"/*\n"
" * @NAME@: a corral agent in C, with jansson (libjansson-dev).\n"
" *\n"
" *   cc -o @NAME@ @NAME@.c $(pkg-config --cflags --libs jansson)\n"
" *   corral run @NAME@.yaml --goal \"hello\"\n"
" *\n"
" * One JSON object a line on stdin; one reply a line on stdout; anything\n"
" * else on stderr, which corral logs (docs/protocol.md).\n"
" */\n"
"\n"
"#include <stdio.h>\n"
"#include <stdlib.h>\n"
"#include <string.h>\n"
"\n"
"#include <jansson.h>\n"
"\n"
"/* Write one JSON object, a line. */\n"
"static void\n"
"put(json_t *j)\n"
"{\n"
"\tchar\t*s = json_dumps(j, JSON_COMPACT);\n"
"\n"
"\tif (s != NULL)\n"
"\t\tprintf(\"%s\\n\", s);\n"
"\tfree(s);\n"
"\tfflush(stdout);\n"
"}\n"
"\n"
"/* Answer a request: a finalize that ends the run with this result. */\n"
"static void\n"
"answer(json_t *req)\n"
"{\n"
"\tconst char\t*text, *task, *id, *me;\n"
"\tchar\t\t buf[4096];\n"
"\tjson_t\t\t*reply;\n"
"\n"
"\ttext = json_string_value(json_object_get(json_object_get(req,\n"
"\t    \"content\"), \"text\"));\n"
"\ttask = json_string_value(json_object_get(req, \"task\"));\n"
"\tid = json_string_value(json_object_get(json_object_get(req, \"trace\"),\n"
"\t    \"id\"));\n"
"\tif ((me = getenv(\"CORRAL_AGENT_ID\")) == NULL)\n"
"\t\tme = \"@NAME@\";\n"
"\tsnprintf(buf, sizeof buf, \"@NAME@ got: %s\", text != NULL ? text : \"\");\n"
"\treply = json_pack(\"{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, \"\n"
"\t    \"s:{s:s, s:s}, s:{s:f}}\", \"protocol\", \"multiagent-1.0\", "
    "\"role\",\n"
"\t    \"agent\", \"agent\", \"id\", me, \"name\", \"@NAME@\", "
    "\"model\", \"c\",\n"
"\t    \"intent\", \"finalize\",\n"
"\t    \"task\", task != NULL ? task : \"answer\", \"content\", "
    "\"type\", \"text\",\n"
"\t    \"text\", buf, \"confidence\", \"score\", 0.9);\n"
"\tif (id != NULL)\n"
"\t\tjson_object_set_new(reply, \"trace\", json_pack(\"{s:[s]}\",\n"
"\t\t    \"parents\", id));\n"
"\tput(reply);\n"
"\tjson_decref(reply);\n"
"}\n"
"\n"
"int\n"
"main(void)\n"
"{\n"
"\tchar\t\t*line = NULL;\n"
"\tsize_t\t\t cap = 0;\n"
"\tssize_t\t\t n;\n"
"\tjson_t\t\t*in, *id, *kind;\n"
"\tconst char\t*method;\n"
"\n"
"\twhile ((n = getline(&line, &cap, stdin)) != -1) {\n"
"\t\tif ((in = json_loadb(line, (size_t)n, 0, NULL)) == NULL) {\n"
"\t\t\tfprintf(stderr, \"@NAME@: a line that is not JSON\\n\");\n"
"\t\t\tcontinue;\n"
"\t\t}\n"
"\t\tkind = json_object_get(json_object_get(in, \"corral\"), \"kind\");\n"
"\t\tif (json_object_get(in, \"jsonrpc\") != NULL) {\n"
"\t\t\t/* corral's heartbeat: answer ping, nothing else. */\n"
"\t\t\tmethod = json_string_value(json_object_get(in, \"method\"));\n"
"\t\t\tid = json_object_get(in, \"id\");\n"
"\t\t\tif (method != NULL && strcmp(method, \"ping\") == 0 &&\n"
"\t\t\t    id != NULL) {\n"
"\t\t\t\tjson_t *r = json_pack(\"{s:s, s:O, s:{}}\", \"jsonrpc\",\n"
"\t\t\t\t    \"2.0\", \"id\", id, \"result\");\n"
"\t\t\t\tput(r);\n"
"\t\t\t\tjson_decref(r);\n"
"\t\t\t}\n"
"\t\t} else if (kind == NULL ||\n"
"\t\t    strcmp(json_string_value(kind), \"task\") == 0)\n"
"\t\t\tanswer(in);\t/* a request, or a child's task */\n"
"\t\t/* Notices, messages, child results: never answered. */\n"
"\t\tjson_decref(in);\n"
"\t}\n"
"\tfree(line);\n"
"\treturn 0;\n"
"}\n" },
	{ "sh", ".sh", "./@NAME@.sh", 1, NULL,
"#!/bin/sh\n"
"# @NAME@: a corral agent in POSIX sh, no jq: it picks what it needs out\n"
"# of each line with sed and prints its reply with printf.\n"
"#\n"
"#   corral run @NAME@.yaml --goal \"hello\"\n"
"#\n"
"# Pings are answered; notices, messages and child results are not\n"
"# (docs/protocol.md).  Log to stderr: stdout is the protocol's.\n"
"\n"
"me=${CORRAL_AGENT_ID:-@NAME@}\n"
"\n"
"# Print the first capture of a sed -E substitution applied to a line.\n"
"pick() {\n"
"\tprintf '%s\\n' \"$1\" | sed -nE \"s/$2/\\\\1/p\" | head -n 1\n"
"}\n"
"\n"
"while IFS= read -r line || [ -n \"$line\" ]; do\n"
"\tcase $line in\n"
"\t*'\"jsonrpc\"'*)\n"
"\t\tcase $line in\n"
"\t\t*'\"method\":\"ping\"'*)\n"
"\t\t\trid=$(pick \"$line\" '.*\"id\":([0-9]+|\"[^\"]*\").*')\n"
"\t\t\tprintf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\\n' \"$rid\"\n"
"\t\t\t;;\n"
"\t\tesac\n"
"\t\tcontinue\n"
"\t\t;;\n"
"\t*'\"kind\":\"notice\"'*|*'\"kind\":\"message\"'*|"
    "*'\"kind\":\"child_result\"'*| \\\n"
"\t*'\"kind\":\"cancel\"'*|*'\"kind\":\"progress\"'*)\n"
"\t\tcontinue\n"
"\t\t;;\n"
"\tesac\n"
"\t# JSON string contents are copied raw, so their escapes stay valid.\n"
"\tid=$(pick \"$line\" '.*\"trace\":\\{[^}]*\"id\":\"([^\"]*)\".*')\n"
"\ttext=$(pick \"$line\" "
    "'.*\"content\":\\{[^}]*\"text\":\"(([^\"\\\\]|\\\\.)*)\".*')\n"
"\tprintf '{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
    "\"agent\":{\"id\":\"%s\",\"name\":\"@NAME@\",\"model\":\"sh\"},"
    "\"intent\":\"finalize\",\"task\":\"answer\",\"content\":{\"type\":"
    "\"text\",\"text\":\"@NAME@ got: %s\"},\"confidence\":{\"score\":"
    "0.9},\"trace\":{\"parents\":[\"%s\"]}}\\n' \\\n"
"\t    \"$me\" \"$text\" \"$id\"\n"
"done\n" },
};

/* Write text with @NAME@ replaced to a new file; -1 after saying why. */
static int
cmd_new_write(const char *path, const char *text, const char *name,
    int executable)
{
	const char	*p, *at;
	FILE		*f;
	int		 fd;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    executable ? 0755 : 0644);
	if (fd == -1 || (f = fdopen(fd, "w")) == NULL) {
		fprintf(stderr, "corral: new: %s: %s%s\n", path,
		    strerror(errno), errno == EEXIST ? " (it is left as it "
		    "is)" : "");
		if (fd != -1)
			close(fd);
		return -1;
	}
	for (p = text; (at = strstr(p, "@NAME@")) != NULL; p = at + 6) {
		fwrite(p, 1, (size_t)(at - p), f);
		fputs(name, f);
	}
	fputs(p, f);
	if (fclose(f) != 0) {
		fprintf(stderr, "corral: new: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The workflow that runs the agent, @NAME@ in it, into buf. */
static void
cmd_new_workflow(const struct cmd_new_lang *l, char *buf, size_t len)
{
	snprintf(buf, len, "# A workflow that runs @NAME@, made by corral new "
	    "agent:\n"
	    "#   corral run @NAME@.yaml --goal \"hello\"\n"
	    "agents:\n"
	    "  @NAME@:\n"
	    "    cmd: [%s]\n"
	    "routes:\n"
	    "  \"*\": @NAME@\n", l->cmd);
}

/* Print text with @NAME@ replaced, each line after indent. */
static void
cmd_new_print(const char *text, const char *name, const char *indent)
{
	const char	*p, *at;

	fputs(indent, stdout);
	for (p = text; *p != '\0'; p++) {
		if ((at = strstr(p, "@NAME@")) == p) {
			fputs(name, stdout);
			p += 5;
			continue;
		}
		putchar(*p);
		if (*p == '\n' && p[1] != '\0')
			fputs(indent, stdout);
	}
}

/* corral new agent NAME. */
static int
cmd_new_exec(struct cmd *c)
{
	const struct cmd_new_lang	*l = &cmd_new_langs[0];
	const char			*dir = cmd_get(c, "dir"), *name, *o;
	char				 agent[1024], wf[1024], yaml[512];
	size_t				 i, j;
	int				 rc;

	if (strcmp(c->argv[0], "agent") != 0)
		return cmd_usage(c);
	name = c->argv[1];
	if (!protocol_agent_name(name)) {
		fprintf(stderr, "corral: new: '%s' is not a valid agent name "
		    "(letters, digits, '_' and '-', at most 48)\n", name);
		return EXIT_USAGE;
	}
	/* --python, --c, --sh: the last one given. */
	for (i = 0; i < c->nvalues; i++) {
		o = c->values[i].option->name;
		for (j = 0; j < sizeof cmd_new_langs / sizeof cmd_new_langs[0];
		    j++)
			if (strcmp(o, cmd_new_langs[j].option) == 0)
				l = &cmd_new_langs[j];
	}
	if (dir == NULL)
		dir = ".";
	snprintf(agent, sizeof agent, "%s/%s%s", dir, name, l->suffix);
	snprintf(wf, sizeof wf, "%s/%s.yaml", dir, name);
	if (access(wf, F_OK) == 0) {
		fprintf(stderr, "corral: new: %s exists (it is left as it "
		    "is)\n", wf);
		return 1;
	}
	if (cmd_new_write(agent, l->text, name, l->executable) != 0)
		return 1;
	cmd_new_workflow(l, yaml, sizeof yaml);
	rc = cmd_new_write(wf, yaml, name, 0);
	if (rc != 0)
		(void)unlink(agent);
	else {
		printf("wrote %s, the agent, and %s, a workflow that runs it.\n"
		    "Run it:\n", agent, wf);
		if (l->build != NULL && strcmp(dir, ".") == 0) {
			cmd_new_print(l->build, name, "  ");
			printf("\n");
		} else if (l->build != NULL) {
			printf("  (cd %s && ", dir);
			cmd_new_print(l->build, name, "");
			printf(")\n");
		}
		printf("  corral run %s --goal \"hello\"\n"
		    "A workflow of your own runs it with (cmd: is relative to "
		    "the workflow file):\n", wf);
		cmd_new_print(strstr(yaml, "agents:"), name, "  ");
	}
	return rc != 0;
}

static const struct cmd_option cmd_new_options[] = {
	{ "python", 0, 0 },
	{ "c", 0, 0 },
	{ "sh", 0, 0 },
	{ "dir", 0, 1 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_new_entry = {
	.name = "new",
	.args = "agent NAME [--python | --c | --sh] [--dir DIR]",
	.about = "write an agent to start from, and a workflow that runs it",
	.options = cmd_new_options,
	.lower = 2,
	.upper = 2,
	.exec = cmd_new_exec,
};
