/*
 * Allreduce (sum) and barrier between hosts, computed by the NICs: every
 * node's payload handler, linked with examples/rma_target/handler.c.
 * Recursive doubling over the P = 2^L largest power of two <= N nodes, in
 * chunks of one packet (README.md has the schedule and why):
 *  - NIC j (j < P) starts from host j^1's vector (tag IN; a host cannot
 *    send to its own NIC), plus, if v = j^1 < N - P, the extra host P+v's
 *    (tag EXTRA): NIC j holds the partial of rank v of textbook recursive
 *    doubling.
 *  - Step k: it sends its partial to NIC j ^ 2^k and adds the one it gets
 *    from there (tag STEP + k); addition is commutative bit for bit, so
 *    both partners hold the same sum. After L steps every NIC has the sum.
 *  - NIC j writes the sum into its host's UC_AR_OUT, and sends it to the
 *    extra NIC P+v (tag RESULT), which writes it into its host.
 * A chunk's two inputs of a step may arrive in either order: each is
 * DMA-written to host memory (UC_AR_OWN / UC_AR_STG) and recorded in
 * `inputs`; the handler that records the second adds them. When every
 * chunk of the round is in UC_AR_OUT the NIC DMA-writes the round's seq to
 * its host's UC_DONE. Packets between NICs are spin_send_packet frames (no
 * RMA round trips); a barrier is the sum of one int32 1 per host.
 * Anything else of the use case's port goes to rma_target_ph.
 */
#include <spin.h>
#include <spin_rma_ops.h>
#include "../uc.h"
#include "allreduce.h"

void rma_target_ph(handler_args_t *args);

#define AR_CHUNKS ((UC_AR_MAX + UC_CHUNK - 1) / UC_CHUNK)
/* A chunk's stages: the extra's addition, the steps, the result at an extra NIC. */
#define AR_STAGE_PRE 0
#define AR_STAGE_STEP(k) (1 + (k))
#define AR_STAGE_RESULT (1 + UC_AR_MAX_STEPS)
#define AR_STAGES (2 + UC_AR_MAX_STEPS)
#define AR_OWN_IN 1u   /* the input of this NIC's own chain (IN before the extra) */
#define AR_OTHER_IN 2u /* the partner's partial, or the extra's vector */
#define AR_BOTH 3u

/* Per (stage, chunk): seq << 2 | the inputs recorded (AR_*_IN bits). */
static volatile uint32_t inputs[AR_STAGES][AR_CHUNKS];
/* Chunks of the round whose sum is in UC_AR_OUT: (seq & 0xffffff) << 8 | count. */
static volatile uint32_t chunks_done;

/* Per HPU: a frame, placed so its data is 8-aligned (the sum is computed
 * in place, then sent as it is), and a slice of the other operand. */
#define AR_FRAME_PAD 4 /* UC_DATA_OFF + 4 is a multiple of 8 */
static uint8_t frames[CORE_COUNT][AR_FRAME_PAD + UC_DATA_OFF + UC_CHUNK] __attribute__((aligned(8)));
static uint64_t other[CORE_COUNT][UC_CHUNK / 8];
static uint64_t done_word[CORE_COUNT];

typedef struct {
    uint32_t me, n, p, e, steps;
} ar_geo_t;

typedef struct {
    ar_geo_t g;
    uint32_t seq, total, offset, len, chunk, dtype, mode;
    uint64_t host;
    uint8_t *frame; /* this HPU's frame; its data at frame + UC_DATA_OFF */
    void *other;
} ar_op_t;

static void drop(uint32_t why) { spin_push_counter(UC_AR_CTR_DROPPED, why); }

/* N, P = 2^steps <= N, the extras e = N - P; 0 without a node table or N unsupported. */
static int geometry(ar_geo_t *g)
{
    int32_t me = spin_my_rank();
    uint32_t n = spin_num_nodes();
    if (me < 0 || n < 2 || n > UC_AR_MAX_NODES)
        return 0;
    uint32_t p = 1, steps = 0;
    while (p * 2 <= n) {
        p *= 2;
        steps++;
    }
    *g = (ar_geo_t){(uint32_t)me, n, p, n - p, steps};
    return steps <= UC_AR_MAX_STEPS;
}

/* Record one input of (stage, chunk) for round seq: 1 when it completes
 * the stage's inputs (the caller adds them), 0 when the other is still to
 * come or it was recorded already (a duplicate: counted). `which` is
 * AR_BOTH for a stage of one input. */
