/*
 * RAID-5 parity between hosts (seed 004 §5.3, Fig. 7b/7c): the handlers of
 * every node (raid.h: who is who), linked with examples/rma_target/handler.c.
 *
 * Data node (a client's write, ../uc.h mode UC_MODE_RAID_WRITE), per
 * packet as in the paper's handlers, so the HPUs work on a write's packets
 * in parallel and its deltas stream to the parity node as they arrive:
 *  - the header handler reserves the RMA put that will carry the write's
 *    deltas (one OTT entry per RMA_TXN_MAX_PACKETS packets);
 *  - each payload handler DMA-reads the old bytes of its packet's range
 *    from the store, DMA-writes the new ones, XORs them into the delta in
 *    its HPU's frame buffer (L1) and sends it as its packet of that put
 *    (put from device, RMA: reliable), without waiting for the answer;
 *  - the completion handler waits until every delta packet was answered,
 *    i.e. XORed into the parity, and only then puts the ack (seq | status
 *    << 32) into the client's UC_RAID_ACK word. A failed parity update
 *    (status 7 when the parity node died) is acked with that status: the
 *    client sees an error, never an OK. A write that lost a packet is not
 *    acked; the packets that were applied have their deltas in the parity,
 *    so store and parity agree, and the client's resend applies the rest
 *    (the bytes applied already then give a zero delta).
 * Parity node: an RMA write into UC_RAID_LAND is a delta packet, XORed into
 *  the parity under its range's locks before rma_target serves it; its
 *  response, the delta packet's answer at the data node, therefore means
 *  "parity updated".
 * Every other frame goes to rma_target_ph.
 */
#include <spin.h>
#include <spin_rma_ops.h>
#include "../uc.h"
#include "raid.h"

void rma_target_ph(handler_args_t *args);

_Static_assert(UC_RAID_PER_PKT == UC_CHUNK - UC_RAID_ADDR_LEN, "raid.h: bytes per write packet");
_Static_assert(UC_RAID_STORE + UC_RAID_STORE_SIZE <= UC_RAID_LAND &&
                   UC_RAID_LAND + UC_RAID_LAND_SIZE <= UC_RAID_END && UC_RAID_END <= UC_WINDOW,
               "raid.h: the regions follow each other inside the window");

/* Locks over parity addresses on the parity node, one per
 * UC_RAID_PER_PKT bytes (hashed): the four data nodes' delta packets for
 * one stripe cover the same bytes and must apply one after another; a
 * delta packet spans at most two locks, packets of other ranges take other
 * locks and apply in parallel. */
#define RAID_LOCKS 256
#define RAID_LOCK_SPAN UC_RAID_PER_PKT

/* A delta packet's RMA payload: the parity address (u32), the byte count
 * (u16), the delta; every one RMA_MAX_PAYLOAD bytes (the entry's packets
 * are whole, the rest zero), at UC_RAID_LAND + k * RMA_MAX_PAYLOAD for the
 * write's packet k. The delta starts at RMA_PUT_HEADROOM + 6 = 88: word
 * aligned in a word-aligned frame, so XOR runs by words. */
#define RAID_DELTA_HDR 6
#define RAID_MAX_PKTS ((UC_RAID_STORE_SIZE + UC_RAID_PER_PKT - 1) / UC_RAID_PER_PKT)
#define RAID_PUTS ((RAID_MAX_PKTS + RMA_TXN_MAX_PACKETS - 1) / RMA_TXN_MAX_PACKETS)
/* One HPU's frame buffer: its slice of the ECTX's L1 scratchpad (as
 * rma_target's response buffer: the HPU runs one of them at a time), else
 * its buffer in L2 (bufs). A delta frame in 64-byte lines: 1,536 B at
 * Ethernet's RMA_MTU, as rma_target's; 4,160 B at netsim's 4 KiB. */
#define RAID_BUF_BYTES ((RMA_PUT_HEADROOM + RMA_MAX_PAYLOAD + 63) / 64 * 64)
_Static_assert(RAID_DELTA_HDR + UC_RAID_PER_PKT <= RMA_MAX_PAYLOAD, "a delta packet is one RMA packet");
_Static_assert(RMA_PUT_HEADROOM + RMA_MAX_PAYLOAD <= RAID_BUF_BYTES, "a delta frame fits a buffer");
_Static_assert((RMA_PUT_HEADROOM + RAID_DELTA_HDR) % 4 == 0, "the delta is word aligned");
_Static_assert(RAID_MAX_PKTS * RMA_MAX_PAYLOAD <= UC_RAID_LAND_SIZE, "a write's delta packets fit UC_RAID_LAND");

