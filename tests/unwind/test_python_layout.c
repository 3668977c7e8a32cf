/* SPDX-License-Identifier: GPL-2.0-only */
/* CPython recognised from its file: Debian's python3.11 says it is 3.11 (its
 * Py_Version) and where its _PyRuntime is (argv: the interpreter, the address
 * readelf gives, a file that is not CPython, a file that is not ELF). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "macro.h"
#include "python_layout.h"

static int read_path(const char *path, struct python_layout *ret)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    return python_layout_read(fd, ret);
}

int main(int argc, char **argv)
{
    struct python_layout py;
    uint64_t runtime;
    int r;

    CHECK(argc == 5, "usage: python3.11 _PyRuntime-address not-cpython not-elf");
    if (argc != 5)
        return CHECK_EXIT();
    runtime = strtoull(argv[2], NULL, 16);
    r = read_path(argv[1], &py);
    CHECK(r == 0, "%s read: %d", argv[1], r);
    CHECK(py.version >> 16 == 0x030b, "%s is 3.11: 0x%08x", argv[1], py.version);
    CHECK(py.layout == OFFCPU_PYTHON_3_11, "the 3.11 layout: %u", py.layout);
    CHECK(py.runtime_vaddr == runtime, "_PyRuntime at 0x%" PRIx64 ", readelf: 0x%" PRIx64,
          py.runtime_vaddr, runtime);
    CHECK(py.nloads >= 2, "its loadable segments: %u", py.nloads);
    for (uint32_t i = 0; i < py.nloads; i++) {
        uint64_t bias = 1;

        /* a program mapped where it was linked (non-PIE): no bias, from any page */
        r = python_layout_bias(&py, py.loads[i].offset & ~0xfffULL, py.loads[i].vaddr & ~0xfffULL,
                               &bias);
        CHECK(r == 0 && bias == 0, "segment %u: bias %" PRIu64 " (%d)", i, bias, r);
        r = python_layout_bias(&py, py.loads[i].offset & ~0xfffULL,
                               (py.loads[i].vaddr & ~0xfffULL) + 0x7f0000000000ULL, &bias);
        CHECK(r == 0 && bias == 0x7f0000000000ULL, "moved: bias 0x%" PRIx64, bias);
    }
    r = read_path(argv[3], &py);
    CHECK(r == 0 && py.runtime_vaddr == 0 && py.layout == OFFCPU_PYTHON_NONE,
          "%s is no CPython: %d", argv[3], r);
    r = read_path(argv[4], &py);
    CHECK(r < 0 || py.runtime_vaddr == 0, "%s, not ELF, is no CPython: %d", argv[4], r);
    CHECK(python_layout_of(0x030a0cf0) == OFFCPU_PYTHON_NONE &&
              python_layout_of(0x030c00f0) == OFFCPU_PYTHON_NONE &&
              python_layout_of(0x030b09f0) == OFFCPU_PYTHON_3_11,
          "only 3.11.x has the 3.11 layout");
    return CHECK_EXIT();
}
