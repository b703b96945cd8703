//! histogram: per-value counts of M messages of 512 integers in [0, 1024),
//! on the NIC. Verified against the histogram computed here.

use crate::{bytes_to_words, payload_per_packet, Baseline, Ctx, Outcome, Rng, HDR};
use softspin_host::{build_frame, FrameKind, Pacing, Packet};
use softspin_host::{EctxOptions, Nic};

const BINS: usize = 1024;
const ITEMS: usize = 512;

fn messages(quick: bool) -> Vec<Vec<u32>> {
    let m = if quick { 16 } else { 512 };
    let mut r = Rng::new(13);
    (0..m)
        .map(|_| (0..ITEMS).map(|_| r.below(BINS as u32)).collect())
        .collect()
}

/// A message's packets: runs of whole values (a histogram needs no order,
/// so packets carry no header of their own).
fn packets(msg: &[u32], packet_size: usize) -> Vec<Vec<u8>> {
    msg.chunks(payload_per_packet(packet_size) / 4)
        .map(crate::words_to_bytes)
        .collect()
}

fn reference(msgs: &[Vec<u32>]) -> Vec<u32> {
    let mut h = vec![0u32; BINS];
    msgs.iter().flatten().for_each(|&v| h[v as usize] += 1);
    h
}

/// Send the messages back to back at the line rate.
fn send(nic: &mut Nic, msgs: &[Vec<u32>], packet_size: usize) -> anyhow::Result<()> {
    let mut out = Vec::new();
    for (id, m) in msgs.iter().enumerate() {
        let pkts = packets(m, packet_size);
        for (k, p) in pkts.iter().enumerate() {
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
                eom: k + 1 == pkts.len(),
            });
        }
    }
    Ok(nic.send_packets(out, Pacing::LineRate)?)
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let msgs = messages(ctx.quick);
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "histogram", &[])?;
    let w = nic.host_window(BINS * 4)?;
    let clusters = nic.config().clusters as usize;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("histogram_ph".into()),
            th: Some("histogram_th".into()),
            host_window: Some(w),
            // Each cluster's table plus room to gather the others' for the merge.
            scratchpad: vec![(clusters * BINS * 4) as u32; clusters],
            ..Default::default()
        },
    )?;
    nic.nic_write(
        img.symbol("hist_messages")?,
        &(msgs.len() as u32).to_le_bytes(),
    )?;
    nic.activate(e)?;
    send(&mut nic, &msgs, packet_size)?;
    nic.run_until_idle()?;
    let got = bytes_to_words(&nic.host_read(w.base, BINS * 4)?);
    let verified = crate::same("count", &got, &reference(&msgs));
    Ok(Outcome {
        verified,
        report: nic.report(),
    })
}

pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let msgs = messages(ctx.quick);
    let pkts: Vec<Vec<u8>> = msgs.iter().flat_map(|m| packets(m, packet_size)).collect();
    let bytes = pkts.iter().map(|p| (p.len() + HDR) as u64).sum();
    let threads = 2;
    let (gbps, tables) = crate::host_throughput_local(
        &pkts,
        bytes,
        threads,
        || vec![0u32; BINS],
        |bins, p| {
            for c in p.chunks_exact(4) {
                let v = u32::from_le_bytes(c.try_into().unwrap()) as usize;
                if v < BINS {
                    bins[v] += 1;
                }
            }
        },
    );
    let got = tables.iter().fold(vec![0u32; BINS], |s, t| {
        s.iter().zip(t).map(|(x, y)| x + y).collect()
    });
    crate::same("baseline count", &got, &reference(&msgs)).map_err(anyhow::Error::msg)?;
    Ok(Baseline { gbps, threads })
}
