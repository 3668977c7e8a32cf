/* SPDX-License-Identifier: GPL-2.0-only */
#include "stuck.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "cgroup_unit.h"
#include "clock.h"
#include "frame_names.h"
#include "frame_rules.h"
#include "log.h"
#include "macro.h"
#include "name_escape.h"
#include "python_weave.h"
#include "varlink_frame.h"
#include "withheld.h"

struct blocked_list {
    struct offcpu_blocked *tasks;
    size_t n, cap;
    size_t withheld;       /* matched, but other users' */
    uint32_t withheld_uid; /* the first of those's */
};

static bool selected(struct daemon *d, const struct query *q, const struct offcpu_blocked *b)
{
    char path[PATH_MAX];

    if (q->pid >= 0 && b->tgid != q->pid)
        return false;
    if (q->tid >= 0 && b->tid != q->tid)
        return false;
    if (q->state && b->state != (uint32_t)q->state)
        return false;
    if (q->comm && strncmp(b->comm, q->comm, sizeof(b->comm)) != 0)
        return false;
    if (!q->cgroup && !q->unit)
        return true;
    if (!d->cgroups || cgroups_path(d->cgroups, b->cgroup_id, path, sizeof(path)) < 0)
        return false;
    return (!q->cgroup || query_in_cgroup(path, q->cgroup)) &&
           (!q->unit || cgroup_in_unit(path, q->unit));
}

/* Keeps b; when the list is full, in place of its most recently blocked
 * task if b has been blocked longer. */
static int keep(struct blocked_list *l, const struct offcpu_blocked *b)
{
    size_t youngest = 0;

    if (l->n < STUCK_MAX_TASKS) {
        if (array_reserve(&l->tasks, &l->cap, l->n + 1, sizeof(*l->tasks), 16) < 0)
            return -ENOMEM;
        l->tasks[l->n++] = *b;
        return 0;
    }
    for (size_t i = 1; i < l->n; i++)
        if (l->tasks[i].since_ns > l->tasks[youngest].since_ns)
            youngest = i;
    if (b->since_ns < l->tasks[youngest].since_ns)
        l->tasks[youngest] = *b;
    return 0;
}

static int read_blocked(struct daemon *d, const struct query *q, uint64_t min_ns,
                        struct blocked_list *l)
{
    _cleanup_close_ int fd = collector_open_blocked(d->collector, min_ns);
    struct offcpu_blocked b;
    ssize_t n;
    int r;

    if (fd < 0)
        return fd;
    /* the kernel hands out whole records: one per read of that size */
    while ((n = read(fd, &b, sizeof(b))) == (ssize_t)sizeof(b)) {
        b.comm[sizeof(b.comm) - 1] = '\0';
        if (!selected(d, q, &b))
            continue;
        if (q->uid >= 0 && b.uid != q->uid) {
            if (!l->withheld++)
                l->withheld_uid = b.uid;
            continue;
        }
        r = keep(l, &b);
        if (r < 0)
            return r;
    }
    return n < 0 ? -errno : 0;
}

/* Adds a named frame to a, root first as in Dump. A frame that cannot be
 * named is named "[unknown]" (symbolizer.h). name: of the frames one address
 * stands for (frame_names.h), innermost first: each goes in the array, root
 * first. */
static void add_frame(json_t *a, char *name)
{
    const char *names[FRAME_NAMES_MAX];
    size_t n = frame_names_split(name, names, FRAME_NAMES_MAX);

    for (size_t j = 0; j < n; j++)
        json_array_insert_new(a, 0, name_json(names[j]));
}

/* Room for one frame's names (the frames its address stands for). */
#define FRAME_TEXT 512

/* The frames of a woven stack (python_weave.h), leaf first, into a, root
 * first: native ones as named in native, Python's named now. */
static void add_woven(json_t *a, struct symbolizer *sym, const struct offcpu_blocked *b,
                      uint32_t marker, char (*native)[FRAME_TEXT], uint32_t n)
{
    struct weave_step plan[PYTHON_WEAVE_MAX(OFFCPU_USER_DEPTH)];
    uint32_t layout = python_marker_layout(b->user[marker]);
    bool is_eval[OFFCPU_USER_DEPTH], unwoven;
    char name[FRAME_TEXT];
    size_t len;

    for (uint32_t i = 0; i < n; i++)
        is_eval[i] = strcmp(native[i], PYTHON_EVAL_FRAME) == 0;
    len = python_weave(b->user, b->user_nr, marker, is_eval, n, plan, &unwoven);
    for (size_t i = 0; i < len; i++) {
        if (plan[i].kind == WEAVE_NATIVE) {
            add_frame(a, native[plan[i].index]);
            continue;
        }
        if (plan[i].kind == WEAVE_PYTHON)
            symbolizer_python_frame(sym, b->tgid, layout, b->user[marker + 1 + plan[i].index], name,
                                    sizeof(name), NULL);
        else
            frame_name_literal(name, sizeof(name), python_mark_name(plan[i].index));
        add_frame(a, name);
    }
}

