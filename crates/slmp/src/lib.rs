//! softspin-slmp: the sender side of SLMP, the sPIN Lightweight Messaging
//! Protocol (seed 000 §5.1 "Messaging and Reliability Layer: SLMP", §7.3
//! "Advanced Flow Control in SLMP"). The wire format is
//! `softspin_wire::slmp`; the receiver is the NIC's handlers (stateless:
//! they ACK each SYN segment and write each payload at its offset).
//!
//! What this crate adds to FPsPIN's sender: retransmission after an RTO
//! measured from RTT (RFC 6298 with Karn's rule and backoff, [`rto`]),
//! reordering-tolerant loss detection (RACK, RFC 8985, [`rack`]), an
//! adaptive AIMD window that undoes spurious decreases ([`window`]), a
//! bounded give-up and statistics.
//! `docs/slmp.md` describes the protocol as implemented.

use std::fmt;
use std::time::Duration;

pub mod args;
pub mod rack;
pub mod rto;
pub mod sender;
pub mod stats;
pub mod window;

pub use rto::{RtoConfig, RtoEstimator};
pub use sender::{
    Progress, Sender, SenderConfig, SyncMode, DEFAULT_SEGMENT, MAX_MESSAGE, MAX_SEGMENT, MAX_WINDOW,
};
pub use softspin_wire::slmp::UDP_PORT;
pub use stats::Stats;
pub use window::{Aimd, WindowMode};

/// Why the sender stopped trying.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GiveUpReason {
    /// A segment was lost again after `count` retransmissions.
    Retransmits { offset: u32, count: u32, limit: u32 },
    /// No new ACK for `idle`.
    NoProgress {
        idle: Duration,
        icmp_unreachable: u64,
    },
}

impl fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GiveUpReason::Retransmits {
                offset,
                count,
                limit,
            } => {
                write!(f, "segment at offset {offset} still unacknowledged after {count} retransmissions (limit max_retransmits = {limit})")
            }
            GiveUpReason::NoProgress {
                idle,
                icmp_unreachable,
            } => {
                write!(
                    f,
                    "no ACK for {:.1} s (limit idle_timeout)",
                    idle.as_secs_f64()
                )?;
                if *icmp_unreachable > 0 {
                    write!(f, "; the peer answered {icmp_unreachable} times with ICMP unreachable (nothing listens there?)")?;
                }
                Ok(())
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("SLMP sender: {field} = {value} is out of range: {limit}")]
    Config {
        field: &'static str,
        value: String,
        limit: &'static str,
    },
    #[error("SLMP message {index} is {len} B: the 32-bit offset limits a message to 4 GiB (seed 000 §5.1.2)")]
    MessageTooLarge { index: usize, len: u64 },
    #[error("SLMP socket {what}: {source}")]
    Io {
        what: &'static str,
        source: std::io::Error,
    },
    /// The statistics of the transfer up to the give-up are attached.
    #[error("SLMP gave up on message id {msg_id} (message {index} of the batch): {reason}")]
    GaveUp {
        msg_id: u32,
        index: usize,
        reason: GiveUpReason,
        stats: Box<Stats>,
    },
}

impl Error {
    pub(crate) fn io(what: &'static str, source: std::io::Error) -> Error {
        Error::Io { what, source }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Wait until `sock` has a datagram or `timeout` passed; true when
/// readable. ppoll, not SO_RCVTIMEO: the kernel rounds socket timeouts up
/// to whole jiffies (4 ms at HZ=250), a hundred loopback RTTs.
pub fn wait_readable(sock: &std::net::UdpSocket, timeout: Duration) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0)
}

/// Send `data` on the connected `sock` as one UDP GSO datagram: the kernel
/// cuts it into datagrams of `seg` bytes (the last may be shorter), each
/// with its own UDP and IP headers (UDP_SEGMENT, Linux 4.18).
pub(crate) fn send_gso(
    sock: &std::net::UdpSocket,
    data: &[u8],
    seg: u16,
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    const SPACE: usize = 32; // CMSG_SPACE(2) is 24 on 64-bit Linux
    let mut control = [0u64; SPACE / 8];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(2) } as _;
    debug_assert!(msg.msg_controllen as usize <= SPACE);
    // SAFETY: msg_control points at SPACE aligned bytes, at least
    // msg_controllen, so the first header and its 2 data bytes are inside.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = libc::UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(2) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg);
    }
    // SAFETY: msg and what it points to (iov -> data, control) outlive the
    // call; the kernel only reads them.
    let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_DONTWAIT) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Take up to `bufs.len()` queued datagrams from `sock` without waiting
/// (recvmmsg): `lens[i]` is datagram i's length (more than its buffer when
/// it was truncated). WouldBlock when none is queued.
pub(crate) fn recv_batch<const N: usize>(
    sock: &std::net::UdpSocket,
    bufs: &mut [[u8; N]],
    lens: &mut [usize],
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let n = bufs.len().min(lens.len());
    let mut iovs: Vec<libc::iovec> = bufs[..n]
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: N,
        })
        .collect();
    let mut hdrs: Vec<libc::mmsghdr> = iovs
        .iter_mut()
        .map(|iov| {
            // SAFETY: an all-zero mmsghdr is valid (no name, no control).
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = iov;
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect();
    // SAFETY: hdrs holds n headers whose iovecs point into bufs, all alive
    // for the call; no timeout.
    let r = unsafe {
        libc::recvmmsg(
            sock.as_raw_fd(),
            hdrs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let r = r as usize;
    for (len, h) in lens.iter_mut().zip(&hdrs[..r]) {
        *len = if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
            usize::MAX
        } else {
            h.msg_len as usize
        };
    }
    Ok(r)
}
