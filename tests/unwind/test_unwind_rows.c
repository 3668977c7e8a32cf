/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Unwind rows against binutils: every row `readelf --debug-dump=frames-interp`
 * prints for a file (where the CFA is, where rbp and the return address were
 * saved) must be what the row covering that address says. Run over the
 * symbolizer's fixture programs (gcc and lld, PIE and not, C++), Debian's
 * own libc and python3, as installed, and a program whose own code's only
 * CFI is .debug_frame. With --same-rows A B: B, A stripped with its
 * .debug_frame in a separate debug file, has A's very rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "macro.h"
#include "unwind_rows.h"

/* The rows of the ELF file open on fd, its debug file looked for as this
 * process sees path (NULL: not looked for). */
static int derive_fd(int fd, const char *path, struct unwind_rows *ret)
{
    struct unwind_source src;
    int r = unwind_source_open(fd, getpid(), path, &src);

    if (r < 0)
        return r;
    r = unwind_rows_derive(src.elf, src.debug, NULL, ret);
    unwind_source_close(&src);
    return r;
}

/* The row covering pc, or NULL. */
static const struct offcpu_unwind_row *row_at(const struct unwind_rows *r, uint64_t pc)
{
    size_t lo = 0, hi = r->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (r->rows[mid].pc <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &r->rows[lo - 1] : NULL;
}

/* Column of name in a "   LOC           CFA      rbx   rbp   ra" header, or -1. */
static int column(char *const *cols, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(cols[i], name) == 0)
            return i;
    return -1;
}

static int split(char *line, char **cols, int max)
{
    int n = 0;

    for (char *save = NULL, *p = strtok_r(line, " \t\n", &save); p && n < max;
         p = strtok_r(NULL, " \t\n", &save))
        cols[n++] = p;
    return n;
}

/* Does our row say what readelf's does? Returns a reason, or NULL. */
static const char *differs(const struct offcpu_unwind_row *row, const char *cfa, const char *rbp,
                           const char *ra)
{
    long off;

    if (!row)
        return "no row";
    if (strcmp(ra, "u") == 0)
        return row->cfa == OFFCPU_CFA_ENTRY ? NULL : "return address undefined: not an entry";
    if (strcmp(ra, "c-8") != 0)
        return row->cfa == OFFCPU_CFA_UNKNOWN ? NULL : "odd return address rule followed";
    if (strcmp(cfa, "exp") == 0)
        return row->cfa == OFFCPU_CFA_PLT || row->cfa == OFFCPU_CFA_UNKNOWN ? NULL
                                                                            : "expression followed";
    if (sscanf(cfa, "rsp+%ld", &off) == 1) {
        if (row->cfa != OFFCPU_CFA_RSP || row->cfa_off != off)
            return "CFA not rsp + offset";
    } else if (sscanf(cfa, "rbp+%ld", &off) == 1) {
        if (row->cfa != OFFCPU_CFA_RBP || row->cfa_off != off)
            return "CFA not rbp + offset";
    } else {
        return row->cfa == OFFCPU_CFA_UNKNOWN ? NULL : "other CFA rule followed";
    }
    if (!rbp || strcmp(rbp, "u") == 0)
        return row->rbp == OFFCPU_RBP_SAME ? NULL : "rbp not unchanged";
    if (sscanf(rbp, "c%ld", &off) == 1)
        return row->rbp == OFFCPU_RBP_SAVED && row->rbp_off == off ? NULL : "rbp not saved there";
    return row->rbp == OFFCPU_RBP_UNKNOWN ? NULL : "odd rbp rule followed";
}

/* Rows of signal frames seen (libc's __restore_rt has one). */
static long signal_rows;

