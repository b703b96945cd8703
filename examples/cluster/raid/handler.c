/*
 * RAID-5 parity between hosts (seed 004 §5.3, Fig. 7b/7c): the handlers of
 * every node (raid.h: who is who), linked with examples/rma_target/handler.c.
 *
 * Data node (a client's write, ../uc.h mode UC_MODE_RAID_WRITE):
 *  - payload handlers DMA each packet's bytes into UC_RAID_STAGE at their
 *    store address and count them; the store is not touched yet, so a write
 *    that lost a packet changes nothing (the client sends it again);
 *  - the completion handler, once the write is whole, takes a delta area,
 *    and per chunk under the chunk's locks DMA-reads the old bytes and the
 *    staged new ones, DMA-writes the new ones into the store and the delta
 *    (old XOR new) into its area; then puts the delta from host into the
 *    parity node's UC_RAID_LAND (RMA, reliable), waits, and only then puts
 *    the ack (seq | status << 32) into the client's UC_RAID_ACK word. A
 *    failed parity update (status 7 when the parity node died) is acked
 *    with that status: the client sees an error, never an OK.
 * Parity node: an RMA write into UC_RAID_LAND is XORed into the parity
 *  under the range's locks before rma_target serves it; its response, the
 *  put's completion at the data node, therefore means "parity updated".
 * Every other frame goes to rma_target_ph.
 */
#include <spin.h>
#include <spin_rma_ops.h>
#include "../uc.h"
#include "raid.h"

void rma_target_ph(handler_args_t *args);

_Static_assert(UC_RAID_PER_PKT == UC_CHUNK - UC_RAID_ADDR_LEN, "raid.h: bytes per write packet");
_Static_assert(UC_RAID_STORE + UC_RAID_STORE_SIZE <= UC_RAID_STAGE &&
                   UC_RAID_STAGE + UC_RAID_STORE_SIZE <= UC_RAID_DELTA &&
                   UC_RAID_DELTA + UC_RAID_DELTA_SLOTS * UC_RAID_STORE_SIZE <= UC_RAID_LAND &&
                   UC_RAID_LAND + UC_RAID_STORE_SIZE <= UC_RAID_END && UC_RAID_END <= UC_WINDOW,
               "raid.h: the regions follow each other inside the window");
_Static_assert(UC_RAID_DELTA_SLOTS <= UC_MAX_WAITERS, "each delta area's handler waits for RMA");

/* Locks over store (data node) or parity (parity node) addresses, a lock
 * per RAID_LOCK_SPAN bytes (hashed): a chunk or delta packet (at most
 * RMA_MAX_PAYLOAD bytes) spans at most two. */
#define RAID_LOCKS 64
#define RAID_LOCK_SPAN 4096 /* RMA_MAX_PAYLOAD is 4,028 at netsim's 4 KiB MTU */
#define RAID_CHUNK RMA_MAX_PAYLOAD
_Static_assert(RAID_CHUNK <= RAID_LOCK_SPAN, "a chunk spans at most two locks");

static spin_lock_t locks[RAID_LOCKS];
static volatile uint32_t msg_bytes[UC_MSG_SLOTS];
static volatile uint32_t msg_addr[UC_MSG_SLOTS];
/* Packets seen per message (bit k: the packet at k * UC_CHUNK), so a
 * repeated packet cannot stand in for a lost one in the byte count. */
#define RAID_SEEN_WORDS ((UC_MAX_SIZE / UC_CHUNK + 32) / 32)
static volatile uint32_t msg_seen[UC_MSG_SLOTS][RAID_SEEN_WORDS];
static volatile uint32_t delta_used; /* bit i: delta area i taken */
/* Per HPU: old and new bytes of a chunk (L2; the scratchpad holds rma_target's buffers). */
static uint8_t bufs[CORE_COUNT][2][RAID_CHUNK] __attribute__((aligned(8)));

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

/* dst ^= src over n bytes (dst 8-aligned; src 4-aligned for the words). */
static void xor_into(uint8_t *dst, const uint8_t *src, uint32_t n)
{
    uint32_t i = 0;
    if (((uint32_t)src & 3) == 0)
        for (; i + 4 <= n; i += 4)
            *(uint32_t *)(dst + i) ^= *(const uint32_t *)(src + i);
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

__handler__ void raid_hh(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    /* Runs first and alone on the message: its first packet's address is the message's. */
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p))
        return;
    uint32_t s = t->flow_id % UC_MSG_SLOTS;
    msg_bytes[s] = 0;
    msg_addr[s] = p.mode == UC_MODE_RAID_WRITE && p.len > UC_RAID_ADDR_LEN ? rma_get32(p.data) : ~0u;
    for (uint32_t i = 0; i < RAID_SEEN_WORDS; i++)
        msg_seen[s][i] = 0;
}

