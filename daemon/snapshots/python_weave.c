/* SPDX-License-Identifier: GPL-2.0-only */
#include "python_weave.h"

struct run {
    uint32_t first, n; /* of the Python frames, leaf first */
    bool cut;          /* its outer frames were not walked */
};

const char *python_mark_name(enum python_mark m)
{
    switch (m) {
    case PYTHON_MARK_GIL:
        return "[python: waiting for the GIL]";
    case PYTHON_MARK_TRUNCATED:
        return "[python: truncated]";
    default:
        return "[python: not woven]";
    }
}

uint32_t python_marker_index(const __u64 *ip, uint32_t nr)
{
    for (uint32_t i = 0; i < nr && i < OFFCPU_USER_DEPTH; i++)
        if ((ip[i] & OFFCPU_PY_TAG) && !(ip[i] & OFFCPU_PY_CODE_MASK))
            return i;
    return nr;
}

uint32_t python_marker_layout(uint64_t marker)
{
    return (marker >> OFFCPU_PY_MARK_LAYOUT_SHIFT) & 0xff;
}

uint32_t python_frame_count(uint32_t nr, uint32_t marker)
{
    uint32_t end = nr < OFFCPU_USER_DEPTH ? nr : OFFCPU_USER_DEPTH;
    uint32_t n = end > marker ? end - marker - 1 : 0;

    return n < OFFCPU_PYTHON_DEPTH ? n : OFFCPU_PYTHON_DEPTH;
}

/* Pairs runs with interpreter frames: run_of[i] is the run of the i-th
 * interpreter frame from the leaf, or -1. A whole walk pairs from the root,
 * as an interpreter frame that runs no Python (being entered, or returning)
 * can only be innermost; a cut one from the leaf. False: they do not pair. */
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

static void step(struct weave_step *plan, size_t *len, enum weave_kind kind, uint32_t index)
{
    plan[(*len)++] = (struct weave_step){.kind = kind, .index = (uint16_t)index};
}

size_t python_weave(const __u64 *ip, uint32_t nr, uint32_t marker, const bool *is_eval, size_t n,
                    struct weave_step *plan, bool *unwoven)
{
    struct run runs[OFFCPU_PYTHON_DEPTH + 1];
    uint32_t npy = python_frame_count(nr, marker), nruns = 0, neval = 0, start = 0;
    int run_of[OFFCPU_USER_DEPTH];
    uint64_t flags = ip[marker];
    bool cut = flags & (OFFCPU_PY_MARK_TRUNCATED | OFFCPU_PY_MARK_READ_ERROR);
    size_t len = 0;

    if (n > OFFCPU_USER_DEPTH)
        n = OFFCPU_USER_DEPTH;
    for (uint32_t j = 0; j < npy; j++)
        if (ip[marker + 1 + j] & OFFCPU_PY_ENTRY) {
            runs[nruns++] = (struct run){.first = start, .n = j + 1 - start};
            start = j + 1;
        }
    if (start < npy) { /* frames beyond the last entry: the walk stopped in a run */
        cut = true;
        runs[nruns++] = (struct run){.first = start, .n = npy - start, .cut = true};
    }
    for (size_t i = 0; i < n; i++)
        neval += is_eval[i];
    if (flags & OFFCPU_PY_MARK_GIL)
        step(plan, &len, WEAVE_MARK, PYTHON_MARK_GIL);
    *unwoven = !pair(nruns, neval, cut, run_of);
    if (*unwoven) {
        for (uint32_t j = 0; j < npy; j++)
            step(plan, &len, WEAVE_PYTHON, j);
        step(plan, &len, WEAVE_MARK, PYTHON_MARK_UNWOVEN);
        for (size_t i = 0; i < n; i++)
            step(plan, &len, WEAVE_NATIVE, (uint32_t)i);
        return len;
    }
    for (size_t i = 0, e = 0; i < n; i++) {
        int x = is_eval[i] ? run_of[e++] : -1;

        if (x < 0) {
            step(plan, &len, WEAVE_NATIVE, (uint32_t)i);
            continue;
        }
        for (uint32_t j = 0; j < runs[x].n; j++)
            step(plan, &len, WEAVE_PYTHON, runs[x].first + j);
        if (runs[x].cut)
            step(plan, &len, WEAVE_MARK, PYTHON_MARK_TRUNCATED);
    }
    return len;
}
