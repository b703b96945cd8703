//! FPsPIN's matching engine (seed 000 §3.2.1) as an XDP program
//! (`bpf/match.bpf.c`, built by build.rs): rules in a BPF array map, matched
//! frames redirected to the AF_XDP socket of their RX queue, everything else
//! `XDP_PASS` to the kernel stack (the bypass). Contract:
//!
//! ```ignore
//! pub struct XdpMatcher;            // loaded + attached via a BPF link (detaches when dropped or the process dies)
//! impl XdpMatcher {
//!     pub fn attach(iface: &str) -> Result<XdpMatcher, NetError>;        // no rulesets: all frames XDP_PASS
//!     pub fn set_rulesets(&mut self, r: &[Ruleset]) -> Result<(), NetError>;
//!     pub fn register_socket(&mut self, queue: u32, fd: std::os::fd::RawFd) -> Result<(), NetError>;
//!     pub fn stats(&self) -> Result<XdpStats, NetError>;
//!     pub fn queues(iface: &str) -> Result<u32, NetError>;              // RX queues of the interface
//! }
//! pub struct XdpStats { pub matched: Vec<u64>, pub passed: u64, pub no_socket: u64, pub fragments_matched: u64, pub fragments_passed: u64 }
//! ```
//!
//! The program decides only *whether* and *by which ruleset* a frame matched;
//! end of message and message id are recomputed in userspace by
//! [`Matcher::classify`](crate::rules::Matcher::classify) on the received frame.
//! A matched frame on a queue without a registered socket is passed to the
//! kernel (`bpf_redirect_map`'s `XDP_PASS` fallback) and counted in `no_socket`.

use std::ffi::CString;
use std::os::fd::RawFd;

use aya::maps::{Array, MapData, PerCpuArray, XskMap};
use aya::programs::links::{FdLink, LinkType};
use aya::programs::{TestRun, TestRunOptions, Xdp, XdpMode};
use aya::Ebpf;

use crate::rules::{abi, validate_rulesets, Ruleset, MAX_RULESETS, MAX_UNITS};
use crate::NetError;

/// The program's object file, compiled by build.rs.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/match.bpf.o"));
const PROGRAM: &str = "softspin_match";

/// Frames shorter than an Ethernet header: the kernel never hands XDP such
/// frames, and `BPF_PROG_TEST_RUN` refuses them.
pub const ETH_HLEN: usize = softspin_wire::ETHERNET_HEADER_LEN;

// The map value, field by field as `struct match_config` in match_abi.h (which
// asserts it has no padding; aya checks the size when the map is opened).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AbiUnit {
    index: u32,
    mask: u32,
    start: u32,
    end: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AbiRuleset {
    n_units: u32,
    mode: u32,
    units: [AbiUnit; MAX_UNITS],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AbiConfig {
    n_rulesets: u32,
    rulesets: [AbiRuleset; MAX_RULESETS],
}

// SAFETY: plain integers, no padding (checked below and in match_abi.h).
unsafe impl aya::Pod for AbiConfig {}
const _: () = assert!(std::mem::size_of::<AbiConfig>() == 4 + MAX_RULESETS * (8 + MAX_UNITS * 16));

/// The program's counters, summed over CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XdpStats {
    /// Frames matched, per ruleset index (the installed rulesets only).
    pub matched: Vec<u64>,
    /// Frames no ruleset matched, left to the kernel stack.
    pub passed: u64,
    /// Matched frames whose queue had no AF_XDP socket (passed to the kernel).
    pub no_socket: u64,
    /// IPv4 fragments among the matched frames, and among those passed.
    pub fragments_matched: u64,
    pub fragments_passed: u64,
}

/// The XDP matcher, loaded and (unless made by [`XdpMatcher::load_unattached`])
/// attached in native mode through a BPF link: the kernel detaches it when
/// the link's last fd closes, i.e. when this is dropped or the process dies.
pub struct XdpMatcher {
    // Field order: the link is dropped (detached) before the program unloads.
    link: Option<FdLink>,
    ebpf: Ebpf,
    iface: Option<String>,
    n_rulesets: usize,
}

impl XdpMatcher {
    /// Loads the program without attaching it (tests: [`XdpMatcher::test_run`]).
    pub fn load_unattached() -> Result<XdpMatcher, NetError> {
        let mut ebpf =
            Ebpf::load(OBJECT).map_err(|e| classify("loading the XDP matcher", None, &e))?;
        let prog: &mut Xdp = program(&mut ebpf)?;
        prog.load()
            .map_err(|e| classify("loading the XDP matcher into the kernel", None, &e))?;
        let mut m = XdpMatcher {
            link: None,
            ebpf,
            iface: None,
            n_rulesets: 0,
        };
        m.set_rulesets(&[])?;
        Ok(m)
    }

