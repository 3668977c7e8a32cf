/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPython's objects read from a live process's memory: a code object's
 * header, its type, a str as UTF-8, a bytes object. The offsets of each
 * interpreter version are in one table, keyed by enum offcpu_python_layout.
 */
#ifndef PYTHON_OBJECTS_H
#define PYTHON_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a version keeps what is read (docs/python-frames.md §2), from its
 * DWARF (3.13's checked against its _Py_DebugOffsets: python_layout.c). */
struct python_object_layout {
    size_t code_size; /* PyCodeObject before its instructions = PyCode_Type.tp_basicsize */
    size_t ob_type, ob_size;
    size_t co_firstlineno, co_filename, co_qualname, co_linetable;
    size_t tp_name, tp_basicsize;  /* in PyTypeObject */
    size_t str_length, str_state;  /* in PyASCIIObject */
    size_t str_ascii, str_compact; /* where the characters of a compact str start */
    size_t bytes_size, bytes_data; /* in PyBytesObject */
};

/* The offsets of layout, or NULL for one not known here. */
const struct python_object_layout *python_object_layout_of(uint32_t layout);

/* Copy [addr, addr + size) of process pid: 0, -ESRCH (gone) or -EFAULT (any
 * other failure, a short read included). */
int python_read_memory(pid_t pid, uint64_t addr, void *buf, size_t size);

/* What of a code object's header is used, and checked again later: a
 * change in any of it means another code object is at that address now. */
struct python_code_header {
    uint64_t type, qualname, filename, linetable;
    int64_t units; /* ob_size: its instructions, in 2-byte code units */
    int32_t firstlineno;
};

int python_read_code_header(pid_t pid, const struct python_object_layout *l, uint64_t addr,
                            struct python_code_header *ret);

/* Whether the type object at addr is CPython's code type, from its name and
 * size (the daemon has no symbols for it): 1, 0 (also for what cannot be read as
 * a type), or -ESRCH. */
int python_type_is_code(pid_t pid, const struct python_object_layout *l, uint64_t addr);

/* The str object at addr as UTF-8 in buf[size] (size >= 1), cut at a
 * character if longer. -EINVAL: not a compact str. */
int python_read_str(pid_t pid, const struct python_object_layout *l, uint64_t addr, char *buf,
                    size_t size);

/* The contents of the bytes object at addr, at most max bytes of them, in a
 * new buffer. -E2BIG: longer than max. */
int python_read_bytes(pid_t pid, const struct python_object_layout *l, uint64_t addr, size_t max,
                      uint8_t **ret, size_t *ret_size);

#endif
