"""Threads of Debian's python3 that block, each from a chain of three named
functions: in time.sleep, a threading.Lock, queue.Queue.get, a socket recv and
os.fsync (waits), or two threads that take the GIL from each other (gil), or a
thread that runs Python while another holds the GIL in C code, libc's usleep
called through ctypes.PyDLL, which keeps it (gil_held), or a thread blocked on
a lock for the whole run, from a chain of three (stuck); blocked in a C extension
it imports just before (dlopen); sleeping under 22 frames of a function with 40
locals, one of them a generator's, so that its frames span pages of the thread's
data stack and one lies elsewhere, in the generator (deep).

Usage: python_waits.py waits|gil|gil_held|stuck|dlopen|deep SECONDS DIR
Prints "ready PID" once its threads run, then, at the end, a JSON line: for
each blocking thread its tid and its frames as traceback saw them while it
blocked (function, file, line; outermost first)."""
import collections
import ctypes
import json
import os
import queue
import socket
import sys
import threading
import time
import traceback

MODE, SECONDS, DIR = sys.argv[1], float(sys.argv[2]), sys.argv[3]
stop = threading.Event()
seen = {}  # thread name: (tid, frames)


def sleep_3():
    while not stop.is_set():
        time.sleep(0.02)


def sleep_2():
    sleep_3()


def sleep_1():
    sleep_2()


held = threading.Lock()
held.acquire()


def lock_3():
    while not held.acquire(timeout=0.05) and not stop.is_set():
        pass


def lock_2():
    lock_3()


def lock_1():
    lock_2()


jobs = queue.Queue()


def queue_3():
    while not stop.is_set():
        try:
            jobs.get(timeout=0.05)
        except queue.Empty:
            pass


def queue_2():
    queue_3()


def queue_1():
    queue_2()


left, right = socket.socketpair()
left.settimeout(0.05)


def recv_3():
    while not stop.is_set():
        try:
            left.recv(1)
        except socket.timeout:
            pass


def recv_2():
    recv_3()


def recv_1():
    recv_2()


def fsync_3():
    fd = os.open(os.path.join(DIR, "fsync-me"), os.O_WRONLY | os.O_CREAT, 0o600)
    while not stop.is_set():
        os.write(fd, b"x" * 4096)
        os.fsync(fd)
    os.close(fd)


def fsync_2():
    fsync_3()


def fsync_1():
    fsync_2()


def spin_3():
    n = 0
    while not stop.is_set():
        n += 1


def spin_2():
    spin_3()


def spin_1():
    spin_2()


def hold_3():
    libc = ctypes.PyDLL(None)  # PyDLL: the call keeps the GIL
    while not stop.is_set():
        libc.usleep(20000)


def hold_2():
    hold_3()


def hold_1():
    hold_2()


never = threading.Lock()
never.acquire()


def stuck_3():
    never.acquire()


def stuck_2():
    stuck_3()


def stuck_1():
    stuck_2()


go = threading.Event()


def dlopen_3():
    go.wait()
    # a C extension mapped only now, its rows not read yet when the thread blocks
    # in it: one wait of most of the run (kind 1: a semaphore, never posted)
    import _multiprocessing
    sem = _multiprocessing.SemLock(1, 0, 1, f"/offcpud-waits-{os.getpid()}", True)
    sem.acquire(True, SECONDS * 0.6)


def dlopen_2():
    dlopen_3()


def dlopen_1():
    dlopen_2()


def deep_sleep():
    while not stop.is_set():
        time.sleep(0.02)


def deep(n):
    (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18,
     a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35,
     a36, a37, a38, a39) = (n,) * 40  # noqa: F841: 40 locals, a frame of some 400 bytes
    if n == 0:
        return deep_sleep()
    if n == 10:
        return next(deep_generator(n - 1))
    return deep(n - 1)


def deep_generator(n):
    yield deep(n)


def deep_1():
    deep(20)


ENTRIES = {"waits": [sleep_1, lock_1, queue_1, recv_1, fsync_1], "gil": [spin_1, spin_1],
           "gil_held": [hold_1, spin_1], "stuck": [stuck_1], "dlopen": [dlopen_1], "deep": [deep_1]}


def record():
    """Each thread's frames, as the interpreter itself tells them: sampled 20 times
    over 0.2 s, the frames seen most often (a thread that writes then fsyncs is
    mostly in fsync, but a single sample may catch it anywhere)."""
    samples = {}
    for _ in range(20):
        frames = sys._current_frames()
        for t in threading.enumerate():
            if t is threading.main_thread() or t.ident not in frames:
                continue
            stack = tuple((f.name, f.filename, f.lineno)
                          for f in traceback.extract_stack(frames[t.ident]))
            samples.setdefault(t.name, (t.native_id, collections.Counter()))[1][stack] += 1
        time.sleep(0.01)
    for name, (tid, counts) in samples.items():
        seen[name] = (tid, [list(f) for f in counts.most_common(1)[0][0]])


threads = [threading.Thread(target=f, name=f"{f.__name__}-{i}")
           for i, f in enumerate(ENTRIES[MODE])]
for t in threads:
    t.start()
print("ready", os.getpid(), flush=True)
time.sleep(0.2)
go.set()
time.sleep(SECONDS / 2 - 0.2)
record()
time.sleep(max(SECONDS / 2 - 0.2, 0))
stop.set()
never.release()
for t in threads:
    t.join()
print(json.dumps({name: {"tid": tid, "frames": frames} for name, (tid, frames) in seen.items()}))
