/* SPDX-License-Identifier: GPL-2.0-only */
#include "unwind_rows.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "cfi_check.h"
#include "debug_files.h"
#include "eh_frame_hdr.h"
#include "elf_symbols.h"
#include "macro.h"

/* DWARF register numbers of x86-64 */
#define DWARF_RDI 5
#define DWARF_RBP 6
#define DWARF_RSP 7
#define DWARF_RIP 16 /* the return address column */

/* x86-64's: mmap maps whole pages of it. */
#define ELF_PAGE_SIZE 4096

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

/* Where regno was saved, as an offset from rsp ("expression(breg7 N)", which
 * libdw spells call_frame_cfa; breg7 N: the CFA pushed first, as DWARF has it,
 * and left below the address). */
static bool saved_at_rsp(Dwarf_Frame *frame, int regno, int64_t *off)
{
    Dwarf_Op mem[3], *ops;
    size_t nops;
    int reg;

    return dwarf_frame_register(frame, regno, mem, &ops, &nops) == 0 && nops == 2 &&
           ops[0].atom == DW_OP_call_frame_cfa && reg_offset(&ops[1], 1, &reg, off) &&
           reg == DWARF_RSP && *off >= 0 && *off < 4096;
}

/*
 * A signal frame (its CIE's 'S'): libc's __restore_rt, where a handler
 * returns. The kernel's struct rt_sigframe is at rsp, the interrupted
 * registers in its sigcontext; glibc says CFA = *(rsp + N) (the saved rsp),
 * rip at rsp + N + 8 (sigcontext keeps it right after rsp), rbp at rsp + M.
 * Anything else is not followed.
 */
