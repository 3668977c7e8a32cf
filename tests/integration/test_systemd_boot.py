"""offcpud under a real systemd. This machine's PID 1 is not systemd, so the test makes
a Debian 12 system with debootstrap, installs offcpud into it with "meson install",
boots it in systemd-nspawn and, inside, does what the README says: systemd-sysusers,
daemon-reload, enable --now. The units then run as written: Type=notify, socket
activation, the capability bounding set, the seccomp filter and the sandbox."""
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import PLAIN_BUILD, WORKLOADS

RELEASE = "bookworm"
# what the daemon and offcpuctl link against, and a system to boot
PACKAGES = ["systemd", "systemd-sysv", "dbus", "libbpf1", "libelf1", "libdw1", "libsystemd0",
            "libjansson4", "libprotobuf-c1"]
# CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_SYSLOG, CAP_PERFMON, CAP_BPF
EXPECTED_CAPS = sum(1 << bit for bit in (2, 19, 21, 34, 38, 39))


def debian_mirror() -> str:
    """The mirror this machine's apt uses."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    return "http://deb.debian.org/debian"


class Machine:
    """A booted container; commands run in all of its namespaces."""

    def __init__(self, root: Path, log: Path):
        self.log, self.leader = log, None
        self.proc = subprocess.Popen(
            ["systemd-nspawn", "--directory", str(root), "--boot", "--machine", "offcpud-test",
             # no machined or bus here: nspawn neither registers nor asks for a scope
             "--register=no", "--keep-unit", "--console=passive",
             # the container may load BPF; the unit's own limits are what is tested
             "--capability=all", "--system-call-filter=bpf perf_event_open membarrier"],
            stdin=subprocess.DEVNULL, stdout=log.open("w"), stderr=subprocess.STDOUT)

    def wait_booted(self):
        self.leader = self._wait_for_init()
        deadline = time.monotonic() + 120
        while True:
            state = self.run("systemctl", "is-system-running", check=False)
            if state.stdout.strip() in ("running", "degraded"):
                break
            assert time.monotonic() < deadline, (state.stdout, state.stderr,
                                                 self.log.read_text()[-3000:])
            time.sleep(0.5)

    def _wait_for_init(self) -> int:
        deadline = time.monotonic() + 60
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            for pid in children.read_text().split():
                if Path(f"/proc/{pid}/comm").read_text().strip() == "systemd":
                    return int(pid)
            time.sleep(0.1)
        raise AssertionError("no systemd in the container: " + self.log.read_text()[-3000:])

    def run(self, *command: str, check=True, timeout=60) -> subprocess.CompletedProcess:
        res = subprocess.run(["nsenter", "-t", str(self.leader), "-m", "-u", "-i", "-n", "-p",
                              "-C", *command], capture_output=True, text=True, timeout=timeout)
        assert not check or res.returncode == 0, (command, res.stdout, res.stderr)
        return res

    def show(self, unit: str, prop: str) -> str:
        return self.run("systemctl", "show", "--value", "-p", prop, unit).stdout.strip()

    def journal(self) -> str:
        return self.run("journalctl", "--no-pager", "-o", "cat", "-u", "offcpud.service").stdout

    def poweroff(self):
        if self.leader:
            self.run("systemctl", "poweroff", check=False)
        try:
            self.proc.wait(timeout=60 if self.leader else 0)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # nspawn's death takes the container with it
            self.proc.wait()


@pytest.fixture(scope="module")
def machine():
    options = json.loads(subprocess.run(["meson", "introspect", "--buildoptions", str(PLAIN_BUILD)],
                                        capture_output=True, text=True, check=True).stdout)
    sanitize = next(o["value"] for o in options if o["name"] == "b_sanitize")
    assert sanitize == "none", f"{PLAIN_BUILD}: install a plain build (OFFCPUD_WORKLOADS)"
    root = Path(tempfile.mkdtemp(prefix="offcpud-machine-", dir="/var/tmp"))
    root.chmod(0o755)  # its "/": services that are not root (dbus) must get through
    try:
        res = subprocess.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES),
                              RELEASE, str(root), debian_mirror()],
                             capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        res = subprocess.run(["meson", "install", "-C", str(PLAIN_BUILD), "--no-rebuild",
                              "--destdir", str(root)], capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
        shutil.copy(WORKLOADS / "sleep_and_pipe", root / "usr/local/bin")
        m = Machine(root, root.parent / f"{root.name}.log")
        try:
            m.wait_booted()
            # the README's install, after meson install
            m.run("systemd-sysusers")
            m.run("systemctl", "daemon-reload")
            m.run("systemctl", "enable", "--now", "offcpud.socket", "offcpud.service")
            yield m
        finally:
            m.poweroff()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        Path(f"{root}.log").unlink(missing_ok=True)


def blocking_stacks(machine) -> dict:
    reply = json.loads(machine.run("offcpuctl", "dump", "--since", "10m", "--comm",
                                   "sleep_and_pipe", "--group-by", "tid", "--format",
                                   "json").stdout)
    return {(tuple(s["user"]), tuple(s["kernel"]), s["tid"]): (s["total_ns"], s["count"])
            for s in reply["stacks"]}


def test_started_as_the_readme_says(machine):
    assert machine.show("offcpud.service", "ActiveState") == "active"
    assert machine.show("offcpud.socket", "ActiveState") == "active"
    # Type=notify: "active" means READY=1 came; STATUS= is a live figure
    assert machine.show("offcpud.service", "Type") == "notify"
    deadline = time.monotonic() + 10
    while not re.match(r"\d+ snapshots, \d+ MiB, \d+ drains$",
                       machine.show("offcpud.service", "StatusText")):
        assert time.monotonic() < deadline, machine.show("offcpud.service", "StatusText")
        time.sleep(0.2)
    assert machine.show("offcpud.service", "WatchdogUSec") == "30s"
    assert machine.run("stat", "-c", "%a %U %G", "/run/offcpud/offcpud.sock").stdout.split() == \
        ["660", "root", "offcpu"]
    status = json.loads(machine.run("offcpuctl", "--json", "status").stdout)
    assert status["pid"] == int(machine.show("offcpud.service", "MainPID")), status


def test_hardened_and_still_names_kernel_frames(machine):
    pid = machine.show("offcpud.service", "MainPID")
    caps = machine.run("grep", "^CapEff", f"/proc/{pid}/status").stdout.split()[1]
    assert int(caps, 16) == EXPECTED_CAPS, f"{caps} != {EXPECTED_CAPS:016x}"
    # what the daemon reads must still be readable under the sandbox
    machine.run("/usr/local/bin/sleep_and_pipe", "--sleeps", "30", "--writes", "10")
    time.sleep(2)
    stacks = blocking_stacks(machine)
    kernel = {f for (_, k, _) in stacks for f in k}
    assert "do_nanosleep" in kernel and "vfs_read" in kernel, stacks
    journal = machine.journal()
    assert "kernel frames cannot be named" not in journal, journal
    # nspawn gives the daemon a PID namespace of its own: it says what that costs
    assert "PID namespace of its own" in journal, journal
    exposure = machine.run("systemd-analyze", "security", "--no-pager", "offcpud.service").stdout
    level = re.search(r"Overall exposure level for offcpud.service: (\d+\.\d+)", exposure)
    print(f"exposure {level.group(1)}")
    assert float(level.group(1)) <= 5.0, exposure


def test_reload_and_restart_keep_history(machine):
    machine.run("/usr/local/bin/sleep_and_pipe", "--sleeps", "20", "--writes", "5")
    time.sleep(2)
    before = blocking_stacks(machine)
    assert before
    pid = machine.show("offcpud.service", "MainPID")

    machine.run("systemctl", "reload", "offcpud.service")
    assert machine.show("offcpud.service", "MainPID") == pid
    assert "reloaded:" in machine.journal()

    started = time.monotonic()
    machine.run("systemctl", "restart", "offcpud.service")
    print(f"systemctl restart: {time.monotonic() - started:.2f}s")
    assert machine.show("offcpud.service", "MainPID") != pid
    assert machine.show("offcpud.service", "ActiveState") == "active"
    assert re.search(r"restored \d+ snapshots from /var/lib/offcpud", machine.journal())
    assert blocking_stacks(machine) == before
    assert machine.show("offcpud.service", "NRestarts") == "0"
