"""offcpuctl dump --format pprof, read by the real go tool pprof (Debian's golang-go):
the same totals and stacks as the folded output of the same window, labels, and the
workload's mapping with its build-id."""
import re
import shutil
import subprocess
from collections import Counter

import pytest

from conftest import WORKLOADS, at, folded, run_workload

GO = shutil.which("go")
pytestmark = pytest.mark.skipif(GO is None, reason="needs go tool pprof (golang-go)")


def pprof(*args: str) -> str:
    res = subprocess.run([GO, "tool", "pprof", *args], capture_output=True, text=True,
                         timeout=120, check=True)
    return res.stdout


@pytest.fixture(scope="module")
def profile(daemon, tmp_path_factory):
    """sleep_and_pipe's window as folded lines and as a pprof file."""
    truth = run_workload("sleep_and_pipe")
    pid = str(truth["pid"])
    reply = daemon.dump_json("--pid", pid, "--since", "60s")
    window = ("--since", at(reply["start_ns"]), "--until", at(reply["end_ns"]))
    out = daemon.ctl("dump", "--pid", pid, *window).stdout
    path = tmp_path_factory.mktemp("pprof") / "offcpu.pb.gz"
    daemon.ctl("dump", "--pid", pid, *window, "--format", "pprof", "-o", str(path))
    return truth, folded(out), path


def traces(path):
    """go tool pprof -traces: [(labels, microseconds, frames root first)]."""
    blocks = pprof("-traces", "-unit=us", str(path)).split("-----------+")[1:]
    result = []
    for block in blocks:
        lines = block.splitlines()[1:]
        labels, frames, value = {}, [], None
        for line in lines:
            m = re.match(r"^\s+(\w+):\s+(.*)$", line)
            if value is None and m:
                labels[m.group(1)] = m.group(2).strip()
                continue
            m = re.match(r"^\s*([\d.]+)us\s+(.*)$", line)
            if value is None and m:
                value = float(m.group(1))
                frames.append(m.group(2).strip())
            elif line.strip():
                frames.append(line.strip())
        if value is not None:
            result.append((labels, value, frames[::-1]))
    return result


def test_top_total_equals_folded(profile):
    _, rows, path = profile
    top = pprof("-top", "-unit=us", str(path))
    m = re.search(r"Total samples = ([\d.]+)us", top)
    assert m, top
    total_us = sum(r[3] for r in rows)
    # each folded line is rounded to a microsecond
    assert float(m.group(1)) == pytest.approx(total_us, abs=len(rows)), top
    assert "Type: off_cpu" in top, top
    assert "block_in_nanosleep_100x10ms" in top and "block_in_pipe_read" in top, top


def test_switches_total_equals_counts(daemon, profile):
    truth, _, path = profile
    top = pprof("-top", "-sample_index=switches", str(path))
    m = re.search(r"Total samples = (\d+)", top)
    assert m, top
    # the counts of the JSON reply for that pid (the same window as the file)
    assert int(m.group(1)) > truth["nanosleep_calls"] + truth["pipe_calls"] - 10, top


def test_traces_are_the_folded_stacks(profile):
    truth, rows, path = profile
    want = Counter()
    for comm, user, kernel, us in rows:
        want[(comm, tuple(user + kernel))] += us
    got = Counter()
    for labels, us, frames in traces(path):
        assert labels["pid"] == str(truth["pid"]), labels
        assert labels["state"] in ("S", "D", "R", "I"), labels
        assert labels["tid"].isdigit() and labels["cgroup"].startswith("/"), labels
        got[(labels["comm"], tuple(frames))] += us
    assert set(got) == set(want), (set(got) ^ set(want))
    for key, us in want.items():
        assert got[key] == pytest.approx(us, abs=1 + 0.001 * us), key


def test_labels_select_a_thread(profile):
    truth, _, path = profile
    top = pprof("-top", "-unit=us", f"-tagfocus=tid={truth['nanosleep_tid']}", str(path))
    assert "block_in_nanosleep_100x10ms" in top and "block_in_pipe_read" not in top, top


def test_mapping_has_the_build_id(profile):
    _, _, path = profile
    raw = pprof("-raw", str(path))
    binary = WORKLOADS / "sleep_and_pipe"
    note = subprocess.run(["readelf", "-n", str(binary)], capture_output=True, text=True,
                          check=True).stdout
    build_id = re.search(r"Build ID: ([0-9a-f]+)", note).group(1)
    assert re.search(rf"^\d+: 0x0/0x[0-9a-f]+/0x0 \S*sleep_and_pipe {build_id} \[FN\]$", raw,
                     re.M), raw


def test_bad_output_path_and_format(daemon, tmp_path):
    res = daemon.ctl("dump", "--since", "60s", "--format", "pprof", "-o",
                     str(tmp_path / "no" / "such" / "dir" / "x.pb.gz"), check=False)
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "No such file or directory" in res.stderr, res.stderr
    res = daemon.ctl("dump", "--format", "protobuf", check=False)
    assert res.returncode == 2 and "pprof" in res.stderr, res.stderr


def test_group_by_chooses_the_labels(daemon, profile, tmp_path):
    truth, _, _ = profile
    path = tmp_path / "by-state.pb.gz"
    daemon.ctl("dump", "--pid", str(truth["pid"]), "--since", "60s", "--format", "pprof",
               "--group-by", "state", "-o", str(path))
    labels = {k for labels, _, _ in traces(path) for k in labels}
    assert labels == {"comm", "state"}, labels
