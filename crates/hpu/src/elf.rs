//! Loading RV32 ELF images (handler images and bare-metal programs).

use std::collections::BTreeMap;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::{LittleEndian as LE, Object, ObjectSymbol};

use crate::mem::Perm;

/// One PT_LOAD segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u32,
    pub memsz: u32,
    /// Initialised bytes (`filesz`); the rest up to `memsz` is zero.
    pub data: Vec<u8>,
    pub perm: Perm,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.vaddr as u64 + self.memsz as u64
    }
}

/// A region of a memory map that segments are loaded into: the NIC's
/// program memory and L2 handler memory, the bare-metal runner's RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub name: &'static str,
    pub base: u32,
    pub size: u32,
}

impl Region {
    pub fn holds(&self, vaddr: u32, memsz: u32) -> bool {
        vaddr >= self.base && vaddr as u64 + memsz as u64 <= self.base as u64 + self.size as u64
    }
}

/// The most bytes an image file may have: the largest memory map an image
/// loads into (the bare-metal runner's RAM) and as much again for symbols
/// and debug information. Reading stops past it (issue 24: `/dev/zero` as
/// an image ran the process out of memory).
pub const ELF_FILE_CAP: u64 = 2 * crate::baremetal::RAM_SIZE as u64;

/// A parsed image: entry point, loadable segments, and symbols.
#[derive(Clone, Debug)]
pub struct ElfImage {
    pub entry: u32,
    pub segments: Vec<Segment>,
    pub symbols: BTreeMap<String, u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error(transparent)]
    Io(#[from] softspin_input::InputError),
    #[error("not a valid ELF file: {0}")]
    Parse(String),
    #[error("not a 32-bit little-endian RISC-V executable ({0})")]
    WrongTarget(String),
    #[error("no loadable segments")]
    NoSegments,
    #[error("segment at 0x{vaddr:08x} has filesz {filesz} > memsz {memsz}")]
    BadSegment { vaddr: u32, filesz: u32, memsz: u32 },
    #[error("segment at 0x{vaddr:08x} (size 0x{memsz:x}) wraps past the 32-bit address space")]
    SegmentWraps { vaddr: u32, memsz: u32 },
    #[error("segment at 0x{vaddr:08x} (size 0x{memsz:x}) does not fit {region} 0x{base:08x}..0x{end:08x}", end = *base as u64 + *size as u64)]
    OutsideRegion {
        vaddr: u32,
        memsz: u32,
        region: &'static str,
        base: u32,
        size: u32,
    },
    #[error("segments at 0x{a:08x} and 0x{b:08x} overlap")]
    Overlap { a: u32, b: u32 },
    #[error("symbol `{0}` not found in the image")]
    NoSymbol(String),
    /// RISC-V instructions are 2-byte aligned (RVC): an odd address cannot
    /// be fetched.
    #[error("{what} 0x{addr:08x} is odd; RISC-V code addresses are 2-byte aligned")]
    OddCode { what: String, addr: u32 },
    #[error("{what} 0x{addr:08x} lies outside the image's executable segments")]
    NotCode { what: String, addr: u32 },
}

impl ElfImage {
    pub fn load(path: &std::path::Path) -> Result<ElfImage, ElfError> {
        let data = softspin_input::read(path, ELF_FILE_CAP, "handler or bare-metal image")?;
        ElfImage::parse(&data)
    }

