/* SPDX-License-Identifier: GPL-2.0-only */
#include "kernel_features.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

enum probe_kind { PROBE_FILE, PROBE_MAP, PROBE_HELPER };

/* Each thing the programs use that a kernel older than the floor may lack,
 * with the release that brought it. Helpers are probed for raw_tp programs,
 * the kind every attach mode loads. */
static const struct feature {
    const char *name;
    const char *since;
    enum probe_kind kind;
    int id; /* enum bpf_map_type or enum bpf_func_id */
    const char *path;
} features[] = {
    {"kernel BTF (/sys/kernel/btf/vmlinux)", "5.4", PROBE_FILE, 0, "/sys/kernel/btf/vmlinux"},
    {"BPF ring buffers", "5.8", PROBE_MAP, BPF_MAP_TYPE_RINGBUF, NULL},
    {"task storage", "5.11", PROBE_MAP, BPF_MAP_TYPE_TASK_STORAGE, NULL},
    {"bpf_get_current_task_btf", "5.11", PROBE_HELPER, BPF_FUNC_get_current_task_btf, NULL},
    {"bpf_task_pt_regs", "5.15", PROBE_HELPER, BPF_FUNC_task_pt_regs, NULL},
    {"bpf_loop", "5.17", PROBE_HELPER, BPF_FUNC_loop, NULL},
    {"bpf_find_vma", "5.17", PROBE_HELPER, BPF_FUNC_find_vma, NULL},
};

/* Is name among the comma-separated names of OFFCPUD_ASSUME_MISSING? */
static bool assumed_missing(const char *name)
{
    const char *list = getenv("OFFCPUD_ASSUME_MISSING");
    size_t len = strlen(name);

    for (const char *p = list; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strcspn(p, ",") == len && strncmp(p, name, len) == 0)
            return true;
    }
    return false;
}

/* 1 present, 0 missing, or a negative errno (the probe itself failed). */
static int probe(const struct feature *f)
{
    if (assumed_missing(f->name))
        return 0;
    switch (f->kind) {
    case PROBE_FILE:
        return access(f->path, R_OK) == 0 ? 1 : errno == ENOENT ? 0 : -errno;
    case PROBE_MAP:
        return libbpf_probe_bpf_map_type(f->id, NULL);
    case PROBE_HELPER:
        return libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, f->id, NULL);
    }
    return -EINVAL;
}

int kernel_features_missing(char *buf, size_t size)
{
    int missing = 0;
    size_t used = 0;

    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < ARRAY_SIZE(features); i++) {
        int r = probe(&features[i]);

        /* a probe that cannot run (no permission) tells nothing: the load will */
        if (r != 0)
            continue;
        if (used < size)
            used += snprintf(buf + used, size - used, "%s%s (%s)", missing ? ", " : "",
                             features[i].name, features[i].since);
        missing++;
    }
    return missing;
}

static bool has_member(const struct btf *btf, const char *type, const char *member)
{
    int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
    const struct btf_type *t = id < 0 ? NULL : btf__type_by_id(btf, id);
    const struct btf_member *m;

    if (!t)
        return false;
    m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); i++, m++)
        if (strcmp(btf__name_by_offset(btf, m->name_off), member) == 0)
            return true;
    return false;
}

int kernel_keeps_runnable_since(void)
{
    struct btf *btf = btf__load_vmlinux_btf();
    int r;

    if (!btf)
        return -errno;
    r = has_member(btf, "task_struct", "sched_info") && has_member(btf, "cfs_rq", "rq");
    btf__free(btf);
    return r;
}

/* name's id among the functions of the kernel's BTF: > 0, 0 where it is
 * not there, or a negative errno (no kernel BTF). */
static int function_id(const char *name)
{
    struct btf *btf = btf__load_vmlinux_btf();
    int id;

    if (!btf)
        return -errno;
    id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);
    btf__free(btf);
    return id > 0 ? id : 0;
}

int kernel_has_function(const char *name)
{
    int id = assumed_missing(name) ? 0 : function_id(name);

    return id < 0 ? id : id > 0;
}

int kernel_fexit_loads(const char *function)
{
    /* r0 = 0; exit */
    const struct bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0},
        {.code = BPF_JMP | BPF_EXIT},
    };
    int id = assumed_missing("fexit") ? 0 : function_id(function), fd;

    if (id <= 0)
        return id;
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FEXIT,
                .attach_btf_id = id);
    fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, ARRAY_SIZE(insns), &opts);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}
