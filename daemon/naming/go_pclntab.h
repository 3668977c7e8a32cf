/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Go's function table, .gopclntab: where the names of a Go program's
 * functions are when its symbol table is stripped (Debian strips every Go
 * binary it ships; `go build -ldflags=-s` does the same). Go's own tools
 * read it; so do we, for the layouts of Go 1.2 to today (the version is the
 * table's own magic number, never guessed). The table is read from a file any
 * user controls: every count and offset is checked against the section's
 * size, and the work is one pass over its function list.
 */
#ifndef GO_PCLNTAB_H
#define GO_PCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct go_func {
    uint64_t entry, end; /* [entry, end): the function's code, as linked */
    const char *name;    /* in the section's bytes, NUL-terminated */
};

/* Return 0 to go on, a negative errno to stop with it. */
typedef int (*go_func_fn)(const struct go_func *f, void *userdata);

/* Calls fn for each function of the table data[0, size), in address order.
 * text_start: the address of the program's .text, for the layouts (Go 1.18
 * on) that count from it where the table leaves it to a relocation (0 in the
 * file). Returns 0, -EBADMSG for a table it does not read (a count or an
 * offset out of the section, functions out of order), -EPROTONOSUPPORT for a
 * layout it does not know, or what fn returned. */
int go_pclntab_functions(const uint8_t *data, size_t size, uint64_t text_start, go_func_fn fn,
                         void *userdata);

/* Go's inlined calls, as its own tracebacks and `go tool pprof` show them:
 * the pcs [start, end) of a function stand for n frames more, the inlined
 * callees, names[0] the innermost; the function that holds them is not one
 * of them. Deeper nests are cut to their innermost GO_INLINE_DEPTH_MAX. */
#define GO_INLINE_DEPTH_MAX 16

struct go_inlined {
    uint64_t start, end;
    const char *names[GO_INLINE_DEPTH_MAX]; /* in the table's bytes */
    unsigned n;
};

typedef int (*go_inlined_fn)(const struct go_inlined *in, void *userdata);

/* The section of the program that holds the inline trees: its bytes, its
 * address, and moduledata.gofunc (go_moduledata_gofunc), in it, from where
 * the trees' offsets count. */
struct go_funcdata {
    const uint8_t *data;
    size_t size;
    uint64_t addr, gofunc;
};

/* Calls fn for each range of pcs with inlined calls, in address order, for
 * the layouts of Go 1.18 on (-EPROTONOSUPPORT before). A function whose tree
 * does not read (out of the sections) has no ranges; the whole work is
 * bounded by the table's size (-EBADMSG past it). Returns 0, -EBADMSG,
 * -EPROTONOSUPPORT or what fn returned. */
int go_pclntab_inlined(const uint8_t *data, size_t size, uint64_t text_start,
                       const struct go_funcdata *fd, go_inlined_fn fn, void *userdata);

/* moduledata.gofunc, from the section data[0, size) that holds moduledata
 * (.noptrdata): found by its first word, the table's address pclntab_addr.
 * Returns 0, -ENOENT, -EBADMSG or -EPROTONOSUPPORT (layouts before 1.18). */
int go_moduledata_gofunc(const uint8_t *pclntab, size_t pclntab_size, uint64_t pclntab_addr,
                         const uint8_t *data, size_t size, uint64_t *ret);

/* The outermost frames of Go's stacks: a goroutine's runtime.goexit, a
 * thread's runtime.mstart, the main thread's runtime.rt0_go. Nothing beyond
 * one is its caller: a frame pointer there still holds what it held before
 * (another thread's, in a clone's child). And, as a caller (is_leaf false),
 * the two that call on a stack they switched to: runtime.clone, whose
 * frame pointer in the child is the parent's; runtime.mcall, which calls
 * the scheduler (park_m, ...) on the thread's own stack with the frame
 * pointer of the goroutine it parked: that goroutine is not a caller (mcall's
 * callee never returns to it, and Go's tracebacks stop at mcall too).
 * runtime.systemstack is not one: it returns to its goroutine, which Go's
 * profiler follows too (runtime/traceback.go, _TraceJumpStack). */
bool go_function_is_stack_root(const char *name, bool is_leaf);

#endif
