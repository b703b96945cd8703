//! Engine model tests: real handler images (crates/cli/tests/handlers/
//! engine_test.c, shared with the CLI and host tests, built with the SDK) on
//! the simulated NIC. Every check compares with values computed here (packet
//! bytes, the model's latency contract, ordering read off the timeline),
//! never with the handlers' own reports.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use softspin_engine::ectx::DEFAULT_HOST_BASE;
use softspin_engine::traffic::{
    build_frame, Arrival, FrameKind, GenConfig, Generator, Source, TrafficError,
};
use softspin_engine::{BufferFull, EctxSpec, Engine, HostLink, MatchRule, NicConfig, Report};
use softspin_hpu::ElfImage;

/// Build engine_test.c as `softspin build` does: `profile` adds its defines
/// and memory map (as `--profile`); `code_data` relinks code and data
/// elsewhere (as `--code-base`/`--data-base`) for a second tenant.
fn build(name: &str, profile: Option<&NicConfig>, code_data: Option<(u32, u32)>) -> PathBuf {
    let dir = softspin_testkit::scratch("engine-model");
    let out = dir.join(format!("{name}.elf"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/handlers/engine_test.c");
    let mut o = softspin_sdk::BuildOptions::handler(&[src], &out);
    if let Some(cfg) = profile {
        o.define = cfg.sdk_defines();
        o.link_symbols = cfg.memory_map().link_symbols();
    }
    if let Some((code, data)) = code_data {
        o.code_base = Some(code);
        o.data_base = Some(data);
    }
    softspin_sdk::build(&o).expect("building crates/cli/tests/handlers/engine_test.c");
    out
}

fn image() -> ElfImage {
    static P: OnceLock<PathBuf> = OnceLock::new();
    ElfImage::load(P.get_or_init(|| build("default", None, None))).unwrap()
}

/// Packets from a list.
struct ListSource(VecDeque<Arrival>);
impl Source for ListSource {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        Ok(self.0.pop_front())
    }
}

/// A PsPIN-style IP/UDP packet of `size` bytes whose payload starts with
/// `index` (u32 LE), then bytes derived from index.
fn packet(index: u32, size: usize) -> Vec<u8> {
    let idx = index.to_le_bytes();
    build_frame(
        FrameKind::Ip,
        size,
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        1000,
        9330,
        |i| {
            if i < 4 {
                idx[i]
            } else {
                (i as u32 * 13 + index * 7) as u8
            }
        },
    )
    .unwrap()
}

/// `messages` x `packets` packets of `size` bytes every `gap_ps`.
fn traffic(messages: u32, packets: u32, size: usize, gap_ps: u64) -> ListSource {
    let mut v = VecDeque::new();
    let mut k = 0;
    for m in 0..messages {
        for p in 0..packets {
            v.push_back(Arrival {
                time_ps: (k as u64 + 1) * gap_ps,
                frame: packet(k, size),
                msg_id: m,
                eom: p + 1 == packets,
                origin: format!("test#{k}").into(),
                ectx: None,
            });
            k += 1;
        }
    }
    ListSource(v)
}

fn engine_with(cfg: NicConfig, spec: EctxSpec) -> Engine {
    let mut e = Engine::new(cfg).unwrap();
    let (base, size) = spec.host_window;
    let id = e.install(spec).unwrap();
    e.add_host_region(base, size as usize).unwrap();
    e.activate(id).unwrap();
    e
}

fn spec(ph: Option<&str>) -> EctxSpec {
    let mut s = EctxSpec::new("test", image());
    s.ph = ph.map(String::from);
    s
}

fn run(e: &mut Engine, src: ListSource) -> Report {
    e.set_source(Box::new(src)).unwrap();
    e.run(None, |_| {}).unwrap();
    e.report()
}

#[test]
fn unloaded_latency_is_the_models_contract() {
    // 3 ns to the cluster + L1 copy (10 + size/64 cycles) + 1 assign + 7
    // invoke + 2 (the empty handler's `ret`) + 1 doorbell + 1 back.
    for (size, want) in [(64usize, 26.0), (1024, 41.0)] {
        let mut e = engine_with(NicConfig::pspin(), spec(Some("empty_ph")));
        let r = run(&mut e, traffic(1, 1, size, 1000));
        assert_eq!(r.latency_ns.max, want, "{size} B");
        assert_eq!(r.packets, 1);
    }
}

#[test]
fn one_64b_packet_per_cycle_is_sustained() {
    let mut e = engine_with(NicConfig::pspin(), spec(Some("empty_ph")));
    let r = run(&mut e, traffic(20_000, 1, 64, 1000));
    assert_eq!((r.packets, r.drops), (20_000, 0));
    assert!(r.mpps > 990.0, "{} Mpps", r.mpps);
    assert_eq!(
        r.latency_ns.max, 26.0,
        "no queueing at one packet per cycle"
    );
}

#[test]
fn handlers_keep_spin_ordering() {
    let mut s = spec(Some("order_ph"));
    s.hh = Some("order_hh".into());
    s.th = Some("order_th".into());
    let mut e = engine_with(NicConfig::pspin(), s);
    e.enable_timeline();
    let r = run(&mut e, traffic(6, 12, 256, 300));
    assert_eq!(r.packets, 72);
    // Per message: handler slices (kind, start, end) from the timeline.
    let mut by_msg: std::collections::BTreeMap<u32, Vec<(String, f64, f64)>> = Default::default();
    for ev in e.timeline().iter().filter(|ev| ev.cat == "handler") {
        let (sym, msg) = ev.name.split_once(" msg ").unwrap();
        by_msg.entry(msg.parse().unwrap()).or_default().push((
            sym.to_string(),
            ev.ts,
            ev.ts + ev.dur.unwrap(),
        ));
    }
    assert_eq!(by_msg.len(), 6);
    let mut overlapped = false;
    for (m, v) in by_msg {
        let hh: Vec<_> = v.iter().filter(|x| x.0 == "order_hh").collect();
        let ph: Vec<_> = v.iter().filter(|x| x.0 == "order_ph").collect();
        let th: Vec<_> = v.iter().filter(|x| x.0 == "order_th").collect();
        assert_eq!((hh.len(), ph.len(), th.len()), (1, 12, 1), "message {m}");
        for p in &ph {
            assert!(
                p.1 >= hh[0].2,
                "message {m}: payload handler started before the header handler ended"
            );
            assert!(
                th[0].1 >= p.2,
                "message {m}: completion handler started before a payload handler ended"
            );
        }
        overlapped |= ph.iter().any(|a| ph.iter().any(|b| a.1 < b.1 && b.1 < a.2));
    }
    assert!(
        overlapped,
        "payload handlers of a message never ran in parallel"
    );
    assert!(r.hpus_busy_max > 1);
}

#[test]
fn nic_send_returns_every_byte() {
    let mut e = engine_with(NicConfig::pspin(), spec(Some("echo_ph")));
    let src = traffic(4, 5, 300, 2000);
    let sent: Vec<Vec<u8>> = src.0.iter().map(|a| a.frame.clone()).collect();
    let r = run(&mut e, src);
    assert_eq!(r.outbound_packets, 20);
    let mut got: Vec<Vec<u8>> = e.outbound().iter().map(|o| o.frame.clone()).collect();
    let mut want = sent;
    got.sort();
    want.sort();
    assert_eq!(got, want);
    for w in e.outbound().windows(2) {
        assert!(w[1].time_ps >= w[0].time_ps);
    }
}

#[test]
fn dma_to_host_is_byte_exact() {
    let (n, size) = (40u32, 512usize);
    let mut s = spec(Some("dma_ph"));
    s.host_window = (DEFAULT_HOST_BASE, n as u64 * size as u64);
    // A discrete NIC's PCIe (250 ns one way), not PsPIN's near-ideal testbench host.
    let cfg = NicConfig {
        host: HostLink::PCIE4_X16,
        ..NicConfig::pspin()
    };
    let mut e = engine_with(cfg, s);
    let r = run(&mut e, traffic(8, n / 8, size, 500));
    assert_eq!(
        (r.packets, r.dma_to_host_bytes),
        (n as u64, n as u64 * size as u64)
    );
    let mut host = vec![0u8; n as usize * size];
    assert!(e.host_memory().read(DEFAULT_HOST_BASE, &mut host));
    let want: Vec<u8> = (0..n).flat_map(|k| packet(k, size)).collect();
    assert!(host == want, "host memory differs from the packets");
    // Each handler waited ~250 ns for PCIe: visible in its cycle count.
    assert!(r.handlers[0].cycles_min >= 250, "{:?}", r.handlers[0]);
}

#[test]
fn dma_from_host_then_send() {
    let n = 16u32;
    let mut s = spec(Some("fromhost_ph"));
    s.host_window = (DEFAULT_HOST_BASE, n as u64 * 64);
    let mut e = engine_with(NicConfig::pspin(), s);
    let host: Vec<u8> = (0..n * 64).map(|i| (i * 31 + 5) as u8).collect();
    assert!(e.host_memory().write(DEFAULT_HOST_BASE, &host));
    let r = run(&mut e, traffic(1, n, 128, 1000));
    assert_eq!(r.outbound_packets, n as u64);
    for o in e.outbound() {
        let idx = u32::from_le_bytes(o.frame[28..32].try_into().unwrap_or([0; 4]));
        // The frame is the host block of the packet it answered; find which.
        let k = (0..n as usize).find(|&k| host[k * 64..k * 64 + 64] == o.frame[..]);
        assert!(
            k.is_some(),
            "outbound frame is not a host block (idx field {idx})"
        );
    }
}

#[test]
fn host_direct_writes() {
    let mut e = engine_with(NicConfig::pspin(), spec(Some("hostwrite_ph")));
    let r = run(&mut e, traffic(3, 7, 100, 100));
    assert_eq!(r.host_writes, 21);
    let mut host = vec![0u8; 21 * 8];
    assert!(e.host_memory().read(DEFAULT_HOST_BASE, &mut host));
    for i in 0..21u64 {
        assert_eq!(
            u64::from_le_bytes(host[i as usize * 8..][..8].try_into().unwrap()),
            (i + 1) * 3
        );
    }
}

#[test]
fn protection_faults_end_only_that_handler() {
    let mut s = spec(Some("fault_ph"));
    s.watchdog = 10_000;
    let mut e = engine_with(NicConfig::pspin(), s);
    let r = run(&mut e, traffic(4, 8, 128, 1000));
    // Every packet's slot was released; half the handlers faulted.
    assert_eq!(r.packets, 32);
    assert_eq!(r.errors.len(), 1);
    let causes = &r.errors[0].by_cause;
    assert_eq!(causes.get("store access fault"), Some(&4), "{causes:?}");
    assert_eq!(causes.get("illegal instruction"), Some(&4), "{causes:?}");
    assert_eq!(
        causes.get("watchdog: instruction budget exhausted"),
        Some(&4),
        "{causes:?}"
    );
    assert_eq!(
        causes.get("store to read-only memory"),
        Some(&4),
        "{causes:?}"
    );
    // Goodput counts only the 16 packets whose handler succeeded.
    assert_eq!(r.good_packets, 16);
    assert!(
        (r.goodput_gbps * 2.0 - r.throughput_gbps).abs() < 1e-9,
        "{} vs {}",
        r.goodput_gbps,
        r.throughput_gbps
    );
    let img = image();
    let ph = img.symbol("fault_ph").unwrap();
    for d in &r.error_details {
        let pc = d.pc.expect("a fault has a pc");
        assert!(
            pc >= ph && pc < ph + 0x200,
            "fault pc 0x{pc:x} outside fault_ph"
        );
    }
    let good = e.read_nic(img.symbol("good_packets").unwrap(), 4).unwrap();
    assert_eq!(u32::from_le_bytes(good.try_into().unwrap()), 16);
}

#[test]
fn task_descriptor_is_private_and_rewritten_per_task() {
    let mut e = engine_with(NicConfig::pspin(), spec(Some("scribble_ph")));
    // 512 packets on 32 HPUs: every HPU runs many tasks after scribbling.
    let r = run(&mut e, traffic(16, 32, 128, 1000));
    assert_eq!(r.packets, 512);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let img = image();
    let word = |sym: &str| {
        i32::from_le_bytes(
            e.read_nic(img.symbol(sym).unwrap(), 4)
                .unwrap()
                .try_into()
                .unwrap(),
        )
    };
    assert_eq!((word("task_fresh"), word("task_stale")), (512, 0));
}

#[test]
fn an_ectx_cannot_read_another_ectxs_memory() {
    let mut s = spec(Some("peek_ph"));
    s.handler_mem = None;
    let mut e = engine_with(NicConfig::pspin(), s);
    let r = run(&mut e, traffic(1, 1, 64, 1000));
    assert_eq!(r.errors[0].by_cause.get("load access fault"), Some(&1));
}

#[test]
fn unfinished_message_times_out() {
    let mut s = spec(Some("empty_ph"));
    s.msg_timeout_ns = 5_000;
    let mut e = engine_with(NicConfig::pspin(), s);
    let mut src = traffic(2, 3, 64, 1000);
    // Message 1 loses its last packet.
    src.0.pop_back();
    let r = run(&mut e, src);
    assert_eq!(r.message_timeouts, 1);
    assert_eq!(r.errors[0].by_cause.get("message timeout"), Some(&1));
    assert_eq!(r.packets, 5);
}

#[test]
fn full_buffer_drops_or_backpressures() {
    let mut cfg = NicConfig::pspin();
    cfg.l2_pkt_size = 4 * 2048; // four packet slots
    let mut s = spec(Some("order_ph"));
    s.watchdog = 1_000_000;
    let mut e = engine_with(cfg.clone(), s.clone());
    let r = run(&mut e, traffic(1, 200, 512, 100));
    assert!(r.drops > 0);
    assert_eq!(r.packets + r.drops, 200);

    cfg.buffer_full = BufferFull::Backpressure;
    let mut e = engine_with(cfg, s);
    let r = run(&mut e, traffic(1, 200, 512, 100));
    assert_eq!((r.packets, r.drops), (200, 0));
    assert!(r.backpressure_ns > 0.0);
}

/// A generator's frames, written straight into their packet-buffer slots,
/// give the results of the same frames handed over built (the way of
/// traces, captures and the host): admitted, dropped when the buffer is
/// full, held by back-pressure, or unmatched. The echo handler sends back
/// what its slot holds.
#[test]
fn frames_built_in_place_match_frames_handed_over() {
    let g = GenConfig {
        messages: 4,
        packets_per_message: 50,
        size: 512,
        concurrent: 2,
        ..Default::default()
    };
    let built = || {
        let mut src = Generator::new(g.clone()).unwrap();
        let mut v = VecDeque::new();
        while let Some(a) = src.next_arrival().unwrap() {
            v.push_back(a);
        }
        v
    };
    for (full, port) in [
        (BufferFull::Drop, g.udp_dst_port),
        (BufferFull::Backpressure, g.udp_dst_port),
        (BufferFull::Drop, g.udp_dst_port + 1),
    ] {
        let mut cfg = NicConfig::pspin();
        cfg.l2_pkt_size = 4 * 2048; // four packet slots
        cfg.buffer_full = full;
        let mut s = spec(Some("echo_ph"));
        s.matching = MatchRule::UdpDstPort(port);
        let go = |src: Box<dyn Source>| {
            let mut e = engine_with(cfg.clone(), s.clone());
            e.set_source(src).unwrap();
            e.run(None, |_| {}).unwrap();
            let sent: Vec<Vec<u8>> = e.outbound().iter().map(|o| o.frame.clone()).collect();
            (serde_json::to_string(&e.report()).unwrap(), sent)
        };
        let in_place = go(Box::new(Generator::new(g.clone()).unwrap()));
        let (report, sent) = go(Box::new(ListSource(built())));
        assert_eq!(
            in_place,
            (report.clone(), sent.clone()),
            "{full:?}, port {port}"
        );
        // Each regime happened, and what was sent back was what arrived.
        let r: serde_json::Value = serde_json::from_str(&report).unwrap();
        let n = |k: &str| r[k].as_f64().unwrap();
        match (full, port == g.udp_dst_port) {
            (BufferFull::Drop, true) => assert!(n("drops") > 0.0 && n("packets") > 0.0),
            (BufferFull::Backpressure, _) => {
                assert!(n("backpressure_ns") > 0.0 && n("packets") == 200.0)
            }
            (_, false) => assert_eq!((n("unmatched"), n("packets")), (200.0, 0.0)),
        }
        let frames: Vec<Vec<u8>> = built().into_iter().map(|a| a.frame).collect();
        assert!(sent.iter().all(|f| frames.contains(f)));
        assert_eq!(sent.len() as f64, n("packets"));
    }
}

#[test]
fn runs_are_deterministic() {
    let go = || {
        let mut s = spec(Some("order_ph"));
        s.hh = Some("order_hh".into());
        s.th = Some("order_th".into());
        let mut e = engine_with(NicConfig::pspin(), s);
        let r = run(&mut e, traffic(10, 10, 700, 50));
        (serde_json::to_string(&r).unwrap(), e.hpu_stdout(0).to_vec())
    };
    assert_eq!(go(), go());
}

#[test]
fn two_ectxs_split_traffic_by_port() {
    let other = ElfImage::load(&build("second", None, Some((0x1D00_4000, 0x1C10_0000)))).unwrap();
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let mut a = spec(Some("count_ph"));
    a.name = "a".into();
    a.matching = MatchRule::UdpDstPort(9330);
    let mut b = EctxSpec::new("b", other.clone());
    b.ph = Some("count_ph".into());
    b.matching = MatchRule::UdpDstPort(7000);
    b.host_window = (DEFAULT_HOST_BASE + (1 << 32), 4096);
    let ia = e.install(a).unwrap();
    let ib = e.install(b).unwrap();
    e.activate(ia).unwrap();
    // Not yet active: b's packets are unmatched.
    let mut src = traffic(1, 10, 64, 1000);
    for (k, a) in src.0.iter_mut().enumerate() {
        if k % 2 == 1 {
            a.frame = build_frame(
                FrameKind::Ip,
                64,
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                1,
                7000,
                |_| 0,
            )
            .unwrap();
        }
    }
    let r = run(&mut e, ListSource(src.0.clone()));
    assert_eq!((r.packets, r.unmatched), (5, 5));
    e.activate(ib).unwrap();
    run(&mut e, src);
    let seen = |img: &ElfImage, e: &Engine| {
        u32::from_le_bytes(
            e.read_nic(img.symbol("seen").unwrap(), 4)
                .unwrap()
                .try_into()
                .unwrap(),
        )
    };
    assert_eq!(seen(&image(), &e), 10);
    assert_eq!(seen(&other, &e), 5);
}

#[test]
fn install_errors_name_the_problem() {
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let err = e
        .install(spec(Some("no_such_handler")))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no_such_handler") && err.contains("payload"),
        "{err}"
    );
    e.install(spec(Some("empty_ph"))).unwrap();
    let mut s = spec(Some("empty_ph"));
    s.name = "again".into();
    let err = e.install(s).unwrap_err().to_string();
    assert!(err.contains("overlaps ECTX `test`"), "{err}");
    let mut s = spec(Some("empty_ph"));
    s.handler_mem = Some((0x1C3F_FF00, 0x1000));
    let err = Engine::new(NicConfig::pspin())
        .unwrap()
        .install(s)
        .unwrap_err()
        .to_string();
    assert!(err.contains("outside L2 handler memory"), "{err}");
    // An image built for PsPIN's 4 clusters does not fit FPsPIN's 2.
    let err = Engine::new(NicConfig::fpspin())
        .unwrap()
        .install(spec(Some("empty_ph")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("NB_CLUSTERS=4"), "{err}");
    let fp = ElfImage::load(&build("fpspin", Some(&NicConfig::fpspin()), None)).unwrap();
    // Issue 24: the hint names the image's profile and both flags.
    let mut s = EctxSpec::new("fp", fp.clone());
    s.ph = Some("empty_ph".into());
    let err = Engine::new(NicConfig::pspin())
        .unwrap()
        .install(s)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "ECTX `fp`: image was built for NB_CLUSTERS=2, the NIC has 4 clusters (the image was built with profile `fpspin`: \
         run it with `--profile fpspin`, or rebuild it with `softspin build --profile pspin`)"
    );
    let mut s = EctxSpec::new("fp", fp);
    s.ph = Some("empty_ph".into());
    let mut e = engine_with(NicConfig::fpspin(), s);
    let r = run(&mut e, traffic(1, 4, 64, 100_000));
    assert_eq!(r.packets, 4);
    // Lifecycle errors.
    assert!(e
        .activate(0)
        .unwrap_err()
        .to_string()
        .contains("already active"));
    assert!(e.uninstall(0).is_err());
    e.deactivate(0).unwrap();
    e.uninstall(0).unwrap();
    assert!(e.activate(0).is_err());
}

