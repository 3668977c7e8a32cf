/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Room in the BPF array of unwind rows: each file's rows take one run of
 * slots, given back when no process maps the file any more. First fit over
 * the free runs, neighbours merged: files come and go far less often than
 * they are walked.
 */
#ifndef ROW_SPACE_H
#define ROW_SPACE_H

#include <stddef.h>
#include <stdint.h>

struct row_run {
    uint32_t first, count;
};

struct row_space {
    struct row_run *free; /* sorted by first, none touching */
    size_t n, cap;
    uint32_t size, used;
};

void row_space_init(struct row_space *s, uint32_t size);
void row_space_done(struct row_space *s);

/* The first slot of count free ones, or -ENOSPC (or -ENOMEM). */
int64_t row_space_take(struct row_space *s, uint32_t count);

/* Give back what row_space_take gave. */
int row_space_give(struct row_space *s, uint32_t first, uint32_t count);

#endif
