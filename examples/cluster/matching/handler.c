/*
 * Message matching with rendezvous (seed 004 §5.1, Fig. 5b): a receiving
 * node's handlers, linked with examples/rma_target/handler.c.
 *
 * The NIC does all matching, under one lock, so a receive and a message
 * meet exactly once whichever comes first:
 *  - the host posts a receive by writing an entry into the post ring in
 *    its memory (matching.h) and bumping UC_MT_POSTED; the NIC ingests new
 *    entries before matching each arrival, and on every doorbell frame
 *    (the host rings one after each post, see mtapi.py), so a receive
 *    posted after its message arrived is matched without another arrival;
 *  - an arriving eager message (one packet) that finds its posted receive
 *    is DMA-written into the receive buffer (Fig. 5b case I); otherwise
 *    into an unexpected slot, from which the host copies once its receive
 *    matches it (case III);
 *  - a rendezvous header (case II) that finds its receive makes the NIC
 *    get the data from the sender's exposed buffer straight into the
 *    receive buffer, then put the send's cookie into the sender's FIN
 *    slot; an unmatched one waits, and the get is issued when the receive
 *    is ingested (where seed 004 leaves case III to the CPU).
 * Completions go into host memory, their `done` word last. Malformed
 * messages are dropped and counted (UC_MT_CTR_DROPPED).
 * Every other frame goes to rma_target_ph (RMA requests and responses).
 */
#include <spin.h>
#include <spin_rma_ops.h>
#include "../uc.h"
#include "matching.h"

void rma_target_ph(handler_args_t *args);

typedef struct {
    uint32_t id, src, tag, buf, cap;
} mt_post_t;

#define MT_FREE 0
#define MT_EAGER 1 /* its data in unexpected slot k */
#define MT_RNDV 2  /* a rendezvous header waiting for its receive */

typedef struct {
    uint32_t state, src, tag, len, soff, cookie, arrival;
} mt_unexp_t;

/* A rendezvous whose get runs after the lock is released. */
typedef struct {
    mt_post_t post;
    uint32_t src, tag, len, soff, cookie, how;
} mt_get_t;

static spin_lock_t mt_lock; /* everything below */
static mt_post_t posts[UC_MT_POSTS]; /* posted receives, in post order */
static uint32_t nposts, ingested, arrivals;
static mt_unexp_t unexp[UC_MT_SLOTS];
static uint32_t slot_gen[UC_MT_SLOTS]; /* allocations of each unexpected data slot */
static uint32_t acks[UC_MT_SLOTS];    /* the host's UC_MT_ACKS, read by free_slot */
static volatile int32_t waiters;      /* handlers waiting for RMA (uc_wait_begin) */

/* Rendezvous one handler runs after the lock, per HPU (the stack is 1 KiB).
 * Ingesting stops when they are full: each post has its own doorbell, so
 * the rest is ingested by the next ones. */
#define MT_MAX_GETS 4
static mt_get_t gets_of[CORE_COUNT][MT_MAX_GETS];

static int matches(uint32_t want_src, uint32_t want_tag, uint32_t src, uint32_t tag)
{
    return (want_src == UC_MT_ANY || want_src == src) && (want_tag == UC_MT_ANY || want_tag == tag);
}

/* Post `id`'s completion; `done` after the rest, so the host never reads a
 * half-written one. */
static void complete(uint64_t base, uint32_t id, uint32_t status, uint32_t len, uint32_t src, uint32_t tag,
                     uint32_t slot, uint32_t gen, uint32_t how)
{
    uint32_t rec[7] = {status, len, src, tag, slot, gen, how};
    uint64_t at = base + UC_MT_COMPL + (uint64_t)(id % UC_MT_POSTS) * UC_MT_COMPL_LEN;
    uint32_t done = id + 1;
    if (!uc_dma_write(at, rec, sizeof rec) || !uc_dma_write(at + UC_MT_DONE_OFF, &done, 4))
        spin_push_counter(UC_CTR_DMA_FAILED, id);
}

/* Read the receives posted since the last call (lock held); each takes the
 * earliest waiting message it matches, else joins the posted list.
 * Rendezvous matched here are appended to gets[] (at most max_gets). */
