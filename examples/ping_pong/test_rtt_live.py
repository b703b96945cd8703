"""The live ping-pong (rtt.py) on a veth pair: every ICMP and UDP echo
request answered exactly once with the right bytes, by the handlers (their
invocation counts, icmp_echo_ph's reply counter, the NIC's frames sent, and
the kernel's own SNMP counters not moving), and the kernel baseline measured beside it. Root only (network
namespaces, XDP); about 10 s."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
RTT = HERE / "rtt.py"
CLI = HERE.parents[1] / "target" / "release" / "softspin"

live = pytest.mark.skipif(os.geteuid() != 0 or not CLI.exists(),
                          reason="needs root (namespaces, XDP) and target/release/softspin")

COUNT, WARMUP, SIZES = 40, 5, [64, 1472]


def rtt(*args, timeout=120):
    # Without SS_NS_PREFIX rtt.py picks a prefix unique to its process.
    env = {k: v for k, v in os.environ.items() if k not in ("SS_NS_PREFIX", "SS_NET")}
    return subprocess.run([sys.executable, str(RTT), *args], capture_output=True, text=True, timeout=timeout, env=env)


@live
def test_every_ping_answered_by_the_handlers_and_kernel_measured():
    r = rtt("--count", str(COUNT), "--warmup", str(WARMUP), "--rounds", "1", "--sizes", ",".join(map(str, SIZES)),
            "--json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    d = json.loads(r.stdout)
    assert d["ok"] and d["problems"] == []
    per_proto = len(SIZES) * (COUNT + WARMUP)
    c = d["checks"]
    # softspin runs once more (the breakdown phase, with --records; COUNT is
    # below its cap).
    assert [(ph["mode"], ph["round"]) for ph in d["phases"]] == [("softspin", 0), ("kernel", 0), ("softspin", "breakdown")]
    for mode, k in (("softspin", 2), ("kernel", 1)):
        for proto in ("icmp", "udp"):
            assert c["requests"][mode][proto] == k * per_proto, (mode, proto, c)
            assert c["good_replies"][mode][proto] == k * per_proto, (mode, proto, c)
    for ph in d["phases"]:
        for proto in ("icmp", "udp"):
            t = ph[proto]
            assert (t["lost"], t["bad"], t["duplicate"], t["late"], t["refused"]) == (0, 0, 0, 0, 0), (ph["mode"], t)
            assert t["unstamped"] == 0  # every RTT from the kernel's receive timestamp
    # The handlers answered: each ran once per request (UDP: plus the
    # readiness probes it echoed), the NIC sent one frame per call, and the
    # kernel behind the NIC sent no echo reply and no UDP datagram.
    inv = c["handler_invocations"]
    probes = sum(ph["probes"]["sent"] for ph in d["phases"] if ph["mode"] == "softspin")
    assert inv["icmp_echo"] == 2 * per_proto
    assert 2 * per_proto < inv["udp_echo"] <= 2 * per_proto + probes
    assert c["nic_tx_frames"] == inv["icmp_echo"] + inv["udp_echo"]
    assert c["icmp_echo_replies_counted"] == 2 * per_proto  # the handler's own counter 0
    # The NIC's own time (PsPIN model, records) for every measured request.
    for row in d["table"]:
        nm = row["softspin_nic_model"]
        assert nm["n"] == COUNT and 0 < nm["p50_us"] < row["softspin"]["p50_us"], row
    sw = next(ph for ph in d["phases"] if ph["mode"] == "softspin")
    assert sw["nic"]["icmp_echo_counters"]["0"]["sum"] == sum((14 + 20 + 8 + s) * (COUNT + WARMUP) for s in SIZES)
    assert c["kernel_snmp_delta_during_softspin"] == {
        "Icmp InEchos": 0, "Icmp OutEchoReps": 0, "Udp InDatagrams": 0, "Udp OutDatagrams": 0}
    kernel_phase = next(ph for ph in d["phases"] if ph["mode"] == "kernel")
    assert kernel_phase["kernel_snmp_delta"]["Icmp OutEchoReps"] == per_proto
    # The table: both responders measured at every size, figures coherent.
    assert [(row["proto"], row["size"]) for row in d["table"]] == [(p, s) for p in ("icmp", "udp") for s in SIZES]
    for row in d["table"]:
        for mode in ("softspin", "kernel"):
            s = row[mode]
            assert s["n"] == COUNT
            assert 0 < s["min_us"] <= s["p50_us"] <= s["p99_us"] <= s["max_us"] < 1e6 * 0.5, (row, mode)
        assert row["ratio_p50"] == pytest.approx(row["softspin"]["p50_us"] / row["kernel"]["p50_us"])


@live
def test_wrong_replies_are_caught():
    """icmp_echo_ph built without its checksum fix: every ICMP reply must be
    reported bad, and the run must fail."""
    r = rtt("--count", "5", "--warmup", "0", "--rounds", "1", "--sizes", "64", "--sabotage", "checksum", "--json")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr
    d = json.loads(r.stdout)
    assert not d["ok"]
    sw = next(ph for ph in d["phases"] if ph["mode"] == "softspin")
    assert sw["icmp"]["bad"] == 5 and sw["icmp"]["good"] == 0
    assert sw["udp"]["good"] == 5  # the UDP handler was not sabotaged
    assert any("icmp" in p and "bad" in p for p in d["problems"])


@live
def test_kernel_answering_for_the_nic_is_caught():
    """The ICMP ruleset never matches: the pings pass to the kernel, which
    answers them correctly. The run must still fail, because the handler
    did not answer."""
    r = rtt("--count", "5", "--warmup", "0", "--rounds", "1", "--sizes", "64", "--sabotage", "match", "--json")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr
    d = json.loads(r.stdout)
    sw = next(ph for ph in d["phases"] if ph["mode"] == "softspin")
    assert sw["icmp"]["good"] == 5  # correct replies, from the wrong responder
    assert sw["kernel_snmp_delta"]["Icmp OutEchoReps"] == 5
    assert any("kernel answered" in p for p in d["problems"])
    assert any("icmp_echo_ph ran" in p for p in d["problems"])


@pytest.mark.parametrize("args, field", [
    (["--sizes", "1473"], "--sizes"),
    (["--sizes", "2"], "--sizes"),
    (["--sizes", "64,x"], "--sizes"),
    (["--count", "0"], "--count"),
    (["--rounds", "-1"], "--rounds"),
])
def test_bad_arguments_name_the_field(args, field):
    r = rtt(*args, timeout=30)
    assert r.returncode == 2
    assert field in r.stderr, r.stderr