/* Parity node: an RMA write into UC_RAID_LAND is a delta; XOR it into the
 * parity first. 1 if the frame was one (then still served by rma_target). */
static int apply_delta(handler_args_t *args, uint8_t *f, uint32_t len)
{
    task_t *t = args->task;
    if (spin_my_rank() != UC_RAID_PARITY || len < RMA_L2_HDRS + RMA_HDR_LEN || f[12] != 0x08 || f[13] != 0x00 ||
        f[14] != 0x45 || f[23] != 17 || rma_get16(f + 36) != RMA_UDP_PORT)
        return 0;
    uint32_t udp_len = rma_get16(f + 38);
    if (udp_len < 8 + RMA_HDR_LEN || 34 + udp_len > len)
        return 0;
    rma_hdr_t *h = (rma_hdr_t *)(f + RMA_L2_HDRS);
    uint64_t off = rma_get64(h->offset);
    uint32_t n = rma_get32(h->length);
    if (h->version != RMA_VERSION || h->kind != RMA_KIND_DATA || h->op != RMA_OP_WRITE || h->status != RMA_STATUS_OK ||
        rma_get32(h->key) != UC_KEY || off < UC_RAID_LAND || off >= UC_RAID_LAND + UC_RAID_STORE_SIZE)
        return 0;
    uint32_t a = (uint32_t)(off - UC_RAID_LAND);
    int ok = n == udp_len - 8 - RMA_HDR_LEN && n > 0 && n <= RAID_CHUNK && n <= UC_RAID_STORE_SIZE - a &&
             t->host_mem_size >= UC_RAID_END && args->hpu_gid < CORE_COUNT;
    if (ok) {
        uint8_t *par = bufs[args->hpu_gid][0];
        uint64_t host = uc_host_base(t) + UC_RAID_STORE + a;
        uint32_t l0, l1;
        spin_cmd_t c;
        lock_range(a, n, &l0, &l1);
        ok = dma_wait(spin_dma_from_host(host, (uint32_t)par, n, false, &c), c);
        if (ok) {
            xor_into(par, f + RMA_L2_HDRS + RMA_HDR_LEN, n);
            ok = dma_wait(spin_dma_to_host(host, (uint32_t)par, n, false, &c), c);
        }
        unlock_range(l0, l1);
    }
    if (ok) {
        spin_push_counter(UC_CTR_RAID_APPLIED, n);
    } else {
        /* Not applied: a request with a status set is one rma_target refuses
         * (MALFORMED, nothing written), so the data node learns of it. */
        h->status = RMA_STATUS_MALFORMED;
        drop(UC_RAID_BAD_APPLY);
    }
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
    uint32_t k = p.offset / UC_CHUNK, bit = 1u << (k % 32);
    if (amo_or(&msg_seen[s][k / 32], bit) & bit) {
        drop(UC_RAID_BAD_REPEAT);
        return;
    }
    spin_cmd_t c;
    if (!dma_wait(spin_dma_to_host(uc_host_base(t) + UC_RAID_STAGE + at, (uint32_t)(p.data + UC_RAID_ADDR_LEN), n,
                                   false, &c),
                  c)) {
        spin_push_counter(UC_CTR_DMA_FAILED, at);
        return;
    }
    amo_add((volatile int32_t *)&msg_bytes[s], (int32_t)p.len);
}

/* Apply a whole write [addr, addr + n) to the store, its delta into area
 * `slot`; 0 if a DMA failed (then the store may hold part of it: counted). */
