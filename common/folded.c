/* SPDX-License-Identifier: GPL-2.0-only */
#include "folded.h"

void folded_put_frame(FILE *f, const char *name, unsigned flags)
{
    fputc(';', f);
    name_escape_put(f, name, flags | FOLDED_ESCAPE);
}

void folded_put_head(FILE *f, const char *comm, const struct folded_labels *l, unsigned flags)
{
    name_escape_put(f, comm, flags | FOLDED_ESCAPE);
    if (l->has_pid)
        fprintf(f, ";[pid %lld]", l->pid);
    if (l->has_tid)
        fprintf(f, ";[tid %lld]", l->tid);
    if (l->state)
        fprintf(f, ";[state %c]", l->state);
    if (l->cgroup) {
        fputs(";[cgroup ", f);
        name_escape_put(f, l->cgroup, flags | FOLDED_ESCAPE);
        fputc(']', f);
    }
}
