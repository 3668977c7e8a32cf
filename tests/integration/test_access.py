"""Who may read what: root everything; members of the socket's group the stacks of
their own processes (or all, where configured); anyone else nothing."""
import grp
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import OFFCPUCTL, WORKLOADS, run_workload

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def reachable_daemon(reachable_daemon_factory):
    return reachable_daemon_factory("--socket-group", "no-such-group-here")


def as_nobody(d, *args):
    return subprocess.run([*NOBODY, str(OFFCPUCTL), "--socket", d.sock, *args],
                          capture_output=True, text=True, timeout=30)


def test_socket_is_root_only_without_group(reachable_daemon):
    st = os.stat(reachable_daemon.sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0
    res = as_nobody(reachable_daemon, "status")
    assert res.returncode == 1 and "Permission denied" in res.stderr, res.stderr


def test_unprivileged_caller_refused(reachable_daemon):
    """Were the socket opened up by mistake, the daemon itself still says no."""
    os.chmod(reachable_daemon.sock, 0o666)
    for command in (["status"], ["dump", "--pid", "1"]):
        res = as_nobody(reachable_daemon, *command)
        assert res.returncode == 1, res
        assert "permission denied by offcpud" in res.stderr, res.stderr
    assert "denied io.offcpud.Status to uid 65534" in reachable_daemon.read_log()
    # dump's folded lines come from Folded
    assert "denied io.offcpud.Folded to uid 65534" in reachable_daemon.read_log()


# ---- the socket's group: members read the stacks of their own processes ----

# per run: test runs on one machine must not share users
GROUP = f"offcpu-t{os.getpid()}"
MEMBER, OTHER, OUTSIDER = (f"offcpu-t{os.getpid()}-{x}" for x in "abc")


@pytest.fixture(scope="module")
def users():
    """Real unprivileged users: two members of GROUP (as a supplementary group, which
    SO_PEERGROUPS must report), one outsider. Removed afterwards."""
    subprocess.run(["groupadd", GROUP], check=True)
    made = []
    try:
        for name in (MEMBER, OTHER, OUTSIDER):
            subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin",
                            "--user-group", name], check=True)
            made.append(name)
        for name in (MEMBER, OTHER):
            subprocess.run(["usermod", "-aG", GROUP, name], check=True)
        yield
    finally:
        for name in made:
            subprocess.run(["userdel", name], check=False)
        subprocess.run(["groupdel", GROUP], check=False)


def as_user(name, *command, **kwargs):
    return subprocess.run(["setpriv", f"--reuid={name}", f"--regid={name}", "--init-groups",
                           *map(str, command)], capture_output=True, text=True, timeout=60,
                          **kwargs)


def workloads_as(*names):
    """One sleep_and_pipe per user, run at once; their pids."""
    procs = [subprocess.Popen(["setpriv", f"--reuid={n}", f"--regid={n}", "--init-groups",
                               str(WORKLOADS / "sleep_and_pipe"), "--sleeps", "30",
                               "--writes", "30"], stdout=subprocess.PIPE, text=True)
             for n in names]
    pids = []
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        pids.append(json.loads(out.strip().splitlines()[-1])["pid"])
    return pids


@pytest.fixture
def group_daemon(users, reachable_daemon_factory):
    def start(*args):
        d = reachable_daemon_factory("--socket-group", GROUP, *args)
        st = os.stat(d.sock)
        assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_uid == 0 and \
            st.st_gid == grp.getgrnam(GROUP).gr_gid
        # open to all, so that the daemon's own check is what stops the outsider
        os.chmod(d.sock, 0o666)
        return d

    return start


def dump_as(d, name, *args):
    res = as_user(name, OFFCPUCTL, "--socket", d.sock, "dump", "--format", "json",
                  "--since", "60s", *args)
    return res, (json.loads(res.stdout) if res.returncode == 0 else None)


@pytest.fixture
def paranoid():
    path = Path("/proc/sys/kernel/perf_event_paranoid")
    saved = path.read_text()
    yield path
    path.write_text(saved)


