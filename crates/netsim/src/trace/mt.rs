//! The host side of examples/cluster/matching's handlers (seed 004 §5.1)
//! for the replay's host actors: what a host writes into its memory to
//! post a receive, how it reads a completion, and the one-packet messages
//! (eager data or a rendezvous header) it sends. The same protocol as the
//! live host APIs (`mtapi.py`, `host.c`); every number comes from the C
//! headers the handlers are built with (uc.h, matching.h), read here.

use super::program::{Program, Step};
use super::ti::TraceError;
use crate::workload::{header_define, UC_H};

/// examples/cluster/matching/matching.h.
pub const MATCHING_H: &str = include_str!("../../../../examples/cluster/matching/matching.h");

/// The handlers' layout and constants (names as in the headers, without
/// their UC_MT_ / UC_ prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mt {
    pub posted: u64,
    pub kick: u64,
    pub acks: u64,
    pub fins: u64,
    pub post: u64,
    pub compl: u64,
    pub unexp: u64,
    pub recv: u64,
    pub send: u64,
    pub end: u64,
    pub posts: u64,
    pub slots: u64,
    pub sends: u64,
    pub post_len: u64,
    pub compl_len: u64,
    pub done_off: u64,
    pub eager_max: u64,
    pub max: u64,
    pub tag_shift: u32,
    pub tag_max: u32,
    pub any: u32,
    pub no_slot: u32,
    pub ok: u32,
    pub how_posted: u32,
    pub how_unexpected: u32,
    pub mode_eager: u16,
    pub mode_rndv: u16,
    pub eom: u32,
    pub magic: u16,
    pub msg_bit: u32,
    pub hdr: usize,
    pub port: u16,
}

/// A completion record (matching.h): the receive `id`'s outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub status: u32,
    pub len: u32,
    pub src: u32,
    pub tag: u32,
    /// The unexpected slot holding the data (the host copies it out and
    /// acknowledges `gen`), or none: the data is in the buffer.
    pub slot: Option<u32>,
    pub gen: u32,
    pub how: u32,
}

impl Mt {
    /// From the headers the handlers are built with.
    pub fn from_headers(uc_h: &str, matching_h: &str) -> Result<Mt, String> {
        let m = |n: &str| header_define(matching_h, "matching.h", n);
        let u = |n: &str| header_define(uc_h, "uc.h", n);
        Ok(Mt {
            posted: m("UC_MT_POSTED")?,
            kick: m("UC_MT_KICK")?,
            acks: m("UC_MT_ACKS")?,
            fins: m("UC_MT_FINS")?,
            post: m("UC_MT_POST")?,
            compl: m("UC_MT_COMPL")?,
            unexp: m("UC_MT_UNEXP")?,
            recv: m("UC_MT_RECV")?,
            send: m("UC_MT_SEND")?,
            end: m("UC_MT_END")?,
            posts: m("UC_MT_POSTS")?,
            slots: m("UC_MT_SLOTS")?,
            sends: m("UC_MT_SENDS")?,
            post_len: m("UC_MT_POST_LEN")?,
            compl_len: m("UC_MT_COMPL_LEN")?,
            done_off: m("UC_MT_DONE_OFF")?,
            eager_max: m("UC_MT_EAGER_MAX")?,
            max: m("UC_MT_MAX")?,
            tag_shift: m("UC_MT_TAG_SHIFT")? as u32,
            tag_max: m("UC_MT_TAG_MAX")? as u32,
            any: m("UC_MT_ANY")? as u32,
            no_slot: m("UC_MT_NO_SLOT")? as u32,
            ok: m("UC_MT_OK")? as u32,
            how_posted: m("UC_MT_HOW_POSTED")? as u32,
            how_unexpected: m("UC_MT_HOW_UNEXPECTED")? as u32,
            mode_eager: u("UC_MODE_EAGER")? as u16,
            mode_rndv: u("UC_MODE_RNDV")? as u16,
            eom: u("UC_EOM")? as u32,
            magic: u("UC_MAGIC")? as u16,
            msg_bit: u("UC_MSG_BIT")? as u32,
            hdr: u("UC_HDR")? as usize,
            port: u("UC_PORT")? as u16,
        })
    }

    /// The repository's headers.
    pub fn new() -> Result<Mt, String> {
        Mt::from_headers(UC_H, MATCHING_H)
    }

    /// Where receive `id`'s post ring entry goes (offset in the window).
    pub fn post_at(&self, id: u32) -> u64 {
        self.post + (id as u64 % self.posts) * self.post_len
    }

    /// Receive `id`'s ring entry: from `src` with `tag` (None: ANY) into
    /// `cap` bytes at window offset `buf`. After writing it the host sets
    /// the u32 at `posted` to id + 1 and rings the NIC.
    pub fn post_entry(
        &self,
        id: u32,
        src: Option<u32>,
        tag: Option<u32>,
        buf: u32,
        cap: u32,
    ) -> Vec<u8> {
        [
            id,
            src.unwrap_or(self.any),
            tag.unwrap_or(self.any),
            buf,
            cap,
        ]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
    }

    /// Where receive `id`'s completion is (offset in the window).
    pub fn completion_at(&self, id: u32) -> u64 {
        self.compl + (id as u64 % self.posts) * self.compl_len
    }

