"""One cgroup's stack explosion costs its own detail, never another cgroup's history: over
the memory limit the biggest consumer's oldest snapshots lose their stacks first (their
time kept, under "[stacks over budget]"), and no one's snapshot is dropped whole."""
import json
import subprocess
import sys

import pytest

from conftest import WORKLOADS, within, workload_in


@pytest.fixture
def two_cgroups(fresh_cgroup):
    paths = [fresh_cgroup / "explosion", fresh_cgroup / "calm"]
    for p in paths:
        p.mkdir()
    yield paths
    for p in paths:
        p.rmdir()


def quiet_sleeper(cgroup):
    """A python3 moved into cgroup, then sleeping 200 ms 30 times: its pid, once done."""
    quiet = subprocess.Popen([sys.executable, "-c", "import os, sys, time\n"
                              "print('ready', os.getpid(), flush=True)\n"
                              "sys.stdin.readline()\n"
                              "for _ in range(30): time.sleep(0.2)\n"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = quiet.stdout.readline().split()[1]
    (cgroup / "cgroup.procs").write_text(pid + "\n")
    quiet.communicate("go\n", timeout=60)
    return pid


def test_explosion_does_not_take_others_history(start_daemon, two_cgroups, fresh_cgroup):
    d = start_daemon("--memory-limit", "16M")
    explosion, _ = workload_in(two_cgroups[0], "stack_explosion", "--seconds", "30")
    calm, _ = workload_in(two_cgroups[1], "sleep_and_pipe", "--sleeps", "2700",
                          "--writes", "1350")
    calm_out, _ = calm.communicate(timeout=120)
    explosion_out, _ = explosion.communicate(timeout=120)
    truth, burst = json.loads(calm_out.splitlines()[-1]), json.loads(explosion_out.splitlines()[-1])
    status = d.call("io.offcpud.Status")["parameters"]
    print(json.dumps({k: status[k] for k in ("memory_used", "evicted_memory", "coarsened_records",
                                             "drain_max_ns", "top_cgroups")}))
    # the calm thread's whole history is there
    calm_stacks = d.dump_json("--tid", str(truth["nanosleep_tid"]))["stacks"]
    total = sum(s["total_ns"] for s in calm_stacks)
    assert within(total, truth["nanosleep_offcpu_ns"], 0.02), (total, truth)
    assert status["coarsened_records"] > 0, "the limit was never reached: the test proves nothing"

    # the explosion's time is all counted, the overflow visible as such
    rel = "/" + "/".join(two_cgroups[0].parts[-2:])
    stacks = d.dump_json("--cgroup", rel, "--state", "S", "--group-by", "tid")["stacks"]
    # its threads' sleeps: not the main thread, which waits for them to end
    slept = sum(s["total_ns"] for s in stacks if s["tid"] != burst["pid"])
    assert within(slept, burst["offcpu_ns"], 0.02), (slept, burst)
    assert any(s["user"] == ["[stacks over budget]"] for s in stacks)


def test_explosion_keeps_to_its_share_of_the_kernel_maps(start_daemon, fresh_cgroup, tmp_path):
    """In the kernel's maps too: with room for 1024 stacks a generation, a cgroup whose
    threads block with thousands of new stacks a second would fill the map within
    100 ms of each flip, and the stacks of anyone blocking later would be missed. Its
    share (cgroup-share, 25%) stops it there: the others' stacks are all kept, and its
    own time is all counted, the overflow as "[stacks over budget]"."""
    config = tmp_path / "offcpud.conf"
    config.write_text("stack-entries = 1024\naggregate-entries = 4096\n")
    d = start_daemon("--interval", "1s", "--config", str(config))
    explosion, _ = workload_in(fresh_cgroup, "stack_explosion", "--seconds", "8")
    # wakes 200 ms apart: most of its first wakeups after a flip come after the map is full
    calm = subprocess.run(["python3", "-c", "import os, time\n"
                           "for _ in range(30): time.sleep(0.2)\nprint(os.getpid())"],
                          capture_output=True, text=True, timeout=60, check=True)
    explosion_out, _ = explosion.communicate(timeout=60)
    burst = json.loads(explosion_out.splitlines()[-1])

    stacks = d.dump_json("--pid", calm.stdout.strip(), "--since", "60s")["stacks"]
    total = sum(s["total_ns"] for s in stacks)
    missed = sum(s["total_ns"] for s in stacks if s["user"] == ["[Missed User Stack]"])
    assert total > 5e9 and missed < 0.01 * total, (missed, total, stacks[:3])

    counters = d.call("io.offcpud.Status")["parameters"]
    rel = "/" + fresh_cgroup.name
    stacks = d.dump_json("--cgroup", rel, "--state", "S", "--group-by", "tid",
                         "--since", "60s")["stacks"]
    slept = sum(s["total_ns"] for s in stacks if s["tid"] != burst["pid"])
    assert within(slept, burst["offcpu_ns"], 0.02), (slept, burst)
    assert any(s["user"] == ["[stacks over budget]"] for s in stacks), counters


def test_many_noisy_cgroups_leave_room_for_a_quiet_one(start_daemon, fresh_cgroup, tmp_path):
    """A share caps one noisy cgroup; two at cgroup-share = 50 could still fill the map
    between them. Past a small floor, a cgroup adds to a map only while a quarter of it
    is free: that quarter is the quiet ones' room, however many are noisy."""
    groups = [fresh_cgroup / "noisy-a", fresh_cgroup / "noisy-b", fresh_cgroup / "quiet"]
    for p in groups:
        p.mkdir()
    try:
        config = tmp_path / "offcpud.conf"
        # a floor of 16 stacks and 64 entries a generation
        config.write_text("stack-entries = 4096\naggregate-entries = 16384\ncgroup-share = 50\n")
        d = start_daemon("--interval", "1s", "--config", str(config))
        runs = [workload_in(p, "stack_explosion", "--seconds", "8")[0] for p in groups[:2]]
        # in a cgroup of its own (the test's is the machine's), waking 200 ms apart: most
        # of its first wakeups after a flip come after the two have filled what they may
        pid = quiet_sleeper(groups[2])
        for proc in runs:
            proc.communicate(timeout=60)
        # its blocks since it joined its cgroup (before, the test's cgroup was its)
        rel = "/" + "/".join(groups[2].parts[-2:])
        stacks = d.dump_json("--cgroup", rel, "--since", "60s")["stacks"]
        total = sum(s["total_ns"] for s in stacks)
        missed = sum(s["total_ns"] for s in stacks
                     if s["user"] in (["[Missed User Stack]"], ["[stacks over budget]"]))
        assert total > 5e9 and missed < 0.01 * total, (missed, total, [(x["user"][-3:], x["kernel"][-2:], x["total_ns"], x["count"]) for x in stacks if x["user"][0].startswith("[")])
        collector = d.call("io.offcpud.Status")["parameters"]["collector"]
        assert collector["over_cgroup_share"] > 0, "the noisy ones never reached their room"
    finally:
        for p in groups:
            p.rmdir()


def test_explosion_keeps_to_its_share_of_the_waker_map(start_daemon, fresh_cgroup, tmp_path):
    """Wakers are on by default, so their map is held to cgroup shares as the aggregates
    are: with room for stacks but for only 1024 pairs a generation, a cgroup whose
    threads block with thousands of new stacks a second would fill the waker map within
    a second of each flip, and a quiet cgroup's wakeups would go unpaired."""
    groups = [fresh_cgroup / "explosion", fresh_cgroup / "quiet"]
    for p in groups:
        p.mkdir()
    try:
        config = tmp_path / "offcpud.conf"
        config.write_text("stack-entries = 65536\naggregate-entries = 1024\n")
        d = start_daemon("--interval", "1s", "--config", str(config))
        explosion, _ = workload_in(groups[0], "stack_explosion", "--seconds", "8")
        pid = quiet_sleeper(groups[1])
        explosion.communicate(timeout=60)
        pairs = json.loads(d.ctl("--json", "wakers", "--pid", pid, "--since", "60s").stdout)
        slept = [s for s in pairs["stacks"] if "clock_nanosleep" in s["user"]]
        # 30 sleeps of 200 ms, each woken by the timer: all paired, with their stacks
        assert sum(s["count"] for s in slept) >= 29, pairs["stacks"][:5]
        counters = d.call("io.offcpud.Status")["parameters"]["collector"]
        assert counters["over_cgroup_share"] > 0, counters
    finally:
        for p in groups:
            p.rmdir()
