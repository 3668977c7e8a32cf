"""A process in a mount namespace of its own: names come from the file it actually runs.

The workload (sleep_and_pipe) runs from a path that, from the host, holds nothing or another
file: sleep_and_pipe_decoy, the same code at the same offsets with its functions renamed in
capitals. Had the daemon read the host's file, every frame would carry a decoy's name. The
process is gone before the query, so the file must have been read while it ran.
"""
import json
import shutil
import subprocess

from conftest import WORKLOADS, folded

OWN_FUNCTIONS = ["block_in_nanosleep_100x10ms", "sleeper_main", "block_in_pipe_read",
                 "reader_main"]


def run_in_own_mounts(script: str) -> dict:
    res = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def assert_named_from_own_file(daemon, pid: int, prog_name: str):
    out = daemon.ctl("dump", "--pid", str(pid), "--since", "60s").stdout
    frames = {f for _, user, _, _ in folded(out) for f in user}
    for name in OWN_FUNCTIONS:
        assert name in frames, out
        assert name.upper() not in frames, out
    # no frame of the program left as an offset: every one named from the file it runs
    assert not [f for f in frames if f.startswith(prog_name + "+0x")], out


def test_binary_only_inside_the_namespace(daemon, tmp_path):
    """The binary lives in a tmpfs mounted in the process's namespace only."""
    private = tmp_path / "private"
    private.mkdir()
    truth = run_in_own_mounts(
        f"mount -t tmpfs offcpud-test {private} && cp {WORKLOADS / 'sleep_and_pipe'} "
        f"{private}/prog && exec {private}/prog --sleeps 30 --writes 30")
    assert not (private / "prog").exists(), "the host must not see the namespace's file"
    assert_named_from_own_file(daemon, truth["pid"], "prog")


def test_other_file_at_the_same_path(daemon, tmp_path):
    """At the host's path is the decoy; the namespace mounts the real program over it."""
    prog, real = tmp_path / "prog", tmp_path / "real"
    shutil.copy(WORKLOADS / "sleep_and_pipe_decoy", prog)
    shutil.copy(WORKLOADS / "sleep_and_pipe", real)
    truth = run_in_own_mounts(
        f"mount --bind {real} {prog} && exec {prog} --sleeps 30 --writes 30")
    assert_named_from_own_file(daemon, truth["pid"], "prog")
