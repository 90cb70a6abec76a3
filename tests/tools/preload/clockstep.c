/*
 * clockstep.so: an LD_PRELOAD library that steps the wall clock of the
 * process it is loaded into.  The seconds in the file $CLOCKSTEP_FILE
 * (absent or empty: 0) are added to CLOCK_REALTIME and gettimeofday at
 * every call, so a test steps the clock of a running corral by writing
 * that file, as NTP or a resumed virtual machine would.  The monotonic
 * clock is left alone.
 */
#include <sys/time.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The step now: the file is read at each call, a test writes it any time. */
static long
clockstep_offset(void)
{
	const char	*path = getenv("CLOCKSTEP_FILE");
	char		 buf[32];
	ssize_t		 n;
	int		 fd;

	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

int
clock_gettime(clockid_t id, struct timespec *ts)
{
	static int	(*real)(clockid_t, struct timespec *);
	int		 rc;

	if (real == NULL)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
		    "clock_gettime");
	rc = real(id, ts);
	if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		ts->tv_sec += clockstep_offset();
	return rc;
}

int
gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec	ts;

	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}
