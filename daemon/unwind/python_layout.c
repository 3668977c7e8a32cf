/* SPDX-License-Identifier: GPL-2.0-only */
#include "python_layout.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

/* A .dynsym holds a few thousand symbols; a count read from a hostile file
 * must not make the scan endless. */
#define DYNSYM_MAX (1u << 20)

static void elf_endp(Elf **elf)
{
    if (*elf)
        elf_end(*elf);
}

/* The 4 bytes at ELF address vaddr, from the section that holds them. */
static int read_u32_at(Elf *elf, int fd, uint64_t vaddr, uint32_t *ret)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;

    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC))
            continue;
        if (vaddr < sh.sh_addr || vaddr - sh.sh_addr + sizeof(*ret) > sh.sh_size)
            continue;
        if (pread(fd, ret, sizeof(*ret), (off_t)(sh.sh_offset + (vaddr - sh.sh_addr))) !=
            (ssize_t)sizeof(*ret))
            return -EIO;
        return 0;
    }
    return -ENOENT;
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
    /* 3.11.x: the layout does not change within a minor version */
    return (version >> 16) == 0x030b ? OFFCPU_PYTHON_3_11 : OFFCPU_PYTHON_NONE;
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
    r = read_u32_at(elf, fd, version_vaddr, &ret->version);
    if (r < 0)
        return r;
    r = read_loads(elf, ret);
    if (r < 0)
        return r;
    ret->layout = python_layout_of(ret->version);
    return 0;
}
