"""The live NIC from Python (issue 11): Nic.attach on `lo` in socket mode (no
root), rules at install, run_live, live_stats, and the errors. The echo is
checked byte for byte against what a kernel socket sent."""

import pathlib
import random
import signal
import socket
import time

import pytest

import softspin
from conftest import ROOT, build

PINGPONG = ROOT / "examples" / "ping_pong" / "handler.c"


@pytest.fixture(scope="session")
def pingpong_elf(tmp_path_factory):
    # The live NIC's default profile is fpspin: build the handlers for it.
    return build([PINGPONG], tmp_path_factory.mktemp("live") / "pingpong.elf", "--profile", "fpspin")


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client():
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.bind(("127.0.0.1", 0))
    c.setblocking(False)
    return c


def echo(nic, c, port, data, timeout=2.0):
    """Send `data` to the NIC's port and run it until the echo comes back."""
    c.sendto(data, ("127.0.0.1", port))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        nic.run_live(0.01)
        try:
            return c.recv(2048)
        except BlockingIOError:
            pass
    return None


def live_echo_nic(elf, **install):
    nic = softspin.Nic.attach("lo", mode="socket", wait_timeout=0.1)
    img = nic.load_image(elf)
    e = nic.install(img, ph="pingpong_ph", **install)
    nic.activate(e)
    return nic, e


def test_attach_errors(tmp_path):
    for mode in ("socket", "xdp"):
        with pytest.raises(softspin.NetError, match="ss-no-such0"):
            softspin.Nic.attach("ss-no-such0", mode=mode)
    with pytest.raises(softspin.InvalidArgumentError, match="unknown mode `raw`"):
        softspin.Nic.attach("lo", mode="raw")
    with pytest.raises(softspin.InvalidArgumentError, match="not both"):
        softspin.Nic.attach("lo", mode="socket", profile="fpspin", config=tmp_path / "nic.toml")
    with pytest.raises(softspin.IoError, match="nic.toml"):
        softspin.Nic.attach("lo", mode="socket", config=tmp_path / "nic.toml")
    with pytest.raises(softspin.ConfigError, match="nope"):
        softspin.Nic.attach("lo", mode="socket", profile="nope")
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(softspin.InvalidArgumentError, match="wait_timeout"):
            softspin.Nic.attach("lo", mode="socket", wait_timeout=bad)


def test_simulated_nic_is_not_live():
    nic = softspin.Nic("fpspin")
    assert nic.is_live is False
    assert nic.live_stats() is None
    assert nic.live_status() is None
    with pytest.raises(softspin.InvalidArgumentError, match="simulated"):
        nic.run_live(0.01)


def test_install_needs_rules(pingpong_elf, tmp_path):
    nic = softspin.Nic.attach("lo", mode="socket")
    assert nic.is_live and nic.profile == "fpspin"
    img = nic.load_image(pingpong_elf)
    with pytest.raises(softspin.InvalidArgumentError, match="ruleset"):
        nic.install(img, ph="pingpong_ph")
    with pytest.raises(softspin.NetError, match="udp:99999"):
        nic.install(img, ph="pingpong_ph", match=["udp:99999"])
    with pytest.raises(softspin.NetError, match="other"):
        nic.install(img, ph="pingpong_ph", name="echo", rules_toml='[[ruleset]]\nmatch = ["ip"]\nectx = "other"\n')
    with pytest.raises(softspin.NetError, match="rules"):
        nic.install(img, ph="pingpong_ph", rules_toml='[[ruleset]]\nmode = "xor"\n')
    with pytest.raises(softspin.NetError, match="missing_rules.toml"):
        nic.install(img, ph="pingpong_ph", rules=tmp_path / "missing_rules.toml")
    other = '[[ruleset]]\nmatch = ["ip"]\nectx = "other"\n'
    with pytest.raises(softspin.NetError, match="no ruleset is for ECTX `echo`"):
        nic.install(img, ph="pingpong_ph", name="echo", udp_dst_port=9, rules_toml=other)
    # With a shortcut of its own, the ECTX is not deaf: the file may serve others.
    nic.install(img, ph="pingpong_ph", name="echo", match=["udp:9"], rules_toml=other)
    with pytest.raises(softspin.InvalidArgumentError, match="duration"):
        nic.run_live(-1.0)


