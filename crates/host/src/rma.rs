//! RMA's memory registration from the host (docs/rma.md "Windows"): a host
//! exports part of an ECTX's host window under a key, with permissions, by
//! writing an entry of the window table the RMA target handlers read
//! (`examples/rma_target`, table layout `softspin_wire::rma::window`).
//!
//! And the initiator from the host (docs/rma.md "Initiator"): sPIN's put
//! from host, get to host and remote atomics as a host program posts them.
//! The library writes each operation (split into pieces of at most
//! `txn::MAX_LEN` bytes) into a free host entry of the NIC's
//! outstanding-transaction table, an MMIO write into NIC memory, and rings
//! a doorbell: a frame injected into the RMA ECTX's inbound path (not from
//! the wire, not through the transport block) after a PCIe write's latency,
//! whose handler (`spin_rma_doorbell`, sdk/include/spin_rma_ops.h) sends
//! the requests. Responses' handlers mark the entry done; the library finds
//! done entries when asked for completions and frees them.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use softspin_engine::traffic::Arrival;
use softspin_engine::units::Ns;
use softspin_wire::rma::txn::{self, Entry};
use softspin_wire::rma::window::{self, Window};
use softspin_wire::rma::{Op, Status};

use crate::{Ectx, Error, HostWindow, Nic, Result};

/// One remote operation a host program (or the CLI) asks its NIC to perform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RmaOp {
    /// Write `len` bytes from this node's host window at offset `local` to
    /// the remote window (sPIN's put from host).
    Put { local: u64, len: u64 },
    /// Read `len` bytes of the remote window into this node's host window
    /// at offset `local` (get to host).
    Get { local: u64, len: u64 },
    /// Fetch-and-add on a 4- or 8-byte word; completion value = the old word.
    FetchAdd { width: u8, addend: u64 },
    /// Compare-and-swap; completion value = the old word (swapped iff it
    /// equalled `compare`).
    Cas { width: u8, compare: u64, swap: u64 },
}

/// An operation on node `rank`'s window `key` at byte `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RmaRequest {
    pub rank: u16,
    pub key: u32,
    pub offset: u64,
    #[serde(flatten)]
    pub op: RmaOp,
}

/// A posted operation, unique per NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RmaHandle(pub u64);

/// Status of an operation whose destination the transport declared failed
/// (after `softspin_wire::rma::Status`'s 0..=6).
pub const STATUS_PEER_FAILED: u8 = txn::STATUS_PEER_FAILED as u8;

/// A finished operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RmaCompletion {
    pub handle: RmaHandle,
    /// `softspin_wire::rma::Status` (0 OK, 1 BAD_KEY, ... 6 FAILED) of the
    /// first packet that failed, else 0; [`STATUS_PEER_FAILED`] when the
    /// transport declared the destination failed.
    pub status: u8,
    /// The old value for atomics; 0 otherwise.
    pub value: u64,
}

/// Part of an operation that fits one table entry.
#[derive(Clone, Copy, Debug)]
struct Piece {
    handle: RmaHandle,
    /// The entry to write (state and txn set when posted).
    entry: Entry,
}

#[derive(Debug, Default)]
struct OpState {
    pieces_left: usize,
    status: u8,
    value: u64,
}

/// One ECTX's host-posted operations.
#[derive(Debug, Default)]
struct Initiator {
    queue: VecDeque<Piece>,
    /// Host entry index -> the piece in it, its wire txn, when its
    /// doorbell last rang (NIC time, ps).
    posted: HashMap<usize, (Piece, u32, u64)>,
    ops: HashMap<RmaHandle, OpState>,
    done: Vec<RmaCompletion>,
}

impl Initiator {
    fn finish(&mut self, p: &Piece, status: u8, value: u64) {
        let Some(op) = self.ops.get_mut(&p.handle) else {
            return;
        };
        op.pieces_left -= 1;
        if op.status == 0 {
            op.status = status;
        }
        op.value = value;
        if op.pieces_left == 0 {
            let op = self.ops.remove(&p.handle).unwrap_or_default();
            self.done.push(RmaCompletion {
                handle: p.handle,
                status: op.status,
                value: op.value,
            });
        }
    }
}

