/* SPDX-License-Identifier: GPL-2.0-only */
/* What every offcpuctl command shares: exit codes, one-line errors, the
 * global options and the command table's shape. */
#ifndef CLI_H
#define CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

struct globals {
    const char *socket;
    bool json;
};

struct command {
    const char *name;
    int (*run)(const struct globals *g, int argc, char **argv);
    const char *summary;
};

/* Every error is one line on stderr, "offcpuctl: cause"; they return the
 * exit code (EXIT_ERROR, EXIT_USAGE). */
__attribute__((format(printf, 1, 2))) int fail(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...);

/* getopt_long's return c for an unknown option or a missing value, in our
 * one-line form (getopt's own messages are off: opterr = 0). */
int option_error(int c, char **argv);

/* A --limit's value: a count of rows, 0 for all; EXIT_USAGE after the message. */
int limit_parse(const char *arg, size_t *ret);

/* Which of names (n of them) arg is: its index, or -ENOENT. */
int choice_parse(const char *arg, const char *const *names, size_t n);

/* v, indented, on stdout. */
int print_json(const json_t *v);

/* Flushes stdout: a full disk or a closed pipe is an error, not a success. */
int finish_output(int r);

#endif
