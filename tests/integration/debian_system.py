"""A fresh Debian 12 system for the tests that install offcpud the way hosts do
(under systemd-nspawn, or as a container image), and the package they install.

The system is debootstrap's minbase with what it takes to boot (systemd, dbus),
made once and kept as a tarball under /var/cache/offcpud-tests; each test unpacks
its own copy. The package is built from this tree with dpkg-buildpackage, once
per test run."""
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from conftest import ROOT

RELEASE = "bookworm"
BOOT_PACKAGES = ["systemd", "systemd-sysv", "dbus"]
CACHE = Path("/var/cache/offcpud-tests")
BASE_TARBALL = CACHE / f"{RELEASE}-{'-'.join(BOOT_PACKAGES)}.tar"


def debian_mirror() -> str:
    """The mirror this machine's apt uses."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    return "http://deb.debian.org/debian"


def base_tarball() -> Path:
    """The fresh system as a tarball, made on first use (debootstrap, ~2 minutes)."""
    if BASE_TARBALL.exists():
        return BASE_TARBALL
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="offcpud-debootstrap-", dir="/var/tmp"))
    try:
        res = subprocess.run(["debootstrap", "--variant=minbase",
                              "--include=" + ",".join(BOOT_PACKAGES), RELEASE, str(work / "root"),
                              debian_mirror()], capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        partial = BASE_TARBALL.with_suffix(".partial")
        subprocess.run(["tar", "-C", str(work / "root"), "-cf", str(partial), "."], check=True)
        partial.rename(BASE_TARBALL)  # whole or not at all
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return BASE_TARBALL


def unpack_system() -> Path:
    """A new copy of the fresh system; the caller removes it."""
    root = Path(tempfile.mkdtemp(prefix="offcpud-machine-", dir="/var/tmp"))
    root.chmod(0o755)  # its "/": services that are not root (dbus) must get through
    subprocess.run(["tar", "-C", str(root), "-xf", str(base_tarball())], check=True)
    return root


def build_package(out: Path) -> Path:
    """offcpud_*.deb built by dpkg-buildpackage from a copy of this tree (what git
    tracks, and new files it does not ignore), in out."""
    src = out / "offcpud"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    res = subprocess.run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=src,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    debs = list(out.glob("offcpud_*_amd64.deb"))
    assert len(debs) == 1, debs
    return debs[0]


class Machine:
    """A system booted in systemd-nspawn; commands run in all of its namespaces."""

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

    def host_pid(self, pid: int) -> int:
        """The kernel's (this machine's) id of the machine's process pid: what
        offcpud, in the machine's PID namespace, is asked for and answers with."""
        ns = Path(f"/proc/{self.leader}/ns/pid").readlink()
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                if Path(status.parent, "ns/pid").readlink() != ns:
                    continue
                nspid = next(l for l in status.read_text().splitlines() if l.startswith("NSpid:"))
            except (OSError, StopIteration):
                continue
            ids = nspid.split()[1:]
            if int(ids[-1]) == pid:
                return int(ids[0])
        raise AssertionError(f"no process {pid} in the machine")

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


@contextmanager
def booted(root: Path):
    """root booted under systemd-nspawn, powered off at the end."""
    m = Machine(root, root.parent / f"{root.name}.log")
    try:
        m.wait_booted()
        yield m
    finally:
        m.poweroff()
        Path(f"{root}.log").unlink(missing_ok=True)
