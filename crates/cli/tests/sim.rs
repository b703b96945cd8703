//! `softspin sim` through its command line: the stable flags, the JSON keys
//! scripts rely on, the output files, and clear errors on bad input.

use softspin_testkit::{root, scratch};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn softspin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(args)
        .output()
        .unwrap()
}

fn image() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let out = scratch("sim-test").join("h.elf");
        let src = root().join("crates/cli/tests/handlers/engine_test.c");
        let o = softspin(&["build", src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.to_str().unwrap().to_string()
    })
    .clone()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON object on stdout")
}

fn stderr(o: &Output) -> String {
    assert!(
        !o.status.success(),
        "expected a failure, stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn json_report_has_the_documented_keys() {
    let img = image();
    let v = json(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "echo_ph",
        "--messages",
        "10",
        "--packets",
        "4",
        "--size",
        "256",
        "--json",
    ]));
    for k in [
        "packets",
        "bytes",
        "throughput_gbps",
        "goodput_gbps",
        "good_packets",
        "offered_gbps",
        "mpps",
        "latency_ns",
        "drops",
        "hpu_utilization",
        "handlers",
        "errors",
        "outbound_packets",
        "host_writes",
        "sim_time_ns",
    ] {
        assert!(v.get(k).is_some(), "missing key {k} in {v}");
    }
    for k in ["min", "mean", "p50", "p99", "max"] {
        assert!(v["latency_ns"][k].is_number(), "latency_ns.{k}");
    }
    assert_eq!(v["packets"], 40);
    assert_eq!(v["bytes"], 40 * 256);
    assert_eq!(v["outbound_packets"], 40);
    let h = &v["handlers"][0];
    assert_eq!(h["name"], "h:echo_ph");
    assert_eq!(h["invocations"], 40);
    assert!(
        h["cycles_mean"].as_f64().unwrap() > 0.0 && h["instructions_mean"].as_f64().unwrap() > 0.0
    );
}

#[test]
fn gdriver_gives_pspins_driver_memory() {
    let img = image();
    let run = |extra: &[&str]| {
        let mut a = vec![
            "sim",
            "--image",
            &img,
            "--ph",
            "gdriver_ph",
            "--messages",
            "4",
            "--packets",
            "8",
            "--json",
        ];
        a.extend_from_slice(extra);
        softspin(&a)
    };
    let o = run(&["--gdriver"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["good_packets"], 32, "{v}");
    // Without it: no scratchpad, handler memory = the image's data.
    let o = run(&[]);
    assert!(!o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["good_packets"], 0, "{v}");
    // Explicit values override the preset.
    let o = run(&["--gdriver", "--scratchpad", "4096"]);
    assert!(!o.status.success());
    // Handler memory beyond L2 or the address space is refused by name.
    let o = run(&["--gdriver", "--handler-mem", "100000000"]);
    assert!(
        stderr(&o).contains("lies outside L2 handler memory"),
        "{}",
        stderr(&o)
    );
    let o = run(&["--handler-mem", "4294967295"]);
    assert!(
        stderr(&o).contains("passes the end of the 32-bit NIC address space (handler_mem_size)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn timeline_and_pcap_out_are_written() {
    let img = image();
    let d = scratch("sim-test");
    let (tl, pc) = (d.join("t.json"), d.join("o.pcap"));
    let o = softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "echo_ph",
        "--messages",
        "3",
        "--packets",
        "2",
        "--size",
        "200",
        "--frame",
        "eth",
        "--json",
        "--timeline",
        tl.to_str().unwrap(),
        "--pcap-out",
        pc.to_str().unwrap(),
    ]);
    json(&o);
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&tl).unwrap()).unwrap();
    let evs = t["traceEvents"].as_array().unwrap();
    let handlers = evs.iter().filter(|e| e["cat"] == "handler").count();
    let sends = evs.iter().filter(|e| e["cat"] == "command").count();
    assert_eq!((handlers, sends), (6, 6));
    for e in evs {
        assert!(e["ts"].is_number() && e["tid"].is_number() && e["ph"] == "X");
    }
    // The pcap holds the six echoed Ethernet frames.
    let mut src = softspin_engine::traffic::PcapSource::open(&pc, None).unwrap();
    use softspin_engine::traffic::Source;
    let mut n = 0;
    while let Some(a) = src.next_arrival().unwrap() {
        assert_eq!(a.frame.len(), 200);
        assert_eq!(&a.frame[12..14], &[0x08, 0x00]);
        n += 1;
    }
    assert_eq!(n, 6);
}

