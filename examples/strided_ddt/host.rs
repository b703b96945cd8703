//! strided_ddt: a message unpacked into host memory as a vector datatype
//! (256 B blocks, 512 B stride). Verified byte for byte against the layout
//! computed here (the gaps must stay zero).

use crate::{offset_packets as packets, words_to_bytes, Baseline, Ctx, Outcome, Rng};
use softspin_host::EctxOptions;

const BLOCK: usize = 256;
const STRIDE: usize = 512;

fn message(quick: bool) -> Vec<u8> {
    let n = if quick { 64 << 10 } else { 1 << 20 };
    let mut r = Rng::new(5);
    (0..n / 8)
        .flat_map(|_| r.next_u64().to_le_bytes())
        .collect()
}

fn reference(msg: &[u8]) -> Vec<u8> {
    let mut host = vec![0u8; msg.len() / BLOCK * STRIDE];
    for (i, b) in msg.chunks(BLOCK).enumerate() {
        host[i * STRIDE..i * STRIDE + b.len()].copy_from_slice(b);
    }
    host
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let msg = message(ctx.quick);
    let count = msg.len() / BLOCK;
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "strided_ddt", &[])?;
    let w = nic.host_window(count * STRIDE)?;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("ddt_ph".into()),
            host_window: Some(w),
            ..Default::default()
        },
    )?;
    // The layout: start, stride, block size, count.
    nic.nic_write(
        img.symbol("ddt_layout")?,
        &words_to_bytes(&[0, STRIDE as u32, BLOCK as u32, count as u32]),
    )?;
    nic.activate(e)?;
    nic.send_payloads(e, 0, &packets(&msg, packet_size))?;
    nic.run_until_idle()?;
    let got = nic.host_read(w.base, count * STRIDE)?;
    let report = nic.report();
    let verified = if !report.errors.is_empty() {
        Err(format!(
            "handler errors: {:?}",
            report.error_details.first()
        ))
    } else {
        crate::same("host byte", &got, &reference(&msg))
    };
    Ok(Outcome { verified, report })
}

/// Destination memory shared by the baseline's threads (they write
/// disjoint ranges).
struct Dst(*mut u8);
// SAFETY: the threads write disjoint ranges and nothing reads until they
// are joined.
unsafe impl Sync for Dst {}

/// The same scatter as memcpys on host threads over the packets in memory.
pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let msg = message(ctx.quick);
    let once = packets(&msg, packet_size);
    // Several passes (idempotent) so the timing is not all thread start-up.
    let pkts: Vec<&Vec<u8>> = once
        .iter()
        .cycle()
        .take(once.len() * (16 << 20) / msg.len())
        .collect();
    let mut host = vec![0u8; msg.len() / BLOCK * STRIDE];
    let dst = Dst(host.as_mut_ptr());
    let bytes = pkts.iter().map(|p| (p.len() + crate::HDR) as u64).sum();
    let threads = 2;
    let gbps = crate::host_throughput(&pkts, bytes, threads, |p| {
        let dst = &dst;
        let mut off = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize;
        let mut data = &p[4..];
        while !data.is_empty() {
            let (b, i) = (off / BLOCK, off % BLOCK);
            let n = (BLOCK - i).min(data.len());
            // SAFETY: in bounds (checked by the layout), ranges disjoint per packet.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst.0.add(b * STRIDE + i), n) };
            data = &data[n..];
            off += n;
        }
    });
    std::hint::black_box(&host);
    Ok(Baseline { gbps, threads })
}
