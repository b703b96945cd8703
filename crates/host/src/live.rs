//! The live NIC: the engine fed by a real interface (seed 000 §3.2).
//!
//! A [`Port`] (XDP matcher + AF_XDP, or UDP sockets) hands over frames
//! that matched a ruleset; the ruleset names the ECTX, so each frame enters
//! the engine as an arrival routed straight to it (the HER generator's
//! choice in FPsPIN). The engine runs paced by the wall clock: a frame
//! arrives at the NIC time of its reception (NIC time = wall time since
//! attach), and the engine never runs ahead of the wall clock, so message
//! deadlines and wait limits mean what they say. When the engine is slower
//! than the wire it falls behind: frames wait in the port's rings and the
//! packet buffer, and whatever does not fit is dropped and counted by cause.
//! The engine runs in bounded slices of wall time, so a slow handler cannot
//! keep the NIC from its deadline or a stop signal; what it has not
//! processed by then is counted as unprocessed.
//! Frames handlers send go out through the same port. The engine is driven
//! only through its embedding API (`softspin_engine::Engine`, "Embedding"):
//! `inject`, `run_until`, `next_event_ps`, the sent frames, spare frames.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use softspin_engine::stats::{LatencyHist, LatencyNs};
use softspin_engine::traffic::Arrival;
use softspin_engine::EctxId;
pub use softspin_netio::{Mode, PortStats};
use softspin_netio::{NetError, Port, RxFrame};

use crate::{Error, Nic, NicConfig, Result};

/// How to attach a NIC to an interface.
#[derive(Clone, Debug)]
pub struct AttachOptions {
    pub mode: Mode,
    /// The NIC model (default: the "fpspin" profile, whose handlers take
    /// Ethernet frames as the wire gives them).
    pub config: Option<NicConfig>,
    /// Longest `wait_notifications` waits for the wire before returning
    /// empty (a live NIC is never "idle for good").
    pub wait_timeout: Duration,
}

impl Default for AttachOptions {
    fn default() -> Self {
        AttachOptions {
            mode: Mode::Xdp,
            config: None,
            wait_timeout: Duration::from_secs(10),
        }
    }
}

/// What the live NIC did on the wire, with drops by cause (the port's and
/// the host side's; the engine's own buffer drops are in its report).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveStats {
    pub iface: String,
    /// E.g. "xdp on ss0 (1 queue)".
    pub port: String,
    pub rx_frames: u64,
    /// Matched frames, per ECTX (by its ruleset).
    pub matched: u64,
    pub passed_to_kernel: u64,
    /// IPv4 fragments among the matched frames and among those passed to
    /// the kernel ([`PortStats`]; docs/rules.md, "IP fragments").
    pub fragments_matched: u64,
    pub fragments_passed: u64,
    pub tx_frames: u64,
    pub drops: BTreeMap<String, u64>,
    /// Frames taken from the wire and not processed (yet): held by the
    /// engine (the run ended before their handlers did), or left in the
    /// port's rings when matching stopped.
    pub unprocessed: u64,
    pub wall_s: f64,
    /// How long after its NIC time each frame a handler sent reached the
    /// port (the loop's own delay: the wall time the engine took to get
    /// there, plus the step it was found in); with the model's latency it
    /// makes the NIC's share of a round trip (docs/live.md, "Round-trip
    /// time").
    pub tx_lag_ns: LatencyNs,
}

pub(crate) struct Live {
    port: Box<dyn Port>,
    iface: String,
    /// NIC time 0.
    epoch: Instant,
    /// The wall clock (since the UNIX epoch) at NIC time 0, for captures.
    pub(crate) epoch_unix: Duration,
    /// Copies of the matched frames, when capturing (`live_capture`).
    pub(crate) tap: crate::live_capture::RxTap,
    wait_timeout: Duration,
    /// Ruleset index (as installed in the port) -> engine ECTX and the
    /// message number a `Sequence` ruleset gives next.
    routes: Vec<(EctxId, u32)>,
    rx: Vec<RxFrame>,
    /// Host-side drops (the port counts its own).
    drops: BTreeMap<String, u64>,
    /// When the port last delivered a frame or the host last talked to
    /// the NIC (`keep_polling`): the loop busy-polls for SPIN_WINDOW after.
    last_rx: Instant,
    /// The wall clock as of the last step's engine run: the run loop's
    /// deadline checks use it instead of reading the clock again (a clock
    /// read is a good part of an empty step's cost).
    last_now: Instant,
    /// Matched frames still in the port when matching stopped past its
    /// grace (see `stop_matching`).
    left_in_rings: u64,
    /// Receive coalescing (`Nic::set_rx_coalesce`); zero: off.
    rx_coalesce: Duration,
    /// The last step took a burst (at least COALESCE_MIN_BATCH frames).
    burst: bool,
    /// `LiveStats::tx_lag_ns`, in ps.
    tx_lag: LatencyHist,
}

