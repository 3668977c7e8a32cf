"""--cgroup: only the tasks of that cgroup v2 (and below it)."""
import os
import subprocess
from pathlib import Path

import pytest

from conftest import WORKLOADS, run_workload


def cgroup2_mount() -> Path:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ", 1)
        if right.split()[0] == "cgroup2":
            return Path(left.split()[4])
    pytest.fail("no cgroup2 mount")


@pytest.fixture
def fresh_cgroup():
    path = cgroup2_mount() / f"offcpud-test-{os.getpid()}"
    path.mkdir()
    yield path
    path.rmdir()


def test_cgroup_filter(daemon, fresh_cgroup):
    inside = subprocess.Popen([str(WORKLOADS / "sleep_and_pipe"), "--wait-stdin", "--sleeps", "30",
                               "--writes", "10"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    pid = int(inside.stdout.readline().split()[1])
    (fresh_cgroup / "cgroup.procs").write_text(f"{pid}\n")
    inside.stdin.write("go\n")
    inside.stdin.flush()
    outside = run_workload("short_lived")  # at the same time, in another cgroup
    inside.communicate(timeout=60)
    assert inside.returncode == 0

    reply = daemon.dump_json("--cgroup", str(fresh_cgroup), "--since", "60s",
                             "--group-by", "pid,cgroup")
    assert reply["stacks"], "nothing recorded for the cgroup"
    assert {s["pid"] for s in reply["stacks"]} == {pid}, \
        [(s["pid"], s["comm"], s["user"][-2:], s["kernel"][-3:]) for s in reply["stacks"]]
    assert {s["cgroup"] for s in reply["stacks"]} == {"/" + fresh_cgroup.name}
    assert any("block_in_nanosleep_100x10ms" in s["user"] for s in reply["stacks"])
    assert outside["pid"] != pid

    # the path relative to the cgroup2 mount means the same
    relative = daemon.dump_json("--cgroup", "/" + fresh_cgroup.name, "--since", "60s")
    assert sum(s["total_ns"] for s in relative["stacks"]) == sum(
        s["total_ns"] for s in reply["stacks"])


def test_unknown_cgroup(daemon):
    res = daemon.ctl("dump", "--cgroup", "/no-such-cgroup-here", check=False)
    assert res.returncode == 1
    assert "CgroupNotFound" in res.stderr and len(res.stderr.strip().splitlines()) == 1
