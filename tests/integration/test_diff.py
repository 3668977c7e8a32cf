"""offcpuctl diff: two windows of one cgroup, the first reading a pipe most (and sleeping
in many_sleepers, which is gone after), the second waiting for vfork children; the diff
must say which grew, which shrank and which vanished, per second of window. Frames are the kernel's, named whatever the user stacks' unwinding found."""
import json
import re
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_fails, cgroup2_mount, workload_in
from devtools import Chromium

SVG = "{http://www.w3.org/2000/svg}"
VFORK = "sys_vfork"  # the vfork system call: its wait is inlined here and there


def unix(ns):
    return f"@{ns / 1e9:.6f}"


def run_in(daemon, cgroup, since, *workloads):
    """Run workloads ((name, *args) each) side by side in cgroup; returns a time after
    which the daemon has all of them in its ring: a dump reaching now drains the interval
    in progress (a drain may lag a busy machine by seconds)."""
    procs = [workload_in(cgroup, *w)[0] for w in workloads]
    for proc in procs:
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
    """(selection, before window, after window): before, 100 pipe reads 20 ms apart (2 s)
    and two threads sleeping 1 s; after, 2 pipe reads beside 300 vfork waits of 5 ms (1.5 s
    in D)."""
    cgroup = cgroup2_mount() / f"offcpud-diff-{time.time_ns()}"
    cgroup.mkdir()
    t0 = time.time_ns()
    run_in(daemon, cgroup, t0, ("sleep_and_pipe", "--sleeps", "10", "--writes", "100"),
           ("many_sleepers", "--threads", "2", "--seconds", "1"))
    # the snapshot in progress at the windows' meeting, which counts in the later one
    # (by its end), holds nothing of the first run: what vanished is gone from it
    time.sleep(1)
    t1 = time.time_ns()
    t2 = run_in(daemon, cgroup, t1, ("sleep_and_pipe", "--sleeps", "10", "--writes", "2"),
                ("vfork_waits", "--forks", "300"))
    yield (("--cgroup", str(cgroup)), ("--before-since", unix(t0), "--before-until", unix(t1)),
           ("--since", unix(t1), "--until", unix(t2)))
    cgroup.rmdir()


def diff_rows(text):
    rows = {}
    for line in text.splitlines():
        stack, before, after = line.rsplit(" ", 2)
        rows[stack] = (int(before), int(after))
    return rows


def through(rows, part):
    """us/s before and after of the stacks with a frame whose name holds part."""
    return [sum(v[i] for s, v in rows.items() if any(part in f for f in s.split(";")))
            for i in (0, 1)]


def test_folded_says_what_grew_and_shrank(daemon, windows):
    selection, before, after = windows
    text = daemon.ctl("diff", *selection, *before, *after).stdout
    rows = diff_rows(text)
    change = [abs(a - b) for b, a in rows.values()]
    assert change == sorted(change, reverse=True), text  # dicts keep the lines' order
    pipe_before, pipe_after = through(rows, "pipe_read")
    vfork_before, vfork_after = through(rows, VFORK)
    assert pipe_before > 3 * pipe_after > 0, (pipe_before, pipe_after)
    assert vfork_after > 0 == vfork_before, (vfork_before, vfork_after)


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
    change = [abs(s["after"] - s["before"]) for s in reply["stacks"]]
    assert change == sorted(change, reverse=True), "largest change first, grown or shrunk"
    # what shrank (pipe reads) is ranked by its change as what grew (vfork waits) is
    shrunk = [i for i, s in enumerate(reply["stacks"])
              if "pipe_read" in s["stack"] and s["after"] < s["before"]]
    grown = [i for i, s in enumerate(reply["stacks"]) if VFORK in s["stack"]]
    assert shrunk and grown, reply["stacks"]
    assert min(shrunk) < len(reply["stacks"]) - 3, "not at the end, as by growth"


def test_svg_red_grew_blue_shrank(daemon, windows, tmp_path):
    selection, before, after = windows
    out = tmp_path / "diff.svg"
    res = daemon.ctl("diff", *selection, *before, *after, "-o", str(out))
    assert res.stdout == f"wrote {out}: {(out.stat().st_size + 1023) // 1024} KiB\n"
    summary = json.loads(daemon.ctl("--json", "diff", *selection, *before, *after,
                                    "-o", str(out)).stdout)
    assert summary == {"output": str(out), "bytes": out.stat().st_size}
    fills = []
    for g in ET.parse(out).getroot().iter(f"{SVG}g"):
        if g.get("class") == "f":
            name = g.find(f"{SVG}title").text.rsplit(" (", 1)[0]
            fills.append((name, tuple(map(int, re.findall(r"\d+", g.find(f"{SVG}rect").get(
                "fill"))))))
    # a frame may stand in several stacks (the unwinding found more or less above it), but
    # each program's name is one frame: sleep_and_pipe blocked far less, vfork_waits is new
    assert any(r == 255 and g < 200 and b < 200 for name, (r, g, b) in fills if VFORK in name), \
        "grew: red"
    r, g, b = next(fill for name, fill in fills if name == "vfork_waits")
    assert r == 255 and g < 200 and b < 200, "grew: red"
    r, g, b = next(fill for name, fill in fills if name == "sleep_and_pipe")
    assert b == 255 and r < 200 and g < 200, "shrank: blue"


def parse_ns(text):
    """render_ns's "12.5ms" as ns."""
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(number) * {"us": 1e3, "ms": 1e6, "s": 1e9}[unit]


