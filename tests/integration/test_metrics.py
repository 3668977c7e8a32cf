"""Off-CPU time as Prometheus metrics, read back through Debian's real Prometheus: each
cgroup's counter equals what offcpuctl dump reports for it; the endpoint passes promtool;
and no HTTP client, however slow, malformed, large or numerous, harms the daemon."""
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import Daemon, cgroup2_mount, within, workload_in


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout=10) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


@pytest.fixture
def metrics_daemon(tmp_path):
    port = free_port()
    d = Daemon(tmp_path, "--interval", "500ms", "--metrics-listen", f"127.0.0.1:{port}")
    d.metrics_url = f"http://127.0.0.1:{port}/metrics"
    d.port = port
    yield d
    d.stop()


@pytest.fixture
def prometheus(metrics_daemon, tmp_path):
    """Debian's prometheus, scraping the daemon every second."""
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: offcpud
    static_configs:
      - targets: ['127.0.0.1:{metrics_daemon.port}']
""")
    log = open(tmp_path / "prometheus.log", "w")
    proc = subprocess.Popen(["prometheus", f"--config.file={config}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            get(url + "/-/ready")
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "prometheus.log").read_text()
            time.sleep(0.2)

    def query(expr: str) -> dict:
        q = urllib.parse.urlencode({"query": expr})
        reply = json.loads(get(f"{url}/api/v1/query?{q}"))
        assert reply["status"] == "success", reply
        return {r["metric"].get("cgroup", ""): float(r["value"][1])
                for r in reply["data"]["result"]}

    # its first scrape comes once target discovery has run (a few seconds)
    while not query('up{job="offcpud"} == 1'):
        assert proc.poll() is None and time.monotonic() < deadline + 60, \
            (tmp_path / "prometheus.log").read_text()
        time.sleep(0.2)
    yield query
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


@pytest.fixture
def two_cgroups():
    top = cgroup2_mount() / f"offcpud-metrics-{time.monotonic_ns()}"
    paths = [top / "a.service", top / "b.service"]
    top.mkdir()
    for p in paths:
        p.mkdir()
    yield paths
    for p in paths:
        p.rmdir()
    top.rmdir()


def test_prometheus_reads_what_dump_reports(metrics_daemon, prometheus, two_cgroups):
    d = metrics_daemon
    mount = cgroup2_mount()
    rel = ["/" + str(p.relative_to(mount)) for p in two_cgroups]
    # different, known blocking in each, for several scrapes
    runs = [workload_in(two_cgroups[0], "sleep_and_pipe", "--sleeps", "300", "--writes", "50"),
            workload_in(two_cgroups[1], "sleep_and_pipe", "--sleeps", "50", "--writes", "150")]
    for proc, _ in runs:
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    # every interval drained, then scraped twice
    time.sleep(3)
    selector = "|".join(rel)
    totals = prometheus(f'sum by (cgroup) (offcpud_off_cpu_seconds_total{{cgroup=~"{selector}"}})')
    rates = prometheus(f'sum by (cgroup) (rate(offcpud_off_cpu_seconds_total{{cgroup=~"{selector}"}}[1m]))')
    for path in rel:
        dumped = sum(s["total_ns"] for s in d.dump_json("--cgroup", path)["stacks"]) / 1e9
        assert dumped > 0.5, (path, dumped)
        # the series began with the run: its value is the increase over the run
        assert within(totals.get(path, 0), dumped, 0.02), (path, totals, dumped)
        assert rates[path] > 0, (path, rates)
    # the units are named from the cgroups
    units = prometheus(f'count by (cgroup) (offcpud_off_cpu_seconds_total{{unit="a.service"}})')
    assert rel[0] in units, units


def test_endpoint_passes_promtool(metrics_daemon):
    time.sleep(1.5)
    text = get(metrics_daemon.metrics_url)
    res = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr
    for name in ("offcpud_off_cpu_seconds_total", "offcpud_runq_seconds_total",
                 "offcpud_switches_total",
                 "offcpud_lost_events_total", "offcpud_drains_total", "offcpud_memory_used_bytes"):
        assert f"\n# TYPE {name} " in text, name
    # nothing a socket-group member could not read: no pids, no stacks, no commands
    labels = set()
    for line in text.splitlines():
        if not line.startswith("#") and "{" in line:
            inside = line[line.index("{") + 1:line.rindex("}")]
            labels |= {kv.split("=", 1)[0] for kv in inside.split('",') if kv}
    assert labels <= {"unit", "cgroup", "state", "event", "cause", "reason"}, labels


def raw(port: int, data: bytes, timeout=10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        return got


def test_bad_http_clients_harm_nothing(tmp_path):
    port = free_port()
    (tmp_path / "c.conf").write_text("idle-timeout = 1s\nmax-clients = 64\n")
    d = Daemon(tmp_path, "--interval", "500ms", "--metrics-listen", f"127.0.0.1:{port}",
               "--config", str(tmp_path / "c.conf"))
    try:
        assert raw(port, b"POST /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405")
        assert raw(port, b"GET /secrets HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404")
        assert raw(port, b"\x00\xff garbage\r\n\r\n").startswith(b"HTTP/1.1 400")
        assert raw(port, b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n").startswith(
            b"HTTP/1.1 431")
        # a slow client that never finishes its request is closed after idle-timeout
        with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
            slow.sendall(b"GET /met")
            assert slow.recv(1) == b""
        # 500 connections at once: the daemon keeps its limit and keeps answering
        held = []
        for _ in range(500):
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break
        assert d.call("io.offcpud.Status")["parameters"]["pid"] == d.proc.pid
        for s in held:
            s.close()
        time.sleep(0.5)
        assert get(f"http://127.0.0.1:{port}/metrics").startswith("# HELP")
        text = get(f"http://127.0.0.1:{port}/metrics")
        refused = [l for l in text.splitlines() if l.startswith("offcpud_metrics_refused_total")]
        assert int(refused[0].split()[1]) >= 4 + 500 - 64, refused
    finally:
        d.stop()


# Run as nobody: N connections to 127.0.0.1:PORT, from one source address or each from
# its own (127.0.1.x), each sending its request a byte a second, never finishing it;
# one that is closed is opened again at the next second, as an attacker would. Runs
# SECONDS; prints how many were opened again.
SLOW_CLIENTS = """
import select, socket, sys, time
port, n, spread, seconds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "spread", float(sys.argv[4])
head = b"GET /metrics HTTP/1.1\\r\\nX-Slow: " + b"a" * 100000
def connect(i):
    s = socket.socket()
    if spread:
        s.bind((f"127.0.1.{i + 1}", 0))
    s.connect(("127.0.0.1", port))
    return [s, 0]
