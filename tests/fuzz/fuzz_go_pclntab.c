/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Drives bytes as a .gopclntab section through Go's function table reader
 * (go_pclntab.h). Any Go program on the host reaches it, as root: whatever the
 * bytes, the answer is functions or an error, each function a non-empty range
 * after the one before, its name ending inside the bytes. The same for the
 * inline trees, the bytes their section too: ranges in order, at most
 * GO_INLINE_DEPTH_MAX names each, each ending inside the bytes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "go_pclntab.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

struct bounds {
    const uint8_t *data;
    size_t size;
    uint64_t last_end;
};

static bool name_inside(const struct bounds *b, const char *name)
{
    const uint8_t *p = (const uint8_t *)name;

    return p >= b->data && p < b->data + b->size &&
           memchr(p, '\0', (size_t)(b->data + b->size - p));
}

static int check(const struct go_func *f, void *userdata)
{
    struct bounds *b = userdata;
    if (f->entry >= f->end || f->entry < b->last_end || !name_inside(b, f->name))
        abort();
    b->last_end = f->end;
    return 0;
}

static int check_inlined(const struct go_inlined *in, void *userdata)
{
    struct bounds *b = userdata;

    if (in->start >= in->end || in->start < b->last_end || in->n == 0 ||
        in->n > GO_INLINE_DEPTH_MAX)
        abort();
    for (unsigned i = 0; i < in->n; i++)
        if (!name_inside(b, in->names[i]))
            abort();
    b->last_end = in->end;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bounds b = {.data = data, .size = size};
    struct go_funcdata fd = {.data = data, .size = size, .addr = 0x500000, .gofunc = 0x500000};

    go_pclntab_functions(data, size, 0x401000, check, &b);
    b.last_end = 0;
    go_pclntab_inlined(data, size, 0x401000, &fd, check_inlined, &b);
    return 0;
}