static spin_lock_t locks[RAID_LOCKS];
static volatile uint32_t msg_bytes[UC_MSG_SLOTS];
static volatile uint32_t msg_addr[UC_MSG_SLOTS];
/* Packets seen per message (bit k: the packet at k * UC_CHUNK), so a
 * repeated packet cannot stand in for a lost one in the byte count. */
#define RAID_SEEN_WORDS ((UC_MAX_SIZE / UC_CHUNK + 32) / 32)
static volatile uint32_t msg_seen[UC_MSG_SLOTS][RAID_SEEN_WORDS];
/* Per message: its packets (0: no put reserved, nothing is applied) and
 * the puts of their deltas, RMA_TXN_MAX_PACKETS packets each. */
static volatile uint32_t msg_pkts[UC_MSG_SLOTS];
static volatile spin_rma_t msg_put[UC_MSG_SLOTS][RAID_PUTS];
/* Per sender rank: the newest write seq taken. Packets apply as they come,
 * so a late duplicate of an older write (after its message ended) must
 * not write its old bytes over newer ones. */
static volatile uint32_t newest_seq[UC_RAID_RANKS];
static volatile int32_t waiters; /* messages holding puts: their completion handlers wait */
static uint8_t bufs[CORE_COUNT][RAID_BUF_BYTES] __attribute__((aligned(8)));

static uint8_t *frame_buffer(const handler_args_t *a)
{
    const task_t *t = a->task;
    uint32_t c = a->cluster_id;
    if (c < NB_CLUSTERS && a->hpu_id < NB_CORES && t->scratchpad[c] &&
        t->scratchpad_size[c] >= NB_CORES * RAID_BUF_BYTES && ((uint32_t)t->scratchpad[c] & 3) == 0)
        return (uint8_t *)t->scratchpad[c] + a->hpu_id * RAID_BUF_BYTES;
    return a->hpu_gid < CORE_COUNT ? bufs[a->hpu_gid] : 0;
}

static void lock_range(uint32_t a, uint32_t n, uint32_t *l0, uint32_t *l1)
{
    uint32_t x = (a / RAID_LOCK_SPAN) % RAID_LOCKS, y = ((a + n - 1) / RAID_LOCK_SPAN) % RAID_LOCKS;
    *l0 = x < y ? x : y; /* always in index order: no two HPUs wait on each other */
    *l1 = x < y ? y : x;
    spin_lock_lock(&locks[*l0]);
    if (*l1 != *l0)
        spin_lock_lock(&locks[*l1]);
}

static void unlock_range(uint32_t l0, uint32_t l1)
{
    if (l1 != l0)
        spin_lock_unlock(&locks[l1]);
    spin_lock_unlock(&locks[l0]);
}

static int dma_wait(int issued, spin_cmd_t c) { return issued == SPIN_OK && spin_cmd_wait(c) == SPIN_OK; }

/* dst ^= src over n bytes (both word aligned for the words): four words a
 * step, the loads first, so no load waits on the one before. */
static void xor_into(uint8_t *dst, const uint8_t *src, uint32_t n)
{
    uint32_t i = 0;
    if ((((uint32_t)src | (uint32_t)dst) & 3) == 0) {
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s = (const uint32_t *)src;
        for (; i + 16 <= n; i += 16, d += 4, s += 4) {
            uint32_t a0 = s[0], a1 = s[1], a2 = s[2], a3 = s[3], b0 = d[0], b1 = d[1], b2 = d[2], b3 = d[3];
            d[0] = a0 ^ b0;
            d[1] = a1 ^ b1;
            d[2] = a2 ^ b2;
            d[3] = a3 ^ b3;
        }
    }
    for (; i < n; i++)
        dst[i] ^= src[i];
}

static int is_data_node(void)
{
    int32_t me = spin_my_rank();
    return me >= UC_RAID_FIRST_DATA && me < UC_RAID_FIRST_DATA + UC_RAID_DATA_NODES;
}

static void drop(uint32_t why) { spin_push_counter(UC_CTR_RAID_DROPPED, why); }

/* A write packet's store address and bytes, or 0 (counted) when it is off
 * the grid or outside the store. */