/// Frames taken from the port per step: enough to amortise the engine run
/// that follows, few enough that replies go out promptly.
const RX_BATCH: usize = 64;
/// Longest single sleep, so a stop flag is seen promptly.
const MAX_SLEEP: Duration = Duration::from_millis(20);
/// Longest one step runs the engine: the run loop looks at its deadline and
/// stop flag at least this often (plus one slice), however slow the
/// handlers are next to the wall clock.
const STEP_WALL: Duration = Duration::from_millis(20);
/// NIC time the engine runs between two looks at the wall clock: 10 us is
/// some 10^5 instructions over all HPUs, a millisecond or two of wall time.
const SLICE_PS: u64 = 10_000_000;
/// Frames one step must take for the next empty step to coalesce
/// (`Nic::set_rx_coalesce`): a flood's burst, never a conversation's
/// request.
const COALESCE_MIN_BATCH: usize = 8;
/// Longest receive coalescing `Nic::set_rx_coalesce` accepts: the port's
/// rings must hold what a flood brings meanwhile.
pub const MAX_RX_COALESCE: Duration = Duration::from_millis(1);
/// Longest `stop_matching` spends finishing the frames already taken.
const STOP_GRACE: Duration = Duration::from_millis(250);
/// Engine events due sooner than this, and frames within this long of the
/// last one, are waited for by polling the port, not by sleeping.
const SPIN_WINDOW: Duration = Duration::from_micros(500);

fn net(e: NetError) -> Error {
    Error::Net(e)
}

impl Live {
    fn now_ps(&self) -> u64 {
        self.ps_at(Instant::now())
    }

    fn ps_at(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.epoch).as_nanos())
            .unwrap_or(u64::MAX)
            .saturating_mul(1000)
    }

    fn count_drop(&mut self, cause: &str) {
        *self.drops.entry(cause.to_string()).or_default() += 1;
    }
}

impl Nic {
    /// Open a NIC on a real interface: frames that match an active ECTX's
    /// ruleset run its handlers; every other frame goes to the kernel
    /// untouched. Everything else works as on the simulated NIC. XDP mode
    /// needs root (CAP_NET_ADMIN, CAP_BPF); `Mode::Socket` does not.
    pub fn attach(iface: &str, o: AttachOptions) -> Result<Nic> {
        let cfg = match o.config {
            Some(c) => c,
            None => NicConfig::profile("fpspin").ok_or_else(|| Error::Profile("fpspin".into()))?,
        };
        let mut nic = Nic::with_config(cfg)?;
        let port = softspin_netio::open_port(iface, o.mode).map_err(net)?;
        let (epoch, epoch_unix) = crate::live_capture::epoch_pair();
        nic.live = Some(Live {
            port,
            iface: iface.to_string(),
            epoch,
            epoch_unix,
            tap: Default::default(),
            wait_timeout: o.wait_timeout,
            routes: Vec::new(),
            rx: Vec::with_capacity(RX_BATCH),
            drops: BTreeMap::new(),
            last_rx: Instant::now(),
            last_now: Instant::now(),
            left_in_rings: 0,
            rx_coalesce: Duration::ZERO,
            burst: false,
            tx_lag: LatencyHist::default(),
        });
        Ok(nic)
    }

    /// Program the port's matcher with the rulesets of the active ECTXs, in
    /// install order (the first that matches a frame wins), as FPsPIN's
    /// `fpspin_init` programs the matching engine last.
    pub(crate) fn reprogram_matcher(&mut self) -> Result<()> {
        let Some(live) = self.live.as_mut() else {
            return Ok(());
        };
        let mut order: Vec<(&u32, &crate::EctxInfo)> = self.ectxs.iter().collect();
        order.sort_by_key(|(h, _)| **h);
        let mut rules = Vec::new();
        let mut routes = Vec::new();
        for (_, info) in order {
            let active = self.engine.ectx(info.id).is_some_and(|e| e.active);
            if active {
                rules.extend(info.rules.iter().cloned());
                routes.extend(info.rules.iter().map(|_| (info.id, 0)));
            }
        }
        live.port.set_rulesets(&rules).map_err(net)?;
        live.routes = routes;
        Ok(())
    }

