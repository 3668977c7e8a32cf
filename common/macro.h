/* SPDX-License-Identifier: GPL-2.0-only */
/* Small helpers used everywhere: scope-bound cleanup and array sizes. */
#ifndef MACRO_H
#define MACRO_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef ARRAY_SIZE /* libiberty has the same */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#define _cleanup_(f)                    __attribute__((cleanup(f)))
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void freep(void *p)
{
    free(*(void **)p);
}

static inline void closep(int *fd)
{
    if (*fd >= 0)
        close(*fd);
}

static inline void fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

#define _cleanup_free_   _cleanup_(freep)
#define _cleanup_close_  _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC  1000000000ULL

#endif