static int write_part(const uc_pkt_t *p, uint32_t *addr, uint32_t *at, uint32_t *n)
{
    if (p->offset % UC_CHUNK || p->len <= UC_RAID_ADDR_LEN || (p->len != UC_CHUNK && p->offset + p->len != p->total)) {
        drop(UC_RAID_BAD_GRID);
        return 0;
    }
    *addr = rma_get32(p->data);
    uint32_t k = p->offset / UC_CHUNK; /* < UC_MAX_SIZE / UC_CHUNK: no overflow below */
    *n = p->len - UC_RAID_ADDR_LEN;
    if (*addr > UC_RAID_STORE_SIZE || k * UC_RAID_PER_PKT > UC_RAID_STORE_SIZE - *addr ||
        *n > UC_RAID_STORE_SIZE - *addr - k * UC_RAID_PER_PKT) {
        drop(UC_RAID_BAD_ADDR);
        return 0;
    }
    *at = *addr + k * UC_RAID_PER_PKT;
    return 1;
}

/* 1 if a use-case packet is a write this node serves, else 0 (counted). */
static int write_for_me(const task_t *t, const uc_pkt_t *p)
{
    if (p->mode != UC_MODE_RAID_WRITE) {
        drop(UC_RAID_BAD_MODE);
        return 0;
    }
    if (!is_data_node() || t->host_mem_size < UC_RAID_END) {
        drop(UC_RAID_BAD_RANK);
        return 0;
    }
    return 1;
}

/* Release a message's puts: packets never sent are answered FAILED, then
 * every put is waited for (its responses run on other HPUs); the first
 * failing status, or OK. */
static uint32_t finish_puts(uint32_t s, uint32_t pkts)
{
    uint32_t status = RMA_STATUS_OK;
    for (uint32_t k = 0; k < pkts; k++)
        if (!(msg_seen[s][k / 32] & (1u << (k % 32))))
            spin_rma_put_skip(msg_put[s][k / RMA_TXN_MAX_PACKETS], k % RMA_TXN_MAX_PACKETS);
    for (uint32_t g = 0; g * RMA_TXN_MAX_PACKETS < pkts; g++) {
        uint32_t st = uc_op_wait(SPIN_OK, msg_put[s][g]);
        if (st != RMA_STATUS_OK && status == RMA_STATUS_OK)
            status = st;
    }
    msg_pkts[s] = 0;
    uc_wait_end(&waiters);
    return status;
}

__handler__ void raid_hh(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    /* Runs first and alone on the message: its first packet's address is the message's. */
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p))
        return;
    uint32_t s = t->flow_id % UC_MSG_SLOTS;
    /* An earlier message of this slot whose end never came (its last packet
     * lost: the MPQ's timeout runs no completion handler) still holds its
     * puts: given back now, before its seen bits are cleared. */
    if (msg_pkts[s])
        finish_puts(s, msg_pkts[s]);
    msg_bytes[s] = 0;
    msg_addr[s] = p.mode == UC_MODE_RAID_WRITE && p.len > UC_RAID_ADDR_LEN ? rma_get32(p.data) : ~0u;
    uint32_t pkts = (p.total + UC_CHUNK - 1) / UC_CHUNK, last = p.total - (pkts - 1) * UC_CHUNK;
    /* The bits payload handlers may set (k < pkts; uc_parse bounds total). */
    for (uint32_t i = 0; i < RAID_SEEN_WORDS && i * 32 < pkts; i++)
        msg_seen[s][i] = 0;
    /* A write this node will apply: the puts of its deltas, reserved now,
     * so each payload handler sends its own packet of them; the last delta
     * packet as long as its bytes need (no padding to write). Anything else
     * reserves nothing; its payload handlers count why. */
    if (msg_addr[s] == ~0u || !is_data_node() || t->host_mem_size < UC_RAID_END || pkts > RAID_MAX_PKTS ||
        last <= UC_RAID_ADDR_LEN)
        return;
    if (!uc_wait_begin(&waiters, p.seq))
        return; /* counted: the client sends it again */
    uint32_t g = 0;
    for (; g * RMA_TXN_MAX_PACKETS < pkts; g++) {
        uint32_t n = pkts - g * RMA_TXN_MAX_PACKETS;
        uint32_t len = n > RMA_TXN_MAX_PACKETS ? RMA_TXN_MAX_LEN
                                               : (n - 1) * RMA_MAX_PAYLOAD + RAID_DELTA_HDR + last - UC_RAID_ADDR_LEN;
        spin_rma_t h;
        if (spin_rma_put_begin(UC_RAID_PARITY, UC_KEY, UC_RAID_LAND + g * RMA_TXN_MAX_LEN, len, &h) != SPIN_OK)
            break;
        msg_put[s][g] = h;
    }
    if (g * RMA_TXN_MAX_PACKETS < pkts) { /* the table is full: give back what was taken, refuse the write */
        finish_puts(s, g * RMA_TXN_MAX_PACKETS);
        spin_push_counter(UC_CTR_BUSY, p.seq);
        return;
    }
    msg_pkts[s] = pkts;
}

