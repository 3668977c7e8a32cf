"""offcpuctl diff: two windows of one cgroup, the first sleeping most, the second reading
a pipe most; the diff must say which grew and which shrank, per second of window."""
import json
import re
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_fails, cgroup2_mount, workload_in

SVG = "{http://www.w3.org/2000/svg}"


def unix(ns):
    return f"@{ns / 1e9:.6f}"


def run_in(daemon, cgroup, since, *args):
    """Run the workload in cgroup; returns a time after which the daemon has all of it in
    its ring: a dump reaching now drains the interval in progress (a drain may lag a busy
    machine by seconds: naming a new process's frames the first time takes a while)."""
    proc, _ = workload_in(cgroup, "sleep_and_pipe", *args)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    deadline = time.monotonic() + 30
    while not daemon.ctl("dump", "--cgroup", str(cgroup), "--since", unix(since),
                         check=False).stdout:
        assert time.monotonic() < deadline, "the run never reached the ring"
        time.sleep(0.2)
    return time.time_ns()


@pytest.fixture(scope="module")
def windows(daemon):
    """(selection, before window, after window): 200 sleeps of 10 ms and 5 pipe reads
    before, 5 sleeps and 100 pipe reads (20 ms apart) after: each run about 2 s, so that
    per second of window the changes stand out even when a drain lags."""
    cgroup = cgroup2_mount() / f"offcpud-diff-{time.time_ns()}"
    cgroup.mkdir()
    t0 = time.time_ns()
    t1 = run_in(daemon, cgroup, t0, "--sleeps", "200", "--writes", "5")
    t2 = run_in(daemon, cgroup, t1, "--sleeps", "5", "--writes", "100")
    yield (("--cgroup", str(cgroup)), ("--before-since", unix(t0), "--before-until", unix(t1)),
           ("--since", unix(t1), "--until", unix(t2)))
    cgroup.rmdir()


def diff_rows(text):
    rows = {}
    for line in text.splitlines():
        stack, before, after = line.rsplit(" ", 2)
        rows[stack] = (int(before), int(after))
    return rows


def through(rows, function):
    return [sum(v[i] for s, v in rows.items() if f";{function};" in s) for i in (0, 1)]


def test_folded_says_what_grew_and_shrank(daemon, windows):
    selection, before, after = windows
    rows = diff_rows(daemon.ctl("diff", *selection, *before, *after).stdout)
    sleep_before, sleep_after = through(rows, "block_in_nanosleep_100x10ms")
    pipe_before, pipe_after = through(rows, "block_in_pipe_read")
    assert sleep_before > 3 * sleep_after > 0, (sleep_before, sleep_after)
    assert pipe_after > 3 * pipe_before > 0, (pipe_before, pipe_after)


def test_values_are_per_second_of_window(daemon, windows):
    selection, before, after = windows
    rows = diff_rows(daemon.ctl("diff", *selection, *before, *after).stdout)
    for column, window in ((0, before), (1, after)):
        since, until = window[1], window[3]
        dump = daemon.dump_json(*selection, "--since", since, "--until", until)
        seconds = (dump["end_ns"] - dump["start_ns"]) / 1e9
        want = sum(s["total_ns"] for s in dump["stacks"]) / 1e3 / seconds
        got = sum(v[column] for v in rows.values())
        assert got == pytest.approx(want, abs=len(rows)), (column, got, want)


def test_windows_adjacent_by_default(daemon, windows):
    selection, before, after = windows
    explicit = daemon.ctl("diff", *selection, *before, *after).stdout
    implied = daemon.ctl("diff", *selection, before[0], before[1], *after).stdout
    assert implied == explicit


def test_json(daemon, windows):
    selection, before, after = windows
    reply = json.loads(daemon.ctl("--json", "diff", *selection, *before, *after).stdout)
    assert reply["unit"] == "us/s"
    assert reply["before"]["end_ns"] <= reply["after"]["start_ns"] + 1
    growth = [s["after"] - s["before"] for s in reply["stacks"]]
    assert growth == sorted(growth, reverse=True), "largest growth first"
    assert any("block_in_pipe_read" in s["stack"] for s in reply["stacks"][:3])


def test_svg_red_grew_blue_shrank(daemon, windows, tmp_path):
    selection, before, after = windows
    out = tmp_path / "diff.svg"
    res = daemon.ctl("diff", *selection, *before, *after, "-o", str(out))
    assert res.stdout == f"wrote {out}\n"
    fills = {}
    for g in ET.parse(out).getroot().iter(f"{SVG}g"):
        if g.get("class") == "f":
            name = g.find(f"{SVG}title").text.rsplit(" (", 1)[0]
            fills[name] = tuple(map(int, re.findall(r"\d+", g.find(f"{SVG}rect").get("fill"))))
    r, g, b = fills["block_in_pipe_read"]
    assert r == 255 and g < 200 and b < 200, "grew: red"
    r, g, b = fills["block_in_nanosleep_100x10ms"]
    assert b == 255 and r < 255, "shrank: blue"


@pytest.mark.parametrize("args, code, message", [
    ((), 2, "diff needs --before-since"),
    (("--before-since", "60s"), 2, "diff needs --since or --before-until"),
    (("--before-since", "2m", "--since", "1x"), 2, "invalid duration '1x' for --since"),
    (("--before-since", "@1", "--before-until", "@2"), 1,
     "no off-CPU data at all in the earlier window"),
])
def test_bad_input(daemon, args, code, message):
    assert_fails(daemon, ("diff", *args), code, message)
