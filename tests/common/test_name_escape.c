/* SPDX-License-Identifier: GPL-2.0-only */
/* Names as text: valid UTF-8 always, controls and folded separators escaped
 * where asked, and the text reads back to the bytes. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "name_escape.h"

static void expect(const char *what, const char *s, unsigned flags, const char *want)
{
    char *got = name_escape(s, flags);

    CHECK(got && strcmp(got, want) == 0, "%s: '%s' (got '%s')", what, want, got ?: "(null)");
    free(got);
}

static void round_trip(const char *s)
{
    char *raw = name_escape(s, NAME_ESCAPE_RAW);
    char *all = raw ? name_escape(raw, NAME_ESCAPE_CONTROL | NAME_ESCAPE_FOLDED) : NULL;
    char *back = all ? strdup(all) : NULL;

    CHECK(back && name_unescape(back) == strlen(s) && strcmp(back, s) == 0,
          "'%s' reads back from '%s'", all ?: "", all ?: "");
    free(raw);
    free(all);
    free(back);
}

static void unescaped(const char *text, const char *want)
{
    char *s = strdup(text);

    CHECK(s && name_unescape(s) == strlen(want) && strcmp(s, want) == 0, "'%s' reads as '%s'", text,
          want);
    free(s);
}

int main(void)
{
    json_t *v;

    expect("a plain name is itself", "main", NAME_ESCAPE_RAW, "main");
    expect("UTF-8 is kept", "\xc3\xa4pfel", NAME_ESCAPE_RAW | NAME_ESCAPE_CONTROL, "\xc3\xa4pfel");
    /* prctl(PR_SET_NAME, "ääääääää"): the kernel keeps 15 bytes, half an ä last */
    expect("a character cut short", "\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3",
           NAME_ESCAPE_RAW, "\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\\xc3");
    expect("a bad byte alone, the next character kept", "\xff\xc3\xa4", 0, "\\xff\xc3\xa4");
    expect("overlong", "\xc0\xaf", 0, "\\xc0\\xaf");
    expect("surrogate", "\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
    expect("past U+10FFFF", "\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80");
    expect("a continuation byte alone", "a\x80z", 0, "a\\x80z");
    expect("4 bytes", "\xf0\x9f\x98\x80", 0, "\xf0\x9f\x98\x80");
    expect("backslash, raw", "a\\x41", NAME_ESCAPE_RAW, "a\\\\x41");
    expect("backslash, already text", "a\\\\x41", NAME_ESCAPE_CONTROL, "a\\\\x41");
    expect("ESC for a terminal", "\x1b[31mred", NAME_ESCAPE_CONTROL, "\\x1b[31mred");
    expect("ESC kept without CONTROL (JSON escapes it)", "\x1b", NAME_ESCAPE_RAW, "\x1b");
    expect("tab, newline, DEL", "a\tb\nc\x7f", NAME_ESCAPE_CONTROL, "a\\x09b\\x0ac\\x7f");
    expect("C1: CSI as UTF-8",
           "\xc2\x9b"
           "31m",
           NAME_ESCAPE_CONTROL, "\\xc2\\x9b31m");
    expect("U+00A0 is no control", "\xc2\xa0", NAME_ESCAPE_CONTROL, "\xc2\xa0");
    expect("';' in a folded frame", "a;b", NAME_ESCAPE_FOLDED, "a\\x3bb");
    expect("';' elsewhere", "a;b", NAME_ESCAPE_CONTROL, "a;b");
    expect("a frame '-'", "-", NAME_ESCAPE_FOLDED, "\\x2d");
    expect("a frame '--'", "--", NAME_ESCAPE_FOLDED, "\\x2d-");
    expect("'-' inside a name", "a-b", NAME_ESCAPE_FOLDED, "a-b");
    expect("'---' is no separator", "---", NAME_ESCAPE_FOLDED, "---");
    expect("'-' outside folded", "-", NAME_ESCAPE_CONTROL, "-");
    expect("empty", "", NAME_ESCAPE_RAW | NAME_ESCAPE_CONTROL | NAME_ESCAPE_FOLDED, "");

    round_trip("\xc3\xa4\xc3\xa4\xc3");
    round_trip("\x1b[31mred\\x1b;-");
    round_trip("-");
    round_trip("--");
    round_trip("\\\\\xff\xc2\x9b;\n");

    unescaped("plain", "plain");
    unescaped("\\x1B\\x1b", "\x1b\x1b");
    unescaped("a\\x0", "a\\x0");     /* too short: as it is */
    unescaped("a\\xzz", "a\\xzz");   /* not hex */
    unescaped("a\\x00b", "a\\x00b"); /* no NUL inside a name */
    unescaped("a\\b\\", "a\\b\\");   /* a lone backslash stays */
    unescaped("\\\\x41", "\\x41");

    v = name_json("\xc3\xa4\xc3\\");
    CHECK(v && strcmp(json_string_value(v), "\xc3\xa4\\xc3\\\\") == 0,
          "JSON of bytes: valid UTF-8 (got '%s')", v ? json_string_value(v) : "(null)");
    json_decref(v);
    v = name_json("plain");
    CHECK(v && strcmp(json_string_value(v), "plain") == 0, "JSON of a plain name");
    json_decref(v);
    return CHECK_EXIT();
}
