/*
 * Broadcast on a binomial tree (seed 004 §4.4.3, Fig. 5a; its handlers in
 * Appendix C.3.3): every non-root node's handlers, linked with
 * examples/rma_target/handler.c. The root's host sends the message
 * (../uc.h) to its children; each node's NIC puts it into its host's
 * memory (UC_RX) and forwards it to its own children (broadcast.h), so no
 * host CPU but the root's takes part:
 *  - UC_MODE_BC_STORE (store and forward): the payload handlers DMA each
 *    packet to UC_RX; once the whole message is there the completion
 *    handler forwards it: a one-packet message from device (the packet in
 *    NIC memory, re-addressed), a longer one from host memory, chunk by
 *    chunk (DMA from host into a frame, sent to every child).
 *  - UC_MODE_BC_STREAM: each payload handler forwards its packet to the
 *    children as it arrives (in the message's order), then DMAs it.
 *  - UC_MODE_BC_DEPOSIT (softspin netsim's host-CPU and triggered-put
 *    baselines, docs/scale.md): the payload handlers only DMA each packet
 *    to UC_RX; something else (the host, or Portals' triggered puts)
 *    forwards.
 * All: once every byte of the message is in host memory, the completion
 * handler DMA-writes the round's seq into UC_DONE, which the host polls.
 * Every other frame goes to rma_target_ph.
 */
#include <spin.h>
#include <spin_rma_ops.h>
#include "../uc.h"
#include "broadcast.h"

void rma_target_ph(handler_args_t *args);

static volatile uint32_t msg_bytes[UC_MSG_SLOTS];
/* Stream mode: the offset of the next packet to forward, per message. */
static volatile uint32_t fwd_next[UC_MSG_SLOTS];
/* Two frames per HPU for store mode's chunks read from host memory. */
static uint8_t frames[CORE_COUNT][2][UC_DATA_OFF + UC_CHUNK] __attribute__((aligned(8)));

static int is_bc(const uc_pkt_t *p)
{
    return p->mode == UC_MODE_BC_STORE || p->mode == UC_MODE_BC_STREAM || p->mode == UC_MODE_BC_DEPOSIT;
}

/* 1 if this node takes the broadcast packet: it is addressed to this
 * NIC's MAC, the node has a rank, is not the root, and the packet comes
 * from its parent; else 0 (counted when `count`). */
static int mine(const uint8_t *f, const uc_pkt_t *p, int count)
{
    int32_t me = spin_my_rank();
    const spin_node_t *my = me < 0 ? NULL : spin_node((uint32_t)me);
    if (my && memcmp(f, my->mac, 6) != 0) {
        if (count)
            spin_push_counter(UC_BC_CTR_NOT_MINE, p->msg);
        return 0;
    }
    if (my && me != UC_BC_ROOT && p->src == bc_parent((uint32_t)me))
        return 1;
    if (count)
        spin_push_counter(UC_BC_CTR_NOT_PARENT, p->src);
    return 0;
}

/* 1 if this node has children: the smallest power of two above its rank
 * still lands inside the cluster. */
static int has_children(void)
{
    uint32_t me = (uint32_t)spin_my_rank(), b = 1;
    while (b <= me)
        b <<= 1;
    return me + b < spin_num_nodes();
}

/* Send frame `f` (UC headers and `len` data bytes at UC_DATA_OFF) to each
 * child, largest subtree first (smallest k: child r + 2^k has about
 * N / 2^(k+1) nodes below it), re-addressing its Ethernet/IPv4/UDP
 * headers (IPv4 checksum computed, UDP's 0), message id and source rank. */
static void forward(uint8_t *f, uint32_t len)
{
    uint32_t me = (uint32_t)spin_my_rank(), n = spin_num_nodes();
    const spin_node_t *my = spin_node(me);
    rma_put16(f + 64, me);
    uint32_t b = 1; /* the smallest power of two above me */
    while (b <= me)
        b <<= 1;
    for (; me + b < n && b != 0; b <<= 1) {
        const spin_node_t *child = spin_node(me + b);
        if (!child)
            continue;
        rma_put32(f + 44, UC_MSG_BIT | (me + b) << UC_BC_RANK_SHIFT | (rma_get32(f + 52) & UC_BC_SEQ_MASK));
        uint32_t flen = rma_l2_headers(f, child->mac, my->mac, (const uint8_t *)&my->ipv4,
                                       (const uint8_t *)&child->ipv4, UC_PORT, UC_PORT, UC_HDR + len);
        spin_cmd_t c;
        /* Wait before re-addressing the same frame for the next child. */
        if (spin_send_packet(f, flen, &c) != SPIN_OK || spin_cmd_wait(c) != SPIN_OK)
            spin_push_counter(UC_BC_CTR_SEND_FAILED, me + b);
    }
}

__handler__ void broadcast_hh(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p) && is_bc(&p) &&
        mine((const uint8_t *)t->pkt_mem, &p, 0)) {
        /* Runs first and alone on the message. */
        msg_bytes[t->flow_id % UC_MSG_SLOTS] = 0;
        fwd_next[t->flow_id % UC_MSG_SLOTS] = 0;
    }
}

/* fwd_next while a handler forwards its packet. */
#define FWD_BUSY 0xffffffffu

/* Stream mode: wait (bounded) until the message's previous packet was
 * forwarded, claim the turn (compare-and-swap: a repeated packet must not
 * go out twice), forward, let the next go. A packet already passed (a
 * repeat) is not sent again; one whose predecessor never came (lost) goes
 * after the wait. Both are counted. */
