/*
 * RAID-5 parity between hosts (seed 004 §5.3 "Distributed RAID Storage",
 * Fig. 7b/7c, Appendix C.3.5): what raid/handler.c, raid/client.c and the
 * Python scripts (common.defines reads the #defines) agree on.
 *
 * Ranks as in the paper's trace (C.3.5): the client, the parity node, four
 * data nodes. A client's write of SIZE bytes is striped over the data nodes:
 * data node UC_RAID_FIRST_DATA + k gets bytes [k * SIZE/4, (k+1) * SIZE/4)
 * at the same store address on every node.
 *
 * A write to one data node is a use-case message (../uc.h, mode
 * UC_MODE_RAID_WRITE) whose packets lie on a grid: packet k has uc offset
 * k * UC_CHUNK and its data is the write's store address (u32, big-endian,
 * the same in every packet) followed by up to UC_RAID_PER_PKT bytes, those
 * for store address + k * UC_RAID_PER_PKT. So every packet says where its
 * bytes go, in any order, and uc.h's byte count tells a whole message.
 */
#ifndef UC_RAID_H
#define UC_RAID_H

#define UC_RAID_CLIENT 0      /* rank of the client */
#define UC_RAID_PARITY 1      /* rank of the parity node */
#define UC_RAID_FIRST_DATA 2  /* data nodes: ranks 2 .. 2 + UC_RAID_DATA_NODES - 1 */
#define UC_RAID_DATA_NODES 4
#define UC_RAID_RANKS 6       /* the cluster: client, parity, data nodes */

#define UC_RAID_ADDR_LEN 4    /* a write packet's data starts with the write's store address */
#define UC_RAID_PER_PKT 1404  /* UC_CHUNK - UC_RAID_ADDR_LEN: a write's bytes per packet */

/* Host memory (the node's window, key UC_KEY). */
#define UC_RAID_ACK 0x100          /* client: u64 per data rank r at + 8 r: seq | status << 32 (RMA_STATUS_*) */
#define UC_RAID_STORE 0x10000      /* data nodes: the store; parity node: the parity */
#define UC_RAID_STORE_SIZE 0x40000 /* bytes of a store (a data node's part of a write: at most this) */
#define UC_RAID_LAND 0x50000       /* parity node: delta packets land here once XORed into the parity (raid/handler.c) */
#define UC_RAID_LAND_SIZE 0xC0000  /* a data node's write's delta packets, each RMA_MAX_PAYLOAD bytes, side by side (up to RMA_MTU 4096) */
#define UC_RAID_END 0x110000       /* end of the layout: within UC_WINDOW */

/* Counters (spin_push_counter: index, value); ../uc.h's 20-23 too. */
#define UC_CTR_RAID_DROPPED 30 /* a write packet refused: the reason below */
#define UC_CTR_RAID_PARITY 31  /* a write's parity update failed: the RMA status (7: the parity node failed) */
#define UC_CTR_RAID_APPLIED 32 /* parity node: a delta packet XORed into the parity: its bytes */
/* Reasons of UC_CTR_RAID_DROPPED. */
#define UC_RAID_BAD_RANK 1   /* not a data node */
#define UC_RAID_BAD_MODE 2   /* not UC_MODE_RAID_WRITE */
#define UC_RAID_BAD_GRID 3   /* the packet is off the grid (offset, length) */
#define UC_RAID_BAD_ADDR 4   /* its bytes fall outside the store */
#define UC_RAID_BAD_SAME 5   /* its store address differs from the message's first packet's */
#define UC_RAID_BAD_APPLY 6  /* parity node: a delta that could not be applied (answered MALFORMED) */
#define UC_RAID_BAD_REPEAT 7 /* a packet of the message seen before */
#define UC_RAID_BAD_STALE 8  /* its seq is older than a write this node already took from that sender */

#endif
