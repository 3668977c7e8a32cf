"""bench/figures against the test matrix: every frame offcpud names is named as
addr2line names it, on the same file and offset.

The matrix: the symbolizer's test programs (PIE, non-PIE, lld, a shared library, stripped with
a debug file, C++, Rust in both manglings), each blocked reading its stdin, and the
workloads. The figures script asks the daemon for frame detail and compares.
"""
import importlib.machinery
import importlib.util
import json
import re
import subprocess
import time

import pytest

from conftest import ROOT, WORKLOADS, drained_after, run_workload

FIGURES = ROOT / "bench" / "figures"
SYMTESTS = WORKLOADS.parent / "naming"
SYMTEST_PROGRAMS = ["symtest-pie", "symtest-nopie", "symtest-lld", "symtest-withlib",
                    "symtest-stripped", "symtest-cpp", "symtest-rust-v0", "symtest-rust-legacy"]


def figures_module():
    loader = importlib.machinery.SourceFileLoader("figures", str(FIGURES))
    spec = importlib.util.spec_from_loader("figures", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def wait_blocked(pid, timeout=30.0):
    """Until the process sleeps (in its read of stdin)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "S":
                return
        time.sleep(0.01)
    raise AssertionError(f"{pid} never blocked")


def run_symtest(name):
    """Run a test program until it blocks reading stdin, then let it go."""
    proc = subprocess.Popen([str(SYMTESTS / name)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line == "ready\n":
            break
    wait_blocked(proc.pid)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    return proc.pid


@pytest.fixture(scope="module")
def matrix(daemon):
    pids = [run_symtest(name) for name in SYMTEST_PROGRAMS]
    pids.append(run_workload("sleep_and_pipe", "--sleeps", "20", "--writes", "20")["pid"])
    pids.append(run_workload("short_lived")["pid"])
    pids.append(run_workload("jit_perf_map", "--rounds", "5")["pid"])
    # every pid's last blocks drained: figures asks for each (CI: one not yet seen)
    drained_after(daemon, time.time_ns())
    return pids


def test_figures_no_frame_named_differently(daemon, matrix):
    args = [str(FIGURES), "--socket", daemon.sock, "--json"]
    for pid in matrix:
        args += ["--pid", str(pid)]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert res.stdout, res.stderr
    figures = json.loads(res.stdout)
    print(json.dumps(figures, indent=2))  # the figures, in the test's log
    counts = figures["reference"]
    assert res.returncode == 0 and counts["named differently"] == 0, figures["named_differently"]
    # a real comparison: every program's frames, libc's too (where names are aliases)
    assert counts["compared"] >= 2 * len(matrix), counts
    assert counts["equal"] > 0 and counts["alias"] > 0, counts
    assert counts["not comparable"] == 0, counts
    assert figures["user_stacks"] >= len(matrix)


def test_figures_count_a_wrong_name(daemon, matrix):
    """The comparison is not a constant: two frames given each other's names are two
    differences."""
    figures = figures_module()
    sleep_and_pipe = matrix[len(SYMTEST_PROGRAMS)]
    stacks = daemon.call("io.offcpud.Dump", {"frame_detail": True, "group_by": ["pid"],
                                             "pid": sleep_and_pipe})["parameters"]["stacks"]
    _, frames = figures.collect(stacks)
    counts, differences = figures.compare(frames)
    assert counts["named differently"] == 0 and not differences
    named = {}
    for key in frames:
        name = key[3]
        if not re.search(r"\+0x[0-9a-f]+$", name) and name not in named.values():
            named[key] = name
    (a, name_a), (b, name_b) = list(named.items())[:2]
    frames[a[:3] + (name_b,)] = frames.pop(a)
    frames[b[:3] + (name_a,)] = frames.pop(b)
    counts, differences = figures.compare(frames)
    assert counts["named differently"] == 2, (counts, differences)
    assert {d["daemon"] for d in differences} == {name_a, name_b}
