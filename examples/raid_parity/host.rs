//! raid_parity: RAID-5 small writes (P' = P ^ D ^ D') applied by the NIC to
//! a striped volume and its parity in host memory. Verified: the data must
//! hold the writes and every parity chunk must equal the XOR of its
//! stripe's data chunks, both computed here.

use crate::{payload_per_packet, words_to_bytes, Baseline, Ctx, Outcome, Rng, HDR};
use softspin_host::EctxOptions;
use softspin_host::{build_frame, FrameKind, Pacing, Packet};

const NDATA: usize = 4;
const NLOCKS: usize = 1024;

struct Layout {
    unit: usize,
    stripes: usize,
    /// Writes: (volume offset, bytes), disjoint.
    writes: Vec<(usize, usize)>,
}

impl Layout {
    fn new(quick: bool) -> Layout {
        // 4 data + 1 parity chunks per stripe; 4 writes of 4 chunks each.
        let (unit, stripes) = if quick { (4 << 10, 16) } else { (64 << 10, 16) };
        let chunks = NDATA * stripes;
        let mut r = Rng::new(3);
        let mut writes: Vec<(usize, usize)> = Vec::new();
        while writes.len() < 4 {
            let c = r.below((chunks - NDATA + 1) as u32) as usize;
            let w = (c * unit, NDATA * unit);
            if writes.iter().all(|&(o, l)| w.0 + w.1 <= o || o + l <= w.0) {
                writes.push(w);
            }
        }
        Layout {
            unit,
            stripes,
            writes,
        }
    }
    fn volume(&self) -> usize {
        NDATA * self.unit * self.stripes
    }
    fn parity_at(&self, off: usize) -> usize {
        let (chunk, within) = (off / self.unit, off % self.unit);
        self.volume() + chunk / NDATA * self.unit + within
    }
}

fn random(n: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    (0..n.div_ceil(8))
        .flat_map(|_| r.next_u64().to_le_bytes())
        .take(n)
        .collect()
}

/// The parity of a volume: chunk s of it is the XOR of stripe s's data chunks.
fn parity(l: &Layout, data: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; l.unit * l.stripes];
    for (c, chunk) in data.chunks(l.unit).enumerate() {
        let s = c / NDATA;
        p[s * l.unit..(s + 1) * l.unit]
            .iter_mut()
            .zip(chunk)
            .for_each(|(a, b)| *a ^= b);
    }
    p
}

/// Write `w` split into packets [offset][D'...] on a grid of `grid` bytes
/// within each chunk.
fn packets(l: &Layout, new: &[u8], w: (usize, usize), grid: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut pos = w.0;
    while pos < w.0 + w.1 {
        let chunk0 = pos / l.unit * l.unit;
        let next = (chunk0 + ((pos - chunk0) / grid + 1) * grid)
            .min(chunk0 + l.unit)
            .min(w.0 + w.1);
        let mut p = (pos as u32).to_le_bytes().to_vec();
        p.extend_from_slice(&new[pos - w.0..next - w.0]);
        out.push(p);
        pos = next;
    }
    out
}

/// The writes' new data, one buffer per write.
fn new_data(l: &Layout) -> Vec<Vec<u8>> {
    l.writes
        .iter()
        .enumerate()
        .map(|(i, w)| random(w.1, 100 + i as u64))
        .collect()
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let l = Layout::new(ctx.quick);
    let grid = payload_per_packet(packet_size) - 4;
    let old = random(l.volume(), 9);
    let new = new_data(&l);

    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "raid_parity", &[])?;
    let (clusters, cores) = (
        nic.config().clusters as usize,
        nic.config().hpus_per_cluster as usize,
    );
    let win = nic.host_window(l.volume() + l.unit * l.stripes)?;
    nic.host_write(win.base, &old)?;
    nic.host_write(win.base + l.volume() as u64, &parity(&l, &old))?;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("raid_ph".into()),
            host_window: Some(win),
            scratchpad: vec![(cores * 2 * grid) as u32; clusters],
            ..Default::default()
        },
    )?;
    let layout = [l.volume(), l.unit, NDATA, grid, l.unit.div_ceil(grid)].map(|x| x as u32);
    nic.nic_write(img.symbol("raid_layout")?, &words_to_bytes(&layout))?;
    nic.activate(e)?;

    // The writes back to back at the line rate, one message each.
    let mut arrivals = Vec::new();
    for (m, (w, d)) in l.writes.iter().zip(&new).enumerate() {
        let pkts = packets(&l, d, *w, grid);
        let n = pkts.len();
        for (k, p) in pkts.into_iter().enumerate() {
            let f = build_frame(
                FrameKind::Ip,
                HDR + p.len(),
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                9330,
                9330,
                |i| p[i],
            )?;
            arrivals.push(Packet {
                frame: f,
                msg_id: m as u32,
                eom: k + 1 == n,
            });
        }
    }
    nic.send_packets(arrivals, Pacing::LineRate)?;
    nic.run_until_idle()?;

    let mut want = old;
    for (w, d) in l.writes.iter().zip(&new) {
        want[w.0..w.0 + w.1].copy_from_slice(d);
    }
    let p = parity(&l, &want);
    want.extend(p);
    let got = nic.host_read(win.base, want.len())?;
    let report = nic.report();
    let verified = if !report.errors.is_empty() {
        Err(format!(
            "handler errors: {:?}",
            report.error_details.first()
        ))
    } else {
        crate::same("data", &got[..l.volume()], &want[..l.volume()])
            .and_then(|_| crate::same("parity", &got[l.volume()..], &want[l.volume()..]))
    };
    Ok(Outcome { verified, report })
}

/// Host memory shared by the baseline's threads (accesses under the locks).
struct Mem(*mut u8);
// SAFETY: every access goes through the lock table (one lock per stripe), so
// no two threads touch the same bytes at once.
unsafe impl Sync for Mem {}

/// The same read-modify-writes on host threads, with the same lock table.
pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let l = Layout::new(ctx.quick);
    let grid = payload_per_packet(packet_size) - 4;
    let new = new_data(&l);
    let pkts: Vec<Vec<u8>> = l
        .writes
        .iter()
        .zip(&new)
        .flat_map(|(w, d)| packets(&l, d, *w, grid))
        .collect();
    let mut mem = random(l.volume(), 9);
    mem.extend(parity(&l, &mem.clone()));
    let base = Mem(mem.as_mut_ptr());
    let locks: Vec<std::sync::Mutex<()>> = (0..NLOCKS).map(|_| Default::default()).collect();
    let slots = l.unit.div_ceil(grid);
    let bytes = pkts.iter().map(|p| (p.len() + HDR) as u64).sum();
    let threads = 2;
    let gbps = crate::host_throughput(&pkts, bytes, threads, |p| {
        let base = &base;
        let off = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize;
        let dnew = &p[4..];
        let pa = l.parity_at(off);
        let stripe = off / l.unit / NDATA;
        let _g = locks[(stripe * slots + off % l.unit / grid) % NLOCKS]
            .lock()
            .unwrap();
        // SAFETY: in bounds; every range is only touched under its lock.
        let (d, par) = unsafe {
            (
                std::slice::from_raw_parts_mut(base.0.add(off), dnew.len()),
                std::slice::from_raw_parts_mut(base.0.add(pa), dnew.len()),
            )
        };
        par.iter_mut()
            .zip(d.iter().zip(dnew))
            .for_each(|(p, (a, b))| *p ^= a ^ b);
        d.copy_from_slice(dnew);
    });
    std::hint::black_box(&mem);
    Ok(Baseline { gbps, threads })
}
