/*
 * Accumulate between hosts (seed 004 §4.4.2, Fig. 3d): the destination
 * node's handlers, linked with examples/rma_target/handler.c. The message
 * (../uc.h, mode UC_MODE_ACC) carries the sender's array of complex
 * doubles; each payload handler DMA-reads the matching slice of this host's
 * array at UC_RX, multiplies element-wise (dst[i] = dst[i] * src[i]) and
 * DMA-writes it back. Once every packet is in, the completion handler puts
 * the round's seq into the sender's UC_DONE (an RMA put from device), so
 * the sender learns the product is in the destination's memory.
 * Every other frame goes to rma_target_ph.
 */
#include <spin.h>
#include <spin_rma_ops.h>
#include "../uc.h"

void rma_target_ph(handler_args_t *args);

typedef struct {
    double re, im;
} cplx_t;

static volatile uint32_t msg_bytes[UC_MSG_SLOTS];
static volatile int32_t waiters; /* handlers waiting for RMA responses (uc_wait_begin) */
/* One slice buffer per HPU (the scratchpad holds rma_target's response buffers). */
static cplx_t slices[CORE_COUNT][UC_CHUNK / sizeof(cplx_t)];

__handler__ void accumulate_hh(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p))
        msg_bytes[t->flow_id % UC_MSG_SLOTS] = 0; /* runs first and alone on the message */
}

__handler__ void accumulate_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p)) {
        rma_target_ph(args);
        return;
    }
    if (p.mode != UC_MODE_ACC || p.offset % sizeof(cplx_t) || p.len % sizeof(cplx_t) ||
        t->host_mem_size < UC_RX + UC_MAX_SIZE || args->hpu_gid >= CORE_COUNT)
        return;
    cplx_t *dst = slices[args->hpu_gid];
    const uint8_t *src = p.data; /* at an odd alignment after the headers: copy each element */
    uint32_t n = p.len / sizeof(cplx_t);
    uint64_t host = uc_host_base(t) + UC_RX + p.offset;
    spin_cmd_t c;
    if (spin_dma_from_host(host, (uint32_t)dst, p.len, false, &c) != SPIN_OK || spin_cmd_wait(c) != SPIN_OK) {
        spin_push_counter(UC_CTR_DMA_FAILED, p.offset);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        cplx_t s;
        memcpy(&s, src + i * sizeof(cplx_t), sizeof s);
        double ar = dst[i].re, ai = dst[i].im;
        dst[i].re = ar * s.re - ai * s.im;
        dst[i].im = ar * s.im + ai * s.re;
    }
    if (spin_dma_to_host(host, (uint32_t)dst, p.len, false, &c) != SPIN_OK || spin_cmd_wait(c) != SPIN_OK) {
        spin_push_counter(UC_CTR_DMA_FAILED, p.offset);
        return;
    }
    amo_add((volatile int32_t *)&msg_bytes[t->flow_id % UC_MSG_SLOTS], (int32_t)p.len);
}

__handler__ void accumulate_th(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p) || p.mode != UC_MODE_ACC)
        return;
    uint32_t got = msg_bytes[t->flow_id % UC_MSG_SLOTS];
    if (got != p.total) { /* a packet lost or duplicated: no completion, the sender sees none */
        spin_push_counter(UC_CTR_INCOMPLETE, got);
        return;
    }
    if (!uc_wait_begin(&waiters, p.seq))
        return;
    uint64_t word __attribute__((aligned(8))) = p.seq;
    spin_rma_t h;
    uint32_t status = RMA_STATUS_FAILED;
    if (spin_rma_put(p.src, UC_KEY, UC_DONE, &word, 8, &h) != SPIN_OK || spin_rma_wait(h, &status, 0) != SPIN_OK ||
        status != RMA_STATUS_OK)
        spin_push_counter(UC_CTR_PONG_FAILED, status);
    uc_wait_end(&waiters);
}
