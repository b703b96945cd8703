/*
 * Distributed key-value store (seed 004 §5.4): the owner node's handlers,
 * linked with examples/rma_target/handler.c. A request is one use-case
 * datagram (../uc.h, kvstore.h); the header handler serves it from the
 * hash table in this host's memory: it walks the key's bucket chain by
 * host DMA (entry header and key per step, at most UC_KV_MAX_STEPS), then
 *  - put: overwrites the value in place, or writes a new entry (taken from
 *    the pool by an atomic counter in NIC memory) and links it at the head;
 *  - get: DMA-reads the value;
 * and answers with one RMA put from device of the reply record into the
 * requester's window (reliable, and the requester's CPU only polls its
 * memory). A lock per bucket in NIC memory orders requests on one chain.
 * Malformed requests, keys this node does not own, unknown ranks and
 * duplicates (a seq not above its rank's last) are dropped and counted. Every other frame goes to rma_target_ph.
 */
#include <spin.h>
#include <spin_rma_ops.h>
#include "../uc.h"
#include "kvstore.h"

void rma_target_ph(handler_args_t *args);

static volatile int32_t waiters; /* handlers waiting for RMA responses (UC_KV_MAX_WAITERS) */
static volatile int32_t next_entry;   /* the pool's next free entry */
static spin_lock_t locks[UC_KV_BUCKETS];
static volatile uint32_t last_seq[UC_KV_MAX_RANKS]; /* per requester (kvstore.h) */
/* One buffer per HPU: an entry to write, or a reply record. */
static uint8_t bufs[CORE_COUNT][UC_KV_ENTRY] __attribute__((aligned(8)));

static uint32_t le16(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8; }
static void put_le16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }
static void put_le32(uint8_t *p, uint32_t v)
{
    put_le16(p, v);
    put_le16(p + 2, v >> 16);
}

/* Walk the chain from its head: the entry index + 1 holding the key (0 if
 * none, with *status UC_KV_MISS), or 0 with *status CHAIN/DMA. */
static uint32_t find(uint64_t base, uint32_t head, const uint8_t *key, uint32_t klen, uint32_t bucket,
                     uint32_t *status)
{
    uint8_t e[UC_KV_ENTRY_HDR + UC_KV_KEY_MAX];
    *status = UC_KV_MISS;
    for (uint32_t steps = 0; head; steps++) {
        if (steps == UC_KV_MAX_STEPS || head > UC_KV_ENTRIES) { /* long, or the host wrote a bad link */
            spin_push_counter(UC_KV_CTR_CHAIN, bucket);
            *status = UC_KV_CHAIN;
            return 0;
        }
        if (!uc_dma_read(base + UC_KV_POOL + (head - 1) * UC_KV_ENTRY, e, sizeof e)) {
            spin_push_counter(UC_CTR_DMA_FAILED, head);
            *status = UC_KV_DMA;
            return 0;
        }
        if (le16(e + 4) == klen && memcmp(e + UC_KV_ENTRY_HDR, key, klen) == 0)
            return head;
        head = le32(e);
    }
    return 0;
}

/* Serve a put or get under its bucket's lock; the record's status and
 * value length (a get's value is already at rec + UC_KV_REC_HDR). */
static uint32_t serve(const task_t *t, const uc_pkt_t *p, const uint8_t *key, uint32_t klen, const uint8_t *val,
                      uint32_t vlen, uint32_t bucket, uint8_t *buf, uint32_t *out_len)
{
    uint64_t base = uc_host_base(t), head_at = base + UC_KV_TABLE + bucket * 4;
    uint8_t hb[4];
    uint32_t status;
    *out_len = 0;
    if (!uc_dma_read(head_at, hb, 4))
        return UC_KV_DMA;
    uint32_t head = le32(hb);
    uint32_t at = find(base, head, key, klen, bucket, &status);
    if (status == UC_KV_CHAIN || status == UC_KV_DMA)
        return status;
    if (p->mode == UC_MODE_KV_GET) {
        if (!at)
            return UC_KV_MISS;
        uint64_t entry = base + UC_KV_POOL + (at - 1) * UC_KV_ENTRY;
        uint8_t h[UC_KV_ENTRY_HDR];
        if (!uc_dma_read(entry, h, sizeof h))
            return UC_KV_DMA;
        uint32_t len = le16(h + 6);
        if (len > UC_KV_VAL_MAX)
            return UC_KV_CHAIN; /* the host wrote a bad entry */
        if (len && !uc_dma_read(entry + UC_KV_ENTRY_HDR + UC_KV_KEY_MAX, buf + UC_KV_REC_HDR, len))
            return UC_KV_DMA;
        *out_len = len;
        return UC_KV_OK;
    }
    /* Put: a whole entry (header, key, value) written in one DMA. */
    int fresh = at == 0;
    if (fresh) {
        int32_t i = amo_add(&next_entry, 1);
        if (i >= UC_KV_ENTRIES) {
            amo_add(&next_entry, -1);
            spin_push_counter(UC_KV_CTR_FULL, p->seq);
            return UC_KV_FULL;
        }
        at = (uint32_t)i + 1;
    }
    put_le32(buf, fresh ? head : 0);
    put_le16(buf + 4, klen);
    put_le16(buf + 6, vlen);
    memset(buf + UC_KV_ENTRY_HDR, 0, UC_KV_KEY_MAX);
    memcpy(buf + UC_KV_ENTRY_HDR, key, klen);
    memcpy(buf + UC_KV_ENTRY_HDR + UC_KV_KEY_MAX, val, vlen);
    uint64_t entry = base + UC_KV_POOL + (at - 1) * UC_KV_ENTRY;
    if (fresh) {
        if (!uc_dma_write(entry, buf, UC_KV_ENTRY_HDR + UC_KV_KEY_MAX + vlen))
            return UC_KV_DMA;
        put_le32(hb, at); /* linked only once the entry is written */
        if (!uc_dma_write(head_at, hb, 4))
            return UC_KV_DMA;
    } else if (!uc_dma_write(entry + 4, buf + 4, 4) || /* the next link stays */
               !uc_dma_write(entry + UC_KV_ENTRY_HDR + UC_KV_KEY_MAX, buf + UC_KV_ENTRY_HDR + UC_KV_KEY_MAX, vlen)) {
        return UC_KV_DMA;
    }
    return UC_KV_OK;
}

