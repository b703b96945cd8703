#!/usr/bin/env python3
"""FPsPIN's ping-pong demo live (seed 000 §6.3.1): round-trip time of ICMP and
UDP echo answered by softspin's handlers on a veth interface, against the
kernel answering the same pings on the same interface, per payload size.

    sudo .venv/bin/python examples/ping_pong/rtt.py [--count N] [--sizes 64,256,1024,1472]
                                                   [--rounds R] [--json] [--plot PNG]

What it does (root: namespaces, XDP):
- scripts/netns.sh makes two namespaces joined by a veth pair (prefix
  SS_NS_PREFIX, default unique per process; removed on exit, SIGINT, SIGTERM).
- **softspin**: `softspin nic` in the NIC namespace with two ECTXs, one NIC:
  `icmp_echo_ph` for ruleset `icmp`, `pingpong_ph` for `udp:PORT`
  (handler.c; two images linked at different addresses, a scenario and a
  rules file). **kernel**: no NIC attached; the kernel's ICMP echo responder
  and bench/live/udp_echo_server.c (a blocking recvfrom/sendto loop, FPsPIN's
  `dgpingd` role) answer.
- From the peer namespace, a client (this file, `_client`) sends one request
  at a time: ICMP echo requests on a raw socket, UDP datagrams on a connected
  socket, random data, `--count` measured (after `--warmup`) per protocol and
  size. RTT = the kernel's receive timestamp of the reply (SO_TIMESTAMPNS,
  as iputils ping) minus CLOCK_REALTIME read just before `sendto`, so the
  client's Python wake-up is not in the figure. Every reply is checked byte
  for byte against one built here: ICMP type 0, code 0, a checksum summed
  again, identifier, sequence number and data; UDP the whole payload.
- Who answered: for softspin, the NIC's `--json` must show each handler ran
  once per request (`handlers[].invocations`), one frame sent per request
  (`tx_frames`), no drops or errors, and icmp_echo_ph's own counter of echo
  replies (`counters`) equal to the ICMP requests; and the NIC namespace kernel's own
  counters (/proc/net/snmp `Icmp OutEchoReps`, `Udp OutDatagrams`) must not
  move. For the kernel they must move by the number of requests.
- Rounds alternate softspin/kernel (order reversed every other round); the
  table pools every round's samples: p50, p99, mean per size, and the ratio
  softspin / kernel. For softspin it also gives the part of the RTT the NIC
  model charges (arrival to the handler's completion, PsPIN time at the
  fpspin profile's 40 MHz), like FPsPIN's breakdown (Fig. 6.4), from one
  extra softspin phase run with `--records` (checked, not timed).

Exit status 0 when every request got exactly one correct reply from the
expected responder, 1 otherwise (the JSON's `problems` say what), 2 on bad
arguments. bench/live_bench.py calls `measure()` (make bench-live).
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOFTSPIN = os.path.join(ROOT, "target", "release", "softspin")
NETNS = os.path.join(ROOT, "scripts", "netns.sh")
HANDLER = os.path.join(HERE, "handler.c")
ECHO_SERVER = os.path.join(ROOT, "bench", "live", "udp_echo_server.c")
OUT = os.path.join(ROOT, "target", "ping-pong")
DEFAULT_SIZES = [64, 256, 1024, 1472]
# Largest payload that fits a 1500-byte MTU unfragmented (IPv4 20 + ICMP/UDP
# 8); the handlers do not answer fragments.
MAX_PAYLOAD = 1500 - 20 - 8
MIN_PAYLOAD = 4  # the UDP payload starts with the sequence number
UDP_PORT = 7
# The UDP ECTX's image is linked beside the ICMP one's (fpspin profile: 32 KiB
# program memory from 0x1D000000, 1 MiB handler memory from 0x1C000000).
SECOND_CODE_BASE, SECOND_DATA_BASE = "0x1D004000", "0x1C080000"
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # asm-generic/socket.h; Python lacks the name
REPLY_TIMEOUT_S = 0.5
# The NIC model's time per request comes from one extra softspin phase with
# `--records` (writing them costs the live loop ~1 µs per frame, so the timed
# rounds run without); one-in-flight requests of one size all take the same
# model time, so a few hundred suffice.
BREAKDOWN_COUNT = 500
ICMP_CTR_REPLIED, ICMP_CTR_IGNORED = 0, 1  # icmp_echo_ph's counter indices (handler.c)
ETH_IP_ICMP = 14 + 20 + 8  # header bytes before the echo data (no IP options)
PROTOS = ("icmp", "udp")
MODES = ("softspin", "kernel")


class Names:
    """The namespaces, interfaces and addresses scripts/netns.sh makes."""

    def __init__(self, prefix, net="10.77.0"):
        self.prefix = prefix
        self.nic_ns, self.peer_ns = prefix + "nic", prefix + "peer"
        self.nic_if, self.peer_if = prefix + "0", prefix + "1"
        self.nic_ip, self.peer_ip = net + ".1", net + ".2"
        self.env = dict(os.environ, SS_NS_PREFIX=prefix, SS_NET=net)


def run(cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise SystemExit(f"rtt: failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


def in_ns(ns, *cmd):
    return ["ip", "netns", "exec", ns, *cmd]


# ---------------------------------------------------------------- checksums

def csum(data: bytes) -> int:
    """RFC 1071 Internet checksum. The one's-complement sum of 16-bit words
    is the number's value mod 0xffff (2^16 = 1 mod 0xffff), except that a
    non-zero multiple of 0xffff sums to 0xffff, not 0."""
    if len(data) % 2:
        data += b"\0"
    n = int.from_bytes(data, "big")
    s = n % 0xFFFF
    if s == 0 and n != 0:
        s = 0xFFFF
    return 0xFFFF - s


def icmp_echo(kind, ident, seq, data):
    hdr = struct.pack("!BBHHH", kind, 0, 0, ident, seq)
    c = csum(hdr + data)
    return struct.pack("!BBHHH", kind, 0, c, ident, seq) + data


# ---------------------------------------------------------------- the client (peer namespace)

def recv_stamped(sock):
    """One datagram and the kernel's receive time (ns, CLOCK_REALTIME)."""
    data, anc, _flags, _addr = sock.recvmsg(65536, socket.CMSG_SPACE(16))
    for level, typ, val in anc:
        if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS and len(val) >= 16:
            sec, nsec = struct.unpack("qq", val[:16])
            return data, sec * 1_000_000_000 + nsec, True
    return data, time.time_ns(), False


