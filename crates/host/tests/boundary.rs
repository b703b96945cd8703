//! The host API's boundary: sizes beyond their limits, forged host windows,
//! error kinds, ECTX handles in events, and the one pacing rule. Each of
//! these panicked, aborted, misattributed or drifted before.

use std::path::PathBuf;
use std::process::Command;

use softspin_host::sdk::{build, BuildOptions};
use softspin_host::{
    EctxOptions, ErrorCause, ErrorKind, Event, FaultKind, GenConfig, HostWindow, Nic, NicConfig,
    Pacing, Packet, Payload, MAX_HOST_MEMORY, MAX_HOST_WINDOW,
};

fn handler() -> PathBuf {
    softspin_testkit::handler_image("engine_test", &["crates/cli/tests/handlers/engine_test.c"])
}

fn opts(ph: &str) -> EctxOptions {
    EctxOptions {
        ph: Some(ph.into()),
        ..Default::default()
    }
}

/// The NIC still answers after a refused call.
fn usable(nic: &mut Nic) {
    let w = nic.host_window(64).unwrap();
    nic.host_write(w.base, b"ok").unwrap();
    assert_eq!(nic.host_read(w.base, 2).unwrap(), b"ok");
    nic.unlend(w).unwrap();
}

#[test]
fn absurd_host_sizes_are_errors_not_aborts() {
    let mut nic = Nic::open("pspin").unwrap();
    for size in [
        usize::MAX,
        1 << 40,
        1_000_000_000_000,
        (MAX_HOST_WINDOW + 1) as usize,
    ] {
        let e = nic.host_window(size).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        assert!(e.to_string().contains("MAX_HOST_WINDOW"), "{e}");
    }
    usable(&mut nic);
    // Reads of absurd lengths are refused before anything is allocated.
    let w = nic.host_window(4096).unwrap();
    for (addr, len) in [
        (0, 1usize << 40),
        (w.base, 1 << 40),
        (w.base, usize::MAX),
        (u64::MAX, 2),
    ] {
        let e = nic.host_read(addr, len).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::HostMemory, "{e}");
    }
    assert_eq!(nic.host_read(w.base + 4096, 0).unwrap(), b"");
    usable(&mut nic);
}

#[test]
fn the_nics_own_host_memory_is_capped() {
    let mut nic = Nic::open("pspin").unwrap();
    // Windows are allocated lazily zeroed, so asking for the cap is cheap;
    // one byte more over all windows is refused.
    let big = (MAX_HOST_MEMORY / 4) as usize;
    let ws: Vec<HostWindow> = (0..4).map(|_| nic.host_window(big).unwrap()).collect();
    let e = nic.host_window(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.to_string().contains("MAX_HOST_MEMORY"), "{e}");
    // Giving one back makes room again.
    nic.unlend(ws[0]).unwrap();
    nic.host_window(1).unwrap();
}

#[test]
fn nic_lengths_beyond_32_bits_are_errors_not_panics() {
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
    let a = nic.nic_alloc(e, 16, 16).unwrap();
    // (2^32 + 16) as u32 == 16: a truncating check would pass, then panic.
    for len in [(1usize << 32) + 16, usize::MAX] {
        let err = nic.nic_read(a, len).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NicMemory, "{err}");
    }
    assert_eq!(
        nic.nic_write(u32::MAX - 1, &[0; 4]).unwrap_err().kind(),
        ErrorKind::NicMemory
    );
    assert_eq!(
        nic.nic_alloc(e, usize::MAX, 8).unwrap_err().kind(),
        ErrorKind::NicMemory
    );
    assert_eq!(
        nic.nic_alloc(e, 8, 1 << 40).unwrap_err().kind(),
        ErrorKind::NicMemory
    );
    assert_eq!(nic.nic_read(a, 16).unwrap(), vec![0; 16]);
    let err = nic
        .install(
            &img,
            EctxOptions {
                handler_mem_size: Some(u32::MAX),
                ..opts("empty_ph")
            },
        )
        .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Limit | ErrorKind::NicMemory | ErrorKind::Overlap
        ),
        "{err}"
    );
    let err = nic.run_for(u64::MAX).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Limit, "{err}");
    let err = nic.send_message(e, 0, b"x", 1 << 40).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Limit, "{err}");
    assert!(err.to_string().contains("pkt_slot_size"), "{err}");
}

