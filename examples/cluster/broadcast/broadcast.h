/*
 * Broadcast (seed 004 §4.4.3): what handler.c and the scripts (run,
 * workers.py, through common.defines) agree on beyond ../uc.h.
 *
 * The tree: binomial, rooted at rank 0. Node r's parent is r without its
 * highest set bit; its children are r + 2^k for every 2^k > r with
 * r + 2^k < N, the largest subtree (smallest k) first. workers.py computes
 * the same tree in Python (bc_children, bc_parent) for the root's sends
 * and the host baseline.
 */
#ifndef UC_BROADCAST_H
#define UC_BROADCAST_H

#define UC_BC_ROOT 0

/* A message's id names its destination: UC_MSG_BIT | rank << UC_BC_RANK_SHIFT
 * | (seq & UC_BC_SEQ_MASK). The copies of one round for different nodes
 * must not meet in one NIC's MPQ as one message: a bridge floods frames to
 * a node it has not yet heard from to every port, and the NICs' XDP
 * programs take every frame to UC_PORT, whatever its destination. */
#define UC_BC_RANK_SHIFT 20
#define UC_BC_SEQ_MASK 0xfffff

/* Counters the handlers push (spin_push_counter): index, value. Besides
 * uc.h's 21 (incomplete message) and 22 (failed DMA). */
#define UC_BC_CTR_NOT_PARENT 30  /* not from this node's parent (or at the root, or no node table): the source rank */
#define UC_BC_CTR_SEND_FAILED 31 /* a forward to a child could not be sent: the child's rank */
#define UC_BC_CTR_UNORDERED 32   /* forwarding: a repeat or an offset off the UC_CHUNK grid (not sent), or the end of a message sent without all its other packets (lost): offset */
#define UC_BC_CTR_BAD_MODE 33    /* a use-case packet of another use case's mode: the mode */
#define UC_BC_CTR_NOT_MINE 34    /* to another node's MAC (the bridge flooded it): its message id */

/* A forwarding payload handler sends the end-of-message packet only after
 * every other packet of the message went to the children (the child's NIC
 * ends a message at the packet flagged end-of-message; the others go out
 * in any order, in parallel); it waits at most this many of its own
 * cycles for that. */
#define UC_BC_ORDER_WAIT_CYCLES 2000000

#ifdef __riscv
#include <spin_node.h>

/* Rank r's parent in the tree (r > 0). */
static inline uint32_t bc_parent(uint32_t r)
{
    uint32_t b = 1;
    while (b <= r / 2)
        b <<= 1;
    return r - b;
}
#endif
#endif
