//! reduce: the per-element int32 sum of n vectors of m items, on the NIC.
//! Verified against the sums computed here.

use crate::{bytes_to_words, payload_per_packet, Baseline, Ctx, Outcome, Rng};
use softspin_host::EctxOptions;

const ITEMS: usize = 512;

fn vectors(quick: bool) -> Vec<i32> {
    let n = if quick { 16 } else { 512 };
    let mut r = Rng::new(7);
    (0..n * ITEMS).map(|_| r.next_u64() as i32 >> 8).collect()
}

/// The stream split into packets: [first item index][items...].
fn packets(data: &[i32], packet_size: usize) -> Vec<Vec<u8>> {
    let per = (payload_per_packet(packet_size) - 4) / 4;
    data.chunks(per)
        .enumerate()
        .map(|(k, c)| {
            let mut p = ((k * per) as u32).to_le_bytes().to_vec();
            p.extend(c.iter().flat_map(|x| x.to_le_bytes()));
            p
        })
        .collect()
}

fn reference(data: &[i32]) -> Vec<i32> {
    let mut acc = vec![0i32; ITEMS];
    for (i, x) in data.iter().enumerate() {
        acc[i % ITEMS] = acc[i % ITEMS].wrapping_add(*x);
    }
    acc
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let data = vectors(ctx.quick);
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "reduce", &[])?;
    let w = nic.host_window(ITEMS * 4)?;
    let clusters = nic.config().clusters as usize;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("reduce_ph".into()),
            th: Some("reduce_th".into()),
            host_window: Some(w),
            // Each cluster: its accumulator, and room for the others' at the end.
            scratchpad: vec![(ITEMS * 4 * clusters) as u32; clusters],
            ..Default::default()
        },
    )?;
    nic.activate(e)?;
    nic.send_payloads(e, 0, &packets(&data, packet_size))?;
    nic.run_until_idle()?;
    let got: Vec<i32> = bytes_to_words(&nic.host_read(w.base, ITEMS * 4)?)
        .into_iter()
        .map(|x| x as i32)
        .collect();
    let verified = crate::same("sum", &got, &reference(&data));
    Ok(Outcome {
        verified,
        report: nic.report(),
    })
}

pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let data = vectors(ctx.quick);
    let pkts = packets(&data, packet_size);
    let bytes = pkts.iter().map(|p| (p.len() + crate::HDR) as u64).sum();
    let threads = 2;
    let (gbps, accs) = crate::host_throughput_local(
        &pkts,
        bytes,
        threads,
        || vec![0i32; ITEMS],
        |acc, p| {
            let mut e = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize % ITEMS;
            for c in p[4..].chunks_exact(4) {
                acc[e] = acc[e].wrapping_add(i32::from_le_bytes(c.try_into().unwrap()));
                e = if e + 1 == ITEMS { 0 } else { e + 1 };
            }
        },
    );
    let got = accs.iter().fold(vec![0i32; ITEMS], |s, a| {
        s.iter().zip(a).map(|(x, y)| x.wrapping_add(*y)).collect()
    });
    crate::same("baseline sum", &got, &reference(&data)).map_err(anyhow::Error::msg)?;
    Ok(Baseline { gbps, threads })
}
