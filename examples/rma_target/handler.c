/*
 * rma_target: the target side of RMA (docs/rma.md; DiAD's remote memory,
 * seed 003 §III, served by the NIC as sPIN's put/get/atomics are, seed 004
 * §3) as one payload handler, rma_target_ph, for Ethernet/IPv4/UDP frames
 * carrying one RMA request each (sdk/include/spin_rma.h).
 *
 * Each request is checked (frame and lengths, key, bounds, permission,
 * alignment, in that order) against the window table rma_windows, which
 * the host fills (Nic::export_window); then served from the ECTX's host
 * memory by DMA: a write is DMAed from the packet to the host, a read
 * DMAed from the host into the response, an atomic read, computed and
 * written back under a lock. Every request gets a response with a status;
 * a refused one writes nothing. The transport block below the handlers
 * (a later piece) delivers requests in order and exactly once; this
 * handler assumes nothing of the bytes it gets.
 *
 * Atomics are atomic against each other: every HPU serving an atomic on a
 * host address takes the L2 lock rma_locks[(address / 8) % RMA_LOCKS] (an
 * amoor test-and-set) around the DMA read, the update and the DMA write.
 * Locks rather than one MPQ for all atomics: atomics on other addresses
 * still run in parallel, and the packet stream needs no special matching.
 */
#include <spin.h>
#include <fpspin.h>
#include <spin_rma.h>
#include <spin_rma_ops.h>

/* Counters (spin_push_counter index; value in parentheses). A response
 * with status S counts under index S (RMA_STATUS_*, the request's length);
 * the frames below get no response. */
#define RMA_CTR_BAD_FRAME 7   /* not Ethernet/IPv4/UDP, lengths beyond the frame, no RMA header (frame length) */
#define RMA_CTR_NOT_REQUEST 8 /* a transport control packet (kind << 8 | op); responses go to spin_rma_complete */
#define RMA_CTR_SEND_FAILED 9 /* the response could not be sent (status) */

#ifdef SOFTSPIN_SABOTAGE
#define RMA_SLACK 1 /* the tests' proof that they see a write past a window */
#else
#define RMA_SLACK 0
#endif

/* Locks of the atomics (a power of two). */
#define RMA_LOCKS 64
#define RMA_FRAME_MAX (14u + RMA_MTU) /* Ethernet header + an MTU */
/* Bytes of one HPU's response buffer: a frame and the atomic's word, in
 * 64-byte lines. The literal is Ethernet's (`softspin cluster up` reads it
 * to size the scratchpad); a build with another RMA_MTU (netsim) sizes the
 * scratchpad by the image's rma_buf_bytes. */
#if RMA_MTU == 1500
#define RMA_BUF_BYTES 1536
#else
#define RMA_BUF_BYTES ((RMA_FRAME_MAX + 8 + 63) / 64 * 64)
#endif
/* Response buffers in L2 when the ECTX has no L1 scratchpad: one per HPU
 * (hpu_gid). */
#define RMA_HPUS_MAX 64

#ifdef RMA_DEFAULT_WINDOW_SIZE
/* A build for `softspin sim` (no host program to export windows): key 1,
 * the first RMA_DEFAULT_WINDOW_SIZE bytes of the host window, all rights. */
volatile rma_window_t rma_windows[RMA_WINDOWS] = {{1, RMA_PERM_ALL, 0, RMA_DEFAULT_WINDOW_SIZE}};
#else
volatile rma_window_t rma_windows[RMA_WINDOWS];
#endif
/* For the host: table geometry without a copy of the C layout. */
const uint32_t rma_window_count = RMA_WINDOWS;
const uint32_t rma_window_bytes = sizeof(rma_window_t);
/* For the host: the response buffer per HPU it gives scratchpad for. */
__attribute__((used)) const uint32_t rma_buf_bytes = RMA_BUF_BYTES;

/* The initiator's table (rma_txns) and buffers: this image also issues
 * RMA operations, host-posted (doorbells) or a handler's, and completes
 * them from their responses (sdk/include/spin_rma_ops.h). */
SPIN_RMA_OPS_STORAGE;

static spin_lock_t rma_locks[RMA_LOCKS];
static uint8_t rma_out[RMA_HPUS_MAX][RMA_BUF_BYTES] __attribute__((aligned(8)));
_Static_assert(RMA_FRAME_MAX + 8 <= RMA_BUF_BYTES, "a frame and the atomic's word fit a buffer");

typedef struct rma_req {
    const uint8_t *frame;
    const rma_hdr_t *h;
    const uint8_t *payload;
    uint32_t payload_len;
    uint32_t op, length, width;
    uint64_t offset;
} rma_req_t;

static inline void count(uint32_t ctr, uint32_t value) { spin_push_counter(ctr, value); }

