/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dlopen_threads LIBRARY THREADS SECONDS: loads LIBRARY (block_at_once, as a
 * copy the test makes) and has it start THREADS threads that sleep SECONDS
 * from their first instruction on. Prints its truth as one JSON line.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "blocked_time.h"

typedef int (*start_fn)(int n, long seconds, struct blocked_time *t);

int main(int argc, char **argv)
{
    struct blocked_time t = {0};
    void *lib;
    start_fn start;

    if (argc != 4) {
        fprintf(stderr, "usage: dlopen_threads LIBRARY THREADS SECONDS\n");
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW);
    start = lib ? (start_fn)dlsym(lib, "library_start_and_join") : NULL;
    if (!start) {
        fprintf(stderr, "dlopen_threads: %s\n", dlerror());
        return 1;
    }
    if (start(atoi(argv[2]), atol(argv[3]), &t) < 0) {
        fprintf(stderr, "dlopen_threads: a thread did not start\n");
        return 1;
    }
    printf(
        "{\"pid\":%d,\"nanosleep_calls\":%d,\"nanosleep_ns\":%lld,\"nanosleep_offcpu_ns\":%lld}\n",
        (int)getpid(), t.calls, t.wall_ns, t.offcpu_ns);
    return 0;
}
