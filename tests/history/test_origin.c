/* SPDX-License-Identifier: GPL-2.0-only */
/* The record of who wrote a state directory: written and read back, refused
 * when it is not one, and what two records say of each other. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "state_origin.h"

static struct state_origin origin(const char *machine, const char *boot, const char *version)
{
    struct state_origin o;

    snprintf(o.machine, sizeof(o.machine), "%s", machine);
    snprintf(o.boot, sizeof(o.boot), "%s", boot);
    snprintf(o.version, sizeof(o.version), "%s", version);
    return o;
}

int main(void)
{
    const char *m1 = "0123456789abcdef0123456789abcdef", *m2 = "fedcba9876543210fedcba9876543210";
    const char *b1 = "62320c33-d12a-44ef-8f04-db307eea3d12",
               *b2 = "00000000-0000-0000-0000-000000000000";
    struct state_origin here, back, now = origin(m1, b1, "0.1.0");
    char line[128];
    int n;

    state_origin_here(&here);
    CHECK(strlen(here.boot) == 36, "this boot's id: %s", here.boot);
    n = state_origin_format(&now, line, sizeof(line));
    CHECK(n > 0 && state_origin_parse(line, (size_t)n, &back) == 0 &&
              strcmp(back.machine, now.machine) == 0 && strcmp(back.boot, now.boot) == 0 &&
              strcmp(back.version, now.version) == 0,
          "written and read back: %s", line);
    CHECK(state_origin_format(&now, line, 40) == -ENOSPC, "no room: refused, not cut");

    static const char *const bad[] = {
        "",                                        /* empty */
        "a b\n",                                   /* a word short */
        "a b c",                                   /* no end of line */
        "a b c\nd",                                /* something after it */
        "a b c d\n",                               /* a word more */
        "a\tb c\n",                                /* not one space */
        "0123456789abcdef0123456789abcdef0 b c\n", /* a machine id too long */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(state_origin_parse(bad[i], strlen(bad[i]), &back) == -EBADMSG, "refused: \"%s\"",
              bad[i]);
    CHECK(state_origin_parse("a b\0c\n", 6, &back) == -EBADMSG, "refused: a NUL in it");

    struct state_origin then = origin(m1, b1, "0.0.9");
    CHECK(state_origin_relation(&then, &now) == ORIGIN_THIS_BOOT, "the same boot: a restart");
    then = origin(m1, b2, "0.1.0");
    CHECK(state_origin_relation(&then, &now) == ORIGIN_EARLIER_BOOT, "same machine, other boot");
    then = origin(m2, b2, "0.1.0");
    CHECK(state_origin_relation(&then, &now) == ORIGIN_OTHER_HOST, "another machine");
    then = origin("-", b2, "0.1.0");
    CHECK(state_origin_relation(&then, &now) == ORIGIN_UNKNOWN, "no machine id then: unknown");
    now = origin("-", b1, "0.1.0");
    CHECK(state_origin_relation(&then, &now) == ORIGIN_UNKNOWN, "no machine id now: unknown");
    CHECK(strcmp(state_origin_relation_name(ORIGIN_OTHER_HOST), "another host") == 0, "named");
    return CHECK_EXIT();
}
