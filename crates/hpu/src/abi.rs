//! The guest ABI, mirrored from `sdk/include/softspin_abi.h` (the C side is
//! the source of truth; `tests/abi.rs` checks that both agree).

/// Memory map (PsPIN defaults).
pub const L1_BASE: u32 = 0x1000_0000;
pub const L1_CLUSTER_STRIDE: u32 = 0x0040_0000;
pub const L2_HANDLER_BASE: u32 = 0x1C00_0000;
pub const L2_PKT_BASE: u32 = 0x1C40_0000;
pub const PROG_MEM_BASE: u32 = 0x1D00_0000;

/// The sizes of the NIC's memory regions in one configuration
/// (`NicConfig::memory_map`); the bases are the fixed ones above. Handler
/// images are linked against it (`sdk/link/handler.ld` holds no sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryMap {
    /// L1 scratchpad per cluster.
    pub l1_size: u32,
    pub l2_handler_size: u32,
    pub l2_pkt_size: u32,
    pub prog_mem_size: u32,
}

impl MemoryMap {
    /// The symbols `handler.ld` reads, named as the macros of
    /// `softspin_abi.h`; passed to the linker as `--defsym=NAME=VALUE`.
    pub fn link_symbols(&self) -> Vec<(String, u32)> {
        [
            ("SOFTSPIN_L1_BASE", L1_BASE),
            ("SOFTSPIN_L1_CLUSTER_STRIDE", L1_CLUSTER_STRIDE),
            ("SOFTSPIN_L1_SIZE", self.l1_size),
            ("SOFTSPIN_L2_HANDLER_BASE", L2_HANDLER_BASE),
            ("SOFTSPIN_L2_HANDLER_SIZE", self.l2_handler_size),
            ("SOFTSPIN_L2_PKT_BASE", L2_PKT_BASE),
            ("SOFTSPIN_L2_PKT_SIZE", self.l2_pkt_size),
            ("SOFTSPIN_PROG_MEM_BASE", PROG_MEM_BASE),
            ("SOFTSPIN_PROG_MEM_SIZE", self.prog_mem_size),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect()
    }

    /// The same symbols as a linker script (`sdk/link/<profile>.ld`, for
    /// make and plain ld.lld users), with a header naming its origin.
    pub fn linker_script(&self, profile: &str) -> String {
        let mut s = format!(
            "/* {profile}.ld - the {profile} profile's memory map for handler.ld.\n \
             * Generated from NicConfig::{profile}() (crates/engine/src/config.rs);\n \
             * crates/sdk-build/tests/profiles.rs checks it (SOFTSPIN_BLESS=1 rewrites). */\n"
        );
        for (n, v) in self.link_symbols() {
            s += &format!("{n} = 0x{v:08X};\n");
        }
        s
    }
}

/// `ecall` service numbers (in a7).
pub mod sys {
    pub const WRITE: u32 = 64;
    pub const EXIT: u32 = 93;
    pub const DMA: u32 = 0x100;
    pub const SEND_PACKET: u32 = 0x101;
    pub const RDMA_PUT: u32 = 0x102;
    pub const DMA_TO_HOST: u32 = 0x103;
    pub const DMA_FROM_HOST: u32 = 0x104;
    pub const WRITE_TO_HOST: u32 = 0x105;
    pub const CMD_WAIT: u32 = 0x106;
    pub const CMD_TEST: u32 = 0x107;
    pub const PUSH_COUNTER: u32 = 0x108;
    pub const NOTIFY_POST: u32 = 0x109;
    pub const NOTIFY_WAIT: u32 = 0x10A;
    pub const NOTIFY_TEST: u32 = 0x10B;
}

/// Error results returned in a0.
pub mod err {
    pub const INVAL: i32 = -1;
    pub const ACCESS: i32 = -2;
    pub const NOSYS: i32 = -3;
    pub const BUSY: i32 = -4;
}

/// Register numbers of the argument registers.
pub const A0: usize = 10;
pub const A1: usize = 11;
pub const A2: usize = 12;
pub const A7: usize = 17;
