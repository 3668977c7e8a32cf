/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fork_children CHILDREN [LIBRARY]: a parent that has run a while (its
 * mappings read by then) forks CHILDREN children at once, as a pre-forking
 * server does; no child execs. Each child sleeps in forked_sleep_chain, and
 * so does the parent after forking them: the same frames, one process's
 * table read, the others' taken from it. With LIBRARY (block_at_once, a copy
 * no process has mapped), the parent loads it just before forking and the
 * children sleep inside it instead: code the parent mapped after its table
 * was read, which they must not take as whole. Prints its truth as one JSON
 * line once every child has exited.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blocked_time.h"

#define NOINLINE     __attribute__((noinline))
#define CHILDREN_MAX 64

typedef void (*block_fn)(struct blocked_time *t, long seconds);

NOINLINE static void sleep_once_50ms(void)
{
    struct timespec ts = {0, 50 * 1000 * 1000};

    while (nanosleep(&ts, &ts) != 0)
        ;
    __asm__ volatile("" ::: "memory");
}

NOINLINE void forked_sleep_chain(void)
{
    for (int i = 0; i < 4; i++)
        sleep_once_50ms();
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void parent_settles(void)
{
    for (int i = 0; i < 10; i++)
        sleep_once_50ms();
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    int n = argc >= 2 ? atoi(argv[1]) : 0;
    pid_t children[CHILDREN_MAX];
    block_fn block = NULL;
    struct blocked_time t = {0};

    if (n < 1 || n > CHILDREN_MAX || argc > 3) {
        fprintf(stderr, "usage: fork_children CHILDREN(1-%d) [LIBRARY]\n", CHILDREN_MAX);
        return 2;
    }
    parent_settles();
    if (argc == 3) {
        void *lib = dlopen(argv[2], RTLD_NOW);

        block = lib ? (block_fn)dlsym(lib, "library_block_for") : NULL;
        if (!block) {
            fprintf(stderr, "fork_children: %s\n", dlerror());
            return 1;
        }
    }
    fflush(stdout);
    for (int i = 0; i < n; i++) {
        children[i] = fork();
        if (children[i] < 0) {
            perror("fork_children: fork");
            return 1;
        }
        if (children[i] == 0) {
            if (block)
                block(&t, 1);
            else
                forked_sleep_chain();
            _exit(0);
        }
    }
    forked_sleep_chain();
    for (int i = 0; i < n; i++)
        waitpid(children[i], NULL, 0);
    printf("{\"pid\":%d,\"children\":[", (int)getpid());
    for (int i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", (int)children[i]);
    printf("]}\n");
    return 0;
}
