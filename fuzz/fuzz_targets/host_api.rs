//! Arbitrary sequences of host API calls (`softspin_host::Nic`) on prebuilt
//! handler images. Sizes, addresses and options are the fuzzer's, uncapped
//! wherever the API itself must reject bad values (run with
//! `-malloc_limit_mb`, so an allocation the API should have refused is a
//! crash). Only what the caller itself allocates (lent buffers, payloads) and
//! what legitimately takes long (watchdog, generator size) is bounded here.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use softspin_engine::traffic::{FrameKind, GenConfig, Payload};
use softspin_fuzz::{HANDLERS, WATCHDOG};
use softspin_cluster::{Mac, Node, NodeTable};
use softspin_engine::RmaTransportConfig;
use softspin_host::rma::{RmaHandle, RmaOp, RmaRequest};
use softspin_host::{Ectx, EctxOptions, HostWindow, Image, Nic};

/// A host address: inside a window the NIC handed out, or anywhere.
#[derive(Arbitrary, Debug)]
enum HostAddr {
    Window { window: u8, offset: u32 },
    Raw(u64),
}

/// A NIC address: inside an allocation, or anywhere.
#[derive(Arbitrary, Debug)]
enum NicAddr {
    Alloc { alloc: u8, offset: u16 },
    Raw(u32),
}

/// A handler symbol: one of the image's, or any string.
#[derive(Arbitrary, Debug)]
enum Symbol {
    Of(u8),
    Name(String),
}

#[derive(Arbitrary, Debug)]
enum Window {
    Issued(u8),
    /// A window the NIC never issued (or an issued one, resized).
    Forged { base: u64, size: u64 },
}

#[derive(Arbitrary, Debug)]
struct Options {
    name: Option<String>,
    hh: Option<Symbol>,
    ph: Option<Symbol>,
    th: Option<Symbol>,
    handler_mem_size: Option<u32>,
    host_window: Option<Window>,
    l1_copy: Option<u32>,
    scratchpad: Vec<u32>,
    watchdog: Option<u64>,
    msg_timeout_ns: Option<u64>,
    udp_dst_port: Option<u16>,
    /// PsPIN's layout: the ECTX's own handler memory (near L2's handler
    /// base, so some land inside it).
    handler_mem_addr: Option<u16>,
    /// The RMA transport block in front of it, as this rank.
    rma: Option<u8>,
}

/// An RMA operation to post (`Nic::rma_post`), any values.
#[derive(Arbitrary, Debug)]
enum FuzzRmaOp {
    Put { local: u64, len: u64 },
    Get { local: u64, len: u64 },
    FetchAdd { width: u8, addend: u64 },
    Cas { width: u8, compare: u64, swap: u64 },
}

#[derive(Arbitrary, Debug)]
enum Call {
    Open { fpspin: bool },
    HostWindow { size: usize },
    /// The buffer is the caller's allocation: bounded.
    Lend { size: u16 },
    Unlend(Window),
    HostRead { addr: HostAddr, len: usize },
    HostWrite { addr: HostAddr, data: Vec<u8> },
    Install { image: u8, options: Options },
    Activate(u8),
    Deactivate(u8),
    Uninstall(u8),
    SetFrameKind { ectx: u8, eth: bool },
    NicAlloc { ectx: u8, size: usize, align: usize },
    NicWrite { addr: NicAddr, data: Vec<u8> },
    NicWritePtr { addr: NicAddr, target: u32 },
    NicRead { addr: NicAddr, len: usize },
    SendPacket { frame: Vec<u8>, msg_id: u32, eom: bool },
    SendMessage { ectx: u8, msg_id: u32, payload: Vec<u8>, packet_size: usize },
    SendPayloads { ectx: u8, msg_id: u32, payloads: Vec<Vec<u8>> },
    /// Generator size bounded (a long run is legitimate); the rest is not.
    FeedGenerator { messages: u8, packets: u8, size: usize, rate_gbps: f64, concurrent: u32, eth: bool, port: u16 },
    RunUntilIdle,
    RunFor(u64),
    Events,
    PollNotifications,
    WaitNotifications,
    Respond { id: u32, value: u64 },
    RespondToLast { value: u64 },
    Report,
    EctxCounts(u8),
    Counters(u8),
    HpuStdout(usize),
    /// A node table of `nodes % 5 + 1` nodes, this NIC as `rank`.
    SetNodeTable { nodes: u8, rank: u8 },
    ExportWindow { ectx: u8, key: u32, offset: u64, size: u64, perms: u32 },
    RmaPost { ectx: u8, rank: u16, key: u32, offset: u64, op: FuzzRmaOp },
    RmaCompletions(u8),
    RmaOutstanding(u8),
}

#[derive(Default)]
struct State {
    images: Vec<Image>,
    windows: Vec<HostWindow>,
    ectxs: Vec<(Ectx, usize)>,
    allocs: Vec<u32>,
    notifications: Vec<u32>,
    /// RMA handles posted, and those completed (each exactly once).
    rma_posted: std::collections::HashSet<RmaHandle>,
    rma_done: std::collections::HashSet<RmaHandle>,
}

