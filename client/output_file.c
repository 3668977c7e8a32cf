/* SPDX-License-Identifier: GPL-2.0-only */
#include "output_file.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "macro.h"

int output_file(const char *path, output_writer write, void *ctx, long *bytes)
{
    _cleanup_fclose_ FILE *f = fopen(path, "we");
    int r;

    if (!f)
        return fail("cannot write %s: %s", path, strerror(errno));
    r = write(f, ctx);
    *bytes = ftell(f);
    if (r == 0 && fflush(f) != 0)
        r = -errno;
    if (r < 0)
        r = fail("writing %s: %s", path, strerror(-r));
    if (r != EXIT_OK)
        unlink(path);
    return r;
}
