"""Histograms of single off-CPU periods: a thread that sleeps 10 ms at a time has its
periods in the bucket of 8 to 16 ms, while the main thread, joining it, waits once for as
long as the whole run: the same kind of total, another shape. hist shows both, of a
selection and per stack, with the longest period; a restart keeps them."""
import json
import re

from conftest import Daemon, assert_fails, at, run_workload, within

SLEEP_BUCKET = 14  # 8192 to 16383 us: where a 10 ms sleep lands


def hist_json(d, *args):
    return json.loads(d.ctl("--json", "hist", *args).stdout)


def bucket_of(ns):
    """The bucket of a period, as the daemon defines them (io.offcpud.varlink)."""
    return (ns // 1000).bit_length()


def test_sleeps_fill_one_bucket(daemon):
    truth = run_workload("sleep_and_pipe", "--sleeps", "50", "--writes", "0")
    h, = hist_json(daemon, "--tid", str(truth["nanosleep_tid"]))["histograms"]
    assert sum(h["hist"]) == h["count"], h
    # (see COUNT_SLACK in test_dump.py: a VM may let a wait pass without a switch)
    assert h["hist"][SLEEP_BUCKET] >= 0.9 * truth["nanosleep_calls"], h
    assert h["max_ns"] >= 10_000_000, h
    text = daemon.ctl("hist", "--tid", str(truth["nanosleep_tid"])).stdout
    assert "8192 -> 16383" in text and "periods" in text, text


def test_one_long_wait_apart_from_many_short(daemon):
    truth = run_workload("sleep_and_pipe", "--sleeps", "50", "--writes", "0")
    stacks = hist_json(daemon, "--pid", str(truth["pid"]), "--by", "stack",
                       "--limit", "0")["histograms"]
    # the sleeps themselves: a busy VM may block the sleeper elsewhere in that function
    # once (CI: a page fault waiting for the mmap lock)
    sleeps = [s for s in stacks if "block_in_nanosleep_100x10ms" in s["stack"] and
              "do_nanosleep" in s["stack"]]
    joins = [s for s in stacks if "pthread_clockjoin" in s["stack"] and s["count"] == 1]
    # (the slack of test_sleeps_fill_one_bucket: a busy VM adds a stray short switch)
    assert len(sleeps) == 1 and \
        sleeps[0]["hist"][SLEEP_BUCKET] >= 0.9 * truth["nanosleep_calls"], sleeps
    # main waited once, all along the sleeper's run; that one period, split over the
    # intervals it spanned, is charged whole: its total is the longest period exactly
    join = max(joins, key=lambda s: s["max_ns"])
    assert within(join["max_ns"], truth["nanosleep_ns"], 0.05), (join, truth)
    assert join["total_ns"] == join["max_ns"], join
    assert join["hist"][bucket_of(join["max_ns"])] == 1 and sum(join["hist"]) == 1, join
    # and no sleep was anywhere near as long
    assert len(sleeps[0]["hist"]) <= SLEEP_BUCKET + 2 < bucket_of(join["max_ns"]), (sleeps, join)


def test_stack_labels_start_with_the_wait(daemon):
    """hist --by stack heads each histogram with its stack wait first ("leaf < caller <
    ..."); --json keeps the folded stack."""
    truth = run_workload("sleep_and_pipe", "--sleeps", "20", "--writes", "5")
    args = ("--pid", str(truth["pid"]), "--by", "stack", "--limit", "0")
    leaves = set()
    for h in hist_json(daemon, *args)["histograms"]:
        frames = h["stack"].split(";")[1:]
        user, kernel = frames[:frames.index("-")], frames[frames.index("-") + 1:]
        leaves.add((user or kernel)[-1])
    lines = daemon.ctl("hist", *args).stdout.splitlines()
    labels = [lines[i - 1] for i, line in enumerate(lines) if line.strip().startswith("usecs")]
    firsts = [re.split(r" < | \[kernel: | \(| \.\.\.$", label, maxsplit=1)[0] for label in labels]
    assert labels and all(f in leaves for f in firsts), (leaves, labels)
    assert any(label.startswith("clock_nanosleep < ") and
               " < block_in_nanosleep_100x10ms < " in label for label in labels), labels


def test_bad_by(daemon):
    assert_fails(daemon, ["hist", "--by", "thread"], 2, "invalid --by 'thread'")


def test_histograms_survive_restart(tmp_path):
    state = tmp_path / "state"
    (tmp_path / "one").mkdir()
    first = Daemon(tmp_path / "one", "--interval", "200ms", "--state-directory", str(state))
    truth = run_workload("sleep_and_pipe", "--sleeps", "30", "--writes", "10")
    reply = first.dump_json("--pid", str(truth["pid"]))
    window = ["--since", at(reply["start_ns"] - 1), "--until", at(reply["end_ns"])]
    args = ["--pid", str(truth["pid"]), "--by", "stack", "--limit", "0", *window]
    before = hist_json(first, *args)
    first.stop()
    (tmp_path / "two").mkdir()
    second = Daemon(tmp_path / "two", "--interval", "200ms", "--state-directory", str(state))
    try:
        assert hist_json(second, *args) == before
        assert any(h["hist"] for h in before["histograms"]), before
    finally:
        second.stop()


def test_stack_limit_kept_by_the_daemon_is_the_whole_lists_head(daemon):
    """hist --by stack asks the daemon for the --limit largest stacks only: the same
    first histograms as from all stacks of the window, and the rest counted."""
    truth = run_workload("sleep_and_pipe", "--sleeps", "30", "--writes", "10")
    reply = daemon.dump_json("--pid", str(truth["pid"]))
    args = ["--pid", str(truth["pid"]), "--by", "stack", "--since", at(reply["start_ns"] - 1),
            "--until", at(reply["end_ns"])]
    whole = hist_json(daemon, *args, "--limit", "0")["histograms"]
    assert len(whole) > 2, whole
    assert hist_json(daemon, *args, "--limit", "2")["histograms"] == whole[:2]
    text = daemon.ctl("hist", *args, "--limit", "2").stdout
    assert f"({len(whole) - 2} more stacks; --limit 0 shows all)" in text, text