    /// Loads the program and attaches it to `iface` in native (driver) mode.
    /// No rulesets yet: every frame is passed to the kernel.
    pub fn attach(iface: &str) -> Result<XdpMatcher, NetError> {
        if_index(iface)?;
        let mut m = XdpMatcher::load_unattached()?;
        let what = format!("attaching the XDP matcher to `{iface}`");
        let prog: &mut Xdp = program(&mut m.ebpf)?;
        let id = prog
            .attach(iface, XdpMode::Driver)
            .map_err(|e| classify(&what, Some(iface), &e))?;
        // aya falls back to a netlink attach when bpf_link_create is refused;
        // such an attachment outlives a killed process, so we refuse it.
        let prog_id = prog
            .info()
            .map_err(|e| classify(&what, Some(iface), &e))?
            .id();
        let has_link = aya::programs::loaded_links()
            .filter_map(Result::ok)
            .any(|l| l.program_id() == prog_id && matches!(l.link_type(), Ok(LinkType::Xdp)));
        if !has_link {
            let _ = prog.detach(id);
            return Err(NetError::Unsupported(format!(
                "{what}: the kernel did not create a BPF link (netlink attach only); a killed process would leave the program attached"
            )));
        }
        let link = prog
            .take_link(id)
            .map_err(|e| classify(&what, Some(iface), &e))?;
        let link = FdLink::try_from(link).map_err(|e| {
            NetError::Unsupported(format!("{what}: not attached through a BPF link: {e}"))
        })?;
        m.link = Some(link);
        m.iface = Some(iface.to_string());
        Ok(m)
    }

    /// The interface the program is attached to (`None`: not attached).
    pub fn iface(&self) -> Option<&str> {
        self.iface.as_deref()
    }

    /// Installs `rulesets` (index = ruleset id, first match wins), replacing
    /// the previous ones in one map update.
    pub fn set_rulesets(&mut self, rulesets: &[Ruleset]) -> Result<(), NetError> {
        validate_rulesets(rulesets)?;
        let mut cfg = AbiConfig {
            n_rulesets: rulesets.len() as u32,
            ..Default::default()
        };
        for (dst, rs) in cfg.rulesets.iter_mut().zip(rulesets) {
            dst.n_units = rs.units.len() as u32;
            dst.mode = rs.mode.abi();
            for (d, u) in dst.units.iter_mut().zip(&rs.units) {
                *d = AbiUnit {
                    index: u.index,
                    mask: u.mask,
                    start: u.start,
                    end: u.end,
                };
            }
        }
        let map = self
            .ebpf
            .map_mut("config")
            .ok_or_else(|| missing("config"))?;
        let mut config: Array<&mut MapData, AbiConfig> =
            Array::try_from(map).map_err(|e| classify("opening the rules map", None, &e))?;
        config
            .set(0, cfg, 0)
            .map_err(|e| classify("writing the rules map", None, &e))?;
        self.n_rulesets = rulesets.len();
        Ok(())
    }

    /// Sends frames matched on RX queue `queue` to the AF_XDP socket `fd`.
    pub fn register_socket(&mut self, queue: u32, fd: RawFd) -> Result<(), NetError> {
        if queue >= abi::MAX_QUEUES {
            return Err(NetError::Unsupported(format!(
                "RX queue {queue}: the XDP matcher serves queues 0..{} (MAX_QUEUES)",
                abi::MAX_QUEUES
            )));
        }
        let map = self.ebpf.map_mut("xsks").ok_or_else(|| missing("xsks"))?;
        let mut xsks =
            XskMap::try_from(map).map_err(|e| classify("opening the socket map", None, &e))?;
        xsks.set(queue, fd, 0).map_err(|e| {
            classify(
                &format!("registering the AF_XDP socket of queue {queue}"),
                None,
                &e,
            )
        })
    }

    /// The program's counters since it was loaded.
    pub fn stats(&self) -> Result<XdpStats, NetError> {
        let c = self.counters()?;
        Ok(XdpStats {
            // Every ruleset slot: counts outlive reprogramming (stop_matching).
            matched: c[..MAX_RULESETS].to_vec(),
            passed: c[abi::COUNTER_PASSED as usize],
            no_socket: c[abi::COUNTER_NO_SOCKET as usize],
            fragments_matched: c[abi::COUNTER_FRAGMENT_MATCHED as usize],
            fragments_passed: c[abi::COUNTER_FRAGMENT_PASSED as usize],
        })
    }

    fn counters(&self) -> Result<Vec<u64>, NetError> {
        let map = self
            .ebpf
            .map("counters")
            .ok_or_else(|| missing("counters"))?;
        let counters: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(map).map_err(|e| classify("opening the counters", None, &e))?;
        (0..abi::N_COUNTERS)
            .map(|i| {
                counters
                    .get(&i, 0)
                    .map(|per_cpu| per_cpu.iter().sum())
                    .map_err(|e| classify("reading the counters", None, &e))
            })
            .collect()
    }

