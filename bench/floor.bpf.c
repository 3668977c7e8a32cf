// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The floor under any off-CPU profiler, for bench/overhead: what having a
 * program on sched_switch costs before it does anything useful. "empty"
 * returns at once; "timestamps" does the least an off-CPU profiler must:
 * note the time at switch-out in task storage and sum the time off-CPU at
 * switch-in, with no stacks and no keys.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool timestamps = false;

struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, __u64);
} switched_out SEC(".maps");

struct offcpu_total {
    __u64 ns, blocks;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct offcpu_total);
} totals SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
    struct offcpu_total *total;
    __u32 zero = 0;
    __u64 now, *ts;

    if (!timestamps)
        return 0;
    now = bpf_ktime_get_ns();
    ts = bpf_task_storage_get(&switched_out, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (ts)
        *ts = now;
    ts = bpf_task_storage_get(&switched_out, next, 0, 0);
    total = bpf_map_lookup_elem(&totals, &zero);
    if (ts && *ts && total) {
        total->ns += now - *ts;
        total->blocks++;
        *ts = 0;
    }
    return 0;
}