    /// Receive `id`'s completion, if the record at `completion_at(id)`
    /// (`rec`, `compl_len` bytes) is finished (its `done` word is id + 1).
    pub fn completion(&self, id: u32, rec: &[u8]) -> Option<Completion> {
        let w = |i: usize| -> Option<u32> {
            Some(u32::from_le_bytes(
                rec.get(4 * i..4 * i + 4)?.try_into().ok()?,
            ))
        };
        if rec.len() as u64 != self.compl_len
            || w(self.done_off as usize / 4)? != id.wrapping_add(1)
        {
            return None;
        }
        let slot = w(4)?;
        Some(Completion {
            status: w(0)?,
            len: w(1)?,
            src: w(2)?,
            tag: w(3)?,
            slot: (slot != self.no_slot).then_some(slot),
            gen: w(5)?,
            how: w(6)?,
        })
    }

    /// Where an unexpected slot's data is, and where its acknowledgement
    /// (the slot's generation, once copied out) goes.
    pub fn unexp_at(&self, slot: u32) -> u64 {
        self.unexp + slot as u64 * self.eager_max
    }
    pub fn ack_at(&self, slot: u32) -> u64 {
        self.acks + slot as u64 * 4
    }

    /// Where the receiver's NIC puts a rendezvous send's cookie when done.
    pub fn fin_at(&self, cookie: u32) -> u64 {
        self.fins + (cookie as u64 % self.sends) * 8
    }

    /// The message id of `src`'s `seq`-th message (mtapi.py's numbering).
    pub fn msg_id(&self, src: u32, seq: u32) -> u32 {
        self.msg_bit | (src << 20) | (seq & 0xf_ffff)
    }

    /// A message's only packet after UDP: uc.h's header, the tag in the
    /// flags word, then the data (eager) or `rts` (rendezvous).
    pub fn packet(
        &self,
        src: u32,
        seq: u32,
        tag: u32,
        rendezvous: bool,
        total: u32,
        data: &[u8],
    ) -> Vec<u8> {
        let flags = self.eom | (tag & self.tag_max) << self.tag_shift;
        let mode = if rendezvous {
            self.mode_rndv
        } else {
            self.mode_eager
        };
        let mut p = Vec::with_capacity(self.hdr + data.len());
        p.extend_from_slice(&self.magic.to_be_bytes());
        for v in [self.msg_id(src, seq), flags, seq, total, 0] {
            p.extend_from_slice(&v.to_be_bytes());
        }
        p.extend_from_slice(&(src as u16).to_be_bytes());
        p.extend_from_slice(&mode.to_be_bytes());
        p.extend_from_slice(data);
        p
    }

    /// A rendezvous packet's data: where the sender exposes the message
    /// (window offset) and the send's cookie.
    pub fn rts(&self, soff: u32, cookie: u32) -> [u8; 8] {
        let mut r = [0u8; 8];
        r[..4].copy_from_slice(&soff.to_be_bytes());
        r[4..].copy_from_slice(&cookie.to_be_bytes());
        r
    }
}

/// What the matching handlers hold at once, against what a rank's program
/// needs (each request counted from its issue to the wait that ends it):
/// messages up to `max` bytes, `posts` receives outstanding and their
/// buffers in the receive area, `sends` rendezvous sends in flight and
/// their data in the send area. A trace beyond them is refused before the
/// replay, naming the line (unexpected slots depend on timing: the replay
/// counts drops instead).
pub fn check_limits(progs: &[Program], mt: &Mt) -> Result<(), TraceError> {
    for (r, p) in progs.iter().enumerate() {
        // Open requests: (bytes, is a rendezvous send).
        let mut open: Vec<Option<(u64, bool)>> = vec![None; p.requests];
        let (mut recvs, mut recv_bytes, mut sends, mut send_bytes) = (0u64, 0u64, 0u64, 0u64);
        for s in &p.steps {
            let err = |msg: String| {
                Err(TraceError {
                    at: s.at.clone(),
                    msg: format!("rank {r}: {msg}"),
                })
            };
            match &s.step {
                Step::Send { req, bytes, .. } | Step::Recv { req, bytes, .. }
                    if *bytes > mt.max =>
                {
                    let _ = req;
                    return err(format!(
                        "a message of {bytes} bytes: the matching handler takes at most {}",
                        mt.max
                    ));
                }
                Step::Recv { req, bytes, .. } => {
                    open[*req] = Some((*bytes, false));
                    recvs += 1;
                    recv_bytes += bytes;
                    if recvs > mt.posts {
                        return err(format!("more than {} receives outstanding", mt.posts));
                    }
                    if recv_bytes > mt.send - mt.recv {
                        return err(format!(
                            "{recv_bytes} bytes of receive buffers outstanding: the receive area holds {}",
                            mt.send - mt.recv
                        ));
                    }
                }
                Step::Send { req, bytes, .. } if *bytes > mt.eager_max => {
                    open[*req] = Some((*bytes, true));
                    sends += 1;
                    send_bytes += bytes;
                    if sends > mt.sends {
                        return err(format!("more than {} rendezvous sends in flight", mt.sends));
                    }
                    if send_bytes > mt.end - mt.send {
                        return err(format!(
                            "{send_bytes} bytes of rendezvous sends in flight: the send area holds {}",
                            mt.end - mt.send
                        ));
                    }
                }
                Step::Wait { reqs } => {
                    for q in reqs {
                        match open[*q].take() {
                            Some((b, true)) => {
                                sends -= 1;
                                send_bytes -= b;
                            }
                            Some((b, false)) => {
                                recvs -= 1;
                                recv_bytes -= b;
                            }
                            None => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}