class Tally:
    def __init__(self):
        self.sent = self.good = self.lost = self.bad = self.duplicate = self.late = 0
        self.refused = self.other = self.unstamped = 0
        self.answered = set()

    def as_dict(self):
        return {k: v for k, v in vars(self).items() if k != "answered"}


def icmp_run(sock, nic_ip, ident, seq0, size, count, t, rng):
    """`count` echo requests, one in flight; RTTs in ns of the good ones."""
    out = []
    for seq in range(seq0, seq0 + count):
        seq &= 0xFFFF
        data = rng.randbytes(size)
        req = icmp_echo(8, ident, seq, data)
        want = icmp_echo(0, ident, seq, data)  # built from scratch, not from the reply
        t.sent += 1
        t0 = time.time_ns()
        sock.sendto(req, (nic_ip, 0))
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                t.lost += 1
                break
            sock.settimeout(left)
            try:
                pkt, t1, stamped = recv_stamped(sock)
            except socket.timeout:
                t.lost += 1
                break
            ihl = (pkt[0] & 0x0F) * 4 if pkt else 0
            if len(pkt) < ihl + 8 or socket.inet_ntoa(pkt[12:16]) != nic_ip:
                t.other += 1
                continue
            icmp = pkt[ihl:]
            rtype, _code, _c, rid, rseq = struct.unpack("!BBHHH", icmp[:8])
            if rtype != 0 or rid != ident:
                t.other += 1  # e.g. port unreachable for a UDP probe
                continue
            if rseq != seq:
                if rseq in t.answered:
                    t.duplicate += 1
                else:
                    t.late += 1
                continue
            if icmp != want:
                t.bad += 1
                break
            if seq in t.answered:
                t.duplicate += 1
                continue
            t.answered.add(seq)
            t.good += 1
            t.unstamped += not stamped
            out.append(t1 - t0)
            break
    return out


