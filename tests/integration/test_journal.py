"""A crash keeps history: every snapshot is journaled as it is drained, so after a SIGKILL
under load the next instance has back every snapshot older than two intervals before the
kill, byte for byte; a torn tail is cut, not fatal; and the Prometheus counters never go
back across a restart."""
import contextlib
import errno
import re
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import SANITIZER_MARKS, WORKLOADS, Daemon, at, run_workload

# long enough that a drain delayed by a busy machine still ends in time
INTERVAL = 1.0


def start(home, state, *args):
    home.mkdir(exist_ok=True)
    return Daemon(home, "--interval", f"{int(INTERVAL * 1000)}ms", "--state-directory",
                  str(state), *args)


def kill(d):
    """SIGKILL: no drain, no save; what the journal holds is all there is."""
    d.proc.kill()
    d.proc.wait()
    log = d.read_log()
    d.log.close()
    for mark in SANITIZER_MARKS:
        assert mark not in log, log


def args_for(window):
    return ["--since", at(window["start_ns"] - 1), "--until", at(window["end_ns"])]


@contextlib.contextmanager
def under_load():
    """sleep_and_pipe blocking for about ten seconds: known stacks in every interval."""
    load = subprocess.Popen([str(WORKLOADS / "sleep_and_pipe"), "--sleeps", "1000",
                             "--writes", "500"], stdout=subprocess.DEVNULL)
    try:
        yield load
    finally:
        load.kill()
        load.wait()


def before_kill(d, pid):
    """The dump of every snapshot that ended at least two intervals ago (JSON, folded)."""
    window = d.dump_json("--pid", str(pid), "--until", f"@{time.time() - 3 * INTERVAL:.6f}")
    assert window["stacks"], window
    folded = d.ctl("dump", "--pid", str(pid), *args_for(window)).stdout
    return window, folded


def test_sigkill_under_load_keeps_all_but_the_last_two_intervals(tmp_path):
    state = tmp_path / "state"
    first = start(tmp_path / "one", state)
    with under_load() as load:
        time.sleep(6)
        window, folded = before_kill(first, load.pid)
        killed_at = time.time()
        kill(first)

        second = start(tmp_path / "two", state)
        try:
            log = second.read_log()
            assert "restored" in log, log
            assert second.ctl("dump", "--pid", str(load.pid), *args_for(window)).stdout == folded
            assert "sleeper_main" in folded and "reader_main" in folded
            # nothing older than two intervals before the kill is missing
            kept = second.dump_json("--pid", str(load.pid), "--until", f"@{killed_at:.6f}")
            assert kept["end_ns"] >= (killed_at - 2 * INTERVAL) * 1e9, (kept["end_ns"], killed_at)
            status = second.call("io.offcpud.Status")["parameters"]
            assert status["journal_cut_tails"] == 0 and status["journal_errors"] == 0
        finally:
            second.stop()


@pytest.mark.parametrize("tear", ["cut-short", "zeros-appended"])
def test_torn_tail_is_cut_not_fatal(tmp_path, tear):
    state = tmp_path / "state"
    first = start(tmp_path / "one", state)
    with under_load() as load:
        time.sleep(5)
        window, folded = before_kill(first, load.pid)
        kill(first)
    journal = state / "journal.v1"
    data = journal.read_bytes()
    # what a crash in the middle of a write, or a power cut, leaves
    journal.write_bytes(data[:-7] if tear == "cut-short" else data + bytes(4096))

    second = start(tmp_path / "two", state)
    try:
        assert "cut a torn tail" in second.read_log()
        status = second.call("io.offcpud.Status")["parameters"]
        assert status["journal_cut_tails"] == 1
        assert second.ctl("dump", "--pid", str(load.pid), *args_for(window)).stdout == folded
    finally:
        second.stop()


