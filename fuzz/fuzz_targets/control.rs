//! Arbitrary bytes as what a host program sends on a NIC process's control
//! socket (docs/host-interface.md), then it closes its side: the server
//! (over a simulated NIC with the notify handlers installed) answers with
//! well-formed frames only, each a JSON object with a boolean `ok`, and
//! never panics or hangs.
#![no_main]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use softspin_host::hostif::server::{ControlServer, EctxEntry, NodeInfo};
use softspin_host::hostif::{decode, Decoded, MAX_MESSAGE};
use softspin_host::{EctxOptions, Nic};

fuzz_target!(|data: &[u8]| {
    // What one write fits in the socket's buffer without a reader.
    let data = &data[..data.len().min(MAX_MESSAGE)];
    let path = std::env::temp_dir().join(format!("softspin-fuzz-control-{}.sock", std::process::id()));
    let mut nic = Nic::open("pspin").expect("pspin profile");
    let image = nic
        .image_from_bytes(softspin_fuzz::HANDLERS[2].1)
        .expect("notify image");
    let w = nic.host_window(4096).expect("host window");
    let e = nic
        .install(
            &image,
            EctxOptions {
                name: Some("notify".into()),
                ph: Some("ask_ph".into()),
                host_window: Some(w),
                ..Default::default()
            },
        )
        .expect("install");
    let info = NodeInfo {
        ectxs: vec![EctxEntry {
            ectx: e,
            name: "notify".into(),
            host: Some(w),
            shm_offset: None,
            rma: false,
        }],
        ..Default::default()
    };
    let mut srv = ControlServer::bind(&path, info).expect("bind");
    let mut c = UnixStream::connect(&path).expect("connect");
    c.write_all(data).expect("write");
    c.shutdown(std::net::Shutdown::Write).expect("shutdown");
    for _ in 0..3 {
        srv.serve(&mut nic, Instant::now());
    }
    c.set_nonblocking(true).expect("nonblocking");
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    let mut at = 0;
    while at < got.len() {
        match decode(&got[at..]) {
            Decoded::Message(v, n) => {
                assert!(v["ok"].is_boolean(), "{v}");
                at += n;
            }
            other => panic!("the server sent a bad frame: {other:?}"),
        }
    }
});
