"""--cgroup: only the tasks of that cgroup v2 (and below it); trace-cgroups: only those traced."""
import json
import subprocess

from conftest import OFFCPUD, run_workload, workload_in


def test_cgroup_filter(daemon, fresh_cgroup):
    inside, pid = workload_in(fresh_cgroup, "sleep_and_pipe", "--sleeps", "30", "--writes", "10")
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
    assert "no cgroup /no-such-cgroup-here: not a cgroup v2 directory now" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_trace_only_some_cgroups(start_daemon, fresh_cgroup, tmp_path):
    """trace-cgroups: tasks elsewhere are not recorded at all, and not miscounted."""
    conf = tmp_path / "offcpud.conf"
    conf.write_text(f"trace-cgroups = /{fresh_cgroup.name}\n")
    d = start_daemon("--interval", "200ms", "--config", str(conf))
    inside, pid = workload_in(fresh_cgroup, "sleep_and_pipe", "--sleeps", "30", "--writes", "10")
    outside = run_workload("sleep_and_pipe", "--sleeps", "30", "--writes", "10")
    inside.communicate(timeout=60)

    reply = d.dump_json("--since", "60s", "--group-by", "pid,cgroup")
    pids = {s["pid"] for s in reply["stacks"]}
    assert pid in pids and outside["pid"] not in pids, pids
    assert {s["cgroup"] for s in reply["stacks"]} == {"/" + fresh_cgroup.name}
    st = json.loads(d.ctl("--json", "status").stdout)["collector"]
    assert st["no_switch_out"] < 100, st


def test_trace_cgroups_bad_path(tmp_path):
    conf = tmp_path / "offcpud.conf"
    conf.write_text("trace-cgroups = /no-such-cgroup-here\n")
    res = subprocess.run([str(OFFCPUD), "--config", str(conf), "--socket", str(tmp_path / "s"),
                          "--state-directory", str(tmp_path / "state")],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0
    assert "trace-cgroups" in res.stderr and "no-such-cgroup-here" in res.stderr, res.stderr
