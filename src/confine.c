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
 * confine_missing says what that leaves unenforced, protection by
 * protection: corral logs it once, and confine: {required: true} refuses
 * to run without any of them but those the workflow lists as optional.
 *
 * Landlock has no right for a file's metadata: chmod, chown, utimes and
 * extended attributes.  Those are stopped by a mount namespace of the
 * agent's own (made in the child, spawn.c), where every mount is
 * read-only except copies of the paths it may write: confine_ruleset
 * names them (confine_roots), as real paths.  That needs the right to
 * make mount namespaces (root, or corral's own user namespace) and Linux
 * 5.12; confine_mountns finds out once.  The policy itself is written
 * down in docs/reliability.md ("Confinement").
 */

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/landlock.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
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
static int	confine_mount_cached = -1;

/* The protections the kernel may lack, by the key confine.optional uses. */
static const struct {
	unsigned int	 bit;
	const char	*key;
	const char	*what;		/* what Landlock of an older ABI cannot */
} confine_protections[] = {
	{ CONFINE_P_TRUNCATE, "truncate", "stop truncate(2) of files outside" },
	{ CONFINE_P_CONNECT, "connect", "restrict TCP connect" },
	{ CONFINE_P_IOCTL, "ioctl", "restrict ioctl(2) on devices" },
	{ CONFINE_P_SIGNALS, "signals", "stop signals to processes outside "
	  "its sandbox (corral, other agents)" },
	{ CONFINE_P_ABSTRACT, "abstract-sockets", "stop connections to "
	  "abstract unix sockets outside its sandbox" },
	{ CONFINE_P_METADATA, "metadata", NULL },
};

#ifndef SYS_open_tree
#define SYS_open_tree		428
#define SYS_move_mount		429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr	442
#endif
#define CONFINE_OPEN_TREE_CLONE		1
#define CONFINE_MOVE_MOUNT_F_EMPTY_PATH	0x00000004
#define CONFINE_MOUNT_ATTR_RDONLY	0x00000001
#define CONFINE_AT_RECURSIVE		0x8000

/* struct mount_attr, which older headers lack. */
struct confine_mount_attr {
	uint64_t	attr_set;
	uint64_t	attr_clr;
	uint64_t	propagation;
	uint64_t	userns_fd;
};

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
 * In the child of a spawn, after fork and before exec, with nothing
 * allocated: a mount namespace of its own, no longer a peer of corral's
 * (so nothing here shows outside), where every mount is read-only but
 * for copies of the roots (real paths, a directory before what lies
 * beneath it), taken as they were, read-only parts included.  fds has
 * room for n descriptors.  Returns 0, or -1 with errno set and step
 * naming the call that failed.
 */
__attribute__((no_sanitize("address", "undefined")))
int
confine_mount(char *const *roots, size_t n, int *fds, const char **step)
{
	struct confine_mount_attr	attr = { .attr_set =
					    CONFINE_MOUNT_ATTR_RDONLY };
	size_t				i;

	*step = "unshare(CLONE_NEWNS)";
	if (unshare(CLONE_NEWNS) == -1)
		return -1;
	*step = "mount(MS_SLAVE)";
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) == -1)
		return -1;
	*step = "open_tree";
	for (i = 0; i < n; i++)
		if ((fds[i] = (int)syscall(SYS_open_tree, AT_FDCWD, roots[i],
		    CONFINE_OPEN_TREE_CLONE | CONFINE_AT_RECURSIVE |
		    O_CLOEXEC)) == -1)
			return -1;
	*step = "mount_setattr(MOUNT_ATTR_RDONLY)";
	if (syscall(SYS_mount_setattr, AT_FDCWD, "/", CONFINE_AT_RECURSIVE,
	    &attr, sizeof attr) == -1)
		return -1;
	*step = "move_mount";
	for (i = 0; i < n; i++) {
		if (syscall(SYS_move_mount, fds[i], "", AT_FDCWD, roots[i],
		    CONFINE_MOVE_MOUNT_F_EMPTY_PATH) == -1)
			return -1;
		close(fds[i]);
	}
	return 0;
}

/*
 * Try in a child what an agent's mount namespace needs (confine_mount
 * with a root of its own).  Returns 0 when all of it works.
 */
static int
confine_mount_probe(void)
{
	static char	 proc[] = "/proc";
	char		*roots[1] = { proc };
	const char	*step;
	pid_t		 pid;
	int		 status, fd;

	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0)
		_exit(confine_mount(roots, 1, &fd, &step) == 0 ? 0 : 1);
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/*
 * Whether a confined agent gets a mount namespace of its own, read-only
 * but where it may write (found out once, before the loop runs).
 * CORRAL_NO_MOUNTNS=1 plays a system where it cannot (a test knob).
 */
int
confine_mountns(void)
{
	const char	*e = getenv("CORRAL_NO_MOUNTNS");

	if (confine_mount_cached == -1)
		confine_mount_cached = (e == NULL || *e == '\0' ||
		    strcmp(e, "0") == 0) && confine_mount_probe() == 0;
	return confine_mount_cached;
}

