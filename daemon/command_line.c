/* SPDX-License-Identifier: GPL-2.0-only */
#include "command_line.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"

/* getopt's value of a key without a short option: past every character */
#define LONG_ONLY 0x100

/* The options of the command line itself, beside one per configuration key. */
static const struct option own_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
};

#define HELP_COLUMN 28

static void usage_line(FILE *f, char short_option, const char *name, const char *arg,
                       const char *help, const char *def)
{
    char left[64];
    int n = snprintf(left, sizeof(left), "%s --%s%s%s",
                     short_option ? (char[]){'-', short_option, ',', 0} : "   ", name,
                     arg ? " " : "", arg ? arg : "");

    /* a long option and its value push the help to a line of its own */
    if (n < HELP_COLUMN)
        fprintf(f, "  %-*s", HELP_COLUMN, left);
    else
        fprintf(f, "  %s\n  %*s", left, HELP_COLUMN, "");
    if (def && *def)
        fprintf(f, "%s (default %s)\n", help, def);
    else
        fprintf(f, "%s\n", help);
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: offcpud [OPTIONS]\n"
               "Always-on off-CPU profiler: sums blocked time per stack in the kernel and\n"
               "answers queries from offcpuctl on a Varlink socket. Each option sets the\n"
               "offcpud.conf(5) key of the same name.\n\n");
    usage_line(f, 'c', "config", "FILE", "read settings from FILE (command line wins)", NULL);
    for (size_t i = 0; i < config_keys_n; i++)
        usage_line(f, config_keys[i].short_option, config_keys[i].name, config_keys[i].arg,
                   config_keys[i].help, config_keys[i].def);
    usage_line(f, 'h', "help", NULL, "show this help", NULL);
    usage_line(f, 'V', "version", NULL, "show the version", NULL);
}

/* getopt's tables, from the keys: "c:hV" and each key's short option. */
static int make_options(struct option **ret, char **ret_short)
{
    size_t n = ARRAY_SIZE(own_options);
    struct option *opts = calloc(n + config_keys_n + 1, sizeof(*opts));
    char *shorts = calloc(2 * config_keys_n + 5, 1), *p;

    if (!opts || !shorts) {
        free(opts);
        free(shorts);
        return -ENOMEM;
    }
    memcpy(opts, own_options, sizeof(own_options));
    p = stpcpy(shorts, "c:hV");
    for (size_t i = 0; i < config_keys_n; i++) {
        const struct config_key *k = &config_keys[i];

        opts[n++] = (struct option){k->name, required_argument, NULL,
                                    k->short_option ? k->short_option : LONG_ONLY + (int)i};
        if (k->short_option) {
            *p++ = k->short_option;
            *p++ = ':';
        }
    }
    *ret = opts;
    *ret_short = shorts;
    return 0;
}

static const struct config_key *key_of(int c)
{
    if (c >= LONG_ONLY && (size_t)(c - LONG_ONLY) < config_keys_n)
        return &config_keys[c - LONG_ONLY];
    for (size_t i = 0; i < config_keys_n; i++)
        if (config_keys[i].short_option && config_keys[i].short_option == c)
            return &config_keys[i];
    return NULL;
}

int command_line_parse(int argc, char **argv, struct config *cfg)
{
    _cleanup_free_ struct option *long_options = NULL;
    _cleanup_free_ char *short_options = NULL;
    const char *config_file = NULL;
    int c;

    if (make_options(&long_options, &short_options) < 0)
        return log_error_errno(ENOMEM, "reading the command line: out of memory");
    /* the file first, so that the command line overrides it; optind = 0 makes
     * getopt start afresh, as a reload parses the same arguments again */
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, short_options, long_options, NULL)) != -1)
        if (c == 'c')
            config_file = optarg;
    if (config_file && config_load_file(cfg, config_file) < 0)
        return -EINVAL;

    optind = 0;
    opterr = 1;
    while ((c = getopt_long(argc, argv, short_options, long_options, NULL)) != -1) {
        const struct config_key *k = key_of(c);
        const char *why = "invalid value";

        switch (c) {
        case 'h':
            usage(stdout);
            return 1;
        case 'V':
            printf("offcpud %s\n", OFFCPUD_VERSION);
            return 1;
        case 'c':
            continue;
        default:
            if (!k) {
                usage(stderr);
                return -EINVAL;
            }
            if (config_set(cfg, k->name, optarg, &why) < 0) {
                log_error("--%s %s: %s", k->name, optarg, why);
                return -EINVAL;
            }
        }
    }
    if (optind < argc) {
        log_error("unexpected argument '%s'", argv[optind]);
        return -EINVAL;
    }
    return 0;
}
