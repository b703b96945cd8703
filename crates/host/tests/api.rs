//! The Rust host API: the success path and every error path.

use std::path::PathBuf;

use softspin_host::sdk::{build, BuildOptions};
use softspin_host::{EctxOptions, Error, Event, Nic};

fn handler() -> PathBuf {
    softspin_testkit::handler_image("engine_test", &["crates/cli/tests/handlers/engine_test.c"])
}

fn opts(ph: &str) -> EctxOptions {
    EctxOptions {
        ph: Some(ph.into()),
        ..Default::default()
    }
}

#[test]
fn messages_reach_host_memory_and_events_report_them() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let w = nic.host_window(64 * 1024).unwrap();
    let e = nic
        .install(
            &img,
            EctxOptions {
                host_window: Some(w),
                ..opts("echo_ph")
            },
        )
        .unwrap();
    nic.activate(e).unwrap();
    let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
    nic.send_message(e, 42, &payload, 1024).unwrap();
    nic.run_until_idle().unwrap();
    let ev = nic.events();
    let echoed: Vec<u8> = ev
        .iter()
        .filter_map(|x| {
            if let Event::Outbound(o) = x {
                Some(o.frame[28..].to_vec())
            } else {
                None
            }
        })
        .flatten()
        .collect();
    assert_eq!(
        echoed, payload,
        "the echoed payloads, in order, are the message"
    );
    assert!(ev
        .iter()
        .any(|x| matches!(x, Event::MessageDone(d) if d.msg_id == 42)));
    assert!(nic.events().is_empty(), "events are delivered once");
    let packets = payload.len().div_ceil(1024 - 28) as u64;
    assert_eq!(nic.ectx_counts(e).unwrap(), (packets, 1));
    assert_eq!(nic.report().packets, packets);
}

#[test]
fn nic_memory_allocation_and_pointers() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let e = nic
        .install(
            &img,
            EctxOptions {
                handler_mem_size: Some(4096),
                ..opts("empty_ph")
            },
        )
        .unwrap();
    let a = nic.nic_alloc(e, 100, 16).unwrap();
    let b = nic.nic_alloc(e, 8, 8).unwrap();
    assert_eq!(a % 16, 0);
    assert!(b >= a + 100);
    nic.nic_write_ptr(b, a).unwrap();
    nic.nic_write(a, b"hello").unwrap();
    let p = u32::from_le_bytes(nic.nic_read(b, 4).unwrap().try_into().unwrap());
    assert_eq!(nic.nic_read(p, 5).unwrap(), b"hello");
    let err = nic.nic_alloc(e, 1 << 20, 4).unwrap_err();
    assert!(
        matches!(err, Error::NicMemory(_)) && err.to_string().contains("handler_mem_size"),
        "{err}"
    );
    assert!(nic.nic_alloc(e, 4, 3).is_err());
    assert!(nic.nic_read(0x0000_1000, 4).is_err());
}

#[test]
fn every_error_path_is_a_value() {
    assert!(matches!(Nic::open("nope"), Err(Error::Profile(_))));
    let mut nic = Nic::open("pspin").unwrap();
    // Bad images.
    assert!(matches!(
        nic.load_image("/no/such/file.elf"),
        Err(Error::Image(_))
    ));
    assert!(matches!(
        nic.image_from_bytes(b"not an elf"),
        Err(Error::Image(_))
    ));
    let img = nic.load_image(handler()).unwrap();
    assert!(img.symbol("no_such").is_err());
    // Unknown handler symbol.
    let err = nic.install(&img, opts("no_such_ph")).unwrap_err();
    assert!(
        matches!(err, Error::Ectx(_)) && err.to_string().contains("no_such_ph"),
        "{err}"
    );
    // Overlapping memory: the same image twice.
    let e = nic.install(&img, opts("empty_ph")).unwrap();
    let err = nic.install(&img, opts("empty_ph")).unwrap_err();
    assert!(err.to_string().contains("overlaps"), "{err}");
    // Double activate, then use after uninstall.
    nic.activate(e).unwrap();
    assert!(nic
        .activate(e)
        .unwrap_err()
        .to_string()
        .contains("already active"));
    assert!(
        nic.uninstall(e).is_err(),
        "an active ECTX cannot be uninstalled"
    );
    nic.deactivate(e).unwrap();
    nic.uninstall(e).unwrap();
    assert!(matches!(nic.activate(e), Err(Error::NoEctx(_))));
    assert!(matches!(nic.nic_alloc(e, 4, 4), Err(Error::NoEctx(_))));
    // Host memory outside any window, empty windows, bad answers.
    assert!(matches!(nic.host_read(0x1234, 4), Err(Error::Host(_))));
    assert!(nic.host_window(0).is_err());
    assert!(nic.respond(99, 0).is_err());
    assert!(nic.hpu_stdout(1000).is_err());
    // A packet too large for a buffer slot is refused at the call, and
    // nothing is queued.
    let e2 = nic.install(&img, opts("empty_ph")).unwrap();
    nic.activate(e2).unwrap();
    let e = nic.send_packet(vec![0; 5000], 1, true).unwrap_err();
    assert!(
        matches!(e, Error::Limit(_)) && e.to_string().contains("pkt_slot_size"),
        "{e}"
    );
    nic.run_until_idle().unwrap();
    assert_eq!(nic.report().packets_in, 0);
    // Bad build input.
    let err = build(&BuildOptions::handler(&["/no/such.c"], "/tmp/x.elf")).unwrap_err();
    assert!(err.to_string().contains("no such source file"), "{err}");
}

