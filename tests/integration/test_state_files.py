"""The state directory cannot be turned against root: nothing planted there is written
through or read, a FIFO does not hang the start, and a directory or file someone else
controls is refused with one log line while the daemon serves on without saved history."""
import os
import time

import pytest

from conftest import Daemon, run_workload

NOBODY = 65534


def start(home, state, *args):
    home.mkdir(exist_ok=True)
    return Daemon(home, "--interval", "200ms", "--state-directory", str(state), *args)


def saved_state(tmp_path):
    """A state directory holding a ring file of a real run (root's, 0700)."""
    state = tmp_path / "state"
    first = start(tmp_path / "one", state)
    run_workload("short_lived")
    first.stop()
    assert (state / "ring.v1").is_file()
    return state


def serves(d):
    truth = run_workload("short_lived")
    assert d.dump_json("--pid", str(truth["pid"]))["stacks"]


@pytest.mark.parametrize("name", ["ring.v1.tmp", "journal.v1.tmp"])
def test_symlinked_temp_file_is_not_written_through(tmp_path, name):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    target = tmp_path / "root-only"
    target.write_bytes(b"root's own file\n")
    target.chmod(0o600)
    (state / name).symlink_to(target)

    d = start(tmp_path / "one", state)
    run_workload("short_lived")
    d.stop()
    assert target.read_bytes() == b"root's own file\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert (state / "ring.v1").is_file() and not (state / "ring.v1").is_symlink()
    assert not os.path.lexists(state / name)


@pytest.mark.parametrize("damage", ["foreign-owner", "world-writable", "group-writable"])
def test_state_file_someone_else_controls_is_refused(tmp_path, damage):
    state = saved_state(tmp_path)
    ring = state / "ring.v1"
    if damage == "foreign-owner":
        os.chown(ring, NOBODY, NOBODY)
        why = f"is owned by uid {NOBODY}"
    else:
        ring.chmod(0o666 if damage == "world-writable" else 0o620)
        why = "may be written by group or others"

    second_started = time.time()
    second = start(tmp_path / "two", state)
    try:
        log = second.read_log()
        assert f"ring.v1 cannot be trusted ({why}" in log, log
        assert "restored" not in log
        assert not ring.exists() and list(state.glob("ring.v1.untrusted-*"))
        status = second.call("io.offcpud.Status")["parameters"]
        # none but its own (if it drained any yet)
        assert status.get("oldest_ns", second_started * 1e9) >= second_started * 1e9, status
        assert status["journal_errors"] == 1
        serves(second)
    finally:
        second.stop()
    # its own history is kept again, in a file of its own
    assert ring.is_file() and ring.stat().st_uid == 0 and ring.stat().st_mode & 0o077 == 0


def test_fifo_state_file_does_not_hang_start(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "ring.v1", 0o600)
    t0 = time.monotonic()
    d = start(tmp_path / "one", state)  # waits at most 20 s for the socket
    try:
        assert time.monotonic() - t0 < 15
        assert "ring.v1 cannot be trusted (is not a regular file)" in d.read_log()
        serves(d)
    finally:
        d.stop()


@pytest.mark.parametrize("damage", ["world-writable", "foreign-owner", "symlink"])
def test_state_directory_someone_else_controls_is_refused(tmp_path, damage):
    state = tmp_path / "state"
    elsewhere = tmp_path / "root-only-dir"
    elsewhere.mkdir(mode=0o700)
    if damage == "symlink":
        state.symlink_to(elsewhere)
    else:
        state.mkdir(mode=0o700)
        if damage == "world-writable":
            state.chmod(0o777)
        else:
            os.chown(state, NOBODY, NOBODY)

    d = start(tmp_path / "one", state)
    try:
        serves(d)
        status = d.call("io.offcpud.Status")["parameters"]
    finally:
        d.stop()
    lines = [line for line in d.log_path.read_text().splitlines() if str(state) in line]
    assert len(lines) == 1 and "history is not kept" in lines[0], lines
    assert not os.listdir(elsewhere if damage == "symlink" else state)
    assert status.get("journal_errors") == 1 and status.get("journal_bytes") == 0, status
