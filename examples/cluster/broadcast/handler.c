/*
 * Broadcast on a binomial tree (seed 004 §4.4.3, Fig. 5a; its handlers in
 * Appendix C.3.3): every non-root node's handlers, linked with
 * examples/rma_target/handler.c. The root's host sends the message
 * (../uc.h) to its children; each node's NIC puts it into its host's
 * memory (UC_RX) and forwards it to its own children (broadcast.h), so no
 * host CPU but the root's takes part:
 *  - UC_MODE_BC_STORE (store and forward): the payload handlers DMA each
 *    packet to UC_RX. A one-packet message is whole in its payload
 *    handler, which forwards it from device (the packet in NIC memory,
 *    re-addressed); a longer one the completion handler forwards from
 *    host memory once all of it is there, chunk by chunk (DMA from host
 *    into a frame, sent to every child).
 *  - UC_MODE_BC_STREAM: each payload handler forwards its packet to the
 *    children as it arrives, on whichever HPU it runs, and DMAs it; only
 *    the end-of-message packet waits, for all the others to have gone.
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
/* Forwarding (stream, and store's one-packet messages), per message: the
 * bytes sent on to every child (the end-of-message packet goes once all
 * others went), and a bit per packet (UC_CHUNK apart) seen, so a repeated
 * packet does not go out twice. */
static volatile uint32_t fwd_bytes[UC_MSG_SLOTS];
#define BC_SEEN_WORDS (((UC_MAX_SIZE + UC_CHUNK - 1) / UC_CHUNK + 31) / 32)
static volatile uint32_t fwd_seen[UC_MSG_SLOTS][BC_SEEN_WORDS];
/* Two frames per HPU for store mode's chunks read from host memory. */
static uint8_t frames[CORE_COUNT][2][UC_DATA_OFF + UC_CHUNK] __attribute__((aligned(8)));

/* Frame fields at 2-byte alignment (a packet's copy in L1 is only that
 * sure); one access each instead of byte by byte. */
typedef uint16_t __attribute__((__may_alias__, aligned(2))) bc_u16;
typedef uint32_t __attribute__((__may_alias__, aligned(2))) bc_u32;

static int is_bc(const uc_pkt_t *p)
{
    return p->mode == UC_MODE_BC_STORE || p->mode == UC_MODE_BC_STREAM || p->mode == UC_MODE_BC_DEPOSIT;
}

/* This node's entry if it takes the broadcast packet: it is addressed to
 * this NIC's MAC, the node has a rank, is not the root, and the packet
 * comes from its parent; else NULL (counted when `count`). The node table
 * is in L2 (~25 cycles an access): its MAC is compared in two loads. */
