/*
 * packet_digest: a payload handler that digests its packet on the NIC.
 *
 * For every packet it computes the Internet checksum (RFC 1071) and the
 * FNV-1a hash of the packet bytes in L1, counts packets in handler memory,
 * and reports the hash to the host with a host-direct write, the way a
 * PsPIN handler would (spin_host_write with `false` as the handle).
 */
#include <spin.h>

volatile uint32_t packets_seen; /* L2 handler memory */

static uint32_t fnv1a(const uint8_t *p, uint32_t n)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

__handler__ void digest_ph(handler_args_t *args)
{
    task_t *task = args->task;
    const uint8_t *pkt = (const uint8_t *)task->pkt_mem;
    uint32_t len = task->pkt_mem_size;

    uint32_t t0 = spin_cycles();
    uint16_t csum = ip_checksum(pkt, len);
    uint32_t hash = fnv1a(pkt, len);
    uint32_t t1 = spin_cycles();

    uint32_t n = amo_add((volatile int32_t *)&packets_seen, 1) + 1;
    uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
    spin_host_write(host, ((uint64_t)csum << 32) | hash, false);

    printf("packet %u: %u bytes, checksum 0x%04x, fnv1a 0x%08x, %u cycles\n",
           (unsigned)n, (unsigned)len, ntohs(csum), (unsigned)hash, (unsigned)(t1 - t0));
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr)
{
    volatile handler_fn handlers[] = {NULL, digest_ph, NULL};
    *hh = handlers[0];
    *ph = handlers[1];
    *th = handlers[2];
    *handler_mem_ptr = (void *)&packets_seen;
}