static void forward_in_order(uint8_t *f, const uc_pkt_t *p, uint32_t slot)
{
    volatile uint32_t *next = &fwd_next[slot];
    uint32_t start = spin_cycles();
    for (;;) {
        uint32_t n = *next, waited = spin_cycles() - start;
        if (n != FWD_BUSY && n > p->offset) {
            spin_push_counter(UC_BC_CTR_UNORDERED, p->offset);
            return;
        }
        if (n == p->offset || (n != FWD_BUSY && waited > UC_BC_ORDER_WAIT_CYCLES)) {
            if (compare_and_swap(next, n, FWD_BUSY) != 0)
                continue;
            if (n != p->offset)
                spin_push_counter(UC_BC_CTR_UNORDERED, p->offset);
            forward(f, p->len);
            *next = p->offset + p->len;
            return;
        }
        if (waited > 2 * UC_BC_ORDER_WAIT_CYCLES) { /* the turn's holder never let go */
            spin_push_counter(UC_BC_CTR_UNORDERED, p->offset);
            forward(f, p->len);
            return;
        }
    }
}

__handler__ void broadcast_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p)) {
        rma_target_ph(args);
        return;
    }
    if (!is_bc(&p)) {
        spin_push_counter(UC_BC_CTR_BAD_MODE, p.mode);
        return;
    }
    if (!mine((const uint8_t *)t->pkt_mem, &p, 1))
        return;
    if (t->host_mem_size < UC_RX + UC_MAX_SIZE) {
        spin_push_counter(UC_CTR_DMA_FAILED, p.offset);
        return;
    }
    uint32_t slot = t->flow_id % UC_MSG_SLOTS;
    spin_cmd_t c;
    /* The DMA reads only the data; forwarding rewrites only the headers. */
    int dma = spin_dma_to_host(uc_host_base(t) + UC_RX + p.offset, (uint32_t)p.data, p.len, false, &c);
    if (p.mode == UC_MODE_BC_STREAM)
        forward_in_order((uint8_t *)t->pkt_mem, &p, slot);
    if (dma != SPIN_OK || spin_cmd_wait(c) != SPIN_OK) {
        spin_push_counter(UC_CTR_DMA_FAILED, p.offset);
        return;
    }
    amo_add((volatile int32_t *)&msg_bytes[slot], (int32_t)p.len);
}

/* Store mode, a message of several packets: read it back from host memory
 * chunk by chunk and send each chunk to every child, the next chunk's DMA
 * under the current one's sends (two frames per HPU). */
static void forward_from_host(const handler_args_t *args, const uc_pkt_t *p, uint64_t rx)
{
    if (args->hpu_gid >= CORE_COUNT || !has_children()) /* a leaf reads nothing back */
        return;
    uint8_t(*f)[UC_DATA_OFF + UC_CHUNK] = frames[args->hpu_gid];
    spin_cmd_t c;
    int issued = spin_dma_from_host(rx, (uint32_t)(f[0] + UC_DATA_OFF), p->total < UC_CHUNK ? p->total : UC_CHUNK,
                                    false, &c);
    for (uint32_t off = 0, k = 0; off < p->total; off += UC_CHUNK, k ^= 1) {
        uint32_t len = p->total - off < UC_CHUNK ? p->total - off : UC_CHUNK, next = off + UC_CHUNK;
        if (issued != SPIN_OK || spin_cmd_wait(c) != SPIN_OK) {
            spin_push_counter(UC_CTR_DMA_FAILED, off);
            return;
        }
        if (next < p->total)
            issued = spin_dma_from_host(rx + next, (uint32_t)(f[k ^ 1] + UC_DATA_OFF),
                                        p->total - next < UC_CHUNK ? p->total - next : UC_CHUNK, false, &c);
        uint8_t *h = f[k] + RMA_L2_HDRS;
        rma_put16(h, UC_MAGIC);
        rma_put32(h + 2, p->msg); /* forward's, per child */
        rma_put32(h + 6, off + len == p->total ? UC_EOM : 0);
        rma_put32(h + 10, p->seq);
        rma_put32(h + 14, p->total);
        rma_put32(h + 18, off);
        rma_put16(h + 24, p->mode); /* the source rank (h + 22) is forward's */
        forward(f[k], len);
    }
}

__handler__ void broadcast_th(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p) || !is_bc(&p) ||
        !mine((const uint8_t *)t->pkt_mem, &p, 0))
        return;
    uint32_t got = msg_bytes[t->flow_id % UC_MSG_SLOTS];
    if (got != p.total) { /* a packet lost or duplicated: no done word, the root sends the round again */
        spin_push_counter(UC_CTR_INCOMPLETE, got);
        return;
    }
    /* The children first: the done word only tells this node's host. */
    if (p.mode == UC_MODE_BC_STORE) {
        if (p.total == p.len) /* one packet: forward it from device */
            forward((uint8_t *)t->pkt_mem, p.len);
        else
            forward_from_host(args, &p, uc_host_base(t) + UC_RX);
    }
    uint64_t word __attribute__((aligned(8))) = p.seq;
    spin_cmd_t c;
    if (spin_dma_to_host(uc_host_base(t) + UC_DONE, (uint32_t)&word, 8, false, &c) != SPIN_OK ||
        spin_cmd_wait(c) != SPIN_OK)
        spin_push_counter(UC_CTR_DMA_FAILED, UC_DONE);
}
