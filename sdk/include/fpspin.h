/*
 * fpspin.h - FPsPIN-style additions: real Ethernet/IPv4/UDP wire headers,
 * the SLMP message header, byte-order helpers, the IP checksum and
 * performance counters.
 *
 * Wire structs hold fields in network byte order; convert with ntohs/ntohl.
 * Names do not clash with PsPIN's packets.h (ip_hdr_t/udp_hdr_t there are
 * the PsPIN "IP-like" headers), so both can be included together.
 */
#ifndef SOFTSPIN_FPSPIN_H
#define SOFTSPIN_FPSPIN_H

#include <stddef.h>
#include <stdint.h>
#include "pspin.h"
#include "softspin_ecall.h"

/* ---- byte order (the HPUs are little-endian) ---- */

static inline uint16_t bswap16(uint16_t v)
{
    return (uint16_t)((v << 8) | (v >> 8));
}

static inline uint32_t bswap32(uint32_t v)
{
    return (v << 24) | ((v & 0xff00u) << 8) | ((v >> 8) & 0xff00u) | (v >> 24);
}

/* FPsPIN spellings. */
#define bswap_16 bswap16
#define bswap_32 bswap32

#ifndef htons
static inline uint16_t htons(uint16_t v) { return bswap16(v); }
static inline uint16_t ntohs(uint16_t v) { return bswap16(v); }
static inline uint32_t htonl(uint32_t v) { return bswap32(v); }
static inline uint32_t ntohl(uint32_t v) { return bswap32(v); }
#endif

/* ---- Ethernet ---- */

#define ETH_ALEN 6
#define ETHERTYPE_IPV4 0x0800

typedef struct mac_addr {
    uint8_t data[ETH_ALEN];
} __attribute__((__packed__)) mac_addr_t;

typedef struct eth_hdr {
    mac_addr_t dest;
    mac_addr_t src;
    union {
        uint16_t ethertype;     /* network order */
        uint16_t length;        /* FPsPIN's name for the same field */
    };
} __attribute__((__packed__)) eth_hdr_t;

/* ---- IPv4 (RFC 791 layout) ---- */

#define IP_PROTO_UDP 17

typedef struct ipv4_hdr {
    uint8_t version_ihl;        /* version in the high nibble, IHL low */
    uint8_t tos;
    uint16_t length;            /* total length */
    uint16_t identification;
    uint16_t frag_offset;       /* flags (3 bits) + fragment offset */
    uint8_t ttl;
    uint8_t protocol;
    uint16_t checksum;
    uint32_t saddr;
    uint32_t daddr;
} __attribute__((__packed__)) ipv4_hdr_t;

#define IPV4_VERSION(h) ((uint8_t)((h)->version_ihl >> 4))
#define IPV4_IHL(h) ((uint8_t)((h)->version_ihl & 0x0f))
#define IPV4_HDR_LEN(h) ((uint32_t)IPV4_IHL(h) * 4u)

typedef struct udp_wire_hdr {
    uint16_t src_port;
    uint16_t dst_port;
    uint16_t length;            /* UDP header + payload */
    uint16_t checksum;
} __attribute__((__packed__)) udp_wire_hdr_t; /* same layout as udp_hdr_t */

/* ---- SLMP (sPIN Lightweight Message Protocol) ----
 * Flag bits in `flags` (host order after ntohs): EOM = 0x8000 marks the last
 * packet of a message, SYN = 0x4000 asks for an ACK, ACK = 0x2000 is an
 * acknowledgement.  These are the FPsPIN values. */

#define SLMP_FLAG_EOM 0x8000u
#define SLMP_FLAG_SYN 0x4000u
#define SLMP_FLAG_ACK 0x2000u
#define MKEOM SLMP_FLAG_EOM
#define MKSYN SLMP_FLAG_SYN
#define MKACK SLMP_FLAG_ACK
#define SLMP_EOM(flags) ((flags) & SLMP_FLAG_EOM)
#define SLMP_SYN(flags) ((flags) & SLMP_FLAG_SYN)
#define SLMP_ACK(flags) ((flags) & SLMP_FLAG_ACK)

