//! softspin's C API (`libsoftspin`): a stable C ABI over `softspin-host`.
//!
//! Every exported item is `ss_`-prefixed and documented; build.rs turns
//! this file into `include/softspin.h` with cbindgen, so the doc comments
//! here are the header's documentation. The conventions every function
//! follows are in the header's preamble (cbindgen.toml): errors are
//! negative `SS_E*` values with a thread-local message, no panic crosses
//! the boundary, and ownership is spelled out per function.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

use std::cell::{RefCell, UnsafeCell};
use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use softspin_engine::units::Ns;
use softspin_host::{
    AttachOptions, Ectx, EctxOptions, Error, ErrorCause, ErrorKind, Event, FaultKind, FrameKind,
    GenConfig, HostBuffer, HostWindow, Image, Mode, Nic, NicConfig, Notification, Payload,
    Rejected, Ruleset,
};
use softspin_netio::rules;

// ---------------------------------------------------------------------------
// Error codes
// ---------------------------------------------------------------------------

/// Status codes: every function returns SS_OK or one negative code per
/// kind of error (softspin_host::ErrorKind, one to one), or SS_EINTERNAL.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ss_status {
    /// Success.
    SS_OK = 0,
    /// Invalid argument: a NULL pointer where one is required, a string that
    /// is not UTF-8, a value out of range, a notification that cannot be
    /// answered.
    SS_EINVAL = -1,
    /// Unknown profile name, or an invalid NIC configuration file.
    SS_ECONFIG = -2,
    /// A file could not be read (handler image, configuration, trace, pcap).
    SS_EIO = -3,
    /// Not a usable handler image (not an RV32 little-endian ELF, bad
    /// segments).
    SS_EIMAGE = -4,
    /// A symbol is not in the image (ss_image_symbol, or a handler named in
    /// ss_install).
    SS_ESYMBOL = -5,
    /// The ECTX's code or handler memory overlaps an installed ECTX (e.g. the
    /// same image installed twice; link the second with `softspin build
    /// --code-base/--data-base`).
    SS_EOVERLAP = -6,
    /// NIC memory: a range that is not NIC memory, an ss_nic_alloc that does
    /// not fit, an image or scratchpad outside its region.
    SS_ENICMEM = -7,
    /// Host memory: a range outside every host window, an empty window, a
    /// window this NIC did not make (or changed since).
    SS_EHOST = -8,
    /// The ECTX is in the wrong state: already active, not active, or still
    /// has messages in flight.
    SS_ESTATE = -9,
    /// No such ECTX: never installed, or uninstalled.
    SS_ENOECTX = -10,
    /// Any other install error: no handler named, image built for another
    /// cluster count, undecodable code.
    SS_EECTX = -11,
    /// Bad traffic: an invalid generator or frame parameter, a malformed
    /// trace or pcap file.
    SS_ETRAFFIC = -12,
    /// The simulation refused a packet (larger than a packet-buffer slot,
    /// too short to match an ECTX).
    SS_ESIM = -13,
    /// A size, length or time beyond a documented limit (a host window over
    /// 4 GiB - 1, host memory beyond the NIC's cap, a run past the end of
    /// NIC time), or host memory that could not be allocated for it. The
    /// message names the argument and the limit; the NIC stays usable.
    SS_ELIMIT = -14,
    /// Building a handler image failed.
    SS_EBUILD = -15,
    /// The live NIC: no such interface, not permitted (needs root; or use
    /// socket mode), an XDP program already on the interface, XDP
    /// unsupported, bad rules, a socket error.
    SS_ENET = -16,
    /// Internal error: a bug in softspin, caught at the API boundary. The NIC
    /// it happened on answers every later call with SS_EINTERNAL; ss_close it.
    SS_EINTERNAL = -99,
}

const SS_OK: c_int = ss_status::SS_OK as c_int;
const SS_EINVAL: c_int = ss_status::SS_EINVAL as c_int;
const SS_EINTERNAL: c_int = ss_status::SS_EINTERNAL as c_int;

/// The code of each error kind.
fn status_of(k: ErrorKind) -> ss_status {
    use ss_status::*;
    match k {
        ErrorKind::InvalidArgument => SS_EINVAL,
        ErrorKind::Limit => SS_ELIMIT,
        ErrorKind::Config => SS_ECONFIG,
        ErrorKind::Io => SS_EIO,
        ErrorKind::Image => SS_EIMAGE,
        ErrorKind::Symbol => SS_ESYMBOL,
        ErrorKind::Overlap => SS_EOVERLAP,
        ErrorKind::NicMemory => SS_ENICMEM,
        ErrorKind::HostMemory => SS_EHOST,
        ErrorKind::State => SS_ESTATE,
        ErrorKind::NoEctx => SS_ENOECTX,
        ErrorKind::Ectx => SS_EECTX,
        ErrorKind::Traffic => SS_ETRAFFIC,
        ErrorKind::Sim => SS_ESIM,
        ErrorKind::Build => SS_EBUILD,
        ErrorKind::Net => SS_ENET,
    }
}

/// Version of this ABI: bumped when a struct or signature changes.
pub const SS_ABI_VERSION: u32 = 5;

// PsPIN's generic-driver memory plan, for sdk/pspin: literals so cbindgen
// writes them into softspin.h, checked against softspin_host::gdriver.
/// ECTXs PsPIN's generic driver splits its memory between.
pub const SS_GDRIVER_EC_MAX: u32 = 2;
/// Its L2 handler memory for all ECTXs, bytes.
pub const SS_GDRIVER_L2_SIZE: u32 = 1048576;
/// Its host memory for all ECTXs, bytes.
pub const SS_GDRIVER_HOST_SIZE: u64 = 1073741824;
/// Its scratchpad per cluster for all ECTXs, bytes.
pub const SS_GDRIVER_SCRATCHPAD_SIZE: u32 = 819200;
const _: () = {
    use softspin_host::gdriver as g;
    assert!(SS_GDRIVER_EC_MAX == g::EC_MAX && SS_GDRIVER_L2_SIZE == g::L2_SIZE);
    assert!(
        SS_GDRIVER_HOST_SIZE == g::HOST_SIZE && SS_GDRIVER_SCRATCHPAD_SIZE == g::SCRATCHPAD_SIZE
    );
};

// ---------------------------------------------------------------------------
// Enumerations (plain constants: C passes them as uint32_t)
// ---------------------------------------------------------------------------

/// Frames start at the IPv4 header, PsPIN's host-order layout (28 header
/// bytes before the UDP payload). The default.
pub const SS_FRAME_IP: u32 = 0;
/// Ethernet II + IPv4 + UDP in wire format (42 header bytes; FPsPIN).
pub const SS_FRAME_ETH: u32 = 1;

/// Generator payload: all zero bytes.
pub const SS_PAYLOAD_ZERO: u32 = 0;
/// Generator payload: byte i of packet number n is (i + 7 n) mod 256.
pub const SS_PAYLOAD_SEQUENCE: u32 = 1;
/// Generator payload: deterministic pseudo-random bytes from `seed`.
pub const SS_PAYLOAD_RANDOM: u32 = 2;

/// ss_next_event found no event.
pub const SS_EVENT_NONE: u32 = 0;
/// A handler sent a packet (spin_send_packet, spin_rdma_put).
pub const SS_EVENT_OUTBOUND: u32 = 1;
/// A handler's 8-byte host-direct write (spin_write_to_host) landed.
pub const SS_EVENT_HOST_WRITE: u32 = 2;
/// A message's handlers all finished.
pub const SS_EVENT_MESSAGE_DONE: u32 = 3;
/// A handler faulted, hit its watchdog or misbehaved; it ended alone.
pub const SS_EVENT_HANDLER_ERROR: u32 = 4;
/// `value` handler errors happened here whose details were dropped: more
/// than SS_PENDING_ERRORS_FIRST came between two batches of events, and only
/// the first of them and the latest SS_PENDING_ERRORS_LATEST are kept (the
/// report's counts include them all).
pub const SS_EVENT_ERRORS_DROPPED: u32 = 5;
/// Handler errors kept in detail per batch of events: the first ...
pub const SS_PENDING_ERRORS_FIRST: u32 = 1000;
/// ... and the latest.
pub const SS_PENDING_ERRORS_LATEST: u32 = 100;
// Literals for cbindgen, checked against the engine's at compile time.
const _: () = assert!(SS_PENDING_ERRORS_FIRST as usize == softspin_host::PENDING_ERRORS_FIRST);
const _: () = assert!(SS_PENDING_ERRORS_LATEST as usize == softspin_host::PENDING_ERRORS_LATEST);

/// Why a handler (or a message) failed: ss_event.error_cause of an
/// SS_EVENT_HANDLER_ERROR (one per softspin_host::ErrorCause).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ss_error_cause {
    /// Not a handler error.
    SS_CAUSE_NONE = 0,
    /// Load from an address no window covers.
    SS_CAUSE_LOAD_ACCESS = 1,
    /// Store (or AMO) to an address no window covers.
    SS_CAUSE_STORE_ACCESS = 2,
    /// Load from memory without read permission.
    SS_CAUSE_LOAD_DENIED = 3,
    /// Store to read-only memory.
    SS_CAUSE_STORE_DENIED = 4,
    /// Instruction fetch from memory that is not executable.
    SS_CAUSE_FETCH_ACCESS = 5,
    /// Misaligned atomic access.
    SS_CAUSE_MISALIGNED = 6,
    /// Undecodable or privileged instruction.
    SS_CAUSE_ILLEGAL_INSTRUCTION = 7,
    /// `ebreak`.
    SS_CAUSE_BREAKPOINT = 8,
    /// The handler's instruction budget ran out.
    SS_CAUSE_WATCHDOG = 9,
    /// `ecall` with an unknown service number.
    SS_CAUSE_UNKNOWN_SERVICE = 10,
    /// A runtime service rejected the request.
    SS_CAUSE_SERVICE_FAULT = 11,
    /// No packet of the message came within the ECTX's message timeout.
    SS_CAUSE_MESSAGE_TIMEOUT = 12,
    /// The handler waited (command, notification) beyond the wait limit.
    SS_CAUSE_WAIT_TIMEOUT = 13,
    /// `assert`, `abort()` or `exit(status != 0)`; ss_event.value holds the
    /// status (as int64_t).
    SS_CAUSE_ABORTED = 14,
    /// Rejected command: host DMA outside the ECTX's host window.
    SS_CAUSE_REJECTED_HOST_DMA_WINDOW = 20,
    /// Rejected command: host-direct write outside the host window.
    SS_CAUSE_REJECTED_HOST_WRITE_WINDOW = 21,
    /// Rejected command: NIC buffer outside the task's memory.
    SS_CAUSE_REJECTED_NIC_ACCESS = 22,
    /// Rejected command: send or RDMA put larger than the packet slot.
    SS_CAUSE_REJECTED_SEND_TOO_LARGE = 23,
    /// Rejected command: zero-length cluster DMA.
    SS_CAUSE_REJECTED_EMPTY_DMA = 24,
    /// Rejected command: write to a descriptor other than 1 or 2.
    SS_CAUSE_REJECTED_BAD_FD = 25,
    /// Rejected command: counter index beyond counters_per_ectx.
    SS_CAUSE_REJECTED_COUNTER_INDEX = 26,
    /// Rejected command: notification id not owned by the task.
    SS_CAUSE_REJECTED_NOTIFY_ID = 27,
    /// Rejected command: notification longer than its inline limit.
    SS_CAUSE_REJECTED_NOTIFY_TOO_LONG = 28,
}

/// ss_event.present bit: `pc` holds a program counter.
pub const SS_HAS_PC: u32 = 1;
/// ss_event.present bit: `addr` holds a faulting or offending address.
pub const SS_HAS_ADDR: u32 = 2;
/// ss_event.present bit: `hpu` holds an HPU index.
pub const SS_HAS_HPU: u32 = 4;

fn cause_code(c: ErrorCause) -> ss_error_cause {
    use ss_error_cause::*;
    match c {
        ErrorCause::Fault(k) => match k {
            FaultKind::LoadAccess => SS_CAUSE_LOAD_ACCESS,
            FaultKind::StoreAccess => SS_CAUSE_STORE_ACCESS,
            FaultKind::LoadDenied => SS_CAUSE_LOAD_DENIED,
            FaultKind::StoreDenied => SS_CAUSE_STORE_DENIED,
            FaultKind::FetchAccess => SS_CAUSE_FETCH_ACCESS,
            FaultKind::Misaligned => SS_CAUSE_MISALIGNED,
            FaultKind::IllegalInstruction => SS_CAUSE_ILLEGAL_INSTRUCTION,
            FaultKind::Breakpoint => SS_CAUSE_BREAKPOINT,
            FaultKind::Watchdog => SS_CAUSE_WATCHDOG,
            FaultKind::UnknownService => SS_CAUSE_UNKNOWN_SERVICE,
            FaultKind::ServiceFault => SS_CAUSE_SERVICE_FAULT,
        },
        ErrorCause::MessageTimeout => SS_CAUSE_MESSAGE_TIMEOUT,
        ErrorCause::WaitTimeout => SS_CAUSE_WAIT_TIMEOUT,
        ErrorCause::Aborted { .. } => SS_CAUSE_ABORTED,
        ErrorCause::Rejected(r) => match r {
            Rejected::HostDmaWindow => SS_CAUSE_REJECTED_HOST_DMA_WINDOW,
            Rejected::HostWriteWindow => SS_CAUSE_REJECTED_HOST_WRITE_WINDOW,
            Rejected::NicAccess => SS_CAUSE_REJECTED_NIC_ACCESS,
            Rejected::SendTooLarge => SS_CAUSE_REJECTED_SEND_TOO_LARGE,
            Rejected::EmptyDma => SS_CAUSE_REJECTED_EMPTY_DMA,
            Rejected::BadFd => SS_CAUSE_REJECTED_BAD_FD,
            Rejected::CounterIndex => SS_CAUSE_REJECTED_COUNTER_INDEX,
            Rejected::NotifyId => SS_CAUSE_REJECTED_NOTIFY_ID,
            Rejected::NotifyTooLong => SS_CAUSE_REJECTED_NOTIFY_TOO_LONG,
        },
    }
}

