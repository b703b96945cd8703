//! ELF loading from byte slices, whatever their alignment (found by the
//! fuzz harness: `ElfImage::parse` rejected a valid image with "Invalid ELF
//! header size or alignment" unless the slice was 4-byte aligned).

use softspin_hpu::ElfImage;

/// A handler image built by `softspin build` from examples/empty/handler.c.
const EMPTY: &[u8] = include_bytes!("../../../fuzz/handlers/empty.elf");

#[test]
fn parses_at_every_alignment() {
    // A heap copy: 8-byte aligned, unlike the included bytes.
    let aligned = EMPTY.to_vec();
    let reference = ElfImage::parse(&aligned).expect("aligned copy parses");
    for shift in 0..8 {
        let mut buf = vec![0u8; shift];
        buf.extend_from_slice(EMPTY);
        let img = ElfImage::parse(&buf[shift..]).unwrap_or_else(|e| panic!("offset {shift}: {e}"));
        assert_eq!(img.segments, reference.segments, "offset {shift}");
        assert_eq!(img.symbols, reference.symbols, "offset {shift}");
        assert!(img.symbols.contains_key("empty_ph"));
    }
}
