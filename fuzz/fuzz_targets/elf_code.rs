//! Arbitrary bytes as handler code: they replace the code of a well-formed
//! handler image (examples/empty), so coverage reaches the decoder, the
//! interpreter and the command unit (ecalls with arbitrary arguments), not
//! the ELF parser. The first byte picks the handler kind and packet size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_engine::EctxSpec;
use softspin_hpu::Perm;
use softspin_fuzz::{handler, packet, run_engine, small_config};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, code)) = data.split_first() else { return };
    let mut img = handler(0);
    let Some(text) = img.segments.iter_mut().find(|s| s.perm.has(Perm::X)) else { return };
    text.data = code.to_vec();
    text.memsz = code.len() as u32;
    let entry = text.vaddr;
    img.symbols.insert("fuzz_handler".into(), entry);
    let mut spec = EctxSpec::new("fuzz", img);
    let h = Some("fuzz_handler".to_string());
    match sel % 3 {
        0 => spec.ph = h,
        1 => spec.hh = h,
        _ => spec.th = h,
    }
    let size = 64 + (sel as usize >> 2) * 16;
    // Two packets of one message: header, payload and completion handlers all run.
    run_engine(small_config(), spec, vec![packet(size, 0, false), packet(size, 0, true)]);
});
