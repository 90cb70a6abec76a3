/*
 * What the framing module's files (ndjson.c, ndjson-queue.c) share:
 * a long line's buffer lent to the line callback, which a channel's
 * queue may take over instead of copying the line.  Nothing else
 * includes this file.
 */

#ifndef NDJSON_INT_H
#define NDJSON_INT_H

char	*ndjson_take(const void *, size_t, uint32_t *);
void	 ndjson_give_back(char *, uint32_t);

#endif
