//! The matching engine (seed 000 §3.2.1): the Rust reference matcher on
//! hand-made frames, FPsPIN's shortcut constants, the rules file, and the XDP
//! program against the reference (BPF_PROG_TEST_RUN, root only).

use proptest::prelude::*;
use softspin_netio::rules::{
    is_ipv4_fragment, load_rules, parse_rules, MatchUnit, Matcher, MsgIdField, Ruleset,
    RulesetMode, MAX_RULESETS, MAX_UNITS,
};
use softspin_netio::xdp::{XdpMatcher, ETH_HLEN};
use softspin_netio::NetError;
use softspin_testkit::frame::Frame;
use softspin_testkit::needs_root;
use softspin_testkit::net::{in_netns, Topo};

const XDP_PASS: u32 = 2;

/// An Ethernet/IPv4/UDP frame built byte by byte (independent of softspin-wire).
fn udp_frame(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    Frame {
        src_mac: [0x02, 0, 0, 0, 0, 2],
        dst_mac: [0x02, 0, 0, 0, 0, 1],
        sport,
        dport,
        flags_frag: 0,
        ..Frame::default()
    }
    .udp(payload)
}

fn icmp_frame() -> Vec<u8> {
    let mut f = udp_frame(0, 0, &[0; 16]);
    f[23] = 1;
    f[34] = 8; // echo request
    f
}

/// An SLMP segment: flags, message id, offset (seed 000 §5.1.2).
fn slmp_frame(eom: bool, msg_id: u32) -> Vec<u8> {
    let mut p = vec![0u8; 10];
    p[0..2].copy_from_slice(&(if eom { 0x8000u16 } else { 0 }).to_be_bytes());
    p[2..6].copy_from_slice(&msg_id.to_be_bytes());
    p.extend_from_slice(b"payload");
    udp_frame(40000, 9330, &p)
}

fn rs(mode: RulesetMode, units: Vec<MatchUnit>) -> Ruleset {
    Ruleset {
        name: "t".into(),
        mode,
        units,
        eom: MatchUnit::TRUE,
        msg_id: MsgIdField::Sequence,
        ectx: None,
    }
}

fn matcher(rulesets: Vec<Ruleset>) -> Matcher {
    Matcher { rulesets }
}

#[test]
fn fpspin_shortcut_constants() {
    // Literal values of FPsPIN's fpspin.h macros and seed 000 §3.2.1.
    assert_eq!(
        MatchUnit::IP,
        MatchUnit::new(3, 0xffff0000, 0x08000000, 0x08000000)
    );
    assert_eq!(MatchUnit::ip_proto(17), MatchUnit::new(5, 0xff, 0x11, 0x11));
    assert_eq!(
        MatchUnit::udp_dport(9330),
        MatchUnit::new(9, 0xffff0000, 0x24720000, 0x24720000)
    );
    assert_eq!(
        MatchUnit::udp_sport(9330),
        MatchUnit::new(8, 0xffff, 9330, 9330)
    );
    assert_eq!(MatchUnit::FALSE, MatchUnit::new(0, 0, 1, 0));
    assert_eq!(MatchUnit::EMPTY, MatchUnit::new(0, 0, 0, 0));
    assert_eq!(MatchUnit::TRUE, MatchUnit::EMPTY);
    // fpspin_ruleset_slmp: IP, IP_PROTO(17), UDP_DPORT(9330), EOM {10, 0x8000, 0x8000, 0x8000}.
    let s = Ruleset::from_spec("slmp").unwrap();
    assert_eq!(
        s.units,
        vec![
            MatchUnit::new(3, 0xffff0000, 0x08000000, 0x08000000),
            MatchUnit::new(5, 0xff, 17, 17),
            MatchUnit::new(9, 0xffff0000, 0x24720000, 0x24720000)
        ]
    );
    assert_eq!(s.eom, MatchUnit::new(10, 0x8000, 0x8000, 0x8000));
    assert_eq!(
        s.msg_id,
        MsgIdField::Field {
            offset: 44,
            size: 4
        }
    );
    assert_eq!(s.mode, RulesetMode::And);
}