/* What this kernel cannot enforce of a policy: CONFINE_P_* bits. */
unsigned int
confine_missing(const struct confine *c)
{
	unsigned int	m = 0;
	int		abi = confine_abi();

	if (!(c->flags & CONFINE_ON))
		return 0;
	if (abi == 0)
		return CONFINE_P_LANDLOCK;
	if (abi < CONFINE_ABI_TRUNCATE)
		m |= CONFINE_P_TRUNCATE;
	if ((c->flags & CONFINE_CONNECT) && abi < CONFINE_ABI_NET)
		m |= CONFINE_P_CONNECT;
	if (abi < CONFINE_ABI_IOCTL)
		m |= CONFINE_P_IOCTL;
	if (abi < CONFINE_ABI_SCOPE) {
		m |= CONFINE_P_SIGNALS;
		if (c->flags & CONFINE_CONNECT)
			m |= CONFINE_P_ABSTRACT;
	}
	if (!confine_mountns())
		m |= CONFINE_P_METADATA;
	return m;
}

/* Say in buf what the protections of mask are missing, each with its key. */
static void
confine_describe(unsigned int m, char *buf, size_t len)
{
	size_t	i, n = 0;

	buf[0] = '\0';
	if (m & CONFINE_P_LANDLOCK) {
		snprintf(buf, len, "this kernel has no Landlock: nothing is "
		    "confined");
		return;
	}
	for (i = 0; i < sizeof confine_protections /
	    sizeof confine_protections[0]; i++) {
		if (!(m & confine_protections[i].bit) ||
		    confine_protections[i].what == NULL)
			continue;
		if (n++ == 0)
			snprintf(buf, len, "Landlock ABI %d cannot ",
			    confine_abi());
		else
			strlcat(buf, ", ", len);
		strlcat(buf, confine_protections[i].what, len);
		strlcat(buf, " (", len);
		strlcat(buf, confine_protections[i].key, len);
		strlcat(buf, ")", len);
	}
	if (m & CONFINE_P_METADATA)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sno mount "
		    "namespace of its own can be made here: chmod, chown, "
		    "utimes and xattrs of files outside are not stopped "
		    "(metadata)", n > 0 ? "; " : "");
}

/*
 * Say in buf what this kernel cannot enforce of a policy.  Returns 0 when
 * it enforces all of it.
 */
int
confine_gaps(const struct confine *c, char *buf, size_t len)
{
	unsigned int	m = confine_missing(c);

	confine_describe(m, buf, len);
	return m != 0;
}

/*
 * Whether a policy that is required must refuse to run here: something
 * it protects is missing that the workflow did not list as optional.
 * Says what in buf.
 */
int
confine_refused(const struct confine *c, char *buf, size_t len)
{
	unsigned int	m = confine_missing(c) & ~c->optional;

	buf[0] = '\0';
	if (!c->required || m == 0)
		return 0;
	confine_describe(m, buf, len);
	return 1;
}

/* The CONFINE_P_* bit of a key of confine.optional, or 0. */
unsigned int
confine_protection(const char *key)
{
	size_t	i;

	for (i = 0; i < sizeof confine_protections /
	    sizeof confine_protections[0]; i++)
		if (strcmp(confine_protections[i].key, key) == 0)
			return confine_protections[i].bit;
	return 0;
}

/* The key of one CONFINE_P_* bit, or NULL. */
const char *
confine_protection_key(unsigned int bit)
{
	size_t	i;

	for (i = 0; i < sizeof confine_protections /
	    sizeof confine_protections[0]; i++)
		if (confine_protections[i].bit == bit)
			return confine_protections[i].key;
	return NULL;
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

/* Add a real path to the roots, once. */
static void
confine_roots_add(struct confine_roots *r, const char *real)
{
	size_t	i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->v[i], real) == 0)
			return;
	r->v = xreallocarray(r->v, r->n + 1, sizeof *r->v);
	r->v[r->n++] = xstrdup(real);
}

/* Add a writable path to the roots (when given), as its real path. */
static void
confine_root(struct confine_roots *r, const char *path)
{
	char	*real;

	if (r == NULL || (real = realpath(path, NULL)) == NULL)
		return;
	confine_roots_add(r, real);
	free(real);
}

/* Free a list of roots. */
void
confine_roots_free(struct confine_roots *r)
{
	size_t	i;

	for (i = 0; i < r->n; i++)
		free(r->v[i]);
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

/* Whether path is one of the roots, or beneath one. */
static int
confine_beneath(const char *path, const struct confine_roots *r)
{
	size_t	i, n;

	for (i = 0; i < r->n; i++) {
		n = strlen(r->v[i]);
		if (strcmp(r->v[i], "/") == 0 || (strncmp(path, r->v[i], n) ==
		    0 && (path[n] == '\0' || path[n] == '/')))
			return 1;
	}
	return 0;
}

/* Order roots by length: a directory before what lies beneath it. */
static int
confine_roots_cmp(const void *a, const void *b)
{
	size_t	la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);

	return la < lb ? -1 : la > lb;
}