#[test]
fn run_for_stays_within_the_simulation_horizon() {
    // 2^63 ps = 9_223_372_036_854_775_808 ps: the last whole ns is
    // 9_223_372_036_854_775. One ns more still fits u64 ps (it passed before
    // the horizon check); 18_446_744_073_709_552 ns (issue 10) does not.
    let mut nic = Nic::open("pspin").unwrap();
    for ns in [9_223_372_036_854_776, 18_446_744_073_709_552, u64::MAX] {
        let err = nic.run_for(ns).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Limit, "{err}");
        assert!(
            err.to_string().contains("run_for") && err.to_string().contains("9223372036854775 ns"),
            "{err}"
        );
    }
    assert_eq!(nic.now_ps(), 0);
    nic.run_for(1_000).unwrap();
    assert_eq!(nic.now_ps(), 1_000_000);
    // Relative to now: the rest up to the horizon is allowed, one ns more is not.
    assert_eq!(
        nic.run_for(9_223_372_036_854_775 - 999).unwrap_err().kind(),
        ErrorKind::Limit
    );
    nic.run_for(9_223_372_036_854_775 - 1_000).unwrap();
    assert_eq!(nic.now_ps(), 9_223_372_036_854_775_000);
}

#[test]
fn install_takes_only_windows_the_nic_made_exactly_as_made() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let a = nic.lend(Box::new(vec![0u8; 4096])).unwrap();
    let b = nic.lend(Box::new(vec![0u8; 4096])).unwrap();
    // A's window enlarged to reach B's buffer, B's shifted, one made up.
    let forged = [
        HostWindow {
            base: a.base,
            size: b.base - a.base + b.size,
        },
        HostWindow {
            base: a.base,
            size: a.size + 1,
        },
        HostWindow {
            base: a.base,
            size: 1,
        },
        HostWindow {
            base: b.base + 8,
            size: 8,
        },
        HostWindow {
            base: 0x1000,
            size: 4096,
        },
    ];
    for w in forged {
        let e = nic
            .install(
                &img,
                EctxOptions {
                    host_window: Some(w),
                    ..opts("hostwrite_ph")
                },
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::HostMemory, "{w:?}: {e}");
    }
    nic.install(
        &img,
        EctxOptions {
            host_window: Some(a),
            ..opts("hostwrite_ph")
        },
    )
    .unwrap();
    // A window given back is no longer accepted.
    nic.unlend(b).unwrap();
    let e = nic.install(
        &img,
        EctxOptions {
            host_window: Some(b),
            name: Some("b".into()),
            ..opts("empty_ph")
        },
    );
    assert_eq!(e.unwrap_err().kind(), ErrorKind::HostMemory);
}

