"""Snapshots older than the retention are evicted, counted, and no longer answered."""
import time

from conftest import run_workload


def test_retention_evicts(start_daemon):
    d = start_daemon("--interval", "100ms", "--retention", "1s")
    truth = run_workload("short_lived")
    assert d.dump_json("--pid", str(truth["pid"]))["stacks"], "recorded while retained"
    time.sleep(2.5)
    res = d.ctl("dump", "--pid", str(truth["pid"]), check=False)
    assert res.returncode == 1 and "no off-CPU data for pid" in res.stderr, res
    status = d.call("io.offcpud.Status")["parameters"]
    assert status["evicted_retention"] > 0
    assert status["newest_ns"] - status["oldest_ns"] <= 1_200_000_000