/* The frame's RMA request, or 0 (counted) if it carries none. */
static int parse_frame(const uint8_t *f, uint32_t len, rma_req_t *r)
{
    if (len < RMA_L2_HDRS + RMA_HDR_LEN) {
        count(RMA_CTR_BAD_FRAME, len);
        return 0;
    }
    const eth_hdr_t *eth = (const eth_hdr_t *)f;
    const ipv4_hdr_t *ip = (const ipv4_hdr_t *)(f + 14);
    const udp_wire_hdr_t *udp = (const udp_wire_hdr_t *)(f + 34);
    uint32_t ip_len = ntohs(ip->length), udp_len = ntohs(udp->length);
    if (ntohs(eth->ethertype) != ETHERTYPE_IPV4 || ip->version_ihl != 0x45 || ip->protocol != IP_PROTO_UDP ||
        (ntohs(ip->frag_offset) & 0x3fff) != 0 || ip_len > len - 14 || udp_len + 20 > ip_len ||
        udp_len < 8 + RMA_HDR_LEN) {
        count(RMA_CTR_BAD_FRAME, len);
        return 0;
    }
    r->frame = f;
    r->h = (const rma_hdr_t *)(f + RMA_L2_HDRS);
    r->payload = f + RMA_L2_HDRS + RMA_HDR_LEN;
    r->payload_len = udp_len - 8 - RMA_HDR_LEN;
    if (r->h->version != RMA_VERSION) {
        count(RMA_CTR_BAD_FRAME, len);
        return 0;
    }
    if (r->h->kind != RMA_KIND_DATA || (r->h->op & RMA_RESPONSE)) {
        count(RMA_CTR_NOT_REQUEST, ((uint32_t)r->h->kind << 8) | r->h->op);
        return 0;
    }
    r->op = r->h->op;
    r->length = rma_get32(r->h->length);
    r->offset = rma_get64(r->h->offset);
    r->width = rma_op_width(r->op);
    return 1;
}

/* Whether the header's lengths agree with the payload (softspin_wire's
 * Repr::parse for a request). */
static int well_formed(const rma_req_t *r)
{
    if (r->h->status != RMA_STATUS_OK || r->op == RMA_OP_NONE || r->op > RMA_OP_CAS64)
        return 0;
    if (r->op == RMA_OP_WRITE)
        return r->payload_len == r->length;
    if (r->op == RMA_OP_READ)
        return r->payload_len == 0 && r->length <= RMA_MAX_PAYLOAD;
    return r->length == r->width && r->payload_len == r->width * rma_op_operands(r->op);
}

/* Check the request against the window table; on success set *host to the
 * host address it names. */
static uint32_t check(const rma_req_t *r, const task_t *t, uint64_t *host)
{
    if (!well_formed(r))
        return RMA_STATUS_MALFORMED;
    uint32_t key = rma_get32(r->h->key);
    volatile rma_window_t *w = 0;
    for (uint32_t i = 0; key != RMA_KEY_FREE && i < RMA_WINDOWS; i++)
        if (rma_windows[i].key == key) {
            w = &rma_windows[i];
            break;
        }
    if (!w)
        return RMA_STATUS_BAD_KEY;
    uint64_t base = w->base, size = w->size, mem = t->host_mem_size;
    uint32_t perms = w->perms;
    /* The entry itself must lie in the ECTX's host memory (the host API
     * checks this; the table is NIC memory, so check again). No sum below
     * can overflow: every term is bounded first. */
    if (size > mem || base > mem - size || r->offset > size || r->length > size - r->offset + RMA_SLACK)
        return RMA_STATUS_OUT_OF_WINDOW;
    if (!(perms & rma_op_perm(r->op)))
        return RMA_STATUS_PERMISSION;
    if (r->width && (r->offset & (r->width - 1)))
        return RMA_STATUS_UNALIGNED;
    *host = (((uint64_t)t->host_mem_high << 32) | t->host_mem_low) + base + r->offset;
    return RMA_STATUS_OK;
}

/* Write the response's headers into `out` for `data_len` payload bytes;
 * returns the frame length. Addresses, ports and ranks swapped. */
static uint32_t response_headers(const rma_req_t *r, uint8_t *out, uint32_t status, uint32_t data_len)
{
    const uint8_t *f = r->frame;
    uint32_t len = rma_l2_headers(out, f + 6, f, f + 30, f + 26, rma_get16(f + 36), rma_get16(f + 34),
                                  RMA_HDR_LEN + data_len);
    rma_hdr_t *h = (rma_hdr_t *)(out + RMA_L2_HDRS);
    const rma_hdr_t *q = r->h;
    h->version = RMA_VERSION;
    h->kind = RMA_KIND_DATA;
    h->op = (uint8_t)(q->op | RMA_RESPONSE);
    h->status = (uint8_t)status;
    /* The transport block fills seq and ack on the way out. */
    for (int i = 0; i < 2; i++) {
        h->src_rank[i] = q->dst_rank[i];
        h->dst_rank[i] = q->src_rank[i];
    }
    for (int i = 0; i < 4; i++) {
        h->seq[i] = h->ack[i] = h->reserved[i] = 0;
        h->txn[i] = q->txn[i];
        h->key[i] = q->key[i];
        h->length[i] = q->length[i];
    }
    for (int i = 0; i < 8; i++)
        h->offset[i] = q->offset[i];
    return len;
}

