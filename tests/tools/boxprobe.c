/*
 * boxprobe: one thing a confined agent may or may not do, for the
 * regress scripts' probes (the shell has no word for them).
 *
 *   boxprobe setxattr PATH   set user.corral on PATH
 *   boxprobe listen NAME     listen on the abstract unix socket NAME,
 *                            accept until killed
 *   boxprobe connect NAME    connect to the abstract unix socket NAME
 *
 * Exit 0 when it worked; else 1, with the reason (strerror) on stderr.
 */

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>

#include <stddef.h>

#include "tool.h"

/* An abstract socket address for NAME; returns its length. */
static socklen_t
boxprobe_addr(struct sockaddr_un *sa, const char *name)
{
	size_t	n = strlen(name);

	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	if (n > sizeof sa->sun_path - 1)
		n = sizeof sa->sun_path - 1;
	memcpy(sa->sun_path + 1, name, n);	/* sun_path[0] = 0: abstract */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int
main(int argc, char **argv)
{
	struct sockaddr_un	sa;
	socklen_t		len;
	int			fd, c;

	if (argc != 3) {
		fprintf(stderr, "usage: boxprobe setxattr|listen|connect "
		    "ARG\n");
		return 2;
	}
	if (strcmp(argv[1], "setxattr") == 0) {
		if (setxattr(argv[2], "user.corral", "x", 1, 0) == -1)
			goto fail;
		return 0;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		goto fail;
	len = boxprobe_addr(&sa, argv[2]);
	if (strcmp(argv[1], "connect") == 0) {
		if (connect(fd, (struct sockaddr *)&sa, len) == -1)
			goto fail;
		return 0;
	}
	if (strcmp(argv[1], "listen") != 0) {
		fprintf(stderr, "boxprobe: %s: unknown\n", argv[1]);
		return 2;
	}
	if (bind(fd, (struct sockaddr *)&sa, len) == -1 || listen(fd, 16) == -1)
		goto fail;
	for (;;)
		if ((c = accept(fd, NULL, NULL)) != -1)
			close(c);

fail:
	fprintf(stderr, "boxprobe %s %s: %s\n", argv[1], argv[2],
	    strerror(errno));
	return 1;
}