__handler__ void kvstore_hh(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p))
        return; /* RMA frames, or not ours at all: rma_target_ph takes or counts them */
    /* One packet, the request's fields inside it, the buffers there. */
    uint32_t slot = p.len >= UC_KV_REQ_HDR ? le16(p.data) : 0;
    uint32_t klen = p.len >= UC_KV_REQ_HDR ? le16(p.data + 2) : 0;
    uint32_t vlen = p.len >= UC_KV_REQ_HDR ? le16(p.data + 4) : 0;
    if ((p.mode != UC_MODE_KV_PUT && p.mode != UC_MODE_KV_GET) || !(p.flags & UC_EOM) || p.offset != 0 ||
        p.len != p.total || p.len < UC_KV_REQ_HDR || slot >= UC_KV_SLOTS || klen == 0 || klen > UC_KV_KEY_MAX ||
        vlen > UC_KV_VAL_MAX || (p.mode == UC_MODE_KV_GET && vlen) || p.len != UC_KV_REQ_HDR + klen + vlen ||
        args->hpu_gid >= CORE_COUNT || t->host_mem_size < UC_KV_POOL + UC_KV_ENTRIES * UC_KV_ENTRY) {
        spin_push_counter(UC_KV_CTR_BAD, p.len);
        return;
    }
    const uint8_t *key = p.data + UC_KV_REQ_HDR;
    uint32_t nodes = spin_num_nodes(), h = uc_kv_fnv(UC_KV_FNV_BASIS, key, klen);
    int32_t me = spin_my_rank();
    if (me < 0 || uc_kv_owner(h, nodes) != (uint32_t)me || p.src >= nodes || p.src >= UC_KV_MAX_RANKS ||
        p.src == (uint32_t)me) {
        spin_push_counter(UC_KV_CTR_NOT_OWNER, p.src);
        return;
    }
    if (amo_maxu(&last_seq[p.src], p.seq) >= p.seq) { /* atomic: a copy on another HPU meanwhile loses too */
        spin_push_counter(UC_KV_CTR_STALE, p.seq);
        return;
    }
    uint32_t bucket = uc_kv_bucket(h, nodes), len;
    uint8_t *buf = bufs[args->hpu_gid];
    spin_lock_lock(&locks[bucket]);
    uint32_t status = serve(t, &p, key, klen, key + klen, vlen, bucket, buf, &len);
    spin_lock_unlock(&locks[bucket]);
    /* The reply record, in the same buffer (a put's entry is written). */
    put_le32(buf, p.seq);
    put_le32(buf + 4, status);
    put_le32(buf + 8, len);
    put_le32(buf + 12, uc_kv_check(buf, buf + UC_KV_REC_HDR, len));
    /* Only waiting for RMA takes HPUs the responses need: capped. Refused,
     * the requester resends (a put is applied again, with the same value). */
    if (amo_add(&waiters, 1) >= UC_KV_MAX_WAITERS) {
        amo_add(&waiters, -1);
        spin_push_counter(UC_CTR_BUSY, p.seq);
        return;
    }
    spin_rma_t rh;
    uint32_t s = RMA_STATUS_FAILED;
    if (spin_rma_put(p.src, UC_KEY, UC_KV_REPLY + slot * UC_KV_SLOT_SIZE, buf, UC_KV_REC_HDR + len, &rh) != SPIN_OK ||
        spin_rma_wait(rh, &s, 0) != SPIN_OK || s != RMA_STATUS_OK)
        spin_push_counter(UC_CTR_PONG_FAILED, s);
    amo_add(&waiters, -1);
}

__handler__ void kvstore_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p))
        rma_target_ph(args); /* requests are served whole by the header handler */
}

/* Nothing to complete: every request is one packet. */
__handler__ void kvstore_th(handler_args_t *args) { (void)args; }
