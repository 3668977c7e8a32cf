"""offcpuctl flamegraph (and dump --format svg) against a workload whose blocking is known."""
import json
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_fails, at, kernel_frame, run_workload

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def sleep_and_pipe(daemon):
    """One run of the workload and its dump over a window fixed in absolute times, so that
    the graphs drawn later cover exactly the same stacks."""
    truth = run_workload("sleep_and_pipe")
    reply = daemon.dump_json("--pid", str(truth["pid"]), "--since", "60s")
    window = ("--pid", str(truth["pid"]), "--since", at(reply["start_ns"]),
              "--until", at(reply["end_ns"]))
    return truth, reply, window


def frames(path):
    """{name: (share %, fill)} of every frame drawn, from the SVG's own tooltips."""
    root = ET.parse(path).getroot()
    out = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "f":
            continue
        title = g.find(f"{SVG}title").text
        name, figures = title.rsplit(" (", 1)
        share = float(re.search(r"([\d.]+)%", figures).group(1))
        fill = g.find(f"{SVG}rect").get("fill")
        out.setdefault(name, (0.0, fill))
        out[name] = (out[name][0] + share, fill)
    return root, out


def rgb(fill):
    return tuple(int(v) for v in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", fill).groups())


def share_of(reply, function):
    total = sum(s["total_ns"] for s in reply["stacks"])
    return 100 * sum(s["total_ns"] for s in reply["stacks"]
                     if function in s["user"] or function in s["kernel"]) / total


def test_svg_holds_the_stacks_with_their_shares(daemon, sleep_and_pipe, tmp_path):
    truth, reply, window = sleep_and_pipe
    out = tmp_path / "out.svg"
    res = daemon.ctl("flamegraph", *window, "-o", str(out))
    assert re.fullmatch(rf"wrote {re.escape(str(out))}: {len(reply['stacks'])} stacks, "
                        r"[\d.]+ s off-CPU, \d+ KiB\n", res.stdout), res.stdout
    root, drawn = frames(out)
    title = root.find(f"{SVG}text[@id='title']").text
    assert title == f"Off-CPU time for pid {truth['pid']}", title
    for function in ("do_nanosleep", kernel_frame(reply, "pipe_read")):
        assert function in drawn, sorted(drawn)
        assert drawn[function][0] == pytest.approx(share_of(reply, function), abs=0.02), function
    assert drawn["all"][0] == pytest.approx(100)


def test_user_kernel_and_separator_look_apart(daemon, sleep_and_pipe, tmp_path):
    _, reply, window = sleep_and_pipe
    out = tmp_path / "out.svg"
    daemon.ctl("flamegraph", *window, "-o", str(out))
    _, drawn = frames(out)
    user = max((s for s in reply["stacks"] if s["user"]), key=lambda s: s["total_ns"])["user"][-1]
    r, g, b = rgb(drawn[user][1])
    assert b > r + 40 and b > g + 40, "user frames in the blues of the io palette"
    r, g, b = rgb(drawn["do_nanosleep"][1])
    assert r > b + 100, "kernel frames warm"
    r, g, b = rgb(drawn["-"][1])
    assert r == g == b, "the separator grey"


def test_timeline_strip_covers_the_window(daemon, sleep_and_pipe, tmp_path):
    _, reply, window = sleep_and_pipe
    out = tmp_path / "out.svg"
    daemon.ctl("flamegraph", *window, "-o", str(out))
    root = ET.parse(out).getroot()
    strip = root.find(f".//{SVG}g[@id='timeline']")
    assert strip is not None
    bars = [g.find(f"{SVG}title").text for g in strip.findall(f"{SVG}g")]
    assert bars and any(" off-CPU, S " in t for t in bars), bars
    daemon.ctl("flamegraph", *window, "--no-timeline", "-o", str(out))
    assert ET.parse(out).getroot().find(f".//{SVG}g[@id='timeline']") is None


def test_color_by_state(daemon, sleep_and_pipe, tmp_path):
    _, _, window = sleep_and_pipe
    out = tmp_path / "out.svg"
    daemon.ctl("flamegraph", *window, "--color", "state", "-o", str(out))
    root = ET.parse(out).getroot()
    titles = [g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g") if g.get("class") == "f"]
    sleeps = [t for t in titles if t.startswith("do_nanosleep (")]
    assert sleeps and re.search(r"; S (\d+)%", sleeps[0]), sleeps
    _, drawn = frames(out)
    r, g, b = rgb(drawn["do_nanosleep"][1])
    assert b > r and b > g, "a frame mostly in S is blue"


def test_json_summary_and_dump_format_svg(daemon, sleep_and_pipe, tmp_path):
    _, reply, window = sleep_and_pipe
    out = tmp_path / "out.svg"
    summary = json.loads(daemon.ctl("--json", "flamegraph", *window, "-o", str(out)).stdout)
    assert summary == {"output": str(out), "stacks": len(reply["stacks"]),
                       "total_ns": sum(s["total_ns"] for s in reply["stacks"]),
                       "bytes": out.stat().st_size}
    svg = daemon.ctl("dump", *window, "--format", "svg").stdout
    assert svg == out.read_text(), "dump --format svg writes the same graph"


def test_whole_machine_stays_small(daemon, tmp_path):
    out = tmp_path / "all.svg"
    daemon.ctl("flamegraph", "-o", str(out))
    root, drawn = frames(out)
    assert out.stat().st_size <= 10 << 20
    assert len(root.findall(f".//{SVG}g[@class='f']")) <= 40000


@pytest.mark.parametrize("args, code, message", [
    (("--pid", "0"), 2, "invalid --pid '0' (a positive number)"),
    (("--pid", "2147483000"), 1, "no off-CPU data for pid 2147483000 in that window"),
    (("--color", "rainbow"), 2, "invalid --color 'rainbow' (frames or state)"),
    (("--min-width", "-1"), 2, "invalid --min-width '-1'"),
    (("-o", "/nonexistent/dir/x.svg"), 1, "cannot write /nonexistent/dir/x.svg: No such file"),
    (("--bogus",), 2, "unknown option '--bogus'"),
])
def test_bad_input(daemon, args, code, message):
    assert_fails(daemon, ("flamegraph", *args), code, message)


def test_no_file_left_on_error(daemon, tmp_path):
    out = tmp_path / "x.svg"
    res = daemon.ctl("flamegraph", "--pid", "2147483000", "-o", str(out), check=False)
    assert res.returncode == 1 and not out.exists()


def test_json_needs_a_file(daemon):
    assert_fails(daemon, ("--json", "flamegraph"), 2, "--json needs -o FILE")
