/*
 * corral: run a team of agent processes from one command.
 *
 * main() parses the global options and hands the rest of the command line
 * to the command it names, from the table in cmd.c.
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/*
 * Parse the global options, up to the command's name ('+': the command's
 * own options are left for it), then run the command.
 */
int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry	*e;
	const char		*near;
	int			 ch, verbose = 0;

	while ((ch = getopt_long(argc, argv, "+hVv", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			cmd_usage_all(stdout);
			return 0;
		case 'V':
			printf("corral %s (protocol %d)\n", CORRAL_VERSION,
			    CORRAL_PROTOCOL_VERSION);
			return 0;
		case 'v':
			verbose++;
			break;
		default:
			cmd_usage_all(stderr);
			return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		cmd_usage_all(stderr);
		return EXIT_USAGE;
	}
	log_init(verbose);
	if ((e = cmd_find(argv[0])) == NULL) {
		if ((near = cmd_nearest(argv[0])) != NULL)
			fprintf(stderr, "corral: unknown command %s (did you "
			    "mean %s?)\n", argv[0], near);
		else
			fprintf(stderr, "corral: unknown command %s\n",
			    argv[0]);
		cmd_usage_all(stderr);
		return EXIT_USAGE;
	}
	return cmd_exec(e, argc, argv, verbose);
}
