/*
 * A handler written against the PsPIN runtime API only (no softspin
 * headers named): it must compile unchanged and link with handler.ld.
 */
#include <handler.h>
#include <packets.h>
#include <spin_conf.h>
#include <spin_dma.h>

#define HISTOGRAM_BINS 256

volatile int32_t bins[HISTOGRAM_BINS];
spin_lock_t bins_lock;
uint32_t packets_seen = 0;
static const char tag[] = "pspin-style";

__handler__ void histo_hh(handler_args_t *args)
{
    printf("[%s] message start on cluster %u hpu %u\n", tag,
           (unsigned)args->cluster_id, (unsigned)args->hpu_id);
}

__handler__ void histo_ph(handler_args_t *args)
{
    task_t *task = args->task;
    uint8_t *pld;
    uint32_t pld_len;
    GET_IP_UDP_PLD(task->pkt_mem, pld, pld_len);
    ASSERT(pld_len <= PKT_SIZE);
    if (pld_len > task->pkt_mem_size)
        TERMINATE;
    TRACING_DUMMY_INSTR();

    for (uint32_t i = 0; i < pld_len; i++)
        amo_add(&bins[pld[i]], 1);

    spin_lock_lock(&bins_lock);
    packets_seen++;
    spin_lock_unlock(&bins_lock);

    /* Stage the payload in L1 scratchpad, then push it to the host. */
    spin_dma_t dma;
    if (spin_dma(pld, task->scratchpad[args->cluster_id], pld_len,
                 SPIN_DMA_EXT2LOC, 0, &dma) == SPIN_OK)
        spin_dma_wait(dma);

    uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
    spin_cmd_t put;
    spin_dma_to_host(host, (uint32_t)task->scratchpad[args->cluster_id],
                     pld_len, false, &put);
    spin_cmd_wait(put);
    spin_dma_to_host(host + pld_len, (uint32_t)pld, pld_len, true, NULL);

    bool done = false;
    spin_cmd_t pkt;
    spin_send_packet(task->pkt_mem, pld_len, &pkt);
    while (!done)
        spin_cmd_test(pkt, &done);
    DEBUG_PRINT("payload of %u bytes\n", (unsigned)pld_len);
}

__handler__ void histo_th(handler_args_t *args)
{
    task_t *task = args->task;
    uint64_t host_address = task->host_mem_high;
    host_address = (host_address << 32) | task->host_mem_low;
    printf("packets: %u\n", (unsigned)packets_seen);
    spin_host_write(host_address, (uint64_t)1, false);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th,
                   void **handler_mem_ptr)
{
    volatile handler_fn handlers[] = {histo_hh, histo_ph, histo_th};
    *hh = handlers[0];
    *ph = handlers[1];
    *th = handlers[2];
    (void)handler_mem_ptr;
}
