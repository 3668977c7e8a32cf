"""systemd integration, without systemd as PID 1: units verified offline, socket
activation through systemd-socket-activate, notifications on a test-owned NOTIFY_SOCKET."""
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import BUILD, OFFCPUD, ROOT, varlink_call


@pytest.fixture
def units(tmp_path):
    """The built units, with ExecStart pointing at the built daemon."""
    service = (BUILD / "systemd" / "offcpud.service").read_text()
    service = re.sub(r"^ExecStart=\S+", f"ExecStart={OFFCPUD}", service, flags=re.M)
    (tmp_path / "offcpud.service").write_text(service)
    shutil.copy(ROOT / "systemd" / "offcpud.socket", tmp_path / "offcpud.socket")
    return tmp_path


def test_units_verify(units):
    # the man pages the units name are not installed here: test_install checks them
    res = subprocess.run(["systemd-analyze", "verify", "--man=no", str(units / "offcpud.service"),
                          str(units / "offcpud.socket")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "offcpud" not in res.stderr, res.stderr  # no warning about our units


def test_service_exposure(units):
    res = subprocess.run(["systemd-analyze", "security", "--offline=yes",
                          str(units / "offcpud.service")], capture_output=True, text=True)
    match = re.search(r"Overall exposure level for offcpud.service: (\d+\.\d+)", res.stdout)
    assert match, res.stdout + res.stderr
    print(f"exposure {match.group(1)}")
    # root with CAP_BPF/CAP_SYS_ADMIN cannot score low; all else is locked down
    assert float(match.group(1)) <= 5.0, res.stdout


def test_socket_activation(tmp_path):
    activated = tmp_path / "activated.sock"
    own = tmp_path / "own.sock"
    log = open(tmp_path / "log", "w")
    proc = subprocess.Popen(["systemd-socket-activate", "-l", str(activated), str(OFFCPUD),
                             "--socket", str(own), "--interval", "200ms",
                             "--state-directory", str(tmp_path / "state")],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while not activated.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        # the first connection starts the daemon, which takes the socket it is given
        status = varlink_call(str(activated), "io.offcpud.Status")["parameters"]
        assert status["pid"] == proc.pid  # systemd-socket-activate execs the daemon
        assert not own.exists(), "the daemon bound a socket of its own"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, (tmp_path / "log").read_text()
        log.close()


def test_notify_ready_status_watchdog(tmp_path):
    notify_path = tmp_path / "notify"
    sock_path = tmp_path / "offcpud.sock"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.settimeout(20)
    env = dict(os.environ, NOTIFY_SOCKET=str(notify_path), WATCHDOG_USEC="400000")
    log = open(tmp_path / "log", "w")
    proc = subprocess.Popen([str(OFFCPUD), "--socket", str(sock_path), "--interval", "100ms",
                             "--state-directory", str(tmp_path / "state")],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    messages = []
    try:
        first = notify.recv(4096).decode()
        assert "READY=1" in first and "STATUS=" in first, first
        # ready means ready: the socket accepts, the programs are attached
        assert varlink_call(str(sock_path), "io.offcpud.Status")["parameters"]["collector"] \
            ["switches"] >= 0
        start = time.monotonic()
        while time.monotonic() - start < 1.5:
            messages.append(notify.recv(4096).decode())
        pings = [m for m in messages if "WATCHDOG=1" in m]
        # WATCHDOG_USEC=400ms: a ping every 200 ms, so about 7 in 1.5 s
        assert 4 <= len(pings) <= 10, messages
        assert any(re.search(r"STATUS=\d+ snapshots", m) for m in messages), messages
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        rest = []
        notify.settimeout(0.5)
        try:
            while True:
                rest.append(notify.recv(4096).decode())
        except socket.timeout:
            pass
        assert any("STOPPING=1" in m for m in rest), rest
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
        notify.close()