/* Compares every row readelf prints for path; returns the number compared. */
static long compare_with_readelf(const char *path, const struct unwind_rows *rows)
{
    char cmd[4096], line[4096], header[4096], *cols[64], sig_cies[256][16];
    int ncols = 0, cfa_col = -1, rbp_col = -1, ra_col = -1, nsig = 0;
    long compared = 0, bad = 0;
    bool in_fde = false, signal_fde = false;
    uint64_t fde_end = 0;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
    p = popen(cmd, "r");
    if (!p)
        return -errno;
    while (fgets(line, sizeof(line), p)) {
        char copy[sizeof(line)], *f[64];
        int n;

        memcpy(copy, line, sizeof(line));
        n = split(copy, f, 64);
        if (n >= 5 && strcmp(f[3], "CIE") == 0) {
            /* a signal frame's CIE ("zRS"): its frames are not calls */
            if (strchr(f[4], 'S') && nsig < 256)
                snprintf(sig_cies[nsig++], sizeof(sig_cies[0]), "cie=%s", f[0]);
            in_fde = false; /* its initial rows are at no address */
            ncols = 0;
        } else if (n >= 5 && strcmp(f[3], "FDE") == 0) {
            in_fde = true;
            signal_fde = false;
            /* pc=START..END; a row at or past END (a PLT's, of no entries) is not its */
            fde_end = n >= 6 && strstr(f[5], "..") ? strtoull(strstr(f[5], "..") + 2, NULL, 16) : 0;
            for (int i = 0; i < nsig; i++)
                signal_fde |= strcmp(f[4], sig_cies[i]) == 0;
            ncols = 0;
        } else if (n >= 2 && strcmp(f[0], "LOC") == 0) {
            /* the header names the columns: LOC CFA reg... ra */
            memcpy(header, line, sizeof(header));
            ncols = split(header, cols, 64);
            cfa_col = column(cols, ncols, "CFA");
            rbp_col = column(cols, ncols, "rbp");
            ra_col = column(cols, ncols, "ra");
        } else if (ncols && n == ncols && cfa_col == 1 && ra_col > 0 && in_fde) {
            uint64_t loc = strtoull(f[0], NULL, 16);
            const struct offcpu_unwind_row *row = row_at(rows, loc);
            const char *why;

            if (loc >= fde_end)
                continue;
            if (signal_fde) {
                /* the kernel's frame as glibc describes it: readelf prints "exp" */
                why = row && row->cfa == OFFCPU_CFA_SIGNAL && row->rbp == OFFCPU_RBP_SAVED
                          ? NULL
                          : "signal frame not followed";
                signal_rows += !why;
            } else {
                why = differs(row, f[cfa_col], rbp_col > 0 ? f[rbp_col] : NULL, f[ra_col]);
            }

            compared++;
            if (why && bad++ < 5)
                CHECK(false, "%s at %#" PRIx64 ": %s (readelf: CFA %s, rbp %s, ra %s)", path, loc,
                      why, f[cfa_col], rbp_col > 0 ? f[rbp_col] : "-", f[ra_col]);
        }
    }
    pclose(p);
    return bad ? -EBADMSG : compared;
}

static void check_file(const char *path)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct unwind_rows rows;
    bool sorted = true;
    long compared;
    int r;

    r = fd < 0 ? -errno : derive_fd(fd, NULL, &rows);
    CHECK(r == 0, "%s: rows derived (%s)", path, r < 0 ? strerror(-r) : "ok");
    if (r < 0)
        return;
    for (size_t i = 1; i < rows.n; i++)
        sorted &= rows.rows[i].pc > rows.rows[i - 1].pc;
    CHECK(sorted, "%s: rows sorted by address, none covering the same", path);
    compared = compare_with_readelf(path, &rows);
    CHECK(compared > 0, "%s: %zu rows, %ld of readelf's rows agree", path, rows.n, compared);
    CHECK(rows.nsegs > 0, "%s: its executable segment is known", path);
    unwind_rows_done(&rows);
}

/* The rows of path, its debug file looked for as this process sees it. */
static int rows_of(const char *path, struct unwind_rows *ret)
{
    _cleanup_free_ char *abs = realpath(path, NULL);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || !abs)
        return -errno;
    return derive_fd(fd, abs, ret);
}

static void check_same_rows(const char *a, const char *b)
{
    struct unwind_rows ra = {0}, rb = {0};
    int r = rows_of(a, &ra), s = rows_of(b, &rb);

    CHECK(r == 0 && s == 0, "rows of %s (%s) and %s (%s)", a, strerror(-r), b, strerror(-s));
    CHECK(ra.n > 0 && ra.n == rb.n && memcmp(ra.rows, rb.rows, ra.n * sizeof(*ra.rows)) == 0,
          "%s: the same %zu rows as %s's %zu", b, rb.n, a, ra.n);
    unwind_rows_done(&ra);
    unwind_rows_done(&rb);
}

int main(int argc, char **argv)
{
    _cleanup_close_ int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    struct unwind_rows rows;
    int r;

    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--same-rows") == 0 && i + 2 < argc) {
            check_same_rows(argv[i + 1], argv[i + 2]);
            i += 2;
        } else {
            check_file(argv[i]);
        }
    CHECK(signal_rows > 0, "%ld rows of signal frames followed (libc's __restore_rt)", signal_rows);
    /* not ELF: a clear error, never rows */
    r = derive_fd(fd, NULL, &rows);
    CHECK(r == -ENOEXEC, "not ELF: %s", strerror(-r));
    return CHECK_EXIT();
}
