"""The flame graph SVG in Debian's real chromium (headless, over the DevTools protocol): it
loads without errors, shows the expected frames, zooms on a click, resets, and a search
highlights frames and reports the share they hold."""
import os
import re

import pytest

from conftest import at, kernel_frame, run_workload
from devtools import Chromium, frame, painted


@pytest.fixture(scope="module")
def graph(daemon, tmp_path_factory):
    """The SVG of one run of sleep_and_pipe and the dump of the same window."""
    truth = run_workload("sleep_and_pipe")
    reply = daemon.dump_json("--pid", str(truth["pid"]), "--since", "60s")
    path = tmp_path_factory.mktemp("svg") / "sleep_and_pipe.svg"
    daemon.ctl("flamegraph", "--pid", str(truth["pid"]), "--since", at(reply["start_ns"]),
               "--until", at(reply["end_ns"]), "-o", str(path))
    return path, reply


@pytest.fixture(scope="module")
def page(graph, tmp_path_factory):
    browser = Chromium(tmp_path_factory.mktemp("chromium"))
    browser.load(graph[0].as_uri())
    yield browser
    browser.close()


def test_loads_without_errors_and_shows_the_frames(page, graph):
    assert page.errors() == []
    shot = page.screenshot()
    if os.environ.get("OFFCPUD_FLAMEGRAPH_PNG"):  # how docs/flamegraph.png is made
        height = int(page.js("document.documentElement.getAttribute('height')"))
        shot.crop((0, 0, shot.width, min(height, shot.height))).save(
            os.environ["OFFCPUD_FLAMEGRAPH_PNG"])
    pipe_read = kernel_frame(graph[1], "pipe_read")
    for name in ("do_nanosleep", pipe_read, "entry_SYSCALL_64_after_hwframe", "-"):
        f = frame(page, name)
        assert f["shown"] and f["w"] > 20, f
        assert painted(shot, f, f["fill"]), (name, f)
    label = frame(page, "entry_SYSCALL_64_after_hwframe")["label"]
    assert label and "entry_SYSCALL_64_after_hwframe".startswith(label.rstrip(".")), label
    assert page.js("document.getElementById('title').textContent").startswith(
        "Off-CPU time for pid ")


def test_click_zooms_and_reset_restores(page, graph):
    pipe_read = kernel_frame(graph[1], "pipe_read")
    before = frame(page, pipe_read)
    assert before["w"] < 1000
    page.reply(page.click(before["x"] + before["w"] / 2, before["y"] + before["h"] / 2))
    zoomed = frame(page, pipe_read)
    assert zoomed["w"] == pytest.approx(1180, abs=1) and zoomed["x"] == pytest.approx(10, abs=1)
    assert not frame(page, "do_nanosleep")["shown"], "other paths hidden"
    assert zoomed["label"] == pipe_read, "the label grows with the frame"
    assert painted(page.screenshot(), zoomed, zoomed["fill"])
    assert page.js("document.getElementById('reset').getAttribute('opacity')") == "1"

    reset = page.js("(() => { const b = document.getElementById('reset')"
                    ".getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]; })()")
    page.reply(page.click(*reset))
    back = frame(page, pipe_read)
    assert back["w"] == pytest.approx(before["w"], abs=0.01) and back["x"] == pytest.approx(
        before["x"], abs=0.01)
    assert frame(page, "do_nanosleep")["shown"]
    assert page.errors() == []


def matched_share(reply, pattern):
    """The share of time in stacks with a frame matching pattern, as a search counts it."""
    regex = re.compile(pattern)
    total = sum(s["total_ns"] for s in reply["stacks"])
    hit = sum(s["total_ns"] for s in reply["stacks"]
              if any(regex.search(f) for f in [s["comm"], *s["user"], *s["kernel"]]))
    return 100 * hit / total


def test_search_highlights_and_reports_the_share(page, graph):
    _, reply = graph
    search = page.js("(() => { const b = document.getElementById('search')"
                     ".getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]; })()")
    release = page.click(*search)
    dialog = page.event("Page.javascriptDialogOpening")
    assert dialog["type"] == "prompt"
    page.call("Page.handleJavaScriptDialog", accept=True, promptText="pipe_read")
    page.reply(release)

    matched = page.js("document.getElementById('matched').textContent")
    share = float(re.fullmatch(r"Matched: ([\d.]+)% \(.+\)", matched).group(1))
    assert share == pytest.approx(matched_share(reply, "pipe_read"), abs=0.05), matched
    f = frame(page, kernel_frame(reply, "pipe_read"))
    assert f["fill"] == "rgb(230,0,230)", "matches highlighted"
    assert painted(page.screenshot(), f, f["fill"])
    assert frame(page, "do_nanosleep")["fill"] != "rgb(230,0,230)"
    assert page.errors() == []
