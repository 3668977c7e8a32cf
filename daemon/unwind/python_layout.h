/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Whether an ELF file is a CPython interpreter (python3.x, or a
 * libpython3.x.so a program embeds), and which: the version the file says
 * it is (Py_Version), never its name, and where its _PyRuntime is; from
 * 3.13, the offsets its _PyRuntime begins with must agree with the
 * layout's. The BPF side walks Python frames only for a version whose
 * layout it knows (enum offcpu_python_layout); another is counted in status.
 */
#ifndef PYTHON_LAYOUT_H
#define PYTHON_LAYOUT_H

#include <linux/types.h>
#include <stdint.h>

#include "offcpu.h"

/* Loadable segments kept to place the file in a process: a few in real files. */
#define PYTHON_LAYOUT_LOADS_MAX 8

struct python_layout {
    uint64_t runtime_vaddr; /* ELF address of _PyRuntime; 0: not CPython */
    uint32_t version;       /* PY_VERSION_HEX (0x030b02f0: 3.11.2); 0: not said (before 3.11) */
    uint32_t layout;        /* enum offcpu_python_layout: NONE for a version not known */
    struct {
        uint64_t offset, vaddr, size; /* of the file's PT_LOADs */
    } loads[PYTHON_LAYOUT_LOADS_MAX];
    uint32_t nloads;
};

/* Reads the dynamic symbols of the ELF file open on fd. Returns 0 (runtime_vaddr
 * 0 for a file that is not CPython) or a negative errno. */
int python_layout_read(int fd, struct python_layout *ret);

/* The load bias of the file in a process that maps its page at file offset
 * pgoff at address start: ELF address = address - bias. Found from the
 * file's own segments, whether or not its unwind rows could be read. */
int python_layout_bias(const struct python_layout *py, uint64_t pgoff, uint64_t start,
                       uint64_t *ret);

/* The layout of a version (enum offcpu_python_layout), before any check of
 * the file's own debug offsets (python_layout_read does both). */
uint32_t python_layout_of(uint32_t version);

/* What the BPF walk reads where, in layout; NULL for none. */
const struct offcpu_python_offsets *python_layout_offsets(uint32_t layout);

#endif
