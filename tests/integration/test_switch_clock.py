"""A switch's time is the run queue's clock moved onto the kernel's (switch_clock.bpf.h);
a wakeup's and a flip's are the kernel clock's own. ping_pong's two threads, one on each
CPU, block 20,000 times each for some 20 us: switched out on one CPU, woken from the
other. Their off-CPU time must be what they measure themselves, and the time their
wakeups were paired with (the kernel clock at the wakeup less the switch-out time) what
they waited for their partner's write."""
import json
import time

from conftest import run_workload

WAIT = "wait_for_ball"


def test_microsecond_blocks_across_cpus_add_up(start_daemon):
    # flips every 50 ms: some blocks are cut by one, on the kernel clock
    d = start_daemon("--interval", "50ms", "--wakers", "yes")
    truth = run_workload("ping_pong", "--rounds", "20000")
    time.sleep(0.3)  # drained
    for i, tid in enumerate(truth["tids"]):
        assert truth["calls"][i] == 20000, truth
        rows = [s for s in d.dump_json("--tid", str(tid), "--since", "60s")["stacks"]
                if WAIT in s["user"]]
        total = sum(s["total_ns"] for s in rows)
        # The thread's own measure is wall minus its CPU time, which the kernel counts
        # from its run queue's clock, as the switches now are: seen 0.955 to 0.979 of
        # it (interrupts and steal time are neither). Reading the kernel clock at each
        # switch gave 1.09 to 1.17: the clock of a switch from idle is the wakeup's.
        assert 0.93 <= total / truth["offcpu_ns"][i] <= 1.05, (tid, total, truth, rows)
        pairs = [s for s in json.loads(d.ctl("--json", "wakers", "--tid", str(tid), "--since",
                                             "60s").stdout)["stacks"] if WAIT in s["user"]]
        assert 0.98 * 20000 <= sum(s["count"] for s in pairs) <= 20000, pairs
        # From the switch-out to the partner's wakeup, against from the read to the
        # partner's write: the read's way into the scheduler is left out, the write's
        # way to the wakeup is in. Seen 0.85 to 0.89 (and with the kernel clock read
        # at each switch); a calibration from one sample, 0.61 to 0.77 and once 0.11.
        blocked = sum(s["total_ns"] for s in pairs)
        assert 0.78 <= blocked / truth["until_sent_ns"][i] <= 1.05, (tid, blocked, truth, pairs)
