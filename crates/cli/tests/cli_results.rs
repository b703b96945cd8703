//! `softspin isa handler` on the NIC model, the task descriptor a handler
//! sees, load/install checks on images and scenarios, stack and scratchpad
//! diagnostics, and the result files of `softspin sim` (`--records`,
//! `--dump-host`, `--dump-handler-mem`, `--stdout`). Handlers:
//! tests/handlers/cli_test.c. Expected values are computed here from the
//! configuration and the packets, never taken from the handlers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use softspin_engine::ectx::DEFAULT_HOST_BASE;
use softspin_engine::traffic::Arrival;
use softspin_engine::{EctxSpec, Engine, NicConfig};
use softspin_hpu::abi::{HandlerArgs, TaskLayout};
use softspin_hpu::ElfImage;
use softspin_testkit::{describe, root, scratch};

fn softspin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_softspin"))
}

/// cli_test.c built for the PsPIN profile (once per test process).
fn elf() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let out = scratch("cli-results").join("cli_test.elf");
        let o = softspin()
            .arg("build")
            .arg(root().join("crates/cli/tests/handlers/cli_test.c"))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "build failed: {}", describe(&o));
        out
    })
}

fn isa_handler(sym: &str, extra: &[&str]) -> Output {
    softspin()
        .args(["isa", "handler"])
        .arg(elf())
        .args(["--handler", sym])
        .args(extra)
        .output()
        .unwrap()
}

// -- isa handler runs on the engine -----------------------------------------

