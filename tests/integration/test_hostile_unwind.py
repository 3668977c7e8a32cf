"""Unwind tables against a file any local user can make: a program whose `.eh_frame`
holds 300k CIEs, run by an unprivileged user. The daemon refuses the file at once
(more CIEs than a file may have), counts it and names it in status; meanwhile a new
program's stacks are whole, status answers, SIGTERM ends the daemon, and a daemon
started while the program runs listens without waiting for it. Before, the unwind
thread spent 96 s of CPU looking up CIEs by a scan (per FDE, all of them), every new
program's stacks stayed short meanwhile, and stop and start waited for it."""
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import PLAIN_BUILD, Daemon
from test_unwind import DWARF_SHARE_MIN, entry_share, feed_slowly, lines, wait_for, why

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
CIES = 300_000
# Liveness bounds, not performance figures: status takes milliseconds; SIGTERM ends
# the daemon in well under a second; the start took longer than 10 s.
STATUS_WITHIN_S = 1.0
STOP_WITHIN_S = 2.0
START_WITHIN_S = 10.0
MAIN = "#include <unistd.h>\nint main(void) { for (;;) pause(); }\n"


def cie(i):
    """A CIE (28 bytes: "zR", FDE pointers pc-relative, CFA = rsp + 8, the return address
    at CFA - 8), told apart from the others by a DW_CFA_def_cfa_offset i that the next
    instruction undoes: linkers merge only equal CIEs."""
    return (b"\x18\0\0\0" b"\0\0\0\0" b"\x01zR\0" b"\x01\x78\x10\x01\x1b"
            + bytes([0x0c, 7, 8, 0x90, 1, 0x0e, (i & 0x7f) | 0x80, ((i >> 7) & 0x7f) | 0x80,
                     (i >> 14) & 0x7f, 0x0e, 8]))