static void signal_frame_rule(Dwarf_Frame *frame, struct offcpu_unwind_row *row)
{
    int64_t sp_at, rip_at, rbp_at;
    Dwarf_Op *ops;
    size_t nops;
    int reg;

    if (dwarf_frame_cfa(frame, &ops, &nops) < 0 || nops != 2 || ops[1].atom != DW_OP_deref ||
        !reg_offset(ops, 1, &reg, &sp_at) || reg != DWARF_RSP || sp_at < 0 || sp_at >= 4096 ||
        !saved_at_rsp(frame, DWARF_RIP, &rip_at) || rip_at != sp_at + 8 ||
        !saved_at_rsp(frame, DWARF_RBP, &rbp_at))
        return;
    row->cfa = OFFCPU_CFA_SIGNAL;
    row->cfa_off = (int32_t)sp_at;
    row->rbp = OFFCPU_RBP_SAVED;
    row->rbp_off = (int16_t)rbp_at;
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
    if (dwarf_frame_info(frame, NULL, NULL, &signal) < 0)
        return;
    /* a signal frame's "return address" is the interrupted pc, with every
     * register in the signal frame: not a call */
    if (signal) {
        signal_frame_rule(frame, row);
        return;
    }
    if (!return_address_known(frame, &undefined, &in_rdi))
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
static int fde_rows(Dwarf_CFI *cfi, struct builder *b, struct unwind_budget *budget, uint64_t start,
                    uint64_t *end)
{
    uint64_t pc = start;

    *end = start;
    for (;;) {
        struct offcpu_unwind_row row = {0};
        Dwarf_Addr from, to;
        Dwarf_Frame *frame;
        int r = unwind_budget_check(budget);

        if (r < 0)
            return r;
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

/* Executable segments as the kernel maps them: from the page their first
 * byte is in. lld starts a segment mid-page (file offset 0x760 at address
 * 0x1760), where a mapping's offset is the page's (0). */
static int exec_segments(Elf *elf, struct unwind_rows *r)
{
    size_t nphdr;

    if (elf_getphdrnum(elf, &nphdr) < 0)
        return -ENODATA;
    for (size_t i = 0; i < nphdr && r->nsegs < UNWIND_SEGMENTS_MAX; i++) {
        uint64_t head;
        GElf_Phdr ph;

        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
            continue;
        head = ph.p_offset % ELF_PAGE_SIZE;
        if (ph.p_vaddr % ELF_PAGE_SIZE != head || ph.p_vaddr < head)
            continue; /* no loader maps that */
        r->segs[r->nsegs++] = (struct unwind_segment){
            .offset = ph.p_offset - head, .vaddr = ph.p_vaddr - head, .size = ph.p_filesz + head};
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

static Elf_Scn *find_section(Elf *elf, const char *name)
{
    Elf_Scn *scn = NULL;
    size_t shstrndx;

    if (elf_getshdrstrndx(elf, &shstrndx) < 0)
        return NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        const char *s;
        GElf_Shdr sh;

        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
            (s = elf_strptr(elf, shstrndx, sh.sh_name)) && strcmp(s, name) == 0)
            return scn;
    }
    return NULL;
}

/*
 * A file's .debug_frame, alone in an ELF image of its own for libdw:
 * dwarf_begin_elf reads, and inflates, every debug section it knows, and a
 * file's .debug_info can be hundreds of MiB (or a small zip bomb).
 */
struct debug_frame {
    char *image;
    Elf *elf;
    Dwarf *dwarf;
    uint64_t *starts; /* where its FDEs begin */
    size_t n;
};

static void debug_frame_done(struct debug_frame *d)
{
    if (d->dwarf)
        dwarf_end(d->dwarf);
    if (d->elf)
        elf_end(d->elf);
    free(d->image);
    free(d->starts);
    *d = (struct debug_frame){0};
}

/* The section's bytes, inflated if compressed (as Debian's debug files
 * are), within the size cfi_check allows. */
static Elf_Data *debug_frame_bytes(Elf *elf)
{
    Elf_Scn *scn = find_section(elf, ".debug_frame");
    GElf_Shdr sh;

    if (!scn || !gelf_getshdr(scn, &sh))
        return NULL;
    if (sh.sh_flags & SHF_COMPRESSED) {
        GElf_Chdr ch;

        /* libelf allocates what the header claims before inflating */
        if (!gelf_getchdr(scn, &ch) || ch.ch_size > CFI_SECTION_MAX || elf_compress(scn, 0, 0) < 0)
            return NULL;
    }
    return elf_getdata(scn, NULL);
}

/* An ELF header, .debug_frame's bytes, the section names, three section
 * headers: all libdw needs to read the one section. */
static int debug_frame_image(Elf *elf, const Elf_Data *data, struct debug_frame *d)
{
    static const char names[] = "\0.debug_frame\0.shstrtab";
    size_t names_at = sizeof(Elf64_Ehdr) + data->d_size,
           shdrs_at = (names_at + sizeof(names) + 7) & ~(size_t)7;
    Elf64_Shdr *sh;
    Elf64_Ehdr *eh;
    GElf_Ehdr orig;

    if (!gelf_getehdr(elf, &orig) || orig.e_ident[EI_CLASS] != ELFCLASS64)
        return -ENODATA; /* x86-64 only */
    if (data->d_size > CFI_SECTION_MAX)
        return -E2BIG;
    d->image = calloc(1, shdrs_at + 3 * sizeof(*sh));
    if (!d->image)
        return -ENOMEM;
    eh = (Elf64_Ehdr *)d->image;
    /* the machine chooses libdw's initial register rules */
    *eh = (Elf64_Ehdr){.e_type = ET_DYN,
                       .e_machine = orig.e_machine,
                       .e_version = EV_CURRENT,
                       .e_shoff = shdrs_at,
                       .e_ehsize = sizeof(*eh),
                       .e_shentsize = sizeof(*sh),
                       .e_shnum = 3,
                       .e_shstrndx = 2};
    memcpy(eh->e_ident, orig.e_ident, EI_NIDENT);
    if (data->d_size)
        memcpy(d->image + sizeof(*eh), data->d_buf, data->d_size);
    memcpy(d->image + names_at, names, sizeof(names));
    sh = (Elf64_Shdr *)(d->image + shdrs_at);
    sh[1] = (Elf64_Shdr){.sh_name = 1,
                         .sh_type = SHT_PROGBITS,
                         .sh_offset = sizeof(*eh),
                         .sh_size = data->d_size,
                         .sh_addralign = 1};
    sh[2] = (Elf64_Shdr){.sh_name = 14,
                         .sh_type = SHT_STRTAB,
                         .sh_offset = names_at,
                         .sh_size = sizeof(names),
                         .sh_addralign = 1};
    d->elf = elf_memory(d->image, shdrs_at + 3 * sizeof(*sh));
    return d->elf ? 0 : -ENOMEM;
}

/* The CFI of elf's .debug_frame, checked first like .eh_frame's. */
static int debug_frame_open(Elf *elf, struct unwind_budget *budget, struct debug_frame *d)
{
    Elf_Data *data = debug_frame_bytes(elf);
    int r;

    *d = (struct debug_frame){0};
    if (!data || !data->d_buf)
        return -ENODATA;
    r = debug_frame_image(elf, data, d);
    if (r >= 0)
        r = cfi_check_debug_frame(d->elf, budget, &d->starts, &d->n);
    if (r >= 0 && !(d->dwarf = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL)))
        r = -ENODATA;
    if (r >= 0 && !dwarf_getcfi(d->dwarf))
        r = -ENODATA;
    if (r < 0)
        debug_frame_done(d);
    return r;
}

/* Where an FDE begins, and whose CFI says it. */
struct fde_start {
    uint64_t pc;
    unsigned source; /* lower first: .eh_frame's, then .debug_frame's */
};

static int compare_fde_start(const void *a, const void *b)
{
    const struct fde_start *x = a, *y = b;

    if (x->pc != y->pc)
        return x->pc < y->pc ? -1 : 1;
    return x->source < y->source ? -1 : x->source > y->source;
}

static bool in_exec_segment(const struct unwind_rows *r, uint64_t pc)
{
    for (size_t i = 0; i < r->nsegs; i++)
        if (pc >= r->segs[i].vaddr && pc - r->segs[i].vaddr < r->segs[i].size)
            return true;
    return false;
}

/* Every source's FDE starts, sorted; those outside the code left out (the
 * linker leaves .debug_frame's FDEs of discarded functions at 0). */
static int merge_starts(const struct unwind_rows *r, uint64_t *const starts[], const size_t n[],
                        size_t nsources, struct fde_start **ret, size_t *nret)
{
    struct fde_start *all;
    size_t total = 0, k = 0;

    for (size_t s = 0; s < nsources; s++)
        total += n[s];
    all = calloc(total ? total : 1, sizeof(*all));
    if (!all)
        return -ENOMEM;
    for (size_t s = 0; s < nsources; s++)
        for (size_t i = 0; i < n[s]; i++)
            if (in_exec_segment(r, starts[s][i]))
                all[k++] = (struct fde_start){.pc = starts[s][i], .source = (unsigned)s};
    qsort(all, k, sizeof(*all), compare_fde_start);
    *ret = all;
    *nret = k;
    return 0;
}

/* The rows of FDEs starting at starts, each from its source's CFI; whether
 * some came from a source other than the first into *later. */
static int build_rows(Dwarf_CFI *const cfis[], const struct fde_start *starts, size_t n,
                      struct unwind_budget *budget, struct builder *b, bool *later)
{
    static const struct offcpu_unwind_row no_cfi = {.cfa = OFFCPU_CFA_NONE};
    uint64_t covered = 0;
    int r = 0;

    for (size_t i = 0; i < n && r >= 0; i++) {
        uint64_t end = 0;
        size_t before;

        if (starts[i].pc < covered)
            continue; /* overlapping FDEs: the first says it, .eh_frame's first */
        /* between FDEs lies code without CFI */
        if (covered && starts[i].pc > covered)
            r = push_row(b, covered, &no_cfi);
        before = b->n;
        if (r >= 0)
            r = fde_rows(cfis[starts[i].source], b, budget, starts[i].pc, &end);
        *later |= starts[i].source > 0 && b->n > before;
        if (end > covered)
            covered = end;
    }
    if (r >= 0 && covered)
        r = push_row(b, covered, &no_cfi);
    return r;
}

/* .eh_frame's FDE starts and CFI, if elf has a usable one: NULL without. */
static int eh_frame_open(Elf *elf, struct unwind_budget *budget, uint64_t **starts, size_t *n,
                         Dwarf_CFI **ret)
{
    int r = eh_frame_hdr_fde_starts(elf, starts, n);

    *ret = NULL;
    /* libdw trusts what it evaluates: only what is bounded gets to it */
    if (r >= 0)
        r = cfi_check(elf, budget);
    if (r >= 0 && !(*ret = dwarf_getcfi_elf(elf)))
        r = -ENODATA;
    if (r < 0) {
        free(*starts);
        *starts = NULL;
        *n = 0;
    }
    return r == -ENODATA ? 0 : r;
}

int unwind_rows_derive(Elf *elf, Elf *debug, struct unwind_budget *budget, struct unwind_rows *ret)
{
    _cleanup_free_ uint64_t *eh_starts = NULL;
    _cleanup_free_ struct fde_start *starts = NULL;
    struct debug_frame df = {0};
    Dwarf_CFI *cfis[2] = {NULL, NULL};
    struct builder b = {0};
    size_t n_eh = 0, n = 0;
    int r;

    *ret = (struct unwind_rows){0};
    r = exec_segments(elf, ret);
    if (r < 0)
        return r;
    r = eh_frame_open(elf, budget, &eh_starts, &n_eh, &cfis[0]);
    if (r < 0)
        return r;
    /* what .eh_frame leaves out (all, when a program was built without
     * unwind tables), the file's .debug_frame may say, or its debug file's;
     * the same build's, so at the same addresses */
    r = debug_frame_open(elf, budget, &df);
    if (r == -ENODATA && debug)
        r = debug_frame_open(debug, budget, &df);
    /* one that cannot be read takes nothing from .eh_frame's rows; without
     * those, its error is the file's; a budget spent is the file's in any
     * case */
    if (r >= 0)
        cfis[1] = dwarf_getcfi(df.dwarf);
    else if (r != -ETIME && r != -ECANCELED && (n_eh || r == -ENODATA))
        r = 0;
    if (r >= 0)
        r = merge_starts(ret, (uint64_t *const[]){eh_starts, df.starts},
                         (const size_t[]){n_eh, df.n}, 2, &starts, &n);
    if (r >= 0)
        r = build_rows(cfis, starts, n, budget, &b, &ret->debug_frame);
    if (cfis[0])
        dwarf_cfi_end(cfis[0]);
    debug_frame_done(&df);
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

/* The debug file of elf, checked to be its own, if it is needed: only
 * when elf has no .debug_frame (a debug file's copy of .eh_frame is
 * empty). */
static Elf *debug_file_of(Elf *elf, pid_t pid, const char *path, int *fd)
{
    struct elf_debug_ref ref;
    Elf *debug;

    *fd = -EBADF;
    if (!path || find_section(elf, ".debug_frame") || elf_debug_ref_read(elf, &ref) < 0)
        return NULL;
    *fd = debug_file_open(pid, path, &ref);
    if (*fd < 0)
        return NULL;
    /* ELF_C_READ: a debug file truncated while read fails a read instead of
     * faulting on a mapping */
    debug = elf_begin(*fd, ELF_C_READ, NULL);
    if (debug && elf_debug_ref_check(&ref, debug, *fd) == 0)
        return debug;
    elf_end(debug);
    return NULL;
}

int unwind_source_open(int fd, pid_t pid, const char *path, struct unwind_source *ret)
{
    *ret = (struct unwind_source){.debug_fd = -EBADF};
    elf_version(EV_CURRENT);
    ret->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!ret->elf)
        return -ENOEXEC;
    if (elf_kind(ret->elf) != ELF_K_ELF) {
        unwind_source_close(ret);
        return -ENOEXEC;
    }
    ret->debug = debug_file_of(ret->elf, pid, path, &ret->debug_fd);
    return 0;
}

void unwind_source_close(struct unwind_source *s)
{
    elf_end(s->debug);
    elf_end(s->elf);
    if (s->debug_fd >= 0)
        close(s->debug_fd);
    *s = (struct unwind_source){.debug_fd = -EBADF};
}

void unwind_rows_done(struct unwind_rows *r)
{
    free(r->rows);
    *r = (struct unwind_rows){0};
}
