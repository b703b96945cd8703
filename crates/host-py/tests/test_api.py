"""The Python host API: success paths, zero-copy lending, events, report,
notifications, and every error path as a typed exception."""

import ast
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest

import softspin
from conftest import ROOT, build

sys.path.insert(0, str(ROOT / "tests" / "py"))
from packets import write_pcap  # noqa: E402

HDR = 28  # PsPIN IP-first frame: IP + UDP headers before the payload


def payload(i, extra=b""):
    return struct.pack("<I", i) + extra


def open_with(img_path, ph, **kw):
    nic = softspin.Nic("pspin")
    img = nic.load_image(img_path)
    e = nic.install(img, ph=ph, **kw)
    nic.activate(e)
    return nic, img, e


def kinds(events, cls):
    return [e for e in events if isinstance(e, cls)]


# ------------------------------------------------------------------ NIC


def test_profiles_and_config(tmp_path):
    assert softspin.Nic().hpu_count == 32
    f = softspin.Nic("fpspin")
    assert (f.profile, f.hpu_count) == ("fpspin", 16)
    assert f.config()["clusters"] == 2
    cfg = tmp_path / "nic.toml"
    cfg.write_text('profile = "fpspin"\nmpqs = 4\n')
    n = softspin.Nic.from_config(cfg)
    assert n.config()["mpqs"] == 4 and n.profile == "fpspin"
    assert "pspin" in repr(softspin.Nic())


def test_bad_profile_and_config(tmp_path):
    with pytest.raises(softspin.ConfigError, match="unknown profile `nope`"):
        softspin.Nic("nope")
    with pytest.raises(softspin.IoError, match="missing.toml"):
        softspin.Nic.from_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("mpqs = 0\n")
    with pytest.raises(softspin.ConfigError, match="mpqs"):
        softspin.Nic.from_config(bad)
    bad.write_text("no_such_field = 1\n")
    with pytest.raises(softspin.ConfigError):
        softspin.Nic.from_config(bad)


KINDS = ["InvalidArgumentError", "LimitError", "ConfigError", "IoError", "ImageError", "SymbolError",
         "OverlapError", "NicMemoryError", "HostMemoryError", "StateError", "NoEctxError", "EctxError",
         "TrafficError", "SimError", "BuildError", "NetError"]


def test_exception_hierarchy():
    # One class per softspin_host::ErrorKind, each directly under softspin.Error.
    for name in KINDS:
        cls = getattr(softspin, name)
        assert cls.__bases__ == (softspin.Error,), name
    assert issubclass(softspin.Error, Exception)
    assert softspin.SoftspinError is softspin.Error
    # Refinements of a kind: a subclass of that kind's class.
    # ThreadError is the binding's own (a Nic used off its thread).
    refinements = {"SlmpGaveUpError": softspin.NetError, "ThreadError": softspin.Error}
    for name, base in refinements.items():
        assert getattr(softspin, name).__bases__ == (base,), name
    names = {n for n in dir(softspin) if n.endswith("Error") and n not in ("Error", "SoftspinError", "HandlerError")}
    assert names == set(KINDS) | set(refinements)


# ------------------------------------------------------------------ images


