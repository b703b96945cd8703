/*
 * spin_rma_ops.h - the RMA initiator for handlers: sPIN's network actions
 * (seed 004 §3 and Appendix: put from device, put from host, get, atomics)
 * on RMA (docs/rma.md "Initiator"). Each op returns at once with a handle
 * (spin_rma_t, as spin_cmd_t for NIC commands); spin_rma_test and
 * spin_rma_wait observe its completion, which the responses' handlers
 * record (spin_rma_complete) in the outstanding-transaction table (OTT).
 *
 * Not in spin.h (it includes spin.h on the HPU side). Exactly one file of
 * the image says SPIN_RMA_OPS_STORAGE; at file scope (the
 * table, its lock and the frame buffers; the host finds the table by its
 * symbol, rma_txns). The image's payload handler must hand every frame to
 * spin_rma_doorbell and spin_rma_complete (examples/rma_target does).
 *
 * The table layout is defined in Rust (softspin_wire::rma::txn) and
 * checked against this header by crates/wire/tests/rma_c_layout.rs.
 */
#ifndef SOFTSPIN_SPIN_RMA_OPS_H
#define SOFTSPIN_SPIN_RMA_OPS_H

#include "spin_rma.h"
#include "spin_node.h"

/* Entries of the OTT; the host posts into 0..RMA_HOST_TXNS-1, handlers
 * allocate the rest. */
#define RMA_TXNS 64
#define RMA_HOST_TXNS 32
/* Packets one entry sends (bits of `answered`), and the bytes it moves. */
#define RMA_TXN_MAX_PACKETS 32
#define RMA_TXN_MAX_LEN (RMA_TXN_MAX_PACKETS * RMA_MAX_PAYLOAD)

/* Entry states. */
#define RMA_TXN_FREE 0u
#define RMA_TXN_POSTED 1u    /* written by the host; its doorbell not yet run */
#define RMA_TXN_IN_FLIGHT 2u /* requests out, responses being counted */
#define RMA_TXN_DONE 3u      /* every packet answered; status and value final */
/* An op's status when the transport declared its destination failed (the
 * host marks the entry: handlers do not see the transport). */
#define RMA_STATUS_PEER_FAILED 7
/* flags: `local` is a NIC address (put from device). */
#define RMA_TXN_NIC_SRC 1u

/* The host's doorbell frame: Ethernet, this ethertype, then the magic and
 * the posted entry's wire txn (little-endian u32 each). */
#define RMA_DOORBELL_ETHERTYPE 0x88b5
#define RMA_DOORBELL_MAGIC 0x42445353u /* "SSDB" */
#define RMA_DOORBELL_LEN 22

/* spin_push_counter indices of dropped frames (value: the reason). */
#define RMA_CTR_RESPONSE_DROPPED 10
#define RMA_CTR_DOORBELL_DROPPED 11
/* Reasons. */
#define RMA_DROP_TXN 1       /* txn names no entry, or an old generation */
#define RMA_DROP_STATE 2     /* the entry is not in flight */
#define RMA_DROP_MISMATCH 3  /* source rank, op or key not the entry's */
#define RMA_DROP_RANGE 4     /* offset or length not one of the entry's packets */
#define RMA_DROP_DUPLICATE 5 /* that packet was answered already */

/* Wire txn = entry index | generation << 16. */
#define RMA_TXN_INDEX(txn) ((txn) & 0xffffu)
#define RMA_TXN_GEN(txn) ((txn) >> 16)

typedef struct rma_txn {
    uint32_t state;
    uint32_t txn;     /* wire txn of the current use */
    uint16_t op;      /* RMA_OP_*: WRITE for puts, READ for gets */
    uint16_t flags;   /* RMA_TXN_NIC_SRC */
    uint32_t rank;    /* destination */
    uint32_t key;
    uint32_t length;  /* bytes; an atomic's width */
    uint64_t offset;  /* in the remote window */
    uint64_t local;   /* host address (put from host, get), or NIC address */
    uint64_t operand[2];
    uint64_t value;   /* an atomic's old value */
    uint32_t packets;
    uint32_t answered;  /* bit k: packet k answered */
    uint32_t remaining; /* packets not yet answered */
    uint32_t status;    /* the first failing status seen, else 0 */
} rma_txn_t;