#[test]
fn packet_larger_than_a_slot_is_an_error() {
    let mut cfg = NicConfig::pspin();
    cfg.pkt_slot_size = 1024;
    let mut e = engine_with(cfg, spec(Some("empty_ph")));
    e.set_source(Box::new(traffic(1, 1, 1500, 100))).unwrap();
    let err = e.run(None, |_| {}).unwrap_err().to_string();
    assert!(
        err.contains("test#0") && err.contains("1500 bytes"),
        "{err}"
    );
}

#[test]
fn host_notifications_round_trip() {
    let n = 24u32;
    let mut e = engine_with(NicConfig::pspin(), spec(Some("notify_ph")));
    // This test is the host: it answers between runs.
    e.pause_for_host(true);
    e.set_source(Box::new(traffic(3, n / 3, 64, 1000))).unwrap();
    let mut answered = 0;
    let mut max_in_flight = 0;
    loop {
        e.run(None, |_| {}).unwrap();
        let reqs = e.poll_notifications();
        if reqs.is_empty() {
            break;
        }
        max_in_flight = max_in_flight.max(reqs.len());
        for r in reqs {
            let q = u32::from_le_bytes(r.data[..4].try_into().unwrap()) as u64;
            // The second request of a packet carries the host window address.
            let answer = if r.host_ref == DEFAULT_HOST_BASE {
                q * 10
            } else {
                q + 100
            };
            e.respond(r.id, answer).unwrap();
            assert!(e.respond(r.id, 0).is_err(), "double answer accepted");
            answered += 1;
        }
    }
    assert_eq!(answered, 2 * n);
    assert!(max_in_flight > 2, "requests were never in flight together");
    let r = e.report();
    assert_eq!((r.packets, r.host_writes), (n as u64, n as u64));
    let mut host = vec![0u8; n as usize * 8];
    assert!(e.host_memory().read(DEFAULT_HOST_BASE, &mut host));
    for i in 0..n as u64 {
        let v = u64::from_le_bytes(host[i as usize * 8..][..8].try_into().unwrap());
        assert_eq!(v, (i + 100) + (((2 * i + 1) * 10) << 32), "packet {i}");
    }
}