def test_member_sees_own_processes_only(group_daemon, paranoid):
    paranoid.write_text("2\n")
    d = group_daemon()
    mine, theirs = workloads_as(MEMBER, OTHER)

    res, reply = dump_as(d, MEMBER, "--pid", mine)
    assert res.returncode == 0, res.stderr
    users_frames = [f for s in reply["stacks"] for f in s["user"]]
    assert "block_in_nanosleep_100x10ms" in users_frames, reply
    # kernel.perf_event_paranoid = 2: no kernel profiling for users, one [kernel] frame
    assert all(s["kernel"] == ["[kernel]"] for s in reply["stacks"]), reply["stacks"][:3]

    res, _ = dump_as(d, MEMBER, "--pid", theirs)
    other = int(subprocess.run(["id", "-u", OTHER], capture_output=True, text=True).stdout)
    assert res.returncode == 1 and f"permission denied: pid {theirs} belongs to uid {other}" \
        in res.stderr, res
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    uid = int(subprocess.run(["id", "-u", MEMBER], capture_output=True, text=True).stdout)
    assert f"uid {uid} (pid" in d.read_log() and "withheld" in d.read_log()

    res, reply = dump_as(d, MEMBER, "--group-by", "pid")
    pids = {s["pid"] for s in reply["stacks"]}
    assert mine in pids and theirs not in pids and 1 not in pids, pids

    # root sees both, kernel frames and all
    reply = d.dump_json("--pid", str(theirs), "--since", "60s")
    assert reply["stacks"] and all(s["kernel"] != ["[kernel]"] for s in reply["stacks"])


def test_member_does_not_see_setuid_or_undumpable_processes(group_daemon):
    """Access as ptrace judges it: a process started by the member that runs with
    another effective uid (a setuid program, as su is) or that made itself undumpable
    holds what is not the member's, and its stacks are withheld from the member."""
    d = group_daemon()
    setuid = subprocess.Popen(["setpriv", f"--ruid={MEMBER}", "--euid=0", "--regid=0",
                               "--clear-groups", str(WORKLOADS / "sleep_and_pipe"),
                               "--sleeps", "30", "--writes", "30"],
                              stdout=subprocess.PIPE, text=True)
    undumpable = subprocess.Popen(
        ["setpriv", f"--reuid={MEMBER}", f"--regid={MEMBER}", "--init-groups",
         sys.executable, "-c",
         "import ctypes, os, time\n"
         "assert ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE\n"
         "for _ in range(15): time.sleep(0.1)\n"
         "print(os.getpid())"], stdout=subprocess.PIPE, text=True)
    out, _ = setuid.communicate(timeout=60)
    setuid_pid = json.loads(out.strip().splitlines()[-1])["pid"]
    out, _ = undumpable.communicate(timeout=60)
    undumpable_pid = int(out)
    mine, = workloads_as(MEMBER)
    # whose each process is, from all its records (under ASan, naming a new program's
    # stacks can take a drain or two)
    d.settled()

    # root sees their time: it is counted, only withheld
    totals = {pid: sum(s["total_ns"] for s in d.dump_json("--pid", str(pid),
                                                         "--since", "60s")["stacks"])
              for pid in (setuid_pid, undumpable_pid)}
    res, _ = dump_as(d, MEMBER, "--pid", setuid_pid)
    # refused with the rule; whose it is: no member's (its euid is root's), or root's
    # where the newest records are setpriv's own before the exec (seen in CI, not
    # understood yet: the program's records should be newer)
    assert res.returncode == 1 and re.search(
        rf"permission denied: pid {setuid_pid} (is not yours as ptrace judges it \(setuid, "
        r"or not dumpable\)|belongs to uid 0); members of group", res.stderr), \
        (res, d.dump_json("--pid", str(setuid_pid), "--since", "60s", "--group-by", "tid"))
    # python's start-up, before the prctl, was the member's to see; its 1.5 s of sleeps not
    res, reply = dump_as(d, MEMBER, "--pid", undumpable_pid)
    seen = sum(s["total_ns"] for s in reply["stacks"]) if reply else 0
    assert totals[undumpable_pid] - seen >= 1_400_000_000, (totals, reply)
    res, reply = dump_as(d, MEMBER, "--group-by", "pid")
    pids = {s["pid"] for s in reply["stacks"]}
    assert mine in pids and setuid_pid not in pids, pids


