"""The Varlink socket: introspection, errors for bad requests, many clients, data intact."""
import json
import re
import shutil
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT, VarlinkStream, run_workload, varlink_call


def error_of(reply):
    return reply.get("error"), reply.get("parameters", {})


def raw_exchange(path, payload: bytes):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(path)
        s.sendall(payload)
        return VarlinkStream(s).recv()


def test_get_info(daemon):
    info = daemon.call("org.varlink.service.GetInfo")["parameters"]
    assert "io.offcpud" in info["interfaces"] and "org.varlink.service" in info["interfaces"]
    assert info["version"]


@pytest.mark.parametrize("interface", ["io.offcpud", "org.varlink.service"])
def test_interface_description_is_valid(daemon, interface, tmp_path):
    """The description parses with varlink-go's interface generator (a third-party parser)."""
    description = daemon.call("org.varlink.service.GetInterfaceDescription",
                              {"interface": interface})["parameters"]["description"]
    assert description.splitlines()[[l.startswith("interface") for l in
                                      description.splitlines()].index(True)] == f"interface {interface}"
    if interface == "io.offcpud":
        assert description == (ROOT / "daemon" / "api" / "io.offcpud.varlink").read_text(), \
            "the daemon serves the interface file the repository ships"
    generator = shutil.which("varlink-go-interface-generator")
    assert generator, "varlink-go (Debian package) is needed to validate the interface"
    path = tmp_path / f"{interface}.varlink"
    path.write_text(description)
    res = subprocess.run([generator, str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr


def interface_type_fields(name):
    """The fields of a type in the interface file, in order."""
    text = (ROOT / "daemon" / "api" / "io.offcpud.varlink").read_text()
    body = re.search(rf"^type {name} \((.*?)^\)", text, re.S | re.M).group(1)
    return [line.split(":")[0].strip() for line in body.splitlines()
            if ":" in line and not line.strip().startswith("#")]


def test_collector_counters_are_the_interfaces(daemon):
    """The collector's counters (one table in collector.c, one per BPF stat) are those the
    interface declares: a counter added to one home alone fails here."""
    counters = daemon.call("io.offcpud.Status")["parameters"]["collector"]
    assert sorted(counters) == sorted(interface_type_fields("CollectorCounters"))


def test_unknown_interface_description(daemon):
    reply = daemon.call("org.varlink.service.GetInterfaceDescription", {"interface": "com.nope"})
    assert error_of(reply) == ("org.varlink.service.InterfaceNotFound", {"interface": "com.nope"})


BAD_REQUESTS = [
    (b"{not json", "io.offcpud.InvalidRequest", None),
    (b"[1, 2]", "io.offcpud.InvalidRequest", None),
    (b'{"parameters": {}}', "io.offcpud.InvalidRequest", None),
    (b'{"method": "com.example.Nope"}', "org.varlink.service.InterfaceNotFound",
     {"interface": "com.example"}),
    (b'{"method": "io.offcpud.Nope"}', "org.varlink.service.MethodNotFound",
     {"method": "io.offcpud.Nope"}),
    (b'{"method": "org.varlink.service.GetInterfaceDescription", "parameters": {}}',
     "org.varlink.service.InvalidParameter", {"parameter": "interface"}),
    (b'{"method": "io.offcpud.Dump", "parameters": {"pid": "x"}}',
     "org.varlink.service.InvalidParameter", {"parameter": "pid"}),
    (b'{"method": "io.offcpud.Dump", "parameters": {"pid": -4}}',
     "org.varlink.service.InvalidParameter", {"parameter": "pid"}),
    (b'{"method": "io.offcpud.Dump", "parameters": {"since_ns": 5, "start_ns": 1}}',
     "org.varlink.service.InvalidParameter", {"parameter": "since_ns"}),
    (b'{"method": "io.offcpud.Dump", "parameters": {"group_by": ["colour"]}}',
     "org.varlink.service.InvalidParameter", {"parameter": "group_by"}),
    (b'{"method": "io.offcpud.Dump", "parameters": {"frame_detail": "yes"}}',
     "org.varlink.service.InvalidParameter", {"parameter": "frame_detail"}),
    (b'{"method": "io.offcpud.Dump", "parameters": {"bogus": 1}}',
     "org.varlink.service.InvalidParameter", {"parameter": "bogus"}),
    (b'{"method": "io.offcpud.Dump", "parameters": [1]}', "io.offcpud.InvalidRequest", None),
]


def test_bad_requests_get_errors_and_change_nothing(daemon):
    truth = run_workload("short_lived")
    params = {"pid": truth["pid"], "since_ns": 60 * 10**9}
    before = daemon.call("io.offcpud.Dump", params)["parameters"]
    assert before["stacks"]
    window = {"pid": truth["pid"], "start_ns": before["start_ns"] - 1, "end_ns": before["end_ns"]}
    before = daemon.call("io.offcpud.Dump", window)["parameters"]

    errors_before = daemon.call("io.offcpud.Status")["parameters"]["request_errors"]
    for payload, name, parameters in BAD_REQUESTS:
        reply = raw_exchange(daemon.sock, payload + b"\0")
        assert reply.get("error") == name, (payload, reply)
        if parameters is not None:
            assert reply["parameters"] == parameters, (payload, reply)
    errors_after = daemon.call("io.offcpud.Status")["parameters"]["request_errors"]
    assert errors_after - errors_before == len(BAD_REQUESTS), "every error reply is counted"

    # several bad and good messages on one connection: each answered, in order
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(daemon.sock)
        stream = VarlinkStream(s)
        s.sendall(b"{oops\0" + json.dumps({"method": "org.varlink.service.GetInfo"}).encode()
                  + b"\0")
        assert stream.recv()["error"] == "io.offcpud.InvalidRequest"
        assert "interfaces" in stream.recv()["parameters"]

    after = daemon.call("io.offcpud.Dump", window)["parameters"]
    assert after == before
    assert daemon.proc.poll() is None


def test_oversized_request(daemon):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(daemon.sock)
        s.sendall(b"x" * (2 << 20))  # no NUL: one request of 2 MiB
        reply = VarlinkStream(s).recv()
        assert reply["error"] == "io.offcpud.RequestTooLarge"
        assert reply["parameters"]["limit"] < (2 << 20)
        assert s.recv(1) == b"", "the connection is closed after an oversized request"
    assert daemon.call("io.offcpud.Status")["parameters"]["request_errors"] > 0


def test_null_parameters_mean_none(daemon):
    """Some Varlink clients send "parameters": null for a method without any."""
    reply = raw_exchange(daemon.sock, b'{"method": "io.offcpud.Status", "parameters": null}\0')
    assert reply["parameters"]["pid"] == daemon.proc.pid, reply


def test_oneway_gets_no_reply(daemon):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(daemon.sock)
        stream = VarlinkStream(s)
        stream.send({"method": "org.varlink.service.GetInfo", "oneway": True})
        stream.send({"method": "io.offcpud.Status"})
        assert "uptime_ns" in stream.recv()["parameters"]


def test_many_clients_at_once(daemon):
    def status(_):
        return varlink_call(daemon.sock, "io.offcpud.Status")["parameters"]["pid"]

    with ThreadPoolExecutor(max_workers=50) as pool:
        pids = list(pool.map(status, range(100)))
    assert pids == [daemon.proc.pid] * 100


def test_stalled_client_does_not_block_others(daemon):
    """A client that sends requests and never reads does not stop the daemon."""
    stalled = socket.socket(socket.AF_UNIX)
    stalled.connect(daemon.sock)
    stalled.setblocking(False)
    request = json.dumps({"method": "io.offcpud.Dump", "parameters": {}}).encode() + b"\0"
    try:
        for _ in range(2000):
            stalled.send(request)
    except BlockingIOError:
        pass
    assert varlink_call(daemon.sock, "io.offcpud.Status")["parameters"]["clients"] >= 2
    stalled.close()
