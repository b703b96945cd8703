/*
 * copy_to_host: payload handlers DMA each packet's data into host memory so
 * that the host buffer ends up holding every message whole, in order,
 * whatever order the HPUs finish in.
 *
 * Packets are PsPIN IP-first frames. Their UDP payload starts with a 4-byte
 * application header: the byte offset of this packet's data within its
 * message (little-endian u32). Message m lands at m * msg_stride in the
 * host window; the host sets msg_stride before activating the ECTX.
 */
#include <spin.h>

volatile uint32_t msg_stride; /* L2 handler memory, written by the host */

__handler__ void copy_ph(handler_args_t *args)
{
    task_t *task = args->task;
    uint8_t *pld;
    uint32_t pld_len;
    GET_IP_UDP_PLD(task->pkt_mem, pld, pld_len);
    if (pld_len < 4)
        return;
    uint32_t offset = *(uint32_t *)pld;

    uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
    host += (uint64_t)task->flow_id * msg_stride + offset; /* flow_id: the message id */
    /* No wait: the task completes only when its DMA has, and the HPU is free
     * for the next packet meanwhile. The NIC rejects a range outside the
     * host window. */
    spin_dma_to_host(host, (uint32_t)(pld + 4), pld_len - 4, false, NULL);
}
