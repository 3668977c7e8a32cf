"""Real servers from Debian's packages, each a process of its own in the traced cgroup,
each beside perf's DWARF unwinder at the same sched_switch: the share of off-CPU time
in user stacks that reach a thread's entry (test_unwind's measure), printed for both.

- A JVM (openjdk 17): threads blocked in Thread.sleep, Object.wait and a queue's take,
  beside the JVM's own idle GC, compiler and VM threads. Java frames (the interpreter's,
  the JIT's, the call stub's) lie in anonymous executable memory, which has no call
  frame information: the walk follows them by frame pointer (they keep rbp chains),
  shown as [anon], back into libjvm.so's JavaCalls::call_helper and on to clone3. A
  stack counts as whole only if it gets through them to the thread's entry like any
  other. perf's libdw stops at the first of them: its share is the JVM's own threads'.
- node: an HTTP server and its client in one script, and libuv's thread pool reading
  files; its delayed-task thread waits in uv__io_poll for its whole life from its
  first block, whose 15.6 KiB frame is mostly pages never touched.
- Short-lived programs right after the page cache is dropped, on a host busy with a
  find over /usr and a compile loop (neither in the traced cgroup)."""
import os
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest

from test_unwind import (DWARF_SHARE_MIN, ENTRIES, FRAME_POINTER_SHARE_MAX, WORKLOADS, cold,
                         SAME_AS_PERF_MIN, daemons, entry_share, frames_of, into_cgroup,  # noqa: F401
                         perf_sample, reaches_entry, same_frames, why)


JAVA = Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
NODE = Path("/usr/bin/node")

# Threads that block as a server's do: a sleeper, a monitor's wait, a queue's consumer
# fed now and then; the JVM's own threads (GC, C1/C2 compilers, VM thread) idle meanwhile.
JAVA_PROGRAM = r"""
import java.util.concurrent.*;
public class Idle {
    public static void main(String[] args) throws Exception {
        final long end = System.nanoTime() + 6_000_000_000L;
        final Object lock = new Object();
        final BlockingQueue<Integer> queue = new LinkedBlockingQueue<>();
        Thread sleeper = new Thread(() -> {
            try { while (System.nanoTime() < end) Thread.sleep(20); } catch (InterruptedException e) { }
        }, "sleeper");
        Thread waiter = new Thread(() -> {
            synchronized (lock) {
                try { while (System.nanoTime() < end) lock.wait(50); } catch (InterruptedException e) { }
            }
        }, "waiter");
        Thread consumer = new Thread(() -> {
            try { while (queue.take() >= 0) { } } catch (InterruptedException e) { }
        }, "consumer");
        sleeper.start(); waiter.start(); consumer.start();
        for (int i = 0; System.nanoTime() < end; i++) { queue.put(i); Thread.sleep(100); }
        queue.put(-1);
        sleeper.join(); waiter.join(); consumer.join();
    }
}
"""

# A server and its client in one process, and libuv's pool reading files meanwhile.
NODE_PROGRAM = r"""
const http = require('http'), fs = require('fs');
const end = Date.now() + 5000;
const server = http.createServer((req, res) => setTimeout(() => res.end('ok'), 10));
server.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  const ask = () => {
    if (Date.now() > end) { server.close(); return; }
    http.get({ host: '127.0.0.1', port, agent: false }, res => {
      res.resume(); res.on('end', () => setTimeout(ask, 20));
    });
  };
  ask();
  const read = () => {
    if (Date.now() > end) return;
    let left = 4;
    for (let i = 0; i < 4; i++)
      fs.readFile('/usr/bin/node', () => { if (--left === 0) setTimeout(read, 50); });
  };
  read();
});
"""


def run_in_cgroup(argv, cwd=None, timeout=60):
    proc = subprocess.Popen(argv, cwd=cwd, preexec_fn=into_cgroup, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL)
    assert proc.wait(timeout=timeout) == 0, argv
    return proc.pid


def perf_stacks(tmp, argv, cwd=None):
    """The same program under perf record --call-graph dwarf at sched_switch: each user
    stack perf unwound, root first as (file name, offset in it), with the time it was
    charged (perf sees a task switch out, not back in: each block is taken to last until
    the task's next switch out, its time on the CPU between counted too; these threads
    are idle; the last one until the last sample of the process)."""
    data = tmp / "perf.data"
    proc = subprocess.Popen(["perf", "record", "-q", "-e", "sched:sched_switch",
                             "--call-graph", "dwarf,16384", "-o", str(data), "--", *argv],
                            cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            preexec_fn=into_cgroup)
    assert proc.wait(timeout=120) == 0
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "tid,time,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    samples = defaultdict(list)  # tid: [(time, (the root's name, user frames))]
    for sample in out.split("\n\n"):
        lines = sample.strip().splitlines()
        if not lines:
            continue
        tid, at = lines[0].split()[:2]
        samples[int(tid)].append((float(at.rstrip(":")), perf_sample(lines[1:])))
    last = max(at for s in samples.values() for at, _ in s)
    stacks = defaultdict(float)  # (root, frames): seconds
    for s in samples.values():
        for (at, stack), (upto, _) in zip(s, s[1:] + [(last, None)]):
            stacks[stack] += upto - at
    return stacks