    /// One step of the live NIC: take up to `max_rx` frames from the port
    /// (waiting at most `wait` for them), inject them, run the engine up to
    /// the wall clock and send what the handlers sent. Returns the number
    /// of frames taken.
    fn live_step(&mut self, wait: Duration, max_rx: usize) -> Result<usize> {
        let slot = self.engine.config().pkt_slot_size as usize;
        let live = self.live.as_mut().expect("live_step on a live NIC");
        // Sleep no longer than until the engine's next event is due, and not
        // at all when it is near: waking from a sleep costs tens of
        // microseconds (far more in a VM), a handler's reply is due within
        // microseconds, so the NIC polls then, as a NIC's cores would.
        // Likewise for a while after the last frame (NAPI-style busy
        // polling): the next request of a conversation then finds the NIC
        // awake.
        // One clock read serves the busy test and the wait; the frames carry
        // their own reception time.
        let t0 = Instant::now();
        let busy = t0.saturating_duration_since(live.last_rx) <= SPIN_WINDOW;
        let wait = match self.engine.next_event_ps() {
            _ if busy => Duration::ZERO,
            Some(t) => match Duration::from_nanos(t.saturating_sub(live.ps_at(t0)) / 1000) {
                d if d <= SPIN_WINDOW => Duration::ZERO,
                d => wait.min(d),
            },
            None => wait,
        };
        let wait = wait.min(MAX_SLEEP);
        let mut rx = std::mem::take(&mut live.rx);
        live.port.recv(&mut rx, max_rx, wait).map_err(net)?;
        let taken = rx.len();
        if let Some(f) = rx.last() {
            live.last_rx = live.last_rx.max(f.at);
        }
        for f in rx.drain(..) {
            let time_ps = live.ps_at(f.at);
            let Some(route) = live.routes.get_mut(f.ruleset) else {
                live.tap
                    .record(&f, time_ps, None, None, Some("no_ectx_for_ruleset"));
                live.count_drop("no_ectx_for_ruleset");
                live.port.recycle(f.frame);
                continue;
            };
            if f.frame.len() > slot {
                let cause = "larger_than_packet_slot";
                live.tap
                    .record(&f, time_ps, Some(route.0), None, Some(cause));
                live.count_drop(cause);
                live.port.recycle(f.frame);
                continue;
            }
            let msg_id = f.msg_id.unwrap_or_else(|| {
                let n = route.1;
                route.1 = n.wrapping_add(1);
                n
            });
            let ectx = Some(route.0);
            live.tap.record(&f, time_ps, ectx, Some(msg_id), None);
            self.engine.inject(Arrival {
                time_ps,
                frame: f.frame,
                msg_id,
                eom: f.eom,
                origin: "".into(),
                ectx,
            });
        }
        live.rx = rx;
        // Nothing came and nothing was waited for: the clock has barely
        // moved since t0 (a busy-polling NIC steps like this all the time).
        let t = if taken == 0 && wait.is_zero() {
            t0
        } else {
            Instant::now()
        };
        live.last_now = t;
        let target = live.ps_at(t).max(self.engine.now_ps());
        // Up to the wall clock in slices of NIC time, for at most STEP_WALL:
        // an engine slower than the wire falls behind instead of holding the
        // loop (idle stretches are skipped in one go).
        let give_up = t + STEP_WALL;
        let mut target = target;
        loop {
            let until = match self.engine.next_event_ps() {
                Some(e) if e < target => target.min(e.saturating_add(SLICE_PS)),
                _ => target,
            };
            self.engine.run_until(until)?;
            if until >= target {
                // The wall clock moved on while the handlers ran: what fell
                // due meanwhile (a short handler's reply, due a fraction of
                // a microsecond after its request) goes out in this step,
                // not one loop turn later.
                match self.engine.next_event_ps() {
                    Some(e) if e <= target.saturating_add(SLICE_PS) => {
                        let now = Instant::now();
                        let n = live.ps_at(now);
                        if e > n || now >= give_up {
                            break;
                        }
                        live.last_now = now;
                        target = n;
                    }
                    _ => break,
                }
            } else if Instant::now() >= give_up {
                break;
            }
        }
        // The frames' vectors, copied into the packet buffer, go back to the
        // port for the next frames: no allocation per frame.
        while let Some(f) = self.engine.take_spare_frame() {
            live.port.recycle(f);
        }
        // What the handlers sent goes to the wire before it becomes events.
        let out = self.engine.outbound();
        let sent = !out.is_empty();
        if sent {
            let now = live.now_ps();
            for o in out {
                live.tx_lag.record(now.saturating_sub(o.time_ps));
                live.port.send(&o.frame).map_err(net)?;
            }
            live.port.flush().map_err(net)?;
        }
        self.collect();
        // A handler waiting on an op to a failed node gets PEER_FAILED even
        // when no host program posts on this NIC (rma_completions is then
        // never called).
        self.rma_fail_handler_ops_now();
        // A busy-polling step that found nothing to do gives its CPU to
        // whatever else is runnable there (another node's NIC, the host
        // program): with more pollers than cores, a NIC that just woke for
        // a frame otherwise waits for a poller's time slice to end (ms).
        // Alone on its core, the yield returns at once. Not while a handler
        // waits for the host's answer, nor while an event falls due within
        // SPIN_WINDOW (a reply on its way out): under load a yield can cost
        // a time slice, and both run on the wall clock.
        let live = self.live.as_mut().expect("live");
        let burst = std::mem::replace(&mut live.burst, taken >= COALESCE_MIN_BATCH);
        if taken == 0 && !sent && wait.is_zero() && !self.engine.waits_for_host() {
            // Receive coalescing: the ring ran dry right after a burst, so
            // the NIC is in a flood; sleep instead of polling, leaving the
            // CPU to whatever feeds the wire (on veth, the senders, which
            // also run the receive side's XDP and copy), and take the next
            // burst whole. The engine catches up with the wall clock on
            // waking (its events keep their NIC times).
            let soon = live.ps_at(live.last_now) + SPIN_WINDOW.as_nanos() as u64 * 1000;
            if burst && !live.rx_coalesce.is_zero() {
                std::thread::sleep(live.rx_coalesce);
            } else if self.engine.next_event_ps().is_none_or(|e| e > soon) {
                std::thread::yield_now();
            }
        }
        Ok(taken)
    }

