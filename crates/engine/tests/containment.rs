//! Containment and honest errors in the command unit (issue 10, part h7):
//! handlers that flood output or counters, steal notifications, wait
//! forever, hog HPUs, issue commands the NIC must refuse, or abort. Each
//! test checks the outcome from outside the handler (host-direct writes,
//! the error list, the report) against values computed here.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use softspin_engine::ectx::DEFAULT_HOST_BASE;
use softspin_engine::stats::{ErrorCause, Rejected};
use softspin_engine::traffic::{build_frame, Arrival, FrameKind};
use softspin_engine::{EctxId, EctxSpec, Engine, MatchRule, NicConfig};
use softspin_hpu::abi::err;
use softspin_hpu::ElfImage;

const PORT_A: u16 = 9330;
const PORT_B: u16 = 7000;

fn build(name: &str, code_data: Option<(u32, u32)>) -> PathBuf {
    let out = softspin_testkit::scratch("containment").join(format!("{name}.elf"));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/handlers");
    let srcs = [dir.join("containment.c"), dir.join("misbehave.c")];
    let mut o = softspin_sdk::BuildOptions::handler(&srcs, &out);
    if let Some((code, data)) = code_data {
        o.code_base = Some(code);
        o.data_base = Some(data);
    }
    softspin_sdk::build(&o).expect("building tests/handlers/containment.c and misbehave.c");
    out
}

/// The image, and a second copy linked elsewhere for a second tenant.
fn image(second: bool) -> ElfImage {
    static A: OnceLock<PathBuf> = OnceLock::new();
    static B: OnceLock<PathBuf> = OnceLock::new();
    let p = if second {
        B.get_or_init(|| build("b", Some((0x1D00_4000, 0x1C10_0000))))
    } else {
        A.get_or_init(|| build("a", None))
    };
    ElfImage::load(p).unwrap()
}

fn packet(port: u16) -> Vec<u8> {
    build_frame(
        FrameKind::Ip,
        256,
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        1000,
        port,
        |i| i as u8,
    )
    .unwrap()
}

fn arrival(t_ps: u64, msg_id: u32, port: u16) -> Arrival {
    Arrival {
        time_ps: t_ps,
        frame: packet(port),
        msg_id,
        eom: true,
        origin: format!("test#{msg_id}").into(),
        ectx: None,
    }
}

/// Install and activate one ECTX with `ph` on the packets to `port`.
fn tenant(e: &mut Engine, name: &str, ph: &str, port: u16, second: bool) -> EctxId {
    let mut s = EctxSpec::new(name, image(second));
    s.ph = Some(ph.into());
    s.matching = MatchRule::UdpDstPort(port);
    // Tenants' windows do not overlap: 4 GiB apart.
    s.host_window = (
        DEFAULT_HOST_BASE + if second { 1 << 32 } else { 0 },
        1 << 16,
    );
    let (base, size) = s.host_window;
    let id = e.install(s).unwrap();
    e.add_host_region(base, size as usize).unwrap();
    e.activate(id).unwrap();
    id
}

fn one(cfg: NicConfig, ph: &str) -> (Engine, EctxId) {
    let mut e = Engine::new(cfg).unwrap();
    let id = tenant(&mut e, "a", ph, PORT_A, false);
    (e, id)
}

/// Host-direct writes of an ECTX as (slot, value), in time order.
fn reports(e: &Engine, id: EctxId) -> Vec<(u64, u64)> {
    let base = e.ectx(id).unwrap().spec.host_window.0;
    e.host_writes()
        .iter()
        .filter(|w| w.ectx == id)
        .map(|w| ((w.addr - base) / 8, w.value))
        .collect()
}

fn code(v: i32) -> u64 {
    v as u32 as u64
}

