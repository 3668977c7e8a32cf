/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPython frames named from a live process, against what CPython itself
 * says: Debian's python3 (and builds of 3.12 and 3.13) runs python_code_prog.py, which prints every
 * code object it holds (its address, qualified name, file, first line, and the line of each of its
 * instructions from co_lines()), then waits; this names every instruction of each through
 * python_code_name, reading the process as the daemon does. Run with the interpreter's default
 * location tables and with -X no_debug_ranges (tables without columns), which between them hold
 * every kind of entry; then objects that are no code, a layout not known,
 * the cache across passes, code objects the process changes (as a freed one
 * reused would be), and the process gone.
 *
 * Usage: test_python_code PYTHON 3.1x PROGRAM
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/types.h> /* offcpu.h's types */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "check.h"
#include "macro.h"
#include "offcpu.h"
#include "python_code.h"
#include "python_lines.h"

#define OTHERS_MAX 8

/* the layout of the interpreter under test (enum offcpu_python_layout) */
static uint32_t layout;
/* the passes' clock: one drain a second, as the daemon's default interval */
#define PASS_NS 1000000000LL
static int64_t now_ns;

struct code_seen {
    uint64_t addr;
    int32_t units, firstlineno;
    char *qualname, *file;
    int32_t *lines; /* per instruction; -1: none */
};

struct child {
    pid_t pid;
    int stdin_fd;
    FILE *out;
    uint64_t changed, freed; /* code objects it changes when told */
    struct code_seen *codes;
    size_t n_codes, cap_codes;
    bool entry_codes[16]; /* the location-table entry codes its tables hold */
    uint64_t others[OTHERS_MAX];
    size_t n_others;
};

static char *unhex(const char *s)
{
    size_t n = strlen(s) / 2;
    char *r = malloc(n + 1);

    for (size_t i = 0; r && i < n; i++) {
        unsigned v;

        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            free(r);
            return NULL;
        }
        r[i] = (char)v;
    }
    if (r)
        r[n] = '\0';
    return r;
}

/* "code ADDR UNITS FIRSTLINENO QUALNAME_HEX FILE_HEX LINE..." */
static int parse_code(char *line, struct child *c)
{
    struct code_seen *s;
    char *save = NULL, *tok;

    if (array_reserve(&c->codes, &c->cap_codes, c->n_codes + 1, sizeof(*c->codes), 32) < 0)
        return -ENOMEM;
    s = &c->codes[c->n_codes];
    *s = (struct code_seen){0};
    strtok_r(line, " \n", &save);
    s->addr = strtoull(strtok_r(NULL, " \n", &save), NULL, 10);
    s->units = atoi(strtok_r(NULL, " \n", &save));
    s->firstlineno = atoi(strtok_r(NULL, " \n", &save));
    s->qualname = unhex(strtok_r(NULL, " \n", &save));
    s->file = unhex(strtok_r(NULL, " \n", &save));
    s->lines = calloc(s->units > 0 ? s->units : 1, sizeof(*s->lines));
    if (!s->qualname || !s->file || !s->lines)
        return -ENOMEM;
    for (int32_t i = 0; i < s->units; i++) {
        tok = strtok_r(NULL, " \n", &save);
        if (!tok)
            return -EBADMSG;
        s->lines[i] = atoi(tok);
    }
    c->n_codes++;
    return 0;
}

