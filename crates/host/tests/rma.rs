//! `Nic::export_window` and friends: the table entries they write (checked
//! against bytes written out by hand from docs/rma.md), requests served
//! through them by examples/rma_target, and every refusal.

use std::path::PathBuf;
use std::sync::OnceLock;

use softspin_host::sdk::{build, BuildOptions};
use softspin_host::{Ectx, EctxOptions, Error, Event, HostWindow, Nic};
use softspin_testkit::frame::Frame;
use softspin_testkit::scratch;
use softspin_wire::rma::{self, window, Op, Packet, Repr, Status};

const HOST: usize = 1 << 16;

/// examples/rma_target built for the fpspin profile, once.
fn image() -> PathBuf {
    static IMG: OnceLock<PathBuf> = OnceLock::new();
    IMG.get_or_init(|| {
        let cfg = Nic::open("fpspin").unwrap().config().clone();
        let src = softspin_testkit::root().join("examples/rma_target/handler.c");
        let out = scratch("rma_host").join("rma_target.elf");
        let mut o = BuildOptions::handler(&[&src], &out);
        o.define = cfg.sdk_defines();
        o.link_symbols = cfg.memory_map().link_symbols();
        build(&o).unwrap();
        out
    })
    .clone()
}

fn target() -> (Nic, Ectx, HostWindow) {
    let mut nic = Nic::open("fpspin").unwrap();
    let img = nic.load_image(image()).unwrap();
    let w = nic.host_window(HOST).unwrap();
    let e = nic
        .install(
            &img,
            EctxOptions {
                ph: Some("rma_target_ph".into()),
                host_window: Some(w),
                ..Default::default()
            },
        )
        .unwrap();
    nic.activate(e).unwrap();
    (nic, e, w)
}

/// Status of the response to `repr` + `data`, and the response's payload.
fn serve(nic: &mut Nic, repr: Repr, data: &[u8]) -> (Status, Vec<u8>) {
    let mut body = vec![0u8; repr.buffer_len()];
    let mut p = Packet::new_unchecked(&mut body[..]);
    repr.emit(&mut p).unwrap();
    p.payload_mut().copy_from_slice(data);
    let frame = Frame {
        dport: rma::UDP_PORT,
        ..Frame::default()
    }
    .udp(&body);
    nic.send_packet(frame, 0, true).unwrap();
    nic.run_until_idle().unwrap();
    let out: Vec<Vec<u8>> = nic
        .events()
        .into_iter()
        .filter_map(|x| match x {
            Event::Outbound(o) => Some(o.frame),
            _ => None,
        })
        .collect();
    assert_eq!(out.len(), 1);
    let p = Packet::new_checked(&out[0][42..]).unwrap();
    let r = Repr::parse(&p).unwrap();
    (r.status, p.payload().to_vec())
}

#[test]
fn exported_windows_are_served_and_withdrawn() {
    let (mut nic, e, w) = target();
    nic.export_window(e, 5, 0x1000, 0x100, window::PERM_READ | window::PERM_WRITE)
        .unwrap();
    // The entry, byte for byte: key, perms, base, size, little-endian.
    let table = nic
        .nic_read(
            nic.load_image(image())
                .unwrap()
                .symbol("rma_windows")
                .unwrap(),
            24,
        )
        .unwrap();
    assert_eq!(
        table,
        [5, 0, 0, 0, 3, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    );
    let put = Repr::data(Op::Write, false, 1, 5, 0xFC, 4);
    assert_eq!(serve(&mut nic, put, b"wxyz").0, Status::Ok);
    assert_eq!(nic.host_read(w.base + 0x10FC, 4).unwrap(), b"wxyz");
    let get = Repr::data(Op::Read, false, 2, 5, 0xFC, 4);
    assert_eq!(serve(&mut nic, get, &[]), (Status::Ok, b"wxyz".to_vec()));
    // One byte past the window.
    let past = Repr::data(Op::Write, false, 3, 5, 0xFD, 4);
    assert_eq!(serve(&mut nic, past, b"abcd").0, Status::OutOfWindow);
    // Re-exported read-only under the same key: the same entry, new rights.
    nic.export_window(e, 5, 0x1000, 0x100, window::PERM_READ)
        .unwrap();
    assert_eq!(serve(&mut nic, put, b"abcd").0, Status::Permission);
    let live: Vec<_> = nic
        .rma_windows(e)
        .unwrap()
        .into_iter()
        .filter(|w| w.key != 0)
        .collect();
    assert_eq!(live.len(), 1);
    nic.unexport_window(e, 5).unwrap();
    assert_eq!(serve(&mut nic, get, &[]).0, Status::BadKey);
    assert_eq!(nic.host_read(w.base + 0x10FC, 4).unwrap(), b"wxyz");
}

#[test]
fn bad_exports_are_refused() {
    let (mut nic, e, _) = target();
    let all = window::PERM_ALL;
    assert!(matches!(
        nic.export_window(e, 0, 0, 8, all),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        nic.export_window(e, 1, 0, 8, 0),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        nic.export_window(e, 1, 0, 8, 8),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        nic.export_window(e, 1, HOST as u64 - 7, 8, all),
        Err(Error::Limit(_))
    ));
    assert!(matches!(
        nic.export_window(e, 1, u64::MAX, 2, all),
        Err(Error::Limit(_))
    ));
    assert!(nic.export_window(e, 1, HOST as u64 - 8, 8, all).is_ok());
    for k in 2..=window::WINDOWS as u32 {
        nic.export_window(e, k, 0, 8, all).unwrap();
    }
    assert!(matches!(
        nic.export_window(e, 99, 0, 8, all),
        Err(Error::Limit(_))
    ));
    assert!(matches!(nic.unexport_window(e, 99), Err(Error::Invalid(_))));
    assert!(matches!(nic.unexport_window(e, 0), Err(Error::Invalid(_))));
    // An ECTX without a host window.
    let mut nic = Nic::open("fpspin").unwrap();
    let img = nic.load_image(image()).unwrap();
    let bare = nic
        .install(
            &img,
            EctxOptions {
                ph: Some("rma_target_ph".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert!(matches!(
        nic.export_window(bare, 1, 0, 8, all),
        Err(Error::Invalid(_))
    ));
}
