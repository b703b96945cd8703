#!/usr/bin/env python3
"""Host instructions per task of SLMP's receive handler (examples/slmp_recv,
`slmp_ph`) in `softspin sim`: what docs/live.md "Where a segment's cost
goes" measures on the live NIC, without a network. FPsPIN frames of 1 MiB
messages in default-size segments (1462 B, SYN on each, so each is
ACKed), from a pcap, with back-pressure so every segment runs; callgrind
over two run lengths (2 and 8 messages), (I(long) - I(short)) / (long -
short segments), so start-up cancels. Prints the whole run's, the
handler's (`Hpu::run_in`) and the address-space misses' (`load_miss`,
`store_miss`, `xlate_rw`, with the window search they call) and the task's
window setup (`remap`, `move_window`) per segment, for each binary given.

    python3 bench/slmp_task_cost.py target/release/softspin [OTHER/softspin ...]

docs/perf-engine.md "Seventh round" has the figures.
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
from packets import eth, ipv4, udp, write_pcap  # noqa: E402

SEG = 1462  # SLMP_MTU1500_PAYLOAD (sdk/include/slmp.h), the handler's default
MSG = 1 << 20  # the handler's default message stride
SLMP_PORT = 9330
EOM, SYN = 0x8000, 0x4000
RUNS = (2, 8)  # messages (each at most one of the handler's 16 slots)
PARTS = {
    "handler (Hpu::run_in)": ["Hpu::run_in"],
    "address-space misses": ["AddressSpace::load_miss", "AddressSpace::store_miss", "AddressSpace::xlate_rw"],
    "task windows (remap, move_window)": ["AddressSpace::remap", "AddressSpace::move_window"],
}


def frames(messages):
    """Every segment of `messages` messages, in order, as FPsPIN's sender
    puts them on the wire."""
    mac_nic, mac_peer = bytes.fromhex("02000000bb02"), bytes.fromhex("02000000bb01")
    ip_nic, ip_peer = bytes([10, 12, 0, 2]), bytes([10, 12, 0, 1])
    out = []
    for m in range(messages):
        data = bytes((7 * i + m) & 255 for i in range(MSG))
        offs = range(0, MSG, SEG)
        for off in offs:
            flags = SYN | (EOM if off + SEG >= MSG else 0)
            body = struct.pack("!HII", flags, m, off) + data[off:off + SEG]
            out.append(eth(mac_nic, mac_peer, ipv4(ip_peer, ip_nic, 17, udp(ip_peer, ip_nic, 40000, SLMP_PORT, body))))
    return out


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout


def profile(softspin, image, pcap, cfg, tmp):
    """Callgrind's whole-run total and inclusive cost by function name."""
    out = os.path.join(tmp, "callgrind.out")
    run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", softspin, "sim", "--image", image,
         "--ph", "slmp_ph", "--config", cfg, "--host-size", str(16 * MSG), "--pcap", pcap, "--rate", "100",
         "--no-jit", "--json", "--quiet"])
    text = run(["callgrind_annotate", "--auto=no", "--inclusive=yes", "--threshold=100", out])
    total, funcs = None, {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) .*?(PROGRAM TOTALS|[^:\s]+:(\S+) \[[^]]+\])\s*$", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        if m.group(2) == "PROGRAM TOTALS":
            total = n
        else:
            funcs[m.group(3)] = funcs.get(m.group(3), 0) + n
    if total is None:
        sys.exit(f"no total in callgrind_annotate's output for {softspin}")
    return total, funcs


def main():
    bins = sys.argv[1:] or [os.path.join(ROOT, "target", "release", "softspin")]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "nic.toml")
        with open(cfg, "w") as f:
            f.write('profile = "fpspin"\nbuffer_full = "backpressure"\n')
        segs = []
        for n in RUNS:
            fr = frames(n)
            write_pcap(os.path.join(tmp, f"m{n}.pcap"), fr)
            segs.append(len(fr))
        image = os.path.join(tmp, "slmp_recv.elf")
        run([bins[0], "build", "--profile", "fpspin", os.path.join(ROOT, "examples", "slmp_recv", "handler.c"),
             "-o", image])
        d = segs[1] - segs[0]
        print(f"host instructions per SLMP segment (callgrind, ({segs[1]} - {segs[0]} segments), `sim --no-jit`):")
        for b in bins:
            (t0, f0), (t1, f1) = (profile(b, image, os.path.join(tmp, f"m{n}.pcap"), cfg, tmp) for n in RUNS)
            print(f"  {b}")
            print(f"    whole run: {(t1 - t0) / d:,.0f}")
            for part, names in PARTS.items():
                per = sum(f1.get(k, 0) - f0.get(k, 0) for k in f1 if any(k.endswith(x) for x in names)) / d
                print(f"    {part}: {per:,.0f}")


if __name__ == "__main__":
    main()
