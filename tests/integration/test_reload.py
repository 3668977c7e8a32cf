"""SIGHUP reads the configuration again: live settings change, data stays; a bad file
changes nothing and says why, as file:line."""
import signal
import time

from conftest import Daemon, run_workload


def reload(d, text, config):
    config.write_text(text)
    d.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    return d.call("io.offcpud.Status")["parameters"]


def test_sighup_reload(tmp_path):
    config = tmp_path / "offcpud.conf"
    config.write_text("interval = 200ms\nretention = 15m\n")
    (tmp_path / "d").mkdir()
    d = Daemon(tmp_path / "d", "--config", str(config), "--memory-limit", "64M")
    try:
        truth = run_workload("short_lived")
        d.settled()
        before = d.dump_json("--pid", str(truth["pid"]))["stacks"]

        status = reload(d, "interval = 500ms\nretention = 10m\nmemory-limit = 32M\n", config)
        assert status["interval_ns"] == 500_000_000 and status["retention_ns"] == 600 * 10**9
        assert status["memory_limit"] == 64 << 20, "the command line still wins over the file"
        after = d.dump_json("--pid", str(truth["pid"]))["stacks"]
        assert after == before, ("data survives", before, after)

        status = reload(d, "interval = 1s\nretention = forever\n", config)
        assert f"{config}:2:" in d.read_log(), d.read_log()
        assert status["interval_ns"] == 500_000_000 and status["retention_ns"] == 600 * 10**9
        assert d.dump_json("--pid", str(truth["pid"]))["stacks"] == before
        assert d.proc.poll() is None
    finally:
        d.stop()