def diff_frames(path):
    """name -> [(before ns/s, after ns/s, change word, width px, share drawn hatched)]"""
    frames = {}
    for g in ET.parse(path).getroot().iter(f"{SVG}g"):
        if g.get("class") != "f":
            continue
        name, figures = g.find(f"{SVG}title").text.rsplit(" (", 1)
        m = re.fullmatch(r"before (\S+)/s, after (\S+)/s, (new|vanished|change [-+]\S+/s, "
                         r"[-+]\d+%)\)", figures)
        assert m, figures
        rects = g.findall(f"{SVG}rect")
        lost = [r for r in rects if r.get("class") == "lost"]
        hatched = 1 - float(lost[0].get("data-keep")) if lost else 0
        frames.setdefault(name, []).append((parse_ns(m[1]), parse_ns(m[2]), m[3].split()[0],
                                            float(rects[0].get("width")), hatched))
    return frames


def test_svg_draws_grown_shrunk_and_vanished(daemon, windows, tmp_path):
    """All three are drawn at their larger width, with both rates in the title: the
    vanished one all hatched, the shrunk one partly, the new one not at all."""
    selection, before, after = windows
    out = tmp_path / "diff.svg"
    daemon.ctl("diff", *selection, *before, *after, "-o", str(out))
    frames = diff_frames(out)
    (b, a, word, width, hatched), = frames["vfork_waits"]
    assert b == 0 < a and word == "new" and hatched == 0, frames["vfork_waits"]
    # the graph's scale, the same for every frame; titles say 1.5s/s to 5% at worst
    px_per_ns_s, slack = width / a, 0.06
    (b, a, word, width, hatched), = frames["sleep_and_pipe"]
    assert b > 3 * a > 0 and word == "change", frames["sleep_and_pipe"]
    # as wide as before at least (its sleeps, a small part, may have grown per second)
    assert (1 - slack) * b <= width / px_per_ns_s <= (1 + slack) * (a + b), (b, a, width)
    assert hatched == pytest.approx(1 - a * px_per_ns_s / width, abs=0.02), "lost: hatched"
    (b, a, word, width, hatched), = frames["many_sleepers"]
    assert b > 0 == a and word == "vanished" and hatched == 1, frames["many_sleepers"]
    assert width / px_per_ns_s == pytest.approx(b, rel=slack), "as wide as before"


# a frame of that name on screen: its box, the share in colour, and its hatched part's box
LOST_JS = """(() => {
  for (const g of document.querySelectorAll("g.f")) {
    if (!g.querySelector("title").textContent.startsWith(%r + " (")) continue;
    const r = g.querySelector("rect").getBoundingClientRect(), l = g.querySelector("rect.lost");
    const b = l ? l.getBoundingClientRect() : {x: null, width: null};
    return {x: r.x, y: r.y, w: r.width, h: r.height, lx: b.x, lw: b.width,
            keep: l ? Number(l.getAttribute("data-keep")) : 1};
  }
  return null;
})()"""


def test_svg_in_a_browser_hatches_what_was_lost(daemon, windows, tmp_path):
    """In chromium: the vanished frame is painted hatched, and a zoom keeps a shrunk frame's
    hatched part where it belongs (flamegraph.js moves it with the frame)."""
    selection, before, after = windows
    out = tmp_path / "diff.svg"
    daemon.ctl("diff", *selection, *before, *after, "-o", str(out))
    (tmp_path / "chromium").mkdir()
    page = Chromium(tmp_path / "chromium")
    try:
        page.load(out.as_uri())
        assert page.errors() == []
        gone = page.js(LOST_JS % "many_sleepers")
        assert gone["keep"] == 0 and gone["lx"] == pytest.approx(gone["x"], abs=0.5) and \
            gone["lw"] == pytest.approx(gone["w"], abs=0.5), gone
        shot = page.screenshot()
        row = {shot.getpixel((int(gone["x"] + i), int(gone["y"] + gone["h"] / 2)))[:3]
               for i in range(2, int(gone["w"]) - 2)}
        assert (70, 90, 220) in row and (225, 232, 255) in row, "stripes on pale blue"

        shrunk = page.js(LOST_JS % "sleep_and_pipe")
        assert 0 < shrunk["keep"] < 1, shrunk
        page.reply(page.click(shrunk["x"] + 2, shrunk["y"] + shrunk["h"] / 2))
        zoomed = page.js(LOST_JS % "sleep_and_pipe")
        assert zoomed["w"] == pytest.approx(1180, abs=1), zoomed
        assert zoomed["lx"] == pytest.approx(zoomed["x"] + zoomed["keep"] * zoomed["w"], abs=0.5)
        assert zoomed["lw"] == pytest.approx((1 - zoomed["keep"]) * zoomed["w"], abs=0.5)
        assert page.errors() == []
    finally:
        page.close()


@pytest.mark.parametrize("args, code, message", [
    ((), 2, "diff needs --before-since"),
    (("--before-since", "60s"), 2, "diff needs --since or --before-until"),
    (("--before-since", "2m", "--since", "1x"), 2, "invalid duration '1x' for --since"),
    (("--before-since", "@1", "--before-until", "@2"), 1,
     "that window ends before the oldest data offcpud keeps"),
])
def test_bad_input(daemon, args, code, message):
    assert_fails(daemon, ("diff", *args), code, message)