#[test]
fn lent_buffers_are_used_in_place_and_given_back() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let w = nic.lend(Box::new(vec![0u8; 4096])).unwrap();
    let e = nic
        .install(
            &img,
            EctxOptions {
                host_window: Some(w),
                ..opts("hostwrite_ph")
            },
        )
        .unwrap();
    nic.activate(e).unwrap();
    // hostwrite_ph writes (index + 1) * 3 at slot `index` (u32 after the header).
    for i in 0..4u32 {
        let mut frame = vec![0u8; 64];
        frame[0] = 0x54;
        frame[2..4].copy_from_slice(&64u16.to_le_bytes());
        frame[9] = 17;
        frame[28..32].copy_from_slice(&i.to_le_bytes());
        nic.send_packet(frame, i, true).unwrap();
    }
    nic.run_until_idle().unwrap();
    let mut buf = nic.unlend(w).unwrap();
    let bytes = buf.bytes();
    for i in 0..4usize {
        assert_eq!(
            u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap()),
            (i as u64 + 1) * 3
        );
    }
    assert!(nic.unlend(w).is_err());
}

#[test]
fn successive_messages_follow_each_other_at_line_rate() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let e = nic.install(&img, opts("echo_ph")).unwrap();
    nic.activate(e).unwrap();
    let payload = vec![7u8; 8 * (1024 - 28)];
    nic.send_message(e, 1, &payload, 1024).unwrap();
    nic.send_message(e, 2, &payload, 1024).unwrap();
    nic.run_until_idle().unwrap();
    let times: Vec<u64> = nic
        .events()
        .iter()
        .filter_map(|x| {
            if let Event::Outbound(o) = x {
                Some(o.time_ps)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(times.len(), 16);
    // 16 packets of 1024 B at 400 Gbit/s take 16 x 20.48 ns to arrive: the
    // second message starts after the first, not at the same instant.
    let last_arrival = 16 * 20_480;
    assert!(*times.iter().max().unwrap() >= last_arrival, "{times:?}");
}

#[test]
fn run_for_moves_an_idle_clock_and_a_reused_ectx_slot_starts_fresh() {
    let mut nic = Nic::open("pspin").unwrap();
    nic.run_for(1000).unwrap();
    assert_eq!(nic.now_ns(), 1000.0);
    assert!(matches!(nic.run_for(u64::MAX), Err(Error::Limit(_))));
    let img = nic.load_image(handler()).unwrap();
    let e = nic.install(&img, opts("echo_ph")).unwrap();
    nic.activate(e).unwrap();
    nic.send_message(e, 1, &[1, 2, 3], 64).unwrap();
    nic.run_until_idle().unwrap();
    assert_eq!(nic.ectx_counts(e).unwrap(), (1, 1));
    nic.deactivate(e).unwrap();
    nic.uninstall(e).unwrap();
    let e2 = nic.install(&img, opts("echo_ph")).unwrap();
    assert_eq!(nic.ectx_counts(e2).unwrap(), (0, 0));
}