#[test]
fn every_error_has_a_kind() {
    let mut seen = std::collections::BTreeSet::new();
    let mut see = |e: softspin_host::Error| seen.insert(format!("{:?}", e.kind()));
    see(Nic::open("nope").unwrap_err());
    let mut nic = Nic::open("pspin").unwrap();
    see(nic.load_image("/no/such/file.elf").unwrap_err());
    see(nic.image_from_bytes(b"not an elf").unwrap_err());
    let img = nic.load_image(handler()).unwrap();
    see(img.symbol("no_such").unwrap_err());
    see(nic.install(&img, opts("no_such_ph")).unwrap_err());
    see(nic.install(&img, EctxOptions::default()).unwrap_err());
    let e = nic.install(&img, opts("empty_ph")).unwrap();
    see(nic
        .install(
            &img,
            EctxOptions {
                name: Some("twice".into()),
                ..opts("empty_ph")
            },
        )
        .unwrap_err());
    nic.activate(e).unwrap();
    see(nic.activate(e).unwrap_err());
    see(nic.nic_read(0x10, 4).unwrap_err());
    see(nic.host_read(0x10, 4).unwrap_err());
    see(nic.host_window(usize::MAX).unwrap_err());
    see(nic.hpu_stdout(1000).unwrap_err());
    see(nic
        .feed_generator(GenConfig {
            size: 1 << 20,
            ..GenConfig::default()
        })
        .unwrap_err());
    see(build(&BuildOptions::handler(&["/no/such.c"], "/tmp/x.elf")).unwrap_err());
    // Refused at the call (Limit); a generator's packet too large for a
    // slot surfaces from the run (Sim).
    see(nic.send_packet(vec![0; 5000], 1, true).unwrap_err());
    nic.feed_generator(GenConfig {
        size: 5000,
        ..GenConfig::default()
    })
    .unwrap();
    see(nic.run_until_idle().unwrap_err());
    nic.deactivate(e).unwrap();
    nic.uninstall(e).unwrap();
    see(nic.activate(e).unwrap_err());
    // Net: the live NIC's interface, or (built without it) a bad ruleset.
    #[cfg(feature = "live")]
    see(Nic::attach(
        "no-such-if0",
        softspin_host::AttachOptions {
            mode: softspin_host::Mode::Socket,
            ..Default::default()
        },
    )
    .unwrap_err());
    #[cfg(not(feature = "live"))]
    see(softspin_host::Ruleset::from_spec("udp:no-port")
        .unwrap_err()
        .into());
    let want = [
        ErrorKind::Config,
        ErrorKind::Io,
        ErrorKind::Image,
        ErrorKind::Symbol,
        ErrorKind::Ectx,
        ErrorKind::Overlap,
        ErrorKind::State,
        ErrorKind::NicMemory,
        ErrorKind::HostMemory,
        ErrorKind::Limit,
        ErrorKind::InvalidArgument,
        ErrorKind::Traffic,
        ErrorKind::Build,
        ErrorKind::Sim,
        ErrorKind::NoEctx,
        ErrorKind::Net,
    ];
    let want: std::collections::BTreeSet<String> = want.iter().map(|k| format!("{k:?}")).collect();
    assert_eq!(seen, want);
    assert_eq!(
        want.len(),
        ErrorKind::ALL.len(),
        "every kind is triggered here"
    );
}

