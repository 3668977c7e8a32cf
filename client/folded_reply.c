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
    const json_t *stacks = json_object_get(reply, "stacks");
    size_t n;

    *r = (struct folded_reply){0};
    if (!json_is_object(stacks)) {
        /* a Dump's or Wakers' */
        r->stacks = stacks;
        r->n = json_array_size(stacks);
        return 0;
    }
    r->names = json_object_get(reply, "names");
    r->path_texts = json_object_get(reply, "paths");
    r->heads = json_object_get(reply, "heads");
    r->npaths = json_array_size(r->path_texts);
    r->head = json_object_get(stacks, "head");
    r->user = json_object_get(stacks, "user");
    r->kernel = json_object_get(stacks, "kernel");
    r->total_ns = json_object_get(stacks, "total_ns");
    r->runq_ns = json_object_get(stacks, "runq_ns");
    n = json_array_size(r->head);
    if (!json_is_array(r->head) || json_array_size(r->user) != n ||
        json_array_size(r->kernel) != n || json_array_size(r->total_ns) != n ||
        json_array_size(r->runq_ns) != n)
        return -EBADMSG;
    r->paths = calloc(r->npaths ?: 1, sizeof(*r->paths));
    if (!r->paths)
        return -ENOMEM;
    r->n = n;
    return 0;
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
    const json_t *names = r->names;
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
    p = json_string_value(json_array_get(r->path_texts, (size_t)i));
    if (!p) {
        errno = EBADMSG;
        return NULL;
    }
    /* twice over the indexes: the text's size, then the text, in one
     * allocation (a whole window has millions of frames) */
    for (int pass = 0; pass < 2; pass++) {
        for (q = p; *q;) {
            const char *end = q;
            size_t k = 0;
            const json_t *name;

            /* digits by hand: strtoull's generality was a tenth of a dump */
            while (*end >= '0' && *end <= '9' && end - q < 10)
                k = k * 10 + (size_t)(*end++ - '0');
            name = json_array_get(names, k);
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

char *folded_reply_stack(struct folded_reply *r, size_t i, const char *suffix)
{
    _cleanup_free_ char *frames = NULL;
    const json_t *head;
    const char *user, *kernel;
    size_t nh, nu, nk, ns = strlen(suffix), nsep = strlen(FOLDED_KERNEL_SEPARATOR);
    char *text, *p;

    if (r->stacks) {
        frames = render_folded_stack(json_array_get(r->stacks, i));
        if (!frames || asprintf(&text, "%s%s", frames, suffix) < 0) {
            errno = ENOMEM;
            return NULL;
        }
        return text;
    }
    /* one allocation a line: a whole window has 100k */
    head = json_array_get(r->heads, (size_t)json_integer_value(json_array_get(r->head, i)));
    user = path_text(r, json_array_get(r->user, i));
    kernel = user ? path_text(r, json_array_get(r->kernel, i)) : NULL;
    if (!json_is_string(head) || !user || !kernel) {
        errno = json_is_string(head) ? errno : EBADMSG;
        return NULL;
    }
    nh = json_string_length(head), nu = strlen(user), nk = strlen(kernel);
    p = text = malloc(nh + nu + nsep + nk + ns + 1);
    if (!text) {
        errno = ENOMEM;
        return NULL;
    }
    p = mempcpy(p, json_string_value(head), nh);
    p = mempcpy(p, user, nu);
    p = mempcpy(p, FOLDED_KERNEL_SEPARATOR, nsep);
    p = mempcpy(p, kernel, nk);
    memcpy(p, suffix, ns + 1);
    return text;
}

int64_t folded_reply_time(const struct folded_reply *r, size_t i, enum stack_time which)
{
    if (r->stacks)
        return stack_time_ns(json_array_get(r->stacks, i), which);
    return stack_time_of(json_integer_value(json_array_get(r->total_ns, i)),
                         json_integer_value(json_array_get(r->runq_ns, i)), which);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int render_folded(FILE *f, const json_t *reply, enum stack_time which)
{
    struct folded_reply fr;
    _cleanup_free_ char **lines = NULL;
    size_t n = 0, i;
    int r = folded_reply_init(&fr, reply);

    if (r < 0)
        return r;
    lines = calloc(fr.n ?: 1, sizeof(*lines));
    r = lines ? 0 : -ENOMEM;
    for (i = 0; r == 0 && i < fr.n; i++) {
        int64_t ns = folded_reply_time(&fr, i, which);
        char suffix[24];

        /* a part of the time only: a stack that had none of it is not there
         * (the total keeps every stack, as it always did) */
        if (which != STACK_TIME_TOTAL && ns <= 0)
            continue;
        /* microseconds, rounded: the unit flame graph tools expect from offcputime */
        snprintf(suffix, sizeof(suffix), " %lld", (long long)((ns + 500) / 1000));
        lines[n] = folded_reply_stack(&fr, i, suffix);
        if (!lines[n++])
            r = errno == EBADMSG ? -EBADMSG : -ENOMEM;
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
    for (i = 0; lines && i < n; i++)
        free(lines[i]);
    return r < 0 ? r : (int)n;
}