/// Every ECTX's initiator state (a field of `Nic`).
#[derive(Debug, Default)]
pub(crate) struct Initiators {
    by_ectx: HashMap<u32, Initiator>,
    next_handle: u64,
}

impl Initiators {
    /// The ECTX is gone: its operations with it.
    pub(crate) fn forget(&mut self, e: Ectx) {
        self.by_ectx.remove(&e.0);
    }
}

impl Nic {
    /// Address of the ECTX's window table, and its host window's size.
    fn rma_table(&self, e: Ectx) -> Result<(u32, u64)> {
        let info = self.info(e)?;
        let table = info.rma_windows.ok_or_else(|| {
            Error::Invalid(format!(
                "ECTX {}: its image has no `{}` (not the RMA target handlers)",
                e.0,
                window::SYMBOL
            ))
        })?;
        let host = info.host_window.ok_or_else(|| {
            Error::Invalid(format!("ECTX {}: installed without a host window", e.0))
        })?;
        Ok((table, host.size))
    }

    /// The ECTX's window table as it is in NIC memory, free entries included.
    pub fn rma_windows(&self, e: Ectx) -> Result<Vec<Window>> {
        let (table, _) = self.rma_table(e)?;
        let bytes = self.nic_read(table, window::WINDOWS * window::ENTRY_LEN)?;
        Ok(bytes
            .chunks_exact(window::ENTRY_LEN)
            .map(|c| Window::from_bytes(c.try_into().unwrap_or(&[0; window::ENTRY_LEN])))
            .collect())
    }

    /// Export `size` bytes at `offset` in the ECTX's host window under `key`
    /// with `perms` (`window::PERM_*`), replacing the window of the same key
    /// if there is one. Requests naming `key` reach exactly these bytes.
    pub fn export_window(
        &mut self,
        e: Ectx,
        key: u32,
        offset: u64,
        size: u64,
        perms: u32,
    ) -> Result<()> {
        let (table, host_size) = self.rma_table(e)?;
        if key == window::KEY_FREE {
            return Err(Error::Invalid(format!(
                "RMA key {key} marks a free entry; export under another"
            )));
        }
        if perms == 0 || perms & !window::PERM_ALL != 0 {
            return Err(Error::Invalid(format!(
                "RMA permissions 0x{perms:x}: a non-empty set of READ 1, WRITE 2, ATOMIC 4"
            )));
        }
        if offset.checked_add(size).is_none_or(|end| end > host_size) {
            return Err(Error::Limit(format!(
                "RMA window {offset}+{size} passes the end of the ECTX's {host_size}-byte host window"
            )));
        }
        let windows = self.rma_windows(e)?;
        let slot = windows
            .iter()
            .position(|w| w.key == key)
            .or_else(|| windows.iter().position(|w| w.key == window::KEY_FREE))
            .ok_or_else(|| {
                Error::Limit(format!(
                    "RMA window table full ({} windows exported)",
                    window::WINDOWS
                ))
            })?;
        self.write_entry(
            table,
            slot,
            Window {
                key,
                perms,
                base: offset,
                size,
            },
        )
    }

    /// Withdraw the window exported under `key`; requests naming it get
    /// "bad key" from then on.
    pub fn unexport_window(&mut self, e: Ectx, key: u32) -> Result<()> {
        let (table, _) = self.rma_table(e)?;
        let slot = self
            .rma_windows(e)?
            .iter()
            .position(|w| key != window::KEY_FREE && w.key == key)
            .ok_or_else(|| Error::Invalid(format!("no RMA window is exported under key {key}")))?;
        self.write_entry(table, slot, Window::default())
    }

