/* SPDX-License-Identifier: GPL-2.0-only */
#include "percpu_vars.h"

#include <bpf/btf.h>
#include <errno.h>
#include <string.h>

/* A variable's offset in the per-CPU section: each CPU's copy of the
 * section is one block, so offsets differ as addresses do on every CPU. */
static int percpu_offset(const struct btf *btf, const char *name, int64_t *ret)
{
    int id = btf__find_by_name_kind(btf, ".data..percpu", BTF_KIND_DATASEC);
    const struct btf_var_secinfo *v;
    const struct btf_type *sec;

    if (id < 0)
        return -ENOENT;
    sec = btf__type_by_id(btf, id);
    v = btf_var_secinfos(sec);
    for (int i = 0; i < btf_vlen(sec); i++, v++) {
        const struct btf_type *var = btf__type_by_id(btf, v->type);

        if (var && strcmp(btf__name_by_offset(btf, var->name_off), name) == 0) {
            *ret = v->offset;
            return 0;
        }
    }
    return -ENOENT;
}

int percpu_var_distance(const struct btf *btf, const char *from, const char *to, int64_t *ret)
{
    int64_t a, b;
    int r;

    r = percpu_offset(btf, from, &a);
    if (r < 0)
        return r;
    r = percpu_offset(btf, to, &b);
    if (r < 0)
        return r;
    *ret = b - a;
    return 0;
}
