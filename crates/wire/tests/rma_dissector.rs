//! tools/wireshark/rma.lua under tshark, on a capture built here with
//! softspin_wire::rma, so the dissector and the Rust view must agree on the
//! port, the field layout and the names. Skips with a message when tshark
//! is missing (scripts/setup.sh installs it).

use std::process::Command;
use std::time::Duration;

use softspin_testkit::frame::Frame;
use softspin_testkit::{pcap, root, scratch, skip};
use softspin_wire::rma::{self, Kind, Op, Packet, Repr, Status};

fn frame(dport: u16, udp_payload: &[u8]) -> Vec<u8> {
    Frame {
        dport,
        ident: 1,
        ..Frame::default()
    }
    .udp(udp_payload)
}

fn rma_frame(r: &Repr, data: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    let mut p = Packet::new_unchecked(&mut b[..]);
    r.emit(&mut p).unwrap();
    if r.operand_count() == 0 {
        p.payload_mut().copy_from_slice(data);
    }
    frame(rma::UDP_PORT, &b)
}

#[test]
fn tshark_shows_rma_fields() {
    if Command::new("tshark").arg("--version").output().is_err() {
        skip("RMA dissector test: tshark not installed (scripts/setup.sh installs it)");
        return;
    }
    let write = Repr {
        src_rank: 2,
        dst_rank: 5,
        seq: 16,
        ack: 15,
        ..Repr::data(Op::Write, false, 7, 1, 4096, 4)
    };
    let cas = Repr {
        operands: [0x0102_0304_0506_0708, u64::MAX],
        ..Repr::data(Op::CompareSwap64, false, 9, 3, 8, 8)
    };
    let fadd = Repr {
        src_rank: 5,
        dst_rank: 2,
        operands: [0x1122_3344, 0],
        ..Repr::data(Op::FetchAdd32, true, 3, 1, 64, 4)
    };
    let oow = Repr {
        status: Status::OutOfWindow,
        ..Repr::data(Op::Read, true, 4, 1, u64::MAX - 15, 5000)
    };
    let nack = Repr {
        kind: Kind::Nack,
        src_rank: 1,
        ack: 42,
        ..Repr::data(Op::None, false, 0, 0, 0, 0)
    };
    let cases: [(Repr, &[u8], &str, &str); 5] = [
        (
            write,
            b"abcd",
            "",
            "RMA write req 2->5 txn 7 key 1 off 4096 len 4",
        ),
        (
            cas,
            &[],
            "0x0102030405060708,0xffffffffffffffff",
            "RMA cas64 req 0->0 txn 9 key 3 off 8 len 8",
        ),
        (
            fadd,
            &[],
            "0x0000000011223344",
            "RMA fadd32 resp 5->2 txn 3 key 1 off 64 len 4 [ok]",
        ),
        (
            oow,
            &[],
            "",
            "RMA read resp 0->0 txn 4 key 1 off 18446744073709551600 len 5000 [out of window]",
        ),
        (nack, &[], "", "RMA NACK 1->0 seq 0 ack 42"),
    ];
    let mut frames: Vec<Vec<u8>> = cases.iter().map(|c| rma_frame(&c.0, c.1)).collect();
    // Not RMA: another port; and a header cut short.
    let header = rma_frame(&write, b"abcd")[42..].to_vec();
    frames.push(frame(rma::UDP_PORT + 1, &header));
    frames.push(frame(rma::UDP_PORT, &header[..20]));
    let dir = scratch("rma_dissector");
    let cap = dir.join("rma.pcap");
    pcap::write(&cap, &frames, Duration::from_micros(1));

    let lua = root().join("tools/wireshark/rma.lua");
    let fields = [
        "rma.version",
        "rma.kind",
        "rma.op.code",
        "rma.op.response",
        "rma.status",
        "rma.src_rank",
        "rma.dst_rank",
        "rma.seq",
        "rma.ack",
        "rma.txn",
        "rma.key",
        "rma.offset",
        "rma.length",
        "rma.operand",
        "rma.payload_len",
        "_ws.col.Info",
    ];
    let mut cmd = Command::new("tshark");
    cmd.arg("-X").arg(format!("lua_script:{}", lua.display()));
    cmd.arg("-r")
        .arg(&cap)
        .args(["-T", "fields", "-E", "separator=|"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(rows.len(), frames.len(), "{out}");
    for (row, (r, data, operands, info)) in rows.iter().zip(cases.iter()) {
        let payload = if r.operand_count() == 0 {
            data.len()
        } else {
            r.payload_len()
        };
        let want = [
            rma::VERSION.to_string(),
            (r.kind as u8).to_string(),
            (r.op as u8).to_string(),
            (if r.response { "1" } else { "0" }).to_string(),
            (r.status as u8).to_string(),
            r.src_rank.to_string(),
            r.dst_rank.to_string(),
            r.seq.to_string(),
            r.ack.to_string(),
            r.txn.to_string(),
            r.key.to_string(),
            r.offset.to_string(),
            r.length.to_string(),
            operands.to_string(),
            payload.to_string(),
            info.to_string(),
        ];
        assert_eq!(
            row,
            &want.iter().map(String::as_str).collect::<Vec<_>>(),
            "{out}"
        );
    }
    assert_eq!(
        rows[5][1],
        "",
        "port {} decoded as RMA: {out}",
        rma::UDP_PORT + 1
    );
    assert_eq!(rows[6][15], "RMA (truncated)", "{out}");
}
