//! Handler errors reach the host for as long as a NIC runs (issue 24): the
//! engine keeps the details of only its first errors for the report, so
//! the host API takes every error from it as it happens.

use std::path::PathBuf;

use softspin_engine::stats::MAX_ERRORS_KEPT;
use softspin_host::{EctxOptions, Event, Nic};

fn handler() -> PathBuf {
    softspin_testkit::handler_image("fault", &["crates/host/tests/handlers/fault.c"])
}

/// Three rounds of 600 faulting packets: 1800 error events, each message's
/// once, though the engine keeps the details of only MAX_ERRORS_KEPT.
#[test]
fn every_handler_error_becomes_an_event() {
    const ROUND: u32 = 600;
    assert!(
        3 * ROUND as usize > MAX_ERRORS_KEPT + ROUND as usize,
        "the rounds must pass the kept details"
    );
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let e = nic
        .install(
            &img,
            EctxOptions {
                ph: Some("store_fault_ph".into()),
                name: Some("faulty".into()),
                ..Default::default()
            },
        )
        .unwrap();
    nic.activate(e).unwrap();
    let mut total = 0;
    for round in 0..3 {
        let first = round * ROUND;
        for m in first..first + ROUND {
            nic.send_message(e, m, &[0; 64], 1024).unwrap();
        }
        nic.run_until_idle().unwrap();
        let mut ids: Vec<u32> = nic
            .events()
            .into_iter()
            .filter_map(|x| match x {
                Event::HandlerError(h) => {
                    assert_eq!(
                        (h.ectx, h.ectx_name.as_str(), h.addr),
                        (e, "faulty", Some(0x40)),
                        "{h:?}"
                    );
                    Some(h.msg_id)
                }
                _ => None,
            })
            .collect();
        ids.sort();
        assert_eq!(ids.len(), ROUND as usize, "round {round}: error events");
        assert_eq!(
            ids,
            (first..first + ROUND).collect::<Vec<_>>(),
            "round {round}"
        );
        total += ids.len();
    }
    assert_eq!(total, 3 * ROUND as usize);
    // The counts by cause are complete too.
    let r = nic.report();
    assert_eq!(
        r.errors.iter().map(|x| x.total).sum::<u64>(),
        3 * ROUND as u64
    );
}

/// Left untaken, errors are bounded: the first PENDING_ERRORS_FIRST and the
/// latest PENDING_ERRORS_LATEST in detail, and an ErrorsDropped event at
/// the gap counting the rest, so none is lost silently.
#[test]
fn errors_left_untaken_are_bounded_and_their_drop_is_an_event() {
    use softspin_host::{PENDING_ERRORS_FIRST, PENDING_ERRORS_LATEST};
    let n = (PENDING_ERRORS_FIRST + 400 + PENDING_ERRORS_LATEST) as u32;
    let mut nic = Nic::open("pspin").unwrap();
    let img = nic.load_image(handler()).unwrap();
    let e = nic
        .install(
            &img,
            EctxOptions {
                ph: Some("store_fault_ph".into()),
                ..Default::default()
            },
        )
        .unwrap();
    nic.activate(e).unwrap();
    // Sent and run in slices, the host taking no event in between.
    for m in 0..n {
        nic.send_message(e, m, &[0; 64], 1024).unwrap();
        if m % 300 == 299 {
            nic.run_until_idle().unwrap();
        }
    }
    nic.run_until_idle().unwrap();
    let ev = nic.events();
    let gap = ev
        .iter()
        .position(|x| matches!(x, Event::ErrorsDropped { .. }))
        .expect("an ErrorsDropped event");
    assert_eq!(ev[gap], Event::ErrorsDropped { count: 400 });
    let ids = |xs: &[Event]| -> Vec<u32> {
        xs.iter()
            .filter_map(|x| {
                if let Event::HandlerError(h) = x {
                    Some(h.msg_id)
                } else {
                    None
                }
            })
            .collect()
    };
    assert_eq!(
        ids(&ev[..gap]),
        (0..PENDING_ERRORS_FIRST as u32).collect::<Vec<_>>()
    );
    assert_eq!(
        ids(&ev[gap + 1..]),
        (n - PENDING_ERRORS_LATEST as u32..n).collect::<Vec<_>>()
    );
    assert_eq!(nic.report().errors[0].total, n as u64);
}
