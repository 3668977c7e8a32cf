/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Who wrote a state directory's history: the machine, its boot, the daemon's
 * version. A history restored at start may be from an earlier boot, from
 * another host (a state directory copied, a disk image cloned with it), or
 * from another version: the start says which, so no one reads another
 * machine's stacks as this one's.
 */
#ifndef STATE_ORIGIN_H
#define STATE_ORIGIN_H

#include <stddef.h>

struct state_origin {
    char machine[33]; /* /etc/machine-id; "-" where there is none */
    char boot[37];    /* the kernel's boot id */
    char version[32]; /* OFFCPUD_VERSION */
};

enum origin_relation {
    ORIGIN_UNKNOWN,      /* no record (a version before it was kept), or no machine id */
    ORIGIN_THIS_BOOT,    /* a restart */
    ORIGIN_EARLIER_BOOT, /* this host, before a reboot */
    ORIGIN_OTHER_HOST,
};

/* This process's: its machine, boot and version. */
void state_origin_here(struct state_origin *ret);

/* As kept in the file: "machine boot version\n". The length written, or
 * -ENOSPC. */
int state_origin_format(const struct state_origin *o, char *buf, size_t size);

/* The file's content back; -EBADMSG where it does not read as one. */
int state_origin_parse(const char *buf, size_t len, struct state_origin *ret);

enum origin_relation state_origin_relation(const struct state_origin *then,
                                           const struct state_origin *now);

/* "this boot", "an earlier boot", "another host", "unknown" */
const char *state_origin_relation_name(enum origin_relation r);

#endif
