"""Two CPython processes passing a byte back and forth over pipes, each blocking in
os.read at the bottom of a chain of DEPTH Python functions: what a Python server's
threads look like to an off-CPU profiler, every switch-out with Python frames to walk.

Usage: python_pipe.py LOOPS DEPTH; prints round trips per second."""
import os
import sys
import time

LOOPS, DEPTH = int(sys.argv[1]), int(sys.argv[2])


def bounce(rfd, wfd, depth, first):
    if depth:
        return bounce(rfd, wfd, depth - 1, first)
    for _ in range(LOOPS):
        if first:
            os.write(wfd, b"x")
        os.read(rfd, 1)
        if not first:
            os.write(wfd, b"x")


a_r, a_w = os.pipe()
b_r, b_w = os.pipe()
t0 = time.monotonic()
child = os.fork()
if child == 0:
    bounce(a_r, b_w, DEPTH, False)
    os._exit(0)
bounce(b_r, a_w, DEPTH, True)
os.waitpid(child, 0)
print(f"{LOOPS / (time.monotonic() - t0):.0f}")
