"""--no-idle: idle waits left out, on every view, by the rule of offcpuctl(1). The idle_waits
workload has an event loop in epoll_wait, a timer loop in nanosleep and a pool worker on a
condition variable, all idle; and a request thread waiting on a mutex that a checkpoint
thread holds while it fsyncs, none idle. --no-idle drops exactly the idle threads' sleeps
(S) and keeps every other wait, to the nanosecond, and says how much it left out."""
import json
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_fails, workload_window

IDLE = ("event_loop", "timer_loop", "pool_worker")
KEPT = ("request", "checkpoint")


@pytest.fixture(scope="module")
def run(daemon):
    return workload_window(daemon, "idle_waits", "--seconds", "3")


def by_tid_state(reply):
    sums = {}
    for s in reply["stacks"]:
        key = (s["tid"], s["state"])
        sums[key] = sums.get(key, 0) + s["total_ns"]
    return sums


def dump(daemon, truth, window, *args):
    return daemon.dump_json("--pid", str(truth["pid"]), "--group-by", "tid,state", *window, *args)


def test_dump_drops_exactly_the_idle_sleeps(daemon, run):
    truth, window = run
    idle_tids = {truth[name] for name in IDLE}
    everything = by_tid_state(dump(daemon, truth, window))
    reply = dump(daemon, truth, window, "--no-idle")
    kept = by_tid_state(reply)
    for name in IDLE:  # they were there, asleep most of the run
        assert everything.get((truth[name], "S"), 0) > 2 * 10**9, (name, everything)
    assert everything.get((truth["request"], "S"), 0) > 10**8, everything  # the lock wait
    assert everything.get((truth["checkpoint"], "D"), 0) > 0, everything  # the fsync
    dropped = {k: v for k, v in everything.items() if k[0] in idle_tids and k[1] == "S"}
    assert kept == {k: v for k, v in everything.items() if k not in dropped}, (kept, everything)
    assert reply["idle_ns"] == sum(dropped.values()), (reply["idle_ns"], dropped)
    # the lock wait and the fsync stay; no sleep in an idle place does (a preemption
    # there, R, is no wait for work and stays)
    frames = [";".join(s["user"] + s["kernel"]) for s in reply["stacks"] if s["state"] != "R"]
    assert any("__lll_lock_wait" in f for f in frames), frames
    assert any("fsync" in f for f in frames), frames
    assert not any("epoll_wait" in f or "nanosleep" in f or "pthread_cond" in f for f in frames)


def test_text_output_says_what_it_left_out(daemon, run):
    truth, window = run
    # S alone: a preemption (R) in epoll_wait on a loaded host is no idle wait
    res = daemon.ctl("dump", "--pid", str(truth["pid"]), "--state", "S", *window, "--no-idle")
    note, = res.stderr.splitlines()
    assert note.startswith("offcpuctl: --no-idle left out ") and note.endswith(" of idle waits")
    assert "epoll_wait" not in res.stdout and "__lll_lock_wait" in res.stdout
    # no line without it; none with --json, whose reply has idle_ns
    assert not daemon.ctl("dump", "--pid", str(truth["pid"]), *window).stderr
    assert not daemon.ctl("--json", "top", "--pid", str(truth["pid"]), *window,
                          "--no-idle").stderr


def test_top_timeline_and_hist_leave_out_the_idle_time(daemon, run):
    truth, window = run
    everything = by_tid_state(dump(daemon, truth, window))
    idle_ns = dump(daemon, truth, window, "--no-idle")["idle_ns"]
    total = sum(everything.values())
    top = json.loads(daemon.ctl("--json", "top", "--pid", str(truth["pid"]), "--by", "thread",
                                *window, "--no-idle").stdout)
    assert top["idle_ns"] == idle_ns
    rows = {r["tid"]: r for r in top["rows"]}
    for name in IDLE:
        assert rows.get(truth[name], {"states": {"S": 0}})["states"]["S"] == 0, rows
    for name in KEPT:
        tid = truth[name]
        assert rows[tid]["total_ns"] == sum(v for k, v in everything.items() if k[0] == tid)
    timeline = json.loads(daemon.ctl("--json", "timeline", "--pid", str(truth["pid"]), *window,
                                     "--no-idle").stdout)
    assert timeline["idle_ns"] == idle_ns
    assert sum(ns for b in timeline["buckets"] for ns in b["states"].values()) == total - idle_ns
    hist = json.loads(daemon.ctl("--json", "hist", "--pid", str(truth["pid"]), *window,
                                 "--no-idle").stdout)
    assert hist["idle_ns"] == idle_ns
    h, = hist["histograms"]
    everything_hist, = json.loads(daemon.ctl("--json", "hist", "--pid", str(truth["pid"]),
                                             *window).stdout)["histograms"]
    # the idle threads' sleeps: 50 ms and 100 ms periods, dozens of them
    assert everything_hist["count"] - h["count"] >= 3 * 20, (everything_hist, h)


def test_flamegraph_and_diff_draw_no_idle_wait(daemon, run, tmp_path):
    truth, window = run
    out = tmp_path / "f.svg"
    res = daemon.ctl("flamegraph", "--pid", str(truth["pid"]), "--state", "S", *window,
                     "--no-idle", "-o", str(out))
    assert "left out" in res.stderr
    text = ET.tostring(ET.parse(out).getroot(), encoding="unicode")
    assert "__lll_lock_wait" in text
    assert "epoll_wait" not in text and "pthread_cond_timedwait" not in text
    res = daemon.ctl("diff", "--pid", str(truth["pid"]), "--state", "S", "--before-since",
                     window[1], "--before-until", window[3], *window, "--no-idle")
    assert "__lll_lock_wait" in res.stdout and "epoll_wait" not in res.stdout, res.stdout
    assert "in the earlier window" in res.stderr and "in the later window" in res.stderr


def test_wakers_leave_out_the_idle_waits(daemon, run):
    truth, window = run
    args = ("wakers", "--pid", str(truth["pid"]), "--state", "S", *window)
    everything = daemon.ctl(*args).stdout
    res = daemon.ctl(*args, "--no-idle")
    assert "left out" in res.stderr
    woken = [line.split(";--;")[0] for line in res.stdout.splitlines()]
    assert any("__lll_lock_wait" in w for w in woken), woken
    assert "epoll_wait" in everything
    assert not any("epoll_wait" in w or "pthread_cond_timedwait" in w or "nanosleep" in w
                   for w in woken), woken


def test_no_idle_is_not_for_stuck(daemon):
    assert_fails(daemon, ["stuck", "--no-idle"], 2, "--no-idle does not apply to stuck")
