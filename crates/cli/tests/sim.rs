//! `softspin sim` through its command line: the stable flags, the JSON keys
//! scripts rely on, the output files, and clear errors on bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("softspin-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn softspin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_softspin")).args(args).output().unwrap()
}

fn image() -> String {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let out = dir().join("h.elf");
        let src = root().join("crates/cli/tests/handlers/engine_test.c");
        let o = softspin(&["build", src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.to_str().unwrap().to_string()
    })
    .clone()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("one JSON object on stdout")
}

fn stderr(o: &Output) -> String {
    assert!(!o.status.success(), "expected a failure, stdout: {}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn json_report_has_the_documented_keys() {
    let img = image();
    let v = json(&softspin(&["sim", "--image", &img, "--ph", "echo_ph", "--messages", "10", "--packets", "4", "--size", "256", "--json"]));
    for k in [
        "packets",
        "bytes",
        "throughput_gbps",
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
    assert!(h["cycles_mean"].as_f64().unwrap() > 0.0 && h["instructions_mean"].as_f64().unwrap() > 0.0);
}

#[test]
fn timeline_and_pcap_out_are_written() {
    let img = image();
    let d = dir();
    let (tl, pc) = (d.join("t.json"), d.join("o.pcap"));
    let o = softspin(&[
        "sim", "--image", &img, "--ph", "echo_ph", "--messages", "3", "--packets", "2", "--size", "200", "--frame", "eth", "--json",
        "--timeline", tl.to_str().unwrap(), "--pcap-out", pc.to_str().unwrap(),
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
    let d = dir();
    let good = d.join("good.trace");
    std::fs::write(&good, "# src dst size ipg msgid is_last\n1 2 128 10 0 0\n1 2 128 10 0 1\n1 2 64 5 1 1\n").unwrap();
    let v = json(&softspin(&["sim", "--image", &img, "--ph", "empty_ph", "--trace", good.to_str().unwrap(), "--json"]));
    assert_eq!((v["packets"].as_u64(), v["bytes"].as_u64()), (Some(3), Some(320)));
    let bad = d.join("bad.trace");
    std::fs::write(&bad, "1 2 128 10 0 0\n1 2 lots 10 0 1\n").unwrap();
    let e = stderr(&softspin(&["sim", "--image", &img, "--ph", "empty_ph", "--trace", bad.to_str().unwrap()]));
    assert!(e.contains("bad.trace:2"), "{e}");
    let junk = d.join("junk.pcap");
    std::fs::write(&junk, b"definitely not a pcap").unwrap();
    let e = stderr(&softspin(&["sim", "--image", &img, "--ph", "empty_ph", "--pcap", junk.to_str().unwrap()]));
    assert!(e.contains("junk.pcap"), "{e}");
}

#[test]
fn bad_images_configs_and_packets_are_clear_errors() {
    let img = image();
    let d = dir();
    let e = stderr(&softspin(&["sim", "--image", &img, "--ph", "nope_ph", "--messages", "1"]));
    assert!(e.contains("nope_ph"), "{e}");
    let e = stderr(&softspin(&["sim", "--image", &img, "--messages", "1"]));
    assert!(e.contains("--ph"), "{e}");
    let cfg = d.join("bad.toml");
    std::fs::write(&cfg, "clusters = 0\n").unwrap();
    let e = stderr(&softspin(&["sim", "--image", &img, "--ph", "empty_ph", "--config", cfg.to_str().unwrap()]));
    assert!(e.contains("clusters"), "{e}");
    let e = stderr(&softspin(&["sim", "--image", &img, "--ph", "empty_ph", "--messages", "1", "--size", "4000"]));
    assert!(e.contains("4000 bytes") && e.contains("slot"), "{e}");
    let e = stderr(&softspin(&["sim", "--image", &img, "--ph", "empty_ph", "--profile", "fpspin", "--messages", "1"]));
    assert!(e.contains("NB_CLUSTERS=4"), "{e}");
    let junk = d.join("junk.elf");
    std::fs::write(&junk, b"\x7fELF garbage").unwrap();
    let e = stderr(&softspin(&["sim", "--image", junk.to_str().unwrap(), "--ph", "x", "--messages", "1"]));
    assert!(e.contains("junk.elf"), "{e}");
}

#[test]
fn scenario_file_installs_several_ectxs() {
    let img = image();
    let d = dir();
    let second = d.join("second.elf");
    let src = root().join("crates/cli/tests/handlers/engine_test.c");
    let o = softspin(&[
        "build", src.to_str().unwrap(), "-o", second.to_str().unwrap(), "--data-base", "0x1C100000", "--code-base", "0x1D004000",
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
    let v = json(&softspin(&["sim", "--scenario", sc.to_str().unwrap(), "--messages", "5", "--json"]));
    assert_eq!(v["packets"], 5);
    assert_eq!(v["handlers"].as_array().unwrap().len(), 1);
    assert_eq!(v["handlers"][0]["name"], "a:count_ph");
}
