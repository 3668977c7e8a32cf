/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * I/O a thread waits on in D: write mb MB to path (in the current
 * directory: a real disk, never a tmpfs) and fsync it. The function keeps its
 * frame (tests look for write_and_fsync).
 */
#ifndef WRITE_AND_FSYNC_H
#define WRITE_AND_FSYNC_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void write_and_fsync(const char *path, int mb)
{
    static char block[1 << 20];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fd < 0) {
        perror(path);
        exit(1);
    }
    memset(block, 'x', sizeof(block));
    for (int i = 0; i < mb; i++)
        if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
            perror("write");
            exit(1);
        }
    fsync(fd);
    close(fd);
}

#endif
