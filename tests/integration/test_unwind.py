"""Whole user stacks of stock Debian 12 programs, built without frame pointers.
(/usr/bin's own: not a python3 of pyenv's, nor anything else PATH may find first.)

Each program runs as installed, blocking where it is known to block (reading a pipe
fed slowly, sleeping, waiting for a child, a socket, reading files out of a cold page
cache, fsync), while
two daemons watch it: one walking from call frame information (the default) and one
with `unwind = frame-pointer`. The share of its off-CPU time whose user stack reaches
the thread's entry must be >= 95% with the first and near 0 with the second: the
measure fails without the unwinder. Every program is a new process, and the copied
binaries are files no daemon has seen before: both are first runs. The programs run in
a cgroup of their own, the only one the daemons trace: other work on the machine
cannot fill the daemons' maps."""
import json
import os
import pwd
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import (PLAIN_BUILD, WORKLOADS as BUILT_WORKLOADS, Daemon, cgroup2_mount,
                      drained_after, within)

# Where a thread begins: glibc's _start (the main thread) and clone3 (every other),
# whose call frame information marks the return address undefined. A stripped
# program's _start has no name (sort+0x6580): it is the one caller of __libc_start_main.
# Go's own tracebacks end where its runtime says a stack begins (topofstack in
# runtime/traceback.go): a goroutine's runtime.goexit, a thread's runtime.mstart,
# the main thread's runtime.rt0_go, and the scheduler's own stack below runtime.mcall
# or runtime.morestack (a goroutine parked, or growing its stack).
GO_ENTRIES = {"runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.mcall",
              "runtime.morestack"}
ENTRIES = {"_start", "clone3", "clone"} | GO_ENTRIES
# Before the program's own _start runs, the dynamic linker's does: the kernel enters
# the process at ld.so's ELF entry point, which calls _dl_start at once. Debian's ld.so
# has no symbol there; the daemon names a file's entry point _start (and a stripped
# program's, the one caller of __libc_start_main).


def reaches_entry(stack):
    """stack: as dump --frame-detail gives it (user names, root first)."""
    return bool(stack["user"]) and stack["user"][0] in ENTRIES


# How far a frame-pointer walk gets through the same programs: 0-1.2% measured, more
# where a program blocks at its very first instruction (_start, paging in at exec).
FRAME_POINTER_SHARE_MAX = 0.10
# Of the stacks perf unwinds to an entry (from its own copy of the stack, with libdw),
# the share that offcpud has frame for frame, by file and offset: 0.99 measured on the
# JVM and node (test_servers); the rest are stacks one run met and the other did not.
SAME_AS_PERF_MIN = 0.90
# The bar, which perf --call-graph dwarf reaches (95-100%). A process's first
# blocks come before the daemon has read its table again; the libraries ld.so maps
# are known from their mmap, and the program from the kernel, as soon as their rows
# are loaded; a walk that meets rows not yet derived (a program no process ran before,
# as perl's 3.8 MB here: 6 ms, 25-60 ms in the sanitizer build) goes on at switch-in,
# or, still short then, is held until a flip finds the rows (test_rows_late below).
DWARF_SHARE_MIN = 0.95

PYTHON_WORKLOAD = r"""
import socket, threading, time
a, b = socket.socketpair()
done = threading.Event()
def sender():
    for _ in range(15):
        done.wait(0.04)
        b.send(b"x")
    b.close()
t = threading.Thread(target=sender)
t.start()
while a.recv(1):
    time.sleep(0.02)
t.join()
"""


CGROUP = cgroup2_mount() / f"offcpud-unwind-{os.getpid()}"


@pytest.fixture(scope="module")
def daemons(tmp_path_factory):
    home = tmp_path_factory.mktemp("unwind")
    CGROUP.mkdir()
    for mode in ("dwarf", "frame-pointer"):
        (home / mode).mkdir()
        # rows outlive their last process for 1 s, not 30: a test sees them go; the
        # native walk, compared with perf's (Python frames, woven in place of the
        # interpreter's, are test_python_frames.py's)
        (home / mode / "offcpud.conf").write_text(
            f"unwind = {mode}\ntrace-cgroups = {CGROUP}\nunwind-linger = 1s\n"
            "python-frames = no\n")
    # the daemon as it ships: a share that depends on how soon a new program's rows come
    # is the plain build's to measure (the sanitizer build's daemon runs in the other
    # modules, with unwind = dwarf too)
    started = [Daemon(home / mode, "--interval", "200ms", "--config",
                      str(home / mode / "offcpud.conf"), binary=PLAIN_BUILD / "daemon" / "offcpud")
               for mode in ("dwarf", "frame-pointer")]
    yield started
    for d in started:
        d.stop()
    CGROUP.rmdir()


def into_cgroup():
    """Run in the child, before exec: the program is traced from its first block."""
    (CGROUP / "cgroup.procs").write_text("0\n")


def feed_slowly(proc, lines, every=0.04):
    for line in lines:
        proc.stdin.write(line)
        proc.stdin.flush()
        time.sleep(every)
    proc.stdin.close()


def drain_slowly(proc, chunk=65536, every=0.02):
    while proc.stdout.read(chunk):
        time.sleep(every)


def run(argv, lines=None, drain=False, cwd=None, prepare=None):
    """Run argv as a new process, fed lines slowly on stdin (or with stdin closed), its
    output drained slowly (or dropped); its pid once it has exited. prepare: makes its
    input first, outside the traced cgroup (the test's own writing is no part of the
    program's time)."""
    if prepare:
        prepare()
    proc = subprocess.Popen(argv, cwd=cwd, preexec_fn=into_cgroup, stdin=subprocess.PIPE if lines else subprocess.DEVNULL,
                            stdout=subprocess.PIPE if drain else subprocess.DEVNULL, text=not drain)
    if lines:
        feed_slowly(proc, lines)
    if drain:
        drain_slowly(proc)
    assert proc.wait(timeout=60) == 0, argv
    return proc.pid


def in_execve(stack):
    """Blocked inside execve once the old image is gone and before the new one has run
    (reading the new program from a cold cache): the user registers are the old image's,
    in an address space that no longer holds it. No user stack exists to reach an entry."""
    return "bprm_execve" in stack["kernel"]


def new_task(stack):
    """A new thread's or process's first wait, from its fork to its first run: it has run
    no code, and has no stack to reach an entry (sort's threads, CPU-bound, waited up to
    3 ms for a CPU on a busy 2-CPU host: 0.958 of the time reached an entry)."""
    return stack["kernel"] == ["[new task]"]


def entry_share(daemon, pid):
    """Of the process's off-CPU time with a user stack (not inside its execve, nor a new
    task's first wait), the share in user stacks that reach an entry."""
    deadline = time.monotonic() + 10
    while True:
        stacks = daemon.dump_json("--pid", str(pid), "--since", "120s", "--frame-detail")["stacks"]
        stacks = [s for s in stacks if not in_execve(s) and not new_task(s)]
        total = sum(s["total_ns"] for s in stacks)
        if total or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert total, f"no off-CPU time of {pid}"
    whole = sum(s["total_ns"] for s in stacks if reaches_entry(s))
    return whole / total, stacks


def heaviest(stacks, n=5):
    return "\n".join(f'{s["total_ns"] // 1000} us: {";".join(s["user"])}'
                     for s in sorted(stacks, key=lambda s: -s["total_ns"])[:n])


def why(daemon, stacks):
    """The heaviest stacks, and the daemon's counters: what a failure needs to be read."""
    return f"{heaviest(stacks)}\n{daemon.ctl('status').stdout}"


