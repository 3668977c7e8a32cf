"""Symbol tables under a budget of their own (symbol-memory): programs with millions of
function symbols, run by an unprivileged user, cannot grow the root daemon past it, and
their frames are still there, named or as file+0x..."""
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import many_symbols
from conftest import OFFCPUD, PLAIN_BUILD, WORKLOADS, Daemon

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
SYMBOLS = 3_000_000
COPIES = 3
MIB = 1 << 20
# one copy's symbols take 92 MiB (24 bytes a symbol and its name): two fit in 192 MiB,
# the third evicts one; one file may take half, 96 MiB
BUDGET = 192 * MIB
# while a file is read, libelf holds its raw tables (at most a file's cap) beside the
# budget; then malloc's own slack and what else a drain of three programs allocates
# (27 MiB seen: 315 MiB grown in all; main's code grew 511 MiB)
TRANSIENT = BUDGET // 2
MARGIN = 64 * MIB


def proc_status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


@pytest.fixture(scope="module")
def programs():
    """Three copies of a program with 3M symbols more, each its own build-id, where an
    unprivileged user can run them."""
    home = Path(tempfile.mkdtemp(prefix="offcpud-symbols-", dir="/tmp"))
    home.chmod(0o755)
    program = WORKLOADS / "poll_until_eof"
    yield many_symbols.copies(program, SYMBOLS, COPIES, WORKLOADS.parent / "many_symbols", home)
    shutil.rmtree(home)


def start_as_nobody(path: Path) -> subprocess.Popen:
    p = subprocess.Popen([*NOBODY, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def frames_of(d: Daemon, pid: int):
    """The user stacks of the process's polls."""
    reply = d.dump_json("--pid", str(pid), "--since", "60s")
    return [s["user"] for s in reply["stacks"] if any("poll" in f for f in s["kernel"])]


def run_copies(d: Daemon, paths):
    """Run the copies until the daemon has seen each one's polls; their stacks, by path,
    and the daemon's status then."""
    procs = [start_as_nobody(p) for p in paths]
    try:
        deadline = time.monotonic() + 90
        while True:
            stacks = {p: frames_of(d, proc.pid) for p, proc in zip(paths, procs)}
            status = d.call("io.offcpud.Status")["parameters"]
            settled = status["symbol_files_evicted"] + status["symbol_files_refused"] > 0
            if all(stacks.values()) and settled or time.monotonic() > deadline:
                return stacks, status
            time.sleep(0.5)
    finally:
        for proc in procs:
            proc.stdin.close()
            proc.wait(timeout=30)


@pytest.mark.parametrize("binary", sorted({OFFCPUD, PLAIN_BUILD / "daemon" / "offcpud"}),
                         ids=lambda b: b.parents[1].name)
def test_symbols_within_budget(tmp_path, programs, binary):
    """Each copy's symbols fit the cap of one file, two fit the budget together: the
    third evicts the one used least recently. The daemon's resident memory grows by
    the budget, a file's raw tables while it is read, and a margin, at most; every
    frame of the copies is there, named or file+0x. (The sanitized build's resident
    memory is its sanitizer's: its accounting is checked only.)"""
    (tmp_path / "offcpud.conf").write_text(f"symbol-memory = {BUDGET // MIB}M\n")
    d = Daemon(tmp_path, "--interval", "200ms", "--config", str(tmp_path / "offcpud.conf"),
               binary=binary)
    try:
        time.sleep(1)
        before = proc_status(d.proc.pid, "VmRSS")
        stacks, status = run_copies(d, programs)
        peak = proc_status(d.proc.pid, "VmHWM")
    finally:
        d.stop()
    assert status["symbol_memory_limit"] == BUDGET
    assert status["symbol_memory_used"] <= BUDGET, status
    assert status["symbol_files_evicted"] >= 1, status
    if binary == PLAIN_BUILD / "daemon" / "offcpud":
        assert peak - before <= BUDGET + TRANSIENT + MARGIN, (
            f"resident grew {(peak - before) // MIB} MiB, budget {BUDGET // MIB} MiB")
    for path, users in stacks.items():
        assert users, f"no polls of {path.name}"
        own = re.compile(rf"^(wait_for_eof|main|{re.escape(path.name)}\+0x[0-9a-f]+)$")
        for user in users:
            assert any(own.match(f) for f in user), (path.name, user)
