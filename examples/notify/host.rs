//! notify: a Rust host program answering the questions handlers post
//! through the host notification queue pair.
//!
//!     cargo run --release -p softspin-host --example notify
//!
//! It builds `examples/notify/handler.c`, sends 4 messages of 8 packets,
//! each packet carrying 8 keys, and answers every request (key k -> k*k+1)
//! as requests arrive, many in flight at once.

use std::collections::BTreeMap;
use std::path::Path;

use softspin_host::sdk::{build, BuildOptions};
use softspin_host::{EctxOptions, Nic, Result};

pub const MESSAGES: u32 = 4;
pub const PACKETS: u32 = 8;
pub const KEYS: u32 = 8;

/// The keys of packet `p` of message `m` (distinct first keys mod 64).
pub fn keys(m: u32, p: u32) -> Vec<u32> {
    (0..KEYS).map(|k| 1000 * m + 64 * k + p * 7 + 3).collect()
}

pub fn answer(key: u32) -> u64 {
    key as u64 * key as u64 + 1
}

/// What the run produced: every request the host saw (key -> times seen),
/// the most requests outstanding at once, and the host memory written.
pub struct Outcome {
    pub requests: BTreeMap<u32, u32>,
    pub max_in_flight: usize,
    pub host: Vec<u8>,
    pub host_writes: u64,
}

pub fn run(workdir: &Path) -> Result<Outcome> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let elf = workdir.join("notify.elf");
    build(&BuildOptions::handler(
        &[root.join("examples/notify/handler.c")],
        &elf,
    ))?;

    let mut nic = Nic::open("pspin")?;
    let image = nic.load_image(&elf)?;
    let window = nic.host_window((MESSAGES * 64 * 8) as usize)?;
    let ectx = nic.install(
        &image,
        EctxOptions {
            ph: Some("ask_ph".into()),
            host_window: Some(window),
            ..Default::default()
        },
    )?;
    nic.activate(ectx)?;
    for m in 0..MESSAGES {
        let mut payload = Vec::new();
        for p in 0..PACKETS {
            payload.extend(keys(m, p).iter().flat_map(|k| k.to_le_bytes()));
        }
        // 28-byte header + 32 bytes of keys per packet.
        nic.send_message(ectx, m, &payload, 28 + 4 * KEYS as usize)?;
    }
    let mut requests = BTreeMap::new();
    let mut max_in_flight = 0;
    loop {
        let batch = nic.wait_notifications()?;
        if batch.is_empty() {
            break;
        }
        max_in_flight = max_in_flight.max(batch.len());
        for r in batch {
            let key = u32::from_le_bytes(r.data[..4].try_into().expect("4-byte request"));
            *requests.entry(key).or_insert(0) += 1;
            nic.respond(r.id, answer(key))?;
        }
    }
    nic.run_until_idle()?;
    let host = nic.host_read(window.base, window.size as usize)?;
    Ok(Outcome {
        requests,
        max_in_flight,
        host,
        host_writes: nic.report().host_writes,
    })
}

#[allow(dead_code)]
fn main() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("softspin-notify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| softspin_host::Error::Host(e.to_string()))?;
    let o = run(&dir)?;
    println!(
        "answered {} requests ({} distinct keys), up to {} at once; {} host writes",
        o.requests.values().sum::<u32>(),
        o.requests.len(),
        o.max_in_flight,
        o.host_writes
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