_Static_assert(sizeof(rma_txn_t) == 80, "an OTT entry is 80 bytes");

/* A handle: the op's wire txn. */
typedef uint32_t spin_rma_t;

#ifdef __riscv /* the rest runs on HPUs only */
#include "spin.h"

#define RMA_OPS_BUFS 16
#define RMA_OPS_BUF_BYTES (RMA_L2_HDRS + RMA_HDR_LEN + RMA_MAX_PAYLOAD + 2)

extern volatile rma_txn_t rma_txns[RMA_TXNS];
extern spin_lock_t rma_txn_lock;
extern volatile uint32_t rma_ops_bufs_used;
extern uint8_t rma_ops_bufs[RMA_OPS_BUFS][RMA_OPS_BUF_BYTES];

#define SPIN_RMA_OPS_STORAGE                                                          \
    volatile rma_txn_t rma_txns[RMA_TXNS];                                            \
    const uint32_t rma_txn_count = RMA_TXNS;                                          \
    const uint32_t rma_txn_bytes = sizeof(rma_txn_t);                                 \
    spin_lock_t rma_txn_lock;                                                         \
    volatile uint32_t rma_ops_bufs_used;                                              \
    uint8_t rma_ops_bufs[RMA_OPS_BUFS][RMA_OPS_BUF_BYTES] __attribute__((aligned(8)))

/* A frame buffer of its own for the op being issued: one of a pool (an
 * HPU without args cannot name its own slice), taken by test-and-set. */
static inline uint8_t *rma_ops_buf_try(uint32_t *which)
{
    for (uint32_t i = 0; i < RMA_OPS_BUFS; i++) {
        uint32_t bit = 1u << i;
        if (!(amo_or((volatile uint32_t *)&rma_ops_bufs_used, bit) & bit)) {
            *which |= bit;
            return rma_ops_bufs[i];
        }
    }
    return 0;
}

static inline uint8_t *rma_ops_buf_take(uint32_t *which)
{
    for (;;) {
        uint8_t *b = rma_ops_buf_try(which);
        if (b)
            return b;
    }
}

static inline void rma_ops_buf_give(uint32_t which) { amo_and((volatile uint32_t *)&rma_ops_bufs_used, ~which); }

/* Packet k of an entry answered with `status` (by a response, or locally
 * when it could not be sent); the last one marks the entry DONE. */
static inline void rma_ops_answered(volatile rma_txn_t *e, uint32_t status)
{
    if (status != RMA_STATUS_OK && e->status == RMA_STATUS_OK)
        e->status = status;
    if (amo_add((volatile int32_t *)&e->remaining, -1) == 1)
        e->state = RMA_TXN_DONE;
}

/* Ethernet/IPv4/UDP and RMA headers of a request to `dst`; returns the
 * frame length. The UDP checksum is left 0 (optional in IPv4): the
 * payload would cost a pass over up to RMA_MAX_PAYLOAD bytes. */
static inline uint32_t rma_ops_headers(uint8_t *out, const spin_node_t *me, const spin_node_t *dst, uint32_t my_rank,
                                       volatile rma_txn_t *e, uint64_t offset, uint32_t length, uint32_t payload_len)
{
    /* RMA's own port both ways, not the table's udp_port (an application's
     * port): the peer's matching rules and transport block select RMA
     * frames by it. */
    uint32_t len = rma_l2_headers(out, dst->mac, me->mac, (const uint8_t *)&me->ipv4, (const uint8_t *)&dst->ipv4,
                                  RMA_UDP_PORT, RMA_UDP_PORT, RMA_HDR_LEN + payload_len);
    rma_hdr_t *h = (rma_hdr_t *)(out + RMA_L2_HDRS);
    h->version = RMA_VERSION;
    h->kind = RMA_KIND_DATA;
    h->op = (uint8_t)e->op;
    h->status = RMA_STATUS_OK;
    rma_put16(h->src_rank, my_rank);
    rma_put16(h->dst_rank, e->rank);
    rma_put32(h->seq, 0); /* the transport block stamps seq and ack */
    rma_put32(h->ack, 0);
    rma_put32(h->txn, e->txn);
    rma_put32(h->key, e->key);
    rma_put64(h->offset, offset);
    rma_put32(h->length, length);
    rma_put32(h->reserved, 0);
    return len;
}