static void ingest(uint64_t base, mt_get_t *gets, uint32_t *ngets, uint32_t max_gets)
{
    uint32_t count;
    if (!uc_dma_read(base + UC_MT_POSTED, &count, 4))
        return;
    /* At most a ring's worth per call: a host that bumps the count wildly
     * gets BAD_POST completions, not a handler that never ends. */
    for (uint32_t n = 0; ingested != count && n < UC_MT_POSTS && *ngets < max_gets; n++) {
        uint32_t id = ingested++;
        mt_post_t p;
        if (!uc_dma_read(base + UC_MT_POST + (uint64_t)(id % UC_MT_POSTS) * UC_MT_POST_LEN, &p, UC_MT_POST_LEN))
            continue;
        if (p.id != id || p.buf < UC_MT_RECV || p.buf > UC_MT_END || p.cap > UC_MT_END - p.buf) {
            complete(base, id, UC_MT_BAD_POST, 0, 0, 0, UC_MT_NO_SLOT, 0, 0);
            continue;
        }
        uint32_t best = UC_MT_SLOTS;
        for (uint32_t k = 0; k < UC_MT_SLOTS; k++)
            if (unexp[k].state != MT_FREE && matches(p.src, p.tag, unexp[k].src, unexp[k].tag) &&
                (best == UC_MT_SLOTS || unexp[k].arrival - unexp[best].arrival > 0x80000000u))
                best = k;
        if (best < UC_MT_SLOTS) {
            mt_unexp_t *u = &unexp[best];
            if (u->state == MT_EAGER) /* the host copies it out (and acknowledges the slot) */
                complete(base, id, u->len > p.cap ? UC_MT_TRUNCATED : UC_MT_OK, u->len, u->src, u->tag, best,
                         slot_gen[best], UC_MT_HOW_UNEXPECTED);
            else
                gets[(*ngets)++] = (mt_get_t){p, u->src, u->tag, u->len, u->soff, u->cookie, UC_MT_HOW_UNEXPECTED};
            u->state = MT_FREE;
        } else if (nposts == UC_MT_POSTS) {
            complete(base, id, UC_MT_TOO_MANY, 0, 0, 0, UC_MT_NO_SLOT, 0, 0);
        } else {
            posts[nposts++] = p;
        }
    }
}

/* The first posted receive matching (src, tag), taken off the list (lock held). */
static int take_post(uint32_t src, uint32_t tag, mt_post_t *out)
{
    for (uint32_t i = 0; i < nposts; i++)
        if (matches(posts[i].src, posts[i].tag, src, tag)) {
            *out = posts[i];
            for (uint32_t j = i + 1; j < nposts; j++)
                posts[j - 1] = posts[j];
            nposts--;
            return 1;
        }
    return 0;
}

/* Get in RMA_TXN_MAX_LEN pieces, a few in flight (each needs an HPU for
 * its responses: fewer than the HPUs). */
#define GETS_IN_FLIGHT 4

/* A matched rendezvous: the data into the receive buffer, the completion,
 * then the cookie into the sender's FIN slot. */
static void rendezvous(uint64_t base, const mt_get_t *g)
{
    uint32_t id = g->post.id;
    if (g->len > g->post.cap) {
        complete(base, id, UC_MT_TRUNCATED, g->len, g->src, g->tag, UC_MT_NO_SLOT, 0, g->how);
    } else {
        if (!uc_wait_begin(&waiters, id)) {
            complete(base, id, UC_MT_BUSY, g->len, g->src, g->tag, UC_MT_NO_SLOT, 0, g->how);
            return;
        }
        uint32_t status = RMA_STATUS_OK;
        for (uint32_t off = 0; off < g->len;) {
            spin_rma_t h[GETS_IN_FLIGHT];
            int issued[GETS_IN_FLIGHT];
            uint32_t k = 0;
            for (; k < GETS_IN_FLIGHT && off < g->len; k++) {
                uint32_t len = g->len - off < RMA_TXN_MAX_LEN ? g->len - off : RMA_TXN_MAX_LEN;
                issued[k] = spin_rma_get(g->src, UC_KEY, g->soff + off, base + g->post.buf + off, len, &h[k]);
                off += len;
            }
            status = uc_op_wait_all(issued, h, k, status);
        }
        if (status != RMA_STATUS_OK)
            spin_push_counter(UC_MT_CTR_GET, status);
        complete(base, id, status == RMA_STATUS_OK ? UC_MT_OK : UC_MT_GET_FAILED, g->len, g->src, g->tag,
                 UC_MT_NO_SLOT, 0, g->how);
        uc_wait_end(&waiters);
    }
    if (!uc_wait_begin(&waiters, id))
        return;
    uint64_t word __attribute__((aligned(8))) = g->cookie;
    spin_rma_t h;
    uint32_t s = uc_op_wait(
        spin_rma_put(g->src, UC_KEY, UC_MT_FINS + (uint64_t)(g->cookie % UC_MT_SENDS) * 8, &word, 8, &h), h);
    if (s != RMA_STATUS_OK)
        spin_push_counter(UC_MT_CTR_GET, s);
    uc_wait_end(&waiters);
}

static void drop(uint32_t why) { spin_push_counter(UC_MT_CTR_DROPPED, why); }

/* The first free unexpected slot whose last data the host has copied out
 * (lock held); UC_MT_SLOTS if none. */
static uint32_t free_slot(uint64_t base, int need_data)
{
    if (need_data && !uc_dma_read(base + UC_MT_ACKS, acks, sizeof acks))
        return UC_MT_SLOTS;
    for (uint32_t k = 0; k < UC_MT_SLOTS; k++)
        if (unexp[k].state == MT_FREE && (!need_data || acks[k] == slot_gen[k]))
            return k;
    return UC_MT_SLOTS;
}

