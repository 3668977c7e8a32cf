"""Integration tests: the real daemon on a real socket, real workloads, the real kernel.

OFFCPUD_BUILD names the build directory to test (default: build/ at the repo root);
OFFCPUD_WORKLOADS the directory of the workloads (default: that build's).
These tests need root and BPF. Outside CI they are skipped without root; in CI
(CI=true) they fail instead, because there they must run.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("OFFCPUD_BUILD", ROOT / "build")).resolve()
OFFCPUD = BUILD / "daemon" / "offcpud"
OFFCPUCTL = BUILD / "client" / "offcpuctl"
# the workloads are test subjects: a sanitizer's own threads and processes would
# blur the blocking they are known for, so they come from a plain build
WORKLOADS = Path(os.environ.get("OFFCPUD_WORKLOADS", BUILD / "tests" / "workloads")).resolve()
# the build the workloads come from, without a sanitizer: the daemon as it ships, for
# what depends on its speed (a sanitizer build derives unwind rows several times slower)
PLAIN_BUILD = WORKLOADS.parents[1]
SANITIZER_MARKS = ("AddressSanitizer", "UndefinedBehaviorSanitizer", "LeakSanitizer",
                   "runtime error:")


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    if os.environ.get("CI") == "true":
        raise pytest.UsageError("integration tests need root and BPF, and must run in CI")
    skip = pytest.mark.skip(reason="needs root and BPF")
    for item in items:
        item.add_marker(skip)


class Daemon:
    """An offcpud process on a private socket."""

    started = []  # every one, for reap_daemons

    def __init__(self, tmp: Path, *args: str, sock="offcpud.sock", umask=-1, binary=OFFCPUD,
                 env=None):
        """sock: the socket's path under tmp; umask: the daemon's (-1: this process's);
        binary: the offcpud to run; env: variables added to its environment."""
        self.sock = str(tmp / sock)
        self.log_path = tmp / "offcpud.log"
        self.log = open(self.log_path, "w")
        if "--state-directory" not in args:  # never another test's ring, nor the host's
            args = (*args, "--state-directory", str(tmp / "state"))
        self.proc = subprocess.Popen([str(binary), "--socket", self.sock, *args],
                                     stdout=self.log, stderr=subprocess.STDOUT, umask=umask,
                                     env={**os.environ, **(env or {})})
        Daemon.started.append(self)
        self._wait_ready()

    def _wait_ready(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"offcpud exited with {self.proc.returncode}:\n{self.read_log()}")
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.sock)
                return
            except OSError:
                time.sleep(0.05)
        # not left running behind the failure (a module's fixture never stops it)
        self.proc.kill()
        self.proc.wait()
        raise AssertionError(f"offcpud did not listen within {timeout}s:\n{self.read_log()}")

    def settled(self, timeout=30.0):
        """Until a drain begun after this call has named all it took: a drain stopped at
        its budget carries records to the next, and a query sees only what is named."""
        first = self.call("io.offcpud.Status")["parameters"]["drains"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.call("io.offcpud.Status")["parameters"]
            if st["drains"] > first and not st["drain_records_pending"]:
                return
            time.sleep(0.05)
        raise AssertionError(f"offcpud still had records to name after {timeout}s")

    def read_log(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def ctl(self, *args: str, check=True) -> subprocess.CompletedProcess:
        """Run offcpuctl against this daemon."""
        res = subprocess.run([str(OFFCPUCTL), "--socket", self.sock, *args],
                             capture_output=True, text=True, timeout=60)
        if check and res.returncode != 0:
            raise AssertionError(f"offcpuctl {' '.join(args)} exited {res.returncode}: {res.stderr}")
        return res

    def dump_json(self, *args: str) -> dict:
        return json.loads(self.ctl("dump", "--format", "json", *args).stdout)

    def call(self, method: str, parameters=None) -> dict:
        return varlink_call(self.sock, method, parameters)

    def stop(self):
        """SIGTERM; the daemon must exit 0 and its log must be clean."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("offcpud did not exit on SIGTERM")
        log = self.read_log()
        self.log.close()
        assert self.proc.returncode == 0, f"offcpud exited {self.proc.returncode}:\n{log}"
        for mark in SANITIZER_MARKS:
            assert mark not in log, f"sanitizer report in offcpud's log:\n{log}"
        assert not os.path.exists(self.sock), "socket file left behind"


@pytest.fixture(autouse=True)
def reap_daemons():
    """A test that failed before it stopped its daemons leaves none running: each
    would keep its programs on every context switch and slow every later test."""
    before = len(Daemon.started)  # a module's daemon, made first, is its fixture's
    yield
    for d in Daemon.started[before:]:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
    del Daemon.started[before:]


class VarlinkStream:
    """Varlink messages on a connected socket: NUL-terminated JSON, buffered."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""

    def send(self, message) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.sock.sendall(data + b"\0")

    def recv(self) -> dict:
        while b"\0" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"connection closed after {self.buf!r}")
            self.buf += chunk
        message, self.buf = self.buf.split(b"\0", 1)
        return json.loads(message)


def varlink_call(path: str, method: str, parameters=None) -> dict:
    """One Varlink call on a fresh connection: the reply (or error) message."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(path)
        stream = VarlinkStream(s)
        msg = {"method": method}
        if parameters is not None:
            msg["parameters"] = parameters
        stream.send(msg)
        return stream.recv()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """A daemon shared by a module's tests: 200 ms snapshots."""
    d = Daemon(tmp_path_factory.mktemp("offcpud"), "--interval", "200ms")
    yield d
    d.stop()


@pytest.fixture
def start_daemon(tmp_path):
    """Start a daemon with its own options; stopped (and checked) at teardown."""
    started = []

    def start(*args):
        home = tmp_path / f"daemon{len(started)}"
        home.mkdir()
        started.append(Daemon(home, *args))
        return started[-1]

    yield start
    for d in started:
        d.stop()


@pytest.fixture
def reachable_daemon_factory():
    """Start daemons whose socket other users can reach (pytest's own tmp is 0700):
    start(*args, config=TEXT, **Daemon options) with an optional configuration file's
    text."""
    made = []

    def start(*args, config=None, **daemon_options):
        home = Path(tempfile.mkdtemp(prefix="offcpud-", dir="/tmp"))
        home.chmod(0o755)
        if config is not None:
            (home / "offcpud.conf").write_text(config)
            args = (*args, "--config", str(home / "offcpud.conf"))
        made.append((Daemon(home, "--interval", "200ms", *args, **daemon_options), home))
        return made[-1][0]

    yield start
    for d, home in made:
        d.stop()
        shutil.rmtree(home)


def run_workload(name: str, *args: str, timeout=60) -> dict:
    """Run a workload to its end; its last stdout line is its own measurement."""
    res = subprocess.run([str(WORKLOADS / name), *args], capture_output=True, text=True,
                         timeout=timeout, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def drained_after(daemon, ns: int, *selection: str) -> dict:
    """Once a snapshot from after ns is drained (waits are charged when they end, and a
    busy host drains late) and all its records are named (a drain at its budget carries
    records to the next, and a query sees only named ones: under load, the parts of long
    waits charged at flips were missing): the last minute's Dump of selection."""
    deadline = time.monotonic() + 30
    while True:
        time.sleep(0.2)
        if daemon.dump_json(*selection, "--since", "60s")["end_ns"] >= ns or \
                time.monotonic() > deadline:
            break
    daemon.settled()
    return daemon.dump_json(*selection, "--since", "60s")


def workload_window(daemon, name: str, *args: str):
    """Run a workload to its end: (its measurement, a window that holds all of it, as
    --since/--until, to a second after it ended)."""
    started = time.time_ns()
    truth = run_workload(name, *args)
    ended = time.time_ns()
    reply = drained_after(daemon, ended, "--pid", str(truth["pid"]))
    return truth, ("--since", at(min(started, reply["start_ns"]) - 1),
                   "--until", at(ended + 10**9))


def cgroup2_mount() -> Path:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ", 1)
        if right.split()[0] == "cgroup2":
            return Path(left.split()[4])
    pytest.fail("no cgroup2 mount")


@pytest.fixture
def fresh_cgroup():
    """An empty cgroup v2 of the test's own, removed after it."""
    path = cgroup2_mount() / f"offcpud-test-{os.getpid()}"
    path.mkdir()
    yield path
    path.rmdir()


def workload_in(cgroup: Path, name: str, *args: str):
    """A workload (one that takes --wait-stdin) moved into cgroup before it starts
    blocking: (process, pid). Its last stdout line is its measurement."""
    proc = subprocess.Popen([str(WORKLOADS / name), "--wait-stdin", *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline().split()[1])
    (cgroup / "cgroup.procs").write_text(f"{pid}\n")
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return proc, pid


def folded(text: str):
    """Folded lines as (comm, user frames, kernel frames, microseconds)."""
    rows = []
    for line in text.splitlines():
        stack, value = line.rsplit(" ", 1)
        frames = stack.split(";")
        sep = frames.index("-")
        rows.append((frames[0], frames[1:sep], frames[sep + 1:], int(value)))
    return rows


def at(ns: int) -> str:
    """offcpuctl's absolute time for a snapshot boundary ns: a microsecond past it, so that
    rounding never moves it across the boundary (snapshots are milliseconds apart)."""
    return f"@{(ns + 1000) / 1e9:.6f}"


def within(value, truth, rel):
    return abs(value - truth) <= rel * truth


def assert_fails(daemon: Daemon, args, code: int, message: str):
    """offcpuctl args must exit with code, saying message in one line on stderr, and print
    nothing on stdout."""
    res = daemon.ctl(*args, check=False)
    assert res.returncode == code, res
    assert message in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not res.stdout, res.stdout


def kernel_frame(reply: dict, part: str) -> str:
    """The kernel frame of a Dump reply whose name holds part: kernels name one function
    differently (pipe_read, anon_pipe_read). Kernel stacks are whole whatever the user
    stack's unwinding found, so tests that must not depend on it name kernel frames."""
    names = {f for s in reply["stacks"] for f in s["kernel"] if part in f}
    assert len(names) == 1, f"kernel frames with {part}: {names}"
    return names.pop()


@pytest.fixture(scope="session")
def debian_package(tmp_path_factory) -> Path:
    """offcpud_*.deb built from this tree, once per run (about a minute)."""
    from debian_system import build_package
    return build_package(tmp_path_factory.mktemp("package"))
