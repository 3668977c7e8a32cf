/* SPDX-License-Identifier: GPL-2.0-only */
/* An fd watched by the daemon's epoll loop and what to do when it is ready. */
#ifndef EVENT_H
#define EVENT_H

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>

struct event_source {
    int fd;
    void (*dispatch)(struct event_source *src, uint32_t events);
};

static inline int event_watch(int epfd, int op, struct event_source *src, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = src};

    return epoll_ctl(epfd, op, src->fd, &ev) < 0 ? -errno : 0;
}

#endif