static int spawn(const char *python, const char *option, const char *program, struct child *c)
{
    _cleanup_free_ char *line = NULL;
    size_t line_size = 0;
    int in[2], outp[2], printed = -1;

    *c = (struct child){.stdin_fd = -1};
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
        return -errno;
    c->pid = fork();
    if (c->pid < 0)
        return -errno;
    if (c->pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(outp[1], STDOUT_FILENO);
        if (option)
            execl(python, python, option, program, (char *)NULL);
        else
            execl(python, python, program, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    c->stdin_fd = in[1];
    c->out = fdopen(outp[0], "r");
    if (!c->out)
        return -errno;
    while (getline(&line, &line_size, c->out) > 0) {
        char *p;
        int r;

        if (strcmp(line, "ready\n") == 0)
            return printed == c->pid ? 0 : -ESRCH;
        if (sscanf(line, "pid %d", &printed) == 1 ||
            sscanf(line, "changed %" SCNu64, &c->changed) == 1 ||
            sscanf(line, "freed %" SCNu64, &c->freed) == 1)
            continue;
        if (strncmp(line, "code ", 5) == 0) {
            r = parse_code(line, c);
            if (r < 0)
                return r;
        } else if (strncmp(line, "entry_codes", 11) == 0) {
            for (p = line + 11; *p && *p != '\n';) {
                long k = strtol(p, &p, 10);

                if (k >= 0 && k < 16)
                    c->entry_codes[k] = true;
            }
        } else if (c->n_others < OTHERS_MAX &&
                   sscanf(line, "other %" SCNu64, &c->others[c->n_others]) == 1) {
            c->n_others++;
        }
    }
    return -EPIPE;
}

static void reap(struct child *c)
{
    int status;

    if (c->stdin_fd >= 0)
        close(c->stdin_fd);
    c->stdin_fd = -1;
    if (c->out)
        fclose(c->out);
    c->out = NULL;
    if (c->pid > 0)
        waitpid(c->pid, &status, 0);
    c->pid = 0;
}

static void child_done(struct child *c)
{
    reap(c);
    for (size_t i = 0; i < c->n_codes; i++) {
        free(c->codes[i].qualname);
        free(c->codes[i].file);
        free(c->codes[i].lines);
    }
    free(c->codes);
}

/* Tell the program to change a code object; returns once it did. */
static int command(struct child *c, const char *cmd)
{
    char line[16];

    if (write(c->stdin_fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
        return -EPIPE;
    if (!fgets(line, sizeof(line), c->out) || strcmp(line, "done\n") != 0)
        return -EPIPE;
    return 0;
}

/* A code object the process changed is seen as changed from the next pass
 * on: named after what is there now. One that is no code object any more
 * names, in the next pass only, the frames recorded since it was checked
 * (they ran it); in the pass after, it is gone. */
static void check_changes(struct python_code_cache *cache, struct child *c, const char *label)
{
    struct python_code_stats before, after;
    struct python_frame_name n;
    int r;

    r = python_code_name(cache, c->pid, layout, c->changed, 0, &n);
    CHECK(r == 0 && strcmp(n.qualname, "<module>") == 0 && strcmp(n.file, "changed.py") == 0,
          "%s: before the change: %d %s %s", label, r, r == 0 ? n.qualname : "-",
          r == 0 ? n.file : "-");
    r = python_code_name(cache, c->pid, layout, c->freed, 0, &n);
    CHECK(r == 0 && strcmp(n.file, "freed.py") == 0, "%s: before it is freed: %d", label, r);

    r = command(c, "rename\n");
    CHECK(r == 0, "%s: the program renamed a code object: %d", label, r);
    r = python_code_name(cache, c->pid, layout, c->changed, 0, &n);
    CHECK(r == 0 && strcmp(n.qualname, "<module>") == 0, "%s: in the same pass, as cached: %s",
          label, r == 0 ? n.qualname : "-");
    python_code_begin_pass(cache, now_ns += PASS_NS);
    r = python_code_name(cache, c->pid, layout, c->changed, 0, &n);
    CHECK(r == 0 && strcmp(n.qualname, "renamed_λ") == 0 && strcmp(n.file, "changed.py") == 0,
          "%s: in the next pass, the new name: %d %s", label, r, r == 0 ? n.qualname : "-");

    r = python_code_name(cache, c->pid, layout, c->freed, 0, &n);
    CHECK(r == 0 && strcmp(n.file, "freed.py") == 0, "%s: checked in this pass: %d", label, r);
    r = command(c, "retype\n");
    CHECK(r == 0, "%s: the program changed a code object's type: %d", label, r);
    python_code_stats(cache, &before);
    python_code_begin_pass(cache, now_ns += PASS_NS);
    r = python_code_name(cache, c->pid, layout, c->freed, 0, &n);
    python_code_stats(cache, &after);
    CHECK(r == 0 && strcmp(n.file, "freed.py") == 0 && after.freed_since == before.freed_since + 1,
          "%s: in the next pass, freed since it was checked: %d, counted %" PRIu64, label, r,
          after.freed_since - before.freed_since);
    python_code_begin_pass(cache, now_ns += PASS_NS);
    r = python_code_name(cache, c->pid, layout, c->freed, 0, &n);
    python_code_stats(cache, &after);
    CHECK(r == -EINVAL && after.entries == before.entries - 1,
          "%s: in the pass after, no code object: %d, its entry gone (%" PRIu64 " -> %" PRIu64 ")",
          label, r, before.entries, after.entries);
}

/* s cut to at most size - 1 bytes, at a character, into buf[size]. */
static void cut_utf8(const char *s, char *buf, size_t size)
{
    size_t n = strlen(s);

    if (n >= size) {
        n = size - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
}

/* Every instruction of s, and lasti -1, named as CPython says; the first
 * wrong ones printed. Returns the count of wrong ones. */
static int check_code(struct python_code_cache *cache, pid_t pid, const struct code_seen *s)
{
    struct python_frame_name n;
    char want[sizeof(n.qualname)];
    int wrong = 0;

    cut_utf8(s->qualname, want, sizeof(want));
    for (int32_t lasti = -1; lasti < s->units; lasti++) {
        int32_t line = lasti < 0 ? s->firstlineno : s->lines[lasti];
        int r = python_code_name(cache, pid, layout, s->addr, lasti, &n);

        if (r == 0 && strcmp(n.qualname, want) == 0 && strcmp(n.file, s->file) == 0 &&
            n.line == line)
            continue;
        if (wrong++ < 3)
            printf("  %s lasti %d: r=%d %s %s:%d, want %s %s:%d\n", s->qualname, lasti, r,
                   r == 0 ? n.qualname : "-", r == 0 ? n.file : "-", r == 0 ? n.line : 0, want,
                   s->file, line);
    }
    return wrong;
}

static const struct code_seen *find_qualname(const struct child *c, const char *q)
{
    for (size_t i = 0; i < c->n_codes; i++)
        if (strcmp(c->codes[i].qualname, q) == 0)
            return &c->codes[i];
    return NULL;
}

/* The program holds each kind of code object asked for. */
static void check_kinds(const struct child *c, const char *label)
{
    static const char *const kinds[] = {"<module>",  "Greeter.hello", "chain.<locals>.inner",
                                        "counter",   "<lambda>",      "guarded",
                                        "ñandú",     "ñandú_λ",       "𠀀_λ",
                                        "far_apart", "<genexpr>"};
    const struct code_seen *far = find_qualname(c, "far_apart");

    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
        CHECK(find_qualname(c, kinds[i]), "%s: the program has a code object %s", label, kinds[i]);
    /* 3.12 inlines comprehensions (PEP 709) */
    CHECK(!find_qualname(c, "ñandú_λ.<locals>.<listcomp>") == (layout != OFFCPU_PYTHON_3_11),
          "%s: a list comprehension has a code object of its own up to 3.11", label);
    CHECK(far && strstr(far->file, "módulo_λ_𠀀.py"), "%s: far_apart is in a non-ASCII file %s",
          label, far ? far->file : "-");
}

static void check_program(struct python_code_cache *cache, const char *python, const char *option,
                          const char *program, bool *entry_codes)
{
    const char *label = option ? option : "default";
    struct python_code_stats before, after;
    struct python_frame_name n;
    struct child c;
    int r, wrong = 0;
    pid_t pid;

    r = spawn(python, option, program, &c);
    CHECK(r == 0 && c.n_codes > 0, "%s: %s runs %s (%zu code objects): %s", label, python, program,
          c.n_codes, strerror(-r));
    if (r < 0) {
        child_done(&c);
        return;
    }
    check_kinds(&c, label);
    for (size_t k = 0; k < 16; k++)
        entry_codes[k] |= c.entry_codes[k];

    /* every instruction of every code object, read from the process */
    for (size_t i = 0; i < c.n_codes; i++) {
        const struct code_seen *s = &c.codes[i];
        int w = check_code(cache, c.pid, s);

        CHECK(w == 0, "%s: %s (%d instructions from line %d): %d named wrong", label, s->qualname,
              s->units, s->firstlineno, w);
        r = python_code_name(cache, c.pid, layout, s->addr, s->units, &n);
        CHECK(r == -EINVAL, "%s: %s lasti %d, past its end: %d", label, s->qualname, s->units, r);
    }

    /* the next pass: each is checked once against the process, kept as it is */
    python_code_stats(cache, &before);
    python_code_begin_pass(cache, now_ns += PASS_NS);
    for (size_t i = 0; i < c.n_codes; i++)
        wrong += check_code(cache, c.pid, &c.codes[i]);
    python_code_stats(cache, &after);
    CHECK(wrong == 0, "%s: named the same in the next pass (%d wrong)", label, wrong);
    CHECK(after.entries == before.entries && after.named > before.named &&
              after.cache_hits - before.cache_hits == after.named - before.named,
          "%s: all from the cache: %" PRIu64 " entries, %" PRIu64 " of %" PRIu64 " named", label,
          after.entries, after.cache_hits - before.cache_hits, after.named - before.named);

    /* what is no code object: a str, a dict, a function; memory not mapped */
    for (size_t i = 0; i < c.n_others; i++) {
        r = python_code_name(cache, c.pid, layout, c.others[i], 0, &n);
        CHECK(r == -EINVAL, "%s: object 0x%" PRIx64 " is no code: %d", label, c.others[i], r);
    }
    CHECK(c.n_others == 3, "%s: 3 objects that are no code", label);
    r = python_code_name(cache, c.pid, layout, 0x10, 0, &n);
    CHECK(r == -EFAULT, "%s: address 0x10 is unreadable: %d", label, r);
    r = python_code_name(cache, c.pid, OFFCPU_PYTHON_NONE, c.codes[0].addr, 0, &n);
    CHECK(r == -EOPNOTSUPP, "%s: no layout: %d", label, r);
    r = python_code_name(cache, c.pid, 1000, c.codes[0].addr, 0, &n);
    CHECK(r == -EOPNOTSUPP, "%s: a layout not known: %d", label, r);

    check_changes(cache, &c, label);

    /* gone: from the pass that finds it so (a drain after its exit), named
     * from what was checked while it lived, in each drain of the next 10 s
     * (a block held for its rows comes up to 5 s after it ended); then
     * forgotten */
    pid = c.pid;
    reap(&c);
    for (int i = 0; i < 10; i++) {
        python_code_begin_pass(cache, now_ns += PASS_NS);
        r = python_code_name(cache, pid, layout, c.codes[i % c.n_codes].addr, 0, &n);
        CHECK(r == 0 && strcmp(n.qualname, c.codes[i % c.n_codes].qualname) == 0,
              "%s: process gone %d s, named as it was: %d %s", label, i, r,
              r == 0 ? n.qualname : "-");
    }
    python_code_begin_pass(cache, now_ns += PASS_NS);
    r = python_code_name(cache, pid, layout, c.codes[0].addr, 0, &n);
    python_code_stats(cache, &after);
    CHECK(r == -ESRCH && after.entries == 0, "%s: gone 10 s ago: %d, %" PRIu64 " entries left",
          label, r, after.entries);
    child_done(&c);
}

/* Location tables no compiler writes, as a process may hold: an answer
 * from inside the table (ASan and UBSan builds check the reads and shifts),
 * never a line below 0 or past INT32_MAX. */
static void check_hostile_tables(void)
{
    /* code 14 (long form) with its varints cut off by the table's end */
    static const uint8_t cut[] = {0x80 | 14 << 3 | 7};
    /* a varint of 14 chunks, 84 bits: bits past 32 dropped */
    static const uint8_t long_varint[] = {0x80 | 13 << 3, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
                                          0x7f,           0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3e};
    /* no entry starts at all */
    static const uint8_t no_start[] = {0x01, 0x02, 0x7f};
    /* two deltas of +2^31 - 1 from line 0: INT32_MAX, then past it */
    static const uint8_t overflow[] = {0x80 | 13 << 3, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03,
                                       0x80 | 13 << 3, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03};
    /* a delta of -100 from line 1 */
    static const uint8_t below_zero[] = {0x80 | 13 << 3, 0x49, 0x03};
    int32_t line;

    CHECK(python_line(NULL, 0, 7, -1) == 7 && python_line(NULL, 0, 7, 0) == -1,
          "empty table: the first line for lasti -1, else none");
    CHECK(python_line(cut, sizeof(cut), 10, 7) == 10 && python_line(cut, sizeof(cut), 10, 8) == -1,
          "an entry cut off: its 8 instructions at the running line, none after");
    line = python_line(long_varint, sizeof(long_varint), 10, 0);
    CHECK(line >= -1, "a varint of 84 bits: %d", line);
    CHECK(python_line(no_start, sizeof(no_start), 10, 0) == -1, "no entry: no line");
    CHECK(python_line(overflow, sizeof(overflow), 0, 0) == INT32_MAX &&
              python_line(overflow, sizeof(overflow), 0, 1) == -1,
          "a line past INT32_MAX: none");
    CHECK(python_line(below_zero, sizeof(below_zero), 1, 0) == -1, "a line below 0: none");
}

int main(int argc, char **argv)
{
    struct python_code_cache *cache = NULL;
    struct python_code_stats st;
    bool entry_codes[16] = {0};
    int r;

    if (argc != 4 || strncmp(argv[2], "3.1", 3) != 0 || argv[2][3] < '1' || argv[2][3] > '3' ||
        argv[2][4]) {
        fprintf(stderr, "usage: %s PYTHON 3.11|3.12|3.13 PROGRAM\n", argv[0]);
        return 2;
    }
    layout = OFFCPU_PYTHON_3_11 + (uint32_t)(argv[2][3] - '1');
    check_hostile_tables();
    r = python_code_cache_new(&cache);
    CHECK(r == 0, "cache: %d", r);
    if (r < 0)
        return CHECK_EXIT();

    check_program(cache, argv[1], NULL, argv[3], entry_codes);
    check_program(cache, argv[1], "-Xno_debug_ranges", argv[3], entry_codes);

    /* the tables decoded held every kind of entry */
    for (unsigned k = 0; k < 16; k++)
        CHECK(entry_codes[k], "location table entries of code %u decoded", k);
    python_code_stats(cache, &st);
    CHECK(st.not_code > 0 && st.unreadable > 0 && st.linetables_too_big == 2 && st.bytes == 0,
          "stats: %" PRIu64 " named, %" PRIu64 " hits, %" PRIu64 " unreadable, %" PRIu64
          " no code, %" PRIu64 " location tables too big",
          st.named, st.cache_hits, st.unreadable, st.not_code, st.linetables_too_big);
    python_code_cache_free(cache);
    return CHECK_EXIT();
}
