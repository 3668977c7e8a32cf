/* SPDX-License-Identifier: GPL-2.0-only */
#include "idle_note.h"

#include "notes.h"
#include "render.h"

void idle_note(const struct globals *g, const json_t *reply, const char *which)
{
    const json_t *idle = json_object_get(reply, "idle_ns");
    char buf[32];

    if (g->json || !json_is_integer(idle))
        return;
    note_set(which ? which : "idle", "--no-idle left out %s of idle waits%s%s",
             json_integer_value(idle) ? render_ns(json_integer_value(idle), buf, sizeof(buf))
                                      : "0s",
             which ? " in " : "", which ?: "");
}

void idle_note_json(json_t *out, const json_t *reply)
{
    json_t *idle = json_object_get(reply, "idle_ns");

    if (idle)
        json_object_set(out, "idle_ns", idle);
}
