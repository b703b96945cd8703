//! The host interface of a NIC process (docs/host-interface.md): one
//! `softspin nic` per node, as a real machine has one NIC, and host
//! programs beside it that share its host memory (`shm`) and talk to it
//! over a control socket (`server`, `client`): export RMA windows, read
//! counters and status, wait for notifications (sPIN's host notifications,
//! seed 004 §3).
//!
//! Framing, shared by the server and every client (Rust, Python, C): a
//! message is a 4-byte little-endian length, then that many bytes of one
//! UTF-8 JSON object. A request names its `op` and the protocol version
//! `v`; a response has `ok` and either the op's fields or an `error`.

pub mod client;
pub mod server;
pub mod shm;

use std::io::{Read, Write};

use crate::{Error, Result};

/// The protocol version a request carries in `v`; a server answers other
/// versions with an error.
pub const PROTOCOL_VERSION: u64 = 1;
/// The longest message either side accepts (a longer length is garbled
/// input: the server answers with an error and closes that connection).
pub const MAX_MESSAGE: usize = 64 * 1024;
/// Where `softspin nic --control` puts its socket without a path.
pub const DEFAULT_CONTROL_DIR: &str = "/run/softspin";

/// The default control socket of the NIC on `iface`.
pub fn default_control_path(iface: &str) -> std::path::PathBuf {
    std::path::Path::new(DEFAULT_CONTROL_DIR).join(format!("{iface}.sock"))
}

/// The name of an RMA completion status as docs/rma.md writes it (BAD_KEY,
/// ...), and what it means.
pub fn rma_status_name(status: u8) -> (String, &'static str) {
    use softspin_wire::rma::Status;
    if status == crate::rma::STATUS_PEER_FAILED {
        return ("PEER_FAILED".into(), "the destination stopped answering");
    }
    match Status::from_byte(status) {
        // BadKey -> BAD_KEY: the variant's name, in the docs' spelling.
        Ok(s) => {
            let mut n = String::new();
            for (i, ch) in format!("{s:?}").chars().enumerate() {
                if ch.is_uppercase() && i > 0 {
                    n.push('_');
                }
                n.push(ch.to_ascii_uppercase());
            }
            (n, s.name())
        }
        Err(_) => (format!("status {status}"), "unknown"),
    }
}

/// The error a non-OK RMA completion is, naming the operation, the status
/// and, for a failed peer, the rank; None for OK.
pub fn rma_error(status: u8, r: &crate::RmaRequest) -> Option<String> {
    if status == 0 {
        return None;
    }
    let (name, what) = rma_status_name(status);
    let op = match r.op {
        crate::RmaOp::Put { .. } => "put",
        crate::RmaOp::Get { .. } => "get",
        crate::RmaOp::FetchAdd { .. } => "fetch_add",
        crate::RmaOp::Cas { .. } => "cas",
    };
    Some(if status == crate::rma::STATUS_PEER_FAILED {
        format!(
            "RMA {op} to rank {}: {name}: the transport declared rank {} failed ({what})",
            r.rank, r.rank
        )
    } else {
        format!(
            "RMA {op} to rank {} (key {}, offset {}): {name} ({what})",
            r.rank, r.key, r.offset
        )
    })
}

/// Frame one message.
pub fn encode(msg: &serde_json::Value) -> Vec<u8> {
    let body = msg.to_string().into_bytes();
    let mut v = Vec::with_capacity(4 + body.len());
    v.extend_from_slice(&(body.len() as u32).to_le_bytes());
    v.extend_from_slice(&body);
    v
}

/// What the front of `buf` holds: a whole message (and its framed
/// length), not yet all of one, or garbage.
#[derive(Debug, PartialEq)]
pub enum Decoded {
    Message(serde_json::Value, usize),
    Partial,
    Garbled(String),
}

pub fn decode(buf: &[u8]) -> Decoded {
    let Some(head) = buf.get(..4) else {
        return Decoded::Partial;
    };
    let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if n > MAX_MESSAGE {
        return Decoded::Garbled(format!(
            "message length {n} is above the protocol's {MAX_MESSAGE}"
        ));
    }
    let Some(body) = buf.get(4..4 + n) else {
        return Decoded::Partial;
    };
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) if v.is_object() => Decoded::Message(v, 4 + n),
        Ok(_) => Decoded::Garbled("a message is one JSON object".into()),
        Err(e) => Decoded::Garbled(format!("not JSON: {e}")),
    }
}

/// Blocking send and receive, for clients.
pub fn send(w: &mut impl Write, msg: &serde_json::Value) -> Result<()> {
    w.write_all(&encode(msg)).map_err(ctl)
}

pub fn recv(r: &mut impl Read) -> Result<serde_json::Value> {
    let mut head = [0u8; 4];
    r.read_exact(&mut head).map_err(ctl)?;
    let n = u32::from_le_bytes(head) as usize;
    if n > MAX_MESSAGE {
        return Err(Error::Host(format!(
            "control socket: message length {n} is above {MAX_MESSAGE}"
        )));
    }
    let mut body = vec![0u8; n];
    r.read_exact(&mut body).map_err(ctl)?;
    serde_json::from_slice(&body)
        .map_err(|e| Error::Host(format!("control socket: a response that is not JSON: {e}")))
}

fn ctl(e: std::io::Error) -> Error {
    Error::Io(format!("control socket: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_round_trip_and_garbage_is_named() {
        let m = json!({"op": "hello"});
        let mut b = encode(&m);
        // Literal framing: the length, little-endian, then the JSON text.
        assert_eq!(b, b"\x0e\0\0\0{\"op\":\"hello\"}");
        assert_eq!(decode(&b[..3]), Decoded::Partial);
        assert_eq!(decode(&b[..10]), Decoded::Partial);
        b.extend_from_slice(&[9, 9]);
        assert_eq!(decode(&b), Decoded::Message(m, 18));
        assert!(
            matches!(decode(&[0xff, 0xff, 0xff, 0x7f]), Decoded::Garbled(e) if e.contains("above"))
        );
        assert!(
            matches!(decode(&[3, 0, 0, 0, b'{', b'x', b'}']), Decoded::Garbled(e) if e.contains("not JSON"))
        );
        assert!(matches!(decode(&[1, 0, 0, 0, b'7']), Decoded::Garbled(e) if e.contains("object")));
    }
}