def test_image_symbols(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    assert img.path == str(handlers_elf)
    assert img.symbol("echo_ph") == img.symbols()["echo_ph"]
    assert 0x1D000000 <= img.symbol("echo_ph") < 0x1E000000
    assert nic.image_from_bytes(handlers_elf.read_bytes()).symbol("echo_ph") == img.symbol("echo_ph")
    with pytest.raises(softspin.SymbolError, match="nope"):
        img.symbol("nope")


def test_bad_image_path(tmp_path):
    with pytest.raises(softspin.IoError, match="does_not_exist.elf"):
        softspin.Nic().load_image(tmp_path / "does_not_exist.elf")


def test_non_elf_file(tmp_path):
    p = tmp_path / "junk.elf"
    p.write_bytes(b"this is not an ELF file at all" * 10)
    with pytest.raises(softspin.ImageError):
        softspin.Nic().load_image(p)
    with pytest.raises(softspin.ImageError):
        softspin.Nic().image_from_bytes(b"\x7fELF")


def test_build_function(tmp_path):
    src = tmp_path / "h.c"
    src.write_text("#include <spin.h>\n__handler__ void x_ph(handler_args_t *a) { (void)a; }\n")
    out = softspin.build(src, tmp_path / "h.elf", profile="fpspin")
    assert pathlib.Path(out).is_file()
    assert softspin.Nic("fpspin").load_image(out).symbol("x_ph")
    # Built for 2 clusters: the PsPIN NIC (4) refuses it.
    nic = softspin.Nic("pspin")
    with pytest.raises(softspin.EctxError, match="NB_CLUSTERS=2"):
        nic.install(nic.load_image(out), ph="x_ph")
    src.write_text("#include <spin.h>\n#if X != 3\n#error X\n#endif\n__handler__ void y_ph(handler_args_t *a) { (void)a; }\n")
    assert softspin.Nic().load_image(softspin.build([src], tmp_path / "y.elf", define=["X=3"], cflags=["-O2"])).symbol("y_ph")
    with pytest.raises(softspin.BuildError):
        softspin.build([src], tmp_path / "bad.elf", define=["X=4"])
    src.write_text("this is not C\n")
    with pytest.raises(softspin.BuildError):
        softspin.build([src], tmp_path / "bad.elf")
    with pytest.raises(softspin.BuildError, match="no such source"):
        softspin.build(tmp_path / "missing.c", tmp_path / "m.elf")
    with pytest.raises(softspin.ConfigError):
        softspin.build(src, tmp_path / "p.elf", profile="nope")


# ------------------------------------------------------------------ ECTX lifecycle


def test_unknown_handler_symbol(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    with pytest.raises(softspin.SymbolError, match="missing_ph"):
        nic.install(img, ph="missing_ph")
    with pytest.raises(softspin.EctxError, match="at least one"):
        nic.install(img)


def test_overlapping_memory(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    nic.install(img, ph="echo_ph", name="first")
    with pytest.raises(softspin.OverlapError, match="overlaps ECTX `first`"):
        nic.install(img, ph="echo_ph", name="second")


def test_lifecycle_errors(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    e = nic.install(img, ph="echo_ph", name="life")
    assert (e.name, e.id) == ("life", 0)
    with pytest.raises(softspin.StateError, match="not active"):
        nic.deactivate(e)
    nic.activate(e)
    with pytest.raises(softspin.StateError, match="already active"):
        nic.activate(e)
    with pytest.raises(softspin.StateError):
        nic.uninstall(e)  # still active
    nic.deactivate(e)
    nic.uninstall(e)
    for call in (nic.activate, nic.deactivate, nic.uninstall, nic.ectx_counts, nic.counters):
        with pytest.raises(softspin.NoEctxError, match="uninstalled"):
            call(e)
    with pytest.raises(softspin.NoEctxError):
        nic.send_message(e, 0, b"x")
    # The memory is free again; handles are never reused.
    e2 = nic.install(img, ph="echo_ph")
    assert e2.id == 1 and e2 != e and e2.name == "ectx1"


def test_ectx_of_another_nic(handlers_elf):
    a, _, e = open_with(handlers_elf, "echo_ph")
    b = softspin.Nic()
    b.install(b.load_image(handlers_elf), ph="echo_ph")
    with pytest.raises(softspin.NoEctxError, match="another NIC"):
        b.activate(e)


def test_install_options(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    w = nic.host_window(4096)
    e = nic.install(img, ph="echo_ph", hh=None, th=None, host_window=w, handler_mem_size=1 << 16,
                    l1_copy=64, scratchpad=1024, watchdog=10_000, msg_timeout_ns=0,
                    udp_dst_port=7000, name="opts", frame="eth")
    assert e.name == "opts"
    with pytest.raises(softspin.LimitError, match="scratchpad"):
        softspin.Nic().install(img, ph="echo_ph", scratchpad=[1 << 30])
    with pytest.raises(softspin.InvalidArgumentError, match="frame kind"):
        nic.install(img, ph="echo_ph", frame="atm")
    with pytest.raises(softspin.InvalidArgumentError):
        nic.set_frame_kind(e, "atm")


# ------------------------------------------------------------------ host memory


def test_host_window_read_write():
    nic = softspin.Nic()
    w = nic.host_window(4096)
    assert w.size == 4096 and w.buffer is None
    nic.host_write(w.base + 8, b"data")
    nic.host_write(w.base + 12, bytearray(b"more"))
    assert nic.host_read(w.base + 8, 8) == b"datamore"
    w2 = nic.host_window(16)
    assert w2.base >= w.base + 4096


def test_host_read_outside_windows():
    nic = softspin.Nic()
    w = nic.host_window(4096)
    with pytest.raises(softspin.HostMemoryError, match="not in a window"):
        nic.host_read(w.base + 4095, 2)
    with pytest.raises(softspin.HostMemoryError):
        nic.host_read(0x1234, 1)
    with pytest.raises(softspin.HostMemoryError):
        nic.host_write(w.base - 1, b"xx")
    with pytest.raises(softspin.HostMemoryError, match="at least one byte"):
        nic.host_window(0)
    nic.unlend(w)
    with pytest.raises(softspin.HostMemoryError):
        nic.host_read(w.base, 1)
    with pytest.raises(softspin.HostMemoryError, match="no host window"):
        nic.unlend(w)


def test_lend_rejects():
    nic = softspin.Nic()
    with pytest.raises(softspin.HostMemoryError, match="read-only"):
        nic.lend(b"immutable bytes")
    ro = np.zeros(16, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(softspin.HostMemoryError, match="read-only"):
        nic.lend(ro)
    with pytest.raises(softspin.HostMemoryError, match="non-contiguous"):
        nic.lend(np.zeros(64, np.uint8)[::2])
    with pytest.raises(TypeError):
        nic.lend(np.zeros(16, np.float64))
    with pytest.raises(TypeError):
        nic.lend(12)
    with pytest.raises(softspin.HostMemoryError):
        nic.lend(bytearray())


def test_lend_pins_the_buffer():
    nic = softspin.Nic()
    b = bytearray(128)
    w = nic.lend(b)
    assert w.buffer is b and w.size == 128
    with pytest.raises(BufferError):
        b.extend(b"x")
    arr = np.zeros(64, np.uint8)
    nic.lend(arr)
    with pytest.raises(ValueError):
        arr.resize(10)
    nic.unlend(w)
    b.extend(b"x")  # released
    assert len(b) == 129
    # The NIC keeps a lent object alive.
    w3 = nic.lend(bytearray(b"\x05" * 32))
    import gc
    gc.collect()
    assert nic.host_read(w3.base, 4) == b"\x05" * 4


def test_lend_is_zero_copy_to_host(handlers_elf):
    """A handler's DMA to host lands in the numpy array: no read call."""
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    arr = np.zeros(8 * 256, np.uint8)
    w = nic.lend(arr)
    e = nic.install(img, ph="dma_ph", host_window=w)
    nic.activate(e)
    sent = {}
    for i in range(8):
        body = payload(i, bytes((i * 7 + k) & 0xFF for k in range(20 + 10 * i)))
        sent[i] = body
        nic.send_message(e, i, body, 1024)
    nic.run_until_idle()
    for i, body in sent.items():
        pkt = arr[i * 256:i * 256 + HDR + len(body)].tobytes()
        assert pkt[HDR:] == body
        assert pkt[0] == 0x54  # PsPIN IP-first header
        assert not arr[i * 256 + HDR + len(body):(i + 1) * 256].any()
    assert nic.report()["dma_to_host_bytes"] == sum(HDR + len(b) for b in sent.values())


def test_lend_is_zero_copy_from_host(handlers_elf):
    """Bytes the host stores into the array are what dma_from_host reads."""
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    buf = bytearray(4 * 64)
    w = nic.lend(buf)
    e = nic.install(img, ph="fromhost_ph", host_window=w)
    nic.activate(e)
    for i in range(4):
        buf[i * 64:(i + 1) * 64] = bytes((i * 31 + k * 3) & 0xFF for k in range(64))
    for i in range(4):
        nic.send_message(e, i, payload(i, bytes(60)), 128)  # room for 64 bytes
    nic.run_until_idle()
    out = sorted((p.frame for p in kinds(nic.events(), softspin.OutboundPacket)))
    assert out == sorted(bytes(buf[i * 64:(i + 1) * 64]) for i in range(4))


def test_host_array(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    w = nic.host_array(4096)
    assert isinstance(w.buffer, np.ndarray) and w.buffer.dtype == np.uint8 and w.buffer.size == 4096
    e = nic.install(img, ph="hostwrite_ph", host_window=w)
    nic.activate(e)
    for i in range(5):
        nic.send_message(e, i, payload(i), 64)
    nic.run_until_idle()
    assert list(w.buffer.view("<u8")[:5]) == [i * 1000 + 7 for i in range(5)]


# ------------------------------------------------------------------ NIC memory


def test_handler_mem_of_its_own(handlers_elf):
    """PsPIN's layout: one image, two ECTXs, each with handler memory of its own."""
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    base = (img.data_end + 4095) // 4096 * 4096
    a = nic.install(img, ph="hmem_count_ph", handler_mem_addr=base, handler_mem_size=4096, udp_dst_port=9001)
    b = nic.install(img, ph="hmem_count_ph", handler_mem_addr=base + 4096, handler_mem_size=4096, udp_dst_port=9002)
    nic.activate(a)
    nic.activate(b)
    nic.send_message(a, 1, bytes(5 * 64), 64 + 28)
    nic.send_message(b, 2, bytes(3 * 64), 64 + 28)
    nic.run_until_idle()
    word = lambda addr: struct.unpack("<I", nic.nic_read(addr, 4))[0]
    assert (word(base), word(base + 4096)) == (5, 3)
    assert word(img.symbol("all_packets")) == 8
    with pytest.raises(softspin.OverlapError, match="overlaps ECTX"):
        nic.install(img, ph="hmem_count_ph", handler_mem_addr=base + 2048, handler_mem_size=4096)


def test_nic_memory(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    e = nic.install(img, ph="echo_ph", handler_mem_size=1 << 12)
    a = nic.nic_alloc(e, 100, 64)
    b = nic.nic_alloc(e, 16)
    assert a % 64 == 0 and b >= a + 100 and b % 8 == 0
    nic.nic_write(a, b"hello NIC")
    assert nic.nic_read(a, 9) == b"hello NIC"
    nic.nic_write_ptr(b, a)
    assert struct.unpack("<I", nic.nic_read(b, 4))[0] == a
    with pytest.raises(softspin.NicMemoryError, match="handler_mem_size"):
        nic.nic_alloc(e, 1 << 20)
    with pytest.raises(softspin.NicMemoryError, match="power of two"):
        nic.nic_alloc(e, 4, 3)
    with pytest.raises(softspin.NicMemoryError, match="not NIC memory"):
        nic.nic_read(0x40, 4)
    with pytest.raises(softspin.NicMemoryError):
        nic.nic_write(0xFFFFFFF0, b"x" * 32)


# ------------------------------------------------------------------ traffic and events


def test_events_echo(handlers_elf):
    nic, _, e = open_with(handlers_elf, "echo_ph")
    frames = []
    for i in range(6):
        nic.send_message(e, 100 + i, payload(i, b"ping" * i), 512)
    nic.run_until_idle()
    ev = nic.events()
    out = kinds(ev, softspin.OutboundPacket)
    done = kinds(ev, softspin.MessageDone)
    assert len(out) == 6 and len(done) == 6
    assert sorted(d.msg_id for d in done) == list(range(100, 106))
    for o in out:
        assert o.ectx == e and o.dest == 0 and o.time_ns == o.time_ps / 1000
        i = struct.unpack_from("<I", o.frame, HDR)[0]
        assert o.frame[HDR:] == payload(i, b"ping" * i)
        frames.append(o.frame)
    assert [d.time_ns for d in done] == sorted(d.time_ns for d in done)
    assert all(d.ectx == e for d in done)
    assert nic.events() == []  # drained
    # send_packet takes those frames back unchanged
    for k, f in enumerate(frames):
        nic.send_packet(f, msg_id=k, eom=True)
    nic.send_packet(bytearray(frames[0]), 99)
    nic.run_until_idle()
    assert sorted(o.frame for o in kinds(nic.events(), softspin.OutboundPacket)) == sorted(frames + [frames[0]])
    assert nic.ectx_counts(e) == (13, 13)


def test_message_split_and_eth_frames(handlers_elf):
    nic, _, e = open_with(handlers_elf, "echo_ph", frame="eth")
    nic.send_message(e, 1, bytes(range(256)) * 10, 1024)  # 2560 B in 3 packets of <= 1024-42
    nic.run_until_idle()
    out = kinds(nic.events(), softspin.OutboundPacket)
    assert len(out) == 3
    body = b"".join(o.frame[42:] for o in sorted(out, key=lambda o: o.time_ps))
    assert body == bytes(range(256)) * 10
    assert all(o.frame[12:14] == b"\x08\x00" for o in out)
    with pytest.raises(softspin.InvalidArgumentError, match="no room"):
        nic.send_message(e, 2, b"x", 42)


def test_host_writes_and_handler_errors(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    w = nic.host_window(1024)
    hw = nic.install(img, ph="hostwrite_ph", host_window=w, udp_dst_port=7000, name="hw")
    nic.activate(hw)
    nic.send_message(hw, 0, payload(3), 64)
    nic.run_until_idle()
    ev = kinds(nic.events(), softspin.HostWrite)
    assert [(x.addr, x.value, x.ectx) for x in ev] == [(w.base + 24, 3007, hw)]
    assert struct.unpack("<Q", nic.host_read(w.base + 24, 8))[0] == 3007

    nic.deactivate(hw)
    nic.uninstall(hw)
    f = nic.install(img, ph="fault_ph", name="faulty")
    nic.activate(f)
    for i in range(6):
        nic.send_message(f, i, payload(i), 64)
    nic.run_until_idle()
    errs = kinds(nic.events(), softspin.HandlerError)
    assert len(errs) == 3
    for x in errs:
        assert x.ectx == f and x.ectx_name == "faulty" and x.handler.endswith("fault_ph") and x.addr == 0x40
        assert x.kind == "store_access"
        assert "store" in x.cause and 0 <= x.hpu < 32 and x.pc >= 0x1D000000
    r = nic.report()
    assert r["errors"][0]["ectx"] == "faulty" and r["errors"][0]["total"] == 3
    assert len(r["error_details"]) == 3
    assert struct.unpack("<i", nic.nic_read(img.symbol("good"), 4))[0] == 3


def test_every_handler_error_becomes_an_event(handlers_elf):
    """Issue 24: three rounds of 600 faulting packets give 600 HandlerError
    events each (the engine keeps the details of only its first 1000)."""
    nic, _, f = open_with(handlers_elf, "fault_ph", name="faulty")
    total = 0
    for rnd in range(3):
        ids = [rnd * 600 + k for k in range(600)]
        for m in ids:
            nic.send_message(f, m, payload(1), 64)  # odd index: a store fault
        nic.run_until_idle()
        errs = kinds(nic.events(), softspin.HandlerError)
        assert len(errs) == 600, f"round {rnd}"
        assert sorted(x.msg_id for x in errs) == ids
        assert all(x.ectx == f and x.kind == "store_access" for x in errs)
        total += len(errs)
    assert total == 1800
    assert nic.report()["errors"][0]["total"] == 1800


def test_errors_left_untaken_are_counted_in_errors_dropped(handlers_elf):
    """1500 errors between two calls of events(): the first 1000 and the
    latest 100 in detail, an ErrorsDropped(count=400) between them."""
    nic, _, f = open_with(handlers_elf, "fault_ph")
    for m in range(1500):
        nic.send_message(f, m, payload(1), 64)
    nic.run_until_idle()
    ev = nic.events()
    gap = [k for k, x in enumerate(ev) if isinstance(x, softspin.ErrorsDropped)]
    assert len(gap) == 1 and ev[gap[0]].count == 400
    before = [x.msg_id for x in ev[: gap[0]] if isinstance(x, softspin.HandlerError)]
    after = [x.msg_id for x in ev[gap[0] + 1 :] if isinstance(x, softspin.HandlerError)]
    assert before == list(range(1000)) and after == list(range(1400, 1500))
    assert nic.report()["errors"][0]["total"] == 1500


def test_report_keys(handlers_elf):
    nic, _, e = open_with(handlers_elf, "echo_ph")
    nic.feed_generator(messages=10, packets=4, size=256)
    nic.run_until_idle()
    r = nic.report()
    for k in ["profile", "packets", "bytes", "packets_in", "unmatched", "throughput_gbps", "mpps",
              "latency_ns", "drops", "backpressure_ns", "mpq_stall_ns", "hpu_utilization",
              "hpus_busy_max", "handlers", "errors", "error_details", "message_timeouts",
              "outbound_packets", "outbound_bytes", "host_writes", "dma_to_host_bytes",
              "dma_from_host_bytes", "commands", "tasks", "sim_time_ns"]:
        assert k in r, k
    assert set(r["latency_ns"]) == {"min", "mean", "p50", "p99", "max"}
    assert r["packets"] == 40 and r["bytes"] == 40 * 256 and r["outbound_packets"] == 40
    assert r["throughput_gbps"] > 0 and 0 < r["hpu_utilization"] <= 1
    (h,) = r["handlers"]
    for k in ["name", "invocations", "cycles_min", "cycles_mean", "cycles_max", "instructions_mean",
              "loads_mean", "stores_mean", "l1_accesses_mean", "l1_remote_accesses_mean",
              "l2_accesses_mean", "faults"]:
        assert k in h, k
    assert h["invocations"] == 40 and h["kind"] == "payload"
    assert "throughput" in nic.report_text()
    assert len(kinds(nic.events(), softspin.MessageDone)) == 10


def test_feed_generator_options_and_errors(handlers_elf):
    nic, _, e = open_with(handlers_elf, "echo_ph")
    nic.feed_generator(messages=3, packets=2, size=100, rate_gbps=10.0, frame="eth", concurrent=3,
                       payload="random", seed=7, first_msg_id=50, udp_dst_port=9000, udp_src_port=1)
    nic.run_until_idle()
    ev = nic.events()
    assert sorted(d.msg_id for d in kinds(ev, softspin.MessageDone)) == [50, 51, 52]
    f = kinds(ev, softspin.OutboundPacket)[0].frame
    assert len(f) == 100 and f[34:38] == struct.pack(">HH", 1, 9000)
    with pytest.raises(softspin.TrafficError, match="size"):
        nic.feed_generator(size=10)
    with pytest.raises(softspin.TrafficError, match="rate"):
        nic.feed_generator(rate_gbps=-1.0)
    with pytest.raises(softspin.InvalidArgumentError, match="payload"):
        nic.feed_generator(payload="bogus")
    with pytest.raises(softspin.InvalidArgumentError):
        nic.feed_generator(frame="x")


def test_feed_trace(handlers_elf, tmp_path):
    nic, _, e = open_with(handlers_elf, "echo_ph")
    t = tmp_path / "t.trace"
    t.write_text("# src dst size ipg msgid is_last\n1 2 128 10 0 0\n1 2 256 10 0 1\n10.0.0.3 2 64 5.5 1 1\n")
    nic.feed_trace(t)
    nic.run_until_idle()
    out = kinds(nic.events(), softspin.OutboundPacket)
    assert sorted(len(o.frame) for o in out) == [64, 128, 256]
    bad = tmp_path / "bad.trace"
    bad.write_text("1 2 notanumber 10 0 1\n")
    with pytest.raises(softspin.TrafficError, match="bad.trace:1"):
        nic.feed_trace(bad)
    with pytest.raises(softspin.IoError, match="missing.trace"):
        nic.feed_trace(tmp_path / "missing.trace")
    with pytest.raises(softspin.InvalidArgumentError):
        nic.feed_trace(t, frame="x")


def eth_frame(n, i):
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, n - 14, 0, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    udp = struct.pack(">HHHH", 5, 6, n - 34, 0)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp + bytes([i]) * (n - 42)


def test_feed_pcap(handlers_elf, tmp_path):
    nic, _, e = open_with(handlers_elf, "echo_ph")
    p = tmp_path / "in.pcap"
    frames = [eth_frame(60 + 10 * i, i) for i in range(4)]
    write_pcap(p, frames, gap_us=1)
    nic.feed_pcap(p)
    nic.run_until_idle()
    assert sorted(o.frame for o in kinds(nic.events(), softspin.OutboundPacket)) == sorted(frames)
    nic.feed_pcap(p, rate_gbps=100.0)
    nic.run_until_idle()
    assert len(kinds(nic.events(), softspin.OutboundPacket)) == 4
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a pcap file")
    with pytest.raises(softspin.TrafficError, match="junk.pcap"):
        nic.feed_pcap(junk)


def test_oversized_packet_is_refused_at_the_call(handlers_elf):
    nic, _, e = open_with(handlers_elf, "echo_ph")
    slot = nic.config()["pkt_slot_size"]
    with pytest.raises(softspin.LimitError, match=f"{slot + 1} bytes.*pkt_slot_size {slot}"):
        nic.send_packet(bytes(slot + 1))
    # Nothing was queued: the next run is clean.
    nic.run_until_idle()
    assert nic.report()["packets_in"] == 0


def test_nic_from_another_thread_is_a_softspin_error():
    import threading

    nic = softspin.Nic()
    got = []

    def other():
        for call in (lambda: nic.now_ns, lambda: nic.run_for(10), lambda: repr(nic)):
            try:
                call()
                got.append(None)
            except BaseException as e:  # a PanicException is no Exception
                got.append(e)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(got) == 3
    for e in got:
        assert isinstance(e, softspin.ThreadError), repr(e)
        assert isinstance(e, softspin.Error)
        assert "thread that created it" in str(e)
    # Its own thread still uses it.
    nic.run_for(10)
    assert nic.now_ns == pytest.approx(10)


def test_run_for_and_time(handlers_elf):
    nic, _, e = open_with(handlers_elf, "echo_ph")
    assert nic.now_ns == 0
    nic.send_message(e, 0, payload(0), 64)
    nic.run_for(5)
    assert nic.now_ns == pytest.approx(5)
    assert nic.events() == []  # not done yet
    nic.run_until_idle()
    (done,) = kinds(nic.events(), softspin.MessageDone)
    assert nic.now_ns == done.time_ns and nic.report()["packets"] == 1


def test_run_for_advances_an_idle_clock():
    nic = softspin.Nic()
    nic.run_for(1000)
    assert nic.now_ns == pytest.approx(1000)


def test_stdout_and_counters(handlers_elf):
    nic, _, e = open_with(handlers_elf, "print_ph")
    for i in range(4):
        nic.send_message(e, i, payload(i + 1), 64)
    nic.run_until_idle()
    text = "".join(nic.hpu_stdout(h) for h in range(nic.hpu_count))
    assert sorted(text.splitlines()) == [f"packet {i}" for i in range(1, 5)]
    assert nic.counters(e) == [(3, 1 + 2 + 3 + 4, 4)]
    with pytest.raises(softspin.InvalidArgumentError, match="no HPU 32"):
        nic.hpu_stdout(32)
    with pytest.raises(OverflowError):
        nic.hpu_stdout(-1)


# ------------------------------------------------------------------ notifications


def answer(req):
    (q,) = struct.unpack("<I", req.data)
    return q * q + 1


def test_notifications_iterator(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    arr = np.zeros(64, np.uint64)  # 8-byte slots, lent as bytes
    w = nic.lend(arr.view(np.uint8))
    e = nic.install(img, ph="notify_ph", host_window=w)
    nic.activate(e)
    n = 6
    for i in range(n):
        nic.send_message(e, i, payload(i), 64)
    seen = []
    for req in nic.notifications():
        assert req.ectx == e and len(req.data) == 4 and 0 <= req.hpu < 32
        seen.append(struct.unpack("<I", req.data)[0])
        if req.host_ref:
            assert req.host_ref == w.base + 8 * (seen[-1] - 100)
        nic.respond(req.id, answer(req))
    assert sorted(seen) == sorted(list(range(n)) + [100 + i for i in range(n)])
    for i in range(n):
        assert int(arr[i]) == (i * i + 1) | (((100 + i) ** 2 + 1) << 32)
    with pytest.raises(softspin.InvalidArgumentError, match="no notification"):
        nic.respond(987654, 1)
    assert nic.report()["packets"] == n


def test_poll_and_wait_notifications(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    w = nic.host_window(64)
    e = nic.install(img, ph="notify_ph", host_window=w)
    nic.activate(e)
    assert nic.poll_notifications() == []
    nic.send_message(e, 0, payload(5), 64)
    got = nic.wait_notifications()
    assert got and all(isinstance(r, softspin.Notification) for r in got)
    first = got[0]
    nic.respond(first.id, 1)
    with pytest.raises(softspin.InvalidArgumentError, match="already answered"):
        nic.respond(first.id, 2)
    pending = got[1:]
    while len(pending) < 1:
        pending += nic.wait_notifications()
    for r in pending:
        nic.respond(r.id, 2)
    nic.run_until_idle()
    assert nic.poll_notifications() == []
    assert nic.wait_notifications() == []  # idle, nothing pending
    assert nic.host_read(w.base + 40, 8) == struct.pack("<Q", 1 | (2 << 32))


# ------------------------------------------------------------------ stubs


def test_stubs_match_module():
    pkg = pathlib.Path(softspin.__file__).parent
    assert (pkg / "py.typed").exists()
    tree = ast.parse((pkg / "__init__.pyi").read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            cls = getattr(softspin, node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("__"):
                    assert hasattr(cls, item.name), f"{node.name}.{item.name}"
        elif isinstance(node, ast.FunctionDef):
            assert callable(getattr(softspin, node.name))
    for name in softspin.__all__:
        assert getattr(softspin, name).__doc__, name


def test_docstrings():
    for cls in [softspin.Nic, softspin.Image, softspin.HostWindow, softspin.Ectx]:
        for name, member in vars(cls).items():
            if not name.startswith("_") and callable(member):
                assert member.__doc__, f"{cls.__name__}.{name}"


# ------------------------------------------------------------------ the boundary


def test_absurd_sizes_are_exceptions_not_crashes(handlers_elf):
    nic = softspin.Nic()
    with pytest.raises(softspin.LimitError, match="MAX_HOST_WINDOW"):
        nic.host_window(10**12)
    with pytest.raises(softspin.LimitError, match="MAX_HOST_WINDOW"):
        nic.host_array(10**12)
    w = nic.host_window(4096)
    with pytest.raises(softspin.HostMemoryError):
        nic.host_read(w.base, 2**40)
    with pytest.raises(softspin.HostMemoryError):
        nic.host_read(0, 2**40)
    img = nic.load_image(handlers_elf)
    e = nic.install(img, ph="echo_ph", handler_mem_size=4096)
    a = nic.nic_alloc(e, 16)
    # (2**32 + 16) truncated to 32 bits is 16: read, then a panic, before.
    with pytest.raises(softspin.NicMemoryError):
        nic.nic_read(a, 2**32 + 16)
    with pytest.raises(softspin.LimitError, match="NIC address"):
        nic.nic_read(2**32, 4)
    with pytest.raises(softspin.NicMemoryError):
        nic.nic_alloc(e, 2**40)
    with pytest.raises(softspin.LimitError, match="handler_mem_size"):
        nic.install(img, ph="echo_ph", handler_mem_size=2**32, name="big")
    with pytest.raises(softspin.LimitError, match="packet_size"):
        nic.send_message(e, 0, b"x", packet_size=2**40)
    with pytest.raises(softspin.LimitError):
        nic.run_for(2**64 - 1)
    # Still usable.
    nic.host_write(w.base, b"ok")
    assert nic.host_read(w.base, 2) == b"ok"
    assert nic.nic_read(a, 4) == bytes(4)


def test_windows_of_another_nic_are_refused(handlers_elf):
    a, b = softspin.Nic(), softspin.Nic()
    wa, wb = a.host_window(4096), b.host_window(4096)
    assert (wa.base, wa.size) == (wb.base, wb.size)  # same address, different memory
    with pytest.raises(softspin.HostMemoryError, match="another NIC"):
        b.install(b.load_image(handlers_elf), ph="echo_ph", host_window=wa)
    with pytest.raises(softspin.HostMemoryError, match="another NIC"):
        b.unlend(wa)
    b.install(b.load_image(handlers_elf), ph="echo_ph", host_window=wb)


def test_events_name_the_ectx_after_its_slot_is_reused(handlers_elf):
    nic = softspin.Nic()
    img = nic.load_image(handlers_elf)
    first = nic.install(img, ph="echo_ph", name="first")
    nic.activate(first)
    nic.send_message(first, 1, b"abc", 64)
    nic.run_until_idle()
    nic.deactivate(first)
    nic.uninstall(first)
    second = nic.install(img, ph="echo_ph", name="second")
    nic.activate(second)
    nic.send_message(second, 2, b"def", 64)
    nic.run_until_idle()
    done = {d.msg_id: d.ectx for d in kinds(nic.events(), softspin.MessageDone)}
    assert done == {1: first, 2: second}


def test_a_memory_limit_is_an_exception_not_an_abort():
    # Under ulimit -v 1000000 (1 GB) the allocations fail: exceptions, no abort.
    code = (
        "import softspin\n"
        "nic = softspin.Nic()\n"
        "try:\n    nic.host_window(3 << 30)\nexcept softspin.LimitError as e:\n    print('limit:', e)\n"
        "try:\n    nic.host_array(3 << 30)\nexcept MemoryError:\n    print('memory')\n"
        "w = nic.host_window(64)\nnic.host_write(w.base, b'ok')\nprint(nic.host_read(w.base, 2))\n"
    )
    r = subprocess.run(["sh", "-c", 'ulimit -v 1000000 && exec "$0" -c "$1"', sys.executable, code],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [r.stdout.splitlines()[0], "memory", "b'ok'"], r.stdout
    assert "cannot allocate" in r.stdout.splitlines()[0], r.stdout


NODES = """\
[[node]]
rank = 1
iface = "eth1"
ipv4 = "10.9.8.2"
mac = "02:00:00:00:00:02"
udp_port = 4242

[[node]]
rank = 0
iface = "eth0"
ipv4 = "10.9.8.1"
mac = "02:00:00:00:00:01"
udp_port = 9330
netns = "sCx0"
"""


def test_node_table(tmp_path):
    p = tmp_path / "nodes.toml"
    p.write_text(NODES)
    nodes = softspin.load_nodes(p)
    assert nodes == [
        {"rank": 0, "iface": "eth0", "ipv4": "10.9.8.1", "mac": "02:00:00:00:00:01", "udp_port": 9330, "netns": "sCx0"},
        {"rank": 1, "iface": "eth1", "ipv4": "10.9.8.2", "mac": "02:00:00:00:00:02", "udp_port": 4242, "netns": None},
    ]
    nic = softspin.Nic("pspin")
    assert nic.rank is None and nic.nodes() == []
    nic.set_node_table(p, 1)
    assert nic.rank == 1 and nic.nodes() == nodes
    with pytest.raises(softspin.InvalidArgumentError, match="rank 2 is not in the node table"):
        nic.set_node_table(p, 2)
    p.write_text(NODES.replace("rank = 0", "rank = 1"))
    with pytest.raises(softspin.InvalidArgumentError, match=r"nodes.toml:9: `rank`: rank 1 appears twice \(first at line 2\)"):
        softspin.load_nodes(p)
    with pytest.raises(softspin.IoError):
        softspin.load_nodes(tmp_path / "missing.toml")