    /// Run the live NIC for `d` of wall time, or until `stop` is set.
    pub fn run_live(&mut self, d: Option<Duration>, stop: &AtomicBool) -> Result<()> {
        self.run_live_with(d, stop, |_| {})
    }

    /// [`Nic::run_live`], calling `every` after each step (drain events,
    /// answer notifications, print progress).
    pub fn run_live_with(
        &mut self,
        d: Option<Duration>,
        stop: &AtomicBool,
        mut every: impl FnMut(&mut Nic),
    ) -> Result<()> {
        self.require_live()?;
        let end = d.map(|d| Instant::now() + d);
        while !stop.load(Ordering::Relaxed) {
            // The clock as of the last step (microseconds old at most).
            let last_now = self.live.as_ref().expect("live").last_now;
            let left = match end {
                Some(e) => match e.checked_duration_since(last_now) {
                    Some(l) if !l.is_zero() => l,
                    _ => break,
                },
                None => MAX_SLEEP,
            };
            self.live_step(left, RX_BATCH)?;
            every(self);
        }
        Ok(())
    }

    fn require_live(&self) -> Result<()> {
        match self.live {
            Some(_) => Ok(()),
            None => Err(Error::Invalid(
                "this NIC is simulated; attach it to an interface first (Nic::attach)".into(),
            )),
        }
    }

    /// Live: process what has arrived until the engine has nothing left
    /// to do, without waiting for more, or until `end`. At most what the
    /// port's rings hold is taken, so a flood cannot keep it from returning.
    pub(crate) fn live_until_idle(&mut self, end: Option<Instant>) -> Result<()> {
        let mut budget = self.live.as_ref().expect("live").port.rx_capacity();
        loop {
            let taken = self.live_step(Duration::ZERO, budget.min(RX_BATCH))?;
            budget -= taken;
            let live = self.live.as_ref().expect("live");
            if self.engine.is_idle() && (taken == 0 || budget == 0)
                || end.is_some_and(|e| live.last_now >= e)
            {
                return Ok(());
            }
            // Only timers left: sleep until the next is due.
            if let Some(t) = self.engine.next_event_ps() {
                let now = live.now_ps();
                if t > now {
                    std::thread::sleep(Duration::from_nanos((t - now) / 1000).min(MAX_SLEEP));
                }
            }
        }
    }

    /// Live: run for `ns` of wall time.
    pub(crate) fn live_for(&mut self, ns: u64) -> Result<()> {
        self.run_live(Some(Duration::from_nanos(ns)), &AtomicBool::new(false))
    }

