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


def tree_of(stacks, by_state=False):
    """{path: ns} of every frame, as offcpuctl merges a Dump's stacks: the thread name, the
    user frames root first, "-", the kernel frames; by_state: {path: {state: ns}}."""
    tree = {}
    for s in stacks:
        path = ("all",)
        for name in (None, s["comm"], *s["user"], "-", *s["kernel"]):
            path = path if name is None else path + (name,)
            if by_state:
                states = tree.setdefault(path, {})
                states[s["state"]] = states.get(s["state"], 0) + s["total_ns"]
            else:
                tree[path] = tree.get(path, 0) + s["total_ns"]
    return tree


@pytest.mark.parametrize("min_px, by_state, max_frames", [
    (0, False, 0), (0.1, False, 0), (0.1, True, 0), (5, False, 0), (0, False, 20)])
def test_daemon_tree_is_the_dumps(daemon, sleep_and_pipe, min_px, by_state, max_frames):
    """The daemon merges the stacks a flame graph draws (Flame): its tree is the one the
    client built from Dump's stacks, frame by frame, and the frames narrower than asked
    (or than the widest max_frames) are summed per parent, with their number, never
    dropped."""
    _, reply, _ = sleep_and_pipe
    # the whole machine over the fixed window: many stacks, of every process of the suite
    window = {"start_ns": reply["start_ns"] + 1000, "end_ns": reply["end_ns"] + 1000}
    group_by = {"group_by": ["state"]} if by_state else {}
    dump = daemon.call("io.offcpud.Dump", {**window, **group_by})["parameters"]["stacks"]
    ppb = int(min_px / 1180 * 1e9)  # the graph is 1180 pixels wide
    flame = daemon.call("io.offcpud.Flame", {**window, **group_by, "min_width_ppb": ppb,
                                             "max_frames": max_frames})
    flame = flame["parameters"]
    assert flame["stacks"] == len(dump) and len(dump) >= 20, (flame["stacks"], len(dump))

    truth = tree_of(dump)
    min_ns = truth[("all",)] * ppb // 10**9
    widths = sorted((ns for ns in truth.values() if ns >= min_ns), reverse=True)
    if max_frames and len(widths) > max_frames:
        min_ns = widths[max_frames] + 1
    paths, kept, narrow = [], {}, {}
    for f in flame["frames"]:
        path = (f["name"],) if f["parent"] < 0 else paths[f["parent"]] + (f["name"],)
        paths.append(path)
        if f["kind"] == "narrow":
            narrow[path[:-1]] = (f["merged"], f["total_ns"])
        else:
            assert path not in kept, f"{path} twice"
            kept[path] = f
    assert {p: f["total_ns"] for p, f in kept.items()} == \
        {p: ns for p, ns in truth.items() if ns >= min_ns}
    expect = {}
    for p, ns in truth.items():
        if len(p) > 1 and ns < min_ns and truth[p[:-1]] >= min_ns:
            count, total = expect.get(p[:-1], (0, 0))
            expect[p[:-1]] = (count + 1, total + ns)
    assert narrow == expect
    # none summed unless asked; 5 px (0.4% of the whole) and 20 frames leave some out
    # (0.1 px of a quiet window may leave none)
    if min_px != 0.1:
        assert bool(narrow) == (min_px > 0 or max_frames > 0), narrow
    assert not max_frames or len(kept) <= max_frames
    if by_state:
        states = tree_of(dump, by_state=True)
        assert all(f["state_ns"] == states[p] for p, f in kept.items())
    kinds = {p: f["kind"] for p, f in kept.items()}
    assert kinds[("all",)] == "root"
    # the largest stack is at least the average: kept whole at 0.1 px of fewer than
    # 11,800 stacks (5 px or 20 frames may leave part of it out)
    if min_px <= 0.1 and not max_frames:
        some = max(dump, key=lambda s: s["total_ns"])
        path = ("all", some["comm"], *some["user"], "-", *some["kernel"])
        assert [kinds[path[:i]] for i in range(2, len(path) + 1)] == \
            ["comm", *["user"] * len(some["user"]), "separator", *["kernel"] * len(some["kernel"])]


def test_flame_bad_width(daemon):
    reply = daemon.call("io.offcpud.Flame", {"min_width_ppb": 2 * 10**9})
    assert reply.get("error") == "org.varlink.service.InvalidParameter", reply