/// ss_attach_options.mode: the XDP matching engine on the interface and
/// AF_XDP sockets (needs root: CAP_NET_ADMIN, CAP_BPF). Unmatched frames go
/// to the kernel untouched.
pub const SS_MODE_XDP: u32 = 0;
/// ss_attach_options.mode: the fallback without XDP or root: UDP sockets
/// bound to the ports of the `udp:` rules; handlers get synthesised
/// Ethernet/IPv4/UDP frames, and replies leave through the sockets.
pub const SS_MODE_SOCKET: u32 = 1;

/// ss_slmp_options.sync: no segment asks for an ACK (delivery unconfirmed).
pub const SS_SLMP_SYNC_NONE: u32 = 0;
/// ss_slmp_options.sync: the first and last segment of each message do.
pub const SS_SLMP_SYNC_MSG: u32 = 1;
/// ss_slmp_options.sync: every segment is acknowledged or retransmitted
/// (the default).
pub const SS_SLMP_SYNC_ALL: u32 = 2;

/// Bytes of ss_live_drop.cause, the NUL included (longer names are cut).
pub const SS_DROP_CAUSE_MAX: usize = 48;

/// Bytes a notification carries inline (SPIN_NOTIFY_INLINE_MAX).
pub const SS_NOTIFY_INLINE_MAX: usize = 64;

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/// A NIC: the simulated PsPIN NIC (ss_open, ss_open_config_file) or one
/// attached to a network interface (ss_nic_attach). Opaque; released by
/// ss_close. Not thread-safe: use one NIC from one thread at a time (only
/// ss_stop may be called from anywhere, signal handlers included).
pub struct ss_nic {
    /// Set by ss_stop (from a signal handler or another thread) while
    /// ss_run_live runs; outside the cell so that no `&mut` to the state is
    /// needed to set it.
    stop: AtomicBool,
    state: UnsafeCell<NicState>,
}

/// Everything of a NIC but its stop flag: only the thread in an API call
/// on the NIC touches it.
struct NicState {
    nic: Nic,
    /// Events and notifications taken from the NIC, not yet read.
    events: VecDeque<Event>,
    notes: VecDeque<Notification>,
    /// Memory behind the pointers of the event last returned.
    held: Held,
    /// A panic left the NIC in an unknown state.
    poisoned: bool,
}

#[derive(Default)]
struct Held {
    frame: Vec<u8>,
    handler: Option<CString>,
    detail: Option<CString>,
    cause: CString,
    ectx: CString,
}

/// A loaded handler image. Opaque; from ss_image_load or
/// ss_image_from_bytes, released by ss_image_free (any time: an installed
/// ECTX keeps its own copy).
pub struct ss_image {
    image: Image,
}

/// An installed execution context (ECTX), as returned by ss_install. Handles
/// are never reused within one NIC.
pub type ss_ectx = u32;

/// A host-memory window lent to the NIC: handlers see it at `base`, a 64-bit
/// host address (task->host_mem_high/low), `size` bytes long.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ss_host_window {
    /// Host address of the first byte.
    pub base: u64,
    /// Bytes in the window.
    pub size: u64,
}

/// How to install an ECTX. Start from ss_ectx_options_init (it sets the
/// defaults), then set what you need. Strings are copied; the struct and its
/// strings need only live during the ss_install call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_ectx_options {
    /// Name in reports and error messages; NULL = "ectxN".
    pub name: *const c_char,
    /// Header handler symbol; NULL = none.
    pub hh: *const c_char,
    /// Payload handler symbol; NULL = none.
    pub ph: *const c_char,
    /// Completion handler symbol; NULL = none. At least one of hh/ph/th.
    pub th: *const c_char,
    /// Handler memory bytes from the image's data start; room beyond the
    /// image's data is what ss_nic_alloc hands out. 0 = the image's data only.
    pub handler_mem_size: u32,
    /// Bytes of each packet copied to L1 before a handler runs; 0 = all.
    pub l1_copy: u32,
    /// The host window handlers may DMA to/from, exactly as
    /// ss_host_window_create or ss_host_lend returned it on this NIC; size 0 =
    /// none.
    pub host_window: ss_host_window,
    /// Scratchpad bytes on each cluster (scratchpad_len entries; missing
    /// clusters get none). May be NULL when scratchpad_len is 0.
    pub scratchpad: *const u32,
    /// Entries in `scratchpad`.
    pub scratchpad_len: usize,
    /// Instruction budget of one handler invocation; 0 = the default
    /// (1,000,000).
    pub watchdog: u64,
    /// A message with no packet for this many ns is reset; 0 = never.
    /// ss_ectx_options_init sets the default, 1 ms.
    pub msg_timeout_ns: u64,
    /// Take only UDP packets to this destination port; 0 = every packet.
    /// Also the port ss_send_message addresses (0: 9330). On a live NIC it
    /// stands for the ruleset "udp:PORT" when no other rules are given.
    pub udp_dst_port: u16,
    /// Live NIC (ABI 3): matching-engine rulesets as `--match` shortcuts
    /// ("udp:PORT", "icmp", "ipv4", "all", "slmp[:PORT]"), `match_specs_len`
    /// strings; may be NULL when match_specs_len is 0. They select which frames
    /// reach this ECTX (seed 000 §3.2.1); the first ruleset that matches a
    /// frame wins, in install order. A live ECTX needs at least one ruleset
    /// (from here, the rules below, or udp_dst_port).
    pub match_specs: *const *const c_char,
    /// Entries in `match_specs`.
    pub match_specs_len: usize,
    /// Live NIC (ABI 3): a TOML rules file (docs/rules.md) whose rulesets
    /// also feed this ECTX: those without an `ectx` field, and those whose
    /// `ectx` is this ECTX's name. NULL = none.
    pub rules_file: *const c_char,
    /// Live NIC (ABI 3): the same as `rules_file`, as TOML text. NULL = none.
    pub rules_toml: *const c_char,
    /// ABI 4: PsPIN's handler memory, a region of its own at this L2
    /// address (handler_mem_size bytes, at least 64) that task->handler_mem
    /// points at. The image's data then lies outside it, installed once and
    /// shared by every ECTX of the same image, so one image can serve
    /// several ECTXs, each with its own handler memory. 0 = softspin's
    /// layout: handler memory starts at the image's data.
    pub handler_mem_addr: u32,
    /// ABI 5: put the RMA transport block (DiAD's reliability layer,
    /// docs/rma.md "Reliability") in front of this ECTX, as node `rma_rank`
    /// (0..=65535) of a node table; its frames on RMA's UDP port pass
    /// through it. -1 (ss_ectx_options_init) = no transport.
    pub rma_rank: i32,
}

/// How ss_nic_attach opens a NIC on an interface. Start from
/// ss_attach_options_init. Strings are copied; they need only live during
/// the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_attach_options {
    /// SS_MODE_XDP (default; root) or SS_MODE_SOCKET.
    pub mode: u32,
    /// NIC profile, "pspin" or "fpspin"; NULL = "fpspin" (handlers take
    /// Ethernet frames as the wire gives them). Build handler images for it
    /// (`softspin build --profile fpspin`).
    pub profile: *const c_char,
    /// A NIC configuration file (docs/sim.md) instead of `profile`; NULL =
    /// none. Setting both is SS_EINVAL.
    pub config_path: *const c_char,
    /// Longest ss_wait_notifications waits for the wire before returning
    /// none (a live NIC never runs out of work for good), in ns.
    /// ss_attach_options_init sets 10 s; 0 = do not wait.
    pub wait_timeout_ns: u64,
}

/// What a live NIC did on the wire (ss_get_live_stats). Drops by cause come
/// from ss_live_drops; the engine's own (packet buffer full) are in
/// ss_report.drops.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ss_live_stats {
    /// Frames the matching engine saw (matched + passed to the kernel).
    pub rx_frames: u64,
    /// Frames that matched an active ECTX's ruleset.
    pub matched: u64,
    /// Frames left to the kernel's network stack (matched no ruleset).
    pub passed_to_kernel: u64,
    /// Frames handlers sent that went to the wire.
    pub tx_frames: u64,
    /// Frames lost on the way in or out, all causes (ss_live_drops).
    pub drops: u64,
    /// Wall-clock seconds since ss_nic_attach.
    pub wall_s: f64,
}

/// A snapshot of a live NIC's progress (ss_get_live_status): what
/// `softspin nic --progress` shows (docs/live.md, "Live status"). Every
/// count is a total since ss_nic_attach.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ss_live_status {
    /// The wire, as in ss_live_stats.
    pub rx_frames: u64,
    pub matched: u64,
    pub passed_to_kernel: u64,
    pub tx_frames: u64,
    /// Frames dropped, all causes: the port's (ss_live_drops) and the
    /// engine's (packet buffer full, no ECTX).
    pub drops: u64,
    /// Frames taken from the wire whose handlers have not finished.
    pub unprocessed: u64,
    /// Frames whose handlers all finished, and handler invocations.
    pub packets: u64,
    pub invocations: u64,
    /// Handler errors of every cause (message timeouts included).
    pub errors: u64,
    /// HPUs of the NIC and those running a task now.
    pub hpus: u32,
    pub hpus_busy: u32,
    /// Busy time of all HPUs (ps of NIC time): the occupancy between two
    /// snapshots is its growth over hpus x the growth of nic_time_ps.
    pub hpu_busy_ps: u64,
    pub nic_time_ps: u64,
    /// Wall-clock seconds since ss_nic_attach.
    pub wall_s: f64,
}

/// How ss_slmp_send sends. Start from ss_slmp_options_init.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_slmp_options {
    /// Flow-control window in packets (1..=65536); 0 = adaptive (AIMD).
    pub window: u32,
    /// SS_SLMP_SYNC_ALL (default), SS_SLMP_SYNC_MSG or SS_SLMP_SYNC_NONE.
    pub sync: u32,
    /// Payload bytes per segment; the default, 1462, fits a 1500-byte MTU.
    pub segment: u32,
    /// Message id of the first message (the receiver's slot is id % 16).
    pub first_msg_id: u32,
    /// Give up when no new ACK arrived for this long, in ns (default 10 s).
    pub give_up_ns: u64,
}

/// What ss_slmp_send did (also filled when it gave up).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ss_slmp_stats {
    pub messages: u64,
    /// Message bytes (payload, not headers).
    pub bytes: u64,
    pub segments: u64,
    /// Every data packet sent, retransmissions included.
    pub packets_sent: u64,
    pub retransmitted: u64,
    /// Retransmissions after a retransmission timeout.
    pub timeouts: u64,
    pub acks_received: u64,
    /// ACKs for already acknowledged segments (duplicates on the way).
    pub duplicate_acks: u64,
    pub rtt_samples: u64,
    pub rtt_min_us: f64,
    pub rtt_p50_us: f64,
    pub rtt_p99_us: f64,
    pub window_final: u32,
    pub window_max: u32,
    pub window_decreases: u64,
    pub elapsed_s: f64,
    /// Message bytes per second of elapsed time, in bit/s.
    pub goodput_bps: f64,
    /// 1 when every segment was acknowledged (always with SS_SLMP_SYNC_ALL).
    pub delivery_confirmed: u32,
}

/// One cause of lost frames on a live NIC (ss_live_drops).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_live_drop {
    /// The cause, NUL-terminated ("rx_ring_full", "tx_not_udp",
    /// "larger_than_packet_slot", ...).
    pub cause: [c_char; SS_DROP_CAUSE_MAX],
    /// Frames lost to it.
    pub count: u64,
}

/// Parameters of the synthetic traffic generator (ss_feed_generator).
/// Start from ss_gen_config_init.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_gen_config {
    /// Number of messages (>= 1).
    pub messages: u32,
    /// Packets per message (>= 1).
    pub packets_per_message: u32,
    /// Frame bytes, headers included.
    pub size: u32,
    /// Messages in flight, their packets interleaved round-robin (>= 1).
    pub concurrent: u32,
    /// Line rate in Gbit/s; INFINITY = every packet at time 0.
    pub rate_gbps: f64,
    /// SS_FRAME_IP or SS_FRAME_ETH.
    pub frame: u32,
    /// SS_PAYLOAD_ZERO, SS_PAYLOAD_SEQUENCE or SS_PAYLOAD_RANDOM.
    pub payload: u32,
    /// Seed of SS_PAYLOAD_RANDOM.
    pub seed: u64,
    /// Message id of the first message (the next ones count up).
    pub first_msg_id: u32,
    /// UDP source port.
    pub udp_src_port: u16,
    /// UDP destination port.
    pub udp_dst_port: u16,
    /// IPv4 source address, most significant byte first (10.0.0.1 = {10,0,0,1}).
    pub src_ip: [u8; 4],
    /// IPv4 destination address, most significant byte first.
    pub dst_ip: [u8; 4],
}

/// One thing the NIC did (ss_next_event). Fields not listed for a kind are 0
/// or NULL. Pointers point into the NIC and stay valid until the next
/// ss_next_event or ss_close on that NIC: copy what you keep.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_event {
    /// SS_EVENT_*; SS_EVENT_NONE if there was no event.
    pub kind: u32,
    /// The ECTX whose handler caused it (the handle ss_install returned,
    /// even if uninstalled since).
    pub ectx: ss_ectx,
    /// NIC time in picoseconds (handler errors: at ns resolution).
    pub time_ps: u64,
    /// SS_EVENT_MESSAGE_DONE, SS_EVENT_HANDLER_ERROR: the message id.
    pub msg_id: u32,
    /// SS_EVENT_OUTBOUND: RDMA put destination (0 for spin_send_packet).
    pub dest: u32,
    /// SS_EVENT_OUTBOUND: the frame the handler sent.
    pub data: *const u8,
    /// SS_EVENT_OUTBOUND: bytes at `data`.
    pub data_len: usize,
    /// SS_EVENT_HOST_WRITE: host address written; SS_EVENT_HANDLER_ERROR: the
    /// faulting or offending address (if `present` has SS_HAS_ADDR).
    pub addr: u64,
    /// SS_EVENT_HOST_WRITE: the 64-bit value written (little-endian in host
    /// memory); SS_EVENT_HANDLER_ERROR with SS_CAUSE_ABORTED: the status;
    /// SS_EVENT_ERRORS_DROPPED: how many errors.
    pub value: u64,
    /// SS_EVENT_HANDLER_ERROR: program counter (if `present` has SS_HAS_PC).
    pub pc: u32,
    /// SS_EVENT_HANDLER_ERROR: global index of the HPU (if `present` has
    /// SS_HAS_HPU).
    pub hpu: u32,
    /// SS_EVENT_HANDLER_ERROR: which of `pc`, `addr`, `hpu` apply (SS_HAS_*
    /// bits; a message timeout has none of them).
    pub present: u32,
    /// SS_EVENT_HANDLER_ERROR: the handler's symbol; NULL for a
    /// message-level error (message timeout).
    pub handler: *const c_char,
    /// SS_EVENT_HANDLER_ERROR: more about it (an abort's status and assert
    /// text, a rejected command's limit); NULL if nothing more.
    pub detail: *const c_char,
    /// SS_EVENT_HANDLER_ERROR: what went wrong, in words.
    pub cause: *const c_char,
    /// SS_EVENT_HANDLER_ERROR: what went wrong, an ss_error_cause
    /// (SS_CAUSE_NONE for other events).
    pub error_cause: u32,
    /// SS_EVENT_HANDLER_ERROR: the ECTX's name.
    pub ectx_name: *const c_char,
}