/// `Engine::hpu_busy` (the live status's occupancy): while one header
/// handler runs (its slice read off the timeline of a first run), one HPU
/// is busy and its busy time grows with NIC time; afterwards none is, and
/// the busy time covers the handler's slice.
#[test]
fn hpu_busy_follows_a_running_task() {
    let mut s = spec(Some("empty_ph"));
    s.hh = Some("order_hh".into());
    let mut e = engine_with(NicConfig::pspin(), s.clone());
    e.enable_timeline();
    run(&mut e, traffic(1, 1, 64, 1000));
    let hh = e
        .timeline()
        .iter()
        .find(|ev| ev.cat == "handler" && ev.name.starts_with("order_hh"))
        .unwrap();
    // Timeline times are in us (Chrome trace events).
    let ps = |us: f64| (us * 1e6).round() as u64;
    let (start, end) = (ps(hh.ts), ps(hh.ts + hh.dur.unwrap()));
    let (t1, t2) = (start + (end - start) / 4, start + (end - start) * 3 / 4);
    assert!(t2 > t1 + 1000, "a slice long enough: {start}..{end} ps");

    let mut e = engine_with(NicConfig::pspin(), s);
    assert_eq!(e.hpu_busy(), (0, 0));
    e.set_source(Box::new(traffic(1, 1, 64, 1000))).unwrap();
    e.run(Some(t1), |_| {}).unwrap();
    let (n1, b1) = e.hpu_busy();
    e.run(Some(t2), |_| {}).unwrap();
    let (n2, b2) = e.hpu_busy();
    assert_eq!((n1, n2), (1, 1), "one HPU runs order_hh");
    assert_eq!(b2 - b1, t2 - t1, "busy time grows with NIC time");
    e.run(None, |_| {}).unwrap();
    let (n, b) = e.hpu_busy();
    assert_eq!(n, 0);
    assert!(
        b >= end - start,
        "{b} ps busy, the slice {} ps",
        end - start
    );
}