/*
 * Keep in r only where other allows writes too (Landlock layers
 * intersect): the roots of either that lie beneath a root of both.
 * They end up in mounting order, shortest first.
 */
void
confine_roots_meet(struct confine_roots *r, const struct confine_roots *other)
{
	struct confine_roots	out = { NULL, 0 };
	size_t			i;

	for (i = 0; i < r->n; i++)
		if (confine_beneath(r->v[i], other))
			confine_roots_add(&out, r->v[i]);
	for (i = 0; i < other->n; i++)
		if (confine_beneath(other->v[i], r))
			confine_roots_add(&out, other->v[i]);
	confine_roots_free(r);
	*r = out;
	if (r->n > 1)
		qsort(r->v, r->n, sizeof *r->v, confine_roots_cmp);
}

/*
 * Allow access beneath path (and note it among roots, when given).  A
 * path that does not exist is skipped, unless must says the workflow
 * named it.
 */
static int
confine_path(int rs, const char *path, uint64_t access, uint64_t handled,
    int must, struct confine_roots *roots, char *why, size_t len)
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
	confine_root(roots, path);
	return 0;
}

/* Allow access beneath each path of a list the workflow gave. */
static int
confine_list(int rs, char *const *list, size_t n, const char *what,
    const struct confine_where *w, uint64_t access, uint64_t handled,
    struct confine_roots *roots, char *why, size_t len)
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
		if (confine_path(rs, path, access, handled, 1, roots, why,
		    len) != 0)
			return -1;
	}
	return 0;
}

/*
 * Add the rules of a policy to a ruleset, and the paths it may write to
 * roots.
 */
static int
confine_rules(int rs, const struct confine *c, const struct confine_where *w,
    uint64_t handled, int abi, struct confine_roots *roots, char *why,
    size_t len)
{
	struct confine_port_attr	 pa;
	const char			*implied[3];
	char				 path[PATH_MAX];
	size_t				 i;

	/* Reads: everywhere, or the base set and what read: lists. */
	if (!(c->flags & CONFINE_READ)) {
		if (confine_path(rs, "/", CONFINE_FS_READ, handled, 1, NULL,
		    why, len) != 0)
			return -1;
	} else {
		for (i = 0; confine_base_read[i] != NULL; i++)
			if (confine_path(rs, confine_base_read[i],
			    CONFINE_FS_READ, handled, 0, NULL, why, len) != 0)
				return -1;
		if (w->exe != NULL && w->exe[0] == '/' && confine_path(rs,
		    w->exe, CONFINE_FS_READ, handled, 0, NULL, why, len) != 0)
			return -1;
		if (confine_list(rs, c->read, c->nread, "read", w,
		    CONFINE_FS_READ, handled, NULL, why, len) != 0)
			return -1;
	}

	/* Writes (and everything else): beneath these. */
	if (confine_path(rs, w->cwd, handled, handled, 0, roots, why,
	    len) != 0)
		return -1;
	if (w->workspace != NULL && confine_path(rs, w->workspace, handled,
	    handled, 0, roots, why, len) != 0)
		return -1;
	implied[0] = "$TMPDIR";
	implied[1] = c->home;
	implied[2] = NULL;
	for (i = 0; implied[i] != NULL; i++) {
		if (confine_expand(implied[i], w, NULL, path, sizeof path) == 1 &&
		    strcmp(path, "/") != 0 && confine_path(rs, path, handled,
		    handled, 0, roots, why, len) != 0)
			return -1;
	}
	if (confine_list(rs, c->write, c->nwrite, "write", w, handled,
	    handled, roots, why, len) != 0)
		return -1;
	/* Devices are written on a read-only mount too: no roots. */
	for (i = 0; confine_devices[i] != NULL; i++)
		if (confine_path(rs, confine_devices[i], CONFINE_FS_DEVICE,
		    handled, 0, NULL, why, len) != 0)
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
 * Make the Landlock ruleset of a policy for an agent that runs in w, and
 * note where it may write in roots (when given).  Returns its descriptor
 * (close-on-exec), -2 when there is nothing to apply (no Landlock here,
 * and the policy does not require it), or -1 with errno set and why
 * saying what failed.
 */
int
confine_ruleset(const struct confine *c, const struct confine_where *w,
    struct confine_roots *roots, char *why, size_t len)
{
	struct confine_ruleset_attr	attr;
	char				gaps[512];
	int				abi = confine_abi(), rs, saved;

	if (confine_refused(c, gaps, sizeof gaps)) {
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
	if (confine_rules(rs, c, w, attr.fs, abi, roots, why, len) != 0) {
		saved = errno;
		close(rs);
		errno = saved != 0 ? saved : EINVAL;
		return -1;
	}
	if (roots != NULL && roots->n > 1)
		qsort(roots->v, roots->n, sizeof *roots->v, confine_roots_cmp);
	return rs;
}
