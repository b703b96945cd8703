/*
 * packets.h - the PsPIN "IP-like" packet headers.
 *
 * The layout deliberately matches PsPIN, including its bit-field order:
 * `version` is declared first, so with the little-endian bit-field
 * allocation of RISC-V it occupies the LOW nibble of byte 0 and `ihl` the
 * HIGH nibble (the opposite of real IPv4).  Multi-byte fields are read in
 * host (little-endian) order.  PsPIN packet generators fill these headers
 * the same way, so keep this as is; use fpspin.h for real wire formats.
 */
#ifndef PACKETS_H
#define PACKETS_H

#include <stdint.h>

typedef struct ip_hdr {
    uint8_t version : 4;
    uint8_t ihl : 4;
    uint8_t tos;
    uint16_t length;
    uint16_t identification;
    uint16_t offset;
    uint8_t ttl;
    uint8_t protocol;
    uint16_t checksum;
    uint32_t source_id;
    uint32_t dest_id;
} __attribute__((__packed__)) ip_hdr_t;

typedef struct udp_hdr {
    uint16_t src_port;
    uint16_t dst_port;
    uint16_t length;
    uint16_t checksum;
} __attribute__((__packed__)) udp_hdr_t;

typedef struct pkt_hdr {
    ip_hdr_t ip_hdr;
    udp_hdr_t udp_hdr;
} __attribute__((__packed__)) pkt_hdr_t;

#endif /* PACKETS_H */
