//! softspin-lossy: the forwarding element of the lossy link
//! (scripts/lossy_link.sh, docs/lossy.md). Runs in the middle namespace and
//! copies Ethernet frames between its two interfaces through AF_PACKET raw
//! sockets, impairing IPv4 frames per direction (`softspin_lossy::Shaper`).
//! What it did goes as JSON lines to `--report` periodically and on
//! SIGTERM/SIGINT, so tests can check that loss really happened.

use anyhow::{bail, Context, Result};
use clap::Parser;
use softspin_lossy::{Shaper, Spec};
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Each impairment flag takes one value for both directions, or
/// `A2B,B2A` for one value per direction (A is `--a`, B is `--b`).
#[derive(Parser, Debug)]
#[command(
    name = "softspin-lossy",
    about = "Forward frames between two interfaces, impairing IPv4 (loss, duplication, delay, reordering) with a seeded RNG"
)]
struct Args {
    /// Interface towards the sender side (A).
    #[arg(long)]
    a: String,
    /// Interface towards the NIC side (B).
    #[arg(long)]
    b: String,
    /// Drop probability.
    #[arg(long, default_value = "0")]
    loss: String,
    /// Duplication probability.
    #[arg(long, default_value = "0")]
    dup: String,
    /// Probability that a frame is held back (reordered).
    #[arg(long, default_value = "0")]
    reorder: String,
    /// A held frame goes out after this many later frames.
    #[arg(long, default_value = "3")]
    reorder_gap: String,
    /// ... or after this long, whichever comes first (µs).
    #[arg(long, default_value = "100000")]
    reorder_max_us: String,
    /// Fixed delay (µs).
    #[arg(long, default_value = "0")]
    delay_us: String,
    /// Uniform extra delay in [0, jitter] (µs).
    #[arg(long, default_value = "0")]
    jitter_us: String,
    /// RNG seed (direction B->A uses a derived seed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// JSON-lines report file (default: stdout).
    #[arg(long)]
    report: Option<std::path::PathBuf>,
    /// Also report every this many ms (0: only at exit).
    #[arg(long, default_value_t = 0)]
    report_every_ms: u64,
}

/// "X" or "X,Y" -> (a2b, b2a), each parsed by `parse`; errors name the flag.
fn pair<T: Copy>(flag: &str, s: &str, parse: impl Fn(&str) -> Option<T>) -> Result<(T, T)> {
    let parts: Vec<&str> = s.split(',').collect();
    let one = |p: &str| {
        parse(p.trim()).with_context(|| format!("--{flag} {s:?}: '{p}' is not a valid value"))
    };
    match parts.as_slice() {
        [x] => {
            let v = one(x)?;
            Ok((v, v))
        }
        [x, y] => Ok((one(x)?, one(y)?)),
        _ => bail!("--{flag} {s:?}: give one value, or two as A2B,B2A"),
    }
}

fn specs(a: &Args) -> Result<(Spec, Spec)> {
    let f = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
    let us = |s: &str| s.parse::<u64>().ok().map(Duration::from_micros);
    let n = |s: &str| s.parse::<u32>().ok();
    let loss = pair("loss", &a.loss, f)?;
    let dup = pair("dup", &a.dup, f)?;
    let reorder = pair("reorder", &a.reorder, f)?;
    let gap = pair("reorder-gap", &a.reorder_gap, n)?;
    let rmax = pair("reorder-max-us", &a.reorder_max_us, us)?;
    let delay = pair("delay-us", &a.delay_us, us)?;
    let jitter = pair("jitter-us", &a.jitter_us, us)?;
    let mk = |pick: fn((f64, f64)) -> f64,
              pu: fn((u32, u32)) -> u32,
              pd: fn((Duration, Duration)) -> Duration| Spec {
        loss: pick(loss),
        dup: pick(dup),
        reorder: pick(reorder),
        reorder_gap: pu(gap),
        reorder_max: pd(rmax),
        delay: pd(delay),
        jitter: pd(jitter),
    };
    let a2b = mk(|p| p.0, |p| p.0, |p| p.0);
    let b2a = mk(|p| p.1, |p| p.1, |p| p.1);
    a2b.validate()
        .map_err(|e| anyhow::anyhow!("--{e} (direction a2b)"))?;
    b2a.validate()
        .map_err(|e| anyhow::anyhow!("--{e} (direction b2a)"))?;
    Ok((a2b, b2a))
}

fn last_os_error(what: &str) -> anyhow::Error {
    anyhow::anyhow!("{what}: {}", std::io::Error::last_os_error())
}

