"""offcpuctl's behaviour at the edges: errors, exit codes, status."""
import json
import re
import subprocess
import time

from conftest import OFFCPUCTL, run_workload


def run(*args):
    return subprocess.run([str(OFFCPUCTL), *args], capture_output=True, text=True, timeout=30)


def one_line_error(res, code):
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("offcpuctl: "), res.stderr
    return lines[0]


def test_daemon_not_running(tmp_path):
    line = one_line_error(run("--socket", str(tmp_path / "none.sock"), "status"), 1)
    assert "is offcpud running?" in line


def test_bad_duration(daemon):
    line = one_line_error(run("--socket", daemon.sock, "dump", "--since", "soon"), 2)
    assert "invalid duration 'soon'" in line


def test_usage_errors(daemon):
    one_line_error(run("--socket", daemon.sock, "frobnicate"), 2)
    one_line_error(run("--socket", daemon.sock, "dump", "--pid", "abc"), 2)
    one_line_error(run("--socket", daemon.sock, "dump", "--format", "xml"), 2)
    one_line_error(run("--socket", daemon.sock, "dump", "--no-such-option"), 2)
    # folded lines have no room for frame detail
    line = one_line_error(run("--socket", daemon.sock, "dump", "--frame-detail"), 2)
    assert "--frame-detail needs --json" in line


def test_no_data_for_pid(daemon):
    # pid 2 is kthreadd: it exists but hardly ever runs; a pid far above pid_max never exists
    line = one_line_error(run("--socket", daemon.sock, "dump", "--pid", "2000000000",
                              "--since", "1s"), 1)
    assert "no off-CPU data for pid 2000000000" in line


