/*
 * copy_from_host: a read service on the NIC. Each request packet asks for a
 * range of host memory; the payload handler fetches it with
 * spin_dma_from_host and sends it back in a reply packet.
 *
 * Request (UDP payload of a PsPIN IP-first frame), little-endian u32s:
 *     id, offset, length
 * Reply: the request's IP/UDP headers with addresses and ports swapped and
 * lengths fixed, then id, offset, length, then `length` bytes of host memory
 * from `offset` in the ECTX's host window.
 *
 * The reply is assembled in a per-HPU staging slot in the local cluster's
 * L1 scratchpad (the request packet is too small to hold the data, and L2
 * handler memory costs ~25 cycles an access). The host sizes the
 * scratchpads: NB_CORES slots of SLOT bytes per cluster. The send copies the
 * bytes when it is issued, so the slot is free again right after.
 */
#include <spin.h>
#include <string.h>

#define MAX_READ 1024
#define HDRS 28 /* IP + UDP */
#define REQ 12
#define SLOT (HDRS + REQ + MAX_READ)

__handler__ void read_ph(handler_args_t *args)
{
    task_t *task = args->task;
    const uint8_t *pkt = (const uint8_t *)task->pkt_mem;
    uint8_t *pld;
    uint32_t pld_len;
    GET_IP_UDP_PLD(task->pkt_mem, pld, pld_len);
    if (pld_len < REQ)
        return;
    const uint32_t *req = (const uint32_t *)pld;
    uint32_t offset = req[1], length = req[2];
    if (length == 0 || length > MAX_READ || offset > task->host_mem_size || length > task->host_mem_size - offset)
        return; /* not a request we serve */

    uint32_t cl = args->cluster_id;
    if (task->scratchpad_size[cl] < NB_CORES * SLOT)
        return; /* the host did not give us room */
    uint8_t *out = (uint8_t *)task->scratchpad[cl] + args->hpu_id * SLOT;
    memcpy(out, pkt, HDRS + REQ);
    ip_hdr_t *ip = (ip_hdr_t *)out;
    udp_hdr_t *udp = (udp_hdr_t *)(out + sizeof(ip_hdr_t));
    uint32_t a = ip->source_id;
    ip->source_id = ip->dest_id;
    ip->dest_id = a;
    uint16_t p = udp->src_port;
    udp->src_port = udp->dst_port;
    udp->dst_port = p;
    ip->length = HDRS + REQ + length; /* PsPIN layout: host order */
    udp->length = sizeof(udp_hdr_t) + REQ + length;
    ip->checksum = 0;
    ip->checksum = ip_checksum(out, sizeof(ip_hdr_t)); /* already in network order */

    uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
    spin_cmd_t xfer;
    if (spin_dma_from_host(host + offset, (uint32_t)(out + HDRS + REQ), length, false, &xfer) != SPIN_OK)
        return;
    spin_cmd_wait(xfer); /* the data must be in before it goes out */
    spin_send_packet(out, HDRS + REQ + length, NULL);
}
