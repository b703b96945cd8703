//! pspin_compat: PsPIN-style header/payload/completion handlers (found
//! through `init_handlers`' names) over M messages whose packets arrive
//! interleaved. Verified: each message's result word (packet count and xor
//! checksum) and data in host memory, and the global packet counter in
//! handler memory, against the same computed here.

use crate::{offset_packets as packets, Baseline, Ctx, Outcome, Rng, HDR};
use softspin_host::{build_frame, FrameKind, Pacing, Packet};
use softspin_host::{EctxOptions, Nic};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

const MAX_MSGS: usize = 64;
const MSG_BYTES: usize = 16384;

/// M messages of 16 KiB minus a few bytes (so last packets have odd tails).
fn messages(quick: bool) -> Vec<Vec<u8>> {
    let m = if quick { 8 } else { MAX_MSGS };
    let mut r = Rng::new(9);
    (0..m)
        .map(|k| (0..MSG_BYTES - 7 * k).map(|_| r.next_u64() as u8).collect())
        .collect()
}

/// Xor of the payload as little-endian u32 words, the tail zero-padded.
fn xsum(p: &[u8]) -> u32 {
    let words = p.chunks_exact(4);
    let mut w = [0u8; 4];
    w[..words.remainder().len()].copy_from_slice(words.remainder());
    words.fold(u32::from_le_bytes(w), |x, c| {
        x ^ u32::from_le_bytes(c.try_into().unwrap())
    })
}

/// The messages' packets round-robin, each message's in order, at the line rate.
fn send(nic: &mut Nic, pkts: &[Vec<Vec<u8>>]) -> anyhow::Result<()> {
    let mut out = Vec::new();
    let most = pkts.iter().map(|p| p.len()).max().unwrap_or(0);
    for k in 0..most {
        for (id, m) in pkts.iter().enumerate().filter(|(_, m)| k < m.len()) {
            let p = &m[k];
            let frame = build_frame(
                FrameKind::Ip,
                HDR + p.len(),
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                9330,
                9330,
                |i| p[i],
            )?;
            out.push(Packet {
                frame,
                msg_id: id as u32,
                eom: k + 1 == m.len(),
            });
        }
    }
    Ok(nic.send_packets(out, Pacing::LineRate)?)
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let msgs = messages(ctx.quick);
    let pkts: Vec<Vec<Vec<u8>>> = msgs.iter().map(|m| packets(m, packet_size)).collect();
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "pspin_compat", &[])?;
    let w = nic.host_window(MAX_MSGS * (8 + MSG_BYTES))?;
    let e = nic.install(
        &img,
        EctxOptions {
            hh: Some("pspin_compat_hh".into()),
            ph: Some("pspin_compat_ph".into()),
            th: Some("pspin_compat_th".into()),
            host_window: Some(w),
            ..Default::default()
        },
    )?;
    nic.activate(e)?;
    send(&mut nic, &pkts)?;
    nic.run_until_idle()?;

    let host = nic.host_read(w.base, w.size as usize)?;
    let total = i32::from_le_bytes(
        nic.nic_read(img.symbol("packets_total")?, 4)?
            .try_into()
            .unwrap(),
    );
    let mut verified = Ok(());
    for (m, (msg, p)) in msgs.iter().zip(&pkts).enumerate() {
        let got = u64::from_le_bytes(host[m * 8..m * 8 + 8].try_into().unwrap());
        let want = (p.len() as u64) << 32 | p.iter().fold(0, |x, p| x ^ xsum(p)) as u64;
        let data = &host[MAX_MSGS * 8 + m * MSG_BYTES..][..msg.len()];
        verified = if got != want {
            Err(format!(
                "message {m}: result {got:#018x}, expected {want:#018x}"
            ))
        } else if data != &msg[..] {
            Err(format!("message {m}: data in host memory differs"))
        } else {
            Ok(())
        };
        if verified.is_err() {
            break;
        }
    }
    let report = nic.report();
    let want_total = pkts.iter().map(|p| p.len()).sum::<usize>() as i32;
    if verified.is_ok() && total != want_total {
        verified = Err(format!("packets_total = {total}, expected {want_total}"));
    }
    if verified.is_ok() && !report.errors.is_empty() {
        verified = Err(format!("handler errors: {:?}", report.errors));
    }
    Ok(Outcome { verified, report })
}

/// The host doing the same per packet: count, checksum, copy out.
pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let msgs = messages(ctx.quick);
    let pkts: Vec<(usize, Vec<u8>)> = msgs
        .iter()
        .enumerate()
        .flat_map(|(m, msg)| packets(msg, packet_size).into_iter().map(move |p| (m, p)))
        .collect();
    // Repeated to ~32 MiB, so starting the threads does not dominate.
    let items: Vec<&(usize, Vec<u8>)> = (0..(32 << 20) / (msgs.len() * MSG_BYTES))
        .flat_map(|_| pkts.iter())
        .collect();
    let state: Vec<(AtomicU32, AtomicU32)> = (0..MAX_MSGS).map(|_| Default::default()).collect();
    let dst: Vec<AtomicU32> = (0..MAX_MSGS * MSG_BYTES / 4)
        .map(|_| Default::default())
        .collect();
    let bytes = items.iter().map(|(_, p)| (p.len() + HDR) as u64).sum();
    let threads = 2;
    let gbps = crate::host_throughput(&items, bytes, threads, |&&(m, ref p)| {
        state[m].0.fetch_add(1, Relaxed);
        state[m].1.fetch_xor(xsum(p), Relaxed);
        let off = (m * MSG_BYTES + u32::from_le_bytes(p[..4].try_into().unwrap()) as usize) / 4;
        let words = p[4..].chunks_exact(4);
        let tail = words.remainder();
        let n = words.len();
        for (i, c) in words.enumerate() {
            dst[off + i].store(u32::from_le_bytes(c.try_into().unwrap()), Relaxed);
        }
        if !tail.is_empty() {
            let mut w = [0u8; 4];
            w[..tail.len()].copy_from_slice(tail);
            dst[off + n].store(u32::from_le_bytes(w), Relaxed);
        }
    });
    Ok(Baseline { gbps, threads })
}