typedef struct slmp_hdr {
    uint16_t flags;
    uint32_t msg_id;
    union {
        uint32_t offset;        /* byte offset of this packet in the message */
        uint32_t pkt_off;       /* FPsPIN's name */
    };
} __attribute__((__packed__)) slmp_hdr_t;

typedef struct eth_udp_pkt_hdr {
    eth_hdr_t eth_hdr;
    ipv4_hdr_t ip_hdr;          /* assumes IHL = 5 */
    udp_wire_hdr_t udp_hdr;
} __attribute__((__packed__)) eth_udp_pkt_hdr_t;

typedef struct slmp_pkt_hdr {
    eth_hdr_t eth_hdr;
    ipv4_hdr_t ip_hdr;          /* assumes IHL = 5 */
    udp_wire_hdr_t udp_hdr;
    slmp_hdr_t slmp_hdr;
} __attribute__((__packed__)) slmp_pkt_hdr_t;

#define SLMP_PAYLOAD_LEN(hdrs)                                                \
    ((uint32_t)ntohs((hdrs)->udp_hdr.length) - sizeof(udp_wire_hdr_t) -       \
     sizeof(slmp_hdr_t))

/* RFC 1071 Internet checksum over `len` bytes (big-endian 16-bit words, an
 * odd trailing byte padded with zero).  The result is already in network
 * byte order: store it directly into the (zeroed) checksum field.  Run over
 * a header that contains a valid checksum, it returns 0. */
static inline uint16_t ip_checksum(const void *hdr, size_t len)
{
    const uint8_t *p = (const uint8_t *)hdr;
    uint32_t sum = 0;
    for (; len >= 2; p += 2, len -= 2)
        sum += ((uint32_t)p[0] << 8) | p[1];
    if (len)
        sum += (uint32_t)p[0] << 8;
    while (sum >> 16)
        sum = (sum & 0xffffu) + (sum >> 16);
    return htons((uint16_t)~sum);
}

/* ---- performance counters ---- */

typedef struct spin_counter {
    uint32_t sum;
    uint32_t count;
} spin_counter_t;

/* Adds one sample; safe when several HPUs update the same counter. */
static inline void push_counter(spin_counter_t *c, uint32_t value)
{
    amo_add((volatile int32_t *)&c->sum, (int32_t)value);
    amo_add((volatile int32_t *)&c->count, 1);
}

/* Adds one sample to the engine-side counter `idx` of the ECTX. Its sum and
 * count are reported in the summaries of `softspin sim` and `softspin nic`
 * (JSON key `counters`) and by the host APIs (Nic::counters, ss_counters,
 * Nic.counters). */
static inline void spin_push_counter(uint32_t idx, uint32_t value)
{
    softspin_ecall2(SOFTSPIN_SYS_PUSH_COUNTER, idx, value);
}

/* Cycle and retired-instruction counters (user-level CSR reads). */
static inline uint32_t spin_cycles(void)
{
    uint32_t v;
    __asm__ __volatile__("rdcycle %0" : "=r"(v));
    return v;
}

static inline uint64_t spin_cycles64(void)
{
    uint32_t hi, lo, hi2;
    do { /* re-read if the low half wrapped between the two reads */
        __asm__ __volatile__("rdcycleh %0" : "=r"(hi));
        __asm__ __volatile__("rdcycle %0" : "=r"(lo));
        __asm__ __volatile__("rdcycleh %0" : "=r"(hi2));
    } while (hi != hi2);
    return ((uint64_t)hi << 32) | lo;
}

static inline uint32_t spin_instret(void)
{
    uint32_t v;
    __asm__ __volatile__("rdinstret %0" : "=r"(v));
    return v;
}

#endif
