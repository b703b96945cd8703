/*
 * softspin_abi.h - the contract between handler code and the softspin HPU.
 *
 * This header is the single source of truth for the guest side of the
 * runtime-services ABI and the NIC memory map.  The Rust side mirrors it in
 * crates/hpu/src/abi.rs; a test checks that both agree.
 *
 * Runtime services are requested with `ecall`: the service number goes in a7,
 * arguments in a0..a5, the result comes back in a0 (and a1 for 64-bit
 * results).  Negative results are errors (SPIN_ERR_*).
 */
#ifndef SOFTSPIN_ABI_H
#define SOFTSPIN_ABI_H

/* ---- memory map (PsPIN defaults; see docs/architecture.md) ---- */
#define SOFTSPIN_L1_BASE            0x10000000u /* cluster c's L1 at BASE + c*STRIDE */
#define SOFTSPIN_L1_CLUSTER_STRIDE  0x00400000u
#define SOFTSPIN_L2_HANDLER_BASE    0x1C000000u /* L2 handler memory */
#define SOFTSPIN_L2_PKT_BASE        0x1C400000u /* L2 packet buffer */
#define SOFTSPIN_PROG_MEM_BASE      0x1D000000u /* program memory (code only) */
/* Region sizes depend on the NIC profile: they are linker symbols
 * (SOFTSPIN_L1_SIZE, SOFTSPIN_L2_HANDLER_SIZE, SOFTSPIN_L2_PKT_SIZE,
 * SOFTSPIN_PROG_MEM_SIZE; see link/handler.ld), not macros. */
/* Default guest-visible host address of the first host window (64-bit:
 * handlers get it as task->host_mem_high/low). */
#define SOFTSPIN_HOST_WINDOW_BASE   0x7F0000000000ull
#define SOFTSPIN_HOST_WINDOW_STRIDE 0x100000000ull /* further windows */

/* The node table of a cluster (spin_node.h): a read-only region of its
 * own above program memory, SOFTSPIN_MAX_NODES entries at most. */
#define SOFTSPIN_NODE_TABLE_BASE    0x1E000000u
#define SOFTSPIN_MAX_NODES          16384

/* ---- ecall service numbers (a7) ---- */
/* Linux-compatible numbers, used by bare-metal programs and printf. */
#define SOFTSPIN_SYS_WRITE          64  /* a0=fd, a1=buf, a2=len -> a0=len */
#define SOFTSPIN_SYS_EXIT           93  /* a0=status a1=reason text (NUL-terminated, 0: none); ends the run or handler */

/* sPIN runtime services (the command unit and friends). */
#define SOFTSPIN_SYS_DMA            0x100 /* cluster DMA: a0=src a1=dst a2=len -> a0=cmd id */
#define SOFTSPIN_SYS_SEND_PACKET    0x101 /* a0=data a1=len -> a0=cmd id */
#define SOFTSPIN_SYS_RDMA_PUT       0x102 /* a0=dest a1=data a2=len a3=sput_len a4=roffset a5=stream_cmd -> a0=cmd id */
#define SOFTSPIN_SYS_DMA_TO_HOST    0x103 /* a0=host lo a1=host hi a2=nic addr a3=len a4=generate_event -> a0=cmd id */
#define SOFTSPIN_SYS_DMA_FROM_HOST  0x104 /* same arguments, host -> NIC */
#define SOFTSPIN_SYS_WRITE_TO_HOST  0x105 /* a0=host lo a1=host hi a2=data lo a3=data hi -> a0=cmd id */
#define SOFTSPIN_SYS_CMD_WAIT       0x106 /* a0=cmd id -> a0=0; blocks until the command completed */
#define SOFTSPIN_SYS_CMD_TEST       0x107 /* a0=cmd id -> a0=1 if completed, 0 if not */
#define SOFTSPIN_SYS_PUSH_COUNTER   0x108 /* a0=counter index a1=value: FPsPIN-style perf counter */
/* Host notifications (a queue pair per ECTX): */
#define SOFTSPIN_SYS_NOTIFY_POST    0x109 /* a0=data a1=len (<= 64) a2=host ref lo a3=host ref hi -> a0=request id (SPIN_ERR_BUSY: ring full) */
#define SOFTSPIN_SYS_NOTIFY_WAIT    0x10A /* a0=request id -> a0=0 and a1/a2 = response lo/hi (SPIN_ERR_NOENT: not this task's request); blocks until the host answered, at most wait_limit_ns */
#define SOFTSPIN_SYS_NOTIFY_TEST    0x10B /* a0=request id -> a0=1 and a1/a2 = response if answered, else a0=0 */

/* ---- error results ---- */
#define SPIN_ERR_INVAL   (-1)  /* bad argument */
#define SPIN_ERR_ACCESS  (-2)  /* address outside what the task may touch */
#define SPIN_ERR_NOSYS   (-3)  /* service not provided by this embedding */
#define SPIN_ERR_BUSY    (-4)  /* no command slot free */
#define SPIN_ERR_NOENT   (-5)  /* no such request for this task (notification id unknown, collected, or another task's) */

#endif