conns = [connect(i) for i in range(n)]
reopened = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for i, c in enumerate(conns):
        if c[0] is None:
            conns[i] = c = connect(i)
            reopened += 1
        try:
            c[0].send(head[c[1]:c[1] + 1], socket.MSG_DONTWAIT)
            c[1] += 1
        except OSError:
            pass
    tick = time.monotonic() + 1
    while (left := tick - time.monotonic()) > 0:
        ready, _, _ = select.select([c[0] for c in conns if c[0]], [], [], left)
        for c in conns:
            if c[0] in ready:
                try:
                    c[0].recv(4096)
                except OSError:
                    pass
                c[0].close()
                c[0] = None
print(reopened)
"""


@pytest.mark.parametrize("sources", ["one", "spread"])
def test_slow_clients_do_not_blind_the_scrape(metrics_daemon, sources):
    """200 clients sending their requests a byte a second (each byte would reset an idle
    timer), from one address or from 200: a scrape still answers within a second."""
    attack = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               sys.executable, "-c", SLOW_CLIENTS, str(metrics_daemon.port),
                               "200", sources, "12"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(2)  # every slot taken
        took = []
        for _ in range(14):  # across request-timeout (5s): the slots are taken again
            t0 = time.monotonic()
            try:
                assert get(metrics_daemon.metrics_url, timeout=5).startswith("# HELP")
                took.append(time.monotonic() - t0)
            except OSError as e:
                took.append(float("inf"))
                print(f"scrape failed: {e!r}")
            time.sleep(0.5)
        reopened = int(attack.communicate(timeout=30)[0])
    finally:
        attack.kill()
        attack.wait()
    st = metrics_daemon.call("io.offcpud.Status")["parameters"]
    print(f"scrapes took {min(took) * 1000:.1f} to {max(took) * 1000:.1f} ms; "
          f"{reopened} slow connections reopened; status: "
          + ", ".join(f"{k} {v}" for k, v in st.items() if k.startswith("metrics_")))
    assert max(took) < 1.0, took
    assert st["metrics_request_timeouts"] + st["metrics_connections_shed"] > 0, st
