/*
 * What the OTLP exporter's files share (otlp.c, otlp-http.c).  Nothing
 * else includes this file.
 */

#ifndef OTLP_INT_H
#define OTLP_INT_H

/* Where --otlp http://HOST:PORT/PATH posts. */
struct otlp_url {
	char	host[256];
	char	port[8];
	char	path[512];
};

/* otlp-http.c */
int	 otlp_http_parse(const char *, struct otlp_url *, char *, size_t);
int	 otlp_http_post(const struct otlp_url *, const char *, size_t, char *,
	    size_t);

#endif
