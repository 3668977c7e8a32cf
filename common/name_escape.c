/* SPDX-License-Identifier: GPL-2.0-only */
#include "name_escape.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* Length of the valid UTF-8 character s starts with (1 to 4), 0 if it does
 * not start one: no overlong forms, no surrogates, nothing past U+10FFFF (as
 * jansson checks). The NUL ending s stops every test. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char lo = 0x80, hi = 0xbf;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        return (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (s[0] >= 0xe0 && s[0] <= 0xef) {
        lo = s[0] == 0xe0 ? 0xa0 : lo;
        hi = s[0] == 0xed ? 0x9f : hi;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        lo = s[0] == 0xf0 ? 0x90 : lo;
        hi = s[0] == 0xf4 ? 0x8f : hi;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* Whether the character of n bytes at s is escaped whole, byte by byte. */
static bool escaped(const unsigned char *s, size_t n, unsigned flags)
{
    if (n == 0)
        return true;
    if (flags & NAME_ESCAPE_CONTROL) {
        if (n == 1 && (s[0] < 0x20 || s[0] == 0x7f))
            return true;
        if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0)
            return true;
    }
    return (flags & NAME_ESCAPE_FOLDED) && s[0] == ';';
}

static void put_byte(FILE *f, unsigned char c)
{
    fprintf(f, "\\x%02x", c);
}

void name_escape_put(FILE *f, const char *s, unsigned flags)
{
    const unsigned char *p = (const unsigned char *)s;

    if ((flags & NAME_ESCAPE_FOLDED) && (strcmp(s, "-") == 0 || strcmp(s, "--") == 0))
        put_byte(f, *p++);
    while (*p) {
        const unsigned char *run = p;
        size_t n;

        /* the characters written as they are, in one write: a Dump of 100k
         * stacks is millions of names */
        while (*p && (n = utf8_len(p)) && !escaped(p, n, flags) &&
               !((flags & NAME_ESCAPE_RAW) && *p == '\\'))
            p += n;
        if (p > run)
            fwrite(run, 1, (size_t)(p - run), f);
        if (!*p)
            break;
        n = utf8_len(p);
        if (n && (flags & NAME_ESCAPE_RAW) && *p == '\\') {
            fputs("\\\\", f);
        } else {
            /* an invalid byte alone: what follows it may start a character */
            for (size_t i = 0; i < (n ?: 1); i++)
                put_byte(f, p[i]);
        }
        p += n ?: 1;
    }
}

/* Whether s is its own text, as most names are. */
static bool plain(const char *s, unsigned flags)
{
    if ((flags & NAME_ESCAPE_FOLDED) && (strcmp(s, "-") == 0 || strcmp(s, "--") == 0))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_len(p);

        if (escaped(p, n, flags) || ((flags & NAME_ESCAPE_RAW) && *p == '\\'))
            return false;
        p += n;
    }
    return true;
}

char *name_escape(const char *s, unsigned flags)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f;

    if (plain(s, flags))
        return strdup(s);
    f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    name_escape_put(f, s, flags);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t name_unescape(char *s)
{
    char *const start = s;
    char *out = s;

    while (*s) {
        int hi = s[0] == '\\' && s[1] == 'x' ? hex_digit(s[2]) : -1;
        int lo = hi >= 0 ? hex_digit(s[3]) : -1;

        if (lo >= 0 && (hi | lo)) {
            *out++ = (char)(hi << 4 | lo);
            s += 4;
        } else if (s[0] == '\\' && s[1] == '\\') {
            *out++ = '\\';
            s += 2;
        } else {
            *out++ = *s++;
        }
    }
    *out = '\0';
    return (size_t)(out - start);
}

json_t *name_json(const char *s)
{
    _cleanup_free_ char *text = NULL;

    if (plain(s, NAME_ESCAPE_RAW))
        return json_string_nocheck(s);
    text = name_escape(s, NAME_ESCAPE_RAW);
    /* valid UTF-8 now, as jansson would check again */
    return text ? json_string_nocheck(text) : NULL;
}
