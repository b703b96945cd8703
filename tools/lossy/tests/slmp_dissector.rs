//! tools/wireshark/slmp.lua under tshark, on a capture built here with the
//! project's own SLMP view (crates/wire), so the dissector and the Rust code
//! must agree on port, flag bits and field layout. Skips with a message when
//! tshark is missing (scripts/setup.sh installs it).

use softspin_testkit::frame::Frame;
use softspin_testkit::{pcap, root, scratch, skip};
use softspin_wire::slmp::{self, Flags};
use std::process::Command;
use std::time::Duration;

/// Ethernet + IPv4 + UDP (checksum 0: none, legal in IPv4) around `udp_payload`.
fn frame(dport: u16, udp_payload: &[u8]) -> Vec<u8> {
    Frame {
        src_mac: [2, 0, 0, 0, 0, 2],
        dst_mac: [2, 0, 0, 0, 0, 1],
        src_ip: [10, 0, 0, 2],
        dst_ip: [10, 0, 0, 1],
        dport,
        ident: 1,
        ..Frame::default()
    }
    .udp(udp_payload)
}

fn slmp_frame(flags: Flags, msg_id: u32, offset: u32, payload_len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; slmp::HEADER_LEN + payload_len];
    let mut p = slmp::Packet::new_checked(&mut buf[..]).unwrap();
    p.set_flags(flags);
    p.set_msg_id(msg_id);
    p.set_offset(offset);
    for (i, b) in p.payload_mut().iter_mut().enumerate() {
        *b = i as u8;
    }
    frame(slmp::UDP_PORT, &buf)
}

#[test]
fn tshark_shows_slmp_fields() {
    if Command::new("tshark").arg("--version").output().is_err() {
        skip("SLMP dissector test: tshark not installed (scripts/setup.sh installs it)");
        return;
    }
    let syn = Flags::SYN;
    let eom_syn = Flags(Flags::EOM.bits() | Flags::SYN.bits());
    let ack = Flags(Flags::ACK.bits() | Flags::SYN.bits());
    // (flags, msg id, offset, payload length) and the expected info column.
    let cases: [(Flags, u32, u32, usize, &str); 5] = [
        (syn, 7, 0, 1462, "SLMP msg 7 off 0 [SYN] len 1462"),
        (Flags::NONE, 7, 1462, 1462, "SLMP msg 7 off 1462 len 1462"),
        (
            eom_syn,
            7,
            2924,
            100,
            "SLMP msg 7 off 2924 [SYN,EOM] len 100",
        ),
        (ack, 7, 2924, 0, "SLMP msg 7 off 2924 [SYN,ACK]"),
        (
            Flags::EOM,
            u32::MAX,
            0xdead_beef,
            1,
            "SLMP msg 4294967295 off 3735928559 [EOM] len 1",
        ),
    ];
    let mut frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|c| slmp_frame(c.0, c.1, c.2, c.3))
        .collect();
    // Not SLMP: another port; and a header cut short.
    frames.push(frame(
        slmp::UDP_PORT + 1,
        &[0x40, 0, 0, 0, 0, 7, 0, 0, 0, 0],
    ));
    frames.push(frame(slmp::UDP_PORT, &[0x40, 0, 0, 0, 0]));
    let dir = scratch("dissector");
    let cap = dir.join("slmp.pcap");
    pcap::write(&cap, &frames, Duration::from_micros(1));

    let lua = root().join("tools/wireshark/slmp.lua");
    let fields = [
        "slmp.flags",
        "slmp.flags.eom",
        "slmp.flags.syn",
        "slmp.flags.ack",
        "slmp.msg_id",
        "slmp.offset",
        "slmp.payload_len",
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
    for (row, (flags, id, off, len, info)) in rows.iter().zip(cases.iter()) {
        let bit = |b: bool| if b { "1" } else { "0" };
        let want = [
            format!("0x{:04x}", flags.bits()),
            bit(flags.eom()).into(),
            bit(flags.syn()).into(),
            bit(flags.ack()).into(),
            id.to_string(),
            off.to_string(),
            len.to_string(),
            info.to_string(),
        ];
        assert_eq!(
            row,
            &want.iter().map(String::as_str).collect::<Vec<_>>(),
            "{out}"
        );
    }
    assert_eq!(
        rows[5][4],
        "",
        "port {} decoded as SLMP: {out}",
        slmp::UDP_PORT + 1
    );
    assert_eq!(rows[6][7], "SLMP (truncated)", "{out}");
}
