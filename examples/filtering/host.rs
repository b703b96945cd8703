//! filtering: per-packet hash-table lookup of the source IP and UDP
//! destination-port rewrite on a hit, every packet then written to host
//! memory. Verified byte for byte against frames rewritten here, with the
//! hits decided by a `HashMap` (independent of the NIC table's layout).

use crate::{Baseline, Ctx, Outcome, Rng};
use softspin_host::EctxOptions;
use softspin_host::{build_frame, FrameKind, Pacing, Packet};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

/// 2^17 slots holding 65,536 keys (seed: "a hash table of 65'536 entries"),
/// so open addressing stays at load 1/2.
const BITS: u32 = 17;
const KEYS: usize = 65_536;
/// The destination port every frame carries before any rewrite.
const PORT: u16 = 9330;
const UDP_DST: usize = 22;

/// FNV-1a (32-bit) over the key's bytes, low byte first, xor-folded to BITS.
fn slot_of(key: u32) -> usize {
    let h = key.to_le_bytes().iter().fold(0x811C_9DC5u32, |h, &b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    });
    (((h >> BITS) ^ h) & ((1 << BITS) - 1)) as usize
}

struct Workload {
    /// Source IP -> new port.
    map: HashMap<u32, u16>,
    /// The NIC's table: [key, port] per slot.
    table: Vec<u32>,
    /// One frame per message (message id = index).
    frames: Vec<Vec<u8>>,
}

fn workload(quick: bool, packet_size: usize) -> anyhow::Result<Workload> {
    let mut r = Rng::new(17);
    let mut map = HashMap::new();
    let mut keys = Vec::new();
    while keys.len() < KEYS {
        let k = r.next_u64() as u32;
        // 0 marks an empty slot; ports avoid PORT so a hit always shows.
        if k != 0 && !map.contains_key(&k) {
            map.insert(k, 10_000 + r.below(50_000) as u16);
            keys.push(k);
        }
    }
    let mut table = vec![0u32; 2 << BITS];
    for &k in &keys {
        let mut i = slot_of(k);
        while table[2 * i] != 0 {
            i = (i + 1) & ((1 << BITS) - 1);
        }
        table[2 * i] = k;
        table[2 * i + 1] = map[&k] as u32;
    }
    let n = if quick { 32 } else { 512 };
    let mut frames = Vec::with_capacity(n);
    for m in 0..n {
        // Even messages come from a source in the table, odd ones do not.
        let ip = if m % 2 == 0 {
            keys[r.below(KEYS as u32) as usize]
        } else {
            loop {
                let k = r.next_u64() as u32;
                if k != 0 && !map.contains_key(&k) {
                    break k;
                }
            }
        };
        let seed = r.next_u64();
        // The frame holds the source IP as the little-endian u32 `ip`.
        let f = build_frame(
            FrameKind::Ip,
            packet_size,
            ip.to_be_bytes(),
            [10, 0, 0, 2],
            9330,
            PORT,
            |i| (seed >> (8 * (i % 8))) as u8 ^ i as u8,
        )?;
        frames.push(f);
    }
    Ok(Workload { map, table, frames })
}

fn src_ip(frame: &[u8]) -> u32 {
    u32::from_le_bytes(frame[12..16].try_into().unwrap())
}

/// What host memory must hold for each message.
fn reference(w: &Workload) -> Vec<Vec<u8>> {
    w.frames
        .iter()
        .map(|f| {
            let mut f = f.clone();
            if let Some(p) = w.map.get(&src_ip(&f)) {
                f[UDP_DST..UDP_DST + 2].copy_from_slice(&p.to_le_bytes());
            }
            f
        })
        .collect()
}

pub fn run(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Outcome> {
    let w = workload(ctx.quick, packet_size)?;
    let mut nic = ctx.nic()?;
    let img = ctx.image(&nic, "filtering", &[])?;
    let win = nic.host_window(w.frames.len() * packet_size)?;
    let table_bytes = (w.table.len() * 4) as u32;
    let e = nic.install(
        &img,
        EctxOptions {
            ph: Some("filtering_ph".into()),
            host_window: Some(win),
            handler_mem_size: Some(table_bytes + (64 << 10)),
            ..Default::default()
        },
    )?;
    let at = nic.nic_alloc(e, table_bytes as usize, 64)?;
    nic.nic_write(at, &crate::words_to_bytes(&w.table))?;
    nic.nic_write_ptr(img.symbol("filter_table")?, at)?;
    nic.nic_write(img.symbol("filter_bits")?, &BITS.to_le_bytes())?;
    nic.nic_write(
        img.symbol("filter_slot")?,
        &(packet_size as u32).to_le_bytes(),
    )?;
    nic.activate(e)?;
    // One packet per message, back to back at the line rate (send_packet
    // would hand them all over at the same instant).
    let pkts = w.frames.iter().enumerate().map(|(m, f)| Packet {
        frame: f.clone(),
        msg_id: m as u32,
        eom: true,
    });
    nic.send_packets(pkts, Pacing::LineRate)?;
    nic.run_until_idle()?;
    let host = nic.host_read(win.base, w.frames.len() * packet_size)?;
    let got: Vec<Vec<u8>> = host.chunks(packet_size).map(<[u8]>::to_vec).collect();
    let want = reference(&w);
    let hits = want
        .iter()
        .filter(|f| f[UDP_DST..UDP_DST + 2] != PORT.to_le_bytes())
        .count();
    let verified = match got.iter().zip(&want).position(|(a, b)| a != b) {
        None if hits * 2 == want.len() => Ok(()),
        None => Err(format!(
            "{hits} of {} packets hit the table, expected half",
            want.len()
        )),
        Some(i) => Err(format!(
            "host slot {i} differs from its expected packet (source IP {:#010x}, hit: {})",
            src_ip(&want[i]),
            w.map.contains_key(&src_ip(&want[i]))
        )),
    };
    Ok(Outcome {
        verified,
        report: nic.report(),
    })
}

/// Host threads doing the lookup on the frames already in memory (the
/// seed's ideal-DPDK setting): the same table and hash, the new port noted
/// per packet.
pub fn baseline(ctx: &Ctx, packet_size: usize) -> anyhow::Result<Baseline> {
    let w = workload(ctx.quick, packet_size)?;
    // The messages over and over: 512 lookups alone are shorter than
    // starting the threads.
    let n = w.frames.len();
    let items: Vec<(usize, &Vec<u8>)> = (0..20_000usize.max(n))
        .map(|k| (k % n, &w.frames[k % n]))
        .collect();
    let ports: Vec<AtomicU32> = (0..n).map(|_| Default::default()).collect();
    let bytes = (items.len() * packet_size) as u64;
    let threads = 2;
    let table = &w.table;
    let gbps = crate::host_throughput(&items, bytes, threads, |(m, f)| {
        let ip = src_ip(f);
        let mut port = u16::from_le_bytes([f[UDP_DST], f[UDP_DST + 1]]) as u32;
        let mut i = slot_of(ip);
        while table[2 * i] != 0 {
            if table[2 * i] == ip {
                port = table[2 * i + 1];
                break;
            }
            i = (i + 1) & ((1 << BITS) - 1);
        }
        ports[*m].store(port, Ordering::Relaxed);
    });
    let want = reference(&w);
    for (m, p) in ports.iter().enumerate() {
        if p.load(Ordering::Relaxed)
            != u16::from_le_bytes([want[m][UDP_DST], want[m][UDP_DST + 1]]) as u32
        {
            anyhow::bail!("filtering baseline: message {m} got the wrong port");
        }
    }
    Ok(Baseline { gbps, threads })
}
