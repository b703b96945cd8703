/*
 * broadcast_fwd (seed 004 §4.4.3): one step of a binomial-tree broadcast,
 * streaming: every packet of the broadcast message is forwarded to this
 * node's children as it arrives, and its data is deposited in host memory.
 *
 * Tree rooted at rank 0: the children of rank r are r + 2^k for every k
 * with 2^k > r and r + 2^k < size (rank 0: 1, 2, 4, 8, ...); the parent of
 * r > 0 is r minus its highest set bit.
 *
 * Each packet's payload is [u32 byte offset in the message][data]; it is
 * forwarded unchanged with an RDMA put (dest = child rank, remote offset =
 * the packet's offset). The host writes this node's (rank, size) into
 * bcast_cfg before activating the ECTX.
 */
#include <spin.h>

#define HDRS 28 /* IP + UDP */

struct bcast_cfg {
    uint32_t rank, size;
};
struct bcast_cfg bcast_cfg;

__handler__ void bcast_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint8_t *pld = (uint8_t *)t->pkt_mem + HDRS;
    uint32_t len = t->pkt_mem_size - HDRS;
    uint32_t rank = bcast_cfg.rank, size = bcast_cfg.size;
    if (len < 4 || rank >= size)
        return;
    uint32_t off = *(const uint32_t *)pld;

    /* Children first: they are on the critical path. */
    uint32_t k = 1;
    while (k <= rank)
        k <<= 1;
    for (; k != 0 && k < size - rank; k <<= 1)
        spin_rdma_put(rank + k, pld, len, len, off, 0, NULL);

    /* Then this node's copy. */
    uint32_t n = len - 4;
    if (n && off <= t->host_mem_size && n <= t->host_mem_size - off) {
        uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
        spin_dma_to_host(host + off, (uint32_t)(pld + 4), n, false, NULL);
    }
}