    /// Stop taking frames from the wire (the matcher gets no rulesets:
    /// everything goes to the kernel), then finish the frames already
    /// taken, for at most `STOP_GRACE`: what is left then (in the engine or
    /// the port's rings) is counted in [`LiveStats::unprocessed`]. The port
    /// itself (XDP program, sockets) goes when the NIC is dropped.
    pub fn stop_matching(&mut self) -> Result<()> {
        self.require_live()?;
        let end = Instant::now() + STOP_GRACE;
        // What the rings hold still matches the current rulesets.
        self.live_until_idle(Some(end))?;
        if Instant::now() >= end {
            // Counted before the sockets close (socket mode) and take
            // their queued datagrams with them.
            self.discard_rings()?;
        }
        self.live
            .as_mut()
            .expect("live")
            .port
            .set_rulesets(&[])
            .map_err(net)?;
        self.live_until_idle(Some(end))?;
        self.discard_rings()
    }

    /// Take every frame the port still holds and count it as unprocessed.
    fn discard_rings(&mut self) -> Result<()> {
        let live = self.live.as_mut().expect("live");
        let mut rx = std::mem::take(&mut live.rx);
        // Bounded: the rings hold at most this many, and nothing new
        // matches once the rulesets are gone.
        for _ in 0..live.port.rx_capacity() {
            live.port
                .recv(&mut rx, RX_BATCH, Duration::ZERO)
                .map_err(net)?;
            if rx.is_empty() {
                break;
            }
            live.left_in_rings += rx.len() as u64;
            for f in rx.drain(..) {
                live.port.recycle(f.frame);
            }
        }
        live.rx = rx;
        Ok(())
    }

    /// Live: wait (at most `wait_timeout`) until a notification arrives.
    pub(crate) fn live_wait_notifications(&mut self) -> Result<Vec<crate::Notification>> {
        let timeout = self
            .live
            .as_ref()
            .map(|l| l.wait_timeout)
            .unwrap_or_default();
        let end = Instant::now() + timeout;
        loop {
            let n = self.poll_notifications();
            if !n.is_empty() {
                return Ok(n);
            }
            let Some(left) = end.checked_duration_since(Instant::now()) else {
                return Ok(n);
            };
            self.live_step(left, RX_BATCH)?;
        }
    }

    /// Receive coalescing, as a NIC's interrupt moderation (`ethtool -C
    /// rx-usecs`): when a step that took a burst of frames is followed by an
    /// empty one, the live loop sleeps `d` instead of polling, and takes
    /// what came meanwhile in one go.
    /// Raises the receive rate when the loop shares cores with the traffic's
    /// source (docs/live.md, "Receive rate"); a frame of a flood waits up to
    /// `d` longer, and so may a handler's reply to it. Single requests (a
    /// ping-pong) never trigger it. Zero (the
    /// default) turns it off; at most [`MAX_RX_COALESCE`].
    pub fn set_rx_coalesce(&mut self, d: Duration) -> Result<()> {
        if d > MAX_RX_COALESCE {
            return Err(Error::Invalid(format!(
                "receive coalescing {} us: at most {} us",
                d.as_micros(),
                MAX_RX_COALESCE.as_micros()
            )));
        }
        self.require_live()?;
        self.live.as_mut().expect("live").rx_coalesce = d;
        Ok(())
    }

    /// The host is in a conversation with the NIC (a control-socket client
    /// posting RMA operations one after another): busy-poll for a while, as
    /// after a frame, instead of sleeping up to MAX_SLEEP before the next
    /// request is seen.
    pub fn keep_polling(&mut self) {
        if let Some(l) = self.live.as_mut() {
            l.last_rx = l.last_rx.max(Instant::now());
        }
    }

    /// What the live NIC did on the wire; `None` for a simulated NIC.
    pub fn live_stats(&self) -> Option<LiveStats> {
        let live = self.live.as_ref()?;
        let p: PortStats = live.port.stats();
        let mut drops = p.drops.clone();
        for (k, v) in &live.drops {
            *drops.entry(k.clone()).or_default() += v;
        }
        Some(LiveStats {
            iface: live.iface.clone(),
            port: live.port.describe(),
            rx_frames: p.rx_frames,
            matched: p.matched.iter().sum(),
            passed_to_kernel: p.passed_to_kernel,
            fragments_matched: p.fragments_matched,
            fragments_passed: p.fragments_passed,
            tx_frames: p.tx_frames,
            drops,
            unprocessed: self.engine.packets_held() + live.left_in_rings,
            wall_s: live.epoch.elapsed().as_secs_f64(),
            tx_lag_ns: live.tx_lag.summary_ns(),
        })
    }
}