def perf_whole(stacks):
    return {frames: t for (root, frames), t in stacks.items()
            if root.lstrip("_") in {e.lstrip("_") for e in ENTRIES}}


def shares(daemons, tmp, argv, name):
    """offcpud's share (and a frame-pointer walk's) for one run; perf's for another, and
    the share of perf's whole stacks' time that offcpud's run has frame for frame."""
    dwarf, fp = daemons
    pid = run_in_cgroup(argv, cwd=tmp)
    ours, stacks = entry_share(dwarf, pid)
    theirs, _ = entry_share(fp, pid)
    perf = perf_stacks(tmp, argv, cwd=tmp)
    whole = perf_whole(perf)
    share = sum(whole.values()) / sum(perf.values())
    mine = [frames_of(s) for s in stacks]
    found = sum(t for frames, t in whole.items() if any(same_frames(frames, m) for m in mine))
    alike = found / sum(whole.values()) if whole else 0.0
    print(f"\n{name}: offcpud {ours:.3f}, frame-pointer walk {theirs:.3f}, "
          f"perf --call-graph dwarf {share:.3f} of off-CPU time whole; "
          f"{alike:.3f} of perf's whole stacks' time in stacks offcpud has frame for frame")
    return ours, theirs, stacks, alike


def test_jvm_idle_threads_whole(daemons, tmp_path):
    (tmp_path / "Idle.java").write_text(JAVA_PROGRAM)
    ours, fp, stacks, alike = shares(daemons, tmp_path, [str(JAVA), "Idle.java"], "openjdk 17")
    assert ours >= DWARF_SHARE_MIN, f"{ours:.3f} reach an entry\n{why(daemons[0], stacks)}"
    assert fp <= FRAME_POINTER_SHARE_MAX, fp
    assert alike >= SAME_AS_PERF_MIN, alike


def test_node_server_client_and_pool_whole(daemons, tmp_path):
    (tmp_path / "serve.js").write_text(NODE_PROGRAM)
    ours, fp, stacks, alike = shares(daemons, tmp_path, [str(NODE), "serve.js"], "node")
    assert ours >= DWARF_SHARE_MIN, f"{ours:.3f} reach an entry\n{why(daemons[0], stacks)}"
    assert fp <= FRAME_POINTER_SHARE_MAX, fp
    assert alike >= SAME_AS_PERF_MIN, alike


# What keeps the host busy meanwhile, outside the traced cgroup: a find over /usr
# (a cold cache: the disk's queue is long) and a compile, each over and over.
BUSY = ["find /usr -xdev -type f -size +1k -newer /etc/hostname -print > /dev/null",
        "gcc -O2 -c -o \"$1/busy.o\" \"$1/busy.c\""]
SHORT_RUNS = 10


def named(stack):
    """Every user frame in a file the daemon read: none [unknown] (an address in no
    mapping it knew) or "-" (anonymous memory). A stripped program's static functions
    are its file and an offset (python3.11+0x2543b3), as perf names them too."""
    return not any(f in ("[unknown]", "-") for f in stack["user"])


def test_short_lived_on_a_busy_cold_host_whole(daemons, tmp_path):
    """python3 living half a second (a second thread, sleeps, a socket), started right
    after the page cache is dropped while a find and a compile run: 95% of its off-CPU
    time whole and named, in each of 10 runs."""
    dwarf, fp = daemons
    (tmp_path / "busy.c").write_text("".join(
        f"int f{i}(int x) {{ for (int j = 0; j < x; j++) x ^= j * {i}; return x; }}\n"
        for i in range(400)))
    busy = [subprocess.Popen(["bash", "-c", f"while :; do {cmd}; done", "-", str(tmp_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True) for cmd in BUSY]
    figures = []
    try:
        for _ in range(SHORT_RUNS):
            cold()
            pid = WORKLOADS["python3"](tmp_path)
            ours, stacks = entry_share(dwarf, pid)
            total = sum(s["total_ns"] for s in stacks)
            whole = sum(s["total_ns"] for s in stacks if reaches_entry(s) and named(s))
            theirs, _ = entry_share(fp, pid)
            figures.append((whole / total, theirs, stacks))
    finally:
        for proc in busy:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    print("\npython3 on a busy host, cache dropped, whole and named: offcpud "
          + " ".join(f"{w:.3f}" for w, _, _ in figures) + "; frame-pointer walk "
          + " ".join(f"{fpw:.3f}" for _, fpw, _ in figures))
    for share, theirs, stacks in figures:
        assert share >= DWARF_SHARE_MIN, f"{share:.3f} whole and named\n{why(dwarf, stacks)}"
        assert theirs <= FRAME_POINTER_SHARE_MAX, theirs
