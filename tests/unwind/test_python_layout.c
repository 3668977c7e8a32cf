/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPython recognised from its file. Debian's python3.11 says it is 3.11 (its
 * Py_Version) and where its _PyRuntime is; libc and a text file are no
 * CPython. Then builds of 3.11, 3.12 and 3.13 with their DWARF (the
 * machine's pyenv): each recognised, and every offset of its layout, for
 * the BPF walk and for naming, what its own DWARF says; 3.13's because its
 * _Py_DebugOffsets agree, and refused once one of them is changed.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "macro.h"
#include "python_layout.h"
#include "python_objects.h"

static int read_path(const char *path, struct python_layout *ret)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    return python_layout_read(fd, ret);
}

/* The struct a type DIE names, through typedefs and qualifiers; NULL if none. */
static Dwarf_Die *struct_of(Dwarf_Die *die, Dwarf_Die *ret)
{
    Dwarf_Attribute a;

    for (int hops = 0; hops < 8; hops++) {
        int tag = dwarf_tag(die);

        if (tag == DW_TAG_structure_type || tag == DW_TAG_union_type)
            return die;
        if (!dwarf_attr_integrate(die, DW_AT_type, &a) || !dwarf_formref_die(&a, ret))
            return NULL;
        die = ret;
    }
    return NULL;
}

/* A type named name (a struct's tag or a typedef) with its members, among
 * the top-level DIEs of the file's units. */
static bool find_type(Dwarf *dw, const char *name, Dwarf_Die *ret)
{
    Dwarf_Off off = 0, next;
    size_t header;

    while (dwarf_nextcu(dw, off, &next, &header, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu, die;

        if (dwarf_offdie(dw, off + header, &cu) && dwarf_child(&cu, &die) == 0)
            do {
                int tag = dwarf_tag(&die);
                const char *n = dwarf_diename(&die);
                Dwarf_Die s, *sp;

                if (!n || strcmp(n, name) != 0 ||
                    (tag != DW_TAG_structure_type && tag != DW_TAG_typedef))
                    continue;
                sp = struct_of(&die, &s);
                if (sp && dwarf_haschildren(sp)) {
                    *ret = *sp;
                    return true;
                }
            } while (dwarf_siblingof(&die, &die) == 0);
        off = next;
    }
    return false;
}

/* The offset of path ("ceval.gil") in type, as the DWARF says; -1 if not found. */
static long dwarf_offset(Dwarf *dw, const char *type, const char *path)
{
    char buf[128], *save = NULL;
    Dwarf_Die s, m, t;
    long at = 0;

    if (!find_type(dw, type, &s))
        return -1;
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *name = strtok_r(buf, ".", &save); name; name = strtok_r(NULL, ".", &save)) {
        Dwarf_Attribute a;
        Dwarf_Word loc;
        bool found = false;

        if (dwarf_child(&s, &m) != 0)
            return -1;
        do {
            const char *n = dwarf_diename(&m);

            if (dwarf_tag(&m) == DW_TAG_member && n && strcmp(n, name) == 0) {
                found = true;
                break;
            }
        } while (dwarf_siblingof(&m, &m) == 0);
        if (!found || !dwarf_attr(&m, DW_AT_data_member_location, &a) ||
            dwarf_formudata(&a, &loc) != 0)
            return -1;
        at += (long)loc;
        if (!struct_of(&m, &t))
            return strtok_r(NULL, ".", &save) ? -1 : at;
        s = *struct_of(&m, &t);
    }
    return at;
}

struct field {
    const char *type, *path;
    long ours; /* -2: the version has no such field */
};

#define NONE16(v) ((v) == OFFCPU_PY_NONE ? -2 : (long)(v))
#define NONE8(v)  ((v) == 0xff ? -2 : (long)(v))

/* Each offset of layout against the DWARF of a build of it. */
static void check_against_dwarf(const char *path, uint32_t layout)
{
    const struct offcpu_python_offsets *at = python_layout_offsets(layout);
    const struct python_object_layout *o = python_object_layout_of(layout);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
    bool v311 = layout == OFFCPU_PYTHON_3_11, v313 = layout == OFFCPU_PYTHON_3_13;

    CHECK(dw && at && o, "%s: DWARF and layout %u", path, layout);
    if (!dw || !at || !o)
        return;
    const struct field fields[] = {
        {"_PyRuntimeState", v311 ? "gilstate.autoTSSkey" : "autoTSSkey", at->tss},
        {"_PyRuntimeState", "ceval.gil", NONE16(at->runtime_gil)},
        {"PyThreadState", v313 ? "current_frame" : "cframe", at->tstate_frame},
        {"_PyCFrame", "current_frame", NONE16(at->cframe_current)},
        {"PyThreadState", "thread_id", at->tstate_thread},
        {"PyThreadState", "native_thread_id", at->tstate_thread + 8},
        {"PyThreadState", "interp", at->tstate_interp},
        {"PyInterpreterState", "ceval.gil", NONE16(at->interp_gil)},
        {"PyCodeObject", "co_code_adaptive", at->code_adaptive},
        {"_PyInterpreterFrame", v313 ? "f_executable" : "f_code", at->frame_code},
        {"_PyInterpreterFrame", "previous", at->frame_previous},
        {"_PyInterpreterFrame", v313 ? "instr_ptr" : "prev_instr", at->frame_instr},
        {"_PyInterpreterFrame", "owner", at->frame_owner},
        {"_PyInterpreterFrame", "is_entry", NONE8(at->frame_is_entry)},
        {"PyCodeObject", "co_code_adaptive", (long)o->code_size},
        {"PyObject", "ob_type", (long)o->ob_type},
        {"PyVarObject", "ob_size", (long)o->ob_size},
        {"PyCodeObject", "co_firstlineno", (long)o->co_firstlineno},
        {"PyCodeObject", "co_filename", (long)o->co_filename},
        {"PyCodeObject", "co_qualname", (long)o->co_qualname},
        {"PyCodeObject", "co_linetable", (long)o->co_linetable},
        {"_typeobject", "tp_name", (long)o->tp_name},
        {"_typeobject", "tp_basicsize", (long)o->tp_basicsize},
        {"PyASCIIObject", "length", (long)o->str_length},
        {"PyASCIIObject", "state", (long)o->str_state},
        {"PyCompactUnicodeObject", "_base", 0},
        {"PyBytesObject", "ob_base.ob_size", (long)o->bytes_size},
        {"PyBytesObject", "ob_sval", (long)o->bytes_data},
    };

    for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
        long theirs = dwarf_offset(dw, fields[i].type, fields[i].path);

        CHECK(theirs == (fields[i].ours == -2 ? -1 : fields[i].ours),
              "%s: %s.%s at %ld, the layout's %ld", path, fields[i].type, fields[i].path, theirs,
              fields[i].ours);
    }
    /* where a compact str's characters start: past the header, which ends
     * at the next struct's first own field */
    CHECK(dwarf_offset(dw, "PyCompactUnicodeObject", "utf8_length") == (long)o->str_ascii &&
              dwarf_offset(dw, "PyUnicodeObject", "data") == (long)o->str_compact,
          "%s: a str's characters at 0x%zx (ASCII), 0x%zx", path, o->str_ascii, o->str_compact);
    dwarf_end(dw);
}

