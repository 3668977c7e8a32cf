"""CPython frames (issue 21, docs/python-frames.md): Debian's own /usr/bin/python3
(3.11) is recognised from the version its binary says it is, and the collector walks
each blocked thread's Python frames at switch-out, from the thread state it finds
through the GIL-state TSS key; so is a program that embeds libpython3.11.so (placed at
an address of its own). The workload runs in a cgroup of its own, the only one the
daemon traces: the Python of the test runner and of others is not counted."""
import json
import os
import subprocess
import time

import pytest

from conftest import WORKLOADS, Daemon, cgroup2_mount

PYTHON = "/usr/bin/python3"
CGROUP = cgroup2_mount() / f"offcpud-python-{os.getpid()}"
# threading's _bootstrap, _bootstrap_inner, run, then the chain of three
# (and the library's own below, queue.get's Condition.wait)
THREAD_FRAMES = 6


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    home = tmp_path_factory.mktemp("python")
    CGROUP.mkdir()
    (home / "offcpud.conf").write_text(f"trace-cgroups = {CGROUP}\n")
    d = Daemon(home, "--interval", "200ms", "--config", str(home / "offcpud.conf"))
    yield d
    d.stop()
    CGROUP.rmdir()


def into_cgroup():
    (CGROUP / "cgroup.procs").write_text("0\n")


def collector(d: Daemon) -> dict:
    return json.loads(d.ctl("status", "--json").stdout)


# Debian's python3, and a program that embeds Debian's libpython3.11.so
PROGRAMS = {"python3": [PYTHON], "embedded": [str(WORKLOADS / "embedded_python")]}


def run_python(d: Daemon, tmp_path, mode: str, seconds: float, program="python3"):
    """The workload in mode, from its start in the cgroup; (status while it ran, the
    counters' growth over its run, what it printed last)."""
    before = collector(d)["collector"]
    proc = subprocess.Popen([*PROGRAMS[program], str(WORKLOADS / "python_waits.py"), mode,
                             str(seconds), str(tmp_path)], preexec_fn=into_cgroup,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("ready")
        time.sleep(seconds / 2)
        during = collector(d)
        out = proc.stdout.read()
    finally:
        assert proc.wait(timeout=seconds + 30) == 0
    time.sleep(0.5)  # counters are read live; this is only for the last switch-outs
    after = collector(d)["collector"]
    grew = {k: after[k] - before[k] for k in after if k.startswith("python_")}
    return during, grew, json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("program", PROGRAMS)
def test_python_recognised_and_frames_walked(daemon, tmp_path, program):
    """Five threads blocked from chains of three functions: the process is counted as
    CPython of a known version, and each walk finds on average at least the frames of
    a thread blocked there (the main thread, in join and sleep, has fewer, and is one
    thread of six)."""
    during, grew, seen = run_python(daemon, tmp_path, "waits", 3, program)
    assert during["python_processes"] >= 1, during
    assert during["python_unknown_version"] == 0, during
    text = daemon.ctl("status").stdout
    assert "python processes" in text and "python unknown version" in text, text
    assert len(seen) == 5 and all(len(t["frames"]) >= THREAD_FRAMES for t in seen.values()), seen
    assert grew["python_walks"] > 100, grew
    # cut at 32 frames: the imports at start (importlib's frames nest deep), no more
    assert grew["python_read_error"] == 0, grew
    assert grew["python_truncated"] <= grew["python_walks"] // 100, grew
    assert grew["python_frames"] >= 5 * grew["python_walks"], grew
    # threads the interpreter does not know: none but the first blocks at start
    assert grew["python_no_thread_state"] <= grew["python_walks"] // 10, grew


def test_gil_waits_counted(daemon, tmp_path):
    """Two threads running Python take the GIL from each other every 5 ms: the one
    left waiting blocks in a futex on the GIL, which the collector tells from the
    registers alone."""
    _, grew, _ = run_python(daemon, tmp_path, "gil", 2)
    assert grew["python_gil_waits"] >= 50, grew
