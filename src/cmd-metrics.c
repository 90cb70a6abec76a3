/*
 * corral metrics: a running corral's numbers in Prometheus' text format
 * (version 0.0.4), or as _corral/metrics answers them with --json.
 *
 *   corral metrics [-S PATH] [--run ID] [--json]
 *
 * docs/control.md lists the metrics.
 */

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define CMD_METRICS_USAGE	"usage: corral metrics [-S PATH] [--run ID] " \
	"[--json]\n"

/* Print a label value, escaped as the text format wants. */
static void
cmd_metrics_label(const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			printf("\\n");
		else
			putchar(*s);
	}
}

/* Print a sample's value: integers as integers. */
static void
cmd_metrics_value(double v)
{
	if (isnan(v))
		printf("NaN");
	else if (v == floor(v) && fabs(v) < 1e15)
		printf("%.0f", v);
	else
		printf("%.15g", v);
}

/* Print the metrics of _corral/metrics in the text format. */
static void
cmd_metrics_text(json_t *res)
{
	json_t		*m, *smp, *labels, *v;
	const char	*name, *k, *suffix;
	size_t		 i, j;
	int		 first;

	json_array_foreach(json_object_get(res, "metrics"), i, m) {
		name = json_string_value(json_object_get(m, "name"));
		if (name == NULL)
			continue;
		printf("# HELP %s %s\n", name,
		    json_string_value(json_object_get(m, "help")));
		printf("# TYPE %s %s\n", name,
		    json_string_value(json_object_get(m, "type")));
		json_array_foreach(json_object_get(m, "samples"), j, smp) {
			suffix = json_string_value(json_object_get(smp,
			    "suffix"));
			printf("%s%s", name, suffix != NULL ? suffix : "");
			labels = json_object_get(smp, "labels");
			if (json_object_size(labels) > 0) {
				first = 1;
				printf("{");
				json_object_foreach(labels, k, v) {
					printf("%s%s=\"", first ? "" : ",", k);
					cmd_metrics_label(json_string_value(v));
					printf("\"");
					first = 0;
				}
				printf("}");
			}
			printf(" ");
			cmd_metrics_value(json_number_value(json_object_get(smp,
			    "value")));
			printf("\n");
		}
	}
}

/* corral metrics. */
int
cmd_metrics(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "control", required_argument, NULL, 'S' },
		{ "run", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 }
	};
	struct client	 c;
	const char	*path = NULL, *run = NULL;
	json_t		*res, *e;
	char		 err[512], *s;
	int		 ch, json = 0;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "S:r:j", opts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			path = optarg;
			break;
		case 'r':
			run = optarg;
			break;
		case 'j':
			json = 1;
			break;
		default:
			fprintf(stderr, CMD_METRICS_USAGE);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, CMD_METRICS_USAGE);
		return EXIT_USAGE;
	}
	if (client_attach(&c, path, run, "corral-metrics") != 0)
		return 1;
	if ((res = client_call(&c, CORRAL_M_METRICS, NULL, 10000,
	    &e)) == NULL) {
		client_error_text(e, err, sizeof err);
		fprintf(stderr, "corral: metrics: %s\n", err);
		json_decref(e);
		client_close(&c);
		return 1;
	}
	if (json) {
		if ((s = json_dumps(res, CORRAL_JSON_FLAGS)) != NULL) {
			printf("%s\n", s);
			free(s);
		}
	} else
		cmd_metrics_text(res);
	json_decref(res);
	client_close(&c);
	return 0;
}
