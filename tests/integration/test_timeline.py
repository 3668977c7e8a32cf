"""offcpuctl timeline: when a known workload blocked, and how much, per interval."""
import json
import time

import pytest

from conftest import assert_fails, at, run_workload


# A snapshot's time is spread over what it covers; under a sanitizer on a loaded machine a
# drain can lag by seconds, so a snapshot may start that long before the blocking in it.
DRAIN_LAG_NS = 3_000_000_000


@pytest.fixture(scope="module")
def run(daemon):
    """sleep_and_pipe after 5 s of nothing from it, and the times around it."""
    time.sleep(5)
    started = time.time_ns()
    truth = run_workload("sleep_and_pipe")
    ended = time.time_ns()
    time.sleep(0.5)  # the last snapshot with it drained
    return truth, started, ended


def test_json_sums_match_dump_and_place_the_stall(daemon, run):
    truth, started, ended = run
    reply = json.loads(daemon.ctl("--json", "timeline", "--pid", str(truth["pid"]),
                                  "--since", "30s", "--buckets", "100").stdout)
    buckets = reply["buckets"]
    assert 1 <= len(buckets) <= 100
    busy = [b for b in buckets if b["states"]]
    assert busy, reply
    # quiet, then the stall: it began with the workload, not before, and ended with it
    slack = reply["bucket_ns"] + DRAIN_LAG_NS
    assert not buckets[0]["states"], "the seconds before the run were quiet"
    assert started - slack <= busy[0]["start_ns"] <= started + slack
    assert busy[-1]["start_ns"] <= ended + slack
    # all of it is in the buckets: the same time as a dump of the same window
    dump = daemon.dump_json("--pid", str(truth["pid"]), "--since", at(reply["start_ns"]),
                            "--until", at(reply["end_ns"]))
    total = sum(ns for b in buckets for ns in b["states"].values())
    assert total == pytest.approx(sum(s["total_ns"] for s in dump["stacks"]), abs=len(buckets))
    assert sum(b["states"].get("S", 0) for b in buckets) >= \
        0.98 * (truth["nanosleep_offcpu_ns"] + truth["pipe_offcpu_ns"])


def test_state_filter(daemon, run):
    truth, _, _ = run
    reply = json.loads(daemon.ctl("--json", "timeline", "--pid", str(truth["pid"]),
                                  "--state", "S", "--since", "30s").stdout)
    assert {k for b in reply["buckets"] for k in b["states"]} == {"S"}


def test_human_sparklines_and_table(daemon, run):
    truth, _, _ = run
    out = daemon.ctl("timeline", "--pid", str(truth["pid"]), "--since", "30s",
                     "--buckets", "20").stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"Off-CPU time for pid {truth['pid']}, "), lines[0]
    assert "per " in lines[0] and "peak " in lines[0]
    spark = {line.split()[0]: line for line in lines[1:] if line.strip() and "\u2588" in line}
    assert "total" in spark and "S" in spark, out
    header = next(i for i, line in enumerate(lines) if line.startswith("interval from"))
    rows = lines[header + 1:]
    assert 1 <= len(rows) <= 20 and len(lines[header + 1].split()) == len(lines[header].split())


@pytest.mark.parametrize("args, code, message", [
    (("--buckets", "0"), 2, "invalid --buckets '0' (1 to 1000)"),
    (("--buckets", "1001"), 2, "invalid --buckets '1001' (1 to 1000)"),
    (("--pid", "2147483000"), 1, "no off-CPU data for pid 2147483000 in that window"),
    (("--since", "@1", "--until", "@2"), 1, "that window ends before the oldest data offcpud keeps"),
    (("--state", "Z"), 2, "invalid --state 'Z'"),
    (("extra",), 2, "unexpected argument 'extra'"),
])
def test_bad_input(daemon, args, code, message):
    assert_fails(daemon, ("timeline", *args), code, message)