#[test]
fn output_flood_is_bounded_per_ectx_and_counted() {
    let mut cfg = NicConfig::pspin();
    cfg.output_buffer = 4096;
    let (mut e, id) = one(cfg, "flood_ph");
    let n = 20u32;
    for m in 0..n {
        e.inject(arrival(m as u64 * 1000, m, PORT_A));
    }
    e.run(None, |_| {}).unwrap();
    // 200 lines of 98 digits and a newline per packet.
    let written = n as u64 * 200 * 99;
    let kept: u64 = e.output().map(|r| r.bytes.len() as u64).sum();
    assert_eq!(kept, 4096, "the ring holds exactly output_buffer bytes");
    assert_eq!(e.output_dropped(id), written - 4096);
    let r = e.report();
    assert_eq!(r.output_dropped.len(), 1);
    assert_eq!(r.output_dropped[0].bytes, written - 4096);
    assert!(
        r.text().contains(&format!(
            "output dropped     {} bytes of `a`",
            written - 4096
        )),
        "{}",
        r.text()
    );
    // Records are in NIC-time order and name their message and HPU.
    let recs: Vec<_> = e.output().collect();
    assert!(recs.windows(2).all(|w| w[0].time_ps <= w[1].time_ps));
    assert!(recs
        .iter()
        .all(|r| r.ectx == id && r.msg_id < n && (r.hpu as usize) < e.hpu_count()));
    // The newest output is kept: the last line is line 199.
    let tail: Vec<u8> = e.drain_output().into_iter().flat_map(|r| r.bytes).collect();
    assert!(tail.ends_with(format!("{:098}\n", 199).as_bytes()));
    assert_eq!(e.output().count(), 0, "drained");
}

#[test]
fn counter_indices_beyond_the_limit_are_refused_and_counted() {
    let (mut e, id) = one(NicConfig::pspin(), "counters_ph");
    for m in 0..10 {
        e.inject(arrival(m * 1000, m as u32, PORT_A));
    }
    e.run(None, |_| {}).unwrap();
    let rep = reports(&e, id);
    assert_eq!(rep.len(), 10);
    assert!(rep.iter().all(|&(_, v)| v == code(err::INVAL)), "{rep:?}");
    // Only the legal index exists.
    assert_eq!(e.counters(id), vec![(3, 50, 10)]);
    let bad: Vec<_> = e
        .errors()
        .iter()
        .filter(|x| x.kind == ErrorCause::Rejected(Rejected::CounterIndex))
        .collect();
    assert_eq!(bad.len(), 10);
    assert!(bad
        .iter()
        .all(|x| x.handler.as_deref() == Some("counters_ph") && x.pc.is_some() && x.hpu.is_some()));
}

#[test]
fn a_tenant_cannot_wait_on_another_tenants_notification() {
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let a = tenant(&mut e, "a", "ask_ph", PORT_A, false);
    let b = tenant(&mut e, "b", "thief_ph", PORT_B, true);
    e.inject(arrival(0, 0, PORT_A));
    e.inject(arrival(2_000_000, 0, PORT_B));
    e.run(Some(5_000_000), |_| {}).unwrap();
    let notes = e.poll_notifications();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].ectx, a);
    e.respond(notes[0].id, 0xABCD).unwrap();
    e.run(None, |_| {}).unwrap();
    // A got its answer; B was refused for every id, A's included.
    assert_eq!(reports(&e, a), vec![(0, 0xABCD)]);
    let rb = reports(&e, b);
    assert_eq!(rb.len(), 4, "{rb:?}");
    assert!(rb.iter().all(|&(_, v)| v == code(err::NOENT)), "{rb:?}");
    let theft = e
        .errors()
        .iter()
        .filter(|x| x.ectx == b && x.kind == ErrorCause::Rejected(Rejected::NotifyId))
        .count();
    assert_eq!(theft, 4);
    assert!(
        e.errors().iter().all(|x| x.ectx == b),
        "A has no error: {:?}",
        e.errors()
    );
}