#[test]
fn shortcuts_on_real_frames() {
    let u = udp_frame(1234, 9330, b"hello");
    assert!(MatchUnit::IP.matches(&u));
    assert!(MatchUnit::ip_proto(17).matches(&u));
    assert!(!MatchUnit::ip_proto(1).matches(&u));
    assert!(MatchUnit::udp_dport(9330).matches(&u));
    assert!(!MatchUnit::udp_dport(9331).matches(&u));
    assert!(MatchUnit::udp_sport(1234).matches(&u));
    assert!(!MatchUnit::udp_sport(1235).matches(&u));
    assert!(!MatchUnit::FALSE.matches(&u));
    assert!(MatchUnit::TRUE.matches(&u));
    let mut arp = u.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert!(!MatchUnit::IP.matches(&arp));
}

#[test]
fn ranges_and_masks() {
    let mut f = vec![0u8; 16];
    f[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    let u = |m, s, e| MatchUnit::new(1, m, s, e);
    assert!(u(0xffffffff, 0x12345678, 0x12345678).matches(&f));
    assert!(u(0xffffffff, 0x12345677, 0x12345679).matches(&f));
    assert!(u(0xffffffff, 0x12345678, 0xffffffff).matches(&f)); // start bound inclusive
    assert!(u(0xffffffff, 0, 0x12345678).matches(&f)); // end bound inclusive
    assert!(!u(0xffffffff, 0x12345679, 0xffffffff).matches(&f));
    assert!(!u(0xffffffff, 0, 0x12345677).matches(&f));
    assert!(u(0xff00, 0x5600, 0x5600).matches(&f)); // mask picks byte 6
    assert!(!u(0xff00, 0x5700, 0x57ff).matches(&f));
    assert!(u(0xf0, 0x70, 0x7f).matches(&f)); // masked value 0x70
    assert!(!u(0xffffffff, 5, 4).matches(&f)); // start > end: never
    assert!(u(0, 0, 0).matches(&f));
}

#[test]
fn words_past_the_frame_end_are_false() {
    let f = [0u8; 10];
    assert!(MatchUnit::new(1, 0, 0, 0).matches(&f)); // bytes 4..8
    assert!(!MatchUnit::new(2, 0, 0, 0).matches(&f)); // bytes 8..12: partly outside
    assert!(!MatchUnit::new(3, 0, 0, u32::MAX).matches(&f));
    assert!(!MatchUnit::new(u32::MAX, 0, 0, u32::MAX).matches(&f));
    assert!(!MatchUnit::TRUE.matches(&[0u8; 3]));
    assert!(!MatchUnit::TRUE.matches(&[]));
}

#[test]
fn modes_and_priority() {
    let f = udp_frame(1, 2, b"");
    let t = MatchUnit::TRUE;
    let x = MatchUnit::FALSE;
    assert!(rs(RulesetMode::And, vec![]).matches(&f));
    assert!(!rs(RulesetMode::Or, vec![]).matches(&f));
    assert!(rs(RulesetMode::And, vec![t, t, t, t]).matches(&f));
    assert!(!rs(RulesetMode::And, vec![t, t, x, t]).matches(&f));
    assert!(rs(RulesetMode::Or, vec![x, x, t]).matches(&f));
    assert!(!rs(RulesetMode::Or, vec![x, x, x, x]).matches(&f));
    // First matching ruleset wins.
    let m = matcher(vec![
        rs(RulesetMode::Or, vec![x]),
        rs(RulesetMode::And, vec![MatchUnit::udp_dport(2)]),
        rs(RulesetMode::And, vec![]),
    ]);
    assert_eq!(m.classify(&f).unwrap().ruleset, 1);
    assert_eq!(m.classify(&udp_frame(1, 3, b"")).unwrap().ruleset, 2);
    assert_eq!(
        matcher(vec![rs(RulesetMode::Or, vec![])]).classify(&f),
        None
    );
    assert_eq!(matcher(vec![]).classify(&f), None);
}

#[test]
fn eom_and_msg_id() {
    let m = matcher(vec![
        Ruleset::from_spec("slmp").unwrap(),
        Ruleset::from_spec("udp:7").unwrap(),
    ]);
    let v = m.classify(&slmp_frame(true, 0xdead_beef)).unwrap();
    assert_eq!((v.ruleset, v.eom, v.msg_id), (0, true, Some(0xdead_beef)));
    let v = m.classify(&slmp_frame(false, 42)).unwrap();
    assert_eq!((v.ruleset, v.eom, v.msg_id), (0, false, Some(42)));
    let v = m.classify(&udp_frame(1, 7, b"x")).unwrap();
    assert_eq!((v.ruleset, v.eom, v.msg_id), (1, true, None));
    // Message-id bytes past the frame end read 0.
    let f = MsgIdField::Field { offset: 2, size: 4 };
    assert_eq!(f.read(&[0, 0, 0xaa, 0xbb]), Some(0xaabb_0000));
    assert_eq!(f.read(&[]), Some(0));
    assert_eq!(
        MsgIdField::Field { offset: 1, size: 2 }.read(&[1, 2, 3]),
        Some(0x0203)
    );
    assert_eq!(
        MsgIdField::Field {
            offset: u32::MAX,
            size: 4
        }
        .read(&[1, 2]),
        Some(0)
    );
}

/// IPv4 fragments: the More Fragments flag or an offset; Don't Fragment
/// alone is a whole datagram; only IPv4 frames count.
#[test]
fn ipv4_fragments() {
    let with = |flags_offset: u16| {
        let mut f = udp_frame(1, 7, b"abcd");
        f[20..22].copy_from_slice(&flags_offset.to_be_bytes());
        f
    };
    assert!(!is_ipv4_fragment(&with(0)));
    assert!(!is_ipv4_fragment(&with(0x4000)), "DF only");
    assert!(is_ipv4_fragment(&with(0x2000)), "first fragment (MF)");
    assert!(is_ipv4_fragment(&with(0x20b9)), "middle fragment");
    assert!(is_ipv4_fragment(&with(0x00b9)), "last fragment");
    let mut arp = with(0x2000);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert!(!is_ipv4_fragment(&arp), "not IPv4");
    assert!(!is_ipv4_fragment(&with(0x2000)[..21]), "field cut short");
    // A first fragment still matches udp:7 (its UDP header is there); a
    // later one's bytes at the port's place are data.
    let m = matcher(vec![Ruleset::from_spec("udp:7").unwrap()]);
    assert!(m.classify(&with(0x2000)).is_some());
}

#[test]
fn specs() {
    let u = Ruleset::from_spec("udp:5000").unwrap();
    assert_eq!(
        u.units,
        vec![
            MatchUnit::IP,
            MatchUnit::ip_proto(17),
            MatchUnit::udp_dport(5000)
        ]
    );
    assert_eq!((u.eom, u.msg_id), (MatchUnit::TRUE, MsgIdField::Sequence));
    assert_eq!(
        Ruleset::from_spec("icmp").unwrap().units,
        vec![MatchUnit::IP, MatchUnit::ip_proto(1)]
    );
    assert_eq!(
        Ruleset::from_spec("ipv4").unwrap().units,
        vec![MatchUnit::IP]
    );
    assert_eq!(
        Ruleset::from_spec("all").unwrap().units,
        vec![MatchUnit::TRUE]
    );
    assert_eq!(
        Ruleset::from_spec("slmp:1000").unwrap().units[2],
        MatchUnit::udp_dport(1000)
    );
    let m = matcher(vec![Ruleset::from_spec("icmp").unwrap()]);
    assert!(m.classify(&icmp_frame()).is_some());
    assert!(m.classify(&udp_frame(1, 2, b"")).is_none());
    for bad in ["udp", "udp:70000", "udp:x", "tcp:80", "", "slmp:-1"] {
        let e = Ruleset::from_spec(bad).unwrap_err().to_string();
        assert!(e.contains("--match"), "{bad}: {e}");
    }
}

#[test]
fn rules_file() {
    let text = r#"
[[ruleset]]
name = "slmp"
match = ["ip", "udp", "udp_dport:9330"]
eom = "slmp_eom"
msg_id = "slmp"
ectx = "reduce"

[[ruleset]]
name = "odd"
mode = "or"
match = ["icmp"]
eom = { index = 10, mask = 0x8000, start = 0x8000, end = 0xffff }
msg_id = { offset = 40, size = 2 }
[[ruleset.unit]]
index = 9
mask = 0xffff0000
start = 0x13880000
end = 0x13ff0000
"#;
    let r = parse_rules(text).unwrap();
    assert_eq!(r.len(), 2);
    let mut slmp = Ruleset::from_spec("slmp").unwrap();
    slmp.ectx = Some("reduce".into());
    assert_eq!(r[0], slmp);
    assert_eq!(r[1].mode, RulesetMode::Or);
    assert_eq!(
        r[1].units,
        vec![
            MatchUnit::ip_proto(1),
            MatchUnit::new(9, 0xffff0000, 0x13880000, 0x13ff0000)
        ]
    );
    assert_eq!(r[1].eom, MatchUnit::new(10, 0x8000, 0x8000, 0xffff));
    assert_eq!(
        r[1].msg_id,
        MsgIdField::Field {
            offset: 40,
            size: 2
        }
    );
    assert_eq!(r[1].ectx, None);
    let m = matcher(r);
    assert_eq!(m.classify(&udp_frame(1, 5005, b"")).unwrap().ruleset, 1); // 5000..=5119
    assert!(m.classify(&udp_frame(1, 5200, b"")).is_none());

    let p = std::env::temp_dir().join(format!("softspin-rules-{}.toml", std::process::id()));
    std::fs::write(&p, text).unwrap();
    assert_eq!(load_rules(&p).unwrap().len(), 2);
    std::fs::remove_file(&p).unwrap();
    let e = load_rules("/nonexistent/rules.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/rules.toml"), "{e}");
}