static json_t *user_json(struct symbolizer *sym, const struct offcpu_blocked *b)
{
    uint32_t nr = b->user_nr < OFFCPU_USER_DEPTH ? b->user_nr : OFFCPU_USER_DEPTH;
    uint32_t marker = python_marker_index(b->user, nr), n = 0;
    _cleanup_free_ char(*native)[FRAME_TEXT] = NULL;
    json_t *a = json_array();
    char name[FRAME_TEXT];

    if (b->kthread)
        return a;
    if (!b->user_nr) {
        json_array_append_new(a, json_string(FRAME_MARK_MISSED_USER));
        return a;
    }
    /* a CPython thread's: its native frames kept first, to weave */
    if (marker < nr && !(native = calloc(OFFCPU_USER_DEPTH, sizeof(*native))))
        marker = nr;
    for (uint32_t i = 0; i < marker; i++) {
        char *text = native ? native[n] : name;
        int r = symbolizer_user_frame(sym, b->tgid, b->exec_id, b->user[i], i == 0, text,
                                      FRAME_TEXT, NULL);
        enum frame_step step = frame_rule(false, i, native ? n : json_array_size(a), r);

        if (step == FRAME_STEP_DROP)
            continue;
        if (native)
            n++;
        else
            add_frame(a, text);
        if (step != FRAME_STEP_KEEP)
            break;
    }
    if (native)
        add_woven(a, sym, b, marker, native, n);
    return a;
}

static json_t *kernel_json(struct symbolizer *sym, const struct offcpu_blocked *b, bool collapse)
{
    json_t *a = json_array();
    char name[FRAME_TEXT];

    if (collapse || !b->kernel_nr) {
        json_array_append_new(a,
                              json_string(collapse ? FRAME_MARK_KERNEL : FRAME_MARK_MISSED_KERNEL));
        return a;
    }
    for (uint32_t i = 0; i < b->kernel_nr && i < OFFCPU_KERNEL_DEPTH; i++) {
        int r = symbolizer_kernel_frame(sym, b->kernel[i], false, name, sizeof(name));
        enum frame_step step = frame_rule(true, i, json_array_size(a), r);

        if (step == FRAME_STEP_DROP)
            continue;
        add_frame(a, name);
        if (step != FRAME_STEP_KEEP)
            break;
    }
    return a;
}

static int by_since(const void *a, const void *b)
{
    const struct offcpu_blocked *x = a, *y = b;

    return x->since_ns < y->since_ns ? -1 : x->since_ns > y->since_ns;
}

static json_t *task_json(struct daemon *d, const struct offcpu_blocked *b, bool collapse,
                         int64_t now_mono, int64_t now_real)
{
    int64_t blocked = now_mono - (int64_t)b->since_ns;
    char state = (char)b->state, cgroup[PATH_MAX];
    json_t *o =
        json_pack("{s:i, s:i, s:o, s:s#, s:I, s:I, s:o, s:o}", "pid", (int)b->tgid, "tid",
                  (int)b->tid, "comm", name_json(b->comm), "state", &state, (int)1, "since_ns",
                  (json_int_t)(now_real - blocked), "blocked_ns", (json_int_t)blocked, "user",
                  user_json(d->sym, b), "kernel", kernel_json(d->sym, b, collapse));

    if (o && d->cgroups && cgroups_path(d->cgroups, b->cgroup_id, cgroup, sizeof(cgroup)) == 0)
        json_object_set_new(o, "cgroup", name_json(cgroup));
    return o;
}

json_t *stuck_reply(struct daemon *d, const struct query *q, uint64_t min_ns)
{
    struct blocked_list l = {0};
    int64_t now_mono, now_real;
    json_t *tasks;
    int r;

    if (!d->collector || !d->sym)
        return vl_error_new("io.offcpud.NotSupported",
                            json_pack("{s:s}", "reason", "no collector is running"));
    /* a task in a cgroup made since the last drain: its id is new */
    if (d->cgroups)
        cgroups_begin_pass(d->cgroups);
    r = read_blocked(d, q, min_ns, &l);
    if (r == -EOPNOTSUPP) {
        free(l.tasks);
        return vl_error_new(
            "io.offcpud.NotSupported",
            json_pack("{s:s}", "reason", "the raw_tp collector keeps no task records to read"));
    }
    if (r < 0) {
        free(l.tasks);
        log_warning("listing blocked tasks: %s", strerror(-r));
        return vl_error_new("io.offcpud.InvalidRequest",
                            json_pack("{s:s}", "reason", "cannot read the blocked tasks"));
    }
    if (l.withheld && !l.n) {
        free(l.tasks);
        return withheld_error(d, q, l.withheld_uid);
    }
    now_mono = clock_ns(CLOCK_MONOTONIC);
    now_real = clock_ns(CLOCK_REALTIME);
    if (l.n)
        qsort(l.tasks, l.n, sizeof(*l.tasks), by_since);
    symbolizer_begin_pass(d->sym);
    tasks = json_array();
    for (size_t i = 0; i < l.n; i++)
        json_array_append_new(tasks,
                              task_json(d, &l.tasks[i], q->collapse_kernel, now_mono, now_real));
    free(l.tasks);
    return vl_reply_new(json_pack("{s:I, s:I, s:o}", "now_ns", (json_int_t)now_real, "min_ns",
                                  (json_int_t)min_ns, "tasks", tasks),
                        false);
}