#[test]
fn a_wait_nobody_answers_ends_in_a_wait_timeout() {
    let mut cfg = NicConfig::pspin();
    cfg.wait_limit_ns = 50_000;
    let (mut e, id) = one(cfg, "wait_forever_ph");
    for m in 0..100 {
        e.inject(arrival(m * 1000, m as u32, PORT_A));
    }
    e.run(None, |_| {}).unwrap();
    let r = e.report();
    assert_eq!(r.packets, 100, "every task completed (as failed)");
    let timeouts: Vec<_> = e
        .errors()
        .iter()
        .filter(|x| x.kind == ErrorCause::WaitTimeout)
        .collect();
    assert_eq!(timeouts.len(), 100);
    assert_eq!(r.errors.iter().map(|x| x.total).sum::<u64>(), 100);
    assert!(r.text().contains("wait timeout: 100"), "{}", r.text());
    // Each ended one wait limit after its wait began (>= arrival + limit).
    assert!(timeouts
        .iter()
        .all(|x| x.time_ns >= 50_000 && x.hpu.is_some() && x.ectx == id));
    // Their notifications died with them: the ring is free again.
    assert!(e.is_idle());
}

/// Tenant A's handlers block (64 messages: twice the HPUs), then tenant B
/// sends 32 messages to an empty handler. Returns B's completion times and
/// whether A completed anything.
fn two_tenants(max_hpu_share: f64) -> (Vec<u64>, bool) {
    let mut cfg = NicConfig::pspin();
    cfg.wait_limit_ns = 100_000_000; // 100 ms: far beyond B's run
    cfg.max_hpu_share = max_hpu_share;
    let mut e = Engine::new(cfg).unwrap();
    let a = tenant(&mut e, "a", "wait_forever_ph", PORT_A, false);
    let b = tenant(&mut e, "b", "empty_ph", PORT_B, true);
    for m in 0..64 {
        e.inject(arrival(m * 100, m as u32, PORT_A));
    }
    for m in 0..32 {
        e.inject(arrival(20_000 + m * 100, m as u32, PORT_B));
    }
    e.run(Some(1_000_000_000), |_| {}).unwrap();
    let done_b = e
        .completions()
        .iter()
        .filter(|d| d.ectx == b)
        .map(|d| d.time_ps)
        .collect();
    (done_b, e.completions().iter().any(|d| d.ectx == a))
}

#[test]
fn a_blocked_tenant_cannot_take_every_hpu() {
    let (done_b, a_done) = two_tenants(0.75);
    assert_eq!(
        done_b.len(),
        32,
        "B completes all its messages within 1 ms, long before A's waits end"
    );
    assert!(!a_done, "A's handlers still wait");
    // The check checks: with no share limit A takes all 32 HPUs first and
    // B waits for A's wait limit.
    let (done_b, _) = two_tenants(1.0);
    assert_eq!(done_b.len(), 0);
}

#[test]
fn rejected_commands_are_errors_and_the_handler_goes_on() {
    let (mut e, id) = one(NicConfig::pspin(), "reject_ph");
    e.inject(arrival(0, 7, PORT_A));
    e.run(None, |_| {}).unwrap();
    let rep = reports(&e, id);
    // The SDK's wrappers turn the error codes into PsPIN's SPIN_FAIL (1).
    assert_eq!(rep, vec![(0, 1), (1, 1), (2, 1), (3, 0x600d)]);
    let kinds: Vec<_> = e.errors().iter().map(|x| x.kind).collect();
    assert_eq!(
        kinds,
        vec![
            ErrorCause::Rejected(Rejected::HostWriteWindow),
            ErrorCause::Rejected(Rejected::HostDmaWindow),
            ErrorCause::Rejected(Rejected::SendTooLarge)
        ]
    );
    let base = e.ectx(id).unwrap().spec.host_window.0;
    let x = &e.errors()[0];
    assert_eq!(
        (x.msg_id, x.handler.as_deref(), x.addr),
        (7, Some("reject_ph"), Some(base + (1 << 16)))
    );
    assert!(x.pc.is_some_and(|pc| pc >= 0x1D00_0000));
    assert!(e
        .report()
        .text()
        .contains("command rejected: host-direct write outside the host window: 1"));
}