def sections(data):
    """{name: (file offset, address, size)} of an x86-64 ELF file's sections."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    names = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    found = {}
    for i in range(shnum):
        name, _, _, addr, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        found[bytes(data[names + name:data.index(0, names + name)]).decode()] = (offset, addr, size)
    return found


def cies_first(program: Path):
    """Lay out the program's .eh_frame as the attack did, every CIE first and then every
    FDE, where lld writes each CIE before its FDEs: the same entries, their CIE pointers
    and code addresses (4-byte, pc-relative, as every CIE here says) and .eh_frame_hdr's
    table moved with them."""
    data = bytearray(program.read_bytes())
    s = sections(data)
    (eh, eh_addr, eh_size), (hdr, hdr_addr, _) = s[".eh_frame"], s[".eh_frame_hdr"]
    cies, fdes, at = [], [], 0
    while at < eh_size:
        length, cie_id = struct.unpack_from("<II", data, eh + at)
        if length == 0:
            break
        entry = bytes(data[eh + at:eh + at + 4 + length])
        if cie_id == 0:
            cies.append((at, entry))
        else:
            pc = eh_addr + at + 8 + struct.unpack_from("<i", entry, 8)[0]
            fdes.append((at, entry, at + 4 - cie_id, pc))
        at += 4 + length
    moved, at = {}, 0
    for old, entry in cies:
        data[eh + at:eh + at + len(entry)] = entry
        moved[old], at = at, at + len(entry)
    for old, entry, cie_at, pc in fdes:
        data[eh + at:eh + at + len(entry)] = entry
        struct.pack_into("<Ii", data, eh + at + 4, at + 4 - moved[cie_at], pc - (eh_addr + at + 8))
        moved[old], at = at, at + len(entry)
    count, = struct.unpack_from("<I", data, hdr + 8)
    for i in range(count):
        field = hdr + 12 + 8 * i + 4
        old = hdr_addr + struct.unpack_from("<i", data, field)[0] - eh_addr
        struct.pack_into("<i", data, field, eh_addr + moved[old] - hdr_addr)
    program.write_bytes(data)


def many_cies_program(directory: Path) -> Path:
    """A program whose .eh_frame holds CIES CIEs, then as many FDEs (16 MiB), FDE i naming
    CIE i: a CIE found by a scan from the last costs the list's length per FDE. The FDEs
    cover code of its own that never runs (main waits); the CIEs are bytes, the FDEs
    assembler lines (their code addresses need relocations). Linked by lld (ld.bfd takes
    minutes to merge that many CIEs), then laid out as the attack had it."""
    (directory / "cies.bin").write_bytes(b"".join(cie(i) for i in range(CIES)))
    fdes = "".join(f"\t.long 16,{CIES * 28 + i * 20 + 4 - i * 28},hostile_code+{i}-.,1,0\n"
                   for i in range(CIES))
    (directory / "cies.s").write_text(
        f'\t.text\nhostile_code:\n\t.fill {CIES}, 1, 0xc3\n'
        f'\t.section .eh_frame,"a",@progbits\n\t.incbin "cies.bin"\n{fdes}'
        '\t.section .note.GNU-stack,"",@progbits\n')
    (directory / "main.c").write_text(MAIN)
    program = directory / "many-cies"
    subprocess.run(["gcc", "-O1", "-fuse-ld=lld", "-o", str(program), "main.c", "cies.s"],
                   cwd=directory, check=True, timeout=300)
    cies_first(program)
    return program


@pytest.fixture(scope="module")
def home():
    """A directory the unprivileged user can run programs from (pytest's is root's
    alone), with the program in it."""
    directory = Path(tempfile.mkdtemp(prefix="offcpud-cies-", dir="/tmp"))
    directory.chmod(0o755)
    many_cies_program(directory)
    yield directory
    shutil.rmtree(directory)


@pytest.fixture
def many_cies(home):
    """Start the program, as nobody: its process (killed at the end)."""
    started = []

    def start():
        started.append(subprocess.Popen([*NOBODY, str(home / "many-cies")]))
        return started[-1]
    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def refused(d: Daemon, program: Path, pid):
    """The file's entry in status once the daemon has read the process's table (after
    every process's at start: some seconds on a busy host)."""
    def named():
        status = d.call("io.offcpud.Status")["parameters"]
        return [e for e in status["unwind_refused"]
                if e["path"] == str(program) and e["pid"] == pid]
    wait_for(named, f"{program} named in status")
    return named()


def fresh_gzip(home: Path):
    """A copy of gzip (a file no daemon has read) run by nobody, fed lines slowly: its
    pid once it has exited."""
    copy = home / "fresh-gzip"
    shutil.copy2("/usr/bin/gzip", copy)
    proc = subprocess.Popen([*NOBODY, str(copy)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    feed_slowly(proc, lines(fmt="{i} after the CIEs\n"))
    assert proc.wait(timeout=60) == 0
    return proc.pid


def test_many_cies_refused_and_unwinding_goes_on(tmp_path, home, many_cies):
    """The program runs; one started 3 s later has its whole stack; status answers and
    names the file; SIGTERM ends the daemon. The daemon as it ships: how soon a new
    program's rows come is the plain build's to measure (as in test_unwind)."""
    d = Daemon(tmp_path, "--interval", "200ms", binary=PLAIN_BUILD / "daemon" / "offcpud")
    program = many_cies()
    time.sleep(3)
    pid = fresh_gzip(home)
    share, stacks = entry_share(d, pid)
    assert share >= DWARF_SHARE_MIN, f"{share:.3f} reach an entry\n{why(d, stacks)}"

    started = time.monotonic()
    d.call("io.offcpud.Status")
    took = time.monotonic() - started
    assert took < STATUS_WITHIN_S, f"status took {took:.3f} s"
    entries = refused(d, home / "many-cies", program.pid)
    assert "too large" in entries[0]["reason"], entries
    assert d.call("io.offcpud.Status")["parameters"]["unwind_files_refused"] >= 1
    said = [line for line in d.ctl("status").stdout.splitlines()
            if line.startswith("unwind refused") and f"{home / 'many-cies'} (pid" in line]
    assert said, d.ctl("status").stdout

    started = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(timeout=STOP_WITHIN_S)
    assert time.monotonic() - started < STOP_WITHIN_S
    d.stop()  # its checks: exit 0, a clean log, the socket gone


def test_start_while_many_cies_program_runs(start_daemon, home, many_cies):
    """A daemon started while the program runs listens at once (its start reads every
    process's table): the file is refused there, and named."""
    program = many_cies()
    time.sleep(0.5)  # mapped, running
    started = time.monotonic()
    d = start_daemon("--interval", "200ms")
    took = time.monotonic() - started
    assert took < START_WITHIN_S, f"listening after {took:.1f} s"
    assert refused(d, home / "many-cies", program.pid)
