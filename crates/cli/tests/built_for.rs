//! Defaults that agree (issue 26 item 7): `softspin build --profile`
//! records the profile in the image, `softspin sim` without flags runs it
//! with that profile and its frame kind, and flags that would feed its
//! handlers frames they cannot parse are refused, naming the flags, instead
//! of a run that "succeeds" with no handler matching its frames.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn softspin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
        .args(args)
        .output()
        .unwrap()
}

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("softspin-built-for-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Answers Ethernet/IPv4/UDP frames only (as FPsPIN's handlers do): any
/// other frame gets no reply, so IP-first frames would give 0 outbound.
const UDP_ETH_ECHO: &str = r#"#include <spin.h>
__handler__ void echo_ph(handler_args_t *a)
{
    uint8_t *p = (uint8_t *)a->task->pkt_mem;
    uint32_t len = a->task->pkt_mem_size;
    eth_hdr_t *eth = (eth_hdr_t *)p;
    ipv4_hdr_t *ip = (ipv4_hdr_t *)(p + sizeof(eth_hdr_t));
    if (len < sizeof(eth_udp_pkt_hdr_t) || ntohs(eth->ethertype) != ETHERTYPE_IPV4 ||
        ip->protocol != IP_PROTO_UDP)
        return;
    spin_send_packet(p, len, NULL);
}
"#;

fn build(d: &Path, profile: Option<&str>) -> String {
    let src = d.join("echo.c");
    std::fs::write(&src, UDP_ETH_ECHO).unwrap();
    let out = d.join(format!("echo-{}.elf", profile.unwrap_or("default")));
    let mut args = vec!["build"];
    if let Some(p) = profile {
        args.extend(["--profile", p]);
    }
    args.extend([src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let o = softspin(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.to_str().unwrap().to_string()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {} stderr {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn sim(img: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "sim",
        "--image",
        img,
        "--ph",
        "echo_ph",
        "--messages",
        "5",
        "--json",
    ];
    args.extend(extra);
    softspin(&args)
}

#[test]
fn sim_runs_an_fpspin_image_with_its_profile_and_ethernet_frames() {
    let d = dir("fp");
    let img = build(&d, Some("fpspin"));
    let o = sim(&img, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&o);
    assert_eq!(r["profile"], "fpspin");
    // Every one of the 5 Ethernet frames is answered.
    assert_eq!(r["outbound_packets"], 5, "{r}");
    // The same with the flags spelled out: they agree with the image.
    let o = sim(&img, &["--profile", "fpspin", "--frame", "eth"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json(&o)["outbound_packets"], 5);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn flags_that_contradict_the_image_are_refused_naming_the_flags() {
    let d = dir("contra");
    let img = build(&d, Some("fpspin"));
    // IP-first frames: the handler could match none of them (0 outbound,
    // exit 0 before this check).
    let o = sim(&img, &["--frame", "ip"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--frame ip") && err.contains("--frame eth") && err.contains("fpspin"),
        "{err}"
    );
    let o = sim(&img, &["--profile", "pspin"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--profile fpspin"), "{err}");
    // A pspin image takes IP-first frames; a pcap holds Ethernet frames.
    let pimg = build(&d, Some("pspin"));
    let pcap = d.join("in.pcap");
    let o = sim(&img, &["--pcap-out", pcap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = softspin(&[
        "sim",
        "--image",
        &pimg,
        "--ph",
        "echo_ph",
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--pcap") && err.contains("--profile fpspin"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn images_built_without_a_profile_keep_the_pspin_defaults() {
    let d = dir("default");
    let img = build(&d, None);
    // No record: PsPIN's profile and IP-first frames, as before; any
    // --frame is taken as given.
    let o = sim(&img, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&o);
    assert_eq!(r["profile"], "pspin");
    assert_eq!(r["outbound_packets"], 0);
    let o = sim(&img, &["--frame", "eth"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json(&o)["outbound_packets"], 5);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_configuration_takes_its_base_profiles_frames() {
    let d = dir("config");
    let toml = d.join("nic.toml");
    // Not equal to the profile, so the image records nothing.
    std::fs::write(&toml, "profile = \"fpspin\"\nhpu_stack_size = 2048\n").unwrap();
    let toml = toml.to_str().unwrap();
    let src = d.join("echo.c");
    std::fs::write(&src, UDP_ETH_ECHO).unwrap();
    let img = d.join("echo.elf");
    let img = img.to_str().unwrap();
    let o = softspin(&["build", "--config", toml, src.to_str().unwrap(), "-o", img]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = sim(img, &["--config", toml]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&o);
    assert_eq!(r["profile"], "fpspin");
    assert_eq!(r["outbound_packets"], 5, "{r}");
    let _ = std::fs::remove_dir_all(d);
}