/// A raw AF_PACKET socket bound to `ifname`, promiscuous, not seeing its own sends.
fn packet_socket(ifname: &str) -> Result<OwnedFd> {
    let cname = CString::new(ifname).context("interface name")?;
    // SAFETY: plain libc calls on a fresh descriptor we own.
    unsafe {
        let ifindex = libc::if_nametoindex(cname.as_ptr());
        if ifindex == 0 {
            bail!("interface {ifname}: not found in this namespace");
        }
        let proto = (libc::ETH_P_ALL as u16).to_be();
        let fd = libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            proto as i32,
        );
        if fd < 0 {
            return Err(last_os_error(
                "socket(AF_PACKET) (needs root / CAP_NET_RAW)",
            ));
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex as i32;
        if libc::bind(
            fd.as_raw_fd(),
            &sll as *const _ as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        ) < 0
        {
            return Err(last_os_error(&format!("bind to {ifname}")));
        }
        let one: libc::c_int = 1;
        // Our own sends would otherwise come back as input and loop forever.
        if libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &one as *const _ as *const libc::c_void,
            4,
        ) < 0
        {
            return Err(last_os_error("PACKET_IGNORE_OUTGOING"));
        }
        let mut mr: libc::packet_mreq = std::mem::zeroed();
        mr.mr_ifindex = ifindex as i32;
        mr.mr_type = libc::PACKET_MR_PROMISC as u16;
        if libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mr as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::packet_mreq>() as u32,
        ) < 0
        {
            return Err(last_os_error("promiscuous mode"));
        }
        // Bursts wait here while the other direction is served.
        let buf: libc::c_int = 8 << 20;
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &buf as *const _ as *const libc::c_void,
            4,
        );
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            &buf as *const _ as *const libc::c_void,
            4,
        );
        Ok(fd)
    }
}

/// Frames the kernel dropped on `fd`'s receive queue since the last call
/// (PACKET_STATISTICS reads and resets {tp_packets, tp_drops}).
fn kernel_drops(fd: &OwnedFd) -> u64 {
    let mut st = [0u32; 2];
    let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
    // SAFETY: st is valid for len bytes.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            st.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if r == 0 {
        st[1] as u64
    } else {
        0
    }
}

fn report(
    out: &mut dyn Write,
    t0: Instant,
    fin: bool,
    dirs: &[Shaper; 2],
    specs: &(Spec, Spec),
) -> Result<()> {
    let v = serde_json::json!({
        "t_ms": t0.elapsed().as_millis() as u64,
        "final": fin,
        "a2b": dirs[0].counters,
        "b2a": dirs[1].counters,
        "spec": {"a2b": specs.0, "b2a": specs.1},
    });
    writeln!(out, "{v}")?;
    out.flush()?;
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("softspin-lossy: {e:#}");
        std::process::exit(2);
    }
}

fn run() -> Result<()> {
    let args = Args::parse();
    let sp = specs(&args)?;
    let mut out: Box<dyn Write> = match &args.report {
        Some(p) => {
            Box::new(std::fs::File::create(p).with_context(|| format!("--report {}", p.display()))?)
        }
        None => Box::new(std::io::stdout()),
    };
    let socks = [packet_socket(&args.a)?, packet_socket(&args.b)?];
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("signal handler")?;
    }
    // Direction i reads socks[i] and writes socks[1 - i].
    let mut dirs = [
        Shaper::new(sp.0.clone(), args.seed),
        Shaper::new(sp.1.clone(), args.seed ^ 0x9e37_79b9_7f4a_7c15),
    ];
    let t0 = Instant::now();
    let every = (args.report_every_ms > 0).then(|| Duration::from_millis(args.report_every_ms));
    let mut next_report = every.map(|e| t0 + e);
    let mut buf = vec![0u8; 65536];
    eprintln!("softspin-lossy: forwarding {} <-> {}", args.a, args.b);
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        // Wake for the next due frame, the next report, or at least every
        // 50 ms to see a stop signal.
        let mut wake = now + Duration::from_millis(50);
        for d in &dirs {
            if let Some(t) = d.next_deadline() {
                wake = wake.min(t);
            }
        }
        if let Some(t) = next_report {
            wake = wake.min(t);
        }
        let wait = wake.saturating_duration_since(now);
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as _,
            tv_nsec: wait.subsec_nanos() as _,
        };
        let mut pfd = [
            libc::pollfd {
                fd: socks[0].as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: socks[1].as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: pfd and ts outlive the call.
        let r = unsafe { libc::ppoll(pfd.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(last_os_error("ppoll"));
        }
        for i in 0..2 {
            if r <= 0 || pfd[i].revents & libc::POLLIN == 0 {
                continue;
            }
            // A bounded batch so one busy direction cannot starve the other.
            for _ in 0..256 {
                // SAFETY: buf is valid for buf.len() bytes.
                let n = unsafe {
                    libc::recv(
                        socks[i].as_raw_fd(),
                        buf.as_mut_ptr() as *mut libc::c_void,
                        buf.len(),
                        0,
                    )
                };
                if n <= 0 {
                    break;
                }
                dirs[i].push(buf[..n as usize].to_vec(), Instant::now());
            }
        }
        let now = Instant::now();
        for i in 0..2 {
            while let Some(f) = dirs[i].pop_due(now) {
                // SAFETY: f is valid for f.len() bytes.
                let n = unsafe {
                    libc::send(
                        socks[1 - i].as_raw_fd(),
                        f.as_ptr() as *const libc::c_void,
                        f.len(),
                        0,
                    )
                };
                dirs[i].sent(&f, n == f.len() as isize);
            }
        }
        if let (Some(t), Some(e)) = (next_report, every) {
            if now >= t {
                for i in 0..2 {
                    dirs[i].counters.rx_kernel_drops += kernel_drops(&socks[i]);
                }
                report(&mut out, t0, false, &dirs, &sp)?;
                next_report = Some(t + e);
            }
        }
    }
    for (d, s) in dirs.iter_mut().zip(&socks) {
        d.counters.pending_at_exit = d.pending();
        d.counters.rx_kernel_drops += kernel_drops(s);
    }
    report(&mut out, t0, true, &dirs, &sp)
}