fn pick<T: Copy>(v: &[T], k: u8) -> Option<T> {
    (!v.is_empty()).then(|| v[k as usize % v.len()])
}

impl State {
    fn host_addr(&self, a: &HostAddr) -> u64 {
        match *a {
            HostAddr::Window { window, offset } => pick(&self.windows, window).map_or(0, |w| w.base.wrapping_add(offset as u64)),
            HostAddr::Raw(x) => x,
        }
    }
    fn nic_addr(&self, a: &NicAddr) -> u32 {
        match *a {
            NicAddr::Alloc { alloc, offset } => pick(&self.allocs, alloc).map_or(0, |x| x.wrapping_add(offset as u32)),
            NicAddr::Raw(x) => x,
        }
    }
    fn window(&self, w: &Window) -> Option<HostWindow> {
        match *w {
            Window::Issued(k) => pick(&self.windows, k),
            Window::Forged { base, size } => Some(HostWindow { base, size }),
        }
    }
    fn ectx(&self, k: u8) -> Ectx {
        // An unknown handle when none is installed: the API must refuse it.
        pick(&self.ectxs, k).map_or(Ectx(k as u32), |e| e.0)
    }
    fn symbol(&self, image: usize, s: &Option<Symbol>) -> Option<String> {
        match s.as_ref()? {
            Symbol::Name(n) => Some(n.clone()),
            Symbol::Of(k) => {
                let names: Vec<&str> = self.images[image].symbols().map(|(n, _)| n).collect();
                pick(&names, *k).map(str::to_string)
            }
        }
    }
}