    /// The key is cleared first and written last, so a handler that finds
    /// the key finds the entry written whole (docs/rma.md says what one
    /// that matched it before the rewrite may see).
    fn write_entry(&mut self, table: u32, slot: usize, w: Window) -> Result<()> {
        // slot < WINDOWS and the table was read whole: no overflow.
        let at = table + (slot * window::ENTRY_LEN) as u32;
        let key = at + Window::KEY_OFFSET as u32;
        let bytes = w.to_bytes();
        let (k0, k1) = (Window::KEY_OFFSET, Window::KEY_OFFSET + 4);
        self.nic_write(key, &[0; 4])?;
        self.nic_write(at, &bytes[..k0])?;
        self.nic_write(at + k1 as u32, &bytes[k1..])?;
        self.nic_write(key, &bytes[k0..k1])
    }
}

impl Nic {
    /// The ECTX's OTT address and host window, or why it cannot initiate.
    fn rma_initiator(&self, e: Ectx) -> Result<(u32, HostWindow)> {
        let info = self.info(e)?;
        let table = info.rma_txns.ok_or_else(|| {
            Error::Invalid(format!(
                "ECTX {}: its image has no `{}` (not the RMA handlers with the initiator, examples/rma_target)",
                e.0,
                txn::SYMBOL
            ))
        })?;
        let host = info.host_window.ok_or_else(|| {
            Error::Invalid(format!("ECTX {}: installed without a host window", e.0))
        })?;
        Ok((table, host))
    }

    /// Post an operation on ECTX `e` (the ECTX running the RMA handlers,
    /// examples/rma_target, with the transport enabled). Never blocks: a
    /// Put/Get of any length up to the host window is split into entries
    /// of at most `txn::MAX_LEN` bytes (each of packets of at most
    /// `MAX_PAYLOAD`); entries beyond the free ones wait in a host-side
    /// queue and are posted as entries free (`rma_completions`). `local`
    /// is an offset in the ECTX's host window.
    pub fn rma_post(&mut self, e: Ectx, r: &RmaRequest) -> Result<RmaHandle> {
        let (_, host) = self.rma_initiator(e)?;
        let id = self.info(e)?.id;
        if self.engine.rma_ectx() != Some(id) {
            return Err(Error::Invalid(format!(
                "ECTX {}: the RMA transport is not in front of it (EctxOptions::rma, softspin nic --rma)",
                e.0
            )));
        }
        if !self.engine.ectx(id).is_some_and(|x| x.active) {
            return Err(Error::Invalid(format!("ECTX {} is not active", e.0)));
        }
        let (nodes, me) = self.nodes.as_ref().ok_or_else(|| {
            Error::Invalid("RMA: the NIC has no node table (set_node_table, --nodes)".into())
        })?;
        let rank = u32::from(r.rank);
        if rank as usize >= nodes.len() {
            return Err(Error::Invalid(format!(
                "RMA: no rank {rank} in the node table ({} nodes)",
                nodes.len()
            )));
        }
        if rank == *me {
            return Err(Error::Invalid(format!(
                "RMA: rank {rank} is this node's own (loopback is not supported)"
            )));
        }
        let mut entry = Entry {
            rank,
            key: r.key,
            offset: r.offset,
            ..Entry::default()
        };
        let mut pieces = Vec::new();
        match r.op {
            RmaOp::Put { local, len } | RmaOp::Get { local, len } => {
                if len == 0 {
                    return Err(Error::Invalid("RMA put/get of 0 bytes".into()));
                }
                if local.checked_add(len).is_none_or(|end| end > host.size) {
                    return Err(Error::Limit(format!(
                        "RMA: local range {local}+{len} passes the end of the ECTX's {}-byte host window",
                        host.size
                    )));
                }
                if r.offset.checked_add(len).is_none() {
                    return Err(Error::Limit(format!(
                        "RMA: remote range {}+{len} overflows",
                        r.offset
                    )));
                }
                entry.op = if matches!(r.op, RmaOp::Put { .. }) {
                    Op::Write
                } else {
                    Op::Read
                } as u16;
                let max = txn::MAX_LEN as u64;
                let mut at = 0;
                while at < len {
                    let n = (len - at).min(max);
                    pieces.push(Entry {
                        offset: r.offset + at,
                        local: host.base + local + at,
                        length: n as u32,
                        packets: n.div_ceil(softspin_wire::rma::MAX_PAYLOAD as u64) as u32,
                        ..entry
                    });
                    at += n;
                }
            }
            RmaOp::FetchAdd { width, .. } | RmaOp::Cas { width, .. } => {
                if width != 4 && width != 8 {
                    return Err(Error::Invalid(format!(
                        "RMA atomic of width {width}: 4 or 8"
                    )));
                }
                if !r.offset.is_multiple_of(u64::from(width)) {
                    return Err(Error::Invalid(format!(
                        "RMA atomic at offset {} is not aligned to its width {width}",
                        r.offset
                    )));
                }
                let mask = if width == 8 { u64::MAX } else { 0xffff_ffff };
                let (op, operands) = match (r.op, width) {
                    (RmaOp::FetchAdd { addend, .. }, 4) => (Op::FetchAdd32, [addend, 0]),
                    (RmaOp::FetchAdd { addend, .. }, _) => (Op::FetchAdd64, [addend, 0]),
                    (RmaOp::Cas { compare, swap, .. }, 4) => (Op::CompareSwap32, [compare, swap]),
                    (RmaOp::Cas { compare, swap, .. }, _) => (Op::CompareSwap64, [compare, swap]),
                    _ => unreachable!("matched above"),
                };
                pieces.push(Entry {
                    op: op as u16,
                    length: u32::from(width),
                    operands: [operands[0] & mask, operands[1] & mask],
                    packets: 1,
                    ..entry
                });
            }
        }
        self.rma.next_handle += 1;
        let handle = RmaHandle(self.rma.next_handle);
        let ini = self.rma.by_ectx.entry(e.0).or_default();
        ini.ops.insert(
            handle,
            OpState {
                pieces_left: pieces.len(),
                ..OpState::default()
            },
        );
        ini.queue
            .extend(pieces.into_iter().map(|entry| Piece { handle, entry }));
        if let Err(x) = self.rma_pump(e) {
            // NIC memory refused the entry (an image whose table is not
            // where its symbol says): the operation was not posted.
            if let Some(ini) = self.rma.by_ectx.get_mut(&e.0) {
                ini.ops.remove(&handle);
                ini.queue.retain(|p| p.handle != handle);
            }
            return Err(x);
        }
        Ok(handle)
    }

