//! sdk/include/spin_rma.h against crates/wire/src/rma.rs: the layout is
//! defined in Rust; a C program built with the host compiler includes the
//! header alone, reads a header and a window entry emitted here through the
//! header's struct and accessors, and prints what it sees and its constants.
//! Any field, offset, size or constant that differs fails the test. The
//! same for the initiator's table in sdk/include/spin_rma_ops.h.

use std::io::Write;
use std::process::{Command, Stdio};

use softspin_testkit::{root, scratch, skip};
use softspin_wire::rma::{self, txn, window, Kind, Op, Packet, Repr, Status};

const PROGRAM: &str = r#"
#include <spin_rma.h>
#include <spin_rma_ops.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    uint8_t b[RMA_HDR_LEN + 16];
    rma_window_t w;
    rma_txn_t t;
    if (fread(b, 1, sizeof b, stdin) != sizeof b || fread(&w, 1, sizeof w, stdin) != sizeof w ||
        fread(&t, 1, sizeof t, stdin) != sizeof t) return 1;
    const rma_hdr_t *h = (const rma_hdr_t *)b;
    printf("version %u\nkind %u\nop %u\nstatus %u\n", h->version, h->kind, h->op, h->status);
    printf("src_rank %u\ndst_rank %u\n", rma_get16(h->src_rank), rma_get16(h->dst_rank));
    printf("seq %u\nack %u\ntxn %u\nkey %u\n", rma_get32(h->seq), rma_get32(h->ack), rma_get32(h->txn), rma_get32(h->key));
    printf("offset %llu\nlength %u\n", (unsigned long long)rma_get64(h->offset), rma_get32(h->length));
    printf("operand0 %llu\noperand1 %llu\n", (unsigned long long)rma_get64(b + RMA_HDR_LEN),
           (unsigned long long)rma_getn(b + RMA_HDR_LEN + 8, 8));
    printf("w.key %u\nw.perms %u\nw.base %llu\nw.size %llu\n", w.key, w.perms, (unsigned long long)w.base,
           (unsigned long long)w.size);
    printf("RMA_UDP_PORT %u\nRMA_VERSION %u\nRMA_HDR_LEN %u\nRMA_MAX_PAYLOAD %u\nRMA_RESPONSE %u\n", RMA_UDP_PORT,
           RMA_VERSION, (unsigned)sizeof(rma_hdr_t), RMA_MAX_PAYLOAD, RMA_RESPONSE);
    printf("RMA_WINDOWS %u\nentry %u\n", RMA_WINDOWS, (unsigned)sizeof(rma_window_t));
    printf("perm %u %u %u %u\nkey_free %u\n", RMA_PERM_READ, RMA_PERM_WRITE, RMA_PERM_ATOMIC, RMA_PERM_ALL, RMA_KEY_FREE);
    printf("kinds %u %u %u %u\n", RMA_KIND_DATA, RMA_KIND_ACK, RMA_KIND_NACK, RMA_KIND_UNACK);
    printf("ops %u %u %u %u %u %u %u\n", RMA_OP_NONE, RMA_OP_WRITE, RMA_OP_READ, RMA_OP_FADD32, RMA_OP_FADD64,
           RMA_OP_CAS32, RMA_OP_CAS64);
    printf("status %u %u %u %u %u %u %u\n", RMA_STATUS_OK, RMA_STATUS_BAD_KEY, RMA_STATUS_OUT_OF_WINDOW,
           RMA_STATUS_PERMISSION, RMA_STATUS_MALFORMED, RMA_STATUS_UNALIGNED, RMA_STATUS_FAILED);
    printf("widths");
    for (unsigned op = 0; op <= RMA_OP_CAS64; op++) printf(" %u/%u/%u", rma_op_width(op), rma_op_operands(op), op ? rma_op_perm(op) : 0);
    printf("\n");
    printf("t %u %u %u %u %u %u %u %llu %llu %llu %llu %llu %u %u %u %u\n", t.state, t.txn, t.op, t.flags, t.rank,
           t.key, t.length, (unsigned long long)t.offset, (unsigned long long)t.local,
           (unsigned long long)t.operand[0], (unsigned long long)t.operand[1], (unsigned long long)t.value, t.packets,
           t.answered, t.remaining, t.status);
    printf("txns %u %u %u %u %u %u\n", RMA_TXNS, RMA_HOST_TXNS, (unsigned)sizeof(rma_txn_t),
           (unsigned)offsetof(rma_txn_t, state), RMA_TXN_MAX_PACKETS, RMA_TXN_MAX_LEN);
    printf("states %u %u %u %u flag %u peer_failed %u status_at %u\n", RMA_TXN_FREE, RMA_TXN_POSTED,
           RMA_TXN_IN_FLIGHT, RMA_TXN_DONE, RMA_TXN_NIC_SRC, RMA_STATUS_PEER_FAILED,
           (unsigned)offsetof(rma_txn_t, status));
    printf("txn 0x%x: %u %u\n", t.txn, RMA_TXN_INDEX(t.txn), RMA_TXN_GEN(t.txn));
    printf("doorbell %u %u %u\n", RMA_DOORBELL_ETHERTYPE, RMA_DOORBELL_MAGIC, RMA_DOORBELL_LEN);
    return 0;
}
"#;

