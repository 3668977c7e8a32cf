/* SPDX-License-Identifier: GPL-2.0-only */
/* Minimal checks for unit tests: one line per check, non-zero exit on failure. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            printf("ok: ");                                                                        \
        } else {                                                                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            check_failures++;                                                                      \
        }                                                                                          \
        printf(__VA_ARGS__);                                                                       \
        putchar('\n');                                                                             \
    } while (0)

#define CHECK_EXIT() (check_failures ? (printf("%d check(s) failed\n", check_failures), 1) : 0)

#endif
