/*
 * reduce (seed 001 §4.3, "data reduction"): n vectors of m int32 items
 * arrive as one message; every packet carries a 4-byte header (the index of
 * its first item in the stream) and a run of items. Payload handlers add
 * each item into entry (index mod m) of an accumulator in the L1 scratchpad
 * of the cluster they run on (local AMOs: a packet of one message may run
 * on any cluster, and remote L1 costs 8 cycles more per access). The
 * completion handler, which runs after every payload handler, gathers the
 * per-cluster accumulators, adds them and DMAs the m sums to host memory.
 */
#include <spin.h>

#ifndef ITEMS
#define ITEMS 512 /* m; host.rs: ITEMS */
#endif
#define HDR 28 /* IP-first frames: IP + UDP headers */
#define ACC_BYTES (ITEMS * 4)
/* task_t is packed (PsPIN's layout), so its fields would be read byte by
 * byte; the runtime places it word-aligned, and saying so gives word loads. */
#define TASK(args) ((task_t *)__builtin_assume_aligned((args)->task, 4))

__handler__ void reduce_ph(handler_args_t *args)
{
    task_t *t = TASK(args);
    if (t->pkt_mem_size < HDR + 4)
        return;
    const uint8_t *pld = (const uint8_t *)t->pkt_mem + HDR;
    uint32_t n = (t->pkt_mem_size - HDR - 4) / 4;
    const int32_t *items = (const int32_t *)(pld + 4);
    volatile int32_t *acc = (volatile int32_t *)t->scratchpad[args->cluster_id];
    uint32_t e = *(const uint32_t *)pld % ITEMS;
    const int32_t *p = items, *end = items + n;
    /* Runs that do not wrap around the accumulator, four items per step
     * with the loads first (no load-use stalls, one branch per four). */
    while (p != end) {
        uint32_t run = ITEMS - e;
        if (run > (uint32_t)(end - p))
            run = end - p;
        volatile int32_t *q = acc + e;
        const int32_t *stop = p + run, *stop4 = p + (run & ~3u);
        for (; p != stop4; p += 4, q += 4) {
            int32_t a = p[0], b = p[1], c = p[2], d = p[3];
            amo_add(q, a);
            amo_add(q + 1, b);
            amo_add(q + 2, c);
            amo_add(q + 3, d);
        }
        for (; p != stop; p++, q++)
            amo_add(q, *p);
        e = 0;
    }
}

__handler__ void reduce_th(handler_args_t *args)
{
    task_t *t = TASK(args);
    uint32_t me = args->cluster_id;
    int32_t *mine = (int32_t *)t->scratchpad[me];
    int32_t *stage = (int32_t *)((uint8_t *)mine + ACC_BYTES);
    /* The other clusters' accumulators next to ours by cluster DMA (wide
     * bursts rather than remote loads), then local adds. */
    spin_cmd_t cmd[NB_CLUSTERS];
    uint32_t k = 0;
    for (uint32_t c = 0; c < NB_CLUSTERS; c++) {
        if (c == me)
            continue;
        spin_dma(t->scratchpad[c], stage + k * ITEMS, ACC_BYTES, 0, 0, &cmd[k]);
        k++;
    }
    for (uint32_t i = 0; i < k; i++)
        spin_cmd_wait(cmd[i]);
    for (uint32_t i = 0; i < ITEMS; i++) {
        int32_t s = mine[i];
        for (uint32_t j = 0; j < k; j++)
            s += stage[j * ITEMS + i];
        mine[i] = s;
    }
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    spin_cmd_t c;
    spin_dma_to_host(host, (uint32_t)mine, ACC_BYTES, true, &c);
    spin_cmd_wait(c);
}
