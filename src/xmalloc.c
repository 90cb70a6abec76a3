/*
 * Allocation wrappers that never return NULL.  Running out of memory is
 * not something corral can recover from sensibly, so it is fatal; every
 * multiplication of sizes is checked.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Allocate size bytes. */
void *
xmalloc(size_t size)
{
	void	*p;

	if (size == 0)
		fatalx("xmalloc: zero size");
	if ((p = malloc(size)) == NULL)
		fatal("xmalloc: allocating %zu bytes", size);
	return p;
}

/* Allocate a zeroed array of nmemb elements of size bytes. */
void *
xcalloc(size_t nmemb, size_t size)
{
	void	*p;

	if (nmemb == 0 || size == 0)
		fatalx("xcalloc: zero size");
	if ((p = calloc(nmemb, size)) == NULL)
		fatal("xcalloc: allocating %zu * %zu bytes", nmemb, size);
	return p;
}

/* Resize an array to nmemb elements of size bytes, checking overflow. */
void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void	*p;

	if (nmemb == 0 || size == 0)
		fatalx("xreallocarray: zero size");
	if (size != 0 && nmemb > SIZE_MAX / size)
		fatalx("xreallocarray: %zu * %zu overflows", nmemb, size);
	if ((p = realloc(ptr, nmemb * size)) == NULL)
		fatal("xreallocarray: allocating %zu * %zu bytes", nmemb, size);
	return p;
}

/* Duplicate a string. */
char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		fatal("xstrdup");
	return p;
}

/* Duplicate at most n bytes of a string, always terminating the copy. */
char *
xstrndup(const char *s, size_t n)
{
	char	*p;

	if ((p = strndup(s, n)) == NULL)
		fatal("xstrndup");
	return p;
}

/* Duplicate n bytes of memory into a new terminated string. */
char *
xmemdup0(const void *s, size_t n)
{
	char	*p;

	if (n == SIZE_MAX)
		fatalx("xmemdup0: size overflows");
	p = xmalloc(n + 1);
	if (n != 0)
		memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/*
 * A zeroed block from pool p: one it kept, or a new one.  Under the
 * sanitizers the pool keeps nothing, so that a block used after it was
 * given back is still caught.
 */
void *
xpool_get(struct xpool *p)
{
	void	*b;

	if ((b = p->head) == NULL)
		return xcalloc(1, p->size);
	memcpy(&p->head, b, sizeof p->head);
	p->n--;
	memset(b, 0, p->size);
	return b;
}

/*
 * A block from pool p whose bytes the caller writes whole (a line):
 * not zeroed.
 */
void *
xpool_alloc(struct xpool *p)
{
	void	*b;

	if ((b = p->head) == NULL)
		return xmalloc(p->size);
	memcpy(&p->head, b, sizeof p->head);
	p->n--;
	return b;
}

/* Give block b back to pool p, which keeps it if it has room. */
void
xpool_put(struct xpool *p, void *b)
{
#ifndef CORRAL_SANITIZE
	if (b != NULL && p->n < p->max) {
		memcpy(b, &p->head, sizeof p->head);
		p->head = b;
		p->n++;
		return;
	}
#endif
	free(b);
}

/* Format into a newly allocated string. */
int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list	ap;
	int	i;

	va_start(ap, fmt);
	i = xvasprintf(ret, fmt, ap);
	va_end(ap);
	return i;
}

/* Format into a newly allocated string from a va_list. */
int
xvasprintf(char **ret, const char *fmt, va_list ap)
{
	int	i;

	i = vasprintf(ret, fmt, ap);
	if (i < 0 || *ret == NULL)
		fatal("xvasprintf");
	return i;
}