/* Start moving packet k's payload of a write into `payload`: by the
 * cluster DMA engine from NIC memory (put from device; a byte copy would
 * cost ~26 cycles a byte, the two payloads being 2 bytes off each other's
 * alignment) or by DMA from host memory (put from host). */
static inline int rma_ops_fetch(uint32_t flags, uint64_t local, uint32_t length, uint32_t k, uint8_t *payload,
                                spin_cmd_t *h)
{
    uint32_t off = k * RMA_MAX_PAYLOAD, len = length - off;
    if (len > RMA_MAX_PAYLOAD)
        len = RMA_MAX_PAYLOAD;
    if (flags & RMA_TXN_NIC_SRC)
        return spin_dma((uint8_t *)(uint32_t)local + off, payload, len, 0, 0, h) == SPIN_OK;
    return spin_dma_from_host(local + off, (uint32_t)payload, len, false, h) == SPIN_OK;
}

/* Send every packet of an IN_FLIGHT entry. A packet that cannot be built
 * or sent counts as answered with FAILED, so the entry always completes.
 *
 * Headers (and an atomic's operands) are built on the HPU's stack, in its
 * L1 scratchpad: single-cycle stores, where the L2 pool costs ~25 cycles
 * each (~100 of them per frame). A request without data is sent from
 * there; a write's frame is put together in an L2 pool buffer (a frame is
 * larger than the 1 KiB stack) by the cluster DMA engine: the headers
 * from the stack, the payload fetched (rma_ops_fetch). With a second
 * buffer free, packet k+1's payload is fetched while packet k is sent: a
 * put from host then waits for one PCIe read round trip per two packets,
 * not per packet. The second buffer is only tried for, never waited for
 * (two handlers each holding one and waiting for another would deadlock). */
static inline void rma_ops_issue(volatile rma_txn_t *e)
{
    int32_t my = spin_my_rank();
    const spin_node_t *me = my < 0 ? NULL : spin_node((uint32_t)my), *dst = spin_node(e->rank);
    uint32_t op = e->op, width = rma_op_width(op), n = e->packets, which = 0;
    /* The entry is in L2 (~25 cycles a load) and fixed while it is issued. */
    uint32_t flags = e->flags, length = e->length;
    uint64_t local = e->local, base = e->offset;
    int write = op == RMA_OP_WRITE;
    uint8_t small[RMA_L2_HDRS + RMA_HDR_LEN + 16] __attribute__((aligned(8)));
    uint8_t *bufs[2] = {small, small};
    if (write) {
        bufs[0] = bufs[1] = rma_ops_buf_take(&which);
        uint8_t *b = n > 1 ? rma_ops_buf_try(&which) : 0;
        if (b)
            bufs[1] = b;
    }
    int two = bufs[1] != bufs[0];
    spin_cmd_t fh[2];
    int fetched[2] = {0, 0};
    uint32_t hlen = 0, flen = 0; /* the payload length `small`'s headers were built for */
    if (write && me && dst)
        fetched[0] = rma_ops_fetch(flags, local, length, 0, bufs[0] + RMA_L2_HDRS + RMA_HDR_LEN, &fh[0]);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t off = k * RMA_MAX_PAYLOAD, len = width ? width : length - off, plen = 0;
        if (len > RMA_MAX_PAYLOAD)
            len = RMA_MAX_PAYLOAD;
        uint32_t cur = two ? k & 1 : 0, next = two ? (k + 1) & 1 : 0;
        uint8_t *buf = bufs[cur];
        spin_cmd_t h;
        spin_dma_t hd;
        int ok = me && dst;
        if (ok && write) {
            plen = len;
            /* The other buffer's packet (k-1) was sent and waited for. */
            if (two && k + 1 < n)
                fetched[next] = rma_ops_fetch(flags, local, length, k + 1, bufs[next] + RMA_L2_HDRS + RMA_HDR_LEN, &fh[next]);
            ok = fetched[cur];
        } else if (width) {
            plen = width * rma_op_operands(op);
            rma_putn(small + RMA_L2_HDRS + RMA_HDR_LEN, e->operand[0], width);
            rma_putn(small + RMA_L2_HDRS + RMA_HDR_LEN + width, e->operand[1], width);
        }
        if (ok && len != hlen) { /* while the payload moves */
            flen = rma_ops_headers(small, me, dst, (uint32_t)my, e, base + off, len, plen);
            hlen = len;
        } else if (ok) /* the same lengths: only the offset differs (the node table is in L2) */
            rma_put64(((rma_hdr_t *)(small + RMA_L2_HDRS))->offset, base + off);
        if (ok && write) {
            int hok = spin_dma(small, buf, RMA_L2_HDRS + RMA_HDR_LEN, 0, 0, &hd) == SPIN_OK;
            /* Wait for both: the payload's fetch was issued. */
            ok = spin_cmd_wait(fh[cur]) == SPIN_OK;
            ok = hok && spin_dma_wait(hd) == SPIN_OK && ok;
        }
        if (ok) /* Wait: this buffer is reused two packets on. */
            ok = spin_send_packet(buf, flen, &h) == SPIN_OK && spin_cmd_wait(h) == SPIN_OK;
        if (!ok && !(amo_or((volatile uint32_t *)&e->answered, 1u << k) & (1u << k)))
            rma_ops_answered(e, RMA_STATUS_FAILED);
        /* One buffer: the next packet's fetch starts after this send. */
        if (write && !two && k + 1 < n && me && dst)
            fetched[0] = rma_ops_fetch(flags, local, length, k + 1, bufs[0] + RMA_L2_HDRS + RMA_HDR_LEN, &fh[0]);
    }
    if (which)
        rma_ops_buf_give(which);
}

