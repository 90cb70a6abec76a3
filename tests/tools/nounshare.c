/*
 * nounshare: run a command under a seccomp filter that refuses what some
 * container runtimes refuse, so that a regress script can check that
 * corral's agents still start there, and see only descriptors 0-2.
 *
 *   nounshare all CMD...      close_range refused outright, and
 *                             unshare(CLONE_FILES)
 *   nounshare unshare CMD...  close_range refused only with
 *                             CLOSE_RANGE_UNSHARE, and unshare(CLONE_FILES)
 *
 * Both refuse with EPERM, as a seccomp profile does.  Other unshare
 * flags (corral's pid and mount namespaces) pass.  Exits 77 with
 * SKIPPED where it cannot install the filter.
 */

#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>

#include "tool.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE	(1U << 1)
#endif

#if defined(__x86_64__)
#define NOUNSHARE_ARCH	AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NOUNSHARE_ARCH	AUDIT_ARCH_AARCH64
#endif

#define ARG_LO(n)	(offsetof(struct seccomp_data, args) + (n) * 8)

int
main(int argc, char **argv)
{
#if defined(NOUNSHARE_ARCH) && defined(SYS_close_range)
	/* 10: refuse with EPERM; 11: allow. */
	struct sock_filter	 f[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOUNSHARE_ARCH, 1, 0),
		/* 2 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 2),
		/* 5 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_FILES, 3, 4),
		/* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 3),
		/* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLOSE_RANGE_UNSHARE,
		    0, 1),
		/* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		/* 11 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	 prog = { sizeof f / sizeof f[0], f };

	if (argc < 3 || (strcmp(argv[1], "all") != 0 &&
	    strcmp(argv[1], "unshare") != 0)) {
		fprintf(stderr, "usage: nounshare all|unshare CMD...\n");
		return 2;
	}
	/* "all": close_range is refused whatever its flags. */
	if (strcmp(argv[1], "all") == 0)
		f[8] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == -1) {
		printf("SKIPPED: no seccomp filter here: %s\n", strerror(errno));
		return 77;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "nounshare: %s: %s\n", argv[2], strerror(errno));
	return 127;
#else
	(void)argc;
	(void)argv;
	printf("SKIPPED: no seccomp filter for this architecture\n");
	return 77;
#endif
}
