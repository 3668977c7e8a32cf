/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where a user frame's address lies: the file the process maps there, the
 * offset in that file and the file's build-id, so that a name can be checked
 * against another resolver (addr2line, perf). The ring keeps it as two
 * interned strings per frame, "0xOFFSET" and "BUILD_ID PATH" (the second
 * shared by every frame of that file; BUILD_ID "-" when unknown), or both ""
 * for a frame in no file: this is the one home of that form. A frame of
 * interpreted code (a Python function) lies at a line of a source file:
 * "line N" and "- PATH".
 */
#ifndef FRAME_WHERE_H
#define FRAME_WHERE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRAME_WHERE_BUILD_ID_MAX 64 /* bytes, as elf_debug_ref keeps them */
/* Room for either string of the ring's form. */
#define FRAME_WHERE_TEXT_MAX (2 * FRAME_WHERE_BUILD_ID_MAX + PATH_MAX + 2)

struct frame_where {
    bool in_file; /* false: nothing else is set */
    uint32_t line; /* a source file's line: module is that file, offset and build_id unused */
    uint64_t offset;
    char build_id[2 * FRAME_WHERE_BUILD_ID_MAX + 1]; /* hex, "" if unknown */
    char module[PATH_MAX];                           /* the path as the process maps it */
};

/* In the file module (as mapped), at offset; build-id may be empty. */
void frame_where_set(struct frame_where *w, const char *module, uint64_t offset,
                     const uint8_t *build_id, size_t build_id_len);

/* At line (> 0) of the source file path. */
void frame_where_set_source(struct frame_where *w, const char *path, uint32_t line);

/* The ring's two strings for w, each in a buffer of FRAME_WHERE_TEXT_MAX. */
void frame_where_format(const struct frame_where *w, char *offset, char *file);

/* Back from the ring's two strings (file may be NULL: not known). Returns 0,
 * or -EINVAL (w->in_file false) for anything not in the form. */
int frame_where_parse(const char *offset, const char *file, struct frame_where *w);

#endif