/* Take a handler entry (FREE) for a new op and fill it (IN_FLIGHT); 0 if
 * the arguments are bad or every entry is taken. */
static inline volatile rma_txn_t *rma_ops_take(uint32_t op, uint32_t flags, uint32_t rank, uint32_t key,
                                               uint64_t offset, uint64_t local, uint32_t len, uint64_t a,
                                               uint64_t b, spin_rma_t *handle)
{
    uint32_t width = rma_op_width(op);
    if (!handle || rank >= spin_num_nodes() || spin_my_rank() < 0 || rank == (uint32_t)spin_my_rank() ||
        len == 0 || len > RMA_TXN_MAX_LEN ||
        (width && (offset & (width - 1))))
        return 0;
    volatile rma_txn_t *e = 0;
    spin_lock_lock(&rma_txn_lock);
    for (uint32_t i = RMA_HOST_TXNS; i < RMA_TXNS; i++)
        if (rma_txns[i].state == RMA_TXN_FREE) {
            e = &rma_txns[i];
            e->txn = i | ((RMA_TXN_GEN(e->txn) + 1) << 16);
            e->state = RMA_TXN_IN_FLIGHT; /* taken; responses cannot match before the sends */
            break;
        }
    spin_lock_unlock(&rma_txn_lock);
    if (!e)
        return 0;
    e->op = (uint16_t)op;
    e->flags = (uint16_t)flags;
    e->rank = rank;
    e->key = key;
    e->length = len;
    e->offset = offset;
    e->local = local;
    e->operand[0] = a;
    e->operand[1] = b;
    e->value = 0;
    e->packets = width ? 1 : (len + RMA_MAX_PAYLOAD - 1) / RMA_MAX_PAYLOAD;
    e->answered = 0;
    e->remaining = e->packets;
    e->status = RMA_STATUS_OK;
    *handle = e->txn;
    return e;
}

/* Start a new op: take an entry and send its requests. */
static inline int rma_ops_start(uint32_t op, uint32_t flags, uint32_t rank, uint32_t key, uint64_t offset,
                                uint64_t local, uint32_t len, uint64_t a, uint64_t b, spin_rma_t *handle)
{
    volatile rma_txn_t *e = rma_ops_take(op, flags, rank, key, offset, local, len, a, b, handle);
    if (!e)
        return SPIN_FAIL;
    rma_ops_issue(e);
    return SPIN_OK;
}

/* Put from device: `len` bytes of NIC memory at `src` to offset `offset` of
 * the window `key` on node `rank`. `src` must stay unchanged until done. */
static inline int spin_rma_put(uint32_t rank, uint32_t key, uint64_t offset, const void *src, uint32_t len,
                               spin_rma_t *h)
{
    return rma_ops_start(RMA_OP_WRITE, RMA_TXN_NIC_SRC, rank, key, offset, (uint32_t)src, len, 0, 0, h);
}

