#!/usr/bin/env python3
"""slmp_ddt_ph's cost in the PsPIN model: the table of README.md's "Handler
cost in the PsPIN model" (scripts/benchmarks.py --check reruns this and
compares). One message of seed 000's Simple and Complex types (one element
each) in 1462-byte segments, fed in order one at a time to a simulated
FPsPIN NIC (1 GHz HPUs); per segment: the handler's mean cycles and
instructions, its DMAs (counter 14, PIECES) and the bit rate one HPU
sustains at that cost (segment bits / cycles)."""

import importlib.util
import pathlib
import random
import tempfile

import softspin

HERE = pathlib.Path(__file__).resolve().parent
SEGMENT = 1462


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    # The tests' receiver and SLMP segmenter: one definition of each.
    T = _load("slmp_ddt_tests", HERE / "test_slmp_ddt.py")
    with tempfile.TemporaryDirectory() as d:
        img = softspin.build(HERE / "handler.c", pathlib.Path(d) / "slmp_ddt.elf", profile="fpspin")
        print("| type | mode | cycles / segment | instructions | DMAs / segment | per HPU |")
        print("|---|---|---|---|---|---|")
        for name, typ, mode in [("Simple", T.ddt.SIMPLE, 0), ("Complex", T.ddt.COMPLEX, 0),
                                ("Complex", T.ddt.COMPLEX, 1)]:
            t = T.ddt.message(1, typ)
            frames = T.segments(1, random.Random(1).randbytes(t.size), SEGMENT, syn="all")
            r = T.Receiver(img, t, seg=SEGMENT, mode=mode)
            r.feed(frames, batch=1)
            (h,) = r.nic.report()["handlers"]
            dmas = r.counters()[T.PIECES][0] / len(frames)  # (value summed, samples)
            cycles = h["cycles_mean"]
            gbps = SEGMENT * 8 / cycles  # bits per ns at 1 GHz
            print(f"| {name} | {('packet', 'message')[mode]} | {cycles:,.0f} | {h['instructions_mean']:,.0f} "
                  f"| {dmas:.1f} | {gbps:.3g} Gbit/s |")


if __name__ == "__main__":
    main()
