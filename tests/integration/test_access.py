"""Root only, for now: the socket is 0600, and a caller that gets in anyway is refused."""
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import OFFCPUCTL, Daemon

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def reachable_daemon():
    """A daemon whose socket directory others may traverse (pytest's own is 0700)."""
    home = Path(tempfile.mkdtemp(prefix="offcpud-access-", dir="/tmp"))
    home.chmod(0o755)
    d = Daemon(home, "--interval", "200ms")
    yield d
    d.stop()
    shutil.rmtree(home)


def as_nobody(d, *args):
    return subprocess.run([*NOBODY, str(OFFCPUCTL), "--socket", d.sock, *args],
                          capture_output=True, text=True, timeout=30)


def test_socket_is_root_only(reachable_daemon):
    st = os.stat(reachable_daemon.sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0
    res = as_nobody(reachable_daemon, "status")
    assert res.returncode == 1 and "Permission denied" in res.stderr, res.stderr


def test_unprivileged_caller_refused(reachable_daemon):
    """Were the socket opened up by mistake, the daemon itself still says no."""
    os.chmod(reachable_daemon.sock, 0o666)
    for command in (["status"], ["dump", "--pid", "1"]):
        res = as_nobody(reachable_daemon, *command)
        assert res.returncode == 1, res
        assert "permission denied by offcpud" in res.stderr, res.stderr
    assert "denied io.offcpud.Status to uid 65534" in reachable_daemon.read_log()
    assert "denied io.offcpud.Dump to uid 65534" in reachable_daemon.read_log()