def tree_of_files(root: Path, n=2000):
    """n files of 12-96 KiB (108 MiB), 100 to a directory: tar's time goes to reading
    them, as a tree's would, more than to its start (a first run's first blocks may
    come before its rows: some ms, see DWARF_SHARE_MIN)."""
    root.mkdir()
    for i in range(n):
        d = root / f"d{i // 100}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}").write_bytes(bytes(range(256)) * 48 * (1 + i % 8))
    return root


def large_file(path: Path, mib):
    """Lines of text in no order (sort has work to do), that compress some (gzip
    spends its time deflating, not storing): one MiB of them, written mib times."""
    block = "".join(f"{(i * 2654435761) % 1000003:08d} line {i % 977:04d} of text\n"
                    for i in range(1024 * 1024 // 32))
    with open(path, "w") as f:
        for _ in range(mib):
            f.write(block)
    return path


def cold(*made):
    """Out of the page cache, as the issue has them: tar and gzip then block reading
    the disk (state D), where a warm cache would leave them on the CPU. The files are
    written back first, or dropping would keep their dirty pages."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    return made


def lines(n=30, fmt="{i}\n"):
    return [fmt.format(i=i) for i in range(n)]


WORKLOADS = {
    # time.sleep, threading.Event.wait, socket recv; a second thread
    "python3": lambda tmp: run(["/usr/bin/python3", "-c", PYTHON_WORKLOAD]),
    # read, and wait for a child
    "bash": lambda tmp: run(["/usr/bin/bash", "-c", "while read -r l; do sleep 0.01 & wait; done"],
                            lines()),
    # read, and select as a sleep
    "perl": lambda tmp: run(["/usr/bin/perl", "-e", "while (<STDIN>) { select(undef, undef, undef, 0.01) }"],
                            lines()),
    # an archive of 2000 files, read from the disk
    "tar": lambda tmp: run(["/usr/bin/tar", "cf", str(tmp / "out.tar"), "tree"], cwd=tmp,
                           prepare=lambda: cold(tree_of_files(tmp / "tree"))),
    # a large file, read from the disk, deflated into a pipe drained slowly (reading
    # alone blocks little here: readahead from a fast disk)
    "gzip": lambda tmp: run(["/usr/bin/gzip", "-c", str(tmp / "large.txt")], drain=True,
                            prepare=lambda: cold(large_file(tmp / "large.txt", 24))),
    # a large file sorted (by more than one thread)
    "sort": lambda tmp: run(["/usr/bin/sort", "-o", str(tmp / "sorted.txt"), str(tmp / "large.txt")],
                            prepare=lambda: large_file(tmp / "large.txt", 24)),
    # inserting, one statement at a time, with a sync per transaction
    "sqlite3": lambda tmp: run(["/usr/bin/sqlite3", str(tmp / "db.sqlite")],
                               ["PRAGMA synchronous=FULL;\n", "CREATE TABLE t(x);\n",
                                *lines(fmt="INSERT INTO t VALUES({i});\n")]),
}


@pytest.mark.parametrize("program", sorted(WORKLOADS))
def test_stock_program_stacks_reach_entry(daemons, program, tmp_path):
    dwarf, fp = daemons
    pid = WORKLOADS[program](tmp_path)
    share, stacks = entry_share(dwarf, pid)
    assert share >= DWARF_SHARE_MIN, f"{program}: {share:.3f} reach an entry\n{why(dwarf, stacks)}"
    share, stacks = entry_share(fp, pid)
    assert share <= FRAME_POINTER_SHARE_MAX, \
        f"{program} with frame pointers: {share:.3f} reach an entry\n{why(fp, stacks)}"


@pytest.mark.parametrize("program", ["gzip", "sort"])
def test_first_run_of_a_new_binary_is_whole(daemons, program, tmp_path):
    """A binary no process has mapped before: its rows are read at exec, before it
    first blocks."""
    dwarf, _ = daemons
    copy = tmp_path / f"fresh-{program}"
    shutil.copy2(f"/usr/bin/{program}", copy)
    pid = run([str(copy)], lines(fmt="{i} first run\n"))
    share, stacks = entry_share(dwarf, pid)
    assert share >= DWARF_SHARE_MIN, f"{share:.3f} reach an entry\n{why(dwarf, stacks)}"


def test_thread_stacks_root_at_clone3(daemons):
    """A Python thread: clone3, then start_thread, then the interpreter."""
    dwarf, _ = daemons
    pid = WORKLOADS["python3"](None)
    _, stacks = entry_share(dwarf, pid)
    # (a thread preempted at its first instruction, in clone3, has no caller yet)
    threads = [s for s in stacks if s["user"][:1] == ["clone3"] and len(s["user"]) > 1]
    assert threads, heaviest(stacks)
    assert all(s["user"][1] == "start_thread" for s in threads), heaviest(threads)


PERF_WORKLOAD = r"""
import time
def napper():
    for _ in range(40):
        time.sleep(0.01)
napper()
"""


def perf_user_stacks(data, pid):
    """Each sched_switch sample of pid in a perf.data: its user frames, root first, as
    (file name, offset in it); the file is None where perf printed "(inlined)" instead."""
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "pid,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    stacks = []
    for sample in out.split("\n\n"):
        lines = sample.strip().splitlines()
        if not lines or int(lines[0].split()[0]) != pid:
            continue
        frames = []
        for line in lines[1:]:
            ip, rest = line.split(None, 1)
            dso = rest.rsplit(" (", 1)[1].rstrip(")")
            if "kernel.kallsyms" not in dso:
                frames.append((None if dso == "inlined" else Path(dso).name, int(ip, 16)))
        stacks.append(frames[::-1])
    return stacks


def perf_frames(user):
    """perf's user frames of a sample, leaf first as (file or None, offset): root first,
    each inlined frame perf lists (file None, the offset of the frame it lies in) folded
    into that frame, as offcpud shows a C program's frames."""
    frames = []
    for file, offset in reversed(user):
        if frames and frames[-1][1] == offset and None in (file, frames[-1][0]):
            frames[-1] = (frames[-1][0] or file, offset)
        else:
            frames.append((file, offset))
    return tuple(frames)


def perf_sample(lines):
    """A perf script sample's callchain lines (ip sym (dso), leaf first): the root's name,
    and its user frames as perf_frames."""
    user = []  # (name, file, offset), leaf first
    for line in lines:
        ip, rest = line.split(None, 1)
        name, dso = rest.rsplit(" (", 1)
        dso = dso.rstrip(")")
        if "kernel.kallsyms" not in dso:
            user.append((name, None if dso == "inlined" else Path(dso).name, int(ip, 16)))
    return (user[-1][0] if user else ""), perf_frames([u[1:] for u in user])


# Each program perf runs, as (argv, the leaf its heaviest stack must have): python3
# sleeping, perl in select, bash waiting for its children, tar reading files out of a
# cold cache. Not sqlite3: its heaviest stack is as often its first fdatasync, from a
# walk made before libsqlite3's rows were derived (1.5 MB: the daemon reads it when
# the process first maps it), and perf, which unwinds afterwards, has it whole.
PERF_PROGRAMS = {
    "python3": lambda tmp: (["/usr/bin/python3", "-c", PERF_WORKLOAD], {"clock_nanosleep"}),
    "perl": lambda tmp: (["/usr/bin/perl", "-e", "select(undef, undef, undef, 0.01) for 1 .. 40"],
                         {"__select"}),
    "bash": lambda tmp: (["/usr/bin/bash", "-c", "for i in $(seq 30); do sleep 0.01 & wait; done"],
                         {"wait4", "__wait4"}),
    "tar": lambda tmp: (["/usr/bin/tar", "cf", str(tmp / "out.tar"), "-C", str(tmp), "tree"]
                        if cold(tree_of_files(tmp / "tree")) else None, {"read"}),
}


def same_frames(a, b):
    """Frame lists equal by file and offset; a file of None (perf's "inlined") matches
    any file at the same offset."""
    return len(a) == len(b) and all(
        x[1] == y[1] and None in (x[0], y[0]) or x == y for x, y in zip(a, b))


@pytest.mark.parametrize("program", sorted(PERF_PROGRAMS))
def test_same_callers_as_perf(daemons, tmp_path, program):
    """Each program recorded by perf's own DWARF unwinder (a copy of each sample's
    user stack, unwound in user space by libdw) at the same sched_switch: the heaviest
    stack has the very frames, root to leaf, of samples of perf's, and perf's most
    frequent stack at that leaf is one of offcpud's. Compared by file and offset: perf names some frames by other aliases of the
    same address (__GI___clock_nanosleep, __libc_start_main_impl), and an inlined frame
    in its place.

    perf is the reference, not the oracle. Where the two differ on these programs,
    they differ for these reasons, none of which the heaviest stacks meet:
    - perf copies 16 KiB of stack per sample and stops where the copy ends; offcpud
      reads the stack where it lies, up to 127 frames (a deep Python stack).
    - perf goes on past a frame whose CFI says the return address is undefined only if
      libdw does; neither names a frame below the thread's entry.
    - perf's first samples of a process are whole at once (it unwinds later, in user
      space, with every file at hand); offcpud's blocks that end before it has derived
      the rows of a program no process ran before are short (see DWARF_SHARE_MIN):
      never the heaviest here."""
    dwarf, _ = daemons
    argv, leaves = PERF_PROGRAMS[program](tmp_path)
    data = tmp_path / "perf.data"
    proc = subprocess.Popen(["perf", "record", "-q", "-e", "sched:sched_switch",
                             "--call-graph", "dwarf,16384", "-o", str(data), "--", *argv],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            preexec_fn=into_cgroup)
    assert proc.wait(timeout=120) == 0
    # perf's own child, the first process of that name (bash's children are sleep)
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "comm,pid"],
                         capture_output=True, text=True, check=True).stdout
    comm = Path(argv[0]).name
    pid = next(int(line.split()[-1]) for line in out.splitlines()
               if line.split() and line.split()[0] == comm)
    # (before its exec, perf's child is perf, waiting to be let go)
    reply = dwarf.dump_json("--pid", str(pid), "--comm", comm, "--since", "120s",
                            "--group-by", "pid", "--frame-detail")
    stacks = [s for s in reply["stacks"] if not in_execve(s)]
    ours = max(stacks, key=lambda s: s["total_ns"])
    assert ours["user"][-1:] and ours["user"][-1] in leaves, heaviest(stacks)
    mine = frames_of(ours)
    samples = perf_user_stacks(data, pid)
    # the heaviest stack is one perf found, frame for frame
    assert any(same_frames(mine, s) for s in samples), \
        f"no perf sample has\n{mine}\n{ours['user']}\nperf's at that leaf:\n" + "\n".join(
            str(s) for s in samples if same_frames(s[-1:], mine[-1:]))
    # and perf's most frequent stack at that leaf is one of ours (a leaf may be reached
    # from more than one place: sqlite3 syncs its journal and its database)
    theirs = [s for s in samples if same_frames(s[-1:], mine[-1:])]
    reference = max(theirs, key=theirs.count)
    assert any(same_frames(reference, frames_of(s)) for s in stacks), \
        f"perf's {theirs.count(reference)} samples of\n{reference}\nnot among ours:\n{heaviest(stacks)}"


