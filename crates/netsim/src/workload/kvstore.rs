//! The distributed key-value store (seed 004 §5.4), the live use case
//! examples/cluster/kvstore on simulated NICs: every node's host is a
//! requester and every node's NIC serves the keys it owns (kvstore.h's
//! FNV-1a hash: owner h mod N, bucket (h / N) mod 128) from the hash table
//! in its host memory, answering by an RMA put of a reply record into the
//! requester's memory. A requester has one request in flight (as the
//! Python client): its host sends the next once its NIC took the reply.
//! Per round: a put of a new key, its get, a get of a key never put. Each
//! reply is checked against a Rust HashMap of the puts made so far.

use std::cell::RefCell;
use std::collections::HashMap;

use softspin_engine::{Engine, NicConfig};

use super::{seeded_bytes, uc, uc_frame, HostSend, NicProgram, Workload, HOST_BASE};

const KV_H: &str = include_str!("../../../../examples/cluster/kvstore/kvstore.h");

/// Requests per node: `ROUNDS` x (put, get, get of a missing key).
pub const ROUNDS: usize = 3;

struct Consts {
    put: u16,
    get: u16,
    reply: u64,
    ok: u32,
    miss: u32,
    basis: u32,
    prime: u32,
    key_max: usize,
    val_max: usize,
}

/// One request and the reply the reference expects.
struct Request {
    owner: u32,
    put: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// The expected status and value.
    want: (u32, Vec<u8>),
}

struct Progress {
    /// Requests answered so far.
    answered: usize,
    /// Every answer matched the reference.
    ok: bool,
}

pub struct KvStore {
    nodes: u32,
    program: NicProgram,
    c: Consts,
    /// Per node: its requests, in order (seq = index + 1).
    script: Vec<Vec<Request>>,
    progress: RefCell<Vec<Progress>>,
}

fn fnv(c: &Consts, h: u32, p: &[u8]) -> u32 {
    p.iter()
        .fold(h, |h, &b| (h ^ u32::from(b)).wrapping_mul(c.prime))
}

impl KvStore {
    /// Values of `size` bytes from `seed`'s RNG; `sabotage` flips a bit of
    /// the first expected hit (so the check must fail).
    pub fn new(
        nodes: u32,
        size: usize,
        cfg: &NicConfig,
        build_dir: &std::path::Path,
        seed: u64,
        sabotage: bool,
    ) -> Result<KvStore, String> {
        let k = |n: &str| super::header_define(KV_H, "examples/cluster/kvstore/kvstore.h", n);
        let c = Consts {
            put: uc("UC_MODE_KV_PUT")? as u16,
            get: uc("UC_MODE_KV_GET")? as u16,
            reply: k("UC_KV_REPLY")?,
            ok: k("UC_KV_OK")? as u32,
            miss: k("UC_KV_MISS")? as u32,
            basis: k("UC_KV_FNV_BASIS")? as u32,
            prime: k("UC_KV_FNV_PRIME")? as u32,
            key_max: k("UC_KV_KEY_MAX")? as usize,
            val_max: k("UC_KV_VAL_MAX")? as usize,
        };
        if nodes < 2 || u64::from(nodes) > k("UC_KV_MAX_RANKS")? {
            return Err(format!(
                "--nodes {nodes}: the key-value store runs on 2 to {} nodes (kvstore.h UC_KV_MAX_RANKS)",
                k("UC_KV_MAX_RANKS")?
            ));
        }
        if size == 0 || size > c.val_max {
            return Err(format!(
                "--size {size}: values of 1 to {} bytes (kvstore.h UC_KV_VAL_MAX)",
                c.val_max
            ));
        }
        // The reference: one map for the whole store (a node's keys are
        // its own, so each node's answers follow from its own puts).
        let mut map: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let mut script = Vec::new();
        for me in 0..nodes {
            // Keys another node owns (a requester never asks its own NIC).
            let mut n = 0u32;
            let mut key = |what: &str| loop {
                n += 1;
                let key = format!("{what}-{me}-{n}").into_bytes();
                let owner = fnv(&c, c.basis, &key) % nodes;
                if owner != me && key.len() <= c.key_max {
                    return (owner, key);
                }
            };
            let mut v = Vec::new();
            for r in 0..ROUNDS {
                let (owner, k1) = key("key");
                let value = seeded_bytes(
                    seed ^ (u64::from(me) << 32 | r as u64).wrapping_mul(0x9e37),
                    size,
                );
                map.insert(k1.clone(), value.clone());
                v.push(Request {
                    owner,
                    put: true,
                    key: k1.clone(),
                    value,
                    want: (c.ok, Vec::new()),
                });
                let mut hit = map[&k1].clone();
                if sabotage && me == 0 && r == 0 {
                    hit[0] ^= 1;
                }
                v.push(Request {
                    owner,
                    put: false,
                    key: k1,
                    value: Vec::new(),
                    want: (c.ok, hit),
                });
                let (owner, missing) = key("missing");
                let want = match map.get(&missing) {
                    Some(x) => (c.ok, x.clone()),
                    None => (c.miss, Vec::new()),
                };
                v.push(Request {
                    owner,
                    put: false,
                    key: missing,
                    value: Vec::new(),
                    want,
                });
            }
            script.push(v);
        }
        let program = NicProgram::usecase(
            "kvstore",
            cfg,
            build_dir,
            super::uc_rma_rules()?,
            uc("UC_PORT")? as u16,
            uc("UC_WINDOW")?,
        )?;
        let progress = (0..nodes)
            .map(|_| Progress {
                answered: 0,
                ok: true,
            })
            .collect();
        Ok(KvStore {
            nodes,
            program,
            c,
            script,
            progress: RefCell::new(progress),
        })
    }

