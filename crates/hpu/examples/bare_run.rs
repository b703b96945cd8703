//! Run a bare-metal RV32 ELF on one HPU with the default timing model, as
//! `softspin isa run --stats` does, without building the whole CLI: the
//! quick loop for profiling the interpreter (`valgrind --tool=callgrind`).
//!
//!     cargo run --release -p softspin-hpu --example bare_run -- prog.elf

use softspin_hpu::baremetal::{BareMetal, BareMetalConfig};
use softspin_hpu::ElfImage;

fn main() {
    let path = std::env::args().nth(1).expect("usage: bare_run ELF");
    let image = ElfImage::load(std::path::Path::new(&path)).expect("cannot load ELF");
    let mut bm = BareMetal::load(&image, &BareMetalConfig::default()).expect("cannot map ELF");
    let t0 = std::time::Instant::now();
    let o = bm.run(std::io::stdout());
    let wall = t0.elapsed().as_secs_f64();
    println!("stop={:?} instructions={} cycles={}", o.stop, o.instructions, o.cycles);
    // The rest of the accounting, for before/after comparisons of the interpreter.
    let h = &bm.hpu;
    let c = h.mem.counts();
    println!("loads={} stores={} taken={} by_class={:?} stall={}", h.loads, h.stores, h.taken_branches, c.by_class, c.stall_cycles);
    eprintln!("wall_s={wall:.6} mips={:.1}", o.instructions as f64 / wall / 1e6);
}