#[test]
fn assert_abort_and_exit_status_are_errors() {
    for (ph, status, text) in [
        (
            "assert_ph",
            134,
            Some("Assertion `args->task->pkt_mem_size == 12345' failed."),
        ),
        ("exit3_ph", 3, None),
    ] {
        let (mut e, _) = one(NicConfig::pspin(), ph);
        e.inject(arrival(0, 1, PORT_A));
        e.run(None, |_| {}).unwrap();
        let errs = e.errors();
        assert_eq!(errs.len(), 1, "{ph}");
        assert_eq!(errs[0].kind, ErrorCause::Aborted { status }, "{ph}");
        assert_eq!(errs[0].cause, "handler aborted");
        let d = errs[0].detail.clone().unwrap();
        assert!(d.starts_with(&format!("status {status}")), "{d}");
        if let Some(t) = text {
            assert!(d.contains(t), "{d}");
        }
    }
}

#[test]
fn message_timeouts_carry_no_sentinels() {
    let (mut e, _) = one(NicConfig::pspin(), "empty_ph");
    // A message whose last packet never comes.
    e.inject(Arrival {
        eom: false,
        ..arrival(0, 42, PORT_A)
    });
    e.run(None, |_| {}).unwrap();
    let errs = e.errors();
    assert_eq!(errs.len(), 1);
    let x = &errs[0];
    assert_eq!(
        (x.kind, x.msg_id, x.handler.clone(), x.pc, x.addr, x.hpu),
        (ErrorCause::MessageTimeout, 42, None, None, None, None)
    );
    let j = serde_json::to_value(x).unwrap();
    assert_eq!(j["hpu"], serde_json::Value::Null);
    assert_eq!(j["pc"], serde_json::Value::Null);
    assert_eq!(j["msg_id"], 42);
    let t = e.report().text();
    assert!(!t.contains("4294967295") && !t.contains("message 0"), "{t}");
}