def test_kernel_frames_where_paranoid_allows(group_daemon, paranoid):
    paranoid.write_text("1\n")
    d = group_daemon()
    mine, = workloads_as(MEMBER)
    res, reply = dump_as(d, MEMBER, "--pid", mine)
    assert res.returncode == 0, res.stderr
    kernel = [f for s in reply["stacks"] for f in s["kernel"]]
    assert "do_nanosleep" in kernel and "[kernel]" not in kernel, reply["stacks"][:3]


def test_outsider_refused(group_daemon):
    d = group_daemon()
    for command in (["status"], ["dump", "--pid", "1"]):
        res = as_user(OUTSIDER, OFFCPUCTL, "--socket", d.sock, *command)
        assert res.returncode == 1 and "permission denied by offcpud" in res.stderr, res
    uid = int(subprocess.run(["id", "-u", OUTSIDER], capture_output=True, text=True).stdout)
    assert f"denied io.offcpud.Folded to uid {uid}" in d.read_log()
    # introspection stays open to whoever can connect
    getinfo = ("import json, socket, sys; s = socket.socket(socket.AF_UNIX); "
               "s.connect(sys.argv[1]); s.sendall(b'{\"method\":\"org.varlink.service.GetInfo\"}\\0'); "
               "print(json.loads(s.recv(65536).rstrip(b'\\0'))['parameters']['product'])")
    res = as_user(OUTSIDER, sys.executable, "-c", getinfo, d.sock)
    assert res.returncode == 0 and res.stdout.strip() == "offcpud", res


def test_group_reaches_socket_under_strict_umask(users, reachable_daemon_factory):
    """Started with umask 077 (as systemd's UMask=0077 does, or a hardened root shell),
    the daemon still makes the socket's directory searchable and the socket 0660, so a
    member of the group connects through the real permissions, nothing opened by hand."""
    d = reachable_daemon_factory("--socket-group", GROUP, sock="run/offcpud.sock", umask=0o077)
    assert stat.S_IMODE(os.stat(Path(d.sock).parent).st_mode) == 0o755
    st = os.stat(d.sock)
    assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == grp.getgrnam(GROUP).gr_gid
    res = as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "status")
    assert res.returncode == 0, res.stderr
    res = as_user(OUTSIDER, OFFCPUCTL, "--socket", d.sock, "status")
    assert res.returncode == 1 and "Permission denied" in res.stderr, res


def test_socket_group_follows_reload(users, reachable_daemon_factory):
    """A SIGHUP that names another socket-group (or none that exists) gives the socket
    the daemon bound that group, or root alone; the socket's real permissions decide."""
    d = reachable_daemon_factory(config=f"socket-group = {GROUP}\n")
    conf = Path(d.sock).parent / "offcpud.conf"

    def reload_to(group):
        conf.write_text(f"socket-group = {group}\n")
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        want = grp.getgrnam(group).gr_gid if group == GROUP else 0
        while os.stat(d.sock).st_gid != want and time.monotonic() < deadline:
            time.sleep(0.05)
        return os.stat(d.sock)

    assert as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "status").returncode == 0
    st = reload_to("no-such-group-here")
    assert stat.S_IMODE(st.st_mode) == 0o600 and (st.st_uid, st.st_gid) == (0, 0), st
    res = as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "status")
    assert res.returncode == 1 and "Permission denied" in res.stderr, res
    st = reload_to(GROUP)
    assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == grp.getgrnam(GROUP).gr_gid, st
    assert as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "status").returncode == 0

    # never through a link: a file put in the socket's place keeps its owner and mode
    victim = Path(d.sock).parent / "victim"
    victim.write_text("")
    victim.chmod(0o644)
    os.rename(d.sock, f"{d.sock}.moved")
    os.symlink(victim, d.sock)
    conf.write_text("socket-group = no-such-group-here\n")
    d.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "cannot give" not in d.read_log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f"cannot give {d.sock} to group" in d.read_log(), d.read_log()
    st = os.stat(victim)
    assert stat.S_IMODE(st.st_mode) == 0o644, st
    os.unlink(d.sock)
    os.rename(f"{d.sock}.moved", d.sock)
    assert d.proc.poll() is None


