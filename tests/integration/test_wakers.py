"""Waker stacks (wakers = yes, the default): sleep_and_pipe's reader blocks on a pipe that its feeder
thread writes every 20 ms from feed_pipe_every_20ms; its sleeper sleeps in nanosleep, woken
by the timer interrupt. offcpuctl wakers must pair the reader's blocked stack with the
feeder's function and the time blocked, and the sleeper's with [hardirq] (hrtimer_wakeup),
never with whatever task the interrupt happened to interrupt."""
import json
import time

import pytest

from conftest import run_workload, within

READER = "block_in_pipe_read"
FEEDER = "feed_pipe_every_20ms"
SLEEPER = "block_in_nanosleep_100x10ms"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from conftest import Daemon
    d = Daemon(tmp_path_factory.mktemp("offcpud"), "--interval", "200ms", "--wakers", "yes")
    try:
        truth = run_workload("sleep_and_pipe", "--sleeps", "50", "--writes", "30")
        time.sleep(0.5)  # drained
        yield d, truth
    finally:
        d.stop()


def wakers(d, *args):
    return json.loads(d.ctl("--json", "wakers", *args).stdout)["stacks"]


def test_pipe_reader_woken_by_feeder(run):
    d, truth = run
    rows = [s for s in wakers(d, "--tid", str(truth["pipe_tid"])) if READER in s["user"]]
    by_feeder = [s for s in rows if FEEDER in s["waker_user"]]
    assert by_feeder, rows
    for s in by_feeder:
        assert s["waker_kind"] == "task" and s["waker_comm"] == "sleep_and_pipe", s
        # the waker's kernel stack ends where it woke the reader: a write, or the
        # close at the end when the reader blocked again before it (a race)
        assert s["waker_kernel"][-1] == "try_to_wake_up", s
        assert any(f in ("pipe_write", "anon_pipe_write", "pipe_release")
                   for f in s["waker_kernel"]), s
    by_write = [s for s in by_feeder if "pipe_release" not in s["waker_kernel"]]
    wakes = sum(s["count"] for s in by_write)
    assert 28 <= wakes <= 30 and len(by_feeder) - len(by_write) <= 1, by_feeder
    # blocked until woken: its off-CPU time but the run-queue wait after each wakeup
    blocked = sum(s["total_ns"] for s in rows)
    assert within(blocked, truth["pipe_offcpu_ns"], 0.03), (rows, truth)
    assert within(sum(s["total_ns"] for s in by_write) / wakes, 20_000_000, 0.10), by_write


def test_timer_sleep_woken_by_interrupt(run):
    d, truth = run
    rows = [s for s in wakers(d, "--tid", str(truth["nanosleep_tid"])) if SLEEPER in s["user"]]
    assert rows
    for s in rows:
        assert s["waker_kind"] == "hardirq" and s["waker_comm"] == "[hardirq]", s
        assert s["waker_user"] == [] and "hrtimer_wakeup" in s["waker_kernel"], s
        # cut at the interrupt's entry: no frame of the task it interrupted
        assert s["waker_kernel"][0].startswith("asm_"), s
    assert sum(s["count"] for s in rows) >= 0.98 * truth["nanosleep_calls"], rows
    assert within(sum(s["total_ns"] for s in rows), truth["nanosleep_offcpu_ns"], 0.03), \
        (rows, truth)


def test_folded_like_offwaketime(run):
    """comm;user;-;kernel;--;waker kernel, leaf first;-;waker user, leaf first;waker comm"""
    d, truth = run
    lines = d.ctl("wakers", "--tid", str(truth["pipe_tid"])).stdout.splitlines()
    mine = [line for line in lines if READER in line and FEEDER in line]
    assert mine, lines
    stack, value = mine[0].rsplit(" ", 1)
    blocked, waker = stack.split(";--;")
    assert blocked.startswith("sleep_and_pipe;") and ";-;" in blocked
    kernel, user = waker.split(";-;")
    frames = user.split(";")
    assert kernel.split(";")[0] == "try_to_wake_up", mine[0]
    assert frames[-1] == "sleep_and_pipe", mine[0]
    assert frames.index(FEEDER) < frames.index("feeder_main"), mine[0]
    assert int(value) > 0