/// A request a handler posted to the host (spin_notify). Answer it with
/// ss_respond(id, value).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_notification {
    /// Pass to ss_respond.
    pub id: u32,
    /// The ECTX whose handler posted it.
    pub ectx: ss_ectx,
    /// Global index of the HPU that posted it.
    pub hpu: u32,
    /// Bytes used in `data`.
    pub data_len: u32,
    /// NIC time (ps) at which it became visible to the host.
    pub time_ps: u64,
    /// The reference the handler passed (e.g. a host address it wrote to).
    pub host_ref: u64,
    /// Inline payload.
    pub data: [u8; SS_NOTIFY_INLINE_MAX],
}

/// The operation of an ss_rma_request (docs/rma.md, docs/host-interface.md "RMA").
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ss_rma_op {
    /// Write `len` bytes of the RMA ECTX's host window at `local` to the
    /// remote window.
    SS_RMA_PUT = 1,
    /// Read `len` bytes of the remote window into the host window at `local`.
    SS_RMA_GET = 2,
    /// Fetch-and-add `operand` to the `width`-byte word; completion value =
    /// the old word.
    SS_RMA_FETCH_ADD = 3,
    /// Compare-and-swap: `operand` is the compare value, `swap` the new one;
    /// completion value = the old word.
    SS_RMA_CAS = 4,
}

/// One RMA operation for ss_client_post (fields an op does not use are
/// ignored).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_rma_request {
    /// An ss_rma_op.
    pub op: u32,
    /// The target node's rank.
    pub rank: u16,
    /// Atomics: 4 or 8.
    pub width: u8,
    /// The target's window key.
    pub key: u32,
    /// Byte offset in the target's window.
    pub offset: u64,
    /// Put/get: offset in this node's RMA ECTX host window, and length.
    pub local: u64,
    pub len: u64,
    /// Fetch-and-add: the addend; compare-and-swap: the compare value.
    pub operand: u64,
    /// Compare-and-swap: the value swapped in.
    pub swap: u64,
}

/// A completed RMA operation (ss_client_wait, ss_client_test).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ss_rma_completion {
    /// The handle ss_client_post gave.
    pub handle: u64,
    /// 0 OK; 1 BAD_KEY, 2 OUT_OF_WINDOW, 3 PERMISSION, 4 MALFORMED,
    /// 5 UNALIGNED, 6 FAILED (softspin_wire::rma); 7 PEER_FAILED.
    pub status: u8,
    /// Atomics: the old word; 0 otherwise.
    pub value: u64,
}

/// A performance counter pushed by an ECTX's handlers (FPsPIN style).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ss_counter {
    /// Counter index the handlers pushed to.
    pub index: u32,
    /// Sum of the pushed values.
    pub sum: u64,
    /// Number of pushes.
    pub count: u64,
}

/// The main statistics (ss_get_report); `softspin sim --json` has the same
/// names (docs/sim.md). Times in ns of NIC time.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ss_report {
    /// Packets fully processed (their last task completed).
    pub packets: u64,
    /// Bytes of those packets.
    pub bytes: u64,
    /// Packets that arrived.
    pub packets_in: u64,
    /// Packets no active ECTX matched.
    pub unmatched: u64,
    /// Packets dropped (packet buffer full).
    pub drops: u64,
    /// Messages reset by their ECTX's timeout.
    pub message_timeouts: u64,
    /// Packets handlers sent.
    pub outbound_packets: u64,
    /// Bytes handlers sent.
    pub outbound_bytes: u64,
    /// Host-direct writes.
    pub host_writes: u64,
    /// Bytes DMAed to host memory.
    pub dma_to_host_bytes: u64,
    /// Bytes DMAed from host memory.
    pub dma_from_host_bytes: u64,
    /// Commands handlers issued.
    pub commands: u64,
    /// Handler tasks run.
    pub tasks: u64,
    /// Handler errors, all ECTXs and causes.
    pub errors: u64,
    /// Processed bytes over the time from the first arrival to the last
    /// completion, in Gbit/s.
    pub throughput_gbps: f64,
    /// Processed packets per microsecond.
    pub mpps: f64,
    /// Packet latency (arrival to the completion of its last task): minimum.
    pub latency_min_ns: f64,
    /// Packet latency: mean.
    pub latency_mean_ns: f64,
    /// Packet latency: median.
    pub latency_p50_ns: f64,
    /// Packet latency: 99th percentile.
    pub latency_p99_ns: f64,
    /// Packet latency: maximum.
    pub latency_max_ns: f64,
    /// Time inbound traffic was held back (buffer full, back-pressure mode).
    pub backpressure_ns: f64,
    /// Time messages waited for a free MPQ.
    pub mpq_stall_ns: f64,
    /// Busy HPU time over all HPUs' time (0..1).
    pub hpu_utilization: f64,
    /// NIC time simulated so far.
    pub sim_time_ns: f64,
    /// Most HPUs busy at once.
    pub hpus_busy_max: u32,
}

/// The NIC's shape (ss_nic_get_info).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ss_nic_info {
    /// Profile name, NUL-terminated ("pspin", "fpspin").
    pub profile: [c_char; 16],
    /// Clusters (NB_CLUSTERS of images built for this NIC).
    pub clusters: u32,
    /// HPUs per cluster.
    pub hpus_per_cluster: u32,
    /// HPUs in all (valid indexes for ss_hpu_stdout).
    pub hpu_count: u32,
    /// HPU clock in MHz.
    pub clock_mhz: u32,
    /// Largest packet, bytes (a packet-buffer slot).
    pub pkt_slot_size: u32,
    /// L2 handler memory, bytes.
    pub l2_handler_size: u32,
    /// Inbound line rate in Gbit/s.
    pub line_rate_gbps: f64,
}

// ---------------------------------------------------------------------------
// Boundary plumbing: errors, panics, pointers
// ---------------------------------------------------------------------------

struct Fail {
    code: c_int,
    msg: String,
}

type Res = Result<(), Fail>;

fn fail(code: c_int, msg: impl Into<String>) -> Fail {
    Fail {
        code,
        msg: msg.into(),
    }
}

fn null(what: &str) -> Fail {
    fail(SS_EINVAL, format!("{what} is NULL"))
}

/// The code of a host API error.
fn code_of(e: &Error) -> c_int {
    status_of(e.kind()) as c_int
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        fail(code_of(&e), e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "?")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    let what = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned());
    format!(
        "internal error (a bug in softspin): {}",
        what.unwrap_or_else(|| "panic".into())
    )
}

/// Run an API body: map its error or panic to a code and the thread's message.
fn guard(f: impl FnOnce() -> Res) -> c_int {
    let r = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(fail(SS_EINTERNAL, panic_text(&*p))),
    };
    match r {
        Ok(()) => SS_OK,
        Err(e) => {
            set_last_error(&e.msg);
            e.code
        }
    }
}

/// `guard` for calls on a NIC: a panic poisons that NIC.
fn with_nic(nic: *mut ss_nic, f: impl FnOnce(&mut NicState) -> Res) -> c_int {
    with_nic_flag(nic, |n, _| f(n))
}

/// `with_nic`, also lending the NIC's stop flag (ss_run_live).
fn with_nic_flag(nic: *mut ss_nic, f: impl FnOnce(&mut NicState, &AtomicBool) -> Res) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a pointer from ss_open (documented).
        let outer = unsafe { nic.as_ref() }.ok_or_else(|| null("nic"))?;
        // SAFETY: one thread at a time per NIC (documented), so this is the
        // only reference into the state; ss_stop touches only `stop`.
        let n = unsafe { &mut *outer.state.get() };
        if n.poisoned {
            return Err(fail(
                SS_EINTERNAL,
                "this NIC hit an internal error earlier; close it",
            ));
        }
        match catch_unwind(AssertUnwindSafe(|| f(&mut *n, &outer.stop))) {
            Ok(r) => r,
            Err(p) => {
                n.poisoned = true;
                Err(fail(SS_EINTERNAL, panic_text(&*p)))
            }
        }
    })
}

unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Fail> {
    p.as_mut().ok_or_else(|| null(what))
}

unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, Fail> {
    if p.is_null() {
        return Err(null(what));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|_| fail(SS_EINVAL, format!("{what} is not UTF-8")))
}

unsafe fn opt_text(p: *const c_char, what: &str) -> Result<Option<String>, Fail> {
    if p.is_null() {
        Ok(None)
    } else {
        text(p, what).map(|s| Some(s.to_string()))
    }
}

/// A copy of a caller buffer, allocated fallibly (a length no allocation
/// can hold is SS_ELIMIT, not an abort).
unsafe fn copy_in(p: *const c_void, len: usize, what: &str) -> Result<Vec<u8>, Fail> {
    let src = bytes(p, len, what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        fail(
            ss_status::SS_ELIMIT as c_int,
            format!("{what}: cannot copy {len} bytes"),
        )
    })?;
    v.extend_from_slice(src);
    Ok(v)
}

/// A caller buffer; NULL is fine for an empty one.
unsafe fn bytes<'a>(p: *const c_void, len: usize, what: &str) -> Result<&'a [u8], Fail> {
    if len == 0 {
        Ok(&[])
    } else if p.is_null() {
        Err(null(what))
    } else {
        Ok(std::slice::from_raw_parts(p as *const u8, len))
    }
}

unsafe fn bytes_mut<'a>(p: *mut c_void, len: usize, what: &str) -> Result<&'a mut [u8], Fail> {
    if len == 0 {
        Ok(&mut [])
    } else if p.is_null() {
        Err(null(what))
    } else {
        Ok(std::slice::from_raw_parts_mut(p as *mut u8, len))
    }
}