def test_udp_echo_on_lo(pingpong_elf):
    port = free_udp_port()
    nic, e = live_echo_nic(pingpong_elf, match=[f"udp:{port}"])
    rng = random.Random(11)
    c = client()
    sizes = [1, 1472] + [rng.randint(1, 1472) for _ in range(38)]
    for i, n in enumerate(sizes):
        data = rng.randbytes(n)
        got = echo(nic, c, port, data)
        assert got == data, f"datagram {i} ({n} B): echo {None if got is None else len(got)} B differs"
    s = nic.live_stats()
    assert s["iface"] == "lo" and "socket" in s["port"]
    assert s["matched"] == len(sizes) and s["tx_frames"] == len(sizes)
    assert s["rx_frames"] >= len(sizes)
    assert sum(s["drops"].values()) == 0
    assert s["wall_s"] > 0
    lag = s["tx_lag_ns"]  # each reply's NIC time to the port: inside the run
    assert 0 <= lag["min"] <= lag["p50"] <= lag["p99"] <= lag["max"] < s["wall_s"] * 1e9
    r = nic.report()
    assert r["packets"] == len(sizes) and r["outbound_packets"] == len(sizes)
    assert nic.ectx_counts(e)[0] == len(sizes)
    # Deactivated, the port closes: nothing answers any more.
    nic.deactivate(e)
    assert echo(nic, c, port, b"late", timeout=0.2) is None
    c.close()


def test_live_status_counts_the_echoes(pingpong_elf):
    """live_status (the CLI's --progress line, from Python): its counts are
    the datagrams echoed here, they only grow, and it agrees with
    live_stats and the report."""
    port = free_udp_port()
    nic, e = live_echo_nic(pingpong_elf, match=[f"udp:{port}"])
    c = client()
    cfg = nic.config()
    before = nic.live_status()
    assert (before["matched"], before["invocations"], before["errors_total"]) == (0, 0, 0)
    assert before["hpus"] == cfg["clusters"] * cfg["hpus_per_cluster"]
    snaps = []
    for n in (10, 25):
        for i in range(n):
            assert echo(nic, c, port, bytes([i]) * (i + 1)) == bytes([i]) * (i + 1)
        snaps.append(nic.live_status())
    first, last = snaps
    assert (first["matched"], first["tx_frames"], first["invocations"], first["packets"]) == (10, 10, 10, 10)
    assert (last["matched"], last["tx_frames"], last["invocations"], last["packets"]) == (35, 35, 35, 35)
    assert last["wall_s"] > first["wall_s"] and last["nic_time_ns"] > first["nic_time_ns"]
    assert last["hpu_busy_ps"] > first["hpu_busy_ps"] > 0
    assert 0 <= last["hpus_busy"] <= last["hpus"]
    assert last["errors"] == [] and last["errors_total"] == 0
    assert all(v == 0 for v in last["drops"].values())
    assert {"packet_buffer_full", "no_ectx"} <= set(last["drops"])
    stats = nic.live_stats()
    for k in ("rx_frames", "matched", "passed_to_kernel", "tx_frames"):
        assert last[k] == stats[k], k
    assert last["fragments"] == {"matched": stats["fragments_matched"], "passed_to_kernel": stats["fragments_passed"]}
    assert last["packets"] == nic.report()["packets"]
    c.close()


def test_udp_echo_from_rules_file(pingpong_elf, tmp_path):
    port = free_udp_port()
    rules = tmp_path / "rules.toml"
    rules.write_text(
        f'[[ruleset]]\nname = "echo-port"\nmatch = ["ip", "udp", "udp_dport:{port}"]\nectx = "echo"\n'
        '[[ruleset]]\nname = "not-mine"\nmatch = ["icmp"]\nectx = "pinger"\n'
    )
    nic, _ = live_echo_nic(pingpong_elf, name="echo", rules=rules)
    c = client()
    assert echo(nic, c, port, b"from a rules file") == b"from a rules file"
    c.close()


def test_run_live_stops_on_keyboard_interrupt(pingpong_elf):
    nic, _ = live_echo_nic(pingpong_elf, match=[f"udp:{free_udp_port()}"])

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            nic.run_live()  # no duration: until interrupted
        assert 0.25 < time.monotonic() - t0 < 2.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    # The NIC is still usable afterwards.
    nic.run_live(0.01)


def test_run_for_past_the_horizon_is_a_limit_error_live_as_simulated(pingpong_elf):
    nic, _ = live_echo_nic(pingpong_elf, match=[f"udp:{free_udp_port()}"])
    for n in (softspin.Nic("fpspin"), nic):
        t0 = time.monotonic()
        with pytest.raises(softspin.LimitError, match="horizon"):
            n.run_for(2**63)
        assert time.monotonic() - t0 < 1.0


def test_live_run_for_and_wait_are_wall_time(pingpong_elf):
    nic, _ = live_echo_nic(pingpong_elf, match=[f"udp:{free_udp_port()}"])
    t0 = time.monotonic()
    nic.run_for(200_000_000)  # 200 ms of wall time
    assert 0.19 < time.monotonic() - t0 < 2.0
    t0 = time.monotonic()
    assert nic.wait_notifications() == []  # bounded by wait_timeout (0.1 s)
    assert time.monotonic() - t0 < 2.0
