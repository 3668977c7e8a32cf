/* SPDX-License-Identifier: GPL-2.0-only */
#include "why_chain.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_call.h"
#include "macro.h"

/* frames naming where a cause waited */
#define WHY_CAUSE_FRAMES 3

struct why {
    const struct globals *g;
    json_int_t start_ns, end_ns;
    json_t *waits; /* "tid" -> that thread's Wakers reply, or null: withheld */
};

static json_int_t int_of(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

/* A request for one thread (or, tid 0, the selection's filters in base)
 * over the pinned window, its rows kept apart by thread and state. */
static json_t *request(const struct why *w, const json_t *base, json_int_t tid)
{
    json_t *p = base ? json_deep_copy(base) : json_object();

    if (!p)
        return NULL;
    json_object_del(p, "since_ns");
    json_object_del(p, "until_ns");
    if (tid)
        json_object_set_new(p, "tid", json_integer(tid));
    if (json_object_set_new(p, "start_ns", json_integer(w->start_ns)) < 0 ||
        json_object_set_new(p, "end_ns", json_integer(w->end_ns)) < 0 ||
        json_object_set_new(p, "group_by", json_pack("[sss]", "pid", "tid", "state")) < 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}

/* The waits of thread tid in the window, each with its waker, longest
 * first (borrowed), into *ret; *withheld when the caller may not see it. */
static int thread_waits(struct why *w, json_int_t tid, const json_t **ret, bool *withheld)
{
    char key[24];
    json_t *cached, *reply = NULL;
    bool refused;
    int r;

    snprintf(key, sizeof(key), "%lld", (long long)tid);
    cached = json_object_get(w->waits, key);
    if (!cached) {
        json_auto_t *p = request(w, NULL, tid);

        if (!p)
            return fail("out of memory");
        r = daemon_call_refusable(w->g, "io.offcpud.Wakers", p, &reply, &refused);
        if (r != EXIT_OK)
            return r;
        cached = refused ? json_null() : reply;
        if (json_object_set_new(w->waits, key, cached) < 0)
            return fail("out of memory");
    }
    *withheld = json_is_null(cached);
    *ret = *withheld ? NULL : json_object_get(cached, "stacks");
    return EXIT_OK;
}

/* The off-CPU time of the selection (or of thread tid) in the window:
 * *ret_ns, 0 when nothing of it was seen; *withheld as thread_waits. */
static int offcpu_ns(struct why *w, const json_t *base, json_int_t tid, json_int_t *ret_ns,
                     bool *withheld)
{
    json_auto_t *p = request(w, base, tid);
    json_auto_t *reply = NULL;
    json_t *s;
    size_t i;
    int r;

    if (!p)
        return fail("out of memory");
    r = daemon_call_refusable(w->g, "io.offcpud.Dump", p, &reply, withheld);
    if (r != EXIT_OK)
        return r;
    *ret_ns = 0;
    json_array_foreach(json_object_get(reply, "stacks"), i, s) *ret_ns += int_of(s, "total_ns");
    return EXIT_OK;
}

static bool is_task(const json_t *row)
{
    const char *kind = json_string_value(json_object_get(row, "waker_kind"));

    return int_of(row, "waker_tid") > 0 && kind &&
           (strcmp(kind, "task") == 0 || strcmp(kind, "unknown") == 0);
}

/* The waker of row as a hop: who, and where it woke from. */
static json_t *hop_of(const json_t *row)
{
    return json_pack("{s:O?, s:O?, s:I, s:I, s:O?, s:O?, s:b}", "kind",
                     json_object_get(row, "waker_kind"), "comm", json_object_get(row, "waker_comm"),
                     "pid", int_of(row, "waker_pid"), "tid", int_of(row, "waker_tid"), "user",
                     json_object_get(row, "waker_user"), "kernel",
                     json_object_get(row, "waker_kernel"), "withheld", 0);
}

/* A wait of a hop's, as listed: its state, stacks, time, and its waker. */
static json_t *wait_of(const json_t *row)
{
    return json_pack("{s:O?, s:I, s:I, s:O?, s:O?, s:O?, s:O?, s:I}", "state",
                     json_object_get(row, "state"), "total_ns", int_of(row, "total_ns"), "count",
                     int_of(row, "count"), "user", json_object_get(row, "user"), "kernel",
                     json_object_get(row, "kernel"), "waker_comm",
                     json_object_get(row, "waker_comm"), "waker_kind",
                     json_object_get(row, "waker_kind"), "waker_tid", int_of(row, "waker_tid"));
}

/* The hop's own waits: the longest few, and their sum. */
static int add_waits(json_t *hop, const json_t *waits)
{
    json_t *list = json_array(), *s;
    json_int_t sum = 0;
    size_t i;

    if (!list || json_object_set_new(hop, "waits", list) < 0)
        return -1;
    json_array_foreach(waits, i, s)
    {
        sum += int_of(s, "total_ns");
        if (i < WHY_HOP_WAITS && json_array_append_new(list, wait_of(s)) < 0)
            return -1;
    }
    return json_object_set_new(hop, "blocked_ns", json_integer(sum));
}

/* How the chain ended at a task hop with no waits of its own: it was seen
 * in the window (on CPU, or runnable), or it was not. */
static int end_without_waits(struct why *w, json_t *hop, const char **end)
{
    json_int_t ns;
    bool withheld;
    int r = offcpu_ns(w, NULL, int_of(hop, "tid"), &ns, &withheld);

    *end = withheld ? "withheld" : ns > 0 ? "on-cpu" : "left-window";
    return r;
}

static void withhold(json_t *hop)
{
    json_object_del(hop, "user");
    json_object_del(hop, "kernel");
    json_object_set_new(hop, "withheld", json_true());
}

/* Follows the wait row to the end of its chain, into chain's "hops" and "end". */
static int follow(struct why *w, const json_t *row, json_t *chain)
{
    json_int_t visited[WHY_MAX_HOPS + 1];
    size_t nvisited = 0;
    const char *end = "depth";
    json_t *hops = json_array();
    int r = EXIT_OK;

    if (!hops || json_object_set_new(chain, "hops", hops) < 0)
        return fail("out of memory");
    visited[nvisited++] = int_of(row, "tid");
    for (int depth = 0; depth < WHY_MAX_HOPS && r == EXIT_OK; depth++) {
        json_t *hop = hop_of(row);
        json_int_t tid = int_of(row, "waker_tid");
        const json_t *waits;
        bool withheld, again = false;

        if (!hop || json_array_append_new(hops, hop) < 0)
            return fail("out of memory");
        if (!is_task(row)) {
            end = "interrupt";
            break;
        }
        for (size_t i = 0; i < nvisited; i++)
            again |= visited[i] == tid;
        if (again) {
            end = "cycle";
            break;
        }
        r = thread_waits(w, tid, &waits, &withheld);
        if (r != EXIT_OK)
            return r;
        if (!withheld && json_array_size(waits) == 0)
            r = end_without_waits(w, hop, &end);
        if (withheld || strcmp(end, "withheld") == 0) {
            withhold(hop);
            end = "withheld";
            break;
        }
        if (json_array_size(waits) == 0)
            break;
        if (add_waits(hop, waits) < 0)
            return fail("out of memory");
        visited[nvisited++] = tid;
        row = json_array_get(waits, 0);
    }
    return r == EXIT_OK && json_object_set_new(chain, "end", json_string(end)) < 0
               ? fail("out of memory")
               : r;
}

/* The leaf-most frames of a stack (root first), as "a < b < c". */
static void frames_brief(const json_t *frames, char *buf, size_t size)
{
    size_t n = json_array_size(frames), len = 0;

    buf[0] = '\0';
    for (size_t i = n; i-- > 0 && n - i <= WHY_CAUSE_FRAMES;)
        len += snprintf(buf + len, len < size ? size - len : 0, "%s%s", i + 1 < n ? " < " : "",
                        json_string_value(json_array_get(frames, i)) ?: "?");
}

/* What a chain comes down to, in words: its last task hop, what it was
 * doing, and how the chain ended there. */
static json_t *cause_of(const json_t *chain)
{
    const json_t *hops = json_object_get(chain, "hops"), *last = NULL, *end_hop;
    const char *end = json_string_value(json_object_get(chain, "end"));
    size_t n = json_array_size(hops);
    char text[256];

    end_hop = json_array_get(hops, n - 1);
    for (size_t i = n; i-- > 0 && !last;)
        if (json_integer_value(json_object_get(json_array_get(hops, i), "tid")) > 0 &&
            json_object_get(json_array_get(hops, i), "waits"))
            last = json_array_get(hops, i);
    if (strcmp(end, "interrupt") == 0 && last) {
        const json_t *wait = json_array_get(json_object_get(last, "waits"), 0);
        const json_t *user = json_object_get(wait, "user");
        char where[128];

        frames_brief(json_array_size(user) ? user : json_object_get(wait, "kernel"), where,
                     sizeof(where));
        snprintf(text, sizeof(text), "tid %lld (%s) blocked %s at %s, woken by %s",
                 (long long)int_of(last, "tid"),
                 json_string_value(json_object_get(last, "comm")) ?: "?",
                 json_string_value(json_object_get(wait, "state")) ?: "?", where,
                 json_string_value(json_object_get(end_hop, "comm")) ?: "?");
    } else if (strcmp(end, "interrupt") == 0)
        snprintf(text, sizeof(text), "woken by %s",
                 json_string_value(json_object_get(end_hop, "comm")) ?: "?");
    else
        snprintf(text, sizeof(text), "tid %lld (%s): %s", (long long)int_of(end_hop, "tid"),
                 json_string_value(json_object_get(end_hop, "comm")) ?: "?",
                 strcmp(end, "on-cpu") == 0        ? "on CPU, not blocked in the window"
                 : strcmp(end, "withheld") == 0    ? "withheld (not the caller's to see)"
                 : strcmp(end, "left-window") == 0 ? "not seen in the window"
                 : strcmp(end, "cycle") == 0       ? "a cycle, back to a thread already in it"
                                                   : "more hops than followed");
    return json_string(text);
}

/* Adds ns to the entry of list whose key is key (made with make if new). */
static int add_to(json_t *list, const char *key, json_t *(*make)(const json_t *), const json_t *src,
                  json_int_t ns)
{
    json_t *e = json_object_get(list, key);

    if (!e) {
        e = make(src);
        if (!e || json_object_set_new(list, key, e) < 0)
            return -1;
    }
    return json_object_set_new(e, "total_ns", json_integer(int_of(e, "total_ns") + ns));
}

static json_t *waker_entry(const json_t *row)
{
    return json_pack("{s:O?, s:O?, s:I, s:I}", "kind", json_object_get(row, "waker_kind"), "comm",
                     json_object_get(row, "waker_comm"), "pid", int_of(row, "waker_pid"), "tid",
                     int_of(row, "waker_tid"));
}

static json_t *cause_entry(const json_t *cause)
{
    return json_pack("{s:O}", "cause", cause);
}

static int by_total_desc(const void *a, const void *b)
{
    json_int_t x = int_of(*(json_t *const *)a, "total_ns"),
               y = int_of(*(json_t *const *)b, "total_ns");

    return (x < y) - (x > y);
}

/* The entries of an object as an array, longest first, each with its share
 * of total. */
static json_t *ranked(const json_t *entries, json_int_t total)
{
    size_t n = json_object_size(entries), i = 0;
    _cleanup_free_ json_t **v = calloc(n ?: 1, sizeof(*v));
    json_t *out = json_array(), *e;
    const char *key;

    if (!v || !out)
        return json_decref(out), NULL;
    json_object_foreach((json_t *)entries, key, e) v[i++] = e;
    qsort(v, n, sizeof(*v), by_total_desc);
    for (i = 0; i < n; i++) {
        json_object_set_new(v[i], "share",
                            json_real(total ? (double)int_of(v[i], "total_ns") / total : 0));
        json_array_append(out, v[i]);
    }
    return out;
}

/* The answer's wakers (all the selection's pairs, by waker), chains (its
 * longest waits, followed) and causes (the chains, by how they ended). */
static int build(struct why *w, const json_t *rows, json_int_t total, json_t *out)
{
    json_auto_t *wakers = json_object(), *causes = json_object();
    json_t *chains = json_array(), *row;
    json_int_t woken = 0;
    size_t i;
    int r;

    if (!wakers || !causes || !chains || json_object_set_new(out, "chains", chains) < 0)
        return fail("out of memory");
    json_array_foreach(rows, i, row)
    {
        char key[64];
        json_int_t ns = int_of(row, "total_ns");

        woken += ns;
        snprintf(key, sizeof(key), "%s %lld %s",
                 json_string_value(json_object_get(row, "waker_kind")) ?: "?",
                 (long long)int_of(row, "waker_tid"),
                 json_string_value(json_object_get(row, "waker_comm")) ?: "?");
        if (add_to(wakers, key, waker_entry, row, ns) < 0)
            return fail("out of memory");
    }
    for (i = 0; i < json_array_size(rows) && i < WHY_MAX_CHAINS; i++) {
        json_t *cause;

        row = json_array_get(rows, i);
        json_t *chain = json_pack(
            "{s:I, s:f, s:O?, s:I, s:I, s:O?, s:I, s:O?, s:O?}", "total_ns",
            int_of(row, "total_ns"), "share", total ? (double)int_of(row, "total_ns") / total : 0.0,
            "comm", json_object_get(row, "comm"), "pid", int_of(row, "pid"), "tid",
            int_of(row, "tid"), "state", json_object_get(row, "state"), "count",
            int_of(row, "count"), "user", json_object_get(row, "user"), "kernel",
            json_object_get(row, "kernel"));

        if (!chain || json_array_append_new(chains, chain) < 0)
            return fail("out of memory");
        r = follow(w, row, chain);
        if (r != EXIT_OK)
            return r;
        cause = cause_of(chain);
        if (!cause || json_object_set_new(chain, "cause", cause) < 0 ||
            add_to(causes, json_string_value(cause), cause_entry, cause, int_of(row, "total_ns")) <
                0)
            return fail("out of memory");
    }
    if (json_object_set_new(out, "woken_ns", json_integer(woken)) < 0 ||
        json_object_set_new(out, "wakers", ranked(wakers, total)) < 0 ||
        json_object_set_new(out, "causes", ranked(causes, total)) < 0)
        return fail("out of memory");
    return EXIT_OK;
}

int why_chains(const struct globals *g, const json_t *params, json_t **ret)
{
    struct why w = {.g = g};
    json_auto_t *first = NULL, *waits = json_object(), *out = NULL;
    json_int_t total;
    bool withheld;
    int r;

    *ret = NULL;
    json_auto_t *p = json_deep_copy(params);
    if (!p || !waits ||
        json_object_set_new(p, "group_by", json_pack("[sss]", "pid", "tid", "state")) < 0)
        return fail("out of memory");
    r = daemon_call(g, "io.offcpud.Wakers", p, &first);
    if (r != EXIT_OK)
        return r;
    if (json_array_size(json_object_get(first, "stacks")) == 0)
        return EXIT_OK;
    /* every later question is about the same snapshots */
    w.start_ns = int_of(first, "start_ns");
    w.end_ns = int_of(first, "end_ns");
    w.waits = waits;
    r = offcpu_ns(&w, params, 0, &total, &withheld);
    if (r != EXIT_OK)
        return r;
    out =
        json_pack("{s:I, s:I, s:I}", "start_ns", w.start_ns, "end_ns", w.end_ns, "total_ns", total);
    if (!out)
        return fail("out of memory");
    r = build(&w, json_object_get(first, "stacks"), total, out);
    if (r == EXIT_OK)
        *ret = json_incref(out);
    return r;
}
