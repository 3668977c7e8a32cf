/* SPDX-License-Identifier: GPL-2.0-only */
#include "verdict.h"

#include <stdio.h>
#include <string.h>

#include "macro.h"

/* A counter of data lost since start, and the words that say what to do. */
static const struct {
    const char *object; /* NULL: of the reply itself */
    const char *key;
    const char *what;
} losses[] = {
    {"collector", "agg_map_full",
     "waits found no room in the kernel's map, their time lost (raise aggregate-entries)"},
    {"collector", "stack_map_full",
     "stacks found no room in the kernel's map (raise stack-entries)"},
    {"collector", "wake_map_full",
     "wakeups found no room in the waker map (raise aggregate-entries)"},
    {"collector", "announce_lost", "new processes not announced (ring buffer full)"},
    {"collector", "storage_fail", "switch-outs found no per-task storage"},
    {NULL, "evicted_memory", "snapshots dropped before their retention (raise memory-limit)"},
    {NULL, "coarsened_records", "stacks coarsened to fit memory-limit"},
};

json_t *status_verdict(const json_t *status)
{
    const json_t *missing = json_object_get(status, "missing");
    const char *attach = json_string_value(json_object_get(status, "attach"));
    char text[1024];
    size_t len = 0;

    if (attach && !strcmp(attach, "none"))
        return json_string("not collecting: no collector attached (see offcpud's log)");
    for (size_t i = 0; i < ARRAY_SIZE(losses) && len < sizeof(text); i++) {
        const json_t *in = losses[i].object ? json_object_get(status, losses[i].object) : status;
        json_int_t n = json_integer_value(json_object_get(in, losses[i].key));

        if (n > 0)
            len += snprintf(text + len, sizeof(text) - len, "%s%lld %s", len ? "; " : "",
                            (long long)n, losses[i].what);
    }
    if (len)
        return json_sprintf("losing data since start: %s", text);
    if (json_array_size(missing))
        return json_sprintf("degraded: %s", json_string_value(json_array_get(missing, 0)));
    return json_string("healthy");
}
