/* SPDX-License-Identifier: GPL-2.0-only */
#include "python_layout.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "python_objects.h"

/* A .dynsym holds a few thousand symbols; a count read from a hostile file
 * must not make the scan endless. */
#define DYNSYM_MAX (1u << 20)

static void elf_endp(Elf **elf)
{
    if (*elf)
        elf_end(*elf);
}

/*
 * Where each version keeps what the BPF walk reads (bpf/python.bpf.h), from
 * the DWARF of a build of it (tests/unwind/test_python_layout.c compares).
 * The TSS key is in no debug offsets: 3.13's is trusted where the file's
 * _PyRuntime is the size it has in that build (runtime_size).
 */
#define NONE OFFCPU_PY_NONE
/* 3.12 on: the frame begins with its code, an evaluation with a shim frame;
 * each interpreter has its GIL */
#define PY312_FRAMES                                                                               \
    .frame_code = 0x0, .frame_previous = 0x8, .frame_instr = 0x38, .frame_owner = 0x46,            \
    .frame_is_entry = 0xff, .runtime_gil = NONE, .tstate_interp = 0x10
static const struct {
    struct offcpu_python_offsets at;
    uint64_t runtime_size; /* 0: no _Py_DebugOffsets to check against */
} versions[OFFCPU_PYTHON_LAYOUTS] = {
    [OFFCPU_PYTHON_3_11] = {{.tss = 0x250,
                             .runtime_gil = 0x168,
                             .tstate_frame = 0x38,
                             .cframe_current = 0x8,
                             .tstate_thread = 0x98,
                             .tstate_interp = 0x10,
                             .interp_gil = NONE,
                             .code_adaptive = 0xb8,
                             .frame_code = 0x20,
                             .frame_previous = 0x30,
                             .frame_instr = 0x38,
                             .frame_owner = 0x45,
                             .frame_is_entry = 0x44}},
    [OFFCPU_PYTHON_3_12] = {{PY312_FRAMES, .tss = 0x608, .tstate_frame = 0x38,
                             .cframe_current = 0x0, .tstate_thread = 0x88, .interp_gil = 0x180,
                             .code_adaptive = 0xc0}},
    [OFFCPU_PYTHON_3_13] = {{PY312_FRAMES, .tss = 0x870, .tstate_frame = 0x48,
                             .cframe_current = NONE, .tstate_thread = 0x98, .interp_gil = 0x10,
                             .code_adaptive = 0xc8},
                            283320},
};
#undef NONE

/*
 * The head of 3.13's _PyRuntime (Include/internal/pycore_runtime.h): the
 * offsets a debugger needs, each 8 bytes, in groups that start with their
 * struct's size. Only the groups up to the last one checked are read.
 */
#define DEBUG_COOKIE "xdebugpy"
struct debug_offsets {
    char cookie[8];
    uint64_t version, free_threaded;
    struct {
        uint64_t size, finalizing, interpreters_head;
    } runtime_state;
    struct {
        uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
            gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
            gil_runtime_state_holder;
    } interpreter_state;
    struct {
        uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
            datastack_chunk, status;
    } thread_state;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner;
    } interpreter_frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
            localspluskinds, co_code_adaptive;
    } code_object;
    struct {
        uint64_t size, ob_type;
    } pyobject;
    struct {
        uint64_t size, tp_name, tp_repr, tp_flags;
    } type_object;
    struct {
        uint64_t size, ob_item, ob_size;
    } tuple_object, list_object;
    struct {
        uint64_t size, ma_keys, ma_values;
    } dict_object;
    struct {
        uint64_t size, ob_fval;
    } float_object;
    struct {
        uint64_t size, lv_tag, ob_digit;
    } long_object;
    struct {
        uint64_t size, ob_size, ob_sval;
    } bytes_object;
    struct {
        uint64_t size, state, length, asciiobject_size;
    } unicode_object;
};

/* size bytes at ELF address vaddr, from the section that holds them. */
static int read_at(Elf *elf, int fd, uint64_t vaddr, void *ret, size_t size)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;

    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC))
            continue;
        if (vaddr < sh.sh_addr || vaddr - sh.sh_addr > sh.sh_size ||
            size > sh.sh_size - (vaddr - sh.sh_addr))
            continue;
        if (pread(fd, ret, size, (off_t)(sh.sh_offset + (vaddr - sh.sh_addr))) != (ssize_t)size)
            return -EIO;
        return 0;
    }
    return -ENOENT;
}

/*
 * Whether the file's own _Py_DebugOffsets say what the tables here say, for
 * every field the walk and the naming read: a build of another kind (debug,
 * free-threaded, patched) keeps its native frames only.
 */
