/* SPDX-License-Identifier: GPL-2.0-only */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static bool journal_prefix;
static int max_priority = LOG_INFO;

void log_setup(void)
{
    const char *level = getenv("OFFCPUD_LOG_LEVEL");

    /* systemd connects stderr to the journal and says so in JOURNAL_STREAM */
    journal_prefix = getenv("JOURNAL_STREAM") != NULL;
    if (level && level[0] >= '0' && level[0] <= '7' && !level[1])
        max_priority = level[0] - '0';
}

void log_msg(int priority, const char *fmt, ...)
{
    va_list ap;

    if (priority > max_priority)
        return;
    if (journal_prefix)
        fprintf(stderr, "<%d>", priority);
    else
        fputs("offcpud: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
