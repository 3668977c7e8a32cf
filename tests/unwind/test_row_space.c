/* SPDX-License-Identifier: GPL-2.0-only */
/* The room of unwind rows: runs taken first fit, given back and merged, never
 * handed out twice, and a full room says so. */
#include <errno.h>

#include "check.h"
#include "row_space.h"

int main(void)
{
    struct row_space s;
    int64_t a, b, c, d;

    row_space_init(&s, 100);
    a = row_space_take(&s, 30);
    b = row_space_take(&s, 30);
    c = row_space_take(&s, 30);
    CHECK(a == 0 && b == 30 && c == 60, "first fit, in order: %ld %ld %ld", (long)a, (long)b,
          (long)c);
    CHECK(row_space_take(&s, 11) == -ENOSPC, "full: -ENOSPC");
    CHECK(s.used == 90, "90 used");
    CHECK(row_space_give(&s, 30, 30) == 0, "the middle run given back");
    d = row_space_take(&s, 40);
    CHECK(d == -ENOSPC, "a hole of 30 and 10 at the end hold no 40");
    CHECK(row_space_give(&s, 0, 30) == 0 && s.n == 2, "merged with the run after it: 2 holes");
    CHECK(row_space_give(&s, 60, 30) == 0 && s.n == 1, "and both: one run of all");
    CHECK(s.used == 0 && s.free[0].first == 0 && s.free[0].count == 100, "all free again");
    d = row_space_take(&s, 100);
    CHECK(d == 0, "the whole room in one run");
    row_space_done(&s);
    return CHECK_EXIT();
}
