//! aggregate: the 64-bit sum of every 32-bit word of one message, on the NIC.
//! Verified against the sum computed here.

use crate::{payload_per_packet, Baseline, Ctx, Outcome, Rng};
use softspin_host::EctxOptions;
use std::sync::atomic::{AtomicU64, Ordering};

fn words(quick: bool) -> Vec<u32> {
    let bytes = if quick { 64 << 10 } else { 1 << 20 };
    let mut r = Rng::new(11);
    (0..bytes / 4).map(|_| r.next_u64() as u32).collect()
}

/// The message split into packets of whole words (the sum needs no order,
/// so packets carry no header of their own).
fn packets(data: &[u32], packet_size: usize) -> Vec<Vec<u8>> {
    data.chunks(payload_per_packet(packet_size) / 4)
        .map(crate::words_to_bytes)
        .collect()
}

fn reference(data: &[u32]) -> u64 {
    data.iter().map(|&x| x as u64).sum()
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let data = words(ctx.quick);
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "aggregate", &[])?;
    let w = nic.host_window(8)?;
    let clusters = nic.config().clusters as usize;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("aggregate_ph".into()),
            th: Some("aggregate_th".into()),
            host_window: Some(w),
            scratchpad: vec![8; clusters],
            ..Default::default()
        },
    )?;
    nic.activate(e)?;
    nic.send_payloads(e, 0, &packets(&data, packet_size))?;
    nic.run_until_idle()?;
    let got = u64::from_le_bytes(nic.host_read(w.base, 8)?.try_into().unwrap());
    let want = reference(&data);
    let verified = if got == want {
        Ok(())
    } else {
        Err(format!("sum = {got}, expected {want}"))
    };
    Ok(Outcome {
        verified,
        report: nic.report(),
    })
}

pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let data = words(ctx.quick);
    let pkts = packets(&data, packet_size);
    let acc = AtomicU64::new(0);
    let bytes = pkts.iter().map(|p| (p.len() + crate::HDR) as u64).sum();
    let threads = 2;
    let gbps = crate::host_throughput(&pkts, bytes, threads, |p| {
        let s: u64 = p
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as u64)
            .sum();
        acc.fetch_add(s, Ordering::Relaxed);
    });
    if acc.into_inner() != reference(&data) {
        anyhow::bail!("aggregate baseline: wrong sum");
    }
    Ok(Baseline { gbps, threads })
}
