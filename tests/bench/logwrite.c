/*
 * logwrite: what the kernel spends to take the audit log's bytes, by the
 * way they are written.  Writes 400 MiB in batches of 384 KiB (the size
 * of the writer thread's writes under load) to FILE and prints the
 * process's system and user time per 1,989 bytes (an envelope's lines in
 * the benchmark's workflow).  The file is removed at the end.
 *
 *	logwrite MODE FILE
 *
 * MODE: write (plain write(2)), append (O_APPEND, as corral opens the
 * log), falloc (O_APPEND, the next 8 MiB allocated ahead with
 * fallocate(FALLOC_FL_KEEP_SIZE)), mmap (the file grown with ftruncate
 * per batch and the batch copied into a shared mapping).
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define TOTAL	(400L << 20)
#define BATCH	(384L << 10)
#define AHEAD	(8L << 20)
#define LINE	1989.0

static char	batch[BATCH];

/* Print what went wrong and stop. */
static void
die(const char *what)
{
	perror(what);
	exit(1);
}

/* Write TOTAL bytes to fd as mode says. */
static void
fill(const char *mode, int fd)
{
	char	*map = NULL;
	long	 off, ahead = 0;

	if (strcmp(mode, "mmap") == 0 && (map = mmap(NULL, TOTAL,
	    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		die("mmap");
	for (off = 0; off + BATCH <= TOTAL; off += BATCH) {
		if (strcmp(mode, "falloc") == 0 && off + BATCH > ahead) {
			if (fallocate(fd, FALLOC_FL_KEEP_SIZE, ahead, AHEAD) == -1)
				die("fallocate");
			ahead += AHEAD;
		}
		if (map != NULL) {
			if (ftruncate(fd, off + BATCH) == -1)
				die("ftruncate");
			memcpy(map + off, batch, BATCH);
		} else if (write(fd, batch, BATCH) != BATCH)
			die("write");
	}
}

int
main(int argc, char **argv)
{
	struct rusage	ru;
	const char	*mode;
	double		 sys, user, n;
	int		 fd, flags = O_WRONLY | O_CREAT | O_TRUNC;

	if (argc != 3) {
		fprintf(stderr, "usage: logwrite write|append|falloc|mmap FILE\n");
		return 2;
	}
	mode = argv[1];
	if (strcmp(mode, "append") == 0 || strcmp(mode, "falloc") == 0)
		flags |= O_APPEND;
	else if (strcmp(mode, "mmap") == 0)
		flags = O_RDWR | O_CREAT | O_TRUNC;
	else if (strcmp(mode, "write") != 0) {
		fprintf(stderr, "logwrite: unknown mode %s\n", mode);
		return 2;
	}
	memset(batch, 'x', sizeof batch);
	if ((fd = open(argv[2], flags, 0600)) == -1)
		die(argv[2]);
	fill(mode, fd);
	if (getrusage(RUSAGE_SELF, &ru) == -1)
		die("getrusage");
	n = (double)(TOTAL / BATCH * BATCH) / LINE;
	sys = ru.ru_stime.tv_sec * 1e9 + ru.ru_stime.tv_usec * 1e3;
	user = ru.ru_utime.tv_sec * 1e9 + ru.ru_utime.tv_usec * 1e3;
	printf("%-7s system %4.0f ns, user %4.0f ns per %.0f bytes\n", mode,
	    sys / n, user / n, LINE);
	close(fd);
	unlink(argv[2]);
	return 0;
}