def test_flame_graph_of_wakers(run, tmp_path):
    """--format svg: each blocked stack grows on into its waker's, past "--", the waker's
    frames in aqua, the blocked task's in the usual blue and orange; the pipe reader's
    graph holds its feeder."""
    from test_flamegraph import frames, rgb
    d, truth = run
    out = tmp_path / "wakers.svg"
    d.ctl("wakers", "--tid", str(truth["pipe_tid"]), "--format", "svg", "-o", str(out))
    _, drawn = frames(out)
    assert READER in drawn and FEEDER in drawn and "--" in drawn, sorted(drawn)
    r, g, b = rgb(drawn[FEEDER][1])
    assert r == 0 and g >= 170 and b >= 170, drawn[FEEDER]  # aqua: the waker
    r, g, b = rgb(drawn[READER][1])
    assert b > r + 60, drawn[READER]  # blue: the blocked task's user frame
    assert rgb(drawn["try_to_wake_up"][1])[0] == 0, drawn["try_to_wake_up"]  # the waker's
    res = d.ctl("wakers", "--format", "png", check=False)
    assert res.returncode == 2 and "invalid --format 'png'" in res.stderr, res


def test_group_by_pid_names_the_waker(run):
    d, truth = run
    rows = wakers(d, "--tid", str(truth["pipe_tid"]), "--group-by", "pid,tid")
    by_feeder = [s for s in rows if FEEDER in s["waker_user"]]
    assert by_feeder and all(s["waker_pid"] == truth["pid"] for s in by_feeder), rows
    assert all(s["waker_tid"] not in (0, truth["pipe_tid"]) for s in by_feeder), rows


def test_on_by_default(start_daemon):
    """After an incident it is too late to turn wakers on: a daemon with its defaults has
    the pairs; wakers = no has none, and says how to get them."""
    on = start_daemon("--interval", "200ms")
    off = start_daemon("--interval", "200ms", "--wakers", "no")
    truth = run_workload("sleep_and_pipe", "--sleeps", "5", "--writes", "5")
    time.sleep(0.5)  # drained
    assert on.call("io.offcpud.Status")["parameters"]["collector"]["wakes"] > 0
    assert any(FEEDER in s["waker_user"] for s in wakers(on, "--tid", str(truth["pipe_tid"]),
                                                            "--since", "60s"))
    assert off.call("io.offcpud.Status")["parameters"]["collector"]["wakes"] == 0
    res = off.ctl("wakers", "--since", "60s", check=False)
    assert res.returncode == 1 and "wakers = yes" in res.stderr, res


def test_restart_keeps_wakers(tmp_path):
    """Pairs are in the state files: saved at SIGTERM, restored by the next daemon (which
    may itself run without wakers); and journaled, so a SIGKILL keeps them too."""
    from conftest import Daemon
    from test_journal import kill
    state = tmp_path / "state"
    (tmp_path / "one").mkdir()
    first = Daemon(tmp_path / "one", "--interval", "200ms", "--state-directory", str(state),
                   "--wakers", "yes")
    truth = run_workload("sleep_and_pipe", "--sleeps", "10", "--writes", "10")
    time.sleep(0.5)
    tid = str(truth["pipe_tid"])
    before = json.loads(first.ctl("--json", "wakers", "--tid", tid).stdout)
    window = ["--since", f"@{(before['start_ns'] - 1000) / 1e9:.6f}",
              "--until", f"@{(before['end_ns'] + 1000) / 1e9:.6f}"]
    assert any(FEEDER in s["waker_user"] for s in before["stacks"]), before
    kill(first)  # the journal alone
    (tmp_path / "two").mkdir()
    second = Daemon(tmp_path / "two", "--interval", "200ms", "--state-directory", str(state))
    try:
        after = json.loads(second.ctl("--json", "wakers", "--tid", tid, *window).stdout)
        assert after["stacks"] == before["stacks"]
    finally:
        second.stop()


@pytest.mark.parametrize("attach", ["tp_btf", "raw_tp"])
def test_flips_lose_and_double_nothing(start_daemon, attach):
    """Flips every 20 ms, in both attach modes: each wakeup is charged once, in the
    generation current at the wakeup, with its whole blocked time."""
    d = start_daemon("--interval", "20ms", "--wakers", "yes", "--attach", attach)
    truth = run_workload("sleep_and_pipe", "--sleeps", "20", "--writes", "30")
    time.sleep(0.3)
    rows = [s for s in wakers(d, "--tid", str(truth["pipe_tid"]), "--since", "60s")
            if READER in s["user"]]
    assert 29 <= sum(s["count"] for s in rows) <= 31, rows
    # never more than the reader's off-CPU time (which also holds the run-queue waits
    # after each wakeup): nothing counted twice. A wakeup may go unseen under raw_tp
    # (measured: one in 30, once in a few runs; not understood yet), hence 5% below.
    blocked = sum(s["total_ns"] for s in rows)
    assert 0.95 * truth["pipe_offcpu_ns"] <= blocked <= 1.001 * truth["pipe_offcpu_ns"], \
        (rows, truth)
    # its sleeps (the same thread once blocked in D, on the mmap lock in a page fault
    # inside the sleeping function, and was woken by the task that held the lock)
    sleeps = [s for s in wakers(d, "--tid", str(truth["nanosleep_tid"]), "--since", "60s")
              if SLEEPER in s["user"] and "do_nanosleep" in s["kernel"]]
    assert sleeps and all(s["waker_comm"] == "[hardirq]" for s in sleeps), sleeps