fn list<T: Copy>(all: &[T], f: impl Fn(T) -> String) -> String {
    all.iter().map(|&x| f(x)).collect::<Vec<_>>().join(" ")
}

#[test]
fn c_header_matches_rust() {
    if Command::new("cc").arg("--version").output().is_err() {
        skip("spin_rma.h layout: no host C compiler (cc)");
        return;
    }
    let dir = scratch("rma_c_layout");
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, PROGRAM).unwrap();
    let include = root().join("sdk/include");
    let cc = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );

    // Every field a distinct value, wide enough to catch a swapped byte.
    let r = Repr {
        kind: Kind::Data,
        status: Status::Ok,
        src_rank: 0x0102,
        dst_rank: 0x0304,
        seq: 0x0506_0708,
        ack: 0x090a_0b0c,
        operands: [0x1112_1314_1516_1718, 0x2122_2324_2526_2728],
        ..Repr::data(
            Op::CompareSwap64,
            false,
            0x0d0e_0f10,
            0x1a1b_1c1d,
            0x3132_3334_3536_3738,
            8,
        )
    };
    let mut input = vec![0u8; r.buffer_len()];
    r.emit(&mut Packet::new_unchecked(&mut input[..])).unwrap();
    let w = window::Window {
        key: 0x4142_4344,
        perms: window::PERM_ALL,
        base: 0x5152_5354_5556_5758,
        size: 0x6162_6364_6566_6768,
    };
    input.extend_from_slice(&w.to_bytes());
    let t = txn::Entry {
        state: 0x0102_0304,
        txn: txn::wire_txn(0x0506, 0x0708),
        op: 0x090a,
        flags: 0x0b0c,
        rank: 0x1112_1314,
        key: 0x1516_1718,
        length: 0x191a_1b1c,
        offset: 0x2122_2324_2526_2728,
        local: 0x3132_3334_3536_3738,
        operands: [0x4142_4344_4546_4748, 0x5152_5354_5556_5758],
        value: 0x6162_6364_6566_6768,
        packets: 0x7172_7374,
        answered: 0x7576_7778,
        remaining: 0x797a_7b7c,
        status: 0x7d7e_7f70,
    };
    input.extend_from_slice(&t.to_bytes());

    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success());
    let got = String::from_utf8(out.stdout).unwrap();

    let widths = list(Op::ALL, |op| {
        format!(
            "{}/{}/{}",
            op.width().unwrap_or(0),
            op.operands(),
            op.permission()
        )
    });
    let want = format!(
        "version {}\nkind {}\nop {}\nstatus {}\nsrc_rank {}\ndst_rank {}\nseq {}\nack {}\ntxn {}\nkey {}\n\
         offset {}\nlength {}\noperand0 {}\noperand1 {}\n\
         w.key {}\nw.perms {}\nw.base {}\nw.size {}\n\
         RMA_UDP_PORT {}\nRMA_VERSION {}\nRMA_HDR_LEN {}\nRMA_MAX_PAYLOAD {}\nRMA_RESPONSE {}\n\
         RMA_WINDOWS {}\nentry {}\nperm {} {} {} {}\nkey_free {}\nkinds {}\nops {}\nstatus {}\nwidths {}\n\
         t {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}\n\
         txns {} {} {} {} {} {}\nstates {} {} {} {} flag {} peer_failed {} status_at {}\ntxn {:#x}: {} {}\ndoorbell {} {} {}\n",
        rma::VERSION,
        r.kind as u8,
        r.op as u8,
        r.status as u8,
        r.src_rank,
        r.dst_rank,
        r.seq,
        r.ack,
        r.txn,
        r.key,
        r.offset,
        r.length,
        r.operands[0],
        r.operands[1],
        w.key,
        w.perms,
        w.base,
        w.size,
        rma::UDP_PORT,
        rma::VERSION,
        rma::HEADER_LEN,
        rma::MAX_PAYLOAD,
        rma::RESPONSE,
        window::WINDOWS,
        window::ENTRY_LEN,
        window::PERM_READ,
        window::PERM_WRITE,
        window::PERM_ATOMIC,
        window::PERM_ALL,
        window::KEY_FREE,
        list(Kind::ALL, |k| (k as u8).to_string()),
        list(Op::ALL, |o| (o as u8).to_string()),
        list(Status::ALL, |s| (s as u8).to_string()),
        widths,
        t.state,
        t.txn,
        t.op,
        t.flags,
        t.rank,
        t.key,
        t.length,
        t.offset,
        t.local,
        t.operands[0],
        t.operands[1],
        t.value,
        t.packets,
        t.answered,
        t.remaining,
        t.status,
        txn::TXNS,
        txn::HOST_TXNS,
        txn::ENTRY_LEN,
        txn::Entry::STATE_OFFSET,
        txn::MAX_PACKETS,
        txn::MAX_LEN,
        txn::FREE,
        txn::POSTED,
        txn::IN_FLIGHT,
        txn::DONE,
        txn::FLAG_NIC_SRC,
        txn::STATUS_PEER_FAILED,
        txn::Entry::STATUS_OFFSET,
        t.txn,
        txn::index_of(t.txn),
        txn::gen_of(t.txn),
        txn::DOORBELL_ETHERTYPE,
        txn::DOORBELL_MAGIC,
        txn::DOORBELL_LEN,
    );
    // The doorbell frame carries its fields where the C side reads them.
    let d = txn::doorbell(0x0102_0304);
    assert_eq!(d[12..14], [0x88, 0xb5]);
    assert_eq!(d[14..18], *b"SSDB");
    assert_eq!(d[18..22], [4, 3, 2, 1]);
    assert_eq!(got, want);
}