__handler__ void matching_hh(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p) ||
        (p.mode != UC_MODE_EAGER && p.mode != UC_MODE_RNDV) || t->host_mem_size < UC_MT_END)
        return;
    int32_t me = spin_my_rank();
    if (p.src >= spin_num_nodes() || (int32_t)p.src == me) {
        drop(UC_MT_DROP_RANK);
        return;
    }
    if (p.flags & ~(UC_EOM | (UC_MT_TAG_MAX << UC_MT_TAG_SHIFT))) {
        drop(UC_MT_DROP_FLAGS);
        return;
    }
    uint32_t tag = p.flags >> UC_MT_TAG_SHIFT, soff = 0, cookie = 0;
    if (!(p.flags & UC_EOM) || p.offset != 0) {
        drop(UC_MT_DROP_SIZE); /* one packet per message */
        return;
    }
    if (p.mode == UC_MODE_EAGER && p.len != p.total) {
        drop(UC_MT_DROP_SIZE);
        return;
    }
    if (p.mode == UC_MODE_RNDV) {
        if (p.total > UC_MT_MAX) {
            drop(UC_MT_DROP_SIZE);
            return;
        }
        soff = rma_get32(p.data);
        cookie = rma_get32(p.data + 4);
        if (p.len != UC_MT_RTS_LEN || soff < UC_MT_SEND || soff > UC_MT_END || p.total > UC_MT_END - soff) {
            drop(UC_MT_DROP_RTS);
            return;
        }
    }
    if (args->hpu_gid >= CORE_COUNT)
        return;
    uint64_t base = uc_host_base(t);
    mt_get_t *gets = gets_of[args->hpu_gid];
    uint32_t ngets = 0;
    mt_post_t post;
    spin_lock_lock(&mt_lock);
    /* Room for this message's own rendezvous after the ingested ones. */
    ingest(base, gets, &ngets, MT_MAX_GETS - 1);
    int matched = take_post(p.src, tag, &post);
    if (p.mode == UC_MODE_RNDV) {
        if (matched) {
            gets[ngets++] = (mt_get_t){post, p.src, tag, p.total, soff, cookie, UC_MT_HOW_POSTED};
        } else {
            uint32_t k = free_slot(base, 0);
            if (k < UC_MT_SLOTS)
                unexp[k] = (mt_unexp_t){MT_RNDV, p.src, tag, p.total, soff, cookie, arrivals++};
            else
                drop(UC_MT_DROP_FULL);
        }
    } else if (matched) {
        /* Case I: straight into the receive buffer. */
        uint32_t status = p.len > post.cap ? UC_MT_TRUNCATED : UC_MT_OK;
        if (status == UC_MT_OK && !uc_dma_write(base + post.buf, p.data, p.len))
            spin_push_counter(UC_CTR_DMA_FAILED, post.id);
        complete(base, post.id, status, p.len, p.src, tag, UC_MT_NO_SLOT, 0, UC_MT_HOW_POSTED);
    } else {
        /* Case III: into an unexpected slot, under the lock, so a receive
         * ingested next finds the data there. */
        uint32_t k = free_slot(base, 1);
        if (k < UC_MT_SLOTS && uc_dma_write(base + UC_MT_UNEXP + (uint64_t)k * UC_MT_EAGER_MAX, p.data, p.len)) {
            slot_gen[k]++;
            unexp[k] = (mt_unexp_t){MT_EAGER, p.src, tag, p.len, 0, 0, arrivals++};
        } else {
            drop(UC_MT_DROP_FULL);
        }
    }
    spin_lock_unlock(&mt_lock);
    for (uint32_t i = 0; i < ngets; i++)
        rendezvous(base, &gets[i]);
}

__handler__ void matching_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint8_t *f = (const uint8_t *)t->pkt_mem;
    uc_pkt_t p;
    if (uc_parse(f, t->pkt_mem_size, &p))
        return; /* one packet per message: the header handler did it all */
    int doorbell = t->pkt_mem_size >= RMA_DOORBELL_LEN && f[12] == (RMA_DOORBELL_ETHERTYPE >> 8) &&
                   f[13] == (RMA_DOORBELL_ETHERTYPE & 0xff);
    rma_target_ph(args);
    if (!doorbell || t->host_mem_size < UC_MT_END)
        return;
    /* The host rang: receives it posted may match messages waiting. */
    if (args->hpu_gid >= CORE_COUNT)
        return;
    uint64_t base = uc_host_base(t);
    mt_get_t *gets = gets_of[args->hpu_gid];
    uint32_t ngets = 0;
    spin_lock_lock(&mt_lock);
    ingest(base, gets, &ngets, MT_MAX_GETS);
    spin_lock_unlock(&mt_lock);
    for (uint32_t i = 0; i < ngets; i++)
        rendezvous(base, &gets[i]);
}

__handler__ void matching_th(handler_args_t *args) { (void)args; }
