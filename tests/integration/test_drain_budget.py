"""Drains under many threads: each drain works for at most drain-budget (plus the flip, which
is the kernel's), what it could not name is named at the next drain, not lost,
and status answers meanwhile. A query never writes: its catch-up drain keeps the interval
in memory, and the journal takes it on the timer's schedule."""
import json
import subprocess
import threading
import time

from conftest import WORKLOADS, Daemon

BUDGET_MS = 100
# the flip (the kernel's task iterator, an RCU grace period, the maps' batched deletes) is
# not the budget's: under 20,000 threads being created it was seen to take up to 1.7 s
FLIP_ALLOWANCE_S = 2.5
THREADS = 20000


def status(d):
    return d.call("io.offcpud.Status")["parameters"]


def dumped_total_ns(d, pid, *args):
    return sum(s["total_ns"]
               for s in d.dump_json("--pid", str(pid), "--since", "10m", *args)["stacks"])


def test_drains_within_budget_under_many_threads(reachable_daemon_factory):
    # wakers on (the default): the waker pairs of 20,000 threads are named within the budget
    # as the aggregates are
    d = reachable_daemon_factory("--interval", "1s", config=f"drain-budget = {BUDGET_MS}ms\n")
    # the first drain is whole (it reads kallsyms and every program's symbols): before the
    # load, and counted as start-up's (1.9-3.1 s under ASan on a busy host), not in drain_max_ns
    deadline = time.monotonic() + 30
    while (first := status(d))["drains"] == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first["drain_startup_ns"] > 0, first
    slowest, answered, errors, done = [0.0], [0], [], threading.Event()

    # the daemon answers throughout (how fast also depends on the CPU this client gets
    # among 20,000 threads: printed, not asserted)
    def poll_status():
        while not done.is_set():
            t0 = time.monotonic()
            try:
                status(d)
                answered[0] += 1
            except Exception as e:  # noqa: BLE001 (told after the run)
                errors.append(repr(e))
            slowest[0] = max(slowest[0], time.monotonic() - t0)
            time.sleep(0.2)

    poller = threading.Thread(target=poll_status)
    poller.start()
    try:
        res = subprocess.run([str(WORKLOADS / "many_sleepers"), "--threads", str(THREADS),
                              "--seconds", "8"], capture_output=True, text=True, timeout=120,
                             check=True)
    finally:
        done.set()
        poller.join()
    truth = json.loads(res.stdout.strip().splitlines()[-1])
    assert answered[0] > 0 and not errors, (answered, errors[:3])
    assert truth["threads"] == THREADS, truth

    # what was carried is built within a few intervals once the load is gone
    deadline = time.monotonic() + 30
    while (st := status(d))["drain_records_pending"] and time.monotonic() < deadline:
        time.sleep(0.5)
    print({k: v for k, v in st.items() if k.startswith("drain")}, f"slowest status {slowest[0]:.3f}s of {answered[0]}")
    assert st["drain_budget_ns"] == BUDGET_MS * 1_000_000
    assert st["drain_records_pending"] == 0, st
    assert st["drain_budget_stops"] > 0 and st["drain_records_carried"] > 0, \
        "no drain reached its budget: the test proves nothing"
    # the daemon's own work, by construction; not its wall time, which also holds its waits for
    # a CPU among 20,000 threads and the flip's RCU grace period (on a busy host: one record of
    # 1 ms of CPU took 523 ms; a drain of 47 ms of CPU, 7.1 s under ASan): printed above
    assert 0 < st["drain_max_cpu_ns"] <= (BUDGET_MS / 1000 + FLIP_ALLOWANCE_S) * 1e9, st

    # nothing was lost to the budget: the workload's own measure, all of it; nor counted twice:
    # its sleeps hold offcpud's S time. Not one bound on all states: the waits for a CPU (R)
    # lie partly inside its sleep calls, partly between them, which it does not count (16%
    # more than its measure on a busy host), and S alone was 85% of it there
    total = dumped_total_ns(d, truth["pid"])
    asleep = dumped_total_ns(d, truth["pid"], "--state", "S")
    assert 0.97 * truth["offcpu_ns"] <= total and asleep <= 1.03 * truth["offcpu_ns"], \
        (total, asleep, truth)


def test_query_never_writes(tmp_path):
    # an interval of an hour: no timer's drain during the test, only the query's catch-up
    home, state = tmp_path / "daemon", tmp_path / "state"
    home.mkdir()
    # and a budget the catch-up cannot reach, even under a sanitizer
    (home / "offcpud.conf").write_text("drain-budget = 1h\n")
    d = Daemon(home, "--interval", "1h", "--state-directory", str(state), "--config",
               str(home / "offcpud.conf"))
    try:
        before = status(d)
        res = subprocess.run([str(WORKLOADS / "many_sleepers"), "--threads", "4", "--seconds",
                              "1"], capture_output=True, text=True, timeout=60, check=True)
        pid = json.loads(res.stdout)["pid"]
        assert dumped_total_ns(d, pid) > 0
        after = status(d)
        assert after["drains"] > before["drains"], after
        for key in ("journal_bytes", "journal_records", "state_written_bytes",
                    "journal_compactions"):
            assert after[key] == before[key], (key, before, after)
    finally:
        d.stop()

    # persistence on its own schedule: the exit's drain journals and saves it
    home2 = tmp_path / "daemon2"
    home2.mkdir()
    again = Daemon(home2, "--interval", "1h", "--state-directory", str(state))
    try:
        assert dumped_total_ns(again, pid) > 0
    finally:
        again.stop()
