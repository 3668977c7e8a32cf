"""The socket path is attack surface: offcpud removes nothing there but a stale socket,
refuses a directory in which others could replace its socket, and offcpuctl refuses a
socket that is not served by root."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import OFFCPUCTL, OFFCPUD, Daemon

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def refused(sock: Path, tmp: Path) -> subprocess.CompletedProcess:
    res = subprocess.run([str(OFFCPUD), "--socket", str(sock), "--state-directory",
                          str(tmp / "state")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1, res
    return res


@pytest.fixture
def shared_dir():
    """A directory under /tmp that other users may reach (pytest's own tmp is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="offcpud-sock-", dir="/tmp"))
    yield path
    shutil.rmtree(path)


def test_regular_file_at_socket_path_is_not_removed(tmp_path):
    victim = tmp_path / "offcpud.sock"
    victim.write_text("precious\n")
    res = refused(victim, tmp_path)
    assert "exists and is not a socket" in res.stderr, res.stderr
    assert victim.read_text() == "precious\n"


def test_directory_others_may_write_is_refused(shared_dir):
    shared_dir.chmod(0o777)
    res = refused(shared_dir / "offcpud.sock", shared_dir)
    assert "may be written by others" in res.stderr, res.stderr
    assert not (shared_dir / "offcpud.sock").exists()


def test_sticky_directory_is_accepted(shared_dir):
    shared_dir.chmod(0o1777)
    d = Daemon(shared_dir, sock="offcpud.sock")
    assert d.call("io.offcpud.Status")["parameters"]["pid"] == d.proc.pid
    d.stop()


# A server of nobody's, answering every call with forged stacks.
FORGER = r"""
import json, socket, sys
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1])
srv.listen()
print("ready", flush=True)
while True:
    c, _ = srv.accept()
    c.recv(65536)
    c.sendall(json.dumps({"parameters": {"start_ns": 0, "end_ns": 1, "snapshots": 1,
        "stacks": [{"comm": "forged", "user": ["evil"], "kernel": [], "total_ns": 1000,
                    "count": 1}]}}).encode() + b"\0")
    c.close()
"""


def test_client_refuses_a_socket_not_served_by_root(shared_dir):
    shared_dir.chmod(0o1777)
    sock = shared_dir / "forged.sock"
    forger = subprocess.Popen([*NOBODY, sys.executable, "-c", FORGER, str(sock)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert forger.stdout.readline().strip() == "ready"
        res = subprocess.run([str(OFFCPUCTL), "--socket", str(sock), "dump"],
                             capture_output=True, text=True, timeout=30)
        assert res.returncode == 1, res
        assert "forged" not in res.stdout
        assert "served by uid 65534, not root" in res.stderr, res.stderr
    finally:
        forger.kill()
        forger.wait()
