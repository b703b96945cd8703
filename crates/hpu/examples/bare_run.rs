//! Run a bare-metal RV32 ELF on one HPU with the default timing model, as
//! `softspin isa run --stats` does, without building the whole CLI: the
//! quick loop for profiling the interpreter (`valgrind --tool=callgrind`).
//!
//!     cargo run --release -p softspin-hpu --example bare_run -- prog.elf
//!     cargo run --release -p softspin-hpu --features jit --example bare_run -- --jit [--hw-loops] prog.elf

use softspin_hpu::baremetal::{BareMetal, BareMetalConfig};
use softspin_hpu::ElfImage;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let jit = flag("--jit");
    let path = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .expect("usage: bare_run [--jit] [--hw-loops] ELF");
    let image = ElfImage::load(std::path::Path::new(&path)).expect("cannot load ELF");
    let mut cfg = BareMetalConfig::default();
    // PULP hardware loops, as the NIC profiles model them.
    cfg.timing.hw_loops = flag("--hw-loops");
    let mut bm = BareMetal::load(&image, &cfg).expect("cannot map ELF");
    let t0 = std::time::Instant::now();
    let o = if jit {
        run_jit(&mut bm)
    } else {
        bm.run(std::io::stdout())
    };
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "stop={:?} instructions={} cycles={}",
        o.stop, o.instructions, o.cycles
    );
    // The rest of the accounting, for before/after comparisons of the interpreter.
    let h = &bm.hpu;
    let c = h.mem.counts();
    println!(
        "loads={} stores={} taken={} by_class={:?} stall={}",
        h.loads, h.stores, h.taken_branches, c.by_class, c.stall_cycles
    );
    eprintln!(
        "wall_s={wall:.6} mips={:.1}",
        o.instructions as f64 / wall / 1e6
    );
}

#[cfg(feature = "jit")]
fn run_jit(bm: &mut BareMetal) -> softspin_hpu::baremetal::Outcome {
    let mut jit = softspin_hpu::jit::Jit::new(&bm.program, bm.hpu.timing());
    let o = bm.run_jit(std::io::stdout(), &mut jit);
    eprintln!(
        "jit: {} regions compiled, {} entries refused",
        jit.compiled, jit.refused
    );
    o
}

#[cfg(not(feature = "jit"))]
fn run_jit(_: &mut BareMetal) -> softspin_hpu::baremetal::Outcome {
    panic!("built without the `jit` feature");
}