/// Prints the segment constants spin_rma.h derives from RMA_MTU.
const MTU_PROGRAM: &str = r#"
#include <spin_rma.h>
#include <spin_rma_ops.h>
#include <stdio.h>
int main(void) {
    printf("%u %u %u\n", (unsigned)RMA_MTU, (unsigned)RMA_MAX_PAYLOAD, (unsigned)RMA_TXN_MAX_LEN);
    return 0;
}
"#;

/// spin_rma.h built for `mtu` (None: its default): its RMA_MTU, payload
/// and largest operation, or the compiler's complaint.
fn c_segment(dir: &std::path::Path, mtu: Option<usize>) -> Result<String, String> {
    let src = dir.join("mtu.c");
    let exe = dir.join(format!("mtu{}", mtu.unwrap_or(0)));
    std::fs::write(&src, MTU_PROGRAM).unwrap();
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root().join("sdk/include"));
    if let Some(m) = mtu {
        cc.arg(format!("-DRMA_MTU={m}"));
    }
    let out = cc.arg(&src).arg("-o").arg(&exe).output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let run = Command::new(&exe).output().unwrap();
    Ok(String::from_utf8(run.stdout).unwrap())
}

/// The segment follows the MTU a build gives (issue 29: netsim's 4 KiB
/// MTU), Ethernet's by default; C and Rust agree on both, and on the MTUs
/// a build may not give.
#[test]
fn c_segment_follows_the_mtu() {
    if Command::new("cc").arg("--version").output().is_err() {
        skip("spin_rma.h segments: no host C compiler (cc)");
        return;
    }
    let dir = scratch("rma_c_mtu");
    let want = |mtu: usize| {
        let p = rma::max_payload(mtu);
        format!("{mtu} {p} {}\n", txn::MAX_PACKETS * p)
    };
    assert_eq!(c_segment(&dir, None).unwrap(), want(rma::MTU));
    assert_eq!(rma::MAX_PAYLOAD, rma::max_payload(rma::MTU));
    assert_eq!(txn::MAX_LEN, txn::MAX_PACKETS * rma::MAX_PAYLOAD);
    for mtu in [*rma::MTU_RANGE.start(), 4096, *rma::MTU_RANGE.end()] {
        assert_eq!(
            c_segment(&dir, Some(mtu)).unwrap(),
            want(mtu),
            "RMA_MTU {mtu}"
        );
    }
    for mtu in [*rma::MTU_RANGE.start() - 1, *rma::MTU_RANGE.end() + 1] {
        let e = c_segment(&dir, Some(mtu)).expect_err("an MTU out of range builds");
        assert!(e.contains("RMA_MTU"), "RMA_MTU {mtu}: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