def test_group_access_all(group_daemon, tmp_path):
    conf = tmp_path / "offcpud.conf"
    conf.write_text("group-access = all\n")
    conf.chmod(0o644)
    d = group_daemon("--config", str(conf))
    theirs, = workloads_as(OTHER)
    res, reply = dump_as(d, MEMBER, "--pid", theirs)
    assert res.returncode == 0, res.stderr
    assert any("block_in_nanosleep_100x10ms" in s["user"] for s in reply["stacks"]), reply
    st = as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "status")
    assert st.returncode == 0, st.stderr


def test_member_sees_own_stuck_tasks_only(group_daemon, paranoid):
    """stuck reads live kernel records: the same rules as dump."""
    paranoid.write_text("2\n")
    d = group_daemon()
    procs = [subprocess.Popen(["setpriv", f"--reuid={n}", f"--regid={n}", "--init-groups",
                               str(WORKLOADS / "stuck_waits"), "--seconds", "8"],
                              stdout=subprocess.PIPE, text=True) for n in (MEMBER, OTHER)]
    try:
        mine, theirs = (int(p.stdout.readline().split()[1]) for p in procs)
        time.sleep(1.5)
        res = as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "--json", "stuck", "--pid", mine)
        assert res.returncode == 0, res.stderr
        tasks = json.loads(res.stdout)["tasks"]
        assert {t["pid"] for t in tasks} == {mine}, tasks
        assert all(t["kernel"] == ["[kernel]"] for t in tasks), tasks
        res = as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "stuck", "--pid", theirs)
        assert res.returncode == 1 and f"permission denied: pid {theirs} belongs to uid" \
            in res.stderr, res
        res = as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "--json", "stuck")
        assert theirs not in {t["pid"] for t in json.loads(res.stdout)["tasks"]}
        res = as_user(OUTSIDER, OFFCPUCTL, "--socket", d.sock, "stuck")
        assert res.returncode == 1 and "permission denied by offcpud" in res.stderr, res
        # root sees theirs, kernel frames and all
        tasks = json.loads(d.ctl("--json", "stuck", "--pid", str(theirs)).stdout)["tasks"]
        assert tasks and all(t["kernel"] != ["[kernel]"] for t in tasks), tasks
    finally:
        for p in procs:
            p.wait(timeout=30)


# Run as a member: open N connections, each answered once (so each is in), print
# "held", and keep them until stdin closes.
HOLD = """
import json, socket, sys
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(b'{"method":"org.varlink.service.GetInfo"}\\0')
    data = b""
    while not data.endswith(b"\\0"):
        data += s.recv(65536) or sys.exit("closed")
    assert "parameters" in json.loads(data[:-1]), data
    held.append(s)
print("held", flush=True)
sys.stdin.read()
"""