    /// Runs the program once on `frame` with `BPF_PROG_TEST_RUN`: the XDP
    /// action it returned and the ruleset whose counter moved (`None`: no
    /// ruleset matched). Frames shorter than [`ETH_HLEN`] are refused, as the
    /// kernel refuses them.
    pub fn test_run(&mut self, frame: &[u8]) -> Result<(u32, Option<usize>), NetError> {
        if frame.len() < ETH_HLEN {
            return Err(NetError::Unsupported(format!(
                "test run of a {}-byte frame: BPF_PROG_TEST_RUN needs at least {ETH_HLEN} bytes (XDP never sees shorter frames)",
                frame.len()
            )));
        }
        let before = self.counters()?;
        let prog: &mut Xdp = program(&mut self.ebpf)?;
        let opts = TestRunOptions {
            data_in: Some(frame),
            ..Default::default()
        };
        let r = prog
            .test_run(opts)
            .map_err(|e| classify("BPF_PROG_TEST_RUN", None, &e))?;
        let after = self.counters()?;
        let moved: Vec<usize> = (0..MAX_RULESETS)
            .filter(|&i| after[i] != before[i])
            .collect();
        match moved.as_slice() {
            [] => Ok((r.return_value, None)),
            [i] => Ok((r.return_value, Some(*i))),
            _ => Err(NetError::Unsupported(format!(
                "test run: several ruleset counters moved: {moved:?}"
            ))),
        }
    }

    /// RX queues of `iface`: the driver's channel counts (ethtool
    /// `ETHTOOL_GCHANNELS`, asked in the caller's network namespace), else the
    /// `rx-*` entries in /sys/class/net/IFACE/queues.
    pub fn queues(iface: &str) -> Result<u32, NetError> {
        if_index(iface)?;
        if let Some(n) = ethtool_rx_channels(iface) {
            return Ok(n);
        }
        let dir = format!("/sys/class/net/{iface}/queues");
        let entries =
            std::fs::read_dir(&dir).map_err(|e| NetError::io(format!("reading {dir}"), e))?;
        let n = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
            .count();
        Ok(n as u32)
    }
}

/// RX + combined channels from `SIOCETHTOOL`/`ETHTOOL_GCHANNELS`; `None` when
/// the driver does not say.
fn ethtool_rx_channels(iface: &str) -> Option<u32> {
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    #[repr(C)]
    #[derive(Default)]
    struct EthtoolChannels {
        cmd: u32,
        max_rx: u32,
        max_tx: u32,
        max_other: u32,
        max_combined: u32,
        rx_count: u32,
        tx_count: u32,
        other_count: u32,
        combined_count: u32,
    }
    #[repr(C)]
    struct IfReq {
        name: [libc::c_char; libc::IFNAMSIZ],
        data: *mut EthtoolChannels,
        _pad: [u8; 16],
    }
    if iface.len() >= libc::IFNAMSIZ {
        return None;
    }
    let mut ch = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..Default::default()
    };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: &mut ch,
        _pad: [0; 16],
    };
    for (d, s) in req.name.iter_mut().zip(iface.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: a datagram socket closed below; the ioctl writes only into `ch`.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let r = libc::ioctl(fd, SIOCETHTOOL as _, &mut req);
        libc::close(fd);
        if r != 0 {
            return None;
        }
    }
    let n = ch.rx_count + ch.combined_count;
    (n > 0).then_some(n)
}

fn program(ebpf: &mut Ebpf) -> Result<&mut Xdp, NetError> {
    ebpf.program_mut(PROGRAM)
        .ok_or_else(|| missing(PROGRAM))?
        .try_into()
        .map_err(|e| classify("the XDP matcher object", None, &e))
}

fn missing(what: &str) -> NetError {
    NetError::Unsupported(format!(
        "the XDP matcher object has no `{what}` (build.rs out of date?)"
    ))
}

fn if_index(iface: &str) -> Result<u32, NetError> {
    let c = CString::new(iface).map_err(|_| NetError::NoSuchInterface(iface.to_string()))?;
    // SAFETY: a valid NUL-terminated string.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(NetError::NoSuchInterface(iface.to_string())),
        i => Ok(i),
    }
}

/// Turns an aya error into ours by the errno at the bottom of its chain:
/// EPERM/EACCES -> NotPermitted, EBUSY/EEXIST (a program already there) ->
/// XdpBusy, anything else -> Unsupported with the whole chain.
fn classify(what: &str, iface: Option<&str>, e: &(dyn std::error::Error + 'static)) -> NetError {
    let mut chain = e.to_string();
    let mut errno = None;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            errno = errno.or(io.raw_os_error());
        }
        if let Some(aya::programs::ProgramError::UnknownInterface { name }) = err.downcast_ref() {
            return NetError::NoSuchInterface(name.clone());
        }
        cur = err.source();
        if let Some(s) = cur {
            chain.push_str(": ");
            chain.push_str(&s.to_string());
        }
    }
    match (errno, iface) {
        (Some(libc::EPERM) | Some(libc::EACCES), _) => NetError::NotPermitted {
            what: what.to_string(),
        },
        (Some(libc::EBUSY) | Some(libc::EEXIST), Some(i)) => NetError::XdpBusy {
            iface: i.to_string(),
        },
        _ => NetError::Unsupported(format!("{what}: {chain}")),
    }
}