/// The old single-HPU harness gave handlers an 8 KiB stack; the profile has
/// 1 KiB, so this handler passed `isa handler` and failed under `sim`.
#[test]
fn isa_handler_uses_the_profiles_stack() {
    let o = isa_handler("stack_hog_ph", &[]);
    assert_eq!(o.status.code(), Some(70), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stack overflow"), "{}", describe(&o));
    // The same handler fits a larger stack (config override).
    let cfg = scratch("cli-results").join("bigstack.toml");
    std::fs::write(&cfg, "profile = \"pspin\"\nhpu_stack_size = 8192\n").unwrap();
    let o = isa_handler("stack_hog_ph", &["--config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

#[test]
fn isa_handler_prints_output_writes_and_counts() {
    let o = isa_handler("record_ph", &["--packet-size", "64"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    // Message 0: host[0] = 3 * 0 + 1.
    assert!(
        s.contains(&format!(
            "host write: 0x{DEFAULT_HOST_BASE:x} <- 0x{:016x}",
            1
        )),
        "{s}"
    );
    let last = s.lines().last().unwrap();
    assert!(
        last.starts_with("handler=record_ph returned instructions="),
        "{s}"
    );
    let n = |k: &str| -> u64 {
        last.split(&format!("{k}="))
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(
        n("instructions") > 5 && n("cycles") >= n("instructions") && n("loads") >= 1,
        "{last}"
    );
}

#[test]
fn isa_handler_kind_follows_the_symbol_or_flag() {
    for (sym, extra, want) in [
        ("kinds_hh", &[][..], "hh\n"),
        ("kinds_th", &[][..], "th\n"),
        ("kinds_th", &["--kind", "ph"][..], "th\n"),
    ] {
        let o = isa_handler(sym, extra);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).starts_with(want),
            "{}",
            describe(&o)
        );
    }
}

#[test]
fn isa_handler_rejects_unknown_symbols_and_big_packets() {
    let o = isa_handler("no_such_ph", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no_such_ph"),
        "{}",
        describe(&o)
    );
    let o = isa_handler("record_ph", &["--packet-size", "4096"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("pkt_slot_size"),
        "{}",
        describe(&o)
    );
}

// -- the task descriptor ----------------------------------------------------

/// What a handler reads from `task_t` and `handler_args_t`, byte for byte,
/// against values derived from the configuration and the packet.
#[test]
fn task_descriptor_matches_the_configuration() {
    let cfg = NicConfig::pspin();
    let image = ElfImage::load(elf()).unwrap();
    let mut e = Engine::new(cfg.clone()).unwrap();
    let mut s = EctxSpec::new("dump", image);
    s.ph = Some("task_dump_ph".into());
    s.scratchpad = vec![128, 0, 256, 64];
    s.host_window = (DEFAULT_HOST_BASE, 4096);
    let id = e.install(s).unwrap();
    e.add_host_region(DEFAULT_HOST_BASE, 4096).unwrap();
    e.activate(id).unwrap();
    let msg = 6; // home cluster 6 mod 4 = 2
    e.inject(Arrival {
        time_ps: 0,
        frame: vec![7; 300],
        msg_id: msg,
        eom: true,
        origin: "test".into(),
        ectx: None,
    });
    e.run(None, |_| {}).unwrap();
    assert!(e.errors().is_empty(), "{:?}", e.errors());
    let mut host = vec![0u8; 512];
    e.host_memory().read(DEFAULT_HOST_BASE, &mut host);
    let l = TaskLayout::new(cfg.clusters);
    let u = |at: u32| u32::from_le_bytes(host[at as usize..at as usize + 4].try_into().unwrap());
    let ectx = e.ectx(id).unwrap();
    assert_eq!(u(TaskLayout::HANDLER_MEM), ectx.handler_mem.0);
    assert_eq!(u(TaskLayout::HANDLER_MEM_SIZE), ectx.handler_mem.1);
    assert_eq!(u(TaskLayout::PKT_MEM_SIZE), 300);
    // Sizes are rounded up to 64-byte granules; no scratchpad: null.
    for (k, want) in [128u32, 0, 256, 64].into_iter().enumerate() {
        assert_eq!(
            u(l.scratchpad_size() + 4 * k as u32),
            want,
            "scratchpad_size[{k}]"
        );
        let a = u(TaskLayout::SCRATCHPAD + 4 * k as u32);
        let l1 = softspin_hpu::abi::L1_BASE + k as u32 * softspin_hpu::abi::L1_CLUSTER_STRIDE;
        if want == 0 {
            assert_eq!(a, 0);
        } else {
            assert!(
                a >= l1 + cfg.l1_scratch_base() && a + want <= l1 + cfg.l1_size,
                "scratchpad[{k}] 0x{a:x}"
            );
        }
    }
    assert_eq!(u(l.host_mem_high()), (DEFAULT_HOST_BASE >> 32) as u32);
    assert_eq!(u(l.host_mem_low()), DEFAULT_HOST_BASE as u32);
    assert_eq!(u(l.host_mem_size()), 4096);
    let slot = u(l.l2_pkt_mem()) - softspin_hpu::abi::L2_PKT_BASE;
    assert_eq!(slot % cfg.pkt_slot_size, 0);
    assert_eq!(u(l.home_cluster_id()), msg % cfg.clusters);
    assert_eq!(u(l.flow_id()), msg);
    // handler_args_t: the task pointer, and an HPU of the home cluster.
    let a = |at: u32| u(256 + at);
    let cluster = a(HandlerArgs::CLUSTER_ID);
    assert_eq!(cluster, msg % cfg.clusters);
    assert_eq!(
        a(HandlerArgs::HPU_GID),
        cluster * cfg.hpus_per_cluster + a(HandlerArgs::HPU_ID)
    );
    let l1 = softspin_hpu::abi::L1_BASE + cluster * softspin_hpu::abi::L1_CLUSTER_STRIDE;
    assert_eq!(
        a(HandlerArgs::TASK),
        l1 + cfg.l1_pkt_buffer + a(HandlerArgs::HPU_ID) * cfg.runtime_area()
    );
    assert_eq!(
        u(TaskLayout::PKT_MEM) & !(cfg.l1_pkt_buffer.next_power_of_two() - 1),
        l1,
        "packet copy in the home cluster's L1"
    );
}

// -- images and scenarios rejected at load/install --------------------------

/// Patch e_entry (ELF32 header offset 24) of a bare-metal program.
#[test]
fn odd_entry_point_is_rejected() {
    let dir = scratch("cli-results");
    let src = dir.join("bare.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let elf = dir.join("bare.elf");
    let o = softspin()
        .args(["build", "--bare"])
        .arg(&src)
        .arg("-o")
        .arg(&elf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    let mut b = std::fs::read(&elf).unwrap();
    let entry = u32::from_le_bytes(b[24..28].try_into().unwrap());
    b[24..28].copy_from_slice(&(entry | 1).to_le_bytes());
    let odd = dir.join("odd.elf");
    std::fs::write(&odd, &b).unwrap();
    let o = softspin().args(["isa", "run"]).arg(&odd).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("entry point"),
        "{}",
        describe(&o)
    );
}

#[test]
fn handler_symbol_must_be_code() {
    let mut img = ElfImage::load(elf()).unwrap();
    let code = img.symbol("record_ph").unwrap();
    let data = img.symbol("kinds").unwrap();
    img.symbols.insert("odd_ph".into(), code + 1);
    img.symbols.insert("data_ph".into(), data);
    for (sym, want) in [
        ("odd_ph", "is odd"),
        ("data_ph", "outside the image's executable segments"),
    ] {
        let mut e = Engine::new(NicConfig::pspin()).unwrap();
        let mut s = EctxSpec::new("bad", img.clone());
        s.ph = Some(sym.into());
        let err = e.install(s).unwrap_err().to_string();
        assert!(err.contains(want) && err.contains(sym), "{err}");
    }
}

#[test]
fn two_ectxs_of_one_name_are_rejected() {
    let img = ElfImage::load(elf()).unwrap();
    let mut e = Engine::new(NicConfig::pspin()).unwrap();
    let mut s = EctxSpec::new("same", img.clone());
    s.ph = Some("record_ph".into());
    e.install(s.clone()).unwrap();
    let err = e.install(s).unwrap_err().to_string();
    assert!(
        err.contains("`name`") && err.contains("already used"),
        "{err}"
    );
}

#[test]
fn scenario_with_too_many_scratchpads_or_a_reused_name_is_rejected() {
    let dir = scratch("cli-results");
    let elf = elf().display().to_string();
    for (name, body, want) in [
        ("scratch", format!("[[ectx]]\nname = \"a\"\nimage = \"{elf}\"\nph = \"record_ph\"\nscratchpad = [64, 64, 64, 64, 64]\n"), "4 clusters"),
        (
            "names",
            format!("[[ectx]]\nname = \"a\"\nimage = \"{elf}\"\nph = \"record_ph\"\n[[ectx]]\nname = \"a\"\nimage = \"{elf}\"\nph = \"hello_ph\"\nudp_dst_port = 7\n"),
            "name",
        ),
    ] {
        let p = dir.join(format!("{name}.toml"));
        std::fs::write(&p, body).unwrap();
        let o = softspin().args(["sim", "--quiet", "--scenario"]).arg(&p).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(want), "{}", describe(&o));
    }
}

// -- diagnostics ---------------------------------------------------------------

#[test]
fn stack_overflow_names_the_stack_size_and_setting() {
    let o = isa_handler("stack_hog_ph", &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("stack overflow: HPU stack is 1024 bytes (hpu_stack_size / --stack-size)"),
        "{}",
        describe(&o)
    );
    let o = isa_handler("stack_hog_ph", &["--stack-size", "8192"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    // Other faults are not called stack overflows.
    let o = isa_handler("scratch_ph", &[]);
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("stack overflow"),
        "{}",
        describe(&o)
    );
}

/// Issue 24: a frame larger than the stack by more than a fixed guard gave a
/// bare store fault; any such frame is a stack overflow, and a NULL store
/// (SP fine, nothing mapped near 0) is not.
#[test]
fn stack_overflow_is_found_however_far_below_the_stack() {
    for n in [1100, 2048, 8192] {
        let o = isa_handler(&format!("locals_{n}_ph"), &[]);
        assert_eq!(o.status.code(), Some(70), "{n}: {}", describe(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("stack overflow: HPU stack is 1024 bytes (hpu_stack_size / --stack-size)"),
            "{n}: {}",
            describe(&o)
        );
        let o = isa_handler(&format!("locals_{n}_ph"), &["--stack-size", "16384"]);
        assert_eq!(o.status.code(), Some(0), "{n}: {}", describe(&o));
    }
    let o = isa_handler("null_store_ph", &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("store to address 0x00000000, near NULL"),
        "{}",
        describe(&o)
    );
    assert!(!err.contains("stack overflow"), "{}", describe(&o));
}

#[test]
fn null_scratchpad_points_at_the_flag() {
    let o = isa_handler("scratch_ph", &[]);
    assert_eq!(o.status.code(), Some(70), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no scratchpad on cluster 0") && err.contains("--scratchpad"),
        "{}",
        describe(&o)
    );
    // Issue 24: the fault is named for what it is (a NULL access) first.
    assert!(
        err.contains("load from address 0x00000004, near NULL: nothing is mapped there (a NULL pointer); if it is task->scratchpad[0]: ECTX"),
        "{}",
        describe(&o)
    );
    let o = isa_handler("scratch_ph", &["--scratchpad", "64"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

// -- sim results without a host program --------------------------------------

fn sim(args: &[&str]) -> Output {
    softspin()
        .args(["sim", "--quiet", "--image"])
        .arg(elf())
        .args(args)
        .output()
        .unwrap()
}

fn read_records(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn records_and_dumps_show_each_message() {
    let dir = scratch("cli-results");
    let (rec, host, hmem) = (
        dir.join("r.jsonl"),
        dir.join("host.bin"),
        dir.join("hmem.bin"),
    );
    let o = sim(&[
        "--hh",
        "kinds_hh",
        "--ph",
        "record_ph",
        "--messages",
        "5",
        "--packets",
        "3",
        "--host-size",
        "4096",
        "--records",
        rec.to_str().unwrap(),
        "--dump-host",
        host.to_str().unwrap(),
        "--dump-handler-mem",
        hmem.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let recs = read_records(&rec);
    assert_eq!(recs.len(), 5, "{recs:?}");
    let mut ids: Vec<u64> = recs.iter().map(|r| r["msg_id"].as_u64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
    for r in &recs {
        let m = r["msg_id"].as_u64().unwrap();
        assert_eq!(r["packets"], 3, "{r}");
        assert_eq!(r["errors_total"], 0, "{r}");
        let (f, l, c) = (
            r["first_arrival_ns"].as_f64().unwrap(),
            r["last_arrival_ns"].as_f64().unwrap(),
            r["completion_ns"].as_f64().unwrap(),
        );
        assert!(f < l && l < c, "{r}");
        // One host-direct write per packet, all to slot m with 3m + 1.
        let w = r["host_writes"].as_array().unwrap();
        assert_eq!(w.len(), 3, "{r}");
        for x in w {
            assert_eq!(
                x["addr"].as_u64().unwrap(),
                DEFAULT_HOST_BASE + 8 * m,
                "{r}"
            );
            assert_eq!(x["value"].as_u64().unwrap(), 3 * m + 1, "{r}");
        }
    }
    let h = std::fs::read(&host).unwrap();
    assert_eq!(h.len(), 4096);
    for m in 0..5usize {
        assert_eq!(
            u64::from_le_bytes(h[8 * m..8 * m + 8].try_into().unwrap()),
            3 * m as u64 + 1
        );
    }
    assert!(h[40..].iter().all(|&b| b == 0));
    // Handler memory starts at the image's data; `kinds` has bit 0 set by
    // the header handler.
    let img = ElfImage::load(elf()).unwrap();
    let d0 = img
        .segments
        .iter()
        .filter(|s| !s.perm.has(softspin_hpu::Perm::X))
        .map(|s| s.vaddr)
        .min()
        .unwrap();
    let k = (img.symbol("kinds").unwrap() - d0) as usize;
    let m = std::fs::read(&hmem).unwrap();
    assert_eq!(u32::from_le_bytes(m[k..k + 4].try_into().unwrap()), 1);
}

#[test]
fn records_carry_each_messages_errors() {
    let rec = scratch("cli-results").join("err.jsonl");
    let o = sim(&[
        "--ph",
        "scratch_ph",
        "--messages",
        "3",
        "--records",
        rec.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let recs = read_records(&rec);
    assert_eq!(recs.len(), 3);
    for r in &recs {
        assert_eq!(r["errors_total"], 1, "{r}");
        let e = &r["errors"][0];
        assert_eq!(e["msg_id"], r["msg_id"], "{r}");
        assert!(
            e["detail"].as_str().unwrap().contains("--scratchpad"),
            "{r}"
        );
    }
}

#[test]
fn stdout_is_in_nic_time_order_with_prefixes() {
    let o = sim(&[
        "--ph",
        "hello_ph",
        "--messages",
        "6",
        "--packets",
        "2",
        "--concurrent",
        "3",
        "--stdout",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("hello from message"))
        .collect();
    assert_eq!(lines.len(), 12, "{s}");
    let mut last = 0.0;
    for l in lines {
        // [T ns ECTX msg M hpu H] hello from message M
        let (prefix, text) = l.split_once("] ").unwrap();
        let f: Vec<&str> = prefix.trim_start_matches('[').split(' ').collect();
        let t: f64 = f[0].parse().unwrap();
        assert_eq!(f[1], "ns", "{l}");
        assert_eq!(f[3], "msg", "{l}");
        assert_eq!(text, format!("hello from message {}", f[4]), "{l}");
        assert_eq!(f[5], "hpu", "{l}");
        assert!(f[6].parse::<u32>().unwrap() < 32, "{l}");
        assert!(t >= last, "out of order at {l}");
        last = t;
    }
    // Nothing of it on stderr any more.
    assert!(!String::from_utf8_lossy(&o.stderr).contains("hello from message"));
}

/// `sim --jit` on a CLI built without the JIT: a clear error, exit status
/// 1, nothing simulated (not a silent run on the interpreter); so do
/// `nic --jit` and `isa run --jit`.
#[cfg(not(feature = "jit"))]
#[test]
fn jit_flag_without_the_jit_feature_is_an_error() {
    let sim = [
        "sim",
        "--ph",
        "record_ph",
        "--messages",
        "1",
        "--jit",
        "--json",
    ];
    // The interface does not exist: the flag is refused before attaching.
    let nic = [
        "nic",
        "--iface",
        "softspin-none0",
        "--ph",
        "record_ph",
        "--match",
        "udp:9000",
        "--jit",
        "--json",
    ];
    for args in [&sim[..], &nic[..]] {
        let o = softspin()
            .args(&args[..1])
            .arg("--image")
            .arg(elf())
            .args(&args[1..])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", describe(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--features jit"),
            "{args:?}: {}",
            describe(&o)
        );
        assert!(o.stdout.is_empty(), "{args:?}: {}", describe(&o));
    }
    let o = softspin()
        .args(["isa", "run", "--jit"])
        .arg(elf())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "isa run: {}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--features jit"),
        "isa run: {}",
        describe(&o)
    );
    // A threshold of 0 or past 32 bits is a usage error (exit status 2),
    // refused while the arguments are parsed.
    for n in ["0", "5000000000"] {
        let o = softspin()
            .args(["isa", "run", "--jit", "--jit-after", n])
            .arg(elf())
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "--jit-after {n}: {}",
            describe(&o)
        );
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--jit-after"),
            "--jit-after {n}: {}",
            describe(&o)
        );
    }
}

/// The shipped softspin (default features) runs handlers through the JIT
/// unless `--no-jit` says otherwise, and `sim --json`'s `hpu_engine` says
/// which ran; a softspin built without it interprets. Everything else in
/// the report and the records is the same whichever engine ran.
#[test]
fn default_engine_is_the_jit_and_no_jit_interprets() {
    let dir = scratch("cli-results").join("engine");
    std::fs::create_dir_all(&dir).unwrap();
    let run = |name: &str, flags: &[&str]| {
        let rec = dir.join(format!("{name}.jsonl"));
        let o = softspin()
            .arg("sim")
            .arg("--image")
            .arg(elf())
            .args(["--ph", "record_ph", "--messages", "20", "--packets", "4"])
            .args(["--json", "--quiet", "--records"])
            .arg(&rec)
            .args(flags)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", describe(&o));
        let mut j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let engine = j["hpu_engine"].take();
        j.as_object_mut().unwrap().remove("hpu_engine");
        (engine, j, read_records(&rec))
    };
    let (default, report, records) = run("default", &[]);
    let (interp, report_i, records_i) = run("no_jit", &["--no-jit"]);
    assert_eq!(interp, serde_json::json!({ "kind": "interpreter" }));
    assert_eq!(report, report_i, "the report depends on the engine");
    assert_eq!(records, records_i, "the records depend on the engine");
    assert!(!records.is_empty());
    if cfg!(feature = "jit") {
        let after = softspin_hpu::JIT_COMPILE_AFTER;
        assert_eq!(default["kind"], "jit", "{default}");
        assert_eq!(default["compile_after"], after, "{default}");
        // Every region compiled at its first entry: the JIT really ran.
        let (all, report_j, records_j) = run("jit1", &["--jit", "--jit-after", "1"]);
        assert_eq!(all["kind"], "jit", "{all}");
        assert!(all["regions_compiled"].as_u64().unwrap() > 0, "{all}");
        assert_eq!(report, report_j, "the report depends on the threshold");
        assert_eq!(records, records_j, "the records depend on the threshold");
    } else {
        assert_eq!(default, interp);
    }
    // Both at once is a usage error.
    let o = softspin()
        .args(["sim", "--jit", "--no-jit", "--ph", "record_ph", "--image"])
        .arg(elf())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    // `isa run --stats` names the engine too; `--version` the default.
    let kernel = dir.join("kernel.elf");
    let o = softspin()
        .args(["build", "--bare", "-DROUNDS=20"])
        .arg(root().join("bench/hpu_kernel.c"))
        .arg("-o")
        .arg(&kernel)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    let isa = |flags: &[&str]| {
        let o = softspin()
            .args(["isa", "run", "--stats"])
            .args(flags)
            .arg(&kernel)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", describe(&o));
        let engine = String::from_utf8_lossy(&o.stderr)
            .split_whitespace()
            .find_map(|w| w.strip_prefix("engine=").map(str::to_string))
            .unwrap_or_else(|| panic!("no engine= in {}", describe(&o)));
        (engine, o.stdout)
    };
    let (e, out) = isa(&[]);
    let (e_i, out_i) = isa(&["--no-jit"]);
    assert_eq!(
        e,
        if cfg!(feature = "jit") {
            "jit"
        } else {
            "interpreter"
        }
    );
    assert_eq!(e_i, "interpreter");
    assert_eq!(out, out_i, "isa run's output depends on the engine");
    let o = softspin().arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&o.stdout);
    let want = if cfg!(feature = "jit") {
        "JIT by default"
    } else {
        "without the JIT"
    };
    assert!(v.contains(want), "{v}");
}