#[test]
fn the_new_limits_are_validated_by_name() {
    type Spoil = fn(&mut NicConfig);
    let bad: [(&str, Spoil); 6] = [
        ("output_buffer", |c| c.output_buffer = 0),
        ("counters_per_ectx", |c| c.counters_per_ectx = 0),
        ("counters_per_ectx", |c| c.counters_per_ectx = u32::MAX),
        ("wait_limit_ns", |c| c.wait_limit_ns = 0),
        ("wait_limit_ns", |c| c.wait_limit_ns = u64::MAX),
        ("max_hpu_share", |c| c.max_hpu_share = f64::NAN),
    ];
    for (field, f) in bad {
        let mut c = NicConfig::pspin();
        f(&mut c);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
    let t =
        "output_buffer = 1024\ncounters_per_ectx = 8\nwait_limit_ns = 5000\nmax_hpu_share = 0.5\n";
    let c = NicConfig::from_toml(t, "t.toml").unwrap();
    assert_eq!(
        (
            c.output_buffer,
            c.counters_per_ectx,
            c.wait_limit_ns,
            c.max_hpu_share
        ),
        (1024, 8, 5000, 0.5)
    );
}

/// Issue 24: every service asked for 4 GiB is refused with its cause and
/// the range it named, before anything is allocated, and the handler goes
/// on (under a 1 GB address-space limit this aborted the process:
/// crates/cli/tests/reproductions.rs runs it that way).
#[test]
fn huge_lengths_are_refused_before_allocating() {
    let (mut e, id) = one(NicConfig::pspin(), "huge_len_ph");
    e.inject(arrival(0, 3, PORT_A));
    e.run(None, |_| {}).unwrap();
    assert_eq!(
        reports(&e, id),
        vec![(0, 0x600d)],
        "the handler went on to its end"
    );
    let errs = e.errors();
    let kinds: Vec<_> = errs.iter().map(|x| x.kind).collect();
    use Rejected::*;
    assert_eq!(
        kinds,
        [
            NicAccess,
            SendTooLarge,
            SendTooLarge,
            HostDmaWindow,
            HostDmaWindow,
            NicAccess,
            NotifyTooLong,
            CounterIndex
        ]
        .map(ErrorCause::Rejected)
        .to_vec()
    );
    // The packet's NIC address, as the first error names it.
    let pkt = errs[0].addr.unwrap();
    let base = e.ectx(id).unwrap().spec.host_window.0;
    let detail = |k: usize| errs[k].detail.clone().unwrap();
    assert_eq!(
        detail(0),
        format!("cluster DMA source 0x{pkt:08x}+4294967295 bytes")
    );
    assert_eq!(
        detail(3),
        format!("host range 0x{base:x}+4294967295 bytes; host window 0x{base:x}+0x10000")
    );
    assert_eq!(errs[5].addr, Some(pkt));
    assert_eq!(
        detail(5),
        format!("write buffer 0x{pkt:08x}+4294967295 bytes")
    );
    assert!(errs
        .iter()
        .all(|x| x.msg_id == 3 && x.handler.as_deref() == Some("huge_len_ph")));
    assert_eq!(e.report().errors[0].total, 8);
}

/// Issue 24: a handler looping on 64 KiB host DMA writes is stopped by its
/// watchdog once the commands' bytes (1 instruction per
/// BYTES_PER_INSTRUCTION) have spent its budget: the host work it causes
/// is bounded by the budget, not by how long its loop would run.
#[test]
fn commands_are_charged_against_the_watchdog() {
    use softspin_engine::engine::{command_cost, BYTES_PER_INSTRUCTION};
    const WATCHDOG: u64 = 100_000;
    const CHUNK: u64 = 64 << 10;
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let mut s = EctxSpec::new("a", image(false));
    s.ph = Some("dma_loop_ph".into());
    s.matching = MatchRule::UdpDstPort(PORT_A);
    s.host_window = (DEFAULT_HOST_BASE, CHUNK);
    s.watchdog = WATCHDOG;
    let id = e.install(s).unwrap();
    e.add_host_region(DEFAULT_HOST_BASE, CHUNK as usize)
        .unwrap();
    e.activate(id).unwrap();
    e.inject(arrival(0, 1, PORT_A));
    e.run(None, |_| {}).unwrap();
    let errs = e.errors();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        errs[0].kind,
        ErrorCause::Fault(softspin_hpu::FaultKind::Watchdog)
    );
    // Each command costs its bytes' charge plus its loop's few
    // instructions: the budget buys at most WATCHDOG / cost commands, and
    // the last one issued may push past it.
    let per = command_cost(CHUNK);
    assert_eq!(per, CHUNK / BYTES_PER_INSTRUCTION);
    let max_cmds = WATCHDOG / per + 1;
    let r = e.report();
    assert!(
        r.dma_to_host_bytes <= max_cmds * CHUNK,
        "{} bytes moved, at most {}",
        r.dma_to_host_bytes,
        max_cmds * CHUNK
    );
    assert!(
        r.dma_to_host_bytes >= (WATCHDOG / per - 1) * CHUNK,
        "the budget was spent on commands: {} bytes",
        r.dma_to_host_bytes
    );
    // The error says what the budget went on and names the settings that
    // raise it.
    let charged = r.dma_to_host_bytes / CHUNK * per;
    assert_eq!(
        errs[0].detail.as_deref().unwrap(),
        format!(
            "budget of {WATCHDOG} instructions, {charged} of them charged for commands (1 per 4 bytes moved); \
             raise it with --watchdog (scenario key `watchdog`, host API EctxOptions::watchdog)"
        )
    );
}
