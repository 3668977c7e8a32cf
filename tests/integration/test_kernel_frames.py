"""Kernel frames of BPF programs: named, except the tracer's own; never another's name.

bpf_blocks runs a sleepable BPF program that blocks (it copies from a userfaultfd page whose
faults are answered 10 ms late), so a BPF program shows inside kernel stacks, not at their
leaf where the tracer's own programs are. Its name comes from kallsyms, read again when
programs come or go, with the exact extents the BPF subsystem reports.
"""
import json
import re
import subprocess

from conftest import WORKLOADS, folded

BPF_FRAME = re.compile(r"bpf_prog_[0-9a-f]{16}(_\w+)? \[bpf\]$")


def run_bpf_blocks(*args):
    return subprocess.Popen([str(WORKLOADS / "bpf_blocks"), "--rounds", "30", *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def program_frames(daemon, pid):
    """The frame the BPF test run called (the program, named or not), per stack."""
    out = daemon.ctl("dump", "--pid", str(pid), "--since", "60s").stdout
    frames = []
    for _, _, kernel, _ in folded(out):
        if "bpf_prog_test_run_syscall" in kernel:
            frames.append(kernel[kernel.index("bpf_prog_test_run_syscall") + 1])
    return frames, out


def test_blocking_bpf_program_named(daemon):
    """Asked while the program is loaded: every stack through it names it."""
    proc = run_bpf_blocks("--hold")
    try:
        truth = json.loads(proc.stdout.readline())
        frames, out = program_frames(daemon, truth["pid"])
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert truth["runs"] == 30
    assert frames, out
    assert set(frames) == {truth["ksym"] + " [bpf]"}, out
    # the tracer's own programs are at the leaf, where the stack was taken: dropped
    for _, _, kernel, _ in folded(out):
        assert not any(BPF_FRAME.match(f) for f in kernel[-3:]), kernel


def test_unloaded_bpf_program_never_misnamed(daemon):
    """The program is unloaded as the process exits, before the last episodes are drained:
    kallsyms no longer lists it, and its code must not take a neighbour's name (the daemon's
    own programs are often next to it). Unknown is right; another program's name is not."""
    proc = run_bpf_blocks()
    truth = json.loads(proc.stdout.readline())
    assert proc.wait(timeout=30) == 0
    frames, out = program_frames(daemon, truth["pid"])
    assert frames, out
    assert set(frames) <= {truth["ksym"] + " [bpf]", "[unknown]"}, out
