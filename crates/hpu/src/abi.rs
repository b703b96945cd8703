//! The guest ABI, mirrored from `sdk/include/softspin_abi.h` (the C side is
//! the source of truth; `tests/abi.rs` checks that both agree).

/// Memory map (PsPIN defaults).
pub const L1_BASE: u32 = 0x1000_0000;
pub const L1_CLUSTER_STRIDE: u32 = 0x0040_0000;
pub const L2_HANDLER_BASE: u32 = 0x1C00_0000;
pub const L2_PKT_BASE: u32 = 0x1C40_0000;
pub const PROG_MEM_BASE: u32 = 0x1D00_0000;
/// Where handlers see the first host-memory window by default: a 64-bit
/// host address above 4 GiB, so handlers must carry the high word
/// (`task->host_mem_high`); further windows follow at 4 GiB steps.
pub const HOST_WINDOW_BASE: u64 = 0x7F00_0000_0000;
/// Host windows start this far apart (4 GiB, the most `host_mem_size`
/// describes), so none can grow into the next.
pub const HOST_WINDOW_STRIDE: u64 = 1 << 32;

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

/// Most clusters a NIC configuration may have (`NicConfig::validate`).
pub const MAX_CLUSTERS: u32 = 16;

/// Where each field of the SDK's `task_t` lies (`sdk/include/handler.h`:
/// packed, 32-bit pointers, two arrays of `NB_CLUSTERS` entries), for one
/// cluster count. `tests/abi.rs` checks every offset and the size against
/// `offsetof`/`sizeof` from clang for several cluster counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLayout {
    pub clusters: u32,
}

impl TaskLayout {
    pub const fn new(clusters: u32) -> TaskLayout {
        TaskLayout { clusters }
    }
    pub const HANDLER_MEM: u32 = 0;
    pub const HANDLER_MEM_SIZE: u32 = 4;
    pub const PKT_MEM: u32 = 8;
    pub const PKT_MEM_SIZE: u32 = 12;
    pub const SCRATCHPAD: u32 = 16;
    pub const fn scratchpad_size(&self) -> u32 {
        Self::SCRATCHPAD + 4 * self.clusters
    }
    pub const fn host_mem_high(&self) -> u32 {
        self.scratchpad_size() + 4 * self.clusters
    }
    pub const fn host_mem_low(&self) -> u32 {
        self.host_mem_high() + 4
    }
    pub const fn host_mem_size(&self) -> u32 {
        self.host_mem_high() + 8
    }
    pub const fn l2_pkt_mem(&self) -> u32 {
        self.host_mem_high() + 12
    }
    pub const fn home_cluster_id(&self) -> u32 {
        self.host_mem_high() + 16
    }
    pub const fn flow_id(&self) -> u32 {
        self.host_mem_high() + 20
    }
    /// `sizeof(task_t)`.
    pub const fn size(&self) -> u32 {
        self.flow_id() + 4
    }
    /// Every scalar field and array start as (C name, offset), in order.
    pub fn fields(&self) -> [(&'static str, u32); 12] {
        [
            ("handler_mem", Self::HANDLER_MEM),
            ("handler_mem_size", Self::HANDLER_MEM_SIZE),
            ("pkt_mem", Self::PKT_MEM),
            ("pkt_mem_size", Self::PKT_MEM_SIZE),
            ("scratchpad", Self::SCRATCHPAD),
            ("scratchpad_size", self.scratchpad_size()),
            ("host_mem_high", self.host_mem_high()),
            ("host_mem_low", self.host_mem_low()),
            ("host_mem_size", self.host_mem_size()),
            ("l2_pkt_mem", self.l2_pkt_mem()),
            ("home_cluster_id", self.home_cluster_id()),
            ("flow_id", self.flow_id()),
        ]
    }
}

/// One `task_t` as the NIC fills it in before a handler call (the values;
/// [`TaskLayout`] says where they go). No allocation: written per packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskDescriptor {
    /// The ECTX's L2 handler memory.
    pub handler_mem: u32,
    pub handler_mem_size: u32,
    /// The packet (header and payload handlers) or nothing the handler
    /// should read (completion handler): see docs/sdk.md.
    pub pkt_mem: u32,
    pub pkt_mem_size: u32,
    /// Per-cluster scratchpad (address, size); the first `clusters` are
    /// written.
    pub scratchpad: [(u32, u32); MAX_CLUSTERS as usize],
    /// The host window: guest-visible 64-bit base and size.
    pub host_mem: u64,
    pub host_mem_size: u32,
    pub l2_pkt_mem: u32,
    pub home_cluster_id: u32,
    pub flow_id: u32,
}

