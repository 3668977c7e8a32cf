/* SPDX-License-Identifier: GPL-2.0-only */
#include "folded_reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "macro.h"

int folded_reply_init(struct folded_reply *r, const json_t *reply)
{
    const json_t *paths = json_object_get(reply, "paths");

    *r = (struct folded_reply){.reply = reply, .npaths = json_array_size(paths)};
    if (!paths)
        return 0;
    r->paths = calloc(r->npaths ?: 1, sizeof(*r->paths));
    return r->paths ? 0 : -ENOMEM;
}

void folded_reply_done(struct folded_reply *r)
{
    for (size_t i = 0; r->paths && i < r->npaths; i++)
        free(r->paths[i]);
    free(r->paths);
    *r = (struct folded_reply){0};
}

/* Path i as text, ";" before each name: made once. NULL with errno set. */
static const char *path_text(struct folded_reply *r, const json_t *index)
{
    const json_t *names = json_object_get(r->reply, "names");
    json_int_t i = json_integer_value(index);
    const char *p, *q;
    size_t size = 1;
    char *out = NULL;

    if (!json_is_integer(index) || i < 0 || (size_t)i >= r->npaths) {
        errno = EBADMSG;
        return NULL;
    }
    if (r->paths[i])
        return r->paths[i];
    p = json_string_value(json_array_get(json_object_get(r->reply, "paths"), (size_t)i));
    if (!p) {
        errno = EBADMSG;
        return NULL;
    }
    /* twice over the indexes: the text's size, then the text, in one
     * allocation (a whole window has millions of frames) */
    for (int pass = 0; pass < 2; pass++) {
        for (q = p; *q;) {
            char *end;
            const json_t *name = json_array_get(names, strtoull(q, &end, 10));

            if (end == q || !json_is_string(name) || (*end && *end != ' ')) {
                errno = EBADMSG;
                return NULL;
            }
            if (pass == 0) {
                size += 1 + json_string_length(name);
            } else {
                *out++ = ';';
                memcpy(out, json_string_value(name), json_string_length(name));
                out += json_string_length(name);
            }
            q = end + (*end == ' ');
        }
        if (pass == 0 && !(out = r->paths[i] = malloc(size))) {
            errno = ENOMEM;
            return NULL;
        }
    }
    *out = '\0';
    return r->paths[i];
}

char *folded_reply_stack(struct folded_reply *r, const json_t *stack)
{
    const json_t *head = json_object_get(stack, "head");
    const char *user, *kernel;
    char *text;

    if (!r->paths)
        return render_folded_stack(stack);
    user = path_text(r, json_object_get(stack, "user"));
    kernel = path_text(r, json_object_get(stack, "kernel"));
    if (!json_is_string(head) || !user || !kernel) {
        errno = json_is_string(head) ? errno : EBADMSG;
        return NULL;
    }
    if (asprintf(&text, "%s%s" FOLDED_KERNEL_SEPARATOR "%s", json_string_value(head), user,
                 kernel) < 0) {
        errno = ENOMEM;
        return NULL;
    }
    return text;
}

static char *folded_line(struct folded_reply *r, const json_t *stack, int64_t ns)
{
    _cleanup_free_ char *frames = folded_reply_stack(r, stack);
    char *line;

    /* microseconds, rounded: the unit flame graph tools expect from offcputime */
    if (!frames || asprintf(&line, "%s %lld", frames, (long long)((ns + 500) / 1000)) < 0)
        return NULL;
    return line;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int render_folded(FILE *f, const json_t *reply, enum stack_time which)
{
    const json_t *stacks = json_object_get(reply, "stacks");
    size_t n = 0, i;
    _cleanup_free_ char **lines = calloc(json_array_size(stacks) ?: 1, sizeof(*lines));
    struct folded_reply fr;
    const json_t *stack;
    int r = lines ? folded_reply_init(&fr, reply) : -ENOMEM;

    if (r < 0)
        return r;
    json_array_foreach(stacks, i, stack)
    {
        int64_t ns = stack_time_ns(stack, which);

        /* a part of the time only: a stack that had none of it is not there
         * (the total keeps every stack, as it always did) */
        if (which != STACK_TIME_TOTAL && ns <= 0)
            continue;
        lines[n] = folded_line(&fr, stack, ns);
        if (!lines[n++]) {
            r = errno == EBADMSG ? -EBADMSG : -ENOMEM;
            break;
        }
    }
    folded_reply_done(&fr);
    /* sorted by text, so that two dumps diff cleanly */
    if (r == 0) {
        qsort(lines, n, sizeof(*lines), cmp_str);
        for (i = 0; i < n; i++) {
            fputs(lines[i], f);
            fputc('\n', f);
        }
    }
    for (i = 0; i < n; i++)
        free(lines[i]);
    return r < 0 ? r : (int)n;
}