def udp_run(sock, seq0, size, count, t, rng):
    out = []
    for seq in range(seq0, seq0 + count):
        payload = struct.pack("!I", seq) + rng.randbytes(size - 4)
        t.sent += 1
        t0 = time.time_ns()
        sock.send(payload)
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                t.lost += 1
                break
            sock.settimeout(left)
            try:
                data, t1, stamped = recv_stamped(sock)
            except socket.timeout:
                t.lost += 1
                break
            except ConnectionRefusedError:  # the kernel's port unreachable: no echo server answered
                t.refused += 1
                continue
            rseq = struct.unpack("!I", data[:4])[0] if len(data) >= 4 else -1
            if rseq != seq:
                if rseq in t.answered:
                    t.duplicate += 1
                else:
                    t.late += 1
                continue
            if data != payload:
                t.bad += 1
                break
            t.answered.add(seq)
            t.good += 1
            t.unstamped += not stamped
            out.append(t1 - t0)
            break
    return out


def drain(sock, t, ident=None, seconds=0.05):
    """Replies still arriving after the last request: duplicates or late
    (for ICMP, only echo replies with our identifier count)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            pkt = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionRefusedError:
            t.refused += 1
            continue
        if ident is not None:
            ihl = (pkt[0] & 0x0F) * 4
            if len(pkt) < ihl + 8 or pkt[ihl] != 0 or struct.unpack("!H", pkt[ihl + 4:ihl + 6])[0] != ident:
                continue
        t.duplicate += 1


def client(p):
    """Runs in the peer namespace; prints one JSON object."""
    rng = random.Random(p["seed"])
    ident = rng.randrange(1, 0x10000)
    ic = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    uc = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for s in (ic, uc):
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    uc.connect((p["nic_ip"], p["port"]))
    # The responder is ready when a UDP probe comes back (softspin: the
    # AF_XDP socket is bound; kernel: the echo server listens).
    probes = Tally()
    t_end = time.monotonic() + 10
    while not probes.good and time.monotonic() < t_end:
        udp_run(uc, 0x7FFF0000 + probes.sent, 16, 1, probes, rng)
    if not probes.good:
        print(json.dumps({"error": "no answer to UDP probes for 10 s", "probes": probes.as_dict()}))
        return 1
    res = {"probes": probes.as_dict(), "ident": ident, "runs": []}
    tallies = {"icmp": Tally(), "udp": Tally()}
    seq = {"icmp": 0, "udp": 0}
    for size in p["sizes"]:
        for proto in PROTOS:
            t = tallies[proto]
            before = t.as_dict()
            n = p["warmup"] + p["count"]
            if proto == "icmp":
                rtts = icmp_run(ic, p["nic_ip"], ident, seq[proto], size, n, t, rng)
            else:
                rtts = udp_run(uc, seq[proto], size, n, t, rng)
            seq[proto] += n
            after = t.as_dict()
            delta = {k: after[k] - before[k] for k in after}
            # Warm-up replies are checked like the rest but not timed.
            res["runs"].append({"proto": proto, "size": size, "tally": delta,
                                "rtt_ns": rtts[max(0, len(rtts) - p["count"]):]})
    for proto, s in (("icmp", ic), ("udp", uc)):
        drain(s, tallies[proto], ident if proto == "icmp" else None)
        res[proto] = tallies[proto].as_dict()
    print(json.dumps(res))
    return 0


# ---------------------------------------------------------------- the host side

def build(out=OUT, sabotage=None):
    """The two handler images, the scenario and rules files, the kernel echo
    server. Sabotage proves the checks bite: "checksum" builds icmp_echo_ph
    without its checksum fix (SOFTSPIN_SABOTAGE), so replies are wrong;
    "match" gives the ICMP ruleset FPsPIN's never-true rule, so the kernel
    answers the pings instead of the handler."""
    if not os.path.exists(SOFTSPIN):
        raise SystemExit(f"rtt: {SOFTSPIN} missing: cargo build --release -p softspin-cli")
    os.makedirs(out, exist_ok=True)
    icmp, udp = os.path.join(out, "pp_icmp.elf"), os.path.join(out, "pp_udp.elf")
    run([SOFTSPIN, "build", "--profile", "fpspin", HANDLER, "-o", icmp] + (["-D", "SOFTSPIN_SABOTAGE"] if sabotage == "checksum" else []))
    run([SOFTSPIN, "build", "--profile", "fpspin", HANDLER, "-o", udp,
         "--code-base", SECOND_CODE_BASE, "--data-base", SECOND_DATA_BASE])
    with open(os.path.join(out, "scenario.toml"), "w") as f:
        f.write(f'[[ectx]]\nname = "icmp_echo"\nimage = "{icmp}"\nph = "icmp_echo_ph"\n\n'
                f'[[ectx]]\nname = "udp_echo"\nimage = "{udp}"\nph = "pingpong_ph"\n')
    with open(os.path.join(out, "rules.toml"), "w") as f:
        icmp_match = '["false"]' if sabotage == "match" else '["ip", "icmp"]'
        f.write(f'[[ruleset]]\nname = "icmp"\nmatch = {icmp_match}\nectx = "icmp_echo"\n\n'
                f'[[ruleset]]\nname = "udp_echo"\nmatch = ["ip", "udp", "udp_dport:{UDP_PORT}"]\nectx = "udp_echo"\n')
    server = os.path.join(out, "udp_echo_server")
    run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", server, ECHO_SERVER])
    return out


def snmp(ns):
    """The namespace kernel's protocol counters: {(proto, field): value}."""
    lines = run(in_ns(ns, "cat", "/proc/net/snmp")).stdout.splitlines()
    out = {}
    for head, vals in zip(lines[::2], lines[1::2]):
        proto, keys = head.split(":")
        for k, v in zip(keys.split(), vals.split(":")[1].split()):
            out[(proto, k)] = int(v)
    return out