/// The pspin profile with packet slots for a 4 KiB MTU (issue 29): 4 KiB of
/// payload plus Ethernet, IPv4 and UDP headers, rounded up to L1 granules.
fn mtu4k() -> NicConfig {
    NicConfig {
        pkt_slot_size: (4096 + 14 + 20 + 8u32).next_multiple_of(64),
        ..NicConfig::pspin()
    }
}

/// A 4 KiB payload behind PsPIN's IP/UDP header (`packet`'s layout).
const PKT_4K: usize = 4096 + 20 + 8;

#[test]
fn four_kib_packets_reach_the_host_byte_exact() {
    let (messages, per) = (3u32, 6u32);
    let n = messages * per;
    let mut s = spec(Some("dma_ph"));
    s.host_window = (DEFAULT_HOST_BASE, n as u64 * PKT_4K as u64);
    let mut e = engine_with(mtu4k(), s);
    let r = run(&mut e, traffic(messages, per, PKT_4K, 2000));
    assert_eq!((r.packets, r.drops), (n as u64, 0));
    assert_eq!(r.dma_to_host_bytes, n as u64 * PKT_4K as u64);
    let mut host = vec![0u8; n as usize * PKT_4K];
    assert!(e.host_memory().read(DEFAULT_HOST_BASE, &mut host));
    let want: Vec<u8> = (0..n).flat_map(|k| packet(k, PKT_4K)).collect();
    assert!(host == want, "host memory differs from the 4 KiB packets");
}

