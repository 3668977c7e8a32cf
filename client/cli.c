/* SPDX-License-Identifier: GPL-2.0-only */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int report(int code, const char *fmt, va_list ap)
{
    fputs("offcpuctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(code == EXIT_USAGE ? " (see offcpuctl --help)\n" : "\n", stderr);
    return code;
}

int fail(const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = report(EXIT_ERROR, fmt, ap);
    va_end(ap);
    return r;
}

int usage_error(const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = report(EXIT_USAGE, fmt, ap);
    va_end(ap);
    return r;
}

int option_error(int c, char **argv)
{
    if (c == ':')
        return usage_error("option '%s' needs a value", argv[optind - 1]);
    return usage_error("unknown option '%s'", argv[optind - 1]);
}

int limit_parse(const char *arg, size_t *ret)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(arg, &end, 10);
    if (errno || *end || end == arg || n < 0)
        return usage_error("invalid --limit '%s' (a number, 0 for all)", arg);
    *ret = (size_t)n;
    return EXIT_OK;
}

int choice_parse(const char *arg, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(arg, names[i]) == 0)
            return (int)i;
    return -ENOENT;
}

int print_json(const json_t *v)
{
    if (json_dumpf(v, stdout, JSON_INDENT(2)) < 0)
        return fail("writing output: %s", strerror(errno));
    putchar('\n');
    return EXIT_OK;
}

int finish_output(int r)
{
    if (fflush(stdout) != 0 && r == EXIT_OK)
        return fail("writing output: %s", strerror(errno));
    return r;
}
