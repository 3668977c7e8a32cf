/* SPDX-License-Identifier: GPL-2.0-only */
#include "python_weave.h"

#include <stdbool.h>
#include <string.h>

/* The interpreter's frame: the function each run of Python frames ran in.
 * Its .cold part has no symbol of its own in Debian's build: a thread
 * blocked from there shows unwoven, never woven wrong. */
#define EVAL_FRAME "_PyEval_EvalFrameDefault"

struct run {
    uint32_t first, n; /* of the Python frames, leaf first */
    bool cut;          /* its outer frames were not walked */
};

uint32_t python_marker_index(const struct offcpu_stack *s)
{
    for (uint32_t i = 0; i < s->nr && i < OFFCPU_USER_DEPTH; i++)
        if ((s->ip[i] & OFFCPU_PY_TAG) && !(s->ip[i] & OFFCPU_PY_CODE_MASK))
            return i;
    return s->nr;
}

/* A mark's frame: its name, no place. */
static struct named_frame mark(struct intern *in, struct python_weave_held *held, const char *name)
{
    struct named_frame f = {0};

    if (held->n + 2 > sizeof(held->ids) / sizeof(held->ids[0]))
        return f;
    f.name = held->ids[held->n++] = intern_string(in, name);
    f.offset = f.file = held->ids[held->n++] = intern_string(in, "");
    return f;
}

struct output {
    struct named_frame *frames;
    size_t n, cap;
};

static void push(struct output *o, const struct named_frame *f)
{
    if (o->n < o->cap && f->name)
        o->frames[o->n++] = *f;
}

/* Pairs runs with interpreter frames (eval, leaf first): run_of[i] is the
 * run of eval frame i, or -1. A whole walk pairs from the root, as an
 * interpreter frame that runs no Python (being entered, or returning) can
 * only be innermost; a cut one from the leaf. False: they do not pair. */
static bool pair(uint32_t nruns, uint32_t neval, bool cut, int *run_of)
{
    for (uint32_t i = 0; i < neval; i++)
        run_of[i] = -1;
    if (neval < nruns)
        return false;
    for (uint32_t j = 0; j < nruns; j++) {
        if (cut)
            run_of[j] = (int)j;
        else
            run_of[neval - 1 - j] = (int)(nruns - 1 - j);
    }
    return true;
}

size_t python_weave(struct frame_cache *c, struct intern *in, pid_t tgid, uint32_t exec_id,
                    const struct offcpu_stack *s, uint32_t marker, struct named_frame *named,
                    size_t n, size_t cap, struct python_weave_held *held, bool *unwoven)
{
    struct named_frame py[OFFCPU_PYTHON_DEPTH], out_frames[OFFCPU_USER_DEPTH + PYTHON_WEAVE_EXTRA];
    struct run runs[OFFCPU_PYTHON_DEPTH + 1];
    uint32_t eval[OFFCPU_USER_DEPTH], npy = 0, nruns = 0, neval = 0, start = 0;
    int run_of[OFFCPU_USER_DEPTH];
    struct output o = {.frames = out_frames,
                       .cap = cap < sizeof(out_frames) / sizeof(out_frames[0])
                                  ? cap
                                  : sizeof(out_frames) / sizeof(out_frames[0])};
    uint64_t flags = s->ip[marker];
    uint32_t layout = (flags >> OFFCPU_PY_MARK_LAYOUT_SHIFT) & 0xff;
    bool cut = flags & (OFFCPU_PY_MARK_TRUNCATED | OFFCPU_PY_MARK_READ_ERROR);
    struct named_frame m;

    *unwoven = false;
    for (uint32_t i = marker + 1; i < s->nr && i < OFFCPU_USER_DEPTH && npy < OFFCPU_PYTHON_DEPTH;
         i++) {
        const struct named_frame *f = frame_cache_get_python(c, tgid, exec_id, s->ip[i], layout);

        if (!f)
            return n; /* out of memory: the native frames alone, as they were */
        py[npy++] = *f;
        if (s->ip[i] & OFFCPU_PY_ENTRY) {
            runs[nruns++] = (struct run){.first = start, .n = npy - start};
            start = npy;
        }
    }
    if (start < npy) /* frames beyond the last entry: the walk stopped in a run */
        cut = true;
    if (cut && (start < npy || nruns == 0))
        runs[nruns++] = (struct run){.first = start, .n = npy - start, .cut = true};
    for (uint32_t i = 0; i < n; i++)
        if (named[i].name && strcmp(intern_string_get(in, named[i].name) ?: "", EVAL_FRAME) == 0)
            eval[neval++] = i;
    if (flags & OFFCPU_PY_MARK_GIL) {
        m = mark(in, held, PYTHON_MARK_GIL);
        push(&o, &m);
    }
    if (!pair(npy ? nruns : 0, neval, cut, run_of)) {
        *unwoven = true;
        for (uint32_t j = 0; j < npy; j++)
            push(&o, &py[j]);
        m = mark(in, held, PYTHON_MARK_UNWOVEN);
        push(&o, &m);
        for (uint32_t i = 0; i < n; i++)
            push(&o, &named[i]);
    } else {
        for (uint32_t i = 0, e = 0; i < n; i++) {
            int x = e < neval && eval[e] == i ? run_of[e++] : -1;
            const struct run *r = x >= 0 ? &runs[x] : NULL;

            if (!r) {
                push(&o, &named[i]);
                continue;
            }
            for (uint32_t j = 0; j < r->n; j++)
                push(&o, &py[r->first + j]);
            if (r->cut) {
                m = mark(in, held, PYTHON_MARK_TRUNCATED);
                push(&o, &m);
            }
        }
    }
    memcpy(named, o.frames, o.n * sizeof(*named));
    return o.n;
}

void python_weave_release(struct intern *in, struct python_weave_held *held)
{
    for (unsigned i = 0; i < held->n; i++)
        intern_string_unref(in, held->ids[i]);
    held->n = 0;
}
