//! What the NIC hands the host (PsPIN's host interface, seed 001 §3.1):
//! packets handlers sent, host-direct writes, finished messages, handler
//! errors and notifications.
//!
//! Each type is defined once, generic over the ECTX id: the engine names an
//! ECTX by its slot ([`EctxId`], the default), the host API by its
//! never-reused handle, and converts with `map_ectx`. [`OUTPUTS`] lists the
//! kinds and their fields, generated from the definitions, so the C and
//! Python bindings can test that they carry every field.

use serde::Serialize;

use crate::engine::EctxId;
use crate::stats::ErrorCause;

/// An output kind and its fields, in declaration order (`ectx` first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputKind {
    pub name: &'static str,
    pub fields: &'static [&'static str],
}

/// A type of [`OUTPUTS`].
pub trait Output {
    const KIND: OutputKind;
}

/// Defines an output type (its first field the ECTX id, of type `E`), its
/// `map_ectx`, and its [`OutputKind`] from the same field list.
macro_rules! outputs {
    ($(
        $(#[$m:meta])*
        pub struct $name:ident {
            $(#[$em:meta])*
            pub ectx: E,
            $( $(#[$fm:meta])* pub $f:ident: $t:ty, )*
        }
    )*) => {$(
        $(#[$m])*
        pub struct $name<E = EctxId> {
            $(#[$em])*
            pub ectx: E,
            $( $(#[$fm])* pub $f: $t, )*
        }

        impl<E> $name<E> {
            /// The same output with its ECTX id mapped by `f`.
            pub fn map_ectx<F>(self, f: impl FnOnce(E) -> F) -> $name<F> {
                let $name { ectx, $($f),* } = self;
                $name { ectx: f(ectx), $($f),* }
            }
        }

        impl<E> Output for $name<E> {
            const KIND: OutputKind = OutputKind {
                name: stringify!($name),
                fields: &["ectx", $(stringify!($f)),*],
            };
        }
    )*};
}

outputs! {
    /// A packet a handler sent (spin_send_packet, or an RDMA put to `dest`).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct OutPacket {
        /// The sending ECTX.
        pub ectx: E,
        pub time_ps: u64,
        /// RDMA put destination (0 for spin_send_packet).
        pub dest: u32,
        pub frame: Vec<u8>,
    }

    /// An 8-byte host-direct write (spin_write_to_host).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct HostWrite {
        /// The writing ECTX.
        pub ectx: E,
        pub time_ps: u64,
        /// Host address.
        pub addr: u64,
        pub value: u64,
    }

    /// A message whose handlers all finished.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct MessageDone {
        pub ectx: E,
        pub time_ps: u64,
        pub msg_id: u32,
    }

    /// A handler that failed (fault, watchdog, abort, rejected command) or a
    /// message that did (timeout). Fields that do not apply to the error (a
    /// message timeout has no handler, pc or HPU) are `None`, serialised as
    /// null.
    #[derive(Clone, Debug, PartialEq, Eq, Serialize)]
    pub struct HandlerError {
        /// The ECTX (the engine's slot is reused after uninstall: the host
        /// API maps it to its own never-reused handle).
        #[serde(skip)]
        pub ectx: E,
        /// The ECTX's name (`ectx` in the report).
        #[serde(rename = "ectx")]
        pub ectx_name: String,
        /// The message (as the traffic source numbered it).
        pub msg_id: u32,
        /// The handler's symbol; `None` for a message-level error.
        pub handler: Option<String>,
        /// What went wrong, as a value to match on.
        #[serde(skip)]
        pub kind: ErrorCause,
        /// What went wrong, in words.
        pub cause: String,
        /// More about it: an abort's status and assert text, a rejected
        /// command's address and limit.
        pub detail: Option<String>,
        pub pc: Option<u32>,
        /// The faulting or offending address, where there is one.
        pub addr: Option<u64>,
        pub time_ns: u64,
        /// Global index of the HPU.
        pub hpu: Option<u32>,
    }

    /// A request a handler posted to the host (spin_notify); the host
    /// answers it with its `id`.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Notification {
        /// The posting ECTX.
        pub ectx: E,
        pub id: u32,
        /// Global index of the posting HPU.
        pub hpu: u32,
        /// When it became visible to the host.
        pub time_ps: u64,
        /// Inline payload (up to 64 bytes).
        pub data: Vec<u8>,
        /// A reference the handler passed (e.g. a host address it wrote to).
        pub host_ref: u64,
    }
}

/// Every output kind with its fields.
pub const OUTPUTS: [OutputKind; 5] = [
    <OutPacket as Output>::KIND,
    <HostWrite as Output>::KIND,
    <MessageDone as Output>::KIND,
    <HandlerError as Output>::KIND,
    <Notification as Output>::KIND,
];

impl<E> HandlerError<E> {
    /// One line: handler, cause, where, when.
    pub fn text(&self) -> String {
        let mut s = format!("`{}` message {}", self.ectx_name, self.msg_id);
        if let Some(h) = &self.handler {
            s += &format!(" {h}");
        }
        s += &format!(": {}", self.cause);
        if let Some(d) = &self.detail {
            s += &format!(" ({d})");
        }
        if let Some(pc) = self.pc {
            s += &format!(" at pc=0x{pc:08x}");
        }
        if let Some(a) = self.addr {
            s += &format!(" addr=0x{a:08x}");
        }
        s += &format!(" (t={} ns", self.time_ns);
        if let Some(h) = self.hpu {
            s += &format!(", hpu {h}");
        }
        s + ")"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lists_the_fields_in_order() {
        // Written out here, not derived: the macro must give these.
        assert_eq!(
            OUTPUTS[0],
            OutputKind {
                name: "OutPacket",
                fields: &["ectx", "time_ps", "dest", "frame"]
            }
        );
        assert_eq!(OUTPUTS[2].fields, ["ectx", "time_ps", "msg_id"]);
        let names: Vec<_> = OUTPUTS.iter().map(|k| k.name).collect();
        assert_eq!(
            names,
            [
                "OutPacket",
                "HostWrite",
                "MessageDone",
                "HandlerError",
                "Notification"
            ]
        );
        assert_eq!(OUTPUTS[3].fields.len(), 11);
    }

    #[test]
    fn map_ectx_keeps_every_other_field() {
        let p = OutPacket {
            ectx: 3usize,
            time_ps: 7,
            dest: 9,
            frame: vec![1, 2],
        };
        let q = p.map_ectx(|e| format!("slot {e}"));
        assert_eq!(
            q,
            OutPacket {
                ectx: "slot 3".to_string(),
                time_ps: 7,
                dest: 9,
                frame: vec![1, 2]
            }
        );
    }

    #[test]
    fn handler_error_serialises_the_name_as_ectx() {
        let e = HandlerError {
            ectx: 1usize,
            ectx_name: "a".into(),
            msg_id: 2,
            handler: None,
            kind: ErrorCause::MessageTimeout,
            cause: "message timeout".into(),
            detail: None,
            pc: None,
            addr: None,
            time_ns: 5,
            hpu: None,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"ectx":"a","msg_id":2,"handler":null,"cause":"message timeout","detail":null,"pc":null,"addr":null,"time_ns":5,"hpu":null}"#
        );
    }
}
