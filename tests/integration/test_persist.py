"""Restarts lose no history: the ring is saved at SIGTERM and restored at start;
a state file that cannot be trusted is set aside, never read."""
import re
from pathlib import Path

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


def restart(tmp_path, state: Path, name: str) -> Daemon:
    (tmp_path / name).mkdir()
    return Daemon(tmp_path / name, "--interval", "200ms", "--state-directory", str(state))


ORIGINS = {
    # what the directory's origin.v1 is made to say -> what the start says of it
    "restart": (None, "this boot", "in this boot"),
    "reboot": ("{machine} 00000000-0000-0000-0000-000000000000 {version}\n", "an earlier boot",
               "in an earlier boot"),
    "copied": ("0123456789abcdef0123456789abcdef 00000000-0000-0000-0000-000000000000 0.0.1\n",
               "another host", "on another host by offcpud 0.0.1"),
    "older": ("", "unknown", "by an unknown writer"),
}


@pytest.mark.parametrize("origin", ORIGINS)
def test_start_says_what_it_restored_and_whose(tmp_path, origin):
    """A start on a history says how much, how old, and whose: this boot's, an
    earlier boot's, another host's (a state directory copied, an image cloned
    with it) or of a version before the record was kept."""
    content, name, phrase = ORIGINS[origin]
    state = tmp_path / "state"
    first = restart(tmp_path, state, "one")
    truth = run_workload("short_lived")
    status = first.call("io.offcpud.Status")["parameters"]
    assert "restored" not in status  # a first start restores nothing
    first.stop()
    record = state / "origin.v1"
    machine, _, version = record.read_text().split()
    if content == "":
        record.unlink()
    elif content:
        record.write_text(content.format(machine=machine, version=version))
        record.chmod(0o600)

    second = restart(tmp_path, state, "two")
    try:
        restored = second.call("io.offcpud.Status")["parameters"]["restored"]
        assert restored["origin"] == name, restored
        assert restored["version"] == ("" if content == "" else
                                       "0.0.1" if origin == "copied" else version)
        assert restored["oldest_ns"] < restored["newest_ns"] <= restored["at_ns"], restored
        assert restored["snapshots"] >= 1
        assert second.dump_json("--pid", str(truth["pid"]))["stacks"]
        log = second.read_log()
        assert re.search(rf"restored {restored['snapshots']} snapshots from {state}/ring.v1, "
                         rf"\d+s to \d+s old, written {phrase}$", log, re.M), log
        text = second.ctl("status").stdout
        assert re.search(rf"^restored +{restored['snapshots']} snapshots, .* old at start, "
                         rf"written {re.escape(phrase.split(' by ')[0])}", text, re.M), text
        # and the record is now this start's
        assert record.read_text().split()[0] == machine
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