/* Parity node: an RMA write into UC_RAID_LAND is a delta packet; XOR it
 * into the parity first. 1 if the frame was one (then still served by
 * rma_target, whose response therefore means "parity updated"). */
static int apply_delta(handler_args_t *args, uint8_t *f, uint32_t len)
{
    task_t *t = args->task;
    if (spin_my_rank() != UC_RAID_PARITY || len < RMA_PUT_HEADROOM || f[12] != 0x08 || f[13] != 0x00 ||
        f[14] != 0x45 || f[23] != 17 || rma_get16(f + 36) != RMA_UDP_PORT)
        return 0;
    uint32_t udp_len = rma_get16(f + 38);
    if (udp_len < 8 + RMA_HDR_LEN || 34 + udp_len > len)
        return 0;
    rma_hdr_t *h = (rma_hdr_t *)(f + RMA_L2_HDRS);
    uint64_t off = rma_get64(h->offset);
    uint32_t n = rma_get32(h->length);
    if (h->version != RMA_VERSION || h->kind != RMA_KIND_DATA || h->op != RMA_OP_WRITE || h->status != RMA_STATUS_OK ||
        rma_get32(h->key) != UC_KEY || off < UC_RAID_LAND || off >= UC_RAID_LAND + UC_RAID_LAND_SIZE)
        return 0;
    const uint8_t *pl = f + RMA_PUT_HEADROOM;
    uint32_t a = n >= RAID_DELTA_HDR ? rma_get32(pl) : 0, m = n >= RAID_DELTA_HDR ? rma_get16(pl + 4) : 0;
    uint8_t *par = frame_buffer(args);
    int ok = n == udp_len - 8 - RMA_HDR_LEN && n >= RAID_DELTA_HDR && m > 0 && m <= n - RAID_DELTA_HDR &&
             m <= UC_RAID_PER_PKT && a <= UC_RAID_STORE_SIZE && m <= UC_RAID_STORE_SIZE - a &&
             t->host_mem_size >= UC_RAID_END && par;
    if (ok) {
        uint64_t host = uc_host_base(t) + UC_RAID_STORE + a;
        uint32_t l0, l1;
        spin_cmd_t c;
        int wrote = 0;
        lock_range(a, m, &l0, &l1);
        ok = dma_wait(spin_dma_from_host(host, (uint32_t)par, m, false, &c), c);
        if (ok) {
            xor_into(par, pl + RAID_DELTA_HDR, m);
            wrote = spin_dma_to_host(host, (uint32_t)par, m, false, &c) == SPIN_OK;
        }
        /* The next holder's read may start before this write is done: PCIe
         * does not let a read pass an earlier posted write (the command
         * unit's host DMA is one queue in issue order). */
        unlock_range(l0, l1);
        ok = wrote && spin_cmd_wait(c) == SPIN_OK;
    }
    if (ok) {
        spin_push_counter(UC_CTR_RAID_APPLIED, m);
    } else {
        /* Not applied: a request with a status set is one rma_target refuses
         * (MALFORMED, nothing written), so the data node learns of it. */
        h->status = RMA_STATUS_MALFORMED;
        drop(UC_RAID_BAD_APPLY);
    }
    return 1;
}

/* Data node: packet k of a write, at once (seed 004 §5.3): the old bytes of
 * its range read from the store, the new ones written, old XOR new sent to
 * the parity node as packet k of the message's put, from this HPU's frame
 * buffer. 0 if a DMA failed (counted; the packet is then answered FAILED,
 * so the client gets no OK). */
