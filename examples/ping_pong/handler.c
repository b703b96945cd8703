/*
 * ping_pong: answer every packet by sending it back with source and
 * destination swapped (the ping-pong of seed 001 §4.2.2).
 *
 *   pingpong_ph     Ethernet II frames (FPsPIN wire format): swaps the MAC
 *                   addresses and, for IPv4, the IP addresses and the UDP or
 *                   TCP ports.
 *   pingpong_ip_ph  PsPIN's IP-first frames (softspin sim --frame ip).
 *
 * Checksums stay valid without recomputation: the IPv4 header checksum and
 * the UDP/TCP checksum are one's-complement sums of 16-bit words, and the
 * swaps only permute whole words. The reply is built in place in the L1
 * packet copy, so install the ECTX with the default l1_copy (the whole
 * packet).
 */
#include <spin.h>

static inline void swap_bytes(uint8_t *a, uint8_t *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint8_t t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

/* Swap addresses (bytes 12..16 and 16..20) and, for UDP/TCP, the ports that
 * follow the `hlen`-byte header. */
static void swap_ip(uint8_t *ip, uint32_t len, uint32_t hlen, uint8_t protocol, int first_fragment)
{
    if (hlen < 20 || len < hlen)
        return;
    swap_bytes(ip + 12, ip + 16, 4);
    if ((protocol == 17 || protocol == 6) && first_fragment && len >= hlen + 4)
        swap_bytes(ip + hlen, ip + hlen + 2, 2);
}

__handler__ void pingpong_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint8_t *p = (uint8_t *)t->pkt_mem;
    uint32_t len = t->pkt_mem_size;
    if (len >= sizeof(eth_hdr_t)) {
        eth_hdr_t *eth = (eth_hdr_t *)p;
        swap_bytes(eth->dest.data, eth->src.data, ETH_ALEN);
        if (ntohs(eth->ethertype) == ETHERTYPE_IPV4 && len >= sizeof(eth_hdr_t) + sizeof(ipv4_hdr_t)) {
            ipv4_hdr_t *ip = (ipv4_hdr_t *)(p + sizeof(eth_hdr_t));
            if (IPV4_VERSION(ip) == 4)
                swap_ip((uint8_t *)ip, len - sizeof(eth_hdr_t), IPV4_HDR_LEN(ip), ip->protocol,
                        (ntohs(ip->frag_offset) & 0x1fff) == 0);
        }
    }
    spin_send_packet(p, len, NULL);
}

__handler__ void pingpong_ip_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint8_t *p = (uint8_t *)t->pkt_mem;
    uint32_t len = t->pkt_mem_size;
    if (len >= sizeof(ip_hdr_t)) {
        ip_hdr_t *ip = (ip_hdr_t *)p; /* PsPIN layout: fields little-endian */
        swap_ip(p, len, ip->ihl * 4u, ip->protocol, (ip->offset & 0x1fff) == 0);
    }
    spin_send_packet(p, len, NULL);
}