#[test]
fn trace_input_and_its_errors() {
    let img = image();
    let d = scratch("sim-test");
    let good = d.join("good.trace");
    std::fs::write(
        &good,
        "# src dst size ipg msgid is_last\n1 2 128 10 0 0\n1 2 128 10 0 1\n1 2 64 5 1 1\n",
    )
    .unwrap();
    let v = json(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "empty_ph",
        "--trace",
        good.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(
        (v["packets"].as_u64(), v["bytes"].as_u64()),
        (Some(3), Some(320))
    );
    let bad = d.join("bad.trace");
    std::fs::write(&bad, "1 2 128 10 0 0\n1 2 lots 10 0 1\n").unwrap();
    let e = stderr(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "empty_ph",
        "--trace",
        bad.to_str().unwrap(),
    ]));
    assert!(e.contains("bad.trace:2"), "{e}");
    let junk = d.join("junk.pcap");
    std::fs::write(&junk, b"definitely not a pcap").unwrap();
    let e = stderr(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "empty_ph",
        "--pcap",
        junk.to_str().unwrap(),
    ]));
    assert!(e.contains("junk.pcap"), "{e}");
}

#[test]
fn bad_images_configs_and_packets_are_clear_errors() {
    let img = image();
    let d = scratch("sim-test");
    let e = stderr(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "nope_ph",
        "--messages",
        "1",
    ]));
    assert!(e.contains("nope_ph"), "{e}");
    let e = stderr(&softspin(&["sim", "--image", &img, "--messages", "1"]));
    assert!(e.contains("--ph"), "{e}");
    let cfg = d.join("bad.toml");
    std::fs::write(&cfg, "clusters = 0\n").unwrap();
    let e = stderr(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "empty_ph",
        "--config",
        cfg.to_str().unwrap(),
    ]));
    assert!(e.contains("clusters"), "{e}");
    let e = stderr(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "empty_ph",
        "--messages",
        "1",
        "--size",
        "4000",
    ]));
    assert!(e.contains("4000 bytes") && e.contains("slot"), "{e}");
    let e = stderr(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "empty_ph",
        "--profile",
        "fpspin",
        "--messages",
        "1",
    ]));
    assert!(e.contains("NB_CLUSTERS=4"), "{e}");
    let junk = d.join("junk.elf");
    std::fs::write(&junk, b"\x7fELF garbage").unwrap();
    let e = stderr(&softspin(&[
        "sim",
        "--image",
        junk.to_str().unwrap(),
        "--ph",
        "x",
        "--messages",
        "1",
    ]));
    assert!(e.contains("junk.elf"), "{e}");
}

#[test]
fn scenario_file_installs_several_ectxs() {
    let img = image();
    let d = scratch("sim-test");
    let second = d.join("second.elf");
    let src = root().join("crates/cli/tests/handlers/engine_test.c");
    let o = softspin(&[
        "build",
        src.to_str().unwrap(),
        "-o",
        second.to_str().unwrap(),
        "--data-base",
        "0x1C100000",
        "--code-base",
        "0x1D004000",
    ]);
    assert!(o.status.success());
    let sc = d.join("two.toml");
    std::fs::write(
        &sc,
        format!(
            "[[ectx]]\nname = \"a\"\nimage = \"{img}\"\nph = \"count_ph\"\nudp_dst_port = 9330\n\n\
             [[ectx]]\nname = \"b\"\nimage = \"{}\"\nph = \"empty_ph\"\nudp_dst_port = 1\n",
            second.display()
        ),
    )
    .unwrap();
    let v = json(&softspin(&[
        "sim",
        "--scenario",
        sc.to_str().unwrap(),
        "--messages",
        "5",
        "--json",
    ]));
    assert_eq!(v["packets"], 5);
    assert_eq!(v["handlers"].as_array().unwrap().len(), 1);
    assert_eq!(v["handlers"][0]["name"], "a:count_ph");
}

fn exit_image() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let out = scratch("sim-test").join("exit.elf");
        let src = root().join("crates/cli/tests/handlers/exit_test.c");
        let o = softspin(&["build", src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.to_str().unwrap().to_string()
    })
    .clone()
}