static void send(uint8_t *out, uint32_t len, uint32_t status)
{
    rma_udp_checksum(out);
    spin_cmd_t h;
    /* Wait: the buffer is this HPU's and the next task reuses it. */
    if (spin_send_packet(out, len, &h) != SPIN_OK || spin_cmd_wait(h) != SPIN_OK)
        count(RMA_CTR_SEND_FAILED, status);
}

static uint64_t le_load(const uint8_t *p, uint32_t n)
{
    uint64_t v = 0;
    for (uint32_t i = n; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

static void le_store(uint8_t *p, uint64_t v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static int dma_wait(int issued, spin_cmd_t h) { return issued == SPIN_OK && spin_cmd_wait(h) == SPIN_OK; }

/* Serve an atomic under its address's lock; *old gets the value before. */
static uint32_t atomic(const rma_req_t *r, uint64_t host, uint8_t *scratch, uint64_t *old)
{
    uint32_t w = r->width;
    uint64_t mask = w == 8 ? ~0ull : 0xffffffffull;
    uint64_t a = rma_getn(r->payload, w), b = r->op == RMA_OP_CAS32 || r->op == RMA_OP_CAS64 ? rma_getn(r->payload + w, w) : 0;
    spin_lock_t *lock = &rma_locks[(host >> 3) & (RMA_LOCKS - 1)];
    spin_cmd_t h;
    uint32_t status = RMA_STATUS_FAILED;
    spin_lock_lock(lock);
    if (dma_wait(spin_dma_from_host(host, (uint32_t)scratch, w, false, &h), h)) {
        uint64_t v = le_load(scratch, w), nv = v;
        int store = 1;
        if (r->op == RMA_OP_FADD32 || r->op == RMA_OP_FADD64)
            nv = (v + a) & mask;
        else if (v == a)
            nv = b;
        else
            store = 0;
        *old = v;
        le_store(scratch, nv, w);
        if (!store || dma_wait(spin_dma_to_host(host, (uint32_t)scratch, w, false, &h), h))
            status = RMA_STATUS_OK;
    }
    spin_lock_unlock(lock);
    return status;
}

/* Where this HPU builds its response: its slice of the ECTX's scratchpad
 * on its own cluster when the host gave one of NB_CORES * RMA_BUF_BYTES
 * (local L1: single-cycle), else its buffer in L2 (up to 25 cycles an
 * access, seed 001 §3.2.2: four times the handler's cycles). 0: none. */
static uint8_t *out_buffer(const task_t *t, const handler_args_t *a)
{
    uint32_t c = a->cluster_id;
    if (c < NB_CLUSTERS && a->hpu_id < NB_CORES && t->scratchpad[c] &&
        t->scratchpad_size[c] >= NB_CORES * RMA_BUF_BYTES)
        return (uint8_t *)t->scratchpad[c] + a->hpu_id * RMA_BUF_BYTES;
    return a->hpu_gid < RMA_HPUS_MAX ? rma_out[a->hpu_gid] : 0;
}

__handler__ void rma_target_ph(handler_args_t *args)
{
    task_t *t = args->task;
    rma_req_t r;
    const uint8_t *f = (const uint8_t *)t->pkt_mem;
    /* The initiator's frames: the host's doorbells, responses to this
     * node's requests (counted by spin_rma_ops.h when they match nothing). */
    if (spin_rma_doorbell(f, t->pkt_mem_size) || spin_rma_complete(f, t->pkt_mem_size))
        return;
    if (!parse_frame(f, t->pkt_mem_size, &r))
        return;
    uint8_t *out = out_buffer(t, args);
    if (!out) {
        count(RMA_CTR_SEND_FAILED, RMA_STATUS_FAILED);
        return;
    }
    uint8_t *data = out + RMA_L2_HDRS + RMA_HDR_LEN;
    uint64_t host = 0, old = 0;
    uint32_t status = check(&r, t, &host), data_len = 0;
    spin_cmd_t h;
    if (status == RMA_STATUS_OK) {
        switch (r.op) {
        case RMA_OP_WRITE:
            if (r.length && !dma_wait(spin_dma_to_host(host, (uint32_t)r.payload, r.length, false, &h), h))
                status = RMA_STATUS_FAILED;
            break;
        case RMA_OP_READ:
            if (r.length && !dma_wait(spin_dma_from_host(host, (uint32_t)data, r.length, false, &h), h))
                status = RMA_STATUS_FAILED;
            data_len = r.length;
            break;
        default:
            status = atomic(&r, host, out + RMA_FRAME_MAX, &old);
            data_len = r.width;
            break;
        }
    }
    if (status != RMA_STATUS_OK)
        data_len = 0;
    else if (r.width)
        rma_putn(data, old, r.width);
    uint32_t len = response_headers(&r, out, status, data_len);
    count(status, r.length);
    send(out, len, status);
}