SNMP_KEYS = [("Icmp", "InEchos"), ("Icmp", "OutEchoReps"), ("Udp", "InDatagrams"), ("Udp", "OutDatagrams")]


def xdp_attached(n):
    out = run(["ip", "-n", n.nic_ns, "-j", "link", "show", n.nic_if]).stdout
    return "xdp" in json.loads(out)[0]


class SoftspinNic:
    """`softspin nic` with both echo ECTXs, stopped with SIGINT; its --json."""

    def __init__(self, n, out, records=False):
        self.n = n
        self.records = os.path.join(out, "records.jsonl") if records else None
        self.p = subprocess.Popen(
            in_ns(n.nic_ns, SOFTSPIN, "nic", "--iface", n.nic_if, "--scenario", os.path.join(out, "scenario.toml"),
                  "--rules", os.path.join(out, "rules.toml"), "--json") + (["--records", self.records] if records else []),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t_end = time.monotonic() + 20
        while not xdp_attached(n):
            if self.p.poll() is not None or time.monotonic() > t_end:
                self.p.kill()
                raise SystemExit(f"rtt: softspin nic did not attach: {self.p.communicate()[1]}")
            time.sleep(0.05)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        out, err = self.p.communicate(timeout=30)
        try:
            st = json.loads(out)
        except json.JSONDecodeError:
            raise SystemExit(f"rtt: softspin nic exited {self.p.returncode} without JSON: {err}")
        st["exit_status"] = self.p.returncode
        st["stderr"] = err
        st["xdp_left_attached"] = xdp_attached(self.n)
        # Per message (here: per frame) NIC time from arrival to the last
        # handler's completion, in arrival order per ECTX.
        st["nic_ns"] = {}
        with open(self.records or os.devnull) as f:
            for line in f:
                r = json.loads(line)
                if r["completion_ns"] is not None:
                    st["nic_ns"].setdefault(r["ectx"], []).append(
                        (r["first_arrival_ns"], r["completion_ns"] - r["first_arrival_ns"]))
        for v in st["nic_ns"].values():
            v.sort()
        return st


class KernelEcho:
    def __init__(self, n, out):
        self.p = subprocess.Popen(in_ns(n.nic_ns, os.path.join(out, "udp_echo_server"), str(UDP_PORT)),
                                  stderr=subprocess.DEVNULL)

    def stop(self):
        self.p.terminate()
        self.p.wait()


def phase(n, out, mode, p, records=False):
    """One softspin or kernel run over every size and protocol; the client's
    result plus who-answered evidence and the problems found; with `records`,
    each softspin request's NIC model time (`nic_model_ns` in its run)."""
    responder = SoftspinNic(n, out, records) if mode == "softspin" else KernelEcho(n, out)
    nic = None
    try:
        before = snmp(n.nic_ns)
        r = run(in_ns(n.peer_ns, sys.executable, os.path.abspath(__file__), "_client", json.dumps(p)), check=False)
        after = snmp(n.nic_ns)
    finally:
        if mode == "softspin":
            nic = responder.stop()
        else:
            responder.stop()
    try:
        res = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"rtt: client failed ({r.returncode}): {r.stdout}{r.stderr}")
    res["mode"] = mode
    res["loadavg1"] = os.getloadavg()[0]
    problems = []
    if "error" in res:
        problems.append(f"{mode}: client: {res['error']}")
        res["problems"] = problems
        return res
    kern = {f"{a} {b}": after[(a, b)] - before[(a, b)] for a, b in SNMP_KEYS}
    res["kernel_snmp_delta"] = kern
    sent = {proto: res[proto]["sent"] for proto in PROTOS}
    for proto in PROTOS:
        t = res[proto]
        for k in ("lost", "bad", "duplicate", "late", "refused"):
            if t[k]:
                problems.append(f"{mode}: {proto}: {t[k]} {k} of {t['sent']}")
        if t["good"] != t["sent"]:
            problems.append(f"{mode}: {proto}: {t['good']} good replies of {t['sent']}")
    if mode == "softspin":
        inv = {h["ectx"]: h["invocations"] for h in nic["handlers"]}
        res["nic"] = {k: nic[k] for k in ("rx_frames", "matched", "passed_to_kernel", "tx_frames", "drops",
                                          "errors", "latency_ns", "packets", "wall_s", "exit_status")}
        res["nic"]["handlers"] = [{k: h[k] for k in ("name", "ectx", "invocations", "cycles_mean", "instructions_mean")}
                                  for h in nic["handlers"]]
        udp_probes = res["probes"]["sent"]
        if inv.get("icmp_echo") != sent["icmp"]:
            problems.append(f"softspin: icmp_echo_ph ran {inv.get('icmp_echo')} times for {sent['icmp']} ICMP requests")
        if not sent["udp"] < inv.get("udp_echo", 0) <= sent["udp"] + udp_probes:
            problems.append(f"softspin: pingpong_ph ran {inv.get('udp_echo')} times for {sent['udp']} UDP requests "
                            f"(+ up to {udp_probes} probes)")
        # icmp_echo_ph's own counters (handler.c): 0 = replies sent (sum:
        # their frame bytes, Ethernet 14 + IPv4 20 + ICMP 8 + data), 1 = frames
        # it ignored.
        ctr = {c["index"]: c for c in nic.get("counters", {}).get("icmp_echo", [])}
        res["nic"]["icmp_echo_counters"] = ctr
        replied = ctr.get(ICMP_CTR_REPLIED, {"count": 0, "sum": 0})
        want_bytes = sum(r_["tally"]["sent"] * (ETH_IP_ICMP + r_["size"]) for r_ in res["runs"] if r_["proto"] == "icmp")
        if replied["count"] != sent["icmp"] or (min(p["sizes"]) >= 18 and replied["sum"] != want_bytes):
            problems.append(f"softspin: icmp_echo_ph counted {replied['count']} replies of {replied['sum']} bytes "
                            f"for {sent['icmp']} requests of {want_bytes} bytes")
        if ctr.get(ICMP_CTR_IGNORED, {"count": 0})["count"]:
            problems.append(f"softspin: icmp_echo_ph ignored {ctr[ICMP_CTR_IGNORED]['count']} frames")
        # The NIC's own time per request, by arrival order: the client sent
        # the UDP probes first, then per size its ICMP run, then its UDP run.
        lat = {"icmp": [x for _, x in nic["nic_ns"].get("icmp_echo", [])],
               "udp": [x for _, x in nic["nic_ns"].get("udp_echo", [])]}
        if not records:
            pass
        elif len(lat["icmp"]) == sent["icmp"] and len(lat["udp"]) == inv.get("udp_echo"):
            pos = {"icmp": 0, "udp": inv["udp_echo"] - sent["udp"]}
            for run_ in res["runs"]:
                k = run_["tally"]["sent"]
                run_["nic_model_ns"] = lat[run_["proto"]][pos[run_["proto"]]:][:k][p["warmup"]:]
                pos[run_["proto"]] += k
        else:
            problems.append(f"softspin: {len(lat['icmp'])}/{len(lat['udp'])} completed message records "
                            f"for {sent['icmp']}/{inv.get('udp_echo')} ICMP/UDP requests")
        if nic["tx_frames"] != sum(inv.values()):
            problems.append(f"softspin: {nic['tx_frames']} frames sent for {sum(inv.values())} handler calls")
        if nic["exit_status"] != 0 or nic["errors"] or any(nic["drops"].values()) or nic["xdp_left_attached"]:
            problems.append(f"softspin nic: exit {nic['exit_status']}, errors {nic['errors']}, drops {nic['drops']}, "
                            f"XDP left attached {nic['xdp_left_attached']}: {nic['stderr'].strip()}")
        # The kernel behind the NIC must not have answered anything.
        if kern["Icmp OutEchoReps"] or kern["Udp OutDatagrams"]:
            problems.append(f"softspin: the NIC namespace's kernel answered too: {kern}")
    else:
        if kern["Icmp OutEchoReps"] != sent["icmp"]:
            problems.append(f"kernel: {kern['Icmp OutEchoReps']} echo replies for {sent['icmp']} requests")
        # The answered probe was echoed too.
        if kern["Udp OutDatagrams"] != sent["udp"] + res["probes"]["good"]:
            problems.append(f"kernel: {kern['Udp OutDatagrams']} UDP datagrams sent for {sent['udp']} requests "
                            f"+ {res['probes']['good']} probe")
    res["problems"] = problems
    return res


