/*
 * host_direct: each payload handler digests its packet's data (64-bit
 * FNV-1a) and reports it with one host-direct write (spin_write_to_host:
 * 8 bytes straight into host memory, no DMA buffer on the NIC).
 *
 * Packets are PsPIN IP-first frames; their UDP payload starts with the
 * packet's slot number (little-endian u32), then the data. The digest
 * covers the whole UDP payload (slot number included) and goes to
 * host window + 8 * slot.
 */
#include <spin.h>

__handler__ void digest_ph(handler_args_t *args)
{
    task_t *task = args->task;
    uint8_t *pld;
    uint32_t pld_len;
    GET_IP_UDP_PLD(task->pkt_mem, pld, pld_len);
    if (pld_len < 4)
        return;

    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
    for (uint32_t i = 0; i < pld_len; i++) {
        h ^= pld[i];
        h *= 0x100000001b3ull;
    }
    uint32_t slot = *(uint32_t *)pld;
    uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
    spin_write_to_host(host + 8 * (uint64_t)slot, h, NULL);
}