static bool debug_offsets_agree(const struct debug_offsets *d, uint32_t version, uint32_t layout)
{
    const struct offcpu_python_offsets *at = &versions[layout].at;
    const struct python_object_layout *o = python_object_layout_of(layout);

    return o && memcmp(d->cookie, DEBUG_COOKIE, sizeof(d->cookie)) == 0 && d->version == version &&
           d->free_threaded == 0 && d->runtime_state.size == versions[layout].runtime_size &&
           d->thread_state.current_frame == at->tstate_frame &&
           d->thread_state.thread_id == at->tstate_thread &&
           d->thread_state.native_thread_id == at->tstate_thread + 8u &&
           d->thread_state.interp == at->tstate_interp &&
           d->interpreter_state.ceval_gil == at->interp_gil &&
           d->interpreter_frame.executable == at->frame_code &&
           d->interpreter_frame.previous == at->frame_previous &&
           d->interpreter_frame.instr_ptr == at->frame_instr &&
           d->interpreter_frame.owner == at->frame_owner &&
           d->code_object.co_code_adaptive == at->code_adaptive &&
           d->code_object.co_code_adaptive == o->code_size &&
           d->code_object.filename == o->co_filename && d->code_object.qualname == o->co_qualname &&
           d->code_object.linetable == o->co_linetable &&
           d->code_object.firstlineno == o->co_firstlineno && d->pyobject.ob_type == o->ob_type &&
           d->type_object.tp_name == o->tp_name && d->bytes_object.ob_size == o->bytes_size &&
           d->bytes_object.ob_sval == o->bytes_data && d->unicode_object.state == o->str_state &&
           d->unicode_object.length == o->str_length &&
           d->unicode_object.asciiobject_size == o->str_ascii;
}

/* The layout of the file, from its version and, where the version has
 * them (3.13), the debug offsets at the head of its _PyRuntime. */
static uint32_t layout_of_file(Elf *elf, int fd, const struct python_layout *py)
{
    uint32_t layout = python_layout_of(py->version);
    struct debug_offsets d;

    if (layout == OFFCPU_PYTHON_NONE || !versions[layout].runtime_size)
        return layout;
    if (read_at(elf, fd, py->runtime_vaddr, &d, sizeof(d)) < 0 ||
        !debug_offsets_agree(&d, py->version, layout))
        return OFFCPU_PYTHON_NONE;
    return layout;
}

static int read_loads(Elf *elf, struct python_layout *py)
{
    size_t n;

    if (elf_getphdrnum(elf, &n) < 0)
        return -ENOEXEC;
    for (size_t i = 0; i < n && py->nloads < PYTHON_LAYOUT_LOADS_MAX; i++) {
        GElf_Phdr ph;

        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        py->loads[py->nloads].offset = ph.p_offset;
        py->loads[py->nloads].vaddr = ph.p_vaddr;
        py->loads[py->nloads].size = ph.p_filesz;
        py->nloads++;
    }
    return 0;
}

int python_layout_bias(const struct python_layout *py, uint64_t pgoff, uint64_t start,
                       uint64_t *ret)
{
    /* segments start mid-page, and a page may hold the end of one and the
     * start of the next: a mapping at a segment's first page is that
     * segment's, else the one whose pages hold pgoff */
    for (int exact = 1; exact >= 0; exact--)
        for (uint32_t i = 0; i < py->nloads; i++) {
            uint64_t page = py->loads[i].offset & ~(uint64_t)0xfff;

            if (exact ? pgoff == page
                      : pgoff > page && pgoff < py->loads[i].offset + py->loads[i].size) {
                *ret = start - (py->loads[i].vaddr - (py->loads[i].offset - pgoff));
                return 0;
            }
        }
    return -ENOENT;
}

uint32_t python_layout_of(uint32_t version)
{
    /* the layout does not change within a minor version */
    switch (version >> 16) {
    case 0x030b:
        return OFFCPU_PYTHON_3_11;
    case 0x030c:
        return OFFCPU_PYTHON_3_12;
    case 0x030d:
        return OFFCPU_PYTHON_3_13;
    default:
        return OFFCPU_PYTHON_NONE;
    }
}

const struct offcpu_python_offsets *python_layout_offsets(uint32_t layout)
{
    return layout != OFFCPU_PYTHON_NONE && layout < OFFCPU_PYTHON_LAYOUTS ? &versions[layout].at
                                                                          : NULL;
}

int python_layout_read(int fd, struct python_layout *ret)
{
    _cleanup_(elf_endp) Elf *elf = NULL;
    uint64_t version_vaddr = 0;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    int r;

    *ret = (struct python_layout){0};
    if (elf_version(EV_CURRENT) == EV_NONE)
        return -EINVAL;
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        return -ENOEXEC;
    while ((scn = elf_nextscn(elf, scn))) {
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
            break;
    }
    if (!scn || !sh.sh_entsize)
        return 0;
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t n = sh.sh_size / sh.sh_entsize;

    if (!data)
        return 0;
    for (size_t i = 0; i < n && i < DYNSYM_MAX; i++) {
        GElf_Sym sym;
        const char *name;

        if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
            continue;
        name = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (!name)
            continue;
        if (strcmp(name, "Py_Version") == 0)
            version_vaddr = sym.st_value;
        else if (strcmp(name, "_PyRuntime") == 0)
            ret->runtime_vaddr = sym.st_value;
    }
    /* no _PyRuntime: not CPython; no Py_Version (before 3.11): a CPython
     * whose version the file does not say, walked by no layout */
    if (!version_vaddr || !ret->runtime_vaddr)
        return 0;
    r = read_at(elf, fd, version_vaddr, &ret->version, sizeof(ret->version));
    if (r < 0)
        return r;
    r = read_loads(elf, ret);
    if (r < 0)
        return r;
    ret->layout = layout_of_file(elf, fd, ret);
    return 0;
}
