/* SPDX-License-Identifier: GPL-2.0-only */
#include "python_objects.h"

#include <errno.h>
#include <linux/types.h> /* offcpu.h's types */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "macro.h"
#include "offcpu.h"

/* What no version from 3.11 to 3.13 moved */
#define PY_OBJECTS_COMMON                                                                          \
    .ob_type = 0x8, .ob_size = 0x10, .co_filename = 0x70, .co_qualname = 0x80,                     \
    .co_linetable = 0x88, .tp_name = 0x18, .tp_basicsize = 0x20, .str_length = 0x10,               \
    .str_state = 0x20, .bytes_size = 0x10, .bytes_data = 0x20

static const struct python_object_layout layouts[] = {
    [OFFCPU_PYTHON_3_11] = {PY_OBJECTS_COMMON, .code_size = 0xb8, .co_firstlineno = 0x48,
                            .str_ascii = 0x30, .str_compact = 0x48},
    /* 3.12: str loses its wstr fields */
    [OFFCPU_PYTHON_3_12] = {PY_OBJECTS_COMMON, .code_size = 0xc0, .co_firstlineno = 0x44,
                            .str_ascii = 0x28, .str_compact = 0x38},
    [OFFCPU_PYTHON_3_13] = {PY_OBJECTS_COMMON, .code_size = 0xc8, .co_firstlineno = 0x44,
                            .str_ascii = 0x28, .str_compact = 0x38},
};

/* The largest header read: a code object's. */
#define HEADER_MAX 0x100
/* "code" and its NUL */
#define CODE_TYPE_NAME "code"

/* PyASCIIObject.state: kind bits 2-4, compact bit 5, ascii bit 6 */
#define STR_KIND(state)    (((state) >> 2) & 7)
#define STR_COMPACT(state) (((state) >> 5) & 1)
#define STR_ASCII(state)   (((state) >> 6) & 1)

const struct python_object_layout *python_object_layout_of(uint32_t layout)
{
    if (layout >= ARRAY_SIZE(layouts) || !layouts[layout].code_size)
        return NULL;
    return &layouts[layout];
}

int python_read_memory(pid_t pid, uint64_t addr, void *buf, size_t size)
{
    struct iovec local = {.iov_base = buf, .iov_len = size};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = size};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

    if (n < 0 && errno == ESRCH)
        return -ESRCH;
    /* unmapped, a short read, or not allowed: the caller only needs to
     * know it has no name from here */
    if (n < 0 || (size_t)n != size)
        return -EFAULT;
    return 0;
}

/* Fields of a little-endian header: the daemon reads x86-64 programs only. */
static uint64_t u64_at(const uint8_t *buf, size_t off)
{
    uint64_t v;

    memcpy(&v, buf + off, sizeof(v));
    return v;
}

static uint32_t u32_at(const uint8_t *buf, size_t off)
{
    uint32_t v;

    memcpy(&v, buf + off, sizeof(v));
    return v;
}

int python_read_code_header(pid_t pid, const struct python_object_layout *l, uint64_t addr,
                            struct python_code_header *ret)
{
    uint8_t h[HEADER_MAX];
    int r;

    r = python_read_memory(pid, addr, h, l->code_size);
    if (r < 0)
        return r;
    *ret = (struct python_code_header){
        .type = u64_at(h, l->ob_type),
        .qualname = u64_at(h, l->co_qualname),
        .filename = u64_at(h, l->co_filename),
        .linetable = u64_at(h, l->co_linetable),
        .units = (int64_t)u64_at(h, l->ob_size),
        .firstlineno = (int32_t)u32_at(h, l->co_firstlineno),
    };
    return 0;
}

int python_type_is_code(pid_t pid, const struct python_object_layout *l, uint64_t addr)
{
    uint8_t t[HEADER_MAX];
    char name[sizeof(CODE_TYPE_NAME)];
    int r;

    /* a type and its name are readable: what is not is no type */
    r = python_read_memory(pid, addr, t, l->tp_basicsize + sizeof(uint64_t));
    if (r < 0)
        return r == -EFAULT ? 0 : r;
    if (u64_at(t, l->tp_basicsize) != l->code_size)
        return 0;
    r = python_read_memory(pid, u64_at(t, l->tp_name), name, sizeof(name));
    if (r < 0)
        return r == -EFAULT ? 0 : r;
    return memcmp(name, CODE_TYPE_NAME, sizeof(name)) == 0;
}

/* Append code point cp to buf[*len] as UTF-8 if it fits with a NUL after it. */
static bool utf8_put(char *buf, size_t size, size_t *len, uint32_t cp)
{
    char u[4];
    size_t n;

    /* a lone surrogate (as surrogateescape leaves for undecodable bytes)
     * has no UTF-8: shown as the replacement character */
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        cp = 0xfffd;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    if (n >= size - *len)
        return false;
    memcpy(buf + *len, u, n);
    *len += n;
    return true;
}

int python_read_str(pid_t pid, const struct python_object_layout *l, uint64_t addr, char *buf,
                    size_t size)
{
    uint8_t h[HEADER_MAX];
    _cleanup_free_ uint8_t *units = NULL;
    uint32_t state, kind;
    int64_t length;
    size_t n, len = 0;
    int r;

    r = python_read_memory(pid, addr, h, l->str_ascii);
    if (r < 0)
        return r;
    length = (int64_t)u64_at(h, l->str_length);
    state = u32_at(h, l->str_state);
    kind = STR_KIND(state);
    /* a str CPython made for code is compact; anything else is not one */
    if (!STR_COMPACT(state) || (kind != 1 && kind != 2 && kind != 4) ||
        (STR_ASCII(state) && kind != 1) || length < 0)
        return -EINVAL;
    /* every character takes a byte of UTF-8 at least: no more are needed */
    n = (uint64_t)length < size - 1 ? (size_t)length : size - 1;
    units = malloc(n * kind + 1);
    if (!units)
        return -ENOMEM;
    r = python_read_memory(pid, addr + (STR_ASCII(state) ? l->str_ascii : l->str_compact), units,
                           n * kind);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = kind == 1   ? units[i]
                      : kind == 2 ? (uint32_t)units[2 * i] | (uint32_t)units[2 * i + 1] << 8
                                  : u32_at(units, 4 * i);

        if (STR_ASCII(state) && cp >= 0x80)
            return -EINVAL;
        if (!utf8_put(buf, size, &len, cp))
            break;
    }
    buf[len] = '\0';
    return 0;
}

int python_read_bytes(pid_t pid, const struct python_object_layout *l, uint64_t addr, size_t max,
                      uint8_t **ret, size_t *ret_size)
{
    _cleanup_free_ uint8_t *data = NULL;
    uint8_t h[HEADER_MAX];
    int64_t size;
    int r;

    r = python_read_memory(pid, addr, h, l->bytes_data);
    if (r < 0)
        return r;
    size = (int64_t)u64_at(h, l->bytes_size);
    if (size < 0)
        return -EINVAL;
    if ((uint64_t)size > max)
        return -E2BIG;
    data = malloc(size ? (size_t)size : 1);
    if (!data)
        return -ENOMEM;
    r = python_read_memory(pid, addr + l->bytes_data, data, (size_t)size);
    if (r < 0)
        return r;
    *ret = data;
    data = NULL;
    *ret_size = (size_t)size;
    return 0;
}