static const spin_node_t *mine(const uint8_t *f, const uc_pkt_t *p, int count)
{
    int32_t me = spin_my_rank();
    const spin_node_t *my = me < 0 ? NULL : spin_node((uint32_t)me);
    if (my && (*(const bc_u32 *)f != *(const uint32_t *)my->mac ||
               *(const bc_u16 *)(f + 4) != *(const uint16_t *)(my->mac + 4))) {
        if (count)
            spin_push_counter(UC_BC_CTR_NOT_MINE, p->msg);
        return NULL;
    }
    if (my && me != UC_BC_ROOT && p->src == bc_parent((uint32_t)me))
        return my;
    if (count)
        spin_push_counter(UC_BC_CTR_NOT_PARENT, p->src);
    return NULL;
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

/* Send frame `f` (Ethernet/IPv4/UDP headers, UC headers and `len` data
 * bytes at UC_DATA_OFF; IPv4 without options) from node `my` to each
 * child, largest subtree first (smallest k: child r + 2^k has about
 * N / 2^(k+1) nodes below it). Only what differs is rewritten: the MACs,
 * the IPv4 addresses, lengths and checksum, UDP's checksum (0: optional in
 * IPv4), the source rank once; per child its MAC, address, checksum (from
 * a sum made once: RFC 1071's sum does not care for byte order, §2 (B))
 * and message id. The data is never touched. */
static void forward(uint8_t *f, uint32_t len, uint32_t seq, const spin_node_t *my)
{
    uint32_t me = my->rank, n = spin_num_nodes(), b = 1; /* the smallest power of two above me */
    while (b <= me)
        b <<= 1;
    if (me + b >= n) /* a leaf */
        return;
    bc_u16 *h = (bc_u16 *)f;
    /* A table entry's MAC is 4-byte aligned: two loads from L2. */
    uint32_t ip = my->ipv4, mac = *(const uint32_t *)my->mac;
    h[3] = (uint16_t)mac; /* source MAC */
    h[4] = (uint16_t)(mac >> 16);
    h[5] = *(const uint16_t *)(my->mac + 4);
    rma_put16(f + 16, 20 + 8 + UC_HDR + len);
    h[13] = (uint16_t)ip; /* source IPv4 (f + 26) */
    h[14] = (uint16_t)(ip >> 16);
    rma_put16(f + 38, 8 + UC_HDR + len);
    h[20] = 0; /* UDP checksum */
    rma_put16(f + 64, me);
    /* The IPv4 header's 16-bit words but the checksum (h[12]) and the
     * destination (h[15], h[16]). */
    uint32_t sum = 0;
    for (uint32_t i = 7; i < 15; i++)
        sum += i == 12 ? 0 : h[i];
    uint32_t id = UC_MSG_BIT | (seq & UC_BC_SEQ_MASK);
    for (; me + b < n && b != 0; b <<= 1) {
        /* me + b < n: inside the table */
        const spin_node_t *child = &SPIN_NODE_TABLE->nodes[me + b];
        uint32_t cip = child->ipv4, cmac = *(const uint32_t *)child->mac;
        h[0] = (uint16_t)cmac;
        h[1] = (uint16_t)(cmac >> 16);
        h[2] = *(const uint16_t *)(child->mac + 4);
        h[15] = (uint16_t)cip;
        h[16] = (uint16_t)(cip >> 16);
        uint32_t s = sum + (cip & 0xffff) + (cip >> 16);
        s = (s & 0xffff) + (s >> 16);
        s = (s & 0xffff) + (s >> 16);
        h[12] = (uint16_t)~s;
        rma_put32(f + 44, id | (me + b) << UC_BC_RANK_SHIFT);
        spin_cmd_t c;
        /* Wait before re-addressing the same frame for the next child:
         * the command unit reads it while it sends (one serialisation). */
        if (spin_send_packet(f, UC_DATA_OFF + len, &c) != SPIN_OK || spin_cmd_wait(c) != SPIN_OK)
            spin_push_counter(UC_BC_CTR_SEND_FAILED, me + b);
    }
}

__handler__ void broadcast_hh(handler_args_t *args)
{
    task_t *t = args->task;
    /* Runs first and alone on the message: its slot starts empty, whatever
     * the packet (on the critical path of every hop, so not parsed: a
     * packet not for this node only resets its own message's slot, and
     * its payload handler counts it). A bit per packet of the largest
     * message the header's total allows. */
    uint32_t slot = t->flow_id % UC_MSG_SLOTS, total = UC_MAX_SIZE;
    if (t->pkt_mem_size >= UC_DATA_OFF && rma_get32((const uint8_t *)t->pkt_mem + 56) < total)
        total = rma_get32((const uint8_t *)t->pkt_mem + 56);
    msg_bytes[slot] = 0;
    fwd_bytes[slot] = 0;
    for (uint32_t w = 0; w <= total / UC_CHUNK / 32; w++)
        fwd_seen[slot][w] = 0;
}

/* Forward this packet to the children as it arrives, on whichever HPU it
 * runs: packets go out in parallel and in any order, but the
 * end-of-message packet only after every other one (the children's NICs
 * end a message there). It waits (bounded) for that; a repeated packet is
 * not sent again, one that came off the chunk grid is not sent, and an
 * end-of-message packet whose predecessors never came goes after the
 * wait: all counted. */
static void forward_packet(uint8_t *f, const uc_pkt_t *p, uint32_t slot, const spin_node_t *my)
{
    uint32_t k = p->offset / UC_CHUNK, bit = 1u << (k % 32);
    if (k * UC_CHUNK != p->offset || (amo_or(&fwd_seen[slot][k / 32], bit) & bit)) {
        spin_push_counter(UC_BC_CTR_UNORDERED, p->offset);
        return;
    }
    if (p->flags & UC_EOM) {
        uint32_t start = spin_cycles();
        while (fwd_bytes[slot] < p->total - p->len) {
            if (spin_cycles() - start > UC_BC_ORDER_WAIT_CYCLES) {
                spin_push_counter(UC_BC_CTR_UNORDERED, p->offset);
                break;
            }
        }
    }
    forward(f, p->len, p->seq, my);
    amo_add((volatile int32_t *)&fwd_bytes[slot], (int32_t)p->len);
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
    const spin_node_t *my = mine((const uint8_t *)t->pkt_mem, &p, 1);
    if (!my)
        return;
    if (t->host_mem_size < UC_RX + UC_MAX_SIZE) {
        spin_push_counter(UC_CTR_DMA_FAILED, p.offset);
        return;
    }
    uint32_t slot = t->flow_id % UC_MSG_SLOTS;
    spin_cmd_t c;
    /* The DMA reads only the data; forwarding rewrites only the headers. */
    int dma = spin_dma_to_host(uc_host_base(t) + UC_RX + p.offset, (uint32_t)p.data, p.len, false, &c);
    /* Stream: every packet as it comes. Store: a one-packet message is
     * whole here, so it goes from device now (seed 004 §4.4.3: "sends
     * messages that are smaller than a packet directly from the device"). */
    if (p.mode == UC_MODE_BC_STREAM || (p.mode == UC_MODE_BC_STORE && p.len == p.total))
        forward_packet((uint8_t *)t->pkt_mem, &p, slot, my);
    if (dma != SPIN_OK || spin_cmd_wait(c) != SPIN_OK) {
        spin_push_counter(UC_CTR_DMA_FAILED, p.offset);
        return;
    }
    amo_add((volatile int32_t *)&msg_bytes[slot], (int32_t)p.len);
}

/* Store mode, a message of several packets: read it back from host memory
 * chunk by chunk and send each chunk to every child, the next chunk's DMA
 * under the current one's sends (two frames per HPU). */
static void forward_from_host(const handler_args_t *args, const uc_pkt_t *p, uint64_t rx, const spin_node_t *my)
{
    if (args->hpu_gid >= CORE_COUNT || !has_children()) /* a leaf reads nothing back */
        return;
    uint8_t(*f)[UC_DATA_OFF + UC_CHUNK] = frames[args->hpu_gid];
    /* Headers forward() leaves as they are (addresses are its). */
    static const uint8_t none[6];
    for (int i = 0; i < 2; i++)
        rma_l2_headers(f[i], none, none, none, none, UC_PORT, UC_PORT, UC_HDR + UC_CHUNK);
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
        forward(f[k], len, p->seq, my);
    }
}

__handler__ void broadcast_th(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    const spin_node_t *my;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p) || !is_bc(&p) ||
        !(my = mine((const uint8_t *)t->pkt_mem, &p, 0)))
        return;
    uint32_t got = msg_bytes[t->flow_id % UC_MSG_SLOTS];
    if (got != p.total) { /* a packet lost or duplicated: no done word, the root sends the round again */
        spin_push_counter(UC_CTR_INCOMPLETE, got);
        return;
    }
    /* The children first: the done word only tells this node's host. A
     * one-packet message went from device in its payload handler. */
    if (p.mode == UC_MODE_BC_STORE && p.total != p.len)
        forward_from_host(args, &p, uc_host_base(t) + UC_RX, my);
    uint64_t word __attribute__((aligned(8))) = p.seq;
    spin_cmd_t c;
    if (spin_dma_to_host(uc_host_base(t) + UC_DONE, (uint32_t)&word, 8, false, &c) != SPIN_OK ||
        spin_cmd_wait(c) != SPIN_OK)
        spin_push_counter(UC_CTR_DMA_FAILED, UC_DONE);
}
