//! The RMA header (docs/rma.md) against byte strings written out by hand
//! from the field table, not produced by the code under test; a round trip
//! over generated headers; and no panic on any bytes.

use proptest::prelude::*;
use softspin_wire::rma::{self, window, Kind, Op, Packet, Repr, Status};
use softspin_wire::Error;

/// Write request, ranks 2 -> 5, seq 0x10, ack 0x0f, txn 0xdeadbeef, key 1,
/// offset 0x1000, 4 bytes "abcd".
const WRITE_REQ: [u8; 44] = [
    0x01, 0x00, 0x01, 0x00, // version 1, DATA, write, status 0
    0x00, 0x02, 0x00, 0x05, // src rank 2, dst rank 5
    0x00, 0x00, 0x00, 0x10, // seq
    0x00, 0x00, 0x00, 0x0f, // ack
    0xde, 0xad, 0xbe, 0xef, // txn
    0x00, 0x00, 0x00, 0x01, // key
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, // offset
    0x00, 0x00, 0x00, 0x04, // length
    0x00, 0x00, 0x00, 0x00, // reserved
    b'a', b'b', b'c', b'd',
];

/// Compare-and-swap 64 request: key 7, offset 8, compare 0x0102030405060708,
/// swap all ones.
const CAS64_REQ: [u8; 56] = [
    0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, //
    0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, //
    0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, //
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
];

/// Fetch-and-add 32 response, ranks 5 -> 2, txn 3, old value 0x11223344.
const FADD32_RESP: [u8; 44] = [
    0x01, 0x00, 0x83, 0x00, 0x00, 0x05, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, //
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x40, //
    0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, //
    0x11, 0x22, 0x33, 0x44,
];

/// Read response "out of window" to a 5000-byte read (the length echoed, no data).
const READ_RESP_OOW: [u8; 40] = [
    0x01, 0x00, 0x82, 0x02, 0x00, 0x05, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, //
    0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xf0, //
    0x00, 0x00, 0x13, 0x88, 0x00, 0x00, 0x00, 0x00,
];

/// NACK from rank 1 to rank 0: resend from 42.
const NACK: [u8; 40] = [
    0x01, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x2a, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

fn parse(b: &[u8]) -> Result<Repr, Error> {
    Repr::parse(&Packet::new_checked(b)?)
}

fn emit(r: &Repr, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    let mut p = Packet::new_unchecked(&mut b[..]);
    r.emit(&mut p).unwrap();
    if r.operand_count() == 0 {
        p.payload_mut().copy_from_slice(payload);
    }
    b
}

#[test]
fn constants() {
    assert_eq!(rma::HEADER_LEN, 40);
    assert_eq!(rma::UDP_PORT, 21328);
    assert_eq!(rma::MAX_PAYLOAD, 1500 - 20 - 8 - 40);
}

#[test]
fn write_request() {
    let r = parse(&WRITE_REQ).unwrap();
    let want = Repr {
        src_rank: 2,
        dst_rank: 5,
        seq: 0x10,
        ack: 0x0f,
        ..Repr::data(Op::Write, false, 0xdead_beef, 1, 0x1000, 4)
    };
    assert_eq!(r, want);
    assert_eq!(
        Packet::new_checked(&WRITE_REQ[..]).unwrap().payload(),
        b"abcd"
    );
    assert_eq!(emit(&want, b"abcd"), WRITE_REQ);
}

#[test]
fn cas64_request() {
    let want = Repr {
        dst_rank: 1,
        operands: [0x0102_0304_0506_0708, u64::MAX],
        ..Repr::data(Op::CompareSwap64, false, 9, 7, 8, 8)
    };
    assert_eq!(parse(&CAS64_REQ).unwrap(), want);
    assert_eq!(emit(&want, &[]), CAS64_REQ);
}

#[test]
fn fadd32_response() {
    let want = Repr {
        src_rank: 5,
        dst_rank: 2,
        operands: [0x1122_3344, 0],
        ..Repr::data(Op::FetchAdd32, true, 3, 1, 0x40, 4)
    };
    assert_eq!(parse(&FADD32_RESP).unwrap(), want);
    assert_eq!(emit(&want, &[]), FADD32_RESP);
}

#[test]
fn error_response_has_no_data() {
    let want = Repr {
        src_rank: 5,
        dst_rank: 2,
        status: Status::OutOfWindow,
        ..Repr::data(Op::Read, true, 4, 1, 0xffff_ffff_ffff_fff0, 5000)
    };
    assert_eq!(parse(&READ_RESP_OOW).unwrap(), want);
    assert_eq!(emit(&want, &[]), READ_RESP_OOW);
}

#[test]
fn transport_control() {
    let want = Repr {
        kind: Kind::Nack,
        op: Op::None,
        src_rank: 1,
        ack: 42,
        ..Repr::data(Op::None, false, 0, 0, 0, 0)
    };
    assert_eq!(parse(&NACK).unwrap(), want);
    assert_eq!(emit(&want, &[]), NACK);
}

/// `b` with byte `at` replaced.
fn with(b: &[u8], at: usize, v: u8) -> Vec<u8> {
    let mut b = b.to_vec();
    b[at] = v;
    b
}

fn malformed_field(r: Result<Repr, Error>) -> &'static str {
    match r {
        Err(Error::Malformed { field, .. }) => field,
        other => panic!("not malformed: {other:?}"),
    }
}

