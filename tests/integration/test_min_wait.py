"""--min-wait: only waits of at least that long, on every view. The known_periods workload
sleeps 100 ms at a time in one thread, 1.5 s at a time in another, and both from one place
in a third: --min-wait 1s keeps exactly the 1.5 s sleeps, also out of the mixed stack, whose
100 ms periods lie two buckets below the one that holds 1 s."""
import json
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_fails, within, workload_window

@pytest.fixture(scope="module")
def run(daemon):
    return workload_window(daemon, "known_periods", "--long", "3")


def stacks(daemon, truth, window, *args):
    return daemon.dump_json("--pid", str(truth["pid"]), "--group-by", "tid", *window,
                            *args)["stacks"]


def test_dump_keeps_exactly_the_long_waits(daemon, run):
    truth, window = run
    kept = stacks(daemon, truth, window, "--min-wait", "1s")
    by_tid = {}
    for s in kept:
        by_tid.setdefault(s["tid"], []).append(s)
    assert truth["short_tid"] not in by_tid, kept
    for tid, longs, slept in ((truth["long_tid"], truth["longs"], truth["long_ns"]),
                              (truth["mixed_tid"], truth["mixed_longs"], truth["mixed_long_ns"])):
        count = sum(s["count"] for s in by_tid[tid])
        total = sum(s["total_ns"] for s in by_tid[tid])
        assert count == longs, by_tid[tid]
        assert within(total, slept, 0.02), (total, slept, by_tid[tid])
        assert all(s["max_ns"] >= 10**9 for s in by_tid[tid])
    # all of the mixed thread's waits without it: the short ones were there
    mixed = [s for s in stacks(daemon, truth, window) if s["tid"] == truth["mixed_tid"]]
    assert sum(s["count"] for s in mixed) >= truth["mixed_longs"] + truth["mixed_shorts"]


def test_min_wait_of_a_bucket_edge_splits_nothing_long(daemon, run):
    """100 ms lies in [65.536, 131.072) ms: the bucket holding it is kept, its stacks'
    longest waits reach it; all three threads' sleeps stay."""
    truth, window = run
    tids = {s["tid"] for s in stacks(daemon, truth, window, "--min-wait", "100ms")}
    assert {truth["short_tid"], truth["long_tid"], truth["mixed_tid"]} <= tids


def test_hist_keeps_only_the_long_buckets(daemon, run):
    truth, window = run
    reply = json.loads(daemon.ctl("--json", "hist", "--tid", str(truth["mixed_tid"]), *window,
                                  "--min-wait", "1s").stdout)
    h, = reply["histograms"]
    assert h["count"] == truth["mixed_longs"] == sum(h["hist"]), h
    assert all(n == 0 for b, n in enumerate(h["hist"]) if b < 20), h


def test_top_and_timeline_leave_out_the_short_thread(daemon, run):
    truth, window = run
    top = json.loads(daemon.ctl("--json", "top", "--pid", str(truth["pid"]), *window,
                                "--min-wait", "1s").stdout)
    row, = top["rows"]
    # main's join, one wait as long as the run, is long too
    assert row["count"] == truth["longs"] + truth["mixed_longs"] + 1, row
    timeline = json.loads(daemon.ctl("--json", "timeline", "--tid", str(truth["long_tid"]),
                                     *window, "--min-wait", "1s").stdout)
    total = sum(ns for b in timeline["buckets"] for ns in b["states"].values())
    assert within(total, truth["long_ns"], 0.02), timeline
    assert_fails(daemon, ["timeline", "--tid", str(truth["short_tid"]), *window,
                          "--min-wait", "1s"], 1, "no off-CPU data")


def test_flamegraph_and_diff_draw_only_long_waits(daemon, run, tmp_path):
    truth, window = run
    out = tmp_path / "f.svg"
    daemon.ctl("flamegraph", "--pid", str(truth["pid"]), *window, "--min-wait", "1s",
               "-o", str(out))
    text = ET.tostring(ET.parse(out).getroot(), encoding="unicode")
    assert "wait_1500ms" in text and "wait_mixed" in text and "wait_100ms" not in text
    res = daemon.ctl("diff", "--pid", str(truth["pid"]), "--before-since", window[1],
                     "--before-until", window[3], *window, "--min-wait", "1s")
    assert "wait_1500ms" in res.stdout and "wait_100ms" not in res.stdout, res.stdout


def test_bad_min_wait(daemon):
    assert_fails(daemon, ["dump", "--min-wait", "soon"], 2, "invalid duration 'soon' for --min-wait")
    assert_fails(daemon, ["stuck", "--min-wait", "1s"], 2, "--min-wait does not apply to stuck")