def test_full_journal_is_compacted_and_history_kept(tmp_path):
    """A stack explosion fills a 1M journal within seconds: the ring file takes it all and
    a journal of the next generation begins, again; a SIGKILL then still keeps
    all but the last two intervals, from the ring file and the journal after it."""
    state = tmp_path / "state"
    # room for all: a ring coarsened to make room would not dump as it did before
    roomy = ("--memory-limit", "1G")
    first = start(tmp_path / "one", state, "--journal-size", "1M", *roomy)
    with under_load() as load:
        subprocess.run([str(WORKLOADS / "stack_explosion"), "--threads", "10", "--seconds", "5"],
                       stdout=subprocess.DEVNULL, check=True, timeout=60)
        # then some intervals journaled after the last compaction, in the window
        deadline = time.monotonic() + 30
        while (status := first.call("io.offcpud.Status")["parameters"])["journal_records"] < 5:
            assert time.monotonic() < deadline, status
            time.sleep(INTERVAL / 2)
        window, folded = before_kill(first, load.pid)
        assert status["journal_compactions"] >= 1, status
        # bounded by journal-size, or by the ring file's size if larger
        bound = max(1 << 20, (state / "ring.v1").stat().st_size)
        assert status["journal_bytes"] <= bound and status["journal_errors"] == 0, status
        assert (state / "journal.v1").stat().st_size <= bound
        kill(first)

        second = start(tmp_path / "two", state, *roomy)
        try:
            assert second.ctl("dump", "--pid", str(load.pid), *args_for(window)).stdout == folded
        finally:
            second.stop()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def counters(d):
    """The off-CPU counters the endpoint serves: {(metric, labels): value}. (The
    daemon's own health counters, drains and events, are the process's: they
    start again with it, as Prometheus expects of a process's counters.)"""
    text = urllib.request.urlopen(d.metrics_url, timeout=10).read().decode()
    found = {}
    for line in text.splitlines():
        m = re.match(r"(offcpud_off_cpu_seconds_total|offcpud_switches_total)(\{.*\}) (\S+)$",
                     line)
        if m:
            found[(m.group(1), m.group(2))] = float(m.group(3))
    return found


def metrics_daemon(home, state):
    port = free_port()
    d = start(home, state, "--metrics-listen", f"127.0.0.1:{port}")
    d.metrics_url = f"http://127.0.0.1:{port}/metrics"
    return d


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_metrics_counters_never_go_back_across_a_restart(tmp_path, how):
    state = tmp_path / "state"
    first = metrics_daemon(tmp_path / "one", state)
    with under_load():
        time.sleep(3)
        before = counters(first)
        if how == "SIGKILL":
            kill(first)
        else:
            first.stop()
    seconds = [v for (metric, _), v in before.items() if metric == "offcpud_off_cpu_seconds_total"]
    assert sum(seconds) > 1, before  # seconds of off-CPU time of the whole machine

    second = metrics_daemon(tmp_path / "two", state)
    try:
        after = counters(second)
        back = {k: (v, after.get(k)) for k, v in before.items()
                if after.get(k) is None or after[k] < v}
        assert not back, back
    finally:
        second.stop()


def test_full_disk_named_as_such_and_daemon_serves_on(tmp_path):
    """A state directory on a full file system: the log names the cause (ENOSPC, not
    "Input/output error") and the file; the daemon keeps serving, counting the failures."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mnt)],
                   check=True)
    state = mnt / "state"
    d = None
    try:
        d = Daemon(tmp_path, "--interval", "100ms", "--state-directory", str(state))
        run_workload("short_lived")  # something for the ring file to hold
        with open(mnt / "filler", "wb", buffering=0) as f:  # the rest of the file system
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
        time.sleep(1)  # journal appends now fail
        st = d.call("io.offcpud.Status")["parameters"]
        assert st["pid"] == d.proc.pid and st["journal_errors"] >= 1, st
        assert st["drains"] > 0 and d.dump_json("--since", "5s")["stacks"]
        d.stop()
        log = (tmp_path / "offcpud.log").read_text()
        assert "Input/output error" not in log, log
        assert f"writing {state}/journal.v1: No space left on device" in log, log
        assert f"saving the ring to {state}/ring.v1: No space left on device" in log, log
    finally:
        if d and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        subprocess.run(["umount", str(mnt)], check=True)
