"""JIT code named from /tmp/perf-PID.map, the file the process writes, read inside its root.

jit_perf_map writes two functions into anonymous executable memory, names them in its perf
map and blocks from inside them (one makes the syscall itself, one calls back into C); it
removes the map and exits before the query, so the names must have been read while it ran.
It runs as nobody: the daemon, as root, reads a file another user wrote.
"""
import atexit
import functools
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import WORKLOADS, folded

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
JIT_BASE = 0x3f0000000000  # where jit_perf_map puts its code


@functools.cache
def jit_binary() -> str:
    """The workload, copied outside /tmp: the build may be under /tmp, and these tests
    mount a /tmp of their own over it."""
    home = tempfile.mkdtemp(prefix="offcpud-jit-", dir="/var/tmp")
    os.chmod(home, 0o755)
    atexit.register(shutil.rmtree, home, True)
    return shutil.copy2(WORKLOADS / "jit_perf_map", home)


def run_jit(*prefix: str, shell_setup: str = "", args=()) -> dict:
    """Run jit_perf_map as nobody, after shell_setup (run as root, in whatever namespaces
    prefix makes); its last stdout line is its truth."""
    workload = " ".join([*NOBODY, jit_binary(), "--rounds", "30", *args])
    script = f"{shell_setup} exec {workload}" if shell_setup else f"exec {workload}"
    res = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def sleeps(daemon, pid: int):
    """The user stacks of the process's nanosleeps (a preemption elsewhere may catch it in
    C code whose caller a frame-pointer walk through libc loses), and the whole dump."""
    out = daemon.ctl("dump", "--pid", str(pid), "--since", "60s").stdout
    return [user for _, user, kernel, _ in folded(out) if "do_nanosleep" in kernel], out


def assert_jit_named(daemon, truth):
    stacks, out = sleeps(daemon, truth["host_pid"])
    # the syscall made from JIT code: the leaf is the JIT function, its caller main's
    leaf = [u for u in stacks if u and u[-1] == truth["leaf_name"]]
    assert leaf, out
    assert all(u[-2:-1] == ["run_jit_code"] and "main" in u for u in leaf), out
    # C called from JIT code: the JIT frame is a return address, between two C frames
    call = [u for u in stacks if truth["call_name"] in u]
    assert call, out
    assert all(u[-2:] == [truth["call_name"], "called_from_jit_10ms"] and
               u[-3] == "run_jit_code" and "main" in u for u in call), out
    # and every nanosleep was in one or the other
    assert len(leaf) + len(call) == len(stacks), out


def test_jit_code_named_from_perf_map(daemon):
    truth = run_jit()
    assert truth["pid"] == truth["host_pid"]
    assert_jit_named(daemon, truth)


@pytest.fixture
def host_decoy():
    """A perf map in the host's /tmp under the pid the namespaced process has (1): names
    that would only show if the file were looked up outside the process's root."""
    path = "/tmp/perf-1.map"
    if os.path.exists(path):
        pytest.fail(f"{path} exists: refusing to replace it")
    with open(path, "w") as f:
        f.write(f"{JIT_BASE:x} d DECOY_from_the_hosts_tmp\n{JIT_BASE + 0x100:x} e DECOY_call\n")
    os.chown(path, 65534, 65534)
    yield
    os.unlink(path)


def test_perf_map_inside_pid_and_mount_namespace(daemon, host_decoy):
    """In its own pid and mount namespaces, with its own /tmp: the map is
    /proc/PID/root/tmp/perf-<its own pid>.map, which the host cannot see at /tmp."""
    truth = run_jit("unshare", "--pid", "--fork", "--mount", "--propagation", "private",
                    shell_setup="mount -t tmpfs -o mode=1777 offcpud-test /tmp &&")
    assert truth["pid"] == 1 and truth["host_pid"] != 1
    assert_jit_named(daemon, truth)
    _, out = sleeps(daemon, truth["host_pid"])
    assert "DECOY" not in out


@pytest.fixture
def secret_map():
    """A file only root can read, in the perf map format, naming the JIT code's addresses."""
    home = tempfile.mkdtemp(prefix="offcpud-secret-", dir="/var/tmp")
    path = os.path.join(home, "secret.map")
    with open(path, "w") as f:
        f.write(f"{JIT_BASE:x} d SECRET_leaf\n{JIT_BASE + 0x100:x} e SECRET_call\n")
    os.chmod(path, 0o600)
    yield path
    shutil.rmtree(home)


def test_symlinked_perf_map_not_used(daemon, secret_map):
    """/tmp/perf-PID.map is a symlink, made by the process's user, to a file that user cannot
    read. Its /tmp is a directory of its own (not sticky), so no kernel protection of
    symlinks applies: only the daemon's refusal to follow one keeps the file out."""
    truth = run_jit("unshare", "--mount", "--propagation", "private",
                    shell_setup="mount -t tmpfs -o mode=0755,uid=65534,gid=65534 offcpud-test "
                                "/tmp &&",
                    args=("--link", secret_map))
    stacks, out = sleeps(daemon, truth["host_pid"])
    assert stacks, out
    assert "SECRET" not in out
    # the JIT frames are there, unnamed
    assert any(u[-2:] == ["run_jit_code", "[anon]"] for u in stacks), out