#[test]
fn rules_file_errors_name_ruleset_and_field() {
    let cases: &[(&str, &[&str])] = &[
        ("[[ruleset]]\nname = \"a\"\nmatch = [\"ip\", \"ip\", \"ip\", \"ip\", \"ip\"]", &["`a`", "MAX_UNITS", "4"]),
        ("[[ruleset]]\nname = \"b\"\nmatch = [\"tcp\"]", &["`b`", "match", "tcp"]),
        ("[[ruleset]]\nname = \"c\"\nmatch = [\"udp_dport:70000\"]", &["`c`", "65535"]),
        ("[[ruleset]]\nname = \"d\"\neom = \"maybe\"", &["`d`", "eom"]),
        ("[[ruleset]]\nname = \"e\"\nmsg_id = \"mine\"", &["`e`", "msg_id"]),
        ("[[ruleset]]\nname = \"f\"\nmsg_id = { offset = 1, size = 3 }", &["`f`", "msg_id.size"]),
        ("[[ruleset]]\nname = \"g\"\ncolour = 1", &["colour"]),
        ("[[ruleset]]\nname = \"h\"\n[[ruleset.unit]]\nindex = 1\nmask = 0\nstart = 0\nend = 0\nextra = 1", &["extra"]),
        ("[[ruleset]]\nname = \"i\"\n[[ruleset.unit]]\nindex = 5000\nmask = 0\nstart = 0\nend = 0", &["`i`", "index 5000", "1023"]),
        ("[[ruleset]]\nname = \"j\"\nmode = \"xor\"", &["xor"]),
        ("[[ruleset]]\nname = \"k\"\n[[ruleset.unit]]\nindex = 1\nmask = -1\nstart = 0\nend = 0", &["mask"]),
    ];
    for (text, needles) in cases {
        let e = parse_rules(text).unwrap_err().to_string();
        for n in *needles {
            assert!(e.contains(n), "error for {text:?} lacks {n:?}: {e}");
        }
    }
    let many = "[[ruleset]]\n".repeat(MAX_RULESETS + 1);
    let e = parse_rules(&many).unwrap_err().to_string();
    assert!(
        e.contains("MAX_RULESETS") && e.contains(&MAX_RULESETS.to_string()),
        "{e}"
    );
    assert_eq!(parse_rules("").unwrap(), vec![]);
    assert!(Matcher::new(vec![Ruleset::all(); MAX_RULESETS + 1]).is_err());
    assert!(Matcher::new(vec![rs(
        RulesetMode::And,
        vec![MatchUnit::TRUE; MAX_UNITS + 1]
    )])
    .is_err());
}

