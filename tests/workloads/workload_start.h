/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The command line every workload shares: [--wait-stdin] [--NAME N]...
 * --wait-stdin prints "ready PID" and waits for a line on stdin before the
 * workload starts blocking, so that a test can first move it into a cgroup.
 */
#ifndef WORKLOAD_START_H
#define WORKLOAD_START_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_OPTIONS(a) ((int)(sizeof(a) / sizeof((a)[0])))

struct int_option {
    const char *name; /* without the leading "--" */
    int *value;
};

static inline int usage(const char *argv0, const struct int_option *opts, int nopts)
{
    fprintf(stderr, "usage: %s [--wait-stdin]", argv0);
    for (int i = 0; i < nopts; i++)
        fprintf(stderr, " [--%s N]", opts[i].name);
    fputc('\n', stderr);
    return 2;
}

/* Returns 0 when the workload is to go on, else its exit status. */
static inline int workload_start(int argc, char **argv, const struct int_option *opts, int nopts)
{
    int wait_stdin = 0;

    for (int i = 1; i < argc; i++) {
        int known = strcmp(argv[i], "--wait-stdin") == 0;

        if (known) {
            wait_stdin = 1;
            continue;
        }
        for (int o = 0; o < nopts && !known; o++) {
            if (strncmp(argv[i], "--", 2) == 0 && strcmp(argv[i] + 2, opts[o].name) == 0 &&
                i + 1 < argc) {
                *opts[o].value = atoi(argv[++i]);
                known = 1;
            }
        }
        if (!known)
            return usage(argv[0], opts, nopts);
    }
    if (wait_stdin) {
        char line[16];

        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        if (!fgets(line, sizeof(line), stdin))
            return 1;
    }
    return 0;
}

#endif