/// Copy `s` into a caller's `buf` of `cap` bytes, NUL-terminated and
/// truncated if need be; `len` (optional) gets the full length.
unsafe fn put_text(s: &[u8], buf: *mut c_char, cap: usize, len: *mut usize) -> Res {
    if buf.is_null() && cap > 0 {
        return Err(null("buf"));
    }
    if let Some(l) = len.as_mut() {
        *l = s.len();
    }
    if cap > 0 {
        let n = s.len().min(cap - 1);
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
    Ok(())
}

fn frame_kind(k: u32) -> Result<FrameKind, Fail> {
    match k {
        SS_FRAME_IP => Ok(FrameKind::Ip),
        SS_FRAME_ETH => Ok(FrameKind::Eth),
        _ => Err(fail(
            SS_EINVAL,
            format!("unknown frame kind {k} (SS_FRAME_IP or SS_FRAME_ETH)"),
        )),
    }
}

/// A caller's buffer lent in place: the caller keeps it alive and does not
/// touch it during a call on the NIC (documented on ss_host_lend).
struct Lent {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the NIC only touches the buffer inside API calls, which the
// caller serialises with any use of its own.
unsafe impl Send for Lent {}

impl HostBuffer for Lent {
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: ss_host_lend's contract: ptr..ptr+len stays valid and
        // unaliased by the caller until unlend/close.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl NicState {
    /// Take pending events and notifications from the NIC (already naming
    /// the ECTX handles ss_install returned).
    fn drain(&mut self) {
        self.events.extend(self.nic.events());
        self.notes.extend(self.nic.poll_notifications());
    }
}

fn ectx_handle(e: ss_ectx) -> Ectx {
    Ectx(e)
}

// ---------------------------------------------------------------------------
// Library
// ---------------------------------------------------------------------------

/// The message of the last failed call on this thread ("" if none failed).
/// The string belongs to the library and stays valid until the next failing
/// call on this thread. Successful calls leave it unchanged.
#[no_mangle]
pub extern "C" fn ss_last_error() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

/// The name of an error code ("SS_EINVAL", ...; "SS_UNKNOWN" for others).
/// A static string: never freed.
#[no_mangle]
pub extern "C" fn ss_strerror(code: c_int) -> *const c_char {
    use ss_status::*;
    const ALL: [ss_status; 18] = [
        SS_OK,
        SS_EINVAL,
        SS_ECONFIG,
        SS_EIO,
        SS_EIMAGE,
        SS_ESYMBOL,
        SS_EOVERLAP,
        SS_ENICMEM,
        SS_EHOST,
        SS_ESTATE,
        SS_ENOECTX,
        SS_EECTX,
        SS_ETRAFFIC,
        SS_ESIM,
        SS_ELIMIT,
        SS_EBUILD,
        SS_ENET,
        SS_EINTERNAL,
    ];
    let name = |st: ss_status| -> &'static CStr {
        match st {
            SS_OK => c"SS_OK",
            SS_EINVAL => c"SS_EINVAL",
            SS_ECONFIG => c"SS_ECONFIG",
            SS_EIO => c"SS_EIO",
            SS_EIMAGE => c"SS_EIMAGE",
            SS_ESYMBOL => c"SS_ESYMBOL",
            SS_EOVERLAP => c"SS_EOVERLAP",
            SS_ENICMEM => c"SS_ENICMEM",
            SS_EHOST => c"SS_EHOST",
            SS_ESTATE => c"SS_ESTATE",
            SS_ENOECTX => c"SS_ENOECTX",
            SS_EECTX => c"SS_EECTX",
            SS_ETRAFFIC => c"SS_ETRAFFIC",
            SS_ESIM => c"SS_ESIM",
            SS_ELIMIT => c"SS_ELIMIT",
            SS_EBUILD => c"SS_EBUILD",
            SS_ENET => c"SS_ENET",
            SS_EINTERNAL => c"SS_EINTERNAL",
        }
    };
    let s = ALL
        .into_iter()
        .find(|&st| st as c_int == code)
        .map_or(c"SS_UNKNOWN", name);
    s.as_ptr()
}

/// The library version ("0.1.0"). A static string: never freed.
#[no_mangle]
pub extern "C" fn ss_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// SS_ABI_VERSION of the library actually loaded (compare with the header's).
#[no_mangle]
pub extern "C" fn ss_abi_version() -> u32 {
    SS_ABI_VERSION
}

// ---------------------------------------------------------------------------
// NIC
// ---------------------------------------------------------------------------

fn wrap(nic: Nic) -> *mut ss_nic {
    Box::into_raw(Box::new(ss_nic {
        stop: AtomicBool::new(false),
        state: UnsafeCell::new(NicState {
            nic,
            events: VecDeque::new(),
            notes: VecDeque::new(),
            held: Held::default(),
            poisoned: false,
        }),
    }))
}

/// Open the simulated NIC with a named profile, "pspin" or "fpspin".
/// On success `*out` is a NIC to release with ss_close; on failure it is
/// NULL. Errors: SS_EINVAL (NULL), SS_ECONFIG (unknown profile).
#[no_mangle]
pub unsafe extern "C" fn ss_open(profile: *const c_char, out: *mut *mut ss_nic) -> c_int {
    guard(|| {
        let out = out.as_mut().ok_or_else(|| null("out"))?;
        *out = std::ptr::null_mut();
        let nic = Nic::open(text(profile, "profile")?)?;
        *out = wrap(nic);
        Ok(())
    })
}

/// Open the simulated NIC a TOML file describes (docs/sim.md). As ss_open;
/// errors: SS_EINVAL, SS_EIO (unreadable), SS_ECONFIG (invalid).
#[no_mangle]
pub unsafe extern "C" fn ss_open_config_file(path: *const c_char, out: *mut *mut ss_nic) -> c_int {
    guard(|| {
        let out = out.as_mut().ok_or_else(|| null("out"))?;
        *out = std::ptr::null_mut();
        let nic = Nic::open_config_file(text(path, "path")?)?;
        *out = wrap(nic);
        Ok(())
    })
}

/// Close a NIC: frees it with its host windows (lent buffers go back to
/// their owners untouched), ECTXs and pending events. NULL is a no-op.
/// The pointer is invalid afterwards.
#[no_mangle]
pub unsafe extern "C" fn ss_close(nic: *mut ss_nic) -> c_int {
    guard(|| {
        if !nic.is_null() {
            drop(Box::from_raw(nic));
        }
        Ok(())
    })
}

/// The NIC's shape: clusters, HPUs, clock, line rate.
#[no_mangle]
pub unsafe extern "C" fn ss_nic_get_info(nic: *mut ss_nic, info: *mut ss_nic_info) -> c_int {
    with_nic(nic, |n| {
        let info = out(info, "info")?;
        let c = n.nic.config();
        let mut profile = [0 as c_char; 16];
        for (d, s) in profile.iter_mut().zip(c.profile.bytes().take(15)) {
            *d = s as c_char;
        }
        *info = ss_nic_info {
            profile,
            clusters: c.clusters,
            hpus_per_cluster: c.hpus_per_cluster,
            hpu_count: n.nic.hpu_count() as u32,
            clock_mhz: c.clock_mhz,
            pkt_slot_size: c.pkt_slot_size,
            l2_handler_size: c.l2_handler_size,
            line_rate_gbps: c.line_rate_gbps,
        };
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// A cluster's node table (docs/cluster.md)
// ---------------------------------------------------------------------------

/// One node of a cluster's node table (ss_load_nodes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ss_node {
    pub rank: u32,
    /// IPv4 address, in network byte order (as on the wire).
    pub ipv4: [u8; 4],
    /// MAC address, as on the wire.
    pub mac: [u8; 6],
    /// The UDP port its NIC serves (host byte order).
    pub udp_port: u16,
    /// Its interface, NUL-terminated (at most 15 bytes).
    pub iface: [c_char; 16],
    /// Its network namespace, NUL-terminated; empty on real machines
    /// (truncated to 63 bytes).
    pub netns: [c_char; 64],
}

fn c_name<const N: usize>(s: &str) -> [c_char; N] {
    let mut a = [0 as c_char; N];
    for (d, b) in a.iter_mut().zip(s.bytes().take(N - 1)) {
        *d = b as c_char;
    }
    a
}

/// Read a node table (e.g. what `softspin cluster up` wrote): `*count` gets
/// the number of nodes, and the first `min(cap, *count)` go to `nodes` in
/// rank order (`nodes` may be NULL when `cap` is 0, to ask for the count).
/// SS_EIO for an unreadable file, SS_EINVAL for a bad table (the message,
/// ss_last_error, names the line and field).
#[no_mangle]
pub unsafe extern "C" fn ss_load_nodes(
    path: *const c_char,
    nodes: *mut ss_node,
    cap: usize,
    count: *mut usize,
) -> c_int {
    guard(|| {
        let path = text(path, "path")?;
        let count = out(count, "count")?;
        if cap > 0 && nodes.is_null() {
            return Err(null("nodes"));
        }
        let t = softspin_host::load_node_table(path)?;
        *count = t.len();
        for (k, n) in t.nodes().iter().take(cap).enumerate() {
            // SAFETY: the caller gives `cap` writable entries (documented).
            *nodes.add(k) = ss_node {
                rank: n.rank,
                ipv4: n.ipv4.octets(),
                mac: n.mac.0,
                udp_port: n.udp_port,
                iface: c_name(&n.iface),
                netns: c_name(n.netns.as_deref().unwrap_or("")),
            };
        }
        Ok(())
    })
}

/// Give the NIC a cluster's node table (a file) and its rank: handlers read
/// them through spin_node.h. SS_EINVAL for a bad table or a rank outside it.
#[no_mangle]
pub unsafe extern "C" fn ss_nic_set_node_table(
    nic: *mut ss_nic,
    path: *const c_char,
    rank: u32,
) -> c_int {
    with_nic(nic, |n| {
        let path = text(path, "path")?;
        let t = softspin_host::load_node_table(path)?;
        n.nic.set_node_table(&t, rank)?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// The live NIC
// ---------------------------------------------------------------------------

/// Fill `o` with the defaults: SS_MODE_XDP, the "fpspin" profile, wait at
/// most 10 s for notifications.
#[no_mangle]
pub unsafe extern "C" fn ss_attach_options_init(o: *mut ss_attach_options) -> c_int {
    guard(|| {
        let d = AttachOptions::default();
        *out(o, "options")? = ss_attach_options {
            mode: mode_code(d.mode),
            profile: std::ptr::null(),
            config_path: std::ptr::null(),
            wait_timeout_ns: u64::try_from(d.wait_timeout.as_nanos()).unwrap_or(u64::MAX),
        };
        Ok(())
    })
}

fn mode_code(m: Mode) -> u32 {
    match m {
        Mode::Xdp => SS_MODE_XDP,
        Mode::Socket => SS_MODE_SOCKET,
    }
}

/// Open a NIC on the network interface `iface` (`opts` NULL: the defaults
/// of ss_attach_options_init). Frames that match an active ECTX's rulesets
/// (ss_ectx_options.match_specs, rules_file, rules_toml, udp_dst_port) run
/// its handlers, and what handlers send goes out on the interface; every
/// other frame goes to the kernel untouched. Everything else works as on
/// the simulated NIC, paced by the wall clock: ss_run_live runs it,
/// ss_run_for_ns runs it for wall time, ss_run_until_idle processes what
/// has arrived. On success `*out` is a NIC to release with ss_close (which
/// detaches it); on failure NULL. Errors: SS_EINVAL (bad mode, profile and
/// config_path both set), SS_ECONFIG, SS_EIO (config file), SS_ENET (no
/// such interface, not permitted: XDP needs root, or use SS_MODE_SOCKET;
/// an XDP program already on the interface, XDP unsupported).
#[no_mangle]
pub unsafe extern "C" fn ss_nic_attach(
    iface: *const c_char,
    opts: *const ss_attach_options,
    out: *mut *mut ss_nic,
) -> c_int {
    guard(|| {
        let out = out.as_mut().ok_or_else(|| null("out"))?;
        *out = std::ptr::null_mut();
        let iface = text(iface, "iface")?;
        let mut o = ss_attach_options {
            mode: SS_MODE_XDP,
            profile: std::ptr::null(),
            config_path: std::ptr::null(),
            wait_timeout_ns: 0,
        };
        if opts.is_null() {
            ss_attach_options_init(&mut o);
        } else {
            o = *opts;
        }
        let mode = match o.mode {
            SS_MODE_XDP => Mode::Xdp,
            SS_MODE_SOCKET => Mode::Socket,
            m => {
                return Err(fail(
                    SS_EINVAL,
                    format!("options->mode {m} is neither SS_MODE_XDP (0) nor SS_MODE_SOCKET (1)"),
                ))
            }
        };
        let config = match (
            opt_text(o.profile, "options->profile")?,
            opt_text(o.config_path, "options->config_path")?,
        ) {
            (Some(_), Some(_)) => {
                return Err(fail(
                    SS_EINVAL,
                    "options->profile and options->config_path are both set (give one)",
                ))
            }
            (Some(p), None) => Some(NicConfig::profile(&p).ok_or(Error::Profile(p))?),
            (None, Some(path)) => Some(softspin_host::load_config(&path)?),
            (None, None) => None,
        };
        let wait_timeout = Duration::from_nanos(o.wait_timeout_ns);
        let nic = Nic::attach(
            iface,
            AttachOptions {
                mode,
                config,
                wait_timeout,
            },
        )?;
        *out = wrap(nic);
        Ok(())
    })
}

/// `*live` gets 1 for a NIC from ss_nic_attach, 0 for a simulated one.
#[no_mangle]
pub unsafe extern "C" fn ss_nic_is_live(nic: *mut ss_nic, live: *mut c_int) -> c_int {
    with_nic(nic, |n| {
        *out(live, "live")? = c_int::from(n.nic.is_live());
        Ok(())
    })
}

/// Run a live NIC for `duration_ns` of wall time, or, with 0, until
/// ss_stop. Handler errors become events as in simulation; read them (and
/// notifications) afterwards, or run in slices and read between them.
/// A stop requested before the call makes it return at once; either way
/// the request is consumed when it returns. Errors: SS_EINVAL (a simulated
/// NIC), SS_ENET (the interface failed), SS_ESIM.
#[no_mangle]
pub unsafe extern "C" fn ss_run_live(nic: *mut ss_nic, duration_ns: u64) -> c_int {
    with_nic_flag(nic, |n, stop| {
        let d = (duration_ns > 0).then(|| Duration::from_nanos(duration_ns));
        let r = n.nic.run_live(d, stop);
        stop.store(false, Ordering::Relaxed);
        Ok(r?)
    })
}

/// Ask ss_run_live on this NIC to return (after its current step, within
/// about 20 ms). Async-signal-safe (one atomic store, no allocation, no
/// lock): call it from a SIGINT handler or another thread. NULL is a no-op.
/// Always SS_OK.
#[no_mangle]
pub unsafe extern "C" fn ss_stop(nic: *mut ss_nic) -> c_int {
    // SAFETY: a pointer from ss_open*/ss_nic_attach; only the atomic is
    // touched, never the state another thread may be using.
    if let Some(n) = nic.as_ref() {
        n.stop.store(true, Ordering::Relaxed);
    }
    SS_OK
}

fn live_stats_of(n: &NicState) -> Result<softspin_host::LiveStats, Fail> {
    n.nic.live_stats().ok_or_else(|| {
        fail(
            SS_EINVAL,
            "this NIC is simulated: no live statistics (open it with ss_nic_attach)",
        )
    })
}

/// What a live NIC did on the wire, into `*out_stats`. Errors: SS_EINVAL
/// (NULL, or a simulated NIC).
#[no_mangle]
pub unsafe extern "C" fn ss_get_live_stats(
    nic: *mut ss_nic,
    out_stats: *mut ss_live_stats,
) -> c_int {
    with_nic(nic, |n| {
        let o = out(out_stats, "out_stats")?;
        let s = live_stats_of(n)?;
        *o = ss_live_stats {
            rx_frames: s.rx_frames,
            matched: s.matched,
            passed_to_kernel: s.passed_to_kernel,
            tx_frames: s.tx_frames,
            drops: s.drops.values().sum(),
            wall_s: s.wall_s,
        };
        Ok(())
    })
}

/// A snapshot of the live NIC's progress into `*out_status` (it takes the
/// engine's report: call it every second or so, not per packet). Errors:
/// SS_EINVAL (NULL, or a simulated NIC).
#[no_mangle]
pub unsafe extern "C" fn ss_get_live_status(
    nic: *mut ss_nic,
    out_status: *mut ss_live_status,
) -> c_int {
    with_nic(nic, |n| {
        let o = out(out_status, "out_status")?;
        let s = n.nic.live_status().ok_or_else(|| {
            fail(
                SS_EINVAL,
                "this NIC is simulated: no live status (open it with ss_nic_attach)",
            )
        })?;
        let w = &s.wire;
        *o = ss_live_status {
            rx_frames: w.rx_frames,
            matched: w.matched,
            passed_to_kernel: w.passed_to_kernel,
            tx_frames: w.tx_frames,
            drops: s.drops.values().sum(),
            unprocessed: w.unprocessed,
            packets: s.packets,
            invocations: s.invocations,
            errors: s.errors_total(),
            hpus: s.hpus,
            hpus_busy: s.hpus_busy,
            hpu_busy_ps: s.hpu_busy_ps,
            nic_time_ps: s.nic_time_ps,
            wall_s: w.wall_s,
        };
        Ok(())
    })
}

/// A live NIC's drops by cause (those with a count), up to `cap` into
/// `out_drops` (may be NULL when `cap` is 0), in name order; `*count` gets
/// how many causes there are. Errors: SS_EINVAL (NULL, or a simulated NIC).
#[no_mangle]
pub unsafe extern "C" fn ss_live_drops(
    nic: *mut ss_nic,
    out_drops: *mut ss_live_drop,
    cap: usize,
    count: *mut usize,
) -> c_int {
    with_nic(nic, |n| {
        let c = out(count, "count")?;
        if out_drops.is_null() && cap > 0 {
            return Err(null("out_drops"));
        }
        let s = live_stats_of(n)?;
        let causes: Vec<(&String, &u64)> = s.drops.iter().filter(|(_, &v)| v > 0).collect();
        *c = causes.len();
        for (i, (name, &v)) in causes.into_iter().take(cap).enumerate() {
            let mut cause = [0 as c_char; SS_DROP_CAUSE_MAX];
            for (d, b) in cause
                .iter_mut()
                .zip(name.bytes().take(SS_DROP_CAUSE_MAX - 1))
            {
                *d = b as c_char;
            }
            out_drops.add(i).write(ss_live_drop { cause, count: v });
        }
        Ok(())
    })
}

/// A live NIC's statistics as text (the port, e.g. "socket on lo", the
/// counters and the drops by cause, one per line), copied like
/// ss_report_text. Errors: SS_EINVAL (NULL, or a simulated NIC).
#[no_mangle]
pub unsafe extern "C" fn ss_live_stats_text(
    nic: *mut ss_nic,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> c_int {
    with_nic(nic, |n| {
        let s = live_stats_of(n)?;
        let mut t = format!(
            "port: {}\nrx_frames: {}\nmatched: {}\npassed_to_kernel: {}\ntx_frames: {}\nwall_s: {:.3}\n",
            s.port, s.rx_frames, s.matched, s.passed_to_kernel, s.tx_frames, s.wall_s
        );
        for (k, v) in &s.drops {
            t.push_str(&format!("drops.{k}: {v}\n"));
        }
        put_text(t.as_bytes(), buf, cap, len)
    })
}

// ---------------------------------------------------------------------------
// SLMP sender (seed 000 §5.1): messages to a NIC running SLMP's receive
// handlers (examples/slmp_recv), with retransmission and an adaptive window.
// ---------------------------------------------------------------------------

/// Fill `o` with the defaults: adaptive window, SS_SLMP_SYNC_ALL, 1462-byte
/// segments, first message id 1, give up after 10 s without an ACK.
#[no_mangle]
pub unsafe extern "C" fn ss_slmp_options_init(o: *mut ss_slmp_options) -> c_int {
    guard(|| {
        let d = softspin_host::slmp::SendOptions::default();
        *out(o, "options")? = ss_slmp_options {
            window: 0,
            sync: SS_SLMP_SYNC_ALL,
            segment: d.segment as u32,
            first_msg_id: d.first_msg_id,
            give_up_ns: u64::try_from(d.give_up.as_nanos()).unwrap_or(u64::MAX),
        };
        Ok(())
    })
}

fn slmp_stats(s: &softspin_host::slmp::Stats) -> ss_slmp_stats {
    ss_slmp_stats {
        messages: s.messages,
        bytes: s.bytes,
        segments: s.segments,
        packets_sent: s.packets_sent,
        retransmitted: s.retransmitted,
        timeouts: s.timeouts,
        acks_received: s.acks_received,
        duplicate_acks: s.duplicate_acks,
        rtt_samples: s.rtt.samples,
        rtt_min_us: s.rtt.min_us,
        rtt_p50_us: s.rtt.p50_us,
        rtt_p99_us: s.rtt.p99_us,
        window_final: s.window.final_,
        window_max: s.window.max,
        window_decreases: s.window.decreases,
        elapsed_s: s.elapsed_s,
        goodput_bps: s.goodput_bps,
        delivery_confirmed: s.delivery_confirmed as u32,
    }
}

/// Send `count` messages (`msgs[i]`, `lens[i]` bytes; message ids counting
/// up from opts->first_msg_id) to the SLMP receiver at `to` ("ADDR[:PORT]",
/// default port 9330). `opts` NULL: the defaults. `out_stats` (may be NULL)
/// is filled on success and when the sender gives up. Blocks until every
/// message is acknowledged (or sent, without SS_SLMP_SYNC_ALL). Errors:
/// SS_EINVAL (NULL, bad address or option), SS_ELIMIT (a message over
/// 4 GiB), SS_ENET (socket error, or the sender gave up: a segment still
/// unacknowledged after its retransmissions, or no ACK for give_up_ns).
#[no_mangle]
pub unsafe extern "C" fn ss_slmp_send(
    to: *const c_char,
    msgs: *const *const c_void,
    lens: *const usize,
    count: usize,
    opts: *const ss_slmp_options,
    out_stats: *mut ss_slmp_stats,
) -> c_int {
    guard(|| {
        let to = text(to, "to")?;
        if count > 0 && (msgs.is_null() || lens.is_null()) {
            return Err(null("msgs or lens"));
        }
        let mut refs = Vec::with_capacity(count);
        for i in 0..count {
            let (p, n) = (*msgs.add(i), *lens.add(i));
            refs.push(match (p.is_null(), n) {
                (_, 0) => &[][..],
                (true, _) => {
                    return Err(fail(
                        SS_EINVAL,
                        format!("msgs[{i}] is NULL with lens[{i}] = {n}"),
                    ))
                }
                (false, _) => std::slice::from_raw_parts(p as *const u8, n),
            });
        }
        let mut o = softspin_host::slmp::SendOptions::default();
        if let Some(c) = opts.as_ref() {
            o.window = if c.window == 0 {
                "auto".into()
            } else {
                c.window.to_string()
            };
            o.sync = match c.sync {
                SS_SLMP_SYNC_NONE => "none",
                SS_SLMP_SYNC_MSG => "msg",
                SS_SLMP_SYNC_ALL => "all",
                v => {
                    return Err(fail(
                        SS_EINVAL,
                        format!("opts->sync = {v}: expected SS_SLMP_SYNC_NONE, _MSG or _ALL"),
                    ))
                }
            }
            .into();
            o.segment = c.segment as usize;
            o.first_msg_id = c.first_msg_id;
            o.give_up = Duration::from_nanos(c.give_up_ns);
        }
        match softspin_host::slmp::send(to, &refs, &o) {
            Ok(s) => {
                if let Some(out) = out_stats.as_mut() {
                    *out = slmp_stats(&s);
                }
                Ok(())
            }
            Err(e) => {
                if let (
                    softspin_host::Error::Slmp(softspin_slmp::Error::GaveUp { stats, .. }),
                    Some(out),
                ) = (&e, out_stats.as_mut())
                {
                    *out = slmp_stats(stats);
                }
                Err(e.into())
            }
        }
    })
}

// ---------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------

/// Load a handler image (an RV32 ELF from `softspin build`). On success
/// `*out` is an image to release with ss_image_free; on failure NULL.
/// Errors: SS_EINVAL, SS_EIO (unreadable), SS_EIMAGE (not a handler image).
#[no_mangle]
pub unsafe extern "C" fn ss_image_load(
    nic: *mut ss_nic,
    path: *const c_char,
    out: *mut *mut ss_image,
) -> c_int {
    with_nic(nic, |n| {
        let out = out.as_mut().ok_or_else(|| null("out"))?;
        *out = std::ptr::null_mut();
        let image = n.nic.load_image(text(path, "path")?)?;
        *out = Box::into_raw(Box::new(ss_image { image }));
        Ok(())
    })
}

/// Load a handler image from `len` bytes of ELF in memory (copied). As
/// ss_image_load; errors: SS_EINVAL, SS_EIMAGE.
#[no_mangle]
pub unsafe extern "C" fn ss_image_from_bytes(
    nic: *mut ss_nic,
    data: *const c_void,
    len: usize,
    out: *mut *mut ss_image,
) -> c_int {
    with_nic(nic, |n| {
        let out = out.as_mut().ok_or_else(|| null("out"))?;
        *out = std::ptr::null_mut();
        let image = n.nic.image_from_bytes(bytes(data, len, "data")?)?;
        *out = Box::into_raw(Box::new(ss_image { image }));
        Ok(())
    })
}

/// Free an image. NULL is a no-op. ECTXs installed from it are unaffected.
#[no_mangle]
pub unsafe extern "C" fn ss_image_free(image: *mut ss_image) -> c_int {
    guard(|| {
        if !image.is_null() {
            drop(Box::from_raw(image));
        }
        Ok(())
    })
}

/// The NIC address of a symbol (a handler or a global in handler memory):
/// write a global with ss_nic_write at that address. Errors: SS_EINVAL,
/// SS_ESYMBOL.
#[no_mangle]
pub unsafe extern "C" fn ss_image_symbol(
    image: *const ss_image,
    name: *const c_char,
    addr: *mut u32,
) -> c_int {
    guard(|| {
        let image = image.as_ref().ok_or_else(|| null("image"))?;
        let addr = out(addr, "addr")?;
        *addr = image.image.symbol(text(name, "name")?)?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Host memory
// ---------------------------------------------------------------------------

/// Create a zeroed host window of `size` bytes owned by the NIC (freed by
/// ss_host_unlend or ss_close); reach it with ss_host_read/ss_host_write.
/// A window holds at most 4 GiB - 1 bytes (task_t's 32-bit host_mem_size),
/// and the NIC's own windows 4 GiB in all (lend larger amounts).
/// Errors: SS_EINVAL, SS_EHOST (size 0), SS_ELIMIT (above a limit, or the
/// memory could not be allocated).
#[no_mangle]
pub unsafe extern "C" fn ss_host_window_create(
    nic: *mut ss_nic,
    size: usize,
    out_window: *mut ss_host_window,
) -> c_int {
    with_nic(nic, |n| {
        let o = out(out_window, "out_window")?;
        let w = n.nic.host_window(size)?;
        *o = ss_host_window {
            base: w.base,
            size: w.size,
        };
        Ok(())
    })
}

/// Lend the NIC the caller's buffer `buf` of `len` bytes as a host window,
/// used in place: handler DMA reads and writes it directly, and the caller
/// reads results straight from `buf` between calls. The caller keeps
/// ownership and must keep `buf` valid until ss_host_unlend or ss_close, and
/// must not access it from another thread while a call on this NIC runs.
/// The library never frees it. At most 4 GiB - 1 bytes (task_t's 32-bit
/// host_mem_size). Errors: SS_EINVAL, SS_EHOST (len 0), SS_ELIMIT.
#[no_mangle]
pub unsafe extern "C" fn ss_host_lend(
    nic: *mut ss_nic,
    buf: *mut c_void,
    len: usize,
    out_window: *mut ss_host_window,
) -> c_int {
    with_nic(nic, |n| {
        let o = out(out_window, "out_window")?;
        if buf.is_null() {
            return Err(null("buf"));
        }
        let w = n.nic.lend(Box::new(Lent {
            ptr: buf as *mut u8,
            len,
        }))?;
        *o = ss_host_window {
            base: w.base,
            size: w.size,
        };
        Ok(())
    })
}

/// Take a window back: a lent buffer returns to its owner (the NIC stops
/// using it; the bytes stay as handlers left them), a window from
/// ss_host_window_create is freed. ECTXs using it must not run afterwards.
/// Errors: SS_EINVAL, SS_EHOST (no window at window.base).
#[no_mangle]
pub unsafe extern "C" fn ss_host_unlend(nic: *mut ss_nic, window: ss_host_window) -> c_int {
    with_nic(nic, |n| {
        drop(n.nic.unlend(HostWindow {
            base: window.base,
            size: window.size,
        })?);
        Ok(())
    })
}

/// Copy `len` bytes of host memory at host address `addr` (inside one
/// window) into `out_buf`. Errors: SS_EINVAL, SS_EHOST (not inside a window).
#[no_mangle]
pub unsafe extern "C" fn ss_host_read(
    nic: *mut ss_nic,
    addr: u64,
    out_buf: *mut c_void,
    len: usize,
) -> c_int {
    with_nic(nic, |n| {
        if out_buf.is_null() && len > 0 {
            return Err(null("out_buf"));
        }
        // Read first: out_buf may lie in a lent buffer the read borrows.
        let v = n.nic.host_read(addr, len)?;
        bytes_mut(out_buf, len, "out_buf")?.copy_from_slice(&v);
        Ok(())
    })
}

/// Copy `len` bytes from `data` to host memory at host address `addr`
/// (inside one window). Errors: SS_EINVAL, SS_EHOST.
#[no_mangle]
pub unsafe extern "C" fn ss_host_write(
    nic: *mut ss_nic,
    addr: u64,
    data: *const c_void,
    len: usize,
) -> c_int {
    with_nic(nic, |n| {
        // No window is longer: refuse before copying.
        if len as u64 > softspin_host::MAX_HOST_WINDOW {
            return Err(fail(
                ss_status::SS_EHOST as c_int,
                format!("host range 0x{addr:x}+{len} is longer than any host window"),
            ));
        }
        // A copy: `data` may lie in a lent buffer the write borrows mutably.
        Ok(n.nic.host_write(addr, &copy_in(data, len, "data")?)?)
    })
}

// ---------------------------------------------------------------------------
// ECTX
// ---------------------------------------------------------------------------

/// Fill `o` with the defaults: no name, no handlers, image data only, whole
/// packets to L1, no host window, no scratchpad, watchdog 1,000,000
/// instructions, message timeout 1 ms, every packet, no RMA transport.
#[no_mangle]
pub unsafe extern "C" fn ss_ectx_options_init(o: *mut ss_ectx_options) -> c_int {
    guard(|| {
        *out(o, "options")? = ss_ectx_options {
            name: std::ptr::null(),
            hh: std::ptr::null(),
            ph: std::ptr::null(),
            th: std::ptr::null(),
            handler_mem_size: 0,
            l1_copy: 0,
            host_window: ss_host_window::default(),
            scratchpad: std::ptr::null(),
            scratchpad_len: 0,
            watchdog: 0,
            msg_timeout_ns: 1_000_000,
            udp_dst_port: 0,
            match_specs: std::ptr::null(),
            match_specs_len: 0,
            rules_file: std::ptr::null(),
            rules_toml: std::ptr::null(),
            handler_mem_addr: 0,
            rma_rank: -1,
        };
        Ok(())
    })
}

/// Install an ECTX for `image`: code to program memory, data to handler
/// memory, everything checked. It receives no packet before ss_activate.
/// `*out_ectx` gets its handle. Errors: SS_EINVAL, SS_ESYMBOL (a handler symbol
/// is missing), SS_EOVERLAP (memory overlaps an installed ECTX),
/// SS_ENICMEM (does not fit), SS_EHOST (a host window this NIC did not make,
/// or changed), SS_EECTX (other install problems).
#[no_mangle]
pub unsafe extern "C" fn ss_install(
    nic: *mut ss_nic,
    image: *const ss_image,
    options: *const ss_ectx_options,
    out_ectx: *mut ss_ectx,
) -> c_int {
    with_nic(nic, |n| {
        let image = image.as_ref().ok_or_else(|| null("image"))?;
        let o = options.as_ref().ok_or_else(|| null("options"))?;
        let out_ectx = out(out_ectx, "out_ectx")?;
        let clusters = n.nic.config().clusters as usize;
        let scratchpad = if o.scratchpad_len == 0 {
            Vec::new()
        } else if o.scratchpad_len > clusters {
            return Err(fail(
                SS_EINVAL,
                format!(
                    "options->scratchpad_len {} is above the NIC's {clusters} clusters",
                    o.scratchpad_len
                ),
            ));
        } else if o.scratchpad.is_null() {
            return Err(null("options->scratchpad"));
        } else {
            std::slice::from_raw_parts(o.scratchpad, o.scratchpad_len).to_vec()
        };
        let name = opt_text(o.name, "options->name")?;
        let rules = ectx_rules(o, name.as_deref())?;
        let opts = EctxOptions {
            name,
            hh: opt_text(o.hh, "options->hh")?,
            ph: opt_text(o.ph, "options->ph")?,
            th: opt_text(o.th, "options->th")?,
            handler_mem_size: (o.handler_mem_size > 0).then_some(o.handler_mem_size),
            handler_mem_addr: (o.handler_mem_addr > 0).then_some(o.handler_mem_addr),
            host_window: (o.host_window.size > 0).then_some(HostWindow {
                base: o.host_window.base,
                size: o.host_window.size,
            }),
            l1_copy: (o.l1_copy > 0).then_some(o.l1_copy),
            scratchpad,
            watchdog: (o.watchdog > 0).then_some(o.watchdog),
            msg_timeout_ns: Some(o.msg_timeout_ns),
            udp_dst_port: (o.udp_dst_port > 0).then_some(o.udp_dst_port),
            rules,
            rma: match o.rma_rank {
                -1 => None,
                r => Some(softspin_engine::RmaTransportConfig::new(
                    u16::try_from(r).map_err(|_| {
                        fail(
                            SS_EINVAL,
                            format!("options->rma_rank {r}: 0..=65535, or -1 for no RMA transport"),
                        )
                    })?,
                )),
            },
        };
        *out_ectx = n.nic.install(&image.image, opts)?.0;
        Ok(())
    })
}

/// The rulesets of `o` (`rules::ectx_rulesets`): its `match_specs`
/// shortcuts, then the rules file's and the TOML text's rulesets meant for
/// ECTX `name`; with none, `udp:PORT` for its `udp_dst_port`.
unsafe fn ectx_rules(o: &ss_ectx_options, name: Option<&str>) -> Result<Vec<Ruleset>, Fail> {
    let mut specs = Vec::new();
    if o.match_specs_len > 0 {
        if o.match_specs.is_null() {
            return Err(null("options->match_specs"));
        }
        for (i, &m) in std::slice::from_raw_parts(o.match_specs, o.match_specs_len)
            .iter()
            .enumerate()
        {
            specs.push(text(m, &format!("options->match_specs[{i}]"))?);
        }
    }
    let net = |e| Fail::from(Error::Net(e));
    let mut from_file = Vec::new();
    if let Some(path) = opt_text(o.rules_file, "options->rules_file")? {
        from_file.extend(rules::load_rules(&path).map_err(net)?);
    }
    if let Some(toml) = opt_text(o.rules_toml, "options->rules_toml")? {
        from_file.extend(rules::parse_rules(&toml).map_err(net)?);
    }
    let port = (o.udp_dst_port > 0).then_some(o.udp_dst_port);
    rules::ectx_rulesets(&specs, from_file, name, port).map_err(net)
}

/// Let packets reach an installed ECTX. Errors: SS_EINVAL, SS_ENOECTX,
/// SS_ESTATE (already active).
#[no_mangle]
pub unsafe extern "C" fn ss_activate(nic: *mut ss_nic, ectx: ss_ectx) -> c_int {
    with_nic(nic, |n| Ok(n.nic.activate(ectx_handle(ectx))?))
}

/// Stop new packets reaching an ECTX (messages in flight finish). Errors:
/// SS_EINVAL, SS_ENOECTX, SS_ESTATE (not active).
#[no_mangle]
pub unsafe extern "C" fn ss_deactivate(nic: *mut ss_nic, ectx: ss_ectx) -> c_int {
    with_nic(nic, |n| Ok(n.nic.deactivate(ectx_handle(ectx))?))
}

/// Remove an inactive ECTX with no message in flight; its handle becomes
/// invalid (SS_ENOECTX). Errors: SS_EINVAL, SS_ENOECTX, SS_ESTATE (active,
/// or messages in flight: deactivate and ss_run_until_idle first).
#[no_mangle]
pub unsafe extern "C" fn ss_uninstall(nic: *mut ss_nic, ectx: ss_ectx) -> c_int {
    with_nic(nic, |n| Ok(n.nic.uninstall(ectx_handle(ectx))?))
}

/// The frames ss_send_message builds for this ECTX: SS_FRAME_IP (default)
/// or SS_FRAME_ETH. Errors: SS_EINVAL, SS_ENOECTX.
#[no_mangle]
pub unsafe extern "C" fn ss_set_frame_kind(nic: *mut ss_nic, ectx: ss_ectx, kind: u32) -> c_int {
    with_nic(nic, |n| {
        Ok(n.nic.set_frame_kind(ectx_handle(ectx), frame_kind(kind)?)?)
    })
}

// ---------------------------------------------------------------------------
// NIC memory
// ---------------------------------------------------------------------------

/// Allocate `size` bytes (aligned to `align`, a power of two; 0 = 1) of the
/// ECTX's handler memory beyond its image's data (size the region with
/// handler_mem_size). `*addr` gets the NIC address, for structures the
/// handlers follow. Never freed individually (the region goes with the
/// ECTX). Errors: SS_EINVAL, SS_ENOECTX, SS_ENICMEM (does not fit, bad
/// alignment).
#[no_mangle]
pub unsafe extern "C" fn ss_nic_alloc(
    nic: *mut ss_nic,
    ectx: ss_ectx,
    size: usize,
    align: usize,
    addr: *mut u32,
) -> c_int {
    with_nic(nic, |n| {
        let a = out(addr, "addr")?;
        *a = n.nic.nic_alloc(ectx_handle(ectx), size, align)?;
        Ok(())
    })
}

/// Copy `len` bytes of NIC memory at NIC address `addr` into `out_buf`. Errors:
/// SS_EINVAL, SS_ENICMEM (not NIC memory).
#[no_mangle]
pub unsafe extern "C" fn ss_nic_read(
    nic: *mut ss_nic,
    addr: u32,
    out_buf: *mut c_void,
    len: usize,
) -> c_int {
    with_nic(nic, |n| {
        let o = bytes_mut(out_buf, len, "out_buf")?;
        o.copy_from_slice(&n.nic.nic_read(addr, len)?);
        Ok(())
    })
}

/// Copy `len` bytes from `data` to NIC memory at NIC address `addr`.
/// Errors: SS_EINVAL, SS_ENICMEM.
#[no_mangle]
pub unsafe extern "C" fn ss_nic_write(
    nic: *mut ss_nic,
    addr: u32,
    data: *const c_void,
    len: usize,
) -> c_int {
    with_nic(nic, |n| {
        Ok(n.nic.nic_write(addr, bytes(data, len, "data")?)?)
    })
}

/// RMA memory registration (docs/rma.md "Windows and keys"): export `size`
/// bytes at `offset` of the ECTX's host window under `key` with `perms`
/// (READ 1 | WRITE 2 | ATOMIC 4) in the window table of its image (the RMA
/// target handlers, examples/rma_target); the same key again replaces its
/// window. Errors: SS_EINVAL (key 0, no or unknown permissions, an image
/// without the table, an ECTX without a host window), SS_ELIMIT (past the
/// host window, table full), SS_ENOECTX.
#[no_mangle]
pub unsafe extern "C" fn ss_export_window(
    nic: *mut ss_nic,
    ectx: ss_ectx,
    key: u32,
    offset: u64,
    size: u64,
    perms: u32,
) -> c_int {
    with_nic(nic, |n| {
        Ok(n.nic
            .export_window(ectx_handle(ectx), key, offset, size, perms)?)
    })
}

/// Withdraw the RMA window exported under `key`: requests for it get "bad
/// key". Errors: SS_EINVAL (no window under the key), SS_ENOECTX.
#[no_mangle]
pub unsafe extern "C" fn ss_unexport_window(nic: *mut ss_nic, ectx: ss_ectx, key: u32) -> c_int {
    with_nic(nic, |n| {
        Ok(n.nic.unexport_window(ectx_handle(ectx), key)?)
    })
}

/// Store the NIC pointer `target` (a 32-bit NIC address) at `addr`: the
/// relocation step when building linked structures for handlers. Errors:
/// SS_EINVAL, SS_ENICMEM.
#[no_mangle]
pub unsafe extern "C" fn ss_nic_write_ptr(nic: *mut ss_nic, addr: u32, target: u32) -> c_int {
    with_nic(nic, |n| Ok(n.nic.nic_write_ptr(addr, target)?))
}

// ---------------------------------------------------------------------------
// Traffic
// ---------------------------------------------------------------------------

/// Build a frame of kind SS_FRAME_IP/SS_FRAME_ETH around `payload` (UDP
/// 10.0.0.1:9330 -> 10.0.0.2:`udp_dst_port`, the headers ss_send_message
/// uses) into `out_frame` of `cap` bytes; `*frame_len` gets the frame's length.
/// A NULL `out_frame` with `cap` 0 only asks for the length. Errors: SS_EINVAL
/// (also when `cap` is too small; `*frame_len` still tells the length),
/// SS_ETRAFFIC (frame over 65535 bytes).
#[no_mangle]
pub unsafe extern "C" fn ss_build_frame(
    kind: u32,
    udp_dst_port: u16,
    payload: *const c_void,
    payload_len: usize,
    out_frame: *mut c_void,
    cap: usize,
    frame_len: *mut usize,
) -> c_int {
    guard(|| {
        let fl = out(frame_len, "frame_len")?;
        let k = frame_kind(kind)?;
        let p = bytes(payload, payload_len, "payload")?;
        let size = k.header_len() + p.len();
        *fl = size;
        if out_frame.is_null() && cap == 0 {
            return Ok(());
        }
        if cap < size {
            return Err(fail(
                SS_EINVAL,
                format!("a {size}-byte frame does not fit {cap} bytes"),
            ));
        }
        let o = bytes_mut(out_frame, cap, "out_frame")?;
        let f = softspin_engine::traffic::build_frame(
            k,
            size,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            softspin_engine::traffic::DEFAULT_UDP_PORT,
            udp_dst_port,
            |i| p[i],
        )
        .map_err(|e| Fail::from(Error::Traffic(e)))?;
        o[..size].copy_from_slice(&f);
        Ok(())
    })
}

/// Hand the NIC one packet (a whole frame, copied) of message `msg_id`,
/// arriving now; `eom` nonzero ends the message. Packets match ECTXs by
/// their UDP port. Problems with the frame surface when running (SS_ESIM).
/// Errors: SS_EINVAL.
#[no_mangle]
pub unsafe extern "C" fn ss_send_packet(
    nic: *mut ss_nic,
    frame: *const c_void,
    len: usize,
    msg_id: u32,
    eom: c_int,
) -> c_int {
    with_nic(nic, |n| {
        Ok(n.nic
            .send_packet(copy_in(frame, len, "frame")?, msg_id, eom != 0)?)
    })
}

/// Send `len` bytes of `payload` (copied) as message `msg_id` to an ECTX:
/// split into packets of at most `packet_size` bytes, headers included
/// (28-byte IP/UDP headers for SS_FRAME_IP: payload starts at pkt_mem + 28),
/// addressed to the ECTX's port and spaced at the line rate from now.
/// Errors: SS_EINVAL (packet_size leaves no room), SS_ENOECTX, SS_ETRAFFIC.
#[no_mangle]
pub unsafe extern "C" fn ss_send_message(
    nic: *mut ss_nic,
    ectx: ss_ectx,
    msg_id: u32,
    payload: *const c_void,
    len: usize,
    packet_size: usize,
) -> c_int {
    with_nic(nic, |n| {
        Ok(n.nic.send_message(
            ectx_handle(ectx),
            msg_id,
            bytes(payload, len, "payload")?,
            packet_size,
        )?)
    })
}

/// Fill `g` with the generator's defaults: 1 message of 1 packet of 1024
/// bytes at 400 Gbit/s, 1 in flight, SS_FRAME_IP, SS_PAYLOAD_SEQUENCE, seed
/// 0, message ids from 0, UDP 10.0.0.1:9330 -> 10.0.0.2:9330.
#[no_mangle]
pub unsafe extern "C" fn ss_gen_config_init(g: *mut ss_gen_config) -> c_int {
    guard(|| {
        let d = GenConfig::default();
        *out(g, "config")? = ss_gen_config {
            messages: d.messages,
            packets_per_message: d.packets_per_message,
            size: d.size as u32,
            concurrent: d.concurrent,
            rate_gbps: d.rate_gbps,
            frame: if d.frame == FrameKind::Eth {
                SS_FRAME_ETH
            } else {
                SS_FRAME_IP
            },
            payload: match d.payload {
                Payload::Zero => SS_PAYLOAD_ZERO,
                Payload::Sequence => SS_PAYLOAD_SEQUENCE,
                Payload::Random { .. } => SS_PAYLOAD_RANDOM,
            },
            seed: match d.payload {
                Payload::Random { seed } => seed,
                _ => 0,
            },
            first_msg_id: d.first_msg_id,
            udp_src_port: d.udp_src_port,
            udp_dst_port: d.udp_dst_port,
            src_ip: d.src_ip,
            dst_ip: d.dst_ip,
        };
        Ok(())
    })
}

/// Feed packets from the synthetic generator (replacing any feed not yet
/// consumed). Errors: SS_EINVAL, SS_ETRAFFIC (invalid parameter).
#[no_mangle]
pub unsafe extern "C" fn ss_feed_generator(
    nic: *mut ss_nic,
    config: *const ss_gen_config,
) -> c_int {
    with_nic(nic, |n| {
        let g = config.as_ref().ok_or_else(|| null("config"))?;
        let payload = match g.payload {
            SS_PAYLOAD_ZERO => Payload::Zero,
            SS_PAYLOAD_SEQUENCE => Payload::Sequence,
            SS_PAYLOAD_RANDOM => Payload::Random { seed: g.seed },
            p => return Err(fail(SS_EINVAL, format!("unknown payload kind {p}"))),
        };
        let cfg = GenConfig {
            messages: g.messages,
            packets_per_message: g.packets_per_message,
            size: g.size as usize,
            rate_gbps: g.rate_gbps,
            concurrent: g.concurrent,
            frame: frame_kind(g.frame)?,
            payload,
            first_msg_id: g.first_msg_id,
            udp_src_port: g.udp_src_port,
            udp_dst_port: g.udp_dst_port,
            src_ip: g.src_ip,
            dst_ip: g.dst_ip,
        };
        Ok(n.nic.feed_generator(cfg)?)
    })
}

/// Feed a PsPIN-style text trace (docs/sim.md) with frames of `kind`.
/// Errors: SS_EINVAL, SS_EIO, SS_ETRAFFIC (malformed line: file and line in
/// the message; may also surface later, when running).
#[no_mangle]
pub unsafe extern "C" fn ss_feed_trace(nic: *mut ss_nic, path: *const c_char, kind: u32) -> c_int {
    with_nic(nic, |n| {
        Ok(n.nic.feed_trace(text(path, "path")?, frame_kind(kind)?)?)
    })
}

/// Feed a pcap or pcapng file of Ethernet frames: at its timestamps
/// (`rate_gbps` 0) or back to back at `rate_gbps`. Errors: SS_EINVAL
/// (negative rate), SS_EIO, SS_ETRAFFIC.
#[no_mangle]
pub unsafe extern "C" fn ss_feed_pcap(
    nic: *mut ss_nic,
    path: *const c_char,
    rate_gbps: f64,
) -> c_int {
    with_nic(nic, |n| {
        let path = text(path, "path")?;
        if rate_gbps.is_nan() || rate_gbps < 0.0 {
            return Err(fail(SS_EINVAL, format!("rate {rate_gbps} Gbit/s")));
        }
        Ok(n.nic
            .feed_pcap(path, (rate_gbps > 0.0).then_some(rate_gbps))?)
    })
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

/// Run until nothing is left to do (all traffic processed), or every
/// handler waits for the host (answer notifications, then run again).
/// Errors: SS_EINVAL, SS_ESIM, SS_ETRAFFIC, SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_run_until_idle(nic: *mut ss_nic) -> c_int {
    with_nic(nic, |n| Ok(n.nic.run_until_idle()?))
}

/// Run for `ns` nanoseconds of NIC time. Errors as ss_run_until_idle, and
/// SS_ELIMIT (the end would pass the simulation horizon, 2^63 ps).
#[no_mangle]
pub unsafe extern "C" fn ss_run_for_ns(nic: *mut ss_nic, ns: u64) -> c_int {
    with_nic(nic, |n| Ok(n.nic.run_for(ns)?))
}

/// The current NIC time in nanoseconds.
#[no_mangle]
pub unsafe extern "C" fn ss_now_ns(nic: *mut ss_nic, out_ns: *mut f64) -> c_int {
    with_nic(nic, |n| {
        *out(out_ns, "out_ns")? = n.nic.now_ns();
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

/// Take the next event (kind SS_EVENT_NONE when there is none). Events come
/// in batches as the NIC produced them since the last batch: handler errors,
/// then outbound packets, host writes and completed messages, each kind in
/// time order. Pointers in `*ev` stay valid until the next ss_next_event or
/// ss_close on this NIC. Errors: SS_EINVAL.
#[no_mangle]
pub unsafe extern "C" fn ss_next_event(nic: *mut ss_nic, ev: *mut ss_event) -> c_int {
    with_nic(nic, |n| {
        let ev = out(ev, "event")?;
        if n.events.is_empty() {
            n.drain();
        }
        let mut e = ss_event {
            kind: SS_EVENT_NONE,
            ectx: 0,
            time_ps: 0,
            msg_id: 0,
            dest: 0,
            data: std::ptr::null(),
            data_len: 0,
            addr: 0,
            value: 0,
            pc: 0,
            hpu: 0,
            present: 0,
            handler: std::ptr::null(),
            detail: std::ptr::null(),
            cause: std::ptr::null(),
            ectx_name: std::ptr::null(),
            error_cause: ss_error_cause::SS_CAUSE_NONE as u32,
        };
        if let Some(x) = n.events.pop_front() {
            match x {
                Event::Outbound(p) => {
                    e.ectx = p.ectx.0;
                    n.held.frame = p.frame;
                    (e.kind, e.time_ps, e.dest) = (SS_EVENT_OUTBOUND, p.time_ps, p.dest);
                    (e.data, e.data_len) = (n.held.frame.as_ptr(), n.held.frame.len());
                }
                Event::HostWrite(w) => {
                    (e.kind, e.ectx, e.time_ps, e.addr, e.value) =
                        (SS_EVENT_HOST_WRITE, w.ectx.0, w.time_ps, w.addr, w.value)
                }
                Event::MessageDone(d) => {
                    (e.kind, e.ectx, e.time_ps, e.msg_id) =
                        (SS_EVENT_MESSAGE_DONE, d.ectx.0, d.time_ps, d.msg_id)
                }
                Event::ErrorsDropped { count } => {
                    (e.kind, e.value) = (SS_EVENT_ERRORS_DROPPED, count)
                }
                Event::HandlerError(x) => {
                    let c = |s: String| CString::new(s.replace('\0', "?")).unwrap_or_default();
                    n.held.handler = x.handler.map(c);
                    n.held.detail = x.detail.map(c);
                    n.held.cause = c(x.cause);
                    n.held.ectx = c(x.ectx_name);
                    // The engine rounded its ps clock down to ns: back in ps it
                    // is at most that clock, so saturation never happens.
                    (e.kind, e.ectx, e.time_ps, e.msg_id) = (
                        SS_EVENT_HANDLER_ERROR,
                        x.ectx.0,
                        Ns(x.time_ns).to_ps_saturating().0,
                        x.msg_id,
                    );
                    e.present = [
                        (x.pc.is_some(), SS_HAS_PC),
                        (x.addr.is_some(), SS_HAS_ADDR),
                        (x.hpu.is_some(), SS_HAS_HPU),
                    ]
                    .iter()
                    .filter(|(on, _)| *on)
                    .fold(0, |a, (_, bit)| a | bit);
                    (e.pc, e.addr, e.hpu) =
                        (x.pc.unwrap_or(0), x.addr.unwrap_or(0), x.hpu.unwrap_or(0));
                    if let ErrorCause::Aborted { status } = x.kind {
                        e.value = status as i64 as u64;
                    }
                    e.error_cause = cause_code(x.kind) as u32;
                    let ptr =
                        |h: &Option<CString>| h.as_ref().map_or(std::ptr::null(), |h| h.as_ptr());
                    (e.handler, e.detail, e.cause, e.ectx_name) = (
                        ptr(&n.held.handler),
                        ptr(&n.held.detail),
                        n.held.cause.as_ptr(),
                        n.held.ectx.as_ptr(),
                    );
                }
            }
        }
        *ev = e;
        Ok(())
    })
}

fn put_notes(n: &mut NicState, outp: *mut ss_notification, cap: usize, count: *mut usize) -> Res {
    // SAFETY: the caller's array of `cap` entries (checked for NULL).
    let count = unsafe { out(count, "count")? };
    if outp.is_null() && cap > 0 {
        return Err(null("out_notes"));
    }
    let k = cap.min(n.notes.len());
    for (i, x) in n.notes.drain(..k).enumerate() {
        let mut data = [0u8; SS_NOTIFY_INLINE_MAX];
        let len = x.data.len().min(SS_NOTIFY_INLINE_MAX);
        data[..len].copy_from_slice(&x.data[..len]);
        let note = ss_notification {
            id: x.id,
            ectx: x.ectx.0,
            hpu: x.hpu,
            data_len: len as u32,
            time_ps: x.time_ps,
            host_ref: x.host_ref,
            data,
        };
        // SAFETY: i < cap.
        unsafe { outp.add(i).write(note) };
    }
    *count = k;
    Ok(())
}

/// Copy up to `cap` notifications that reached the host into `out_notes` (oldest
/// first); `*count` gets how many. Ones that did not fit stay for the next
/// call. Errors: SS_EINVAL.
#[no_mangle]
pub unsafe extern "C" fn ss_poll_notifications(
    nic: *mut ss_nic,
    out_notes: *mut ss_notification,
    cap: usize,
    count: *mut usize,
) -> c_int {
    with_nic(nic, |n| {
        n.drain();
        put_notes(n, out_notes, cap, count)
    })
}

/// As ss_poll_notifications, but first run the NIC until at least one
/// notification is available or nothing is left to run (`*count` 0).
/// Errors: SS_EINVAL, and those of ss_run_until_idle.
#[no_mangle]
pub unsafe extern "C" fn ss_wait_notifications(
    nic: *mut ss_nic,
    out_notes: *mut ss_notification,
    cap: usize,
    count: *mut usize,
) -> c_int {
    with_nic(nic, |n| {
        n.drain();
        if n.notes.is_empty() {
            let got = n.nic.wait_notifications()?;
            n.notes.extend(got);
        }
        put_notes(n, out_notes, cap, count)
    })
}

/// Answer notification `id` with `value`; the handler sees it one PCIe
/// latency later. Errors: SS_EINVAL (unknown or already answered).
#[no_mangle]
pub unsafe extern "C" fn ss_respond(nic: *mut ss_nic, id: u32, value: u64) -> c_int {
    with_nic(nic, |n| Ok(n.nic.respond(id, value)?))
}

/// The statistics so far into `*out_report`. Errors: SS_EINVAL.
#[no_mangle]
pub unsafe extern "C" fn ss_get_report(nic: *mut ss_nic, out_report: *mut ss_report) -> c_int {
    with_nic(nic, |n| {
        let o = out(out_report, "out_report")?;
        let r = n.nic.report();
        let l = &r.latency_ns;
        *o = ss_report {
            packets: r.packets,
            bytes: r.bytes,
            packets_in: r.packets_in,
            unmatched: r.unmatched,
            drops: r.drops,
            message_timeouts: r.message_timeouts,
            outbound_packets: r.outbound_packets,
            outbound_bytes: r.outbound_bytes,
            host_writes: r.host_writes,
            dma_to_host_bytes: r.dma_to_host_bytes,
            dma_from_host_bytes: r.dma_from_host_bytes,
            commands: r.commands,
            tasks: r.tasks,
            errors: r.errors.iter().map(|e| e.total).sum(),
            throughput_gbps: r.throughput_gbps,
            mpps: r.mpps,
            latency_min_ns: l.min,
            latency_mean_ns: l.mean,
            latency_p50_ns: l.p50,
            latency_p99_ns: l.p99,
            latency_max_ns: l.max,
            backpressure_ns: r.backpressure_ns,
            mpq_stall_ns: r.mpq_stall_ns,
            hpu_utilization: r.hpu_utilization,
            sim_time_ns: r.sim_time_ns,
            hpus_busy_max: r.hpus_busy_max,
        };
        Ok(())
    })
}

/// The report as `softspin sim` prints it (with per-handler rows), copied
/// into `buf` of `cap` bytes, NUL-terminated, truncated if need be; `*len`
/// (may be NULL) gets the full length without the NUL. `buf` may be NULL
/// when `cap` is 0 (to ask for the length). Errors: SS_EINVAL.
#[no_mangle]
pub unsafe extern "C" fn ss_report_text(
    nic: *mut ss_nic,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> c_int {
    with_nic(nic, |n| {
        put_text(n.nic.report().text().as_bytes(), buf, cap, len)
    })
}

/// Packets admitted to and messages completed by an ECTX. Errors: SS_EINVAL,
/// SS_ENOECTX.
#[no_mangle]
pub unsafe extern "C" fn ss_ectx_counts(
    nic: *mut ss_nic,
    ectx: ss_ectx,
    packets: *mut u64,
    messages: *mut u64,
) -> c_int {
    with_nic(nic, |n| {
        let p = out(packets, "packets")?;
        let m = out(messages, "messages")?;
        (*p, *m) = n.nic.ectx_counts(ectx_handle(ectx))?;
        Ok(())
    })
}

/// Performance counters an ECTX's handlers pushed, by index: up to `cap`
/// into `out_counters` (may be NULL when `cap` is 0); `*count` gets how many exist.
/// Errors: SS_EINVAL, SS_ENOECTX.
#[no_mangle]
pub unsafe extern "C" fn ss_counters(
    nic: *mut ss_nic,
    ectx: ss_ectx,
    out_counters: *mut ss_counter,
    cap: usize,
    count: *mut usize,
) -> c_int {
    with_nic(nic, |n| {
        let c = out(count, "count")?;
        if out_counters.is_null() && cap > 0 {
            return Err(null("out_counters"));
        }
        let v = n.nic.counters(ectx_handle(ectx))?;
        *c = v.len();
        for (i, (index, sum, count)) in v.into_iter().take(cap).enumerate() {
            out_counters.add(i).write(ss_counter { index, sum, count });
        }
        Ok(())
    })
}

/// The printf output of HPU `hpu` (global index, below hpu_count), copied
/// like ss_report_text. Errors: SS_EINVAL (no such HPU).
#[no_mangle]
pub unsafe extern "C" fn ss_hpu_stdout(
    nic: *mut ss_nic,
    hpu: u32,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> c_int {
    with_nic(nic, |n| {
        put_text(n.nic.hpu_stdout(hpu as usize)?.as_bytes(), buf, cap, len)
    })
}

// ---------------------------------------------------------------------------
// A host program beside a `softspin nic` process (docs/host-interface.md)

/// A connection to a `softspin nic` process's control socket, with the host
/// memory it shares mapped (ss_client_connect). One thread at a time.
pub struct ss_client {
    c: softspin_host::NicClient,
}

fn with_client(c: *mut ss_client, f: impl FnOnce(&mut softspin_host::NicClient) -> Res) -> c_int {
    guard(|| {
        // SAFETY: a pointer from ss_client_connect, one thread at a time
        // (documented).
        let c = unsafe { c.as_mut() }.ok_or_else(|| null("client"))?;
        f(&mut c.c)
    })
}

/// Connect to the control socket at `path` (`softspin nic --control PATH`)
/// and map the host memory the NIC shares (`--host-shm`). Errors: SS_EINVAL,
/// SS_EIO (no NIC there, the shared file).
#[no_mangle]
pub unsafe extern "C" fn ss_client_connect(
    path: *const c_char,
    out_client: *mut *mut ss_client,
) -> c_int {
    guard(|| {
        let path = text(path, "path")?;
        let slot = out(out_client, "out_client")?;
        let c = softspin_host::NicClient::connect(path)?;
        *slot = Box::into_raw(Box::new(ss_client { c }));
        Ok(())
    })
}

/// Close the connection and unmap the shared memory (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn ss_client_close(c: *mut ss_client) -> c_int {
    guard(|| {
        if !c.is_null() {
            drop(Box::from_raw(c));
        }
        Ok(())
    })
}

/// The shared host memory, in place (valid until ss_client_close): what
/// the NIC's handlers DMA-write appears there, and what is stored there is
/// what they DMA-read. Errors: SS_EINVAL (the NIC shares none).
#[no_mangle]
pub unsafe extern "C" fn ss_client_host_mem(
    c: *mut ss_client,
    out_mem: *mut *mut u8,
    out_len: *mut usize,
) -> c_int {
    with_client(c, |c| {
        let m = c.host_mem()?;
        // SAFETY: the caller's pointers (checked for NULL).
        let (pm, pl) = unsafe { (out(out_mem, "out_mem")?, out(out_len, "out_len")?) };
        (*pm, *pl) = (m.as_mut_ptr(), m.len());
        Ok(())
    })
}

/// The ECTX called `name` (its handle for the other calls) and where its
/// host window starts in ss_client_host_mem. Errors: SS_EINVAL.
#[no_mangle]
pub unsafe extern "C" fn ss_client_ectx(
    c: *mut ss_client,
    name: *const c_char,
    out_ectx: *mut ss_ectx,
    out_shm_offset: *mut u64,
) -> c_int {
    with_client(c, |c| {
        // SAFETY: the caller's string and pointers (checked for NULL).
        let (name, pe) = unsafe { (text(name, "name")?, out(out_ectx, "out_ectx")?) };
        let e = c.ectx(name)?;
        *pe = e.ectx;
        // SAFETY: optional out pointer.
        if let Some(o) = unsafe { out_shm_offset.as_mut() } {
            *o = e.shm_offset.unwrap_or(u64::MAX);
        }
        Ok(())
    })
}

/// Export an RMA window through the NIC (as ss_export_window). Errors:
/// SS_EINVAL (the NIC refused: the message says why), SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_export_window(
    c: *mut ss_client,
    ectx: ss_ectx,
    key: u32,
    offset: u64,
    size: u64,
    perms: u32,
) -> c_int {
    with_client(c, |c| Ok(c.export_window(ectx, key, offset, size, perms)?))
}

/// Withdraw the RMA window exported under `key`. Errors: SS_EINVAL, SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_unexport_window(
    c: *mut ss_client,
    ectx: ss_ectx,
    key: u32,
) -> c_int {
    with_client(c, |c| Ok(c.unexport_window(ectx, key)?))
}

/// Up to `cap` of the ECTX's counters into `out_counters`; `*count` gets how
/// many there are (more than `cap`: call again with room). Errors:
/// SS_EINVAL, SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_counters(
    c: *mut ss_client,
    ectx: ss_ectx,
    out_counters: *mut ss_counter,
    cap: usize,
    count: *mut usize,
) -> c_int {
    with_client(c, |c| {
        // SAFETY: the caller's count pointer (checked for NULL).
        let count = unsafe { out(count, "count")? };
        if out_counters.is_null() && cap > 0 {
            return Err(null("out_counters"));
        }
        let v = c.counters(ectx)?;
        for (i, &(index, sum, n)) in v.iter().take(cap).enumerate() {
            // SAFETY: i < cap entries of the caller's array.
            unsafe {
                out_counters.add(i).write(ss_counter {
                    index,
                    sum,
                    count: n,
                })
            };
        }
        *count = v.len();
        Ok(())
    })
}

/// The NIC's status as JSON text (docs/host-interface.md, op `status`),
/// NUL-terminated, cut to `cap`; `*len` gets its full length. Errors:
/// SS_EINVAL, SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_status(
    c: *mut ss_client,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> c_int {
    with_client(c, |c| {
        let s = c.status()?.to_string();
        // SAFETY: the caller's buffer of `cap` bytes.
        unsafe { put_text(s.as_bytes(), buf, cap, len) }
    })
}

/// Wait at most `timeout_ms` for a notification a handler posted; `*got` is
/// 1 and `*out_note` filled when one came, else 0. Answer it with
/// ss_client_respond. Errors: SS_EINVAL, SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_wait_notification(
    c: *mut ss_client,
    timeout_ms: u64,
    out_note: *mut ss_notification,
    got: *mut c_int,
) -> c_int {
    with_client(c, |c| {
        // SAFETY: the caller's pointers (checked for NULL).
        let (pn, pg) = unsafe { (out(out_note, "out_note")?, out(got, "got")?) };
        *pg = 0;
        if let Some(x) = c.wait_notification(Duration::from_millis(timeout_ms))? {
            let mut data = [0u8; SS_NOTIFY_INLINE_MAX];
            let len = x.data.len().min(SS_NOTIFY_INLINE_MAX);
            data[..len].copy_from_slice(&x.data[..len]);
            *pn = ss_notification {
                id: x.id,
                ectx: x.ectx,
                hpu: x.hpu,
                data_len: len as u32,
                time_ps: x.time_ps,
                host_ref: x.host_ref,
                data,
            };
            *pg = 1;
        }
        Ok(())
    })
}

/// Answer notification `id` with `value`. Errors: SS_EINVAL (no such
/// notification), SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_respond(c: *mut ss_client, id: u32, value: u64) -> c_int {
    with_client(c, |c| Ok(c.respond(id, value)?))
}

fn rma_request(r: &ss_rma_request) -> Result<softspin_host::RmaRequest, softspin_host::Error> {
    use softspin_host::RmaOp;
    use ss_rma_op::*;
    let is = |o: ss_rma_op| r.op == o as u32;
    let op = match () {
        _ if is(SS_RMA_PUT) => RmaOp::Put {
            local: r.local,
            len: r.len,
        },
        _ if is(SS_RMA_GET) => RmaOp::Get {
            local: r.local,
            len: r.len,
        },
        _ if is(SS_RMA_FETCH_ADD) => RmaOp::FetchAdd {
            width: r.width,
            addend: r.operand,
        },
        _ if is(SS_RMA_CAS) => RmaOp::Cas {
            width: r.width,
            compare: r.operand,
            swap: r.swap,
        },
        _ => {
            return Err(softspin_host::Error::Invalid(format!(
                "ss_rma_request.op {}: one of SS_RMA_PUT, SS_RMA_GET, SS_RMA_FETCH_ADD, SS_RMA_CAS",
                r.op
            )))
        }
    };
    Ok(softspin_host::RmaRequest {
        rank: r.rank,
        key: r.key,
        offset: r.offset,
        op,
    })
}

/// Post an RMA operation without waiting (docs/host-interface.md "RMA");
/// `*handle` is this client's handle for ss_client_wait/ss_client_test. A
/// put sends bytes stored in the host window before the call. Errors:
/// SS_EINVAL (a bad request: the message says why), SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_post(
    c: *mut ss_client,
    req: *const ss_rma_request,
    handle: *mut u64,
) -> c_int {
    with_client(c, |c| {
        // SAFETY: the caller's pointers (checked for NULL).
        let (r, h) = unsafe {
            (
                req.as_ref().ok_or_else(|| null("req"))?,
                out(handle, "handle")?,
            )
        };
        *h = c.post(&rma_request(r)?)?.0;
        Ok(())
    })
}

fn put_completion(
    x: Option<softspin_host::RmaCompletion>,
    pc: &mut ss_rma_completion,
    pg: &mut c_int,
) {
    *pg = c_int::from(x.is_some());
    if let Some(x) = x {
        *pc = ss_rma_completion {
            handle: x.handle.0,
            status: x.status,
            value: x.value,
        };
    }
}

/// Wait at most `timeout_ms` for the completion of `handle`: `*got` is 1
/// and `*out` filled when it came (each completion is returned once), else
/// 0. A non-OK status is in `out->status`, not an error. Errors: SS_EINVAL
/// (not a handle of this client's still to be waited for), SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_wait(
    c: *mut ss_client,
    handle: u64,
    timeout_ms: u64,
    out_completion: *mut ss_rma_completion,
    got: *mut c_int,
) -> c_int {
    with_client(c, |c| {
        // SAFETY: the caller's pointers (checked for NULL).
        let (pc, pg) = unsafe { (out(out_completion, "out_completion")?, out(got, "got")?) };
        let x = c.wait(
            softspin_host::RmaHandle(handle),
            Duration::from_millis(timeout_ms),
        )?;
        put_completion(x, pc, pg);
        Ok(())
    })
}

/// ss_client_wait without waiting.
#[no_mangle]
pub unsafe extern "C" fn ss_client_test(
    c: *mut ss_client,
    handle: u64,
    out_completion: *mut ss_rma_completion,
    got: *mut c_int,
) -> c_int {
    with_client(c, |c| {
        // SAFETY: the caller's pointers (checked for NULL).
        let (pc, pg) = unsafe { (out(out_completion, "out_completion")?, out(got, "got")?) };
        let x = c.test(softspin_host::RmaHandle(handle))?;
        put_completion(x, pc, pg);
        Ok(())
    })
}

/// Put (blocking): `len` bytes of the RMA ECTX's host window at `local`
/// (within ss_client_host_mem at the ECTX's shm offset) to `offset` in rank
/// `rank`'s window `key`. Errors: SS_EHOST (a non-OK status: the message
/// names it, e.g. BAD_KEY, and for PEER_FAILED the rank), SS_EINVAL, SS_EIO.
#[no_mangle]
pub unsafe extern "C" fn ss_client_put(
    c: *mut ss_client,
    rank: u16,
    key: u32,
    offset: u64,
    local: u64,
    len: u64,
) -> c_int {
    with_client(c, |c| Ok(c.put(rank, key, offset, local, len)?))
}

/// Get (blocking): `len` bytes at `offset` of rank `rank`'s window `key`
/// into the host window at `local`. Errors: as ss_client_put.
#[no_mangle]
pub unsafe extern "C" fn ss_client_get(
    c: *mut ss_client,
    rank: u16,
    key: u32,
    offset: u64,
    local: u64,
    len: u64,
) -> c_int {
    with_client(c, |c| Ok(c.get(rank, key, offset, local, len)?))
}

/// Fetch-and-add (blocking) on the `width`-byte (4 or 8) word at `offset`;
/// `*old` gets the word before. Errors: as ss_client_put.
#[no_mangle]
pub unsafe extern "C" fn ss_client_fetch_add(
    c: *mut ss_client,
    rank: u16,
    key: u32,
    offset: u64,
    width: u8,
    addend: u64,
    old: *mut u64,
) -> c_int {
    with_client(c, |c| {
        // SAFETY: the caller's pointer (checked for NULL).
        let o = unsafe { out(old, "old")? };
        *o = c.fetch_add(rank, key, offset, width, addend)?;
        Ok(())
    })
}

/// Compare-and-swap (blocking) on the `width`-byte word at `offset`: `*old`
/// gets the word before (swapped iff it equalled `compare`). Errors: as
/// ss_client_put.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ss_client_cas(
    c: *mut ss_client,
    rank: u16,
    key: u32,
    offset: u64,
    width: u8,
    compare: u64,
    swap: u64,
    old: *mut u64,
) -> c_int {
    with_client(c, |c| {
        // SAFETY: the caller's pointer (checked for NULL).
        let o = unsafe { out(old, "old")? };
        *o = c.cas(rank, key, offset, width, compare, swap)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_values() {
        // SAFETY: `nic` is a valid out-pointer and the name a C string.
        unsafe {
            let mut nic = std::ptr::null_mut();
            assert_eq!(
                ss_open(c"nope".as_ptr(), &mut nic),
                ss_status::SS_ECONFIG as c_int
            );
            assert!(nic.is_null());
            let msg = CStr::from_ptr(ss_last_error()).to_str().unwrap();
            assert!(msg.contains("nope"), "{msg}");
            assert_eq!(ss_open(std::ptr::null(), &mut nic), SS_EINVAL);
            assert_eq!(ss_open(c"pspin".as_ptr(), &mut nic), SS_OK);
            let mut w = ss_host_window::default();
            let mut buf = [0u8; 16];
            assert_eq!(
                ss_host_lend(nic, buf.as_mut_ptr().cast(), buf.len(), &mut w),
                SS_OK
            );
            assert_eq!(
                ss_host_write(nic, w.base + 8, c"abcdefgh".as_ptr().cast(), 8),
                SS_OK
            );
            assert_eq!(&buf[8..], b"abcdefgh");
            assert_eq!(
                ss_host_write(nic, w.base + 9, c"abcdefgh".as_ptr().cast(), 8),
                ss_status::SS_EHOST as c_int
            );
            assert_eq!(ss_activate(nic, 7), ss_status::SS_ENOECTX as c_int);
            assert_eq!(ss_close(nic), SS_OK);
        }
    }

    #[test]
    fn a_panic_is_a_code_and_poisons_the_nic() {
        // SAFETY: `nic` comes from ss_open and is closed once; the error
        // string is read before the next call on this thread.
        unsafe {
            let mut nic = std::ptr::null_mut();
            assert_eq!(ss_open(c"pspin".as_ptr(), &mut nic), SS_OK);
            assert_eq!(with_nic(nic, |_| panic!("boom")), SS_EINTERNAL);
            let msg = CStr::from_ptr(ss_last_error()).to_str().unwrap();
            assert!(msg.contains("boom"), "{msg}");
            let mut t = 0.0;
            assert_eq!(ss_now_ns(nic, &mut t), SS_EINTERNAL);
            assert_eq!(guard(|| panic!("again")), SS_EINTERNAL);
            assert_eq!(ss_close(nic), SS_OK);
        }
    }
}