// ---- XDP vs the reference -------------------------------------------------

fn load_or_skip(test: &str) -> Option<XdpMatcher> {
    if !needs_root(test, "loading BPF programs needs CAP_BPF") {
        return None;
    }
    Some(XdpMatcher::load_unattached().expect("load the XDP matcher"))
}

#[test]
fn xdp_hand_made_cases() {
    let Some(mut x) = load_or_skip("xdp_hand_made_cases") else {
        return;
    };
    // No rulesets: everything passes.
    assert_eq!(
        x.test_run(&udp_frame(1, 9330, b"")).unwrap(),
        (XDP_PASS, None)
    );
    let rules = vec![
        Ruleset::from_spec("icmp").unwrap(),
        Ruleset::from_spec("slmp").unwrap(),
    ];
    x.set_rulesets(&rules).unwrap();
    assert_eq!(x.test_run(&slmp_frame(true, 1)).unwrap().1, Some(1));
    assert_eq!(x.test_run(&icmp_frame()).unwrap().1, Some(0));
    assert_eq!(
        x.test_run(&udp_frame(1, 9331, b"")).unwrap(),
        (XDP_PASS, None)
    );
    // No socket registered: a matched frame is passed to the kernel and counted.
    assert_eq!(x.test_run(&icmp_frame()).unwrap().0, XDP_PASS);
    let s = x.stats().unwrap();
    // One count per ruleset slot (MAX_RULESETS), kept across reprogramming.
    assert_eq!(s.matched[..2], [2, 1]);
    assert!(s.matched[2..].iter().all(|&n| n == 0), "{:?}", s.matched);
    assert_eq!(s.passed, 2);
    assert_eq!(s.no_socket, 3);
    assert!(matches!(
        x.test_run(&[0u8; ETH_HLEN - 1]),
        Err(NetError::Unsupported(_))
    ));
}

