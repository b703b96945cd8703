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
