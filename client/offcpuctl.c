/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl: asks offcpud for off-CPU stacks and its status. The global
 * options and the command table; each command lives in cmd_NAME.c. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "macro.h"
#include "notes.h"
#include "protocol.h"

static const struct command commands[] = {
    {"dump", cmd_dump, "print off-CPU stacks (folded, or --json)"},
    {"status", cmd_status, "show the daemon's health and figures"},
    {"flamegraph", cmd_flamegraph, "draw off-CPU stacks as an interactive SVG flame graph"},
    {"timeline", cmd_timeline, "show off-CPU time per interval and state: when a stall began"},
    {"diff", cmd_diff, "compare two windows: what grew, what shrank (per second)"},
    {"stuck", cmd_stuck, "tasks off-CPU right now for longer than --min (1s)"},
    {"top", cmd_top, "who was off-CPU most, per state (--watch refreshes)"},
    {"hist", cmd_hist, "how long single off-CPU periods were (log2 histogram; --by stack)"},
    {"wakers", cmd_wakers, "blocked stacks with who woke them (offwaketime's folded lines)"},
    {"why", cmd_why, "why a thread waited: the chain of who woke whom, to the cause"},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] COMMAND [OPTIONS]\n"
               "Query offcpud, the always-on off-CPU profiler. --socket and --json may also\n"
               "follow the command.\n\nCommands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nOptions:\n"
            "  -s, --socket PATH   daemon socket (default $OFFCPUD_SOCKET or %s)\n"
            "  -j, --json          machine-readable output\n"
            "  -h, --help          this help; 'offcpuctl dump --help' for dump's options\n"
            "  -V, --version       show the version\n"
            "\nReading the output (folded: comm;user frames;-;kernel frames MICROSECONDS):\n"
            "  task states  S sleeping, D uninterruptible (I/O, locks), R preempted while\n"
            "               runnable, I idle kernel wait, T stopped (SIGSTOP, job control),\n"
            "               t stopped by a tracer (ptrace, gdb)\n"
            "  [unknown]    a user frame in no file the process maps, once its file is gone\n"
            "               or after a walk left known code; lib.so+0x1a2b is a frame whose\n"
            "               file is known but no symbol covers it\n"
            "  [Missed User Stack], [Missed Kernel Stack]: the kernel could not take it\n",
            PROTOCOL_SOCKET_PATH);
}

/* Global options after the command, as people type them ("offcpuctl dump
 * --pid 1 --json"): taken out of the command's arguments before it parses
 * its own. Returns EXIT_OK or EXIT_USAGE. */
static int take_global_options(struct globals *g, int *argc, char **argv)
{
    int out = 1, i;

    for (i = 1; i < *argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0) {
            g->json = true;
        } else if (strncmp(argv[i], "--socket=", 9) == 0) {
            g->socket = argv[i] + 9;
        } else if (strcmp(argv[i], "--socket") == 0) {
            if (i + 1 >= *argc)
                return usage_error("option '--socket' needs a value");
            g->socket = argv[++i];
        } else {
            argv[out++] = argv[i];
        }
    }
    while (i < *argc)
        argv[out++] = argv[i++];
    argv[out] = NULL;
    *argc = out;
    return EXIT_OK;
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
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
        int n = argc - optind, r;

        if (strcmp(argv[optind], commands[i].name) != 0)
            continue;
        r = take_global_options(&g, &n, argv + optind);
        if (r == EXIT_OK)
            r = commands[i].run(&g, n, argv + optind);
        /* what the answers left out, once they are out; an error is its own line */
        if (r == EXIT_OK)
            notes_flush();
        return r;
    }
    return usage_error("unknown command '%s'", argv[optind]);
}