def waker_pairs(d, tid, blocked_at):
    """The pairs of the thread's blocks at blocked_at, by both stacks and the waker."""
    rows = wakers(d, "--tid", str(tid), "--since", "120s")
    return {(tuple(s["user"]), tuple(s["kernel"]), s["waker_kind"], s["waker_comm"],
             tuple(s["waker_user"]), tuple(s["waker_kernel"])): s
            for s in rows if blocked_at in s["user"]}


def test_cached_wakers_equal_walked_wakers(start_daemon, tmp_path):
    """A task waking others from where it woke them before reuses its stacks: two
    daemons watch the same workload, one caching (the default), one walking every
    waker (stack-cache = no); both must pair the same stacks with the same counts.
    The feeder wakes the reader 100 times from one place: nearly all are hits."""
    # each daemon reads its own unwind tables at its own pace (see test_stack_cache)
    conf = tmp_path / "offcpud.conf"
    conf.write_text("unwind = frame-pointer\n")
    common = ("--interval", "200ms", "--wakers", "yes", "--config", str(conf))
    cached = start_daemon(*common)
    walked = start_daemon(*common, "--stack-cache", "no")
    before = cached.call("io.offcpud.Status")["parameters"]["collector"]
    truth = run_workload("sleep_and_pipe", "--sleeps", "50", "--writes", "100")
    time.sleep(0.5)  # drained
    after = cached.call("io.offcpud.Status")["parameters"]["collector"]

    for tid, blocked_at in ((truth["pipe_tid"], READER), (truth["nanosleep_tid"], SLEEPER)):
        a = waker_pairs(cached, tid, blocked_at)
        b = waker_pairs(walked, tid, blocked_at)
        assert a and set(a) == set(b), (
            f"only with the cache: {sorted(set(a) - set(b))}\n"
            f"only walking: {sorted(set(b) - set(a))}")
        for pair, row in a.items():
            # one walk in a few hundred can fail where the other daemon reused stacks
            assert abs(row["count"] - b[pair]["count"]) <= 1, (pair, row, b[pair])

    # the feeder's wakeups were cached; the timer's interrupts never are, and are
    # still named as interrupts, with the timer's frame and no user stack
    # (walked by frame pointer, the write's caller is lost: glibc keeps none)
    feeder = [p for p in waker_pairs(cached, truth["pipe_tid"], READER) if "feeder_main" in p[4]]
    assert feeder and all(p[2] == "task" for p in feeder), \
        [p[2:] for p in waker_pairs(cached, truth["pipe_tid"], READER)]
    for (_, _, kind, comm, user, kernel) in waker_pairs(cached, truth["nanosleep_tid"], SLEEPER):
        assert kind in ("hardirq", "softirq") and comm == f"[{kind}]", (kind, comm)
        assert user == () and "hrtimer_wakeup" in kernel, kernel
    hits = after["waker_cache_hits"] - before["waker_cache_hits"]
    assert hits >= 80, after
    # (mismatches are not asserted: the counters are of every task on the machine)
    off = walked.call("io.offcpud.Status")["parameters"]["collector"]
    assert off["waker_cache_hits"] == 0 and off["waker_walks"] > 0, off


def test_each_block_paired_with_its_own_waker(start_daemon):
    """A block woken by the waker of the block before at the same place, with the same
    identity, adds to that pair by index; any other is paired anew. two_wakers' reader
    blocks at one place, woken by two feeders in turns of two reads (a, a, b, b, ...),
    and renames itself within a turn: each (reader name, feeder) pair has exactly its
    reads."""
    d = start_daemon("--interval", "200ms", "--wakers", "yes")
    truth = run_workload("two_wakers", "--reads", "40")
    time.sleep(0.5)  # drained
    counts = {}
    for s in wakers(d, "--tid", str(truth["reader_tid"]), "--since", "60s"):
        if "read_one_byte" in s["user"]:
            pair = (s["comm"], s["waker_comm"])
            counts[pair] = counts.get(pair, 0) + s["count"]
            assert ("feed_a" if s["waker_comm"] == "feeder_a" else "feed_b") in s["waker_user"], s
    expected = {}
    for i in range(truth["reads"]):
        pair = ("reader_one" if i <= truth["reads"] // 2 else "reader_two",
                ("feeder_a", "feeder_b")[(i >> 1) & 1])
        expected[pair] = expected.get(pair, 0) + 1
    assert counts == expected, counts
