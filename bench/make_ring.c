/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Writes the state file of a daemon that has watched a busy machine for a
 * while, with the daemon's own ring, interning and persistence code, so that
 * bench/overhead can time queries against a full ring without waiting 15
 * minutes for one:
 *
 *   make_ring PATH SECONDS PROCESSES THREADS [PHASES]
 *
 * One snapshot per second ending now; every thread of every process blocks
 * in two places per second (state S and D), each place a stack of 8 to 40
 * frames out of a pool. Over the window a thread moves through PHASES
 * (default 3) pairs of places, so that there are PROCESSES x THREADS x 2 x
 * PHASES distinct stacks (less a few that come out alike): thousands by
 * default, 100k with 66 phases of 200 processes of 5 threads. Process i has
 * pid 1000 + i.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "persist.h"
#include "ring.h"

#define NSEC 1000000000LL

static uint32_t stack_of(struct intern *in, unsigned seed, unsigned depth, const char *fmt)
{
    uint32_t frames[64], id;
    char name[64];

    for (unsigned i = 0; i < depth; i++) {
        snprintf(name, sizeof(name), fmt, (seed * 2654435761u + i * 40503u) % 5000u);
        frames[i] = intern_string(in, name);
    }
    id = intern_stack(in, frames, depth);
    for (unsigned i = 0; i < depth; i++)
        intern_string_unref(in, frames[i]);
    return id;
}

int main(int argc, char **argv)
{
    struct timespec now;
    struct ring r;
    FILE *f;
    int seconds, processes, threads, phases = 3;
    int64_t end;

    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s PATH SECONDS PROCESSES THREADS [PHASES]\n", argv[0]);
        return 2;
    }
    seconds = atoi(argv[2]);
    processes = atoi(argv[3]);
    threads = atoi(argv[4]);
    if (argc == 6)
        phases = atoi(argv[5]);
    if (seconds < 1 || processes < 1 || threads < 1 || phases < 1) {
        fprintf(stderr, "%s: SECONDS, PROCESSES, THREADS and PHASES must be positive\n", argv[0]);
        return 2;
    }
    clock_gettime(CLOCK_REALTIME, &now);
    end = (int64_t)now.tv_sec * NSEC + now.tv_nsec;
    ring_init(&r, (uint64_t)(seconds + 60) * NSEC, 4ULL << 30);
    for (int s = 0; s < seconds; s++) {
        uint32_t n = (uint32_t)(processes * threads * 2);
        struct snapshot *snap = calloc(1, sizeof(*snap) + n * sizeof(struct record));
        uint32_t k = 0;

        if (!snap)
            return 1;
        snap->start_ns = end - (int64_t)(seconds - s) * NSEC;
        snap->end_ns = snap->start_ns + NSEC;
        for (int p = 0; p < processes; p++) {
            char comm[16];

            snprintf(comm, sizeof(comm), "svc%d", p % 50);
            for (int t = 0; t < threads; t++) {
                for (int w = 0; w < 2; w++) {
                    /* a thread moves through its phases' places over time; a
                     * phase's places are apart from every other phase's */
                    unsigned phase = (unsigned)((int64_t)s * phases / seconds);
                    unsigned place = (unsigned)(p * 131 + t * 17 + w * 7) + phase * 30011u;

                    snap->records[k++] = (struct record){
                        .total_ns = 400000000ULL + (unsigned)(place % 97) * 1000000ULL,
                        .count = 1 + place % 50,
                        .tgid = (uint32_t)(1000 + p),
                        .tid = (uint32_t)(1000 + p + t * 100000),
                        .uid = (uint32_t)(1000 + p % 7),
                        .comm = intern_string(&r.intern, comm),
                        .cgroup = intern_string(&r.intern, "/system.slice/svc.service"),
                        .ustack = stack_of(&r.intern, place, 8 + place % 33, "app_fn_%u"),
                        .kstack = stack_of(&r.intern, place % 20, 6 + place % 10, "kernel_fn_%u"),
                        .state = w ? 'D' : 'S',
                    };
                }
            }
        }
        snap->n = k;
        if (ring_push(&r, snap, end) < 0)
            return 1;
    }
    f = fopen(argv[1], "we");
    if (!f || ring_save(&r, NULL, 0, f) < 0 || fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    printf("%zu snapshots, %u stacks, %zu bytes in memory\n", r.n, (unsigned)r.intern.stacks.count,
           ring_memory(&r));
    ring_done(&r);
    return 0;
}
