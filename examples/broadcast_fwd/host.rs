//! broadcast_fwd: one node's step of a binomial-tree broadcast rooted at
//! rank 0, run for several (size, rank) pairs. Verified: the outbound puts,
//! as a multiset of (dest, payload), equal the node's children (computed
//! here from the parent relation) times the message's packets, and the
//! message landed in host memory. The reported run is rank 1 of 16 (an
//! interior node with 3 children).

use crate::{offset_packets as packets, Baseline, Ctx, Outcome, Rng};
use softspin_host::{EctxOptions, Event, Report};

/// (size, rank) pairs run; the first is the one reported.
const RUNS: &[(u32, u32)] = &[
    (16, 1),
    (16, 0),
    (16, 2),
    (16, 5),
    (16, 8),
    (13, 4),
    (13, 5),
    (13, 12),
];

fn message(quick: bool) -> Vec<u8> {
    let n = if quick { 8 << 10 } else { 64 << 10 };
    let mut r = Rng::new(5);
    (0..n).map(|_| r.next_u64() as u8).collect()
}

/// Binomial tree rooted at 0: the parent of c > 0 is c without its highest set bit.
fn children(size: u32, rank: u32) -> Vec<u32> {
    (1..size)
        .filter(|&c| c - (1 << (31 - c.leading_zeros())) == rank)
        .collect()
}

fn run_one(
    ctx: &Ctx,
    msg: &[u8],
    pkts: &[Vec<u8>],
    size: u32,
    rank: u32,
) -> anyhow::Result<(Result<(), String>, Report)> {
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "broadcast_fwd", &[])?;
    let w = nic.host_window(msg.len())?;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("bcast_ph".into()),
            host_window: Some(w),
            ..Default::default()
        },
    )?;
    let cfg = img.symbol("bcast_cfg")?;
    nic.nic_write(cfg, &[rank.to_le_bytes(), size.to_le_bytes()].concat())?;
    nic.activate(e)?;
    nic.send_payloads(e, 0, pkts)?;
    nic.run_until_idle()?;
    let mut got: Vec<(u32, Vec<u8>)> = nic
        .events()
        .into_iter()
        .filter_map(|ev| match ev {
            Event::Outbound(o) => Some((o.dest, o.frame)),
            _ => None,
        })
        .collect();
    let mut want: Vec<(u32, Vec<u8>)> = children(size, rank)
        .into_iter()
        .flat_map(|c| pkts.iter().map(move |p| (c, p.clone())))
        .collect();
    got.sort();
    want.sort();
    let report = nic.report();
    let what = format!("rank {rank} of {size}");
    let verified = if got != want {
        let dests = |v: &[(u32, Vec<u8>)]| {
            let mut d: Vec<u32> = v.iter().map(|x| x.0).collect();
            d.dedup();
            d
        };
        Err(format!(
            "{what}: {} puts to {:?}, expected {} to {:?} (or payloads differ)",
            got.len(),
            dests(&got),
            want.len(),
            dests(&want)
        ))
    } else if nic.host_read(w.base, msg.len())? != msg {
        Err(format!("{what}: host memory differs from the message"))
    } else if !report.errors.is_empty() {
        Err(format!("{what}: handler errors {:?}", report.errors))
    } else {
        Ok(())
    };
    Ok((verified, report))
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let msg = message(ctx.quick);
    let pkts = packets(&msg, packet_size);
    let mut first = None;
    let mut verified = Ok(());
    for &(size, rank) in RUNS {
        let (v, r) = run_one(ctx, &msg, &pkts, size, rank)?;
        if verified.is_ok() {
            verified = v;
        }
        first.get_or_insert(r);
    }
    Ok(Outcome {
        verified,
        report: first.unwrap(),
    })
}

/// The host forwarding: per packet, one copy per child (the send buffers)
/// plus one into the local buffer (rank 1 of 16); the message is repeated
/// to 32 MiB so the measurement is not dominated by starting threads.
pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let msg = message(ctx.quick);
    let pkts = packets(&msg, packet_size);
    let items: Vec<&Vec<u8>> = (0..(32 << 20) / msg.len())
        .flat_map(|_| pkts.iter())
        .collect();
    let kids = children(RUNS[0].0, RUNS[0].1);
    let bytes = items.iter().map(|p| (p.len() + crate::HDR) as u64).sum();
    let threads = 2;
    thread_local!(static OUT: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 4096]));
    let gbps = crate::host_throughput(&items, bytes, threads, |p| {
        OUT.with(|o| {
            let out = &mut o.borrow_mut()[..];
            for _ in &kids {
                out[..p.len()].copy_from_slice(p);
                std::hint::black_box(&out);
            }
            out[..p.len() - 4].copy_from_slice(&p[4..]);
            std::hint::black_box(&out);
        })
    });
    Ok(Baseline { gbps, threads })
}