/// `softspin sim`'s exit status for each way a run can go wrong (the table
/// in `softspin sim --help`).
#[test]
fn sim_exit_status_says_what_went_wrong() {
    let img = exit_image();
    let d = scratch("sim-test");
    let code = |args: &[&str]| {
        let mut v = vec!["sim", "--image", &img, "--quiet"];
        v.extend_from_slice(args);
        let o = softspin(&v);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    assert_eq!(
        code(&["--ph", "ok_ph", "--messages", "20", "--packets", "3"]).0,
        Some(0)
    );
    // A fault, a failed assert, exit(3): handler errors.
    for h in ["fault_ph", "assert_ph", "exit3_ph"] {
        let (c, e) = code(&["--ph", h, "--messages", "2"]);
        assert_eq!(c, Some(3), "{h}: {e}");
        assert!(
            e.contains("handler error") && e.contains("exit status 3"),
            "{h}: {e}"
        );
    }
    // A message whose last packet never comes times out.
    let tr = d.join("open.trace");
    std::fs::write(&tr, "1 2 128 10 0 0\n").unwrap();
    let (c, e) = code(&[
        "--ph",
        "ok_ph",
        "--trace",
        tr.to_str().unwrap(),
        "--timeout-ns",
        "1000",
    ]);
    assert_eq!(c, Some(4), "{e}");
    assert!(e.contains("message timeout"), "{e}");
    // A packet buffer of one slot behind a slow handler drops packets.
    let cfg = d.join("tiny.toml");
    std::fs::write(&cfg, "l2_pkt_size = 2048\n").unwrap();
    let (c, e) = code(&[
        "--ph",
        "slow_ph",
        "--messages",
        "10",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert_eq!(c, Some(5), "{e}");
    assert!(e.contains("dropped"), "{e}");
    // Packets matching no ECTX are lost too.
    let sc = d.join("port.toml");
    std::fs::write(
        &sc,
        format!("[[ectx]]\nname = \"a\"\nimage = \"{img}\"\nph = \"ok_ph\"\nudp_dst_port = 1\n"),
    )
    .unwrap();
    let o = softspin(&[
        "sim",
        "--scenario",
        sc.to_str().unwrap(),
        "--messages",
        "3",
        "--quiet",
    ]);
    assert_eq!(
        o.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Stopped before the traffic was processed.
    let (c, e) = code(&["--ph", "ok_ph", "--messages", "10", "--until-ns", "30"]);
    assert_eq!(c, Some(6), "{e}");
    assert!(e.contains("of 10 packets processed"), "{e}");
    // Input and usage errors keep their own statuses.
    assert_eq!(code(&["--ph", "ok_ph", "--size", "4000"]).0, Some(1));
    assert_eq!(code(&["--ph", "ok_ph", "--no-such-flag"]).0, Some(2));
    // The table is in --help.
    let o = softspin(&["sim", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(
        help.contains("Exit status:") && help.contains("4  a message timed out"),
        "{help}"
    );
}

/// `softspin isa handler`: an assert in the handler is a failure (it used to
/// print "terminated with status 134" and exit 0).
#[test]
fn isa_handler_exit_status() {
    let img = exit_image();
    let run = |h: &str| {
        let o = softspin(&["isa", "handler", &img, "--handler", h]);
        (
            o.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    assert_eq!(run("ok_ph").0, Some(0));
    let (c, out) = run("assert_ph");
    assert_eq!(c, Some(3), "{out}");
    assert_eq!(run("exit3_ph").0, Some(3));
    assert_eq!(run("fault_ph").0, Some(70));
    let (c, out) = run("nope_ph");
    assert_eq!(c, Some(1));
    assert!(
        out.contains("ok_ph") && out.contains("slow_ph"),
        "lists the handler symbols: {out}"
    );
}

/// Every size and time given on the command line is checked against the
/// model's limits, with an error naming the field (issue 10's reproductions:
/// panics, allocation aborts and wrapped ns -> ps multiplications).
#[test]
fn absurd_flag_values_are_clear_errors() {
    let img = exit_image();
    let err = |args: &[&str]| {
        let mut v = vec![
            "sim",
            "--image",
            &img,
            "--ph",
            "ok_ph",
            "--messages",
            "1",
            "--quiet",
        ];
        v.extend_from_slice(args);
        let o = softspin(&v);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let e = err(&["--scratchpad", "4026531840"]);
    assert!(
        e.contains("`scratchpad`") && e.contains("1006592 bytes"),
        "{e}"
    );
    let e = err(&["--scratchpad", "4294967295"]);
    assert!(e.contains("`scratchpad`"), "{e}");
    let e = err(&["--host-size", "1000000000000"]);
    assert!(
        e.contains("host window size") && e.contains("4294967295"),
        "{e}"
    );
    let e = err(&["--timeout-ns", "18446744073709552"]);
    assert!(
        e.contains("msg_timeout_ns") && e.contains("3600000000000 ns"),
        "{e}"
    );
    let e = err(&["--until-ns", "18446744073709552"]);
    assert!(
        e.contains("--until-ns") && e.contains("9223372036854775 ns"),
        "{e}"
    );
    let e = err(&["--size", "70000"]);
    assert!(
        e.contains("2048-byte packet buffer slot") && !e.contains("65535"),
        "{e}"
    );
    let e = err(&["--rate", "0"]);
    assert!(e.contains("--rate"), "{e}");
    let e = err(&["--watchdog", "0"]);
    assert!(e.contains("watchdog"), "{e}");
    let cfg = scratch("sim-test").join("huge.toml");
    for (toml, field) in [
        ("l1_pkt_buffer = 4294967040\n", "`l1_pkt_buffer`"),
        ("hpu_stack_size = 536870912\n", "`hpu_stack_size`"),
        ("mpqs = 100000000\n", "`mpqs`"),
        (
            "[host]\nlatency_ns = 9223372036854775807\n",
            "`host.latency_ns`",
        ),
    ] {
        std::fs::write(&cfg, toml).unwrap();
        let e = err(&["--config", cfg.to_str().unwrap()]);
        assert!(e.contains(field), "{toml}: {e}");
    }
    // An OS error is printed once.
    let e = stderr(&softspin(&["sim", "--image", "/no/such.elf", "--ph", "x"]));
    assert_eq!(e.matches("No such file or directory").count(), 1, "{e}");
    let e = stderr(&softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "ok_ph",
        "--trace",
        "/no/such.trace",
    ]));
    assert_eq!(e.matches("No such file or directory").count(), 1, "{e}");
}

/// Scenario files get the same checks as the API: scratchpad entries per
/// cluster, unique names, overlapping images pointing at the build flags.
#[test]
fn scenario_errors_name_the_problem() {
    let img = exit_image();
    let d = scratch("sim-test");
    let sc = d.join("bad.toml");
    let run = |text: String| {
        std::fs::write(&sc, text).unwrap();
        stderr(&softspin(&[
            "sim",
            "--scenario",
            sc.to_str().unwrap(),
            "--messages",
            "1",
            "--quiet",
        ]))
    };
    let e = run(format!("[[ectx]]\nname = \"a\"\nimage = \"{img}\"\nph = \"ok_ph\"\nscratchpad = [64, 64, 64, 64, 64]\n"));
    assert!(
        e.contains("`scratchpad` has 5 entries") && e.contains("4 clusters"),
        "{e}"
    );
    let two = |a: &str, b: &str| {
        format!(
            "[[ectx]]\nname = \"{a}\"\nimage = \"{img}\"\nph = \"ok_ph\"\nudp_dst_port = 1\n\n\
             [[ectx]]\nname = \"{b}\"\nimage = \"{img}\"\nph = \"slow_ph\"\nudp_dst_port = 2\n"
        )
    };
    let e = run(two("a", "a"));
    assert!(e.contains("`a`") && e.contains("name"), "{e}");
    let e = run(two("a", "b"));
    assert!(
        e.contains("overlaps ECTX `a`") && e.contains("--code-base") && e.contains("--data-base"),
        "{e}"
    );
}

/// Generator flags reach the frames: addresses and ports as given.
#[test]
fn generator_addresses_and_ports() {
    let img = image();
    let d = scratch("sim-test");
    let pc = d.join("gen.pcap");
    let o = softspin(&[
        "sim",
        "--image",
        &img,
        "--ph",
        "echo_ph",
        "--messages",
        "1",
        "--size",
        "100",
        "--frame",
        "eth",
        "--json",
        "--src-ip",
        "192.168.1.7",
        "--dst-ip",
        "10.9.8.7",
        "--src-port",
        "1234",
        "--dst-port",
        "4321",
        "--pcap-out",
        pc.to_str().unwrap(),
    ]);
    json(&o);
    let mut src = softspin_engine::traffic::PcapSource::open(&pc, None).unwrap();
    use softspin_engine::traffic::Source;
    let f = src.next_arrival().unwrap().unwrap().frame;
    // Ethernet (14) + IPv4 (20) + UDP: wire order, echoed unchanged.
    assert_eq!(&f[26..30], &[192, 168, 1, 7]);
    assert_eq!(&f[30..34], &[10, 9, 8, 7]);
    assert_eq!(&f[34..36], &1234u16.to_be_bytes());
    assert_eq!(&f[36..38], &4321u16.to_be_bytes());
    let o = softspin(&["sim", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    for s in [
        "[default: 10.0.0.1]",
        "[default: 9330]",
        "(i + 7n) mod 256",
        "pkt_slot_size",
    ] {
        assert!(help.contains(s), "help lacks {s}: {help}");
    }
}

/// examples/copy_to_host's Ethernet handler, built for fpspin (it pushes
/// counters: index 0 per datagram copied, its data bytes; index 1 per
/// frame ignored).
fn copy_to_host_image() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let out = scratch("sim-test").join("copy_to_host.elf");
        let src = root().join("examples/copy_to_host/handler.c");
        let o = softspin(&[
            "build",
            "--profile",
            "fpspin",
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.to_str().unwrap().to_string()
    })
    .clone()
}

/// `spin_push_counter` results in `sim --json` (key `counters`, as `nic
/// --json`) and in the text summary, against the generator's traffic.
#[test]
fn counters_in_json_and_text() {
    let img = copy_to_host_image();
    let run = |size: usize, n: (u64, u64), json: bool| {
        let (m, p) = (n.0.to_string(), n.1.to_string());
        let size = size.to_string();
        let mut args = vec![
            "sim",
            "--image",
            &img,
            "--ph",
            "copy_to_host_eth_ph",
            "--messages",
            &m,
            "--packets",
            &p,
            "--size",
            &size,
            // Offset 0 in every datagram: all within the host window.
            "--payload",
            "zero",
        ];
        if json {
            args.push("--json");
        }
        softspin(&args)
    };
    // 15 frames of 200 bytes: Ethernet 14 + IPv4 20 + UDP 8 + offset 4
    // leave 154 data bytes each.
    let frames = 3 * 5;
    let data = 200 - 14 - 20 - 8 - 4;
    let v = json(&run(200, (3, 5), true));
    assert_eq!(
        v["counters"],
        serde_json::json!({"copy_to_host": [{"index": 0, "sum": frames * data, "count": frames}]}),
        "{v}"
    );
    let o = run(200, (3, 5), false);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let want = format!(
        "`copy_to_host` [0]: sum {} over {frames} pushes",
        frames * data
    );
    assert!(text.contains(&want), "{want} in {text}");
    // 45-byte frames carry 3 payload bytes, too few for the offset: each
    // is ignored (index 1, value 1).
    let v = json(&run(45, (2, 2), true));
    assert_eq!(
        v["counters"],
        serde_json::json!({"copy_to_host": [{"index": 1, "sum": 4, "count": 4}]}),
        "{v}"
    );
    // A handler that pushes none: an empty list for its ECTX; text says so.
    let img = image();
    let v = json(&softspin(&[
        "sim", "--image", &img, "--ph", "echo_ph", "--json",
    ]));
    let name = v["handlers"][0]["ectx"].as_str().unwrap().to_string();
    assert_eq!(v["counters"], serde_json::json!({ name: [] }), "{v}");
    let o = softspin(&["sim", "--image", &img, "--ph", "echo_ph"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("counters           none"));
}

/// A long run shows packets done with an ETA on a terminal (a pty from
/// script(1)); nothing with --json, nor when stderr is not a terminal.
#[test]
fn progress_has_an_eta_on_a_terminal_only() {
    if Command::new("script").arg("--version").output().is_err() {
        softspin_testkit::skip("progress on a terminal needs script(1) (util-linux)");
        return;
    }
    let img = image();
    let args = [
        "sim",
        "--image",
        &img,
        "--ph",
        "echo_ph",
        "--messages",
        "100000",
        "--packets",
        "8",
        "--size",
        "256",
    ];
    let on_tty = |extra: &[&str]| {
        let cmd = std::iter::once(env!("CARGO_BIN_EXE_softspin"))
            .chain(args.iter().copied())
            .chain(extra.iter().copied())
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let o = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let shown = on_tty(&[]);
    assert!(
        shown.contains("/800000 packets (") && shown.contains("ETA "),
        "{shown}"
    );
    let shown = on_tty(&["--json"]);
    assert!(!shown.contains("simulating"), "{shown}");
    let o = softspin(&args);
    assert!(o.status.success() && o.stderr.is_empty(), "{o:?}");
}
