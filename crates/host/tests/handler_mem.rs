//! PsPIN's handler memory (seed 004 §3, its gdriver): one image installed
//! for several ECTXs, each with handler memory of its own, the image's data
//! shared; real overlaps still refused, naming both ECTXs.

use std::path::PathBuf;

use softspin_host::{EctxOptions, ErrorKind, Nic};

fn handler() -> PathBuf {
    softspin_testkit::handler_image("count", &["crates/host/tests/handlers/count.c"])
}

const HMEM: u32 = 0x1c10_0000;

fn opts(name: &str, addr: Option<u32>, port: u16) -> EctxOptions {
    EctxOptions {
        name: Some(name.into()),
        ph: Some("count_ph".into()),
        handler_mem_addr: addr,
        handler_mem_size: Some(4096),
        udp_dst_port: Some(port),
        ..Default::default()
    }
}

fn word(nic: &Nic, addr: u32) -> u32 {
    u32::from_le_bytes(nic.nic_read(addr, 4).unwrap().try_into().unwrap())
}

#[test]
fn one_image_two_ectxs_each_counts_its_own_packets() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let a = nic.install(&img, opts("a", Some(HMEM), 9001)).unwrap();
    let b = nic
        .install(&img, opts("b", Some(HMEM + 4096), 9002))
        .unwrap();
    nic.activate(a).unwrap();
    nic.activate(b).unwrap();
    // 5 packets for a, 3 for b (64-byte payload per packet).
    nic.send_message(a, 1, &[7; 5 * 64], 64 + 28).unwrap();
    nic.send_message(b, 2, &[7; 3 * 64], 64 + 28).unwrap();
    nic.run_until_idle().unwrap();
    assert_eq!(nic.ectx_handler_mem(a).unwrap(), (HMEM, 4096));
    assert_eq!(nic.ectx_handler_mem(b).unwrap(), (HMEM + 4096, 4096));
    assert_eq!((word(&nic, HMEM), word(&nic, HMEM + 4096)), (5, 3));
    let shared = img.symbol("all_packets").unwrap();
    assert_eq!(
        word(&nic, shared),
        8,
        "the image's data is one copy for both ECTXs"
    );
}

#[test]
fn real_overlaps_are_refused_naming_both_ectxs() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    nic.install(&img, opts("first", Some(HMEM), 9001)).unwrap();
    // Handler memory over another ECTX's handler memory.
    let e = nic
        .install(&img, opts("second", Some(HMEM + 64), 9002))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overlap, "{e}");
    let m = e.to_string();
    assert!(
        m.contains("`second`") && m.contains("`first`") && m.contains("handler memory"),
        "{m}"
    );
    // softspin's own layout (handler memory = the image's data) for the same
    // image is refused: its handler memory would be `first`'s shared data.
    let e = nic.install(&img, opts("fourth", None, 9004)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overlap, "{e}");
    assert!(
        e.to_string().contains("`fourth`") && e.to_string().contains("`first`"),
        "{e}"
    );
}

#[test]
fn handler_memory_over_its_own_image_data_is_refused() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let data = img.symbol("all_packets").unwrap() & !63;
    let e = nic
        .install(&img, opts("self", Some(data), 9001))
        .unwrap_err();
    assert!(e.to_string().contains("the image's own data"), "{e}");
}
