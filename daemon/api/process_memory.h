/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's own memory as the system sees it, for status. */
#ifndef PROCESS_MEMORY_H
#define PROCESS_MEMORY_H

#include <stddef.h>

/* The process's resident set, in bytes; -errno. */
int process_rss(size_t *ret);

#endif