static int record(uint32_t stage, uint32_t chunk, uint32_t seq, uint32_t which)
{
    uint32_t *c = (uint32_t *)&inputs[stage][chunk], round = seq << 2;
    for (;;) {
        uint32_t old = *c, want = round | which;
        if ((old & ~3u) == round) {
            if (old & which) {
                drop(UC_AR_DROP_DUPLICATE);
                return 0;
            }
            want = round | AR_BOTH;
        }
        if (__atomic_compare_exchange_n(c, &old, want, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return want == (round | AR_BOTH);
    }
}

static int dma_to(const ar_op_t *o, uint32_t at, const void *src)
{
    spin_cmd_t c;
    if (spin_dma_to_host(o->host + at + o->offset, (uint32_t)src, o->len, false, &c) == SPIN_OK &&
        spin_cmd_wait(c) == SPIN_OK)
        return 1;
    drop(UC_AR_DROP_DMA);
    return 0;
}

static int dma_from(const ar_op_t *o, uint32_t at, void *dst)
{
    spin_cmd_t c;
    if (spin_dma_from_host(o->host + at + o->offset, (uint32_t)dst, o->len, false, &c) == SPIN_OK &&
        spin_cmd_wait(c) == SPIN_OK)
        return 1;
    drop(UC_AR_DROP_DMA);
    return 0;
}

/* a += b, element-wise, in the vector's type (IEEE round to nearest on
 * the HPUs' soft-float; int32 wraps). */
static void add(void *a, const void *b, uint32_t len, uint32_t dtype)
{
    if (dtype == UC_AR_DOUBLE) {
        double *x = a;
        const double *y = b;
        for (uint32_t i = 0; i < len / 8; i++)
            x[i] = x[i] + y[i];
    } else if (dtype == UC_AR_FLOAT) {
        float *x = a;
        const float *y = b;
        for (uint32_t i = 0; i < len / 4; i++)
            x[i] = x[i] + y[i];
    } else {
        uint32_t *x = a;
        const uint32_t *y = b;
        for (uint32_t i = 0; i < len / 4; i++)
            x[i] = x[i] + y[i];
    }
}

/* The frame's data (o->len bytes) to NIC `rank`'s use-case port, tagged. */
static int send_to(const ar_op_t *o, uint32_t rank, uint32_t tag)
{
    const spin_node_t *me = spin_node(o->g.me), *dst = spin_node(rank);
    if (!me || !dst) {
        drop(UC_AR_DROP_RANK);
        return 0;
    }
    uint8_t *f = o->frame;
    uint32_t n = rma_l2_headers(f, dst->mac, me->mac, (const uint8_t *)&me->ipv4, (const uint8_t *)&dst->ipv4,
                                UC_PORT, UC_PORT, UC_HDR + o->len);
    rma_put16(f + 42, UC_MAGIC);
    rma_put32(f + 44, UC_MSG_BIT | o->g.me << 20 | tag << 15 | o->chunk);
    rma_put32(f + 48, UC_EOM | tag << UC_AR_TAG_SHIFT | o->dtype << UC_AR_DTYPE_SHIFT);
    rma_put32(f + 52, o->seq);
    rma_put32(f + 56, o->total);
    rma_put32(f + 60, o->offset);
    rma_put16(f + 64, o->g.me);
    rma_put16(f + 66, o->mode);
    spin_cmd_t c;
    if (spin_send_packet(f, n, &c) == SPIN_OK && spin_cmd_wait(c) == SPIN_OK)
        return 1;
    drop(UC_AR_DROP_DMA);
    return 0;
}

/* One more chunk's sum is in UC_AR_OUT; the last of the round writes the
 * seq into UC_DONE (after every chunk's sum: each was waited for). */
static void chunk_done(ar_op_t *o, uint32_t hpu)
{
    uint32_t chunks = (o->total + UC_CHUNK - 1) / UC_CHUNK, round = o->seq & 0xffffff, count, old, want;
    uint32_t *c = (uint32_t *)&chunks_done;
    do {
        old = *c;
        count = (old >> 8 == round ? (old & 0xff) : 0) + 1;
        want = round << 8 | count;
    } while (!__atomic_compare_exchange_n(c, &old, want, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    if (count != chunks)
        return;
    done_word[hpu] = o->seq;
    spin_cmd_t cmd;
    if (spin_dma_to_host(o->host + UC_DONE, (uint32_t)&done_word[hpu], 8, false, &cmd) != SPIN_OK ||
        spin_cmd_wait(cmd) != SPIN_OK)
        drop(UC_AR_DROP_DMA);
}

/* The frame's data is this NIC's partial entering step k (k = steps: the
 * sum). Send it on, and add the partner's as soon as both are in. */
static void own_ready(ar_op_t *o, uint32_t k, uint32_t hpu)
{
    uint8_t *data = o->frame + UC_DATA_OFF;
    for (; k < o->g.steps; k++) {
        uint32_t partner = o->g.me ^ (1u << k);
        /* In host memory before it is recorded: the partner's handler may read it at once. */
        if (!dma_to(o, UC_AR_OWN + k * UC_AR_MAX, data) || !send_to(o, partner, UC_AR_TAG_STEP + k))
            return;
        if (!record(AR_STAGE_STEP(k), o->chunk, o->seq, AR_OWN_IN))
            return;
        if (!dma_from(o, UC_AR_STG + k * UC_AR_MAX, o->other))
            return;
        add(data, o->other, o->len, o->dtype);
    }
    if (!dma_to(o, UC_AR_OUT, data))
        return;
    uint32_t v = o->g.me ^ 1;
    if (v < o->g.e && !send_to(o, o->g.p + v, UC_AR_TAG_RESULT))
        return;
    chunk_done(o, hpu);
}

/* Both inputs of a stage are in host memory: add them into the frame. */
static int combine(ar_op_t *o, uint32_t own_at, uint32_t other_at)
{
    if (!dma_from(o, own_at, o->frame + UC_DATA_OFF) || !dma_from(o, other_at, o->other))
        return 0;
    add(o->frame + UC_DATA_OFF, o->other, o->len, o->dtype);
    return 1;
}

/* The rank a tag must come from at this NIC, or -1 if it has no such input. */
static int32_t expected_src(const ar_geo_t *g, uint32_t tag)
{
    uint32_t v = g->me ^ 1;
    if (g->me >= g->p)
        return tag == UC_AR_TAG_RESULT ? (int32_t)((g->me - g->p) ^ 1) : -1;
    if (tag == UC_AR_TAG_IN)
        return (int32_t)v;
    if (tag == UC_AR_TAG_EXTRA)
        return v < g->e ? (int32_t)(g->p + v) : -1;
    if (tag >= UC_AR_TAG_STEP && tag - UC_AR_TAG_STEP < g->steps)
        return (int32_t)(g->me ^ (1u << (tag - UC_AR_TAG_STEP)));
    return -1;
}

static void allreduce_packet(handler_args_t *args, const uc_pkt_t *p)
{
    task_t *t = args->task;
    uint32_t hpu = args->hpu_gid, tag = (p->flags >> UC_AR_TAG_SHIFT) & 0xff,
             dtype = (p->flags >> UC_AR_DTYPE_SHIFT) & 0xff, es = dtype == UC_AR_DOUBLE ? 8 : 4;
    ar_op_t o;
    if (!geometry(&o.g)) {
        drop(UC_AR_DROP_RANK);
        return;
    }
    if (p->mode != UC_MODE_ALLREDUCE && p->mode != UC_MODE_BARRIER) {
        drop(UC_AR_DROP_FORM);
        return;
    }
    if (p->total > UC_AR_MAX || (p->mode == UC_MODE_BARRIER && (p->total != 4 || dtype != UC_AR_INT32))) {
        drop(UC_AR_DROP_SIZE);
        return;
    }
    uint32_t chunk_len = p->total - p->offset < UC_CHUNK ? p->total - p->offset : UC_CHUNK;
    if (dtype > UC_AR_DOUBLE || p->total % es || p->offset % UC_CHUNK || p->len != chunk_len || p->seq == 0 ||
        !(p->flags & UC_EOM) || hpu >= CORE_COUNT || t->host_mem_size < UC_AR_END) {
        drop(UC_AR_DROP_FORM);
        return;
    }
    int32_t want = expected_src(&o.g, tag);
    if (want < 0 || p->src != (uint32_t)want) {
        drop(UC_AR_DROP_RANK);
        return;
    }
    o.seq = p->seq;
    o.total = p->total;
    o.offset = p->offset;
    o.len = p->len;
    o.chunk = p->offset / UC_CHUNK;
    o.dtype = dtype;
    o.mode = p->mode;
    o.host = uc_host_base(t);
    o.frame = frames[hpu] + AR_FRAME_PAD;
    o.other = other[hpu];
    uint8_t *data = o.frame + UC_DATA_OFF;
    int has_extra = (o.g.me ^ 1) < o.g.e;

    if (tag == UC_AR_TAG_RESULT) {
        if (dma_to(&o, UC_AR_OUT, p->data) && record(AR_STAGE_RESULT, o.chunk, o.seq, AR_BOTH))
            chunk_done(&o, hpu);
    } else if (tag == UC_AR_TAG_IN && !has_extra) {
        memcpy(data, p->data, p->len); /* the packet's data sits 4-aligned: copy to add in place */
        if (record(AR_STAGE_PRE, o.chunk, o.seq, AR_BOTH))
            own_ready(&o, 0, hpu);
    } else if (tag == UC_AR_TAG_IN || tag == UC_AR_TAG_EXTRA) {
        uint32_t in = tag == UC_AR_TAG_IN;
        if (dma_to(&o, in ? UC_AR_IN : UC_AR_EXTRA, p->data) &&
            record(AR_STAGE_PRE, o.chunk, o.seq, in ? AR_OWN_IN : AR_OTHER_IN) &&
            combine(&o, UC_AR_IN, UC_AR_EXTRA)) /* v's vector + the extra's: textbook's order */
            own_ready(&o, 0, hpu);
    } else {
        uint32_t k = tag - UC_AR_TAG_STEP;
        if (dma_to(&o, UC_AR_STG + k * UC_AR_MAX, p->data) &&
            record(AR_STAGE_STEP(k), o.chunk, o.seq, AR_OTHER_IN) &&
            combine(&o, UC_AR_OWN + k * UC_AR_MAX, UC_AR_STG + k * UC_AR_MAX))
            own_ready(&o, k + 1, hpu);
    }
}

/* One-packet messages: nothing to do per message. */
__handler__ void allreduce_hh(handler_args_t *args) { (void)args; }
__handler__ void allreduce_th(handler_args_t *args) { (void)args; }

__handler__ void allreduce_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p)) {
        rma_target_ph(args);
        return;
    }
    allreduce_packet(args, &p);
}
