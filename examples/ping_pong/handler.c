/*
 * ping_pong: answer every packet by sending it back with source and
 * destination swapped (the ping-pong of seed 001 §4.2.2).
 *
 *   pingpong_ph     Ethernet II frames (FPsPIN wire format): swaps the MAC
 *                   addresses and, for IPv4, the IP addresses and the UDP or
 *                   TCP ports.
 *   pingpong_ip_ph  PsPIN's IP-first frames (softspin sim --frame ip).
 *   icmp_echo_ph    Ethernet/IPv4/ICMP echo requests (what ping(8) sends):
 *                   answers each with its echo reply (RFC 792), as a host's
 *                   kernel would; every other frame is left alone.
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

/* ---- ICMP echo (RFC 792) ---- */

#define IP_PROTO_ICMP 1
#define ICMP_ECHO_REPLY 0
#define ICMP_ECHO_REQUEST 8
#define ICMP_HDR_LEN 8 /* type, code, checksum, identifier, sequence */

/* Counters icmp_echo_ph pushes (spin_push_counter; the host reads them per
 * ECTX, e.g. Nic.counters in Python): proof that the handler, not a kernel,
 * answered. */
#define ICMP_CTR_REPLIED 0 /* one sample per reply, value: its frame bytes */
#define ICMP_CTR_IGNORED 1 /* one sample per frame that was no echo request */

/* RFC 1624 eqn. 3: the checksum `hc` (host order) after one 16-bit word of
 * the covered data changes from `m` to `m2`: HC' = ~(~HC + ~m + m'). Unlike
 * HC' = HC - m + m' (eqn. 2) it cannot turn a sum into negative zero, so for
 * a valid request it equals a full recomputation bit for bit (the tests
 * compare against one). */
static inline uint16_t csum_update16(uint16_t hc, uint16_t m, uint16_t m2)
{
    uint32_t sum = (uint32_t)(uint16_t)~hc + (uint16_t)~m + m2;
    sum = (sum & 0xffffu) + (sum >> 16);
    sum = (sum & 0xffffu) + (sum >> 16);
    return (uint16_t)~sum;
}

/* The ICMP message of an unfragmented Ethernet/IPv4 echo request (code 0)
 * whose IP datagram fits in the frame, or NULL. */
static uint8_t *icmp_echo_request(uint8_t *p, uint32_t len)
{
    if (len < sizeof(eth_hdr_t) + sizeof(ipv4_hdr_t) + ICMP_HDR_LEN)
        return NULL;
    eth_hdr_t *eth = (eth_hdr_t *)p;
    ipv4_hdr_t *ip = (ipv4_hdr_t *)(p + sizeof(eth_hdr_t));
    uint32_t hlen = IPV4_HDR_LEN(ip), total = ntohs(ip->length);
    if (ntohs(eth->ethertype) != ETHERTYPE_IPV4 || IPV4_VERSION(ip) != 4 || hlen < sizeof(ipv4_hdr_t) ||
        ip->protocol != IP_PROTO_ICMP)
        return NULL;
    /* Total length beyond the frame: truncated. Shorter: Ethernet padding,
     * which the reply keeps (the checksums do not cover it). */
    if (total < hlen + ICMP_HDR_LEN || total > len - sizeof(eth_hdr_t))
        return NULL;
    /* A fragment (MF set or an offset) carries only part of the message:
     * answering needs reassembly, which is the kernel's job. */
    if (ntohs(ip->frag_offset) & 0x3fff)
        return NULL;
    uint8_t *icmp = (uint8_t *)ip + hlen;
    if (icmp[0] != ICMP_ECHO_REQUEST || icmp[1] != 0)
        return NULL;
    return icmp;
}

__handler__ void icmp_echo_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint8_t *p = (uint8_t *)t->pkt_mem;
    uint32_t len = t->pkt_mem_size;
    uint8_t *icmp = icmp_echo_request(p, len);
    if (!icmp) {
        spin_push_counter(ICMP_CTR_IGNORED, 1);
        return;
    }
    eth_hdr_t *eth = (eth_hdr_t *)p;
    swap_bytes(eth->dest.data, eth->src.data, ETH_ALEN);
    /* Swapping the addresses reorders words of the IP header only, so its
     * checksum stays valid; the ICMP checksum does not cover them. */
    swap_bytes(p + sizeof(eth_hdr_t) + 12, p + sizeof(eth_hdr_t) + 16, 4);
    icmp[0] = ICMP_ECHO_REPLY;
    /* Identifier, sequence number and data are echoed unchanged (RFC 792),
     * so the only covered word that changed is type/code: 0x0800 -> 0x0000.
     * A request with a wrong checksum keeps it wrong, and the pinger drops
     * the reply, as end-to-end checksums intend. */
#ifndef SOFTSPIN_SABOTAGE /* tests build with it to prove they catch a missing fix */
    uint16_t hc = (uint16_t)((icmp[2] << 8) | icmp[3]);
    hc = csum_update16(hc, ICMP_ECHO_REQUEST << 8, ICMP_ECHO_REPLY << 8);
    icmp[2] = (uint8_t)(hc >> 8);
    icmp[3] = (uint8_t)hc;
#endif
    spin_send_packet(p, len, NULL);
    spin_push_counter(ICMP_CTR_REPLIED, len);
}