/// Frames biased toward real headers: Ethernet/IPv4/UDP (SLMP port often),
/// ICMP, or random bytes; then cut to a random length below 200.
fn frame_strategy() -> impl Strategy<Value = Vec<u8>> {
    let port = prop_oneof![
        Just(9330u16),
        Just(7u16),
        Just(0u16),
        Just(u16::MAX),
        any::<u16>()
    ];
    // IPv4 flags and fragment offset: whole, a first fragment (MF), a
    // later one, the last one, anything.
    let frag = prop_oneof![
        3 => Just(0u16),
        1 => Just(0x2000u16),
        1 => Just(0x20b9u16),
        1 => Just(0x00b9u16),
        1 => any::<u16>()
    ];
    let udp = (
        port.clone(),
        port,
        proptest::collection::vec(any::<u8>(), 0..150),
        any::<bool>(),
        frag,
    )
        .prop_map(|(s, d, mut p, eom, frag)| {
            if p.len() >= 2 {
                p[0] = if eom { 0x80 } else { 0 };
            }
            let mut f = udp_frame(s, d, &p);
            f[20..22].copy_from_slice(&frag.to_be_bytes());
            f
        });
    let icmp = proptest::collection::vec(any::<u8>(), 0..100).prop_map(|p| {
        let mut f = icmp_frame();
        f.extend(p);
        f
    });
    let raw = proptest::collection::vec(any::<u8>(), 0..200);
    (
        prop_oneof![3 => udp, 1 => icmp, 2 => raw],
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(mut f, cut, do_cut)| {
            if do_cut && !f.is_empty() {
                f.truncate(cut.index(f.len() + 1));
            }
            f.truncate(199);
            f
        })
}

fn word_strategy() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(u32::MAX),
        Just(0x0800_0000),
        Just(0x11),
        Just(0x2472_0000),
        Just(0x8000),
        any::<u32>()
    ]
}

fn unit_strategy() -> impl Strategy<Value = MatchUnit> {
    let mask = prop_oneof![
        Just(0u32),
        Just(u32::MAX),
        Just(0xffff_0000),
        Just(0xffff),
        Just(0xff),
        Just(0x8000),
        any::<u32>()
    ];
    let random = (0u32..40, mask, word_strategy(), word_strategy()).prop_map(|(i, m, a, b)| {
        // Any bounds, start > end included; the last arm below makes small ordered ranges.
        MatchUnit::new(i, m, a, b)
    });
    prop_oneof![
        3 => random,
        1 => Just(MatchUnit::IP),
        1 => Just(MatchUnit::ip_proto(17)),
        1 => Just(MatchUnit::ip_proto(1)),
        1 => Just(MatchUnit::udp_dport(9330)),
        1 => Just(MatchUnit::udp_sport(9330)),
        1 => Just(MatchUnit::TRUE),
        1 => Just(MatchUnit::FALSE),
        1 => (0u32..40, word_strategy()).prop_map(|(i, w)| MatchUnit::new(i, u32::MAX, w.min(w ^ 0xff), w.max(w ^ 0xff))),
    ]
}

