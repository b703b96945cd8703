/* Payload handler reading every 32-bit word of the packet copy in L1,
 * summing into a volatile (sim_bench case b). */
#include <spin.h>
#include <stdint.h>

__handler__ void wordsum_ph(handler_args_t *args)
{
    const uint32_t *p = (const uint32_t *)args->task->pkt_mem;
    uint32_t n = args->task->pkt_mem_size / 4;
    volatile uint32_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += p[i];
}
