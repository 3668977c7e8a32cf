"""offcpuctl top against workloads whose blocking is known: per process, thread and
comm, per state, the same totals as dump over the same window; --watch refreshes."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import OFFCPUCTL, at, run_workload, within


@pytest.fixture(scope="module")
def runs(daemon):
    """sleep_and_pipe (S) and vfork_waits (D), one after the other, and the window
    that holds both."""
    sleeper = run_workload("sleep_and_pipe")
    vfork = run_workload("vfork_waits", "--forks", "100")
    reply = daemon.dump_json("--pid", str(sleeper["pid"]), "--since", "60s")
    window = ("--since", at(reply["start_ns"]), "--until", "0s")
    return sleeper, vfork, window


def top_json(daemon, *args):
    return json.loads(daemon.ctl("--json", "top", *args).stdout)


def test_process_row_is_dumps_total(daemon, runs):
    sleeper, _, window = runs
    pid = str(sleeper["pid"])
    top = top_json(daemon, "--pid", pid, *window)
    assert [r["pid"] for r in top["rows"]] == [sleeper["pid"]], top
    row = top["rows"][0]
    dump = daemon.dump_json("--pid", pid, "--since", at(top["start_ns"]),
                            "--until", at(top["end_ns"]))
    assert row["total_ns"] == sum(s["total_ns"] for s in dump["stacks"])
    assert row["count"] == sum(s["count"] for s in dump["stacks"])
    assert row["comm"] == "sleep_and_pipe"
    assert row["states"]["S"] > 0.95 * row["total_ns"], row
    assert row["share"] == pytest.approx(row["total_ns"] / (top["end_ns"] - top["start_ns"]))


def test_thread_rows_match_the_workloads_measure(daemon, runs):
    sleeper, _, window = runs
    top = top_json(daemon, "--pid", str(sleeper["pid"]), "--by", "thread", *window)
    rows = {r["tid"]: r for r in top["rows"]}
    for tid, truth in ((sleeper["nanosleep_tid"], sleeper["nanosleep_offcpu_ns"]),
                       (sleeper["pipe_tid"], sleeper["pipe_offcpu_ns"])):
        assert within(rows[tid]["states"]["S"], truth, 0.03), (rows[tid], truth)


def test_vfork_parent_in_d_column(daemon, runs):
    _, vfork, window = runs
    top = top_json(daemon, "--pid", str(vfork["pid"]), *window)
    row = top["rows"][0]
    # the parent waits in D for each of 100 children sleeping 5 ms
    assert row["states"]["D"] >= 0.9 * 100 * 5e6, row
    human = daemon.ctl("top", "--pid", str(vfork["pid"]), *window).stdout.splitlines()
    assert human[0].startswith("off-CPU time by process, "), human
    assert human[1].split()[:8] == ["TOTAL", "S", "D", "R", "I", "OTHER", "RUNQ", "%WIN"], human
    cells = human[2].split()
    assert cells[-2:] == [str(vfork["pid"]), "vfork_waits"] and cells[2] != "-", human


def test_by_comm_and_unit(daemon, runs):
    sleeper, _, window = runs
    top = top_json(daemon, "--comm", "sleep_and_pipe", "--by", "comm", *window)
    assert [r["comm"] for r in top["rows"]] == ["sleep_and_pipe"], top
    top = top_json(daemon, "--pid", str(sleeper["pid"]), "--by", "unit", *window)
    assert len(top["rows"]) == 1 and "unit" in top["rows"][0], top
    top = top_json(daemon, "--pid", str(sleeper["pid"]), "--by", "stack", "--limit", "1",
                   *window)
    assert top["rows_total"] > 1 and len(top["rows"]) == 1, top
    assert top["rows"][0]["stack"].startswith("sleep_and_pipe;"), top


def test_stack_limit_kept_by_the_daemon_is_the_whole_tops_head(daemon, runs):
    """top --by stack asks the daemon for the rows of the --limit largest stacks only (a
    stack's states summed: ranked as the table ranks them): the same first rows, totals
    and count of rows as from all stacks of the same window."""
    sleeper, _, window = runs
    whole = top_json(daemon, "--by", "stack", "--limit", "0", *window)
    fixed = ("--since", at(whole["start_ns"]), "--until", at(whole["end_ns"]))
    whole = top_json(daemon, "--by", "stack", "--limit", "0", *fixed)
    assert whole["rows_total"] > 5, whole
    head = top_json(daemon, "--by", "stack", "--limit", "5", *fixed)
    assert head["rows"] == whole["rows"][:5] and head["rows_total"] == whole["rows_total"]
    # the daemon's reply: only those stacks' rows, and how many stacks there were
    params = {"start_ns": whole["start_ns"] + 1000, "end_ns": whole["end_ns"] + 1000,
              "group_by": ["state"]}
    every = daemon.call("io.offcpud.Dump", params)["parameters"]
    some = daemon.call("io.offcpud.Dump", {**params, "limit": 5})["parameters"]
    stack = lambda r: (r["comm"], tuple(r["user"]), tuple(r["kernel"]))  # noqa: E731
    assert some["stacks_total"] == len({stack(r) for r in every["stacks"]})
    assert len({stack(r) for r in some["stacks"]}) == 5
    assert [r for r in every["stacks"] if stack(r) in {stack(r) for r in some["stacks"]}] \
        == some["stacks"]
    assert "stacks_total" not in every


def test_watch_refreshes(daemon, runs):
    for args, check in ((["top", "--watch", "--interval", "300ms"],
                         lambda out: out.count("\033[H\033[2J") >= 2 and
                         out.count("off-CPU time by process") >= 2),
                        (["--json", "top", "--watch", "--interval", "300ms"],
                         lambda out: len([json.loads(l) for l in out.splitlines()]) >= 2)):
        proc = subprocess.Popen([str(OFFCPUCTL), "--socket", daemon.sock, *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        assert check(out), (args, out[:2000], err)


def test_watch_in_a_terminal(daemon, runs, tmp_path):
    """As a person sees it: in tmux (a real terminal, no curses library), the screen
    shows one table, redrawn in place, and Ctrl-C gives the shell back."""
    session = f"offcpud-top-{time.monotonic_ns()}"
    tmux = ["tmux", "-S", str(tmp_path / "tmux.sock")]
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "120", "-y", "30",
                    f"{OFFCPUCTL} --socket {daemon.sock} top --watch --interval 300ms "
                    f"--limit 3; echo exited $?; sleep 30"], check=True)
    try:
        time.sleep(1.5)
        screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", session],
                                capture_output=True, text=True, check=True).stdout
        # redrawn in place: one title, one header, at the top of the screen
        lines = screen.splitlines()
        assert lines[0].startswith("off-CPU time by process"), screen
        assert screen.count("off-CPU time by process") == 1, screen
        assert "TOTAL" in lines[1] and "%WIN" in lines[1], screen
        subprocess.run([*tmux, "send-keys", "-t", session, "C-c"], check=True)
        time.sleep(0.5)
        screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", session],
                                capture_output=True, text=True, check=True).stdout
        assert "exited 0" in screen, screen
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def test_bad_input(daemon, runs):
    for args, code, cause in ((["--by", "pid"], 2, "invalid --by 'pid'"),
                              (["--limit", "-1"], 2, "invalid --limit '-1'"),
                              (["--interval", "1ms"], 2, "invalid --interval '1ms'"),
                              (["--pid", "0"], 2, "invalid --pid '0'"),
                              (["--comm", "no-such-comm-here"], 1,
                               "no off-CPU data for comm no-such-comm-here in that window")):
        res = daemon.ctl("top", *args, check=False)
        assert res.returncode == code, (args, res)
        assert cause in res.stderr and res.stderr.count("\n") == 1, (args, res.stderr)


def leaf_of(folded):
    """The frame a folded stack blocked in: its user leaf, else its kernel leaf."""
    frames = folded.split(";")[1:]
    user, kernel = frames[:frames.index("-")], frames[frames.index("-") + 1:]
    return (user or kernel)[-1]


def first_frame(label):
    return re.split(r" < | \[kernel: | \(| \.\.\.$", label, maxsplit=1)[0]


def test_stack_labels_start_with_the_wait(daemon, runs):
    """top --by stack prints each stack wait first ("leaf < caller < ..."), cut from its
    root end to the line; --json keeps the folded stack."""
    sleeper, _, window = runs
    args = ("--pid", str(sleeper["pid"]), "--by", "stack", "--limit", "0", *window)
    leaves = {leaf_of(r["stack"]) for r in top_json(daemon, *args)["rows"]}
    for columns, cut in (("1000", False), ("100", True)):
        res = subprocess.run([str(OFFCPUCTL), "--socket", daemon.sock, "top", *args],
                             capture_output=True, text=True, timeout=60, check=True,
                             env={**os.environ, "COLUMNS": columns})
        labels = [line.split("%  ", 1)[1] for line in res.stdout.splitlines()[2:]]
        assert labels and all(first_frame(label) in leaves for label in labels), (leaves, labels)
        if cut:  # the columns before the stack take 79; a stack gets 40 at least
            assert all(len(label) <= 40 or " < " not in label[:40] for label in labels), labels
            assert any(label.endswith(" ...") for label in labels), labels
        else:
            assert any(label.startswith("clock_nanosleep < ") and
                       " < block_in_nanosleep_100x10ms < " in label for label in labels), labels
