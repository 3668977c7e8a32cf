/* SPDX-License-Identifier: GPL-2.0-only */
/* Durations as people write them, and everything else refused. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "duration.h"

static void ok(const char *s, uint64_t want)
{
    uint64_t v = 0;
    int r = duration_parse(s, &v);

    CHECK(r == 0 && v == want, "'%s' -> %llu ns (got %d, %llu)", s, (unsigned long long)want, r,
          (unsigned long long)v);
}

static void bad(const char *s, int want)
{
    uint64_t v = 0;
    int r = duration_parse(s, &v);

    CHECK(r == want, "'%s' refused with %d (got %d)", s, want, r);
}

int main(void)
{
    char buf[32];

    ok("500ms", 500000000ULL);
    ok("60s", 60000000000ULL);
    ok("5m", 300000000000ULL);
    ok("1h", 3600000000000ULL);
    ok("1h30m", 5400000000000ULL);
    ok("2d", 172800000000000ULL);
    ok("250us", 250000ULL);
    ok("7ns", 7ULL);
    ok("1m30s", 90000000000ULL);
    ok("0s", 0ULL);
    bad("", -EINVAL);
    bad("60", -EINVAL);
    bad("-5s", -EINVAL);
    bad("5 s", -EINVAL);
    bad("5sec", -EINVAL);
    bad("abc", -EINVAL);
    bad("1.5s", -EINVAL);
    bad("s", -EINVAL);
    bad("99999999999999999999s", -ERANGE);
    bad("300000d", -ERANGE);

    CHECK(strcmp(duration_format(1500000000ULL, buf, sizeof(buf)), "1500ms") == 0, "1.5s -> %s",
          buf);
    CHECK(strcmp(duration_format(120000000000ULL, buf, sizeof(buf)), "2m") == 0, "2min -> %s", buf);
    CHECK(strcmp(duration_format(0, buf, sizeof(buf)), "0s") == 0, "0 -> %s", buf);
    return CHECK_EXIT();
}