impl TaskDescriptor {
    /// Encode for `clusters` clusters into `out[..TaskLayout::new(clusters).size()]`
    /// (little-endian, as RV32 reads it). `clusters` must be at most
    /// [`MAX_CLUSTERS`] and `out` long enough (both checked by the config).
    pub fn encode(&self, clusters: u32, out: &mut [u8]) {
        self.encode_ectx_fields(clusters, out);
        self.encode_task_fields(clusters, out);
    }

    /// The fields that stay the same for every task of an ECTX (its handler
    /// memory, scratchpads and host window): the engine encodes them once
    /// per ECTX and copies them per task.
    pub fn encode_ectx_fields(&self, clusters: u32, out: &mut [u8]) {
        let l = TaskLayout::new(clusters);
        let mut put = |at: u32, v: u32| put_u32(out, at, v);
        put(TaskLayout::HANDLER_MEM, self.handler_mem);
        put(TaskLayout::HANDLER_MEM_SIZE, self.handler_mem_size);
        for (k, &(addr, size)) in self.scratchpad.iter().take(clusters as usize).enumerate() {
            put(TaskLayout::SCRATCHPAD + 4 * k as u32, addr);
            put(l.scratchpad_size() + 4 * k as u32, size);
        }
        put(l.host_mem_high(), (self.host_mem >> 32) as u32);
        put(l.host_mem_low(), self.host_mem as u32);
        put(l.host_mem_size(), self.host_mem_size);
    }

    /// The fields that change from task to task (its packet and message).
    pub fn encode_task_fields(&self, clusters: u32, out: &mut [u8]) {
        let l = TaskLayout::new(clusters);
        put_u32(out, TaskLayout::PKT_MEM, self.pkt_mem);
        put_u32(out, TaskLayout::PKT_MEM_SIZE, self.pkt_mem_size);
        put_u32(out, l.l2_pkt_mem(), self.l2_pkt_mem);
        put_u32(out, l.home_cluster_id(), self.home_cluster_id);
        put_u32(out, l.flow_id(), self.flow_id);
    }
}

fn put_u32(out: &mut [u8], at: u32, v: u32) {
    out[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
}

/// PsPIN's `handler_args_t` (`sdk/include/handler.h`): what a handler
/// receives (in a0, by pointer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandlerArgs {
    /// Address of the task's `task_t`.
    pub task: u32,
    /// HPU index on the NIC, in its cluster, and the cluster.
    pub hpu_gid: u32,
    pub cluster_id: u32,
    pub hpu_id: u32,
}

