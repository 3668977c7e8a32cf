/* SPDX-License-Identifier: GPL-2.0-only */
#include "unwind_rows.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cfi_check.h"
#include "eh_frame_hdr.h"
#include "macro.h"

/* DWARF register numbers of x86-64 */
#define DWARF_RDI 5
#define DWARF_RBP 6
#define DWARF_RSP 7
#define DWARF_RIP 16 /* the return address column */

/* Bounds the BPF side relies on: it reads at CFA - 8 and CFA + rbp_off. */
#define CFA_OFF_MAX (1 << 20)

struct builder {
    struct offcpu_unwind_row *rows;
    size_t n, cap;
};

/* A single "register + offset" expression, as libdw gives DW_CFA_def_cfa. */
static bool reg_offset(const Dwarf_Op *ops, size_t nops, int *reg, int64_t *off)
{
    if (nops != 1)
        return false;
    if (ops[0].atom == DW_OP_bregx) {
        *reg = (int)ops[0].number;
        *off = (int64_t)ops[0].number2;
        return true;
    }
    if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
        *reg = ops[0].atom - DW_OP_breg0;
        *off = (int64_t)ops[0].number;
        return true;
    }
    return false;
}

/*
 * The CFA expression of a PLT section, as binutils writes it: rsp + N while
 * the entry's jump runs, rsp + N + 8 once its push (at pc & 15 == K) has run:
 * breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl; plus
 */
static bool plt_expression(const Dwarf_Op *ops, size_t nops, struct offcpu_unwind_row *row)
{
    static const uint8_t shape[] = {DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
                                    DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,   DW_OP_plus};

    if (nops != ARRAY_SIZE(shape))
        return false;
    for (size_t i = 0; i < nops; i++)
        if (i != 4 && ops[i].atom != shape[i])
            return false;
    if (ops[1].number != 0 || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 ||
        (int64_t)ops[0].number < 8 || (int64_t)ops[0].number > 64)
        return false;
    row->cfa = OFFCPU_CFA_PLT;
    row->cfa_off = (int32_t)ops[0].number;
    row->plt_push = ops[4].atom - DW_OP_lit0;
    return true;
}

/* Where the caller's value of regno was saved, as an offset from the CFA
 * ("offset(N)", which libdw spells call_frame_cfa [consts N plus |
 * plus_uconst N]). */
static bool saved_at_cfa(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
    if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
        return false;
    if (nops == 1) {
        *off = 0;
        return true;
    }
    if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
        *off = (int64_t)ops[1].number;
        return true;
    }
    if (nops == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus) {
        *off = (int64_t)ops[1].number;
        return true;
    }
    return false;
}

/* The return address must be where every x86-64 call puts it, CFA - 8, or
 * (vfork) in rdi: *in_rdi. */
static bool return_address_known(Dwarf_Frame *frame, bool *undefined, bool *in_rdi)
{
    Dwarf_Op mem[3], *ops;
    size_t nops;
    int64_t off;

    *undefined = false;
    *in_rdi = false;
    if (dwarf_frame_register(frame, DWARF_RIP, mem, &ops, &nops) < 0)
        return false;
    if (nops == 1 && ops[0].atom == DW_OP_regx && ops[0].number == DWARF_RDI) {
        *in_rdi = true;
        return true;
    }
    if (nops == 0 && ops == mem) {
        /* glibc's _start and clone3 say so: the outermost frame */
        *undefined = true;
        return true;
    }
    return saved_at_cfa(ops, nops, &off) && off == -8;
}

static void rbp_rule(Dwarf_Frame *frame, struct offcpu_unwind_row *row)
{
    Dwarf_Op mem[3], *ops;
    size_t nops;
    int64_t off;

    row->rbp = OFFCPU_RBP_UNKNOWN;
    if (dwarf_frame_register(frame, DWARF_RBP, mem, &ops, &nops) < 0)
        return;
    if (nops == 0 && ops == NULL) {
        row->rbp = OFFCPU_RBP_SAME;
    } else if (saved_at_cfa(ops, nops, &off) && off < 0 && off >= -CFA_OFF_MAX / 2 &&
               off >= INT16_MIN) {
        row->rbp = OFFCPU_RBP_SAVED;
        row->rbp_off = (int16_t)off;
    }
}

/* What the CFI of one row says, as the BPF walk can follow it. */
static void row_of_frame(Dwarf_Frame *frame, struct offcpu_unwind_row *row)
{
    bool signal = false, undefined, in_rdi;
    Dwarf_Op *ops;
    size_t nops;
    int64_t off;
    int reg;

    row->cfa = OFFCPU_CFA_UNKNOWN;
    /* a signal frame's "return address" is the interrupted pc, with every
     * register in the signal frame: not a call */
    if (dwarf_frame_info(frame, NULL, NULL, &signal) < 0 || signal ||
        !return_address_known(frame, &undefined, &in_rdi))
        return;
    if (undefined) {
        row->cfa = OFFCPU_CFA_ENTRY;
        return;
    }
    if (dwarf_frame_cfa(frame, &ops, &nops) < 0)
        return;
    /* the CFA is above the return address, unless that is in rdi */
    if (reg_offset(ops, nops, &reg, &off) && (reg == DWARF_RSP || reg == DWARF_RBP) &&
        off >= (in_rdi ? 0 : 8) && off < CFA_OFF_MAX) {
        row->cfa = reg == DWARF_RSP ? OFFCPU_CFA_RSP : OFFCPU_CFA_RBP;
        row->cfa_off = (int32_t)off;
    } else if (in_rdi || !plt_expression(ops, nops, row)) {
        return;
    }
    row->ra = in_rdi ? OFFCPU_RA_IN_RDI : OFFCPU_RA_BELOW_CFA;
    rbp_rule(frame, row);
}