def pctl(xs, q):
    xs = sorted(xs)
    return xs[int(q / 100 * (len(xs) - 1) + 0.5)]


def stats(ns_list):
    us = [x / 1000 for x in ns_list]
    if not us:
        return None
    return {"n": len(us), "p50_us": pctl(us, 50), "p99_us": pctl(us, 99), "mean_us": statistics.fmean(us),
            "min_us": min(us), "max_us": max(us)}


def measure(n, count, sizes, rounds, warmup=20, out=OUT, seed=1, log=sys.stderr):
    """Runs `rounds` softspin/kernel pairs on existing namespaces `n`; returns
    (summary, samples) where samples[mode][proto][size] is every RTT in µs."""
    p = {"nic_ip": n.nic_ip, "port": UDP_PORT, "sizes": sizes, "count": count, "warmup": warmup}
    phases = []
    samples = {m: {proto: {s: [] for s in sizes} for proto in PROTOS} for m in MODES}
    rounds_p50 = {m: {proto: {s: [] for s in sizes} for proto in PROTOS} for m in MODES}
    model = {proto: {s: [] for s in sizes} for proto in PROTOS}  # softspin's NIC time (PsPIN model), ns
    for i in range(rounds):
        for mode in (MODES if i % 2 == 0 else MODES[::-1]):
            res = phase(n, out, mode, dict(p, seed=seed * 1000 + i * 2 + (mode == "kernel")))
            res["round"] = i
            for run_ in res.get("runs", []):
                samples[mode][run_["proto"]][run_["size"]] += [x / 1000 for x in run_["rtt_ns"]]
                if run_["rtt_ns"]:
                    rounds_p50[mode][run_["proto"]][run_["size"]].append(pctl(run_["rtt_ns"], 50) / 1000)
                del run_["rtt_ns"]
            phases.append(res)
            print(f"rtt: round {i + 1}/{rounds} {mode:8s} "
                  + ("ok" if not res["problems"] else "; ".join(res["problems"])), file=log)
    # The breakdown phase: checked like the others, its RTTs not pooled.
    res = phase(n, out, "softspin", dict(p, count=min(count, BREAKDOWN_COUNT), seed=seed * 1000 + 999), records=True)
    res["round"] = "breakdown"
    for run_ in res.get("runs", []):
        del run_["rtt_ns"]
        model[run_["proto"]][run_["size"]] += run_.pop("nic_model_ns", [])
    phases.append(res)
    print("rtt: breakdown softspin " + ("ok" if not res["problems"] else "; ".join(res["problems"])), file=log)
    table = []
    for proto in PROTOS:
        for s in sizes:
            row = {"proto": proto, "size": s}
            for m in MODES:
                st = stats([x * 1000 for x in samples[m][proto][s]])
                if st:
                    st["rounds_p50_us"] = rounds_p50[m][proto][s]
                row[m] = st
            # Of softspin's RTT, the time the model charges the NIC (arrival
            # to the handler's completion at FPsPIN's 40 MHz); the rest is
            # the wire (veth), AF_XDP and softspin's loop, and the client's kernel.
            row["softspin_nic_model"] = stats(model[proto][s])
            if row["softspin"] and row["kernel"]:
                row["ratio_p50"] = row["softspin"]["p50_us"] / row["kernel"]["p50_us"]
                row["ratio_mean"] = row["softspin"]["mean_us"] / row["kernel"]["mean_us"]
            table.append(row)
    problems = [x for ph in phases for x in ph["problems"]]
    nic_phases = [ph for ph in phases if ph["mode"] == "softspin" and "nic" in ph]
    summary = {
        "machine": {"cpus": os.cpu_count(), "kernel": os.uname().release, "link": "veth pair between two namespaces"},
        "params": {"count": count, "sizes": sizes, "rounds": rounds, "warmup": warmup, "udp_port": UDP_PORT,
                   "profile": "fpspin", "timing": "SO_TIMESTAMPNS of the reply - CLOCK_REALTIME before sendto"},
        "table": table,
        "checks": {
            "requests": {m: {proto: sum(ph[proto]["sent"] for ph in phases if ph["mode"] == m and proto in ph)
                             for proto in PROTOS} for m in MODES},
            "good_replies": {m: {proto: sum(ph[proto]["good"] for ph in phases if ph["mode"] == m and proto in ph)
                                 for proto in PROTOS} for m in MODES},
            "handler_invocations": {h["ectx"]: sum(x["invocations"] for ph in nic_phases for x in ph["nic"]["handlers"]
                                                   if x["ectx"] == h["ectx"])
                                    for h in (nic_phases[0]["nic"]["handlers"] if nic_phases else [])},
            "nic_tx_frames": sum(ph["nic"]["tx_frames"] for ph in nic_phases),
            "icmp_echo_replies_counted": sum(ph["nic"]["icmp_echo_counters"].get(ICMP_CTR_REPLIED, {"count": 0})["count"]
                                             for ph in nic_phases),
            "kernel_snmp_delta_during_softspin": {k: sum(ph["kernel_snmp_delta"][k] for ph in nic_phases)
                                                  for k in (nic_phases[0]["kernel_snmp_delta"] if nic_phases else [])},
        },
        "nic_latency_ns_p50": [ph["nic"]["latency_ns"]["p50"] for ph in nic_phases],
        "handler_cycles_mean": {h["name"]: h["cycles_mean"] for ph in nic_phases[:1] for h in ph["nic"]["handlers"]},
        "loadavg1": [ph["loadavg1"] for ph in phases],
        "phases": phases,
        "problems": problems,
        "ok": not problems,
    }
    return summary, samples


