/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The weave's pairing (python_weave.h) on stacks as the collector writes
 * them: native frames, the marker, Python frames leaf first with the entry
 * bit on the outermost of each run. Which interpreter frame runs which run
 * is known (the integration test shows it on Debian's python3); here, the
 * cases a live process shows rarely: an interpreter frame running no Python
 * at the leaf, walks cut at either end, counts that do not pair.
 */
#include <string.h>

#include "check.h"
#include "python_weave.h"

#define CODE(n) (OFFCPU_PY_TAG | (0x7f0000001000ULL + 0x100 * (n)))
#define ENTRY   OFFCPU_PY_ENTRY
#define MARKER  (OFFCPU_PY_TAG | ((__u64)OFFCPU_PYTHON_3_11 << OFFCPU_PY_MARK_LAYOUT_SHIFT))

struct stack {
    __u64 ip[OFFCPU_USER_DEPTH];
    uint32_t nr, marker;
    bool eval[OFFCPU_USER_DEPTH];
    uint32_t native;
};

/* native: 'E' an interpreter frame, any other letter a native one, leaf
 * first; python: frames leaf first, 'e' the outermost of a run, 'f' another. */
static void make(struct stack *s, const char *native, const char *python, __u64 flags)
{
    memset(s, 0, sizeof(*s));
    for (const char *c = native; *c; c++) {
        s->eval[s->native] = *c == 'E';
        s->ip[s->nr++] = 0x400000 + s->native++;
    }
    s->marker = s->nr;
    s->ip[s->nr++] = MARKER | flags;
    for (uint32_t j = 0; python[j]; j++)
        s->ip[s->nr++] = CODE(j) | (python[j] == 'e' ? ENTRY : 0);
}

/* The plan as letters, leaf first: n<i> native, p<j> python, G/T/U marks. */
static void woven(const struct stack *s, char *out, bool *unwoven)
{
    struct weave_step plan[PYTHON_WEAVE_MAX(OFFCPU_USER_DEPTH)];
    size_t len = python_weave(s->ip, s->nr, s->marker, s->eval, s->native, plan, unwoven);

    out[0] = '\0';
    for (size_t i = 0; i < len; i++) {
        char step[8];

        if (plan[i].kind == WEAVE_NATIVE)
            snprintf(step, sizeof(step), "n%u ", plan[i].index);
        else if (plan[i].kind == WEAVE_PYTHON)
            snprintf(step, sizeof(step), "p%u ", plan[i].index);
        else
            snprintf(step, sizeof(step), "%c ", "GTU"[plan[i].index]);
        strcat(out, step);
    }
}

static void expect(const char *native, const char *python, __u64 flags, const char *want,
                   bool want_unwoven)
{
    char got[1024];
    struct stack s;
    bool unwoven;

    make(&s, native, python, flags);
    CHECK(python_marker_index(s.ip, s.nr) == s.marker, "%s|%s: marker found", native, python);
    woven(&s, got, &unwoven);
    CHECK(strcmp(got, want) == 0 && unwoven == want_unwoven, "%s|%s: %s (unwoven %d), want %s",
          native, python, got, unwoven, want);
}

int main(void)
{
    /* two runs, each in place of its interpreter frame; native frames between stay */
    expect("aEbEc", "ffeffe", 0, "n0 p0 p1 p2 n2 p3 p4 p5 n4 ", false);
    /* an interpreter frame at the leaf running no Python yet: pairs from the root */
    expect("aEbEcEd", "efe", 0, "n0 n1 n2 p0 n4 p1 p2 n6 ", false);
    /* a walk cut in its second run: pairs from the leaf, the cut run marked */
    expect("aEbEcEd", "eff", OFFCPU_PY_MARK_TRUNCATED, "n0 p0 n2 p1 p2 T n4 n5 n6 ", false);
    /* cut between runs: the interpreter frames left keep their own name */
    expect("aEbEcEd", "effe", OFFCPU_PY_MARK_TRUNCATED, "n0 p0 n2 p1 p2 p3 n4 n5 n6 ", false);
    /* more runs than interpreter frames (the native walk was cut): not woven */
    expect("aEb", "eefe", 0, "p0 p1 p2 p3 U n0 n1 n2 ", true);
    /* waiting for the GIL: the mark at the leaf */
    expect("aEb", "fe", OFFCPU_PY_MARK_GIL, "G n0 p0 p1 n2 ", false);
    /* no Python frame read (a read failed at once): the native stack as it is */
    expect("aEb", "", OFFCPU_PY_MARK_READ_ERROR, "n0 n1 n2 ", false);
    /* no marker: a native stack */
    {
        __u64 ip[3] = {0x400000, 0x400001, 0x400002};

        CHECK(python_marker_index(ip, 3) == 3, "a native stack has no marker");
    }
    return CHECK_EXIT();
}