def test_socket_from_environment(daemon):
    res = subprocess.run([str(OFFCPUCTL), "status"], capture_output=True, text=True,
                         env={"OFFCPUD_SOCKET": daemon.sock, "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr


def test_status_human_and_json(daemon):
    human = run("--socket", daemon.sock, "status")
    assert human.returncode == 0 and "attached with" in human.stdout
    status = json.loads(run("--socket", daemon.sock, "--json", "status").stdout)
    assert status["attach"] in ("tp_btf", "raw_tp")
    assert status["collector"]["switches"] > 0 and status["drains"] > 0
    assert status["pid"] == daemon.proc.pid
    assert status["memory_used"] <= status["memory_limit"]
    # the unwind tables: files derived since start (those loaded among them), their CPU
    assert status["unwind_files_read"] + status["unwind_files_shared"] >= status["unwind_files"] >= 0
    assert status["unwind_build_ns"] >= 0 and "unwind rows built in" in human.stdout


def test_global_options_after_the_command(daemon, tmp_path):
    """As a newcomer types them: offcpuctl dump ... --json, status --socket PATH."""
    reply = json.loads(run("dump", "--since", "60s", "--json", "--socket", daemon.sock).stdout)
    assert "stacks" in reply
    status = run("status", f"--socket={daemon.sock}", "-j")
    assert json.loads(status.stdout)["snapshots"] >= 0, status
    line = one_line_error(run("status", "--socket"), 2)
    assert "'--socket' needs a value" in line
    # after "--", nothing is taken for a global option
    one_line_error(run("--socket", daemon.sock, "dump", "--", "--json"), 2)


def test_help_explains_states_and_unknown_frames():
    out = run("--help").stdout
    assert "T stopped (SIGSTOP, job control)" in out and "t stopped by a tracer" in out
    assert "[unknown]" in out and "[Missed User Stack]" in out


def test_status_starts_with_a_verdict(daemon):
    human = run("--socket", daemon.sock, "status").stdout.splitlines()
    assert human[0].split() == ["verdict", "healthy"], human[:2]
    reply = run("--socket", daemon.sock, "--json", "status").stdout
    assert next(iter(json.loads(reply))) == "verdict"
    assert json.loads(reply)["verdict"] == "healthy"


def test_status_verdict_names_the_loss_and_the_fix(start_daemon, tmp_path):
    """With room for 1024 entries an interval and no cgroup share, 3000 threads blocking
    every 5 ms fill the kernel's map: the verdict says time is lost, and which key to raise."""
    config = tmp_path / "offcpud.conf"
    config.write_text("aggregate-entries = 1024\ncgroup-share = 100\n")
    d = start_daemon("--interval", "1s", "--config", str(config))
    run_workload("many_sleepers", "--threads", "3000", "--seconds", "3")
    status = d.call("io.offcpud.Status")["parameters"]
    assert status["collector"]["agg_map_full"] > 0, status["collector"]
    verdict = status["verdict"]
    assert verdict.startswith("losing data since start: "), verdict
    assert f"{status['collector']['agg_map_full']} waits found no room in the kernel's map" in verdict
    assert "(raise aggregate-entries)" in verdict
    human = d.ctl("status").stdout.splitlines()[0]
    assert human.startswith("verdict") and "losing data" in human, human


# ---- an empty answer told apart: never seen, exited, outside the history, not blocked ----

def clock(ns: int) -> str:
    """offcpuctl's time of day for ns (today's: the tests' history is minutes long)."""
    return time.strftime("%H:%M:%S", time.localtime(ns / 1e9))


def history(daemon) -> dict:
    """Status once the daemon holds a snapshot: a history to name."""
    deadline = time.monotonic() + 10
    while "oldest_ns" not in (status := daemon.call("io.offcpud.Status")["parameters"]):
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    return status


def test_pid_never_seen(daemon):
    status = history(daemon)
    line = one_line_error(run("--socket", daemon.sock, "dump", "--pid", "2000000000",
                              "--since", "1s"), 1)
    assert "no off-CPU data for pid 2000000000 in that window: offcpud never saw it, and it " \
           f"does not run now (the history kept runs from {clock(status['oldest_ns'])} to " \
           in line, line
    assert "check the number" in line, line


def test_pid_exited_says_when_and_how_to_reach_it(daemon):
    truth = run_workload("short_lived")
    daemon.settled()  # its records named (a drain may carry them to the next)
    time.sleep(1.5)  # its records now lie over a second back
    line = one_line_error(run("--socket", daemon.sock, "dump", "--pid", str(truth["pid"]),
                              "--since", "1s"), 1)
    retention = daemon.call("io.offcpud.Status")["parameters"]["retention_ns"] // 60_000_000_000
    # a time of another day than today's (past midnight) has its date
    day = r"(?:\d{4}-\d\d-\d\d )?"
    m = re.search(rf"pid {truth['pid']} in that window: it exited at about "
                  rf"{day}(\d\d:\d\d:\d\d); "
                  rf"its data is kept for the history's length \({retention}m, until "
                  rf"({day}\d\d:\d\d:\d\d)\): ask for a window that "
                  r"reaches it, e.g. --since (\S+)$", line)
    assert m, line
    assert m.group(1) in (clock(time.time_ns() - s * 1_000_000_000) for s in range(1, 4)), line
    # the window it names holds the process's stacks
    reply = json.loads(run("--socket", daemon.sock, "dump", "--json", "--pid",
                           str(truth["pid"]), "--since", m.group(3)).stdout)
    assert any("short_lived_sleep_20x10ms" in s["user"] for s in reply["stacks"]), reply


def test_running_pid_without_off_cpu_time(daemon):
    """A sleep has no time in D: its pid is known, that time there is not."""
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(1.5)
        line = one_line_error(run("--socket", daemon.sock, "dump", "--pid", str(sleeper.pid),
                                  "--state", "D", "--since", "1s"), 1)
        assert line.endswith(f"no off-CPU data for pid {sleeper.pid} for state D in that window: "
                             "it exists, "
                             "but was not off-CPU there as selected (widen --since, or select "
                             "less)"), line
    finally:
        sleeper.kill()
        sleeper.wait()


def test_window_outside_the_history_says_what_is_kept(daemon):
    status = history(daemon)
    kept = f"(it keeps from {clock(status['oldest_ns'])} to "
    line = one_line_error(run("--socket", daemon.sock, "dump", "--since", "@1000",
                              "--until", "@2000"), 1)
    assert "that window ends before the oldest data offcpud keeps " + kept in line, line
    line = one_line_error(run("--socket", daemon.sock, "top", "--since",
                              f"@{time.time() + 3600:.0f}"), 1)
    assert "that window starts after the newest data offcpud has " + kept in line, line
    assert "ask for a time before now" in line, line


def test_window_clipped_by_the_history(start_daemon):
    """--since 1h of a daemon up for 3 seconds: what there is, and a note saying so."""
    d = start_daemon("--interval", "100ms")
    time.sleep(3)
    res = d.ctl("top", "--since", "1h")
    oldest = history(d)["oldest_ns"]
    m = re.fullmatch(rf"offcpuctl: showing (\d+)s of the 1h asked: history starts at "
                     rf"{clock(oldest)}\n", res.stderr)
    assert res.stdout and m and 3 <= int(m.group(1)) <= (time.time_ns() - oldest) / 1e9 + 1, \
        res.stderr
    top = json.loads(d.ctl("--json", "top", "--since", "1h").stdout)
    dump = json.loads(d.ctl("dump", "--json", "--since", "1h").stdout)
    assert top["history_start_ns"] == dump["history_start_ns"] == oldest, (top, oldest)
    # a window within the history is not clipped
    res = d.ctl("top", "--since", "1s")
    assert res.stdout and not res.stderr, res.stderr
    assert "history_start_ns" not in json.loads(d.ctl("dump", "--json", "--since", "1s").stdout)