#[test]
fn bad_packets_are_typed_errors() {
    assert_eq!(
        parse(&WRITE_REQ[..39]),
        Err(Error::Truncated {
            layer: "RMA",
            len: 39,
            need: 40
        })
    );
    assert_eq!(
        parse(&with(&WRITE_REQ, 0, 2)),
        Err(Error::Unsupported {
            layer: "RMA",
            field: "version",
            value: 2
        })
    );
    assert_eq!(malformed_field(parse(&with(&WRITE_REQ, 1, 4))), "kind");
    assert_eq!(malformed_field(parse(&with(&WRITE_REQ, 2, 7))), "op");
    assert_eq!(malformed_field(parse(&with(&WRITE_REQ, 2, 0))), "op"); // DATA without an op
    assert_eq!(malformed_field(parse(&with(&WRITE_REQ, 3, 9))), "status");
    assert_eq!(malformed_field(parse(&with(&WRITE_REQ, 3, 1))), "status"); // a request with a status
                                                                           // A forged length: one more or one less than the payload.
    assert_eq!(malformed_field(parse(&with(&WRITE_REQ, 35, 5))), "length");
    assert_eq!(malformed_field(parse(&WRITE_REQ[..43])), "length");
    // A read asking for more than a response can carry.
    let mut read = WRITE_REQ[..40].to_vec();
    read[2] = 2;
    read[32..36].copy_from_slice(&(rma::MAX_PAYLOAD as u32).to_be_bytes());
    assert!(parse(&read).is_ok());
    read[32..36].copy_from_slice(&(rma::MAX_PAYLOAD as u32 + 1).to_be_bytes());
    assert_eq!(malformed_field(parse(&read)), "length");
    // An atomic whose length is not its width; its operands cut short.
    assert_eq!(malformed_field(parse(&with(&CAS64_REQ, 35, 4))), "length");
    assert_eq!(malformed_field(parse(&CAS64_REQ[..48])), "length");
    // Control packets carry no op and no response bit.
    assert_eq!(malformed_field(parse(&with(&NACK, 2, 1))), "op");
    assert_eq!(malformed_field(parse(&with(&NACK, 2, 0x80))), "op");
}

#[test]
fn emit_refuses_inconsistent_headers() {
    let mut b = [0u8; 64];
    let mut p = Packet::new_unchecked(&mut b[..]);
    let mut r = Repr::data(Op::FetchAdd32, false, 0, 1, 0, 4);
    r.operands[0] = 1 << 32;
    assert!(r.emit(&mut p).is_err());
    let r = Repr {
        status: Status::BadKey,
        ..Repr::data(Op::Write, false, 0, 1, 0, 0)
    };
    assert!(r.emit(&mut p).is_err());
    let r = Repr::data(Op::Write, false, 0, 1, 0, 100);
    assert!(matches!(r.emit(&mut p), Err(Error::Truncated { .. })));
}

#[test]
fn window_entry_layout() {
    let w = window::Window {
        key: 1,
        perms: window::PERM_ALL,
        base: 0x100,
        size: 0x2000,
    };
    let b: [u8; 24] = [
        1, 0, 0, 0, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(w.to_bytes(), b);
    assert_eq!(window::Window::from_bytes(&b), w);
    assert_eq!(window::Window::KEY_OFFSET, 0);
}

fn any_repr() -> impl Strategy<Value = Repr> {
    let status = prop::sample::select(Status::ALL.to_vec());
    let op = prop::sample::select(Op::ALL[1..].to_vec());
    let kind = prop::sample::select(Kind::ALL[1..].to_vec());
    (
        any::<bool>(),
        kind,
        op,
        any::<bool>(),
        status,
        any::<(u16, u16, u32, u32, u32, u32, u64)>(),
        0..=rma::MAX_PAYLOAD as u32,
        any::<[u64; 2]>(),
    )
        .prop_map(|(data, kind, op, response, status, f, len, ops)| {
            let (src_rank, dst_rank, seq, ack, txn, key, offset) = f;
            let mut r = Repr {
                kind: if data { Kind::Data } else { kind },
                op: if data { op } else { Op::None },
                response: data && response,
                status: if data && response { status } else { Status::Ok },
                src_rank,
                dst_rank,
                seq,
                ack,
                txn,
                key,
                offset,
                length: len,
                operands: [0; 2],
            };
            if let Some(w) = r.op.width() {
                if !r.response || r.status == Status::Ok {
                    r.length = w as u32;
                }
                let mask = if w == 4 {
                    u64::from(u32::MAX)
                } else {
                    u64::MAX
                };
                let n = r.operand_count();
                for (o, v) in r.operands[..n].iter_mut().zip(ops) {
                    *o = v & mask;
                }
            }
            r
        })
}

proptest! {
    #[test]
    fn round_trip(r in any_repr(), fill in any::<u8>()) {
        let data = vec![fill; r.payload_len()];
        let b = emit(&r, &data);
        prop_assert_eq!(b.len(), r.buffer_len());
        prop_assert_eq!(parse(&b), Ok(r));
        if r.operand_count() == 0 {
            let p = Packet::new_checked(&b[..]).unwrap();
            prop_assert_eq!(p.payload(), &data[..]);
        }
    }

    #[test]
    fn any_bytes_parse_without_panic(b in prop::collection::vec(any::<u8>(), 0..120)) {
        if let Ok(r) = parse(&b) {
            // Whatever parses re-emits to the same header.
            let p = Packet::new_checked(&b[..]).unwrap();
            let again = emit(&r, if r.operand_count() == 0 { p.payload() } else { &[] });
            prop_assert_eq!(&again[..36], &b[..36]);
            prop_assert_eq!(&again[40..], &b[40..]);
        }
    }
}