static int apply_write(handler_args_t *args, uint32_t addr, uint32_t n, uint32_t slot)
{
    task_t *t = args->task;
    uint64_t host = uc_host_base(t);
    uint8_t *old = bufs[args->hpu_gid][0], *new = bufs[args->hpu_gid][1];
    for (uint32_t off = 0; off < n; off += RAID_CHUNK) {
        uint32_t len = n - off < RAID_CHUNK ? n - off : RAID_CHUNK, a = addr + off, l0, l1;
        spin_cmd_t c1, c2;
        lock_range(a, len, &l0, &l1);
        int ok = dma_wait(spin_dma_from_host(host + UC_RAID_STORE + a, (uint32_t)old, len, false, &c1), c1) &&
                 dma_wait(spin_dma_from_host(host + UC_RAID_STAGE + a, (uint32_t)new, len, false, &c2), c2) &&
                 dma_wait(spin_dma_to_host(host + UC_RAID_STORE + a, (uint32_t)new, len, false, &c1), c1);
        unlock_range(l0, l1);
        if (ok) {
            xor_into(old, new, len);
            ok = dma_wait(spin_dma_to_host(host + UC_RAID_DELTA + slot * UC_RAID_STORE_SIZE + a, (uint32_t)old, len,
                                           false, &c1),
                          c1);
        }
        if (!ok) {
            spin_push_counter(UC_CTR_DMA_FAILED, a);
            return 0;
        }
    }
    return 1;
}

/* Put the delta of [addr, addr + n) from area `slot` into the parity
 * node's UC_RAID_LAND, pieces of RMA_TXN_MAX_LEN, a few in flight (each
 * waits for an HPU to take its responses: fewer than the HPUs). */
#define PUTS_IN_FLIGHT 4

static uint32_t update_parity(const task_t *t, uint32_t addr, uint32_t n, uint32_t slot)
{
    uint64_t delta = uc_host_base(t) + UC_RAID_DELTA + slot * UC_RAID_STORE_SIZE + addr;
    uint32_t status = RMA_STATUS_OK;
    for (uint32_t off = 0; off < n;) {
        spin_rma_t h[PUTS_IN_FLIGHT];
        int issued[PUTS_IN_FLIGHT];
        uint32_t k = 0;
        for (; k < PUTS_IN_FLIGHT && off < n; k++) {
            uint32_t len = n - off < RMA_TXN_MAX_LEN ? n - off : RMA_TXN_MAX_LEN;
            issued[k] = spin_rma_put_from_host(UC_RAID_PARITY, UC_KEY, UC_RAID_LAND + addr + off, delta + off, len,
                                               &h[k]);
            off += len;
        }
        status = uc_op_wait_all(issued, h, k, status);
        if (status != RMA_STATUS_OK)
            break; /* the rest would fail alike (a dead parity node): answer the client now */
    }
    return status;
}

__handler__ void raid_th(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    uint32_t s = t->flow_id % UC_MSG_SLOTS;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p) || p.mode != UC_MODE_RAID_WRITE ||
        !is_data_node() || t->host_mem_size < UC_RAID_END || args->hpu_gid >= CORE_COUNT)
        return; /* counted by the payload handlers */
    uint32_t got = msg_bytes[s];
    if (got != p.total) { /* a packet lost, refused or repeated: no ack, the client sends it again */
        spin_push_counter(UC_CTR_INCOMPLETE, got);
        return;
    }
    /* Its bytes: the stream's minus each packet's address (every packet
     * was checked to lie in the store; checked again, it costs nothing). */
    uint32_t addr = msg_addr[s], n = p.total - (p.total + UC_CHUNK - 1) / UC_CHUNK * UC_RAID_ADDR_LEN;
    if (addr > UC_RAID_STORE_SIZE || n > UC_RAID_STORE_SIZE - addr) {
        drop(UC_RAID_BAD_ADDR);
        return;
    }
    uint32_t slot = 0, bit = 0;
    for (; slot < UC_RAID_DELTA_SLOTS; slot++) {
        bit = 1u << slot;
        if (!(amo_or(&delta_used, bit) & bit))
            break;
    }
    if (slot == UC_RAID_DELTA_SLOTS) { /* every delta area in use: no ack, the client sends it again */
        spin_push_counter(UC_CTR_BUSY, p.seq);
        return;
    }
    uint32_t status = apply_write(args, addr, n, slot) ? update_parity(t, addr, n, slot) : RMA_STATUS_FAILED;
    amo_and(&delta_used, ~bit);
    if (status != RMA_STATUS_OK)
        spin_push_counter(UC_CTR_RAID_PARITY, status);
    uint64_t word __attribute__((aligned(8))) = p.seq | (uint64_t)status << 32;
    spin_rma_t h;
    uint32_t st = uc_op_wait(
        spin_rma_put(p.src, UC_KEY, UC_RAID_ACK + 8 * (uint32_t)spin_my_rank(), &word, sizeof word, &h), h);
    if (st != RMA_STATUS_OK)
        spin_push_counter(UC_CTR_PONG_FAILED, st);
}
