/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl status: the daemon's health and figures. */
#include <stdio.h>

#include "commands.h"
#include "daemon_call.h"
#include "render.h"

int cmd_status(const struct globals *g, int argc, char **argv)
{
    json_t *reply = NULL;
    int r;

    (void)argv;
    if (argc > 1)
        return usage_error("status takes no arguments");
    r = daemon_call(g, "io.offcpud.Status", NULL, &reply);
    if (r != 0)
        return r;
    r = g->json ? print_json(reply) : render_status(stdout, reply);
    json_decref(reply);
    return finish_output(r);
}