    /// Node k's request number i (seq i + 1), as one datagram (kvstore.h:
    /// slot 0, key length, value length, 0, key, a put's value).
    fn request(&self, k: u32, i: usize) -> Vec<HostSend> {
        let Some(r) = self.script[k as usize].get(i) else {
            return Vec::new();
        };
        let mut d = Vec::with_capacity(8 + r.key.len() + r.value.len());
        d.extend_from_slice(&0u16.to_le_bytes());
        d.extend_from_slice(&(r.key.len() as u16).to_le_bytes());
        d.extend_from_slice(&(r.value.len() as u16).to_le_bytes());
        d.extend_from_slice(&0u16.to_le_bytes());
        d.extend_from_slice(&r.key);
        d.extend_from_slice(&r.value);
        let mode = if r.put { self.c.put } else { self.c.get };
        uc_frame(k, r.owner, i as u32 + 1, d.len(), 0, mode, &d)
            .map(|frame| {
                vec![HostSend {
                    to: r.owner,
                    frame,
                    first_of_message: true,
                }]
            })
            .unwrap_or_default()
    }

    /// The reply record in slot 0 of node k's memory, if it is whole (its
    /// check matches): (seq, status, value).
    fn record(&self, e: &mut Engine) -> Option<(u32, u32, Vec<u8>)> {
        let mut h = [0u8; 16];
        let at = HOST_BASE + self.c.reply;
        if !e.host_memory().read(at, &mut h) {
            return None;
        }
        let w = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let len = w(8) as usize;
        if len > self.c.val_max {
            return None;
        }
        let mut v = vec![0u8; len];
        if !e.host_memory().read(at + 16, &mut v) {
            return None;
        }
        let check = fnv(&self.c, fnv(&self.c, self.c.basis, &h[..12]), &v);
        (check == w(12)).then(|| (w(0), w(4), v))
    }
}

impl Workload for KvStore {
    fn name(&self) -> &str {
        "kvstore"
    }

    fn program(&self) -> &NicProgram {
        &self.program
    }

    fn host_sends(&self, k: u32) -> Vec<HostSend> {
        self.request(k, 0)
    }

    /// A completed message at node k may be the reply to its request in
    /// flight (or a request it served, or an RMA response): once the slot
    /// holds that reply whole, it is checked and the next request sent.
    fn host_reacts(&self, k: u32, _msg_id: u32, engine: &mut Engine) -> Vec<HostSend> {
        let i = {
            let p = &self.progress.borrow()[k as usize];
            p.answered
        };
        let Some(want) = self.script[k as usize].get(i).map(|r| &r.want) else {
            return Vec::new();
        };
        match self.record(engine) {
            Some((seq, status, value)) if seq == i as u32 + 1 => {
                {
                    let mut all = self.progress.borrow_mut();
                    let p = &mut all[k as usize];
                    p.ok &= (status, &value) == (want.0, &want.1);
                    p.answered += 1;
                }
                self.request(k, i + 1)
            }
            _ => Vec::new(),
        }
    }

    fn setup_engine(
        &self,
        k: u32,
        engine: &mut Engine,
        ectx: softspin_engine::EctxId,
    ) -> Result<(), String> {
        super::setup_rma(
            k,
            engine,
            ectx,
            &self.program.image,
            uc("UC_KEY")? as u32,
            self.program.host_window,
        )
    }

    fn expected_done(&self) -> u32 {
        self.nodes
    }

    fn node_done(&self, k: u32, _engine: &mut Engine) -> bool {
        self.progress.borrow()[k as usize].answered == self.script[k as usize].len()
    }

    fn verify(&self, k: u32, _engine: Option<&mut Engine>) -> bool {
        let p = &self.progress.borrow()[k as usize];
        p.ok && p.answered == self.script[k as usize].len()
    }
}