#[test]
fn events_name_the_users_ectx_even_when_its_slot_is_reused() {
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let a = nic
        .install(
            &img,
            EctxOptions {
                name: Some("a".into()),
                ..opts("echo_ph")
            },
        )
        .unwrap();
    nic.activate(a).unwrap();
    nic.send_message(a, 1, &[1, 2, 3], 64).unwrap();
    nic.run_until_idle().unwrap();
    nic.deactivate(a).unwrap();
    nic.uninstall(a).unwrap();
    // B takes A's engine slot before A's events are read.
    let b = nic
        .install(
            &img,
            EctxOptions {
                name: Some("b".into()),
                ..opts("fault_ph")
            },
        )
        .unwrap();
    assert_ne!(a, b);
    nic.activate(b).unwrap();
    // Packet 1 of fault_ph stores to 0x40: a store access fault.
    let mut frame = nic.frame_for(b, &1u32.to_le_bytes()).unwrap();
    frame.resize(64, 0);
    nic.send_packets(
        [Packet {
            frame,
            msg_id: 7,
            eom: true,
        }],
        Pacing::Burst,
    )
    .unwrap();
    nic.run_until_idle().unwrap();
    let ev = nic.events();
    let owner = |x: &Event| match x {
        Event::Outbound(o) => Some(o.ectx),
        Event::HostWrite(w) => Some(w.ectx),
        Event::MessageDone(d) => Some(d.ectx),
        Event::HandlerError(h) => Some(h.ectx),
        Event::ErrorsDropped { .. } => None,
    };
    let of_a: Vec<_> = ev
        .iter()
        .filter(|x| !matches!(x, Event::HandlerError(_)) && owner(x) == Some(a))
        .collect();
    assert_eq!(
        of_a.len(),
        2,
        "A's echo and message completion stay A's: {ev:?}"
    );
    let errs: Vec<_> = ev
        .iter()
        .filter_map(|x| {
            if let Event::HandlerError(h) = x {
                Some(h)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(errs.len(), 1, "{ev:?}");
    assert_eq!((errs[0].ectx, errs[0].ectx_name.as_str()), (b, "b"));
    assert_eq!(errs[0].kind, ErrorCause::Fault(FaultKind::StoreAccess));
    assert!(ev
        .iter()
        .any(|x| matches!(x, Event::MessageDone(d) if d.ectx == b && d.msg_id == 7)));
}

/// Outbound times of an echo handler: arrival + a fixed processing time.
fn echo_times(nic: &mut Nic) -> Vec<u64> {
    nic.run_until_idle().unwrap();
    nic.events()
        .iter()
        .filter_map(|x| {
            if let Event::Outbound(o) = x {
                Some(o.time_ps)
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn host_sends_pace_exactly_like_the_generator() {
    // 3 Gbit/s: a 1000-byte frame takes 2666.67 ns, so per-packet truncation
    // (the host API's old rule) drifts from the generator's exact clock.
    let cfg = NicConfig {
        line_rate_gbps: 3.0,
        ..NicConfig::profile("pspin").unwrap()
    };
    let img = Nic::open("pspin").unwrap().load_image(handler()).unwrap();
    let gen = GenConfig {
        messages: 1,
        packets_per_message: 6,
        size: 1000,
        rate_gbps: 3.0,
        payload: Payload::Zero,
        ..GenConfig::default()
    };

    let mut by_gen = Nic::with_config(cfg.clone()).unwrap();
    let e = by_gen.install(&img, opts("echo_ph")).unwrap();
    by_gen.activate(e).unwrap();
    by_gen.feed_generator(gen).unwrap();
    let want = echo_times(&mut by_gen);
    assert_eq!(want.len(), 6);

    let mut by_msg = Nic::with_config(cfg.clone()).unwrap();
    let e = by_msg.install(&img, opts("echo_ph")).unwrap();
    by_msg.activate(e).unwrap();
    by_msg
        .send_message(e, 0, &vec![0u8; 6 * (1000 - 28)], 1000)
        .unwrap();
    assert_eq!(echo_times(&mut by_msg), want);

    let mut by_pkt = Nic::with_config(cfg).unwrap();
    let e = by_pkt.install(&img, opts("echo_ph")).unwrap();
    by_pkt.activate(e).unwrap();
    let frame = by_pkt.frame_for(e, &[0u8; 1000 - 28]).unwrap();
    let pkts = (0..6).map(|k| Packet {
        frame: frame.clone(),
        msg_id: 0,
        eom: k == 5,
    });
    by_pkt.send_packets(pkts, Pacing::LineRate).unwrap();
    assert_eq!(echo_times(&mut by_pkt), want);
}

/// Under `ulimit -v 1000000` (1 GB), what the API would allocate beyond it
/// is an error: the process does not die of allocation.
#[test]
fn a_memory_limit_is_an_error_not_an_abort() {
    if std::env::var_os("SOFTSPIN_UNDER_ULIMIT").is_some() {
        let mut nic = Nic::open("pspin").unwrap();
        let e = nic.host_window(3 << 30).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        assert!(e.to_string().contains("cannot allocate"), "{e}");
        usable(&mut nic);
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let st = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1000000 && exec \"$0\" --exact a_memory_limit_is_an_error_not_an_abort --test-threads 1")
        .arg(&exe)
        .env("SOFTSPIN_UNDER_ULIMIT", "1")
        .status()
        .unwrap();
    assert!(st.success(), "under ulimit -v 1000000: {st}");
}
