//! accumulate: an array of complex doubles multiplied into the array of the
//! same type in host memory (dst[i] = dst[i] * src[i]) by payload handlers.
//! Verified bit-exact against the same IEEE operations, in the same order,
//! done here (any NaN matches any NaN: their sign and payload are
//! platform-defined).

use crate::{payload_per_packet, Baseline, Ctx, Outcome, Rng};
use softspin_host::EctxOptions;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const SLOT: usize = 4096;
const ELEM: usize = 16;

fn elements(quick: bool) -> usize {
    if quick {
        1 << 10
    } else {
        1 << 16
    }
}

/// Doubles of magnitude 1/8..16 with random signs, plus a few special ones.
fn array(n: usize, seed: u64) -> Vec<[f64; 2]> {
    let mut r = Rng::new(seed);
    let mut v = || {
        f64::from_bits((r.next_u64() & 0x800f_ffff_ffff_ffff) | (1020 + r.below(7) as u64) << 52)
    };
    let mut a: Vec<[f64; 2]> = (0..n).map(|_| [v(), v()]).collect();
    let special = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NAN,
        1e-310,
        1e300,
        -2.5e-160,
        f64::MIN_POSITIVE,
    ];
    for (k, s) in special.iter().enumerate() {
        let i = (k * 131 + seed as usize) % n;
        a[i][k & 1] = *s;
    }
    a
}

fn cmul(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]]
}

/// The message split into packets: [first element index][elements...].
fn packets(src: &[[f64; 2]], packet_size: usize) -> Vec<Vec<u8>> {
    let per = ((payload_per_packet(packet_size) - 4) / ELEM).min(SLOT / ELEM);
    src.chunks(per)
        .enumerate()
        .map(|(k, c)| {
            let mut p = ((k * per) as u32).to_le_bytes().to_vec();
            p.extend(c.iter().flatten().flat_map(|x| x.to_le_bytes()));
            p
        })
        .collect()
}

fn canon(x: f64) -> u64 {
    if x.is_nan() {
        f64::NAN.to_bits()
    } else {
        x.to_bits()
    }
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let n = elements(ctx.quick);
    let (dst, src) = (array(n, 1), array(n, 2));
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "accumulate", &[])?;
    let w = nic.host_window(n * ELEM)?;
    nic.host_write(
        w.base,
        &dst.iter()
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>(),
    )?;
    let cores = nic.config().hpus_per_cluster as usize;
    let clusters = nic.config().clusters as usize;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("accumulate_ph".into()),
            host_window: Some(w),
            scratchpad: vec![(cores * SLOT) as u32; clusters],
            ..Default::default()
        },
    )?;
    nic.activate(e)?;
    nic.send_payloads(e, 0, &packets(&src, packet_size))?;
    nic.run_until_idle()?;
    let got: Vec<u64> = nic
        .host_read(w.base, n * ELEM)?
        .chunks_exact(8)
        .map(|c| canon(f64::from_le_bytes(c.try_into().unwrap())))
        .collect();
    let want: Vec<u64> = dst
        .iter()
        .zip(&src)
        .flat_map(|(a, b)| cmul(*a, *b))
        .map(canon)
        .collect();
    let report = nic.report();
    let verified =
        crate::same("dst bits", &got, &want).and_then(|_| match report.errors.is_empty() {
            true => Ok(()),
            false => Err(format!("handler errors: {:?}", report.errors)),
        });
    Ok(Outcome { verified, report })
}

/// The host doing the same: read both arrays, multiply, write back.
pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let n = elements(ctx.quick);
    let dst: Vec<AtomicU64> = array(n, 1)
        .iter()
        .flatten()
        .map(|x| AtomicU64::new(x.to_bits()))
        .collect();
    let pkts = packets(&array(n, 2), packet_size);
    let bytes = pkts.iter().map(|p| (p.len() + crate::HDR) as u64).sum();
    let threads = 2;
    let gbps = crate::host_throughput(&pkts, bytes, threads, |p| {
        let first = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize;
        for (i, c) in p[4..].chunks_exact(ELEM).enumerate() {
            let f = |k: usize| f64::from_le_bytes(c[k..k + 8].try_into().unwrap());
            let d = &dst[2 * (first + i)..2 * (first + i) + 2];
            let r = cmul(
                [
                    f64::from_bits(d[0].load(Relaxed)),
                    f64::from_bits(d[1].load(Relaxed)),
                ],
                [f(0), f(8)],
            );
            d[0].store(r[0].to_bits(), Relaxed);
            d[1].store(r[1].to_bits(), Relaxed);
        }
    });
    Ok(Baseline { gbps, threads })
}
