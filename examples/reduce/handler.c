/*
 * reduce (seed 001 §4.3, "data reduction"): n vectors of m int32 items
 * arrive as one message; every packet carries a 4-byte header (the index of
 * its first item in the stream) and a run of items. Payload handlers add
 * each item into entry (index mod m) of an accumulator in the home
 * cluster's L1 scratchpad with AMOs; the completion handler DMAs the m sums
 * to host memory.
 */
#include <spin.h>

#ifndef ITEMS
#define ITEMS 512 /* m */
#endif

__handler__ void reduce_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint8_t *pld = (const uint8_t *)t->pkt_mem + 28;
    uint32_t n = (t->pkt_mem_size - 28 - 4) / 4;
    uint32_t first = *(const uint32_t *)pld;
    const int32_t *items = (const int32_t *)(pld + 4);
    volatile int32_t *acc = (volatile int32_t *)t->scratchpad[t->home_cluster_id];
    uint32_t e = first % ITEMS;
    for (uint32_t i = 0; i < n; i++) {
        amo_add(&acc[e], items[i]);
        if (++e == ITEMS)
            e = 0;
    }
}

__handler__ void reduce_th(handler_args_t *args)
{
    task_t *t = args->task;
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    spin_cmd_t c;
    spin_dma_to_host(host, (uint32_t)t->scratchpad[t->home_cluster_id], ITEMS * 4, true, &c);
    spin_cmd_wait(c);
}
