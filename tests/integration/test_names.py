"""Names are bytes that any program chooses: a thread names itself with bytes that are
not UTF-8 (prctl(PR_SET_NAME, "ääääääää") is cut by the kernel inside the eighth ä), with
terminal escapes, or "-"; a JIT names its code "-" in its perf map. Each shows, escaped
("\\xNN" a byte), in every output: JSON stays valid UTF-8 (no row or frame lost), text
sends no control to the terminal, and a folded frame "-" cannot pass for the separator.
The workloads run as nobody."""
import json
import re
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import OFFCPUCTL, WORKLOADS, Daemon, folded

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# name given -> (the name as JSON has it, as text for a terminal has it)
NAMES = {
    "ä".encode() * 8: ("ä" * 7 + "\\xc3", "ä" * 7 + "\\xc3"),  # 15 bytes kept
    b"\x1b[31mred": ("\x1b[31mred", "\\x1b[31mred"),
    b"\xc2\x9b2Jc1": ("\x9b2Jc1", "\\xc2\\x9b2Jc1"),  # CSI, the 8-bit ESC [
    b"back\\x41": ("back\\\\x41", "back\\\\x41"),  # a backslash reads back
    b"-": ("-", "-"),
}
# a control byte (but tab and newline), DEL, or a C1 control in UTF-8: none may reach a
# terminal
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def folded_name(text: str) -> str:
    """A name as a folded frame: "-" is the separator's."""
    return "\\x2d" if text == "-" else text


