/* SPDX-License-Identifier: GPL-2.0-only */
/* An fd watched by the daemon's epoll loop and what to do when it is ready. */
#ifndef EVENT_H
#define EVENT_H

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>

struct event_source {
    int fd;
    void (*dispatch)(struct event_source *src, uint32_t events); /* NULL once closed */
    void (*release)(struct event_source *src);                   /* ... and freed with this */
    struct event_source *closed_next;
};

static inline int event_watch(int epfd, int op, struct event_source *src, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = src};

    return epoll_ctl(epfd, op, src->fd, &ev) < 0 ? -errno : 0;
}

/* src was closed while a batch of events is dispatched: events taken in
 * that batch may still name it, so it is freed (by release) only after the
 * batch, and those events are ignored. */
void event_release_later(struct event_source *src, void (*release)(struct event_source *src));

/* After each batch: free what was closed during it. */
void event_release_closed(void);

#endif
