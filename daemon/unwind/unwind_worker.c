/* SPDX-License-Identifier: GPL-2.0-only */
#include "unwind_worker.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "macro.h"
#include "offcpu.h"

/* How long the thread waits for a request before looking at its flags. */
#define POLL_MS 50

struct unwind_worker {
    struct unwind_tables *tables;
    struct ring_buffer *asks;
    pthread_t thread;
    pthread_mutex_t stats_lock; /* stats, copied out for the main thread */
    struct unwind_tables_stats stats;
    atomic_bool stop;
    atomic_uint_fast64_t grace_periods;
    uint64_t passes; /* grace periods the tables were last told of */
    /* For tests (OFFCPUD_TABLE_DELAY_MS): tables read that long after they
     * are asked for, as on a busy host; asks that come meanwhile wait with
     * the first (until hold_until, CLOCK_MONOTONIC ns). */
    int64_t delay_ns, hold_until;
};

static void hold_for_test(struct unwind_worker *w)
{
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    struct timespec ts;

    if (!w->delay_ns)
        return;
    if (now >= w->hold_until)
        w->hold_until = now + w->delay_ns;
    ts = (struct timespec){.tv_sec = (w->hold_until - now) / NSEC_PER_SEC,
                           .tv_nsec = (w->hold_until - now) % NSEC_PER_SEC};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void publish_stats(struct unwind_worker *w)
{
    pthread_mutex_lock(&w->stats_lock);
    unwind_tables_get_stats(w->tables, &w->stats);
    pthread_mutex_unlock(&w->stats_lock);
}

static int on_ask(void *ctx, void *data, size_t size)
{
    struct unwind_worker *w = ctx;
    const struct offcpu_announce *a = data;

    if (size < sizeof(*a))
        return 0;
    if (atomic_load(&w->stop))
        return 0; /* the daemon stops: the asks left are passed over */
    hold_for_test(w);
    unwind_tables_count_grace_periods(w->tables, atomic_load(&w->grace_periods));
    /* a process gone already is no error */
    if (a->kind == OFFCPU_ANNOUNCE_FORKED)
        unwind_tables_inherit(w->tables, (pid_t)a->tgid, (pid_t)a->parent, a->mm);
    else
        unwind_tables_load(w->tables, (pid_t)a->tgid, (pid_t)a->parent, a->mm);
    /* a poll takes asks for as long as they come: status is not to wait */
    publish_stats(w);
    return 0;
}

/* Between two tables of the reading of all: what is asked meanwhile, and
 * status kept up to date (that reading takes seconds on a busy host). */
static void take_asks(void *userdata)
{
    struct unwind_worker *w = userdata;

    ring_buffer__consume(w->asks);
    publish_stats(w);
}

static void *serve(void *userdata)
{
    struct unwind_worker *w = userdata;

    /* Every table again, now that the programs are attached: a process that
     * exec'd while they were read first was not announced. A request waits
     * for one process's table at most, not for all of them. */
    unwind_tables_load_all(w->tables, 0, take_asks, w);
    publish_stats(w);

    while (!atomic_load(&w->stop)) {
        uint64_t n;
        int r = ring_buffer__poll(w->asks, POLL_MS);

        if (r < 0 && r != -EINTR) {
            log_warning("unwind requests: %s; tables are no longer read", strerror(-r));
            break;
        }
        n = atomic_load(&w->grace_periods);
        if (n != w->passes) {
            w->passes = n;
            unwind_tables_count_grace_periods(w->tables, n);
            unwind_tables_begin_pass(w->tables);
        }
        publish_stats(w);
    }
    return NULL;
}

/* The thread takes no signal: they are the main loop's (a signalfd), and one
 * delivered here would act by default, killing the daemon. */
static int start_thread(struct unwind_worker *w)
{
    sigset_t all, old;
    int r;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    r = pthread_create(&w->thread, NULL, serve, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -r;
}

int unwind_worker_start(struct unwind_tables *t, int asks_fd, struct unwind_worker **ret)
{
    struct unwind_worker *w = calloc(1, sizeof(*w));
    unsigned long delay_ms;
    int r;

    if (!w) {
        unwind_tables_free(t);
        return -ENOMEM;
    }
    w->tables = t;
    /* the reading of a file stops too, within a CPU budget's check */
    unwind_tables_set_stop(t, &w->stop);
    delay_ms = strtoul(getenv("OFFCPUD_TABLE_DELAY_MS") ?: "0", NULL, 10);
    w->delay_ns = (int64_t)((delay_ms < 60000 ? delay_ms : 60000) * NSEC_PER_MSEC);
    pthread_mutex_init(&w->stats_lock, NULL);
    unwind_tables_get_stats(t, &w->stats);
    w->asks = ring_buffer__new(asks_fd, on_ask, w, NULL);
    if (!w->asks) {
        r = -errno;
        goto fail;
    }
    r = start_thread(w);
    if (r < 0)
        goto fail;
    *ret = w;
    return 0;
fail:
    ring_buffer__free(w->asks);
    unwind_tables_free(t);
    pthread_mutex_destroy(&w->stats_lock);
    free(w);
    return r;
}

struct unwind_worker *unwind_worker_stop(struct unwind_worker *w)
{
    if (!w)
        return NULL;
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    ring_buffer__free(w->asks);
    unwind_tables_free(w->tables);
    pthread_mutex_destroy(&w->stats_lock);
    free(w);
    return NULL;
}

void unwind_worker_grace_period(struct unwind_worker *w)
{
    atomic_fetch_add(&w->grace_periods, 1);
}

void unwind_worker_get_stats(struct unwind_worker *w, struct unwind_tables_stats *ret)
{
    pthread_mutex_lock(&w->stats_lock);
    *ret = w->stats;
    pthread_mutex_unlock(&w->stats_lock);
}
