/*
 * histogram (seed 001 §4.3): count the 32-bit values in [0, BINS) carried by
 * a set of messages. Each cluster counts into its own table in its L1
 * scratchpad (local L1 AMOs, no remote traffic); the completion handler
 * that finishes the last message merges the per-cluster tables and DMAs the
 * histogram to host memory.
 */
#include <spin.h>

#define HDR 28 /* IP-first frames: IP + UDP headers */
/* task_t is packed (PsPIN's layout), so its fields would be read byte by
 * byte; the runtime places it word-aligned, and saying so gives word loads. */
#define TASK(args) ((task_t *)__builtin_assume_aligned((args)->task, 4))
#define BINS 1024 /* host.rs: BINS */

/* Scratchpad of each cluster: its table, then room for the other clusters'
 * tables when it does the final merge. */
#define TABLE_BYTES (BINS * 4)
#define IN_RANGE(x) __builtin_expect((x) < BINS, 1)

uint32_t hist_messages;         /* messages in the run: set by the host */
volatile int32_t hist_finished; /* messages whose completion handler ran */

__handler__ void histogram_ph(handler_args_t *args)
{
    task_t *t = TASK(args);
    if (t->pkt_mem_size < HDR)
        return;
    const uint32_t *v = (const uint32_t *)((const uint8_t *)t->pkt_mem + HDR);
    const uint32_t *end = v + (t->pkt_mem_size - HDR) / 4, *end4 = v + ((t->pkt_mem_size - HDR) / 16) * 4;
    volatile int32_t *bins = (volatile int32_t *)t->scratchpad[args->cluster_id];
    /* Loads first (no load-use stalls); values out of range are ignored,
     * on the not-taken side of the branch so valid ones pay no jump. */
    for (; v != end4; v += 4) {
        uint32_t a = v[0], b = v[1], c = v[2], d = v[3];
        if (IN_RANGE(a))
            amo_add(&bins[a], 1);
        if (IN_RANGE(b))
            amo_add(&bins[b], 1);
        if (IN_RANGE(c))
            amo_add(&bins[c], 1);
        if (IN_RANGE(d))
            amo_add(&bins[d], 1);
    }
    for (; v != end; v++)
        if (IN_RANGE(*v))
            amo_add(&bins[*v], 1);
}

__handler__ void histogram_th(handler_args_t *args)
{
    task_t *t = TASK(args);
    /* A message's completion handler runs after all its payload handlers, so
     * when every message has got here, every count is in. */
    if ((uint32_t)amo_add(&hist_finished, 1) + 1 != hist_messages)
        return;
    uint32_t me = args->cluster_id;
    int32_t *mine = (int32_t *)t->scratchpad[me];
    int32_t *stage = (int32_t *)((uint8_t *)mine + TABLE_BYTES);
    /* Pull the other tables next to ours with the cluster DMA (wide bursts
     * instead of 3 * BINS remote loads), then add with local loads. */
    spin_cmd_t cmd[NB_CLUSTERS];
    uint32_t k = 0;
    for (uint32_t c = 0; c < NB_CLUSTERS; c++) {
        if (c == me)
            continue;
        spin_dma(t->scratchpad[c], stage + k * BINS, TABLE_BYTES, 0, 0, &cmd[k]);
        k++;
    }
    for (uint32_t i = 0; i < k; i++)
        spin_cmd_wait(cmd[i]);
    /* Four bins per step: the tables sit BINS words apart, so each table
     * costs one address add per step, not one per bin. */
    for (int32_t *p = mine; p != mine + BINS; p += 4) {
        int32_t s0 = p[0], s1 = p[1], s2 = p[2], s3 = p[3];
        const int32_t *q = p;
        for (uint32_t j = 1; j < NB_CLUSTERS; j++) {
            q += BINS;
            s0 += q[0];
            s1 += q[1];
            s2 += q[2];
            s3 += q[3];
        }
        p[0] = s0;
        p[1] = s1;
        p[2] = s2;
        p[3] = s3;
    }
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    spin_cmd_t c;
    spin_dma_to_host(host, (uint32_t)mine, TABLE_BYTES, true, &c);
    spin_cmd_wait(c);
}
