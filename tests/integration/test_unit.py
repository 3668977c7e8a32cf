"""--unit NAME selects a systemd unit's cgroups, also across a restart (a new cgroup id
at the same path), in dump, top and stuck; --comm in each of them; and the errors in
the user's words (unknown unit, a unit without a cgroup, windows that cannot be)."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import WORKLOADS, cgroup2_mount, workload_in

UNIT = f"offcpud-t{os.getpid()}.service"


@pytest.fixture
def unit_cgroup():
    """The cgroup systemd would give UNIT: a slice of the test's own, and the unit in it.
    make() (re)creates it, as a restart of the unit does: a new id at the same path."""
    slice_ = cgroup2_mount() / f"offcpud-t{os.getpid()}.slice"
    slice_.mkdir()
    path = slice_ / UNIT

    def make():
        path.mkdir()
        return path

    yield make
    for p in (path, slice_):
        for _ in range(50):  # a process just exited may take a moment to leave it
            try:
                if p.exists():
                    p.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def run_in(cgroup: Path, name: str, *args: str) -> int:
    proc, pid = workload_in(cgroup, name, *args)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    return pid


def test_unit_across_a_restart(daemon, unit_cgroup):
    first_id_path = unit_cgroup()
    first_id = os.stat(first_id_path).st_ino
    first = run_in(first_id_path, "sleep_and_pipe", "--sleeps", "20", "--writes", "20")
    first_id_path.rmdir()  # the unit stops; it starts again with a new cgroup
    again = unit_cgroup()
    assert os.stat(again).st_ino != first_id
    second = run_in(again, "sleep_and_pipe", "--sleeps", "20", "--writes", "20")

    reply = daemon.dump_json("--unit", UNIT, "--since", "60s", "--group-by", "pid,cgroup")
    pids = {s["pid"] for s in reply["stacks"]}
    assert pids == {first, second}, pids
    assert {s["cgroup"] for s in reply["stacks"]} == {"/" + str(again.relative_to(
        cgroup2_mount()))}
    by_path = daemon.dump_json("--cgroup", str(again), "--since", "60s")
    assert sum(s["total_ns"] for s in reply["stacks"]) == sum(
        s["total_ns"] for s in by_path["stacks"])
    # "NAME" is NAME.service, as systemctl reads it
    short = daemon.dump_json("--unit", UNIT[:-len(".service")], "--since", "60s")
    assert short["stacks"]

    top = json.loads(daemon.ctl("--json", "top", "--unit", UNIT, "--since", "60s").stdout)
    assert {r["pid"] for r in top["rows"]} == {first, second}, top
    top = json.loads(daemon.ctl("--json", "top", "--by", "unit", "--since", "60s",
                                "--comm", "sleep_and_pipe").stdout)
    assert UNIT in {r["unit"] for r in top["rows"]}, top


def test_unit_and_comm_in_stuck(daemon, unit_cgroup):
    cgroup = unit_cgroup()
    # long enough for both questions on a busy machine
    proc, pid = workload_in(cgroup, "stuck_waits", "--seconds", "8")
    try:
        assert proc.stdout.readline().startswith("blocking ")
        time.sleep(1.5)
        tasks = json.loads(daemon.ctl("--json", "stuck", "--unit", UNIT).stdout)["tasks"]
        assert {t["pid"] for t in tasks} >= {pid}, tasks
        tasks = json.loads(daemon.ctl("--json", "stuck", "--comm", "stuck_waits").stdout)["tasks"]
        assert pid in {t["pid"] for t in tasks}, tasks
        assert all(t["comm"] == "stuck_waits" for t in tasks), tasks
    finally:
        proc.communicate(timeout=30)


def test_comm_in_dump_and_top(daemon):
    proc = subprocess.run([str(WORKLOADS / "vfork_waits"), "--forks", "20"],
                          capture_output=True, text=True, check=True)
    pid = json.loads(proc.stdout.strip().splitlines()[-1])["pid"]
    reply = daemon.dump_json("--comm", "vfork_waits", "--since", "60s", "--group-by", "pid")
    assert pid in {s["pid"] for s in reply["stacks"]}
    assert {s["comm"] for s in reply["stacks"]} == {"vfork_waits"}
    top = json.loads(daemon.ctl("--json", "top", "--comm", "vfork_waits", "--since",
                                "60s").stdout)
    assert pid in {r["pid"] for r in top["rows"]}


@pytest.fixture
def unit_file():
    """A unit systemd knows (a unit file) that has never run."""
    path = Path("/etc/systemd/system") / f"offcpud-t{os.getpid()}-idle.service"
    path.write_text("[Service]\nExecStart=/bin/true\n")
    yield path.name
    path.unlink()


def one_line_error(res, code=1):
    assert res.returncode == code and res.stderr.count("\n") == 1, res
    return res.stderr


def test_errors_in_the_users_words(daemon, unit_file, tmp_path):
    svg = tmp_path / "out.svg"
    # every view, with what it needs besides the selection
    views = {"dump": [], "top": [], "hist": [], "timeline": [], "flamegraph": ["-o", str(svg)],
             "diff": ["--before-since", "2s", "--since", "1s"]}
    for command, extra in [*views.items(), ("stuck", [])]:
        err = one_line_error(daemon.ctl(command, *extra, "--unit", "no-such-unit-here",
                                        check=False))
        assert "unknown unit no-such-unit-here.service: no unit file" in err, (command, err)
        err = one_line_error(daemon.ctl(command, *extra, "--unit", unit_file, check=False))
        assert f"unit {unit_file} has no cgroup: it is not running" in err, (command, err)
        err = one_line_error(daemon.ctl(command, *extra, "--unit", "a/b.service", check=False), 2)
        assert "invalid --unit 'a/b.service'" in err, (command, err)
    # diff's own window is the one before: its --since/--until are the other's
    windows = {**{command: [*extra, "--since", "{since}", "--until", "{until}"]
                  for command, extra in views.items() if command != "diff"},
               "diff": ["--since", "1s", "--before-since", "{since}", "--before-until", "{until}"]}
    for command, args in windows.items():
        def ask(since, until, *more):
            return daemon.ctl(command, *[a.format(since=since, until=until) for a in args], *more,
                              check=False)
        err = one_line_error(ask("10s", "60s"))
        assert "the window ends before it starts: --until must be later than --since" in err, (
            command, err)
        err = one_line_error(ask("@1000", "@2000"))
        assert "that window ends before the oldest data offcpud keeps" in err, (command, err)
        if command != "diff":
            err = one_line_error(ask("5s", "0s", "--pid", "4194305"))
            assert "no off-CPU data for pid 4194305 in that window" in err, (command, err)
    # a view that failed wrote nothing
    assert not svg.exists()
