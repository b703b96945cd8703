/*
 * kvstore (seed 001 §4.3, "Key-Value cache"): a set-associative key-value
 * cache in L2 handler memory, WAYS x SETS entries (4 x 125 = 500), set =
 * key mod SETS, LRU victim within the set. Every request is a one-packet
 * message; payload (little-endian u32s):
 *     GET: 0, key          -> reply: status (1 hit, 0 miss), key[, value]
 *     PUT: 1, key, value   -> no reply; updates or inserts the entry
 * Values are VALUE bytes (a build define). Requests run in parallel, so
 * each set has a lock. Values move between L1 and L2 by cluster DMA; a GET
 * reply is built in this HPU's slot of the cluster scratchpad.
 */
#include <spin.h>

#ifndef WAYS
#define WAYS 4
#endif
#ifndef SETS
#define SETS 125
#endif
#ifndef VALUE
#define VALUE 988
#endif
#define HDRS 28 /* IP + UDP */
#define SLOT (HDRS + 8 + VALUE)

typedef struct {
    spin_lock_t lock;
    uint32_t used;        /* valid ways: 0..used-1 */
    uint32_t tick;        /* per-set access clock */
    uint32_t key[WAYS];
    uint32_t stamp[WAYS]; /* last access; the smallest is the LRU way */
    uint8_t value[WAYS][VALUE];
} kv_set_t;

kv_set_t kv_sets[SETS];

/* Reply headers: the request's with addresses and ports swapped. */
static inline void reply_hdr(uint32_t *o, const uint32_t *h, uint32_t len)
{
    o[0] = (h[0] & 0xffff) | (len << 16); /* PsPIN layout: length LE */
    o[1] = h[1];
    o[2] = h[2] & 0xffff; /* checksum cleared */
    o[3] = h[4];
    o[4] = h[3];
    o[5] = (h[5] >> 16) | (h[5] << 16);
    o[6] = len - 20; /* UDP length, checksum 0 */
    ((ip_hdr_t *)o)->checksum = ip_checksum(o, 20);
}

__handler__ void kv_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint32_t *pkt = (const uint32_t *)t->pkt_mem;
    uint32_t len = t->pkt_mem_size;
    if (len < HDRS + 8)
        return;
    const uint32_t *req = pkt + HDRS / 4;
    uint32_t op = req[0], key = req[1];
    if (op > 1 || (op == 1 && len < HDRS + 8 + VALUE))
        return;
    kv_set_t *s = &kv_sets[key % SETS];
    spin_cmd_t c;

    spin_lock_lock(&s->lock);
    uint32_t used = s->used, now = s->tick + 1, w;
    s->tick = now;
    for (w = 0; w < used; w++)
        if (s->key[w] == key)
            break;
    if (op == 1) {
        if (w == used) { /* miss: a free way, else the LRU one */
            if (used < WAYS) {
                s->used = used + 1;
            } else {
                uint32_t min = s->stamp[0];
                w = 0;
                for (uint32_t i = 1; i < WAYS; i++) {
                    uint32_t st = s->stamp[i];
                    if (st < min) {
                        min = st;
                        w = i;
                    }
                }
            }
            s->key[w] = key;
        }
        s->stamp[w] = now;
        spin_dma((void *)(req + 2), s->value[w], VALUE, SPIN_DMA_EXT2LOC, 0, &c);
        spin_dma_wait(c);
        spin_lock_unlock(&s->lock);
        return;
    }

    uint32_t cl = args->cluster_id;
    if (t->scratchpad_size[cl] < NB_CORES * SLOT) {
        spin_lock_unlock(&s->lock);
        return; /* the host did not give us room */
    }
    uint32_t *out = (uint32_t *)((uint8_t *)t->scratchpad[cl] + args->hpu_id * SLOT);
    uint32_t *rep = out + HDRS / 4;
    uint32_t rlen = HDRS + 8;
    if (w < used) {
        s->stamp[w] = now;
        spin_dma(s->value[w], rep + 2, VALUE, SPIN_DMA_EXT2LOC, 0, &c);
        spin_dma_wait(c);
        rep[0] = 1;
        rlen += VALUE;
    } else {
        rep[0] = 0;
    }
    spin_lock_unlock(&s->lock);
    rep[1] = key;
    reply_hdr(out, pkt, rlen);
    spin_send_packet(out, rlen, NULL);
}
