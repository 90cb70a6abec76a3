/*
 * Confinement with Landlock, Linux's unprivileged sandbox: an agent's
 * confine: (docs/workflow.md) as a Landlock ruleset.
 *
 * The ruleset is made here, in corral, where paths can be opened and a
 * problem reported with the path's name; spawn.c only hands it to
 * landlock_restrict_self in the child, just before exec.  Whatever the
 * agent starts inherits the restriction, and nothing can lift it.
 *
 * Each Landlock ABI version adds rights.  A right this kernel does not
 * know is left out, so a ruleset works on any version (best effort), and
 * confine_gaps says what that leaves unenforced: corral logs it once, and
 * confine: {required: true} refuses to run without it.  The policy itself
 * is written down in docs/reliability.md ("Confinement").
 */

#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/landlock.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

/* What older headers lack (the kernel may still have it). */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset	444
#define SYS_landlock_add_rule		445
#define SYS_landlock_restrict_self	446
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE	(1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV	(1ULL << 15)
#endif
#define CONFINE_NET_CONNECT_TCP		(1ULL << 1)
#define CONFINE_SCOPE_ABSTRACT_UNIX	(1ULL << 0)
#define CONFINE_SCOPE_SIGNAL		(1ULL << 1)
#define CONFINE_RULE_NET_PORT		2

/* The ABI versions that brought what corral uses. */
#define CONFINE_ABI_TRUNCATE	3
#define CONFINE_ABI_NET		4
#define CONFINE_ABI_IOCTL	5
#define CONFINE_ABI_SCOPE	6
#define CONFINE_ABI_KNOWN	7

#define CONFINE_FS_READ		(LANDLOCK_ACCESS_FS_EXECUTE | \
				 LANDLOCK_ACCESS_FS_READ_FILE | \
				 LANDLOCK_ACCESS_FS_READ_DIR)
#define CONFINE_FS_FILE		(LANDLOCK_ACCESS_FS_EXECUTE | \
				 LANDLOCK_ACCESS_FS_WRITE_FILE | \
				 LANDLOCK_ACCESS_FS_READ_FILE | \
				 LANDLOCK_ACCESS_FS_TRUNCATE | \
				 LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define CONFINE_FS_DEVICE	(LANDLOCK_ACCESS_FS_WRITE_FILE | \
				 LANDLOCK_ACCESS_FS_READ_FILE | \
				 LANDLOCK_ACCESS_FS_READ_DIR | \
				 LANDLOCK_ACCESS_FS_TRUNCATE | \
				 LANDLOCK_ACCESS_FS_IOCTL_DEV)

/*
 * The ruleset's attributes as this file knows them; a kernel with an
 * older ABI takes the larger struct as long as what it lacks is zero.
 */
struct confine_ruleset_attr {
	uint64_t	fs;
	uint64_t	net;
	uint64_t	scoped;
};

struct confine_port_attr {
	uint64_t	allowed;
	uint64_t	port;
};

/* What every agent reads when read: narrows reads, besides its own. */
static const char *const confine_base_read[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc", "/proc", "/sys", "/dev", "/run", NULL
};

/* The devices an agent may write, whatever its policy. */
static const char *const confine_devices[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx", "/dev/pts", NULL
};

static int	confine_cached = -1;

/*
 * The Landlock ABI version to use: the kernel's, or 0 without Landlock.
 * CORRAL_LANDLOCK=N (a test knob) uses at most N; 0 plays a kernel
 * without Landlock.
 */
int
confine_abi(void)
{
	const char	*e;
	long		 v, cap;
	char		*end;

	if (confine_cached != -1)
		return confine_cached;
	v = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (v < 0)
		v = 0;
	if ((e = getenv("CORRAL_LANDLOCK")) != NULL && *e != '\0') {
		cap = strtol(e, &end, 10);
		if (*end == '\0' && cap >= 0 && cap < v)
			v = cap;
	}
	confine_cached = (int)v;
	return confine_cached;
}

/* The filesystem rights an ABI version handles. */
static uint64_t
confine_fs_handled(int abi)
{
	uint64_t	fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;

	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= CONFINE_ABI_TRUNCATE)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= CONFINE_ABI_IOCTL)
		fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return fs;
}

/* A TCP port as written in connect:, or -1. */
int
confine_port(const char *s)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v < 1 ||
	    v > 65535)
		return -1;
	return (int)v;
}

