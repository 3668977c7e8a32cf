/* SPDX-License-Identifier: GPL-2.0-only */
#include "state_origin.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

/* The first word of path into buf, "-" where there is none. */
static void read_word(const char *path, char *buf, size_t size)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    char line[64];
    size_t n = 0;

    if (f && fgets(line, sizeof(line), f))
        while (line[n] && !isspace((unsigned char)line[n]) && n + 1 < size) {
            buf[n] = line[n];
            n++;
        }
    if (n == 0)
        buf[n++] = '-';
    buf[n] = '\0';
}

void state_origin_here(struct state_origin *ret)
{
    read_word("/etc/machine-id", ret->machine, sizeof(ret->machine));
    read_word("/proc/sys/kernel/random/boot_id", ret->boot, sizeof(ret->boot));
    snprintf(ret->version, sizeof(ret->version), "%s", OFFCPUD_VERSION);
}

int state_origin_format(const struct state_origin *o, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s %s %s\n", o->machine, o->boot, o->version);

    return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}

/* One word of at most size-1 printable bytes from *p into buf. */
static int take_word(const char **p, const char *end, char *buf, size_t size)
{
    size_t n = 0;

    while (*p < end && **p == ' ')
        (*p)++;
    while (*p < end && isgraph((unsigned char)**p)) {
        if (n + 1 >= size)
            return -EBADMSG;
        buf[n++] = *(*p)++;
    }
    buf[n] = '\0';
    return n ? 0 : -EBADMSG;
}

int state_origin_parse(const char *buf, size_t len, struct state_origin *ret)
{
    const char *p = buf, *end = buf + len;

    if (take_word(&p, end, ret->machine, sizeof(ret->machine)) < 0 ||
        take_word(&p, end, ret->boot, sizeof(ret->boot)) < 0 ||
        take_word(&p, end, ret->version, sizeof(ret->version)) < 0)
        return -EBADMSG;
    return p < end && *p == '\n' && p + 1 == end ? 0 : -EBADMSG;
}

enum origin_relation state_origin_relation(const struct state_origin *then,
                                           const struct state_origin *now)
{
    /* without a machine id, the boot id still tells a restart, but not
     * another boot of this host from one of another */
    if (strcmp(then->boot, now->boot) == 0)
        return ORIGIN_THIS_BOOT;
    if (strcmp(now->machine, "-") == 0 || strcmp(then->machine, "-") == 0)
        return ORIGIN_UNKNOWN;
    return strcmp(then->machine, now->machine) == 0 ? ORIGIN_EARLIER_BOOT : ORIGIN_OTHER_HOST;
}

const char *state_origin_relation_name(enum origin_relation r)
{
    static const char *const names[] = {
        [ORIGIN_UNKNOWN] = "unknown",
        [ORIGIN_THIS_BOOT] = "this boot",
        [ORIGIN_EARLIER_BOOT] = "an earlier boot",
        [ORIGIN_OTHER_HOST] = "another host",
    };

    return names[r];
}
