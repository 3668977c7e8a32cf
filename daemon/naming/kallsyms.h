/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel symbols from /proc/kallsyms: one sorted array, a symbol ending where
 * the next one starts. kallsyms has no sizes, so that is the best bound there
 * is; only where the next symbol belongs to another module (or there is none)
 * is the end capped, so that code loaded since the last read (a module, a BPF
 * program) is not named after whatever precedes it. JITed BPF programs can
 * be given their exact extents, which the BPF subsystem knows.
 */
#ifndef KALLSYMS_H
#define KALLSYMS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct kallsyms;

int kallsyms_new(struct kallsyms **ret);
struct kallsyms *kallsyms_free(struct kallsyms *k);

/* Replace the symbols with those read from f (the format of /proc/kallsyms).
 * On error the previous symbols are kept. */
int kallsyms_parse(struct kallsyms *k, FILE *f);
int kallsyms_load(struct kallsyms *k, const char *path);

/* Whether f (the format of /proc/kallsyms) shows addresses: the kernel prints
 * zeros to a reader without CAP_SYSLOG (see kernel.kptr_restrict), and then
 * no kernel frame can be named. 1 or 0, or a negative errno. */
int kallsyms_shows_addresses(FILE *f);

/* The function holding addr, and its module (NULL for the kernel proper).
 * Returns 0 or -ENOENT. The strings live until the next parse. */
int kallsyms_lookup(const struct kallsyms *k, uint64_t addr, const char **ret_name,
                    const char **ret_module);

size_t kallsyms_count(const struct kallsyms *k);

/* Where a function's code lies, exactly. */
struct ksym_extent {
    uint64_t start, len;
};

/* Give the symbols of module exactly the extents listed (sorted by start);
 * one not listed (loaded or gone between the two reads) names no address:
 * its extent is unknown, and a guess could take a neighbour's name. */
void kallsyms_set_extents(struct kallsyms *k, const char *module, const struct ksym_extent *ext,
                          size_t n);

/* The symbol of module starting at start names nothing any more: its code
 * is gone (a BPF program unloaded), and the next may be put there. */
void kallsyms_forget(struct kallsyms *k, const char *module, uint64_t start);

/* Frames of the kinds the tracer's own are made of: JITed BPF programs
 * (bpf_prog_<tag>[_name], module "bpf") and the tracepoint glue that calls
 * them (bpf_trace_run*, __traceiter_*, __bpf_trace_*). Kernel functions
 * merely named bpf_prog_* are not. */
bool kallsyms_is_tracer_frame(const char *name);

#endif