/*
 * Say in buf what this kernel cannot enforce of a policy.  Returns 0 when
 * it enforces all of it.
 */
int
confine_gaps(const struct confine *c, char *buf, size_t len)
{
	int	abi = confine_abi();

	buf[0] = '\0';
	if (!(c->flags & CONFINE_ON))
		return 0;
	if (abi == 0) {
		snprintf(buf, len, "this kernel has no Landlock: nothing is "
		    "confined");
		return 1;
	}
	if (abi < CONFINE_ABI_TRUNCATE)
		snprintf(buf, len, "Landlock ABI %d cannot stop truncate(2) "
		    "of files outside", abi);
	if ((c->flags & CONFINE_CONNECT) && abi < CONFINE_ABI_NET)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sLandlock "
		    "ABI %d cannot restrict TCP connect", buf[0] ? "; " : "",
		    abi);
	return buf[0] != '\0';
}

/*
 * Expand a path of a policy into out: a leading ~ or $NAME (or ${NAME})
 * from the agent's environment, a relative path beneath dir.  Returns 1,
 * 0 when its variable is not set, -1 when it is too long.
 */
static int
confine_expand(const char *in, const struct confine_where *w,
    const char *dir, char *out, size_t len)
{
	char		 name[128];
	const char	*val = NULL, *rest = in;
	size_t		 n;
	int		 r;

	if (in[0] == '~' && (in[1] == '\0' || in[1] == '/')) {
		val = w->var(w->arg, "HOME");
		rest = in + 1;
	} else if (in[0] == '$') {
		rest = in + 1 + (in[1] == '{');
		n = strspn(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrs"
		    "tuvwxyz0123456789_");
		if (n == 0 || n >= sizeof name)
			return 0;
		memcpy(name, rest, n);
		name[n] = '\0';
		rest += n;
		if (in[1] == '{' && *rest++ != '}')
			return 0;
		val = w->var(w->arg, name);
	}
	if (rest != in && (val == NULL || *val != '/'))
		return 0;
	if (val != NULL)
		r = snprintf(out, len, "%s%s", val, rest);
	else if (in[0] == '/' || dir == NULL)
		r = snprintf(out, len, "%s", in);
	else
		r = snprintf(out, len, "%s/%s", dir, in);
	return r < 0 || (size_t)r >= len ? -1 : 1;
}

/*
 * Allow access beneath path.  A path that does not exist is skipped,
 * unless must says the workflow named it.
 */
static int
confine_path(int rs, const char *path, uint64_t access, uint64_t handled,
    int must, char *why, size_t len)
{
	struct landlock_path_beneath_attr	pb;
	struct stat				st;
	int					fd, saved;

	if ((fd = open(path, O_PATH | O_CLOEXEC)) == -1) {
		if (!must)
			return 0;
		snprintf(why, len, "confine: %s", path);
		return -1;
	}
	/* A file takes only the rights of files. */
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		access &= CONFINE_FS_FILE;
	memset(&pb, 0, sizeof pb);
	pb.allowed_access = access & handled;
	pb.parent_fd = fd;
	if (pb.allowed_access != 0 && syscall(SYS_landlock_add_rule, rs,
	    LANDLOCK_RULE_PATH_BENEATH, &pb, 0) == -1) {
		saved = errno;
		close(fd);
		snprintf(why, len, "confine: landlock_add_rule %s", path);
		errno = saved;
		return -1;
	}
	close(fd);
	return 0;
}

/* Allow access beneath each path of a list the workflow gave. */
static int
confine_list(int rs, char *const *list, size_t n, const char *what,
    const struct confine_where *w, uint64_t access, uint64_t handled,
    char *why, size_t len)
{
	char	path[PATH_MAX];
	size_t	i;
	int	r;

	for (i = 0; i < n; i++) {
		if ((r = confine_expand(list[i], w, w->dir, path,
		    sizeof path)) != 1) {
			snprintf(why, len, "confine.%s %s%s", what, list[i],
			    r == 0 ? " (its variable is not set, or not an "
			    "absolute path)" : "");
			errno = r == 0 ? ENOENT : ENAMETOOLONG;
			return -1;
		}
		if (confine_path(rs, path, access, handled, 1, why, len) != 0)
			return -1;
	}
	return 0;
}