def frames_of(stack):
    return tuple((Path(f["module"]).name if f.get("module") else None, f.get("offset"))
                 for f in stack["user_frames"])


def test_cpp_thread_reaches_start_thread(daemons):
    """A std::thread of a C++ program built without frame pointers: its stack runs
    through libstdc++'s thread routine to start_thread and clone3; a frame-pointer walk
    loses all of that."""
    dwarf, fp = daemons
    pid = run([str(BUILT_WORKLOADS / "cpp_thread")])
    for daemon, whole in ((dwarf, True), (fp, False)):
        _, stacks = entry_share(daemon, pid)
        sleeps = [s for s in stacks if s["user"][-1:] == ["clock_nanosleep"]]
        total = sum(s["total_ns"] for s in sleeps)
        rooted = sum(s["total_ns"] for s in sleeps
                     if s["user"][:2] == ["clone3", "start_thread"]
                     and "cpp_thread_sleeps_20x10ms()" in s["user"])
        assert total and (rooted >= DWARF_SHARE_MIN * total if whole
                          else rooted <= FRAME_POINTER_SHARE_MAX * total), why(daemon, sleeps)


def test_process_running_before_the_daemon(start_daemon, tmp_path):
    """perl (its code in libperl.so and libc: two libraries, more than a walk without a
    table can find) started before the daemon, blocking a second at a time: its table,
    read at start, is known to be its own by its start time, and its stacks are whole
    from its first block on (without, that block's second would not be)."""
    flag = tmp_path / "running"
    flag.touch()
    proc = subprocess.Popen(["/usr/bin/perl", "-e",
                             "select(undef, undef, undef, 1) while -e $ARGV[0]", str(flag)])
    time.sleep(0.2)
    d = start_daemon("--interval", "200ms")
    time.sleep(1.5)
    flag.unlink()
    assert proc.wait(timeout=60) == 0
    share, stacks = entry_share(d, proc.pid)
    assert share >= DWARF_SHARE_MIN, f"{share:.3f} reach an entry\n{why(d, stacks)}"


DEBUG_FRAME_CALLERS = ["main", "debug_frame_outer", "debug_frame_middle",
                       "debug_frame_sleeps_20x10ms"]


def eh_frame_covers(path, function):
    """Does the file's .eh_frame have an FDE for the function (readelf's own reading)?"""
    address = int(subprocess.run(["nm", str(path)], capture_output=True, text=True,
                                 check=True).stdout.split(f" t {function}\n")[0]
                  .rsplit("\n", 1)[-1], 16)
    # readelf may exit 1 for what it says of a debug link; its dump is whole all the same
    frames = subprocess.run(["readelf", "--debug-dump=frames", str(path)], capture_output=True,
                            text=True).stdout
    eh_frame = frames.split("Contents of the .eh_frame section", 1)[1]
    eh_frame = eh_frame.split("Contents of the ", 1)[0]
    for lo, hi in re.findall(r"pc=([0-9a-f]+)\.\.([0-9a-f]+)", eh_frame):
        if int(lo, 16) <= address < int(hi, 16):
            return True
    return False


@pytest.mark.parametrize("program", ["debug_frame_only", "debug_frame_split"])
def test_program_with_debug_frame_only(daemons, program):
    """A program built without unwind tables and without frame pointers: its own code's
    only call frame information is .debug_frame, in the file (debug_frame_only) or in a
    compressed separate debug file found by its .gnu_debuglink (debug_frame_split). Its
    sleeps reach the entry through main and the three functions below it. The daemon
    counts the file as one with rows from .debug_frame.

    That .eh_frame does not know its functions is checked on the file itself (readelf):
    a frame-pointer walk is no control here, as rbp left alone by code built without
    frame pointers sometimes still leads to main (seen once in CI)."""
    dwarf, _ = daemons
    path = BUILT_WORKLOADS / program
    for function in DEBUG_FRAME_CALLERS[1:]:
        assert not eh_frame_covers(path, function), (program, function)

    def from_debug_frame():
        return json.loads(dwarf.ctl("--json", "status").stdout)["unwind_files_debug_frame"]

    before = from_debug_frame()
    pid = run([str(path)])
    _, stacks = entry_share(dwarf, pid)
    sleeps = [s for s in stacks if s["user"][-1:] == ["clock_nanosleep"]]
    total = sum(s["total_ns"] for s in sleeps)

    def named(user):
        at = [user.index(f) if f in user else -1 for f in DEBUG_FRAME_CALLERS]
        return -1 not in at and at == sorted(at) and at[-1] - at[0] == len(at) - 1

    rooted = sum(s["total_ns"] for s in sleeps if reaches_entry(s) and named(s["user"]))
    assert total and rooted >= DWARF_SHARE_MIN * total, why(dwarf, sleeps)
    assert from_debug_frame() == before + 1


