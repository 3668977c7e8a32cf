/* SPDX-License-Identifier: GPL-2.0-only */
#include "cfi_check.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* What an FDE needs of its CIE to find its instructions. */
struct cie_info {
    Dwarf_Off offset;
    size_t ptr_size; /* of the FDE's initial location and range */
    bool has_z;      /* its augmentation data is preceded by its length */
    uint64_t ops;    /* its initial instructions, evaluated again for each row */
};

/* Where the FDEs begin, as found (.debug_frame's, which no table lists). */
struct fde_starts {
    uint64_t *pcs;
    size_t n, cap;
};

struct reader {
    const uint8_t *p, *end;
    bool bad;
};

static uint64_t leb(struct reader *r)
{
    uint64_t v = 0;
    unsigned shift = 0;

    while (r->p < r->end) {
        uint8_t b = *r->p++;

        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

static void skip(struct reader *r, uint64_t n)
{
    if (n > (uint64_t)(r->end - r->p))
        r->bad = true;
    else
        r->p += n;
}

static void reg(struct reader *r)
{
    if (leb(r) >= CFI_REGISTERS_MAX)
        r->bad = true;
}

/* Bytes of a pointer in encoding enc: 0 for the variable ones (LEB128),
 * which no linker writes there. */
static size_t pointer_size(uint8_t enc)
{
    switch (enc & 0x0f) {
    case DW_EH_PE_absptr:
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8:
        return 8;
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4:
        return 4;
    case DW_EH_PE_udata2:
    case DW_EH_PE_sdata2:
        return 2;
    default:
        return 0;
    }
}

/* Decode [p, end) as call frame instructions; count them into *ops. */
static int scan(const uint8_t *p, const uint8_t *end, size_t ptr_size, uint64_t *ops)
{
    struct reader r = {.p = p, .end = end};

    while (r.p < r.end && !r.bad) {
        uint8_t op = *r.p++;

        if (++*ops > CFI_FDE_OPS_MAX)
            return -E2BIG;
        if (op >> 6 == 1 || op >> 6 == 3) /* advance_loc, restore: operand in op */
            continue;
        if (op >> 6 == 2) { /* offset: register in op, then the offset */
            leb(&r);
            continue;
        }
        switch (op) {
        case DW_CFA_nop:
        case DW_CFA_remember_state:
        case DW_CFA_restore_state:
            break;
        case DW_CFA_set_loc:
            skip(&r, ptr_size);
            break;
        case DW_CFA_advance_loc1:
            skip(&r, 1);
            break;
        case DW_CFA_advance_loc2:
            skip(&r, 2);
            break;
        case DW_CFA_advance_loc4:
            skip(&r, 4);
            break;
        case DW_CFA_offset_extended:
        case DW_CFA_offset_extended_sf:
        case DW_CFA_val_offset:
        case DW_CFA_val_offset_sf:
        case DW_CFA_GNU_negative_offset_extended:
        case DW_CFA_def_cfa:
        case DW_CFA_def_cfa_sf:
            reg(&r);
            leb(&r);
            break;
        case DW_CFA_register:
            reg(&r);
            reg(&r);
            break;
        case DW_CFA_restore_extended:
        case DW_CFA_undefined:
        case DW_CFA_same_value:
        case DW_CFA_def_cfa_register:
            reg(&r);
            break;
        case DW_CFA_def_cfa_offset:
        case DW_CFA_def_cfa_offset_sf:
        case DW_CFA_GNU_args_size:
            leb(&r);
            break;
        case DW_CFA_def_cfa_expression:
            skip(&r, leb(&r));
            break;
        case DW_CFA_expression:
        case DW_CFA_val_expression:
            reg(&r);
            skip(&r, leb(&r));
            break;
        default:
            return -EBADMSG;
        }
    }
    return r.bad ? -EBADMSG : 0;
}

/* The CIE's FDE pointer size: in .eh_frame from its augmentation ("zR",
 * "zPLR", ...); in .debug_frame an address, addr_size bytes (libdw refuses
 * a version 4 CIE that says otherwise). */
static int cie_info_of(const Dwarf_CIE *cie, Dwarf_Off offset, size_t addr_size,
                       struct cie_info *ret)
{
    struct reader r = {.p = cie->augmentation_data,
                       .end = cie->augmentation_data + cie->augmentation_data_size};
    const char *a = cie->augmentation;

    *ret = (struct cie_info){.offset = offset, .ptr_size = addr_size, .has_z = a[0] == 'z'};
    for (a += ret->has_z; *a && !r.bad; a++) {
        uint8_t enc;

        switch (*a) {
        case 'R':
        case 'P':
            if (r.p >= r.end)
                return -EBADMSG;
            enc = *r.p++;
            if (!pointer_size(enc))
                return -EBADMSG;
            if (*a == 'R')
                ret->ptr_size = pointer_size(enc);
            else
                skip(&r, pointer_size(enc)); /* the personality routine */
            break;
        case 'L':
            skip(&r, 1);
            break;
        case 'S':
        case 'B':
            break;
        default:
            return -EBADMSG; /* libdw would not read its FDEs either */
        }
    }
    return r.bad ? -EBADMSG : 0;
}

/* lld 15 and later type .eh_frame as the x86-64 ABI says (libLLVM-15 is
 * linked so); other linkers as PROGBITS. */
static bool cfi_section_type(const GElf_Shdr *sh, bool eh)
{
    return sh->sh_type == SHT_PROGBITS || (eh && sh->sh_type == SHT_X86_64_UNWIND);
}

static Elf_Data *cfi_section(Elf *elf, const char *section, bool eh)
{
    size_t shstrndx;
    Elf_Scn *scn = NULL;

    if (elf_getshdrstrndx(elf, &shstrndx) < 0)
        return NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        const char *name;

        if (!gelf_getshdr(scn, &sh) || !cfi_section_type(&sh, eh))
            continue;
        name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (name && strcmp(name, section) == 0)
            return elf_rawdata(scn, NULL);
    }
    return NULL;
}

/* cies are in section order, so by offset: a file of many CIEs costs a
 * search per FDE, never a scan. */
static const struct cie_info *find_cie(const struct cie_info *cies, size_t n, Dwarf_Off offset)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (cies[mid].offset == offset)
            return &cies[mid];
        if (cies[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* An FDE's first address, in .debug_frame absolute: the FDE starts there. */
static int add_fde_start(struct fde_starts *starts, const Dwarf_FDE *fde, size_t ptr_size)
{
    uint64_t pc = 0;

    if (starts->n >= CFI_FDES_MAX)
        return -E2BIG;
    if ((size_t)(fde->end - fde->start) < ptr_size || ptr_size > sizeof(pc))
        return -EBADMSG;
    if (starts->n == starts->cap) {
        uint64_t *grown = reallocarray(
            starts->pcs, starts->cap = starts->cap ? starts->cap * 2 : 64, sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        starts->pcs = grown;
    }
    memcpy(&pc, fde->start, ptr_size); /* little-endian, as x86-64 is */
    starts->pcs[starts->n++] = pc;
    return 0;
}

/* Check the CFI section named section of elf (.eh_frame when eh); list
 * where its FDEs start into starts, unless NULL. */
static int check_section(Elf *elf, const char *section, bool eh, struct unwind_budget *budget,
                         struct fde_starts *starts)
{
    _cleanup_free_ struct cie_info *cies = NULL;
    const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
    Elf_Data *data = ident ? cfi_section(elf, section, eh) : NULL;
    size_t ncies = 0, cap = 0, addr_size;
    Dwarf_Off offset = 0, next;
    uint64_t work = 0;

    if (!data || !data->d_buf)
        return -ENODATA;
    if (data->d_size > CFI_SECTION_MAX)
        return -E2BIG;
    addr_size = ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
    for (;;) {
        Dwarf_CFI_Entry e;
        uint64_t ops = 0;
        int r = dwarf_next_cfi(ident, data, eh, offset, &next, &e);

        if (r == 1)
            return 0;
        if (r < 0)
            return -EBADMSG;
        r = unwind_budget_check(budget);
        if (r < 0)
            return r;
        if (dwarf_cfi_cie_p(&e)) {
            if (ncies >= CFI_CIES_MAX)
                return -E2BIG;
            if (ncies == cap) {
                struct cie_info *grown =
                    reallocarray(cies, cap = cap ? cap * 2 : 16, sizeof(*cies));
                if (!grown)
                    return -ENOMEM;
                cies = grown;
            }
            r = cie_info_of(&e.cie, offset, addr_size, &cies[ncies]);
            if (r < 0)
                return r;
            r = scan(e.cie.initial_instructions, e.cie.initial_instructions_end, 8, &ops);
            cies[ncies++].ops = ops;
            /* its instructions are counted with each FDE's rows */
            ops = 0;
        } else {
            const struct cie_info *cie = find_cie(cies, ncies, e.fde.CIE_pointer);
            struct reader rd = {.p = e.fde.start, .end = e.fde.end};

            if (!cie)
                return -EBADMSG;
            if (starts) {
                r = add_fde_start(starts, &e.fde, cie->ptr_size);
                if (r < 0)
                    return r;
            }
            skip(&rd, 2 * cie->ptr_size); /* initial location, range */
            if (cie->has_z)
                skip(&rd, leb(&rd));
            if (rd.bad)
                return -EBADMSG;
            r = scan(rd.p, rd.end, cie->ptr_size, &ops);
            /* up to one row per instruction, each evaluated from the CIE's
             * instructions and the FDE's start */
            ops = (1 + ops) * (1 + cie->ops + ops);
        }
        if (r < 0)
            return r;
        work += 1 + ops; /* an entry without instructions is still looked up */
        if (work > CFI_FILE_WORK_MAX)
            return -E2BIG;
        offset = next;
    }
}

int cfi_check(Elf *elf, struct unwind_budget *budget)
{
    return check_section(elf, ".eh_frame", true, budget, NULL);
}

int cfi_check_debug_frame(Elf *elf, struct unwind_budget *budget, uint64_t **ret, size_t *n)
{
    struct fde_starts starts = {0};
    int r = check_section(elf, ".debug_frame", false, budget, &starts);

    if (r < 0) {
        free(starts.pcs);
        return r;
    }
    *ret = starts.pcs;
    *n = starts.n;
    return 0;
}
