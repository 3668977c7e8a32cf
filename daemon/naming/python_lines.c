/* SPDX-License-Identifier: GPL-2.0-only */
#include "python_lines.h"

#include <stdbool.h>

/* The entry codes of 3.11 (the 4 bits after the start bit) */
/* (0-9: short forms, same line, 1 byte of columns) */
enum {
    LOC_ONE_LINE0 = 10, /* 10-12: line += code - 10, 2 bytes of columns */
    LOC_ONE_LINE2 = 12,
    LOC_NO_COLUMNS = 13, /* line += svarint */
    LOC_LONG = 14,       /* line += svarint, then end line and columns */
    LOC_NONE = 15,       /* no line; the running line stays */
};

/* An entry starts with bit 7 set; the bytes after it have it clear. */
#define LOC_START 0x80

/* An unsigned varint at *p: 6-bit chunks, least significant first, bit 6 set
 * while more follow. Stops at the table's end or the next entry (a table the
 * process is rewriting may hold anything); bits past 32 are dropped. */
static uint32_t read_varint(const uint8_t **p, const uint8_t *end)
{
    uint32_t v = 0;
    unsigned shift = 0;

    while (*p < end && !(**p & LOC_START)) {
        uint8_t b = *(*p)++;

        if (shift < 32)
            v |= (uint32_t)(b & 0x3f) << shift;
        shift += 6;
        if (!(b & 0x40))
            break;
    }
    return v;
}

/* Signed: the low bit is the sign, the magnitude above it. */
static int32_t read_svarint(const uint8_t **p, const uint8_t *end)
{
    uint32_t u = read_varint(p, end);

    return u & 1 ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

int32_t python_line(const uint8_t *table, size_t size, int32_t firstlineno, int32_t lasti)
{
    const uint8_t *p = table, *end = table + size;
    int64_t pc = 0, line = firstlineno;

    if (lasti < 0)
        return firstlineno;
    while (p < end) {
        uint8_t first = *p++;
        unsigned code = (first >> 3) & 15;
        bool no_line = code == LOC_NONE;

        if (!(first & LOC_START))
            continue; /* not an entry's start: the table is damaged, resync */
        if (code == LOC_NO_COLUMNS || code == LOC_LONG)
            line += read_svarint(&p, end);
        else if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2)
            line += code - LOC_ONE_LINE0;
        pc += (first & 7) + 1;
        if (lasti < pc)
            return no_line || line < 0 || line > INT32_MAX ? -1 : (int32_t)line;
        /* the rest of the entry: columns, end line */
        while (p < end && !(*p & LOC_START))
            p++;
    }
    return -1;
}
