/*
 * slmp.h - the receiver side of SLMP, the sPIN Lightweight Messaging
 * Protocol (seed 000, §5.1.2 "The solution"): FPsPIN frames
 * Ethernet / IPv4 (IHL 5) / UDP / SLMP header / payload.
 *
 * The header struct and flags are FPsPIN's and live in fpspin.h
 * (slmp_hdr_t, slmp_pkt_hdr_t, SLMP_FLAG_EOM/SYN/ACK = MKEOM/MKSYN/MKACK,
 * SLMP_PAYLOAD_LEN); this header adds what a receiving handler needs:
 * the UDP port, accessors, a frame check and the ACK a SYN segment asks for.
 *
 * SLMP_UDP_PORT must equal softspin_wire::SLMP_UDP_PORT (crates/wire/src/
 * slmp.rs); examples/slmp_recv/test_slmp_recv.py compares the two.
 */
#ifndef SOFTSPIN_SLMP_H
#define SOFTSPIN_SLMP_H

#include <stdint.h>
#include "fpspin.h"

/* FPsPIN's matching ruleset finds SLMP by this UDP destination port. */
#define SLMP_UDP_PORT 9330
/* Bytes of the SLMP header (flags u16, msg_id u32, offset u32, big-endian). */
#define SLMP_HDR_LEN 10u
/* Bytes before the payload of an FPsPIN SLMP frame (14 + 20 + 8 + 10). */
#define SLMP_FRAME_HDR_LEN ((uint32_t)sizeof(slmp_pkt_hdr_t))
/* The largest segment payload in a 1500-byte MTU (1500 - 20 - 8 - 10):
 * what FPsPIN's sender puts in each segment with alignment 1. */
#define SLMP_MTU1500_PAYLOAD 1462u
/* An ACK is the headers alone: 52 bytes (the MAC pads it on the wire). */
#define SLMP_ACK_FRAME_LEN SLMP_FRAME_HDR_LEN

_Static_assert(sizeof(slmp_hdr_t) == SLMP_HDR_LEN, "SLMP header is 10 bytes");
_Static_assert(sizeof(slmp_pkt_hdr_t) == 52, "FPsPIN SLMP frame headers are 52 bytes");

/* Host-order accessors of a wire header. */
static inline uint16_t slmp_flags(const slmp_hdr_t *h) { return ntohs(h->flags); }
static inline uint32_t slmp_msg_id(const slmp_hdr_t *h) { return ntohl(h->msg_id); }
static inline uint32_t slmp_offset(const slmp_hdr_t *h) { return ntohl(h->offset); }
static inline int slmp_is_eom(const slmp_hdr_t *h) { return (slmp_flags(h) & SLMP_FLAG_EOM) != 0; }
static inline int slmp_is_syn(const slmp_hdr_t *h) { return (slmp_flags(h) & SLMP_FLAG_SYN) != 0; }
static inline int slmp_is_ack(const slmp_hdr_t *h) { return (slmp_flags(h) & SLMP_FLAG_ACK) != 0; }

/* Why a frame is not an SLMP segment (0: it is one). */
enum slmp_frame_error {
    SLMP_FRAME_OK = 0,
    SLMP_FRAME_SHORT,      /* shorter than the 52 header bytes */
    SLMP_FRAME_NOT_UDP,    /* not IPv4 (IHL 5, unfragmented) carrying UDP */
    SLMP_FRAME_BAD_LENGTH, /* IP total / UDP length beyond the frame or below the headers */
    SLMP_FRAME_ERRORS      /* count */
};

/* Check an FPsPIN SLMP frame of `len` bytes; on success set *payload_len
 * from the UDP length (bytes after any Ethernet padding are not payload).
 * The UDP port is not checked: the NIC's matching rules pick the frames. */
static inline enum slmp_frame_error slmp_frame_check(const void *frame, uint32_t len, uint32_t *payload_len)
{
    if (len < SLMP_FRAME_HDR_LEN)
        return SLMP_FRAME_SHORT;
    const slmp_pkt_hdr_t *h = (const slmp_pkt_hdr_t *)frame;
    if (ntohs(h->eth_hdr.ethertype) != ETHERTYPE_IPV4 || h->ip_hdr.version_ihl != 0x45 ||
        h->ip_hdr.protocol != IP_PROTO_UDP || (ntohs(h->ip_hdr.frag_offset) & 0x3fff) != 0)
        return SLMP_FRAME_NOT_UDP;
    uint32_t ip_len = ntohs(h->ip_hdr.length), udp_len = ntohs(h->udp_hdr.length);
    uint32_t l3 = len - (uint32_t)sizeof(eth_hdr_t);
    if (ip_len > l3 || udp_len + sizeof(ipv4_hdr_t) > ip_len || udp_len < sizeof(udp_wire_hdr_t) + SLMP_HDR_LEN)
        return SLMP_FRAME_BAD_LENGTH;
    *payload_len = udp_len - (uint32_t)sizeof(udp_wire_hdr_t) - SLMP_HDR_LEN;
    return SLMP_FRAME_OK;
}

/* Write into `ack` (SLMP_ACK_FRAME_LEN bytes) the ACK FPsPIN's receiver
 * sends for the data frame `data` (fpga/app/pspin/deps/pspin/examples/slmp,
 * prepare_hdrs_ack): MAC and IP addresses and UDP ports swapped, the other
 * IP fields (TOS, id, fragment, TTL) kept, IP total length 38 and UDP length
 * 18 (the SLMP header is the whole payload), the IP checksum recomputed,
 * UDP checksum 0 (none), msg_id and offset echoed. FPsPIN's flags are the
 * ACK bit alone (EOM and SYN of the data segment are not echoed); FPsPIN's
 * sender only tests the ACK bit. `ack` may equal `data` (in place: the
 * payload behind the headers is not touched). Returns the ACK's length. */
static inline uint32_t slmp_make_ack(const void *data, void *ack)
{
    const slmp_pkt_hdr_t *d = (const slmp_pkt_hdr_t *)data;
    slmp_pkt_hdr_t *a = (slmp_pkt_hdr_t *)ack;
    /* Read everything swapped first, so in-place works. */
    mac_addr_t dmac = d->eth_hdr.dest, smac = d->eth_hdr.src;
    uint32_t saddr = d->ip_hdr.saddr, daddr = d->ip_hdr.daddr;
    uint16_t sport = d->udp_hdr.src_port, dport = d->udp_hdr.dst_port;
    if (a != d) {
        const uint8_t *s = (const uint8_t *)data;
        uint8_t *t = (uint8_t *)ack;
        for (uint32_t i = 0; i < SLMP_FRAME_HDR_LEN; i++)
            t[i] = s[i];
    }
    a->eth_hdr.dest = smac;
    a->eth_hdr.src = dmac;
    a->ip_hdr.saddr = daddr;
    a->ip_hdr.daddr = saddr;
    a->ip_hdr.length = htons((uint16_t)(sizeof(ipv4_hdr_t) + sizeof(udp_wire_hdr_t) + SLMP_HDR_LEN));
    a->ip_hdr.checksum = 0;
    a->ip_hdr.checksum = ip_checksum(&a->ip_hdr, sizeof(ipv4_hdr_t));
    a->udp_hdr.src_port = dport;
    a->udp_hdr.dst_port = sport;
    a->udp_hdr.length = htons((uint16_t)(sizeof(udp_wire_hdr_t) + SLMP_HDR_LEN));
    a->udp_hdr.checksum = 0;
    a->slmp_hdr.flags = htons(SLMP_FLAG_ACK);
    return SLMP_ACK_FRAME_LEN;
}

#endif
