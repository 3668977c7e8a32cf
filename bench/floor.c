// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor empty|timestamps: keeps bench/floor.bpf.c attached to sched_switch
 * until SIGINT or SIGTERM, for bench/overhead to measure against.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "floor.skel.h"

int main(int argc, char **argv)
{
    struct floor_bpf *skel = NULL;
    sigset_t stop;
    int sig, err;

    if (argc != 2 || (strcmp(argv[1], "empty") && strcmp(argv[1], "timestamps"))) {
        fprintf(stderr, "usage: %s empty|timestamps\n", argv[0]);
        return 2;
    }
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop, NULL);

    skel = floor_bpf__open();
    if (!skel) {
        err = -errno;
        goto cleanup;
    }
    skel->rodata->timestamps = strcmp(argv[1], "timestamps") == 0;
    err = floor_bpf__load(skel);
    if (err)
        goto cleanup;
    err = floor_bpf__attach(skel);
    if (err)
        goto cleanup;
    fprintf(stderr, "floor: %s program attached\n", argv[1]);
    sigwait(&stop, &sig);

cleanup:
    floor_bpf__destroy(skel);
    if (err)
        fprintf(stderr, "floor: %s\n", strerror(-err));
    return err ? 1 : 0;
}
