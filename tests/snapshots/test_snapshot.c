/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A drained generation turned into a snapshot, as the drain does it: every
 * frame named by the real symbolizer, from this very process's mappings and
 * ELF file and from the kernel's kallsyms (needs root, like the daemon).
 * The seam is the drained generation, filled here instead of by the BPF
 * collector.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "collector.h"
#include "ring.h"
#include "snapshot_build.h"
#include "symbolizer.h"

#define NOINLINE __attribute__((noinline))

static uint64_t leaf_pc, caller_ret;

/* Where this process "blocks": its pc, and the return address into its caller. */
NOINLINE static void blocking_leaf(void)
{
    leaf_pc = (uint64_t)(uintptr_t) && here;
here:
    caller_ret = (uint64_t)(uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void blocking_caller(void)
{
    blocking_leaf();
    __asm__ volatile("" ::: "memory");
}

static uint64_t kernel_address(const char *name)
{
    FILE *f = fopen("/proc/kallsyms", "re");
    char line[512], sym[256], type;
    unsigned long long addr;

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && strcmp(sym, name) == 0) {
            fclose(f);
            return addr + 4;
        }
    if (f)
        fclose(f);
    return 0;
}

static const char *frame(const struct intern *in, uint32_t stack, uint32_t i, uint32_t *n)
{
    const uint32_t *frames = intern_stack_get(in, stack, n);

    return i < *n ? intern_string_get(in, frames[i]) : "";
}

int main(void)
{
    struct offcpu_stack stacks[2] = {
        {.nr = 2, .kernel = 0},
        {.nr = 1, .kernel = 1},
    };
    uint64_t hashes[2] = {0x1111, 0x2222};
    struct drained_slot index[2];
    struct offcpu_key keys[4] = {0};
    struct offcpu_value values[4] = {
        {.total_ns = 5000000, .count = 5},
        {.total_ns = 7000000, .count = 1},
        {.total_ns = 1000000, .count = 2},
        {.total_ns = 3000000, .count = 3},
    };
    struct drained d = {.n = 4,
                        .keys = keys,
                        .values = values,
                        .nstacks = 2,
                        .stack_hashes = hashes,
                        .stacks = stacks,
                        .index = index,
                        .start_ns = 100,
                        .end_ns = 200};
    struct snapshot_stats stats = {0};
    struct symbolizer *sym;
    struct snapshot *snap;
    struct intern in;
    uint32_t n;

    blocking_caller();
    stacks[0].ip[0] = leaf_pc;
    stacks[0].ip[1] = caller_ret;
    stacks[1].ip[0] = kernel_address("schedule");
    CHECK(stacks[1].ip[0] != 0, "kallsyms shows schedule (needs root)");
    drained_index_stacks(&d);
    for (int i = 0; i < 4; i++) {
        keys[i] = (struct offcpu_key){.tgid = getpid(),
                                      .tid = getpid() + i,
                                      .state = 'S',
                                      .uid = 1000,
                                      .user_stack = 0x1111,
                                      .kernel_stack = 0x2222};
        memcpy(keys[i].comm, "snaptest", 9);
    }
    keys[1].user_stack = OFFCPU_STACK_MISSED; /* the kernel could not take it */
    keys[2].user_stack = 0x9999;              /* a stack the drain does not hold */
    keys[3].kthread = 1;                      /* a kernel thread: no user stack at all */
    keys[3].state = 'D';

    intern_init(&in);
    CHECK(symbolizer_new(SIZE_MAX, &sym) == 0, "a symbolizer");
    CHECK(snapshot_build(&d, sym, NULL, &in, &snap, &stats) == 0 && snap->n == 4, "four records");
    CHECK(snap->start_ns == 100 && snap->end_ns == 200, "the generation's bounds");
    CHECK(snap->records[0].total_ns == 5000000 && snap->records[0].count == 5 &&
              snap->records[0].tid == (uint32_t)getpid() && snap->records[0].uid == 1000 &&
              snap->records[0].state == 'S' &&
              strcmp(intern_string_get(&in, snap->records[0].comm), "snaptest") == 0,
          "time, count and identity as drained");
    CHECK(strcmp(frame(&in, snap->records[0].ustack, 0, &n), "blocking_caller") == 0 && n == 2 &&
              strcmp(frame(&in, snap->records[0].ustack, 1, &n), "blocking_leaf") == 0,
          "user frames named from this process's ELF file, root first: %s;%s",
          frame(&in, snap->records[0].ustack, 0, &n), frame(&in, snap->records[0].ustack, 1, &n));
    CHECK(strcmp(frame(&in, snap->records[0].kstack, 0, &n), "schedule") == 0,
          "kernel frame named from kallsyms: %s", frame(&in, snap->records[0].kstack, 0, &n));
    CHECK(snap->records[0].uwhere && snap->records[1].kstack == snap->records[0].kstack,
          "where the user frames lie is kept; equal stacks are one");
    CHECK(strcmp(frame(&in, snap->records[1].ustack, 0, &n), "[Missed User Stack]") == 0,
          "a stack the kernel could not take is said so");
    CHECK(strcmp(frame(&in, snap->records[2].ustack, 0, &n), "[Missed User Stack]") == 0 &&
              stats.orphan_stacks == 1,
          "a stack the drain did not hold is counted");
    CHECK(snap->records[3].ustack == 0 && snap->records[3].state == 'D',
          "a kernel thread has no user stack");
    CHECK(stats.records == 4, "records counted");

    snapshot_free(&in, snap);
    symbolizer_free(sym);
    CHECK(in.strings.count == 0 && in.stacks.count == 0, "every reference given back");
    intern_done(&in);
    return CHECK_EXIT();
}