impl HandlerArgs {
    pub const TASK: u32 = 0;
    pub const HPU_GID: u32 = 4;
    pub const CLUSTER_ID: u32 = 8;
    pub const HPU_ID: u32 = 12;
    /// `sizeof(handler_args_t)`.
    pub const SIZE: u32 = 16;
    pub const FIELDS: [(&'static str, u32); 4] = [
        ("task", Self::TASK),
        ("hpu_gid", Self::HPU_GID),
        ("cluster_id", Self::CLUSTER_ID),
        ("hpu_id", Self::HPU_ID),
    ];

    pub fn encode(&self, out: &mut [u8]) {
        for (at, v) in [
            (Self::TASK, self.task),
            (Self::HPU_GID, self.hpu_gid),
            (Self::CLUSTER_ID, self.cluster_id),
            (Self::HPU_ID, self.hpu_id),
        ] {
            put_u32(out, at, v);
        }
    }
}

/// The node table in NIC memory (issue 27, `sdk/include/spin_node.h`,
/// docs/cluster.md): rank -> IPv4, MAC, UDP port of every node of a
/// cluster, and this NIC's rank. A region of its own, not part of L2 handler
/// memory, so no image or allocation can collide with it and every task can
/// map it read-only (a handler cannot corrupt what all handlers rely on);
/// at a fixed address above program memory (which ends at most at
/// `PROG_MEM_BASE + 16 MiB`), so handlers need no pointer to find it.
pub const NODE_TABLE_BASE: u32 = 0x1E00_0000;
/// Most nodes a NIC's table holds (`SOFTSPIN_MAX_NODES`): issue 29's
/// largest simulated network. The region is as large (256 KiB) in every
/// engine, but only the pages of entries written cost memory
/// (`node_table_header`, `encode_node_entry`).
pub const MAX_NODES: u32 = 16384;

/// Where the fields of `spin_node_table_t` and `spin_node_t` lie
/// (`tests/abi.rs` checks them against clang's `offsetof`).
pub mod node_table {
    /// `my_rank`: this NIC's rank, [`NO_RANK`] without a table.
    pub const MY_RANK: u32 = 0;
    pub const NUM_NODES: u32 = 4;
    /// The header's size: `nodes[0]` starts here.
    pub const NODES: u32 = 16;
    /// One `spin_node_t`.
    pub const ENTRY_SIZE: u32 = 16;
    /// In an entry: IPv4 and UDP port in network byte order (as in the
    /// headers), the MAC as on the wire, the rank little-endian.
    pub const ENTRY_FIELDS: [(&str, u32); 4] =
        [("ipv4", 0), ("mac", 4), ("udp_port", 10), ("rank", 12)];
    /// `my_rank` of a NIC that was given no table (`SPIN_NO_RANK`).
    pub const NO_RANK: u32 = u32::MAX;
    /// The region's size: room for `MAX_NODES` entries.
    pub const SIZE: u32 = NODES + ENTRY_SIZE * super::MAX_NODES;
}

/// One node as handlers see it (`spin_node_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeEntry {
    pub ipv4: [u8; 4],
    pub mac: [u8; 6],
    pub udp_port: u16,
}

/// The bytes of the node-table region for `nodes` (entry k is rank k) and
/// this NIC's rank; `None` with more than [`MAX_NODES`] nodes or a rank
/// outside the table.
pub fn encode_node_table(my_rank: u32, nodes: &[NodeEntry]) -> Option<Vec<u8>> {
    if nodes.len() > MAX_NODES as usize || my_rank as usize >= nodes.len() {
        return None;
    }
    let mut b =
        vec![0u8; node_table::NODES as usize + nodes.len() * node_table::ENTRY_SIZE as usize];
    b[..node_table::NODES as usize]
        .copy_from_slice(&node_table_header(my_rank, nodes.len() as u32));
    for (k, n) in nodes.iter().enumerate() {
        let at = node_entry_offset(k as u32) as usize;
        b[at..at + node_table::ENTRY_SIZE as usize]
            .copy_from_slice(&encode_node_entry(k as u32, n));
    }
    Some(b)
}

/// The region's header: this NIC's rank and the number of nodes.
pub fn node_table_header(my_rank: u32, num_nodes: u32) -> [u8; node_table::NODES as usize] {
    let mut b = [0u8; node_table::NODES as usize];
    put_u32(&mut b, node_table::MY_RANK, my_rank);
    put_u32(&mut b, node_table::NUM_NODES, num_nodes);
    b
}

/// Where rank `rank`'s entry lies in the region.
pub fn node_entry_offset(rank: u32) -> u32 {
    node_table::NODES + rank * node_table::ENTRY_SIZE
}

/// The bytes of rank `rank`'s entry (`spin_node_t`).
pub fn encode_node_entry(rank: u32, n: &NodeEntry) -> [u8; node_table::ENTRY_SIZE as usize] {
    let mut e = [0u8; node_table::ENTRY_SIZE as usize];
    e[0..4].copy_from_slice(&n.ipv4);
    e[4..10].copy_from_slice(&n.mac);
    e[10..12].copy_from_slice(&n.udp_port.to_be_bytes());
    e[12..16].copy_from_slice(&rank.to_le_bytes());
    e
}

/// The region's header without a table: no rank, no nodes.
pub fn empty_node_table() -> [u8; node_table::NODES as usize] {
    node_table_header(node_table::NO_RANK, 0)
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
    /// No such request for this task: a notification id that is unknown,
    /// already collected, or another task's.
    pub const NOENT: i32 = -5;
}

/// Register numbers of the argument registers.
pub const A0: usize = 10;
pub const A1: usize = 11;
pub const A2: usize = 12;
pub const A7: usize = 17;
