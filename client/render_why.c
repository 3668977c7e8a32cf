/* SPDX-License-Identifier: GPL-2.0-only */
#include "render_why.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "name_escape.h"
#include "render.h"

/* frames of a stack shown on a line, leaf first */
#define BRIEF_FRAMES 6

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key)) ?: "?";
}

static json_int_t num(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static void put_name(FILE *f, const char *s)
{
    name_escape_put(f, s, NAME_ESCAPE_CONTROL);
}

/* Up to BRIEF_FRAMES frames, leaf first: "a < b < c". */
static void put_brief(FILE *f, const json_t *frames)
{
    size_t n = json_array_size(frames);

    for (size_t i = n, shown = 0; i-- > 0 && shown < BRIEF_FRAMES; shown++) {
        if (shown)
            fputs(" < ", f);
        put_name(f, json_string_value(json_array_get(frames, i)) ?: "?");
    }
    if (n > BRIEF_FRAMES)
        fputs(" < ...", f);
}

/* A stack on one line, leaf first: the user frames, then the kernel's. */
static void put_stack(FILE *f, const json_t *o)
{
    const json_t *user = json_object_get(o, "user"), *kernel = json_object_get(o, "kernel");

    if (json_array_size(user)) {
        fputs("at ", f);
        put_brief(f, user);
    }
    if (json_array_size(kernel)) {
        fputs(json_array_size(user) ? " [kernel: " : "[kernel: ", f);
        put_brief(f, kernel);
        fputc(']', f);
    }
}

static void put_thread(FILE *f, const json_t *o)
{
    if (num(o, "tid") > 0) {
        fprintf(f, "tid %lld ", (long long)num(o, "tid"));
        put_name(f, str(o, "comm"));
        fprintf(f, " (pid %lld)", (long long)num(o, "pid"));
    } else {
        put_name(f, str(o, "comm"));
    }
}

static void put_share(FILE *f, const json_t *o)
{
    fprintf(f, "%5.1f%%", 100 * json_number_value(json_object_get(o, "share")));
}

/* The number (1 on) of the first chain with a hop of thread tid listing its
 * waits: a thread's waits are listed once. */
static size_t first_listed(const json_t *chains, json_int_t tid)
{
    const json_t *chain, *hop;
    size_t i, j;

    json_array_foreach(chains, i, chain)
    {
        json_array_foreach(json_object_get(chain, "hops"), j, hop)
        {
            if (num(hop, "tid") == tid && json_object_get(hop, "waits"))
                return i + 1;
        }
    }
    return 0;
}

static void put_hop(FILE *f, const json_t *hop, const char *end, size_t listed_in, size_t n)
{
    const json_t *waits = json_object_get(hop, "waits"), *w;
    char t[32];
    size_t i;

    fputs("  <- ", f);
    put_thread(f, hop);
    if (json_is_true(json_object_get(hop, "withheld"))) {
        fputs(" woke it: withheld, not yours to see (no stacks)\n", f);
        return;
    }
    fputs(" woke it ", f);
    put_stack(f, hop);
    fputc('\n', f);
    if (waits && listed_in != n) {
        fprintf(f, "     itself blocked %s in the window (its waits: see #%zu)\n",
                render_ns(num(hop, "blocked_ns"), t, sizeof(t)), listed_in);
    } else if (waits) {
        fprintf(f, "     itself blocked %s in the window:\n",
                render_ns(num(hop, "blocked_ns"), t, sizeof(t)));
        json_array_foreach(waits, i, w)
        {
            fprintf(f, "       %s %s, %lld waits, ", str(w, "state"),
                    render_ns(num(w, "total_ns"), t, sizeof(t)), (long long)num(w, "count"));
            put_stack(f, w);
            fputs(", woken by ", f);
            put_name(f, str(w, "waker_comm"));
            if (num(w, "waker_tid") > 0)
                fprintf(f, " (tid %lld)", (long long)num(w, "waker_tid"));
            fputc('\n', f);
        }
    } else if (strcmp(end, "on-cpu") == 0) {
        fputs("     not blocked in the window: it ran on CPU\n", f);
    } else if (strcmp(end, "left-window") == 0) {
        fputs("     not seen in the window\n", f);
    }
}

static void put_chain(FILE *f, size_t n, const json_t *chain, const json_t *chains)
{
    const char *end = str(chain, "end");
    const json_t *hops = json_object_get(chain, "hops"), *hop;
    char t[32];
    size_t i;

    fprintf(f, "#%zu %s (", n, render_ns(num(chain, "total_ns"), t, sizeof(t)));
    put_share(f, chain);
    fputs(") ", f);
    put_thread(f, chain);
    fprintf(f, " blocked %s, %lld waits, ", str(chain, "state"), (long long)num(chain, "count"));
    put_stack(f, chain);
    fputc('\n', f);
    json_array_foreach(hops, i, hop)
    {
        put_hop(f, hop, i + 1 == json_array_size(hops) ? end : "",
                first_listed(chains, num(hop, "tid")), n);
    }
    fputs("  cause: ", f);
    put_name(f, str(chain, "cause"));
    fputc('\n', f);
}

int render_why(FILE *f, const json_t *why)
{
    const json_t *e;
    char t[32], u[32], window[128];
    size_t i;

    fprintf(f, "%s off-CPU, %s of it woken by a known waker, %s\n",
            render_ns(num(why, "total_ns"), t, sizeof(t)),
            render_ns(num(why, "woken_ns"), u, sizeof(u)),
            render_window(num(why, "start_ns"), num(why, "end_ns"), window, sizeof(window)));
    fputs("Woken by:\n", f);
    json_array_foreach(json_object_get(why, "wakers"), i, e)
    {
        fputs("  ", f);
        put_share(f, e);
        fputs("  ", f);
        put_thread(f, e);
        fputc('\n', f);
    }
    fputs("Longest waits, and who woke whom:\n", f);
    json_array_foreach(json_object_get(why, "chains"), i, e)
    {
        put_chain(f, i + 1, e, json_object_get(why, "chains"));
    }
    fputs("Causes (share of the off-CPU time):\n", f);
    json_array_foreach(json_object_get(why, "causes"), i, e)
    {
        fputs("  ", f);
        put_share(f, e);
        fputs("  ", f);
        put_name(f, str(e, "cause"));
        fputc('\n', f);
    }
    return ferror(f) ? -EIO : 0;
}

static int append_frames(json_t *to, const json_t *frames, bool leaf_first)
{
    size_t n = json_array_size(frames);

    for (size_t i = 0; i < n; i++)
        if (json_array_append(to, json_array_get(frames, leaf_first ? n - 1 - i : i)) < 0)
            return -1;
    return 0;
}

/* After a hop's name: its followed wait, as a blocked stack reads (root
 * first), and the next hop's waker frames, as a waker's read (leaf first). */
static int chain_frames(json_t *to, const json_t *hops)
{
    for (size_t i = 0; i + 1 < json_array_size(hops); i++) {
        const json_t *hop = json_array_get(hops, i), *next = json_array_get(hops, i + 1);
        const json_t *wait = json_array_get(json_object_get(hop, "waits"), 0);
        char marker[32];

        snprintf(marker, sizeof(marker), "[blocked %s]", str(wait, "state"));
        if (json_array_append_new(to, json_string(marker)) < 0 ||
            append_frames(to, json_object_get(wait, "user"), false) < 0 ||
            json_array_append_new(to, json_string("-")) < 0 ||
            append_frames(to, json_object_get(wait, "kernel"), false) < 0 ||
            json_array_append_new(to, json_string("--")) < 0 ||
            append_frames(to, json_object_get(next, "kernel"), true) < 0 ||
            json_array_append_new(to, json_string("-")) < 0 ||
            append_frames(to, json_object_get(next, "user"), true) < 0 ||
            json_array_append(to, json_object_get(next, "comm")) < 0)
            return -1;
        if (json_is_true(json_object_get(next, "withheld")) &&
            json_array_append_new(to, json_string("[withheld]")) < 0)
            return -1;
    }
    return 0;
}

json_t *why_flame_stacks(const json_t *why)
{
    json_auto_t *reply = json_pack("{s:[]}", "stacks");
    const json_t *chain;
    size_t i;

    if (!reply)
        return NULL;
    json_array_foreach(json_object_get(why, "chains"), i, chain)
    {
        const json_t *hops = json_object_get(chain, "hops"), *first = json_array_get(hops, 0);
        json_t *row = json_pack(
            "{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:[], s:[], s:[]}", "comm",
            json_object_get(chain, "comm"), "state", json_object_get(chain, "state"), "user",
            json_object_get(chain, "user"), "kernel", json_object_get(chain, "kernel"), "total_ns",
            json_object_get(chain, "total_ns"), "waker_comm", json_object_get(first, "comm"),
            "waker_user", "waker_kernel", "chain");

        if (!row || json_array_append_new(json_object_get(reply, "stacks"), row) < 0 ||
            append_frames(json_object_get(row, "waker_user"), json_object_get(first, "user"),
                          false) < 0 ||
            append_frames(json_object_get(row, "waker_kernel"), json_object_get(first, "kernel"),
                          false) < 0 ||
            chain_frames(json_object_get(row, "chain"), hops) < 0)
            return NULL;
        if (json_is_true(json_object_get(first, "withheld")) &&
            json_array_append_new(json_object_get(row, "chain"), json_string("[withheld]")) < 0)
            return NULL;
    }
    return json_incref(reply);
}