/* Put from host: the NIC DMA-reads `len` bytes of this node's host memory
 * at `host_addr` (an address in the ECTX's host window) and sends them. */
static inline int spin_rma_put_from_host(uint32_t rank, uint32_t key, uint64_t offset, uint64_t host_addr,
                                         uint32_t len, spin_rma_t *h)
{
    return rma_ops_start(RMA_OP_WRITE, 0, rank, key, offset, host_addr, len, 0, 0, h);
}

/* A put from device whose packets several handlers send, each its own
 * (sPIN's per-packet streaming: payload handlers of one message compute
 * and send packet k in parallel, one handle for the whole): begin reserves
 * an entry of `len` bytes (at most RMA_TXN_MAX_LEN) and sends nothing;
 * spin_rma_put_packet sends packet k from `frame`, which holds
 * RMA_PUT_HEADROOM bytes for the headers and then the packet's payload
 * (k * RMA_MAX_PAYLOAD.. of the op, built there by the caller: no copy),
 * and waits for the send only; spin_rma_put_skip answers a packet that will
 * never be sent with FAILED, so the entry still completes. A packet sent or
 * skipped twice is answered once. spin_rma_wait as for any op. */
#define RMA_PUT_HEADROOM (RMA_L2_HDRS + RMA_HDR_LEN)

static inline int spin_rma_put_begin(uint32_t rank, uint32_t key, uint64_t offset, uint32_t len, spin_rma_t *h)
{
    /* Taken as rma_ops_start takes it, but nothing is sent: no `local`. */
    return rma_ops_take(RMA_OP_WRITE, RMA_TXN_NIC_SRC, rank, key, offset, 0, len, 0, 0, h) ? SPIN_OK : SPIN_FAIL;
}

/* The entry of a live handle in flight and packet k of it, or 0. */
static inline volatile rma_txn_t *rma_ops_packet(spin_rma_t h, uint32_t k)
{
    uint32_t i = RMA_TXN_INDEX(h);
    if (i < RMA_HOST_TXNS || i >= RMA_TXNS || rma_txns[i].txn != h || rma_txns[i].state != RMA_TXN_IN_FLIGHT ||
        k >= rma_txns[i].packets)
        return 0;
    return &rma_txns[i];
}

static inline int spin_rma_put_skip(spin_rma_t h, uint32_t k)
{
    volatile rma_txn_t *e = rma_ops_packet(h, k);
    if (!e)
        return SPIN_FAIL;
    if (!(amo_or((volatile uint32_t *)&e->answered, 1u << k) & (1u << k)))
        rma_ops_answered(e, RMA_STATUS_FAILED);
    return SPIN_OK;
}

static inline int spin_rma_put_packet(spin_rma_t h, uint32_t k, uint8_t *frame)
{
    volatile rma_txn_t *e = rma_ops_packet(h, k);
    if (!e || !frame)
        return SPIN_FAIL;
    int32_t my = spin_my_rank();
    const spin_node_t *me = my < 0 ? NULL : spin_node((uint32_t)my), *dst = spin_node(e->rank);
    uint32_t off = k * RMA_MAX_PAYLOAD, len = e->length - off < RMA_MAX_PAYLOAD ? e->length - off : RMA_MAX_PAYLOAD;
    spin_cmd_t c;
    int ok = me && dst;
    if (ok) {
        uint32_t flen = rma_ops_headers(frame, me, dst, (uint32_t)my, e, e->offset + off, len, len);
        ok = spin_send_packet(frame, flen, &c) == SPIN_OK && spin_cmd_wait(c) == SPIN_OK;
    }
    if (!ok) {
        spin_rma_put_skip(h, k);
        return SPIN_FAIL;
    }
    return SPIN_OK;
}

/* Get to host: `len` remote bytes into this node's host memory at `host_addr`. */
static inline int spin_rma_get(uint32_t rank, uint32_t key, uint64_t offset, uint64_t host_addr, uint32_t len,
                               spin_rma_t *h)
{
    return rma_ops_start(RMA_OP_READ, 0, rank, key, offset, host_addr, len, 0, 0, h);
}

/* Remote fetch-and-add on a `width`-byte (4 or 8) word; the old value comes
 * with the completion. */
