/* SPDX-License-Identifier: GPL-2.0-only */
/* A file a command writes (-o FILE): whole, or not at all. */
#ifndef OUTPUT_FILE_H
#define OUTPUT_FILE_H

#include <stdio.h>

/* What writes the file: 0, -errno, or an exit code after its own message. */
typedef int (*output_writer)(FILE *f, void *ctx);

/* Creates path (or truncates it) and has write fill it; *bytes is its size.
 * On any failure path is removed, so that no half file is taken for a
 * whole one. Returns an exit code after a one-line message. */
int output_file(const char *path, output_writer write, void *ctx, long *bytes);

#endif
