/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Threads that name themselves whatever they are given, as any program may:
 * bytes that are not UTF-8, terminal escapes. One thread a name; each sleeps
 * 10 ms a few times (for dump and top), then blocks in a read of a pipe (for
 * stuck) until a line arrives on stdin.
 *
 *   named_threads [--rounds N] NAME...
 *
 * Prints "blocking PID TID..." (one tid a name, in order) once every thread
 * has done its sleeps and is about to block; exits after the line on stdin.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 8

struct named {
    pthread_t thread;
    const char *name;
    pid_t tid;
};

static int rounds = 20;
static int wake[2];
static sem_t slept;

static void *named_main(void *arg)
{
    struct named *n = arg;
    struct timespec ts = {0, 10 * 1000 * 1000};
    char byte;

    n->tid = (pid_t)syscall(SYS_gettid);
    /* the kernel keeps 15 bytes, cutting wherever that falls */
    prctl(PR_SET_NAME, n->name);
    for (int i = 0; i < rounds; i++)
        nanosleep(&ts, NULL);
    sem_post(&slept);
    if (read(wake[0], &byte, 1) < 0)
        perror("read");
    return NULL;
}

int main(int argc, char **argv)
{
    struct named threads[MAX_THREADS];
    int i = 1, n = 0;
    char line[16];

    if (argc > 2 && strcmp(argv[1], "--rounds") == 0) {
        rounds = atoi(argv[2]);
        i = 3;
    }
    if (i == argc || argc - i > MAX_THREADS || pipe(wake) < 0 || sem_init(&slept, 0, 0) < 0) {
        fprintf(stderr, "usage: %s [--rounds N] NAME... (up to %d)\n", argv[0], MAX_THREADS);
        return 2;
    }
    for (; i < argc; i++, n++) {
        threads[n].name = argv[i];
        if (pthread_create(&threads[n].thread, NULL, named_main, &threads[n]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    for (i = 0; i < n; i++)
        sem_wait(&slept);
    printf("blocking %d", (int)getpid());
    for (i = 0; i < n; i++)
        printf(" %d", (int)threads[i].tid);
    printf("\n");
    fflush(stdout);
    if (!fgets(line, sizeof(line), stdin))
        line[0] = '\0';
    /* closing the write end wakes every reader */
    close(wake[1]);
    for (i = 0; i < n; i++)
        pthread_join(threads[i].thread, NULL);
    return 0;
}