fn call(nic: &mut Nic, st: &mut State, c: Call) {
    match c {
        Call::Open { .. } => {}
        Call::HostWindow { size } => {
            if let Ok(w) = nic.host_window(size) {
                st.windows.push(w);
            }
        }
        Call::Lend { size } => {
            if let Ok(w) = nic.lend(Box::new(vec![0u8; size as usize])) {
                st.windows.push(w);
            }
        }
        Call::Unlend(w) => {
            if let Some(w) = st.window(&w) {
                if nic.unlend(w).is_ok() {
                    st.windows.retain(|x| x.base != w.base);
                }
            }
        }
        Call::HostRead { addr, len } => {
            if let Ok(v) = nic.host_read(st.host_addr(&addr), len) {
                assert_eq!(v.len(), len);
            }
        }
        Call::HostWrite { addr, data } => {
            let _ = nic.host_write(st.host_addr(&addr), &data);
        }
        Call::Install { image, options: o } => {
            let k = image as usize % st.images.len();
            let opts = EctxOptions {
                name: o.name,
                hh: st.symbol(k, &o.hh),
                ph: st.symbol(k, &o.ph),
                th: st.symbol(k, &o.th),
                handler_mem_size: o.handler_mem_size,
                host_window: o.host_window.as_ref().and_then(|w| st.window(w)),
                l1_copy: o.l1_copy,
                scratchpad: o.scratchpad,
                watchdog: Some(o.watchdog.unwrap_or(WATCHDOG).min(WATCHDOG)),
                msg_timeout_ns: o.msg_timeout_ns,
                udp_dst_port: o.udp_dst_port,
                rules: Vec::new(),
                rma: o.rma.map(|r| RmaTransportConfig::new(u16::from(r % 4))),
                handler_mem_addr: o.handler_mem_addr.map(|a| softspin_hpu::abi::L2_HANDLER_BASE + (u32::from(a) << 6)),
            };
            if let Ok(e) = nic.install(&st.images[k], opts) {
                st.ectxs.push((e, k));
            }
        }
        Call::Activate(k) => {
            let _ = nic.activate(st.ectx(k));
        }
        Call::Deactivate(k) => {
            let _ = nic.deactivate(st.ectx(k));
        }
        Call::Uninstall(k) => {
            let e = st.ectx(k);
            if nic.uninstall(e).is_ok() {
                st.ectxs.retain(|x| x.0 != e);
            }
        }
        Call::SetFrameKind { ectx, eth } => {
            let _ = nic.set_frame_kind(st.ectx(ectx), if eth { FrameKind::Eth } else { FrameKind::Ip });
        }
        Call::NicAlloc { ectx, size, align } => {
            if let Ok(a) = nic.nic_alloc(st.ectx(ectx), size, align) {
                st.allocs.push(a);
            }
        }
        Call::NicWrite { addr, data } => {
            let _ = nic.nic_write(st.nic_addr(&addr), &data);
        }
        Call::NicWritePtr { addr, target } => {
            let _ = nic.nic_write_ptr(st.nic_addr(&addr), target);
        }
        Call::NicRead { addr, len } => {
            if let Ok(v) = nic.nic_read(st.nic_addr(&addr), len) {
                assert_eq!(v.len(), len);
            }
        }
        Call::SendPacket { frame, msg_id, eom } => {
            let _ = nic.send_packet(frame, msg_id, eom);
        }
        Call::SendMessage { ectx, msg_id, payload, packet_size } => {
            let _ = nic.send_message(st.ectx(ectx), msg_id, &payload, packet_size);
        }
        Call::SendPayloads { ectx, msg_id, payloads } => {
            let _ = nic.send_payloads(st.ectx(ectx), msg_id, &payloads);
        }
        Call::FeedGenerator { messages, packets, size, rate_gbps, concurrent, eth, port } => {
            let g = GenConfig {
                messages: messages as u32 % 16,
                packets_per_message: packets as u32 % 16,
                size,
                rate_gbps,
                concurrent,
                frame: if eth { FrameKind::Eth } else { FrameKind::Ip },
                payload: Payload::Sequence,
                udp_dst_port: port,
                ..GenConfig::default()
            };
            let _ = nic.feed_generator(g);
        }
        Call::RunUntilIdle => {
            let _ = nic.run_until_idle();
        }
        Call::RunFor(ns) => {
            let _ = nic.run_for(ns);
        }
        Call::Events => {
            let _ = nic.events();
        }
        Call::PollNotifications => {
            st.notifications.extend(nic.poll_notifications().iter().map(|n| n.id));
        }
        Call::WaitNotifications => {
            if let Ok(n) = nic.wait_notifications() {
                st.notifications.extend(n.iter().map(|n| n.id));
            }
        }
        Call::Respond { id, value } => {
            let _ = nic.respond(id, value);
        }
        Call::RespondToLast { value } => {
            if let Some(id) = st.notifications.pop() {
                let _ = nic.respond(id, value);
            }
        }
        Call::Report => {
            let _ = nic.report();
        }
        Call::EctxCounts(k) => {
            let _ = nic.ectx_counts(st.ectx(k));
        }
        Call::Counters(k) => {
            let _ = nic.counters(st.ectx(k));
        }
        Call::HpuStdout(h) => {
            let _ = nic.hpu_stdout(h);
        }
        Call::SetNodeTable { nodes, rank } => {
            let n = usize::from(nodes % 5) + 1;
            let table = NodeTable::new(
                (0..n)
                    .map(|k| Node {
                        rank: k as u32,
                        iface: format!("f{k}"),
                        ipv4: std::net::Ipv4Addr::new(10, 0, 0, k as u8 + 1),
                        mac: Mac([2, 0, 0, 0, 0, k as u8 + 1]),
                        udp_port: 21328,
                        netns: None,
                    })
                    .collect(),
            )
            .expect("a valid table");
            let _ = nic.set_node_table(&table, u32::from(rank));
        }
        Call::ExportWindow { ectx, key, offset, size, perms } => {
            let _ = nic.export_window(st.ectx(ectx), key, offset, size, perms);
        }
        Call::RmaPost { ectx, rank, key, offset, op } => {
            let op = match op {
                FuzzRmaOp::Put { local, len } => RmaOp::Put { local, len },
                FuzzRmaOp::Get { local, len } => RmaOp::Get { local, len },
                FuzzRmaOp::FetchAdd { width, addend } => RmaOp::FetchAdd { width, addend },
                FuzzRmaOp::Cas { width, compare, swap } => RmaOp::Cas { width, compare, swap },
            };
            if let Ok(h) = nic.rma_post(st.ectx(ectx), &RmaRequest { rank, key, offset, op }) {
                assert!(st.rma_posted.insert(h), "handle {h:?} issued twice");
            }
        }
        Call::RmaCompletions(k) => {
            for c in nic.rma_completions(st.ectx(k)) {
                assert!(st.rma_posted.contains(&c.handle), "{c:?} never posted");
                assert!(st.rma_done.insert(c.handle), "{c:?} completed twice");
                assert!(c.status <= 7, "{c:?}");
            }
        }
        Call::RmaOutstanding(k) => {
            let _ = nic.rma_outstanding(st.ectx(k));
        }
    }
}

fuzz_target!(|calls: Vec<Call>| {
    // To read a crash: SOFTSPIN_FUZZ_DEBUG=1 cargo fuzz run -s none host_api CRASH
    if std::env::var_os("SOFTSPIN_FUZZ_DEBUG").is_some() {
        eprintln!("{calls:#?}");
    }
    let fpspin = matches!(calls.first(), Some(Call::Open { fpspin: true }));
    let Ok(mut nic) = Nic::open(if fpspin { "fpspin" } else { "pspin" }) else { return };
    let mut st = State::default();
    for (_, elf) in HANDLERS {
        st.images.push(nic.image_from_bytes(elf).expect("prebuilt handler image loads"));
    }
    for c in calls.into_iter().take(64) {
        call(&mut nic, &mut st, c);
    }
});
