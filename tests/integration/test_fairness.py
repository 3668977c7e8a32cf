"""One cgroup's stack explosion costs its own detail, never another cgroup's history: over
the memory limit the biggest consumer's oldest snapshots lose their stacks first (their
time kept, under "[stacks over budget]"), and no one's snapshot is dropped whole."""
import json
import subprocess

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
