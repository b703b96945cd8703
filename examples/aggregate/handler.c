/*
 * aggregate (seed 001 §4.3, "data aggregation"): the sum of every 32-bit
 * word of one message. A payload handler sums its packet in registers (64
 * bits, so no word count can overflow it) and adds that partial into a
 * 64-bit accumulator in the home cluster's L1 scratchpad; the completion
 * handler DMAs the total to host memory.
 */
#include <spin.h>

#define HDR 28 /* IP-first frames: IP + UDP headers */
/* task_t is packed (PsPIN's layout), so its fields would be read byte by
 * byte; the runtime places it word-aligned, and saying so gives word loads. */
#define TASK(args) ((task_t *)__builtin_assume_aligned((args)->task, 4))

__handler__ void aggregate_ph(handler_args_t *args)
{
    task_t *t = TASK(args);
    if (t->pkt_mem_size < HDR)
        return;
    const uint32_t *w = (const uint32_t *)((const uint8_t *)t->pkt_mem + HDR);
    uint32_t n = (t->pkt_mem_size - HDR) / 4;
    const uint32_t *end = w + n, *end8 = w + (n & ~7u);
    uint32_t lo = 0, hi = 0;
    /* Unrolled by 8 with the loads first: no load-use stalls, and the loop
     * branch (3 cycles taken) is paid once per 8 words. */
    for (; w != end8; w += 8) {
        uint32_t x0 = w[0], x1 = w[1], x2 = w[2], x3 = w[3];
        uint32_t x4 = w[4], x5 = w[5], x6 = w[6], x7 = w[7];
        lo += x0; hi += lo < x0; /* carry out of the low word */
        lo += x1; hi += lo < x1;
        lo += x2; hi += lo < x2;
        lo += x3; hi += lo < x3;
        lo += x4; hi += lo < x4;
        lo += x5; hi += lo < x5;
        lo += x6; hi += lo < x6;
        lo += x7; hi += lo < x7;
    }
    for (; w != end; w++) {
        lo += *w;
        hi += lo < *w;
    }
    /* RV32 has no 64-bit AMO: add the low words atomically, then carry by
     * hand. Both halves are sums, so the order between handlers is free. */
    volatile int32_t *acc = (volatile int32_t *)t->scratchpad[t->home_cluster_id];
    uint32_t old = (uint32_t)amo_add(&acc[0], (int32_t)lo);
    hi += old + lo < old;
    if (hi)
        amo_add(&acc[1], (int32_t)hi);
}

__handler__ void aggregate_th(handler_args_t *args)
{
    task_t *t = TASK(args);
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    spin_cmd_t c;
    spin_dma_to_host(host, (uint32_t)t->scratchpad[t->home_cluster_id], 8, true, &c);
    spin_cmd_wait(c);
}