/* A copy of path in dir whose byte at _PyRuntime + off is changed: its
 * layout. */
static uint32_t layout_changed_at(const char *path, const char *dir, uint64_t runtime, uint64_t off)
{
    char copy[4096], cmd[8192];
    struct python_layout py;
    _cleanup_close_ int fd = -1;
    uint8_t b;

    snprintf(copy, sizeof(copy), "%s/libpython-changed.so", dir);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, copy);
    if (system(cmd) != 0)
        return 0xff;
    fd = open(copy, O_RDWR | O_CLOEXEC);
    /* .PyRuntime's file offset: its address less the segment's bias */
    CHECK(fd >= 0 && read_path(copy, &py) == 0 && py.nloads > 0, "copied %s", path);
    for (uint32_t i = 0; fd >= 0 && i < py.nloads; i++) {
        off_t at = (off_t)(runtime + off - py.loads[i].vaddr + py.loads[i].offset);

        if (runtime + off < py.loads[i].vaddr ||
            runtime + off >= py.loads[i].vaddr + py.loads[i].size)
            continue;
        if (pread(fd, &b, 1, at) != 1)
            break;
        b ^= 0x40;
        if (pwrite(fd, &b, 1, at) != 1)
            break;
        if (read_path(copy, &py) < 0)
            break;
        unlink(copy);
        return py.layout;
    }
    unlink(copy);
    return 0xff;
}

int main(int argc, char **argv)
{
    static const struct {
        uint32_t minor, layout;
    } builds[] = {
        {0x030b, OFFCPU_PYTHON_3_11}, {0x030c, OFFCPU_PYTHON_3_12}, {0x030d, OFFCPU_PYTHON_3_13}};
    struct python_layout py;
    uint64_t runtime;
    int r;

    CHECK(argc == 9, "usage: python3.11 _PyRuntime-address not-cpython not-elf "
                     "libpython3.11 libpython3.12 libpython3.13 tmpdir");
    if (argc != 9)
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
              python_layout_of(0x030e00f0) == OFFCPU_PYTHON_NONE &&
              python_layout_of(0x030b09f0) == OFFCPU_PYTHON_3_11 &&
              python_layout_of(0x030c01f0) == OFFCPU_PYTHON_3_12 &&
              python_layout_of(0x030d00f0) == OFFCPU_PYTHON_3_13,
          "3.11, 3.12 and 3.13 have layouts; 3.10 and 3.14 none");

    for (size_t i = 0; i < ARRAY_SIZE(builds); i++) {
        const char *path = argv[5 + i];

        r = read_path(path, &py);
        CHECK(r == 0 && py.version >> 16 == builds[i].minor && py.layout == builds[i].layout,
              "%s: version 0x%08x, layout %u (%d)", path, py.version, py.layout, r);
        check_against_dwarf(path, builds[i].layout);
    }
    /* 3.13 is walked because its own debug offsets agree: a change in the
     * cookie, in the version, in a frame's offsets, or in _PyRuntime's size
     * (where the TSS key is) leaves it unwalked */
    r = read_path(argv[7], &py);
    if (r == 0) {
        static const struct {
            uint64_t off;
            const char *what;
        } changes[] = {{0, "cookie"},
                       {8, "version"},
                       {16, "free_threaded"},
                       {24, "runtime_state.size"},
                       {8 * (6 + 13 + 9 + 1), "interpreter_frame.previous"},
                       {8 * (6 + 13 + 9 + 6 + 9), "code_object.co_code_adaptive"}};

        for (size_t i = 0; i < ARRAY_SIZE(changes); i++) {
            uint32_t l = layout_changed_at(argv[7], argv[8], py.runtime_vaddr, changes[i].off);

            CHECK(l == OFFCPU_PYTHON_NONE, "3.13 with its %s changed: layout %u", changes[i].what,
                  l);
        }
    }
    return CHECK_EXIT();
}
