"""offcpuctl why: the chain of who woke whom, from a thread's longest waits.

lock_holder: a checkpoint thread holds a lock while it writes and fsyncs 48 MB and then
sleeps 1.5 s; request threads wait on the lock. wake_chain: a reader waits on a pipe that a
feeder writes after it gets a mutex that an io_owner holds across its fsyncs. The daemon
runs with its defaults: wakers are on without being asked for."""
import json
import subprocess

import pytest

from conftest import OFFCPUCTL, WORKLOADS
from test_access import MEMBER, as_user, group_daemon, users  # noqa: F401 (fixtures)


def why(d, *args):
    return json.loads(d.ctl("--json", "why", "--since", "60s", *args).stdout)


def rows_settled(d, timeout=20.0):
    """Wait until the daemon has read no new file for half a second."""
    import time
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        read = json.loads(d.ctl("--json", "status").stdout)["unwind_files_read"]
        if read != last:
            last, since = read, time.monotonic()
        elif time.monotonic() - since >= 0.5:
            return
        time.sleep(0.1)
    raise AssertionError("the daemon kept reading files")


def finish(proc):
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    return json.loads(out.strip().splitlines()[-1])


def lock_wait(chain):
    return "request_waits_on_lock" in chain["user"] and "futex_wait" in " ".join(chain["kernel"])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """The lock holder scenario in a cgroup of its own, under a daemon with its defaults."""
    from conftest import Daemon, cgroup2_mount
    d = Daemon(tmp_path_factory.mktemp("offcpud"), "--interval", "200ms")
    work = tmp_path_factory.mktemp("lock_holder")
    cgroup = cgroup2_mount() / f"offcpud-why-{work.name}"
    cgroup.mkdir()
    try:
        proc = subprocess.Popen([str(WORKLOADS / "lock_holder"), "--wait-stdin"], cwd=work,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        pid = int(proc.stdout.readline().split()[1])
        (cgroup / "cgroup.procs").write_text(f"{pid}\n")
        proc.stdin.write("go\n")
        proc.stdin.flush()
        truth = finish(proc)
        yield d, truth
    finally:
        d.stop()
        cgroup.rmdir()


def test_request_thread_blames_the_checkpoint(checkpoint):
    d, truth = checkpoint
    holder = truth["holder_tid"]
    for request in truth["requests"]:
        reply = why(d, "--tid", str(request["tid"]))
        waits = [c for c in reply["chains"] if lock_wait(c)]
        assert waits, reply
        by_holder = sum(c["total_ns"] for c in waits if c["hops"][0]["tid"] == holder)
        # ≥ 90% of the lock wait the thread measured, attributed to the checkpoint thread
        assert by_holder >= 0.9 * request["lock_offcpu_ns"], (by_holder, request, reply)
        hop = next(c["hops"][0] for c in waits if c["hops"][0]["tid"] == holder)
        assert hop["comm"] == "checkpoint" and not hop["withheld"], hop
        assert "checkpoint_loop" in hop["user"], hop
        # the checkpoint's own waits: its D wait on fsync among them
        d_waits = [w for w in hop["waits"] if w["state"] == "D"]
        assert any("fsync" in " ".join(w["user"] + w["kernel"]) for w in d_waits), hop["waits"]
        share = next(w["share"] for w in reply["wakers"] if w["tid"] == holder)
        assert share >= 0.9 * request["lock_offcpu_ns"] / reply["total_ns"], reply["wakers"]


def test_text_names_holder_fsync_and_share(checkpoint):
    d, truth = checkpoint
    out = d.ctl("why", "--since", "60s", "--tid", str(truth["requests"][0]["tid"])).stdout
    assert f"tid {truth['holder_tid']} checkpoint" in out, out
    assert "checkpoint_loop" in out and "fsync" in out, out
    assert any(line.lstrip().startswith("D ") for line in out.splitlines()), out
    first = next(line for line in out.splitlines() if f"tid {truth['holder_tid']}" in line)
    assert "%" in first, out  # the share it explains


def test_svg_draws_the_chain(checkpoint, tmp_path):
    d, truth = checkpoint
    svg = tmp_path / "why.svg"
    d.ctl("why", "--since", "60s", "--tid", str(truth["requests"][0]["tid"]), "--format", "svg",
          "-o", str(svg))
    text = svg.read_text()
    assert text.startswith("<?xml") or "<svg" in text[:200]
    # the wait, its waker's frames, and the waker's own wait past it
    for frame in ("request_waits_on_lock", "checkpoint_loop", "[blocked "):
        assert frame in text, frame


def test_three_hops_followed_to_the_io(start_daemon, tmp_path, monkeypatch, fresh_cgroup):
    d = start_daemon("--interval", "200ms")
    monkeypatch.chdir(tmp_path)
    proc = subprocess.Popen([str(WORKLOADS / "wake_chain"), "--wait-stdin"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline().split()[1])
    (fresh_cgroup / "cgroup.procs").write_text(f"{pid}\n")
    # A waker's stack is walked once, at the wakeup, and never resumed: wakeups before the
    # program's rows arrive stay short. Start the chain once the daemon has read its files,
    # as for a server that has been running a while.
    rows_settled(d)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    truth = finish(proc)
    reply = why(d, "--tid", str(truth["reader_tid"]))
    chain = reply["chains"][0]
    hops = chain["hops"]
    assert [h["tid"] for h in hops[:2]] == [truth["feeder_tid"], truth["io_owner_tid"]], chain
    assert "feed_after_lock" in hops[0]["user"] and "io_owner_loop" in hops[1]["user"], chain
    # the io_owner's longest wait, the one followed: in D, on its I/O
    owner_wait = hops[1]["waits"][0]
    assert owner_wait["state"] == "D", hops[1]
    assert "write_and_fsync" in owner_wait["user"], owner_wait


def test_member_sees_roots_hop_withheld(group_daemon):
    """A member's cat reads a pipe that root's python writes: why, asked by the member, names
    the writer but gives none of its stacks; root gets them."""
    d = group_daemon()
    writer = subprocess.Popen(
        ["python3", "-c", "import os, time\nfor _ in range(20):\n"
         "    time.sleep(0.1)\n    os.write(1, b'x')\n"], stdout=subprocess.PIPE)
    reader = subprocess.Popen(["setpriv", f"--reuid={MEMBER}", f"--regid={MEMBER}",
                               "--init-groups", "cat"], stdin=writer.stdout,
                              stdout=subprocess.DEVNULL)
    writer.stdout.close()
    assert writer.wait(timeout=30) == 0 and reader.wait(timeout=30) == 0
    args = ("--socket", d.sock, "--json", "why", "--since", "60s", "--pid", str(reader.pid))
    res = as_user(MEMBER, OFFCPUCTL, *args)
    assert res.returncode == 0, res.stderr
    chain = json.loads(res.stdout)["chains"][0]
    hop = chain["hops"][0]
    assert hop["tid"] == writer.pid and hop["withheld"] and chain["end"] == "withheld", chain
    assert "user" not in hop and "kernel" not in hop and "waits" not in hop, hop
    text = as_user(MEMBER, OFFCPUCTL, *(a for a in args if a != "--json")).stdout
    assert "withheld" in text, text
    # root sees the same hop with its stacks
    hop = why(d, "--pid", str(reader.pid))["chains"][0]["hops"][0]
    assert not hop["withheld"] and hop["kernel"] and hop["waits"], hop
