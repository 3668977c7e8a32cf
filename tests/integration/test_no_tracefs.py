"""A host as a fresh VM or most containers leave it: neither tracefs nor debugfs
mounted. offcpud attaches every program without them (BTF: tp_btf, fexit,
iterators), so it starts, collects and names stacks as anywhere else, and
mounts nothing."""
import json
import shutil
import subprocess
import time

from conftest import OFFCPUD, WORKLOADS, Daemon, folded

# a mount namespace of its own, with tracefs and debugfs unmounted in it
WRAPPER = """#!/bin/sh
exec unshare --mount --propagation private sh -c '
    for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do
        while umount -l "$m" 2>/dev/null; do :; done
    done
    exec "$0" "$@"' {offcpud} "$@"
"""


def test_starts_collects_and_names_without_tracefs(tmp_path):
    wrapper = tmp_path / "offcpud-without-tracefs"
    wrapper.write_text(WRAPPER.format(offcpud=OFFCPUD))
    wrapper.chmod(0o755)
    d = Daemon(tmp_path, binary=wrapper)
    # a program no process ran before: its first blocks come before its table is
    # read, and walk on through the code recorded as it was mapped (by fexit)
    program = tmp_path / "sleep_and_pipe"
    shutil.copy2(WORKLOADS / "sleep_and_pipe", program)
    res = subprocess.run([str(program), "--sleeps", "100", "--writes", "5"], capture_output=True,
                         text=True, timeout=60, check=True)
    pid = json.loads(res.stdout)["pid"]
    time.sleep(1.5)
    dump = d.ctl("dump", "--pid", str(pid)).stdout
    sleeps = [user for _, user, kernel, _ in folded(dump) if "do_nanosleep" in kernel]
    assert any(user[-3:] == ["nanosleep_once_10ms", "__nanosleep", "clock_nanosleep"]
               and "sleeper_main" in user for user in sleeps), dump

    status = d.call("io.offcpud.Status")["parameters"]
    assert status["missing"] == [], status["missing"]
    assert status["collector"]["unwind_mapped_frames"] > 0, status["collector"]
    with open(f"/proc/{d.proc.pid}/mountinfo") as f:
        mounts = f.read()
    assert " - tracefs " not in mounts and " - debugfs " not in mounts, mounts
    log = d.read_log()
    assert "tracefs" not in log, log
    d.stop()
