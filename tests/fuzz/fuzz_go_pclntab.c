/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Drives bytes as a .gopclntab section through Go's function table reader
 * (go_pclntab.h). Any Go program on the host reaches it, as root: whatever the
 * bytes, the answer is functions or an error, each function a non-empty range
 * after the one before, its name ending inside the bytes.
 */
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

static int check(const struct go_func *f, void *userdata)
{
    struct bounds *b = userdata;
    const uint8_t *name = (const uint8_t *)f->name;

    if (f->entry >= f->end || f->entry < b->last_end || name < b->data ||
        name >= b->data + b->size || !memchr(name, '\0', (size_t)(b->data + b->size - name)))
        abort();
    b->last_end = f->end;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bounds b = {.data = data, .size = size};

    go_pclntab_functions(data, size, 0x401000, check, &b);
    return 0;
}
