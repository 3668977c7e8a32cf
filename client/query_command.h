/* SPDX-License-Identifier: GPL-2.0-only */
/* What every query command (dump, top, flamegraph, ...) does the same way:
 * parse the selection options and its own, call the daemon, render or write
 * -o FILE. A command is a table of its parts (its options, their handler,
 * its help and what it does with the parsed request), in the style of
 * bpftool's command tables; query_command_run() is the one option loop. */
#ifndef QUERY_COMMAND_H
#define QUERY_COMMAND_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "output_file.h"

/* A parsed command line, handed to the command's parts. */
struct query {
    const struct globals *g;
    json_t *params;     /* the request: the selection and what the command's options add */
    const char *output; /* -o FILE, or NULL: standard output */
    void *own;          /* the command's own option values */
};

struct query_command {
    /* its options beyond the selection, --help and -o, ending in a zeroed
     * entry; their getopt values must differ from the selection's */
    const struct option *options;
    bool output;        /* takes -o/--output FILE */
    bool stack_filters; /* takes --min-total and --group-by, into the request */
    void (*usage)(FILE *f);
    /* handles getopt's c (its value in optarg): EXIT_OK, EXIT_USAGE after
     * the message, or -ENOENT when c is not one of its options. Asked
     * before the selection, so that it may refuse a selection option. */
    int (*option)(int c, const char *arg, struct query *q);
    /* the rest, once the command line is read: the call and its output */
    int (*run)(struct query *q);
};

/* The table of command NAME, from its parts: NAME_options, NAME_usage,
 * NAME_option and NAME_run; then the shared groups it takes (.output). */
#define QUERY_COMMAND(name, ...)                                                                   \
    static const struct query_command name##_command = {.options = name##_options,                 \
                                                        .usage = name##_usage,                     \
                                                        .option = name##_option,                   \
                                                        .run = name##_run,                         \
                                                        __VA_ARGS__}

/* Runs cmd with own (its option values, their defaults already set).
 * Returns the exit code. */
int query_command_run(const struct query_command *cmd, void *own, const struct globals *g, int argc,
                      char **argv);

/* A command's --format (getopt value 'f'): the index of arg in words (n of
 * them) into *format; EXIT_USAGE after naming the words; -ENOENT when c is
 * not 'f'. */
int query_format_option(int c, const char *arg, const char *const *words, size_t n, int *format);

/* The ending of a command whose output may go to -o FILE: write fills the
 * file (whole or not at all) or standard output. *bytes: the file's size. */
int query_write(const struct query *q, output_writer write, void *ctx, long *bytes);

#endif