    /// Ranks the transport declared failed.
    fn rma_failed_ranks(&self) -> Vec<u32> {
        self.engine
            .rma_failed()
            .iter()
            .map(|f| u32::from(f.rank))
            .collect()
    }

    /// Post queued pieces into free host entries and ring their doorbells.
    fn rma_pump(&mut self, e: Ectx) -> Result<()> {
        let (table, _) = self.rma_initiator(e)?;
        let id = self.info(e)?.id;
        let failed = self.rma_failed_ranks();
        let Some(mut ini) = self.rma.by_ectx.remove(&e.0) else {
            return Ok(());
        };
        let r = (|| {
            let free: Vec<usize> = (0..txn::HOST_TXNS)
                .filter(|i| !ini.posted.contains_key(i))
                .collect();
            let mut free = free.into_iter();
            while let Some(p) = ini.queue.front().copied() {
                if failed.contains(&p.entry.rank) {
                    ini.queue.pop_front();
                    ini.finish(&p, STATUS_PEER_FAILED, 0);
                    continue;
                }
                let Some(i) = free.next() else { break };
                let at = entry_addr(table, i, 0)?;
                let old = self.nic_read(at, txn::ENTRY_LEN)?;
                let old =
                    Entry::from_bytes(old.as_slice().try_into().unwrap_or(&[0; txn::ENTRY_LEN]));
                let wire = txn::wire_txn(i, txn::gen_of(old.txn).wrapping_add(1));
                let entry = Entry {
                    state: txn::FREE,
                    txn: wire,
                    remaining: p.entry.packets,
                    ..p.entry
                };
                // Whole with state FREE, then POSTED: a doorbell finds the
                // entry whole or not posted.
                self.nic_write(at, &entry.to_bytes())?;
                // `at` + 80 was read: no overflow.
                self.nic_write(at + Entry::STATE_OFFSET as u32, &txn::POSTED.to_le_bytes())?;
                self.rma_doorbell(id, wire);
                ini.queue.pop_front();
                ini.posted.insert(i, (p, wire, self.engine.now_ps()));
            }
            Ok(())
        })();
        self.rma.by_ectx.insert(e.0, ini);
        r
    }

