"""Run-queue latency apart from blocked time: a thread sleeps 10 ms at a time on a CPU that
pinned spinners keep busy, so after each wakeup it waits for the CPU. offcpud must charge
each sleep (~10 ms) as blocked and the measured rest as runq, with totals unchanged, in
dump's JSON and folded --time, top's RUNQ column and the Prometheus counters. The moment
it became runnable is the kernel's (sched_info), with wakers on (the default) and off:
both are measured (with wakers on, sched_waking's program also marks the wakeup)."""
import json
import os
import time
import urllib.request

import pytest

from conftest import Daemon, cgroup2_mount, folded, run_workload, within, workload_in
from test_metrics import free_port

SLEEPS = 100
SLEEP_NS = 10_000_000
FUNCTION = "sleep_10ms_on_busy_cpu"


@pytest.fixture(scope="module", params=["yes", "no"], ids=["wakers", "no-wakers"])
def run(tmp_path_factory, request):
    """A daemon with metrics (wakers on or off), and one run of runq_sleeper in a cgroup
    of its own: (daemon, the workload's own measure, the cgroup's path as offcpud names
    it)."""
    port = free_port()
    home = tmp_path_factory.mktemp("offcpud")
    (home / "offcpud.conf").write_text(f"wakers = {request.param}\n")
    d = Daemon(home, "--interval", "200ms", "--config", str(home / "offcpud.conf"),
               "--metrics-listen", f"127.0.0.1:{port}")
    d.metrics_url = f"http://127.0.0.1:{port}/metrics"
    cgroup = cgroup2_mount() / f"offcpud-runq-{os.getpid()}"
    cgroup.mkdir()
    try:
        proc, _ = workload_in(cgroup, "runq_sleeper", "--sleeps", str(SLEEPS))
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        truth = json.loads(out.strip().splitlines()[-1])
        time.sleep(0.6)  # drained
        yield d, truth, "/" + str(cgroup.relative_to(cgroup2_mount()))
    finally:
        d.stop()
        cgroup.rmdir()


def sleeps_of(reply):
    return [s for s in reply["stacks"] if FUNCTION in s["user"]]


def test_sleep_is_blocked_the_rest_is_runq(run):
    d, truth, _ = run
    # the spinners did keep the CPU: each wakeup waited for it
    assert truth["runq_ns"] > SLEEPS * 1_000_000, truth
    sleeps = sleeps_of(d.dump_json("--tid", str(truth["tid"]), "--group-by", "state"))
    total = sum(s["total_ns"] for s in sleeps)
    runq = sum(s["runq_ns"] for s in sleeps)
    count = sum(s["count"] for s in sleeps if s["state"] == "S")
    assert within(total, truth["offcpu_ns"], 0.01), (sleeps, truth)
    # the workload counts the timer's own latency (microseconds) as run-queue time; on
    # a busy CI machine the two were seen 3.1% apart (325 against 315 ms over 100 sleeps)
    assert within(runq, truth["runq_ns"], 0.05), (sleeps, truth)
    assert 0.98 * SLEEPS <= count <= SLEEPS, sleeps
    assert within((total - runq) / count, SLEEP_NS, 0.02), (sleeps, truth)


def test_folded_time_choices(run):
    d, truth, _ = run
    tid = str(truth["tid"])

    def us(*args):
        text = d.ctl("dump", "--tid", tid, *args).stdout
        return sum(v for _, user, _, v in folded(text) if FUNCTION in user)

    sleeps = sleeps_of(d.dump_json("--tid", tid))
    total = sum(s["total_ns"] for s in sleeps)
    runq = sum(s["runq_ns"] for s in sleeps)
    assert d.ctl("dump", "--tid", tid, "--time", "total").stdout == \
        d.ctl("dump", "--tid", tid).stdout
    assert abs(us() - total / 1000) <= len(sleeps)
    assert abs(us("--time", "runq") - runq / 1000) <= len(sleeps)
    assert abs(us("--time", "blocked") - (total - runq) / 1000) <= len(sleeps)
    res = d.ctl("dump", "--tid", tid, "--time", "queued", check=False)
    assert res.returncode == 2 and "--time 'queued'" in res.stderr, res


def test_top_runq_column(run):
    d, truth, _ = run
    tid = str(truth["tid"])
    dumped = sum(s["runq_ns"] for s in d.dump_json("--tid", tid)["stacks"])
    top = json.loads(d.ctl("--json", "top", "--by", "thread", "--tid", tid,
                                         "--since", "5m").stdout)
    assert top["rows"][0]["runq_ns"] == dumped, top
    human = d.ctl("top", "--by", "thread", "--tid", tid, "--since", "5m").stdout.splitlines()
    titles = human[1].split()
    assert human[2].split()[titles.index("RUNQ")] != "-", human


def test_prometheus_runq_counter(run):
    d, _, cgroup = run
    dumped = sum(s["runq_ns"] for s in d.dump_json("--cgroup", cgroup)["stacks"])
    with urllib.request.urlopen(d.metrics_url, timeout=10) as r:
        text = r.read().decode()
    counted = sum(float(line.split()[-1]) for line in text.splitlines()
                  if line.startswith("offcpud_runq_seconds_total{")
                  and f'cgroup="{cgroup}"' in line)
    assert dumped > 0 and abs(counted - dumped / 1e9) < 1e-6, (counted, dumped)


def test_new_thread_first_wait_is_runq(run):
    """A new thread's first wait (fork to first run) is run-queue time, charged to
    "[new task]": runq_spawner makes threads one at a time on a CPU that pinned spinners
    keep busy, and each thread measures its own wait."""
    d, _, _ = run
    truth = run_workload("runq_spawner", "--threads", "30")
    time.sleep(0.6)  # drained
    reply = d.dump_json("--pid", str(truth["pid"]), "--since", "5m", "--group-by", "tid,state")
    firsts = {}
    for s in reply["stacks"]:
        if s["kernel"] == ["[new task]"]:
            assert s["user"] == [] and s["state"] == "R", s
            assert s["runq_ns"] == s["total_ns"] and s["count"] == 1, s
            firsts[s["tid"]] = s["total_ns"]
    children = truth["children"]
    measured = sum(c["wait_ns"] for c in children)
    assert measured > len(children) * 1_000_000, truth  # they did wait for the CPU
    seen = [c for c in children if c["tid"] in firsts]
    # (see COUNT_SLACK in test_dump.py: a VM may let a thread run without a switch)
    assert len(seen) >= 0.95 * len(children), (firsts, truth)
    # each wait is measured from just before pthread_create: a little over what it is
    for c in seen:
        assert firsts[c["tid"]] <= c["wait_ns"], (c, firsts[c["tid"]])
    assert within(sum(firsts[c["tid"]] for c in seen),
                  sum(c["wait_ns"] for c in seen), 0.05), (firsts, truth)