def ctl(d, *args) -> bytes:
    res = subprocess.run([str(OFFCPUCTL), "--socket", d.sock, *args], capture_output=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def clean(out: bytes) -> str:
    """Text for a terminal: UTF-8, no controls but the line ends."""
    assert not CONTROL.search(out), out
    return out.decode("utf-8")


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """A daemon (wakers on) and named_threads, as nobody, blocked in its threads' reads:
    (daemon, pid, {name given: tid}, options for diff: before the blocks against after)."""
    d = Daemon(tmp_path_factory.mktemp("offcpud"), "--interval", "200ms", "--wakers", "yes")
    deadline = time.monotonic() + 30
    while not d.ctl("dump", "--since", "60s", check=False).stdout:  # diff's earlier window
        if time.monotonic() >= deadline:
            d.stop()  # not left running for the tests after
            raise AssertionError("no data in the ring")
        time.sleep(0.2)
    start = time.time()
    proc = subprocess.Popen([*NOBODY, str(WORKLOADS / "named_threads"), *NAMES],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        words = proc.stdout.readline().split()
        assert words[0] == b"blocking", words
        pid, tids = int(words[1]), dict(zip(NAMES, map(int, words[2:])))
        windows = ("--before-since", f"@{start:.6f}", "--before-until", f"@{time.time():.6f}")
        time.sleep(1.5)  # drained, and blocked for long enough for stuck --min 1s
        yield d, pid, tids, windows
    finally:
        proc.communicate(b"done\n", timeout=30)
        d.stop()
    assert proc.returncode == 0


def rows_by_tid(reply, key="stacks"):
    by = {}
    for r in reply[key]:
        by.setdefault(r["tid"], []).append(r)
    return by


def test_json_keeps_every_thread(named):
    d, pid, tids, _ = named
    out = ctl(d, "dump", "--pid", str(pid), "--group-by", "tid", "--format", "json")
    assert b"\x1b" not in out  # JSON escapes its own controls
    by = rows_by_tid(json.loads(out.decode("utf-8")))
    for name, tid in tids.items():
        assert tid in by, (name, out)
        # named once started: its sleeps are the name's
        sleeps = [r for r in by[tid] if "do_nanosleep" in r["kernel"]]
        assert sleeps and {r["comm"] for r in sleeps} == {NAMES[name][0]}, by[tid]


def test_folded_dump_escaped(named):
    d, pid, tids, _ = named
    lines = folded(clean(ctl(d, "dump", "--pid", str(pid), "--group-by", "tid")))
    for name, tid in tids.items():
        mine = [(u, k) for comm, u, k, _ in lines if comm == folded_name(NAMES[name][1]) and
                f"[tid {tid}]" in u]
        # "-" named the thread: its comm is no separator, the user frames are all there
        assert mine and all(u[0] == f"[tid {tid}]" and "named_main" in u for u, _ in mine), lines
        assert any("do_nanosleep" in k for _, k in mine), lines


def test_comm_selected_as_shown(named):
    """--comm takes a name as the outputs show it, or its bytes (the kernel keeps 15) but
    for a backslash, which begins an escape."""
    d, pid, tids, _ = named
    for name, tid in tids.items():
        for comm in (NAMES[name][1], *([name[:15]] if b"\\" not in name else [])):
            reply = json.loads(ctl(d, "dump", "--pid", str(pid), "--comm", comm,
                                   "--group-by", "tid", "--format", "json"))
            assert {s["tid"] for s in reply["stacks"]} == {tid}, (comm, reply)


def test_top_escaped(named):
    d, pid, tids, _ = named
    text = clean(ctl(d, "top", "--pid", str(pid), "--by", "thread", "--limit", "0"))
    for name, tid in tids.items():
        assert re.search(rf"^.* {tid} +{pid} {re.escape(NAMES[name][1])}$", text, re.M), text
    reply = json.loads(ctl(d, "--json", "top", "--pid", str(pid), "--by", "thread"))
    comms = {r["tid"]: r["comm"] for r in reply["rows"]}
    assert all(comms.get(tid) == NAMES[name][0] for name, tid in tids.items()), comms


def test_stuck_escaped(named):
    d, pid, tids, _ = named
    text = clean(ctl(d, "stuck", "--pid", str(pid), "--min", "1s"))
    for name, tid in tids.items():
        assert f"{NAMES[name][1]} (pid {pid}, tid {tid}) has been in S for " in text, text
    reply = json.loads(ctl(d, "--json", "stuck", "--pid", str(pid), "--min", "1s"))
    comms = {t["tid"]: t["comm"] for t in reply["tasks"]}
    assert all(comms.get(tid) == NAMES[name][0] for name, tid in tids.items()), comms


@pytest.mark.parametrize("args", [("hist", "--by", "stack", "--limit", "0"), ("wakers",),
                                  ("diff",)])
def test_other_text_escaped(named, args):
    d, pid, _, windows = named
    text = clean(ctl(d, *args, *(windows if args == ("diff",) else ()), "--pid", str(pid)))
    assert "\\x1b[31mred" in text and "ä" * 7 + "\\xc3" in text, text


def test_flame_graph_is_xml(named, tmp_path):
    d, pid, _, _ = named
    svg = tmp_path / "names.svg"
    ctl(d, "flamegraph", "--pid", str(pid), "-o", str(svg))
    data = svg.read_bytes()
    assert not CONTROL.search(data)
    ET.fromstring(data)
    assert "\\x1b[31mred" in data.decode("utf-8")


def test_perf_map_names_are_not_separators(named):
    """A JIT names its functions "-" and "--" (the separators of user, kernel and waker
    frames): in folded output they are frames like any other."""
    d, _, _, _ = named
    res = subprocess.run([*NOBODY, str(WORKLOADS / "jit_perf_map"), "--rounds", "30",
                          "--leaf-name", "-", "--call-name", "--"],
                         capture_output=True, text=True, timeout=60, check=True)
    truth = json.loads(res.stdout.strip().splitlines()[-1])
    time.sleep(0.5)
    pid = str(truth["host_pid"])
    stacks = [(u, k) for _, u, k, _ in folded(clean(ctl(d, "dump", "--pid", pid)))
              if "do_nanosleep" in k]
    assert any(u[-1] == "\\x2d" and u[-2] == "run_jit_code" for u, _ in stacks), stacks
    assert any(u[-2:] == ["\\x2d-", "called_from_jit_10ms"] for u, _ in stacks), stacks
    assert all("-" not in u and "--" not in u and "-" not in k for u, k in stacks), stacks
    users = [s["user"] for s in json.loads(ctl(d, "dump", "--pid", pid, "--format", "json"))
             ["stacks"]]
    assert any(u[-2:] == ["run_jit_code", "-"] for u in users), users
    assert any(u[-2:] == ["--", "called_from_jit_10ms"] for u in users), users


def folded_frame(text: str) -> str:
    """A reply's name as one folded frame, by offcpuctl(1)'s rule: controls (C0, DEL, C1)
    and ';' as "\\xNN" of their bytes, a name "-" or "--" with its first '-' so."""
    out = "\\x2d" + text[1:] if text in ("-", "--") else text
    return "".join(
        "".join(f"\\x{b:02x}" for b in c.encode()) if c == ";" or ord(c) < 0x20 or
        0x7f <= ord(c) <= 0x9f else c for c in out)


@pytest.mark.parametrize("group_by", ["", "pid", "pid,tid,state,cgroup"])
def test_folded_lines_are_dumps_stacks(named, group_by):
    """offcpuctl dump's lines come from the daemon's Folded (names and paths sent once):
    over one window, they are Dump's stacks, folded here by the documented rule."""
    d, pid, _, _ = named
    window = ["--pid", str(pid), "--since", "60s"]
    reply = json.loads(ctl(d, "dump", *window, "--format", "json",
                           *(["--group-by", group_by] if group_by else [])))
    window = ["--pid", str(pid), "--since", f"@{(reply['start_ns'] + 1000) / 1e9:.6f}",
              "--until", f"@{(reply['end_ns'] + 1000) / 1e9:.6f}"]
    reply = json.loads(ctl(d, "dump", *window, "--format", "json",
                           *(["--group-by", group_by] if group_by else [])))
    want = []
    for s in reply["stacks"]:
        head = folded_frame(s["comm"])
        for field in ("pid", "tid", "state"):
            if s.get(field) is not None:
                head += f";[{field} {s[field]}]"
        if s.get("cgroup") is not None:
            head += f";[cgroup {folded_frame(s['cgroup'])}]"
        frames = "".join(";" + folded_frame(f) for f in s["user"]) + ";-" + \
            "".join(";" + folded_frame(f) for f in s["kernel"])
        want.append(f"{head}{frames} {(s['total_ns'] + 500) // 1000}")
    got = clean(ctl(d, "dump", *window, *(["--group-by", group_by] if group_by else [])))
    assert len(want) > 5 and got.splitlines() == sorted(want, key=lambda x: x.encode())
