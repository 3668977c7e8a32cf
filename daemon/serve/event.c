/* SPDX-License-Identifier: GPL-2.0-only */
#include "event.h"

#include <stddef.h>

/* One event loop per process: the sources closed during its batch. */
static struct event_source *closed;

void event_release_later(struct event_source *src, void (*release)(struct event_source *src))
{
    src->dispatch = NULL;
    src->release = release;
    src->closed_next = closed;
    closed = src;
}

void event_release_closed(void)
{
    while (closed) {
        struct event_source *src = closed;

        closed = src->closed_next;
        src->release(src);
    }
}
