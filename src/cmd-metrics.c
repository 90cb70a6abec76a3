/*
 * corral metrics: a running corral's numbers in Prometheus' text format
 * (version 0.0.4), or as _corral/metrics answers them with --json.
 *
 *   corral metrics [-S PATH | --run ID] [--json]
 *
 * docs/control.md lists the metrics.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "cmd.h"

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
static int
cmd_metrics_exec(struct cmd *c)
{
	json_t	*res;

	if ((res = cmd_call(c, CORRAL_M_METRICS, NULL)) == NULL)
		return 1;
	if (cmd_has(c, "json"))
		cmd_print_json(res);
	else
		cmd_metrics_text(res);
	json_decref(res);
	return 0;
}

static const struct cmd_option cmd_metrics_options[] = {
	{ "json", 0, 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_metrics_entry = {
	.name = "metrics",
	.args = "[--json]",
	.about = "a running corral's metrics, in Prometheus' text format",
	.options = cmd_metrics_options,
	.lower = 0,
	.upper = 0,
	.flags = CMD_TARGET | CMD_ATTACH,
	.exec = cmd_metrics_exec,
};