#[test]
fn four_kib_packets_are_sent_back_whole() {
    let mut e = engine_with(mtu4k(), spec(Some("echo_ph")));
    let src = traffic(2, 5, PKT_4K, 2000);
    let mut want: Vec<Vec<u8>> = src.0.iter().map(|a| a.frame.clone()).collect();
    let r = run(&mut e, src);
    assert_eq!((r.packets, r.outbound_packets), (10, 10));
    let mut got: Vec<Vec<u8>> = e.outbound().iter().map(|o| o.frame.clone()).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

/// An injected frame (the embedding API: a network simulator, a live port)
/// longer than the slot is dropped and counted, and the NIC goes on.
#[test]
fn an_injected_frame_longer_than_a_slot_is_dropped_and_counted() {
    let mut e = engine_with(mtu4k(), spec(Some("echo_ph")));
    let slot = e.config().pkt_slot_size as usize;
    let at = |t: u64, frame: Vec<u8>, m: u32| Arrival {
        time_ps: t,
        frame,
        msg_id: m,
        eom: true,
        origin: "inject".into(),
        ectx: None,
    };
    let fits = packet(0, slot);
    e.inject(at(1000, packet(1, slot + 1), 0));
    e.inject(at(2000, fits.clone(), 1));
    e.run_until(1_000_000).unwrap();
    let r = e.report();
    assert_eq!((r.too_large, r.packets, r.outbound_packets), (1, 1, 1));
    assert_eq!(
        e.outbound()[0].frame,
        fits,
        "the frame that fits goes through"
    );
    assert!(r.text().contains("too large"), "{}", r.text());
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["too_large"], 1);
}
