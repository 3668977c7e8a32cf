/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl: asks offcpud for off-CPU stacks and its status. The global
 * options and the command table; each command lives in cmd_NAME.c. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "macro.h"
#include "protocol.h"

static const struct command commands[] = {
    {"dump", cmd_dump, "print off-CPU stacks (folded, or --json)"},
    {"status", cmd_status, "show the daemon's health and figures"},
    {"flamegraph", cmd_flamegraph, "draw off-CPU stacks as an interactive SVG flame graph"},
    {"timeline", cmd_timeline, "show off-CPU time per interval and state: when a stall began"},
    {"diff", cmd_diff, "compare two windows: what grew, what shrank (per second)"},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] COMMAND [OPTIONS]\n"
               "Query offcpud, the always-on off-CPU profiler.\n\nCommands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nOptions:\n"
            "  -s, --socket PATH   daemon socket (default $OFFCPUD_SOCKET or %s)\n"
            "  -j, --json          machine-readable output\n"
            "  -h, --help          this help; 'offcpuctl dump --help' for dump's options\n"
            "  -V, --version       show the version\n",
            PROTOCOL_SOCKET_PATH);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    struct globals g = {.socket = protocol_socket_path()};
    int c;

    /* "+": stop at the command; its options are its own */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:s:jhV", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            g.socket = optarg;
            break;
        case 'j':
            g.json = true;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        case 'V':
            printf("offcpuctl %s\n", OFFCPUD_VERSION);
            return EXIT_OK;
        default:
            return option_error(c, argv);
        }
    }
    if (optind >= argc)
        return usage_error("no command given");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        if (strcmp(argv[optind], commands[i].name) == 0)
            return commands[i].run(&g, argc - optind, argv + optind);
    return usage_error("unknown command '%s'", argv[optind]);
}
