"""The container image, as an agent runs on every node: container/Containerfile
built with podman from the Debian package (its base is the fresh Debian 12 system
of debian_system.py, imported, since no image registry is reachable here), run as
container/podman-run says; then asked from the host, on the host's socket path,
for a host process's stacks, named through the host's files."""
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import OFFCPUCTL, ROOT, WORKLOADS, folded
from debian_system import base_tarball

BASE_IMAGE = "localhost/offcpud-test-base:12"
IMAGE = "localhost/offcpud:test"
NAME = f"offcpud-test-{os.getpid()}"
# What this kind of machine needs beyond the example, none of it on a usual host:
# its cgroups are a v1/v2 hybrid, which crun refuses (runc takes it), and root
# here lacks CAP_SYS_RESOURCE, so podman's default limits (raised) are refused.
SANDBOX = ["--runtime", "runc", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]


def podman(*args, timeout=600, check=True) -> subprocess.CompletedProcess:
    res = subprocess.run(["podman", "--runtime", "runc", *args], capture_output=True, text=True, timeout=timeout)
    assert not check or res.returncode == 0, (args, res.stdout[-3000:], res.stderr[-3000:])
    return res


@pytest.fixture(scope="module")
def image(debian_package, tmp_path_factory):
    tarball = base_tarball()
    if podman("image", "exists", BASE_IMAGE, check=False).returncode != 0:
        podman("import", str(tarball), BASE_IMAGE)
    context = tmp_path_factory.mktemp("image")
    for name in ("Containerfile", "entrypoint"):
        shutil.copy2(ROOT / "container" / name, context)
    shutil.copy(debian_package, context)
    podman("build", "--network=host", *SANDBOX, "--build-arg", f"BASE={BASE_IMAGE}",
           "--tag", IMAGE, str(context))
    yield IMAGE
    podman("rmi", "--force", IMAGE, check=False)


@pytest.fixture
def container(image, tmp_path):
    run, state = tmp_path / "run", tmp_path / "state"
    env = {**os.environ, "OFFCPUD_RUNTIME_DIR": str(run), "OFFCPUD_STATE_DIR": str(state),
           "OFFCPUD_IMAGE": image}
    res = subprocess.run([str(ROOT / "container" / "podman-run"), "--detach", "--name", NAME,
                          *SANDBOX], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    sock = run / "offcpud.sock"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(sock))
                break
            except OSError:
                assert time.monotonic() < deadline, podman("logs", NAME, check=False).stderr
                time.sleep(0.2)
        yield sock
    finally:
        logs = podman("logs", NAME, check=False)
        podman("stop", "--time", "15", NAME, check=False)
        podman("rm", "--force", NAME, check=False)
        print(logs.stdout + logs.stderr)


def test_host_process_named_from_the_container(container):
    sleeper = subprocess.Popen([str(WORKLOADS / "sleep_and_pipe"), "--sleeps", "300",
                                "--writes", "5"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        # from the host, on the host's path
        res = subprocess.run([str(OFFCPUCTL), "--socket", str(container), "dump", "--pid",
                              str(sleeper.pid), "--since", "1m"], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        # user frames named through the host's files, as the host's own daemon would
        nanosleep = [(user, kernel) for _, user, kernel, _ in folded(res.stdout)
                     if "do_nanosleep" in kernel]
        assert nanosleep, res.stdout
        assert any(user[-3:] == ["nanosleep_once_10ms", "__nanosleep", "clock_nanosleep"]
                   and "sleeper_main" in user for user, _ in nanosleep), \
            res.stdout
    finally:
        sleeper.kill()
        sleeper.wait()
    # from inside the container, at the default path
    status = json.loads(podman("exec", NAME, "offcpuctl", "--json", "status").stdout)
    assert status["snapshots"] > 0, status
    logs = podman("logs", NAME).stderr
    assert "PID namespace of its own" not in logs and "cannot be named" not in logs, logs
