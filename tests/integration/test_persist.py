"""Restarts lose no history: the ring is saved at SIGTERM and restored at start;
a state file that cannot be trusted is set aside, never read."""
import pytest

from conftest import Daemon, at, run_workload


def window(reply):
    return ["--since", at(reply["start_ns"] - 1), "--until", at(reply["end_ns"])]


def test_restart_keeps_history(tmp_path):
    state = tmp_path / "state"
    (tmp_path / "one").mkdir()
    first = Daemon(tmp_path / "one", "--interval", "200ms", "--state-directory", str(state))
    truth = run_workload("short_lived")
    before = first.dump_json("--pid", str(truth["pid"]), "--group-by", "tid,state")
    detail = first.dump_json("--pid", str(truth["pid"]), "--frame-detail", *window(before))
    first.stop()
    assert (state / "ring.v1").exists()
    assert "saved" in (tmp_path / "one" / "offcpud.log").read_text()

    (tmp_path / "two").mkdir()
    second = Daemon(tmp_path / "two", "--interval", "200ms", "--state-directory", str(state))
    try:
        assert "restored" in second.read_log()
        after = second.dump_json("--pid", str(truth["pid"]), "--group-by", "tid,state",
                                 *window(before))
        assert after["stacks"] == before["stacks"]
        assert any("short_lived_sleep_20x10ms" in s["user"] for s in after["stacks"])
        # where each frame lies is kept too
        assert second.dump_json("--pid", str(truth["pid"]), "--frame-detail",
                                *window(before))["stacks"] == detail["stacks"]
        assert any(f.get("module", "").endswith("/short_lived")
                   for s in detail["stacks"] for f in s["user_frames"])
    finally:
        second.stop()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "foreign"])
def test_untrusted_state_set_aside(tmp_path, damage):
    state = tmp_path / "state"
    (tmp_path / "one").mkdir()
    first = Daemon(tmp_path / "one", "--interval", "200ms", "--state-directory", str(state))
    run_workload("short_lived")
    first.stop()
    path = state / "ring.v1"
    data = bytearray(path.read_bytes())
    if damage == "garbage":
        data = bytearray(b"\x00\xff" * 5000)
    elif damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped":
        data[len(data) // 2] ^= 0x40
    else:
        data[:8] = b"SOMEONE!"
    path.write_bytes(bytes(data))

    (tmp_path / "two").mkdir()
    second = Daemon(tmp_path / "two", "--interval", "200ms", "--state-directory", str(state))
    try:
        assert "cannot be trusted" in second.read_log()
        assert not path.exists()
        assert list(state.glob("ring.v1.untrusted-*")), list(state.iterdir())
        status = second.call("io.offcpud.Status")["parameters"]
        assert status["snapshots"] <= 2  # nothing restored, only its own
        truth = run_workload("short_lived")
        assert second.dump_json("--pid", str(truth["pid"]))["stacks"]
    finally:
        second.stop()
