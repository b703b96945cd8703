//! Memory per engine (issue 29: thousands of engines in one process), in a
//! process of its own (one test) so the resident-set figures are this
//! test's. The bounds are a few times what `examples/footprint` measures
//! (docs/perf-engine.md "Footprint": 76 KB idle, 142 KB installed, 236 KB
//! after a packet); before the work on it an engine took 320 KB idle and
//! 1.38 MB after a packet, which these bounds refuse.

use softspin_engine::traffic::{build_frame, Arrival, FrameKind};
use softspin_engine::{EctxSpec, Engine, NicConfig};
use softspin_hpu::ElfImage;

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb << 10
}

#[test]
fn engines_cost_memory_only_as_they_are_used() {
    const N: u64 = 300;
    let elf = softspin_testkit::handler_image(
        "footprint-broadcast",
        &[
            "examples/rma_target/handler.c",
            "examples/cluster/broadcast/handler.c",
        ],
    );
    let image = ElfImage::load(&elf).unwrap();
    let frame = build_frame(
        FrameKind::Ip,
        1024,
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        1,
        2,
        |i| i as u8,
    )
    .unwrap();
    let base = rss();
    let mut engines: Vec<Engine> = (0..N)
        .map(|_| Engine::new(NicConfig::pspin()).unwrap())
        .collect();
    let idle = (rss() - base) / N;
    for e in &mut engines {
        let mut s = EctxSpec::new("broadcast", image.clone());
        s.ph = Some("broadcast_ph".into());
        let id = e.install(s).unwrap();
        e.activate(id).unwrap();
    }
    let installed = (rss() - base) / N;
    for e in &mut engines {
        e.inject(Arrival {
            time_ps: 0,
            frame: frame.clone(),
            msg_id: 0,
            eom: true,
            origin: "test".into(),
            ectx: None,
        });
        e.run_until(1_000_000).unwrap();
        assert_eq!(e.report().packets, 1);
    }
    let used = (rss() - base) / N;
    let kb = |b: u64| b >> 10;
    eprintln!(
        "per engine: {} KB idle, {} KB installed, {} KB after a packet",
        kb(idle),
        kb(installed),
        kb(used)
    );
    assert!(idle < 200 << 10, "{} KB per idle engine", kb(idle));
    assert!(
        installed < 400 << 10,
        "{} KB per installed engine",
        kb(installed)
    );
    assert!(
        used < 600 << 10,
        "{} KB per engine after a packet",
        kb(used)
    );
}
