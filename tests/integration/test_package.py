"""The Debian package, as a fleet installs it: built from this tree with
dpkg-buildpackage, checked by lintian, installed with apt into a fresh Debian 12
system booted under systemd-nspawn (the service must be running after apt alone),
used by root and by a member of the group, then purged."""
import json
import shutil
import subprocess
import time

import pytest

from conftest import WORKLOADS
from debian_system import booted, unpack_system

# What is not the package's and changes anyway: apt's and dpkg's own records,
# caches, logs, the journal, systemd's state of units that ran.
VOLATILE = ("/var/lib/apt/", "/var/lib/dpkg/", "/var/cache/", "/var/log/", "/var/lib/systemd/",
            "/etc/ld.so.cache")
# What Debian policy keeps after a purge: a system group made for the package
# stays (files may still be owned by it), with the backups shadow-utils makes.
KEPT = {"/etc/group-", "/etc/gshadow-"}


def test_lintian_clean(debian_package):
    res = subprocess.run(["lintian", "--fail-on", "error,warning", str(debian_package)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def files(machine) -> set:
    listing = machine.run("find", "/etc", "/usr", "/lib", "/var", "/opt", "/srv", "-xdev",
                          "-not", "-type", "d").stdout
    return {f for f in listing.splitlines() if not f.startswith(VOLATILE)}


def wait_for(machine, *command, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        res = machine.run(*command, check=False)
        if res.returncode == 0:
            return res
        assert time.monotonic() < deadline, (command, res.stdout, res.stderr)
        time.sleep(0.5)


def test_apt_install_runs_the_service_and_purge_leaves_nothing(debian_package):
    root = unpack_system()
    try:
        shutil.copy(debian_package, root / "var/tmp")
        shutil.copy(WORKLOADS / "sleep_and_pipe", root / "usr/local/bin")
        with booted(root) as m:
            m.run("apt-get", "update", "-qq", timeout=300)
            m.run("useradd", "--create-home", "alice")
            before = files(m)
            m.run("apt-get", "install", "-y", "--no-install-recommends",
                  f"/var/tmp/{debian_package.name}", timeout=300)
            # apt alone: the group made, the socket and the service enabled and started
            assert m.show("offcpud.service", "ActiveState") == "active", m.journal()
            assert m.show("offcpud.socket", "ActiveState") == "active"
            assert m.show("offcpud.service", "UnitFileState") == "enabled"
            assert m.run("stat", "-c", "%a %U %G", "/run/offcpud/offcpud.sock").stdout.split() \
                == ["660", "root", "offcpu"]
            assert m.run("test", "-f", "/etc/offcpud.conf", check=False).returncode == 0
            assert "/etc/offcpud.conf" in m.run("cat", "/var/lib/dpkg/info/offcpud.conffiles").stdout
            status = json.loads(m.run("offcpuctl", "--json", "status").stdout)
            assert status["pid"] == int(m.show("offcpud.service", "MainPID")), status

            # a member of the group reads their own process, and only that (by the
            # kernel's pid: offcpud runs in the machine's PID namespace, which also
            # leaves user frames unnamed here; test_container.py names them)
            m.run("usermod", "-aG", "offcpu", "alice")  # as the README says
            pid = m.run("runuser", "-u", "alice", "--", "sh", "-c",
                        "sleep_and_pipe --sleeps 1500 --writes 5 >/dev/null 2>&1 & echo $!").stdout
            pid = m.host_pid(int(pid))
            dump = wait_for(m, "runuser", "-u", "alice", "--", "offcpuctl", "dump", "--pid",
                            str(pid), "--since", "1m").stdout
            assert any(line.startswith("sleep_and_pipe;") for line in dump.splitlines()), dump
            denied = m.run("runuser", "-u", "alice", "--", "offcpuctl", "dump", "--pid",
                           str(m.host_pid(int(m.show("offcpud.service", "MainPID")))),
                           check=False)
            assert denied.returncode == 1 and "permission" in denied.stderr, denied

            # root sees everything, kernel frames named
            dump = m.run("offcpuctl", "dump", "--pid", str(pid), "--since", "1m").stdout
            assert "do_nanosleep" in dump, dump

            m.run("apt-get", "purge", "-y", "--autoremove", "offcpud", timeout=300)
            assert m.run("systemctl", "is-active", "offcpud.service", check=False).stdout.strip() \
                in ("inactive", "unknown")
            after = files(m)
            # nothing left but the group
            assert after - before <= KEPT, sorted(after - before)
            assert before - after <= set(), sorted(before - after)
            for path in ("/var/lib/offcpud", "/run/offcpud", "/etc/offcpud.conf"):
                assert m.run("test", "-e", path, check=False).returncode != 0, path
            assert m.run("getent", "group", "offcpu", check=False).returncode == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