static inline int spin_rma_fetch_add(uint32_t rank, uint32_t key, uint64_t offset, uint32_t width, uint64_t addend,
                                     spin_rma_t *h)
{
    if (width != 4 && width != 8)
        return SPIN_FAIL;
    return rma_ops_start(width == 4 ? RMA_OP_FADD32 : RMA_OP_FADD64, 0, rank, key, offset, 0, width, addend, 0, h);
}

/* Remote compare-and-swap; the old value comes with the completion. */
static inline int spin_rma_cas(uint32_t rank, uint32_t key, uint64_t offset, uint32_t width, uint64_t compare,
                               uint64_t swap, spin_rma_t *h)
{
    if (width != 4 && width != 8)
        return SPIN_FAIL;
    return rma_ops_start(width == 4 ? RMA_OP_CAS32 : RMA_OP_CAS64, 0, rank, key, offset, 0, width, compare, swap,
                         h);
}

static inline volatile rma_txn_t *rma_ops_entry(spin_rma_t h)
{
    uint32_t i = RMA_TXN_INDEX(h);
    return i >= RMA_HOST_TXNS && i < RMA_TXNS && rma_txns[i].txn == h ? &rma_txns[i] : 0;
}

/* *done = whether the op finished (SPIN_FAIL: not a live handle). */
static inline int spin_rma_test(spin_rma_t h, bool *done)
{
    volatile rma_txn_t *e = rma_ops_entry(h);
    if (!e || e->state == RMA_TXN_FREE)
        return SPIN_FAIL;
    *done = e->state == RMA_TXN_DONE;
    return SPIN_OK;
}

/* Wait for the op (other HPUs run its responses meanwhile; the watchdog
 * bounds the wait), take its status (RMA_STATUS_*, RMA_STATUS_PEER_FAILED
 * once the host library saw the destination fail) and an atomic's old
 * value, and free the handle. */
static inline int spin_rma_wait(spin_rma_t h, uint32_t *status, uint64_t *value)
{
    volatile rma_txn_t *e = rma_ops_entry(h);
    if (!e || e->state == RMA_TXN_FREE)
        return SPIN_FAIL;
    while (e->state != RMA_TXN_DONE)
        ;
    if (status)
        *status = e->status;
    if (value)
        *value = e->value;
    e->state = RMA_TXN_FREE;
    return SPIN_OK;
}

/* 1 if the frame is a doorbell (consumed: the posted entry is issued, or
 * the doorbell is dropped and counted when it names no POSTED entry: a
 * doorbell can only start what the host posted). */
static inline int spin_rma_doorbell(const uint8_t *f, uint32_t len)
{
    if (len < RMA_DOORBELL_LEN || f[12] != (RMA_DOORBELL_ETHERTYPE >> 8) || f[13] != (RMA_DOORBELL_ETHERTYPE & 0xff))
        return 0;
    uint32_t magic = f[14] | (f[15] << 8) | (f[16] << 16) | ((uint32_t)f[17] << 24);
    uint32_t txn = f[18] | (f[19] << 8) | (f[20] << 16) | ((uint32_t)f[21] << 24);
    if (magic != RMA_DOORBELL_MAGIC)
        return 0;
    uint32_t i = RMA_TXN_INDEX(txn);
    volatile rma_txn_t *e = i < RMA_HOST_TXNS ? &rma_txns[i] : 0;
    int mine = 0;
    spin_lock_lock(&rma_txn_lock);
    if (e && e->state == RMA_TXN_POSTED && e->txn == txn) {
        e->state = RMA_TXN_IN_FLIGHT;
        mine = 1;
    }
    spin_lock_unlock(&rma_txn_lock);
    if (!mine) {
        spin_push_counter(RMA_CTR_DOORBELL_DROPPED, txn);
        return 1;
    }
    /* What the host wrote is checked as a handler's op would be: no
     * entry contents make the NIC send more than RMA_TXN_MAX_PACKETS. */
    uint32_t w = rma_op_width(e->op), n = e->packets;
    if ((e->op != RMA_OP_WRITE && e->op != RMA_OP_READ && !w) || e->length == 0 || e->length > RMA_TXN_MAX_LEN ||
        n != (w ? 1 : (e->length + RMA_MAX_PAYLOAD - 1) / RMA_MAX_PAYLOAD) || (w && e->length != w) ||
        e->remaining != n || e->answered != 0 || (e->flags & RMA_TXN_NIC_SRC)) {
        e->status = RMA_STATUS_MALFORMED;
        e->state = RMA_TXN_DONE;
        return 1;
    }
    rma_ops_issue(e);
    return 1;
}