def test_member_at_cap_does_not_keep_another_out(users, reachable_daemon_factory):
    """One member holds all of max-clients (its per-uid cap allows it): another member's
    offcpuctl status still works, in the place of one of the first member's idle
    connections; the first member keeps the rest."""
    d = reachable_daemon_factory("--socket-group", GROUP,
                                 config="max-clients = 6\nmax-clients-per-uid = 6\n")
    hog = subprocess.Popen(["setpriv", f"--reuid={MEMBER}", f"--regid={MEMBER}",
                            "--init-groups", sys.executable, "-c", HOLD, d.sock, "6"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout.readline().strip() == "held"
        res = as_user(OTHER, OFFCPUCTL, "--socket", d.sock, "status")
        assert res.returncode == 0 and "pid" in res.stdout, res.stderr
        st = json.loads(as_user(OTHER, OFFCPUCTL, "--socket", d.sock, "--json",
                                "status").stdout)
        # the first status took a place; the second the one it left
        assert st["connections_shed"] == 1 and st["refused_max_clients"] == 0, st
        assert st["clients"] == 6, st
        assert "closed a connection of uid" in d.read_log()
    finally:
        hog.stdin.close()
        hog.wait(timeout=30)


# ---- refusals and what is hidden, in words that say the rule and the fix ----

def test_member_told_whose_process_and_the_rule(group_daemon):
    """root's process asked for by a member: whose it is, the rule, the key that changes it."""
    d = group_daemon()
    roots = run_workload("sleep_and_pipe", "--sleeps", "10", "--writes", "10")["pid"]
    res, _ = dump_as(d, MEMBER, "--pid", roots)
    assert res.returncode == 1 and not res.stdout, res
    assert res.stderr == (f"offcpuctl: permission denied: pid {roots} belongs to uid 0; members "
                          f"of group {GROUP} see only their own processes unless group-access = "
                          "all (see offcpud.conf(5))\n"), res.stderr
    # its timeline, the same
    res = as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "timeline", "--pid", roots,
                  "--since", "60s")
    assert res.returncode == 1 and f"pid {roots} belongs to uid 0;" in res.stderr, res
    # gone, and its window past: still whose it was, not when it ran
    time.sleep(1.2)
    res, _ = dump_as(d, MEMBER, "--pid", roots, "--until", "0s", "--since", "500ms")
    assert res.returncode == 1 and f"pid {roots} belongs to uid 0;" in res.stderr, res


def test_outsider_told_to_join_the_group(users, reachable_daemon_factory):
    """The socket's own permissions stop a user outside the group: the message names the
    group and the command that adds them to it."""
    d = reachable_daemon_factory("--socket-group", GROUP)
    res = as_user(OUTSIDER, OFFCPUCTL, "--socket", d.sock, "status")
    assert res.returncode == 1 and not res.stdout, res
    assert res.stderr == (f"offcpuctl: cannot connect to {d.sock}: Permission denied; add "
                          f"yourself to group {GROUP} (usermod -aG {GROUP} {OUTSIDER}) and log "
                          "in again\n"), res.stderr
    # nobody too, by its name
    res = as_nobody(d, "dump")
    assert res.returncode == 1 and f"(usermod -aG {GROUP} nobody)" in res.stderr, res


def test_hidden_processes_counted(group_daemon):
    """top and dump of a member say how many processes of other users they leave out."""
    d = group_daemon()
    mine, theirs = workloads_as(MEMBER, OTHER)
    res = as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "top", "--since", "60s")
    assert res.returncode == 0, res.stderr
    # (the daemon is younger than 60 s: a line says so, besides)
    hidden = [re.fullmatch(r"offcpuctl: (\d+) process(es)? of other users hidden \(see "
                           r"group-access in offcpud.conf\(5\)\)", line)
              for line in res.stderr.splitlines()]
    hidden = [int(m.group(1)) for m in hidden if m]
    assert len(hidden) == 1 and hidden[0] >= 2, res.stderr  # theirs and root's (ours)
    top = json.loads(as_user(MEMBER, OFFCPUCTL, "--socket", d.sock, "--json", "top",
                             "--since", "60s").stdout)
    assert {r["pid"] for r in top["rows"]} & {mine, theirs} == {mine}, top["rows"]
    _, dump = dump_as(d, MEMBER)
    assert top["hidden_processes"] >= 2 and dump["hidden_processes"] >= 2, (top, dump)
    # root is hidden nothing, and told nothing of it
    res = d.ctl("top", "--since", "60s")
    assert "hidden" not in res.stderr, res.stderr
    assert json.loads(d.ctl("--json", "top", "--since", "60s").stdout)["hidden_processes"] == 0