    pub fn parse(data: &[u8]) -> Result<ElfImage, ElfError> {
        let perr = |e: object::Error| ElfError::Parse(e.to_string());
        if data.len() < 5 || &data[..4] != b"\x7fELF" {
            return Err(ElfError::Parse("missing ELF magic".into()));
        }
        if data[4] != elf::ELFCLASS32 {
            return Err(ElfError::WrongTarget("not ELFCLASS32".into()));
        }
        let hdr = elf::FileHeader32::<LE>::parse(data).map_err(perr)?;
        let e = LE;
        if hdr.e_ident().data != elf::ELFDATA2LSB {
            return Err(ElfError::WrongTarget("big-endian".into()));
        }
        if hdr.e_machine(e) != elf::EM_RISCV {
            return Err(ElfError::WrongTarget(format!(
                "e_machine={}",
                hdr.e_machine(e)
            )));
        }
        if hdr.e_type(e) != elf::ET_EXEC {
            return Err(ElfError::WrongTarget(
                "not an executable (ET_EXEC); link the object first".into(),
            ));
        }
        let mut segments = Vec::new();
        for ph in hdr.program_headers(e, data).map_err(perr)? {
            if ph.p_type(e) != elf::PT_LOAD || ph.p_memsz(e) == 0 {
                continue;
            }
            let (vaddr, memsz, filesz) = (ph.p_vaddr(e), ph.p_memsz(e), ph.p_filesz(e));
            if filesz > memsz {
                return Err(ElfError::BadSegment {
                    vaddr,
                    filesz,
                    memsz,
                });
            }
            if vaddr as u64 + memsz as u64 > 1 << 32 {
                return Err(ElfError::SegmentWraps { vaddr, memsz });
            }
            let bytes = ph.data(e, data).map_err(|_| {
                ElfError::Parse(format!("segment at 0x{vaddr:08x} lies outside the file"))
            })?;
            let f = ph.p_flags(e);
            let mut perm = Perm(0);
            if f & elf::PF_R != 0 {
                perm = perm | Perm::R;
            }
            if f & elf::PF_W != 0 {
                perm = perm | Perm::W;
            }
            if f & elf::PF_X != 0 {
                perm = perm | Perm::X;
            }
            segments.push(Segment {
                vaddr,
                memsz,
                data: bytes.to_vec(),
                perm,
            });
        }
        if segments.is_empty() {
            return Err(ElfError::NoSegments);
        }
        segments.sort_by_key(|s| s.vaddr);
        for w in segments.windows(2) {
            if w[0].end() > w[1].vaddr as u64 {
                return Err(ElfError::Overlap {
                    a: w[0].vaddr,
                    b: w[1].vaddr,
                });
            }
        }
        let file = object::File::parse(data).map_err(perr)?;
        let mut symbols = BTreeMap::new();
        for s in file.symbols() {
            if let Ok(name) = s.name() {
                if !name.is_empty() && s.is_definition() {
                    symbols.insert(name.to_string(), s.address() as u32);
                }
            }
        }
        let entry = hdr.e_entry(e);
        // Handler images have entry 0 (they are called by symbol); any entry
        // must still be a fetchable address.
        if entry & 1 != 0 {
            return Err(ElfError::OddCode {
                what: "entry point".into(),
                addr: entry,
            });
        }
        Ok(ElfImage {
            entry,
            segments,
            symbols,
        })
    }

    /// The loader rule, one for every memory map (the NIC's, the bare-metal
    /// runner's): each segment lies inside the region `region_of` loads it
    /// into. Loaders check it before they allocate anything for a segment.
    pub fn check_fits(&self, region_of: impl Fn(&Segment) -> Region) -> Result<(), ElfError> {
        for s in &self.segments {
            let r = region_of(s);
            if !r.holds(s.vaddr, s.memsz) {
                return Err(ElfError::OutsideRegion {
                    vaddr: s.vaddr,
                    memsz: s.memsz,
                    region: r.name,
                    base: r.base,
                    size: r.size,
                });
            }
        }
        Ok(())
    }

    /// Check that `addr` can start code: 2-byte aligned and within the
    /// initialised bytes of an executable segment. `what` names it in the
    /// error ("entry point", "handler `foo_ph`").
    pub fn check_code_addr(&self, what: &str, addr: u32) -> Result<u32, ElfError> {
        if addr & 1 != 0 {
            return Err(ElfError::OddCode {
                what: what.into(),
                addr,
            });
        }
        let inside = self.segments.iter().any(|s| {
            s.perm.has(Perm::X) && addr >= s.vaddr && ((addr - s.vaddr) as usize) < s.data.len()
        });
        if !inside {
            return Err(ElfError::NotCode {
                what: what.into(),
                addr,
            });
        }
        Ok(addr)
    }

    /// The address of a handler symbol, checked to be code
    /// ([`ElfImage::check_code_addr`]).
    pub fn code_symbol(&self, name: &str) -> Result<u32, ElfError> {
        let a = self.symbol(name)?;
        self.check_code_addr(&format!("symbol `{name}`"), a)
    }

    pub fn symbol(&self, name: &str) -> Result<u32, ElfError> {
        self.symbols
            .get(name)
            .copied()
            .ok_or_else(|| ElfError::NoSymbol(name.to_string()))
    }

    /// Executable segments as `(address, initialised bytes)`, for decoding.
    pub fn code_ranges(&self) -> Vec<(u32, &[u8])> {
        self.segments
            .iter()
            .filter(|s| s.perm.has(Perm::X))
            .map(|s| (s.vaddr, &s.data[..]))
            .collect()
    }
}
