"""offcpuctl timeline: when a known workload blocked, and how much, per interval."""
import json
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import Daemon, assert_fails, at, cgroup2_mount, run_workload, workload_in

SVG = "{http://www.w3.org/2000/svg}"


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


@pytest.fixture(scope="module")
def restarted(tmp_path_factory):
    """A cgroup's workloads (seconds of S in sleep_and_pipe beside 100 ms of D in vfork
    waits) under one daemon, then, after it stopped for 4 s, under the next, which restored
    its history: (daemon, cgroup, window)."""
    tmp = tmp_path_factory.mktemp("restart")
    state = tmp / "state"
    cgroup = cgroup2_mount() / f"offcpud-timeline-{time.time_ns()}"
    cgroup.mkdir()

    def work(daemon):
        """Runs the workloads, and waits until the daemon's ring has the last of them: a
        loaded machine can drain seconds late."""
        begun = time.time_ns()
        procs = [workload_in(cgroup, "sleep_and_pipe")[0],
                 workload_in(cgroup, "vfork_waits", "--forks", "20")[0]]
        for proc in procs:
            proc.communicate(timeout=60)
            assert proc.returncode == 0
        ended, deadline = time.time_ns(), time.monotonic() + 60
        while json.loads(daemon.ctl("--json", "timeline", "--cgroup", str(cgroup), "--since",
                                    at(begun), check=False).stdout or "{}").get(
                                        "end_ns", 0) < ended:
            assert time.monotonic() < deadline, "the run never reached the ring"
            time.sleep(0.2)

    daemons = []
    for name in ("one", "two"):
        (tmp / name).mkdir()
        daemons.append(Daemon(tmp / name, "--interval", "200ms", "--state-directory", str(state)))
        if name == "one":
            started = time.time_ns()
        work(daemons[-1])
        if name == "one":
            daemons[0].stop()
            time.sleep(4)
    yield daemons[1], cgroup, ("--cgroup", str(cgroup), "--since", at(started),
                               "--until", at(time.time_ns()))
    daemons[1].stop()
    cgroup.rmdir()


def test_no_data_where_the_daemon_was_stopped(restarted, tmp_path):
    """The 4 s the daemon was down read "no data" (JSON gaps, text, SVG), not zeros."""
    daemon, _, window = restarted
    reply = json.loads(daemon.ctl("--json", "timeline", *window, "--buckets", "100").stdout)
    gaps = reply["gaps"]
    assert len(gaps) == 1 and gaps[0]["end_ns"] - gaps[0]["start_ns"] >= 3_500_000_000, \
        (gaps, window, {k: v for k, v in reply.items() if k != "buckets"})
    step = reply["bucket_ns"]
    inside = [b for b in reply["buckets"]
              if gaps[0]["start_ns"] <= b["start_ns"] and b["start_ns"] + step <= gaps[0]["end_ns"]]
    assert len(inside) >= 3 and not any(b["states"] for b in inside), inside

    out = daemon.ctl("timeline", *window, "--buckets", "100").stdout
    lines = out.splitlines()
    assert sum(line.startswith("no data from ") and "offcpud was not running" in line
               for line in lines) == 1, out
    assert "\u2591" * len(inside) in next(line for line in lines if line.split()[0] == "total")
    header = next(i for i, line in enumerate(lines) if line.startswith("interval from"))
    rows = lines[header + 1:]
    assert sum(row.split()[2:] == ["no", "data"] for row in rows) == len(inside), out

    svg = tmp_path / "flame.svg"
    daemon.ctl("flamegraph", *window, "-o", str(svg))
    strip = ET.parse(svg).getroot().find(f".//{SVG}g[@id='timeline']")
    titles = [g.find(f"{SVG}title").text for g in strip.findall(f"{SVG}g")]
    assert any(t.endswith(": no data, offcpud was not running") for t in titles), titles


def test_each_state_on_its_own_scale(restarted, tmp_path):
    """100 ms of D beside seconds of S: the D row reaches its full height, and says its
    largest interval."""
    daemon, _, window = restarted
    reply = json.loads(daemon.ctl("--json", "timeline", *window).stdout)
    peak = {s: max(b["states"].get(s, 0) for b in reply["buckets"]) for s in "SD"}
    assert 0 < 4 * peak["D"] < peak["S"], peak
    lines = daemon.ctl("timeline", *window).stdout.splitlines()
    spark = {line.split()[0]: line for line in lines if line.split() and "max " in line}
    assert "\u2588" in spark["D"] and "\u2588" in spark["S"], lines
    assert spark["D"].rstrip().endswith(f"max {peak['D'] / 1e6:.1f}ms"), spark["D"]

    svg = tmp_path / "flame.svg"
    daemon.ctl("flamegraph", *window, "-o", str(svg))
    strip = ET.parse(svg).getroot().find(f".//{SVG}g[@id='timeline']")
    labels = [t.text for t in strip.findall(f"{SVG}text") if t.get("class") == "row"]
    assert any(label.startswith("D max ") for label in labels), labels
    bars = {}
    for g in strip.findall(f"{SVG}g"):
        for rect in g.findall(f"{SVG}rect")[1:]:
            bars.setdefault(rect.get("fill"), []).append(float(rect.get("height")))
    assert max(bars["rgb(220,60,50)"]) == pytest.approx(max(bars["rgb(100,130,230)"]), rel=0.01), \
        "D's row as high as S's"
