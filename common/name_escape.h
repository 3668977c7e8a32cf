/* SPDX-License-Identifier: GPL-2.0-only */
/* Names (comm, symbols, perf-map names, units, cgroups) are bytes: whatever a
 * program or a file said. This makes text of them, the one way for every
 * output. An escaped byte is "\xNN" (two lowercase hex digits) and, in the
 * raw form, a backslash is "\\": the text reads back to the bytes. */
#ifndef NAME_ESCAPE_H
#define NAME_ESCAPE_H

#include <jansson.h>
#include <stdio.h>

/* Bytes that are not valid UTF-8 are always escaped: the text is UTF-8. */
enum name_escape_flags {
    /* s is raw bytes: '\' becomes "\\". Once, where bytes become text (the
     * daemon's JSON); text made so is escaped again without it. */
    NAME_ESCAPE_RAW = 1 << 0,
    /* C0 controls (tab and newline too), DEL, and C1 controls (U+0080 to
     * U+009F, ESC's 8-bit twin CSI among them), byte by byte: for a terminal */
    NAME_ESCAPE_CONTROL = 1 << 1,
    /* ';' (between frames), and the first '-' of a name that is "-" or "--"
     * (the separators of user, kernel and waker frames): one folded frame */
    NAME_ESCAPE_FOLDED = 1 << 2,
};

/* s escaped as flags say, to f. */
void name_escape_put(FILE *f, const char *s, unsigned flags);

/* s escaped as flags say (malloc'd; NULL: no memory). */
char *name_escape(const char *s, unsigned flags);

/* A JSON string of raw bytes s (NAME_ESCAPE_RAW); NULL: no memory. */
json_t *name_json(const char *s);

/* The bytes of a name as outputs show it, in place: "\xNN" a byte (but
 * NUL), "\\" a backslash, anything else as it is. Returns the length. */
size_t name_unescape(char *s);

#endif