static inline void rma_ops_drop(uint32_t why) { spin_push_counter(RMA_CTR_RESPONSE_DROPPED, why); }

/* 1 if the frame is an RMA response (consumed): matched against the OTT
 * and recorded (a get's data DMA-written to host memory, an atomic's old
 * value kept), or dropped and counted if it matches no packet of an entry
 * in flight (RMA_DROP_*): nothing is ever written for those. */
static inline int spin_rma_complete(const uint8_t *f, uint32_t len)
{
    /* The frame checks of the target's requests (rma_target's parse_frame):
     * what fails them is a bad frame, not a response. */
    if (len < RMA_L2_HDRS + RMA_HDR_LEN || f[12] != 0x08 || f[13] != 0x00 || f[14] != 0x45 ||
        f[14 + 9] != IP_PROTO_UDP || (rma_get16(f + 20) & 0x3fff))
        return 0;
    uint32_t ip_len = rma_get16(f + 16), udp_len = rma_get16(f + 38);
    if (ip_len > len - 14 || udp_len + 20 > ip_len || udp_len < 8 + RMA_HDR_LEN)
        return 0;
    const rma_hdr_t *h = (const rma_hdr_t *)(f + RMA_L2_HDRS);
    if (h->version != RMA_VERSION || h->kind != RMA_KIND_DATA || !(h->op & RMA_RESPONSE))
        return 0;
    const uint8_t *payload = f + RMA_L2_HDRS + RMA_HDR_LEN;
    uint32_t plen = udp_len - 8 - RMA_HDR_LEN, txn = rma_get32(h->txn), i = RMA_TXN_INDEX(txn);
    if (i >= RMA_TXNS || rma_txns[i].txn != txn) {
        rma_ops_drop(RMA_DROP_TXN);
        return 1;
    }
    volatile rma_txn_t *e = &rma_txns[i];
    uint32_t op = h->op & ~RMA_RESPONSE, width = rma_op_width(op), status = h->status;
    uint32_t length = rma_get32(h->length);
    uint64_t offset = rma_get64(h->offset);
    if (e->state != RMA_TXN_IN_FLIGHT) {
        rma_ops_drop(RMA_DROP_STATE);
        return 1;
    }
    if (rma_get16(h->src_rank) != e->rank || op != e->op || rma_get32(h->key) != e->key) {
        rma_ops_drop(RMA_DROP_MISMATCH);
        return 1;
    }
    uint32_t k = 0;
    uint64_t off = offset - e->offset;
    if (offset < e->offset || off % RMA_MAX_PAYLOAD || off / RMA_MAX_PAYLOAD >= e->packets ||
        length != (width ? width : (e->length - off < RMA_MAX_PAYLOAD ? e->length - off : RMA_MAX_PAYLOAD))) {
        rma_ops_drop(RMA_DROP_RANGE);
        return 1;
    }
    k = (uint32_t)(off / RMA_MAX_PAYLOAD);
    if (amo_or((volatile uint32_t *)&e->answered, 1u << k) & (1u << k)) {
        rma_ops_drop(RMA_DROP_DUPLICATE);
        return 1;
    }
    if (status == RMA_STATUS_OK) {
        uint32_t want = op == RMA_OP_READ ? length : width;
        if (plen != want || status > RMA_STATUS_FAILED)
            status = RMA_STATUS_MALFORMED;
        else if (op == RMA_OP_READ) {
            spin_cmd_t c;
            if (spin_dma_to_host(e->local + off, (uint32_t)payload, length, false, &c) != SPIN_OK ||
                spin_cmd_wait(c) != SPIN_OK)
                status = RMA_STATUS_FAILED;
        } else if (width)
            e->value = rma_getn(payload, width);
    } else if (status > RMA_STATUS_FAILED)
        status = RMA_STATUS_MALFORMED;
    rma_ops_answered(e, status);
    return 1;
}

#endif /* __riscv */
#endif