def daemon_map(daemon, name):
    """The id of the daemon's BPF map called name, from the map fds it holds: other
    daemons (this module's other one, any other test's) have maps of that name too."""
    fds = Path(f"/proc/{daemon.proc.pid}/fdinfo")
    ids = {int(line.split()[1]) for info in fds.iterdir()
           for line in info.read_text().splitlines() if line.startswith("map_id:")}
    for map_id in ids:
        show = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(map_id)],
                                         capture_output=True, text=True, check=True).stdout)
        if show.get("name") == name:
            return map_id
    raise AssertionError(f"the daemon holds no map {name}")


def rows_loaded_for(map_id, path):
    """Is the file at path among the files whose rows the walk can find (the key
    the kernel names it by: its device as major << 20 | minor, and its inode)?"""
    st = os.stat(path)
    key = {"dev": os.major(st.st_dev) << 20 | os.minor(st.st_dev), "ino": st.st_ino}
    dump = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id", str(map_id)],
                                     capture_output=True, text=True, check=True).stdout)
    return any(e.get("formatted", {}).get("key") == key for e in dump)


def wait_for(condition, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_rows_unloaded_when_no_process_maps_the_file(daemons, tmp_path):
    """A file's rows are loaded while a process maps it and unloaded once none does (after
    unwind-linger, 1 s here): a copy of cat (a file no other process maps) blocked reading
    a pipe, then let go. status says what the tables hold, and the walk's counters."""
    dwarf, _ = daemons
    copy = tmp_path / "fresh-cat"
    shutil.copy2("/usr/bin/cat", copy)
    files = daemon_map(dwarf, "unwind_files")
    proc = subprocess.Popen([str(copy)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            preexec_fn=into_cgroup)
    try:
        wait_for(lambda: rows_loaded_for(files, copy), "the copy's rows never loaded")
        status = json.loads(dwarf.ctl("status", "--json").stdout)
        assert status["unwind"] == "dwarf"
        assert status["unwind_files"] >= 1 and status["unwind_rows"] > 0, status
        assert status["unwind_memory_used"] == status["unwind_rows"] * 16, status
        assert 0 < status["unwind_memory_used"] <= status["unwind_memory_limit"], status
        assert status["unwind_processes"] >= 1 and status["unwind_table_reads"] >= 1, status
        counters = status["collector"]
        for name in ("unwind_walks", "unwind_frames", "unwind_reached_entry", "unwind_ended_null",
                     "unwind_no_table", "unwind_unknown_cfi", "unwind_read_error",
                     "unwind_truncated", "unwind_frame_pointer_frames", "unwind_vma_frames",
                     "unwind_mapped_frames"):
            assert name in counters, f"{name} not in {sorted(counters)}"
        assert counters["unwind_walks"] > 0 and counters["unwind_reached_entry"] > 0, counters
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    # dead processes are forgotten once per drain (200ms here); the walk no longer finds
    # the file's rows from a VMA at once (its inode may be another file's), and the rows
    # go after unwind-linger (only this module's programs ask for tables: others' can
    # only go)
    wait_for(lambda: not rows_loaded_for(files, copy), "the copy's rows still loaded")
    wait_for(lambda: json.loads(dwarf.ctl("status", "--json").stdout)["unwind_files_lingering"]
             == 0, "the copy's rows still linger")
    after = json.loads(dwarf.ctl("status", "--json").stdout)
    assert after["unwind_files"] < status["unwind_files"], (status, after)
    assert after["unwind_rows"] < status["unwind_rows"], (status, after)
    text = dwarf.ctl("status").stdout
    for line in ("unwind files", "unwind rows", "unwind memory", "unwind memory limit"):
        assert line in text, text


def test_program_started_again_is_read_once(daemons, tmp_path):
    """A program started again and again (a copy of sleep no process ran before, five runs
    one after another, as a cron job or a build runs its tools) has its rows derived once:
    each later run finds them still there (unwind-linger), and every run is whole."""
    dwarf, _ = daemons
    copy = tmp_path / "again-sleep"
    shutil.copy2("/usr/bin/sleep", copy)

    def status():
        return json.loads(dwarf.ctl("status", "--json").stdout)

    before = status()
    pids = []
    for _ in range(5):
        proc = subprocess.Popen([str(copy), "0.3"], preexec_fn=into_cgroup)
        assert proc.wait(timeout=10) == 0
        pids.append(proc.pid)
        # a drain (every 200ms) finds it gone: its files linger
        time.sleep(0.4)
    after = status()
    assert after["unwind_linger_reuses"] - before["unwind_linger_reuses"] >= 4, (before, after)
    # only this module's programs are traced, one at a time: the copy read once (five
    # times with unwind-linger = 0), whatever else of its files was not in use
    assert after["unwind_files_read"] - before["unwind_files_read"] <= 2, (before, after)
    for pid in pids:
        share, stacks = entry_share(dwarf, pid)
        assert share >= 0.95, (pid, share, stacks)


def test_copies_share_rows(daemons, tmp_path):
    """Two copies of one program (distinct files, as a container image's are under
    inodes of their own), both running: the second names the first's rows, told alike
    by a digest of their call frame information, neither derived again nor taking room
    twice; and both are as whole as a program whose rows were derived. The program is
    one of this build's (known_periods: three threads that sleep): the daemon reads
    every process of the host at its start, and a copy of a program that one of them
    runs is shared from the first (a `sleep` anywhere on a CI host failed this test
    with Debian's sleep)."""
    dwarf, _ = daemons
    copies = [tmp_path / "copy-a" / "known_periods", tmp_path / "copy-b" / "known_periods"]
    for copy in copies:
        copy.parent.mkdir()
        shutil.copy2(BUILT_WORKLOADS / "known_periods", copy)

    def status():
        return json.loads(dwarf.ctl("status", "--json").stdout)

    # nothing of earlier tests' programs left (unwind-linger = 1 s): the first copy's
    # rows are derived, and this test's rows all go once its programs are gone
    wait_for(lambda: status()["unwind_files_lingering"] == 0, "earlier rows still linger")
    before = status()
    # about 3 s and 1.5 s
    first = subprocess.Popen([str(copies[0]), "--long", "2"], preexec_fn=into_cgroup,
                             stdout=subprocess.DEVNULL)
    wait_for(lambda: status()["unwind_files_read"] > before["unwind_files_read"],
             "the first copy not read")
    one = status()
    second = subprocess.Popen([str(copies[1]), "--long", "1"], preexec_fn=into_cgroup,
                              stdout=subprocess.DEVNULL)
    wait_for(lambda: status()["unwind_files_shared"] > one["unwind_files_shared"],
             "the second copy's rows not shared")
    both = status()
    assert both["unwind_files_read"] == one["unwind_files_read"], (one, both)
    assert both["unwind_files"] == one["unwind_files"] + 1, (one, both)
    assert both["unwind_rows"] == one["unwind_rows"], (one, both)
    assert first.wait(timeout=10) == 0 and second.wait(timeout=10) == 0
    assert "unwind files shared" in dwarf.ctl("status").stdout
    # the rows go once, with the last file that names them (a process the daemon read
    # at its start may have gone meanwhile: fewer, never more)
    wait_for(lambda: status()["unwind_files_lingering"] == 0 and
             status()["unwind_files"] <= before["unwind_files"], "the copies' rows still there")
    assert status()["unwind_rows"] <= before["unwind_rows"], (before, status())
    for proc in (first, second):
        share, stacks = entry_share(dwarf, proc.pid)
        assert share >= 0.95, (proc.pid, share, stacks)


def test_vfork_children_take_their_parents_table(daemons):
    """vfork children that block before they exec (vfork_waits' sleep 5 ms in the
    parent's address space, as a posix_spawn child may page in or wait on a pipe) take
    the parent's table, not a reading of the same mappings again; their sleeps named in
    the parent's code are walked whole through it."""
    dwarf, _ = daemons
    forks = 50

    def status():
        return json.loads(dwarf.ctl("status", "--json").stdout)

    before = status()
    proc = subprocess.Popen([str(BUILT_WORKLOADS / "vfork_waits"), "--forks", str(forks)],
                            preexec_fn=into_cgroup, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    # a child asks at its first block (the fork itself is not announced for a vfork);
    # without the parent's table taken, a few of 50 were inherited at most
    grew = status()["unwind_tables_inherited"] - before["unwind_tables_inherited"]
    assert grew >= forks * 9 // 10, (before, status())
    stacks = drained_after(dwarf, time.time_ns(), "--comm", "vfork_waits")["stacks"]
    # up to a fifth of the children's time here is "[unknown];[unknown]", with the
    # parent's table taken or the child's read alike: frames of a child gone before they
    # were named, with no mappings of its own to name them by (the naming side's gap)
    sleeps = [s for s in stacks if "do_nanosleep" in s["kernel"] and
              "wait_for_vfork_child_5ms" in s["user"]]
    total = sum(s["total_ns"] for s in sleeps)
    whole = sum(s["total_ns"] for s in sleeps if reaches_entry(s))
    assert total >= forks * 2_000_000 and whole >= DWARF_SHARE_MIN * total, \
        heaviest(sleeps)


# Of a thread's time in its wait, the share walked whole: every block, the first too.
WHOLE_SHARE_MIN = 0.99
# A call can wait without a context switch: on a VM whose vCPU is descheduled (steal
# time) between arming the timer and schedule(), the wait passes before the thread
# leaves the CPU; its own clock (wall minus thread CPU time) counts it, the scheduler
# never sees it (about once in 500 calls here, see test_dump.py), and a pipe read may
# find its byte there. So the clocks are compared over the calls seen, within 2% (one
# 10 ms sleep of short_lived's 20 is 5%).
COUNT_SLACK = 0.05
OWN_CLOCK_REL = 0.02


def measured(tmp, name, *args):
    """Run a copy of a test workload (a file no daemon has read) out of a cold cache, a
    new process in the traced cgroup: the daemon reads the program's rows from the disk
    while it runs. Its own measures."""
    copy = tmp / name
    shutil.copy2(BUILT_WORKLOADS / name, copy)
    cold(copy)
    res = subprocess.run([str(copy), *args], capture_output=True, text=True,
                         timeout=60, check=True, preexec_fn=into_cgroup)
    return json.loads(res.stdout.strip().splitlines()[-1])


def assert_whole(daemon, truth, function, wait, calls, offcpu_ns, tid=None):
    """The time in stacks of the thread (tid: a key of truth; else the process) that
    name function and reach its entry is the workload's own measure, over the calls
    that switched out: every block in the kernel's wait (a short stack too, which would
    not name function or reach the entry) counts as a call seen."""
    which = ["--pid", str(truth["pid"])] + (["--tid", str(truth[tid])] if tid else [])
    # the workload has ended: its last waits are charged as they end, drained after
    drained_after(daemon, time.time_ns(), "--pid", str(truth["pid"]))
    _, stacks = entry_share(daemon, truth["pid"])
    if tid:
        stacks = daemon.dump_json(*which, "--since", "120s", "--frame-detail")["stacks"]
    by_state = daemon.dump_json(*which, "--since", "120s", "--group-by", "state")["stacks"]
    seen = sum(s["count"] for s in by_state if s["state"] == "S" and wait in s["kernel"])
    assert (1 - COUNT_SLACK) * truth[calls] <= seen <= truth[calls], \
        f"{seen} of {truth[calls]} calls seen\n{why(daemon, stacks)}"
    waits = [s for s in stacks if wait in s["kernel"]]
    whole_waits = sum(s["total_ns"] for s in waits if function in s["user"] and reaches_entry(s))
    assert whole_waits >= WHOLE_SHARE_MIN * sum(s["total_ns"] for s in waits), \
        f"{function}: {whole_waits} ns of the waits whole\n{why(daemon, waits)}"
    whole = sum(s["total_ns"] for s in stacks if function in s["user"] and reaches_entry(s))
    expected = truth[offcpu_ns] * seen / truth[calls]
    assert within(whole, expected, OWN_CLOCK_REL), \
        f"{function}: {whole} ns whole, {expected:.0f} measured\n{why(daemon, stacks)}"


def test_first_blocks_of_new_threads_whole(daemons, tmp_path):
    """A new process's new threads (a sleeper, a pipe reader), blocked from their first
    instructions on: 99% of their time in the wait is in stacks that name the blocking
    function and reach clone3 (a block walked short, before the program's rows were
    read, falls out), and that is their own measure of it. A first sleep lost is 1%."""
    dwarf, _ = daemons
    truth = measured(tmp_path, "sleep_and_pipe")
    assert_whole(dwarf, truth, "block_in_nanosleep_100x10ms", "do_nanosleep", "nanosleep_calls",
                 "nanosleep_offcpu_ns", tid="nanosleep_tid")
    assert_whole(dwarf, truth, "block_in_pipe_read", "anon_pipe_read", "pipe_calls",
                 "pipe_offcpu_ns", tid="pipe_tid")


def fork_children(daemon, *args):
    """Run fork_children in the traced cgroup to its end, once drained: (its truth, the
    daemon's status before and after)."""
    before = json.loads(daemon.ctl("status", "--json").stdout)
    res = subprocess.run([str(BUILT_WORKLOADS / "fork_children"), *args], capture_output=True,
                         text=True, timeout=60, check=True, preexec_fn=into_cgroup)
    truth = json.loads(res.stdout.strip().splitlines()[-1])
    drained_after(daemon, time.time_ns(), "--pid", str(truth["pid"]))
    after = json.loads(daemon.ctl("status", "--json").stdout)
    return truth, before, after


def sleeps_in(daemon, pid, function):
    """The user stacks (root first) of pid's sleeps that name function, with their time."""
    stacks = daemon.dump_json("--pid", str(pid), "--since", "120s", "--frame-detail")["stacks"]
    return [(tuple(s["user"]), s["total_ns"]) for s in stacks
            if "do_nanosleep" in s["kernel"] and function in s["user"]]


def test_forked_children_take_their_parents_tables(daemons):
    """A parent that has run a while forks 20 children at once, as a pre-forking server
    does: no child's mappings are read, neither for its unwind table nor to name its
    frames (both are its parent's, taken with the files they hold). What they give is
    what a read gives: each child's sleeps are in the very stack of the parent's own
    sleeps in the same function (the parent's table was read), whole, and named once
    the children are gone."""
    dwarf, _ = daemons
    truth, before, after = fork_children(dwarf, "20")

    def grew(key):
        return after[key] - before[key]

    # the parent's own reads only (its exec, its libraries once mapped, its first
    # block: 2 to 6 seen), none for a child
    assert grew("unwind_tables_inherited") == 20 and grew("unwind_table_reads") <= 10, \
        (before, after)
    assert grew("process_maps_inherited") == 20 and grew("process_maps_reads") <= 10, \
        (before, after)
    parents = sleeps_in(dwarf, truth["pid"], "forked_sleep_chain")
    assert parents and all(reaches_entry({"user": stack}) for stack, _ in parents), parents
    for child in truth["children"]:
        mine = sleeps_in(dwarf, child, "forked_sleep_chain")
        # (the kernel's side of a sleep may differ: a fault on the way in)
        assert {stack for stack, _ in mine} == {stack for stack, _ in parents}, \
            (child, [";".join(stack) for stack, _ in mine + parents])
        # four sleeps of 50 ms; a sleep may wait without a switch (see COUNT_SLACK)
        assert sum(ns for _, ns in mine) >= 0.7 * 4 * 50e6, (child, mine)


def test_execs_taken_together_read_once(daemons):
    """Programs that exec and block while the daemon lags behind (held stopped here, as a
    busy host's is by a storm of new programs): each one's exec and first block are
    taken together, and its mappings are read once to name its frames, after ld.so
    mapped its libraries, where they were read at the exec and again at the block."""
    dwarf, _ = daemons
    programs = 10

    def reads():
        return json.loads(dwarf.ctl("status", "--json").stdout)["process_maps_reads"]

    before = reads()
    os.kill(dwarf.proc.pid, signal.SIGSTOP)
    try:
        procs = [subprocess.Popen(["/usr/bin/sleep", "0.5"], preexec_fn=into_cgroup)
                 for _ in range(programs)]
        time.sleep(0.3)  # all exec'd and asleep: announced, none taken
    finally:
        os.kill(dwarf.proc.pid, signal.SIGCONT)
    assert all(proc.wait(timeout=10) == 0 for proc in procs)
    grew = reads() - before
    # a child may block once in the cgroup before its exec: at most a few more
    assert programs <= grew <= programs + 3, grew
    for proc in procs:
        deadline = time.monotonic() + 10
        while True:  # a drain after the exit names its last sleep
            stacks = dwarf.dump_json("--pid", str(proc.pid), "--since", "60s")["stacks"]
            sleeps = [s["user"] for s in stacks if "do_nanosleep" in s["kernel"]]
            if sleeps or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        # libc named: read after ld.so mapped it
        assert sleeps and all("__libc_start_main" in user for user in sleeps), (proc.pid, stacks)


def test_forked_children_of_code_mapped_since_read(daemons, tmp_path):
    """The parent loads a library (a copy: new rows) just before it forks, after its table
    was read; the children sleep inside it. Its table does not hold that library: the
    children do not take it (a table taken as whole would end their stacks there), nor
    the parent's mappings read before (those are read again, once, and taken). Their
    stacks are whole all the same, and named. Their own tables are read, the files the
    parent's table holds (the program, libc) told by device and inode without being
    opened: the stacks through them are whole too."""
    dwarf, _ = daemons
    lib = tmp_path / "libblock_at_once_forked.so"
    shutil.copy2(BUILT_WORKLOADS / "libblock_at_once.so", lib)
    truth, before, after = fork_children(dwarf, "4", str(lib))
    assert after["unwind_tables_inherited"] == before["unwind_tables_inherited"], (before, after)
    # the naming side reads the parent again, once, and the children take that (a
    # program that maps code before it forks, as perf does: each child was read)
    assert after["process_maps_inherited"] - before["process_maps_inherited"] == 4, \
        (before, after)
    assert after["unwind_files_held_known"] - before["unwind_files_held_known"] >= 4 * 2, \
        (before, after)
    for child in truth["children"]:
        mine = sleeps_in(dwarf, child, "library_block_for")
        whole = sum(ns for stack, ns in mine if reaches_entry({"user": stack}))
        assert whole >= 0.95 * 1e9, (child, mine)


@pytest.mark.parametrize("library", ["libblock_at_once.so", "libblock_at_once_x86_64_unwind.so"])
def test_dlopened_threads_whole(daemons, tmp_path, library):
    """A library dlopened (a copy: its rows are new; built as Debian builds, without
    frame pointers) whose two threads sleep 20 s from their start: whole (clone3,
    start_thread, the library's frames) for their whole waits, within 2% of their own
    measure: the flips before the rows come walk on once they are there. Also linked by
    lld with its .eh_frame typed SHT_X86_64_UNWIND, as lld 15 and later type it
    (libLLVM-15): read like any .eh_frame."""
    dwarf, _ = daemons
    lib = tmp_path / "libblock_at_once_copy.so"
    shutil.copy2(BUILT_WORKLOADS / library, lib)
    cold(lib)
    truth = measured(tmp_path, "dlopen_threads", str(lib), "2", "20")
    assert_whole(dwarf, truth, "library_block_for", "do_nanosleep", "nanosleep_calls",
                 "nanosleep_offcpu_ns")


def test_signal_handler_work_whole(daemons, tmp_path):
    """signal_worker, as postgres' postmaster: a worker forked from a SIGALRM handler,
    and the handler's own sleeps. Both walk through the signal frame (libc's
    __restore_rt) into the code the signal interrupted, server_loop, and on to _start:
    99% of their sleeps whole, the handler below server_loop in each."""
    dwarf, _ = daemons
    copy = tmp_path / "signal_worker"
    shutil.copy2(BUILT_WORKLOADS / "signal_worker", copy)
    res = subprocess.run([str(copy)], capture_output=True, text=True, timeout=60, check=True,
                         preexec_fn=into_cgroup)
    for truth in map(json.loads, res.stdout.strip().splitlines()):
        assert_whole(dwarf, truth, "on_alarm", "do_nanosleep", "nanosleep_calls",
                     "nanosleep_offcpu_ns")
        _, stacks = entry_share(dwarf, truth["pid"])
        handled = [s["user"] for s in stacks if "on_alarm" in s["user"] and reaches_entry(s)]
        assert all("server_loop" in u[:u.index("on_alarm")] and "main" in u for u in handled), \
            why(dwarf, stacks)
    assert dwarf.call("io.offcpud.Status")["parameters"]["collector"]["unwind_signal_frames"] > 0


POSTGRES = Path("/usr/lib/postgresql/15/bin")
AS_POSTGRES = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]


def test_postgres_under_pgbench_whole(daemons, tmp_path):
    """Debian's postgres 15, a cluster of its own under pgbench: its postmaster starts
    the autovacuum launcher, the WAL writer and the logical replication launcher from a
    signal handler, so their stacks run through libc's signal frame. 95% of the
    server's off-CPU time (its processes, by name) in stacks that reach an entry; the
    background processes' waits (WaitLatch) reach it through the signal frame."""
    dwarf, _ = daemons
    # pytest's tmp_path is root's alone: postgres needs a path it may walk
    home = Path(tempfile.mkdtemp(prefix="offcpud-pg-", dir="/var/tmp"))
    shutil.chown(home, "postgres", "postgres")
    data, sock = home / "data", home
    pg = lambda *argv: subprocess.run([*AS_POSTGRES, *argv], check=True, capture_output=True,
                                      text=True, timeout=120, preexec_fn=into_cgroup)
    try:
        run_pgbench(pg, data, sock)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    stacks = dwarf.dump_json("--cgroup", "/" + CGROUP.name, "--comm", "postgres", "--since",
                             "120s", "--frame-detail")["stacks"]
    stacks = [s for s in stacks if not in_execve(s)]
    total = sum(s["total_ns"] for s in stacks)
    whole = sum(s["total_ns"] for s in stacks if reaches_entry(s))
    assert total, why(dwarf, stacks)
    print(f"\npostgres 15 under pgbench: {whole / total:.3f} of off-CPU time in stacks that "
          "reach an entry")
    assert whole >= DWARF_SHARE_MIN * total, \
        f"{whole / total:.3f} reach an entry\n{why(dwarf, stacks)}"
    waits = [s for s in stacks if "WaitLatch" in s["user"] and "PostmasterMain" in s["user"]]
    assert any("AuxiliaryProcessMain" in s["user"] for s in waits), heaviest(stacks)


def test_postgres_same_callers_as_perf(daemons, tmp_path):
    """postgres 15 run by perf record --call-graph dwarf at sched_switch (pgbench: init,
    then 2 s of one client), traced by offcpud at the same time: of perf's samples that
    it unwinds to an entry, 90% have their frames, by file and offset, at the leaf end
    of one of offcpud's postgres stacks."""
    dwarf, _ = daemons
    home = Path(tempfile.mkdtemp(prefix="offcpud-pg-", dir="/var/tmp"))
    shutil.chown(home, "postgres", "postgres")
    data, sock = home / "data", home
    pg = lambda *argv, check=True: subprocess.run(  # noqa: E731
        [*AS_POSTGRES, *argv], check=check, capture_output=True, text=True, timeout=120,
        preexec_fn=into_cgroup)
    perf_data = tmp_path / "perf.data"
    # not setpriv: perf would keep its libc mapping after the exec (see run_as.c)
    user = pwd.getpwnam("postgres")
    try:
        pg(str(POSTGRES / "initdb"), "-D", str(data))
        perf = subprocess.Popen(
            ["perf", "record", "-q", "-e", "sched:sched_switch", "--call-graph", "dwarf,16384",
             "-o", str(perf_data), "--", str(BUILT_WORKLOADS / "run_as"), str(user.pw_uid),
             str(user.pw_gid), str(POSTGRES / "postgres"), "-D",
             str(data), "-p", "5499", "-k", str(sock)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=into_cgroup)
        try:
            deadline = time.monotonic() + 60
            while pg(str(POSTGRES / "pg_isready"), "-h", str(sock), "-p", "5499",
                     check=False).returncode != 0:
                assert time.monotonic() < deadline and perf.poll() is None, "postgres not up"
                time.sleep(0.2)
            pgbench = [str(POSTGRES / "pgbench"), "-h", str(sock), "-p", "5499"]
            pg(*pgbench, "-i", "-s", "1", "postgres")
            pg(*pgbench, "-c", "1", "-T", "2", "postgres")
        finally:
            pg(str(POSTGRES / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop",
               check=False)
            assert perf.wait(timeout=120) == 0
    finally:
        shutil.rmtree(home, ignore_errors=True)
    stacks = dwarf.dump_json("--cgroup", "/" + CGROUP.name, "--comm", "postgres", "--since",
                             "120s", "--frame-detail")["stacks"]
    mine = {frames_of(s) for s in stacks}
    out = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "comm,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    samples = [perf_sample(lines[1:]) for lines in
               (sample.strip().splitlines() for sample in out.split("\n\n"))
               if lines and lines[0].strip() == "postgres"]
    whole = [frames for root, frames in samples if root in ENTRIES]
    found = sum(any(same_frames(frames, m[-len(frames):]) for m in mine) for frames in whole)
    print(f"\npostgres 15: perf unwinds {len(whole)} of {len(samples)} samples to an "
          f"entry; {found / max(len(whole), 1):.3f} of them at the end of a stack of offcpud's")
    assert len(whole) >= 100 and found >= SAME_AS_PERF_MIN * len(whole), \
        (len(whole), len(samples), found)


def run_pgbench(pg, data, sock):
    """A cluster at data, its socket in sock, port 5499: initialised, started, 10 s of
    pgbench (4 clients), stopped."""
    pg(str(POSTGRES / "initdb"), "-D", str(data))
    pg(str(POSTGRES / "pg_ctl"), "-D", str(data), "-o", f"-p 5499 -k {sock}", "-l",
       str(sock / "log"), "-w", "start")
    try:
        pg(str(POSTGRES / "pgbench"), "-h", str(sock), "-p", "5499", "-i", "-s", "2", "postgres")
        pg(str(POSTGRES / "pgbench"), "-h", str(sock), "-p", "5499", "-c", "4", "-j", "2",
           "-T", "10", "postgres")
    finally:
        pg(str(POSTGRES / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")


def test_200ms_process_whole(daemons, tmp_path):
    """short_lived lives 200 ms, sleeping from its start: 99% of its time asleep in
    stacks that name the sleeping function and reach _start (its first sleep is 5%),
    and that is its own measure of it."""
    dwarf, _ = daemons
    truth = measured(tmp_path, "short_lived")
    assert_whole(dwarf, truth, "short_lived_sleep_20x10ms", "do_nanosleep", "nanosleep_calls",
                 "nanosleep_offcpu_ns")


# Rows that come late, as on a host whose daemon is busy: a daemon that reads each
# table it is asked for a while after (OFFCPUD_TABLE_DELAY_MS: 500 ms, which a new
# process's asks, at its fork and again at its exec, make 1-1.5 s). A block still short at
# its end is held until a flip finds its rows, and a task still blocked at a flip
# leaves its time for a later one: whole, for the whole wait. Past OFFCPU_DEFER_MAX_NS
# (5 s) after the block, it is charged as it is, and counted.
def late_daemon(tmp, delay_ms):
    (tmp / "offcpud.conf").write_text(f"unwind = dwarf\ntrace-cgroups = {CGROUP}\n")
    return Daemon(tmp, "--interval", "200ms", "--config", str(tmp / "offcpud.conf"),
                  binary=PLAIN_BUILD / "daemon" / "offcpud",
                  env={"OFFCPUD_TABLE_DELAY_MS": str(delay_ms)})


def counters(daemon):
    return daemon.call("io.offcpud.Status")["parameters"]["collector"]


def test_rows_late_stock_program_first_sleep_whole(daemons, tmp_path):
    """A fresh copy of coreutils' sleep, 1.2 s from its start, rows late: its
    one block whole, all of it (flips before the rows leave their part for later)."""
    late = late_daemon(tmp_path, 500)
    copy = tmp_path / "fresh-sleep"
    shutil.copy2("/usr/bin/sleep", copy)
    cold(copy)
    pid = run([str(copy), "1.2"])
    _, stacks = entry_share(late, pid)
    naps = [s for s in stacks if "do_nanosleep" in s["kernel"]]
    total = sum(s["total_ns"] for s in naps)
    assert within(total, 1.2e9, 0.02), f"{total} ns asleep\n{why(late, naps)}"
    whole = sum(s["total_ns"] for s in naps if reaches_entry(s))
    assert whole >= 0.98 * total, f"{whole} of {total} ns whole\n{why(late, naps)}"
    late.stop()


def test_vfork_child_exec_read_once(daemons, tmp_path):
    """vfork children that block in their parent's address space (an ask of that
    address space), then exec Debian's sleep before the daemon takes the ask, as
    posix_spawn children of a busy host do: each child's table is read once, at its
    exec's ask, the earlier ask passed over as superseded (read, it would be the new
    image's mappings labelled with the old address space, and read again), and the
    copy of that block's stack, walked on at flips, asks for no table of an address
    space the child has left (it did at every flip, each read labelling the new
    image's mappings with the old address space); the children's sleeps are whole."""
    late = late_daemon(tmp_path, 100)  # each ask taken 100 ms after the one before
    forks, exec_ms = 10, 3000

    def tables():
        return json.loads(late.ctl("status", "--json").stdout)

    before = tables()
    proc = subprocess.run([str(BUILT_WORKLOADS / "vfork_waits"), "--forks", str(forks),
                           "--exec-ms", str(exec_ms)], preexec_fn=into_cgroup,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    after, deadline = tables(), time.monotonic() + 30
    while time.monotonic() < deadline:  # until the asks are all taken: no read for 0.6 s
        time.sleep(0.6)
        now = tables()
        if now["unwind_table_reads"] == after["unwind_table_reads"]:
            break
        after = now
    superseded = after["unwind_asks_superseded"] - before["unwind_asks_superseded"]
    reads = after["unwind_table_reads"] - before["unwind_table_reads"]
    # the parent's own table is read too (its exec); without the ask passed over, a
    # child's table was read twice, and again at flips
    assert superseded >= forks and reads <= forks + 3, (superseded, reads)
    naps = [s for s in drained_after(late, time.time_ns(), "--comm", "sleep")["stacks"]
            if "do_nanosleep" in s["kernel"]]
    total = sum(s["total_ns"] for s in naps)
    whole = sum(s["total_ns"] for s in naps if reaches_entry(s))
    assert total >= 0.95 * forks * exec_ms * 1e6 and whole >= 0.98 * total, heaviest(naps)
    late.stop()


def test_rows_too_late_charged_short_and_counted(daemons, tmp_path):
    """Rows 8 s late, short_lived's 200 ms: each block held for 5 s, then charged as it
    is. None of its time lost (its own measure, within 2%), and each counted."""
    late = late_daemon(tmp_path, 8000)
    truth = measured(tmp_path, "short_lived")
    time.sleep(5.6)  # the bound, and a flip past it
    by_state = late.dump_json("--pid", str(truth["pid"]), "--since", "120s",
                              "--group-by", "state")["stacks"]
    naps = [s for s in by_state if s["state"] == "S" and "do_nanosleep" in s["kernel"]]
    seen = sum(s["count"] for s in naps)
    assert (1 - COUNT_SLACK) * truth["nanosleep_calls"] <= seen <= truth["nanosleep_calls"], naps
    total = sum(s["total_ns"] for s in naps)
    assert within(total, truth["nanosleep_offcpu_ns"] * seen / truth["nanosleep_calls"],
                  OWN_CLOCK_REL), f"{total} ns of {truth}"
    held = counters(late)
    assert held["deferred_charged_short"] > 0, held
    late.stop()


def load_address(path: Path, offset: int) -> int:
    """Where a file offset of an x86-64 ELF file is loaded, by its PT_LOAD headers."""
    data = path.read_bytes()
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        kind, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if kind == 1 and p_offset <= offset < p_offset + p_filesz:
            return p_vaddr + offset - p_offset
    raise AssertionError(f"{path}: offset {offset:#x} in no PT_LOAD")


def assert_named_as_addr2line(daemon, stacks, program):
    """Every frame of the Go program's own named, 0 bare +0x frames; the function that
    holds each address as go tool addr2line names it. The calls inlined at an address
    come after its frame (root first), at the same offset: a run of frames at one
    offset is the function that holds it, then its inlined calls."""
    holders, named = set(), set()
    for s in stacks:
        last = None
        for f in s.get("user_frames") or []:
            if f.get("module") != str(program):
                last = None
                continue
            named.add(f["name"])
            if f["offset"] != last:
                holders.add((f["name"], f["offset"]))
            last = f["offset"]
    assert holders and not any("+0x" in name for name in named), why(daemon, stacks)
    addresses = "".join(f"{load_address(program, off):#x}\n" for _, off in sorted(holders))
    go = subprocess.run(["go", "tool", "addr2line", str(program)], input=addresses,
                        capture_output=True, text=True, check=True).stdout.splitlines()
    theirs = dict(zip((off for _, off in sorted(holders)), go[0::2]))
    assert all(theirs[off] == name for name, off in holders), \
        sorted((name, theirs[off]) for name, off in holders if theirs[off] != name)


def test_go_without_symbols_named_as_go_names_it(daemons, tmp_path):
    """A Go program built by Debian's golang-go with -ldflags=-s -w (no .symtab, no
    DWARF: as Debian ships Go programs): every frame of its own named from .gopclntab,
    0 bare +0x frames, each as go tool addr2line names its address; its stacks reach
    Go's entries; the main goroutine's sleeps, whole, from runtime.goexit."""
    dwarf, _ = daemons
    truth = measured(tmp_path, "go_sleeper")
    share, stacks = entry_share(dwarf, truth["pid"])
    print(f"\ngo_sleeper: {share:.3f} of off-CPU time in stacks that reach an entry")
    assert share >= DWARF_SHARE_MIN, why(dwarf, stacks)
    # and not past the outermost: what a frame pointer gives beyond them is no caller;
    # nor, as callers, past the stack switches: beyond mcall is the goroutine it parked
    # (an idle thread's wait is not that goroutine's), beyond clone the parent's stack
    outermost = {"runtime.goexit", "runtime.mstart", "runtime.rt0_go"}
    switches = {"runtime.mcall", "runtime.clone"}
    assert not any(set(s["user"][1:]) & outermost or set(s["user"][1:-1]) & switches
                   for s in stacks), why(dwarf, stacks)
    parked = [s for s in stacks if "runtime.park_m" in s["user"]]
    assert parked and all(s["user"][0] == "runtime.mcall" for s in parked), why(dwarf, parked)
    assert_named_as_addr2line(dwarf, stacks, tmp_path / "go_sleeper")

    main = ["runtime.goexit", "runtime.main", "main.main", "main.sleepLoop", "main.sleepOnce10ms",
            "syscall.Nanosleep"]
    whole = sum(s["total_ns"] for s in stacks
                if s["user"][:len(main)] == main and "do_nanosleep" in s["kernel"])
    assert within(whole, truth["nanosleep_ns"], 0.03), (whole, truth, why(dwarf, stacks))


def test_go_inlined_calls_as_go_expands_them(daemons, tmp_path):
    """A Go program (no symbols) whose blocking call is reached through calls the
    compiler inlined: one address of it stands for several frames, named as the program
    itself names them (runtime.CallersFrames, which expands inlined calls) and as go tool
    pprof shows them, the inlined callees after the function that holds them; the
    holders as go tool addr2line names them; its sleeps, whole, under that stack."""
    dwarf, _ = daemons
    truth = measured(tmp_path, "go_inlined")
    share, stacks = entry_share(dwarf, truth["pid"])
    print(f"\ngo_inlined: {share:.3f} of off-CPU time in stacks that reach an entry")
    assert share >= DWARF_SHARE_MIN, why(dwarf, stacks)
    assert_named_as_addr2line(dwarf, stacks, tmp_path / "go_inlined")
    theirs = truth["frames"][::-1]  # root first, as ours
    assert {"main.innerInlined", "main.middleInlined", "main.outerInlined"} <= set(theirs), theirs
    whole = sum(s["total_ns"] for s in stacks
                if s["user"][:len(theirs)] == theirs and "do_nanosleep" in s["kernel"])
    assert within(whole, truth["nanosleep_ns"], 0.03), (whole, truth, why(dwarf, stacks))


def test_blocks_inside_execve_are_exec(daemons, tmp_path):
    """A process blocked inside execve (reading its new program from a cold cache) has
    no user stack: its registers are the old image's, in an address space going away.
    Its user stack is the marker [exec], never [unknown] or the old image's frames."""
    dwarf, _ = daemons
    program = tmp_path / "perl"
    shutil.copy2("/usr/bin/perl", program)
    cold(program)
    proc = subprocess.Popen(["/bin/sh", "-c", f"exec {program} -e 1"], preexec_fn=into_cgroup)
    assert proc.wait(timeout=60) == 0
    # a query drains what is collected at most once an interval: until a drain after its
    # end, the process may not have been seen (CI: TaskNotSeen)
    drained_after(dwarf, time.time_ns())
    deadline = time.monotonic() + 10
    while True:
        stacks = dwarf.dump_json("--pid", str(proc.pid), "--since", "120s")["stacks"]
        inside = [s for s in stacks if "bprm_execve" in s["kernel"]]
        if inside or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert inside, heaviest(stacks)
    assert all(s["user"] == ["[exec]"] for s in inside), heaviest(inside)