    /// Ring the doorbell of the entry with wire txn `wire`: a frame into
    /// the ECTX's inbound path a PCIe write's latency from now.
    fn rma_doorbell(&mut self, id: softspin_engine::EctxId, wire: u32) {
        let latency = Ns(self.config().host.latency_ns).to_ps_saturating().0;
        self.engine.inject(Arrival {
            time_ps: self.engine.now_ps().saturating_add(latency),
            frame: txn::doorbell(wire).to_vec(),
            msg_id: DOORBELL_MSG | wire & !DOORBELL_MSG,
            eom: true,
            origin: "RMA doorbell".into(),
            ectx: Some(id),
        });
    }

    /// Completions of this ECTX's host-posted operations that finished
    /// since the last call, each exactly once (an operation split into
    /// several entries completes when all have). Frees their entries and
    /// posts queued pieces into them. Entries to a destination the
    /// transport declared failed complete with [`STATUS_PEER_FAILED`];
    /// those of an ECTX deactivated meanwhile with FAILED (6).
    pub fn rma_completions(&mut self, e: Ectx) -> Vec<RmaCompletion> {
        self.collect();
        let Ok((table, _)) = self.rma_initiator(e) else {
            return Vec::new();
        };
        let failed = self.rma_failed_ranks();
        // Deactivated with operations outstanding: none of them can finish
        // (no doorbell or response reaches it); they fail, queued or not.
        let inactive = self
            .info(e)
            .ok()
            .and_then(|x| self.engine.ectx(x.id))
            .is_none_or(|x| !x.active);
        let mut ini = self.rma.by_ectx.remove(&e.0).unwrap_or_default();
        if inactive {
            while let Some(p) = ini.queue.pop_front() {
                ini.finish(&p, Status::Failed as u8, 0);
            }
        }
        let bytes = self
            .nic_read(table, txn::TXNS * txn::ENTRY_LEN)
            .unwrap_or_default();
        let mut idx: Vec<usize> = ini.posted.keys().copied().collect();
        idx.sort_unstable();
        for i in idx {
            let Some(b) = bytes.get(i * txn::ENTRY_LEN..(i + 1) * txn::ENTRY_LEN) else {
                continue;
            };
            let now = Entry::from_bytes(b.try_into().unwrap_or(&[0; txn::ENTRY_LEN]));
            let (p, wire, rung) = ini.posted[&i];
            if !inactive
                && now.txn == wire
                && now.state == txn::POSTED
                && self.engine.now_ps().saturating_sub(rung) >= DOORBELL_AGAIN_PS
            {
                // Its doorbell was lost (a full packet buffer drops it as
                // any frame): ring again. A second one that finds the
                // entry taken is dropped and counted by the handler.
                if let Some(id) = self.info(e).ok().map(|x| x.id) {
                    self.rma_doorbell(id, wire);
                }
                ini.posted.insert(i, (p, wire, self.engine.now_ps()));
                continue;
            }
            let (status, value) = if now.txn == wire && now.state == txn::DONE {
                (now.status.min(u32::from(u8::MAX)) as u8, now.value)
            } else if failed.contains(&p.entry.rank) {
                (STATUS_PEER_FAILED, 0)
            } else if inactive {
                (Status::Failed as u8, 0)
            } else {
                continue;
            };
            // Freed: a late doorbell or response finds it not POSTED / not
            // in flight, and the next use has a new generation.
            let Ok(at) = entry_addr(table, i, Entry::STATE_OFFSET) else {
                continue;
            };
            if self.nic_write(at, &txn::FREE.to_le_bytes()).is_err() {
                continue;
            }
            ini.posted.remove(&i);
            ini.finish(&p, status, value);
        }
        self.rma.by_ectx.insert(e.0, ini);
        self.rma_fail_handler_ops(table, &bytes, &failed);
        let _ = self.rma_pump(e);
        self.rma
            .by_ectx
            .get_mut(&e.0)
            .map(|i| std::mem::take(&mut i.done))
            .unwrap_or_default()
    }

