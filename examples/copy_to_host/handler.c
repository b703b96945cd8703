/*
 * copy_to_host: payload handlers DMA each packet's data into host memory so
 * that the host buffer ends up holding every message whole, in order,
 * whatever order the HPUs finish in.
 *
 * Packets are PsPIN IP-first frames. Their UDP payload starts with a 4-byte
 * application header: the byte offset of this packet's data within its
 * message (little-endian u32). Message m lands at m * msg_stride in the
 * host window; the host sets msg_stride before activating the ECTX.
 *
 *   copy_ph              PsPIN IP-first frames (28 header bytes).
 *   copy_to_host_eth_ph  Ethernet/IPv4/UDP frames as they come off the wire
 *                        (FPsPIN, the live NIC): 42 header bytes, or more
 *                        with IP options. Same application header and
 *                        placement; with msg_stride left at 0 the offset is
 *                        simply the position in the host window, so datagrams
 *                        from any UDP socket can fill a buffer.
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

/* Counters copy_to_host_eth_ph pushes (spin_push_counter, read per ECTX). */
#define COPY_CTR_COPIED 0  /* one sample per datagram copied, value: its data bytes */
#define COPY_CTR_IGNORED 1 /* one sample per frame that was not a usable datagram */

/* The UDP payload of an unfragmented Ethernet/IPv4/UDP frame, or NULL. Its
 * length comes from the UDP header, so Ethernet padding is not payload. */
static uint8_t *eth_udp_payload(uint8_t *p, uint32_t len, uint32_t *pld_len)
{
    if (len < sizeof(eth_hdr_t) + sizeof(ipv4_hdr_t) + sizeof(udp_wire_hdr_t))
        return NULL;
    eth_hdr_t *eth = (eth_hdr_t *)p;
    ipv4_hdr_t *ip = (ipv4_hdr_t *)(p + sizeof(eth_hdr_t));
    uint32_t hlen = IPV4_HDR_LEN(ip), total = ntohs(ip->length);
    if (ntohs(eth->ethertype) != ETHERTYPE_IPV4 || IPV4_VERSION(ip) != 4 || hlen < sizeof(ipv4_hdr_t) ||
        ip->protocol != IP_PROTO_UDP)
        return NULL;
    if (total < hlen + sizeof(udp_wire_hdr_t) || total > len - sizeof(eth_hdr_t))
        return NULL; /* truncated */
    if (ntohs(ip->frag_offset) & 0x3fff)
        return NULL; /* a fragment: only the kernel can reassemble it */
    udp_wire_hdr_t *udp = (udp_wire_hdr_t *)((uint8_t *)ip + hlen);
    uint32_t ulen = ntohs(udp->length);
    if (ulen < sizeof(udp_wire_hdr_t) || ulen > total - hlen)
        return NULL;
    *pld_len = ulen - sizeof(udp_wire_hdr_t);
    return (uint8_t *)(udp + 1);
}

__handler__ void copy_to_host_eth_ph(handler_args_t *args)
{
    task_t *task = args->task;
    uint32_t pld_len;
    uint8_t *pld = eth_udp_payload((uint8_t *)task->pkt_mem, task->pkt_mem_size, &pld_len);
    if (!pld || pld_len < 4) {
        spin_push_counter(COPY_CTR_IGNORED, 1);
        return;
    }
    /* The payload need not be 4-byte aligned (IP options): read bytewise. */
    uint32_t offset = pld[0] | (uint32_t)pld[1] << 8 | (uint32_t)pld[2] << 16 | (uint32_t)pld[3] << 24;
    uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
    host += (uint64_t)task->flow_id * msg_stride + offset;
    if (pld_len > 4) /* as copy_ph: no wait, the NIC rejects a range outside the window */
        spin_dma_to_host(host, (uint32_t)(pld + 4), pld_len - 4, false, NULL);
    spin_push_counter(COPY_CTR_COPIED, pld_len - 4);
}