static bool same_rule(const struct offcpu_unwind_row *a, const struct offcpu_unwind_row *b)
{
    return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->rbp == b->rbp &&
           a->rbp_off == b->rbp_off && a->plt_push == b->plt_push && a->ra == b->ra;
}

/* Append the row starting at pc, unless its predecessor says the same. */
static int push_row(struct builder *b, uint64_t pc, const struct offcpu_unwind_row *rule)
{
    struct offcpu_unwind_row *row;

    if (pc > UINT32_MAX)
        return -E2BIG;
    if (b->n && same_rule(&b->rows[b->n - 1], rule))
        return 0;
    if (b->n >= UNWIND_ROWS_PER_FILE_MAX)
        return -E2BIG;
    if (array_reserve(&b->rows, &b->cap, b->n + 1, sizeof(*b->rows), 1024) < 0)
        return -ENOMEM;
    row = &b->rows[b->n++];
    *row = *rule;
    row->pc = (uint32_t)pc;
    return 0;
}

/* The rows of one FDE, from start on; *end is where it ends. */
static int fde_rows(Dwarf_CFI *cfi, struct builder *b, uint64_t start, uint64_t *end)
{
    uint64_t pc = start;

    *end = start;
    for (;;) {
        struct offcpu_unwind_row row = {0};
        Dwarf_Addr from, to;
        Dwarf_Frame *frame;
        int r;

        /* the FDE ends where no frame starts at its last row's end (or the
         * next FDE begins there: it is visited again, harmlessly) */
        if (dwarf_cfi_addrframe(cfi, pc, &frame) < 0)
            return 0;
        if (dwarf_frame_info(frame, &from, &to, NULL) < 0 || to <= pc || from > pc) {
            free(frame);
            return 0;
        }
        row_of_frame(frame, &row);
        free(frame);
        r = push_row(b, pc, &row);
        if (r < 0)
            return r;
        pc = *end = to;
    }
}

static int exec_segments(Elf *elf, struct unwind_rows *r)
{
    size_t nphdr;

    if (elf_getphdrnum(elf, &nphdr) < 0)
        return -ENODATA;
    for (size_t i = 0; i < nphdr && r->nsegs < UNWIND_SEGMENTS_MAX; i++) {
        GElf_Phdr ph;

        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
            r->segs[r->nsegs++] = (struct unwind_segment){
                .offset = ph.p_offset, .vaddr = ph.p_vaddr, .size = ph.p_filesz};
    }
    return r->nsegs ? 0 : -ENODATA;
}

int unwind_rows_vaddr(const struct unwind_rows *r, uint64_t offset, uint64_t *ret)
{
    for (size_t i = 0; i < r->nsegs; i++)
        if (offset >= r->segs[i].offset && offset - r->segs[i].offset < r->segs[i].size) {
            *ret = offset - r->segs[i].offset + r->segs[i].vaddr;
            return 0;
        }
    return -ENOENT;
}

int unwind_rows_derive(Elf *elf, struct unwind_rows *ret)
{
    static const struct offcpu_unwind_row no_cfi = {.cfa = OFFCPU_CFA_NONE};
    _cleanup_free_ uint64_t *starts = NULL;
    struct builder b = {0};
    uint64_t covered = 0;
    Dwarf_CFI *cfi;
    size_t n;
    int r;

    *ret = (struct unwind_rows){0};
    r = exec_segments(elf, ret);
    if (r < 0)
        return r;
    r = eh_frame_hdr_fde_starts(elf, &starts, &n);
    if (r < 0)
        return r;
    /* libdw trusts what it evaluates: only what is bounded gets to it */
    r = cfi_check(elf);
    if (r < 0)
        return r;
    cfi = dwarf_getcfi_elf(elf);
    if (!cfi)
        return -ENODATA;
    for (size_t i = 0; i < n && r >= 0; i++) {
        uint64_t end = 0;

        if (starts[i] < covered)
            continue; /* overlapping FDEs: the first says it */
        /* between FDEs lies code without CFI */
        if (covered && starts[i] > covered)
            r = push_row(&b, covered, &no_cfi);
        if (r >= 0)
            r = fde_rows(cfi, &b, starts[i], &end);
        if (end > covered)
            covered = end;
    }
    if (r >= 0 && covered)
        r = push_row(&b, covered, &no_cfi);
    dwarf_cfi_end(cfi);
    if (r >= 0 && b.n == 0)
        r = -ENODATA;
    if (r < 0) {
        free(b.rows);
        return r;
    }
    ret->rows = b.rows;
    ret->n = b.n;
    return 0;
}

int unwind_rows_derive_fd(int fd, struct unwind_rows *ret)
{
    Elf *elf;
    int r;

    elf_version(EV_CURRENT);
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        return -ENOEXEC;
    r = elf_kind(elf) == ELF_K_ELF ? unwind_rows_derive(elf, ret) : -ENOEXEC;
    elf_end(elf);
    return r;
}

void unwind_rows_done(struct unwind_rows *r)
{
    free(r->rows);
    *r = (struct unwind_rows){0};
}