    /// Mark the handlers' operations in flight to a destination the
    /// transport declared failed DONE with [`STATUS_PEER_FAILED`], on the
    /// ECTX behind the transport, whether or not the host posted anything
    /// there ([`Nic::rma_completions`] does it only for the ECTX it is
    /// given). The live loop calls it after every step; an embedding that
    /// runs the engine itself calls it (or `rma_completions`) as it goes.
    pub fn rma_fail_handler_ops_now(&mut self) {
        if self.engine.rma_failed().is_empty() {
            return;
        }
        let Some(id) = self.engine.rma_ectx() else {
            return;
        };
        let Some(table) = self
            .ectxs
            .values()
            .find(|x| x.id == id)
            .and_then(|x| x.rma_txns)
        else {
            return;
        };
        let failed = self.rma_failed_ranks();
        let bytes = self
            .nic_read(table, txn::TXNS * txn::ENTRY_LEN)
            .unwrap_or_default();
        self.rma_fail_handler_ops(table, &bytes, &failed);
    }

    /// Handlers' operations to a destination the transport declared failed
    /// complete with [`STATUS_PEER_FAILED`] too: the host marks their
    /// entries (the handlers cannot see the transport), so a handler
    /// waiting on one gets the status instead of its watchdog.
    fn rma_fail_handler_ops(&mut self, table: u32, bytes: &[u8], failed: &[u32]) {
        if failed.is_empty() {
            return;
        }
        for i in txn::HOST_TXNS..txn::TXNS {
            let Some(b) = bytes.get(i * txn::ENTRY_LEN..(i + 1) * txn::ENTRY_LEN) else {
                break;
            };
            let x = Entry::from_bytes(b.try_into().unwrap_or(&[0; txn::ENTRY_LEN]));
            if x.state != txn::IN_FLIGHT || !failed.contains(&x.rank) {
                continue;
            }
            // Status first, then DONE: a waiting handler reads both after.
            let status = entry_addr(table, i, Entry::STATUS_OFFSET);
            let state = entry_addr(table, i, Entry::STATE_OFFSET);
            if let (Ok(st), Ok(at)) = (status, state) {
                let _ = self.nic_write(st, &u32::from(STATUS_PEER_FAILED).to_le_bytes());
                let _ = self.nic_write(at, &txn::DONE.to_le_bytes());
            }
        }
    }

    /// Operations posted on the ECTX and not yet completed (completions not
    /// yet taken by `rma_completions` included).
    pub fn rma_outstanding(&self, e: Ectx) -> usize {
        self.rma
            .by_ectx
            .get(&e.0)
            .map_or(0, |i| i.ops.len() + i.done.len())
    }
}

/// NIC address of byte `field` of entry `i` of the table at `table` (an
/// image's symbol: checked, not wrapped).
fn entry_addr(table: u32, i: usize, field: usize) -> Result<u32> {
    u32::try_from(i * txn::ENTRY_LEN + field)
        .ok()
        .and_then(|o| table.checked_add(o))
        .ok_or_else(|| {
            Error::NicMemory(format!(
                "RMA table at 0x{table:08x}: entry {i} passes the end of NIC memory"
            ))
        })
}

/// A doorbell whose entry is still POSTED this long after it rang (NIC
/// time) is rung again: far above a PCIe write and a handler's start.
const DOORBELL_AGAIN_PS: u64 = 1_000_000_000;

/// Message ids of doorbells (their own range, so none joins a message of
/// the wire's).
const DOORBELL_MSG: u32 = 0xd000_0000;
