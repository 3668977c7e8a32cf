"""meson install: programs, units, sysusers snippet, configuration and man pages land where
Debian's systemd, man and administrators look, under the build's own prefix; the installed
units verify against the installed daemon, and systemd-sysusers makes the socket's group."""
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, ROOT

UNITS = ("offcpud.service", "offcpud.socket")
MAN_PAGES = ("man1/offcpuctl.1", "man5/offcpud.conf.5", "man8/offcpud.8")


def meson_options(where) -> dict:
    res = subprocess.run(["meson", "introspect", "--buildoptions", str(where)],
                         capture_output=True, text=True, check=True)
    return {o["name"]: o["value"] for o in json.loads(res.stdout)}


def systemd_dir(variable: str, fallback: str) -> Path:
    """Where systemd looks, as the build asks pkg-config (systemd/meson.build)."""
    res = subprocess.run(["pkg-config", f"--variable={variable}", "systemd"],
                         capture_output=True, text=True)
    return Path(res.stdout.strip() or fallback)


@pytest.fixture(scope="module")
def layout():
    """The build's installation directories, absolute, as meson resolves them."""
    opts = meson_options(BUILD)
    prefix = Path(opts["prefix"])
    dirs = {name: prefix / opts[name] for name in ("bindir", "sbindir", "sysconfdir", "mandir",
                                                   "datadir")}
    dirs["unitdir"] = systemd_dir("systemdsystemunitdir", "/lib/systemd/system")
    dirs["sysusersdir"] = systemd_dir("sysusersdir", "/usr/lib/sysusers.d")
    return dirs


def meson_install(dest: Path):
    res = subprocess.run(["meson", "install", "-C", str(BUILD), "--no-rebuild", "--quiet",
                          "--destdir", str(dest)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = tmp_path_factory.mktemp("destdir")
    meson_install(dest)
    return dest


def under(dest: Path, path: Path) -> Path:
    return dest / path.relative_to("/")


def test_default_layout_is_debian():
    """A plain "meson setup" installs as Debian's packages do: /usr, and /etc."""
    opts = meson_options(ROOT / "meson.build")
    assert (opts["prefix"], opts["sysconfdir"]) == ("/usr", "/etc"), opts


def test_installed_files(installed, layout):
    want = [layout["sbindir"] / "offcpud", layout["bindir"] / "offcpuctl",
            *(layout["unitdir"] / u for u in UNITS),
            layout["sysusersdir"] / "offcpud.conf",
            layout["sysconfdir"] / "offcpud.conf",
            *(layout["mandir"] / m for m in MAN_PAGES)]
    missing = [str(p) for p in want if not under(installed, p).is_file()]
    assert not missing, (missing, sorted(str(p) for p in installed.rglob("*") if p.is_file()))
    for program in want[:2]:
        assert os.access(under(installed, program), os.X_OK), program
    # the service runs the installed daemon on the installed configuration
    service = under(installed, layout["unitdir"] / "offcpud.service").read_text()
    exec_start = next(line for line in service.splitlines() if line.startswith("ExecStart="))
    assert shlex.split(exec_start.split("=", 1)[1]) == [
        str(layout["sbindir"] / "offcpud"), "--config", str(layout["sysconfdir"] / "offcpud.conf")]


def test_installed_units_verify(installed, layout):
    """systemd-analyze verify on the installed units, their ExecStart= and man: links
    resolved at their real paths: in a private mount namespace, the installed tree is laid
    over the host's own (overlayfs) where the programs and man pages live."""
    tops = {Path(*p.parts[:2]) for p in (layout["sbindir"], layout["mandir"])}
    mounts = " && ".join(
        f"mount -t overlay overlay -o lowerdir={shlex.quote(str(under(installed, t)))}:{t} {t}"
        for t in sorted(tops))
    units = " ".join(shlex.quote(str(under(installed, layout["unitdir"] / u))) for u in UNITS)
    res = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                          f"{mounts} && exec systemd-analyze verify {units}"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "offcpud" not in res.stderr, res.stderr  # no warning about our units


def test_sysusers_creates_group(installed):
    host_groups = Path("/etc/group").read_text()
    (installed / "etc").mkdir(exist_ok=True)  # a /usr/local build installs nothing there
    res = subprocess.run(["systemd-sysusers", f"--root={installed}"], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    entries = [line.split(":") for line in (installed / "etc/group").read_text().splitlines()]
    gids = [int(e[2]) for e in entries if e[0] == "offcpu"]
    assert len(gids) == 1 and gids[0] < 1000, entries  # one system group
    assert Path("/etc/group").read_text() == host_groups  # made in the tree, not on the host


def test_reinstall_keeps_configuration(installed, layout):
    """An administrator's /etc/offcpud.conf survives a reinstall; the shipped copy is kept
    beside the documentation for comparison."""
    conf = under(installed, layout["sysconfdir"] / "offcpud.conf")
    edited = conf.read_text() + "interval = 5s\n"
    conf.write_text(edited)
    meson_install(installed)
    assert conf.read_text() == edited
    shipped = under(installed, layout["datadir"] / "doc/offcpud/offcpud.conf")
    assert shipped.read_text() == (ROOT / "etc/offcpud.conf").read_text()
