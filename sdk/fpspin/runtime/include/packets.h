/*
 * packets.h (FPsPIN profile) - FPsPIN's wire headers for handlers: frames
 * start with the Ethernet header, then IPv4 (IHL 5 assumed), UDP and the
 * SLMP header (seed 000, the FPsPIN thesis, §4 and §6.3.3).
 *
 * Same type, field and macro names as FPsPIN's runtime header so its
 * handlers compile unchanged. Multi-byte fields are in network order as on
 * the wire; convert with ntohs/ntohl. This file takes the place of the SDK's
 * PsPIN packets.h (same include guard, so handler.h does not pull that one
 * in after it; see handler.h here).
 */
#ifndef PACKETS_H
#define PACKETS_H

#ifdef SOFTSPIN_FPSPIN_H
#error "softspin's fpspin.h/slmp.h and FPsPIN's packets.h (--profile fpspin) name different layouts alike (slmp_pkt_hdr_t, eth_hdr_t): include <spin.h> for softspin's headers, or FPsPIN's headers alone"
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct mac_addr {
    uint8_t data[6];
} __attribute__((__packed__)) mac_addr_t;

typedef struct eth_hdr {
    mac_addr_t dest;
    mac_addr_t src;
    uint16_t length; /* EtherType, network order (FPsPIN's name) */
} __attribute__((__packed__)) eth_hdr_t;

/* IPv4. The bit-fields give real IPv4 on the little-endian HPUs: `ihl` is
 * the low nibble of byte 0, `version` the high one. */
typedef struct ip_hdr {
    uint8_t ihl : 4;
    uint8_t version : 4;
    uint8_t tos;
    uint16_t length;
    uint16_t identification;
    uint16_t offset;
    uint8_t ttl;
    uint8_t protocol;
    uint16_t checksum;
    uint32_t source_id; /* source address */
    uint32_t dest_id;   /* destination address */
} __attribute__((__packed__)) ip_hdr_t;

typedef struct udp_hdr {
    uint16_t src_port;
    uint16_t dst_port;
    uint16_t length;
    uint16_t checksum;
} __attribute__((__packed__)) udp_hdr_t;

/* SLMP: 10 bytes after UDP (docs/slmp.md). */
typedef struct slmp_hdr {
    uint16_t flags;
    uint32_t msg_id;
    uint32_t pkt_off; /* byte offset of this packet's payload in the message */
} __attribute__((__packed__)) slmp_hdr_t;

typedef struct pkt_hdr {
    eth_hdr_t eth_hdr;
    ip_hdr_t ip_hdr;
    udp_hdr_t udp_hdr;
} __attribute__((__packed__)) pkt_hdr_t;

typedef struct slmp_pkt_hdr {
    eth_hdr_t eth_hdr;
    ip_hdr_t ip_hdr;
    udp_hdr_t udp_hdr;
    slmp_hdr_t slmp_hdr;
} __attribute__((__packed__)) slmp_pkt_hdr_t;

/* SLMP flags, host order (after ntohs). */
#define MKEOM 0x8000
#define MKSYN 0x4000
#define MKACK 0x2000
#define EOM(flags) ((flags) & MKEOM)
#define SYN(flags) ((flags) & MKSYN)
#define ACK(flags) ((flags) & MKACK)

/* Byte order: the HPUs are little-endian, the wire big-endian. */
static inline uint16_t bswap_16(uint16_t v)
{
    return (uint16_t)((v << 8) | (v >> 8));
}

static inline uint32_t bswap_32(uint32_t v)
{
    return ((uint32_t)bswap_16((uint16_t)v) << 16) | bswap_16((uint16_t)(v >> 16));
}

#define htons(x) bswap_16(x)
#define ntohs(x) bswap_16(x)
#define htonl(x) bswap_32(x)
#define ntohl(x) bswap_32(x)

#define SLMP_PAYLOAD_LEN(hdrs)                                                 \
    (ntohs((hdrs)->udp_hdr.length) - sizeof(udp_hdr_t) - sizeof(slmp_hdr_t))

/* RFC 1071 Internet checksum of `length` bytes, returned in network order
 * (store it straight into a zeroed checksum field). */
static inline uint16_t ip_checksum(void *vdata, size_t length)
{
    const uint8_t *p = (const uint8_t *)vdata;
    uint32_t sum = 0;
    for (; length >= 2; p += 2, length -= 2)
        sum += ((uint32_t)p[0] << 8) | p[1];
    if (length)
        sum += (uint32_t)p[0] << 8;
    while (sum >> 16)
        sum = (sum & 0xffffu) + (sum >> 16);
    return htons((uint16_t)~sum);
}

#endif /* PACKETS_H */