/* Add the rules of a policy to a ruleset. */
static int
confine_rules(int rs, const struct confine *c, const struct confine_where *w,
    uint64_t handled, int abi, char *why, size_t len)
{
	struct confine_port_attr	 pa;
	const char			*implied[3];
	char				 path[PATH_MAX];
	size_t				 i;

	/* Reads: everywhere, or the base set and what read: lists. */
	if (!(c->flags & CONFINE_READ)) {
		if (confine_path(rs, "/", CONFINE_FS_READ, handled, 1, why,
		    len) != 0)
			return -1;
	} else {
		for (i = 0; confine_base_read[i] != NULL; i++)
			if (confine_path(rs, confine_base_read[i],
			    CONFINE_FS_READ, handled, 0, why, len) != 0)
				return -1;
		if (w->exe != NULL && w->exe[0] == '/' && confine_path(rs,
		    w->exe, CONFINE_FS_READ, handled, 0, why, len) != 0)
			return -1;
		if (confine_list(rs, c->read, c->nread, "read", w,
		    CONFINE_FS_READ, handled, why, len) != 0)
			return -1;
	}

	/* Writes (and everything else): beneath these. */
	if (confine_path(rs, w->cwd, handled, handled, 0, why, len) != 0)
		return -1;
	if (w->workspace != NULL && confine_path(rs, w->workspace, handled,
	    handled, 0, why, len) != 0)
		return -1;
	implied[0] = "$TMPDIR";
	implied[1] = c->home;
	implied[2] = NULL;
	for (i = 0; implied[i] != NULL; i++) {
		if (confine_expand(implied[i], w, NULL, path, sizeof path) == 1 &&
		    strcmp(path, "/") != 0 && confine_path(rs, path, handled,
		    handled, 0, why, len) != 0)
			return -1;
	}
	if (confine_list(rs, c->write, c->nwrite, "write", w, handled,
	    handled, why, len) != 0)
		return -1;
	for (i = 0; confine_devices[i] != NULL; i++)
		if (confine_path(rs, confine_devices[i], CONFINE_FS_DEVICE,
		    handled, 0, why, len) != 0)
			return -1;

	/* TCP connect: only to the ports connect: lists. */
	if (!(c->flags & CONFINE_CONNECT) || abi < CONFINE_ABI_NET)
		return 0;
	for (i = 0; i < c->nconnect; i++) {
		pa.allowed = CONFINE_NET_CONNECT_TCP;
		pa.port = (uint64_t)confine_port(c->connect[i]);
		if (syscall(SYS_landlock_add_rule, rs, CONFINE_RULE_NET_PORT,
		    &pa, 0) == -1) {
			snprintf(why, len, "confine: landlock_add_rule port %s",
			    c->connect[i]);
			return -1;
		}
	}
	return 0;
}

/*
 * Make the Landlock ruleset of a policy for an agent that runs in w.
 * Returns its descriptor (close-on-exec), -2 when there is nothing to
 * apply (no Landlock here, and the policy does not require it), or -1
 * with errno set and why saying what failed.
 */
int
confine_ruleset(const struct confine *c, const struct confine_where *w,
    char *why, size_t len)
{
	struct confine_ruleset_attr	attr;
	char				gaps[256];
	int				abi = confine_abi(), rs, saved;

	if (confine_gaps(c, gaps, sizeof gaps) && c->required) {
		/* EPERM: final, the spawn is not tried again. */
		snprintf(why, len, "confine: required, but %s", gaps);
		errno = EPERM;
		return -1;
	}
	if (abi == 0)
		return -2;
	memset(&attr, 0, sizeof attr);
	attr.fs = confine_fs_handled(abi);
	if ((c->flags & CONFINE_CONNECT) && abi >= CONFINE_ABI_NET)
		attr.net = CONFINE_NET_CONNECT_TCP;
	/*
	 * From ABI 6 the agent may not signal what is outside its domain
	 * (corral, other agents); with connect: it may not reach abstract
	 * unix sockets outside either, or connect: would be easy to bypass
	 * through a local relay.
	 */
	if (abi >= CONFINE_ABI_SCOPE) {
		attr.scoped = CONFINE_SCOPE_SIGNAL;
		if (c->flags & CONFINE_CONNECT)
			attr.scoped |= CONFINE_SCOPE_ABSTRACT_UNIX;
	}
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs == -1) {
		snprintf(why, len, "confine: landlock_create_ruleset");
		return -1;
	}
	if (confine_rules(rs, c, w, attr.fs, abi, why, len) != 0) {
		saved = errno;
		close(rs);
		errno = saved != 0 ? saved : EINVAL;
		return -1;
	}
	return rs;
}
