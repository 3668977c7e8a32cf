/* SPDX-License-Identifier: GPL-2.0-only */
#include "query_command.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "selection.h"

/* the selection's, a command's own, the stack filters, -o, --help and the
 * end: no command has more than a dozen of its own */
#define MAX_OPTIONS 32

static const struct option selection_options[] = {SELECTION_OPTIONS};
static const struct option output_option = {"output", required_argument, NULL, 'o'};
static const struct option stack_filter_options[] = {{"min-total", required_argument, NULL, 'm'},
                                                     {"group-by", required_argument, NULL, 'g'}};
static const struct option help_option = {"help", no_argument, NULL, 'h'};

/* The getopt_long table of cmd: the selection first, as in every --help. */
static int options_table(const struct query_command *cmd, struct option *opts, size_t size)
{
    size_t n = 0;

    for (size_t i = 0; i < ARRAY_SIZE(selection_options); i++)
        opts[n++] = selection_options[i];
    for (const struct option *o = cmd->options; o && o->name; o++) {
        if (n + 5 >= size)
            return -E2BIG;
        opts[n++] = *o;
    }
    for (size_t i = 0; cmd->stack_filters && i < ARRAY_SIZE(stack_filter_options); i++)
        opts[n++] = stack_filter_options[i];
    if (cmd->output)
        opts[n++] = output_option;
    opts[n++] = help_option;
    opts[n] = (struct option){NULL, 0, NULL, 0};
    return 0;
}

int query_command_run(const struct query_command *cmd, void *own, const struct globals *g, int argc,
                      char **argv)
{
    struct option opts[MAX_OPTIONS];
    json_auto_t *params = json_object();
    struct query q = {.g = g, .params = params, .own = own};
    int c, r = EXIT_OK;

    if (!params)
        return fail("out of memory");
    if (options_table(cmd, opts, ARRAY_SIZE(opts)) < 0)
        return fail("too many options");
    optind = 1;
    opterr = 0;
    while (r == EXIT_OK &&
           (c = getopt_long(argc, argv, cmd->output ? ":o:" : ":", opts, NULL)) != -1) {
        if (c == 'h') {
            cmd->usage(stdout);
            return EXIT_OK;
        }
        if (c == 'o' && cmd->output) {
            q.output = optarg;
            continue;
        }
        if (c == 'm' && cmd->stack_filters)
            r = selection_min_total(optarg, params);
        else if (c == 'g' && cmd->stack_filters)
            r = selection_group_by(optarg, params);
        else
            r = cmd->option(c, optarg, &q);
        if (r == -ENOENT)
            r = selection_option(c, optarg, params);
        if (r == -ENOENT)
            r = option_error(c, argv);
    }
    if (r == EXIT_OK && optind < argc)
        r = usage_error("unexpected argument '%s'", argv[optind]);
    return r != EXIT_OK ? r : cmd->run(&q);
}

int query_write(const struct query *q, output_writer write, void *ctx, long *bytes)
{
    int r;

    *bytes = 0;
    if (q->output)
        return output_file(q->output, write, ctx, bytes);
    r = write(stdout, ctx);
    return finish_output(r < 0 ? fail("writing output: %s", strerror(-r)) : r);
}

int query_format_option(int c, const char *arg, const char *const *words, size_t n, int *format)
{
    char list[128];
    size_t len = 0;
    int r;

    if (c != 'f')
        return -ENOENT;
    r = choice_parse(arg, words, n);
    if (r >= 0) {
        *format = r;
        return EXIT_OK;
    }
    list[0] = '\0';
    for (size_t i = 0; i < n; i++)
        len += snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
                        i == 0      ? ""
                        : i + 1 < n ? ", "
                                    : " or ",
                        words[i]);
    return usage_error("invalid --format '%s' (%s)", arg, list);
}
