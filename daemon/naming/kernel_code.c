/* SPDX-License-Identifier: GPL-2.0-only */
#include "kernel_code.h"

#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "array.h"
#include "fnv.h"
#include "macro.h"

/* Programs counted at most: past that, later changes may go unseen until
 * an unknown address makes kallsyms be read again anyway. */
#define BPF_PROGS_MAX 65536
/* Functions of one program at most (the verifier allows far fewer). */
#define BPF_FUNCS_MAX 4096

/* Only what tells that the set of modules changed, not the reference
 * counts, which move whenever a module's device is opened. */
static uint64_t hash_modules_line(uint64_t h, char *line)
{
    char *save = NULL, *field = strtok_r(line, " \n", &save);

    for (unsigned i = 0; field; i++, field = strtok_r(NULL, " \n", &save)) {
        if (i == 2 || i == 3) /* refcount, users */
            continue;
        h = fnv1a(h, field, strlen(field) + 1); /* with the NUL: fields stay apart */
    }
    return h;
}

/* FNV1A_INIT when there are no modules to watch (no /proc/modules). */
uint64_t modules_hash(void)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/modules", "re");
    _cleanup_free_ char *line = NULL;
    uint64_t h = FNV1A_INIT;
    size_t line_size = 0;

    if (!f)
        return h;
    while (getline(&line, &line_size, f) >= 0)
        h = hash_modules_line(h, line);
    return h;
}

static int bpf(int cmd, union bpf_attr *attr)
{
    return syscall(SYS_bpf, cmd, attr, sizeof(*attr)) < 0 ? -errno : 0;
}

/* The id of the next program after *id; -ENOENT past the last. */
static int next_program(uint32_t *id)
{
    union bpf_attr attr;
    int r;

    memset(&attr, 0, sizeof(attr));
    attr.start_id = *id;
    r = bpf(BPF_PROG_GET_NEXT_ID, &attr);
    if (r == 0)
        *id = attr.next_id;
    return r;
}

int bpf_program_ids(uint32_t **ret, size_t *ret_n)
{
    uint32_t *ids = NULL, id = 0;
    size_t n = 0, cap = 0;
    int r = 0;

    for (unsigned i = 0; i < BPF_PROGS_MAX; i++) {
        r = next_program(&id);
        if (r < 0)
            break;
        r = array_reserve(&ids, &cap, n + 1, sizeof(*ids), 64);
        if (r < 0)
            break;
        ids[n++] = id;
    }
    if (r < 0 && r != -ENOENT) {
        free(ids);
        return r;
    }
    *ret = ids;
    *ret_n = n;
    return 0;
}

static int get_info(int fd, struct bpf_prog_info *info)
{
    union bpf_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.info.bpf_fd = (uint32_t)fd;
    attr.info.info_len = sizeof(*info);
    attr.info.info = (uintptr_t)info;
    return bpf(BPF_OBJ_GET_INFO_BY_FD, &attr);
}

/* Append program id's JITed functions; one gone meanwhile, or not JITed,
 * has none. */
static int program_functions(uint32_t id, struct bpf_function **funcs, size_t *n, size_t *cap)
{
    _cleanup_free_ uint64_t *addrs = NULL;
    _cleanup_free_ uint32_t *lens = NULL;
    _cleanup_close_ int fd = -EBADF;
    struct bpf_prog_info info;
    union bpf_attr attr;
    uint32_t nfuncs;
    int r;

    memset(&attr, 0, sizeof(attr));
    attr.prog_id = id;
    fd = (int)syscall(SYS_bpf, BPF_PROG_GET_FD_BY_ID, &attr, sizeof(attr));
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    memset(&info, 0, sizeof(info));
    r = get_info(fd, &info);
    if (r < 0)
        return r;
    nfuncs = info.nr_jited_ksyms;
    if (nfuncs == 0 || nfuncs != info.nr_jited_func_lens || nfuncs > BPF_FUNCS_MAX)
        return 0;
    addrs = calloc(nfuncs, sizeof(*addrs));
    lens = calloc(nfuncs, sizeof(*lens));
    if (!addrs || !lens)
        return -ENOMEM;
    memset(&info, 0, sizeof(info));
    info.nr_jited_ksyms = nfuncs;
    info.jited_ksyms = (uintptr_t)addrs;
    info.nr_jited_func_lens = nfuncs;
    info.jited_func_lens = (uintptr_t)lens;
    r = get_info(fd, &info);
    if (r < 0)
        return r;
    r = array_reserve(funcs, cap, *n + nfuncs, sizeof(**funcs), 64);
    if (r < 0)
        return r;
    for (uint32_t i = 0; i < nfuncs; i++)
        (*funcs)[(*n)++] = (struct bpf_function){.start = addrs[i], .len = lens[i], .prog_id = id};
    return 0;
}

static int function_compare(const void *a, const void *b)
{
    const struct bpf_function *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

int bpf_functions(struct bpf_function **ret, size_t *ret_n)
{
    _cleanup_free_ uint32_t *ids = NULL;
    struct bpf_function *funcs = NULL;
    size_t nids, n = 0, cap = 0;
    int r = bpf_program_ids(&ids, &nids);

    for (size_t i = 0; r == 0 && i < nids; i++)
        r = program_functions(ids[i], &funcs, &n, &cap);
    if (r < 0) {
        free(funcs);
        return r;
    }
    if (n)
        qsort(funcs, n, sizeof(*funcs), function_compare);
    *ret = funcs;
    *ret_n = n;
    return 0;
}
