//! The guest ABI, mirrored from `sdk/include/softspin_abi.h` (the C side is
//! the source of truth; `tests/abi.rs` checks that both agree).

/// Memory map (PsPIN defaults).
pub const L1_BASE: u32 = 0x1000_0000;
pub const L1_CLUSTER_STRIDE: u32 = 0x0040_0000;
pub const L2_HANDLER_BASE: u32 = 0x1C00_0000;
pub const L2_PKT_BASE: u32 = 0x1C40_0000;
pub const PROG_MEM_BASE: u32 = 0x1D00_0000;

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
