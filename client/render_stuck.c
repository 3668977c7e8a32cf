/* SPDX-License-Identifier: GPL-2.0-only */
#include "render_stuck.h"

#include <stdbool.h>
#include <string.h>

#include "macro.h"
#include "name_escape.h"
#include "render.h"

/* Generic waits under the function a task is waiting in: naming them would
 * say nothing ("in schedule"). */
static bool generic_wait(const char *f)
{
    static const char *const prefixes[] = {"_", "[", "wait_for_completion", "bit_wait"};

    if (strstr(f, "schedule"))
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
        if (strncmp(f, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* The innermost kernel frame that is not a generic wait, else the user leaf. */
static const char *waiting_in(const json_t *task)
{
    const json_t *kernel = json_object_get(task, "kernel");
    const json_t *user = json_object_get(task, "user");

    for (size_t i = json_array_size(kernel); i-- > 0;) {
        const char *f = json_string_value(json_array_get(kernel, i));

        if (f && !generic_wait(f))
            return f;
    }
    return json_string_value(json_array_get(user, json_array_size(user) - 1));
}

/* A name for a terminal: no control reaches it. */
static void put_name(FILE *f, const char *s)
{
    name_escape_put(f, s ?: "?", NAME_ESCAPE_CONTROL);
}

/* One a line; a frame that is "-" must not read as the user/kernel line. */
static void put_frames_leaf_first(FILE *f, const json_t *frames)
{
    for (size_t i = json_array_size(frames); i-- > 0;) {
        fputs("    ", f);
        name_escape_put(f, json_string_value(json_array_get(frames, i)) ?: "?",
                        NAME_ESCAPE_CONTROL | NAME_ESCAPE_FOLDED);
        fputc('\n', f);
    }
}

int render_stuck(FILE *f, const json_t *reply)
{
    const json_t *tasks = json_object_get(reply, "tasks");
    char blocked[32], since[32];
    size_t i;
    json_t *t;

    json_array_foreach(tasks, i, t)
    {
        const char *in = waiting_in(t);
        const json_t *user = json_object_get(t, "user");

        render_ns(json_integer_value(json_object_get(t, "blocked_ns")), blocked, sizeof(blocked));
        render_time(json_integer_value(json_object_get(t, "since_ns")), since, sizeof(since));
        put_name(f, json_string_value(json_object_get(t, "comm")));
        fprintf(f, " (pid %lld, tid %lld) has been in ",
                (long long)json_integer_value(json_object_get(t, "pid")),
                (long long)json_integer_value(json_object_get(t, "tid")));
        put_name(f, json_string_value(json_object_get(t, "state")));
        fprintf(f, " for %s, since %s", blocked, since);
        if (in) {
            fputs(", in ", f);
            put_name(f, in);
        }
        fputc('\n', f);
        put_frames_leaf_first(f, json_object_get(t, "kernel"));
        if (json_array_size(user)) {
            fputs("    -\n", f);
            put_frames_leaf_first(f, user);
        }
    }
    return (int)json_array_size(tasks);
}
