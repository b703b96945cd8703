//! A port: where the live NIC gets frames and sends them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::rules::Ruleset;
use crate::NetError;

/// How the live NIC reaches the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// XDP matcher on the interface + AF_XDP sockets on its queues (root).
    #[default]
    Xdp,
    /// UDP sockets bound to the `udp:` rules' ports; frames are synthesised.
    Socket,
}

/// A frame that matched ruleset `ruleset`, as received.
#[derive(Clone, Debug)]
pub struct RxFrame {
    /// Starting at the Ethernet header.
    pub frame: Vec<u8>,
    /// Index of the ruleset that matched (the first in order that does).
    pub ruleset: usize,
    /// The ruleset's end-of-message unit matched.
    pub eom: bool,
    /// From the ruleset's message-id field; `None` for `MsgIdField::Sequence`
    /// (the caller numbers such messages).
    pub msg_id: Option<u32>,
    /// When the port took it off the wire.
    pub at: Instant,
}

/// Counters of a port since it opened. `drops` names each cause.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames the matcher saw (matched + passed to the kernel).
    pub rx_frames: u64,
    /// Frames matched, per ruleset index.
    pub matched: Vec<u64>,
    /// Frames left to the kernel stack (matched no ruleset).
    pub passed_to_kernel: u64,
    /// IPv4 fragments among the matched frames and among those passed to
    /// the kernel (rules::is_ipv4_fragment): a datagram split in fragments
    /// is matched (if at all) by its first one only, so neither side has it
    /// whole. Socket mode gets datagrams reassembled: none.
    pub fragments_matched: u64,
    pub fragments_passed: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Frames lost, by cause (e.g. "rx_ring_full", "fill_ring_empty",
    /// "tx_ring_full", "tx_not_udp").
    pub drops: BTreeMap<String, u64>,
}

pub trait Port {
    /// Install rulesets (index = ruleset id), replacing the previous ones.
    /// No rulesets: every frame goes to the kernel.
    fn set_rulesets(&mut self, rules: &[Ruleset]) -> Result<(), NetError>;
    /// Append up to `max` received, matched frames to `out`; wait at most
    /// `timeout` for the first one (zero: do not wait).
    fn recv(
        &mut self,
        out: &mut Vec<RxFrame>,
        max: usize,
        timeout: Duration,
    ) -> Result<(), NetError>;
    /// Queue one frame (starting at the Ethernet header) for sending. A frame
    /// the port cannot send is counted in `drops` by cause, not an error.
    fn send(&mut self, frame: &[u8]) -> Result<(), NetError>;
    /// Push queued frames to the wire.
    fn flush(&mut self) -> Result<(), NetError>;
    /// Hand back a frame vector `recv` gave out, for a later frame to reuse
    /// (no allocation per received frame). Ports may simply drop it.
    fn recycle(&mut self, frame: Vec<u8>) {
        drop(frame);
    }
    fn stats(&self) -> PortStats;
    /// Most matched frames the port holds taken off the wire and not yet
    /// handed out by `recv` (its receive rings): bounds a loop that drains it.
    fn rx_capacity(&self) -> usize {
        4096
    }
    /// E.g. "xdp on veth0 (2 queues, native mode)".
    fn describe(&self) -> String;
}

/// Open a port on `iface` in `mode`, with no rulesets yet.
/// The calling thread is taken to be the one that will poll it: its timer
/// slack drops to 1 us, since the live NIC waits microseconds for a
/// handler's reply to fall due (the default slack is 50 us).
pub fn open_port(iface: &str, mode: Mode) -> Result<Box<dyn Port>, NetError> {
    // SAFETY: PR_SET_TIMERSLACK takes a value and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    match mode {
        Mode::Xdp => Ok(Box::new(crate::xsk::XdpPort::open(iface)?)),
        Mode::Socket => Ok(Box::new(crate::socket::SocketPort::open(iface)?)),
    }
}

/// Wait until one of `fds` is readable, at most `timeout` (rounded up to
/// whole milliseconds; zero: do not wait). `Ok(false)` on timeout or when a
/// signal interrupted the wait (the caller simply returns no frames).
pub(crate) fn poll_fds(fds: &[std::os::fd::RawFd], timeout: Duration) -> std::io::Result<bool> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // ppoll, not poll: the live NIC waits microseconds for a handler's reply
    // to fall due, and poll's whole milliseconds would delay it that long.
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: pfds is a live array of pfds.len() pollfd; ts outlives the call.
    let n = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::EINTR) {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(n > 0)
}