fn ruleset_strategy() -> impl Strategy<Value = Ruleset> {
    (
        any::<bool>(),
        proptest::collection::vec(unit_strategy(), 0..=MAX_UNITS),
    )
        .prop_map(|(or, units)| {
            rs(
                if or {
                    RulesetMode::Or
                } else {
                    RulesetMode::And
                },
                units,
            )
        })
}

#[test]
fn xdp_agrees_with_reference() {
    let Some(mut x) = load_or_skip("xdp_agrees_with_reference") else {
        return;
    };
    let x = std::cell::RefCell::new(&mut x);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 2000,
        ..Default::default()
    });
    let strategy = (
        proptest::collection::vec(ruleset_strategy(), 1..=MAX_RULESETS),
        proptest::collection::vec(frame_strategy(), 1..8),
    );
    let xdp_checked = std::cell::Cell::new(0u64);
    let matched = std::cell::Cell::new(0u64);
    let fragments = std::cell::Cell::new(0u64);
    runner
        .run(&strategy, |(rules, frames)| {
            let reference = matcher(rules.clone());
            let mut x = x.borrow_mut();
            x.set_rulesets(&rules).unwrap();
            for f in &frames {
                let want = reference.classify(f).map(|v| v.ruleset);
                matched.set(matched.get() + want.is_some() as u64);
                if f.len() < ETH_HLEN {
                    continue; // XDP never sees such frames; the Rust cases cover them
                }
                let before = x.stats().unwrap();
                let (_, got) = x.test_run(f).unwrap();
                let after = x.stats().unwrap();
                xdp_checked.set(xdp_checked.get() + 1);
                prop_assert_eq!(got, want, "frame {:02x?}", f);
                // The fragment counters agree with rules::is_ipv4_fragment,
                // on the side (matched or passed) the verdict says.
                let frag = is_ipv4_fragment(f);
                fragments.set(fragments.get() + frag as u64);
                let moved = (
                    after.fragments_matched - before.fragments_matched,
                    after.fragments_passed - before.fragments_passed,
                );
                let expect = match (frag, want) {
                    (false, _) => (0, 0),
                    (true, Some(_)) => (1, 0),
                    (true, None) => (0, 1),
                };
                prop_assert_eq!(moved, expect, "fragment counters, frame {:02x?}", f);
            }
            Ok(())
        })
        .unwrap();
    // The generators must exercise both outcomes, else the agreement is hollow.
    let (xdp_checked, matched) = (xdp_checked.get(), matched.get());
    assert!(xdp_checked > 5000, "{xdp_checked} frames through XDP");
    assert!(fragments.get() > 1000, "{} fragments", fragments.get());
    assert!(
        matched > 1000 && matched < xdp_checked,
        "{matched} of {xdp_checked} matched"
    );
}

// ---- attach / detach on a veth in a namespace we create -------------------

#[test]
fn xdp_attach_detaches_when_dropped() {
    if !needs_root("xdp_attach_detaches_when_dropped", "XDP attach, namespaces") {
        return;
    }
    let net = Topo::pair("sm", "10.77.0");
    let (ns, dev) = (net.nic_ns(), net.nic_if());
    let show = || {
        let o = net.exec(&ns, &["ip", "-d", "link", "show", &dev]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(!show().contains("xdp"), "{}", show());

    in_netns(&ns, || {
        assert!(matches!(
            XdpMatcher::attach("nosuch0"),
            Err(NetError::NoSuchInterface(_))
        ));
        assert_eq!(XdpMatcher::queues(&dev).unwrap(), 1);
        let mut x = XdpMatcher::attach(&dev).expect("attach");
        x.set_rulesets(&[Ruleset::from_spec("udp:9").unwrap()])
            .unwrap();
        let s = show();
        assert!(
            s.contains("xdp") && !s.contains("xdpgeneric"),
            "native XDP expected: {s}"
        );
        // One program per interface: a second attach is refused, not stacked.
        match XdpMatcher::attach(&dev) {
            Err(NetError::XdpBusy { iface }) => assert_eq!(iface, dev),
            Err(e) => panic!("expected XdpBusy, got {e}"),
            Ok(_) => panic!("second attach succeeded"),
        }
        drop(x);
    });
    let s = show();
    assert!(!s.contains("xdp"), "program left behind: {s}");
}