static int apply_packet(handler_args_t *args, uint32_t s, uint32_t k, uint32_t at, const uint8_t *new, uint32_t n,
                        int last)
{
    uint64_t store = uc_host_base(args->task) + UC_RAID_STORE + at;
    uint8_t *f = frame_buffer(args);
    spin_rma_t h = msg_put[s][k / RMA_TXN_MAX_PACKETS];
    uint32_t j = k % RMA_TXN_MAX_PACKETS;
    if (!f) {
        spin_rma_put_skip(h, j);
        return 0;
    }
    uint8_t *pl = f + RMA_PUT_HEADROOM, *delta = pl + RAID_DELTA_HDR;
    spin_cmd_t c1, c2;
    int ok = dma_wait(spin_dma_from_host(store, (uint32_t)delta, n, false, &c1), c1);
    int wrote = ok && spin_dma_to_host(store, (uint32_t)new, n, false, &c2) == SPIN_OK;
    if (wrote) {
        rma_put32(pl, at);
        rma_put16(pl + 4, n);
        xor_into(delta, new, n);
        for (uint32_t i = RAID_DELTA_HDR + n; !last && i < RMA_MAX_PAYLOAD; i++)
            pl[i] = 0; /* a whole packet: the 22 bytes after a full delta */
        wrote = spin_cmd_wait(c2) == SPIN_OK;
    }
    if (!wrote) {
        spin_push_counter(UC_CTR_DMA_FAILED, at);
        spin_rma_put_skip(h, j);
        return 0;
    }
    spin_rma_put_packet(h, j, f); /* a failed send is answered FAILED */
    return 1;
}

__handler__ void raid_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint8_t *f = (uint8_t *)t->pkt_mem;
    uc_pkt_t p;
    if (!uc_parse(f, t->pkt_mem_size, &p)) {
        apply_delta(args, f, t->pkt_mem_size);
        rma_target_ph(args);
        return;
    }
    uint32_t addr, at, n, s = t->flow_id % UC_MSG_SLOTS;
    if (!write_for_me(t, &p) || !write_part(&p, &addr, &at, &n))
        return;
    if (addr != msg_addr[s]) {
        drop(UC_RAID_BAD_SAME);
        return;
    }
    if (p.src < UC_RAID_RANKS && (int32_t)(p.seq - amo_maxu(&newest_seq[p.src], p.seq)) < 0) {
        drop(UC_RAID_BAD_STALE);
        return;
    }
    uint32_t k = p.offset / UC_CHUNK, bit = 1u << (k % 32);
    if (k >= msg_pkts[s])
        return; /* no puts reserved (counted by the header handler): nothing applied */
    if (amo_or(&msg_seen[s][k / 32], bit) & bit) {
        drop(UC_RAID_BAD_REPEAT);
        return;
    }
    if (apply_packet(args, s, k, at, p.data + UC_RAID_ADDR_LEN, n, k + 1 == msg_pkts[s]))
        amo_add((volatile int32_t *)&msg_bytes[s], (int32_t)p.len);
}

__handler__ void raid_th(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    uint32_t s = t->flow_id % UC_MSG_SLOTS, pkts = msg_pkts[s];
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p) || pkts == 0)
        return; /* counted by the header or payload handlers */
    /* Every packet applied was sent to the parity node: wait until each is
     * XORed into the parity (its response), then ack. */
    uint32_t got = msg_bytes[s], status = finish_puts(s, pkts);
    if (got != p.total) { /* a packet lost, refused or repeated: no ack, the client sends it again */
        spin_push_counter(UC_CTR_INCOMPLETE, got);
        return;
    }
    if (status != RMA_STATUS_OK)
        spin_push_counter(UC_CTR_RAID_PARITY, status);
    /* The ack from this HPU's frame buffer (L1 when there is a scratchpad). */
    uint8_t *f = frame_buffer(args);
    uint64_t word = p.seq | (uint64_t)status << 32;
    spin_rma_t h;
    int issued = f ? spin_rma_put_begin(p.src, UC_KEY, UC_RAID_ACK + 8 * (uint32_t)spin_my_rank(), sizeof word, &h)
                   : SPIN_FAIL;
    if (issued == SPIN_OK) {
        for (uint32_t i = 0; i < sizeof word; i++)
            f[RMA_PUT_HEADROOM + i] = (uint8_t)(word >> 8 * i); /* little-endian, as the client reads it */
        spin_rma_put_packet(h, 0, f);
    }
    uint32_t st = uc_op_wait(issued, h);
    if (st != RMA_STATUS_OK)
        spin_push_counter(UC_CTR_PONG_FAILED, st);
}

/* softspin netsim's host-CPU baseline (docs/scale.md "RAID-5 parity",
 * rdma): the NIC only hands each message to its host, whose CPU does the
 * rest; an ECTX needs a handler, and this one costs nothing. */
__handler__ void raid_host_hh(handler_args_t *args) { (void)args; }
