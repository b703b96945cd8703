//! empty: M messages of P packets through an empty payload handler.
//! Verified: every packet was processed, none dropped, no handler error.

use crate::{Baseline, Ctx, Outcome};
use softspin_host::{EctxOptions, GenConfig};

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let (messages, packets) = if ctx.quick { (16, 8) } else { (512, 16) };
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "empty", &[])?;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("empty_ph".into()),
            ..Default::default()
        },
    )?;
    nic.activate(e)?;
    nic.feed_generator(GenConfig {
        messages,
        packets_per_message: packets,
        size: packet_size,
        concurrent: 8,
        ..Default::default()
    })?;
    nic.run_until_idle()?;
    let report = nic.report();
    let want = (messages * packets) as u64;
    let verified = if report.packets == want && report.drops == 0 && report.errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {want} packets processed, {} drops, {} errors",
            report.packets,
            report.drops,
            report.errors.len()
        ))
    };
    Ok(Outcome { verified, report })
}

/// The host equivalent of doing nothing per packet: reading its first byte.
pub fn baseline(_ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let pkts: Vec<Vec<u8>> = (0..20000).map(|i| vec![i as u8; packet_size]).collect();
    let sink = std::sync::atomic::AtomicU64::new(0);
    let threads = 2;
    let gbps = crate::host_throughput(&pkts, (pkts.len() * packet_size) as u64, threads, |p| {
        sink.fetch_add(
            std::hint::black_box(p[0]) as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    });
    Ok(Baseline { gbps, threads })
}
