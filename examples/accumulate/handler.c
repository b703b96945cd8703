/*
 * accumulate (seed 004 §4.4.2): an array of double complex numbers arrives
 * as one message and is multiplied into the array of the same type in host
 * memory, element by element: dst[i] = dst[i] * src[i].
 *
 * Each packet carries a 4-byte header (the index of its first element) and
 * a run of elements, each {double re, im}. The payload handler fetches the
 * matching slice of dst from host memory into its own L1 slot, multiplies,
 * and writes the slice back. The HPU has no FPU: the doubles are computed
 * by the SDK's soft-float (sdk/src/softfloat.c).
 *
 * The host sizes the scratchpads: NB_CORES slots of SLOT bytes per cluster.
 */
#include <spin.h>

#define HDRS 28 /* IP + UDP */
#define SLOT 4096

typedef struct {
    double re, im;
} cplx_t;

__handler__ void accumulate_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint8_t *pld = (const uint8_t *)t->pkt_mem + HDRS;
    uint32_t n = (t->pkt_mem_size - HDRS - 4) / sizeof(cplx_t);
    uint32_t first = *(const uint32_t *)pld;
    const cplx_t *src = (const cplx_t *)(pld + 4);
    uint32_t cl = args->cluster_id, len = n * sizeof(cplx_t);
    if (n == 0 || len > SLOT || t->scratchpad_size[cl] < NB_CORES * SLOT)
        return;
    if (first > t->host_mem_size / sizeof(cplx_t) || len > t->host_mem_size - first * sizeof(cplx_t))
        return; /* outside the array */
    cplx_t *dst = (cplx_t *)((uint8_t *)t->scratchpad[cl] + args->hpu_id * SLOT);
    uint64_t host = (((uint64_t)t->host_mem_high << 32) | t->host_mem_low) + first * sizeof(cplx_t);

    spin_cmd_t c;
    if (spin_dma_from_host(host, (uint32_t)dst, len, false, &c) != SPIN_OK)
        return;
    spin_cmd_wait(c);
    for (uint32_t i = 0; i < n; i++) {
        double ar = dst[i].re, ai = dst[i].im, br = src[i].re, bi = src[i].im;
        dst[i].re = ar * br - ai * bi;
        dst[i].im = ar * bi + ai * br;
    }
    spin_dma_to_host(host, (uint32_t)dst, len, true, &c);
    spin_cmd_wait(c); /* the slot is this HPU's next packet's */
}