def text_table(summary):
    rows = ["| proto | payload B | softspin p50 / p99 / mean µs | of which NIC model p50 µs "
            "| kernel p50 / p99 / mean µs | softspin / kernel (p50) |",
            "|---|---:|---:|---:|---:|---:|"]
    for r in summary["table"]:
        f = (lambda s: f"{s['p50_us']:.1f} / {s['p99_us']:.1f} / {s['mean_us']:.1f}" if s else "—")
        ratio = f"{r['ratio_p50']:.2f}" if "ratio_p50" in r else "—"
        name = {"icmp": "ICMP echo", "udp": "UDP echo"}[r["proto"]]
        nm = r.get("softspin_nic_model")
        nm = f"{nm['p50_us']:.1f}" if nm else "—"
        rows.append(f"| {name} | {r['size']} | {f(r['softspin'])} | {nm} | {f(r['kernel'])} | {ratio} |")
    return "\n".join(rows)


def plot(summary, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5.2))
    colors = {("softspin", "icmp"): "C0", ("kernel", "icmp"): "C1", ("softspin", "udp"): "C2", ("kernel", "udp"): "C3"}
    label = {"softspin": "softspin", "kernel": "kernel"}
    what = {"icmp": "ICMP echo", "udp": "UDP echo"}
    for m in MODES:
        for proto in PROTOS:
            rows = [r for r in summary["table"] if r["proto"] == proto and r[m]]
            xs = [r["size"] for r in rows]
            c = colors[(m, proto)]
            style = "-" if m == "softspin" else "--"
            ax.plot(xs, [r[m]["p50_us"] for r in rows], style, marker="o", color=c,
                    label=f"{label[m]} {what[proto]} (p50)")
            ax.plot(xs, [r[m]["p99_us"] for r in rows], style, marker="^", color=c, alpha=0.4, linewidth=1,
                    label=f"{label[m]} {what[proto]} (p99)")
    for proto in PROTOS:
        rows = [r for r in summary["table"] if r["proto"] == proto and r.get("softspin_nic_model")]
        ax.plot([r["size"] for r in rows], [r["softspin_nic_model"]["p50_us"] for r in rows], ":", marker=".",
                color=colors[("softspin", proto)], label=f"of which NIC model, {what[proto]} (p50)")
    ax.set_yscale("log")
    # Plain numbers on the log axis (the default labels only powers of ten).
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter
    ax.yaxis.set_major_locator(FixedLocator([1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000]))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("payload bytes (ICMP data / UDP payload)")
    ax.set_ylabel("round-trip time (µs, log scale)")
    prm = summary["params"]
    ax.set_title(f"Ping-pong over veth: softspin handlers vs the kernel\n"
                 f"({prm['rounds']} round(s) x {prm['count']} per point, one in flight, 2-core VM)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_sizes(s):
    try:
        sizes = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes: '{s}' is not a comma-separated list of integers")
    if not sizes:
        raise argparse.ArgumentTypeError("--sizes: empty")
    for x in sizes:
        if not MIN_PAYLOAD <= x <= MAX_PAYLOAD:
            raise argparse.ArgumentTypeError(
                f"--sizes: {x} out of range {MIN_PAYLOAD}..{MAX_PAYLOAD} (1500-byte MTU, no fragments)")
    return sizes


def positive(name, lo, hi):
    def f(s):
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: '{s}' is not an integer")
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{name}: {v} out of range {lo}..{hi}")
        return v
    return f


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_client"]:
        return client(json.loads(argv[1]))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=positive("--count", 1, 1_000_000), default=1000,
                    help="measured round trips per protocol, size and round (default 1000)")
    ap.add_argument("--warmup", type=positive("--warmup", 0, 100_000), default=20,
                    help="unmeasured (but checked) round trips before each (default 20)")
    ap.add_argument("--sizes", type=parse_sizes, default=DEFAULT_SIZES,
                    help="payload bytes, comma-separated (default 64,256,1024,1472)")
    ap.add_argument("--rounds", type=positive("--rounds", 1, 1000), default=3,
                    help="softspin/kernel pairs, interleaved (default 3)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON instead of the table")
    ap.add_argument("--plot", metavar="PNG", help="write a plot of RTT against payload size")
    ap.add_argument("--samples", metavar="FILE", help="write every RTT (µs) as JSON")
    ap.add_argument("--sabotage", choices=["checksum", "match"],
                    help="prove the checks bite (exit 1): checksum = icmp_echo_ph without its checksum fix "
                         "(wrong replies); match = the ICMP ruleset never matches (the kernel answers)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("rtt: needs root (network namespaces, XDP): sudo .venv/bin/python examples/ping_pong/rtt.py",
              file=sys.stderr)
        return 2
    # Unique per process so parallel runs (tests, benches) do not collide;
    # 2 + 5 digits + "peer" stays within the 15-byte interface name limit.
    n = Names(os.environ.get("SS_NS_PREFIX", f"pp{os.getpid() % 100000}"))
    # SIGTERM/SIGHUP too must reach the finally that removes the namespaces.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: sys.exit(f"rtt: signal {s}"))
    out = os.path.join(OUT, n.prefix)
    try:
        build(out, a.sabotage)
        run([NETNS, "up"], env=n.env)
        summary, samples = measure(n, a.count, a.sizes, a.rounds, a.warmup, out)
    finally:
        run([NETNS, "down"], env=n.env, check=False)
        shutil.rmtree(out, ignore_errors=True)
    if a.samples:
        with open(a.samples, "w") as f:
            json.dump(samples, f)
    if a.plot:
        plot(summary, a.plot)
    if a.json:
        print(json.dumps(summary, indent=1))
    else:
        print(text_table(summary))
        c = summary["checks"]
        print(f"\nrequests {c['requests']}, good replies {c['good_replies']}; softspin handler calls "
              f"{c['handler_invocations']}, NIC frames sent {c['nic_tx_frames']}, kernel replies while softspin "
              f"ran {c['kernel_snmp_delta_during_softspin']}")
        print(f"NIC latency p50 (PsPIN time, fpspin) {summary['nic_latency_ns_p50']} ns; handler cycles "
              f"{summary['handler_cycles_mean']}")
        for x in summary["problems"]:
            print("PROBLEM:", x)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
